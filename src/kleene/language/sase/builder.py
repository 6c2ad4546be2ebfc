"""Build patterns in Python; the result is the same AST the parser makes.

>>> import kleene
>>> from kleene.language.sase import builder as b
>>> a, c = b.var("a"), b.var("c")
>>> built = b.pattern(
...     b.seq(b.event("Shelf", "a"), b.not_(b.event("Register", "r")), b.event("Exit", "c")),
...     where=[b.equiv("tag_id"), c.ts - a.ts > 5],
...     strategy="skip_till_next_match",
...     within=(12, "hours"),
... )
>>> built == kleene.parse('''
...     PATTERN SEQ(Shelf a, NOT(Register r), Exit c)
...     WHERE skip_till_next_match { [tag_id] and c.ts - a.ts > 5 }
...     WITHIN 12 hours''')
True

Kleene elements index like the text: `x[b.i]` is `x[i]`, `x[b.i - 1]` is `x[i-1]`, `x[1]` is
`x[1]`, `x[b.last]` is `x[x.len]`; slices name the events an aggregate runs over: `x[:]` is
`x[]` and `x[:b.i - 1]` is `x[..i-1]`.

>>> x = b.var("x")
>>> print(b.avg(x[:b.i - 1].price) < x[b.i].price)
avg(x[..i-1].price) < x[i].price
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.sase.printer import expr_text
from kleene.language.sase.quantified import quantify
from kleene.language.text import UNITS

__all__ = [
    "Expression",
    "and_",
    "avg",
    "call",
    "count",
    "equiv",
    "event",
    "i",
    "last",
    "length",
    "lit",
    "max_",
    "min_",
    "not_",
    "not_followed",
    "not_next",
    "or_",
    "pattern",
    "prev",
    "seq",
    "ses",
    "sum_",
    "values",
    "var",
]

Operand = Any  # an Expression, or a Python value that becomes a literal


@dataclass(frozen=True)
class _Position:
    """`i`, `i - k`, or `last`, `last - k`: a position inside a Kleene variable."""

    base: str
    offset: int = 0

    def __sub__(self, amount: int) -> _Position:
        return _Position(self.base, self.offset - amount)


#: The element being bound (`b[i]`); `i - 1` is the one before it.
i = _Position("i")
#: The last element (`b[b.len]`).
last = _Position("last")


def _node(value: Operand) -> E.Expr:
    if isinstance(value, Expression):
        return value.node
    if value is None or isinstance(value, bool | int | float | str):
        return E.Constant(value)
    raise TypeError(f"cannot use {value!r} in a predicate")


class Expression:
    """A predicate expression under construction; Python operators build the AST."""

    __slots__ = ("node",)
    __hash__ = None  # type: ignore[assignment]  # == builds a comparison

    def __init__(self, node: E.Expr) -> None:
        self.node = node

    def __repr__(self) -> str:
        return f"Expression({self.node!r})"

    def __str__(self) -> str:
        return expr_text(self.node)

    def _binary(self, op: str, other: Operand, reverse: bool = False) -> Expression:
        left, right = (_node(other), self.node) if reverse else (self.node, _node(other))
        return Expression(E.Binary(op, left, right))  # type: ignore[arg-type]

    def __add__(self, other: Operand) -> Expression:
        return self._binary("+", other)

    def __radd__(self, other: Operand) -> Expression:
        return self._binary("+", other, reverse=True)

    def __sub__(self, other: Operand) -> Expression:
        return self._binary("-", other)

    def __rsub__(self, other: Operand) -> Expression:
        return self._binary("-", other, reverse=True)

    def __mul__(self, other: Operand) -> Expression:
        return self._binary("*", other)

    def __rmul__(self, other: Operand) -> Expression:
        return self._binary("*", other, reverse=True)

    def __truediv__(self, other: Operand) -> Expression:
        return self._binary("/", other)

    def __rtruediv__(self, other: Operand) -> Expression:
        return self._binary("/", other, reverse=True)

    def __mod__(self, other: Operand) -> Expression:
        return self._binary("%", other)

    def __rmod__(self, other: Operand) -> Expression:
        return self._binary("%", other, reverse=True)

    def __neg__(self) -> Expression:
        return Expression(E.negative(self.node))

    def _compare(self, op: str, other: Operand) -> Expression:
        return Expression(E.Compare(op, self.node, _node(other)))  # type: ignore[arg-type]

    def __eq__(self, other: object) -> Expression:  # type: ignore[override]
        return self._compare("=", other)

    def __ne__(self, other: object) -> Expression:  # type: ignore[override]
        return self._compare("!=", other)

    def __lt__(self, other: Operand) -> Expression:
        return self._compare("<", other)

    def __le__(self, other: Operand) -> Expression:
        return self._compare("<=", other)

    def __gt__(self, other: Operand) -> Expression:
        return self._compare(">", other)

    def __ge__(self, other: Operand) -> Expression:
        return self._compare(">=", other)

    def __and__(self, other: Operand) -> Expression:
        return Expression(E.conjunction(self.node, _node(other)))

    def __rand__(self, other: Operand) -> Expression:
        return Expression(E.conjunction(_node(other), self.node))

    def __or__(self, other: Operand) -> Expression:
        return Expression(E.disjunction(self.node, _node(other)))

    def __ror__(self, other: Operand) -> Expression:
        return Expression(E.disjunction(_node(other), self.node))

    def __invert__(self) -> Expression:
        return Expression(E.Unary("not", self.node))

    def __bool__(self) -> bool:
        raise TypeError(
            "a predicate has no truth value in Python; combine predicates with &, | and ~ "
            "(or b.and_/b.or_/b.not_), not with and/or/not"
        )


class _Var:
    """A pattern variable in predicates: `a.price`, `a[b.i].price`, `a.len`, `a[:b.i - 1]`."""

    __slots__ = ("_name",)
    _name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str) -> Expression:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self.attr(attr)

    def attr(self, attr: str) -> Expression:
        """`v.attr`, for any attribute name (also one that clashes with a method here)."""
        return Expression(E.Attr(self._name, attr))

    @property
    def len(self) -> Expression:
        """`v.len`: how many events the Kleene variable bound."""
        return Expression(E.Len(self._name))

    def __getitem__(self, key: int | _Position | slice) -> _Element | _Slice:
        if isinstance(key, slice):
            if key.start is not None or key.step is not None:
                raise TypeError("a Kleene slice is v[:] or v[:b.i - k]")
            if key.stop is None:
                return _Slice(self._name, None)
            if not isinstance(key.stop, _Position) or key.stop.base != "i":
                raise TypeError("a Kleene slice ends at b.i - k")
            return _Slice(self._name, -key.stop.offset)
        if isinstance(key, int):
            return _Element(self._name, E.Index("abs", key))
        return _Element(self._name, E.Index(key.base, key.offset))  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Element:
    var: str
    index: E.Index

    def __getattr__(self, attr: str) -> Expression:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Expression(E.Attr(self.var, attr, self.index))


@dataclass(frozen=True)
class _Slice:
    var: str
    upto: int | None

    def __getattr__(self, attr: str) -> _SliceAttr:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _SliceAttr(self, attr)


@dataclass(frozen=True)
class _SliceAttr:
    piece: _Slice
    attr: str | None


def var(name: str) -> _Var:
    """A pattern variable to write predicates with."""
    return _Var(name)


def lit(value: bool | int | float | str | None) -> Expression:
    """A literal value as an expression (plain Python values also work as operands)."""
    return Expression(E.Constant(value))


def _aggregate(func: str, arg: _Slice | _SliceAttr) -> Expression:
    piece, attr = (arg, None) if isinstance(arg, _Slice) else (arg.piece, arg.attr)
    return Expression(E.Aggregate(func, piece.var, attr, piece.upto))  # type: ignore[arg-type]


def avg(arg: _Slice | _SliceAttr) -> Expression:
    """`avg(b[].x)` or `avg(b[..i-k].x)`."""
    return _aggregate("avg", arg)


def sum_(arg: _Slice | _SliceAttr) -> Expression:
    """`sum(b[].x)` or `sum(b[..i-k].x)`."""
    return _aggregate("sum", arg)


def min_(arg: _Slice | _SliceAttr) -> Expression:
    """`min(b[].x)` or `min(b[..i-k].x)`."""
    return _aggregate("min", arg)


def max_(arg: _Slice | _SliceAttr) -> Expression:
    """`max(b[].x)` or `max(b[..i-k].x)`."""
    return _aggregate("max", arg)


def count(arg: _Slice | _SliceAttr) -> Expression:
    """`count(b[])` (events) or `count(b[].x)` (non-null values)."""
    return _aggregate("count", arg)


def values(arg: _Slice | _SliceAttr) -> Expression:
    """`values(b[].x)`: the set of b's x values, for `call("contains", ...)`."""
    return _aggregate("values", arg)


