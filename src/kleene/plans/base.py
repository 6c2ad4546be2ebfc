"""The plan protocol, and the registry that finds plans by name (`compile`, `candidates`).

A plan is compiled once from a pattern and is immutable; everything that changes while events
flow lives in a separate *state* (one per partition key), of the plan's state type S:

    state = plan.new_state()
    matches = plan.step(state, event)        # an event arrives
    matches = plan.advance(state, watermark) # time moves on without an event
    plan.deadline(state)                     # the time at which the state next needs advance
    data = plan.dump_state(state)            # bytes, for a checkpoint
    state = plan.load_state(data)            # ... and back, by the same compiled query

Events reach `step` in arrival order with non-decreasing timestamps; `kleene.runtime` checks
that, partitions by `plan.partition_key`, and keeps one state per key.

A state holds data only: events, positions, values, indexes into the plan's automaton (as
Flink's `ComputationState` holds a state's name), never a function or a plan object. So it
pickles, and a resumed state gives the matches the uninterrupted one would. Any memo a plan
keeps on itself is pure (the same answer for the same question, whatever the state).

>>> import kleene
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10")
>>> state = plan.new_state()
>>> plan.step(state, kleene.Event("A", 1, {"x": 1}, 0))
[]
>>> resumed = plan.load_state(plan.dump_state(state))
>>> plan.step(resumed, kleene.Event("B", 2, {"x": 2}, 1))
[Match(a=[0], b=[1])]
>>> other = kleene.compile("PATTERN SEQ(A a, B b) WHERE a.x > b.x WITHIN 10")
>>> other.load_state(plan.dump_state(state))
Traceback (most recent call last):
...
kleene.errors.StateError: this state was saved by another query or other options ...
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import fields
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from kleene.compiler.analysis import EXTENSIONS, Analysis, analyze
from kleene.compiler.growth import tripped
from kleene.compiler.options import Options
from kleene.compiler.validate import parse
from kleene.errors import KleeneError, LimitError, PlanError, StateError
from kleene.events import Event, Watermark
from kleene.language.lead.ast import Rule
from kleene.language.lead.reader import is_rule, read_rule
from kleene.language.sase.ast import Pattern
from kleene.language.sase.printer import to_text
from kleene.matches import Match

__all__ = [
    "LIMITS",
    "PLANS",
    "STATE_FORMAT",
    "Plan",
    "begin_at_first",
    "candidates",
    "compile",
    "instantiate",
    "plan_class",
    "register",
]

#: The layout of saved state. Raise it whenever a plan's state classes change shape: a
#: checkpoint written by another format is refused with a StateError, never misread.
STATE_FORMAT = 2
_MAGIC = b"kleene-state\n"

#: What a plan may declare it does not do (`Plan.limits`); the conformance suite
#: (`kleene.testing.conformance`) skips only those checks for it.
LIMITS = frozenset(
    {
        # reports a match only after the event that completes it (later than `reference`)
        "prompt_emission",
    }
)

S = TypeVar("S")


class Plan(ABC, Generic[S]):
    """A compiled pattern: immutable; its run-time state (of type S) is made by
    `new_state`."""

    name: ClassVar[str]
    #: The parts of the plan contract this plan does not meet, from `LIMITS`.
    limits: ClassVar[frozenset[str]] = frozenset()
    #: Do `step` and `advance` return emitted `Event`s (a LEAD rule's actions) rather than
    #: `Match`es? (`petri`)
    emits_events: ClassVar[bool] = False
    #: Must events reach `step` in timestamp order? A plan that says False (`afa`) takes
    #: them in any order, and its outputs may include `Retraction`s of earlier matches.
    ordered: ClassVar[bool] = True
    #: What the plan runs of what kleene adds to SASE+ (`kleene.compiler.analysis.
    #: EXTENSIONS`); it refuses a pattern using any other.
    extensions: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, analysis: Analysis, options: Options) -> None:
        reason = self.refusal(analysis, options)
        if reason is not None:
            raise PlanError(f"plan {self.name!r} cannot run this pattern: {reason}")
        self.analysis = analysis
        self.options = options
        within = analysis.pattern.within
        #: The window in timestamp units (None: no WITHIN, or a count window alone).
        self.window: float | None = (
            None
            if within is None or within.amount is None
            else options.window_length(within.amount, within.unit)
        )
        #: The count window: how many positions a match's last event may lie after its
        #: first in the stream (None: none).
        self.count_window: int | None = None if within is None else within.events
        #: WITHIN ... EXCLUSIVE: last - first < window (else <=).
        self.exclusive = within is not None and within.exclusive
        #: The guard on the matches one event completes (inf: none); a plan that builds
        #: them checks it as it goes, so an explosion stops before it is built.
        self.match_cap: float = (
            math.inf if options.max_matches_per_event is None else options.max_matches_per_event
        )

    def too_many_matches(self, event: Event) -> LimitError:
        """The error of an event that completes more than `match_cap` matches."""
        where = f"at event {event.id!r} (ts {event.ts!r})"
        limit = int(self.match_cap)
        return LimitError(tripped(self.analysis, "max_matches_per_event", limit, where))

    @classmethod
    def refusal(cls, analysis: Analysis, options: Options) -> str | None:
        """Why this plan cannot run the pattern: what the contract rules out, then the
        plan's own `unsupported`."""
        if options.sequence is not None and cls.ordered:
            return "sequence numbers (AFA+O) are for plan='afa', which takes events in any order"
        if analysis.skips and (options.output != "all" or options.selection != "all"):
            return (
                "AFTER MATCH SKIP chooses among all matches; it does not combine with "
                "output='non_overlapping' or a selection"
            )
        wanted = analysis.extensions | ({"timeouts"} if options.timeouts else set())
        missing = sorted(wanted - cls.extensions)
        if missing:
            words = ", ".join(EXTENSIONS[name] for name in missing)
            return f"it does not run {words} (plan 'reference' does)"
        return cls.unsupported(analysis, options)

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

        Strict contiguity treats the stream as one partition, so a query where some run
        follows it never splits.
        """
        partition = self.analysis.partition
        if partition is None or "strict_contiguity" in self.analysis.strategies.used:
            return None
        return partition.keyer

    @abstractmethod
    def new_state(self) -> S:
        """A fresh state for one partition."""

    @abstractmethod
    def step(self, state: S, event: Event) -> list[Match]:
        """Feed one event; return the matches it makes final."""

    def step_lazily(self, state: S, event: Event) -> Iterable[Match]:
        """`step`, with the matches made as they are read: the state moves on now, as
        `step` moves it, and the iterable makes what `step` returns, in the order the plan
        makes them (not sorted), from what the state held. Read it to its end, or close
        it, before the state is used again. A plan whose one event may complete very many
        matches (any subset of a Kleene variable's events) makes them one at a time here,
        so they are never all held at once, and stops at `match_cap` as `step` does (see
        `capped`). By default: `step`'s list."""
        return self.step(state, event)

    def capped(
        self, made: Iterable[Match], event: Event, counted: Callable[[int, bool], None]
    ) -> Iterator[Match]:
        """The matches `made` for `event`, at most `match_cap`: one more is a `LimitError`,
        or under on_limit="drop" the rest are not made. `counted(number, cut)` hears how
        many came out and whether the guard cut them, once the matches are read or closed.

        >>> import kleene
        >>> plan = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 9", max_matches_per_event=2,
        ...                       on_limit="drop")
        >>> event = kleene.Event("B", 1, {}, 0)
        >>> heard = []
        >>> len(list(plan.capped(iter(range(5)), event, lambda *told: heard.append(told))))
        2
        >>> heard
        [(2, True)]
        """
        number, cut = 0, False
        cap, drop = self.match_cap, self.options.on_limit == "drop"
        try:
            for found in made:
                if number >= cap:
                    if not drop:
                        raise self.too_many_matches(event)
                    cut = True
                    break
                number += 1
                yield found
        finally:
            counted(number, cut)

    @abstractmethod
    def advance(self, state: S, watermark: Watermark) -> list[Match]:
        """Time has reached `watermark`; return the matches that makes final."""

    def retract(self, state: S, event: Event) -> list[Match] | None:
        """Withdraw an event sent before: the retractions (and new matches) that makes, or
        None when the state holds no such event. Only a plan that is not `ordered` takes
        retractions."""
        raise KleeneError(f"plan {self.name!r} takes no retractions; plan='afa' does")

    @cached_property
    def fingerprint(self) -> str:
        """What a saved state must have been made by: the query as printed and every option
        (functions by name), hashed."""
        settings = {
            f.name: sorted(value) if f.name == "functions" else repr(value)
            for f in fields(self.options)
            for value in [getattr(self.options, f.name)]
        }
        text = json.dumps([to_text(self.analysis.pattern), settings], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def dump_state(self, state: S) -> bytes:
        """The state as bytes, for a checkpoint: a header line (state format, plan,
        query fingerprint) and the pickled state."""
        header = {"format": STATE_FORMAT, "plan": self.name, "query": self.fingerprint}
        line = json.dumps(header, sort_keys=True).encode() + b"\n"
        return _MAGIC + line + pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def load_state(self, data: bytes) -> S:
        """A state saved by `dump_state` of this plan, query and options. The header is
        checked before anything is unpickled; a checkpoint is trusted data, as Spark's
        own are (unpickling runs code)."""
        if not data.startswith(_MAGIC):
            raise StateError("these bytes are not a kleene plan state")
        line, _, payload = data[len(_MAGIC) :].partition(b"\n")
        try:
            header = json.loads(line)
        except ValueError:
            raise StateError("the header of this kleene plan state is damaged") from None
        if header.get("format") != STATE_FORMAT:
            raise StateError(
                f"this state was saved in state format {header.get('format')!r}; this kleene "
                f"reads format {STATE_FORMAT}: start from a fresh checkpoint"
            )
        if header.get("plan") != self.name:
            raise StateError(
                f"this state was saved by plan {header.get('plan')!r}, not {self.name!r}"
            )
        if header.get("query") != self.fingerprint:
            raise StateError(
                "this state was saved by another query or other options (fingerprint "
                f"{header.get('query')}, this query's is {self.fingerprint}): start from a "
                "fresh checkpoint, or run the query it was saved with"
            )
        state: S = pickle.loads(payload)
        return state

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

    @property
    def timed(self) -> bool:
        """Can a state have a `deadline`? (False lets the engine skip asking.)"""
        return True

    def deadline(self, state: S) -> float | None:
        """The timestamp after which `advance` would make matches final (None: no need)."""
        return None

    def describe(self) -> str | None:
        """What the plan compiled the pattern into, as text (None: nothing beyond the
        analysis)."""
        return None

    def dot(self) -> str | None:
        """The plan's automaton in Graphviz DOT (None: it has none)."""
        return None

    def live_runs(self, state: S) -> int:
        """How many partial matches the state holds now (0 for plans without runs)."""
        return 0

    def shed(self, state: S, keep: int) -> int:
        """Drop the state's oldest partial matches until `keep` are left (a guard's
        on_limit="drop"); how many were dropped. A plan that cannot choose which to drop
        says so."""
        raise LimitError(
            f"plan {self.name!r} cannot drop partial matches to stay within the guards "
            "(on_limit='drop' drops them on plan 'nfa'); fix the query or raise the limit"
        )

    def idle(self, state: S, watermark: Watermark) -> bool:
        """Does the state hold nothing a later event of its partition could need, now that
        time has reached `watermark`? The engine then drops it, to start a new one if the
        key comes back; this is what keeps memory bounded when keys keep changing (one
        per RFID tag, per session). Default: never."""
        return False

    def counters(self, state: S) -> dict[str, int]:
        """The plan's own work counters for this state, cumulative."""
        return {}


class _Begins(Protocol):
    begin: bool


B = TypeVar("B", bound=_Begins)


def begin_at_first(plan: Plan[B], events: Sequence[Event]) -> list[Match]:
    """`matches_from` for a plan whose state can stop runs from beginning (`state.begin`):
    only the first event begins one, so every match found starts there."""
    state = plan.new_state()
    found = plan.step(state, events[0])
    state.begin = False
    for event in events[1:]:
        found += plan.step(state, event)
    return found + plan.advance(state, Watermark(math.inf))


PLANS: dict[str, type[Plan[Any]]] = {}
P = TypeVar("P", bound=type[Plan[Any]])


def register(cls: P) -> P:
    """Class decorator: make a plan available by its `name`."""
    PLANS[cls.name] = cls
    return cls


def plan_class(name: str) -> type[Plan[Any]]:
    """The plan registered under `name`."""
    try:
        return PLANS[name]
    except KeyError:
        known = ", ".join(["auto", *sorted(PLANS)])
        raise PlanError(f"unknown plan {name!r}; the plans are: {known}") from None


#: The order `auto` tries plans in: fastest first; `lazy_chain` takes skip-till-any-match
#: patterns too wide for `nfa`'s automaton; `reference` runs everything.
PREFERENCE: tuple[str, ...] = ("window_join", "nfa", "lazy_chain", "reference")


def compile(pattern: Pattern | Rule | str, plan: str = "auto", **options: Any) -> Plan[Any]:
    """Compile a pattern (or query text) with the plan of that name; see `Options`. With
    "auto", the first plan of `PREFERENCE` that runs the pattern and compiles it within its
    limits (nfa refuses an automaton of more than 4,096 states). A LEAD rule (text that
    begins with FROM) runs on the `petri` plan."""
    if isinstance(pattern, str) and is_rule(pattern):
        pattern = read_rule(pattern)
    if isinstance(pattern, Rule):
        if plan not in ("auto", "petri"):
            raise PlanError(f"a LEAD rule runs on plan 'petri', not {plan!r}")
        return plan_class("petri")(pattern, Options.build(**options))  # type: ignore[arg-type]
    if isinstance(pattern, str):
        pattern = parse(pattern)
    settings = Options.build(**options)
    return instantiate(plan, analysis=analyze(pattern, settings.functions), options=settings)


def instantiate(plan: str, analysis: Analysis, options: Options) -> Plan[Any]:
    """The plan of that name for an analyzed pattern; "auto": see `compile`."""
    if plan != "auto":
        return plan_class(plan)(analysis, options)
    refused: list[str] = []
    for cls in candidates(analysis, options):
        try:
            return cls(analysis, options)
        except PlanError as error:
            refused.append(f"{cls.name}: {error}")
    if not refused:  # every plan refused it up front: say why, once per reason
        reasons: dict[str, list[str]] = {}
        for name in PREFERENCE:
            reason = PLANS[name].refusal(analysis, options) if name in PLANS else None
            if reason is not None:
                reasons.setdefault(reason, []).append(name)
        refused = [f"{', '.join(names)}: {reason}" for reason, names in reasons.items()]
    raise PlanError("no plan can run this pattern; " + "; ".join(refused))


def candidates(analysis: Analysis, options: Options) -> list[type[Plan[Any]]]:
    """The plans `auto` may pick, in `PREFERENCE` order: those that run the pattern."""
    found = [PLANS[n] for n in PREFERENCE if n in PLANS]
    return [cls for cls in found if cls.refusal(analysis, options) is None]
