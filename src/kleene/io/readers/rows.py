"""Rows to events, the same way for every format: each row's type, timestamp and id checked
(and a malformed one named by file, row and field, or skipped and counted), a batch of rows
given as columns checked a column at a time where every row is well formed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import count, repeat
from typing import Any

from kleene.errors import EventError
from kleene.events import (
    Event,
    Timestamp,
    checked_events,
    event_types,
    numeric_time,
    numeric_times,
    to_timestamp,
)
from kleene.io.readers.source import EventReader, zone

__all__ = ["BadCellError", "Rows", "decoded", "row_events"]


class Rows:
    """Turns rows (dicts of cells) into events for one reader."""

    def __init__(self, reader: EventReader) -> None:
        self.reader = reader
        self.columns = reader.columns
        self.zone = zone(reader.columns.tz)
        self.special = reader.columns.special()

    def event(self, row: dict[str, Any], where: str, number: int) -> Event | None:
        columns, reader = self.columns, self.reader
        try:
            kind = columns.event_type
            if kind is None:
                kind = self.kind(row.get(columns.type))
            if columns.ts not in row:
                raise BadCellError(columns.ts, "the timestamp column is missing")
            ts = self.stamp(row[columns.ts])
            event_id = reader.rows if columns.id is None else self.ident(row.get(columns.id))
            attrs = {k: v for k, v in row.items() if v is not None and k not in self.special}
        except BadCellError as bad:
            reader.fail(EventError(bad.message, source=where, row=number, field=bad.field))
            return None
        reader.mark(where, number)
        reader.rows += 1
        return Event(kind, ts, attrs, event_id)

    def kind(self, raw: Any) -> str:
        """The event type of a type cell."""
        if raw is None or raw == "":
            raise BadCellError(self.columns.type, "the event type is missing")
        if not isinstance(raw, str):  # never retyped: 5 and "5" are not one type
            raise BadCellError(
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
            raise BadCellError(self.columns.ts, str(error)) from None
        except EventError as error:
            raise BadCellError(self.columns.ts, error.message) from None
        return ts

    def ident(self, raw: Any) -> Any:
        """The id of an id cell."""
        if raw is None:
            raise BadCellError(self.columns.id or "id", "the id is missing")
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
            except BadCellError as bad:
                error = EventError(bad.message, source=where, row=numbers[offset], field=bad.field)
                reader.fail(error)
                marked = False
                continue
            if not marked:
                reader.mark(where, numbers[offset], at)
                marked = positions is None
            reader.rows = at + 1
            attrs = {n: v for n, v in zip(attributes, values, strict=True) if v is not None}
            yield Event(kind, ts, attrs, event_id)  # type: ignore[arg-type]

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


class BadCellError(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message


def row_events(
    rows: Rows,
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
    rows: Rows,
    names: list[str],
    columns: list[list[Any]],
    numbers: Sequence[int],
    where: str,
    good: list[bool] | None,
) -> Iterator[Event]:
    """`row_events` a row at a time, for rows `Rows.batch` cannot take as columns (a
    repeated or missing column name, or no columns)."""
    for offset, values in enumerate(zip(*columns, strict=True)):
        if good is not None and not good[offset]:
            continue
        event = rows.event(dict(zip(names, values, strict=True)), where, numbers[offset])
        if event is not None:
            yield event


def decoded(
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
