"""The plan contract, and the registry that finds plans by name (`instantiate`,
`candidates`; `kleene.compiler.pipeline` chooses).

A plan is compiled once from an analysed query (`kleene.compiler.query.Query`, of the
language the plan runs) and is immutable; everything that changes while events flow lives
in a separate *state* (one per partition key), of the plan's state type S:

    state = plan.new_state()
    outputs = plan.step(state, event)        # an event arrives
    outputs = plan.advance(state, watermark) # time moves on without an event
    plan.deadline(state)                     # the time at which the state next needs advance
    plan.idle(state, watermark)              # may the state go (a fresh one is the same)?
    plan.finished(state)                     # will the state never report anything again?
    data = plan.dump_state(state)            # bytes, for a checkpoint
    state = plan.load_state(data)            # ... and back, by the same compiled query

What `step` and `advance` return is declared by `plan.output` (`kleene.compiler.query.
Output`): matches (with timed-out partial matches, or retractions of earlier matches, where
it says so) or the events a rule emits, and the fields of a row of them. The engine, the
writers, the CLI and Spark read that declaration, and `plan.partition_key`, `plan.window`,
`plan.analysis.filters` and `plan.analysis.reads`; none of them asks which plan it is.

Events reach `step` in arrival order with non-decreasing timestamps (unless the plan is not
`ordered`); `kleene.runtime` checks that, partitions by `plan.partition_key`, and keeps one
state per key.

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
import hmac
import json
import math
import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import fields
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from kleene.compiler import pipeline
from kleene.compiler.analysis import EXTENSIONS
from kleene.compiler.growth import tripped
from kleene.compiler.options import Options
from kleene.compiler.query import Output, Query
from kleene.errors import KleeneError, LimitError, PlanError, StateError
from kleene.events import Event, Watermark
from kleene.matches import Match
from kleene.plans.signing import ENVIRONMENT, signature, state_key

__all__ = [
    "LANGUAGES",
    "LIMITS",
    "PLANS",
    "PREFERENCE",
    "STATE_FORMAT",
    "Joint",
    "Plan",
    "begin_at_first",
    "compile",
    "instantiate",
    "plan_class",
    "register",
]

#: What each language's queries are called in messages.
LANGUAGES = {
    "sase": "SASE+ patterns",
    "lead": "LEAD rules",
    "afa": "AFAs written directly",
    "sql": "MATCH_RECOGNIZE clauses",
}

#: The layout of saved state. Raise it whenever a plan's state classes change shape: a
#: checkpoint written by another format is refused with a StateError, never misread.
STATE_FORMAT = 7
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
    #: The languages of the queries it runs (`kleene.compiler.query.Query.language`).
    languages: ClassVar[frozenset[str]] = frozenset({"sase"})
    #: The parts of the plan contract this plan does not meet, from `LIMITS`.
    limits: ClassVar[frozenset[str]] = frozenset()
    #: Must events reach `step` in timestamp order? A plan that says False (`afa`) takes
    #: them in any order, and its outputs include `Retraction`s of earlier matches.
    ordered: ClassVar[bool] = True
    #: What the plan runs of what kleene adds to SASE+ (`kleene.compiler.analysis.
    #: EXTENSIONS`); it refuses a pattern using any other.
    extensions: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, analysis: Query, options: Options) -> None:
        reason = self.refusal(analysis, options)
        if reason is not None:
            raise PlanError(f"plan {self.name!r} cannot run this query: {reason}")
        self.analysis = analysis
        self.options = options
        within = analysis.within
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
    def refusal(cls, analysis: Query, options: Options) -> str | None:
        """Why this plan cannot run the query: another language, what the contract rules
        out, then the plan's own `unsupported`."""
        if analysis.language not in cls.languages:
            runners = sorted(n for n, c in PLANS.items() if analysis.language in c.languages)
            on = " or ".join(f"{n!r}" for n in runners) or "no plan"
            runs = " and ".join(LANGUAGES[language] for language in sorted(cls.languages))
            return f"it runs {runs}; {LANGUAGES[analysis.language]} run on plan {on}"
        if options.sequence is not None and cls.ordered:
            return "sequence numbers (AFA+O) are for plan='afa', which takes events in any order"
        if analysis.skips and (options.output != "all" or options.selection != "all"):
            return (
                "AFTER MATCH SKIP chooses among all matches; it does not combine with "
                "output='non_overlapping' or a selection"
            )
        if analysis.consume and (options.output != "all" or options.selection != "all"):
            return (
                "CONSUME BY decides which matches are reported as they complete; it does not "
                "combine with output='non_overlapping' or a selection"
            )
        if analysis.freeze and (
            options.output != "all" or options.selection != "all" or options.timeouts
        ):
            return (
                "FREEZE holds partial matches back until a match holding the freezing event "
                "is reported; it does not combine with output='non_overlapping', a "
                "selection or timeouts=True"
            )
        if analysis.language == "sase":  # what kleene adds to SASE+, the plan runs or not
            within = analysis.within
            if options.timeouts and (within is None or within.amount is None):
                return (
                    "a partial match times out when its time window closes (timeouts=True), "
                    "and this query has no WITHIN time"
                )
            wanted = analysis.extensions | ({"timeouts"} if options.timeouts else set())
            missing = sorted(wanted - cls.extensions)
            if missing:
                words = ", ".join(EXTENSIONS[name] for name in missing)
                able = " or ".join(
                    repr(n)
                    for n, c in sorted(PLANS.items())
                    if n != "auto" and set(missing) <= c.extensions
                )
                return f"it does not run {words} (plan {able} does)"
        return cls.unsupported(analysis, options)

    @classmethod
    def unsupported(cls, analysis: Any, options: Options) -> str | None:
        """Why this plan cannot run the query (of a language it runs: `refusal` checked
        that), or None when it can."""
        if not options.construct:
            return "it always builds its matches (construct=False is for the nfa plan)"
        return None

    @property
    def pattern_name(self) -> str:
        return self.options.name

    @cached_property
    def output(self) -> Output:
        """What `step` and `advance` return, and the fields of a row of it (a match's
        partition key among them when the runtime splits the stream by it)."""
        analysis = self.analysis
        made = analysis.output(self.options.timeouts, not self.ordered)
        keyed = self.partition_key is not None and not analysis.partition_is_meaning
        return made.keyed(analysis.partition if keyed else None)

    @property
    def partition_key(self) -> Callable[[Event], Hashable | None] | None:
        """How the runtime may split the stream into independent partitions (None: it may not).

        Strict contiguity treats the stream as one partition, so a query where some run
        follows it never splits; nor does one whose match consumes every partial match
        (CONSUME BY ANY). Where the partition is part of the query's meaning
        (`Query.partition_is_meaning`: a LEAD rule runs once per key), the runtime must
        split by it, every value its own partition (`Partition.grouper`).
        """
        partition = self.analysis.partition
        if partition is None or self.analysis.strict or self.analysis.consume == "any":
            return None
        return partition.grouper if self.analysis.partition_is_meaning else partition.keyer

    @abstractmethod
    def new_state(self) -> S:
        """A fresh state for one partition."""

    @abstractmethod
    def step(self, state: S, event: Event) -> list[Any]:
        """Feed one event; return the outputs it makes final (as `output` declares: matches,
        or emitted events)."""

    def step_for(self, event_type: str) -> Callable[[S, Event], list[Any]]:
        """`step` for events of one type: what the engine calls for each event of that
        type (a plan that writes a step per type hands it over, saving the call that finds
        it). By default `step` itself."""
        return self.step

    def step_lazily(self, state: S, event: Event) -> Iterable[Any]:
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
    def advance(self, state: S, watermark: Watermark) -> list[Any]:
        """Time has reached `watermark`; return the outputs that makes final."""

    def retract(self, state: S, event: Event) -> list[Any] | None:
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
        text = json.dumps([self.analysis.text(), settings], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def own(self) -> Plan[S]:
        """The plan an engine given this compiled one runs: itself, unless the stream
        changes the plan (an AFA's arcs), when each engine runs a copy of its own."""
        return self

    def changes(self) -> Any:
        """What the stream has changed in the plan itself (None: nothing; an AFA's arcs
        change while the stream runs: `kleene.afa.arcs`), for a checkpoint to keep."""
        return None

    def take_changes(self, changes: Any) -> None:
        """Make this plan, of the same query, as `changes` (from `changes`) says, before it
        takes any event."""
        if changes is not None:
            raise StateError(f"plan {self.name!r} does not change while the stream runs")

    def dump_state(
        self, state: S, key: bytes | None = None, fingerprint: str | None = None
    ) -> bytes:
        """The state as bytes, for a checkpoint: a header line (state format, plan, query
        fingerprint, and the signature of the header and the state under `key`,
        `kleene.plans.signing.state_key()` by default) and the pickled state. The
        fingerprint is the plan's unless given (an engine gives its query's as it began)."""
        query = self.fingerprint if fingerprint is None else fingerprint
        header = {"format": STATE_FORMAT, "plan": self.name, "query": query}
        core = json.dumps(header, sort_keys=True).encode()
        payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        signed = signature(state_key() if key is None else key, core, payload)
        line = json.dumps({**header, "signature": signed}, sort_keys=True).encode() + b"\n"
        return _MAGIC + line + payload

    def load_state(
        self, data: bytes, key: bytes | None = None, fingerprint: str | None = None
    ) -> S:
        """A state saved by `dump_state` of this plan, query and options (the fingerprint
        given, else the plan's), signed with `key` (`kleene.plans.signing.state_key()` by
        default). The header and the signature are checked before anything is unpickled
        (unpickling runs code): a state someone without the key wrote or altered is
        refused with a `StateError`."""
        query = self.fingerprint if fingerprint is None else fingerprint
        if not data.startswith(_MAGIC):
            raise StateError("these bytes are not a kleene plan state")
        line, _, payload = data[len(_MAGIC) :].partition(b"\n")
        try:
            header = json.loads(line)
            if not isinstance(header, dict):
                raise ValueError(line)
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
        if header.get("query") != query:
            raise StateError(
                "this state was saved by another query or other options (fingerprint "
                f"{header.get('query')}, this query's is {query}): start from a "
                "fresh checkpoint, or run the query it was saved with"
            )
        signed = header.pop("signature", None)
        core = json.dumps(header, sort_keys=True).encode()
        expected = signature(state_key() if key is None else key, core, payload)
        if not isinstance(signed, str) or not hmac.compare_digest(signed, expected):
            raise StateError(
                "this state's signature does not match the state key: it was saved with "
                f"another key (set {ENVIRONMENT} to the one it was saved with) or written "
                "or altered by someone without it, and it is not read"
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
        time has reached `watermark` (a fresh state would report the same)? The engine then
        drops it, to start a new one if the key comes back; this is what keeps memory
        bounded when keys keep changing (one per RFID tag, per session). Default: never."""
        return False

    def finished(self, state: S) -> bool:
        """Will the state report nothing more, whatever events of its partition come (a
        LEAD rule that ran once in its partition)? The engine then keeps only that its key
        is finished, and sends the key's events nowhere. Default: never."""
        return False

    def draw(self, path: str) -> bool:
        """Draw the plan's automaton as PNG at `path` without Graphviz, if the plan can
        (`dot` is for Graphviz); whether it did."""
        return False

    def settled(self, watermark: Watermark) -> Watermark:
        """How far a punctuation at `watermark` lets the states clean up, and their matches
        be final: `watermark` itself, unless the plan holds it back (an AFA whose arcs may
        still change for earlier times)."""
        return watermark

    def counters(self, state: S) -> dict[str, int]:
        """The plan's own work counters for this state, cumulative."""
        return {}

    def joint_key(self) -> Hashable | None:
        """Plans whose keys are equal (and not None) can step as one over one stream
        (`joint`), sharing what they keep: an engine of several queries runs them so. None
        (the default): this plan steps alone."""
        return None

    @classmethod
    def joint(cls, plans: Sequence[Plan[Any]]) -> Joint:
        """`plans` (of equal `joint_key`) stepping as one (`Joint`)."""
        raise PlanError(f"plan {cls.name!r} does not step jointly with others")


class Joint(ABC):
    """Several plans stepping as one over the events any of them takes, in order, each
    with its own state (one partition: a joint runs plans that do not split the stream),
    keeping once what they would each keep. Each state stays what its plan's `step` makes
    it: a state checkpoints, resumes and steps alone as before, and `attach` makes what
    the states share one again."""

    @abstractmethod
    def attach(self, states: Sequence[Any]) -> None:
        """Step these states (one a plan, in order) from now on; a state made or resumed
        apart from the others has its shared parts made the joint's."""

    @abstractmethod
    def run(self, events: Sequence[Event]) -> list[list[tuple[Event, list[Any]]]]:
        """Feed events in order to every plan (each plan's `step` for each event of a type
        it takes); the outputs, plan by plan: (the event, what its step returned) for each
        step that returned any."""


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
#: patterns too wide for `nfa`'s automaton; `reference` runs every pattern, `petri` every
#: LEAD rule, `afa` every AFA written directly.
PREFERENCE: tuple[str, ...] = (
    "window_join",
    "nfa",
    "lazy_chain",
    "reference",
    "petri",
    "afa",
    "row_pattern",
)


def instantiate(plan: str, analysis: Query, options: Options) -> Plan[Any]:
    """The plan of that name for an analysed query; with "auto", the first plan of
    `PREFERENCE` that runs it and compiles it within its limits (nfa refuses an automaton
    of more than 4,096 states)."""
    chosen = pipeline.choose(analysis, plan, options, PLANS, PREFERENCE)
    found: Plan[Any] = pipeline.instantiate(chosen, analysis, options)
    return found


def compile(query: Any, plan: str = "auto", **options: Any) -> Plan[Any]:
    """Compile a query (text, a SASE+ `Pattern` or a LEAD `Rule`) with the plan of that name;
    see `Options`. With "auto", the first plan of `PREFERENCE` that runs it: a LEAD rule
    runs on `petri`. The passes: `kleene.compiler.pipeline`."""
    found: Plan[Any] = pipeline.compile(query, plan, PLANS, PREFERENCE, **options)
    return found
