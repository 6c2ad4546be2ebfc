"""The two matchers the AFA paper compares its operator with (section 6.2, Figure 8), written
for that comparison over an AFA written directly (`kleene.afa.Afa`), in order, with
sequence numbers:

- `Ipm`, the *iterative pattern matcher*: the pattern as stream operators, after the
  recursive stream queries the paper cites. Each event is joined with the transitions (the
  arcs as a table) and, on the sequence number and the arc's source state, with the partial
  matches ending at the event before; the partial matches that join make are fed back to be
  joined with the next event, those in a final state are output. Nothing is shared between
  partial matches: each carries its events.
- `can`, the *constrained augmented NFA* of Figure 4: a two-state AFA run by kleene's own
  `afa` plan, whose one self-loop carries in its register the set of (state, register)
  pairs the original automaton's computations begun at one event stand at, and steps them
  all at each event; it moves to its final state when one of them reaches a final one.

Both report, like the AFA, every span of events from a computation's first event to one
where it stands in a final state, once.

>>> import kleene
>>> from kleene.events import Event
>>> afa = kleene.afa.read_afa('''
... AFA dip WITHIN 10
... FINAL up
... ARC first: start -> down WHEN e.change < 0
... ARC again: down -> down WHEN e.change < 0
... ARC back: down -> up WHEN e.change > 0
... ''')
>>> ticks = [Event("T", t, {"change": c, "seq": t}, id=t) for t, c in enumerate([-1, -1, 1])]
>>> matcher = Ipm(afa)
>>> sorted((m[0], m[-1]) for e in ticks for m in matcher.send(e))
[(0, 2), (1, 2)]
>>> [tuple(m.ids()["events"]) for m in kleene.match(can(afa), ticks)]
[(0, 1, 2), (1, 2)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from kleene.afa import Afa, Arc
from kleene.errors import KleeneError
from kleene.events import Event

__all__ = ["Ipm", "can", "hash_join"]

#: A partial match of `Ipm`: its first event's sequence number and time, its state, its
#: register, and the ids of its events.
Partial = tuple[int, float, str, Any, tuple[Any, ...]]


def hash_join(
    left: Iterable[Any],
    right: Iterable[Any],
    left_key: Callable[[Any], Any],
    right_key: Callable[[Any], Any],
) -> list[tuple[Any, Any]]:
    """The equi-join of two relations: each pair of rows whose keys are equal (the right
    side hashed).

    >>> hash_join([1, 2, 3], ["a", "bb"], lambda n: n, len)
    [(1, 'a'), (2, 'bb')]
    """
    table: dict[Any, list[Any]] = {}
    for row in right:
        table.setdefault(right_key(row), []).append(row)
    return [(row, other) for row in left for other in table.get(left_key(row), ())]


def _event_arcs(afa: Afa) -> list[Arc]:
    if any(arc.epsilon or arc.deadline is not None for arc in afa.arcs):
        raise KleeneError(f"AFA {afa.name}: the comparison matchers take event arcs only")
    return list(afa.arcs)


class Ipm:
    """The iterative pattern matcher (see the module docstring): `send` an event, in any
    order, its sequence number in attribute `seq`; get the matches it completes, each as the
    ids of its events. An event that comes late joins the partial matches before it, and
    what that makes is joined with the events after it that came already (fed back); the
    events and partial matches older than the window are dropped as time goes on.

    >>> import kleene
    >>> afa = kleene.afa.read_afa("AFA ab WITHIN 9\\nFINAL b\\nARC a: s -> a WHEN e.x = 1\\n"
    ...                           "ARC b: a -> b WHEN e.x = 2")
    >>> late = [Event("T", t, {"x": x, "seq": t}, id=t) for t, x in [(1, 2), (0, 1)]]
    >>> matcher = Ipm(afa)
    >>> [matcher.send(e) for e in late]
    [[], [(0, 1)]]
    """

    def __init__(self, afa: Afa, sequence: str = "seq") -> None:
        #: The transitions: (source, target, fire) rows.
        self.arcs = [(a.source, a.target, a.fire) for a in _event_arcs(afa)]
        self.start, self.initial, self.finals = afa.start, afa.initial, afa.finals
        self.window = afa.window
        self.sequence = sequence
        #: The events, and the partial matches fed back (by the sequence number of their
        #: last event), within the window of the latest time.
        self.events: dict[int, Event] = {}
        self.partial: dict[int, list[Partial]] = {}
        #: The lowest sequence number held (None: none yet), and the latest time.
        self.oldest: int | None = None
        self.latest = -math.inf

    def send(self, event: Event) -> list[tuple[Any, ...]]:
        seq = event[self.sequence]
        self.events[seq] = event
        if self.oldest is None or seq < self.oldest:
            self.oldest = seq
        found: list[tuple[Any, ...]] = []
        begun = (seq, event.t, self.start, self.initial, ())
        todo = [(seq, [*self.partial.get(seq - 1, ()), begun])]
        while todo:  # join 2, and what it makes fed back to the events after, if they came
            at, earlier = todo.pop()
            made = self._join(self.events[at], earlier, found)
            if made:
                self.partial.setdefault(at, []).extend(made)
                if at + 1 in self.events:
                    todo.append((at + 1, made))
        if event.t > self.latest:
            self.latest = event.t
            self._forget()
        return list(dict.fromkeys(found))  # a span once, however many ways reach it

    def _join(
        self, event: Event, earlier: list[Partial], found: list[tuple[Any, ...]]
    ) -> list[Partial]:
        # join 1: the event with the transitions (every arc: its fence reads the register);
        # join 2: with the partial matches ending just before it, on the arc's source state
        moves = [(event, source, target, fire) for source, target, fire in self.arcs]
        window = self.window
        made: list[Partial] = []
        for (_, _, target, fire), (first, first_t, _, register, ids) in hash_join(
            moves, earlier, _source, _state
        ):
            if window is not None and event.t - first_t > window:
                continue
            after = fire(event, register)
            if after is None:
                continue
            grown = (*ids, event.id)
            made.append((first, first_t, target, after, grown))
            if target in self.finals:
                found.append(grown)
        return made

    def _forget(self) -> None:
        """Drop the events (and the partial matches ending there) a window before the
        latest: no match can reach back to them."""
        if self.window is None or self.oldest is None:
            return
        events, low, oldest = self.events, self.latest - self.window, self.oldest
        while oldest in events and events[oldest].t < low:  # (up to a number still to come)
            del events[oldest]
            self.partial.pop(oldest, None)
            oldest += 1
        self.oldest = oldest


def _source(move: tuple[Event, str, str, Any]) -> str:
    return move[1]


def _state(partial: Partial) -> str:
    return partial[2]


def can(afa: Afa) -> Afa:
    """The constrained automaton that embeds `afa` (see the module docstring): states
    `begin`, `running` and `matched`; its register holds the embedded computations."""
    arcs = _event_arcs(afa)
    leaving: dict[str, list[Arc]] = {state: [] for state in afa.states}
    for arc in arcs:
        leaving[arc.source].append(arc)
    finals = afa.finals
    start = frozenset({(afa.start, afa.initial)})
    last: list[Any] = [None, None, None]  # the last (event, active) stepped, and the result

    def step(event: Event, active: frozenset[tuple[str, Any]]) -> frozenset[tuple[str, Any]]:
        if last[0] is event and last[1] is active:  # the self-loop's and the final arc's
            stepped: frozenset[tuple[str, Any]] = last[2]
            return stepped
        moved = set()
        for state, register in active:
            for arc in leaving[state]:
                after = arc.fire(event, register)
                if after is not None:
                    moved.add((arc.target, after))
        stepped = frozenset(moved)
        last[:] = [event, active, stepped]
        return stepped

    def begins(event: Event | None, register: Any) -> Any:
        assert event is not None
        moved = step(event, start)
        return (moved,) if moved else None

    def goes_on(event: Event | None, register: Any) -> Any:
        assert event is not None
        moved = step(event, register[0])
        return (moved,) if moved else None

    def matches(event: Event | None, register: Any) -> Any:
        assert event is not None
        moved = step(event, register[0])
        return (moved,) if any(state in finals for state, _ in moved) else None

    def matches_at_once(event: Event | None, register: Any) -> Any:
        assert event is not None
        moved = step(event, start)
        return (moved,) if any(state in finals for state, _ in moved) else None

    return Afa(
        f"can_{afa.name}",
        ("begin", "running", "matched"),
        (
            Arc("a0", "begin", "running", begins, text="<the embedded start>"),
            Arc("a1", "begin", "matched", matches_at_once, text="<the embedded start, final>"),
            Arc("a2", "running", "running", goes_on, text="<every embedded arc>"),
            Arc("a3", "running", "matched", matches, text="<every embedded arc, final>"),
        ),
        "begin",
        frozenset({"matched"}),
        ("active",),
        (start,),
        afa.window,
    )
