"""The `afa` plan: patterns run as AFAs over streams in any order (Chandramouli, Goldstein &
Maier, VLDB 2010).

A SASE+ query compiles to an AFA (`sase.py`); an AFA written directly (`kleene.afa`: the
Python builder or the text form) runs as it is, its own query (`AfaQuery`), and its arcs
may change while the stream runs (`kleene.afa.arcs`, `arcs.py`). Either way the plan's state is the
operator's index of events and partial matches (`machine.py`): events may come in any
timestamp order, `step` reports new matches and `Retraction`s of earlier ones, `advance` is
a punctuation (no later event is earlier) that cleans up state, and `retract` deletes an
event received before.

>>> import kleene
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 10", plan="afa")
>>> state = plan.new_state()
>>> a, b, c = kleene.Event("A", 1, id=0), kleene.Event("B", 5, id=1), kleene.Event("A", 3, id=2)
>>> plan.step(state, a), plan.step(state, b)
([], [Match(a=[0], b=[1])])
>>> plan.step(state, c)   # an A at 3 arrives late
[Match(a=[2], b=[1])]
>>> plan.retract(state, a)
[Retraction(a=[0], b=[1])]

The A at 3 lands inside the subsequence of the match a0 b1, whose computation ignores it
(skip-till-any-match's ignorable arc), so that match stands as it is (Appendix D): the only
change is the one new match.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

from kleene.compiler import pipeline
from kleene.compiler.analysis import Analysis
from kleene.compiler.options import Options
from kleene.compiler.query import Output, Partition, Query, match_fields
from kleene.errors import KleeneError
from kleene.events import Event, Watermark
from kleene.language.sase import ast as A
from kleene.matches import Match
from kleene.plans.afa.anchors import AnchoredMachine
from kleene.plans.afa.machine import AfaState, Machine, Report
from kleene.plans.afa.model import Afa, Arc, Lifetime
from kleene.plans.afa.negation import Negations, NegationState
from kleene.plans.afa.reader import read_arc
from kleene.plans.afa.sase import compile_sase, identity, unsupported
from kleene.plans.base import Plan, register

__all__ = ["AfaPlan", "AfaQuery", "ArcChanges"]


@dataclass(frozen=True)
class AfaQuery(Query):
    """An AFA written directly, as a query: its matches list the variables its arcs bind;
    its conditions are its own (it reads no attribute the runtime can check), and it never
    splits the stream."""

    language: ClassVar[str] = "afa"

    afa: Afa
    partition: Partition | None = None
    functions: Mapping[str, Callable[..., Any]] = field(repr=False, default_factory=dict)

    @property
    def tree(self) -> Afa:
        return self.afa

    def text(self) -> str:
        return self.afa.describe()

    def output(self, timeouts: bool = False, retractions: bool = False) -> Output:
        fields = match_fields(self.afa.variables, (), timeouts)
        return Output("matches", fields, timeouts, retractions)


@register
class AfaPlan(Plan[AfaState]):
    """A query or an AFA run by the AFA operator, events in any order."""

    name = "afa"
    languages: ClassVar[frozenset[str]] = frozenset({"sase", "afa"})
    ordered: ClassVar[bool] = False

    def __init__(self, analysis: Query, options: Options) -> None:
        super().__init__(analysis, options)
        #: The arc punctuation t_a (explicit arc lifetimes): no arc will be added or
        #: removed for a timestamp before it (`kleene.afa.arcs`).
        self.arc_floor = -math.inf
        if isinstance(analysis, Analysis):
            self.identity = identity(analysis)
            afa = compile_sase(analysis, self.window, options.name, self.identity)
            twins = A.contains_or(analysis.structure)
            machine = AnchoredMachine if options.anchors else Machine
            self.machine = machine(
                afa,
                options.name,
                report_register=False,
                twins=twins,
                merge=options.merge,
                fixed=True,
                sequence=options.sequence,
            )
            #: A query's negations, checked on the candidates its positive part's AFA finds.
            self.negations = (
                Negations(analysis, self.window, sequenced=options.sequence is not None)
                if analysis.negations
                else None
            )
        else:
            assert isinstance(analysis, AfaQuery), "an AFA plan runs a query or an AFA"
            afa = analysis.afa
            self.window = afa.window
            machine = AnchoredMachine if options.anchors else Machine
            self.machine = machine(afa, options.name or afa.name, sequence=options.sequence)
            self.negations = None
        self._afa = afa
        #: The arcs by name, as they change while the stream runs (`afa` is built from
        #: them when asked: `_current` says whether `_afa` holds them).
        self._arcs = {arc.name: arc for arc in afa.arcs}
        self._current = True
        self.direct = isinstance(analysis, AfaQuery)
        #: No punctuation before this ends or begins an arc's lifetime (`forget_arcs`).
        self._arc_horizon = -math.inf
        #: Changes for the events after a time, made while the events come in order: each
        #: time with the arc to add or the name of the one to remove, oldest first (made
        #: as the first later event is taken: `_deferred_until`).
        self._deferred: deque[tuple[float, Arc | str]] = deque()
        #: The arcs a deferred change removes.
        self._leaving: set[str] = set()
        #: The arcs as given, and the ARC line of each added as text (what a checkpoint
        #: names them by: `changes`).
        self._given = dict(self._arcs)
        self._lines: dict[str, str] = {}
        #: Has an arc been added or removed since the plan was made?
        self._changed = False

    @classmethod
    def of(cls, afa: Afa, options: Options | None = None) -> AfaPlan:
        """The plan of an AFA written directly."""
        return cls(AfaQuery(afa), options or Options.build(name=afa.name))

    @classmethod
    def unsupported(cls, analysis: Query, options: Options) -> str | None:
        if isinstance(analysis, AfaQuery):
            if options.output != "all" or options.selection != "all":
                return (
                    f"AFA {analysis.afa.name} reports all its matches: output and selection "
                    "other than 'all' are for queries"
                )
            if options.anchors and any(a.epsilon or a.deadline for a in analysis.afa.arcs):
                return "anchors=True is for AFAs without ε-arcs or timeout arcs"
            if options.timeouts:
                return (
                    "timeouts=True reports a query's timed-out partial matches; an AFA written "
                    "directly ends a pattern with an absence by a timeout arc"
                )
            return None
        assert isinstance(analysis, Analysis)
        return super().unsupported(analysis, options) or unsupported(analysis, options)

    @property
    def partition_key(self) -> Callable[[Event], Hashable | None] | None:
        """The base plan's key, read through the memo the arcs ask too."""
        if self.direct or super().partition_key is None:
            return None
        return self.identity.key_of

    @cached_property
    def fingerprint(self) -> str:
        if not self.direct:
            return super().fingerprint
        text = self.afa.describe() + repr(self.options)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def new_state(self) -> AfaState:
        return AfaState(negation=None if self.negations is None else NegationState())

    def step(self, state: AfaState, event: Event) -> list[Report]:
        """Insert an event, in any order: the new matches and the retractions it causes."""
        if self._deferred and event.t > self._deferred[0][0]:
            self._deferred_until(event.t)
        outputs = self.machine.insert(state, event)
        if self.negations is None:
            return outputs
        assert state.negation is not None, "new_state gives a query with negation one"
        return self.negations.insert(state.negation, event, state.key, outputs)

    def retract(self, state: AfaState, event: Event) -> list[Report] | None:
        """Delete an event received before: the retractions (and new matches) that causes,
        or None when the state holds no such event."""
        outputs = self.machine.delete(state, event)
        if outputs is None or self.negations is None:
            return outputs
        assert state.negation is not None, "new_state gives a query with negation one"
        return self.negations.delete(state.negation, event, state.key, outputs)

    def advance(self, state: AfaState, watermark: Watermark) -> list[Match]:
        """A punctuation: fire the timeout arcs it passes (their matches are returned),
        decide the candidates waiting on a negation, and clean up what no later event can
        need."""
        if self.machine.lifetimes and watermark.t >= self._arc_horizon:
            self.forget_arcs(watermark)
        outputs = self.machine.punctuate(state, watermark)
        if self.negations is None:
            return list(outputs)
        assert state.negation is not None, "new_state gives a query with negation one"
        # a later candidate starts at a pmatch held or at an event still to come (not before
        # the punctuation): the negated events before both can go
        horizon = watermark.t
        if self.window is None:
            horizon = min(horizon, self.machine.earliest(state))
        return list(self.negations.punctuate(state.negation, watermark, outputs, horizon))

    # -- dynamic patterns (section 2.3) ---------------------------------------------------

    def add_arc(
        self, arc: Arc | str, lifetime: Lifetime, final: bool = False, in_order: bool = False
    ) -> Arc:
        """Add an event arc (an `Arc`, or one ARC line of the text form over this AFA's
        register) for the events its lifetime holds; its target may be a new state, final
        with `final`. The state is not touched: `reevaluate` it where the lifetime reaches
        events already received. An arc between states the AFA has changes one row of the
        arctable (section 5.2: "other than updating arctable", nothing); with `in_order`
        (the events still to come arrive in timestamp order, none before the lifetime's
        start, which has no end), the row changes as the first event after the start is
        taken, and the arc fires unchecked from then on."""
        self._dynamic()
        machine, name = self.machine, self._afa.name
        line = arc if isinstance(arc, str) else None
        if isinstance(arc, str):
            arc = read_arc(arc, machine.afa, self.options.functions, self.options.time_unit)
        if arc.epsilon or arc.deadline is not None:
            raise KleeneError(
                f"arc {arc.name}: only event arcs can be added while the stream runs, not "
                "ε-arcs or timeout arcs"
            )
        if arc.name in self._arcs:
            raise KleeneError(f"AFA {name} already has an arc {arc.name}")
        if arc.source not in machine.index:
            raise KleeneError(
                f"arc {arc.name} leaves state {arc.source!r}, which AFA {name} does not "
                f"have (its states: {', '.join(machine.index)})"
            )
        if arc.target in machine.index:
            if final and not machine.final[machine.index[arc.target]]:
                raise KleeneError(
                    f"arc {arc.name}: final=True makes the new state it adds final, but "
                    f"{arc.target!r} is a state already, and not a final one"
                )
            if in_order:
                self._deferred.append((lifetime.start, arc))
            else:
                machine.put_arc(arc, lifetime)
            self._arcs[arc.name] = arc
            self._current = False
        else:  # a new state: the arctable is built again
            self._undefer()
            afa = self.afa
            finals = afa.finals | {arc.target} if final else afa.finals
            changed = replace(
                afa, states=(*afa.states, arc.target), arcs=(*afa.arcs, arc), finals=finals
            )
            machine.change(changed, {**machine.lifetimes, arc.name: lifetime})
            self._arcs[arc.name] = arc
            self._afa = changed
        if line is None:
            self._lines.pop(arc.name, None)
        else:
            self._lines[arc.name] = line
        self._changed = True
        self.__dict__.pop("fingerprint", None)
        self._arc_horizon = -math.inf
        return arc

    def end_arc(self, name: str, end: float, through: bool = False, in_order: bool = False) -> None:
        """End an arc's lifetime at `end` (included with `through`): the arc-event's
        retraction. With `in_order` (the events still to come arrive in timestamp order,
        none before `end`, which `through` includes), the arc leaves its row as the first
        event after `end` is taken."""
        self._dynamic()
        arc = self._arcs.get(name)
        if arc is None:
            known = ", ".join(self._arcs)
            raise KleeneError(f"AFA {self._afa.name} has no arc {name} (its arcs: {known})")
        if arc.epsilon or arc.deadline is not None:
            raise KleeneError(
                f"arc {name}: only event arcs can be removed while the stream runs, not "
                "ε-arcs or timeout arcs"
            )
        self._changed = True
        self.__dict__.pop("fingerprint", None)
        self._arc_horizon = -math.inf
        if in_order and through:
            if name not in self._leaving:  # (the first end stands)
                self._deferred.append((end, name))
                self._leaving.add(name)
            return
        self._undefer()  # (an arc still to be added gets its lifetime first)
        self._end_lifetime(name, end, through)

    def _end_lifetime(self, name: str, end: float, through: bool) -> None:
        """The arc's row entry again, its lifetime (all time, or the one it has) ending at
        `end`."""
        life = self.machine.lifetimes.get(name)
        # (`_make`: a pattern that changes every few events makes two at each change)
        if life is None:
            life = Lifetime._make((-math.inf, end, False, through))
        else:
            life = Lifetime._make((life.start, end, life.after, through))
        self.machine.put_arc(self._arcs[name], life)

    def reevaluate(self, state: AfaState, since: float) -> list[Report]:
        """Derive the state's pmatches again from the events at `since` on, after a change
        of arcs that reaches them: the retractions and new matches that gives."""
        return self.machine.reevaluate(state, since)

    def _deferred_until(self, t: float) -> None:
        """Make the deferred changes for the times before `t` (the time of the event taken
        next), in the order they were asked for, each row of the arctable they touch made
        once."""
        deferred, added, ended = self._deferred, [], []
        while deferred and deferred[0][0] < t:
            change = deferred.popleft()[1]
            if isinstance(change, Arc):
                added.append(change)
                continue
            self._leaving.discard(change)
            del self._arcs[change]
            self._lines.pop(change, None)
            self._current = False
            if any(arc.name == change for arc in added):  # added and removed: never placed
                added = [arc for arc in added if arc.name != change]
            else:
                ended.append(change)
        self.machine.settle_arcs(ended, (), added)

    def _undefer(self) -> None:
        """Give each deferred change the lifetime it stands for instead (before a change
        that cannot wait: its arc's row, or the whole arctable, is made now)."""
        machine = self.machine
        while self._deferred:
            at, change = self._deferred.popleft()
            if isinstance(change, Arc):
                machine.put_arc(change, Lifetime._make((at, math.inf, True, False)))
            else:
                self._end_lifetime(change, at, through=True)
        self._leaving.clear()

    def forget_arcs(self, watermark: Watermark) -> None:
        """Drop the arcs whose lifetime ended before the punctuation: no event they could
        fire for can come (the paper's arc-event cleanup); and in the default operation mode
        (no arc change reaches events received) let an arc whose lifetime started before
        it and has no end fire unchecked: every event to come is in it."""
        ended, begun = [], []
        default = self.options.arc_lifetimes != "explicit"
        horizon = math.inf  # the earliest punctuation that may end or begin one
        for name, life in self.machine.lifetimes.items():
            if watermark.settles(life.end) or (not life.through and watermark.t == life.end):
                ended.append(name)
            elif default and life.end == math.inf:
                if watermark.settles(life.start):
                    begun.append(name)
                else:
                    horizon = min(horizon, life.start)
            else:
                horizon = min(horizon, life.end)
        self._arc_horizon = horizon
        if ended or begun:
            self.machine.settle_arcs(ended, begun)
        if ended:
            for name in ended:
                del self._arcs[name]
                self._lines.pop(name, None)
            self._current = False
            self.__dict__.pop("fingerprint", None)

    @property
    def _as_given(self) -> bool:
        """Are the arcs as the AFA gave them (none added or removed, no arc punctuation)?"""
        return not self._changed and self.arc_floor == -math.inf

    def own(self) -> AfaPlan:
        """A copy for each engine of an AFA written directly: `kleene.afa.arcs(engine)`
        changes that engine's arcs alone."""
        if not self.direct:
            return self
        if self._as_given:
            return AfaPlan(self.analysis, self.options)  # (a fifth of what a copy costs)
        options = self.options  # (what never changes is shared: the query and its options)
        shared = (self.analysis, options, options.functions, options.frequencies)
        return copy.deepcopy(self, {id(part): part for part in shared})

    def changes(self) -> ArcChanges | None:
        """The arcs as the stream changed them, with the changes still waiting and the
        lifetimes in force (None: as given), for a checkpoint. An arc added as text is
        kept as its ARC line; one added as a Python `Arc` cannot be, and is an error."""
        if self._as_given:
            return None
        named: list[tuple[str, str]] = []
        for name, arc in self._arcs.items():
            if self._given.get(name) is arc:
                named.append(("given", name))
            elif name in self._lines:
                named.append(("text", self._lines[name]))
            else:
                raise KleeneError(
                    f"arc {name} was added as a Python Arc, which a checkpoint cannot hold: "
                    "add it as an ARC line of the text form to checkpoint the engine"
                )
        deferred = tuple(
            (at, "add", change.name) if isinstance(change, Arc) else (at, "remove", change)
            for at, change in self._deferred
        )
        afa = self._afa
        return ArcChanges(
            afa.states,
            afa.finals,
            tuple(named),
            dict(self.machine.lifetimes),
            deferred,
            frozenset(self._leaving),
            self.arc_floor,
            self._arc_horizon,
        )

    def take_changes(self, changes: ArcChanges | None) -> None:
        """Run the arcs as `changes` (from `changes` of a plan of the same AFA) has them,
        before any event: the plan goes on as the one that saved them would."""
        if not self._as_given:
            raise KleeneError("resume the checkpoint before changing the arcs")
        if changes is None:
            return
        self._changed = True
        arcs: dict[str, Arc] = {}
        for kind, value in changes.arcs:
            arc = (
                self._given[value]
                if kind == "given"
                else read_arc(value, self._afa, self.options.functions, self.options.time_unit)
            )
            arcs[arc.name] = arc
            if kind == "text":
                self._lines[arc.name] = value
        waiting = {name for _, kind, name in changes.deferred if kind == "add"}
        afa = replace(
            self._afa, states=changes.states, finals=changes.finals, arcs=tuple(arcs.values())
        )
        placed = tuple(arc for arc in afa.arcs if arc.name not in waiting)
        self.machine.change(replace(afa, arcs=placed), dict(changes.lifetimes))
        self._afa, self._arcs, self._current = afa, arcs, True
        self._deferred = deque(
            (at, arcs[name] if kind == "add" else name) for at, kind, name in changes.deferred
        )
        self._leaving = set(changes.leaving)
        self.arc_floor, self._arc_horizon = changes.arc_floor, changes.horizon
        self.__dict__.pop("fingerprint", None)

    def _dynamic(self) -> None:
        if not self.direct:
            raise KleeneError(
                "arcs change while the stream runs only on an AFA written directly "
                "(kleene.afa.read_afa or kleene.afa.Builder), not on a compiled query"
            )
        if self.options.anchors:
            raise KleeneError(
                "arcs change while the stream runs on the basic operator, not with "
                "anchors=True (its anchors stand for pmatches a change would derive again)"
            )

    @property
    def afa(self) -> Afa:
        """The AFA the plan runs now (with the arcs added and less those forgotten)."""
        if not self._current:
            self._afa = replace(self._afa, arcs=tuple(self._arcs.values()))
            self._current = True
        return self._afa

    def settled(self, watermark: Watermark) -> Watermark:
        """With explicit arc lifetimes, the earlier of the events' punctuation and the
        arcs' (section 5.4): an arc may still change for times before the latter."""
        if self.options.arc_lifetimes != "explicit":
            return watermark
        arcs = Watermark(self.arc_floor, inclusive=False)
        if arcs.t < watermark.t or (arcs.t == watermark.t and watermark.inclusive):
            return arcs
        return watermark

    @property
    def timed(self) -> bool:
        """Can a state have a deadline (timeout arcs, or negations that wait for time)?"""
        return self.machine.waits or self.negations is not None

    def deadline(self, state: AfaState) -> float | None:
        deadline = self.machine.deadline(state)
        if self.negations is None or state.negation is None:
            return deadline
        deciding = self.negations.deadline(state.negation)
        if deadline is None or deciding is None:
            return deciding if deadline is None else deadline
        return min(deadline, deciding)

    def idle(self, state: AfaState, watermark: Watermark) -> bool:
        negations = self.negations
        if negations is not None and state.negation is not None:
            return negations.idle(state.negation) and self.machine.idle(state, watermark)
        return self.machine.idle(state, watermark)

    def live_runs(self, state: AfaState) -> int:
        return state.live

    def counters(self, state: AfaState) -> dict[str, int]:
        return dict(state.counters)

    def describe(self) -> str:
        return self.afa.describe()

    def dot(self) -> str:
        return self.afa.dot()


@dataclass(frozen=True)
class ArcChanges:
    """What the stream changed in a plan's AFA (`AfaPlan.changes`): its states and final
    states, its arcs in order (("given", name) for an arc of the AFA as given, ("text",
    line) for one added as text), the lifetimes in force, the changes still waiting for
    the first later event ((time, "add" or "remove", arc name)), the arcs they remove, and
    the arc punctuation and horizon."""

    states: tuple[str, ...]
    finals: frozenset[str]
    arcs: tuple[tuple[str, str], ...]
    lifetimes: dict[str, Lifetime]
    deferred: tuple[tuple[float, str, str], ...]
    leaving: frozenset[str]
    arc_floor: float
    horizon: float


def _written(afa: Afa) -> None:
    """An AFA written directly is checked as it is built or read."""


pipeline.register_language(
    pipeline.Language(
        "afa",
        None,
        Afa,
        read=lambda text: text,
        validate=_written,
        analyse=lambda afa, functions, validated: AfaQuery(afa),
    )
)
