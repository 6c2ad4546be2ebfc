"""The shape of a lazy (Multi-)Chain NFA: the pattern in DNF, one chain of steps per branch,
each chain in an evaluation order (Kolchinsky & Schuster, sections 4-5).

A *branch* is one way through the pattern's ORs: a set of variables that a match binds
together. Its chain takes them one per state in the evaluation order (the rarest type first,
iterated variables last, section 4.5), and each step knows its *ordering filters*: the
variables taken earlier in the chain whose events must precede its own (prec) or follow them
(succ). A step with an empty succ may also take events that have not arrived yet, so partial
matches wait there for the stream.

>>> from kleene import parse
>>> from kleene.compiler.analysis import analyze
>>> analysis = analyze(parse("PATTERN SEQ(A a, OR(B b, C c), D d)"))
>>> for chain in chains(analysis, rank(analysis, ("D", "B"), {})):
...     print(chain)
d <- b (before d) <- a (before d, b)
d <- a (before d) <- c (after a, before d)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kleene.compiler.analysis import Analysis, Variable
from kleene.compiler.structure import Branch
from kleene.errors import PlanError
from kleene.language import expr as E

__all__ = ["Chain", "Step", "chains", "group_by", "rank", "step"]


@dataclass(frozen=True)
class Step:
    """One state of a chain: the variable it takes, and the variables taken before it in the
    chain whose events its events must follow (`after`) or precede (`before`)."""

    variable: Variable
    after: tuple[str, ...]
    before: tuple[str, ...]

    def waits(self, bound: Mapping[str, tuple[int, ...]]) -> bool:
        """May this step take an event that arrives later, given what the earlier steps
        `bound` (no event of theirs has to follow its own)?"""
        return not any(bound.get(name) for name in self.before)

    def __str__(self) -> str:
        filters = []
        if self.after:
            filters.append(f"after {', '.join(self.after)}")
        if self.before:
            filters.append(f"before {', '.join(self.before)}")
        return self.variable.name + (f" ({'; '.join(filters)})" if filters else "")


@dataclass(frozen=True)
class Chain:
    """The steps of one DNF branch, in evaluation order."""

    steps: tuple[Step, ...]

    def __str__(self) -> str:
        return " <- ".join(str(s) for s in self.steps).replace(";", ",")


def rank(
    analysis: Analysis, order: Sequence[str], frequencies: Mapping[str, float]
) -> dict[str, float]:
    """Each positive variable's place in the evaluation order (lower: taken earlier).

    `order` lists variables or event types, rarest first; `frequencies` gives a variable's or
    type's rate. Unlisted variables follow the listed ones in pattern order; iterated
    variables come last whatever their rate (an iterated variable's subsets are the most
    frequent "events" of all, section 4.5)."""
    if order and frequencies:
        raise PlanError("give the evaluation order or the frequencies, not both")
    names = set(analysis.variables)
    types = {t for v in analysis.variables.values() for t in (v.types or ())}
    for label in (*order, *frequencies):
        if label not in names and label not in types:
            raise PlanError(
                f"the evaluation order names {label!r}, which is neither a variable nor an "
                f"event type of the pattern (variables: {', '.join(sorted(names))})"
            )
    keys: dict[str, tuple[int, float, int]] = {}
    for index, variable in enumerate(analysis.positive):
        place = math.inf
        for label in (variable.name, *sorted(variable.types or ())):
            if label in order:
                place = min(place, order.index(label))
            if label in frequencies:
                place = min(place, frequencies[label])
        keys[variable.name] = (1 if variable.kleene else 0, place, index)
    ordered = sorted(keys, key=keys.__getitem__)
    return {name: float(i) for i, name in enumerate(ordered)}


def chains(analysis: Analysis, ranks: Mapping[str, float]) -> tuple[Chain, ...]:
    """One chain per DNF branch of the positive pattern, its steps ordered by `ranks`."""
    found: list[Chain] = []
    for branch in analysis.dnf:
        names = sorted(branch.variables, key=lambda name: ranks[name])
        chain = Chain(
            tuple(step(analysis, branch, tuple(names[:k]), n) for k, n in enumerate(names))
        )
        if chain not in found:
            found.append(chain)
    return tuple(found)


def step(analysis: Analysis, branch: Branch, taken: tuple[str, ...], name: str) -> Step:
    """The state of `branch` that takes `name` once the variables `taken` are bound: its
    ordering filters are the taken variables the branch's SEQs put before it (prec) and
    after it (succ). Each branch has its own order: `OR(SEQ(A a, B b), SEQ(B b, A a))`
    orders a and b both ways, one way per branch."""
    after = tuple(n for n in taken if n in branch.before[name])
    before = tuple(n for n in taken if name in branch.before[n])
    return Step(analysis.variables[name], after, before)


def group_by(analysis: Analysis) -> dict[str, str]:
    """The iterated variables whose events must all share an attribute's value, by a
    condition `b[i].x = b[i-1].x` (either way round), with that attribute: their subsets need
    only be made within one value (the group-by-attribute optimization, section 4.5.3).

    >>> from kleene import parse
    >>> from kleene.compiler.analysis import analyze
    >>> group_by(analyze(parse("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i-1].x = b[i].x")))
    {'b': 'x'}
    """
    found: dict[str, str] = {}
    for condition in analysis.conditions:
        match condition.expr:
            case E.Compare(
                op="=",
                left=E.Attr(index=E.Index() as first) as left,
                right=E.Attr(index=E.Index() as second) as right,
            ) if (left.var, left.attr) == (right.var, right.attr):
                indexes = {(first.base, first.offset), (second.base, second.offset)}
                if indexes == {("i", 0), ("i", -1)}:
                    found.setdefault(left.var, left.attr)
    return found
