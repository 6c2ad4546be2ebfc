"""Writing column batches to CSV, JSON lines or Parquet, and a plan's outputs (matches, or a
rule's emitted events, as its `Output` declares them) to any of them."""

from __future__ import annotations

import base64
import gzip
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from kleene.compiler.query import Field, Output
from kleene.errors import EventError, KleeneError
from kleene.io.readers import format_of, named_format

__all__ = [
    "NamedOutputs",
    "check_overwrite",
    "json_default",
    "match_output",
    "output_format",
    "write_columns",
    "write_matches",
]


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


class NamedOutputs:
    """The outputs of several queries (`kleene.Engine` of several), written as one: each
    row is its query's (`Output.row`) with the query's name first, under `query`."""

    def __init__(self, outputs: Mapping[str, Output], name_of: Callable[[Any], str]) -> None:
        self.outputs = outputs
        self.name_of = name_of

    @property
    def fields(self) -> tuple[Field, ...]:
        """`query`, then every query's fields (the first of each name)."""
        named = {"query": Field("query", "text", nullable=False)}
        for output in self.outputs.values():
            for each in output.fields:
                named.setdefault(each.name, each)
        return tuple(named.values())

    def row(self, found: Any) -> dict[str, Any]:
        name = self.name_of(found)
        return {"query": name, **self.outputs[name].row(found)}


def write_matches(found: Iterable[Any], out: IO[str], output: Output | NamedOutputs) -> int:
    """Write one JSON object a line, the row CSV and Parquet hold (`Output.row`:
    `Match.to_row`, or an emitted event's row); return how many."""
    count = 0
    for each in found:
        out.write(json.dumps(output.row(each), default=json_default))
        out.write("\n")
        count += 1
    return count


def check_overwrite(path: str | None, overwrite: bool) -> None:
    """Refuse an output that exists unless told to replace it: every command writes by one
    rule (standard output, `-` or None, and the null device take anything).

    >>> check_overwrite(os.devnull, False)
    """
    if path in (None, "-", os.devnull) or overwrite or not Path(path).exists():
        return
    raise KleeneError(f"{path} exists; pass --overwrite to replace it")


def output_format(path: str | Path) -> str:
    """The format an output file's name says, as for input (`named_format`: JSON lines and
    CSV may be gzipped, Parquet compresses itself); any other name is an error.

    >>> output_format("out/matches.csv.gz"), output_format("m.parquet")
    ('csv', 'parquet')

    The null device takes anything (JSON lines, thrown away: to time a run).
    """
    if str(path) == os.devnull:
        return "jsonl"
    kind = named_format(path)
    if kind is None or (kind == "parquet" and str(path).lower().endswith(".gz")):
        raise EventError(
            f"cannot tell what to write to {path}: name it .jsonl, .json, .csv or .parquet "
            "(.jsonl.gz and .csv.gz are gzipped)"
        )
    return kind


@contextmanager
def match_output(
    path: str | None, output: Output | NamedOutputs
) -> Iterator[Callable[[Iterable[Any]], int]]:
    """A function that writes a plan's outputs (and returns how many) to `path`, in the
    format its name says (`output_format`), or as JSON lines to standard output (None or
    `-`).

    Every format holds one `Output.row` an output (`Match.to_row()`: each variable's
    events at the top level, as `kleene run` writes them): JSON lines as objects, Parquet
    as rows, CSV as rows with each variable's events as JSON text (as `kleene run` writes
    CSV); no outputs make a file of
    every field the output declares (`_empty`). The file is whole or absent: outputs go to
    a hidden file beside it, which takes its name when the block ends without an error.
    """
    if path is None or path == "-":
        yield lambda found: write_matches(found, sys.stdout, output)
        sys.stdout.flush()
        return
    if path == os.devnull:  # counted, not written (nor checked for a partial file)
        yield lambda found: sum(1 for _ in found)
        return
    target = Path(path)
    kind = output_format(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    try:
        if kind == "jsonl":
            zipped = target.suffix.lower() == ".gz"
            with (
                gzip.open(partial, "wt", encoding="utf-8")
                if zipped
                else partial.open("w", encoding="utf-8")
            ) as out:
                yield lambda found: write_matches(found, out, output)
        else:
            tables: list[Any] = []
            yield lambda found: _add_rows(tables, found, kind, output)
            _write_tables(tables or [_empty(output)], partial, kind, target)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _add_rows(
    tables: list[Any], found: Iterable[Any], kind: str, output: Output | NamedOutputs
) -> int:
    """The outputs as one Arrow table (CSV: nested values as JSON text)."""
    import pyarrow as pa

    rows = [output.row(m) for m in found]
    if kind == "csv":
        rows = [
            {
                k: json.dumps(v, default=json_default) if isinstance(v, list | dict) else v
                for k, v in row.items()
            }
            for row in rows
        ]
    if rows:
        names = dict.fromkeys(name for row in rows for name in row)  # every row's, in order
        try:
            tables.append(pa.Table.from_pydict({n: [row.get(n) for row in rows] for n in names}))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise _unwritable(kind, error) from None
    return len(rows)


def _empty(output: Output | NamedOutputs) -> Any:
    """No outputs, as a table of every field the output declares: a field whose type
    depends on the input's (a time, an attribute's column, the events bound) has Arrow's
    null type, the others theirs."""
    import pyarrow as pa

    types = {"text": pa.string(), "long": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}
    return pa.table({f.name: pa.array([], types.get(f.kind, pa.null())) for f in output.fields})


def _unwritable(kind: str, error: Exception) -> EventError:
    return EventError(f"cannot write these matches as {kind}: {error}; write JSON lines instead")


def _write_tables(tables: list[Any], path: Path, kind: str, target: Path) -> None:
    import pyarrow as pa

    try:
        table = pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise _unwritable(kind, error) from None
    if kind == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
        return
    import pyarrow.csv as pacsv

    if target.suffix.lower() == ".gz":
        with pa.CompressedOutputStream(str(path), "gzip") as out:
            pacsv.write_csv(table, out)
    else:
        pacsv.write_csv(table, path)


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
