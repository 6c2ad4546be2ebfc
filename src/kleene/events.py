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
from collections.abc import Callable, Container, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache, partial
from types import MappingProxyType
from typing import Any, ClassVar

from kleene.errors import EventError

__all__ = [
    "ATOMS",
    "EPOCH_UNITS",
    "Event",
    "Schema",
    "Timestamp",
    "Watermark",
    "as_event",
    "attribute_slot",
    "attributes",
    "checked_events",
    "converted_layouts",
    "event_of",
    "event_types",
    "numeric_time",
    "numeric_times",
    "schema_of",
    "to_timestamp",
]

Timestamp = int | float | datetime


#: The largest timestamp magnitude kleene takes: windows and watermarks are floats, and
#: beyond this an integer timestamp loses its meaning.
LARGEST_TIME = 2**63

#: Attribute values hashable as they are: a key of one needs no test.
ATOMS = frozenset({str, int, float, bool})


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
    attributes are copied into the event, so changing the caller's dict afterwards changes
    nothing.

    >>> attrs = {"price": 10}
    >>> event = Event("A", 1, attrs)
    >>> attrs["price"] = 99
    >>> event["price"], dict(event.attrs)
    (10, {'price': 10})

    Each attribute is held in a slot of its own (`attribute_slot`), in a subclass of
    `Event` made once for each list of attribute names (a *schema*: every event of a
    source shares one), so an event holds no dict of its own: about 100 bytes with two
    attributes, and compiled conditions read an attribute as a plain slot (an event
    without it reads None). `attrs` makes a read-only mapping of them when asked.
    """

    __slots__ = ("id", "seq", "t", "ts", "type")

    type: str
    ts: Timestamp
    id: Hashable | None
    t: int | float
    seq: int | None
    #: The event's attribute names, in the order given (its schema's).
    names: ClassVar[tuple[str, ...]] = ()
    _slot_of: ClassVar[Mapping[str, str]] = MappingProxyType({})
    _schema: ClassVar[Schema]

    def __new__(
        cls,
        type: str,  # noqa: A002 - the papers' word for it
        ts: Timestamp,
        attrs: Mapping[str, Any] | None = None,
        id: Hashable | None = None,  # noqa: A002
    ) -> Event:
        if type.__class__ is not str or not type:
            _event_type(type)
        if ts.__class__ is int:
            t = ts if -LARGEST_TIME <= ts <= LARGEST_TIME else numeric_time(ts)
        elif ts.__class__ is float and ts - ts == 0.0:  # finite
            t = ts
        else:
            t = numeric_time(ts)
        if attrs is None:
            return _EMPTY.from_mapping(type, ts, t, id, None, {})
        try:
            schema = _SCHEMAS[tuple(attrs)]
        except KeyError:
            schema = schema_of(tuple(attrs))
        return schema.from_mapping(type, ts, t, id, None, attrs)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("events are immutable; make a new one with Event(...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("events are immutable")

    @property
    def attrs(self) -> Mapping[str, Any]:
        """The attributes, read-only, by name."""
        return self._schema.attrs(self)  # (each schema's class reads its own, directly)

    def _dict(self) -> dict[str, Any]:
        return self._schema.as_dict(self)

    def __getitem__(self, name: str) -> Any:
        slot = self._slot_of.get(name)
        if slot is None:
            raise KeyError(name)
        return getattr(self, slot)

    def get(self, name: str, default: Any = None) -> Any:
        """An attribute, or `default` when the event has none of that name."""
        slot = self._slot_of.get(name)
        return default if slot is None else getattr(self, slot)

    def with_id(self, id: Hashable) -> Event:  # noqa: A002
        """The same event with another id."""
        return self._schema.remade(self, id, self.seq)

    def with_seq(self, seq: int) -> Event:
        """The same event at position `seq` of the stream."""
        return self._schema.remade(self, self.id, seq)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict: id, type, ts (datetimes as ISO 8601 text), then the attributes."""
        ts = self.ts.isoformat() if isinstance(self.ts, datetime) else self.ts
        return {"id": self.id, "type": self.type, "ts": ts, **self._dict()}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (self.type, self.ts, self.id, self._dict()) == (
            other.type,
            other.ts,
            other.id,
            other._dict(),
        )

    def __hash__(self) -> int:
        return hash((self.type, self.t, self.id))

    def __repr__(self) -> str:
        tail = f", id={self.id!r}" if self.id is not None else ""
        return f"Event({self.type!r}, {self.ts!r}, {self._dict()!r}{tail})"

    def __reduce__(self) -> tuple[Any, ...]:
        if self.seq is not None:
            return (_sequenced, (self.type, self.ts, self._dict(), self.id, self.seq))
        return (Event, (self.type, self.ts, self._dict(), self.id))


