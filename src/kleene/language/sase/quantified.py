"""Conditions on a Kleene variable without an index: `p.V` means every event of p.

The match-window paper (Definitions 1-2) reads a condition on a quantified variable as holding
for each of its events, and a relationship between two quantified variables as holding for
every combination of their events. kleene's own form for "each" is `p[i]`, so a condition
that names one Kleene variable bare gets `i`; `prev(p.V)` (the event before, within p) is
`p[i-1].V`:

>>> from kleene import parse
>>> from kleene.language.sase.printer import expr_text
>>> print(expr_text(parse("PATTERN SEQ(C c, P+ p[]) WHERE p.V > 5 and prev(p.V) < p.V").where))
p[i].V > 5 and p[i-1].V < p[i].V

A comparison whose side is a bare Kleene attribute, and whose other side does not name that
variable, holds for every event of it exactly when it holds for the extreme one and no value
is null: every q below every p is `max(q[].V) < p[i].V` with `count(q[].V) = q.len`,
equality is equality with both extremes, and a variable that may bind nothing (`*`)
satisfies it vacuously:

>>> print(expr_text(parse("PATTERN SEQ(P+ p[], Q* q[]) WHERE q.V < p.V").where))
count(q[].V) = q.len and (q.len = 0 or max(q[].V) < p[i].V)
>>> print(expr_text(parse("PATTERN AND(P+ p[], Q+ q[]) WHERE p.K = q.K").where))
count(p[].K) = p.len and min(p[].K) = q[i].K and max(p[].K) = q[i].K

and every p differs from every q when no value of p is q's:

>>> print(expr_text(parse("PATTERN AND(P+ p[], Q+ q[]) WHERE p.K != q.K").where))
count(p[].K) = p.len and not contains(values(p[].K), q[i].K)

That covers every relationship of the paper's Θ (a conjunction of `v.A φ w.B`). A condition
over every combination of two Kleene variables that is no such comparison (one inside `or`,
say) is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import NoReturn

from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.text import error_at

__all__ = ["quantify"]

Fail = Callable[[str, E.Expr], NoReturn]

# For `every x op r`: the extreme of x that decides it, and the same for `r op every x`.
_EXTREME_LEFT = {"<": ("max",), "<=": ("max",), ">": ("min",), ">=": ("min",), "=": ("min", "max")}
_EXTREME_RIGHT = {"<": ("min",), "<=": ("min",), ">": ("max",), ">=": ("max",), "=": ("min", "max")}
# `!=` is decided by the set of values, not by extremes
_EXTREME_LEFT["!="] = _EXTREME_RIGHT["!="] = ("values",)


def quantify(pattern: A.Pattern) -> A.Pattern:
    """`pattern` with every bare attribute of a Kleene variable resolved; `PatternError` for
    a condition over every combination of two that has no such form."""
    if pattern.where is None:
        return pattern
    # an optional Kleene variable (T{2,4}? v[]) may bind nothing, as T* may
    kleene = {
        v.name: A.Quantifier(0, v.quantifier.max) if v.optional else v.quantifier
        for v in A.event_vars(pattern.structure)
        if v.quantifier
    }

    def fail(message: str, node: E.Expr) -> NoReturn:
        raise error_at(message, pattern.text, node.span)

    where = E.conjunction(*(_conjunct(c, kleene, fail) for c in E.conjuncts(pattern.where)))
    return replace(pattern, where=where)


def _conjunct(expr: E.Expr, kleene: Mapping[str, A.Quantifier], fail: Fail) -> E.Expr:
    bare = _bare(expr, kleene)
    if not bare:
        return expr
    if len(bare | _indexed(expr)) <= 1:
        return _each(expr, kleene)
    if isinstance(expr, E.Compare):
        for side, other, extremes in (
            (expr.left, expr.right, _EXTREME_LEFT),
            (expr.right, expr.left, _EXTREME_RIGHT),
        ):
            if _is_bare(side, kleene) and side.var not in _names(other):  # type: ignore[union-attr]
                return _every(expr, side, other, extremes[expr.op], kleene, fail)  # type: ignore[arg-type]
    names = " and ".join(sorted(bare))
    fail(
        f"this condition holds for every combination of events of {names}, which kleene "
        "can only check for a comparison with one variable's attribute on one side "
        "(p.V < q.V, p.V != q.V); write it with an index or an aggregate (p[i].V, max(p[].V))",
        expr,
    )


def _every(
    expr: E.Compare,
    side: E.Attr,
    other: E.Expr,
    extremes: tuple[str, ...],
    kleene: Mapping[str, A.Quantifier],
    fail: Fail,
) -> E.Expr:
    """`expr` for every event of `side`'s variable: a comparison with its extremes, once
    none of its values is null (aggregates skip nulls, a comparison with one fails)."""
    var, span = side.var, expr.span
    rest = _conjunct(other, kleene, fail)
    tests: list[E.Expr] = []
    for func in extremes:
        bound = E.Aggregate(func, var, side.attr, span=side.span)  # type: ignore[arg-type]
        if func == "values":
            found = E.Call("contains", (bound, rest), span=span)
            tests.append(E.Unary("not", found, span=span))
            continue
        left, right = (bound, rest) if side is expr.left else (rest, bound)
        tests.append(E.Compare(expr.op, left, right, span=span))
    counted = E.Aggregate("count", var, side.attr, span=side.span)
    no_nulls: E.Expr = E.Compare("=", counted, E.Len(var), span=span)
    # with no event on the other side there is no pair, so no null matters either
    # (a name no Kleene variable has is validation's to report, with its place)
    empty_others = [
        _empty(name, span)
        for name in sorted(_indexed(rest))
        if name in kleene and kleene[name].min == 0
    ]
    no_nulls = E.disjunction(*empty_others, no_nulls, span=span)
    if kleene[var].min > 0:
        return E.conjunction(no_nulls, *tests)
    return E.conjunction(no_nulls, E.disjunction(_empty(var, span), E.conjunction(*tests)))


def _empty(var: str, span: E.Span | None) -> E.Expr:
    return E.Compare("=", E.Len(var, span=span), E.Constant(0), span=span)


def _each(expr: E.Expr, kleene: Mapping[str, A.Quantifier]) -> E.Expr:
    """`expr` with each bare Kleene attribute indexed by i."""
    if isinstance(expr, E.Attr) and expr.index is None and expr.var in kleene:
        return replace(expr, index=E.Index("i"))
    match expr:
        case E.Unary(operand=operand):
            return replace(expr, operand=_each(operand, kleene))
        case E.Binary(left=left, right=right) | E.Compare(left=left, right=right):
            return replace(expr, left=_each(left, kleene), right=_each(right, kleene))
        case E.BoolOp(items=items):
            return replace(expr, items=tuple(_each(item, kleene) for item in items))
        case E.Call(args=args):
            return replace(expr, args=tuple(_each(arg, kleene) for arg in args))
    return expr


def _is_bare(expr: E.Expr, kleene: Mapping[str, A.Quantifier]) -> bool:
    return isinstance(expr, E.Attr) and expr.index is None and expr.var in kleene


def _bare(expr: E.Expr, kleene: Mapping[str, A.Quantifier]) -> set[str]:
    return {n.var for n in E.walk(expr) if _is_bare(n, kleene)}  # type: ignore[union-attr]


def _indexed(expr: E.Expr) -> set[str]:
    """The Kleene variables `i` ranges over in `expr` (`p[i]`, `p[i-1]`, `avg(p[..i-1].x)`)."""
    names: set[str] = set()
    for n in E.walk(expr):
        each = isinstance(n, E.Attr) and n.index is not None and n.index.base == "i"
        if each or (isinstance(n, E.Aggregate) and n.upto is not None):
            names.add(n.var)  # type: ignore[union-attr]
    return names


def _names(expr: E.Expr) -> set[str]:
    return {n.var for n in E.walk(expr) if isinstance(n, E.Attr | E.Len | E.Aggregate)}
