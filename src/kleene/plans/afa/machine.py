"""The AFA operator over a disordered stream: Algorithm 1 of the paper (section 5.1 and
Appendix C), with deletion and cleanup by punctuations (C.1).

A partition's state indexes its events by (timestamp, arrival) in a sorted dict, the paper's
red-black tree (`index.py`: events in order are appended after it, and enter it only when an
event lands among them). Every entry holds the event and its *pmatch list*: the partial matches
whose subsequence ends at that event, as plain tuples (start key, start time, state, register,
bound events), in increasing order of their start (the Ordering invariant). Every prefix of a
listed pmatch is listed at the entry of its own last event (Completeness), and every
computation the AFA can make over a contiguous subsequence of the events held, whose events
fit the window, is listed (Content).

- An in-order event extends the last entry's list and starts new computations.
- An out-of-order event first removes the pmatches whose subsequences span its place
  (`_invalidate`, RemoveInvalidatedSequences), retracting those that were matches; then it
  extends the list before it, and carries the new pmatches forward through the later
  entries until none survives (`_propagate`, PropagateInsert).
- Deleting an event (an input retraction) removes every pmatch through it, then carries the
  list before it forward over the events after it.
- A punctuation t (no later event earlier than t) first fires the timeout arcs whose
  deadline it passes, for the pmatches that still end at the last event before their
  deadline; then it removes the entries before the last one below t (its `cover`), and the
  pmatches there that the window ends.

Outputs are `Match` values for pmatches reaching a final state and `Retraction`s of those
later invalidated, in the order the algorithm finds them: applied in turn, they give the
matches of the events received so far.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kleene.errors import EventError, KleeneError
from kleene.events import Event, Watermark
from kleene.matches import Match, Retraction
from kleene.plans.afa.index import Index
from kleene.plans.afa.model import Afa, Arc, Deadline, Fire, Lifetime, Register

__all__ = [
    "AfaState",
    "Entry",
    "Key",
    "Machine",
    "Merged",
    "PMatch",
    "Report",
    "Steps",
    "start_key",
]

Key = tuple[float, float]  # (timestamp, arrival): the order of the sorted stream
#: A partial match: the key and time of its first event, its state's index, its register,
#: and the events it bound as a linked list, latest first: (variable, event, rest) or None.
PMatch = tuple[Key, float, int, Register, Any]
Report = Match | Retraction
#: The arcs that fire for an event: (target state, register after, variable bound).
Steps = list[tuple[int, Register, str | None]]
#: What the arcs of one event give, by (state, register), while the event is taken.
Merged = dict[tuple[int, Register], Steps]

#: The most ε-steps one event may cause from one pmatch: an ε-cycle that never stops
#: would otherwise hang the stream.
MAX_EPSILON_STEPS = 10_000
#: How many walked bound chains a machine remembers for the next match of the same run.
WALKED = 4096
#: How many event types `Machine.quiet` remembers its answer for.
QUIET_KEPT = 4096


class Entry:
    """One event of the index and the pmatches ending at it (`event` is None once a
    punctuation has let the event go but its pmatches are still needed)."""

    __slots__ = ("event", "pmatches")

    def __init__(self, event: Event | None, pmatches: list[PMatch]) -> None:
        self.event = event
        self.pmatches = pmatches


@dataclass
class AfaState:
    """One partition's index of events and pmatches, and how far punctuations have gone."""

    entries: Index[Entry] = field(default_factory=Index)
    arrivals: int = 0
    #: No event with a key below this may come any more (the last punctuation).
    floor: Key = (-math.inf, 0)
    #: The pmatches standing at a state with timeout arcs: (deadline, number, entry key,
    #: pmatch), earliest deadline first.
    waiting: list[tuple[float, int, Key, PMatch]] = field(default_factory=list)
    #: How many timeouts were noted (the tie-break of `waiting`).
    noted: int = 0
    #: How many pmatches the entries hold now.
    live: int = 0
    #: The entry with the greatest key, and its key (None: the index is empty).
    last: tuple[Key, Entry] | None = None
    #: The key of the event inserted or deleted last.
    key: Key = (-math.inf, 0)
    #: The negations' state (`negation.py`), for a query with negation.
    negation: Any = None
    #: The anchors of ignorable steps (`anchors.py`): those closed, by the end of their
    #: interval, and those open to the latest entry and on.
    anchors: Any = None
    open: list[Any] = field(default_factory=list)
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("pmatches_created", "pmatches_invalidated", "out_of_order", "retracted"), 0
        )
    )


