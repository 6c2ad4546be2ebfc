"""Structural facts about a pattern, derived once (in `analyze`) and read by every plan.

- `dnf`: the positive pattern in disjunctive normal form, one `Branch` per way through its
  ORs: the variables a match of that branch binds and the order SEQ puts them in *within
  that branch* (two branches may bind the same variables in different orders);
- `mandatory`: the variables every match binds to at least one event. The rule: a variable
  is mandatory when each branch of the DNF binds it with a quantifier whose minimum is at
  least one (so under OR, the variables common to all branches);
- `least`: the fewest events a match binds;
- `first`: the variables that can bind a match's earliest event;
- `successors`: for each variable, those of the element right after it (where a run that
  leaves it waits first: Flink's sink state);
- `ses_sets`: the sets B1..Bk of an SES pattern (a sequence of sets of mandatory variables),
  None for any other shape.

>>> from kleene import parse
>>> pattern = parse("PATTERN OR(SEQ(A a, B b), SEQ(A a, C+ c[]), SEQ(B b, A a))")
>>> [str(b) for b in dnf(pattern.structure)]
['a < b', 'a < c', 'b < a']
>>> sorted(mandatory(pattern.structure)), least(pattern.structure), first(pattern.structure)
(['a'], 2, ('a', 'b'))
>>> after = successors(parse("PATTERN SEQ(C c, A+ a[], OR(SEQ(D? d, E e), F f))").structure)
>>> sorted(after["a"]), sorted(after["d"]), sorted(after["f"])
(['d', 'f'], ['e'], [])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kleene.language.sase import ast as A

__all__ = [
    "Branch",
    "dnf",
    "first",
    "least",
    "mandatory",
    "positive",
    "ses_sets",
    "successors",
]


@dataclass(frozen=True)
class Branch:
    """One way through a pattern's ORs: the variables a match binds together, in pattern
    order, and for each the variables SEQ puts before it in this branch."""

    variables: tuple[str, ...]
    before: Mapping[str, frozenset[str]]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.variables)

    def __str__(self) -> str:
        pairs = [f"{a} < {b}" for b in self.variables for a in sorted(self.before[b])]
        return ", ".join(pairs) or " & ".join(self.variables)


def dnf(structure: A.Element) -> tuple[Branch, ...]:
    """The positive pattern in DNF (negations left out), each distinct branch once, in the
    order the ORs list them."""
    order = {v.name: i for i, v in enumerate(A.event_vars(structure))}
    found: list[Branch] = []
    for names, pairs in _dnf(structure):
        variables = tuple(sorted(names, key=order.__getitem__))
        before = {n: frozenset(a for a, b in pairs if b == n) for n in variables}
        branch = Branch(variables, before)
        if branch not in found:
            found.append(branch)
    return tuple(found)


_Ways = list[tuple[frozenset[str], frozenset[tuple[str, str]]]]


def _dnf(element: A.Element) -> _Ways:
    """Each branch as its variables and its (earlier, later) pairs."""
    if isinstance(element, A.EventVar):
        return [(frozenset({element.name}), frozenset())]
    if isinstance(element, A.Negation):
        return [(frozenset(), frozenset())]
    if isinstance(element, A.Or):
        return [way for item in element.items for way in _dnf(item)]
    assert isinstance(element, A.Seq | A.And)
    seq = isinstance(element, A.Seq)
    combined: _Ways = [(frozenset(), frozenset())]
    for item in element.items:
        extended: _Ways = []
        for names, pairs in combined:
            for more, inner in _dnf(item):
                ordered = {(a, b) for a in names for b in more} if seq else ()
                extended.append((names | more, pairs | inner | frozenset(ordered)))
        combined = extended
    return combined


def least(element: A.Element) -> int:
    """The fewest events a match of `element` binds."""
    match element:
        case A.EventVar(quantifier=quantifier, optional=optional):
            return 0 if optional else 1 if quantifier is None else quantifier.min
        case A.Negation():
            return 0
        case A.Seq(items=items) | A.And(items=items):
            return sum(least(item) for item in items)
        case A.Or(items=items):
            return min(least(item) for item in items)
    raise TypeError(element)  # pragma: no cover


def first(element: A.Element) -> tuple[str, ...]:
    """The variables that can bind the earliest event of a match, in pattern order."""
    match element:
        case A.EventVar(name=name):
            return (name,)
        case A.Negation():
            return ()
        case A.Seq(items=items):
            found: list[str] = []
            for item in items:
                found += first(item)
                if least(item) > 0:
                    break
            return tuple(dict.fromkeys(found))
        case A.And(items=items) | A.Or(items=items):
            return tuple(dict.fromkeys(name for item in items for name in first(item)))
    raise TypeError(element)  # pragma: no cover


def successors(
    element: A.Element, after: frozenset[str] = frozenset()
) -> dict[str, frozenset[str]]:
    """For each positive variable, the variables of the element right after it in its SEQ
    (`after`: those after `element`; none at the pattern's end): the first place a run
    that leaves the variable waits at (Flink's sink state of a loop)."""
    match element:
        case A.EventVar(name=name):
            return {name: after}
        case A.Negation():
            return {}
        case A.Seq(items=items):
            found: dict[str, frozenset[str]] = {}
            positive = [item for item in items if not isinstance(item, A.Negation)]
            for index, item in enumerate(positive):
                following = positive[index + 1] if index + 1 < len(positive) else None
                found.update(successors(item, after if following is None else _heads(following)))
            return found
        case A.And(items=items) | A.Or(items=items):
            return {k: v for item in items for k, v in successors(item, after).items()}
    raise TypeError(element)  # pragma: no cover


def _heads(element: A.Element) -> frozenset[str]:
    """The variables of an element's first place: its own, its SEQ's first element's, each
    OR branch's or AND part's."""
    match element:
        case A.EventVar(name=name):
            return frozenset((name,))
        case A.Negation():
            return frozenset()
        case A.Seq(items=items):
            positive = [item for item in items if not isinstance(item, A.Negation)]
            return _heads(positive[0]) if positive else frozenset()
        case A.And(items=items) | A.Or(items=items):
            return frozenset().union(*(_heads(item) for item in items))
    raise TypeError(element)  # pragma: no cover


def mandatory(element: A.Element) -> frozenset[str]:
    """The variables every match binds to at least one event (see the module docstring)."""
    match element:
        case A.EventVar(name=name):
            return frozenset({name}) if least(element) else frozenset()
        case A.Negation():
            return frozenset()
        case A.Seq(items=items) | A.And(items=items):
            return frozenset().union(*(mandatory(item) for item in items))
        case A.Or(items=items):
            return frozenset.intersection(*(mandatory(item) for item in items))
    raise TypeError(element)  # pragma: no cover


def ses_sets(element: A.Element) -> tuple[tuple[str, ...], ...] | None:
    """The sets of an SES pattern (a SEQ of variables or AND groups of variables, each
    binding at least one event; negations anywhere in between), else None."""
    items = element.items if isinstance(element, A.Seq) else (element,)
    sets = []
    for item in items:
        if isinstance(item, A.Negation):
            continue
        members = item.items if isinstance(item, A.And) else (item,)
        names = []
        for member in members:
            if isinstance(member, A.Negation):
                continue
            if not isinstance(member, A.EventVar) or least(member) == 0:
                return None
            names.append(member.name)
        sets.append(tuple(names))
    return tuple(sets)


def positive(element: A.Element) -> A.Element | None:
    """The structure without negations, nested SEQ/AND/OR flattened, one-item lists unwrapped."""
    if isinstance(element, A.EventVar):
        return element
    if isinstance(element, A.Negation):
        return None
    items: list[A.Element] = []
    for item in element.items:
        kept = positive(item)
        if kept is None:
            continue
        if type(kept) is type(element):
            assert isinstance(kept, A.Seq | A.And | A.Or)
            items.extend(kept.items)
        else:
            items.append(kept)
    if len(items) == 1:
        return items[0]
    return type(element)(tuple(items))