def length(name: str) -> Expression:
    """`name.len`."""
    return Expression(E.Len(name))


def call(name: str, *args: Operand) -> Expression:
    """A call of a built-in or registered function: `call("corr", a.history, c.history)`."""
    return Expression(E.Call(name, tuple(_node(a) for a in args)))


def equiv(*attrs: str) -> Expression:
    """`[attr, …]`: every event of a match has the same value of each attribute."""
    return Expression(E.Equivalence(attrs))


_STRUCTURE = (A.EventVar, A.Negation, A.Seq, A.And, A.Or)


def and_(*items: Any) -> Any:
    """`AND(…)` of pattern elements, or the predicate `… and …` of expressions."""
    if items and all(isinstance(item, _STRUCTURE) for item in items):
        return A.And(items)
    return Expression(E.conjunction(*(_node(item) for item in items)))


def or_(*items: Any) -> Any:
    """`OR(…)` of pattern elements, or the predicate `… or …` of expressions."""
    if items and all(isinstance(item, _STRUCTURE) for item in items):
        return A.Or(items)
    return Expression(E.disjunction(*(_node(item) for item in items)))


def not_(item: Operand | A.EventVar) -> Any:
    """`not` of a predicate, or `NOT(T v)` of an event in the pattern structure."""
    if isinstance(item, A.EventVar):
        return A.Negation(item)
    return Expression(E.Unary("not", _node(item)))


