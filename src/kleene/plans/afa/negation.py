"""Negation on the `afa` plan: SASE+'s nested-query semantics (docs/semantics.md, section 6)
over events that come in any order.

The AFA compiled from the query's positive part finds *candidates*; a candidate is a match
while no qualifying event of a negated variable lies where the negation stands: after the
latest event of the variables SEQ puts before it and before the earliest of those it puts
after it, in the order of the sorted stream, (timestamp, arrival); a side with no such event
reaches as far as the window: back to end - W, ahead to start + W. A qualifying event has
the negated type, is not one of the candidate's, shares its equivalence values and satisfies
the negation's conditions (compiled as the `nfa` plan compiles them,
`kleene.plans.nfa.negation`).

Events come in any order, so both sides may arrive late: a negated event that lands in the
scope of a reported match withdraws it (a `Retraction`), and deleting it (`retract`) gives
the match back. A candidate whose negation reaches ahead (the paper's negative pattern at
the end, Appendix E and Figure 18) is reported once a punctuation passes start + W, when no
event there can still come; every other one as soon as it is found, speculatively, like
every match of the plan. With sequence numbers (AFA+O) a candidate's own events and those
between them are all in when it is found; one whose negation reaches back also waits for a
punctuation past its first event, so that nothing is ever withdrawn.

>>> import kleene
>>> engine = kleene.Engine("PATTERN SEQ(A a, NOT(B b), C c) WITHIN 10", plan="afa")
>>> a, b, c = kleene.Event("A", 1, id=0), kleene.Event("B", 2, id=1), kleene.Event("C", 3, id=2)
>>> engine.send(a), engine.send(c)
([], [Match(a=[0], c=[2])])
>>> engine.send(b)   # late: it lies between a and c
[Retraction(a=[0], c=[2])]
>>> engine.retract(b)
[Match(a=[0], c=[2])]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sortedcontainers import SortedDict

from kleene.compiler.analysis import Analysis, Negated
from kleene.compiler.evaluate import attribute
from kleene.events import Event, Watermark
from kleene.matches import Match, Retraction
from kleene.plans.nfa.negation import Negative

__all__ = ["NegationState", "Negations"]

Key = tuple[float, float]
Report = Match | Retraction


@dataclass
class Scope:
    """Where one negation (of the variable `name`) stands for one candidate: the keys from
    `low` to `high` (both included), and how many qualifying events lie there now. `test`
    is its conditions' test of an event, made for the candidate when first needed (a
    function: it is not pickled with the state)."""

    name: str
    low: Key
    high: Key
    spoilers: int = 0
    test: Callable[[Event], bool] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "test": None}


@dataclass
class Candidate:
    """A match of the positive part, held until no event can change its verdict."""

    match: Match
    scopes: list[Scope]
    events: frozenset[int]  # ids of its events: they never spoil it
    values: tuple[tuple[str, Any], ...]  # its equivalence values
    #: The time a punctuation must pass before the negations reaching ahead are decided
    #: (None: none reaches ahead).
    settle: float | None
    #: The time after which nothing can change it: its events and its scopes are all in.
    final: float
    reported: bool = False

    @property
    def spoiled(self) -> bool:
        return any(scope.spoilers for scope in self.scopes)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)  # unpickled: its events are new objects
        self.events = frozenset(id(e) for es in self.match.bindings.values() for e in es)


@dataclass
class NegationState:
    """One partition's events of negated types, by key; the candidates not final yet, by
    identity; and the key of every recent event (a candidate's scope is bounded by them)."""

    negatives: SortedDict = field(default_factory=SortedDict)
    candidates: dict[Hashable, Candidate] = field(default_factory=dict)
    where: dict[int, tuple[Event, Key]] = field(default_factory=dict)
    #: How large `where` may grow before it is pruned (doubling: amortized O(1)).
    prune_at: int = 1024

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the maps keyed by object identity (an unpickled event is a new
        object): `__setstate__` keys them again."""
        return {
            "negatives": self.negatives,
            "candidates": list(self.candidates.values()),
            "where": list(self.where.values()),
            "prune_at": self.prune_at,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.negatives = state["negatives"]
        self.candidates = {_identity(c.match): c for c in state["candidates"]}
        self.where = {id(event): (event, key) for event, key in state["where"]}
        self.prune_at = state["prune_at"]


class Negations:
    """The negations of a query, checked against the candidates of its positive part."""

    def __init__(self, analysis: Analysis, window: float | None, sequenced: bool = False) -> None:
        self.negations = tuple(analysis.negations.values())
        #: AFA+O: a candidate waits for every event its negations look at, also before it.
        self.sequenced = sequenced
        self.compiled = {n.variable.name: Negative(analysis, n.variable.name) for n in self}
        self.equivalences = analysis.equivalences
        self.window = window

    def __iter__(self) -> Iterator[Negated]:
        return iter(self.negations)

    def takes(self, event: Event) -> bool:
        return any(n.variable.takes(event.type) for n in self)

    # -- the plan's steps, around the machine's ----------------------------------------------

    def insert(
        self, state: NegationState, event: Event, key: Key, outputs: list[Report]
    ) -> list[Report]:
        """After the machine took `event` (at `key`) and gave `outputs`: the outputs once the
        negations are applied."""
        state.where[id(event)] = (event, key)
        result: list[Report] = []
        if self.takes(event):
            state.negatives[key] = event
            for candidate in state.candidates.values():
                if self._count(candidate, event, key, 1) and candidate.reported:
                    candidate.reported = False
                    result.append(Retraction.of(candidate.match))
        self._apply(state, outputs, None, result)
        return result

    def delete(
        self, state: NegationState, event: Event, key: Key | None, outputs: list[Report]
    ) -> list[Report]:
        """After the machine deleted `event` (it stood at `key`) and gave `outputs`: the
        candidates it spoiled stand again, unless the machine withdrew them too."""
        freed: list[tuple[Hashable, Candidate]] = []
        if key is not None and state.negatives.pop(key, None) is not None:
            for identity, candidate in state.candidates.items():
                was = candidate.spoiled
                self._count(candidate, event, key, -1)
                if was and not candidate.spoiled and candidate.settle is None:
                    freed.append((identity, candidate))
        result: list[Report] = []
        self._apply(state, outputs, None, result)
        for identity, candidate in freed:
            if state.candidates.get(identity) is candidate:
                candidate.reported = True
                result.append(candidate.match)
        return result

    def punctuate(
        self, state: NegationState, watermark: Watermark, outputs: list[Report], horizon: float
    ) -> list[Report]:
        """After a punctuation: the machine's `outputs` (its timeouts), then the candidates
        the punctuation decides; it forgets what no later candidate can need (events before
        `horizon`, the earliest start a later candidate can have)."""
        result: list[Report] = []
        self._apply(state, outputs, watermark, result)
        for identity, candidate in list(state.candidates.items()):
            if candidate.settle is not None and watermark.settles(candidate.settle):
                candidate.settle = None
                if not candidate.spoiled:
                    candidate.reported = True
                    result.append(candidate.match)
            if watermark.settles(candidate.final):
                del state.candidates[identity]
        if self.window is not None:
            horizon = min(horizon, watermark.t - self.window)
        negatives = state.negatives
        while negatives and negatives.peekitem(0)[0][0] < horizon:
            negatives.popitem(0)
        if len(state.where) > state.prune_at:
            state.where = {i: held for i, held in state.where.items() if held[1][0] >= horizon}
            state.prune_at = max(1024, 2 * len(state.where))
        return result

    def deadline(self, state: NegationState) -> float | None:
        """The earliest time a punctuation decides a held candidate."""
        return min(
            (
                c.settle
                for c in state.candidates.values()
                if c.settle is not None and not c.reported
            ),
            default=None,
        )

    def idle(self, state: NegationState) -> bool:
        return not state.candidates and not state.negatives

    # -- candidates ---------------------------------------------------------------------

    def _apply(
        self,
        state: NegationState,
        outputs: list[Report],
        watermark: Watermark | None,
        result: list[Report],
    ) -> None:
        """The machine's outputs: a candidate found is held, and reported unless spoiled or
        waiting for time to pass; a candidate withdrawn is withdrawn if it was reported."""
        for output in outputs:
            identity = _identity(output)
            if isinstance(output, Retraction):
                gone = state.candidates.pop(identity, None)
                if gone is not None and gone.reported:
                    result.append(output)
                continue
            candidate = self._candidate(state, output)
            settle = candidate.settle
            if settle is not None and watermark is not None and watermark.settles(settle):
                candidate.settle = None
            if not candidate.spoiled and candidate.settle is None:
                candidate.reported = True
                result.append(output)
            state.candidates[identity] = candidate

    def _candidate(self, state: NegationState, match: Match) -> Candidate:
        bindings = match.bindings
        where = state.where
        events = [e for es in bindings.values() for e in es]
        ids = frozenset(map(id, events))
        values = tuple((name, attribute(events[0], name)) for name in self.equivalences)
        start, end = min(e.t for e in events), max(e.t for e in events)
        window = self.window
        scopes = []
        settle: float | None = None
        final = end
        for negation in self:
            if not negation.applies(bindings):
                continue
            before = [where[id(e)][1] for v in negation.before for e in bindings.get(v, ())]
            after = [where[id(e)][1] for v in negation.after for e in bindings.get(v, ())]
            if before:
                low = _just_after(max(before))
            else:
                assert window is not None, "validation requires WITHIN here"
                low = (end - window, -math.inf)
                if self.sequenced:  # AFA+O speculates on nothing: a gap behind may fill
                    settle = start if settle is None else max(settle, start)
            if after:
                high = _just_before(min(after))
            else:
                assert window is not None, "validation requires WITHIN here"
                high = (start + window, math.inf)
                settle = start + window if settle is None else max(settle, start + window)
                final = max(final, start + window)
            scopes.append(Scope(negation.variable.name, low, high))
        candidate = Candidate(match, scopes, ids, values, settle, final)
        negatives = state.negatives
        for scope in scopes:
            for key in negatives.irange(scope.low, scope.high):
                if self._qualifies(candidate, scope, negatives[key]):
                    scope.spoilers += 1
        return candidate

    def _count(self, candidate: Candidate, event: Event, key: Key, step: int) -> bool:
        """Count `event` (at `key`) in or out of the candidate's scopes it qualifies for;
        returns whether that spoils a candidate that was not spoiled."""
        was = candidate.spoiled
        for scope in candidate.scopes:
            if scope.low <= key <= scope.high and self._qualifies(candidate, scope, event):
                scope.spoilers += step
        return not was and candidate.spoiled

    def _qualifies(self, candidate: Candidate, scope: Scope, event: Event) -> bool:
        """Does `event` stand in for the negated variable of `scope` in `candidate`?"""
        negative = self.compiled[scope.name]
        if not negative.negation.variable.takes(event.type) or id(event) in candidate.events:
            return False
        if not all(v is not None and attribute(event, n) == v for n, v in candidate.values):
            return False
        if scope.test is None:
            scope.test = negative.test(candidate.match.bindings)
        return scope.test(event)


def _identity(match: Match) -> Hashable:
    return tuple((name, tuple(map(id, events))) for name, events in match.bindings.items())


def _just_after(key: Key) -> Key:
    return (key[0], math.nextafter(key[1], math.inf))


def _just_before(key: Key) -> Key:
    return (key[0], math.nextafter(key[1], -math.inf))
