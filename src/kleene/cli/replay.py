"""`kleene replay`: feed a folder from a recorded log, a few rows a file at a set rate, so
that `kleene stream` can be shown on real data.

Each file is written under a hidden name and renamed when whole, so a streaming reader
never sees half a file. The rows keep their order; file names sort in that order.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from kleene.cli.common import log, quiet_argument
from kleene.errors import EventError, KleeneError
from kleene.io.readers import format_of

__all__ = ["add", "replay"]


def add(commands: Any) -> None:
    """Add `kleene replay` to the subcommands."""
    parser = commands.add_parser(
        "replay",
        help="feed a folder from a recorded log, at a set rate (for kleene stream)",
        description="Read a log (CSV, JSON lines or Parquet, gzip or not) and write it into a "
        "folder as numbered files of --batch rows, at --rate rows a second, the way events "
        "would arrive.",
    )
    parser.add_argument("file", help="the recorded log")
    parser.add_argument("--to", required=True, help="the folder to feed")
    parser.add_argument("--rate", type=float, default=0, help="rows a second (0: no pause)")
    parser.add_argument("--batch", type=int, default=1000, help="rows a file (1000)")
    parser.add_argument("--limit", type=int, help="stop after this many rows")
    parser.add_argument("--format", choices=["csv", "jsonl", "parquet"], help="input format")
    parser.add_argument(
        "--number",
        metavar="COLUMN",
        help="add a column numbering the rows from 0 (an arrival order and id for the stream)",
    )
    quiet_argument(parser)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    written = replay(
        args.file,
        args.to,
        rate=args.rate,
        batch=args.batch,
        limit=args.limit,
        kind=args.format,
        number=args.number,
    )
    log.info(f"replayed {written:,} rows into {args.to}")
    return 0


def replay(
    source: str,
    target: str,
    *,
    rate: float = 0,
    batch: int = 1000,
    limit: int | None = None,
    kind: str | None = None,
    number: str | None = None,
) -> int:
    """Write `source`'s rows into the folder `target` as files of `batch` rows (in the
    source's format), `rate` rows a second, with a column `number` counting the rows when
    given; return how many rows.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "log.csv").write_text("ts,type\\n1,A\\n2,B\\n3,C\\n")
    >>> replay(str(folder / "log.csv"), str(folder / "feed"), batch=2, number="seq")
    3
    >>> sorted(p.name for p in (folder / "feed").iterdir())
    ['part-000000.csv', 'part-000001.csv']
    >>> print((folder / "feed" / "part-000001.csv").read_text().strip())
    "ts","type","seq"
    3,"C",2
    """
    if batch < 1:
        raise KleeneError(f"--batch is at least 1 row, not {batch}")
    if rate < 0:
        raise KleeneError(f"--rate cannot be negative, not {rate}")
    kind = kind or format_of(source)
    table = _read(source, kind)
    if limit is not None:
        table = table.slice(0, limit)
    if number is not None:
        if number in table.column_names:
            raise KleeneError(f"{source} has a column {number!r} already; --number names a new one")
        table = table.append_column(number, pa.array(range(table.num_rows), pa.int64()))
    folder = Path(target)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet"}[kind]
    start = time.monotonic()
    for index, offset in enumerate(range(0, table.num_rows, batch)):
        part = table.slice(offset, batch)
        name = f"part-{index:06d}.{suffix}"
        hidden = folder / f".{name}.tmp"
        _write(part, hidden, kind)
        hidden.rename(folder / name)
        if rate:
            due = start + (offset + part.num_rows) / rate
            time.sleep(max(0.0, due - time.monotonic()))
    return int(table.num_rows)


def _read(source: str, kind: str) -> pa.Table:
    path = Path(source)
    if not path.is_file():
        raise EventError(f"no such file: {source}")
    try:
        if kind == "csv":
            return pacsv.read_csv(path)
        if kind == "jsonl":
            return pajson.read_json(path)
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise EventError(f"cannot read {source} as {kind}: {error}") from None


def _write(part: pa.Table, path: Path, kind: str) -> None:
    if kind == "csv":
        pacsv.write_csv(part, path)
    elif kind == "parquet":
        pq.write_table(part, path)
    else:
        with path.open("w", encoding="utf-8") as out:
            for row in part.to_pylist():
                out.write(_json_line(row))


def _json_line(row: dict[str, Any]) -> str:
    import json

    return json.dumps(row, default=str, ensure_ascii=False) + "\n"