class Machine:
    """An AFA compiled for running: its arctable (each state's event arcs and ε-arcs), and
    how a pmatch in a final state becomes a match."""

    afa: Afa
    #: Each state's number, by name.
    index: dict[str, int]
    #: Each state's event arcs: (fire, target, variable bound).
    table: list[tuple[tuple[Fire, int, str | None], ...]]
    #: Each state's event arcs (the rows of `table`) by key, every event arc by name, and
    #: each name's key (an AFA written directly names each arc once).
    rows: list[dict[tuple[str, int], tuple[Fire, int, str | None]]]
    arcs: dict[str, Arc]
    keys: dict[str, tuple[str, int]]
    #: The start state and what its ε-arcs reach before any event: (state, register).
    starts: tuple[tuple[int, Register], ...]
    #: Those states.
    first: frozenset[int]

    def __init__(
        self,
        afa: Afa,
        pattern: str,
        report_register: bool = True,
        twins: bool = True,
        merge: bool = False,
        fixed: bool = False,
        sequence: str | None = None,
    ) -> None:
        self.pattern = pattern
        #: AFA+O (section 5.3): the attribute holding each event's sequence number (one
        #: more per event, in timestamp order). Computations go only between events with
        #: adjacent numbers, so every match reported is final: nothing is withdrawn.
        self.sequence = sequence
        self.report_register = report_register
        #: May two pmatches at one event stand for the same match (the same events bound
        #: alike, and the same register when it is reported)? The output is a set
        #: (Definition 2), so such twins are reported once and withdrawn with the last.
        self.twins = twins
        #: Pmatches at one event in one state with equal registers have the same future
        #: (the NFA^b's run merging): may one event's arcs fire once for them all?
        self.merge = merge
        #: Do the arcs never change? Then a pmatch in a state with no way on can only be a
        #: match, and a punctuation may let it go; arcs added while the stream runs
        #: (`change`) could lead on from any state.
        self.fixed = fixed
        #: The lifetimes of the arcs added or removed while the stream runs, by arc name
        #: (section 2.3); the AFA's own arcs fire for every event.
        self.lifetimes: dict[str, Lifetime] = {}
        self._walked: dict[int, tuple[Any, dict[str, tuple[Event, ...]]]] = {}
        self._compile(afa)

    def change(self, afa: Afa, lifetimes: dict[str, Lifetime]) -> None:
        """Run `afa` from now on, its arcs named in `lifetimes` firing only for the events
        their lifetime holds (dynamic patterns): the state is kept, as it is; `reevaluate`
        brings it up to date where the change reaches events already received."""
        self.lifetimes = lifetimes
        self._compile(afa)

    def put_arc(self, arc: Arc, life: Lifetime | None) -> None:
        """Add an event arc between states the AFA has, or give one a new lifetime (None:
        every event, as an arc of the AFA's own): its source's row of the arctable changes,
        nothing else (a change costs what one state's arcs do)."""
        name = arc.name
        if life is None:
            self.lifetimes.pop(name, None)
            fire = arc.fire
        else:
            self.lifetimes[name] = life
            fire = life.bound(arc.fire)
        self.arcs[name] = arc
        state = self.index[arc.source]
        row = self.rows[state]
        key = self.keys.get(name)
        if key is None:
            key = self.keys[name] = (name, -1)
        row[key] = (fire, self.index[arc.target], arc.bind)  # as `_event_arc` makes it
        self.placed[key] = arc
        self.table[state] = tuple(row.values())
        self._quiet.clear()
        if state in self.first:
            self.begins = self._begins()

    def settle_arcs(
        self, ended: Iterable[str], begun: Iterable[str], added: Iterable[Arc] = ()
    ) -> None:
        """Forget the event arcs whose lifetime has ended, let those whose lifetime has
        begun, with no end, fire unchecked, and place the arcs `added` (between states
        the AFA has), unchecked: each row of the arctable they touch is made once."""
        rows, index, keys, touched = self.rows, self.index, self.keys, set()
        for name in ended:
            arc = self.arcs.pop(name)
            self.lifetimes.pop(name, None)
            state = index[arc.source]
            key = keys.pop(name)
            del rows[state][key], self.placed[key]
            touched.add(state)
        for name in begun:
            arc = self.arcs[name]
            del self.lifetimes[name]
            state = index[arc.source]
            rows[state][keys[name]] = (arc.fire, index[arc.target], arc.bind)
            touched.add(state)
        for arc in added:
            name = arc.name
            self.arcs[name] = arc
            state = index[arc.source]
            placed = keys.setdefault(name, (name, -1))
            rows[state][placed] = (arc.fire, index[arc.target], arc.bind)
            self.placed[placed] = arc
            touched.add(state)
        for state in touched:
            self.table[state] = tuple(rows[state].values())
        self._quiet.clear()
        if not touched.isdisjoint(self.first):
            self.begins = self._begins()

    def _event_arc(self, arc: Arc) -> tuple[Fire, int, str | None]:
        """An event arc's row in the arctable: its fire (bound to its lifetime, if it has
        one), its target, the variable it binds."""
        life = self.lifetimes.get(arc.name)
        fire = arc.fire if life is None else life.bound(arc.fire)
        return fire, self.index[arc.target], arc.bind

    def _compile(self, afa: Afa) -> None:
        """The arctable: each state's event arcs, ε-arcs and timeout arcs."""
        self.afa = afa
        index = {name: i for i, name in enumerate(afa.states)}
        self.index = index
        rows: list[dict[tuple[str, int], tuple[Fire, int, str | None]]] = [{} for _ in afa.states]
        self.arcs, self.keys, self.placed = {}, {}, {}
        self._quiet: dict[str, tuple[bool, ...] | None] = {}
        epsilons: list[list[tuple[Fire, int]]] = [[] for _ in afa.states]
        timeouts: list[list[tuple[Deadline, int]]] = [[] for _ in afa.states]
        for number, arc in enumerate(afa.arcs):
            if arc.deadline is not None:
                timeouts[index[arc.source]].append((arc.deadline, index[arc.target]))
            elif arc.epsilon:
                epsilons[index[arc.source]].append((arc.fire, index[arc.target]))
            else:  # a compiled query's arcs may share a name: the key is (name, place)
                key = self.keys[arc.name] = (arc.name, number)
                rows[index[arc.source]][key] = self._event_arc(arc)
                self.placed[key] = arc
                self.arcs[arc.name] = arc
        self.rows = rows
        self.table = [tuple(row.values()) for row in rows]
        self.epsilons = [tuple(arcs) for arcs in epsilons]
        self.timeouts = [tuple(arcs) for arcs in timeouts]
        self.waits = any(self.timeouts)
        self.final = [name in afa.finals for name in afa.states]
        self.window = afa.window
        #: States from which no event can be consumed any more (no event arc, also after
        #: ε-arcs): a pmatch there can only be a match, never grow (for fixed arcs).
        self.dead = [self.fixed and not self._reaches_event_arc(i) for i in range(len(index))]
        starts: list[PMatch] = []
        self._closure(((0.0, 0), 0.0, index[afa.start], afa.initial, None), starts)
        self.starts = tuple((p[2], p[3]) for p in starts)
        self.first = frozenset(state for state, _ in self.starts)
        self.begins = self._begins()
        self.outputs = afa.outputs
        self.variables = afa.variables

    def quiet(self, kind: str) -> tuple[bool, ...] | None:
        """For an event of type `kind` that only ignorable arcs can fire for (Appendix D),
        whether each state steps over it (has an ignorable arc: a computation there keeps
        its state and register; at another state it ends); None when another arc may fire.

        >>> import kleene
        >>> plan = kleene.compile("PATTERN SEQ(A a, B b) WHERE skip_till_any_match", "afa")
        >>> plan.machine.quiet("C"), plan.machine.quiet("A")  # states s0, s1, F
        ((False, True, False), None)
        """
        try:
            return self._quiet[kind]
        except KeyError:
            pass
        keeps: list[bool] | None = [False] * len(self.rows)
        for state, row in enumerate(self.rows):
            for key in row:
                arc = self.placed[key]
                if arc.types is not None and kind not in arc.types:
                    continue  # it never fires for the event
                if not arc.ignorable or arc.name in self.lifetimes:
                    keeps = None
                    break
                keeps[state] = True  # type: ignore[index]
            if keeps is None:
                break
        if len(self._quiet) >= QUIET_KEPT:  # a stream of ever new types: begin again
            self._quiet.clear()
        found = self._quiet[kind] = None if keeps is None else tuple(keeps)
        return found

    def _begins(self) -> tuple[tuple[Fire, Register, int, str | None], ...]:
        """The start states' event arcs: (fire, register, target, variable bound)."""
        return tuple(
            (fire, register, target, bind)
            for state, register in self.starts
            for fire, target, bind in self.table[state]
        )

    def _reaches_event_arc(self, state: int) -> bool:
        seen, todo = {state}, [state]
        while todo:
            current = todo.pop()
            if self.table[current] or self.timeouts[current]:
                return True
            for _, target in self.epsilons[current]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return False

    # -- building pmatches --------------------------------------------------------------

    def _closure(self, pmatch: PMatch, out: list[PMatch]) -> None:
        """Append `pmatch` and every pmatch its state's ε-arcs derive from it."""
        out.append(pmatch)
        if not self.epsilons[pmatch[2]]:
            return
        todo = [pmatch]
        steps = 0
        while todo:
            start, t, state, register, bound = todo.pop()
            for fire, target in self.epsilons[state]:
                after = fire(None, register)
                if after is None:
                    continue
                steps += 1
                if steps > MAX_EPSILON_STEPS:
                    raise KleeneError(
                        f"the ε-arcs of AFA {self.afa.name} fired more than "
                        f"{MAX_EPSILON_STEPS} times without consuming an event (from state "
                        f"{self.afa.states[state]}): a cycle of ε-arcs needs a fence that "
                        "stops it"
                    )
                derived = (start, t, target, after, bound)
                out.append(derived)
                todo.append(derived)

    def _extend(self, pmatches: list[PMatch], event: Event, out: list[PMatch]) -> None:
        """MakeTransitions: every pmatch of `pmatches` (in order) along every arc that fires
        for `event`, into `out` (keeping the start order)."""
        t = event.t
        window = self.window
        epsilons = self.epsilons
        merged: Merged | None = {} if self.merge else None
        for pmatch in pmatches:
            start, start_t, state, register, bound = pmatch
            if window is not None and t - start_t > window:
                continue
            for target, after, bind in self._fired(state, register, event, merged):
                taken = bound if bind is None else (bind, event, bound)
                if epsilons[target]:
                    self._closure((start, start_t, target, after, taken), out)
                else:
                    out.append((start, start_t, target, after, taken))

    def _fired(self, state: int, register: Register, event: Event, merged: Merged | None) -> Steps:
        """The arcs of `state` that fire for `event` from `register`, as (target, register
        after, variable bound). With `merged` (one dict per event), they fire once per state
        and equal register: such pmatches have the same future (the NFA^b's run merging)."""
        group = None
        if merged is not None:
            group = (state, register)
            try:
                known = merged.get(group)
            except TypeError:  # an unhashable register: its pmatch goes alone
                group = None
            else:
                if known is not None:
                    return known
        steps = []
        for fire, target, bind in self.table[state]:
            after = fire(event, register)
            if after is not None:
                steps.append((target, after, bind))
        if merged is not None and group is not None:
            merged[group] = steps
        return steps

    def _begin(self, key: Key, event: Event, out: list[PMatch]) -> None:
        """New computations from the start state (and its ε-closure) at `event`."""
        for fire, register, target, bind in self.begins:
            after = fire(event, register)
            if after is not None:
                bound = None if bind is None else (bind, event, None)
                self._closure((key, event.t, target, after, bound), out)

    # -- the operator ---------------------------------------------------------------------

    def insert(self, state: AfaState, event: Event) -> list[Report]:
        """Algorithm 1, InsertEvent."""
        last = state.last
        if self.sequence is None:
            if last is None or event.t >= last[0][0]:
                return self._append(state, event, self._key(state, event), last)
            key = self._key(state, event)
        else:
            key = self._key(state, event)
            if last is None or key > last[0]:  # AFA+O in order: it extends only a neighbour
                adjacent = last is not None and self._adjacent(last[0], key)
                return self._append(state, event, key, last if adjacent else None)
        state.key = key  # out of order: before the last entry
        entries = state.entries
        out: list[Report] = []
        pmatches: list[PMatch] = []
        carried: list[PMatch] | None = None
        position = entries.bisect_left(key)
        state.counters["out_of_order"] += 1
        before = entries.peekitem(position - 1) if position else None
        if self.sequence is not None:
            # AFA+O: no computation spans a gap, so none spans the event's place
            if before is not None and self._adjacent(before[0], key):
                self._extend(before[1].pmatches, event, pmatches)
        else:
            prefix = [] if before is None else before[1].pmatches
            self._extend(prefix, event, pmatches)
            ignoring, carried = self._ignoring(prefix, pmatches, event.t)
            self._invalidate(state, position, key, out, ignoring)
        begun = len(pmatches)
        self._begin(key, event, pmatches)
        entries[key] = Entry(event, pmatches)
        state.counters["pmatches_created"] += len(pmatches)
        state.live += len(pmatches)
        if self.waits:
            self._wait(state, key, pmatches)
        self._report(pmatches, [], event, out)
        onward = pmatches if carried is None else carried + pmatches[begun:]
        self._propagate(state, position + 1, onward, out)
        return out

    def _append(
        self, state: AfaState, event: Event, key: Key, before: tuple[Key, Entry] | None
    ) -> list[Report]:
        """InsertEvent for an event after every one held: extend the list of the entry
        before it (`before`; None: no computation reaches over to it, as across a gap in
        AFA+O's numbers), begin new computations, and report the matches."""
        state.key = key
        pmatches: list[PMatch] = []
        if before is not None and before[1].pmatches:
            self._extend(before[1].pmatches, event, pmatches)
        self._begin(key, event, pmatches)
        entry = state.entries[key] = Entry(event, pmatches)
        state.last = (key, entry)
        out: list[Report] = []
        if pmatches:
            state.counters["pmatches_created"] += len(pmatches)
            state.live += len(pmatches)
            if self.waits:
                self._wait(state, key, pmatches)
            self._report(pmatches, [], event, out)
        return out

    def _key(self, state: AfaState, event: Event) -> Key:
        """Where the event goes in the index: (timestamp, arrival), or with sequence
        numbers (AFA+O) (timestamp, sequence number), which must agree with the timestamps
        and not repeat."""
        if self.sequence is None:
            key = (event.t, state.arrivals)
            state.arrivals += 1
            return key
        number = event.get(self.sequence)
        if not isinstance(number, int) or isinstance(number, bool):
            raise EventError(
                f"event {event.id!r} has no whole sequence number in {self.sequence!r} "
                f"({number!r}); AFA+O numbers every event",
                field=self.sequence,
            )
        key = (event.t, number)
        last = state.last
        if last is not None and key > last[0] and number > last[0][1]:
            return key  # after every entry held, its number after theirs: in order
        entries = state.entries
        position = entries.bisect_left(key)
        for neighbour in (position - 1, position):
            if 0 <= neighbour < len(entries):
                held = entries.peekitem(neighbour)[0]
                if held[1] == number or (held[1] < number) != (neighbour < position):
                    raise EventError(
                        f"event {event.id!r} has sequence number {number} at ts {event.ts!r}, "
                        f"but sequence number {held[1]} has ts {held[0]!r}: the numbers must "
                        "follow the timestamps, one per event",
                        field=self.sequence,
                    )
        return key

    def _adjacent(self, before: Key, after: Key) -> bool:
        """May a computation go from the event at `before` to the one at `after`, next in
        the index? Always, but with sequence numbers, only when no number lies between."""
        return self.sequence is None or after[1] == before[1] + 1

    def _ignoring(
        self, prefix: list[PMatch], derived: list[PMatch], t: float
    ) -> tuple[set[Key], list[PMatch] | None]:
        """Appendix D for an out-of-order event: the starts whose computations all step
        over it unchanged (an ignorable arc: same state, equal register, nothing bound), and
        the pmatches `derived` at it that must be carried forward.

        Every computation through the place the event takes goes through a pmatch of
        `prefix`, the list before it. When each pmatch of a start that can still grow (not
        in a dead state, not past the window at `t`) is found again among `derived`, the
        computations after the event of that start stand as they are: they are neither
        withdrawn nor derived again, and of its derived pmatches only the new ones go on
        (None: every one of `derived` does)."""
        found: dict[tuple[Key, int, int], list[Register]] = {}
        for start, _, state, register, bound in derived:
            found.setdefault((start, state, id(bound)), []).append(register)
        window, dead = self.window, self.dead
        steady: set[Key] = set()
        unsteady: set[Key] = set()
        for start, start_t, state, register, bound in prefix:
            if dead[state] or (window is not None and t - start_t > window):
                continue
            if register in found.get((start, state, id(bound)), ()):
                steady.add(start)
            else:
                unsteady.add(start)
        steady -= unsteady
        if not steady:
            return steady, None
        held: dict[tuple[Key, int, int], list[Register]] = {}
        for start, _, state, register, bound in prefix:
            if start in steady:
                held.setdefault((start, state, id(bound)), []).append(register)
        carried = [
            p
            for p in derived
            if p[0] not in steady or p[3] not in held.get((p[0], p[2], id(p[4])), ())
        ]
        return steady, carried

    def reevaluate(self, state: AfaState, since: float) -> list[Report]:
        """Bring the state up to date after arcs changed for the events from `since` on
        (section 5.2, explicit lifetimes): the pmatches of those events are derived again in
        order, from the list before the first of them; the matches that are no more are
        withdrawn, and the new ones reported."""
        entries = state.entries
        position = entries.bisect_left((since, -math.inf))
        out: list[Report] = []
        carry = entries.peekitem(position - 1)[1].pmatches if position else []
        final = self.final
        for key, entry in entries.items(position):
            event = entry.event
            assert event is not None, "only the cover lets its event go, and it is before since"
            derived: list[PMatch] = []
            self._extend(carry, event, derived)
            self._begin(key, event, derived)
            before = {self._identity(p): p for p in entry.pmatches if final[p[2]]}
            after = {self._identity(p): p for p in derived if final[p[2]]}
            out.extend(
                Retraction.of(self._match(p, event)) for i, p in before.items() if i not in after
            )
            out.extend(self._match(p, event) for i, p in after.items() if i not in before)
            state.live += len(derived) - len(entry.pmatches)
            entry.pmatches = derived
            if self.waits:
                self._wait(state, key, derived)
            carry = derived
        if self.waits and state.floor[0] > -math.inf:
            self._time_out(state, Watermark(state.floor[0], state.floor[1] == math.inf), out)
        return out

    def delete(self, state: AfaState, event: Event) -> list[Report] | None:
        """Appendix C's Delete: the outputs of removing an event received before (None when
        the state holds no such event: same type, timestamp and id)."""
        if self.sequence is not None:
            raise KleeneError(
                "events with sequence numbers (AFA+O) cannot be retracted: the sequence would "
                "keep a gap no event fills"
            )
        found = self._find(state, event)
        if found is None:
            return None
        position, key = found
        out: list[Report] = []
        state.key = key
        state.counters["retracted"] += 1
        self._remove(state, position, key, out)
        state.last = state.entries.peekitem(-1) if state.entries else None
        return out

    def _remove(self, state: AfaState, position: int, key: Key, out: list[Report]) -> None:
        """Withdraw every computation through the entry at `position`, drop the entry, and
        carry the list before it over the entries after it."""
        entries = state.entries
        self._invalidate(state, position, key, out)
        entries.pop(key)
        if position:
            self._propagate(state, position, list(entries.peekitem(position - 1)[1].pmatches), out)

    def _find(self, state: AfaState, event: Event) -> tuple[int, Key] | None:
        """Where the index holds an event received before (same type, timestamp and id):
        its position and key, or None."""
        entries = state.entries
        position = entries.bisect_left((event.t, -math.inf))
        while position < len(entries):
            key, entry = entries.peekitem(position)
            if key[0] != event.t:
                return None
            held = entry.event
            if held is not None and held.id == event.id and held.type == event.type:
                return position, key
            position += 1
        return None

    def _invalidate(
        self,
        state: AfaState,
        position: int,
        key: Key,
        out: list[Report],
        steady: set[Key] | frozenset[Key] = frozenset(),
    ) -> None:
        """RemoveInvalidatedSequences: from the entry at `position` on, drop the pmatches that
        start at or before `key` (they span it), but for the `steady` starts, retracting
        matches, until an entry has none (Completeness: a later one could not have any
        either)."""
        entries = state.entries
        while position < len(entries):
            entry = entries.peekitem(position)[1]
            pmatches = entry.pmatches
            cut = 0
            while cut < len(pmatches) and pmatches[cut][0] <= key:
                cut += 1
            if steady and cut:
                gone = [p for p in pmatches[:cut] if p[0] not in steady]
                if len(gone) < cut:
                    pmatches[:cut] = [p for p in pmatches[:cut] if p[0] in steady]
                    cut = len(gone)
                else:
                    del pmatches[:cut]
            else:
                gone = pmatches[:cut]
                del pmatches[:cut]
            if not cut:
                return
            state.counters["pmatches_invalidated"] += cut
            state.live -= cut
            self._withdraw(gone, pmatches, entry.event, out)
            position += 1

    def _propagate(
        self, state: AfaState, position: int, pmatches: list[PMatch], out: list[Report]
    ) -> None:
        """PropagateInsert: carry `pmatches` over the entries from `position` on, merging the
        ones derived at each entry into its own by start, until none is left."""
        entries = state.entries
        while pmatches and position < len(entries):
            key, entry = entries.peekitem(position)
            if position and not self._adjacent(entries.peekitem(position - 1)[0], key):
                return  # AFA+O: a gap in the sequence numbers
            assert entry.event is not None, "entries after a punctuation's cover keep events"
            derived: list[PMatch] = []
            self._extend(pmatches, entry.event, derived)
            if self.waits:
                self._wait(state, key, derived)
            self._report(derived, entry.pmatches, entry.event, out)
            held = entry.pmatches
            if derived and held and held[0][0] < derived[-1][0]:
                entry.pmatches = list(heapq.merge(derived, held, key=start_key))
            else:
                held[:0] = derived
            state.counters["pmatches_created"] += len(derived)
            state.live += len(derived)
            pmatches = derived
            position += 1

    def _wait(self, state: AfaState, key: Key, pmatches: list[PMatch]) -> None:
        """Note the pmatches at states with timeout arcs, by deadline."""
        timeouts = self.timeouts
        for pmatch in pmatches:
            for deadline, _ in timeouts[pmatch[2]]:
                when = deadline(pmatch[3])
                if when is None:
                    continue  # a null deadline never passes
                heapq.heappush(state.waiting, (when, state.noted, key, pmatch))
                state.noted += 1

    def _time_out(self, state: AfaState, watermark: Watermark, out: list[Report]) -> None:
        """Fire the timeout arcs whose deadline the watermark settles, for each pmatch that
        is still held and still ends at the last event up to its deadline."""
        waiting, entries = state.waiting, state.entries
        while waiting and watermark.settles(waiting[0][0]):
            when, _, key, pmatch = heapq.heappop(waiting)
            entry = entries.get(key)
            if entry is None:
                continue  # its event deleted
            here = _position(entry.pmatches, pmatch)
            if here < 0:
                continue  # invalidated
            after = entries.bisect_right(key)
            if after < len(entries) and entries.peekitem(after)[0][0] <= when:
                continue  # an event came before the deadline
            derived: list[PMatch] = []
            start, start_t, source, register, bound = pmatch
            for deadline, target in self.timeouts[source]:
                if deadline(register) == when:
                    self._closure((start, start_t, target, register, bound), derived)
            self._report(derived, entry.pmatches, entry.event, out)
            entry.pmatches[here + 1 : here + 1] = derived
            state.live += len(derived)
            self._wait(state, key, derived)

    def deadline(self, state: AfaState) -> float | None:
        """The earliest deadline of a timeout arc still to decide."""
        return state.waiting[0][0] if state.waiting else None

    def punctuate(self, state: AfaState, watermark: Watermark) -> list[Report]:
        """Timeouts, then cleanup (Appendix C.1): no event with a key below the
        watermark's can come, so only the pmatches of the last entry below it (`cover`) can
        still be extended; the entries before it go, and so do the cover's pmatches the
        window has ended. Returns the matches the timeouts make."""
        out: list[Report] = []
        if self.waits:
            self._time_out(state, watermark, out)
        if self._clean(state, watermark) is not None:
            entries = state.entries
            if not entries.peekitem(0)[1].pmatches and len(entries) == 1:
                entries.popfirst()
                state.last = None
        return out

    def _clean(self, state: AfaState, watermark: Watermark) -> Key | None:
        """The cleanup of Appendix C.1: the entries before the cover go, the cover lets its
        event go and keeps the pmatches that can still grow. Returns the cover's key, or
        None when the cover has not moved (its expired pmatches go when it does)."""
        floor: Key = (watermark.t, math.inf) if watermark.inclusive else (watermark.t, -1)
        if floor <= state.floor:
            return None
        state.floor = floor
        entries = state.entries
        cover = entries.bisect_left(floor) - 1
        if cover < 0 or (cover == 0 and entries.peekitem(0)[1].event is None):
            return None
        for _ in range(cover):
            key, entry = entries.popfirst()
            state.live -= len(entry.pmatches)
            if not self._adjacent(key, entries.peekitem(0)[0]):
                # AFA+O: no event can come between them now; matches across are lost
                state.counters["sequence_gaps"] = state.counters.get("sequence_gaps", 0) + 1
        cover_key: Key = entries.peekitem(0)[0]
        entry = entries.peekitem(0)[1]
        entry.event = None
        window, dead = self.window, self.dead
        kept = [
            p
            for p in entry.pmatches
            if not dead[p[2]] and (window is None or p[1] + window >= watermark.t)
        ]
        state.live -= len(entry.pmatches) - len(kept)
        entry.pmatches = kept
        return cover_key

    def earliest(self, state: AfaState) -> float:
        """The earliest start of a pmatch held: no later match can start before it."""
        return min(
            (p[1] for entry in state.entries.values() for p in entry.pmatches),
            default=math.inf,
        )

    def idle(self, state: AfaState, watermark: Watermark) -> bool:
        """Can no event from `watermark` on extend anything the state holds?"""
        entries = state.entries
        if state.waiting:
            return False
        if not entries:
            return True
        key, entry = entries.peekitem(-1)
        if not watermark.settles(key[0]):
            return False
        window, dead = self.window, self.dead
        return all(
            dead[p[2]] or (window is not None and watermark.t - p[1] > window)
            for p in entry.pmatches
        )

    # -- outputs --------------------------------------------------------------------------

    def _report(
        self, pmatches: list[PMatch], held: list[PMatch], event: Event | None, out: list[Report]
    ) -> None:
        """Report the matches `pmatches` reach at `event`, besides those the pmatches `held`
        there already stand for."""
        if self.twins:
            out.extend(self._match(p, event) for p in self._distinct(pmatches, held))
            return
        final = self.final
        for pmatch in pmatches:
            if final[pmatch[2]]:
                out.append(self._match(pmatch, event))

    def _withdraw(
        self, gone: list[PMatch], kept: list[PMatch], event: Event | None, out: list[Report]
    ) -> None:
        """Retract the matches of the pmatches `gone` from `event`'s list, unless a pmatch
        `kept` there stands for the same match."""
        out.extend(Retraction.of(self._match(p, event)) for p in self._distinct(gone, kept))

    def _distinct(self, pmatches: list[PMatch], others: list[PMatch]) -> Iterator[PMatch]:
        """The pmatches of `pmatches` in a final state, one per match, leaving out the
        matches a final pmatch of `others` stands for."""
        final = self.final
        if not self.twins:
            yield from (p for p in pmatches if final[p[2]])
            return
        seen = {self._identity(p) for p in others if final[p[2]]}
        for pmatch in pmatches:
            if final[pmatch[2]]:
                identity = self._identity(pmatch)
                if identity not in seen:
                    seen.add(identity)
                    yield pmatch

    def _identity(self, pmatch: PMatch) -> Hashable:
        """What makes two pmatches the same output: the events bound, each with its
        variable, and the register when it is reported."""
        bound, chain = pmatch[4], []
        while bound is not None:
            chain.append((bound[0], id(bound[1])))
            bound = bound[2]
        register = repr(pmatch[3]) if self.report_register else None
        return (tuple(chain), register)

    def _match(self, pmatch: PMatch, event: Event | None) -> Match:
        """The match a pmatch in a final state stands for: the events it bound, by variable,
        its register (when the AFA reports it), and its times: of its first and latest
        events (`Match` sorts by them), whatever event made it final."""
        _, start_t, state, register, bound = pmatch
        end_t = start_t if bound is None else max(start_t, bound[1].t)
        found = self._bound(bound)
        order = self.outputs.get(self.afa.states[state], self.variables)
        bindings = {name: found.get(name, ()) for name in order}
        fields = self.afa.fields
        values = dict(zip(fields, register, strict=True)) if self.report_register else None
        return Match(bindings, self.pattern, (start_t, end_t), values)

    def _bound(self, chain: Any) -> dict[str, tuple[Event, ...]]:
        """A bound chain's events by variable, in stream order.

        The chain runs latest first (pmatches only grow forward through the index), so the
        matches of one run share its tail: what lies below the last bind is read once
        (`_below`) and remembered for the run's next match."""
        if chain is None:
            return {}
        found = dict(self._below(chain[2]))
        name = chain[0]
        found[name] = (*found.get(name, ()), chain[1])
        return found

    def _below(self, node: Any) -> dict[str, tuple[Event, ...]]:
        """The events of a chain, by variable, remembered by node identity (the node is
        kept with them, so its id stays its own)."""
        walked = self._walked
        known = walked.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        pending: list[tuple[str, Event]] = []
        found: dict[str, tuple[Event, ...]] = {}
        top = node
        while node is not None:
            known = walked.get(id(node))
            if known is not None and known[0] is node:
                found = dict(known[1])
                break
            pending.append((node[0], node[1]))
            node = node[2]
        runs: list[tuple[str, list[Event]]] = []
        for name, event in reversed(pending):
            if runs and runs[-1][0] == name:
                runs[-1][1].append(event)
            else:
                runs.append((name, [event]))
        for name, events in runs:
            found[name] = found.get(name, ()) + tuple(events)
        if top is not None:
            if len(walked) >= WALKED:
                walked.clear()
            walked[id(top)] = (top, found)
        return found


def start_key(pmatch: PMatch) -> Key:
    """A pmatch's start: the key lists are ordered by."""
    return pmatch[0]


def _position(pmatches: list[PMatch], pmatch: PMatch) -> int:
    """Where `pmatch` itself (not an equal one) stands in the list, or -1."""
    for position, held in enumerate(pmatches):
        if held is pmatch:
            return position
    return -1
