"""The pattern AST: frozen dataclasses that keep source positions but compare without them.

A query has two halves. The *structure* (the PATTERN clause) is a tree of `Seq`, `And`, `Or`,
`Negation` and `EventVar` nodes. The *predicates* (the WHERE clause) are an expression tree.
Both come from the parser (`to_ast.py`) or the builder (`builder.py`) and print back to text
with `printer.py`.

Two normal forms keep printing and parsing inverse to each other: `and`/`or` chains are flat
(`BoolOp` never holds a `BoolOp` of the same operator), and a negative number is a `Literal`,
never a minus applied to one. The helpers `conjunction`, `disjunction` and `negative` build
those forms.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeAlias
from typing import Literal as Lit

__all__ = [
    "AGGREGATES",
    "ANY",
    "SASE_STRATEGIES",
    "SKIPS",
    "STRATEGIES",
    "AfterMatch",
    "Aggregate",
    "And",
    "Attr",
    "Binary",
    "BoolOp",
    "Call",
    "Compare",
    "Element",
    "Equivalence",
    "EventVar",
    "Expr",
    "Index",
    "Len",
    "Literal",
    "Negation",
    "Or",
    "Pattern",
    "Quantifier",
    "Returned",
    "Seq",
    "Skip",
    "Span",
    "Strategy",
    "Unary",
    "Within",
    "children",
    "conjunction",
    "conjuncts",
    "disjunction",
    "event_vars",
    "negative",
    "positive_names",
    "walk",
]

#: The event selection strategies of SASE+ (section 2 of the paper).
SASE_STRATEGIES = (
    "strict_contiguity",
    "partition_contiguity",
    "skip_till_next_match",
    "skip_till_any_match",
)
#: Every strategy kleene runs: SASE+'s, and Flink CEP's relaxed contiguity (`followedBy`).
STRATEGIES = (*SASE_STRATEGIES, "relaxed_contiguity")
#: What `AFTER MATCH` may say (Flink's AfterMatchSkipStrategy): NO SKIP, SKIP TO NEXT, SKIP
#: PAST LAST EVENT, SKIP TO FIRST v, SKIP TO LAST v.
Skip: TypeAlias = Lit["no_skip", "to_next", "past_last", "to_first", "to_last"]
SKIPS: tuple[Skip, ...] = ("no_skip", "to_next", "past_last", "to_first", "to_last")
AGGREGATES = ("avg", "sum", "min", "max", "count", "values")
#: The type that stands for any type: `_ x` (and a bare name in SES) takes every event.
ANY = "_"


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node stands in the query text (lines and columns from 1, offsets from 0)."""

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int


def _span() -> Any:
    return field(default=None, compare=False, repr=False, kw_only=True)


# ---- structure -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Quantifier:
    """How many events a Kleene variable binds: `+` is (1, None), `*` is (0, None)."""

    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class EventVar:
    """`T v`, `(T|U) v` or, with a quantifier, the Kleene variable `T+ v[]`.

    `types` is None for `_ v`, a variable that takes an event of any type. `optional`: the
    variable may also bind nothing (`T? v`, `T{2,4}? v[]`: none, or two to four). A Kleene
    variable may be `greedy` (`T+ v[] GREEDY`: its loop keeps an event the next element could
    take too) and have an `until` condition (`T+ v[] UNTIL (v.x > 3)`: the loop stops before
    the first event for which it holds, `v` there meaning that event).
    """

    types: tuple[str, ...] | None
    name: str
    quantifier: Quantifier | None = None
    optional: bool = False
    greedy: bool = False
    until: Expr | None = None
    span: Span | None = _span()

    @property
    def kleene(self) -> bool:
        return self.quantifier is not None


@dataclass(frozen=True, slots=True)
class Negation:
    """`~(T v)`: no qualifying event of type T where the pattern puts it."""

    event: EventVar
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Element, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Element, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Element, ...]
    span: Span | None = _span()


Element: TypeAlias = EventVar | Negation | Seq | And | Or


