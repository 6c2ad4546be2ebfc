"""The events a reference state has seen, addressed by arrival position."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from kleene.events import Event

__all__ = ["Stream"]


@dataclass
class Stream:
    """Events in arrival order; positions count from the first event ever appended, so they
    stay valid after old events are dropped."""

    events: list[Event] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    base: int = 0

    @property
    def end(self) -> int:
        """The position the next event will get."""
        return self.base + len(self.events)

    def append(self, event: Event) -> int:
        """Keep the event; its position."""
        events = self.events
        events.append(event)
        self.times.append(event.t)
        return self.base + len(events) - 1

    def __getitem__(self, position: int) -> Event:
        return self.events[position - self.base]

    def first_from(self, t: float) -> int:
        """The first position whose timestamp is at least `t`."""
        return self.base + bisect_left(self.times, t)

    def last_until(self, t: float) -> int:
        """The last position whose timestamp is at most `t` (base - 1 if none)."""
        return self.base + bisect_right(self.times, t) - 1

    def first_after(self, t: float) -> int:
        """The first position whose timestamp is more than `t`."""
        return self.base + bisect_right(self.times, t)

    def last_before(self, t: float) -> int:
        """The last position whose timestamp is less than `t` (base - 1 if none)."""
        return self.base + bisect_left(self.times, t) - 1

    def drop_to(self, position: int) -> None:
        """Forget the events before `position`."""
        cut = position - self.base
        if cut > 0:
            del self.events[:cut]
            del self.times[:cut]
            self.base += cut

    def first_at_seq(self, seq: int) -> int:
        """The first position whose event is at stream position (`Event.seq`) `seq` or
        later."""
        return self.base + bisect_left(self.events, seq, key=lambda event: event.seq or 0)

    def drop_before(self, t: float) -> None:
        """Forget the events older than `t`."""
        cut = bisect_left(self.times, t)
        if cut:
            del self.events[:cut]
            del self.times[:cut]
            self.base += cut
