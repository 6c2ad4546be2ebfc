"""Reading events from CSV, JSON lines, Parquet, pandas and Arrow, a batch at a time.

Every reader maps columns to events the same way (`Columns`): one column is the event type
(or every row gets one constant type), one the timestamp, optionally one the id (else the
row's position in the input, from 0); every other column is an attribute, with nulls left
out. Timestamps may be numbers, datetimes (naive ones get the zone `tz`), dates, or ISO 8601
text. Numbers stay numbers (the engine's `time_unit` says what one unit is) unless `ts_unit`
says they count seconds, ms, us or ns since the epoch: then they become datetimes.

A malformed row raises `EventError` naming the file, the row (data rows count from 1) and
the field. With `on_error="skip"` the row is skipped instead and counted in `skipped`; the
first few such errors are kept in `errors`.

>>> import pyarrow as pa
>>> from kleene.io import from_arrow
>>> table = pa.table({"kind": ["A", "B", None], "time": [1, 2, 3], "price": [10, None, 30]})
>>> reader = from_arrow(table, type_column="kind", ts_column="time", on_error="skip")
>>> list(reader)
[Event('A', 1, {'price': 10}, id=0), Event('B', 2, {}, id=1)]
>>> reader.skipped, str(reader.errors[0])
(1, "arrow, row 3, field 'kind': the event type is missing")
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import logging
import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from itertools import count, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from kleene.errors import EventError
from kleene.events import (
    EPOCH_UNITS,
    LARGEST_TIME,
    Event,
    Timestamp,
    checked_events,
    event_types,
    numeric_time,
    numeric_times,
    owned_event,
    to_timestamp,
)

log = logging.getLogger("kleene")

__all__ = [
    "FORMATS",
    "GZIP_MAGIC",
    "STDIN",
    "Columns",
    "EventReader",
    "count_rows",
    "format_of",
    "from_arrow",
    "from_pandas",
    "gzipped",
    "named_format",
    "read_events",
]

#: File formats by extension.
FORMATS = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
OnError = Literal["raise", "skip"]
#: The path that names standard input.
STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
_KEPT_ERRORS = 10
_BATCH_ROWS = 65_536
_CSV_BLOCK = 1 << 22  # bytes pyarrow reads per CSV block
_CSV_LARGEST_BLOCK = 1 << 30  # ... and at most, for a file with long fields
_CSV_TYPES = ("int", "float", "bool", "string")


def format_of(path: str | Path) -> str:
    """The format a file's extension names, a gzip suffix aside (`events.csv.gz` is CSV); a
    folder: the format of the files inside.

    >>> format_of("ticks.jsonl.gz"), format_of("ticks.PARQUET")
    ('jsonl', 'parquet')
    """
    if str(path) == STDIN:
        raise EventError("standard input (-) has no extension; name its format (--format)")
    path = Path(path)
    if path.is_dir():
        found = {kind for p in path.iterdir() if (kind := named_format(p)) is not None}
        if len(found) != 1:
            raise EventError(
                f"cannot tell the format of folder {path}: it holds "
                + (", ".join(sorted(found)) or "no csv, jsonl or parquet files")
            )
        return found.pop()
    kind = named_format(path)
    if kind is None:
        known = ", ".join(sorted(FORMATS))
        raise EventError(f"cannot tell the format of {path}; name it with one of {known}")
    return kind


def _where(path: Path) -> str:
    """How errors name a source."""
    return "standard input" if str(path) == STDIN else str(path)


def named_format(path: str | Path) -> str | None:
    """The format a file name's extension says, past a `.gz` (None: none)."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return FORMATS.get(suffixes[-1]) if suffixes else None


def gzipped(stream: Any) -> bool:
    """Does a buffered stream (standard input) begin with gzip's magic bytes? It is not
    consumed."""
    return bool(stream.peek(2)[:2] == GZIP_MAGIC)


