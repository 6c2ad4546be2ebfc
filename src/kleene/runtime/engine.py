"""The engine: feeds events to a compiled plan, one state per partition key, and moves time.

It reads what the plan declares (`kleene.plans.base`): how to split the stream
(`partition_key`), whether events must come in order (`ordered`), what its outputs are and
how they sort (`output`), its window and guards; it never asks which plan it runs. The
loops that send many events are in `send.py`; readers, files and DataFrames are the io
layer's (`kleene.io.matching` runs `kleene.match` over them).

>>> import kleene
>>> engine = kleene.Engine("PATTERN SEQ(A a, NOT(B b), C c) WHERE [k] WITHIN 10")
>>> engine.send({"type": "A", "ts": 1, "k": 1})
[]
>>> engine.send({"type": "C", "ts": 2, "k": 1})
[Match(a=[0], c=[1])]
>>> engine.send_many([{"type": "A", "ts": 3, "k": 2}, {"type": "B", "ts": 4, "k": 2},
...                   {"type": "C", "ts": 5, "k": 2}])
[]
"""

from __future__ import annotations

import gc
import heapq
import logging
import math
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from itertools import count
from typing import Any, Protocol, cast, runtime_checkable

from kleene import plans
from kleene.compiler.evaluate import returned_values
from kleene.compiler.functions import known_functions
from kleene.compiler.growth import tripped
from kleene.compiler.schema import AttributeWatch, check_time_scale
from kleene.errors import EventError, KleeneError, LimitError, StateError
from kleene.events import Event, Watermark, as_event, numeric_time
from kleene.language.text import UNITS
from kleene.matches import Retraction, Timeout
from kleene.plans.base import Plan
from kleene.runtime.metrics import Metrics
from kleene.runtime.reorder import OnLate, Reorder, delay_units
from kleene.runtime.send import SendLoops, at_fault, unconverted

__all__ = [
    "Engine",
    "EventSource",
    "fewer_collections",
    "located",
    "out_of_order",
    "settle",
    "several",
]

EventLike = Event | Mapping[str, Any]
#: An unordered plan's states hear at least one punctuation in this many for clean-up.
SWEEP = 16


@runtime_checkable
class EventSource(Protocol):
    """Events that know where they came from (a file reader): an error the engine finds
    in one of them names its file and row, not its arrival number."""

    def locate(self, error: EventError) -> EventError: ...


log = logging.getLogger("kleene")

#: Why the state of a plan taking events in any order grows, and the cure.
_UNPUNCTUATED = (
    "plan %r takes events in any order and forgets a partition's state only at a "
    "punctuation: give max_delay= (its watermark punctuates), or call engine.advance_to(t) "
    "as time passes, or its state grows with every key"
)

#: The engine fields a checkpoint holds: all that the stream changes (the rest comes from
#: the query and the engine's settings).
_CHECKPOINTED = (
    "_metrics",
    "_watch",
    "_live",
    "_total_live",
    "_states",
    "_finished",
    "_evict_at",
    "_retired",
    "_timers",
    "_scheduled",
    "_arrivals",
    "_positions",
    "_sweep_in",
    "_last_t",
    "_datetimes",
    "_ts_type",
    "_watermark",
    "_reorder",
    "_latest",
)


def several(query: Any) -> bool:
    """Is `query` several queries (a mapping of names to queries, or a list or tuple)?"""
    return isinstance(query, Mapping | list | tuple)


#: The engine class of several queries: `kleene.runtime.queries` puts `Queries` here as it
#: is imported (`kleene.runtime` imports it), so this module need not import it.
SEVERAL: list[type[Engine]] = []


@dataclass
class EngineCheckpoint:
    """What `Engine.checkpoint` saves: the settings it was made under, and the fields."""

    settings: tuple[Any, ...]
    fields: dict[str, Any]
    #: What the stream changed in the plan itself (`Plan.changes`: an AFA's arcs).
    changes: Any = None


