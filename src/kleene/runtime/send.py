"""The loops that send many events (`Engine.send_many`, `send_iter`, `kleene.match`): what
sending them one by one does, with the work per event hoisted out of the loop.

They are the engine's hot path: a measured third of the time on the CORE workload went to
the engine's layers around the plan's step before they were hoisted (docs/benchmarks-journal.md),
so each loop is written out whole, and `_send_unkeyed` repeats `_send_plain` without the
parts that do not apply to one state without timers.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Generator, Hashable, Iterable, Iterator, Mapping
from typing import Any, cast

from kleene.errors import EventError
from kleene.events import LARGEST_TIME, Event, Watermark, as_event, converted_layouts
from kleene.plans.base import Plan
from kleene.runtime.metrics import Metrics

__all__ = ["SendLoops", "at_fault"]

EventLike = Event | Mapping[str, Any]


class SendLoops(ABC):
    """The send loops of `kleene.runtime.engine.Engine`, which they are part of; the
    engine's attributes and methods they use are declared here."""

    plan: Plan[Any]
    _key: Any
    _states: dict[Hashable, Any]
    _finished: set[Hashable]
    _finishing: bool
    _ts_type: type
    _last_t: float | None
    _watermark: Watermark | None
    _arrivals: int
    _runs: bool
    _passes: frozenset[str] | None
    _live: dict[Hashable, int]
    _total_live: int
    _metrics: Metrics
    _timed: bool
    _timers: list[tuple[float, int, Hashable]]
    _watch: Any
    _evict_at: int
    _closed: bool
    _ordered: bool
    _reorder: Any
    _positions: int | None

    @abstractmethod
    def _check_time(self, event: Event) -> None: ...

    @abstractmethod
    def _fire(self, watermark: Watermark) -> list[Any]: ...

    @abstractmethod
    def _state(self, key: Hashable | None) -> Any: ...

    @abstractmethod
    def _peak(self, found: list[Any], where: Event | str) -> list[Any]: ...

    @abstractmethod
    def _count_live(self, key: Hashable | None, state: Any, live: int | None = None) -> None: ...

    @abstractmethod
    def _schedule(self, key: Hashable | None, state: Any) -> None: ...

    @abstractmethod
    def _finish(self, key: Hashable | None, state: Any) -> None: ...

    @abstractmethod
    def _evict(self, watermark: Watermark) -> None: ...

    @abstractmethod
    def _report(self, found: list[Any], sort: bool = True) -> list[Any]: ...

    @abstractmethod
    def _each(self, made: Iterable[Any], item: Event, arrival: int) -> Iterator[Any]: ...

    def _plain(self) -> bool:
        """Is `send` here the plain case `_send_plain` runs: an ordered plan, without
        reordering or stream positions?"""
        return (
            not self._closed and self._ordered and self._reorder is None and self._positions is None
        )

    def _send_plain(
        self,
        events: Iterable[EventLike],
        lazily: bool = False,
        sort: bool = True,
        takes: frozenset[str] | None = None,
    ) -> Generator[Iterable[Any], None, None]:
        """`send` of each event in the plain case (`_plain`), with what `send`, `_step`
        and `_plan_step` do per event hoisted out of the loop: what the same events sent
        one by one report, in the same order, with the same errors, one iterable per
        event that reports any. With `lazily`, the plan's `step_lazily` makes an event's
        outputs as they are read (`send_iter`): read them, or close them, before going
        on. Given `takes`, an `Event` of another type is not sent: it only fires the
        timers due before its time (`Engine.reach`); without, so is an event of a type no
        part of the query takes, after its time is checked."""
        plan = self.plan
        step_for = (lambda _: plan.step_lazily) if lazily else plan.step_for
        steps: dict[str, Callable[[Any, Event], Iterable[Any]]] = {}  # by type
        key_of = self._key
        states = self._states
        ts_type = self._ts_type
        last = -math.inf if self._last_t is None else self._last_t
        watermark = self._watermark
        arrivals = first = self._arrivals
        runs = self._runs
        live_runs, live, metrics = self.plan.live_runs, self._live, self._metrics
        timed = self._timed
        timers = self._timers
        finished, finishing = self._finished, self._finishing
        #: The types worth a step (None: every type): an event of another type, once its
        #: time is checked, only fires the timers due before it, as `takes` does.
        passes = self._passes if takes is None else None
        watch = self._watch
        item: Event | None = None
        try:
            for event in events:
                if takes is not None and cast(Event, event).type not in takes:
                    t = cast(Event, event).t
                    if timers and timers[0][0] < t:
                        moved = self._fire(Watermark(t, inclusive=False))
                        if moved:
                            yield self._report(moved, sort)
                    continue
                item = event if isinstance(event, Event) and event.id is not None else None
                if item is None:
                    item = as_event(event, arrivals)
                arrivals += 1
                if watch is not None:
                    watch.see(item)
                    if watch.done:
                        watch = self._watch = None
                t = item.t
                if (
                    t < last
                    or item.ts.__class__ is not ts_type
                    or (watermark is not None and watermark.settles(t))
                ):
                    self._arrivals = arrivals  # the row an error names
                    self._last_t = None if last == -math.inf else last
                    self._check_time(item)
                    ts_type = self._ts_type
                last = t
                # (the earliest deadline due: a stale one only costs its heap entry's pop)
                fired = (
                    self._fire(Watermark(t, inclusive=False))
                    if timers and timers[0][0] < t
                    else None
                )
                kind = item.type
                step = steps.get(kind)
                if step is None:
                    if passes is not None and kind not in passes:
                        if fired:  # the only output an event no part of the query takes makes
                            yield self._report(fired, sort)
                        continue
                    step = steps[kind] = step_for(kind)
                key = None if key_of is None else key_of(item)
                state = states.get(key)
                if state is None:
                    if key in finished:  # the plan will report nothing more there
                        if fired:
                            yield self._report(fired, sort)
                        continue
                    state = self._state(key)
                made: Any = step(state, item)
                # (None: step_lazily's iterable, to read them from)
                found = made if not lazily or type(made) is list else None
                if found and len(found) > metrics.peak_matches:
                    found = self._peak(found, item)
                if runs:
                    now = live_runs(state)
                    if now != live.get(key, 0):
                        self._count_live(key, state, now)
                    else:  # what _count_live does when the count stays
                        metrics.run_steps += self._total_live
                if timed:
                    self._schedule(key, state)
                if finishing and self.plan.finished(state):
                    self._finish(key, state)
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
            at_fault(error, item, arrivals)
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
            and not (self._timed or self._runs or self._timers or self._finishing)
            and self._watermark is None
        )

    def _send_unkeyed(
        self, events: Iterable[EventLike], sort: bool = True
    ) -> Generator[list[Any], None, None]:
        """`_send_plain` without what does not apply in the case `_unkeyed` names: no key
        to find a state by, no timers to fire, deadlines to set, runs to count or states to
        evict. What the same events sent one by one report, in the same order, with the
        same errors (1.2x on the CORE workload's P0, where the loop around the plan's step
        cost a quarter of the time)."""
        step_for = self.plan.step_for
        steps: dict[str, Callable[[Any, Event], list[Any]]] = {}  # by type: `Plan.step_for`
        state = self._states.get(None)
        ts_type = self._ts_type
        last = -math.inf if self._last_t is None else self._last_t
        arrivals = first = self._arrivals
        metrics = self._metrics
        watch = self._watch
        takes = self._passes
        layouts = converted_layouts()
        item: Event | None = None
        try:
            for event in events:
                if event.__class__ is dict and takes is not None:
                    kind = event.get("type")
                    if (
                        kind.__class__ is str
                        and kind not in takes
                        and kind
                        and _passed_over(event, ts_type, last, layouts)
                    ):
                        arrivals += 1
                        last = event["ts"]
                        continue
                item = event if isinstance(event, Event) and event.id is not None else None
                if item is None:
                    item = as_event(event, arrivals)
                arrivals += 1
                if watch is not None:
                    watch.see(item)
                    if watch.done:
                        watch = self._watch = None
                t = item.t
                if t < last or item.ts.__class__ is not ts_type:
                    self._arrivals = arrivals  # the row an error names
                    self._last_t = None if last == -math.inf else last
                    self._check_time(item)
                    ts_type = self._ts_type
                last = t
                step = steps.get(item.type)
                if step is None:
                    if takes is not None and item.type not in takes:
                        continue  # (as `_plan_step` passes over it)
                    step = steps[item.type] = step_for(item.type)
                if state is None:
                    state = self._state(None)
                found = step(state, item)
                if found:
                    if len(found) > metrics.peak_matches:
                        found = self._peak(found, item)
                    yield self._report(found, sort)
        except EventError as error:
            at_fault(error, item, arrivals)
            raise
        finally:
            self._stopped(arrivals - first, arrivals, last)