@contextmanager
def _opened(path: Path) -> Iterator[io.BufferedIOBase]:
    """A file, or standard input (`-`), as bytes: decompressed when it is gzip, told by
    its first bytes (whatever its name)."""
    if str(path) == STDIN:
        raw: Any = sys.stdin.buffer
        yield gzip.GzipFile(fileobj=raw, mode="rb") if gzipped(raw) else raw
        return
    with path.open("rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        if magic != GZIP_MAGIC:
            yield raw
            return
        with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
            yield unzipped


@dataclass(frozen=True)
class Columns:
    """Which columns make an event's type, timestamp and id.

    - `type`: the column holding the event type; ignored when `event_type` is set;
    - `event_type`: one type for every row (for files of a single kind of event);
    - `ts`: the timestamp column;
    - `id`: the id column (None: the row's position in the input, from 0);
    - `tz`: the time zone given to naive datetimes;
    - `ts_unit`: "s", "ms", "us" or "ns" when numeric timestamps count that unit since the
      epoch (they become datetimes); None keeps them numbers.
    """

    type: str = "type"
    ts: str = "ts"
    id: str | None = None
    event_type: str | None = None
    tz: str = "UTC"
    ts_unit: str | None = None

    def special(self) -> set[str]:
        names = {self.ts}
        if self.event_type is None:
            names.add(self.type)
        if self.id is not None:
            names.add(self.id)
        return names


@dataclass
class EventReader:
    """An iterable of events read lazily from a source, with the count of skipped rows."""

    source: str
    batches: Callable[[EventReader], Iterator[Iterator[Event]]]
    columns: Columns = field(default_factory=Columns)
    on_error: OnError = "raise"
    #: Malformed rows skipped (`on_error="skip"`), and the first few errors.
    skipped: int = 0
    #: Rows read so far into events, or left out by `keep`: the next event's reading
    #: position, which is its id when there is no id column.
    rows: int = 0
    errors: list[EventError] = field(default_factory=list)
    #: The input's column names, once it is open, when it has a schema (CSV, Parquet, Arrow;
    #: None for JSON lines); the columns of the file being read, for a folder.
    names: tuple[str, ...] | None = None
    #: Where those names come from (the file being read).
    where: str = ""
    #: Where the events read came from, as marks (first event index, file, row) wherever
    #: the rows stop following one another (a skipped row, the next file): `place` reads them.
    marks: list[tuple[int, str, int]] = field(default_factory=list)
    #: Does it read Arrow batches (Parquet, CSV, Arrow, pandas), which `keep` can thin?
    arrow: bool = False
    #: The rows of an Arrow batch a query can take (`kleene.io.prefilter`; `kleene.match`
    #: and `kleene match` set it); None reads every row.
    keep: Callable[[Any], Any] | None = None
    #: Rows read but left out by `keep`: no variable of the query can take them.
    left_out: int = 0
    #: After each batch `keep` thinned: (events made so far, rows left out so far).
    _thinned: list[tuple[int, int]] = field(default_factory=list, repr=False)
    #: The batch being thinned: the number of events made before it, and the reading
    #: position of each event it makes.
    _thinning: tuple[int, Sequence[int]] = field(default=(0, ()), repr=False)
    #: The latest time of the rows read so far, for `keep` (see `_thinned`).
    _latest: Any = field(default=None, repr=False)

    def mark(self, where: str, number: int, index: int | None = None) -> None:
        """The event of reading position `index` (default: the next, `rows`) comes from row
        `number` of `where`."""
        index = self.rows if index is None else index
        marks = self.marks
        if marks:
            first, file, row = marks[-1]
            if file == where and row + index - first == number:
                return
        marks.append((index, where, number))

    def place(self, index: int) -> tuple[str, int] | None:
        """The file and row the event of this index (from 0, in reading order) came from."""
        at = bisect_right(self.marks, index, key=itemgetter(0)) - 1
        if at < 0 or index >= self.rows:
            return None
        first, where, row = self.marks[at]
        return where, row + index - first

    def locate(self, error: EventError) -> EventError:
        """`error`, which the engine found in an event this reader made, naming the event's
        file and row instead of its arrival number. The event is found by its id when ids
        are reading positions (no id column); else by the arrival number the engine gave
        the error (a time going back, or of another kind), which is the event's reading
        position plus one for an engine fed this reader's events from the first, as
        `kleene.match` and the CLI feed it."""
        event = error.event
        if event is None or error.source is not None:
            return error
        if self.columns.id is None:
            index = event.id if isinstance(event.id, int) else None
        else:
            index = None if error.row is None else self.position(error.row - 1)
        place = None if index is None else self.place(index)
        if place is None:
            return error
        return EventError(
            error.message, source=place[0], row=place[1], field=error.field, late=error.late
        )

    def position(self, made: int) -> int:
        """The reading position of the event made `made`-th (from 0): the same unless
        `keep` left rows out before it."""
        first, positions = self._thinning
        if first <= made < first + len(positions):
            return positions[made - first]
        at = bisect_right(self._thinned, made, key=itemgetter(0)) - 1
        return made if at < 0 else made + self._thinned[at][1]

    def roles(self) -> dict[str, str]:
        """The columns that are no attribute, by their role (ts, type, id)."""
        columns = self.columns
        roles = {columns.ts: "ts"}
        if columns.event_type is None:
            roles[columns.type] = "type"
        if columns.id is not None:
            roles[columns.id] = "id"
        return roles

    def __iter__(self) -> Iterator[Event]:
        for batch in self.batches(self):
            yield from batch

    def fail(self, error: EventError) -> None:
        """Raise `error`, or count it when skipping."""
        if self.on_error == "raise":
            raise error
        self.skipped += 1
        if len(self.errors) < _KEPT_ERRORS:
            self.errors.append(error)

    def report(self) -> str:
        """One line on what was skipped, or ""."""
        if not self.skipped:
            return ""
        first = f"; first: {self.errors[0]}" if self.errors else ""
        return f"skipped {self.skipped} malformed row{'s' if self.skipped != 1 else ''}{first}"


# ---- rows to events ----------------------------------------------------------------------


def _zone(name: str) -> tzinfo:
    return UTC if name.upper() == "UTC" else ZoneInfo(name)


class _Rows:
    """Turns rows (dicts of cells) into events for one reader."""

    def __init__(self, reader: EventReader) -> None:
        self.reader = reader
        self.columns = reader.columns
        self.zone = _zone(reader.columns.tz)
        self.special = reader.columns.special()

    def event(self, row: dict[str, Any], where: str, number: int) -> Event | None:
        columns, reader = self.columns, self.reader
        try:
            kind = columns.event_type
            if kind is None:
                kind = self.kind(row.get(columns.type))
            if columns.ts not in row:
                raise _BadCellError(columns.ts, "the timestamp column is missing")
            ts = self.stamp(row[columns.ts])
            event_id = reader.rows if columns.id is None else self.ident(row.get(columns.id))
            attrs = {k: v for k, v in row.items() if v is not None and k not in self.special}
        except _BadCellError as bad:
            reader.fail(EventError(bad.message, source=where, row=number, field=bad.field))
            return None
        reader.mark(where, number)
        reader.rows += 1
        return owned_event(kind, ts, attrs, event_id)

    def kind(self, raw: Any) -> str:
        """The event type of a type cell."""
        if raw is None or raw == "":
            raise _BadCellError(self.columns.type, "the event type is missing")
        if not isinstance(raw, str):  # never retyped: 5 and "5" are not one type
            raise _BadCellError(
                self.columns.type,
                f"the event type must be text, not {type(raw).__name__} {raw!r} "
                "(patterns name types as text)",
            )
        return raw

    def stamp(self, raw: Any) -> Timestamp:
        """The timestamp of a ts cell (one the engine takes: see `numeric_time`)."""
        try:
            ts = to_timestamp(raw, self.zone, self.columns.ts_unit)
            numeric_time(ts)
        except ValueError as error:
            raise _BadCellError(self.columns.ts, str(error)) from None
        except EventError as error:
            raise _BadCellError(self.columns.ts, error.message) from None
        return ts

    def ident(self, raw: Any) -> Any:
        """The id of an id cell."""
        if raw is None:
            raise _BadCellError(self.columns.id or "id", "the id is missing")
        return raw

    def batch(
        self,
        names: list[str],
        columns: list[list[Any]],
        numbers: Sequence[int],
        where: str,
        good: list[bool] | None,
        positions: Sequence[int] | None = None,
    ) -> Iterator[Event]:
        """The events of a batch of rows given as columns, holding every column the reader
        needs once: what `event` makes of each row, with the columns' roles found once per
        batch, not once per row. `positions` are the rows' reading positions when they do
        not follow on from `rows` (rows a query's filter left out between them)."""
        spec = self.columns
        at = {name: i for i, name in enumerate(names)}
        kinds = None if spec.event_type is not None else columns[at[spec.type]]
        stamps = columns[at[spec.ts]]
        ids = None if spec.id is None else columns[at[spec.id]]
        attributes = [name for name in names if name not in self.special]
        cells = [columns[at[n]] for n in attributes]
        if good is None or False not in good:
            made = self._checked(kinds, stamps, ids, positions)
            if made is not None:
                return self._made(made, attributes, cells, where, numbers, positions)
        return self._each_row(
            kinds, stamps, ids, attributes, cells, numbers, where, good, positions
        )

    def _each_row(
        self,
        kinds: list[Any] | None,
        stamps: list[Any],
        ids: list[Any] | None,
        attributes: list[str],
        cells: list[list[Any]],
        numbers: Sequence[int],
        where: str,
        good: list[bool] | None,
        positions: Sequence[int] | None = None,
    ) -> Iterator[Event]:
        """`batch` a row at a time, each malformed row named (or skipped)."""
        spec, reader = self.columns, self.reader
        marked = False  # rows that follow one another need one mark (`EventReader.mark`)
        # each row's attribute values (none, when the rows hold only type and time)
        rows = zip(*cells, strict=True) if cells else repeat((), len(stamps))
        for offset, values in enumerate(rows):
            if good is not None and not good[offset]:
                marked = False
                continue
            at = reader.rows if positions is None else positions[offset]
            try:
                kind = spec.event_type if kinds is None else self.kind(kinds[offset])
                ts = self.stamp(stamps[offset])
                event_id = at if ids is None else self.ident(ids[offset])
            except _BadCellError as bad:
                error = EventError(bad.message, source=where, row=numbers[offset], field=bad.field)
                reader.fail(error)
                marked = False
                continue
            if not marked:
                reader.mark(where, numbers[offset], at)
                marked = positions is None
            reader.rows = at + 1
            attrs = {n: v for n, v in zip(attributes, values, strict=True) if v is not None}
            yield owned_event(kind, ts, attrs, event_id)  # type: ignore[arg-type]

    def _checked(
        self,
        kinds: list[Any] | None,
        stamps: list[Any],
        ids: list[Any] | None,
        positions: Sequence[int] | None = None,
    ) -> tuple[Iterable[str], list[Timestamp], list[int | float], Iterable[Any]] | None:
        """Each row's type, timestamp, time and id, when a check a column at a time finds
        every row well formed; None when some row is not (the row-at-a-time loop then names
        it)."""
        spec = self.columns
        size = len(stamps)
        if kinds is not None and not event_types(kinds):
            return None
        types = repeat(spec.event_type or "", size) if kinds is None else kinds
        stamped: list[Timestamp] = stamps
        if spec.ts_unit is not None or not set(map(type, stamps)) <= {int, float}:
            try:
                stamped = [to_timestamp(raw, self.zone, spec.ts_unit) for raw in stamps]
            except ValueError:
                return None
        times = numeric_times(stamped)
        if times is None or (ids is not None and None in ids):
            return None
        numbered: Iterable[Any] = count(self.reader.rows) if positions is None else positions
        return types, stamped, times, numbered if ids is None else ids

    def _made(
        self,
        checked: tuple[Iterable[str], list[Timestamp], list[int | float], Iterable[Any]],
        attributes: list[str],
        cells: list[list[Any]],
        where: str,
        numbers: Sequence[int],
        positions: Sequence[int] | None = None,
    ) -> Iterator[Event]:
        """The events of a batch whose rows `_checked` found well formed."""
        reader = self.reader
        if not numbers:
            return
        made = checked_events(*checked, attributes, cells)
        if positions is not None:  # rows left out between them: one mark covers the batch
            reader.mark(where, numbers[0], positions[0])
            for at, event in zip(positions, made, strict=True):
                reader.rows = at + 1
                yield event
            return
        reader.mark(where, numbers[0])
        for done, event in enumerate(made, reader.rows + 1):
            reader.rows = done
            yield event


class _BadCellError(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message


# ---- sources -----------------------------------------------------------------------------


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
    type_column: str = "type",
    ts_column: str = "ts",
    id_column: str | None = None,
    event_type: str | None = None,
    tz: str = "UTC",
    ts_unit: str | None = None,
    on_error: OnError = "raise",
    column_types: dict[str, str] | None = None,
) -> EventReader:
    """Events from a CSV, JSON lines or Parquet file, or a folder of such files (read in name
    order), or standard input (`-`, with `format`). The format comes from the extension
    unless given; gzip files are read as what they hold (`events.csv.gz`, or any name: the
    first bytes tell).

    `column_types` (CSV only) fixes a column's type: "int", "float", "bool" or "string";
    otherwise each column takes the type its first rows suggest. In CSV only the empty cell
    is null, except in number columns, where `NA`, `N/A`, `NULL`, `nan` and the like
    (`NULL_TOKENS`) are null too; a number column's stray text is an error naming the row
    and cell (never a silent switch to text), and a header naming a column twice is an
    error.
    """
    path = Path(path)
    if str(path) != STDIN and not path.exists():
        raise EventError(f"no such file or folder: {path}")
    kind = format or format_of(path)
    if kind not in FORMATS.values():
        raise EventError(f"unknown format {kind!r}; use csv, jsonl or parquet")
    for name, wanted in (column_types or {}).items():
        if wanted not in _CSV_TYPES:
            raise EventError(f"unknown column type {wanted!r} for {name}; use {_CSV_TYPES}")
    files = (
        sorted(p for p in path.iterdir() if named_format(p) == kind) if path.is_dir() else [path]
    )
    read = {"csv": _csv_batches, "jsonl": _jsonl_batches, "parquet": _parquet_batches}[kind]

    def batches(reader: EventReader) -> Iterator[Iterator[Event]]:
        for file in files:
            yield from read(reader, file, column_types or {})

    columns = _columns(type_column, ts_column, id_column, event_type, tz, ts_unit)
    arrow = kind in ("parquet", "csv")  # read in Arrow batches, which `keep` can thin
    return EventReader(_where(path), batches, columns, on_error, arrow=arrow)


def _columns(
    type_column: str,
    ts_column: str,
    id_column: str | None,
    event_type: str | None,
    tz: str,
    ts_unit: str | None,
) -> Columns:
    if ts_unit is not None and ts_unit not in EPOCH_UNITS:
        raise EventError(f"ts_unit is one of {', '.join(EPOCH_UNITS)}, not {ts_unit!r}")
    try:
        _zone(tz)
    except (KeyError, ValueError):
        raise EventError(f"unknown time zone {tz!r}") from None
    return Columns(type_column, ts_column, id_column, event_type, tz, ts_unit)


def from_arrow(
    data: Any,
    *,
    type_column: str = "type",
    ts_column: str = "ts",
    id_column: str | None = None,
    event_type: str | None = None,
    tz: str = "UTC",
    ts_unit: str | None = None,
    on_error: OnError = "raise",
    name: str = "arrow",
) -> EventReader:
    """Events from a pyarrow Table, RecordBatch, RecordBatchReader or iterable of batches."""
    columns = _columns(type_column, ts_column, id_column, event_type, tz, ts_unit)

    def batches(reader: EventReader) -> Iterator[Iterator[Event]]:
        yield from _arrow_batches(reader, _record_batches(data), name)

    return EventReader(name, batches, columns, on_error, arrow=True)


def from_pandas(frame: Any, **options: Any) -> EventReader:
    """Events from a pandas DataFrame (through Arrow); options as for `from_arrow`."""
    import pyarrow as pa

    options.setdefault("name", "dataframe")
    return from_arrow(pa.Table.from_pandas(frame, preserve_index=False), **options)


def _record_batches(data: Any) -> Iterable[Any]:
    import pyarrow as pa

    batches: Iterable[Any]
    if isinstance(data, pa.Table):
        batches = data.to_batches(max_chunksize=_BATCH_ROWS)
    elif isinstance(data, pa.RecordBatch):
        batches = [data]
    else:
        batches = data  # a RecordBatchReader or any iterable of record batches
    return batches


def _arrow_batches(
    reader: EventReader, batches: Iterable[Any], where: str
) -> Iterator[Iterator[Event]]:

    rows = _Rows(reader)
    number = 0
    for batch in batches:
        names = batch.schema.names
        reader.names, reader.where = tuple(names), where
        numbers = range(number + 1, number + 1 + batch.num_rows)
        number += batch.num_rows
        if reader.keep is not None:
            thinned = _thinned(rows, batch, numbers, where)
            if thinned is not None:
                yield thinned
                continue
        good = [True] * batch.num_rows
        columns = []
        for name, given in zip(names, batch.columns, strict=True):
            column = _microseconds(given)
            try:
                columns.append(column.to_pylist())
            except UnicodeDecodeError:  # a damaged file's text
                columns.append(_undecodable(column, name, reader, where, numbers, good))
            except (OverflowError, ValueError):  # a time Python's datetime cannot hold
                columns.append(_times(column, name, reader, where, numbers, good))
        yield _row_events(rows, names, columns, numbers, where, good)


def _thinned(
    rows: _Rows, batch: Any, numbers: Sequence[int], where: str, times: Any = None
) -> Iterator[Event] | None:
    """The events of the rows of an Arrow batch that the reader's `keep` keeps, or None
    when the batch must be read whole. Rows are left out only where leaving them out
    changes nothing the engine reports or finds wrong: every row of the batch is well
    formed (type, timestamp, id, and values Python can hold), and its times go forward
    from the latest time read before (a time going back is the engine's error to name). The
    batch's last row is always kept, so the engine's latest time is the batch's. `times`:
    the timestamps as numbers, where the batch holds them as text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    reader, spec = rows.reader, rows.columns
    latest, reader._latest = reader._latest, _UNKNOWN
    names = batch.schema.names
    if latest is _UNKNOWN or len(set(names)) != len(names) or spec.ts not in names:
        return None
    span = _time_span(batch.column(spec.ts) if times is None else times, spec)
    if span is None:
        return None
    first, last = span
    if latest is not None and isinstance(first, datetime) != isinstance(latest, datetime):
        return None  # numbers after datetimes: the engine names the row
    reader._latest = last if latest is None else max(latest, last)
    if latest is not None and first < latest:
        return None
    if numbers[-1] - numbers[0] != len(numbers) - 1:
        return None  # rows dropped between them (CSV rows of the wrong width): read whole
    if spec.event_type is None:
        kinds = batch.column(spec.type) if spec.type in names else None
        if kinds is None or not pa.types.is_string(kinds.type) or kinds.null_count:
            return None
        if pc.min(pc.utf8_length(kinds)).as_py() == 0:  # an empty type: the reader names it
            return None
    if spec.id is not None and (spec.id not in names or batch.column(spec.id).null_count):
        return None
    if not all(_held(column) for column in batch.columns):
        return None
    try:
        mask = reader.keep(batch)  # type: ignore[misc]
    except pa.ArrowException:  # an overflow in the query's arithmetic: read every row
        return None
    if mask is None:
        return None
    offsets = pc.indices_nonzero(mask).to_pylist()
    parts = [batch.filter(mask)]
    if not offsets or offsets[-1] != batch.num_rows - 1:
        offsets.append(batch.num_rows - 1)
        parts.append(batch.slice(batch.num_rows - 1))
    if len(offsets) == batch.num_rows:
        return None
    kept = pa.Table.from_batches(parts)
    columns = [_microseconds(column).to_pylist() for column in kept.columns]
    start = reader.rows
    positions = [start + offset for offset in offsets]
    reader._thinning = (start - reader.left_out, positions)
    reader.left_out += batch.num_rows - len(offsets)
    reader._thinned.append((start + batch.num_rows - reader.left_out, reader.left_out))
    return rows.batch(names, columns, [numbers[o] for o in offsets], where, None, positions)


#: `EventReader._latest` once a batch's times could not be read in Arrow: no row is left
#: out after it.
_UNKNOWN = object()


def _time_span(column: Any, spec: Columns) -> tuple[Any, Any] | None:
    """The first and the latest time of a batch whose timestamp column Arrow can read
    exactly as the reader does (numbers, or datetimes with a zone, or naive ones in UTC;
    no nulls, none out of range) and whose times never go back; else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if spec.ts_unit is not None:
        return None
    kind = column.type
    if column.null_count:
        return None
    if pa.types.is_timestamp(kind):
        if kind.tz is None and spec.tz.upper() != "UTC":
            return None  # naive times in a zone: a clock set back goes back in time
        if not _held(column):
            return None
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind):
        if pa.types.is_floating(kind) and not pc.all(pc.is_finite(column)).as_py():
            return None
        low, high = pc.min_max(column).values()
        if low.as_py() < -LARGEST_TIME or high.as_py() > LARGEST_TIME:
            return None
    else:
        return None
    if len(column) > 1 and not pc.all(pc.greater_equal(column[1:], column[:-1])).as_py():
        return None
    first, last = (
        _microseconds(column[:1]).to_pylist()[0],
        _microseconds(column[-1:]).to_pylist()[0],
    )
    if isinstance(first, datetime) and first.tzinfo is None:
        first, last = first.replace(tzinfo=UTC), last.replace(tzinfo=UTC)
    return first, last