def attributes(event: Event) -> dict[str, Any]:
    """An event's attributes as a new plain dict (what `dict(event.attrs)` gives, without
    the read-only mapping between: for code that copies many events' attributes).

    >>> attributes(Event("A", 1, {"x": 1, "y": 2}))
    {'x': 1, 'y': 2}
    """
    return event._dict()


def _sequenced(
    kind: str,
    ts: Timestamp,
    attrs: dict[str, Any],
    id: Hashable | None,  # noqa: A002
    seq: int,
) -> Event:
    """An event with its stream position, as pickled."""
    return Event(kind, ts, attrs, id).with_seq(seq)


def _event_type(kind: object) -> str:
    if not isinstance(kind, str) or not kind:
        raise EventError(f"an event type must be a non-empty string, not {kind!r}", field="type")
    return kind


_SLOTS: dict[str, str] = {}


def attribute_slot(name: str) -> str:
    """The slot that holds attribute `name` in every event that has it, the same in every
    process (a compiled condition reads `event.<slot>`; an event without the attribute
    reads None there).

    >>> attribute_slot("price"), attribute_slot("unit price")
    ('_k_price', '_kx_756e6974207072696365')
    >>> getattr(Event("A", 1, {"x": 1}), attribute_slot("price"))
    """
    slot = _SLOTS.get(name)
    if slot is None:
        if not isinstance(name, str):
            raise EventError(f"an attribute name must be a string, not {name!r}")
        # ASCII only: Python reads a non-ASCII name in source text NFKC-normalized
        plain = name.isascii() and name.isidentifier()
        slot = "_k_" + name if plain else "_kx_" + name.encode("utf-8", "surrogatepass").hex()
        # what an event without the attribute reads (every slot a condition reads is named
        # here first: a class attribute read costs what a slot read does; `__getattr__`
        # would slow every read of an event's fields)
        setattr(Event, slot, None)
        _SLOTS[name] = slot
    return slot


