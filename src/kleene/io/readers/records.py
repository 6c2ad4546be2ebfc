"""Events from Python records: tuples (or lists) of values in the order `columns` names
them, as a database cursor's `fetchall()`, `csv.reader` or a parser hands them out. A batch
of records is read a column at a time, as the file readers read theirs: the types, times
and ids checked a column at a time, and each event made straight from its row's values, with
no dict and no call of `Event(...)` per row (a malformed row is named by its number, from
1, and field, or skipped and counted with `on_error="skip"`).

>>> rows = [("A", 1, 10.5), ("B", 2, None), ("A", 3, 12.0)]
>>> list(from_records(rows, ["type", "ts", "price"]))  # doctest: +NORMALIZE_WHITESPACE
[Event('A', 1, {'price': 10.5}, id=0), Event('B', 2, {}, id=1),
 Event('A', 3, {'price': 12.0}, id=2)]
>>> reader = from_records([("A", 1), ("B",)], ["type", "ts"], on_error="skip")
>>> list(reader), str(reader.errors[0])
([Event('A', 1, {}, id=0)], 'records, row 2: the record holds 1 value for 2 columns')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import itemgetter
from typing import Any

from kleene.errors import EventError
from kleene.events import Event
from kleene.io.readers.rows import Rows, row_events
from kleene.io.readers.source import BATCH_ROWS, EventReader, OnError, columns_of, named_once

__all__ = ["from_records"]


def from_records(
    records: Iterable[Sequence[Any]],
    columns: Sequence[str],
    *,
    ts: str = "ts",
    type: str = "type",  # noqa: A002 - the column's role, as kleene.spark.detect names it
    id: str | None = None,  # noqa: A002
    event_type: str | None = None,
    tz: str = "UTC",
    ts_unit: str | None = None,
    on_error: OnError = "raise",
    name: str = "records",
) -> EventReader:
    """Events from records whose values `columns` names in order: `ts` names the timestamp
    column, `type` the event type's (or `event_type` gives every record one type), `id`
    the ids' (else a record's position, from 0); `tz` is the zone of naive datetimes,
    `ts_unit` what numeric timestamps count since the epoch; a None value is no attribute.
    The records are read once, as the engine asks for events (a generator will do)."""
    names = [str(column) for column in columns]
    named_once(names, name, "columns names")
    spec = columns_of(type, ts, id, event_type, tz, ts_unit)

    def batches(reader: EventReader) -> Iterator[Iterator[Event]]:
        reader.names, reader.where = tuple(names), name
        reader.has_roles()
        rows = Rows(reader)
        size = len(names)
        source = iter(records)
        number = 0
        while chunk := list(islice(source, BATCH_ROWS)):
            numbers = range(number + 1, number + 1 + len(chunk))
            number += len(chunk)
            good = None  # every record fits, checked a batch at a time
            if not _plain(chunk, size):
                good = [
                    _fits(record, size, reader, name, at)
                    for at, record in zip(numbers, chunk, strict=True)
                ]
                blank = (None,) * size
                chunk = [record if ok else blank for record, ok in zip(chunk, good, strict=True)]
            cells = [list(map(itemgetter(at), chunk)) for at in range(size)]
            yield row_events(rows, names, cells, numbers, name, good)

    return EventReader(name, batches, spec, on_error)


def _plain(chunk: list[Any], size: int) -> bool:
    """Is every record a tuple or list of `size` values (checked a batch at a time)?"""
    return set(map(type, chunk)) <= {tuple, list} and set(map(len, chunk)) == {size}


def _fits(record: Any, size: int, reader: EventReader, where: str, row: int) -> bool:
    """Is the record a tuple or list of `size` values? If not, the reader fails it (an
    error naming its row, or skipped and counted)."""
    if not isinstance(record, Sequence) or isinstance(record, str | bytes):
        shown = f"{type(record).__name__} {record!r}"[:80]
        reader.fail(
            EventError(f"a record is a tuple or a list, not {shown}", source=where, row=row)
        )
        return False
    if len(record) != size:
        values = f"{len(record)} value{'s' if len(record) != 1 else ''}"
        message = f"the record holds {values} for {size} columns"
        reader.fail(EventError(message, source=where, row=row))
        return False
    return True