def _held(column: Any) -> bool:
    """Can every value of a column become a Python value (checked for times and dates by
    their least and greatest, text for UTF-8; nested columns are not looked into)?"""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_temporal(kind):
        try:
            low, high = pc.min_max(_microseconds(column)).values()
            low.as_py(), high.as_py()
        except (OverflowError, ValueError, pa.ArrowException):
            return False
        return True
    if pa.types.is_nested(kind):
        return False
    try:
        column.validate(full=True)  # text that is UTF-8, among others
    except pa.ArrowInvalid:
        return False
    return True


def _microseconds(column: Any) -> Any:
    """A timestamp column in nanoseconds as microseconds (Python's datetime holds no
    finer), as the reader reads it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_timestamp(kind) and kind.unit == "ns":
        return pc.cast(column, pa.timestamp("us", kind.tz), safe=False)
    return column


def _undecodable(
    column: Any,
    name: str,
    reader: EventReader,
    where: str,
    numbers: Sequence[int],
    good: list[bool],
) -> list[Any]:
    """A text column with cells that are not UTF-8 (a damaged file): each such cell an
    error naming its row (its row skipped, when skipping); text inside other columns, an
    error naming the file and column."""
    import pyarrow as pa

    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise EventError(
            f"the file is damaged: column {name!r} holds text that is not UTF-8", source=where
        )
    raw = column.cast(pa.large_binary() if pa.types.is_large_string(kind) else pa.binary())
    return list(_text(raw, name, reader, where, list(numbers), good).to_pylist())


def _times(
    column: Any,
    name: str,
    reader: EventReader,
    where: str,
    numbers: Sequence[int],
    good: list[bool],
) -> list[Any]:
    """A timestamp column with times outside Python's years 1 to 9999: each such cell an
    error naming its row (its row skipped, when skipping)."""
    import pyarrow as pa

    values: list[Any] = []
    for offset in range(len(column)):
        try:
            values.append(column[offset].as_py())
        except (OverflowError, ValueError):
            values.append(None)
            raw = column.cast(pa.int64())[offset].as_py()
            if good[offset]:
                good[offset] = False
                message = (
                    f"the time {raw} ({column.type.unit} since 1970) is outside the years 1 "
                    "to 9999 that Python's datetime holds"
                )
                reader.fail(EventError(message, source=where, row=numbers[offset], field=name))
    return values


def _row_events(
    rows: _Rows,
    names: list[str],
    columns: list[list[Any]],
    numbers: Sequence[int],
    where: str,
    good: list[bool] | None = None,
) -> Iterator[Event]:
    """The events of one batch of rows (`good`, when given, marks rows already rejected)."""
    spec = rows.columns
    needed = [spec.ts, *([spec.type] if spec.event_type is None else [])]
    needed += [] if spec.id is None else [spec.id]
    if len(set(names)) == len(names) and all(name in names for name in needed) and columns:
        return rows.batch(names, columns, numbers, where, good)
    return _rows_one_by_one(rows, names, columns, numbers, where, good)


def _rows_one_by_one(
    rows: _Rows,
    names: list[str],
    columns: list[list[Any]],
    numbers: Sequence[int],
    where: str,
    good: list[bool] | None,
) -> Iterator[Event]:
    """`_row_events` a row at a time, for rows `_Rows.batch` cannot take as columns (a
    repeated or missing column name, or no columns)."""
    for offset, values in enumerate(zip(*columns, strict=True)):
        if good is not None and not good[offset]:
            continue
        event = rows.event(dict(zip(names, values, strict=True)), where, numbers[offset])
        if event is not None:
            yield event


def _parquet_batches(
    reader: EventReader, path: Path, column_types: dict[str, str]
) -> Iterator[Iterator[Event]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = _where(path)
    with _opened(path) as raw:
        # a file pyarrow may seek in; standard input and gzip are read whole first
        seekable = isinstance(raw, io.BufferedReader) and raw.seekable()
        source = raw if seekable else pa.BufferReader(raw.read())
        try:
            file = pq.ParquetFile(source)
        except (pa.ArrowInvalid, OSError) as error:
            raise EventError(f"not a Parquet file: {error}", source=where) from None
        except pa.ArrowException as error:  # a footer pyarrow reads but cannot take
            raise EventError(f"the Parquet file is damaged: {error}", source=where) from None
        except UnicodeDecodeError as error:  # pyarrow decodes the column names it read
            raise EventError(
                f"the Parquet file is damaged: a column name is not UTF-8 text ({error})",
                source=where,
            ) from None
        with file:
            reader.names, reader.where = tuple(file.schema_arrow.names), where
            yield from _arrow_batches(reader, _parquet_read(file, where), where)


def _parquet_read(file: Any, where: str) -> Iterator[Any]:
    """A Parquet file's record batches, a damaged one an error naming the file."""
    import pyarrow as pa

    batches = file.iter_batches(batch_size=_BATCH_ROWS)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as error:
            message = str(error).strip().replace("\n", "; ")
            raise EventError(f"the Parquet file is damaged: {message}", source=where) from None
        yield batch


