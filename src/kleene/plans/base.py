"""The plan protocol and the registry that finds plans by name.

A plan is compiled once from a pattern and is immutable; everything that changes while events
flow lives in a separate, picklable *state* (one per partition key):

    state = plan.new_state()
    matches = plan.step(state, event)        # an event arrives
    matches = plan.advance(state, watermark) # time moves on without an event
    plan.deadline(state)                     # the time at which the state next needs advance

Events reach `step` in arrival order with non-decreasing timestamps; `kleene.runtime` checks
that, partitions by `plan.partition_key`, and keeps one state per key.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, TypeVar

from kleene.compiler.analysis import Analysis
from kleene.compiler.options import Options
from kleene.errors import PlanError
from kleene.events import Event, Watermark
from kleene.matches import Match

__all__ = ["PLANS", "Plan", "choose", "plan_class", "register"]


class Plan(ABC):
    """A compiled pattern: immutable; its run-time state is made by `new_state`."""

    name: ClassVar[str]

    def __init__(self, analysis: Analysis, options: Options) -> None:
        reason = self.unsupported(analysis, options)
        if reason is not None:
            raise PlanError(f"plan {self.name!r} cannot run this pattern: {reason}")
        self.analysis = analysis
        self.options = options
        within = analysis.pattern.within
        #: The window in timestamp units (None: no WITHIN).
        self.window: float | None = (
            None if within is None else options.window_length(within.amount, within.unit)
        )

    @classmethod
    def unsupported(cls, analysis: Analysis, options: Options) -> str | None:
        """Why this plan cannot run the pattern, or None when it can."""
        if not options.construct:
            return "it always builds its matches (construct=False is for the nfa plan)"
        return None

    @property
    def pattern_name(self) -> str:
        return self.options.name

    @property
    def partition_key(self) -> Callable[[Event], Hashable | None] | None:
        """How the runtime may split the stream into independent partitions (None: it may not).

        Strict contiguity treats the stream as one partition, so it never splits.
        """
        partition = self.analysis.partition
        if partition is None or self.analysis.strategy == "strict_contiguity":
            return None
        return partition.key

    @abstractmethod
    def new_state(self) -> Any:
        """A fresh state for one partition."""

    @abstractmethod
    def step(self, state: Any, event: Event) -> list[Match]:
        """Feed one event; return the matches it makes final."""

    @abstractmethod
    def advance(self, state: Any, watermark: Watermark) -> list[Match]:
        """Time has reached `watermark`; return the matches that makes final."""

    def matches_from(self, events: Sequence[Event]) -> list[Match]:
        """The matches over `events` (one partition's, in order, then the stream's end) that
        start at the first: A(P, W) of the match-window plan. By default every match, then
        the ones holding that event; a plan that can begin runs only there does so."""
        state = self.new_state()
        found: list[Match] = []
        for event in events:
            found += self.step(state, event)
        found += self.advance(state, Watermark(math.inf))
        first = events[0]
        return [m for m in found if any(e is first for es in m.bindings.values() for e in es)]

    def deadline(self, state: Any) -> float | None:
        """The timestamp after which `advance` would make matches final (None: no need)."""
        return None

    def describe(self) -> str | None:
        """What the plan compiled the pattern into, as text (None: nothing beyond the
        analysis)."""
        return None

    def dot(self) -> str | None:
        """The plan's automaton in Graphviz DOT (None: it has none)."""
        return None

    def live_runs(self, state: Any) -> int:
        """How many partial matches the state holds now (0 for plans without runs)."""
        return 0

    def idle(self, state: Any, watermark: Watermark) -> bool:
        """Does the state hold nothing a later event of its partition could need, now that
        time has reached `watermark`? The engine then drops it, to start a new one if the
        key comes back; this is what keeps memory bounded when keys keep changing (one
        per RFID tag, per session). Default: never."""
        return False

    def counters(self, state: Any) -> dict[str, int]:
        """The plan's own work counters for this state, cumulative."""
        return {}


PLANS: dict[str, type[Plan]] = {}
P = TypeVar("P", bound=type[Plan])


def register(cls: P) -> P:
    """Class decorator: make a plan available by its `name`."""
    PLANS[cls.name] = cls
    return cls


def plan_class(name: str) -> type[Plan]:
    """The plan registered under `name`."""
    try:
        return PLANS[name]
    except KeyError:
        known = ", ".join(["auto", *sorted(PLANS)])
        raise PlanError(f"unknown plan {name!r}; the plans are: {known}") from None


#: The order `auto` tries plans in: fastest first; `reference` runs everything.
PREFERENCE: tuple[str, ...] = ("nfa", "reference")


def choose(analysis: Analysis, options: Options) -> type[Plan]:
    """The plan `auto` picks: the first of `PREFERENCE` that runs the pattern."""
    for name in PREFERENCE:
        cls = PLANS.get(name)
        if cls is not None and cls.unsupported(analysis, options) is None:
            return cls
    raise PlanError("no plan can run this pattern")  # pragma: no cover - reference runs all
