"""The engine: feeds events to a compiled plan, one state per partition key, and moves time.

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
import math
from collections.abc import Generator, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from itertools import count
from typing import Any, Literal

from kleene import plans
from kleene.compiler.analysis import Analysis
from kleene.compiler.evaluate import returned_values
from kleene.compiler.functions import known_functions
from kleene.compiler.growth import tripped
from kleene.compiler.options import Options
from kleene.compiler.schema import (
    AttributeWatch,
    attributes_read,
    check_columns,
    check_time_scale,
    counts_real_time,
)
from kleene.errors import EventError, KleeneError, LimitError
from kleene.events import Event, Watermark, as_event, numeric_time
from kleene.io.readers import EventReader
from kleene.language.lead.ast import Rule
from kleene.language.sase.ast import Pattern
from kleene.language.text import UNITS
from kleene.matches import Match, Retraction, Timeout, net
from kleene.plans.afa import Afa, AfaPlan, Arc
from kleene.plans.afa.model import Lifetime
from kleene.plans.base import Plan
from kleene.runtime.metrics import Metrics
from kleene.runtime.reorder import OnLate, Reorder, delay_units

__all__ = ["Engine", "check_input", "fewer_collections", "match", "match_iter"]

EventLike = Event | Mapping[str, Any]
#: How arcs added while the stream runs get their lifetimes: after the latest event
#: ("default"), or as the caller gives them ("explicit").
ArcLifetimes = Literal["default", "explicit"]
#: An unordered plan's states hear at least one punctuation in this many for clean-up.
SWEEP = 16


class Engine:
    """Runs a pattern over events arriving one by one.

    Events must come in timestamp order (equal timestamps keep their arrival order), unless
    `max_delay` bounds their disorder: then the engine holds each event until the largest
    timestamp seen, minus `max_delay`, has reached it, and feeds the plan in (timestamp,
    arrival) order, so the matches are those of the sorted stream. An event that comes later
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

    `pattern` may be query text, a `Pattern`, an already compiled `Plan` or an `Afa`. With
    `partition=True` (the default) the engine splits the stream by the pattern's
    partition key (its equivalence tests and equalities) and keeps one state per key (events
    lacking a key value share one more); this never changes the matches, only the cost.
    """

    def __init__(
        self,
        pattern: Pattern | Rule | str | Plan[Any] | Afa,
        plan: str = "auto",
        *,
        partition: bool = True,
        max_delay: float | timedelta | None = None,
        on_late: OnLate = "count",
        speculation: float | None = None,
        arc_lifetimes: ArcLifetimes = "default",
        **options: Any,
    ) -> None:
        if isinstance(pattern, Afa):
            if plan not in ("auto", "afa"):
                raise KleeneError(f"an AFA runs on plan 'afa', not {plan!r}")
            pattern = AfaPlan.of(pattern, Options.build(**{"name": pattern.name, **options}))
            options = {}
        if isinstance(pattern, Plan):
            if options or plan != "auto":
                raise KleeneError("an already compiled plan takes no plan name or options")
            self.plan = pattern
        elif not isinstance(pattern, str | Pattern | Rule):
            raise KleeneError(
                "Engine takes query text, a Pattern or a compiled plan, not "
                f"{type(pattern).__name__} {pattern!r}"
            )
        else:
            self.plan = plans.compile(pattern, plan, **options)
        self._metrics = Metrics()
        #: Does the query count real time (`WITHIN 10 min`)? Then numeric timestamps must be
        #: in the engine's time unit, not epoch milliseconds (`check_time_scale`).
        self._real_time = counts_real_time(self.plan)
        self._unit_seconds = UNITS[self.plan.options.time_unit][1]
        analysis = getattr(self.plan, "analysis", None)
        self._analysis = analysis if isinstance(analysis, Analysis) else None
        #: RETURN: the values each reported match carries, and the functions they may call.
        self._returns = () if analysis is None else analysis.pattern.returns
        self._functions = known_functions(self.plan.options.functions)
        reads = attributes_read(self.plan)
        #: Warns once about attributes the first events of their type never carry.
        self._watch = AttributeWatch(reads) if reads else None
        if self._watch is not None:
            self._metrics.missing_attributes = self._watch.missing
        self._live: dict[Hashable, int] = {}
        self._total_live = 0
        # the guards (kleene.compiler.growth): None is no limit
        limits = self.plan.options
        self._cap_total = _limit(limits.max_partial_matches)
        self._cap_key = _limit(limits.max_partial_matches_per_key)
        self._cap_matches = _limit(limits.max_matches_per_event)
        self._drop = limits.on_limit == "drop"
        if not partition and self.plan.emits_events and self.plan.partition_key is not None:
            raise KleeneError(
                "a LEAD rule's PARTITION BY is part of its meaning (the rule runs once per "
                "partition); partition=False would change what it emits"
            )
        self._key = self.plan.partition_key if partition else None
        self._states: dict[Hashable, Any] = {}
        #: Drop idle states once there are this many (doubling: amortized O(1) per event).
        self._evict_at = 64
        self._retired: dict[str, int] = {}  # the counters of dropped states
        self._timers: list[tuple[float, int, Hashable]] = []
        self._scheduled: dict[Hashable, float] = {}
        self._tiebreak = count()
        self._arrivals = 0
        #: The next event's position in the stream, for a count window (None: no count).
        self._positions: int | None = 0 if getattr(self.plan, "count_window", None) else None
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
        self._ordered = self.plan.ordered
        #: Does the plan report timed-out partial matches (`Timeout`s) too?
        self._timeouts = self.plan.options.timeouts
        #: May the plan's states have deadlines (timeouts, negations waiting)?
        self._timed = self.plan.timed
        #: Does the plan count partial matches (runs)? (Else there is nothing to count.)
        self._runs = type(self.plan).live_runs is not Plan.live_runs
        if speculation is not None and self._ordered:
            raise KleeneError(
                f"speculation is for a plan that takes events in any order (plan='afa'), not "
                f"{self.plan.name!r}"
            )
        if arc_lifetimes not in ("default", "explicit"):
            raise KleeneError(f"arc_lifetimes is 'default' or 'explicit', not {arc_lifetimes!r}")
        self._arc_lifetimes = arc_lifetimes
        #: The arc punctuation t_a: no arc-event will begin before it (explicit lifetimes).
        self._arc_floor = -math.inf
        #: The latest timestamp received (t of the paper's t_curr).
        self._latest = -math.inf
        if max_delay is not None:
            sigma = 0 if self._ordered else math.inf if speculation is None else speculation
            self._reorder = Reorder(delay_units(max_delay, self.plan.options), on_late, sigma)

    def _ready(self) -> None:
        """Refuse a call to a closed engine, or one whose `send_iter` is under way."""
        if self._closed:
            raise KleeneError("the engine is closed; make a new one for a new stream")
        if self._busy:
            raise KleeneError(
                "the engine is still sending events for send_iter: read its matches to the "
                "end, or close() the iterator, first"
            )

    def send(self, event: EventLike) -> list[Match]:
        """Feed one event (an `Event` or a mapping with type, ts, attributes)."""
        self._ready()
        return self._send_one(event)

    def _send_one(self, event: EventLike) -> list[Match]:
        item = as_event(event, default_id=self._arrivals)
        self._arrivals += 1
        self._metrics.events += 1
        try:
            return self._send(item)
        except EventError as error:
            _at_fault(error, item, self._arrivals)
            raise

    def _send(self, item: Event) -> list[Match]:
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

    def _send_unordered(self, item: Event) -> list[Match]:
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
            found = self._insert(item)
            return self._report(found) if found else found
        floor, at_floor = reorder.floor, reorder.at_floor
        reported = []
        for each in reorder.push(item, self._arrivals):
            reported.extend(self._insert(each))
        if reorder.floor != floor or reorder.at_floor != at_floor:
            watermark = self._watermark = Watermark(reorder.floor, inclusive=reorder.at_floor)
            self._sweep_in -= 1
            timers = self._timers
            if self._sweep_in <= 0 or (timers and watermark.settles(timers[0][0])):
                reported += self._punctuate(watermark, lazily=True)
        return self._report(reported) if reported else reported

    def _insert(self, item: Event) -> list[Match]:
        """Feed one event to an unordered plan's state; what it reports (not counted yet:
        see `_report`)."""
        return self._plan_step(item)

    def _plan_step(self, item: Event) -> list[Match]:
        """The plan's step on the event's partition state, within the guards; the runs
        counted and the state's deadline scheduled, as the plan has them."""
        key = None if self._key is None else self._key(item)
        state = self._states.get(key)
        if state is None:
            state = self._state(key)
        try:
            found = self.plan.step(state, item)
        except EventError as error:
            error.event = error.event or item
            raise
        if len(found) > self._cap_matches:
            found = self._cut(found, item)
        if self._runs:
            self._count_live(key, state)
        if self._timed:
            self._schedule(key, state)
        return found

    def _count_live(self, key: Hashable | None, state: Any) -> None:
        """Count the partition's runs, and check the guards when the count changed (the
        same counts passed them before)."""
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
            raise LimitError(
                tripped(
                    self._analysis, option, int(limit), f"{where}, after {self._arrivals:,} events"
                )
            )
        keep = min(self._cap_key, live - max(0, self._total_live - self._cap_total))
        dropped = self.plan.shed(state, max(0, int(keep)))
        self._metrics.partials_dropped += dropped
        self._live[key] = live - dropped
        self._total_live -= dropped

    def _advanced(self, state: Any, watermark: Watermark) -> list[Match]:
        """What the plan reports as time reaches `watermark`, within the guard."""
        found = self.plan.advance(state, watermark)
        if len(found) > self._cap_matches:
            return self._cut(found, f"as time reached {watermark.t!r}")
        return found

    def _cut(self, found: list[Match], where: Event | str) -> list[Match]:
        """One event (or one moment) completed more matches than `max_matches_per_event`:
        raise, or keep the first so many."""
        limit = int(self._cap_matches)
        if not self._drop:
            if isinstance(where, Event):
                where = f"at event {where.id!r} (ts {where.ts!r}, arrival {self._arrivals})"
            raise LimitError(tripped(self._analysis, "max_matches_per_event", limit, where))
        self._metrics.cut_events += 1
        return found[:limit]

    def _punctuate(self, watermark: Watermark, lazily: bool = False) -> list[Match]:
        """Tell the states of an unordered plan that time has reached `watermark` (the
        matches that decides), and drop the states it leaves idle. With explicit arc
        lifetimes the plan hears the effective punctuation, the earlier of the events' and
        the arcs' (section 5.4).

        Every state hears it, unless `lazily`: then the states whose deadline it passes
        hear it (their timeouts and negations are decided now); the rest is clean-up, so
        every state hears one punctuation in so many (`_sweep_in` counts them down), as many
        as there are states and at least `SWEEP` (amortized O(1) per event however many keys
        are live; state exceeds the window by at most that many events). `send` calls it
        lazily only when a deadline is due or a sweep is."""
        self._watermark = watermark
        watermark = self.punctuation or watermark
        keys: Iterable[Hashable | None]
        if not lazily or self._sweep_in <= 0:
            keys = list(self._states)
            self._sweep_in = max(len(keys), SWEEP)
        else:
            keys = self._due(watermark)
        reported: list[Match] = []
        for key in keys:
            state = self._states.get(key)
            if state is None:
                continue
            reported.extend(self._advanced(state, watermark))
            if self.plan.idle(state, watermark):
                _add_counters(self._retired, self.plan.counters(state))
                del self._states[key]
                self._scheduled.pop(key, None)
                self._total_live -= self._live.pop(key, 0)
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

    def retract(self, event: EventLike) -> list[Match]:
        """Withdraw an event sent before (the paper's Delete; `plan="afa"` only): the
        retractions of the matches it was part of, and any match its absence makes. The event
        is named by its type, timestamp and id; one never sent, or one older than the last
        punctuation (`advance_to`, or the watermark of `max_delay`), is an `EventError`."""
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

    # -- dynamic patterns: arcs as a second input (plan="afa", an AFA written directly) ----

    def add_arc(
        self,
        arc: Arc | str,
        *,
        final: bool = False,
        lifetime: tuple[Any, Any] | None = None,
    ) -> list[Match]:
        """Add an arc to the running AFA (an `Arc`, or one ARC line of the text form); its
        target may be a new state, final with `final=True`. By default (the paper's default
        operation mode) it fires for the events after the latest timestamp received, so no
        match changes now. With `Engine(..., arc_lifetimes="explicit")`, `lifetime=(start,
        end)` gives the timestamps it fires for, [start, end) (end None: no end), and the
        events already received there are matched again: the retractions and new matches
        that gives are returned. A start before `advance_arcs_to` is an error."""
        plan = self._afa_plan()
        if lifetime is None:
            if self._arc_lifetimes == "explicit":
                raise KleeneError(
                    "with arc_lifetimes='explicit', add_arc needs lifetime=(start, end)"
                )
            plan.add_arc(arc, Lifetime(self._now(), after=True), final)
            return []
        if self._arc_lifetimes != "explicit":
            raise KleeneError(
                "lifetime= is for Engine(..., arc_lifetimes='explicit'); by default an arc "
                "fires for the events after the latest one received"
            )
        start = self._arc_time(lifetime[0], "its lifetime's start")
        end = math.inf if lifetime[1] is None else numeric_time(lifetime[1])
        plan.add_arc(arc, Lifetime(start, end), final)
        return self._reevaluate(start)

    def remove_arc(self, name: str, *, end: Any = None) -> list[Match]:
        """End an arc's lifetime (the arc-event's retraction). By default it still fires for
        the events up to the latest timestamp received, so no match changes now; with
        explicit lifetimes, `end` is the first timestamp it no longer fires for, and the
        events received from there are matched again."""
        plan = self._afa_plan()
        if self._arc_lifetimes != "explicit":
            if end is not None:
                raise KleeneError("end= is for Engine(..., arc_lifetimes='explicit')")
            plan.end_arc(name, self._now(), through=True)
            return []
        if end is None:
            raise KleeneError("with arc_lifetimes='explicit', remove_arc needs end=")
        at = self._arc_time(end, "the end of its lifetime")
        plan.end_arc(name, at)
        return self._reevaluate(at)

    def advance_arcs_to(self, ts: Any) -> list[Match]:
        """The arc punctuation (explicit lifetimes): no arc will be added or removed for a
        timestamp before `ts`. The plan cleans up state only as far as both punctuations,
        the events' (`advance_to`) and this one, allow."""
        self._afa_plan()
        if self._arc_lifetimes != "explicit":
            raise KleeneError(
                "advance_arcs_to is for Engine(..., arc_lifetimes='explicit'); by default "
                "arcs change only for events after the latest one received"
            )
        t = numeric_time(ts)
        if t < self._arc_floor:
            raise KleeneError(
                f"advance_arcs_to({ts!r}) goes back: arcs were already punctuated up to "
                f"{self._arc_floor!r}"
            )
        self._arc_floor = t
        if self._watermark is None:
            return []
        return self._report(self._punctuate(self._watermark))

    def _afa_plan(self) -> AfaPlan:
        self._ready()
        if not isinstance(self.plan, AfaPlan):
            raise KleeneError(
                f"arcs change while the stream runs on plan 'afa', not {self.plan.name!r}"
            )
        return self.plan

    def _now(self) -> float:
        """t_curr: the latest of the event punctuation and the timestamps received."""
        punctuated = -math.inf if self._watermark is None else self._watermark.t
        return max(self._latest, punctuated)

    def _arc_time(self, ts: Any, what: str) -> float:
        t = numeric_time(ts)
        if t < self._arc_floor:
            raise KleeneError(
                f"an arc change at {ts!r} ({what}) comes before the arc punctuation "
                f"{self._arc_floor!r} (advance_arcs_to): the state before it may be gone"
            )
        return t

    def _reevaluate(self, since: float) -> list[Match]:
        plan = self._afa_plan()
        reported: list[Match] = []
        for key, state in self._states.items():
            reported.extend(plan.reevaluate(state, since))
            self._count_live(key, state)
        return self._report(reported)

    @property
    def punctuation(self) -> Watermark | None:
        """The output punctuation: every match reported that ends before it (at or before
        it, when inclusive) is final, never withdrawn (None: no punctuation yet). With
        explicit arc lifetimes it is the earlier of the events' and the arcs' punctuations.

        >>> import kleene
        >>> engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 5", plan="afa")
        >>> engine.punctuation is None
        True
        >>> _ = engine.advance_to(3)
        >>> engine.punctuation
        Watermark(t=3, inclusive=True)
        """
        watermark = self._watermark
        if watermark is not None and self._arc_lifetimes == "explicit":
            arcs = Watermark(self._arc_floor, inclusive=False)
            if arcs.t < watermark.t or (arcs.t == watermark.t and watermark.inclusive):
                return arcs
        return watermark

    @property
    def late(self) -> list[Event]:
        """The late events kept with `on_late="collect"` (see the class docstring)."""
        return [] if self._reorder is None else self._reorder.late

    def _step(self, item: Event) -> list[Match]:
        """Feed one event, in order, to its partition's state; the matches it makes final
        (not reported yet: see `_report`)."""
        fired = self._fire(Watermark(item.t, inclusive=False)) if self._timers else None
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

    def send_many(self, events: Iterable[EventLike]) -> list[Match]:
        """Feed events in order; the matches they make final, in the order reported (with
        fewer garbage collections meanwhile: see `fewer_collections`)."""
        return self._send_many(events)

    def _send_many(self, events: Iterable[EventLike], sort: bool = True) -> list[Match]:
        """`send_many`; with `sort=False`, the plain case leaves each event's matches in
        the order the plan made them, for a caller that sorts them all (`match`)."""
        self._ready()
        reported: list[Match] = []
        with fewer_collections(), _located(events):
            if self._plain():
                send = self._send_unkeyed if self._unkeyed() else self._send_plain
                for found in send(events, sort=sort):
                    reported += found
            else:
                for event in events:
                    reported.extend(self._send_one(event))
        return reported

    def send_iter(self, events: Iterable[EventLike]) -> Iterator[Match]:
        """Feed events in order, and hand out the matches as they are made: each event's
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
            with _located(events):
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

    def _plain(self) -> bool:
        """Is `send` here the plain case `_send_plain` runs: an ordered plan, without
        reordering or stream positions?"""
        return (
            not self._closed
            and self._ordered
            and self._reorder is None
            and self._positions is None
            and not self.plan.emits_events
        )

    def _send_plain(
        self, events: Iterable[EventLike], lazily: bool = False, sort: bool = True
    ) -> Generator[Iterable[Match], None, None]:
        """`send` of each event in the plain case (`_plain`), with what `send`, `_step`
        and `_plan_step` do per event hoisted out of the loop: what the same events sent
        one by one report, in the same order, with the same errors, one iterable per
        event that reports any. (Issue 19: the engine's layers were a third of the time on
        the peers' P0.) With `lazily`, the plan's `step_lazily` makes an event's matches as
        they are read (`send_iter`): read them, or close them, before going on."""
        step = self.plan.step_lazily if lazily else self.plan.step
        key_of = self._key
        states = self._states
        ts_type = self._ts_type
        last = -math.inf if self._last_t is None else self._last_t
        watermark = self._watermark
        arrivals = first = self._arrivals
        cap = self._cap_matches
        runs = self._runs
        live_runs, live, metrics = self.plan.live_runs, self._live, self._metrics
        timed = self._timed
        timers = self._timers
        item: Event | None = None
        try:
            for event in events:
                item = event if type(event) is Event and event.id is not None else None
                if item is None:
                    item = as_event(event, default_id=arrivals)
                arrivals += 1
                watch = self._watch
                if watch is not None:
                    watch.see(item)
                    if watch.done:
                        self._watch = None
                t = item.t
                if (
                    t < last
                    or type(item.ts) is not ts_type
                    or (watermark is not None and watermark.settles(t))
                ):
                    self._arrivals = arrivals  # the row an error names
                    self._last_t = None if last == -math.inf else last
                    self._check_time(item)
                    ts_type = self._ts_type
                last = t
                fired = self._fire(Watermark(t, inclusive=False)) if timers else None
                key = None if key_of is None else key_of(item)
                state = states.get(key)
                if state is None:
                    state = self._state(key)
                made = step(state, item)
                found = made if type(made) is list else None  # None: step_lazily's iterable
                if found is not None and len(found) > cap:
                    found = self._cut(found, item)
                if runs:
                    if live_runs(state) != live.get(key, 0):
                        self._count_live(key, state)
                    else:  # what _count_live does when the count stays
                        metrics.run_steps += self._total_live
                if timed:
                    self._schedule(key, state)
                if len(states) > self._evict_at:
                    self._evict(Watermark(t, inclusive=False))
                if found is None:  # the matches are made as they are read
                    if fired:
                        yield self._report(fired)
                    yield self._each(made, item, arrivals)
                elif fired:
                    fired.extend(found)
                    yield self._report(fired, sort)
                elif found:
                    yield self._report(found, sort)
        except EventError as error:
            _at_fault(error, item, arrivals)
            raise
        finally:
            self._stopped(arrivals - first, arrivals, last)

    def _stopped(self, sent: int, arrivals: int, last: float) -> None:
        """Note where a loop of `send_many` stopped (at the end, or at an error): how many
        events it sent, the arrivals so far and the latest time (-inf: none yet)."""
        self._metrics.events += sent
        self._arrivals = arrivals
        if last != -math.inf:
            self._last_t = last

    def _unkeyed(self) -> bool:
        """Is `send_many` here the case `_send_unkeyed` runs: the plain case (`_plain`) of
        one state (no partition key), without timers, deadlines, run counts or watermark?"""
        return (
            self._key is None
            and not (self._timed or self._runs or self._timers)
            and self._watermark is None
        )

    def _send_unkeyed(
        self, events: Iterable[EventLike], sort: bool = True
    ) -> Generator[list[Match], None, None]:
        """`_send_plain` without what does not apply in the case `_unkeyed` names: no key
        to find a state by, no timers to fire, deadlines to set, runs to count or states to
        evict. What the same events sent one by one report, in the same order, with the
        same errors. (Issue 19: 1.2x on the peers' P0, where the loop around the plan's
        step cost a quarter of the time.)"""
        step = self.plan.step
        state = self._states.get(None)
        ts_type = self._ts_type
        last = -math.inf if self._last_t is None else self._last_t
        arrivals = first = self._arrivals
        cap = self._cap_matches
        watch = self._watch
        item: Event | None = None
        try:
            for event in events:
                item = event if type(event) is Event and event.id is not None else None
                if item is None:
                    item = as_event(event, default_id=arrivals)
                arrivals += 1
                if watch is not None:
                    watch.see(item)
                    if watch.done:
                        watch = self._watch = None
                t = item.t
                if t < last or type(item.ts) is not ts_type:
                    self._arrivals = arrivals  # the row an error names
                    self._last_t = None if last == -math.inf else last
                    self._check_time(item)
                    ts_type = self._ts_type
                last = t
                if state is None:
                    state = self._state(None)
                found = step(state, item)
                if found:
                    if len(found) > cap:
                        found = self._cut(found, item)
                    yield self._report(found, sort)
        except EventError as error:
            _at_fault(error, item, arrivals)
            raise
        finally:
            self._stopped(arrivals - first, arrivals, last)

    def advance_to(self, ts: float | Any) -> list[Match]:
        """Declare that every event with a timestamp up to and including `ts` has been sent.
        A time before an earlier `advance_to` (or the watermark of `max_delay`, for a plan
        taking events in any order) is an error: a punctuation does not go back."""
        self._ready()
        t = numeric_time(ts)
        reported: list[Match] = []
        if self._watermark is not None and t < self._watermark.t:
            raise KleeneError(
                f"advance_to({ts!r}) goes back: time was already punctuated up to "
                f"{self._watermark.t!r}"
            )
        if not self._ordered:
            if self._reorder is not None:
                for item in self._reorder.advance_to(t):
                    reported.extend(self._insert(item))
            return self._report(reported + self._punctuate(Watermark(t)))
        if self._reorder is not None:
            for item in self._reorder.advance_to(t):
                reported.extend(self._step(item))
        if self._watermark is not None and t == self._watermark.t:
            return self._report(reported)
        self._watermark = Watermark(t)
        reported.extend(self._fire(self._watermark))
        return self._report(reported)

    def close(self) -> list[Match]:
        """End the stream: report every match still waiting for time to pass."""
        if self._closed:
            return []
        self._ready()
        end = Watermark(math.inf)
        reported: list[Match] = []
        if self._reorder is not None:
            step = self._step if self._ordered else self._insert
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
        """How many partition states the engine holds now (idle ones are dropped)."""
        return len(self._states)

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
            raise EventError(
                f"event {event.id!r} has ts {event.ts!r}, earlier than an event before it; "
                "send events in timestamp order (sort the input by its timestamp), or give "
                "max_delay (--max-delay), the most an event may lag behind the latest timestamp",
                row=self._arrivals,
                field="ts",
                late=True,
            )
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

    def _evict(self, watermark: Watermark) -> None:
        """Drop the partition states the plan says no later event needs."""
        for key, state in list(self._states.items()):
            if key not in self._scheduled and self.plan.idle(state, watermark):
                _add_counters(self._retired, self.plan.counters(state))
                del self._states[key]
                self._total_live -= self._live.pop(key, 0)
        self._evict_at = max(64, 2 * len(self._states))

    def _schedule(self, key: Hashable | None, state: Any) -> None:
        deadline = self.plan.deadline(state)
        if deadline is not None and self._scheduled.get(key) != deadline:
            self._scheduled[key] = deadline
            heapq.heappush(self._timers, (deadline, next(self._tiebreak), key))

    def _fire(self, watermark: Watermark) -> list[Match]:
        """Advance the states whose deadline `watermark` has reached."""
        reported: list[Match] = []
        while self._timers and watermark.settles(self._timers[0][0]):
            deadline, _, key = heapq.heappop(self._timers)
            if self._scheduled.get(key) != deadline:
                continue
            del self._scheduled[key]
            state = self._states[key]
            reported.extend(self._advanced(state, watermark))
            self._schedule(key, state)
        return reported

    def _each(self, made: Iterable[Match], item: Event, arrival: int) -> Iterator[Match]:
        """`_report` for the matches of one event (`item`, the `arrival`-th sent) made as
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
            _at_fault(error, item, arrival)
            raise
        finally:
            close = getattr(made, "close", None)
            if close is not None:
                close()

    def _report(self, matches: list[Match], sort: bool = True) -> list[Match]:
        """Sort the matches of an ordered plan (unless `sort` is False: the caller sorts
        them all later); an unordered plan's outputs keep their order (a retraction and a
        match equal to it must be applied as they come). Each match gets the query's
        RETURN values."""
        if self._returns:
            for found in matches:
                found.returning(returned_values(self._returns, found.bindings, self._functions))
        if self.plan.emits_events:  # a LEAD rule's events, in emission order
            if len(matches) > 1:
                matches.sort(key=_emitted_at)
            self._metrics.matches += len(matches)
            return matches
        if not self._ordered:
            withdrawn = sum(isinstance(m, Retraction) for m in matches)
            self._metrics.retractions += withdrawn
            self._metrics.matches += len(matches) - withdrawn
            return matches
        if sort and len(matches) > 1:
            matches.sort(key=Match.sort_key)
        if self._timeouts:
            timed_out = sum(isinstance(m, Timeout) for m in matches)
            self._metrics.timeouts += timed_out
            self._metrics.matches += len(matches) - timed_out
        else:
            self._metrics.matches += len(matches)
        return matches


#: CPython's first-generation threshold while a batch of events runs (its default is 700).
GC_BATCH = 50_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often while a batch of events runs. Matches, and the events
    and tuples they hold, are many small containers that live on; at CPython's default
    threshold the collector walks the growing heap again and again, which took 60 % of the
    time on the peers' P4 (docs/benchmarks.md). The threshold of the first generation is
    raised to `GC_BATCH` for the batch and put back after (the setting is the process's,
    so another thread sees it meanwhile); nothing goes uncollected.

    >>> import gc
    >>> before = gc.get_threshold()
    >>> with fewer_collections():
    ...     gc.get_threshold()[0]
    50000
    >>> gc.get_threshold() == before
    True
    """
    first, *rest = gc.get_threshold()
    if first >= GC_BATCH:
        yield
        return
    gc.set_threshold(GC_BATCH, *rest)
    try:
        yield
    finally:
        gc.set_threshold(first, *rest)


def _at_fault(error: EventError, item: Event | None, arrival: int) -> None:
    """An error met while sending `item`: without an event, it is `item`'s (where, for a
    reader to name the file and row); when the event at fault is `item`, the error names
    its arrival number as its row (a reader finds the file and row by it when ids are the
    file's own: `EventReader.locate`)."""
    if error.event is None:
        error.event = item
    if item is not None and error.event is item and error.row is None and error.source is None:
        error.row = arrival


@contextmanager
def _located(events: Iterable[Any]) -> Iterator[None]:
    """An error the engine finds in an event read from a file names the file and row
    (`EventReader.locate`), not the event's arrival number."""
    try:
        yield
    except EventError as error:
        if isinstance(events, EventReader):
            located = events.locate(error)
            if located is not error:
                raise located from None
        raise


def _limit(value: int | None) -> float:
    return math.inf if value is None else value


def check_input(plan: Plan[Any], events: Iterable[Any]) -> Iterable[Any]:
    """The events, unchanged; when they come from a reader with a schema (CSV, Parquet,
    Arrow, pandas), the query's attributes are first checked against its columns
    (`check_columns`: an `EventError` for an attribute no column holds, before any event is
    matched), and a reader of Arrow batches (Parquet, Arrow, pandas) makes events only of
    the rows some variable can take (`kleene.io.prefilter`), when leaving the others out
    changes no match. Other events are handed back as they are (no layer per event)."""
    if not isinstance(events, EventReader):
        return events
    analysis = getattr(plan, "analysis", None)
    if events.arrow and events.keep is None and isinstance(analysis, Analysis):
        from kleene.io.prefilter import row_filter

        events.keep = None if plan.emits_events else row_filter(analysis, events.columns)
    return _checked(plan, events)


def _checked(plan: Plan[Any], events: EventReader) -> Iterator[Any]:
    iterator = iter(events)
    first = next(iterator, None)  # opens the input: its columns are known now
    if events.names is not None:
        check_columns(plan, events.names, events.where or events.source, events.roles())
    if first is not None:
        yield first
    yield from iterator


def _emitted_at(event: Any) -> float:
    t: float = event.t
    return t


def _add_counters(totals: dict[str, int], counters: Mapping[str, int]) -> None:
    """Sum counters into `totals`, except `peak_*` ones, which take the maximum."""
    for name, value in counters.items():
        if name.startswith("peak_"):
            totals[name] = max(totals.get(name, 0), value)
        else:
            totals[name] = totals.get(name, 0) + value


def match(
    pattern: Pattern | str | Afa,
    events: Iterable[EventLike],
    plan: str = "auto",
    **options: Any,
) -> list[Match]:
    """All matches of `pattern` in `events`, sorted by end time, start time and event ids.
    With a plan that takes events in any order (`afa`), the matches that remain once every
    retraction is applied.

    >>> import kleene
    >>> events = [{"type": t, "ts": i} for i, t in enumerate("AABBC")]
    >>> len(kleene.match("PATTERN SEQ(A a, B b, C c) WITHIN 1 hour", events))
    4
    """
    engine = Engine(pattern, plan, **options)
    with fewer_collections(), _located(events):
        # each event's matches are left unsorted: they are all sorted once, below
        found = engine._send_many(check_input(engine.plan, events), sort=False)
        found.extend(engine.close())
    if engine.plan.emits_events:  # a LEAD rule: its events, in emission order
        return found
    if not engine.plan.ordered:
        return net(found)
    found.sort(key=Match.sort_key)
    return found


def match_iter(
    pattern: Pattern | str | Afa,
    events: Iterable[EventLike],
    plan: str = "auto",
    **options: Any,
) -> Iterator[Match]:
    """The matches of `pattern` in `events` as they are made (`Engine.send_iter`), then
    those the end of the stream makes final: in the order reported, not sorted as `match`
    sorts them, and none held longer than it takes to hand it out. A plan that takes events
    in any order (`afa`) gives its `Retraction`s too, as they come.

    >>> import kleene
    >>> events = [{"type": t, "ts": i} for i, t in enumerate("AABBC")]
    >>> for m in kleene.match_iter("PATTERN SEQ(A a, B b, C c) WITHIN 1 hour", events):
    ...     print(m.ids())
    {'a': (0,), 'b': (2,), 'c': (4,)}
    {'a': (1,), 'b': (2,), 'c': (4,)}
    {'a': (0,), 'b': (3,), 'c': (4,)}
    {'a': (1,), 'b': (3,), 'c': (4,)}
    """
    engine = Engine(pattern, plan, **options)
    with _located(events):
        yield from engine.send_iter(check_input(engine.plan, events))
        yield from engine.close()
