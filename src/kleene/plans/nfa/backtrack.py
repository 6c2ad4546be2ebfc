"""The `nfa_backtrack` plan: the SASE+ paper's backtrack algorithm (section 5.3), for comparison.

One run per partition at a time, the *singleton*, reads events until it fails or goes on
caught up with the stream; a run the singleton splits off (by non-determinism) and every run an
event begins (once it has read that event) are *postponed* on a stack with the position of
the next event they must read.
When the singleton fails, the most recently postponed run becomes the singleton and re-reads
the stored events from its position on: depth first, where `nfa` goes breadth first. Each run
keeps its own match (no shared buffer, no merging). The automaton and compiled formulas are
`nfa`'s: the plan holds an `Nfa` and reads its automaton, formulas and finalizer.

A match is final once every run has read past its last event, so matches are reported later
than `nfa` reports them (at the latest when the stream closes); the set of matches is the same.
With non-overlapping output, a match found makes every run read up to it, so it is decided at
once, and the runs it overlaps end: the search goes on after a match, as the paper's does.

>>> import kleene
>>> events = [{"type": t, "ts": i} for i, t in enumerate("AABB")]
>>> engine = kleene.Engine("PATTERN SEQ(A a, B b)", plan="nfa_backtrack")
>>> found = engine.send_many(events) + engine.close()
>>> sorted(tuple(m.ids().values()) for m in found)
[((0,), (2,)), ((0,), (3,)), ((1,), (2,)), ((1,), (3,))]
>>> engine.metrics.as_dict()["reprocessed"] > 0
True
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kleene.compiler.analysis import Analysis
from kleene.compiler.growth import tripped
from kleene.compiler.options import Options
from kleene.errors import LimitError
from kleene.events import Event, Watermark
from kleene.matches import Match
from kleene.plans.base import Plan, begin_at_first, register
from kleene.plans.common.checks import Binding
from kleene.plans.common.finalize import Candidate, Partition
from kleene.plans.nfa.plan import Nfa, moves

__all__ = ["BacktrackState", "NfaBacktrack"]

Trail = tuple[str, int, Any] | None  # (variable, position, the rest of the path) newest first


class Walk:
    """A run: where it stands, V, partition and equivalence values, start time and position,
    its own match so far, and the position of the next event it reads (`fresh`: it has read
    nothing yet). `node` is the index of the automaton node it stands at."""

    __slots__ = ("fresh", "key", "next", "node", "origin", "path", "start", "values", "vector")

    def __init__(
        self,
        node: int,
        vector: tuple[Any, ...],
        key: Hashable | None,
        values: tuple[Hashable, ...],
        start: float,
        origin: int,
        path: Trail,
        next: int,  # noqa: A002 - the position it reads next
        fresh: bool = False,
    ) -> None:
        self.origin = origin
        self.node = node
        self.vector = vector
        self.key = key
        self.values = values
        self.start = start
        self.path = path
        self.next = next
        self.fresh = fresh

    def __getstate__(self) -> tuple[Any, ...]:
        """The fields, with the trail as a flat list (oldest step first), so that a long
        match pickles without deep recursion (walks sharing a trail then share it no more)."""
        steps = []
        path = self.path
        while path is not None:
            steps.append(path[:2])
            path = path[2]
        steps.reverse()
        fields = (self.fresh, self.key, self.next, self.node, self.origin)
        return (*fields, steps, self.start, self.values, self.vector)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (self.fresh, self.key, self.next, self.node, self.origin, steps) = state[:6]
        (self.start, self.values, self.vector) = state[6:]
        path: Trail = None
        for variable, position in steps:
            path = (variable, position, path)
        self.path = path


@dataclass
class BacktrackState(Partition):
    """One partition's events, undecided candidates, runs and the matches they found."""

    singleton: Walk | None = None
    postponed: list[Walk] = field(default_factory=list)
    found: list[tuple[int, int, Binding]] = field(default_factory=list)  # heap by last event
    #: How many matches each event (by position) completed of those not handed over yet,
    #: for the guard on the matches one event completes.
    completed: dict[int, int] = field(default_factory=dict)
    #: How many runs read each event (by position): the partial matches alive at it, which
    #: depth first holds one at a time, for the guard on partial matches per partition.
    reads: dict[int, int] = field(default_factory=dict)
    tiebreak: int = 0
    kept: int = 64
    begin: bool = True  # may an event begin a run (`matches_from`: only the first)
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("runs_created", "edge_evaluations", "completions", "reprocessed"), 0
        )
    )


