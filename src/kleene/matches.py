"""Matches: the events a pattern bound, variable by variable.

>>> from kleene import Event, Match
>>> m = Match({"a": (Event("A", 1, id=0),), "b": (Event("B", 2, id=1), Event("B", 5, id=3))})
>>> m.start_ts, m.end_ts, [e.id for e in m.events]
(1, 5, [0, 1, 3])
>>> m
Match(a=[0], b=[1, 3])
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from itertools import chain
from operator import attrgetter
from typing import Any

from kleene.errors import KleeneError
from kleene.events import Event, Timestamp, attributes

__all__ = ["Match", "Retraction", "SortKey", "Timeout", "event_record", "net", "order_of"]

_id = attrgetter("id")
#: End time, start time, event ids, then pattern and (variable, number of events) pairs.
SortKey = tuple[float, float, tuple[Any, ...], tuple[str, tuple[tuple[str, int], ...]]]
_t = attrgetter("t")
#: A match's sort key (`Match.sort_key`), read in C: the key `kleene.match` sorts by.
order_of: Callable[[Match], SortKey] = attrgetter("_order")


def event_record(event: Event) -> dict[str, Any]:
    """An event inside an output row: its id, type, ts and attributes, in that order (an
    attribute named id, type or ts takes that place: name the column as the events' id,
    type or ts to make it one).

    >>> event_record(Event("A", 1, {"x": 2}, id=7))
    {'id': 7, 'type': 'A', 'ts': 1, 'x': 2}
    """
    return {"id": event.id, "type": event.type, "ts": event.ts, **attributes(event)}


class Match:
    """One match: each bound variable's events (a tuple, one event for a singleton variable).

    Negated variables are never bound; a Kleene variable of `T*` may be bound to no events;
    variables of an OR branch the match did not take are absent. Matches compare by pattern
    name and bindings, and sort by end time, then start time, then event ids. A plan that
    knows the earliest and latest event time passes them as `times`.

    A match holds three things: its events laid out flat in pattern order, its sort key
    (whose last part names the pattern and each variable with its number of events, so the
    bindings are cut from the flat events when read), and what few matches have (an AFA's
    register, RETURN values) or what was derived when asked for. A plan that makes very many
    matches makes them from the first two alone (`laid_out`): each object that lives on
    costs the garbage collector, and a match is then two objects (itself and its events)
    where a dict of bindings takes one more per variable (1.32x on the CORE workload's P2:
    docs/benchmarks-journal.md).

    A match of an AFA written directly (`kleene.afa`) also carries its final `register`,
    the fields its arcs computed (a probability, a count of V-patterns); other matches have
    None there. Matches are immutable: their attributes are read-only properties.

    >>> m = Match({"a": (Event("A", 1, id=0),)})
    >>> m.pattern = "other"
    Traceback (most recent call last):
    ...
    AttributeError: property 'pattern' of 'Match' object has no setter
    """

    __slots__ = ("_flat", "_more", "_order")

    #: The events in pattern order.
    _flat: tuple[Event, ...]
    #: The sort key: end time, start time, ids, (pattern, each variable and its count).
    _order: SortKey
    #: The register, RETURN values, and the bindings and key once read (None: none yet).
    _more: dict[str, Any] | None

    def __init__(
        self,
        bindings: Mapping[str, tuple[Event, ...]],
        pattern: str = "pattern",
        times: tuple[float, float] | None = None,
        register: Mapping[str, Any] | None = None,
    ) -> None:
        flat = tuple(chain.from_iterable(bindings.values()))
        if times is None:
            if not flat:
                raise KleeneError("a match binds one event at least")
            times = (min(map(_t, flat)), max(map(_t, flat)))
        shape = tuple([(name, len(events)) for name, events in bindings.items()])
        self._flat = flat
        self._order = (times[1], times[0], tuple([e.id for e in flat]), (pattern, shape))
        self._more = None if register is None else {"register": dict(register)}

    @classmethod
    def laid_out(cls, events: tuple[Event, ...], order: SortKey) -> Match:
        """A match from its events in pattern order and its sort key, whose last part names
        the pattern and each variable with its number of events: the bindings are made when
        first read. (`window_join`'s loops write these same three assignments inline.)

        >>> a, b1, b2 = Event("A", 1, id=0), Event("B", 2, id=1), Event("B", 3, id=2)
        >>> m = Match.laid_out((a, b1, b2), (3, 1, (0, 1, 2), ("p", (("a", 1), ("b", 2)))))
        >>> m == Match({"a": (a,), "b": (b1, b2)}, "p"), m.ids()
        (True, {'a': (0,), 'b': (1, 2)})
        """
        match = _new(cls)
        match._flat = events
        match._order = order
        match._more = None
        return match

    def _noted(self, name: str, value: Any) -> Any:
        """`value`, kept as `name` among what the match derived or was given."""
        more = self._more
        if more is None:
            self._more = {name: value}
        else:
            more[name] = value
        return value

    def returning(self, values: Mapping[str, Any]) -> Match:
        """The match with its RETURN values (set once, by the runtime, before it is
        reported)."""
        self._noted("values", dict(values))
        return self

    @property
    def pattern(self) -> str:
        """The name of the pattern the match is of."""
        return self._order[3][0]

    @property
    def register(self) -> Mapping[str, Any] | None:
        """An AFA's register at the match (None: the match is not an AFA's)."""
        more = self._more
        return None if more is None else more.get("register")

    @property
    def values(self) -> Mapping[str, Any] | None:
        """The query's RETURN values, by name (None: the query returns none)."""
        more = self._more
        return None if more is None else more.get("values")

    @property
    def times(self) -> tuple[float, float]:
        """The earliest and the latest event time (`Event.t`)."""
        order = self._order
        return order[1], order[0]

    @property
    def bindings(self) -> Mapping[str, tuple[Event, ...]]:
        """Each bound variable's events, in pattern order."""
        more = self._more
        if more is not None and "bindings" in more:
            bindings: dict[str, tuple[Event, ...]] = more["bindings"]
            return bindings
        bindings, flat, at = {}, self._flat, 0
        for name, count in self._order[3][1]:
            bindings[name] = flat[at : at + count]
            at += count
        return self._noted("bindings", bindings)  # type: ignore[no-any-return]

    @property
    def key(self) -> tuple[Any, ...]:
        """The match as a value: pattern name and each variable's event ids."""
        more = self._more
        if more is not None and "key" in more:
            return more["key"]  # type: ignore[no-any-return]
        ids = tuple((n, tuple(map(_id, es))) for n, es in self.bindings.items())
        return self._noted("key", (self.pattern, ids))  # type: ignore[no-any-return]

    @property
    def match_id(self) -> int:
        """A stable 64-bit id for the match: its `key` (pattern and events' ids) hashed,
        the same in every process and on Spark."""
        text = repr(self.key).encode("utf-8")
        return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big", signed=True)

    @property
    def events(self) -> tuple[Event, ...]:
        """Every bound event, variable by variable in pattern order."""
        return self._flat

    @property
    def start(self) -> Event:
        """The earliest event of the match."""
        return min(self._flat, key=_t)

    @property
    def end(self) -> Event:
        """The latest event of the match."""
        return max(self._flat, key=_t)

    @property
    def start_ts(self) -> Timestamp:
        return self.start.ts

    @property
    def end_ts(self) -> Timestamp:
        return self.end.ts

    def ids(self) -> dict[str, tuple[Hashable | None, ...]]:
        """Each variable's event ids."""
        return {name: tuple(map(_id, events)) for name, events in self.bindings.items()}

    def sort_key(self) -> SortKey:
        """End time, start time, event ids, then (compared only when those tie: the same
        events bound another way) the pattern and each variable's name and number of
        events. Sorting by it reads a slot (`order_of`).

        >>> a, b = Event("A", 1, id=0), Event("A", 2, id=1)
        >>> Match({"x": (a,), "y": (b,)}).sort_key()
        (2, 1, (0, 1), ('pattern', (('x', 1), ('y', 1))))
        """
        return self._order

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: pattern, start and end timestamps, each variable's events."""
        start, end = self.start.to_dict()["ts"], self.end.to_dict()["ts"]
        found = {
            "pattern": self.pattern,
            "start_ts": start,
            "end_ts": end,
            "bindings": {n: [e.to_dict() for e in es] for n, es in self.bindings.items()},
        }
        if self.register is not None:
            found["register"] = dict(self.register)
        if self.values is not None:
            found["values"] = dict(self.values)
        return found

    def to_row(self) -> dict[str, Any]:
        """The match as one record (docs/output.md): `match_id`, pattern, start and end
        timestamps, then one field per variable holding its events (each a dict of id,
        type, ts and attributes, values as they are: `event_record`), the RETURN values, an
        AFA's `register`, and for a retraction `retraction: True`.

        >>> from kleene import Event
        >>> row = Match({"a": (Event("A", 1, {"x": 2}, id=0),)}).to_row()
        >>> list(row)
        ['match_id', 'pattern', 'start_ts', 'end_ts', 'a']
        >>> row["a"]
        [{'id': 0, 'type': 'A', 'ts': 1, 'x': 2}]
        """
        row: dict[str, Any] = {
            "match_id": self.match_id,
            "pattern": self.pattern,
            "start_ts": self.start_ts,
            "end_ts": self.end_ts,
        }
        for name, events in self.bindings.items():
            row[name] = [event_record(e) for e in events]
        if self.register is not None:
            row["register"] = dict(self.register)
        if self.values is not None:
            row.update(self.values)
        return row

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        if type(other) is not type(self) and (
            isinstance(other, Retraction | Timeout) or isinstance(self, Retraction | Timeout)
        ):
            return False
        return (
            self.pattern == other.pattern
            and self.bindings == other.bindings
            and self.register == other.register
        )

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}={[e.id for e in es]}" for n, es in self.bindings.items())
        return f"Match({parts})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its RETURN values.

        >>> import pickle
        >>> m = Match({"a": (Event("A", 1, id=0),)}).returning({"x": 1})
        >>> pickle.loads(pickle.dumps(m)).values
        {'x': 1}
        """
        return (type(self), (self.bindings, self.pattern, self.times, self.register), self.values)

    def __setstate__(self, values: Mapping[str, Any] | None) -> None:
        if values is not None:
            self.returning(values)


class Retraction(Match):
    """The withdrawal of a match reported earlier: a speculative plan (`afa`) reports one when
    an event that arrives out of order, or an input retraction, shows the match was not one.
    It holds the same bindings as the match it withdraws (`match`), as the paper's retraction
    events carry the payload of the event they retract.

    >>> from kleene import Event
    >>> m = Match({"a": (Event("A", 1, id=0),)})
    >>> r = Retraction.of(m)
    >>> r, r.match == m, r == m
    (Retraction(a=[0]), True, False)
    """

    __slots__ = ()

    @classmethod
    def of(cls, match: Match) -> Retraction:
        return cls(match.bindings, match.pattern, match.times, match.register)

    @property
    def match(self) -> Match:
        """The match this withdraws."""
        return Match(self.bindings, self.pattern, self.times, self.register)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "retraction": True}

    def to_row(self) -> dict[str, Any]:
        return {**super().to_row(), "retraction": True}

    def __hash__(self) -> int:
        return hash(("retraction", self.key))

    def __repr__(self) -> str:
        return "Retraction" + super().__repr__()[len("Match") :]


class Timeout(Match):
    """A partial match whose window closed before it completed (Flink CEP's timed-out
    partial matches; `Engine(query, timeouts=True)`, docs/semantics.md, section 12): the
    events it had bound, and the `deadline`, the time its window closed (its first event's
    time plus the window).

    >>> from kleene import Event
    >>> late = Timeout({"a": (Event("A", 1, id=0),)}, deadline=11)
    >>> late, late.deadline, late.to_row()["kind"]
    (Timeout(a=[0], deadline=11), 11, 'timeout')
    """

    __slots__ = ("_deadline",)

    _deadline: float

    def __init__(
        self,
        bindings: Mapping[str, tuple[Event, ...]],
        pattern: str = "pattern",
        times: tuple[float, float] | None = None,
        *,
        deadline: float,
    ) -> None:
        super().__init__(bindings, pattern, times)
        self._deadline = deadline

    @property
    def deadline(self) -> float:
        """The time the partial match's window closed."""
        return self._deadline

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "kind": "timeout", "deadline": self.deadline}

    def to_row(self) -> dict[str, Any]:
        return {**super().to_row(), "kind": "timeout", "deadline": self.deadline}

    def __hash__(self) -> int:
        return hash(("timeout", self.key))

    def __repr__(self) -> str:
        return f"Timeout{super().__repr__()[len('Match') : -1]}, deadline={self.deadline!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_timeout, (self.bindings, self.pattern, self.times, self.deadline), self.values)


def _timeout(
    bindings: Mapping[str, tuple[Event, ...]],
    pattern: str,
    times: tuple[float, float] | None,
    deadline: float,
) -> Timeout:
    return Timeout(bindings, pattern, times, deadline=deadline)


def net(outputs: Iterable[Match]) -> list[Match]:
    """The matches that remain after applying outputs in turn (a `Retraction` removes one
    earlier equal match), sorted.

    >>> from kleene import Event
    >>> a, b = Match({"a": (Event("A", 1, id=0),)}), Match({"a": (Event("A", 2, id=1),)})
    >>> net([a, b, Retraction.of(a)])
    [Match(a=[1])]
    """
    held: dict[Hashable, list[Match]] = {}
    for output in outputs:
        register = None if output.register is None else repr(sorted(output.register.items()))
        identity = (output.key, register)
        if isinstance(output, Retraction):
            stack = held.get(identity)
            if not stack:
                raise KleeneError(f"a retraction of {output.match!r}, which was not reported")
            stack.pop()
        else:
            held.setdefault(identity, []).append(output)
    found = [m for stack in held.values() for m in stack]
    found.sort(key=order_of)
    return found


_new = object.__new__
