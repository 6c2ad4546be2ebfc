"""From complete positive bindings to reported matches: negation, output format, timing.

A *candidate* is a binding of the positive variables that satisfies every condition. It
becomes a match when no qualifying event of any negated variable lies where the negation
forbids one (SASE+'s nested-query semantics, written out in docs/semantics.md):

- after the latest event of the variables SEQ puts before the negation, and before the
  earliest event of those it puts after it;
- where one side has no such event, as far as the window reaches: back to end - W, ahead to
  start + W (bounds excluded under WITHIN ... EXCLUSIVE). A candidate whose negation looks
  ahead is decided once every event up to start + W has arrived;
- a qualifying event has the negated type, is not an event of the candidate, shares its
  equivalence values and satisfies every condition that mentions the negated variable.

With output="non_overlapping", candidates of one partition are decided in the order they
completed (ties: earliest start first, then by positions, then by variable bindings) and a
match is reported only if it starts after the previous reported match of that partition ended.
A candidate that starts before then is dropped at once, without waiting for its negations.

With an AFTER MATCH SKIP clause, the matches of a partition are taken in the order they start
(ties: earliest end first, then by positions, then by bindings), and each one kept moves the
partition's *floor*, the first position a later kept match may start at: past its first
event (TO NEXT), past its last (PAST LAST EVENT), to the first or last event of v (TO FIRST v,
TO LAST v; a match binding no event to v moves nothing). A group of matches starting at one
event is decided once time has passed that event by the window, as a selection's is.

With FREEZE v (OpenCEP's freeze), each event that v can take (its type, and the conditions
about one event of v) and that is not held back from v *freezes* v: until a reported match
holds it, or the window no longer spans it and a later event, no later event of its partition
may be bound to v or to a variable before v in the SEQ (`Analysis.freeze`). A plan calls
`arrive` before it takes each event; a candidate binding a held-back event where it was held
back is dropped as it comes.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from kleene.compiler.analysis import Analysis, Negated
from kleene.compiler.evaluate import attribute
from kleene.compiler.options import Options
from kleene.events import Event, Watermark
from kleene.language.sase import ast as A
from kleene.matches import Match
from kleene.plans.common.arrivals import Stream
from kleene.plans.common.checks import Binding, Checks, as_events

__all__ = ["Candidate", "Finalizer", "Freezer", "Partition", "Pending", "distinct"]


@dataclass
class Candidate:
    binding: Binding
    first: int
    last: int
    start: float
    end: float
    key: Hashable | None
    verdict: bool | None = None
    #: The bound events, when the plan has them at hand (else read from the stream).
    events: Mapping[str, tuple[Event, ...]] | None = None
    #: The time its verdict waits for (the end of the window a negation after its last
    #: event looks through): not asked for again before time reaches it.
    waits: float = -math.inf

    @cached_property
    def positions(self) -> frozenset[int]:
        return frozenset(p for ps in self.binding.values() for p in ps)


def distinct(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates, each binding once (the first of equal ones): a match that two OR
    branches binding the same variables both complete is one match."""
    seen: dict[tuple[tuple[str, tuple[int, ...]], ...], Candidate] = {}
    for candidate in candidates:
        seen.setdefault(tuple(candidate.binding.items()), candidate)
    return list(seen.values())


@dataclass(frozen=True)
class Freezer:
    """An event freezing a variable (FREEZE): its position, time, place in the stream (for
    a count window), the variable and its partition's key."""

    position: int
    t: float
    seq: int | None
    variable: str
    key: Hashable | None


@dataclass
class Pending:
    """A reference state's candidates that are not reported yet."""

    undecided: list[Candidate] = field(default_factory=list)
    queues: dict[Hashable | None, deque[Candidate]] = field(default_factory=dict)
    last_end: dict[Hashable | None, int] = field(default_factory=dict)
    #: With AFTER MATCH SKIP: per partition, the first position a match may start at.
    floors: dict[Hashable | None, int] = field(default_factory=dict)
    #: With a selection or AFTER MATCH SKIP: the matches found so far, by the position of
    #: their first event.
    groups: dict[int, list[Candidate]] = field(default_factory=dict)
    #: With CONSUME BY EVENTS: the positions of the events reported matches used up (and
    #: how many to hold before forgetting those the stream no longer holds).
    used: set[int] = field(default_factory=set)
    kept_used: int = 1024
    #: With FREEZE: the events freezing a variable now, and the variables each position
    #: was held back from as it arrived (only positions held back from some).
    freezers: list[Freezer] = field(default_factory=list)
    held: dict[int, frozenset[str]] = field(default_factory=dict)
    kept_held: int = 1024

    def __bool__(self) -> bool:
        return bool(self.undecided or self.queues or self.groups)

    def waiting(self) -> Iterator[Candidate]:
        """Every candidate not reported (or dropped) yet."""
        yield from self.undecided
        for queue in self.queues.values():
            yield from queue
        for group in self.groups.values():
            yield from group


