"""Which event selection strategy each part of a pattern follows (per-edge strategies).

A query names its strategies in clauses: `WHERE skip_till_next_match { ... }` for the whole
query, or with the variables a clause covers, `WHERE relaxed_contiguity strict_contiguity(a[])
{ ... }`. A run follows the strategy of the place it waits at:

- the *entry* of a variable w: a run waiting for w's first event follows the strategy of the
  edge into w, from the variable just before it in its SEQ (`a` in `SEQ(A a, B b)`);
- the *loop* of a Kleene variable w: a run that holds events of w and may take more follows
  the strategy of w's loop.

A clause without a variable list, or listing every variable (SASE+'s own form,
`skip_till_next_match(a, b, c)`), sets the query's strategy (`skip_till_any_match` when no
clause does). A clause naming one Kleene variable alone sets the strategy inside its loop.
Any other clause covers the edges between the variables it lists (two variables next to
each other in a SEQ, negations between them aside); of the clauses covering one edge, the
one listing the fewest variables decides. Clauses that tie and disagree, and a clause that
covers nothing, are errors. Everything no clause covers, and every edge from or to a group
(`AND(...)`, `OR(...)`), follows the query's strategy.

Where no run can leave a loop or pass an optional element (the pattern has no Kleene or
optional variable), relaxed contiguity is skip till next match, and is read as such: the
plans that run SASE+'s strategies then run it.

>>> from kleene import parse
>>> table = resolve(parse('''PATTERN SEQ(C c, A+ a[], B b)
...     WHERE relaxed_contiguity skip_till_any_match(a[])'''))
>>> table.entry("a"), table.loop("a"), table.entry("b"), table.uniform
('relaxed_contiguity', 'skip_till_any_match', 'relaxed_contiguity', None)
>>> resolve(parse("PATTERN SEQ(A+ a[], B b) WHERE skip_till_next_match(a[], b)")).uniform
'skip_till_next_match'
>>> resolve(parse("PATTERN SEQ(A a, B b, C c) WHERE relaxed_contiguity")).uniform
'skip_till_next_match'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import NoReturn

from kleene.compiler.structure import positive
from kleene.language.sase import ast as A
from kleene.language.text import error_at

__all__ = ["DEFAULT", "Strategies", "edges", "resolve"]

#: The strategy of a query that names none (SASE+'s default).
DEFAULT = "skip_till_any_match"


@dataclass(frozen=True)
class Strategies:
    """The strategy of each variable's entry and each Kleene variable's loop; `default`
    for every edge no clause covers."""

    default: str
    entries: Mapping[str, str] = field(default_factory=dict)
    loops: Mapping[str, str] = field(default_factory=dict)

    def entry(self, name: str) -> str:
        """The strategy of a run waiting for the first event of `name`."""
        return self.entries.get(name, self.default)

    def loop(self, name: str) -> str:
        """The strategy of a run inside the loop of the Kleene variable `name`."""
        return self.loops.get(name, self.default)

    @property
    def used(self) -> frozenset[str]:
        """Every strategy some run of the pattern follows (the default included: edges to
        and from groups, and the runs every event begins, follow it)."""
        return frozenset({self.default, *self.entries.values(), *self.loops.values()})

    @property
    def uniform(self) -> str | None:
        """The one strategy every run follows, or None when the query mixes them."""
        used = self.used
        return next(iter(used)) if len(used) == 1 else None


def edges(structure: A.Element) -> list[tuple[str, str]]:
    """The nameable edges: (v, w) for two variables next to each other in a SEQ (nested
    SEQs flattened, negations left out), in pattern order."""
    found: list[tuple[str, str]] = []

    def visit(element: A.Element | None) -> None:
        if element is None or isinstance(element, A.EventVar | A.Negation):
            return
        items = element.items
        if isinstance(element, A.Seq):
            for left, right in pairwise(items):
                if isinstance(left, A.EventVar) and isinstance(right, A.EventVar):
                    found.append((left.name, right.name))
        for item in items:
            visit(item)

    visit(positive(structure))
    return found


def resolve(pattern: A.Pattern) -> Strategies:
    """The strategy table of a (validated) pattern; `PatternError` with a caret for clauses
    that contradict each other or cover nothing."""
    clauses = pattern.strategies
    text = pattern.text or ""

    def fail(message: str, clause: A.Strategy) -> NoReturn:
        raise error_at(message, text, clause.span)

    positives = set(A.positive_names(pattern.structure))
    default = DEFAULT
    # a clause listing every variable is SASE+'s spelling of the query's strategy, unless a
    # clause without a list sets that: then it covers its edges, as any other list does
    # (Flink's two-element `begin(a).followedByAny(b)` under `relaxed_contiguity`)
    whole = [c for c in clauses if not c.variables] or [
        c for c in clauses if positives <= set(c.variables or ())
    ]
    for clause in whole[1:]:
        if clause.name != whole[0].name:
            fail(
                f"two clauses set the whole query's strategy ({whole[0].name} and "
                f"{clause.name}); keep one, or name the variables each covers",
                clause,
            )
    if whole:
        default = whole[0].name
    listed = [c for c in clauses if all(c is not w for w in whole)]
    single = [c for c in listed if len(c.variables or ()) == 1]
    listed = [c for c in listed if len(c.variables or ()) > 1]
    kleene = {v.name for v in A.event_vars(pattern.structure) if v.kleene}
    covered: dict[int, int] = {id(c): 0 for c in listed + single}

    def decide(place: str, covering: list[A.Strategy]) -> str | None:
        if not covering:
            return None
        fewest = min(len(c.variables or ()) for c in covering)
        closest = [c for c in covering if len(c.variables or ()) == fewest]
        for clause in closest[1:]:
            if clause.name != closest[0].name:
                fail(
                    f"{place} is covered by both {_clause_text(closest[0])} and "
                    f"{_clause_text(clause)}; say which it follows in a clause that lists "
                    "fewer variables",
                    clause,
                )
        for clause in covering:
            covered[id(clause)] += 1
        return closest[0].name

    entries: dict[str, str] = {}
    for left, right in edges(pattern.structure):
        chosen = decide(
            f"the edge from {left} to {right}",
            [c for c in listed if left in (c.variables or ()) and right in (c.variables or ())],
        )
        if chosen is not None:
            entries[right] = chosen
    loops: dict[str, str] = {}
    for name in sorted(kleene):
        chosen = decide(f"the loop of {name}[]", [c for c in single if c.variables == (name,)])
        if chosen is not None:
            loops[name] = chosen
    for clause in single:
        if not covered[id(clause)]:
            (name,) = clause.variables or ("",)
            fail(
                f"{_clause_text(clause)} names one variable, which sets the strategy inside "
                f"its loop; {name} binds one event, so it has no loop (list it with the "
                "variable before or after it to set the edge between them)",
                clause,
            )
    for clause in listed:
        if not covered[id(clause)]:
            fail(
                f"{_clause_text(clause)} covers no edge: list variables next to each other "
                "in a SEQ (the edge between them), or one Kleene variable alone (its loop)",
                clause,
            )
    if not any(v.kleene or v.optional for v in A.event_vars(pattern.structure)):
        default = _NEXT.get(default, default)
        entries = {name: _NEXT.get(s, s) for name, s in entries.items()}
    return Strategies(default, entries, loops)


#: Relaxed contiguity where nothing can be left without an event.
_NEXT = {"relaxed_contiguity": "skip_till_next_match"}


def _clause_text(clause: A.Strategy) -> str:
    names = ", ".join(clause.variables or ())
    return f"{clause.name}({names})" if clause.variables else clause.name