def not_next(item: A.EventVar) -> A.Negation:
    """`NOT NEXT(T v)` (Flink's `notNext`): the event right after the element before it is
    not a qualifying T."""
    return A.Negation(item, next=True)


def not_followed(item: A.EventVar) -> A.Negation:
    """`NOT FOLLOWED(T v)` (Flink's `notFollowedBy`): no qualifying T from the first event of
    the variable before it to the first event after it."""
    return A.Negation(item, followed=True)


# ---- structure -------------------------------------------------------------------------


def event(
    types: str | Iterable[str],
    name: str,
    quantifier: str | None = None,
    *,
    optional: bool = False,
    greedy: bool = False,
    until: Expression | None = None,
) -> A.EventVar:
    """`T v`; `types` may list alternatives; `quantifier` is "+", "*", "{n}", "{n,}", "{n,m}".

    A "+" or "*" at the end of a single type name works too: `event("Stock+", "a")`; the type
    `_` takes events of any type. `optional` is `T? v` (or `T{n,m}? v[]`); `greedy` and
    `until` shape a Kleene variable's loop (`T+ v[] GREEDY UNTIL (v.x > 3)`).

    >>> a = var("a")
    >>> print(pattern(seq(event("C", "c"), event("A+", "a", greedy=True, until=a.x > 3),
    ...                   event("B", "b", optional=True))))
    PATTERN SEQ(C c, A+ a[] GREEDY UNTIL (a.x > 3), B? b)
    """
    names: tuple[str, ...] | None
    if isinstance(types, str):
        if quantifier is None and types[-1:] in {"+", "*"}:
            types, quantifier = types[:-1], types[-1]
        names = None if types == A.ANY else (types,)
    else:
        names = tuple(types)
    condition = None if until is None else until.node
    return A.EventVar(names, name, _quantifier(quantifier), optional, greedy, condition)


def _quantifier(text: str | None) -> A.Quantifier | None:
    if text is None:
        return None
    if text == "+":
        return A.Quantifier(1, None)
    if text == "*":
        return A.Quantifier(0, None)
    body = text.strip("{}")
    if "," not in body:
        return A.Quantifier(int(body), int(body))
    low, high = body.split(",")
    return A.Quantifier(int(low), int(high) if high.strip() else None)


def seq(*items: A.Element) -> A.Seq:
    return A.Seq(items)