@dataclass
class Partition:
    """What every plan keeps per partition, and what the finalizer works on: the events by
    arrival position and the candidates not reported yet. A plan's state extends it."""

    stream: Stream = field(default_factory=Stream)
    pending: Pending = field(default_factory=Pending)


class Finalizer:
    """Decides a plan's candidates: the one implementation of negation, output formats,
    selections, settling (`report`), deadlines and when a partition is quiet."""

    def __init__(
        self,
        analysis: Analysis,
        checks: Checks,
        window: float | None,
        options: Options,
        negations: Sequence[Negated] | None = None,
    ) -> None:
        """`negations`: those a candidate is checked for (all of the pattern's by default;
        a plan that checks some earlier passes the rest)."""
        self.analysis = analysis
        self.checks = checks
        self.window = window
        within = analysis.pattern.within
        #: WITHIN ... EXCLUSIVE: a match spans less than the window, and a negation looks
        #: only at events less than a window from the match's end (back) or start (ahead).
        self.exclusive = within is not None and within.exclusive
        #: The count window (WITHIN n EVENTS), in stream positions (None: none).
        self.count = None if within is None else within.events
        self.non_overlapping = options.output == "non_overlapping"
        self.selection = options.selection
        clause = analysis.pattern.after_match
        #: AFTER MATCH's skip (None: every match is reported, as NO SKIP), and its v.
        self.skip = None if clause is None or clause.skip == "no_skip" else clause.skip
        self.skip_to = None if clause is None else clause.variable
        #: CONSUME BY: "any" or "partition" (None: no partial match is discarded).
        self.consume = analysis.consume
        self.name = options.name
        self.negations = tuple(analysis.negations.values() if negations is None else negations)
        #: Under OR two branches may complete one binding (`OR(SEQ(A a, B b), AND(A a, B
        #: b))`): candidates are made distinct, so the match is reported once.
        self.twins = A.contains_or(analysis.structure)
        #: FREEZE: each variable it names, with those its events hold back.
        self.freeze = analysis.freeze
        #: For each of them, the event types it takes (None: any) and the conditions about
        #: one of its events.
        self.takers = {
            name: (
                analysis.variables[name].types,
                tuple(c for c in checks.conditions if c.property_of == name),
            )
            for name in self.freeze
        }
        #: FREEZE holds back within a partition: the key of an event's (None: one).
        self.freeze_key = (
            analysis.partition.keyer if self.freeze and analysis.partition is not None else None
        )

    def candidate(
        self,
        binding: Binding,
        stream: Stream,
        partition: Callable[[Event], Hashable | None] | None,
        events: Mapping[str, tuple[Event, ...]] | None = None,
    ) -> Candidate:
        """A complete binding as a candidate; with non-overlapping output or an AFTER MATCH
        SKIP, `partition` (the plan's partition key, None: the whole stream is one) groups
        candidates by the key of their first event. A plan that holds the bound events passes
        them as `events`. The variables come in pattern order (`Match.bindings` is in it)."""
        first = min(ps[0] for ps in binding.values() if ps)
        last = max(ps[-1] for ps in binding.values() if ps)
        key = None
        if (self.non_overlapping or self.skip) and partition is not None:
            key = partition(stream[first])
        if self.consume == "partition":  # (without a partition key, CONSUME BY is ANY)
            assert self.analysis.partition is not None
            key = self.analysis.partition.key(stream[first])
        return Candidate(binding, first, last, stream[first].t, stream[last].t, key, None, events)

    def arrive(self, partition: Partition, event: Event) -> None:
        """FREEZE: before a plan takes `event` as the next position of its stream, let go
        of the freezers the window has passed, note what the others hold it back from, and
        make it a freezer of each named variable it can be bound to and is not held back
        from."""
        pending, stream = partition.pending, partition.stream
        position = stream.end
        key = None if self.freeze_key is None else self.freeze_key(event)
        freezers = [f for f in pending.freezers if self._spans(f, event)]
        held = frozenset(name for f in freezers if f.key == key for name in self.freeze[f.variable])
        if held:
            pending.held[position] = held
            if len(pending.held) > pending.kept_held:  # no later match binds a let-go one
                pending.held = {p: h for p, h in pending.held.items() if p >= stream.base}
                pending.kept_held = 2 * len(pending.held) + 1024
        for name, (types, conditions) in self.takers.items():
            if name in held or (types is not None and event.type not in types):
                continue
            one = {name: (event,)}
            if all(self.checks.holds(c, one, [1 if c.indexed else None]) for c in conditions):
                freezers.append(Freezer(position, event.t, event.seq, name, key))
        pending.freezers = freezers

    def _spans(self, freezer: Freezer, event: Event) -> bool:
        """Could one match hold both the freezer's event and this later one?"""
        window, count = self.window, self.count
        if window is not None:
            apart = event.t - freezer.t
            if apart > window or (self.exclusive and apart == window):
                return False
        if count is not None and freezer.seq is not None and event.seq is not None:
            return event.seq - freezer.seq <= count
        return True

    @staticmethod
    def unheld(candidate: Candidate, held: Mapping[int, frozenset[str]]) -> bool:
        """FREEZE: does the candidate bind no event where it was held back?"""
        return not any(
            name in held.get(p, ()) for name, ps in candidate.binding.items() for p in ps
        )

    def matches(self, reported: list[Candidate], stream: Stream) -> list[Match]:
        """The reported candidates as matches, laid out flat (`Match.laid_out`: each its
        events and sort key, read in one pass; no dict of bindings until one is read)."""
        events, base, name = stream.events, stream.base, self.name
        found = []
        for c in reported:
            flat: list[Event] = []
            if c.events is None:
                for positions in c.binding.values():
                    flat += [events[p - base] for p in positions]
                shape = tuple([(n, len(ps)) for n, ps in c.binding.items()])
            else:
                for bound in c.events.values():
                    flat += bound
                shape = tuple([(n, len(es)) for n, es in c.events.items()])
            ids = tuple([e.id for e in flat])
            found.append(Match.laid_out(tuple(flat), (c.end, c.start, ids, (name, shape))))
        return found

    def add(self, pending: Pending, candidates: list[Candidate]) -> None:
        """Take one step's complete candidates (every candidate ending at one event comes
        in the same call)."""
        if self.twins and len(candidates) > 1:
            candidates = distinct(candidates)
        if self.exclusive:
            window = self.window
            assert window is not None
            candidates = [c for c in candidates if c.end - c.start < window]
        if pending.held:
            held = pending.held
            candidates = [c for c in candidates if self.unheld(c, held)]
        if not self.non_overlapping:
            pending.undecided.extend(candidates)  # reported in any order; the engine sorts
            return
        # ties (one set of events bound two ways) go by the binding, so every plan agrees
        candidates.sort(
            key=lambda c: (c.last, c.first, sorted(c.positions), sorted(c.binding.items()))
        )
        for candidate in candidates:
            pending.queues.setdefault(candidate.key, deque()).append(candidate)

    def report(
        self, partition: Partition, watermark: Watermark, unsettled: float = math.inf
    ) -> list[Match]:
        """The matches that become final now that time has reached `watermark`."""
        if not partition.pending:
            return []
        pending = partition.pending
        reported = self.settle(pending, partition.stream, watermark, unsettled)
        if reported and pending.freezers:  # FREEZE: a reported match lets its events go
            used = {p for c in reported for p in c.positions}
            pending.freezers = [f for f in pending.freezers if f.position not in used]
        return self.matches(reported, partition.stream)

    def quiet(self, partition: Partition, watermark: Watermark) -> bool:
        """Nothing pending, no freezer that could hold a later event back, and no kept
        event that the negation of a match still to come could look back to (a window before
        its end, at least a window after its start)."""
        pending = partition.pending
        if pending:
            return False
        if pending.freezers and (
            self.window is None  # a count window: only later events let a freezer go
            or not all(watermark.settles(f.t + self.window) for f in pending.freezers)
        ):
            return False
        events = partition.stream.events
        if not self.analysis.negations or self.window is None or not events:
            return True  # without a window a negation looks only between a match's events
        return events[-1].t < watermark.t - 2 * self.window

    def idle(self, partition: Partition, watermark: Watermark) -> bool:
        """The window has passed the partition's last event, so nothing a plan keeps for it
        can take another event (every run or partial match started no later) and no later
        match can bind a kept one; and the partition is quiet. Without a window, never."""
        window = self.window
        times = partition.stream.times
        return (
            window is not None
            and (not times or watermark.settles(times[-1] + window))
            and self.quiet(partition, watermark)
        )

    def settle(
        self, pending: Pending, stream: Stream, watermark: Watermark, unsettled: float = math.inf
    ) -> list[Candidate]:
        """The candidates that become matches now that time has reached `watermark`. A plan
        that hands over matches late passes `unsettled`: the first position of the earliest
        match it may still hand over (a selection waits for every match of a group)."""
        if not pending:
            return []
        reported: list[Candidate] = []
        if not self.non_overlapping:
            waiting = []
            for candidate in pending.undecided:
                if not watermark.settles(candidate.waits):
                    waiting.append(candidate)
                    continue
                verdict = self.verdict(candidate, stream, watermark)
                if verdict is None:
                    waiting.append(candidate)
                elif verdict:
                    reported.append(candidate)
            pending.undecided = waiting
            if self.consume == "events":
                reported = self.used_up(pending, reported, stream)
            elif self.consume:
                reported = self.consumed(pending, reported)
            if self.selection == "all" and self.skip is None:
                return reported
            for candidate in reported:
                pending.groups.setdefault(candidate.first, []).append(candidate)
            return self.selected(pending, watermark, unsettled, stream)
        for key in list(pending.queues):
            queue = pending.queues[key]
            while queue:
                candidate = queue[0]
                if candidate.first <= pending.last_end.get(key, -1):
                    # it overlaps the last match reported: never reported, whatever its
                    # negations say, so it need not wait for them (nor hold the queue up)
                    queue.popleft()
                    continue
                verdict = self.verdict(candidate, stream, watermark)
                if verdict is None:
                    break
                queue.popleft()
                if verdict:
                    reported.append(candidate)
                    pending.last_end[key] = candidate.last
            if not queue:
                del pending.queues[key]
        return reported

    def consumed(self, pending: Pending, reported: list[Candidate]) -> list[Candidate]:
        """CONSUME BY: the matches no partial match discarded before they completed. Every
        match completed by one event is reported; then each partial match holding an event
        up to that one (of its partition, or any) is discarded: later matches begin after
        it (the partition's floor)."""
        reported.sort(key=lambda c: (c.last, c.first, sorted(c.positions)))
        floors = pending.floors
        kept: list[Candidate] = []
        for _, ending in itertools.groupby(reported, key=lambda c: c.last):
            survivors = [c for c in ending if c.first >= floors.get(c.key, 0)]
            for candidate in survivors:
                floors[candidate.key] = candidate.last + 1
            kept += survivors
        return kept

    @staticmethod
    def used_up(pending: Pending, reported: list[Candidate], stream: Stream) -> list[Candidate]:
        """CONSUME BY EVENTS (OpenCEP's single use): taking the matches in the order they
        complete (ties: the earliest first event, then by positions, then by binding), a
        match is reported unless an event of it is in a match reported before."""
        reported.sort(
            key=lambda c: (c.last, c.first, sorted(c.positions), sorted(c.binding.items()))
        )
        used = pending.used
        kept: list[Candidate] = []
        for candidate in reported:
            if used.isdisjoint(candidate.positions):
                used |= candidate.positions
                kept.append(candidate)
        if len(used) > pending.kept_used:  # no later match holds an event the stream let go
            pending.used = used = {p for p in used if p >= stream.base}
            pending.kept_used = 2 * len(used) + 1024
        return kept

    def selected(
        self,
        pending: Pending,
        watermark: Watermark,
        unsettled: float = math.inf,
        stream: Stream | None = None,
    ) -> list[Candidate]:
        """The chosen matches of every group that is complete: time has passed its first
        event by the window, or the stream by a count window (every match starting there
        has ended and been decided), and the plan holds no match of it back (`unsettled`).
        Groups are taken in the order they start: an AFTER MATCH SKIP rules out later ones
        by what it keeps of earlier ones."""
        reported: list[Candidate] = []
        latest = None if stream is None or not stream.events else stream.events[-1].seq
        for first in sorted(pending.groups):
            if first >= unsettled:
                break
            group = pending.groups[first]
            done = (
                watermark.t == math.inf
                or (self.window is not None and watermark.settles(group[0].start + self.window))
                or self._counted_past(group[0], stream, latest)
            )
            if not done:
                break  # starts only grow, and so does the time a group is done
            del pending.groups[first]
            reported += self.skipped(pending, group) if self.skip else select(group, self.selection)
        return reported

    def _counted_past(
        self, candidate: Candidate, stream: Stream | None, latest: int | None
    ) -> bool:
        """Is the stream past the candidate's first event by more than the count window?"""
        if self.count is None or stream is None or latest is None:
            return False
        origin = stream[candidate.first].seq
        return origin is not None and latest - origin > self.count

    def skipped(self, pending: Pending, group: list[Candidate]) -> list[Candidate]:
        """The matches of one group (all starting at one event) that the partition's floor
        lets through, each moving the floor as AFTER MATCH SKIP says."""
        group.sort(key=lambda c: (c.last, sorted(c.positions), sorted(c.binding.items())))
        kept = []
        floors = pending.floors
        for candidate in group:
            floor = floors.get(candidate.key, 0)
            if candidate.first < floor:
                continue
            kept.append(candidate)
            floors[candidate.key] = max(floor, self._floor(candidate, floor))
        return kept

    def _floor(self, candidate: Candidate, floor: int) -> int:
        """Where a kept match moves its partition's floor to."""
        if self.skip == "to_next":
            return candidate.first + 1
        if self.skip == "past_last":
            return candidate.last + 1
        assert self.skip_to is not None, "validation names v for TO FIRST and TO LAST"
        positions = candidate.binding.get(self.skip_to, ())
        if not positions:
            return floor  # v bound nothing: no skip (Flink's default)
        return positions[0] if self.skip == "to_first" else positions[-1]

    def deadline(self, partition: Partition, starts: Iterable[float] = ()) -> float | None:
        """When the next candidate can be decided (all events up to then in): the earliest
        undecided one or, with non-overlapping output, the earliest head of a partition's
        queue (the candidates behind a head wait for it, however early they could be
        decided themselves); or, earlier, when the first of the runs that began at `starts`
        times out (with timeouts=True)."""
        pending = partition.pending
        if self.window is None:
            return None
        waiting = pending.undecided + [q[0] for q in pending.queues.values() if q]
        waiting += [group[0] for group in pending.groups.values()]
        firsts = [c.start for c in waiting]
        firsts.extend(starts)
        return min(firsts) + self.window if firsts else None

    def verdict(self, candidate: Candidate, stream: Stream, watermark: Watermark) -> bool | None:
        """True: a match; False: a negation spoils it; None: not decidable yet."""
        if candidate.verdict is None:
            decided: bool | None = True
            for negation in self.negations:
                if not negation.applies(candidate.binding):
                    continue
                found = self.spoiled(candidate, negation, stream, watermark)
                if found is True:
                    decided = False
                    break
                if found is None:
                    decided = None
            candidate.verdict = decided
        return candidate.verdict

    def spoiled(
        self, candidate: Candidate, negation: Negated, stream: Stream, watermark: Watermark
    ) -> bool | None:
        """Is there a qualifying event of the negated variable? None: not yet known."""
        if negation.next:
            return self.next_spoils(candidate, negation, stream, watermark)
        binding = candidate.binding
        before = [p for v in negation.before if v in binding for p in binding[v]]
        after = [p for v in negation.after if v in binding for p in binding[v]]
        window = self.window
        if negation.since is not None:
            # Flink's notFollowedBy: from the first event of the variable before it (a loop
            # stops at it), and nothing looked for when nothing after it binds an event
            if not after:
                return False
            since = binding.get(negation.since)
            if since:
                before = [since[0]]
        if before:
            low = max(before) + 1
        else:
            assert window is not None, "validation requires WITHIN here"
            back = candidate.end - window
            low = stream.first_after(back) if self.exclusive else stream.first_from(back)
        if after:
            high = min(after) - 1
        else:
            assert window is not None, "validation requires WITHIN here"
            ahead = candidate.start + window
            if not watermark.settles(ahead):
                # not known until the window closes: looked for once, then (a match it
                # spoils waits as long, and is never reported either way)
                candidate.waits = ahead
                return None
            high = stream.last_before(ahead) if self.exclusive else stream.last_until(ahead)
        qualifies = self.qualifier(candidate, negation, stream)
        for position in range(max(low, stream.base), high + 1):
            if position not in candidate.positions and qualifies(stream[position]):
                return True
        return False

    def qualifier(
        self, candidate: Candidate, negation: Negated, stream: Stream
    ) -> Callable[[Event], bool]:
        """A test of an event for the negated variable: its type, the match's equivalence
        values, and the negation's conditions."""
        takes = negation.variable.takes
        some = stream[candidate.first]
        values = [(name, attribute(some, name)) for name in self.checks.equivalences]
        holds = self.conditions(candidate, negation, stream)

        def qualifies(event: Event) -> bool:
            return (
                takes(event.type)
                and all(v is not None and attribute(event, n) == v for n, v in values)
                and holds(event)
            )

        return qualifies

    def next_spoils(
        self, candidate: Candidate, negation: Negated, stream: Stream, watermark: Watermark
    ) -> bool | None:
        """NOT NEXT: does the event right after the last one bound before the negation (of
        the match's partition; an event the match binds too) qualify? None: it has not come
        yet. As every negation, it reaches no further than the window from the match's
        start; at the end of the stream, with no event after, nothing spoils. After a loop,
        every event from the one after the loop's least number of events on is looked at as
        well: Flink's run in the loop may leave it at each of them, and dies where the one
        negated comes."""
        binding = candidate.binding
        before = [p for v in negation.before if v in binding for p in binding[v]]
        if not before:
            return False
        last = max(before)
        partition = self.analysis.partition
        key = None if partition is None else partition.key(stream[last])
        reach = math.inf if self.window is None else candidate.start + self.window
        qualifies = self.qualifier(candidate, negation, stream)
        loop = binding.get(negation.loop) if negation.loop is not None else None
        if loop:
            least = max(self.analysis.variables[negation.loop].min, 1)  # type: ignore[index]
            for position in range(max(loop[least - 1] + 1, stream.base), last + 1):
                event = stream[position]
                if partition is not None and partition.key(event) != key:
                    continue
                if qualifies(event):
                    return True
        for position in range(last + 1, stream.end):
            event = stream[position]
            if partition is not None and partition.key(event) != key:
                continue
            if event.t > reach or (self.exclusive and event.t == reach):
                return False  # the next event is beyond the window
            return qualifies(event)
        return False if watermark.settles(reach) else None

    def conditions(
        self, candidate: Candidate, negation: Negated, stream: Stream
    ) -> Callable[[Event], bool]:
        """A test of the negation's conditions on an event of the negated type that would
        stand in for the negated variable. Here: the interpreter, per event; plans may
        compile it."""
        bound = candidate.events
        if bound is None:
            bound = as_events(candidate.binding, stream)
        binding = {**candidate.binding, negation.variable.name: (-1,)}  # -1: the event tested
        closed = frozenset(binding)
        applying = [
            (condition, instances)
            for condition in negation.conditions
            if (instances := condition.instances(binding, closed))
        ]

        def holds(event: Event) -> bool:
            events = {**bound, negation.variable.name: (event,)}
            return all(self.checks.holds(c, events, i) for c, i in applying)

        return holds