def _jsonl_batches(
    reader: EventReader, path: Path, column_types: dict[str, str]
) -> Iterator[Iterator[Event]]:
    rows = _Rows(reader)
    where = _where(path)

    def events() -> Iterator[Event]:
        with _opened(path) as lines:
            number = 0
            for line in lines:
                if not line.strip():
                    continue
                number += 1
                bom = number == 1 and line.startswith(codecs.BOM_UTF8)  # a byte order mark
                try:
                    row = json.loads(line[len(codecs.BOM_UTF8) if bom else 0 :].decode("utf-8"))
                except UnicodeDecodeError as error:
                    message = f"not UTF-8 text (byte {error.start + 1} of the line)"
                    reader.fail(EventError(message, source=where, row=number))
                    continue
                except json.JSONDecodeError as error:
                    reader.fail(EventError(f"not JSON: {error.msg}", source=where, row=number))
                    continue
                if not isinstance(row, dict):
                    reader.fail(
                        EventError("a line must hold a JSON object", source=where, row=number)
                    )
                    continue
                event = rows.event(row, where, number)
                if event is not None:
                    yield event

    yield events()


def _csv_batches(
    reader: EventReader, path: Path, column_types: dict[str, str]
) -> Iterator[Iterator[Event]]:
    """CSV through pyarrow's streaming reader, every cell read as text, then each attribute
    column cast to the type its first batch suggests; a cell that does not fit is an error
    naming its row and column. A field longer than pyarrow's block makes it read the file
    again with blocks four times larger, from the row it had reached."""
    where = _where(path)
    read = _CsvProgress(dict(column_types))
    block = _CSV_BLOCK
    while True:
        try:
            with _opened(path) as raw:
                yield from _csv_stream(reader, raw, where, read, block)
            return
        except _StraddlingError:
            if str(path) == STDIN or block >= _CSV_LARGEST_BLOCK:
                raise EventError(
                    f"a field is longer than {block >> 20} MiB, more than kleene reads in one "
                    "piece"
                    + (
                        " from standard input; read it from a file"
                        if block < _CSV_LARGEST_BLOCK
                        else ""
                    ),
                    source=where,
                    row=read.rows + 1,
                ) from None
            block *= 4