def ses(*sets: Iterable[A.EventVar]) -> A.Element:
    """`SES({…}, {…})`: a sequence of sets, each set's events in any order.

    >>> p = var("p")
    >>> print(pattern(ses([event("_", "c"), event("_+", "p")], [event("_", "b")]),
    ...               where=[p.type == "P", prev(p.V) < p.V]))
    PATTERN SEQ(AND(_ c, _+ p[]), _ b)
    WHERE p[i].type = "P" and p[i-1].V < p[i].V
    """
    items = [tuple(members) for members in sets]
    parts = [group[0] if len(group) == 1 else A.And(group) for group in items]
    return parts[0] if len(parts) == 1 else A.Seq(tuple(parts))


def prev(attr: Expression) -> Expression:
    """`prev(p.V)`: V of the event before `p[i]` in p, that is `p[i-1].V`."""
    node = attr.node
    if not isinstance(node, E.Attr) or node.index is not None:
        raise ValueError(f"prev takes an attribute of a Kleene variable such as p.V, not {attr}")
    return Expression(E.Attr(node.var, node.attr, E.Index("i", -1)))


Window = int | float | tuple[int | float, str]


def pattern(
    structure: A.Element,
    where: Expression | Iterable[Expression] | None = None,
    *,
    strategy: str | Iterable[str | tuple[str, ...]] | None = None,
    within: Window | tuple[Window, Window] | None = None,
    after_match: str | tuple[str, str] | None = None,
    returns: dict[str, Expression] | None = None,
) -> A.Pattern:
    """A whole query; `where` may be one predicate or a list of conjuncts; `strategy` is a
    strategy's name, or a list of clauses, each a name or (name, variable, ...) for the
    edges and loops it covers; `within` is an amount, (amount, unit), (count, "events"), or
    a pair of a time and a count; `after_match` is one of `ast.SKIPS` ("past_last"), or
    ("to_first" | "to_last", variable); `returns` names the values each match reports
    (RETURN).

    >>> a, b = var("a"), var("b")
    >>> print(pattern(seq(event("A", "a"), event("B", "b")), within=5, after_match="to_next"))
    PATTERN SEQ(A a, B b)
    WITHIN 5
    AFTER MATCH SKIP TO NEXT
    >>> print(pattern(seq(event("A", "a"), event("B+", "b")),
    ...               strategy=["relaxed_contiguity", ("strict_contiguity", "b")],
    ...               within=((10, "s"), (100, "events"))))
    PATTERN SEQ(A a, B+ b[])
    WHERE relaxed_contiguity strict_contiguity(b[])
    WITHIN 10 s AND 100 EVENTS
    """
    condition: E.Expr | None
    if where is None:
        condition = None
    elif isinstance(where, Expression):
        condition = where.node
    else:
        condition = E.conjunction(*(item.node for item in where))
    window = None if within is None else _within(within)
    clauses: list[A.Strategy] = []
    for clause in [strategy] if isinstance(strategy, str) else strategy or ():
        if isinstance(clause, str):
            clauses.append(A.Strategy(clause))
        else:
            clauses.append(A.Strategy(clause[0], tuple(clause[1:])))
    returned = tuple(A.Returned(value.node, name) for name, value in (returns or {}).items())
    skip = None
    if after_match is not None:
        kind, variable = (after_match, None) if isinstance(after_match, str) else after_match
        if kind not in A.SKIPS:
            raise ValueError(f"after_match is one of {', '.join(A.SKIPS)}, not {kind!r}")
        skip = A.AfterMatch(next(s for s in A.SKIPS if s == kind), variable)
    return quantify(
        A.Pattern(structure, condition, tuple(clauses), window, after_match=skip, returns=returned)
    )


def _within(within: Window | tuple[Window, Window]) -> A.Within:
    """The WITHIN of `pattern`'s `within`."""
    parts = (
        list(within)
        if isinstance(within, tuple) and all(isinstance(p, tuple) for p in within)
        else [within]
    )
    amount: int | float | None = None
    unit: str | None = None
    events: int | None = None
    for part in parts:
        value, name = part if isinstance(part, tuple) else (part, None)
        assert isinstance(value, int | float)
        if isinstance(name, str) and name.lower() in ("events", "event"):
            events = int(value)
            continue
        if name is not None and (not isinstance(name, str) or name.lower() not in UNITS):
            raise ValueError(f"unknown time unit {name!r}; use one of {', '.join(UNITS)}, events")
        amount, unit = value, UNITS[name.lower()][0] if isinstance(name, str) else None
    return A.Within(amount, unit, events=events)
