"""Exact reordering of a stream whose disorder is bounded (`max_delay`), and the paper's
Cleanse operator for the speculative `afa` plan (`speculation`).

Events wait in a heap and leave it in (timestamp, arrival) order once the *watermark*, the
largest timestamp seen minus `max_delay`, has reached them; `advance_to(t)` (all events up
to `t` sent) and `release_all()` (the stream ended) let the rest go. An event older than the
watermark is *late*: the plan has moved past its time, so it cannot be placed exactly. What
happens to it is the caller's choice (`ON_LATE`): counted and dropped, an error, or kept in a
list. Nothing is dropped without being counted.

>>> from kleene.events import Event
>>> buffer = Reorder(max_delay=2, on_late="collect")
>>> [e.id for t, i in [(1, "a"), (3, "b"), (2, "c"), (6, "d")]
...  for e in buffer.push(Event("A", t, {}, id=i))]
['a', 'c', 'b']
>>> buffer.push(Event("A", 3, {}, id="e"))  # the watermark is 6 - 2 = 4: e is late
[]
>>> [e.id for e in buffer.late], [e.id for e in buffer.release_all()]
(['e'], ['d'])
"""

from __future__ import annotations

import heapq
import math
from datetime import timedelta
from typing import Literal

from kleene.compiler.options import Options
from kleene.errors import EventError, KleeneError
from kleene.events import Event, Watermark

__all__ = ["ON_LATE", "OnLate", "Reorder", "delay_units"]

OnLate = Literal["count", "raise", "collect"]
ON_LATE: tuple[OnLate, ...] = ("count", "raise", "collect")


def delay_units(max_delay: float | timedelta, options: Options) -> float:
    """`max_delay` in timestamp units: a number is already in them, a `timedelta` is
    converted by the query's `time_unit`."""
    if isinstance(max_delay, timedelta):
        return options.window_length(max_delay.total_seconds(), "s")
    if isinstance(max_delay, bool) or not isinstance(max_delay, int | float):
        raise KleeneError(f"max_delay is a number or a timedelta, not {max_delay!r}")
    if not max_delay >= 0:
        raise KleeneError(f"max_delay cannot be negative, not {max_delay!r}")
    return max_delay


class Reorder:
    """A bounded-disorder buffer; see the module docstring. It holds only plain data (the
    heap, the highest timestamp, the late events), so it pickles."""

    def __init__(self, max_delay: float, on_late: OnLate = "count", speculation: float = 0) -> None:
        if on_late not in ON_LATE:
            raise EventError(f"on_late is one of {', '.join(ON_LATE)}, not {on_late!r}")
        if not speculation >= 0:
            raise KleeneError(f"speculation cannot be negative, not {speculation!r}")
        self.max_delay = max_delay
        self.on_late = on_late
        #: The paper's Cleanse factor σ: events up to σ after the watermark leave at once,
        #: possibly out of order (0: in order; inf: as they come).
        self.speculation = speculation
        self.heap: list[tuple[float, int, Event]] = []
        self.arrivals = 0
        #: No event earlier than `floor` (or at it, when `at_floor`) can be placed any more.
        self.floor = -math.inf
        self.at_floor = False
        self.high = -math.inf
        self.late: list[Event] = []
        self.dropped = 0

    @property
    def watermark(self) -> float:
        """The largest timestamp seen minus `max_delay` (-inf before the first event)."""
        return self.high - self.max_delay

    def push(self, event: Event, row: int | None = None) -> list[Event]:
        """Take one event; return the events that may now go to the plan, in order. `row`
        (the event's arrival number, from 1) names it in the error a late event may raise."""
        t = event.t
        if t < self.floor or (self.at_floor and t == self.floor):
            self._late(event, row)
            return []
        if self.speculation == math.inf:  # every event leaves at once: only the floor moves
            if t > self.high:
                self.high = t
                if t - self.max_delay > self.floor:
                    self.floor, self.at_floor = t - self.max_delay, False
            return [event]
        heap = self.heap
        heapq.heappush(heap, (t, self.arrivals, event))
        self.arrivals += 1
        if t > self.high:
            self.high = t
            watermark = t - self.max_delay
            if watermark > self.floor:
                self.floor, self.at_floor = watermark, False
        limit = math.inf if self.speculation == math.inf else self.floor + self.speculation
        out = []
        while heap and heap[0][0] < limit:
            out.append(heapq.heappop(heap)[2])
        return out

    def remove(self, event: Event) -> bool:
        """Withdraw a held event (same type, timestamp and id); False when none is held."""
        for position, (t, _, held) in enumerate(self.heap):
            if t == event.t and held.id == event.id and held.type == event.type:
                self.heap[position] = self.heap[-1]
                self.heap.pop()
                heapq.heapify(self.heap)
                return True
        return False

    def advance_to(self, t: float) -> list[Event]:
        """Every event up to and including `t` has been sent: release them."""
        if t > self.floor or (t == self.floor and not self.at_floor):
            self.floor, self.at_floor = t, True
        return self._release(Watermark(t))

    def release_all(self) -> list[Event]:
        """The stream ended: everything still held, in order."""
        return self._release(Watermark(math.inf))

    def __len__(self) -> int:
        return len(self.heap)

    def _release(self, watermark: Watermark) -> list[Event]:
        """The held events the watermark settles, in (timestamp, arrival) order."""
        out: list[Event] = []
        heap = self.heap
        while heap and watermark.settles(heap[0][0]):
            out.append(heapq.heappop(heap)[2])
        return out

    def _late(self, event: Event, row: int | None) -> None:
        if self.on_late == "raise":
            raise EventError(
                f"event {event.id!r} has ts {event.ts!r}, more than max_delay="
                f"{self.max_delay:g} behind the latest timestamp seen ({self.high!r}) or "
                "behind advance_to(); raise max_delay (--max-delay), or count late events "
                "(on_late='count')",
                row=row,
                field="ts",
                late=True,
            )
        self.dropped += 1
        if self.on_late == "collect":
            self.late.append(event)