@dataclass
class _CsvProgress:
    """How far a CSV file was read, kept across a read again with larger blocks: the
    column types chosen and the data rows consumed."""

    kinds: dict[str, str]
    rows: int = 0


class _StraddlingError(Exception):
    """pyarrow met a field longer than its block."""


def _csv_stream(
    reader: EventReader, raw: io.BufferedIOBase, where: str, read: _CsvProgress, block: int
) -> Iterator[Iterator[Event]]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    first = raw.readline()
    try:
        header = next(csv.reader([first.decode("utf-8-sig").rstrip("\r\n")]), None)
    except UnicodeDecodeError:
        raise EventError("the header is not UTF-8 text", source=where, row=0) from None
    if not header:
        return
    reader.names, reader.where = tuple(header), where
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise EventError(
            f"the header names {', '.join(map(repr, repeated))} more than once; rename the "
            "columns so each is one attribute",
            source=where,
            row=0,
        )
    bad_lines: list[tuple[int | None, str]] = []

    def invalid(row: Any) -> str:
        bad_lines.append(
            (row.number, f"expected {row.expected_columns} fields, found {row.actual_columns}")
        )
        return "skip"

    if not raw.peek(1):  # type: ignore[attr-defined]
        return  # a header and no rows
    undecodable: list[UnicodeDecodeError] = []
    try:
        with _quiet_undecodable(undecodable):
            stream = pacsv.open_csv(
                raw,  # after the header: the data rows, numbered from 1
                read_options=pacsv.ReadOptions(
                    use_threads=False,
                    block_size=block,
                    column_names=header,
                    skip_rows_after_names=read.rows,
                ),
                parse_options=pacsv.ParseOptions(invalid_row_handler=invalid),
                convert_options=pacsv.ConvertOptions(
                    column_types={name: pa.binary() for name in header},  # UTF-8: `_text`
                    strings_can_be_null=True,
                    null_values=[""],  # "NA" and the like are null only in number columns (_cast)
                ),
            )
    except pa.ArrowInvalid as error:
        raise _unreadable(error, where, undecodable) from None
    textual = {reader.columns.ts} | (
        set() if reader.columns.event_type is not None else {reader.columns.type}
    )
    kinds = read.kinds
    rows = _Rows(reader)
    skipped_lines: set[int] = set()  # data rows pyarrow dropped as malformed
    row = read.rows  # the data row number of the last row handed out
    for batch in _batches(stream, where):
        for number, message in bad_lines:
            if number is not None:
                skipped_lines.add(number)
            reader.fail(EventError(message, source=where, row=number))
        bad_lines.clear()
        numbers = []
        for _ in range(batch.num_rows):
            row += 1
            while row in skipped_lines:
                row += 1
            numbers.append(row)
        read.rows = row
        table: dict[str, Any] = {}  # each column in Arrow, or as values where read cell by cell
        good = [True] * batch.num_rows
        for name, binary in zip(batch.schema.names, batch.columns, strict=True):
            column = _text(binary, name, reader, where, numbers, good)
            if name in textual:
                table[name] = column
                continue
            if name not in kinds:
                kinds[name] = _infer(column)
                if kinds[name] == "string":
                    _warn_numeric_text(column, name, where)
            table[name] = _cast(column, name, kinds, reader, where, numbers, good)
        names = list(table)
        if reader.keep is not None:
            thinned = _csv_thinned(rows, table, numbers, where, good)
            if thinned is not None:
                yield thinned
                continue
        columns = [c if isinstance(c, list) else c.to_pylist() for c in table.values()]
        yield _row_events(rows, names, columns, numbers, where, good)
    for number, message in bad_lines:
        reader.fail(EventError(message, source=where, row=number))