@dataclass(frozen=True)
class Schema:
    """The attribute names events share, with the code that makes and reads such events:
    `from_mapping(kind, ts, t, id, seq, attrs)` from a mapping with exactly these keys in
    this order, `from_values(kind, ts, t, id, seq, *values)` from the values in order,
    `as_dict(event)`, `attrs(event)` and `remade(event, id, seq)`. The checks of type and
    time are the caller's.

    >>> schema = schema_of(("x", "y"))
    >>> schema.from_values("A", 5, 5, 0, None, 1, 2)
    Event('A', 5, {'x': 1, 'y': 2}, id=0)
    >>> print(schema.source)  # doctest: +ELLIPSIS
    def from_mapping(kind, ts, t, id, seq, attrs):
        e = new(Open)
        e.type = kind; e.ts = ts; e.t = t; e.id = id; e.seq = seq
        e._k_x, e._k_y, = attrs.values()
        e.__class__ = Sealed
        return e
    ...
    """

    names: tuple[str, ...]
    slots: tuple[str, ...]
    cls: type[Event]
    #: `cls`'s layout without its guard on setting: an event is made one of these, filled,
    #: then sealed (`__class__`; Python checks that the two lay out their slots alike), at
    #: a sixth of the cost of setting each slot through `object.__setattr__`.
    opened: type
    from_mapping: Callable[..., Event] = field(init=False)
    from_values: Callable[..., Event] = field(init=False)
    #: The attributes as a new dict, and as a read-only mapping (`Event.attrs`).
    as_dict: Callable[[Event], dict[str, Any]] = field(init=False)
    attrs: Callable[[Event], Mapping[str, Any]] = field(init=False)
    remade: Callable[[Event, Hashable | None, int | None], Event] = field(init=False)
    source: str = field(init=False)

    def __post_init__(self) -> None:
        slots = self.slots
        args = "".join(f", v{i}" for i in range(len(slots)))
        shown = ", ".join(
            f"{name!r}: e.{slot}" for name, slot in zip(self.names, slots, strict=True)
        )
        source = (
            "def from_mapping(kind, ts, t, id, seq, attrs):\n"
            + self.making("kind", "ts", "t", "id", "seq", "attrs.values()")
            + f"def from_values(kind, ts, t, id, seq{args}):\n"
            + self.making("kind", "ts", "t", "id", "seq", [f"v{i}" for i in range(len(slots))])
            + f"def as_dict(e):\n    return {{{shown}}}\n"
            + f"def attrs(e):\n    return proxy({{{shown}}})\n"
            + "def remade(old, id, seq):\n"
            + self.making("old.type", "old.ts", "old.t", "id", "seq", [f"old.{s}" for s in slots])
        )
        scope = {**self.scope(), "proxy": MappingProxyType}
        exec(compile(source, "<kleene event schema>", "exec"), scope)
        for name in ("from_mapping", "from_values", "remade", "as_dict", "attrs"):
            object.__setattr__(self, name, scope[name])
        object.__setattr__(self, "source", source)

    def making(
        self, kind: str, ts: str, t: str, ident: str, seq: str, values: str | Sequence[str]
    ) -> str:
        """Source lines that make and return such an event from the expressions given
        (`values` one expression per attribute, or one that unpacks to them all), with the
        names of `scope` in scope."""
        lines = [
            "    e = new(Open)\n",
            f"    e.type = {kind}; e.ts = {ts}; e.t = {t}; e.id = {ident}; e.seq = {seq}\n",
        ]
        if isinstance(values, str):
            if self.slots:
                lines.append(f"    {''.join(f'e.{slot}, ' for slot in self.slots)}= {values}\n")
        else:
            lines += [f"    e.{slot} = {v}\n" for slot, v in zip(self.slots, values, strict=True)]
        return "".join([*lines, "    e.__class__ = Sealed\n    return e\n"])

    def scope(self) -> dict[str, Any]:
        """The names the code of `making` reads."""
        return {"new": object.__new__, "Open": self.opened, "Sealed": self.cls}


#: The schemas made, by their names; cleared when it reaches `_SCHEMAS_KEPT` (a stream
#: whose every event has other names): an event keeps its class, a new one is made anew.
_SCHEMAS: dict[tuple[str, ...], Schema] = {}
_SCHEMAS_KEPT = 4096


def schema_of(names: tuple[str, ...]) -> Schema:
    """The schema of events with attributes `names`, in that order (made once)."""
    schema = _SCHEMAS.get(names)
    if schema is not None:
        return schema
    slots = tuple(attribute_slot(name) for name in names)
    if len(set(names)) < len(names):
        raise EventError(f"an attribute is named twice in {list(names)}")
    namespace = {"__slots__": slots, "__module__": __name__, "__qualname__": "Event"}
    index = MappingProxyType(dict(zip(names, slots, strict=True)))
    sealed: type[Event] = type("Event", (Event,), {**namespace, "names": names, "_slot_of": index})
    opened = type(
        "Event",
        (Event,),
        # both: they share one slot of the type, which is Python's own only if neither is
        # Event's (a slot stored through Event's costs 50 ns, not 3)
        {**namespace, "__setattr__": object.__setattr__, "__delattr__": object.__delattr__},
    )
    schema = Schema(names, slots, sealed, opened)
    if len(_SCHEMAS) >= _SCHEMAS_KEPT:
        _SCHEMAS.clear()
    _SCHEMAS[names] = schema
    sealed._schema = schema
    # read per schema, with no lookup: a dict display of the slots
    sealed.attrs = property(schema.attrs, doc=Event.attrs.__doc__)  # type: ignore[method-assign,assignment]
    sealed._dict = schema.as_dict  # type: ignore[method-assign,assignment]
    return schema


