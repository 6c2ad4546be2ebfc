"""Skip-till-any-match by definition: every binding that fits the structure and the conditions.

When event n arrives, the new matches are the bindings whose latest event is n. For each
variable that can take n, enumerate the bindings in which it does, with every other event
earlier than n and inside the window (which then holds by construction), following the
structure: SEQ blocks in order, AND parts on disjoint events, one OR branch, every ordered
subset of a Kleene variable's candidates (pruned as soon as a condition about that variable
alone fails). Then keep the bindings that satisfy all conditions and equivalence tests.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from kleene.compiler.analysis import Analysis, Variable
from kleene.language.sase import ast as A
from kleene.plans.common.arrivals import Stream
from kleene.plans.common.checks import Binding, Checks

__all__ = ["completed_at"]

Prefix = tuple[dict[str, tuple[int, ...]], int]  # a partial binding and its last position


def completed_at(
    analysis: Analysis,
    structure: A.Element,
    checks: Checks,
    stream: Stream,
    n: int,
    window: float | None,
    limit: float = math.inf,
    count: int | None = None,
    exclusive: bool = False,
) -> list[Binding]:
    """The bindings whose latest event is the one at position `n` (the first `limit` + 1 of
    them, when there are more: the guard's cue to stop), within the time `window` (less
    than it apart when `exclusive`) and the `count` window."""
    event = stream[n]
    if window is None:
        low = stream.base
    elif exclusive:
        low = stream.first_after(event.t - window)
    else:
        low = stream.first_from(event.t - window)
    if count is not None:
        assert event.seq is not None, "the engine gives events their positions"
        low = max(low, stream.first_at_seq(event.seq - count))
    candidates = {
        v.name: [p for p in range(low, n) if v.takes(stream[p].type)] for v in analysis.positive
    }
    order = list(analysis.variables)
    found: dict[tuple[tuple[str, tuple[int, ...]], ...], Binding] = {}
    for variable in analysis.positive:
        if not variable.takes(event.type):
            continue
        search = _Search(analysis, checks, stream, candidates, variable.name, n)
        for binding, _ in search.bindings(structure, low - 1):
            if variable.name not in binding or not checks.all_hold(binding, stream):
                continue
            ordered = {name: binding[name] for name in order if name in binding}
            found.setdefault(tuple(ordered.items()), ordered)
            if len(found) > limit:
                return list(found.values())
    return list(found.values())


class _Search:
    def __init__(
        self,
        analysis: Analysis,
        checks: Checks,
        stream: Stream,
        candidates: Mapping[str, list[int]],
        designated: str,
        n: int,
    ) -> None:
        self.analysis = analysis
        self.checks = checks
        self.stream = stream
        self.candidates = candidates
        self.designated = designated
        self.n = n

    def bindings(self, element: A.Element, after: int) -> Iterator[Prefix]:
        """Partial bindings of `element` using positions greater than `after`."""
        if isinstance(element, A.EventVar):
            variable = self.analysis.variables[element.name]
            if variable.kleene:
                yield from self.kleene(variable, after)
            elif element.name == self.designated:
                yield {element.name: (self.n,)}, self.n
            else:
                if variable.optional:
                    yield {}, after  # unbound: its conditions do not apply
                for p in self.candidates[element.name]:
                    if p > after:
                        yield {element.name: (p,)}, p
        elif isinstance(element, A.Seq):
            yield from self.sequence(element.items, after)
        elif isinstance(element, A.And):
            yield from self.conjunction(element.items, after)
        elif isinstance(element, A.Or):
            for item in element.items:
                yield from self.bindings(item, after)

    def sequence(self, items: tuple[A.Element, ...], after: int) -> Iterator[Prefix]:
        if not items:
            yield {}, after
            return
        for first, last in self.bindings(items[0], after):
            for rest, end in self.sequence(items[1:], last):
                yield {**first, **rest}, end

    def conjunction(self, items: tuple[A.Element, ...], after: int) -> Iterator[Prefix]:
        if not items:
            yield {}, after
            return
        for first, last in self.bindings(items[0], after):
            used = {p for positions in first.values() for p in positions}
            for rest, end in self.conjunction(items[1:], after):
                if used.isdisjoint(p for positions in rest.values() for p in positions):
                    yield {**first, **rest}, max(last, end)

    def kleene(self, variable: Variable, after: int) -> Iterator[Prefix]:
        name = variable.name
        pool = [p for p in self.candidates[name] if p > after]
        must_end = name == self.designated
        high = variable.max

        def extend(prefix: tuple[int, ...], start: int) -> Iterator[tuple[int, ...]]:
            size = len(prefix)
            enough = variable.min <= size or (variable.optional and not size)
            if enough and (not must_end or (prefix and prefix[-1] == self.n)):
                yield prefix
            if (high is not None and size >= high) or (prefix and prefix[-1] == self.n):
                return
            options = pool[start:] + ([self.n] if must_end else [])
            for offset, p in enumerate(options):
                longer = (*prefix, p)
                if self.prefix_ok(name, longer):
                    yield from extend(longer, start + offset + 1)

        for subset in extend((), 0):
            yield {name: subset}, (subset[-1] if subset else after)

    def prefix_ok(self, name: str, prefix: tuple[int, ...]) -> bool:
        """Do the conditions about this variable alone, decidable on `prefix`, hold?"""
        bound = {name: prefix}
        shorter = {name: prefix[:-1]}
        if not self.checks.new_instances_hold(
            (shorter, frozenset()), (bound, frozenset()), self.stream
        ):
            return False
        if self.checks.equivalences:
            return self.checks.equivalent([self.stream[p] for p in prefix]) is not None
        return True
