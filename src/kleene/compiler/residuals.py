"""Residuals: what is left of a pattern's structure after some events were taken.

The states of every run-based plan are residuals. A `Var` counts the events its variable has
taken; `InOrder` (SEQ), `AnyOrder` (AND) and `OneOf` (OR) hold what is left of their parts.
`Arithmetic.takes` lists the moves a residual allows: take an event into a variable that can
bind next, either *directly* (the variable is where the run stands) or by *proceeding* past
Kleene variables that have enough events (or optional ones that have none), which closes
them (SASE+ proceed edges, taken together with the next state's begin). `Arithmetic.exits`
lists the moves without an event that Flink's proceed edges add (a run landing where relaxed
contiguity or skip till any match lets it wait): leave such variables alone, closing them.

>>> from kleene import parse
>>> from kleene.compiler.analysis import analyze
>>> info = analyze(parse("PATTERN SEQ(A+ a[], B b)"))
>>> shape = Arithmetic(info.variables)
>>> start = residual(info.structure)
>>> [(name, direct, sorted(closes)) for name, _, direct, closes in shape.takes(start)]
[('a', True, [])]
>>> after = next(shape.takes(start))[1]
>>> [(name, direct, sorted(closes)) for name, _, direct, closes in shape.takes(after)]
[('a', True, []), ('b', False, ['a'])]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kleene.compiler.analysis import Variable
from kleene.language.sase import ast as A

__all__ = [
    "DONE",
    "AnyOrder",
    "Arithmetic",
    "InOrder",
    "OneOf",
    "Residual",
    "Take",
    "Var",
    "residual",
]


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    count: int


@dataclass(frozen=True, slots=True)
class InOrder:
    items: tuple[Residual, ...]


@dataclass(frozen=True, slots=True)
class AnyOrder:
    items: tuple[Residual, ...]


@dataclass(frozen=True, slots=True)
class OneOf:
    items: tuple[Residual, ...]


Residual = Var | InOrder | AnyOrder | OneOf
DONE = InOrder(())


def residual(element: A.Element) -> Residual:
    """The residual of a whole (positive, flattened) structure."""
    if isinstance(element, A.EventVar):
        return Var(element.name, 0)
    assert not isinstance(element, A.Negation)
    items = tuple(residual(item) for item in element.items)
    if isinstance(element, A.Seq):
        return InOrder(items)
    return AnyOrder(items) if isinstance(element, A.And) else OneOf(items)


def _seq(items: tuple[Residual, ...]) -> Residual:
    flat: list[Residual] = []
    for item in items:
        if isinstance(item, InOrder):
            flat.extend(item.items)
        else:
            flat.append(item)
    return flat[0] if len(flat) == 1 else InOrder(tuple(flat))


def _all(items: tuple[Residual, ...]) -> Residual:
    kept = tuple(item for item in items if item != DONE)
    if not kept:
        return DONE
    return kept[0] if len(kept) == 1 else AnyOrder(kept)


Take = tuple[str, Residual, bool, frozenset[str]]  # variable, residual after, direct, closes


class Arithmetic:
    """Residual arithmetic for one pattern's variables."""

    def __init__(self, variables: Mapping[str, Variable]) -> None:
        self.variables = variables

    def nullable(self, r: Residual) -> bool:
        if isinstance(r, Var):
            variable = self.variables[r.name]
            return r.count >= variable.min or (variable.optional and r.count == 0)
        if isinstance(r, OneOf):
            return any(self.nullable(item) for item in r.items)
        return all(self.nullable(item) for item in r.items)

    def open_vars(self, r: Residual) -> frozenset[str]:
        if isinstance(r, Var):
            return frozenset((r.name,))
        return frozenset().union(*(self.open_vars(item) for item in r.items))

    def exits(self, r: Residual) -> Iterator[tuple[Residual, frozenset[str]]]:
        """Where a run may move without taking an event, closing what it leaves: past a
        nullable head of a sequence (a Kleene variable with enough events, an empty T*),
        past a nullable part of an AND, into a branch of an OR; never to the end (a run
        there has completed its match already).

        >>> from kleene import parse
        >>> from kleene.compiler.analysis import analyze
        >>> info = analyze(parse("PATTERN SEQ(A+ a[], B* b[], C c)"))
        >>> shape = Arithmetic(info.variables)
        >>> after_a = next(shape.takes(residual(info.structure)))[1]
        >>> [(sorted(shape.open_vars(r)), sorted(closes)) for r, closes in shape.exits(after_a)]
        [(['b', 'c'], ['a']), (['c'], ['a', 'b'])]
        """
        seen: set[tuple[Residual, frozenset[str]]] = set()
        for exit_ in self._exits(r):
            if exit_[0] != DONE and exit_ not in seen:
                seen.add(exit_)
                yield exit_

    def _exits(self, r: Residual) -> Iterator[tuple[Residual, frozenset[str]]]:
        if isinstance(r, InOrder) and r.items:
            head, rest = r.items[0], r.items[1:]
            for after, closes in self._exits(head):
                yield _seq((after, *rest)), closes
            if self.nullable(head):
                closing = self.open_vars(head)
                after = _seq(rest) if rest else DONE
                yield after, closing
                for further, closes in self._exits(after):
                    yield further, closes | closing
        elif isinstance(r, AnyOrder):
            for index, item in enumerate(r.items):
                others = (*r.items[:index], *r.items[index + 1 :])
                for after, closes in self._exits(item):
                    yield _all((*r.items[:index], after, *r.items[index + 1 :])), closes
                if self.nullable(item):
                    yield _all(others), self.open_vars(item)
        elif isinstance(r, OneOf):
            for item in r.items:
                yield from self._exits(item)

    def takes(self, r: Residual) -> Iterator[Take]:
        if isinstance(r, Var):
            variable = self.variables[r.name]
            if variable.max is None or r.count < variable.max:
                grown: Residual = DONE if not variable.kleene else Var(r.name, r.count + 1)
                yield r.name, grown, True, frozenset()
        elif isinstance(r, InOrder):
            if not r.items:
                return
            head, rest = r.items[0], r.items[1:]
            for name, after, direct, closes in self.takes(head):
                yield name, _seq((after, *rest)), direct, closes
            if self.nullable(head):
                closing = self.open_vars(head)
                for name, after, _, closes in self.takes(_seq(rest) if rest else DONE):
                    yield name, after, False, closes | closing
        elif isinstance(r, AnyOrder):
            for index, item in enumerate(r.items):
                for name, after, direct, closes in self.takes(item):
                    items = (*r.items[:index], after, *r.items[index + 1 :])
                    yield name, _all(items), direct, closes
        else:
            for item in r.items:
                yield from self.takes(item)
