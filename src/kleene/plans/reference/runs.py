"""The NFA^b run semantics of SASE+ (section 3), one run at a time, nothing shared.

A run is where an automaton instance stands (its *residual*: what is left of the pattern),
what it has bound, which Kleene variables it has closed, its start time, partition key and
equivalence values. On each event a run may:

- *take* the event into a variable it can bind next: a *direct* take binds at the state the
  run is in (a singleton's or Kleene's begin, a Kleene's take); a *proceed* take first leaves
  Kleene variables that have enough events (closing them) and binds at a later state. A take
  is valid when the type fits, the window holds, the partition key and equivalence values
  match the run's, and every condition instance it makes decidable holds;
- *ignore* the event, as the strategy allows: never (strict contiguity); when the event is
  in another partition (partition contiguity); when no direct take is valid (skip till next
  match, relaxed contiguity); always (skip till any match);
- under relaxed contiguity (Flink's `followedBy` and its loops), also *leave* Kleene
  variables that have enough events without an event (`Arithmetic.exits`): a run that took
  an event goes on both where it stands and past every loop it may leave, so it can skip
  the loop's remaining events.

A run whose residual can finish after a take completes a match (closing what is still open,
whose conditions must then hold) and, if it can still take events, also goes on. Every event
also begins new runs. SEQ is concatenation, AND runs its parts side by side on distinct
events, OR commits to the branch of the first event it takes.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from kleene.compiler.analysis import Analysis
from kleene.compiler.residuals import Arithmetic, Residual, Take, residual
from kleene.events import Event
from kleene.language import ast as A
from kleene.plans.common.checks import Binding, Checks
from kleene.plans.common.stream import Stream

__all__ = ["ResidualRun", "Runs"]


# ---- runs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResidualRun:
    residual: Residual
    bound: Mapping[str, tuple[int, ...]]
    closed: frozenset[str]
    start: float
    key: Hashable | None
    values: tuple[Hashable, ...]


class Runs:
    """Steps runs over events under a contiguity or skip-till-next-match strategy."""

    def __init__(
        self,
        analysis: Analysis,
        structure: A.Element,
        checks: Checks,
        window: float | None,
        strategy: str,
    ) -> None:
        self.shape = Arithmetic(analysis.variables)
        self.start = residual(structure)
        self.analysis = analysis
        self.checks = checks
        self.window = window
        self.strategy = strategy
        self.partition = analysis.partition

    def key(self, event: Event) -> Hashable | None:
        return None if self.partition is None else self.partition.key(event)

    def step(
        self, runs: list[ResidualRun], event: Event, position: int, stream: Stream
    ) -> tuple[list[ResidualRun], list[Binding]]:
        """Advance every run over the event and begin new ones; return runs and completions."""
        survivors: dict[Any, ResidualRun] = {}
        completed: list[Binding] = []
        relaxed = self.strategy == "relaxed_contiguity"
        for run in runs:
            if self.window is not None and event.t - run.start > self.window:
                continue
            direct_taken = False
            for take in self.shape.takes(run.residual):
                moved = self.move(run, take, event, position, stream)
                if moved is None:
                    continue
                direct_taken |= take[2]
                self.keep(moved, survivors, completed, stream)
            if self.ignorable(run, event, direct_taken):
                survivors.setdefault((run.residual, tuple(run.bound.items()), run.closed), run)
        values = self.checks.equivalent([event])
        if values is not None:
            fresh = ResidualRun(self.start, {}, frozenset(), event.t, self.key(event), values)
            for take in self.shape.takes(self.start):
                moved = self.move(fresh, take, event, position, stream)
                if moved is not None:
                    self.keep(moved, survivors, completed, stream)
        if relaxed and len(completed) > 1:
            # a loop's proceed take and its exit's begin reach the same binding
            completed = list({tuple(b.items()): b for b in completed}.values())
        return list(survivors.values()), completed

    def ignorable(self, run: ResidualRun, event: Event, direct_taken: bool) -> bool:
        strategy = self.strategy
        if strategy == "skip_till_any_match":
            return True
        if strategy in ("skip_till_next_match", "relaxed_contiguity"):
            return not direct_taken
        if strategy == "partition_contiguity":
            return self.partition is not None and self.key(event) != run.key
        return False

    def move(
        self, run: ResidualRun, take: Take, event: Event, position: int, stream: Stream
    ) -> ResidualRun | None:
        """The run after taking the event as `take` says, or None if the take is not valid."""
        name, after, _, closes = take
        if not self.analysis.variables[name].takes(event.type):
            return None
        if self.window is not None and event.t - run.start > self.window:
            return None
        if self.partition is not None and self.key(event) != run.key:
            return None
        if run.values != self.checks.equivalent([event]):
            return None
        bound = dict(run.bound)
        for closing in closes:
            bound.setdefault(closing, ())
        bound[name] = (*bound.get(name, ()), position)
        closed = run.closed | closes
        if not self.checks.new_instances_hold((run.bound, run.closed), (bound, closed), stream):
            return None
        return ResidualRun(after, bound, closed, run.start, run.key, run.values)

    def keep(
        self,
        run: ResidualRun,
        survivors: dict[Any, ResidualRun],
        completed: list[Binding],
        stream: Stream,
    ) -> None:
        """File a run that just took an event: it may complete a match, and may go on."""
        shape = self.shape
        if shape.nullable(run.residual):
            closing = shape.open_vars(run.residual)
            bound = dict(run.bound)
            for name in closing:
                bound.setdefault(name, ())
            closed = run.closed | closing
            if self.checks.new_instances_hold((run.bound, run.closed), (bound, closed), stream):
                completed.append(bound)
        if any(True for _ in shape.takes(run.residual)):
            survivors.setdefault((run.residual, tuple(run.bound.items()), run.closed), run)
        if self.strategy == "relaxed_contiguity":
            self.leave(run, survivors, stream)

    def leave(self, run: ResidualRun, survivors: dict[Any, ResidualRun], stream: Stream) -> None:
        """File the runs `run` becomes by leaving loops without an event (relaxed
        contiguity), those whose closing holds and that can still take an event."""
        for after, closes in self.shape.exits(run.residual):
            bound = dict(run.bound)
            for closing in closes:
                bound.setdefault(closing, ())
            closed = run.closed | closes
            if not any(True for _ in self.shape.takes(after)):
                continue
            if not self.checks.new_instances_hold((run.bound, run.closed), (bound, closed), stream):
                continue
            left = ResidualRun(after, bound, closed, run.start, run.key, run.values)
            survivors.setdefault((after, tuple(bound.items()), closed), left)