def _csv_thinned(
    rows: _Rows, table: dict[str, Any], numbers: list[int], where: str, good: list[bool]
) -> Iterator[Event] | None:
    """`_thinned` for a CSV batch whose cells all read as their columns' types in Arrow,
    its timestamps being numbers (text to the reader, which reads each kept one as it reads
    any); None when the batch must be read whole."""
    import pyarrow as pa
    import pyarrow.compute as pc

    reader, spec = rows.reader, rows.columns
    stamps = table.get(spec.ts)
    times = None
    read_whole = stamps is None or any(isinstance(c, list) for c in table.values())
    if False not in good and not read_whole:
        for kind in (pa.int64(), pa.float64()):  # what `to_timestamp` reads as these, alike
            try:
                times = pc.cast(stamps, kind)
                break
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
    if times is None:
        reader._latest = _UNKNOWN
        return None
    batch = pa.RecordBatch.from_arrays(list(table.values()), names=list(table))
    return _thinned(rows, batch, numbers, where, times)


def _batches(stream: Any, where: str) -> Iterator[Any]:
    """pyarrow's CSV batches, its errors named as the file's."""
    import pyarrow as pa

    undecodable: list[UnicodeDecodeError] = []
    while True:
        try:
            with _quiet_undecodable(undecodable):
                batch = stream.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as error:
            raise _unreadable(error, where, undecodable) from None
        yield batch


