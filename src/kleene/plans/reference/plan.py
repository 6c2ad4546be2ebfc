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

from kleene.compiler.analysis import Analysis, positive
from kleene.compiler.options import Options
from kleene.events import Event, Watermark
from kleene.matches import Match
from kleene.plans.base import Plan, register
from kleene.plans.common.checks import Binding, Checks
from kleene.plans.common.finalize import Finalizer, Partition
from kleene.plans.reference.bindings import completed_at
from kleene.plans.reference.runs import ResidualRun, Runs

__all__ = ["Reference", "ReferenceState"]


@dataclass
class ReferenceState(Partition):
    """One partition's stream, undecided candidates and live runs."""

    runs: list[ResidualRun] = field(default_factory=list)


@register
class Reference(Plan[ReferenceState]):
    """Brute force by the definition of a match; slow, obviously right; the oracle."""

    name = "reference"

    def __init__(
        self, analysis: Analysis, options: Options, *, any_match_by_runs: bool = False
    ) -> None:
        super().__init__(analysis, options)
        structure = positive(analysis.structure)
        assert structure is not None, "validation guarantees a positive event"
        self.structure = structure
        self.checks = Checks(analysis)
        self.finalizer = Finalizer(analysis, self.checks, self.window, options)
        #: Skip-till-any-match by definition (False) or by running NFA^b runs (True, a test aid).
        self.declarative = analysis.strategy == "skip_till_any_match" and not any_match_by_runs
        #: The positive variables in pattern order (the order they are first declared in).
        self.order = tuple(v.name for v in analysis.positive)
        self.automaton = Runs(analysis, structure, self.checks, self.window, analysis.strategy)

    def new_state(self) -> ReferenceState:
        return ReferenceState()

    def step(self, state: ReferenceState, event: Event) -> list[Match]:
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
            )
            if len(bindings) > self.match_cap and self.options.on_limit != "drop":
                raise self.too_many_matches(event)
        else:
            state.runs, bindings = self.automaton.step(state.runs, event, position, stream)
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
        if self.window is not None:
            state.runs = [r for r in state.runs if watermark.t - r.start <= self.window]
        return self._report(state, watermark)

    def deadline(self, state: ReferenceState) -> float | None:
        return self.finalizer.deadline(state)

    def idle(self, state: ReferenceState, watermark: Watermark) -> bool:
        return self.finalizer.idle(state, watermark)

    def _report(self, state: ReferenceState, watermark: Watermark) -> list[Match]:
        matches = self.finalizer.report(state, watermark)
        if self.window is not None:
            state.stream.drop_before(watermark.t - 2 * self.window)
        return matches
