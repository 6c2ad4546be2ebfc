"""Deciding conditions and equivalence tests on bindings of stream positions."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence

from kleene.compiler.analysis import Analysis, Condition
from kleene.compiler.codegen import Check, compile_condition
from kleene.compiler.evaluate import Env, evaluate, shared_values
from kleene.events import Event
from kleene.plans.common.arrivals import Stream

__all__ = ["Binding", "Checks", "as_events"]

Binding = Mapping[str, tuple[int, ...]]  # variable -> positions of its events
#: What binding a variable decides: the closed variables, the conditions, their tests.
_Decided = tuple[frozenset[str], tuple[Condition, ...], tuple[Check, ...]]


def as_events(binding: Binding, stream: Stream) -> dict[str, tuple[Event, ...]]:
    events, base = stream.events, stream.base
    return {name: tuple([events[p - base] for p in ps]) for name, ps in binding.items()}


class Checks:
    """The positive conditions of a pattern, checked instance by instance: by the
    interpreter (`reference`, whose semantics it is), or `compiled` to Python functions
    (`kleene.compiler.codegen`; the other plans, checked against `reference`)."""

    def __init__(self, analysis: Analysis, compiled: bool = False) -> None:
        self.analysis = analysis
        self.conditions = tuple(c for c in analysis.conditions if c.negated is None)
        self.equivalences = analysis.equivalences
        self.compiled: dict[int, Check] = {}
        if compiled:
            for condition in analysis.conditions:
                test = compile_condition(condition.expr, analysis.functions)
                self.compiled[id(condition)] = test
        #: A pure memo, by bound variables and the variable taken: what decides there.
        self._deciding: dict[tuple[tuple[str, ...], str], _Decided] = {}

    def holds(
        self,
        condition: Condition,
        events: Mapping[str, Sequence[Event]],
        instances: Sequence[int | None],
    ) -> bool:
        test = self.compiled.get(id(condition))
        if test is not None:
            return all(test(events, i) for i in instances)
        for i in instances:
            env = Env(events, i, self.analysis.functions)
            if evaluate(condition.expr, env) is not True:
                return False
        return True

    def new_instances_hold(
        self,
        before: tuple[Binding, frozenset[str]],
        after: tuple[Binding, frozenset[str]],
        stream: Stream,
        events: Mapping[str, Sequence[Event]] | None = None,
        skip: Collection[int] = (),
    ) -> bool:
        """Do the condition instances that `after` makes decidable, and `before` did not, hold?
        `events`: what `after` binds, when the caller has them; `skip`: the ids of conditions
        the caller has decided otherwise."""
        for condition in self.conditions:
            if skip and id(condition) in skip:
                continue
            new = condition.instances(*after)
            if not new:
                continue
            old = set(condition.instances(*before))
            fresh = [i for i in new if i not in old]
            if not fresh:
                continue
            if events is None:
                events = as_events(after[0], stream)
            if not self.holds(condition, events, fresh):
                return False
        return True

    def taking_holds(
        self, binding: Binding, name: str, events: Mapping[str, Sequence[Event]]
    ) -> bool:
        """`new_instances_hold` where `binding` has just bound `name` and every variable it
        binds is closed (`events`: the events it binds): only the conditions mentioning
        `name` can be newly decidable."""
        key = (tuple(binding), name)
        deciding = self._deciding.get(key)
        if deciding is None:
            deciding = self._deciding[key] = self._decided_by(frozenset(binding), name)
        closed, conditions, tests = deciding
        if not conditions:
            return True
        if tests:  # compiled, none over b[i]: one call each
            return all(test(events, None) for test in tests)
        for condition in conditions:
            if not self.holds(condition, events, condition.instances(binding, closed)):
                return False
        return True

    def _decided_by(self, names: frozenset[str], name: str) -> _Decided:
        """The conditions binding `name` decides once `names` are bound, and (compiled, when
        none is over b[i]) their tests."""
        conditions = tuple(
            c for c in self.conditions if name in c.variables and c.variables <= names
        )
        tests = tuple(self.compiled[id(c)] for c in conditions if id(c) in self.compiled)
        if len(tests) < len(conditions) or any(c.indexed is not None for c in conditions):
            tests = ()
        return names, conditions, tests

    def all_hold(self, binding: Binding, stream: Stream) -> bool:
        """Does a complete binding satisfy every condition and equivalence test?"""
        events = as_events(binding, stream)
        closed = frozenset(binding)
        for condition in self.conditions:
            instances = condition.instances(binding, closed)
            if instances and not self.holds(condition, events, instances):
                return False
        return self.equivalent([e for es in events.values() for e in es]) is not None

    def equivalent(self, events: Sequence[Event]) -> tuple[Hashable, ...] | None:
        """The shared values of the equivalence attributes, or None when the events differ."""
        return shared_values(events, self.equivalences)