def _text(
    column: Any, name: str, reader: EventReader, where: str, numbers: list[int], good: list[bool]
) -> Any:
    """A column of bytes as text; a cell that is not UTF-8 is an error naming its row and
    column (or, when skipping, its row is skipped)."""
    import pyarrow as pa

    try:
        return column.cast(pa.string())
    except pa.ArrowInvalid:
        pass
    cells: list[str | None] = []
    for offset, cell in enumerate(column.to_pylist()):
        try:
            cells.append(None if cell is None else cell.decode("utf-8"))
        except UnicodeDecodeError as error:
            cells.append(None)
            if good[offset]:
                good[offset] = False
                message = f"not UTF-8 text (byte {error.start + 1} of the cell)"
                reader.fail(EventError(message, source=where, row=numbers[offset], field=name))
    return pa.array(cells, pa.string())


@contextmanager
def _quiet_undecodable(found: list[UnicodeDecodeError]) -> Iterator[None]:
    """pyarrow hands a row with too many or too few fields to `invalid` (which skips and
    counts it) as text; a row that is not UTF-8 fails before it gets there, the read stops
    on the row, and Python prints the failure as "Exception ignored". Keep it off the
    terminal, in `found`: the error names the row and says why (`_unreadable`)."""
    hook = sys.unraisablehook

    def undecodable(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, UnicodeDecodeError):
            found.append(unraisable.exc_value)
        else:
            hook(unraisable)

    sys.unraisablehook = undecodable
    try:
        yield
    finally:
        sys.unraisablehook = hook


