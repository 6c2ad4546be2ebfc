"""Events from a path: a CSV, JSON lines or Parquet file, a folder of them (read in name
order), or standard input (`-`, with its format named); and how many rows a path holds,
where that is cheap to know (a progress bar's total).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kleene.errors import EventError
from kleene.events import Event
from kleene.io.readers.csv_files import CSV_TYPES, csv_batches
from kleene.io.readers.json_lines import jsonl_batches
from kleene.io.readers.parquet_files import parquet_batches
from kleene.io.readers.source import (
    FORMATS,
    GZIP_MAGIC,
    STDIN,
    EventReader,
    OnError,
    columns_of,
    format_of,
    named_format,
    where_of,
)

__all__ = ["count_rows", "read_events"]


def count_rows(path: str | Path, format: str | None = None) -> int | None:  # noqa: A002
    """How many data rows a file (or a folder's files) holds, where that is cheap to know:
    Parquet's metadata, or the lines of an uncompressed CSV (less its header) or JSON lines
    file; None for standard input and gzip files. For a progress bar's total.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "e.csv").write_text("type,ts\\nA,1\\nB,2\\n")
    >>> count_rows(folder / "e.csv"), count_rows("-", "csv")
    (2, None)
    """
    if str(path) == STDIN:
        return None
    path = Path(path)
    kind = format or format_of(path)
    files = (
        sorted(p for p in path.iterdir() if named_format(p) == kind) if path.is_dir() else [path]
    )
    total = 0
    for file in files:
        with file.open("rb") as raw:
            if raw.read(2) == GZIP_MAGIC:
                return None
        if kind == "parquet":
            import pyarrow.parquet as pq

            total += pq.ParquetFile(file).metadata.num_rows
            continue
        lines = 0
        with file.open("rb") as raw:
            while chunk := raw.read(1 << 20):
                lines += chunk.count(b"\n")
        total += lines - (1 if kind == "csv" else 0)
    return max(total, 0)


def read_events(
    path: str | Path,
    format: str | None = None,  # noqa: A002 - the user's word
    *,
    ts: str = "ts",
    type: str = "type",  # noqa: A002 - the column's role, as kleene.spark.detect names it
    id: str | None = None,  # noqa: A002
    event_type: str | None = None,
    tz: str = "UTC",
    ts_unit: str | None = None,
    on_error: OnError = "raise",
    column_types: dict[str, str] | None = None,
) -> EventReader:
    """Events from a CSV, JSON lines or Parquet file, or a folder of such files (read in name
    order), or standard input (`-`, with `format`). The format comes from the extension
    unless given; gzip files are read as what they hold (`events.csv.gz`, or any name: the
    first bytes tell). The columns are named as `from_arrow` names them (`ts`, `type`, `id`,
    `event_type`, `tz`, `ts_unit`).

    `column_types` (CSV only) fixes a column's type: "int", "float", "bool" or "string";
    otherwise each column takes the type its first rows suggest. In CSV only the empty cell
    is null, except in number columns, where `NA`, `N/A`, `NULL`, `nan` and the like
    (`NULL_TOKENS`) are null too; a number column's stray text is an error naming the row
    and cell (never a silent switch to text), and a header naming a column twice is an
    error. A damaged gzip file (truncated, corrupt) is an error naming it and how much of it
    was read: the events before the damage were given, and `on_error="skip"` does not skip
    it, since the fault is the file's, not a row's.
    """
    path = Path(path)
    if str(path) != STDIN and not path.exists():
        raise EventError(f"no such file or folder: {path}")
    kind = format or format_of(path)
    if kind not in FORMATS.values():
        raise EventError(f"unknown format {kind!r}; use csv, jsonl or parquet")
    for name, wanted in (column_types or {}).items():
        if wanted not in CSV_TYPES:
            raise EventError(f"unknown column type {wanted!r} for {name}; use {CSV_TYPES}")
    files = (
        sorted(p for p in path.iterdir() if named_format(p) == kind) if path.is_dir() else [path]
    )
    read = {"csv": csv_batches, "jsonl": jsonl_batches, "parquet": parquet_batches}[kind]

    def batches(reader: EventReader) -> Iterator[Iterator[Event]]:
        for file in files:
            yield from read(reader, file, column_types or {})

    columns = columns_of(type, ts, id, event_type, tz, ts_unit)
    arrow = kind in ("parquet", "csv")  # read in Arrow batches, which `keep` can thin
    return EventReader(where_of(path), batches, columns, on_error, arrow=arrow)
