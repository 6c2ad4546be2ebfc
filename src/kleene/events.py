"""Events: what patterns match, and the watermark that says how far time has moved.

>>> from kleene import Event
>>> e = Event("Stock", 10, {"symbol": "IBM", "price": 97.5})
>>> e["price"], e.get("volume"), e.id
(97.5, None, None)
>>> Event("Stock", 10, {"price": 1}, id=7)
Event('Stock', 10, {'price': 1}, id=7)

An event's `id` names it in matches; when it is None, the engine gives the event its arrival
position. Timestamps are ints, floats or timezone-aware datetimes; `t` is the timestamp as a
number (datetimes become seconds since the epoch), which is what windows measure. `seq` is
the event's position in the stream the engine matches (0, 1, …, in timestamp order), which
count windows (`WITHIN 5 EVENTS`) measure; the engine sets it for them (`with_seq`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from kleene.errors import EventError

__all__ = [
    "EPOCH_UNITS",
    "Event",
    "Timestamp",
    "Watermark",
    "as_event",
    "checked_events",
    "event_types",
    "numeric_time",
    "numeric_times",
    "owned_event",
    "to_timestamp",
]

Timestamp = int | float | datetime


#: The largest timestamp magnitude kleene takes: windows and watermarks are floats, and
#: beyond this an integer timestamp loses its meaning.
LARGEST_TIME = 2**63


def numeric_time(ts: object) -> float | int:
    """A timestamp as a number: ints and floats stay, datetimes become epoch seconds.

    >>> from datetime import datetime, timezone
    >>> numeric_time(datetime(1970, 1, 2, tzinfo=timezone.utc))
    86400.0
    """
    if isinstance(ts, bool):
        raise EventError(f"a timestamp must be a number or a datetime, not {ts!r}", field="ts")
    if isinstance(ts, int):
        if not -LARGEST_TIME <= ts <= LARGEST_TIME:
            shown = str(ts) if ts.bit_length() < 128 else f"of {ts.bit_length()} bits"
            raise EventError(f"timestamp {shown} is out of range (at most 2**63)", field="ts")
        return ts
    if isinstance(ts, float):
        if not math.isfinite(ts):
            raise EventError(f"a timestamp must be a finite number, not {ts!r}", field="ts")
        return ts
    if isinstance(ts, datetime):
        if ts.tzinfo is None or ts.utcoffset() is None:
            raise EventError(
                f"timestamp {ts.isoformat()} has no time zone; give it one "
                "(readers take tz='UTC' for naive values)",
                field="ts",
            )
        return ts.timestamp()
    raise EventError(
        f"a timestamp must be an int, a float or a datetime, not {type(ts).__name__} {ts!r}",
        field="ts",
    )


class Event:
    """One event: a type, a timestamp, attributes and an optional id. Immutable: the
    attributes are copied, so changing the caller's dict afterwards changes nothing.

    >>> attrs = {"price": 10}
    >>> event = Event("A", 1, attrs)
    >>> attrs["price"] = 99
    >>> event["price"]
    10
    """

    __slots__ = ("attrs", "id", "seq", "t", "ts", "type")

    type: str
    ts: Timestamp
    attrs: Mapping[str, Any]
    id: Hashable | None
    t: int | float
    seq: int | None

    def __init__(
        self,
        type: str,  # noqa: A002 - the papers' word for it
        ts: Timestamp,
        attrs: Mapping[str, Any] | None = None,
        id: Hashable | None = None,  # noqa: A002
    ) -> None:
        _fill(self, type, ts, MappingProxyType(dict(attrs) if attrs is not None else {}), id)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("events are immutable; make a new one with Event(...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("events are immutable")

    def __getitem__(self, name: str) -> Any:
        return self.attrs[name]

    def get(self, name: str, default: Any = None) -> Any:
        """An attribute, or `default` when the event has none of that name."""
        return self.attrs.get(name, default)

    def with_id(self, id: Hashable) -> Event:  # noqa: A002
        """The same event with another id."""
        return _sealed(self.type, self.ts, self.t, self.attrs, id, self.seq)

    def with_seq(self, seq: int) -> Event:
        """The same event at position `seq` of the stream."""
        return _sealed(self.type, self.ts, self.t, self.attrs, self.id, seq)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict: id, type, ts (datetimes as ISO 8601 text), then the attributes."""
        ts = self.ts.isoformat() if isinstance(self.ts, datetime) else self.ts
        return {"id": self.id, "type": self.type, "ts": ts, **self.attrs}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (self.type, self.ts, self.id, dict(self.attrs)) == (
            other.type,
            other.ts,
            other.id,
            dict(other.attrs),
        )

    def __hash__(self) -> int:
        return hash((self.type, self.t, self.id))

    def __repr__(self) -> str:
        tail = f", id={self.id!r}" if self.id is not None else ""
        return f"Event({self.type!r}, {self.ts!r}, {dict(self.attrs)!r}{tail})"

    def __reduce__(self) -> tuple[Any, ...]:
        if self.seq is not None:
            return (_sequenced, (self.type, self.ts, dict(self.attrs), self.id, self.seq))
        return (Event, (self.type, self.ts, dict(self.attrs), self.id))