@register
class NfaBacktrack(Plan[BacktrackState]):
    """The backtrack algorithm over `nfa`'s automaton: depth first, one run at a time."""

    name = "nfa_backtrack"
    analysis: Analysis
    #: A match is final once every run has read past its last event.
    limits = frozenset({"prompt_emission"})

    def __init__(self, analysis: Analysis, options: Options) -> None:
        super().__init__(analysis, options)
        #: The automaton, its compiled formulas and the finalizer, shared with `nfa`.
        self.nfa = Nfa(analysis, options)
        self.finalizer = self.nfa.finalizer
        cap = options.max_partial_matches_per_key
        #: The most runs that may read one event (inf: no limit).
        self.run_cap: float = math.inf if cap is None else cap

    @property
    def partition_key(self) -> Callable[[Event], Hashable | None] | None:
        return self.nfa.partition_key

    def describe(self) -> str:
        return self.nfa.describe()

    def dot(self) -> str:
        return self.nfa.dot()

    def matches_from(self, events: Sequence[Event]) -> list[Match]:
        """Only the first event begins a run: every match found starts there."""
        return begin_at_first(self, events)

    @classmethod
    def unsupported(cls, analysis: Analysis, options: Options) -> str | None:
        if not options.construct:
            return (
                "the backtrack algorithm builds each match as it finds it "
                "(construct=False is for the nfa plan)"
            )
        return None

    def new_state(self) -> BacktrackState:
        return BacktrackState()

    def live_runs(self, state: BacktrackState) -> int:
        return len(state.postponed) + (state.singleton is not None)

    def idle(self, state: BacktrackState, watermark: Watermark) -> bool:
        # (a postponed run, however old, has events still to read)
        return (
            state.singleton is None
            and not state.postponed
            and not state.found
            and self.finalizer.quiet(state, watermark)
        )

    def counters(self, state: BacktrackState) -> dict[str, int]:
        return dict(state.counters)

    def step(self, state: BacktrackState, event: Event) -> list[Match]:
        position = state.stream.append(event)
        values = self.nfa.values(event)
        if values is not None and state.begin:
            key = None if self.nfa.partition is None else self.nfa.partition.key(event)
            begun = Walk(
                0,
                self.nfa.code.initial,
                key,
                values,
                event.t,
                position,
                None,
                position,
                True,
            )
            state.counters["runs_created"] += 1
            # the run reads its own event at once: one the event cannot begin is never kept
            # (the paper's runs begin at the events the start state takes)
            going = self._read(state, begun, position)
            if going is not None:
                state.postponed.append(going)
        self._catch_up(state, position)
        if state.found and self.finalizer.non_overlapping:
            # a run found a match: every run reads up to it, so that it is decided now and
            # the runs it overlaps end (`_release`), as the paper's backtrack algorithm
            # goes on after a run's first match instead of searching every run through
            self._drain(state, position)
        return self._release(state, Watermark(event.t, inclusive=False))

    def advance(self, state: BacktrackState, watermark: Watermark) -> list[Match]:
        # a deadline has passed: catch every run up to the stream (a postponed run may hold
        # back a group of matches a selection waits for) and end the runs the window closed,
        # so the deadline does not stay passed
        self._drain(state, state.stream.end - 1)
        if self.window is not None and watermark.t != math.inf:
            window = self.window
            state.postponed = [
                r for r in state.postponed if not watermark.settles(r.start + window)
            ]
        return self._release(state, watermark)

    def deadline(self, state: BacktrackState) -> float | None:
        """The finalizer's, or earlier: when the window closes on the oldest run (then
        `advance` ends it and hands over the matches it held back). The bottom of the
        postponed stack holds the oldest runs; a run above it that is older still only makes
        `advance` come again later, so matches are never lost, at worst reported later."""
        deadline = self.finalizer.deadline(state)
        if self.window is None:
            return deadline
        runs = [*state.postponed[:1], *([state.singleton] if state.singleton else [])]
        if not runs:
            return deadline
        closes = min(run.start for run in runs) + self.window
        return closes if deadline is None else min(deadline, closes)

    # -- depth first ----------------------------------------------------------------------

    def _catch_up(self, state: BacktrackState, upto: int) -> None:
        """Run the singleton to `upto`; while it fails, backtrack to the latest postponed run."""
        while True:
            run = state.singleton
            if run is None:
                if not state.postponed:
                    return
                run = state.postponed.pop()
                if run.next < upto:  # events it reads from the queue after the fact
                    state.counters["reprocessed"] += upto - run.next
            state.singleton = self._read(state, run, upto)
            if state.singleton is not None:
                return

    def _drain(self, state: BacktrackState, upto: int) -> None:
        """Run every run to `upto` (the stream ends, or a deadline passed)."""
        caught: list[Walk] = []
        while state.singleton is not None or state.postponed:
            self._catch_up(state, upto)
            if state.singleton is not None:
                caught.append(state.singleton)
                state.singleton = None
        state.postponed = caught

    def _read(self, state: BacktrackState, run: Walk | None, upto: int) -> Walk | None:
        """Feed the run the events from its next position to `upto`; split-off runs are
        postponed. The run that goes on, or None when it fails."""
        stream = state.stream
        window = self.window
        exclusive = self.finalizer.exclusive
        counters = state.counters
        reads, cap = state.reads, self.run_cap
        while run is not None and run.next <= upto:
            position = run.next
            event = stream[position]
            if window is not None and (
                event.t - run.start > window or (exclusive and event.t - run.start == window)
            ):
                return None
            read = reads.get(position, 0) + 1
            if read > cap:  # runs read one at a time: stop the explosion here
                if self.options.on_limit != "drop":
                    raise self._too_many_runs(event)
                counters["partials_dropped"] = counters.get("partials_dropped", 0) + 1
                return None
            reads[position] = read
            branches: list[Walk] = []
            taken = False
            key = None if self.nfa.partition is None else self.nfa.partition.key(event)
            if run.key == key and run.values == self.nfa.values(event):
                node = self.nfa.nodes[run.node]
                counters["edge_evaluations"] += len(node.by_type.get(event.type, node.other))
                for edge, vector, target, completes in moves(node, run.vector, event):
                    taken = taken or edge.direct
                    path = (edge.variable, position, run.path)
                    if completes:
                        self._found(state, edge.bound, path)
                    if target is not None:
                        branches.append(
                            Walk(
                                target,
                                vector,
                                run.key,
                                run.values,
                                run.start,
                                run.origin,
                                path,
                                position + 1,
                            )
                        )
            if not run.fresh and self._ignores(run, key, taken):
                run.next = position + 1
                branches.insert(0, run)
            counters["runs_created"] += len(branches) - (branches[:1] == [run])
            if not branches:
                return None
            run = branches[0]
            state.postponed.extend(reversed(branches[1:]))
        return run

    def _forget(self, state: BacktrackState, watermark: Watermark) -> None:
        """Drop the events no run will read, no match found or pending binds, and no
        negation of theirs can look back to (a window before their first event)."""
        stream = state.stream
        if stream.end == stream.base:
            return
        needed = stream.end - 1
        for run in [*state.postponed, *([state.singleton] if state.singleton else [])]:
            needed = min(needed, run.origin)
        firsts = [min(ps[0] for ps in b.values() if ps) for _, _, b in state.found]
        firsts += [c.first for c in state.pending.waiting()]
        needed = max(stream.base, min(needed, *firsts)) if firsts else max(stream.base, needed)
        cut = stream[needed].t
        if self.nfa.negated and self.window is not None:
            cut -= self.window
        stream.drop_before(cut)
        if len(state.reads) > 2 * (stream.end - stream.base) + state.kept:
            state.reads = {p: n for p, n in state.reads.items() if p >= needed}

    def _ignores(self, run: Walk, key: Hashable | None, taken: bool) -> bool:
        nfa = self.nfa
        if nfa.ignore_always:
            return True
        if nfa.ignore_unless_taken:
            return not taken
        return nfa.ignore_other_keys and key != run.key

    def _too_many_runs(self, event: Event) -> LimitError:
        """More runs read `event` than the partition may hold partial matches."""
        where = f"at event {event.id!r} (ts {event.ts!r})"
        more = ["the backtrack algorithm follows every partial match apart (nfa merges them)"]
        option = "max_partial_matches_per_key"
        return LimitError(tripped(self.analysis, option, int(self.run_cap), where, more))

    def _found(self, state: BacktrackState, bound: tuple[str, ...], path: Trail) -> None:
        positions: dict[str, list[int]] = {name: [] for name in bound}
        last = path[1] if path is not None else -1
        number = state.completed.get(last, 0)
        if number >= self.match_cap:  # runs complete one at a time: stop the explosion here
            if self.options.on_limit != "drop":
                raise self.too_many_matches(state.stream[last])
            if number > self.match_cap:
                return  # one past the cap is kept: the engine cuts there, and counts it
        state.completed[last] = number + 1
        while path is not None:
            variable, position, path = path
            positions[variable].append(position)
        binding = {name: tuple(reversed(ps)) for name, ps in positions.items()}
        state.tiebreak += 1
        heapq.heappush(state.found, (last, state.tiebreak, binding))
        state.counters["completions"] += 1

    # -- reporting ------------------------------------------------------------------------

    def _release(self, state: BacktrackState, watermark: Watermark) -> list[Match]:
        """Hand the matches every run has read past to the finalizer, in completion order."""
        stream = state.stream
        runs = [*state.postponed, *([state.singleton] if state.singleton else [])]
        frontier = min((r.next for r in runs), default=stream.end)
        released: list[Candidate] = []
        while state.found and state.found[0][0] < frontier:
            last, _, binding = heapq.heappop(state.found)
            state.completed.pop(last, None)
            released.append(self.finalizer.candidate(binding, stream, self.partition_key))
        if released:
            self.finalizer.add(state.pending, released)
        # the earliest start of a match still to come (from a run) or held back (found);
        # at the end of the stream every run has read everything
        starts = [r.origin for r in runs] if watermark.t != math.inf else []
        starts += [min(p for ps in b.values() for p in ps) for _, _, b in state.found]
        unsettled = min(starts, default=math.inf)
        matches = self.finalizer.report(state, watermark, unsettled)
        if matches and self.finalizer.non_overlapping:
            self._end_overlapping(state)
        self._forget(state, watermark)
        return matches

    def _end_overlapping(self, state: BacktrackState) -> None:
        """With non-overlapping output, end the runs that began before a reported match
        ended: what they find can only overlap it (as `nfa` does)."""
        by_key = self.partition_key is not None
        ends = state.pending.last_end

        def after(run: Walk) -> bool:
            return run.origin > ends.get(run.key if by_key else None, -1)

        state.postponed = [run for run in state.postponed if after(run)]
        if state.singleton is not None and not after(state.singleton):
            state.singleton = None