_EMPTY = schema_of(())


def event_of(
    kind: str,
    ts: Timestamp,
    t: int | float,
    attrs: Mapping[str, Any],
    id: Hashable | None,  # noqa: A002
    seq: int | None = None,
) -> Event:
    """An event of checked fields (`t` the `numeric_time` of `ts`) over `attrs`: no checks.

    >>> event_of("A", 1, 1, {"x": 2}, 0)
    Event('A', 1, {'x': 2}, id=0)
    """
    try:
        schema = _SCHEMAS[tuple(attrs)]
    except KeyError:
        schema = schema_of(tuple(attrs))
    return schema.from_mapping(kind, ts, t, id, seq, attrs)


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
    """`checked_events`' loop written for these attribute names: each row's values go
    straight into the slots of its schema's event (`Schema.from_values`) when no column
    holds nulls; otherwise a column that holds nulls (`sparse`) adds its attribute only
    where it has a value, to a dict display the event is made from (`event_of`).

    >>> print(_loop_for(("x", "y"), (False, False)).source)  # doctest: +NORMALIZE_WHITESPACE
    def made(kinds, stamps, times, ids, c0, c1):
        for kind, ts, t, ident, v0, v1 in zip(kinds, stamps, times, ids, c0, c1):
            yield placed(kind, ts, t, ident, None, v0, v1)
    >>> print(_loop_for(("x", "y"), (False, True)).source)  # doctest: +NORMALIZE_WHITESPACE
    def made(kinds, stamps, times, ids, c0, c1):
        for kind, ts, t, ident, v0, v1 in zip(kinds, stamps, times, ids, c0, c1):
            attrs = {'x': v0}
            if v1 is not None: attrs['y'] = v1
            yield event_of(kind, ts, t, attrs, ident)
    """
    values = [f"v{i}" for i in range(len(names))]
    if True in sparse:
        dense = sparse.index(True)  # the names shown at once
        pairs = zip(names[:dense], values[:dense], strict=True)
        shown = ", ".join(f"{name!r}: {value}" for name, value in pairs)
        lines = [f"        attrs = {{{shown}}}\n"]
        later = zip(names[dense:], values[dense:], sparse[dense:], strict=True)
        for name, value, nulls in later:
            put = f"attrs[{name!r}] = {value}"
            lines.append(
                f"        if {value} is not None: {put}\n" if nulls else f"        {put}\n"
            )
        lines.append("        yield event_of(kind, ts, t, attrs, ident)\n")
    else:
        lines = [
            f"        yield placed(kind, ts, t, ident, None{''.join(f', {v}' for v in values)})\n"
        ]
    columns = "".join(f", c{i}" for i in range(len(names)))
    source = (
        f"def made(kinds, stamps, times, ids{columns}):\n"
        f"    for kind, ts, t, ident{''.join(f', {v}' for v in values)} in "
        f"zip(kinds, stamps, times, ids{columns}):\n" + "".join(lines)
    )
    namespace: dict[str, Any] = {"event_of": event_of, "placed": schema_of(names).from_values}
    exec(compile(source, "<kleene>", "exec"), namespace)
    made = namespace["made"]
    made.source = source
    return made  # type: ignore[no-any-return]


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
    take (`to_timestamp`): ISO 8601 text, a naive datetime (read as UTC), a date. Mappings
    with the same keys in the same order are converted by one loop-free function written
    for those keys (`_converter`): no dict is made on the way.

    >>> as_event({"type": "A", "ts": 3, "x": 1}, default_id=0)
    Event('A', 3, {'x': 1}, id=0)
    """
    if item.__class__ is not dict:  # dicts first: the common case
        if isinstance(item, Event):
            return item if item.id is not None or default_id is None else item.with_id(default_id)
        if not isinstance(item, Mapping):
            kind = type(item).__name__
            raise EventError(f"an event must be a kleene.Event or a mapping, not {kind}")
    try:
        convert = _CONVERTERS[tuple(item)]
    except KeyError:
        convert = _converter(tuple(item))
    return convert(item, default_id)


_CONVERTERS: dict[tuple[Any, ...], Callable[[Mapping[str, Any], Hashable | None], Event]] = {}


def converted_layouts() -> Container[tuple[Any, ...]]:
    """The key layouts of the mappings `as_event` has made events of (each with a
    converter of its own, so none names a bad attribute): the live collection.

    >>> _ = as_event({"type": "A", "ts": 1, "zz": 2})
    >>> ("type", "ts", "zz") in converted_layouts()
    True
    """
    return _CONVERTERS.keys()


def _converter(keys: tuple[Any, ...]) -> Callable[[Mapping[str, Any], Hashable | None], Event]:
    """`as_event` for mappings with these keys, in this order.

    >>> print(_converter(("ts", "type", "x")).source)  # doctest: +NORMALIZE_WHITESPACE
    def convert(item, default_id):
        f0, f1, f2, = item.values()
        kind = f1
        if kind.__class__ is not str or not kind: kind = checked_type(kind)
        ts = f0
        if ts.__class__ is int and -LARGEST <= ts <= LARGEST: t = ts
        elif ts.__class__ is float and ts - ts == 0.0: t = ts
        else: ts, t = stamp(ts)
        e = new(Open)
        e.type = kind; e.ts = ts; e.t = t; e.id = default_id; e.seq = None
        e._k_x = f2
        e.__class__ = Sealed
        return e
    """
    for key in ("type", "ts"):
        if key not in keys:
            return partial(_missing, key)
    fields = [f"f{i}" for i in range(len(keys))]
    named = dict(zip(keys, fields, strict=True))
    values = [field for key, field in zip(keys, fields, strict=True) if key not in _EVENT_FIELDS]
    ident = "default_id"
    lines = [
        f"    {''.join(f'{f}, ' for f in fields)}= item.values()\n",
        f"    kind = {named['type']}\n",
        "    if kind.__class__ is not str or not kind: kind = checked_type(kind)\n",
        f"    ts = {named['ts']}\n",
        "    if ts.__class__ is int and -LARGEST <= ts <= LARGEST: t = ts\n",
        "    elif ts.__class__ is float and ts - ts == 0.0: t = ts\n",
        "    else: ts, t = stamp(ts)\n",
    ]
    if "id" in named:
        lines.append(f"    ident = default_id if {named['id']} is None else {named['id']}\n")
        ident = "ident"
    names = tuple(key for key in keys if key not in _EVENT_FIELDS)
    schema = schema_of(names)
    lines.append(schema.making("kind", "ts", "t", ident, "None", values))
    source = "def convert(item, default_id):\n" + "".join(lines)
    scope = {
        **schema.scope(),
        "checked_type": _event_type,
        "stamp": _stamp,
        "LARGEST": LARGEST_TIME,
    }
    exec(compile(source, "<kleene converter>", "exec"), scope)
    convert = scope["convert"]
    convert.source = source
    if len(_CONVERTERS) >= _SCHEMAS_KEPT:
        _CONVERTERS.clear()
    _CONVERTERS[keys] = convert
    return convert  # type: ignore[no-any-return]


def _missing(key: str, item: Mapping[str, Any], default_id: Hashable | None) -> Event:
    raise EventError(f"the mapping has no {key!r}: {dict(item)!r}", field=key)


def _stamp(ts: Any) -> tuple[Timestamp, int | float]:
    """A mapping's timestamp in any form `to_timestamp` takes, and its `numeric_time`."""
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        try:
            ts = to_timestamp(ts, UTC)
        except ValueError as error:
            raise EventError(str(error), field="ts") from None
    return ts, numeric_time(ts)


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