def select(group: list[Candidate], selection: str) -> list[Candidate]:
    """The matches of one group (all starting at one event) that `selection` keeps.

    Earliest: each variable's first event is the earliest that variable starts with in any
    match of the group. Maximal: no match of the group is this one with one more event for
    one variable (an event after the group's first, since they all start there)."""
    chosen = group
    if selection in ("earliest", "earliest_maximal"):
        starts: dict[str, int] = {}
        for candidate in group:
            for name, positions in candidate.binding.items():
                if positions:
                    starts[name] = min(starts.get(name, positions[0]), positions[0])
        chosen = [
            c for c in chosen if all(not ps or ps[0] == starts[v] for v, ps in c.binding.items())
        ]
    if selection in ("maximal", "earliest_maximal"):
        chosen = [c for c in chosen if not any(_extends(o.binding, c.binding) for o in group)]
    return chosen


def _extends(longer: Binding, shorter: Binding) -> bool:
    """Is `longer` the binding `shorter` with one more event for one variable?"""
    if longer.keys() != shorter.keys():
        return False
    grown = [name for name in shorter if longer[name] != shorter[name]]
    if len(grown) != 1:
        return False
    (name,) = grown
    more, less = set(longer[name]), set(shorter[name])
    return len(more) == len(less) + 1 and less < more