def _sequenced(
    kind: str,
    ts: Timestamp,
    attrs: dict[str, Any],
    id: Hashable | None,  # noqa: A002
    seq: int,
) -> Event:
    """An event with its stream position, as pickled."""
    return Event(kind, ts, attrs, id).with_seq(seq)


def _fill(
    event: Event,
    kind: str,
    ts: Timestamp,
    attrs: Mapping[str, Any],
    id: Hashable | None,  # noqa: A002
) -> None:
    setter = object.__setattr__
    setter(event, "type", _event_type(kind))
    setter(event, "ts", ts)
    setter(event, "t", numeric_time(ts))
    setter(event, "attrs", attrs)
    setter(event, "id", id)
    setter(event, "seq", None)


def _event_type(kind: object) -> str:
    if not isinstance(kind, str) or not kind:
        raise EventError(f"an event type must be a non-empty string, not {kind!r}", field="type")
    return kind


def owned_event(kind: str, ts: Timestamp, attrs: Mapping[str, Any], id: Hashable | None) -> Event:  # noqa: A002
    """An event over attributes nobody else holds (a dict made for it, or another event's
    read-only mapping): no copy."""
    proxy = attrs if isinstance(attrs, MappingProxyType) else MappingProxyType(attrs)
    return _sealed(_event_type(kind), ts, numeric_time(ts), proxy, id, None)


def numeric_times(stamps: Sequence[object]) -> list[int | float] | None:
    """`numeric_time` of each timestamp of a column, checked a column at a time; None when
    any one would raise (ask each one then, for its reason).

    >>> numeric_times([3, 1.5]), numeric_times([3, float("nan")]), numeric_times([True])
    ([3, 1.5], None, None)
    """
    kinds = set(map(type, stamps))
    if kinds <= {int, float}:
        numbers: Sequence[int | float] = stamps  # type: ignore[assignment]
        if numbers and (min(numbers) < -LARGEST_TIME or max(numbers) > LARGEST_TIME):
            return None
        finite = float not in kinds or all(map(math.isfinite, numbers))
        return list(numbers) if finite else None
    if kinds == {datetime}:
        times = []
        for stamp in stamps:
            if stamp.utcoffset() is None:  # type: ignore[attr-defined]
                return None
            times.append(stamp.timestamp())  # type: ignore[attr-defined]
        return times
    return None


class _Unsealed:
    """An event being made: `Event`'s slots without its guard on setting them. Readers set
    the slots of one with plain stores, then make it an `Event` (`__class__`; Python checks
    that the two lay out their slots alike), at half the cost of `object.__setattr__`."""

    __slots__ = Event.__slots__

    type: str
    ts: Timestamp
    attrs: Mapping[str, Any]
    id: Hashable | None
    t: int | float
    seq: int | None


def event_types(cells: Sequence[object]) -> bool:
    """Is every cell of a type column an event type (a non-empty string)?

    >>> event_types(["A", "B", "A"]), event_types(["A", ""]), event_types([["A"]])
    (True, False, False)
    """
    try:
        return all(isinstance(kind, str) and kind for kind in set(cells))
    except TypeError:  # an unhashable cell: no type either
        return False


def checked_events(
    kinds: Iterable[str],
    stamps: Iterable[Timestamp],
    times: Iterable[int | float],
    ids: Iterable[Hashable | None],
    names: Sequence[str],
    cells: Sequence[Sequence[Any]],
) -> Iterator[Event]:
    """Events from columns a reader has checked a column at a time: each kind an event
    type (`event_types`), each time the `numeric_time` of its stamp (`numeric_times`), and
    the attributes `names` from the columns `cells` (a null cell is no attribute), each
    event over a dict made for it: no checks, no copy.

    >>> list(checked_events(["A"], [5], [5], [0], ["x", "y"], [[1], [None]]))
    [Event('A', 5, {'x': 1}, id=0)]
    """
    sparse = tuple(None in column for column in cells)
    return _loop_for(tuple(names), sparse)(kinds, stamps, times, ids, *cells)


