"""Events from Arrow data (a Table, RecordBatch, RecordBatchReader or batches) and pandas
DataFrames (through Arrow), a batch at a time: each batch read a column at a time, and
thinned to the rows the query can take (`EventReader.keep`) where leaving the others out
changes nothing the engine reports or finds wrong.

>>> import pyarrow as pa
>>> table = pa.table({"kind": ["A", "B", None], "time": [1, 2, 3], "price": [10, None, 30]})
>>> reader = from_arrow(table, type="kind", ts="time", on_error="skip")
>>> list(reader)
[Event('A', 1, {'price': 10}, id=0), Event('B', 2, {}, id=1)]
>>> reader.skipped, str(reader.errors[0])
(1, "arrow, row 3, field 'kind': the event type is missing")
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from kleene.errors import EventError
from kleene.events import LARGEST_TIME, Event
from kleene.io.readers.rows import Rows, decoded, row_events
from kleene.io.readers.source import (
    BATCH_ROWS,
    Columns,
    EventReader,
    OnError,
    columns_of,
    named_once,
)

__all__ = ["UNKNOWN", "arrow_batches", "from_arrow", "from_pandas", "microseconds", "thinned"]


def from_arrow(
    data: Any,
    *,
    ts: str = "ts",
    type: str = "type",  # noqa: A002 - the column's role, as kleene.spark.detect names it
    id: str | None = None,  # noqa: A002
    event_type: str | None = None,
    tz: str = "UTC",
    ts_unit: str | None = None,
    on_error: OnError = "raise",
    name: str = "arrow",
) -> EventReader:
    """Events from a pyarrow Table, RecordBatch, RecordBatchReader or iterable of batches:
    `ts` names the timestamp column, `type` the event type's (or `event_type` gives every
    row one type), `id` the ids' (else a row's position, from 0); `tz` is the zone of naive
    datetimes, `ts_unit` what numeric timestamps count since the epoch ("s", "ms", "us",
    "ns"; they become datetimes); `on_error="skip"` skips and counts malformed rows."""
    columns = columns_of(type, ts, id, event_type, tz, ts_unit)

    def batches(reader: EventReader) -> Iterator[Iterator[Event]]:
        yield from arrow_batches(reader, _record_batches(data), name)

    return EventReader(name, batches, columns, on_error, arrow=True)


def from_pandas(
    frame: Any,
    *,
    ts: str = "ts",
    type: str = "type",  # noqa: A002 - the column's role, as kleene.spark.detect names it
    id: str | None = None,  # noqa: A002
    event_type: str | None = None,
    tz: str = "UTC",
    ts_unit: str | None = None,
    on_error: OnError = "raise",
    name: str = "dataframe",
) -> EventReader:
    """Events from a pandas DataFrame (through Arrow); the columns named as `from_arrow`
    names them.

    >>> import pandas
    >>> frame = pandas.DataFrame({"kind": ["A", "B"], "when": [1.5, 2.5], "x": [3, None]})
    >>> list(from_pandas(frame, ts="when", type="kind"))
    [Event('A', 1.5, {'x': 3.0}, id=0), Event('B', 2.5, {}, id=1)]
    """
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    return from_arrow(
        table,
        ts=ts,
        type=type,
        id=id,
        event_type=event_type,
        tz=tz,
        ts_unit=ts_unit,
        on_error=on_error,
        name=name,
    )


def _record_batches(data: Any) -> Iterable[Any]:
    import pyarrow as pa

    batches: Iterable[Any]
    if isinstance(data, pa.Table):
        batches = data.to_batches(max_chunksize=BATCH_ROWS)
    elif isinstance(data, pa.RecordBatch):
        batches = [data]
    else:
        batches = data  # a RecordBatchReader or any iterable of record batches
    return batches


def arrow_batches(
    reader: EventReader, batches: Iterable[Any], where: str
) -> Iterator[Iterator[Event]]:

    rows = Rows(reader)
    number = 0
    for batch in batches:
        names = batch.schema.names
        reader.names, reader.where = tuple(names), where
        reader.has_roles()
        named_once(names, where, "its columns name")
        numbers = range(number + 1, number + 1 + batch.num_rows)
        number += batch.num_rows
        if reader.keep is not None:
            kept = thinned(rows, batch, numbers, where)
            if kept is not None:
                yield kept
                continue
        good = [True] * batch.num_rows
        columns = []
        for name, given in zip(names, batch.columns, strict=True):
            column = microseconds(given)
            try:
                columns.append(column.to_pylist())
            except UnicodeDecodeError:  # a damaged file's text
                columns.append(_undecodable(column, name, reader, where, numbers, good))
            except (OverflowError, ValueError):  # a time Python's datetime cannot hold
                columns.append(_times(column, name, reader, where, numbers, good))
        yield row_events(rows, names, columns, numbers, where, good)


def thinned(
    rows: Rows, batch: Any, numbers: Sequence[int], where: str, times: Any = None
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
    latest, reader._latest = reader._latest, UNKNOWN
    names = batch.schema.names
    if latest is UNKNOWN or len(set(names)) != len(names) or spec.ts not in names:
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
    columns = [microseconds(column).to_pylist() for column in kept.columns]
    start = reader.rows
    positions = [start + offset for offset in offsets]
    reader._thinning = (start - reader.left_out, positions)
    reader.left_out += batch.num_rows - len(offsets)
    reader._thinned.append((start + batch.num_rows - reader.left_out, reader.left_out))
    return rows.batch(names, columns, [numbers[o] for o in offsets], where, None, positions)


#: `EventReader._latest` once a batch's times could not be read in Arrow: no row is left
#: out after it.
UNKNOWN = object()


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
        microseconds(column[:1]).to_pylist()[0],
        microseconds(column[-1:]).to_pylist()[0],
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
            low, high = pc.min_max(microseconds(column)).values()
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


def microseconds(column: Any) -> Any:
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
    return list(decoded(raw, name, reader, where, list(numbers), good).to_pylist())


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
