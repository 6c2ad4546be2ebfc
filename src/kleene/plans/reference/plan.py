"""The `reference` plan: the meaning of a query, written as plainly as possible.

Skip-till-any-match is answered by definition (`bindings.py`): every binding that fits the
structure, the conditions and the window. The other strategies follow the NFA^b run semantics
of SASE+ (`runs.py`). Both hand complete bindings to `finalize.py`, which applies negation
and the output format and decides when a match is final. Brute force: meant for streams of a
few thousand events, and as the oracle every other plan is tested against.

>>> import kleene
>>> stream = [("A", 1), ("C", 2), ("B", 3), ("B", 4)]
>>> events = [{"type": t, "ts": ts} for t, ts in stream]
>>> for strategy in ("strict_contiguity", "skip_till_next_match", "skip_till_any_match"):
...     query = f"PATTERN SEQ(A a, B b) WHERE {strategy}"
...     print(strategy, [m.ids() for m in kleene.match(query, events, plan="reference")])
strict_contiguity []
skip_till_next_match [{'a': (0,), 'b': (2,)}]
skip_till_any_match [{'a': (0,), 'b': (2,)}, {'a': (0,), 'b': (3,)}]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kleene.compiler.analysis import EXTENSIONS, Analysis
from kleene.compiler.options import Options
from kleene.compiler.structure import positive
from kleene.errors import KleeneError
from kleene.events import Event, Watermark
from kleene.matches import Match, Timeout
from kleene.plans.base import Plan, register
from kleene.plans.common.arrivals import Stream
from kleene.plans.common.checks import Binding, Checks, as_events
from kleene.plans.common.finalize import Finalizer, Partition
from kleene.plans.reference.bindings import completed_at
from kleene.plans.reference.runs import ResidualRun, Runs

__all__ = ["Reference", "ReferenceState"]


@dataclass
class ReferenceState(Partition):
    """One partition's stream, undecided candidates and live runs."""

    runs: list[ResidualRun] = field(default_factory=list)
    #: Partial matches whose window closed, not reported yet (with timeouts=True).
    timeouts: list[Timeout] = field(default_factory=list)


