"""Dynamic patterns (section 2.3): the arcs of an AFA written directly change while the
stream runs, through one handle on the engine that runs it, `kleene.afa.arcs(engine)`.

In the default mode (the paper's default operation mode) an arc added fires for the events
after t_curr (the latest of the timestamps received and the last punctuation) and one
removed still fires for the events up to it, so no match changes when it happens. With
`Engine(afa, arc_lifetimes="explicit")` the caller gives each change its time: the events
already received from there are matched again (the retractions and new matches that gives
are returned), and `advance_to(t)` is the arc punctuation, the promise that no arc changes
for a time before t (state is cleaned up only as far as both punctuations allow).

>>> import kleene
>>> rise = kleene.afa.read_afa('''
... AFA rise WITHIN 10
... REGISTER (n = 0)
... FINAL done
... ARC first: start -> up WHEN e.x > 0 SET n = 1
... ARC more: up -> up WHEN e.x > 0 SET n = r.n + 1
... ARC end: up -> done WHEN e.x < 0 AND r.n >= 3
... ''')
>>> engine = kleene.Engine(rise)
>>> arcs = kleene.afa.arcs(engine)
>>> for t, x in enumerate([1, 1, -1]):
...     _ = engine.send({"type": "T", "ts": t, "x": x})
>>> arcs.remove("end")
[]
>>> arcs.add("ARC end2: up -> done WHEN e.x < 0 AND r.n >= 2")
[]
>>> [m.ids()["events"] for m in engine.send_many(
...     [{"type": "T", "ts": t, "x": x} for t, x in [(3, 1), (4, 1), (5, -1)]])]
[(3, 4, 5)]
"""

from __future__ import annotations

import math
from typing import Any

from kleene.errors import KleeneError
from kleene.events import numeric_time
from kleene.plans.afa.model import Arc, Lifetime
from kleene.plans.afa.plan import AfaPlan

__all__ = ["Arcs", "arcs"]


class Arcs:
    """The arcs of the AFA an engine runs (see the module docstring): `add`, `remove`, and
    with explicit lifetimes `advance_to`, the arc punctuation."""

    def __init__(self, engine: Any) -> None:
        plan = engine.plan
        if not isinstance(plan, AfaPlan) or not plan.direct:
            raise KleeneError(
                "arcs change while the stream runs only on an AFA written directly "
                "(kleene.afa.read_afa or kleene.afa.Builder), run by plan 'afa'; this engine "
                f"runs plan {plan.name!r}"
                + (" on a compiled query" if isinstance(plan, AfaPlan) else "")
            )
        self.engine = engine
        self.plan: AfaPlan = plan
        self.explicit = plan.options.arc_lifetimes == "explicit"

    def add(
        self, arc: Arc | str, *, final: bool = False, lifetime: tuple[Any, Any] | None = None
    ) -> list[Any]:
        """Add an arc (an `Arc`, or one ARC line of the text form); its target may be a new
        state, final with `final=True`. By default it fires for the events after the latest
        timestamp received, so no match changes now. With explicit lifetimes, `lifetime=
        (start, end)` gives the timestamps it fires for, [start, end) (end None: no end),
        and the events already received there are matched again: the retractions and new
        matches that gives are returned. A start before `advance_to` is an error."""
        if lifetime is None:
            if self.explicit:
                raise KleeneError("with arc_lifetimes='explicit', add needs lifetime=(start, end)")
            now = self.engine.now
            life = Lifetime._make((now, math.inf, True, False))
            self.plan.add_arc(arc, life, final, in_order=self.engine.in_order_from(now))
            return []
        if not self.explicit:
            raise KleeneError(
                "lifetime= is for Engine(..., arc_lifetimes='explicit'); by default an arc "
                "fires for the events after the latest one received"
            )
        start = self._time(lifetime[0], "its lifetime's start")
        end = math.inf if lifetime[1] is None else numeric_time(lifetime[1])
        self.plan.add_arc(arc, Lifetime(start, end), final)
        return self._reevaluate(start)

    def remove(self, name: str, *, end: Any = None) -> list[Any]:
        """End an arc's lifetime (the arc-event's retraction). By default it still fires for
        the events up to the latest timestamp received, so no match changes now; with
        explicit lifetimes, `end` is the first timestamp it no longer fires for, and the
        events received from there are matched again."""
        if not self.explicit:
            if end is not None:
                raise KleeneError("end= is for Engine(..., arc_lifetimes='explicit')")
            now = self.engine.now
            self.plan.end_arc(name, now, through=True, in_order=self.engine.in_order_from(now))
            return []
        if end is None:
            raise KleeneError("with arc_lifetimes='explicit', remove needs end=")
        at = self._time(end, "the end of its lifetime")
        self.plan.end_arc(name, at)
        return self._reevaluate(at)

    def advance_to(self, ts: Any) -> list[Any]:
        """The arc punctuation (explicit lifetimes): no arc will be added or removed for a
        timestamp before `ts`. The states are cleaned up only as far as both punctuations,
        the events' (`Engine.advance_to`) and this one, allow."""
        if not self.explicit:
            raise KleeneError(
                "the arc punctuation is for Engine(..., arc_lifetimes='explicit'); by "
                "default arcs change only for events after the latest one received"
            )
        t = numeric_time(ts)
        if t < self.plan.arc_floor:
            raise KleeneError(
                f"advance_to({ts!r}) goes back: arcs were already punctuated up to "
                f"{self.plan.arc_floor!r}"
            )
        self.plan.arc_floor = t
        found: list[Any] = self.engine.repunctuate()
        return found

    def _time(self, ts: Any, what: str) -> float:
        t = numeric_time(ts)
        if t < self.plan.arc_floor:
            raise KleeneError(
                f"an arc change at {ts!r} ({what}) comes before the arc punctuation "
                f"{self.plan.arc_floor!r} (advance_to): the state before it may be gone"
            )
        return t

    def _reevaluate(self, since: float) -> list[Any]:
        engine = self.engine
        found: list[Any] = []
        for key, state in engine.states():
            found.extend(self.plan.reevaluate(state, since))
            engine.refresh(key, state)
        reported: list[Any] = engine.report(found)
        return reported


def arcs(engine: Any) -> Arcs:
    """The handle that changes the arcs of the AFA `engine` runs (see `Arcs`)."""
    return Arcs(engine)
