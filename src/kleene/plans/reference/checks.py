"""Deciding conditions and equivalence tests on bindings of stream positions."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from kleene.compiler.analysis import Analysis, Condition
from kleene.compiler.evaluate import Env, evaluate, shared_values
from kleene.events import Event
from kleene.plans.reference.stream import Stream

__all__ = ["Binding", "Checks", "as_events"]

Binding = Mapping[str, tuple[int, ...]]  # variable -> positions of its events


def as_events(binding: Binding, stream: Stream) -> dict[str, tuple[Event, ...]]:
    events, base = stream.events, stream.base
    return {name: tuple([events[p - base] for p in ps]) for name, ps in binding.items()}


class Checks:
    """The positive conditions of a pattern, checked instance by instance."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.conditions = tuple(c for c in analysis.conditions if c.negated is None)
        self.equivalences = analysis.equivalences

    def holds(
        self,
        condition: Condition,
        events: Mapping[str, Sequence[Event]],
        instances: Sequence[int | None],
    ) -> bool:
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
    ) -> bool:
        """Do the condition instances that `after` makes decidable, and `before` did not, hold?"""
        events: dict[str, tuple[Event, ...]] | None = None
        for condition in self.conditions:
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