@lru_cache(maxsize=64)
def _loop_for(names: tuple[str, ...], sparse: tuple[bool, ...]) -> Callable[..., Iterator[Event]]:
    """`checked_events`' loop written for these attribute names, a column that holds nulls
    (`sparse`) adding its attribute only where it has a value: each event's attributes are
    one dict display, not `dict(zip(names, row))` over a tuple made per row (0.83
    against 1.62 µs per event of three attributes: docs/benchmarks-journal.md).

    >>> print(_loop_for(("x", "y"), (False, True)).source)  # doctest: +NORMALIZE_WHITESPACE
    def made(kinds, stamps, times, ids, c0, c1):
        for kind, ts, t, ident, v0, v1 in zip(kinds, stamps, times, ids, c0, c1):
            attrs = {'x': v0}
            if v1 is not None: attrs['y'] = v1
            yield sealed(kind, ts, t, mapping(attrs), ident, None)
    """
    values = [f"v{i}" for i in range(len(names))]
    dense = sparse.index(True) if True in sparse else len(sparse)  # the names shown at once
    pairs = zip(names[:dense], values[:dense], strict=True)
    shown = ", ".join(f"{name!r}: {value}" for name, value in pairs)
    lines = [f"        attrs = {{{shown}}}\n"]
    for name, value, nulls in zip(names[dense:], values[dense:], sparse[dense:], strict=True):
        put = f"attrs[{name!r}] = {value}"
        lines.append(f"        if {value} is not None: {put}\n" if nulls else f"        {put}\n")
    columns = "".join(f", c{i}" for i in range(len(names)))
    source = (
        f"def made(kinds, stamps, times, ids{columns}):\n"
        f"    for kind, ts, t, ident{''.join(f', {v}' for v in values)} in "
        f"zip(kinds, stamps, times, ids{columns}):\n"
        + "".join(lines)
        + "        yield sealed(kind, ts, t, mapping(attrs), ident, None)\n"
    )
    namespace: dict[str, Any] = {"sealed": _sealed, "mapping": MappingProxyType}
    exec(compile(source, "<kleene>", "exec"), namespace)
    made = namespace["made"]
    made.source = source
    return made  # type: ignore[no-any-return]


_new = object.__new__


def _sealed(
    kind: str,
    ts: Timestamp,
    t: int | float,
    attrs: Mapping[str, Any],
    id: Hashable | None,  # noqa: A002
    seq: int | None,
) -> Event:
    """An event of checked fields over `attrs`, held as they are (see `_Unsealed`)."""
    event = _new(_Unsealed)
    event.type = kind
    event.ts = ts
    event.t = t
    event.attrs = attrs
    event.id = id
    event.seq = seq
    event.__class__ = Event  # type: ignore[assignment]
    return event  # type: ignore[return-value]


_EVENT_FIELDS = ("type", "ts", "id")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_UNITS = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 0.001}  # microseconds per unit


def to_timestamp(value: Any, zone: tzinfo, unit: str | None = None) -> int | float | datetime:
    """A value as a timestamp, as every reader and `Engine.send` read one: a number; a
    datetime (a naive one gets the zone `zone`); a date (midnight in `zone`); or text holding
    a number or an ISO 8601 time. With `unit`, a number counts that unit since the epoch and
    becomes a datetime. Raises ValueError with the reason.

    >>> to_timestamp("2026-01-02T03:04:05", UTC), to_timestamp(" 12 ", UTC)
    (datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc), 12)
    """
    if value is None:
        raise ValueError("the timestamp is missing")
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a time")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{value!r} is not a time")
        if unit is None:
            return value
        try:
            if unit == "ns" and isinstance(value, int):
                return _EPOCH + timedelta(microseconds=value // 1000)
            return _EPOCH + timedelta(microseconds=value * EPOCH_UNITS[unit])
        except OverflowError:
            raise ValueError(
                f"{value!r} {unit} since 1970 is outside the years 1 to 9999 that Python's "
                "datetime holds"
            ) from None
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=zone)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=zone)
    if isinstance(value, str):
        text = value.strip()
        for kind in (int, float):
            try:
                return to_timestamp(kind(text), zone, unit)
            except ValueError:
                pass
        try:
            return to_timestamp(datetime.fromisoformat(text), zone)
        except ValueError:
            raise ValueError(f"{value!r} is neither a number nor an ISO 8601 time") from None
    raise ValueError(f"{value!r} ({type(value).__name__}) is not a time")


def as_event(item: Event | Mapping[str, Any], default_id: Hashable | None = None) -> Event:
    """An `Event` from an event or a mapping with `type`, `ts`, optional `id` and attributes.

    An event without an id gets `default_id`. The timestamp may take any form the readers
    take (`to_timestamp`): ISO 8601 text, a naive datetime (read as UTC), a date.

    >>> as_event({"type": "A", "ts": 3, "x": 1}, default_id=0)
    Event('A', 3, {'x': 1}, id=0)
    """
    if isinstance(item, Event):
        return item if item.id is not None or default_id is None else item.with_id(default_id)
    if not isinstance(item, Mapping):
        raise EventError(f"an event must be a kleene.Event or a mapping, not {type(item).__name__}")
    for key in ("type", "ts"):
        if key not in item:
            raise EventError(f"the mapping has no {key!r}: {dict(item)!r}", field=key)
    attrs = {k: v for k, v in item.items() if k not in _EVENT_FIELDS}
    event_id = item.get("id", None)
    ts = item["ts"]
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        try:
            ts = to_timestamp(ts, UTC)
        except ValueError as error:
            raise EventError(str(error), field="ts") from None
    return owned_event(item["type"], ts, attrs, default_id if event_id is None else event_id)


@dataclass(frozen=True, slots=True)
class Watermark:
    """How far event time has moved: every event with t < `t` (or t <= `t` when `inclusive`)
    has arrived.

    >>> Watermark(5, inclusive=False).settles(5), Watermark(5).settles(5)
    (False, True)
    """

    t: int | float
    inclusive: bool = True

    def settles(self, t: int | float) -> bool:
        """Have all events with timestamps up to and including `t` arrived?"""
        return t < self.t or (self.inclusive and t == self.t)
