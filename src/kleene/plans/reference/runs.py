"""The NFA^b run semantics of SASE+ (section 3), one run at a time, nothing shared; with
what kleene adds for Flink CEP users (docs/semantics.md, section 5).

A run is where an automaton instance stands (its *residual*: what is left of the pattern),
what it has bound, which Kleene variables it has closed, its start time (and stream
position, for a count window), partition key and equivalence values. On each event a run
may:

- *take* the event into a variable it can bind next: a *direct* take binds at the state the
  run is in (a singleton's or Kleene's begin, a Kleene's take); a *proceed* take first leaves
  Kleene variables that have enough events (and optional ones that have none), closing them,
  and binds at a later state. A take is valid when the type fits, the windows hold, the
  partition key and equivalence values match the run's, no UNTIL condition of the variable
  holds for the event, proceeding leaves no GREEDY loop that could take the event, and every
  condition instance it makes decidable holds;
- *ignore* the event, as the strategy of the place the run waits at allows (the entry of a
  variable it may begin, the loop of a Kleene variable it holds events of;
  `kleene.compiler.per_edge`): never (strict contiguity); when the event is in another
  partition (partition contiguity); when no direct take of it there is valid (skip till next
  match, relaxed contiguity; an event the variable would take but for its UNTIL condition
  counts as valid); always (skip till any match). A run inside a loop never ignores an event
  of its partition that the loop's UNTIL condition holds for: the loop stops there (and is
  closed when another AND part takes the event);
- *leave* loops (and optional elements) without an event (`Arithmetic.exits`), where it
  lands at a place that follows relaxed contiguity or skip till any match (Flink's
  `followedBy` and `followedByAny`): a run that took an event goes on both where it stands
  and past every loop it may leave.

A GREEDY loop (Flink's `greedy()`) keeps every event it could take from a run proceeding
past it, and is left as any loop is. A run that left it without an event is *held*
(`ResidualRun.held`, the run as it stood at the loop): at the first event, and while it waits
at the element right after the loop if a match cannot skip that element (Flink's sink state,
whose edges the greedy condition guards), an event the loop's type and conditions accept
ends it; the first event frees it instead if the loop's UNTIL condition holds for it
(`arriving`). A run that skipped an event of its
partition inside the loop and proceeds past it (skip till next match) is held so too: the
loop keeps an event its UNTIL condition alone refuses (`move`). A match completes at a take
as it would without GREEDY (Flink's final state has no edge to guard).

Proceeding is Flink's: a run that ignored an event of its partition since its last take has
lost its proceed edges (Flink's loop and optional states go to an *ignore state* that has
none), so it proceeds past a loop or an optional element only into a variable whose edge
follows skip till next match (SASE+'s ignore-proceed nondeterminism); and having ignored an
event of another partition, it no longer proceeds into a strict edge. The events between a
loop's last event and the next element's first are thus ignored by the rule of the place
the run lands at, as Flink ignores them.

A run whose residual can finish after a take completes a match (closing what is still open,
whose conditions must then hold) and, if it can still take events, also goes on. Every event
also begins new runs. SEQ is concatenation, AND runs its parts side by side on distinct
events, OR commits to the branch of the first event it takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kleene.compiler.analysis import Analysis
from kleene.compiler.evaluate import Env, attribute, evaluate
from kleene.compiler.residuals import Arithmetic, Residual, Take, residual
from kleene.compiler.structure import successors
from kleene.events import Event
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.plans.common.arrivals import Stream
from kleene.plans.common.checks import Binding, Checks

__all__ = ["ResidualRun", "Runs"]

#: Where a run may land by leaving loops without an event: Flink's `followedBy` and
#: `followedByAny`, the places that ignore events by their own rule after a proceed.
_LANDINGS = frozenset({"relaxed_contiguity", "skip_till_any_match"})
#: The one edge a run proceeds into after ignoring events (SASE+'s proceed edge).
_PROCEED_AFTER_IGNORING = "skip_till_next_match"
#: What a run ignored since its last take: nothing, events of other partitions only, an
#: event of its own partition.
NOTHING, OTHERS, OWN = 0, 1, 2
#: How many residuals' takes a `Runs` remembers at most.
MEMO = 10_000


@dataclass(frozen=True, slots=True)
class ResidualRun:
    residual: Residual
    bound: Mapping[str, tuple[int, ...]]
    closed: frozenset[str]
    start: float
    key: Hashable | None
    values: tuple[Hashable, ...]
    #: The stream position (`Event.seq`) of the run's first event, for a count window.
    origin: int | None = None
    #: For a run that left GREEDY loops without an event, while they hold it (`arriving`):
    #: the run as it stood at them, and those of them that still hold it.
    held: tuple[ResidualRun, frozenset[str]] | None = None
    #: What the run ignored since its last take (`NOTHING`, `OTHERS`, `OWN`): a run that
    #: ignored an event keeps no proceed edge into a strict edge, one that ignored an event
    #: of its partition none but into a skip till next match edge.
    ignored: int = NOTHING

    @property
    def identity(self) -> tuple[Any, ...]:
        """What makes two runs the same run (their futures are the same)."""
        return (self.residual, tuple(sorted(self.bound.items())), self.closed)


class Runs:
    """Steps runs over events under the strategies of `analysis.strategies`."""

    def __init__(
        self,
        analysis: Analysis,
        structure: A.Element,
        checks: Checks,
        window: float | None,
        count: int | None = None,
        exclusive: bool = False,
    ) -> None:
        """`exclusive`: the window holds events less than `window` after a run's first."""
        self.shape = Arithmetic(analysis.variables)
        self.start = residual(structure)
        self.analysis = analysis
        self.variables = analysis.variables
        self.strategies = analysis.strategies
        self.checks = checks
        self.window = window
        self.exclusive = exclusive
        self.count = count
        self.partition = analysis.partition
        self.greedy = frozenset(v.name for v in analysis.positive if v.greedy)
        steady = frozenset(n for n, v in analysis.variables.items() if not v.empty_ok)
        #: Per GREEDY loop: the variables of the element right after it that a match cannot
        #: skip, where it holds a run that left it past the first event (Flink's optional
        #: sink ignores into a state of its own, which the greedy condition does not guard).
        self.sinks = {n: v & steady for n, v in successors(structure).items() if n in self.greedy}
        self.until = {v.name: v.until for v in analysis.positive if v.until is not None}
        #: The loops whose UNTIL condition reads the loop's earlier events or variables bound
        #: before it (evaluated over the run's events, not the event at hand alone).
        self.iterative = frozenset(v.name for v in analysis.positive if v.until_reads_earlier)
        self._takes: dict[Residual, tuple[Take, ...]] = {}
        #: May a run leave loops without an event anywhere?
        self.leaving = bool(self.strategies.used & _LANDINGS)

    def takes(self, r: Residual) -> tuple[Take, ...]:
        """`Arithmetic.takes` of a residual, remembered (a pure memo, emptied when it holds
        `MEMO` residuals: a long loop's counts are all distinct)."""
        found = self._takes.get(r)
        if found is None:
            if len(self._takes) >= MEMO:
                self._takes.clear()
            found = self._takes[r] = tuple(self.shape.takes(r))
        return found

    def key(self, event: Event) -> Hashable | None:
        return None if self.partition is None else self.partition.key(event)

    def step(
        self, runs: list[ResidualRun], event: Event, position: int, stream: Stream
    ) -> tuple[list[ResidualRun], list[Binding], list[ResidualRun]]:
        """Advance every run over the event and begin new ones; return the runs, the
        completions, and the runs the event's time closed the window of."""
        survivors: dict[Any, ResidualRun] = {}
        completed: list[Binding] = []
        expired: list[ResidualRun] = []
        for each in runs:
            if self.expired(each, event):
                expired.append(each)
                continue
            run = self.arriving(each, event, position, stream)
            if run is None:
                continue  # a GREEDY loop it left could take the event
            taken: set[str] = set()
            for take in self.takes(run.residual):
                moved = self.move(run, take, event, position, stream)
                if moved is None:
                    if take[2] and self.stopped_entry(run, take, event, position, stream):
                        taken.add(take[0])  # nor can the run ignore it there
                    continue
                if take[2]:
                    taken.add(take[0])
                self.keep(moved, survivors, completed, stream)
            if self.ignorable(run, event, taken, stream):
                self.file(self.ignoring(run, event), survivors)
        values = self.checks.equivalent([event])
        if values is not None:
            fresh = ResidualRun(
                self.start, {}, frozenset(), event.t, self.key(event), values, event.seq
            )
            for take in self.takes(self.start):
                moved = self.move(fresh, take, event, position, stream)
                if moved is not None:
                    self.keep(moved, survivors, completed, stream)
        if len(completed) > 1:
            # a loop's proceed take and a left run's begin reach the same binding, as do an
            # AND's parts closed in another order
            completed = list({tuple(sorted(b.items())): b for b in completed}.values())
        return list(survivors.values()), completed, expired

    def arriving(
        self, run: ResidualRun, event: Event, position: int, stream: Stream
    ) -> ResidualRun | None:
        """The run as the event finds it: None if a GREEDY loop that holds it could take
        the event (by its type and conditions, its UNTIL aside). At the first event of its
        partition a loop whose UNTIL condition holds for it lets go (Flink's proceed into
        an unguarded copy of the loop's sink); after it, the loops hold the run only while
        it waits at the element right after them."""
        if run.held is None or not self.same(run, event):
            return run
        stood, loops = run.held
        if run.ignored != OWN:
            loops = frozenset(loop for loop in loops if not self.stops(loop, stood, event, stream))
        if any(
            self.takes_into(stood, loop, event, position, stream, until=False) for loop in loops
        ):
            return None
        waiting = frozenset(name for name, _ in self.places(run))
        loops = frozenset(loop for loop in loops if waiting & self.sinks[loop])
        if loops == run.held[1]:
            return run
        return dataclasses.replace(run, held=(stood, loops) if loops else None)

    def complete(self, run: ResidualRun, stream: Stream) -> bool:
        """Has the run completed the match it stands for (it is one, as it is)?"""
        if not self.shape.nullable(run.residual):
            return False
        closing = self.shape.open_vars(run.residual)
        bound = self.closing(run.bound, closing)
        closed = run.closed | closing
        return self.checks.new_instances_hold((run.bound, run.closed), (bound, closed), stream)

    def same(self, run: ResidualRun, event: Event) -> bool:
        """Is the event of the run's partition and equivalence values?"""
        if self.partition is not None and self.key(event) != run.key:
            return False
        return not self.checks.equivalences or self.checks.equivalent([event]) == run.values

    def expired(self, run: ResidualRun, event: Event) -> bool:
        """Has the event left the run's windows (time, or count of stream positions)?"""
        if self.window is not None and event.t - run.start > self.window:
            return True
        count = self.count
        return (
            count is not None
            and run.origin is not None
            and event.seq is not None
            and event.seq - run.origin > count
        )

    def file(self, run: ResidualRun, survivors: dict[Any, ResidualRun]) -> None:
        """Keep a run for the next event (once: of two equal runs, one free of a GREEDY
        loop's hold, and then one that ignored less, can do all the other can)."""
        identity = run.identity
        kept = survivors.get(identity)
        if kept is None or (run.held is not None, run.ignored) < (
            kept.held is not None,
            kept.ignored,
        ):
            survivors[identity] = run

    # -- what a run waits for ------------------------------------------------------------

    def places(self, run: ResidualRun) -> Iterable[tuple[str, bool]]:
        """The variables the run may bind next where it stands, each with whether it is
        inside that variable's loop: its direct takes, or (a loop that holds all it can)
        the variables it must proceed to."""
        takes = [t for t in self.takes(run.residual) if not (t[2] and t[0] in run.closed)]
        direct = [t for t in takes if t[2]] or takes
        for name in dict.fromkeys(t[0] for t in direct):
            yield name, bool(run.bound.get(name)) and name not in run.closed

    def ignoring(self, run: ResidualRun, event: Event) -> ResidualRun:
        """The run after ignoring the event: without its proceed edges, if the event is of
        its partition."""
        ignored = max(run.ignored, OWN if self.key(event) == run.key else OTHERS)
        return run if ignored == run.ignored else dataclasses.replace(run, ignored=ignored)

    def strategy(self, name: str, in_loop: bool) -> str:
        return self.strategies.loop(name) if in_loop else self.strategies.entry(name)

    def ignorable(self, run: ResidualRun, event: Event, taken: set[str], stream: Stream) -> bool:
        """May the run skip the event, by the strategy of every place it waits at?"""
        for name, in_loop in self.places(run):
            if in_loop and self.stops(name, run, event, stream):
                return False
            strategy = self.strategy(name, in_loop)
            if strategy == "skip_till_any_match":
                continue
            if strategy in ("skip_till_next_match", "relaxed_contiguity"):
                if name in taken:
                    return False
            elif strategy == "partition_contiguity":
                if self.partition is None or self.key(event) == run.key:
                    return False
            else:
                return False
        return True

    def stops(self, name: str, run: ResidualRun, event: Event, stream: Stream) -> bool:
        """Does `name`'s UNTIL condition hold for the event, one of the run's partition (over
        the loop's events so far and the run's other variables, where it reads them)?"""
        condition = self.until.get(name)
        if condition is None:
            return False
        if self.partition is not None and self.key(event) != run.key:
            return False
        if self.checks.equivalences and self.checks.equivalent([event]) != run.values:
            return False
        functions = self.analysis.functions
        if name not in self.iterative:
            return evaluate(condition, Env({name: (event,)}, None, functions)) is True
        bound: dict[str, tuple[Event, ...]] = dict.fromkeys(self.variables, ())
        bound.update((n, tuple(stream[p] for p in ps)) for n, ps in run.bound.items())
        taken = bound[name]
        bound[name] = (*taken, event)
        return evaluate(condition, _AtHand(bound, len(taken) + 1, functions, name)) is True

    # -- taking --------------------------------------------------------------------------

    def move(
        self,
        run: ResidualRun,
        take: Take,
        event: Event,
        position: int,
        stream: Stream,
        until: bool = True,
    ) -> ResidualRun | None:
        """The run after taking the event as `take` says, or None if the take is not valid
        (`until=False`: were it not for the variable's UNTIL condition)."""
        name, after, direct, closes = take
        if direct and name in run.closed:
            return None  # an UNTIL stopped the loop (at an event another AND part took)
        if not direct and run.ignored and not self.proceeds(run, name, closes):
            return None  # the run lost its proceed edges by ignoring an event
        if not self.variables[name].takes(event.type) or self.expired(run, event):
            return None
        if self.partition is not None and self.key(event) != run.key:
            return None
        if run.values != self.checks.equivalent([event]):
            return None
        if until and name in self.until and self.stops(name, run, event, stream):
            return None
        if not direct and self.greedy & closes:
            # (after ignoring an event of its partition the run proceeds as one that left
            # the loop before: held, the loop's UNTIL no longer frees it)
            first = run.ignored != OWN
            for loop in self.greedy & closes - run.closed:
                if self.takes_into(run, loop, event, position, stream, until=first):
                    return None  # the GREEDY loop keeps the event
        bound = self.closing(run.bound, closes)
        bound[name] = (*bound.get(name, ()), position)
        closed = run.closed | closes | self.stopped(run, name, event, stream)
        if not self.checks.new_instances_hold((run.bound, run.closed), (bound, closed), stream):
            return None
        return ResidualRun(after, bound, closed, run.start, run.key, run.values, run.origin)

    def proceeds(self, run: ResidualRun, name: str, closes: frozenset[str]) -> bool:
        """May a run that ignored events since its last take proceed into `name`, closing
        `closes`?"""
        edge = self.strategies.entry(name)
        if edge == "strict_contiguity":
            return False
        return edge == _PROCEED_AFTER_IGNORING or run.ignored == OTHERS

    def stopped_entry(
        self, run: ResidualRun, take: Take, event: Event, position: int, stream: Stream
    ) -> bool:
        """Is `take` a variable's first event that its UNTIL condition alone refuses (Flink:
        a loop's entry neither takes nor ignores an event its condition accepts)?"""
        name = take[0]
        if name not in self.until or run.bound.get(name):
            return False
        if not self.stops(name, run, event, stream):
            return False
        return self.move(run, take, event, position, stream, until=False) is not None

    def stopped(self, run: ResidualRun, name: str, event: Event, stream: Stream) -> frozenset[str]:
        """The loops (of other AND parts) the run is inside that the event, taken into
        `name`, stops by their UNTIL condition: closed, they take no more."""
        if not self.until:
            return frozenset()
        return frozenset(
            loop
            for loop in self.until
            if loop != name
            and run.bound.get(loop)
            and loop not in run.closed
            and self.stops(loop, run, event, stream)
        )

    def closing(self, bound: Binding, names: frozenset[str]) -> dict[str, tuple[int, ...]]:
        """`bound` with the variables `names` closed: a Kleene variable that took nothing
        binds no events; an optional single one stays unbound (its conditions do not
        apply, as a variable of another OR branch)."""
        result = dict(bound)
        for name in names:
            if self.variables[name].kleene:
                result.setdefault(name, ())
        return result

    def takes_into(
        self,
        run: ResidualRun,
        name: str,
        event: Event,
        position: int,
        stream: Stream,
        until: bool = True,
    ) -> bool:
        """Could the run take the event into `name` (where it stands, or proceeding;
        `until=False`: were it not for UNTIL conditions)?"""
        return any(
            take[0] == name and self.move(run, take, event, position, stream, until)
            for take in self.takes(run.residual)
        )

    def keep(
        self,
        run: ResidualRun,
        survivors: dict[Any, ResidualRun],
        completed: list[Binding],
        stream: Stream,
    ) -> None:
        """File a run that just took an event: it may complete a match, and may go on."""
        if self.complete(run, stream):
            completed.append(self.closing(run.bound, self.shape.open_vars(run.residual)))
        if self.takes(run.residual):
            self.file(run, survivors)
        if self.leaving:
            self.leave(run, survivors, stream)

    def leave(self, run: ResidualRun, survivors: dict[Any, ResidualRun], stream: Stream) -> None:
        """File the runs `run` becomes by leaving loops without an event: those landing
        where relaxed contiguity or skip till any match lets a run wait, whose closing
        conditions hold and that can still take an event (held by the GREEDY loops they
        leave)."""
        for after, closes in self.shape.exits(run.residual):
            bound = self.closing(run.bound, closes)
            closed = run.closed | closes
            left = ResidualRun(after, bound, closed, run.start, run.key, run.values, run.origin)
            places = list(self.places(left))
            if not places:
                continue
            if not all(self.strategy(name, in_loop) in _LANDINGS for name, in_loop in places):
                continue
            if not self.checks.new_instances_hold((run.bound, run.closed), (bound, closed), stream):
                continue
            loops = self.greedy & closes - run.closed
            if loops:
                left = ResidualRun(
                    after, bound, closed, run.start, run.key, run.values, run.origin, (run, loops)
                )
            self.file(left, survivors)


@dataclass(frozen=True)
class _AtHand(Env):
    """The scope of an UNTIL condition that reads more than the event at hand: the run's
    events, the loop's with the event at hand last (`loop[i]`); the loop's name alone
    (`loop.x`) is the event at hand, as in every UNTIL condition."""

    loop: str = ""

    def attr(self, node: E.Attr) -> Any:
        if node.var == self.loop and node.index is None:
            return attribute(self.bindings[self.loop][-1], node.attr)
        return super().attr(node)