@register
class Reference(Plan[ReferenceState]):
    """Brute force by the definition of a match; slow, obviously right; the oracle."""

    name = "reference"
    analysis: Analysis
    extensions = frozenset(EXTENSIONS)

    def __init__(
        self, analysis: Analysis, options: Options, *, any_match_by_runs: bool = False
    ) -> None:
        super().__init__(analysis, options)
        structure = positive(analysis.structure)
        assert structure is not None, "validation guarantees a positive event"
        self.structure = structure
        self.checks = Checks(analysis)
        self.finalizer = Finalizer(analysis, self.checks, self.window, options)
        #: Skip-till-any-match by definition (True) or by running NFA^b runs (False: a test
        #: aid, and the meaning of UNTIL and GREEDY loops, which runs state).
        self.declarative = (
            analysis.strategy == "skip_till_any_match"
            and not analysis.extensions & {"until", "greedy"}
            and not options.timeouts
            and not any_match_by_runs
        )
        #: The positive variables in pattern order (the order they are first declared in).
        self.order = tuple(v.name for v in analysis.positive)
        self.automaton = Runs(
            analysis,
            structure,
            self.checks,
            self.window,
            self.count_window,
            self.finalizer.exclusive,
        )

    def new_state(self) -> ReferenceState:
        return ReferenceState()

    def step(self, state: ReferenceState, event: Event) -> list[Match]:
        if self.count_window is not None and event.seq is None:
            raise KleeneError(
                "a count window (WITHIN n EVENTS) measures each event's position in the "
                "stream, which kleene.Engine gives it (Event.with_seq); this event has none"
            )
        if self.finalizer.freeze:
            self.finalizer.arrive(state, event)
        stream = state.stream
        position = stream.append(event)
        if self.declarative:
            bindings = completed_at(
                self.analysis,
                self.structure,
                self.checks,
                stream,
                position,
                self.window,
                self.match_cap,
                self.count_window,
                self.finalizer.exclusive,
            )
            if len(bindings) > self.match_cap and self.options.on_limit != "drop":
                raise self.too_many_matches(event)
        else:
            state.runs, bindings, expired = self.automaton.step(state.runs, event, position, stream)
            state.timeouts += self._timed_out(expired, stream)
        self.finalizer.add(
            state.pending,
            [
                self.finalizer.candidate(self._ordered(b), stream, self.partition_key)
                for b in bindings
            ],
        )
        return self._report(state, Watermark(event.t, inclusive=False))

    def _ordered(self, binding: Binding) -> Binding:
        """A binding with its variables in pattern order (AND and OR branches bind them in
        the order their events came)."""
        return {n: binding[n] for n in self.order if n in binding}

    def advance(self, state: ReferenceState, watermark: Watermark) -> list[Match]:
        window = self.window
        if window is not None:  # a run is over once every event its window holds is in
            expired = [r for r in state.runs if watermark.settles(r.start + window)]
            if expired:
                state.runs = [r for r in state.runs if not watermark.settles(r.start + window)]
                state.timeouts += self._timed_out(expired, state.stream)
        return self._report(state, watermark)

    def _discarded(self, run: ResidualRun, state: ReferenceState) -> bool:
        """Did a reported match discard the run (CONSUME BY), or rule out every match it can
        complete (AFTER MATCH SKIP, as Flink prunes its partial matches): does it hold an
        event from before its partition's floor?"""
        if self.analysis.consume:
            by_key = self.analysis.consume == "partition"
        else:
            by_key = self.partition_key is not None
        first = min(ps[0] for ps in run.bound.values() if ps)
        return first < state.pending.floors.get(run.key if by_key else None, 0)

    def _timed_out(self, runs: list[ResidualRun], stream: Stream) -> list[Timeout]:
        """The runs whose window closed, as timeouts: those that had not completed their
        match (and only when timeouts are asked for)."""
        if not self.options.timeouts or not runs:
            return []
        window = self.window
        assert window is not None, "unsupported: timeouts need a time window"
        found: dict[tuple[tuple[str, tuple[int, ...]], ...], Timeout] = {}
        for run in runs:
            if self.automaton.complete(run, stream):
                continue
            bound = {n: ps for n, ps in self._ordered(run.bound).items() if ps}
            identity = tuple(bound.items())
            if identity in found:
                continue  # a run left a loop or an optional element: one partial match
            last = max(stream[ps[-1]].t for ps in bound.values())
            found[identity] = Timeout(
                as_events(bound, stream),
                self.pattern_name,
                (run.start, last),
                deadline=run.start + window,
            )
        return list(found.values())

    def deadline(self, state: ReferenceState) -> float | None:
        starts = [run.start for run in state.runs] if self.options.timeouts else []
        return self.finalizer.deadline(state, starts)

    def idle(self, state: ReferenceState, watermark: Watermark) -> bool:
        if self.options.timeouts and (state.runs or state.timeouts):
            return False  # they time out at their deadline, which comes first
        return self.finalizer.idle(state, watermark)

    def _report(self, state: ReferenceState, watermark: Watermark) -> list[Match]:
        matches = self.finalizer.report(state, watermark)
        if state.runs and state.pending.floors:
            state.runs = [run for run in state.runs if not self._discarded(run, state)]
        if state.timeouts:
            matches += state.timeouts
            state.timeouts = []
        stream = state.stream
        if self.window is not None:
            stream.drop_before(watermark.t - 2 * self.window)
        elif self.count_window is not None and stream.events:
            # no time window: a run or match reaches back at most the count from the latest,
            # and a match waiting to be reported keeps its events
            latest = stream.events[-1].seq
            assert latest is not None, "step checks that events have positions"
            cut = stream.first_at_seq(latest - 2 * self.count_window)
            waiting = [c.first for c in state.pending.waiting()]
            stream.drop_to(min([cut, *waiting]))
        return matches