# ---- predicates ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Literal:
    """A number, string, boolean or null (None)."""

    value: int | float | str | bool | None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Index:
    """Which element of a Kleene variable b, as written between the brackets.

    `b[i]` is Index("i"), `b[i-1]` is Index("i", -1), `b[3]` is Index("abs", 3), `b[b.len]`
    is Index("last") and `b[b.len-1]` is Index("last", -1).
    """

    base: Lit["i", "abs", "last"]
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Attr:
    """`v.attr`, or `b[index].attr` for a Kleene variable."""

    var: str
    attr: str
    index: Index | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Len:
    """`b.len`: how many events the Kleene variable b bound."""

    var: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Aggregate:
    """`avg(b[].x)` over the whole binding, or `avg(b[..i-1].x)` over the elements before b[i].

    `upto` is None for the whole binding and k for `b[..i-k]`; `attr` is None only for
    `count(b[])`. `values(b[].x)` is the set of b's x values (for `contains`).
    """

    func: Lit["avg", "sum", "min", "max", "count", "values"]
    var: str
    attr: str | None
    upto: int | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a built-in or user-registered scalar function."""

    name: str
    args: tuple[Expr, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Unary:
    op: Lit["-", "not"]
    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Binary:
    op: Lit["+", "-", "*", "/", "%"]
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Compare:
    op: Lit["=", "!=", "<", "<=", ">", ">="]
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class BoolOp:
    """A flat `and` or `or` of two or more operands."""

    op: Lit["and", "or"]
    items: tuple[Expr, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Equivalence:
    """`[symbol]` or `[a1, a2]`: every event of the match has the same value of each attribute."""

    attrs: tuple[str, ...]
    span: Span | None = _span()


Expr: TypeAlias = (
    Literal | Attr | Len | Aggregate | Call | Unary | Binary | Compare | BoolOp | Equivalence
)


def _chain(op: Lit["and", "or"], items: tuple[Expr, ...], span: Span | None) -> Expr:
    flat: list[Expr] = []
    for item in items:
        if isinstance(item, BoolOp) and item.op == op:
            flat.extend(item.items)
        else:
            flat.append(item)
    if len(flat) == 1:
        return flat[0]
    return BoolOp(op, tuple(flat), span=span)


def conjunction(*items: Expr, span: Span | None = None) -> Expr:
    """`a and b and …` in normal form (flat; a single item stands alone)."""
    return _chain("and", items, span)


def disjunction(*items: Expr, span: Span | None = None) -> Expr:
    """`a or b or …` in normal form."""
    return _chain("or", items, span)


def negative(operand: Expr, span: Span | None = None) -> Expr:
    """`-operand` in normal form: a negative number stays a number."""
    if (
        isinstance(operand, Literal)
        and isinstance(operand.value, int | float)
        and not isinstance(operand.value, bool)
    ):
        return Literal(-operand.value, span=span)
    return Unary("-", operand, span=span)


def conjuncts(expr: Expr | None) -> tuple[Expr, ...]:
    """The top-level conjuncts of a WHERE expression."""
    if expr is None:
        return ()
    if isinstance(expr, BoolOp) and expr.op == "and":
        return expr.items
    return (expr,)


# ---- the query -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Within:
    """`WITHIN amount unit [EXCLUSIVE]`; unit is None for a bare number (in timestamp units).
    A match's last event is at most `amount` after its first, or less than that when
    `exclusive` (Flink's and CORE's windows). `events` is a count window (`WITHIN 5 EVENTS`,
    `WITHIN 10 s AND 100 EVENTS`): the match's last event is at most that many positions
    after its first in the stream; `amount` is None when the window counts events only."""

    amount: int | float | None
    unit: str | None = None
    exclusive: bool = False
    events: int | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Strategy:
    """An event selection strategy clause: `skip_till_next_match` for the whole query, or
    `strict_contiguity(a, b)` for the edges between the variables it lists and the loops of
    the Kleene ones (per-edge strategies, `kleene.compiler.strategies`)."""

    name: str
    variables: tuple[str, ...] | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class AfterMatch:
    """`AFTER MATCH SKIP ...`: the matches a reported one rules out (docs/semantics.md,
    section 7). `skip` is one of `SKIPS`; `variable` names v of `TO FIRST v` / `TO LAST v`."""

    skip: Skip
    variable: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Returned:
    """`RETURN expr AS name`: a value each match reports (MATCH_RECOGNIZE's MEASURES)."""

    expr: Expr
    name: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Pattern:
    """A whole SASE+ query: PATTERN structure, WHERE predicates and strategies, WITHIN window.

    `strategies` are the strategy clauses in the order written (none: skip_till_any_match).
    `after_match` is the AFTER MATCH clause (None: every match, as NO SKIP).
    `text` is the source the parser read (None for built patterns).
    """

    structure: Element
    where: Expr | None = None
    strategies: tuple[Strategy, ...] = ()
    within: Within | None = None
    after_match: AfterMatch | None = field(default=None, kw_only=True)
    #: RETURN: the values each match reports, in order.
    returns: tuple[Returned, ...] = field(default=(), kw_only=True)
    text: str | None = field(default=None, compare=False, repr=False, kw_only=True)
    span: Span | None = _span()

    def __str__(self) -> str:
        from kleene.language.printer import to_text

        return to_text(self)


# ---- walking ---------------------------------------------------------------------------


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of an expression node."""
    match expr:
        case Unary(operand=operand):
            return (operand,)
        case Binary(left=left, right=right) | Compare(left=left, right=right):
            return (left, right)
        case BoolOp(items=items):
            return items
        case Call(args=args):
            return args
    return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of an expression, the node itself first."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def contains_or(element: Element) -> bool:
    """Is there an OR anywhere in the structure?"""
    if isinstance(element, Or):
        return True
    if isinstance(element, EventVar | Negation):
        return False
    return any(contains_or(item) for item in element.items)


def positive_names(element: Element) -> list[str]:
    """The names of the positive (not negated) variables of a structure, in pattern order,
    each once."""
    names: dict[str, None] = {}

    def visit(node: Element) -> None:
        if isinstance(node, EventVar):
            names.setdefault(node.name)
        elif not isinstance(node, Negation):
            for item in node.items:
                visit(item)

    visit(element)
    return list(names)


def event_vars(element: Element) -> Iterator[EventVar]:
    """Every event variable of a structure, negated ones included, in pattern order."""
    if isinstance(element, EventVar):
        yield element
    elif isinstance(element, Negation):
        yield element.event
    else:
        for item in element.items:
            yield from event_vars(item)