def _unreadable(
    error: Exception, where: str, undecodable: Sequence[UnicodeDecodeError] = ()
) -> EventError:
    """pyarrow's word on a CSV it cannot read (it does not say the row), and whether a
    malformed row it stopped on was not UTF-8 text either (`_quiet_undecodable`)."""
    if "straddl" in str(error):
        raise _StraddlingError from None
    hint = " (a CSV file must be UTF-8 text)" if "UTF8" in str(error) else ""
    if undecodable:  # a malformed row `invalid` never saw
        hint = (
            " (the row is not UTF-8 text either, which even --on-error skip cannot pass over: "
            "a CSV file must be UTF-8 text)"
        )
    row = re.search(r"Row #(\d+)", str(error))  # a malformed row pyarrow could not hand over
    number = None if row is None else int(row.group(1))
    return EventError(f"cannot read the CSV: {error}{hint}", source=where, row=number)


#: Cells that mean "no value" in a number column (in a text column they are text).
NULL_TOKENS = frozenset({"NA", "N/A", "#N/A", "NULL", "null", "None", "nan", "NaN", "-"})


def _infer(column: Any) -> str:
    """The narrowest type the non-null cells of a text column fit: int, float, bool or string.
    Null tokens (`NULL_TOKENS`) do not count against a number; a column whose other cells are
    nearly all numbers (all but one in 20) is a number column, and `_cast` names the cells
    that are not, so stray text never turns numbers into text silently."""
    import pyarrow as pa
    import pyarrow.compute as pc

    present = _present(column)
    if not len(present):
        return "string"
    for kind, arrow in (("int", pa.int64()), ("float", pa.float64()), ("bool", pa.bool_())):
        try:
            pc.cast(present, arrow)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        return kind
    cells = present.to_pylist()
    numbers = _numbers(cells, len(cells) // 10)  # past that, far from 95 %: text
    if numbers is not None and len(numbers) >= 2 and len(numbers) >= 0.95 * len(cells):
        return "int" if all(_reads_as(int, c) for c in numbers) else "float"
    return "string"


#: `NULL_TOKENS` as one regular expression, for Arrow to match (`_tokens`).
_TOKEN_PATTERN = "^(?:" + "|".join(map(re.escape, sorted(NULL_TOKENS))) + ")$"


def _tokens(column: Any) -> Any:
    """Which cells of a text column are null tokens (`NULL_TOKENS`), found by a regular
    expression in Arrow: a value set would be an array made from Python strings, and the
    first such array makes pyarrow import pandas (0.4 s of a small `kleene match`)."""
    import pyarrow.compute as pc

    return pc.match_substring_regex(column, _TOKEN_PATTERN)


def _present(column: Any) -> Any:
    """A text column's cells that hold a value: neither null nor a null token."""
    import pyarrow.compute as pc

    return pc.filter(column, pc.and_kleene(pc.is_valid(column), pc.invert(_tokens(column))))


def _numbers(cells: list[str], most_failures: int) -> list[str] | None:
    """The cells that read as numbers; None once more than `most_failures` do not (a text
    column fails on every cell, and a failing `float` costs a raised error)."""
    numbers, failures = [], 0
    for cell in cells:
        if _reads_as(float, cell):
            numbers.append(cell)
        else:
            failures += 1
            if failures > most_failures:
                return None
    return numbers


def _shown(text: str, width: int = 40) -> str:
    """A cell as an error message quotes it: at most `width` characters of it.

    >>> print(_shown("y" * 100, 10))
    'yyyyyyyyyy'… (100 characters)
    """
    return repr(text) if len(text) <= width else f"{text[:width]!r}… ({len(text):,} characters)"


def _warn_numeric_text(column: Any, name: str, where: str) -> None:
    """Say so when a column read as text is half numbers or more: comparisons on it compare
    text ("10" < "9"), which is rarely what numbers meant."""
    cells = _present(column).to_pylist()
    numbers = _numbers(cells, len(cells) // 2)  # more fail: fewer than half are numbers
    if numbers is None or len(numbers) < 2 or 2 * len(numbers) < len(cells):
        return
    other = next(c for c in cells if not _reads_as(float, c))
    log.warning(
        f"{where}: column {name!r} is read as text: {len(numbers):,} of its first {len(cells):,} "
        f"cells are numbers, but not {_shown(other)}; comparisons on it compare text ('10' < "
        f"'9'). Give it a type (--column-type {name}=float, column_types=) to read numbers "
        "and name the other cells as errors"
    )


def _reads_as(kind: Callable[[str], Any], text: str) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


def _cast(
    column: Any,
    name: str,
    kinds: dict[str, str],
    reader: EventReader,
    where: str,
    numbers: list[int],
    good: list[bool],
) -> Any:
    """A text column as its kind's values: an Arrow array where every cell casts, else
    the values read cell by cell (each cell that does not fit named, or its row skipped)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrow = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    kind = kinds[name]
    if kind == "string":
        return column
    if kind != "bool":
        tokens = _tokens(column)
        if pc.any(tokens).as_py():
            column = pc.if_else(tokens, pa.nulls(len(column), pa.string()), column)
    try:
        return pc.cast(column, arrow[kind])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    if kind == "int":
        try:
            values = pc.cast(column, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            kinds[name] = "float"
            return values
    values = []
    converters: dict[str, Callable[[str], Any]] = {"int": _number, "float": float, "bool": _boolean}
    convert = converters[kind]
    for offset, text in enumerate(column.to_pylist()):
        if text is None:
            values.append(None)
            continue
        try:
            values.append(convert(text))
        except ValueError:
            values.append(None)
            if good[offset]:
                good[offset] = False
                reader.fail(
                    EventError(
                        f"{_shown(text)} is not "
                        f"{'a number' if kind != 'bool' else 'true or false'} "
                        f"like the rest of the column (give the column a type with "
                        f"column_types / --column-type {name}=string)",
                        source=where,
                        row=numbers[offset],
                        field=name,
                    )
                )
    return values


def _number(text: str) -> int | float:
    """An int, or a float where the column has widened."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ValueError(text)
