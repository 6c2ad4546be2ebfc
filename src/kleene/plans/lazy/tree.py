"""The `lazy_tree` plan: the lazy (Multi-)Tree NFA of Kolchinsky & Schuster, section 7.

A chain needs the frequency order in advance; a tree finds it as it goes. Per-variable
counters over the input buffer (the events inside the window) say which variable is rarest
now, and every partial match takes the rarest variable it lacks next (iterated variables
still last), so each follows the chain that suits the stream at the moment it was made.
States are the orders partial matches took, instantiated when one reaches them and dropped
when none waits there any more; each DNF branch has its own tree (the Multi-Tree NFA).

The roots decide too: when an event of its variable arrives, and every 64 events, each
branch's root looks at the counters, and when
another variable has become clearly rarer (fewer than half the events of the root's, and
two fewer at least, so that a window with one event or none does not make it flap) a new
root takes over with it. The old root keeps the partial matches it began, and stops taking
events; the new one takes the old root's variable only from the switch on (a *floor*), so
every match is still found exactly once. No partial match starts while a variable has no
event in the window: it is the rarest then, and the root waits for it.

>>> import kleene
>>> rows = ["A"] * 7 + ["C", "B", "C", "A", "B", "C"]
>>> events = [{"type": t, "ts": i} for i, t in enumerate(rows)]
>>> query = "PATTERN SEQ(A a, B b, C c) WITHIN 20"
>>> engine = kleene.Engine(query, plan="lazy_tree")
>>> found = engine.send_many(events) + engine.close()
>>> len(found) == len(kleene.match(query, events, plan="reference")) == 22
True

The root began with a (the pattern's order); after eight events, with seven A, one C and
no B in the window, it handed over to b:

>>> engine.metrics.plan["root_switches"]
1
"""

from __future__ import annotations

from bisect import bisect_left

from kleene.compiler.analysis import Analysis
from kleene.compiler.options import Options
from kleene.plans.base import register
from kleene.plans.lazy.chain import Completions, LazyChain, LazyState, Partial, StateKey

__all__ = ["LazyTree"]


@register
class LazyTree(LazyChain):
    """Lazy evaluation in the order the stream shows: the rarest variable next."""

    name = "lazy_tree"
    review = 64

    def __init__(self, analysis: Analysis, options: Options) -> None:
        super().__init__(analysis, options)
        self.kleene = {name: v.kleene for name, v in analysis.variables.items()}

    def _buffered(self) -> tuple[str, ...]:
        return tuple(n for n, v in self.analysis.variables.items() if not v.negated)

    def describe(self) -> str:
        lines = [
            "lazy trees, one per DNF branch: each partial match takes next the variable with "
            "the fewest events in the window (iterated ones last); a root hands over to a "
            f"clearly rarer variable (looked at on its own events and every {self.review})",
        ]
        lines += [f"  branch {b + 1}: {', '.join(order)}" for b, order in enumerate(self.orders)]
        lines += self._described()
        return "\n".join(lines)

    def new_state(self) -> LazyState:
        state = super().new_state()
        state.counters["root_switches"] = 0
        self._watch(state)
        return state

    def _watch(self, state: LazyState) -> None:
        """Look at the roots again when an event of a root's own variable arrives."""
        types: set[str] = set()
        for roots in state.roots:
            for name, _ in roots:
                variable = self.analysis.variables[name]
                if variable.types is None:
                    state.watched = None
                    return
                types |= variable.types
        state.watched = frozenset(types)

    def _next(self, state: LazyState, b: int, instance: Partial) -> str:
        bound, ranks = instance.bound, self.ranks
        remaining = [n for n in self.orders[b] if n not in bound]
        return min(remaining, key=lambda n: (self.kleene[n], self._count(state, n), ranks[n]))

    def _count(self, state: LazyState, name: str) -> int:
        """The variable's counter: its buffered events inside the window, now."""
        stream = state.stream
        at, low, counts = state.counted
        if at != stream.end:
            low, counts = stream.base, {}
            if self.window is not None and stream.times:
                low = stream.first_from(stream.times[-1] - self.window)
            state.counted = (stream.end, low, counts)
        count = counts.get(name)
        if count is None:
            buffer = state.buffers[name]
            count = counts[name] = len(buffer) - bisect_left(buffer, low)
        return count

    def _review(
        self,
        state: LazyState,
        found: Completions,
        fresh: list[tuple[str, StateKey, Partial]],
    ) -> None:
        """Hand each branch's root to a clearly rarer variable: looked at when an event of
        the root's own variable arrives (its counter grew) and every `review` events (the
        others' shrank as the window moved)."""
        for b, roots in enumerate(state.roots):
            if len(roots) != 1 or self.kleene[roots[0][0]]:
                continue  # starred variables first: the roots stay as the chain's
            name, ranks = roots[0][0], self.ranks
            rarest = min(
                (n for n in self.orders[b] if not self.kleene[n]),
                key=lambda n: (self._count(state, n), ranks[n]),
            )
            if rarest == name or 2 * self._count(state, rarest) + 2 > self._count(state, name):
                continue  # not clearly rarer: fewer than half, by two events at least
            self._hand_over(state, b, rarest, found, fresh)
            state.counters["root_switches"] += 1
            self._watch(state)
