"""What every reader shares: the formats and where a file's bytes come from, which columns
make an event (`Columns`), and the reader itself (`EventReader`): an iterable of events
read a batch at a time, which counts and keeps what it skipped and knows where each event
came from.

Every reader maps columns to events the same way (`Columns`): one column is the event type
(or every row gets one constant type), one the timestamp, optionally one the id (else the
row's position in the input, from 0); every other column is an attribute, with nulls left
out. Timestamps may be numbers, datetimes (naive ones get the zone `tz`), dates, or ISO 8601
text. Numbers stay numbers (the engine's `time_unit` says what one unit is) unless `ts_unit`
says they count seconds, ms, us or ns since the epoch: then they become datetimes.

A malformed row raises `EventError` naming the file, the row (data rows count from 1) and
the field. With `on_error="skip"` the row is skipped instead and counted in `skipped`; the
first few such errors are kept in `errors`.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from kleene.errors import EventError
from kleene.events import EPOCH_UNITS, Event

__all__ = [
    "BATCH_ROWS",
    "FORMATS",
    "GZIP_MAGIC",
    "STDIN",
    "Columns",
    "EventReader",
    "OnError",
    "columns_of",
    "for_arrow",
    "format_of",
    "gzipped",
    "named_format",
    "named_once",
    "opened",
    "where_of",
    "zone",
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
KEPT_ERRORS = 10
#: Rows a reader reads at a time from Arrow and Parquet.
BATCH_ROWS = 65_536


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


def where_of(path: Path) -> str:
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


def named_once(names: Sequence[str], where: str, naming: str, row: int | None = None) -> None:
    """An `EventError` if a column name comes twice: it would be one attribute of two values
    (a CSV header, a Parquet file, an Arrow table). `naming`: who names them, and the verb."""
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise EventError(
            f"{naming} {', '.join(map(repr, repeated))} more than once; rename the "
            "columns so each is one attribute",
            source=where,
            row=row,
        )


#: What a damaged gzip file raises as it is read.
_DAMAGE = (EOFError, OSError, zlib.error)


class _Unzipped(gzip.GzipFile):
    """A gzip file whose damage (a truncated file, a corrupt block) is an `EventError`
    naming the file and how far it read, not a raw `EOFError` from the reader below; what
    comes before the damage is read first."""

    CHUNK = 1 << 16

    def __init__(self, raw: Any, where: str) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self.where = where
        self.reached = 0
        self.damage: Exception | None = None

    def damaged(self) -> EventError:
        return EventError(
            f"the gzip file is damaged after {self.reached:,} bytes of what it holds "
            f"({self.damage}); the events before were read",
            source=self.where,
        )

    def read(self, size: int | None = -1) -> bytes:
        if self.damage is not None:
            raise self.damaged()
        wanted = -1 if size is None or size < 0 else size
        pieces: list[bytes] = []
        got = 0
        while wanted < 0 or got < wanted:
            step = self.CHUNK if wanted < 0 else min(self.CHUNK, wanted - got)
            try:
                piece = super().read1(step)
            except _DAMAGE as error:
                self.damage = error
                if not pieces or wanted < 0:  # a reader of the whole file gets the error
                    self.reached += got
                    raise self.damaged() from None
                break  # the part before the damage now, the error at the next read
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        self.reached += got
        return b"".join(pieces)

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def peek(self, size: int = 0) -> bytes:
        if self.damage is None:
            try:
                return super().peek(size)
            except _DAMAGE as error:
                self.damage = error
        raise self.damaged()

    def readline(self, size: int | None = -1) -> bytes:
        if self.damage is None:
            try:
                line = super().readline(size)
            except _DAMAGE as error:
                self.damage = error
            else:
                self.reached += len(line)
                return line
        raise self.damaged()


def for_arrow(raw: io.BufferedIOBase) -> Any:
    """What pyarrow reads from where `raw` stands: a plain file on disk as pyarrow's own
    file, so pyarrow's threads hold nothing of Python's (letting go of a Python file takes
    the interpreter's lock, which a thread meeting the interpreter's teardown never gets:
    the process aborts); a gzip stream or standard input as it is."""
    import pyarrow as pa

    if not isinstance(raw, io.BufferedReader) or not _named_on_disk(raw):
        return raw
    native = pa.OSFile(raw.name)
    native.seek(raw.tell())
    return native


def _named_on_disk(raw: io.BufferedReader) -> bool:
    """Is `raw` a regular file that its name opens again (not standard input, a pipe)?"""
    name = getattr(raw, "name", None)  # a buffer over bytes has none
    if not isinstance(name, str) or not os.path.isfile(name):
        return False
    return os.path.samestat(os.stat(name), os.fstat(raw.fileno()))


_ROLES = {"ts": "the timestamp", "type": "the event type", "id": "the id"}


@contextmanager
def opened(path: Path) -> Iterator[io.BufferedIOBase]:
    """A file, or standard input (`-`), as bytes: decompressed when it is gzip, told by
    its first bytes (whatever its name); a damaged gzip file is an `EventError`."""
    if str(path) == STDIN:
        raw: Any = sys.stdin.buffer
        yield _Unzipped(raw, "standard input") if gzipped(raw) else raw
        return
    with path.open("rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        if magic != GZIP_MAGIC:
            yield raw
            return
        with _Unzipped(raw, str(path)) as unzipped:
            yield unzipped


def zone(name: str) -> tzinfo:
    return UTC if name.upper() == "UTC" else ZoneInfo(name)


def columns_of(
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
        zone(tz)
    except (KeyError, ValueError):
        raise EventError(f"unknown time zone {tz!r}") from None
    return Columns(type_column, ts_column, id_column, event_type, tz, ts_unit)


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

    def roles(self) -> dict[str, str]:
        """The columns that are no attribute, by their role (ts, type, id)."""
        roles = {self.ts: "ts"}
        if self.event_type is None:
            roles[self.type] = "type"
        if self.id is not None:
            roles[self.id] = "id"
        return roles

    def special(self) -> set[str]:
        return set(self.roles())


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
    #: The latest time of the rows read so far, for `keep` (see `thinned`).
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
        return self.columns.roles()

    def has_roles(self) -> None:
        """The input's columns (`names`) are known: a column a role names (ts, type, id) that
        is not among them is an error whatever `on_error` says, the input's fault and no
        row's (as `kleene run` refuses it)."""
        names = self.names or ()
        for name, role in self.roles().items():
            if name not in names:
                raise EventError(
                    f"no column {name!r} ({_ROLES[role]}); it has {', '.join(names)}",
                    source=self.where or self.source,
                    field=name,
                )

    def __iter__(self) -> Iterator[Event]:
        return chain.from_iterable(self.batches(self))  # no layer per event

    def fail(self, error: EventError) -> None:
        """Raise `error`, or count it when skipping."""
        if self.on_error == "raise":
            raise error
        self.skipped += 1
        if len(self.errors) < KEPT_ERRORS:
            self.errors.append(error)

    def report(self) -> str:
        """One line on what was skipped, or ""."""
        if not self.skipped:
            return ""
        first = f"; first: {self.errors[0]}" if self.errors else ""
        return f"skipped {self.skipped} malformed row{'s' if self.skipped != 1 else ''}{first}"
