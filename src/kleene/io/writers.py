"""Writing column batches to CSV, JSON lines or Parquet, and matches as JSON lines."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from kleene.errors import EventError
from kleene.io.readers import format_of
from kleene.matches import Match

__all__ = ["json_default", "write_columns", "write_matches"]

Columns = dict[str, list[Any]]


def json_default(value: Any) -> Any:
    """JSON for what `json` cannot write itself: datetimes, dates and times as ISO 8601
    text, decimals as numbers (an integral one as an integer, else as a float), bytes as
    base64 text, tuples and sets as lists; anything else is an `EventError` naming its type.

    >>> import json
    >>> json.dumps([Decimal("2.50"), Decimal("7"), b"hi"], default=json_default)
    '[2.5, 7, "aGk="]'
    """
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise EventError(f"cannot write a value of type {type(value).__name__} as JSON: {value!r}")


def write_matches(matches: Iterable[Match], out: IO[str]) -> int:
    """Write one JSON object a line (see `Match.to_dict`); return how many."""
    count = 0
    for found in matches:
        out.write(json.dumps(found.to_dict(), default=json_default))
        out.write("\n")
        count += 1
    return count


def write_columns(batches: Iterable[Columns], path: str | Path, format: str | None = None) -> int:  # noqa: A002
    """Write batches of equally long columns to a file, streaming; return the row count.

    Every batch must have the columns of the first, with values of the same types.
    """
    path = Path(path)
    kind = format or format_of(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "jsonl":
        return _write_jsonl(batches, path)
    import pyarrow as pa

    rows = 0
    writer: Any = None
    schema = None
    try:
        for batch in batches:
            table = pa.Table.from_pydict(batch)
            if schema is None:
                schema = table.schema
                writer = _arrow_writer(kind, path, schema)
            else:
                table = table.cast(schema)
            writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    return rows


def _arrow_writer(kind: str, path: Path, schema: Any) -> Any:
    import pyarrow as pa

    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetWriter(path, schema)
    lists = [f.name for f in schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)]
    if lists:
        raise EventError(
            f"CSV cannot hold lists (column {lists[0]}); write JSON lines or Parquet instead"
        )
    import pyarrow.csv as pacsv

    return pacsv.CSVWriter(path, schema)


def _write_jsonl(batches: Iterable[Columns], path: Path) -> int:
    rows = 0
    with path.open("w", encoding="utf-8") as out:
        for batch in batches:
            names = list(batch)
            for values in zip(*batch.values(), strict=True):
                out.write(json.dumps(dict(zip(names, values, strict=True)), default=json_default))
                out.write("\n")
                rows += 1
    return rows