class Engine(SendLoops):
    """Runs a query over events arriving one by one.

    Events must come in timestamp order (equal timestamps keep their arrival order), unless
    `max_delay` bounds their disorder: then the engine holds each event until the largest
    timestamp seen, minus `max_delay`, has reached it, and feeds the plan in (timestamp,
    arrival) order, so the outputs are those of the sorted stream. An event that comes later
    than that is *late*; `on_late` says what happens to it: "count" (the default: counted in
    `metrics.late` and dropped), "raise" (an `EventError`), or "collect" (kept in
    `engine.late`). `max_delay` is in timestamp units (seconds for datetimes), or a
    `timedelta`.

    An event without an id gets its arrival position (0, 1, …). `advance_to(ts)` promises
    that every event with a timestamp up to and including `ts` has been sent; patterns that
    end in a negation report matches only once time has passed their window. `close()` ends
    the stream and reports everything still pending.

    A plan that takes events in any order (`plan="afa"`) needs no `max_delay`: every event goes
    to it at once, `send` returns the new matches and the `Retraction`s of earlier ones the
    event disproves, `retract(event)` deletes an event sent before, and `advance_to(ts)` is a
    punctuation that lets the plan forget what no later event can need (give `max_delay` to
    have the engine punctuate at the watermark, and `speculation` σ, the paper's Cleanse
    factor, to hold back events more than σ after it: 0 gives output without retractions).

    `query` may be query text (SASE+, LEAD), a `Pattern`, a `Rule`, an AFA written directly
    (`kleene.afa`) or an already compiled `Plan`. With `partition=True` (the default) the
    engine splits the stream by the query's partition key (its equivalence tests and
    equalities, a rule's PARTITION BY) and keeps one state per key (events lacking a key
    value share one more); for a pattern this never changes the matches, only the cost.
    """

    def __new__(cls, query: Any = None, *args: Any, **kwargs: Any) -> Engine:
        """An engine of one query; of several (a mapping of names to queries, a list) the
        engine that runs them over one stream (`kleene.runtime.queries.Queries`)."""
        if cls is Engine and several(query):
            return super().__new__(SEVERAL[0])
        return super().__new__(cls)

    def __init__(
        self,
        query: Any,
        plan: str = "auto",
        *,
        partition: bool = True,
        max_delay: float | timedelta | None = None,
        on_late: OnLate = "count",
        speculation: float | None = None,
        **options: Any,
    ) -> None:
        if isinstance(query, Plan):
            if options or plan != "auto":
                raise KleeneError("an already compiled plan takes no plan name or options")
            self.plan = query.own()  # (a plan the stream changes is each engine's own)
        else:
            self.plan = plans.compile(query, plan, **options)
        compiled = self.plan
        self._metrics = Metrics()
        #: What the plan reports, and in what order reports sort.
        self._output = compiled.output
        self._sort_key = compiled.output.sort_key
        #: Does the query count real time (`WITHIN 10 min`)? Then numeric timestamps must be
        #: in the engine's time unit, not epoch milliseconds (`check_time_scale`).
        self._real_time = compiled.analysis.real_time
        self._unit_seconds = UNITS[compiled.options.time_unit][1]
        #: RETURN: the values each reported match carries, and the functions they may call.
        self._returns = compiled.output.computed
        self._functions = known_functions(compiled.options.functions)
        reads = compiled.analysis.reads
        #: Warns once about attributes the first events of their type never carry.
        self._watch = AttributeWatch(reads) if reads else None
        if self._watch is not None:
            self._metrics.missing_attributes = self._watch.missing
        self._live: dict[Hashable, int] = {}
        self._total_live = 0
        # the guards (kleene.compiler.growth): None is no limit
        limits = compiled.options
        self._cap_total = _limit(limits.max_partial_matches)
        self._cap_key = _limit(limits.max_partial_matches_per_key)
        self._cap_matches = _limit(limits.max_matches_per_event)
        self._drop = limits.on_limit == "drop"
        if not partition and compiled.analysis.partition_is_meaning:
            raise KleeneError(
                "this query's partitions are part of its meaning (a LEAD rule's PARTITION BY "
                "runs the rule once per partition); partition=False would change what it "
                "reports"
            )
        self._key = compiled.partition_key if partition else None
        self._states: dict[Hashable, Any] = {}
        #: The keys whose state the plan called finished (see `Plan.finished`).
        self._finished: set[Hashable] = set()
        #: Can a state finish? (Else there is nothing to ask.)
        self._finishing = type(compiled).finished is not Plan.finished
        #: Drop idle states once there are this many (doubling: amortized O(1) per event).
        self._evict_at = 64
        self._retired: dict[str, int] = {}  # the counters of dropped states
        self._timers: list[tuple[float, int, Hashable]] = []
        self._scheduled: dict[Hashable, float] = {}
        self._tiebreak = count()
        self._arrivals = 0
        #: The next event's position in the stream, for a count window (None: no count).
        self._positions: int | None = 0 if compiled.count_window else None
        #: How many punctuations until every state of an unordered plan hears one.
        self._sweep_in = 0
        self._last_t: float | None = None
        self._datetimes: bool | None = None
        self._ts_type: type = type(None)
        self._watermark: Watermark | None = None
        self._closed = False
        #: Is a `send_iter` under way (its matches not all read)? Then nothing else may run.
        self._busy = False
        self._reorder = None
        self._ordered = compiled.ordered
        #: Does the plan report timed-out partial matches (`Timeout`s) too?
        self._timeouts = compiled.output.timeouts
        #: May the plan's states have deadlines (timeouts, negations waiting)?
        self._timed = compiled.timed
        #: Does the plan count partial matches (runs)? (Else there is nothing to count.)
        self._runs = type(compiled).live_runs is not Plan.live_runs
        #: The event types worth a step (None: every type). An event of another type only
        #: moves the time: it is checked, counted and fires the timers due, on every path.
        #: A plan taking events in any order sees them all: an event may be retracted
        #: later, and sequence numbers (AFA+O) leave no gap.
        self._passes = compiled.analysis.taken_types if compiled.ordered else None
        if speculation is not None and self._ordered:
            raise KleeneError(
                f"speculation is for a plan that takes events in any order (plan='afa'), not "
                f"{compiled.name!r}"
            )
        #: The latest timestamp received (t of the paper's t_curr).
        self._latest = -math.inf
        if max_delay is not None:
            sigma = 0 if self._ordered else math.inf if speculation is None else speculation
            self._reorder = Reorder(delay_units(max_delay, compiled.options), on_late, sigma)
        #: What a checkpoint must have been made under, besides the query and its options
        #: as the engine began (`fingerprint`: an AFA's arcs may change as it runs).
        self._settings = (partition, max_delay, on_late, speculation)
        self._fingerprint = compiled.fingerprint
        if not self._ordered and max_delay is None:
            log.warning(_UNPUNCTUATED, compiled.name)

    def checkpoint(self) -> bytes:
        """Everything the stream has changed in the engine (the plan's states by key, what
        it changed in the plan itself: an AFA's arcs, the reorder buffer, timers, late
        events, metrics and counters) as bytes signed as
        `Plan.dump_state` signs a state: `resume` them on an engine made with the same
        query, options and settings, in this process or another, and it goes on as this
        one would (`tests/runtime/test_checkpoint.py`).
        """
        self._ready()
        fields = {name: getattr(self, name) for name in _CHECKPOINTED}
        saved = EngineCheckpoint(self._settings, fields, self.plan.changes())
        return self.plan.dump_state(saved, fingerprint=self._fingerprint)

    def resume(self, data: bytes) -> None:
        """Take up the stream where `checkpoint` left it, on an engine that has received
        nothing yet; a checkpoint of another query, options or settings (`max_delay`,
        `partition`, ...), or one not signed with the state key, is a `StateError`."""
        self._ready()
        if self._arrivals:
            raise KleeneError("resume a checkpoint on a new engine, before it receives events")
        loaded = self.plan.load_state(data, fingerprint=self._fingerprint)
        if not isinstance(loaded, EngineCheckpoint):
            raise StateError("these bytes hold a plan's state, not an engine's checkpoint")
        if loaded.settings != self._settings:
            raise StateError(
                f"this checkpoint was made by an engine with other settings (partition, "
                f"max_delay, on_late, speculation = {loaded.settings!r}; this engine's are "
                f"{self._settings!r})"
            )
        self.plan.take_changes(loaded.changes)
        for name, value in loaded.fields.items():
            setattr(self, name, value)
        self._tiebreak = count(max((timer[1] for timer in self._timers), default=-1) + 1)

    def _ready(self) -> None:
        """Refuse a call to a closed engine, or one whose `send_iter` is under way."""
        if self._closed:
            raise KleeneError("the engine is closed; make a new one for a new stream")
        if self._busy:
            raise KleeneError(
                "the engine is still sending events for send_iter: read its matches to the "
                "end, or close() the iterator, first"
            )

    def send(self, event: EventLike) -> list[Any]:
        """Feed one event (an `Event` or a mapping with type, ts, attributes)."""
        self._ready()
        return self._send_one(event)

    def _send_one(self, event: EventLike) -> list[Any]:
        try:
            item = as_event(event, default_id=self._arrivals)
        except EventError as error:
            unconverted(error, self._arrivals)
            raise
        self._arrivals += 1
        self._metrics.events += 1
        try:
            return self._send(item)
        except EventError as error:
            at_fault(error, item, self._arrivals)
            raise

    def _send(self, item: Event) -> list[Any]:
        if self._watch is not None:
            self._watch.see(item)
            if self._watch.done:
                self._watch = None
        reorder = self._reorder
        if not self._ordered:
            return self._send_unordered(item)
        if reorder is None:
            self._check_time(item)
            reported = self._step(item)
            return self._report(reported) if reported else reported
        if type(item.ts) is not self._ts_type:
            self._check_kind(item)
        reported = []
        for each in reorder.push(item, self._arrivals):
            reported.extend(self._step(each))
        if self._timers:
            reported.extend(self._fire(Watermark(reorder.watermark, inclusive=False)))
        return self._report(reported) if reported else reported

    def _send_unordered(self, item: Event) -> list[Any]:
        """`send` for a plan taking events in any order: straight to it, or through the
        Cleanse buffer, and a punctuation whenever the watermark moves."""
        if type(item.ts) is not self._ts_type:
            self._check_kind(item)
        self._latest = max(self._latest, item.t)
        reorder = self._reorder
        if reorder is None:
            if self._watermark is not None and self._watermark.settles(item.t):
                raise EventError(
                    f"event {item.id!r} has ts {item.ts!r}, but advance_to() already declared "
                    "every event up to that time sent",
                    row=self._arrivals,
                    field="ts",
                    late=True,
                )
            found = self._plan_step(item)
            return self._report(found) if found else found
        floor, at_floor = reorder.floor, reorder.at_floor
        reported = []
        for each in reorder.push(item, self._arrivals):
            reported.extend(self._plan_step(each))
        if reorder.floor != floor or reorder.at_floor != at_floor:
            watermark = self._watermark = Watermark(reorder.floor, inclusive=reorder.at_floor)
            self._sweep_in -= 1
            timers = self._timers
            if self._sweep_in <= 0 or (timers and watermark.settles(timers[0][0])):
                reported += self._punctuate(watermark, lazily=True)
        return self._report(reported) if reported else reported

    def _plan_step(self, item: Event) -> list[Any]:
        """The plan's step on the event's partition state, within the guards; the runs
        counted and the state's deadline scheduled, as the plan has them. A finished key's
        event goes nowhere, nor does one of a type no part of the query takes."""
        if self._passes is not None and item.type not in self._passes:
            return []
        key = None if self._key is None else self._key(item)
        state = self._states.get(key)
        if state is None:
            if key in self._finished:
                return []
            state = self._state(key)
        try:
            found = self.plan.step(state, item)
        except EventError as error:
            error.event = error.event or item
            raise
        if len(found) > self._metrics.peak_matches:
            found = self._peak(found, item)
        self._after_step(key, state)
        return found

    def _after_step(self, key: Hashable | None, state: Any) -> None:
        """Count the partition's runs, schedule its deadline, and let it go when it is
        finished."""
        if self._runs:
            self._count_live(key, state)
        if self._timed:
            self._schedule(key, state)
        if self._finishing and self.plan.finished(state):
            self._finish(key, state)

    def _count_live(self, key: Hashable | None, state: Any, live: int | None = None) -> None:
        """Count the partition's runs (`live`, when read already), and check the guards
        when the count changed (the same counts passed them before)."""
        if live is None:
            live = self.plan.live_runs(state)
        counted = self._live
        before = counted.get(key, 0)
        if live != before:
            self._total_live += live - before
            if live:
                counted[key] = live
            else:
                del counted[key]
            if live > self._cap_key or self._total_live > self._cap_total:
                self._over(key, state, live)
            self._metrics.peak_runs = max(self._metrics.peak_runs, self._total_live)
        self._metrics.run_steps += self._total_live

    def _over(self, key: Hashable | None, state: Any, live: int) -> None:
        """A guard on partial matches tripped: raise, or drop the partition's oldest."""
        per_key = live > self._cap_key
        option = "max_partial_matches_per_key" if per_key else "max_partial_matches"
        if not self._drop:
            limit = self._cap_key if per_key else self._cap_total
            where = (
                f"in partition {key!r}"
                if per_key and key is not None
                else f"over {len(self._live):,} partitions"
                if not per_key
                else "in the one partition"
            )
            unpunctuated = not self._ordered and self._reorder is None and self._watermark is None
            more = [_UNPUNCTUATED % self.plan.name] if unpunctuated else []
            where = f"{where}, after {self._arrivals:,} events"
            raise LimitError(tripped(self.plan.analysis, option, int(limit), where, more))
        keep = min(self._cap_key, live - max(0, self._total_live - self._cap_total))
        dropped = self.plan.shed(state, max(0, int(keep)))
        self._metrics.partials_dropped += dropped
        self._live[key] = live - dropped
        self._total_live -= dropped

    def _advanced(self, state: Any, watermark: Watermark) -> list[Any]:
        """What the plan reports as time reaches `watermark`, within the guard."""
        found = self.plan.advance(state, watermark)
        if len(found) > self._metrics.peak_matches:
            return self._peak(found, f"as time reached {watermark.t!r}")
        return found

    def _peak(self, found: list[Any], where: Event | str) -> list[Any]:
        """More matches at once than ever before: the new peak, within the guard."""
        if len(found) > self._cap_matches:
            found = self._cut(found, where)
        self._metrics.peak_matches = max(self._metrics.peak_matches, len(found))
        return found

    def _cut(self, found: list[Any], where: Event | str) -> list[Any]:
        """One event (or one moment) completed more matches than `max_matches_per_event`:
        raise, or keep the first so many."""
        limit = int(self._cap_matches)
        if not self._drop:
            if isinstance(where, Event):
                where = f"at event {where.id!r} (ts {where.ts!r}, arrival {self._arrivals})"
            raise LimitError(tripped(self.plan.analysis, "max_matches_per_event", limit, where))
        self._metrics.cut_events += 1
        return found[:limit]

    def _punctuate(self, watermark: Watermark, lazily: bool = False) -> list[Any]:
        """Tell the states of an unordered plan that time has reached `watermark` (the
        matches that decides), and drop the states it leaves idle. The plan hears the
        punctuation it lets its states clean up to (`Plan.settled`: with explicit arc
        lifetimes, the earlier of the events' and the arcs', section 5.4).

        Every state hears it, unless `lazily`: then the states whose deadline it passes
        hear it (their timeouts and negations are decided now); the rest is clean-up, so
        every state hears one punctuation in so many (`_sweep_in` counts them down), as many
        as there are states and at least `SWEEP` (amortized O(1) per event however many keys
        are live; state exceeds the window by at most that many events). `send` calls it
        lazily only when a deadline is due or a sweep is."""
        self._watermark = watermark
        watermark = self.plan.settled(watermark)
        keys: Iterable[Hashable | None]
        if not lazily or self._sweep_in <= 0:
            keys = list(self._states)
            self._sweep_in = max(len(keys), SWEEP)
        else:
            keys = self._due(watermark)
        reported: list[Any] = []
        for key in keys:
            state = self._states.get(key)
            if state is None:
                continue
            reported.extend(self._advanced(state, watermark))
            if self.plan.idle(state, watermark):
                self._drop_state(key, state)
            else:
                self._count_live(key, state)
                self._schedule(key, state)
        return reported

    def _due(self, watermark: Watermark) -> list[Hashable | None]:
        """The keys of the states whose deadline `watermark` passes."""
        due = []
        timers = self._timers
        while timers and watermark.settles(timers[0][0]):
            deadline, _, key = heapq.heappop(timers)
            if self._scheduled.get(key) == deadline:
                del self._scheduled[key]
                due.append(key)
        return due

    def retract(self, event: EventLike) -> list[Any]:
        """Withdraw an event sent before (the paper's Delete; `plan="afa"` only): the
        retractions of the matches it was part of, and any match its absence makes. The
        event is named by its type, timestamp and id; one never sent, or one older than the
        last punctuation (`advance_to`, or the watermark of `max_delay`), is an
        `EventError`."""
        if self._ordered:
            raise KleeneError(f"plan {self.plan.name!r} takes no retractions; plan='afa' does")
        self._ready()
        item = as_event(event)
        if item.id is None:
            raise EventError(
                "a retraction names the event it withdraws by its id (events sent without "
                "one have their arrival position, from 0)",
                field="id",
            )
        where = f"event {item.id!r} ({item.type}, ts {item.ts!r})"
        watermark = self._watermark
        if watermark is not None and watermark.settles(item.t):
            raise EventError(
                f"cannot retract {where}: its time is already punctuated (advance_to or the "
                "max_delay watermark), so its matches are final",
                field="ts",
                late=True,
            )
        if self._reorder is not None and self._reorder.remove(item):
            return []
        key = None if self._key is None else self._key(item)
        state = self._states.get(key)
        reported = None if state is None else self.plan.retract(state, item)
        if reported is None:
            raise EventError(f"cannot retract {where}: no such event was sent", field="id")
        self._count_live(key, state)
        return self._report(reported)

    @property
    def due(self) -> float | None:
        """The earliest time a state waits for (a negation's window, a timeout, a rule's
        time event), after which the outputs it holds are final; None when none waits."""
        timers = self._timers
        while timers and self._scheduled.get(timers[0][2]) != timers[0][0]:
            heapq.heappop(timers)  # a deadline moved since
        return timers[0][0] if timers else None

    def reach(self, t: float) -> list[Any]:
        """Time has reached `t` (events at `t` may still come), with no event of this query
        (another query's, in an engine of several): what the timers due before `t` make
        final, as an event at `t` would first fire them. An engine putting events in order
        (`max_delay`), or a plan taking them in any order, moves time with its own events."""
        self._ready()
        if self._reorder is not None or not self._ordered or not self._timers:
            return []
        if self._last_t is not None and t < self._last_t:
            return []
        return self._report(self._fire(Watermark(t, inclusive=False)))

    def advance_to(self, ts: float | Any) -> list[Any]:
        """Declare that every event with a timestamp up to and including `ts` has been sent.
        A time before an earlier `advance_to` (or the watermark of `max_delay`, for a plan
        taking events in any order) is an error: a punctuation does not go back."""
        self._ready()
        t = numeric_time(ts)
        reported: list[Any] = []
        if self._watermark is not None and t < self._watermark.t:
            raise KleeneError(
                f"advance_to({ts!r}) goes back: time was already punctuated up to "
                f"{self._watermark.t!r}"
            )
        if not self._ordered:
            if self._reorder is not None:
                for item in self._reorder.advance_to(t):
                    reported.extend(self._plan_step(item))
            return self._report(reported + self._punctuate(Watermark(t)))
        if self._reorder is not None:
            for item in self._reorder.advance_to(t):
                reported.extend(self._step(item))
        if self._watermark is not None and t == self._watermark.t:
            return self._report(reported)
        self._watermark = Watermark(t)
        reported.extend(self._fire(self._watermark))
        return self._report(reported)

    def close(self) -> list[Any]:
        """End the stream: report everything still waiting for time to pass."""
        if self._closed:
            return []
        self._ready()
        end = Watermark(math.inf)
        reported: list[Any] = []
        if self._reorder is not None:
            step = self._step if self._ordered else self._plan_step
            for item in self._reorder.release_all():
                reported.extend(step(item))
        for state in self._states.values():
            reported.extend(self._advanced(state, end))
        self._closed = True
        self._timers.clear()
        return self._report(reported)

    @property
    def metrics(self) -> Metrics:
        """The engine's counters, the plan's summed over partitions."""
        totals = dict(self._retired)
        for state in self._states.values():
            _add_counters(totals, self.plan.counters(state))
        self._metrics.plan = totals
        if self._reorder is not None:
            self._metrics.late = self._reorder.dropped
        return self._metrics

    @property
    def partitions(self) -> int:
        """How many partition states the engine holds now (idle and finished ones are
        dropped; a finished one leaves its key, `finished`)."""
        return len(self._states)

    @property
    def finished(self) -> int:
        """How many partitions are finished (the plan will report nothing more there): the
        engine keeps only their keys."""
        return len(self._finished)

    @property
    def punctuation(self) -> Watermark | None:
        """The output punctuation: every match reported that ends before it (at or before
        it, when inclusive) is final, never withdrawn (None: no punctuation yet). It is the
        plan's settled watermark (`Plan.settled`).

        >>> import kleene
        >>> engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 5", plan="afa")
        >>> engine.punctuation is None
        True
        >>> _ = engine.advance_to(3)
        >>> engine.punctuation
        Watermark(t=3, inclusive=True)
        """
        watermark = self._watermark
        return None if watermark is None else self.plan.settled(watermark)

    @property
    def late(self) -> list[Event]:
        """The late events kept with `on_late="collect"` (see the class docstring)."""
        return [] if self._reorder is None else self._reorder.late

    # -- what a plan's own handle uses (`kleene.afa.arcs`) ----------------------------------

    def states(self) -> Iterator[tuple[Hashable | None, Any]]:
        """Each partition's key and state, for a handle that changes them all (call
        `refresh` on each it changed, then `report` what it made)."""
        self._ready()
        return iter(list(self._states.items()))

    def refresh(self, key: Hashable | None, state: Any) -> None:
        """Count a changed state's runs (the guards checked) and schedule its deadline, as
        after a step."""
        self._after_step(key, state)

    def report(self, found: list[Any]) -> list[Any]:
        """Report what a handle's change made: sorted, counted, with RETURN values, as
        `send` reports an event's outputs."""
        return self._report(found)

    def in_order_from(self, t: float) -> bool:
        """Will every event the plan has still to take come in timestamp order, none
        before `t`? So it is behind a reorder buffer whose watermark has reached `t` (what
        `max_delay=0` gives once `t` is the latest time received) and that lets events go
        in order: one that does not speculate, or any with `max_delay=0` (every event
        earlier than one received is late). A handle may then make a change for the events
        after `t` as the first of them is taken."""
        reorder = self._reorder
        return (
            reorder is not None
            and reorder.floor >= t
            and (reorder.speculation == 0 or reorder.max_delay == 0)
        )

    @property
    def now(self) -> float:
        """t_curr: the latest of the punctuation and the timestamps received."""
        now = self._latest
        last, watermark = self._last_t, self._watermark
        if last is not None and last > now:
            now = last
        if watermark is not None and watermark.t > now:
            now = watermark.t
        return now

    def repunctuate(self) -> list[Any]:
        """Tell every state the current punctuation again (after what it settles changed),
        and report what that decides."""
        self._ready()
        if self._watermark is None:
            return []
        return self._report(self._punctuate(self._watermark))

    # -- internals -----------------------------------------------------------------------

    def _check_kind(self, event: Event) -> None:
        """Timestamps of one kind: all numbers or all datetimes (seconds, whatever time_unit
        says)."""
        if type(event.ts) is self._ts_type:
            return
        self._ts_type = type(event.ts)
        is_datetime = not isinstance(event.ts, int | float)
        if not is_datetime and self._real_time:
            try:
                check_time_scale(event.t, self.plan.options.time_unit, self._unit_seconds)
            except EventError as error:
                raise EventError(error.message, row=self._arrivals, field="ts") from None
        if self._datetimes is None:
            self._datetimes = is_datetime
            if is_datetime and self.plan.options.time_unit != "s":
                raise EventError(
                    "datetime timestamps are measured in seconds; drop time_unit="
                    f"{self.plan.options.time_unit!r}",
                    row=self._arrivals,
                    field="ts",
                )
        elif is_datetime != self._datetimes:
            raise EventError("timestamps mix numbers and datetimes", row=self._arrivals, field="ts")

    def _check_time(self, event: Event) -> None:
        last = self._last_t
        if last is not None and type(event.ts) is self._ts_type and event.t >= last:
            watermark = self._watermark
            if watermark is None or not watermark.settles(event.t):
                self._last_t = event.t
                return  # the common case: in order, of the kind seen before
        self._check_kind(event)
        if self._last_t is not None and event.t < self._last_t:
            raise out_of_order(event, self._arrivals)
        if self._watermark is not None and self._watermark.settles(event.t):
            raise EventError(
                f"event {event.id!r} has ts {event.ts!r}, but advance_to() already declared "
                "every event up to that time sent",
                row=self._arrivals,
                field="ts",
                late=True,
            )
        self._last_t = event.t

    def _state(self, key: Hashable | None) -> Any:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = self.plan.new_state()
            self._metrics.partitions += 1
        return state

    def _drop_state(self, key: Hashable | None, state: Any) -> None:
        """Let a partition's state go, keeping its counters."""
        _add_counters(self._retired, self.plan.counters(state))
        del self._states[key]
        self._scheduled.pop(key, None)
        self._total_live -= self._live.pop(key, 0)

    def _finish(self, key: Hashable | None, state: Any) -> None:
        """A partition the plan will report nothing more in: keep only its key."""
        self._drop_state(key, state)
        self._finished.add(key)

    def _evict(self, watermark: Watermark) -> None:
        """Drop the partition states the plan says no later event needs and that wait for
        no time now (a deadline scheduled before, which the state no longer has, keeps none)."""
        deadline, idle = self.plan.deadline, self.plan.idle
        for key, state in list(self._states.items()):
            if deadline(state) is None and idle(state, watermark):
                self._drop_state(key, state)
        self._evict_at = max(64, 2 * len(self._states))

    def _schedule(self, key: Hashable | None, state: Any) -> None:
        deadline = self.plan.deadline(state)
        if deadline is not None and self._scheduled.get(key) != deadline:
            self._scheduled[key] = deadline
            heapq.heappush(self._timers, (deadline, next(self._tiebreak), key))

    def _fire(self, watermark: Watermark) -> list[Any]:
        """Advance the states whose deadline `watermark` has reached."""
        reported: list[Any] = []
        while self._timers and watermark.settles(self._timers[0][0]):
            deadline, _, key = heapq.heappop(self._timers)
            if self._scheduled.get(key) != deadline:
                continue
            del self._scheduled[key]
            state = self._states[key]
            reported.extend(self._advanced(state, watermark))
            self._schedule(key, state)
            if self._finishing and self.plan.finished(state):
                self._finish(key, state)
        return reported

    def _each(self, made: Iterable[Any], item: Event, arrival: int) -> Iterator[Any]:
        """`_report` for the outputs of one event (`item`, the `arrival`-th sent) made as
        they are read: each gets the query's RETURN values and is counted, in the order
        made; an error met making them is the event's (`_at_fault`)."""
        returns, functions, metrics = self._returns, self._functions, self._metrics
        try:
            for found in made:
                if returns:
                    found.returning(returned_values(returns, found.bindings, functions))
                if isinstance(found, Timeout):
                    metrics.timeouts += 1
                else:
                    metrics.matches += 1
                yield found
        except EventError as error:
            at_fault(error, item, arrival)
            raise
        finally:
            close = getattr(made, "close", None)
            if close is not None:
                close()

    def _checked(self, items: Sequence[Event]) -> None:
        """The checks `_send_unkeyed` makes of each event before its step (the attributes
        the query reads watched, timestamps of one kind and none `advance_to` declared
        past), for events a joint step (`Plan.joint`) takes for this engine's query."""
        for item in items:
            if self._watch is not None:
                self._watch.see(item)
                if self._watch.done:
                    self._watch = None
            if type(item.ts) is not self._ts_type or self._watermark is not None:
                self._check_time(item)

    def _joint_reported(
        self, made: list[tuple[Event, list[Any]]], sent: int, last: float, sort: bool = True
    ) -> list[Any]:
        """What `_send_unkeyed` does with each step's outputs, for a joint step that took
        `sent` events for this query, the latest at `last`: each event's matches counted
        toward the peak and cut past `max_matches_per_event` (`_peak`), reported; the
        events counted."""
        reported: list[Any] = []
        metrics = self._metrics
        for item, found in made:
            kept = self._peak(found, item) if len(found) > metrics.peak_matches else found
            reported += self._report(kept) if sort else kept
        if not sort:  # counted (and given their RETURN values) at once
            self._report(reported, sort=False)
        self._stopped(sent, self._arrivals + sent, last)
        return reported

    def _report(self, found: list[Any], sort: bool = True) -> list[Any]:
        """Sort one report in the order the plan's output declares (unless `sort` is
        False: the caller sorts them all later), and count it; a plan that withdraws
        matches keeps its order (a retraction and a match equal to it must be applied as
        they come). Each match gets the query's RETURN values."""
        if self._returns:
            for each in found:
                each.returning(returned_values(self._returns, each.bindings, self._functions))
        metrics = self._metrics
        if self._output.retractions:
            withdrawn = sum(isinstance(m, Retraction) for m in found)
            metrics.retractions += withdrawn
            metrics.matches += len(found) - withdrawn
            return found
        if sort and len(found) > 1:
            found.sort(key=self._sort_key)
        if self._timeouts:
            timed_out = sum(isinstance(m, Timeout) for m in found)
            metrics.timeouts += timed_out
            metrics.matches += len(found) - timed_out
        else:
            metrics.matches += len(found)
        return found

    def _step(self, item: Event) -> list[Any]:
        """Feed one event, in order, to its partition's state; the outputs it makes final
        (not reported yet: see `_report`)."""
        timers = self._timers
        fired = (
            self._fire(Watermark(item.t, inclusive=False))
            if timers and timers[0][0] < item.t
            else None
        )
        if self._positions is not None:  # a count window measures positions in the stream
            item = item.with_seq(self._positions)
            self._positions += 1
        found = self._plan_step(item)
        if len(self._states) > self._evict_at:
            self._evict(Watermark(item.t, inclusive=False))
        if fired:
            fired.extend(found)
            return fired
        return found

    def send_many(self, events: Iterable[EventLike]) -> list[Any]:
        """Feed events in order; the outputs they make final, in the order reported (with
        fewer garbage collections meanwhile: see `fewer_collections`)."""
        return self._send_many(events)

    def _send_many(
        self, events: Iterable[EventLike], sort: bool = True, takes: frozenset[str] | None = None
    ) -> list[Any]:
        """`send_many`; with `sort=False`, the plain case leaves each event's outputs in
        the order the plan made them, for a caller that sorts them all (`kleene.match`).
        Given `takes` (several queries' engine: `Event`s numbered already), an event of
        another type is not sent: it only moves the time (`reach`)."""
        self._ready()
        reported: list[Any] = []
        with fewer_collections(), located(events):
            if self._plain():
                if takes is not None:
                    sent = self._send_plain(events, sort=sort, takes=takes)
                else:
                    sent = (self._send_unkeyed if self._unkeyed() else self._send_plain)(
                        events, sort=sort
                    )
                for found in sent:
                    reported += found
                    settle()
            else:
                for event in events:
                    if takes is not None and cast(Event, event).type not in takes:
                        reported += self.reach(cast(Event, event).t)
                    else:
                        reported.extend(self._send_one(event))
        return reported

    def send_iter(self, events: Iterable[EventLike]) -> Iterator[Any]:
        """Feed events in order, and hand out the outputs as they are made: each event's
        in the order its plan makes them (`Plan.step_lazily`, not sorted as `send` sorts
        them), so that an event completing very many (say every subset of a long Kleene
        run, up to `max_matches_per_event`) never has them all in memory at once. Until the
        iteration ends, or the iterator is closed, the engine takes no other call.

        >>> import kleene
        >>> engine = kleene.Engine("PATTERN SEQ(A a, B+ b[], C c) WITHIN 100",
        ...                        max_matches_per_event=None)
        >>> events = [{"type": "A", "ts": 0}, *({"type": "B", "ts": t} for t in range(1, 21)),
        ...           {"type": "C", "ts": 21}]
        >>> sum(1 for _ in engine.send_iter(events))  # 2**20 - 1, one at a time
        1048575
        """
        self._ready()
        self._busy = True
        try:
            with located(events):
                if self._plain():
                    plain = self._send_plain(events, lazily=True)
                    try:
                        for found in plain:
                            yield from found
                    finally:
                        plain.close()
                else:
                    for event in events:
                        yield from self._send_one(event)
        finally:
            self._busy = False