def _passed_over(
    item: dict[str, Any], ts_type: type, last: float, layouts: Container[tuple[Any, ...]]
) -> bool:
    """May `_send_unkeyed` pass over a mapping of a type no part of the query takes,
    without making an event of it (the plan's step would make nothing of it: `kleene.Queries`
    leaves such events out of a query's share too)? Yes when it is well formed: its keys
    laid out as those of mappings made into events before (`layouts`: none names a bad
    attribute), and its `ts` a finite number of the kind the stream's times have, not
    before the latest. Anything else is made an event, and its error named as before. Only
    the time moves, and the arrival count (so a row named, and a default id, stay what
    they were)."""
    ts: Any = item.get("ts")
    if ts.__class__ is not ts_type:
        return False
    if ts.__class__ is int:
        finite = -LARGEST_TIME <= ts <= LARGEST_TIME
    elif ts.__class__ is float:
        finite = ts - ts == 0.0
    else:
        return False
    return finite and ts >= last and tuple(item) in layouts


def at_fault(error: EventError, item: Event | None, arrival: int) -> None:
    """An error met while sending `item`: without an event, it is `item`'s (where, for a
    reader to name the file and row); when the event at fault is `item`, the error names
    its arrival number as its row (a reader finds the file and row by it when ids are the
    file's own: `kleene.runtime.engine.EventSource`). Without `item`, the mapping after
    the `arrival` before it could not be made an event: the error names its row."""
    if item is None:
        unconverted(error, arrival)
        return
    if error.event is None:
        error.event = item
    if error.event is item and error.row is None and error.source is None:
        error.row = arrival


def unconverted(error: EventError, arrivals: int) -> None:
    """An error making an event of the mapping sent after `arrivals` others: it names that
    mapping's row (from 1), as a reader names a file's (`{"typ": "B"}` third in a list is
    "row 3, field 'type': ...")."""
    if error.row is None and error.source is None:
        error.row = arrivals + 1