#: CPython's first-generation threshold while a batch of events runs (its default is 700).
GC_BATCH = 200_000
#: Between two chunks of a batch, what the chunks left is frozen once it holds this many
#: objects (`settle`).
GC_SETTLE = 10_000
#: While a batch runs, what this many freezes took is frozen at most before all of it is
#: handed back to the collector (`fewer_collections`).
GC_FREEZES = 100


class _Batch:
    """The batch of events running now (`fewer_collections`): whether it freezes, and how
    many freezes it made."""

    freezing = False
    freezes = 0


def _freeze() -> None:
    _Batch.freezes += 1
    if _Batch.freezes % GC_FREEZES:
        gc.freeze()
    else:
        gc.unfreeze()


def _frozen_after(phase: str, info: dict[str, int]) -> None:
    """A collector callback: what survives a young collection is frozen."""
    if phase == "stop" and info["generation"] == 0:
        _freeze()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often while a batch of events runs. Matches, and the events
    and tuples they hold, are many small containers that live on; at CPython's default
    setting the collector walks the growing heap again and again, which took 60 % of the
    time on the peers' P4 (docs/benchmarks-journal.md). So, for the batch, what it makes
    is frozen (`gc.freeze`: out of the collector's sight, as what a batch keeps lives on
    anyway), so that no collection walks it again:

    - between two chunks of events (or two events' reports), what they left, once there
      is `GC_SETTLE` of it (`settle`, called by the send loops), with no collection
      walking it first;
    - and what survives a young collection, whose threshold is raised to `GC_BATCH`.

    The frozen objects go back to the collector (`gc.unfreeze`) when the batch ends, and
    every `GC_FREEZES` freezes meanwhile, so garbage in a reference cycle made during the
    batch waits for the first full collection after that (a process that froze objects
    itself keeps them frozen: then nothing is frozen here). The setting is the
    process's, so another thread sees it meanwhile; nothing goes uncollected.

    >>> import gc
    >>> before = gc.get_threshold()
    >>> with fewer_collections():
    ...     gc.get_threshold()[0]
    200000
    >>> gc.get_threshold() == before, gc.get_freeze_count()
    (True, 0)
    """
    first, *rest = gc.get_threshold()
    if first >= GC_BATCH:  # a batch running already (or the process's own setting)
        yield
        return
    gc.set_threshold(GC_BATCH, *rest)
    if gc.get_freeze_count():  # the process froze objects of its own: leave them so
        try:
            yield
        finally:
            gc.set_threshold(first, *rest)
        return
    _Batch.freezing, _Batch.freezes = True, 0
    gc.callbacks.append(_frozen_after)
    try:
        yield
    finally:
        _Batch.freezing = False
        gc.callbacks.remove(_frozen_after)
        gc.unfreeze()
        gc.set_threshold(first, *rest)


def settle() -> None:
    """Between two chunks of events of a batch (`fewer_collections`), or two events'
    reports: freeze what the batch made since the last freeze or collection, once there
    is `GC_SETTLE` of it, so that no young collection walks it (outside a batch that
    freezes: nothing)."""
    if _Batch.freezing and gc.get_count()[0] >= GC_SETTLE:
        _freeze()


@contextmanager
def located(events: Iterable[Any]) -> Iterator[None]:
    """An error the engine finds in an event of a source that knows where its events came
    from (`EventSource`: a file reader) names the file and row, not the arrival number."""
    try:
        yield
    except EventError as error:
        if isinstance(events, EventSource):
            found = events.locate(error)
            if found is not error:
                raise found from None
        raise


def out_of_order(event: Event, row: int) -> EventError:
    """The error of an event earlier than one sent before it (the `row`-th sent)."""
    return EventError(
        f"event {event.id!r} has ts {event.ts!r}, earlier than an event before it; send "
        "events in timestamp order (sort the input by its timestamp), or give max_delay "
        "(--max-delay), the most an event may lag behind the latest timestamp",
        row=row,
        field="ts",
        late=True,
    )


def _limit(value: int | None) -> float:
    return math.inf if value is None else value


def _add_counters(totals: dict[str, int], counters: Mapping[str, int]) -> None:
    """Sum counters into `totals`, except `peak_*` ones, which take the maximum."""
    for name, value in counters.items():
        if name.startswith("peak_"):
            totals[name] = max(totals.get(name, 0), value)
        else:
            totals[name] = totals.get(name, 0) + value
