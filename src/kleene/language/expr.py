"""The one expression tree every query language shares: SASE+ WHERE clauses, LEAD conditions
and actions, RETURN values. Frozen dataclasses that keep source positions but compare
without them.

A language reads its text into these nodes (`kleene.language.sase`, `kleene.language.lead`);
the compiler evaluates them with one interpreter (`kleene.compiler.evaluate`) and compiles
them with one code generator (`kleene.compiler.codegen`). What a leaf reads (`Attr`, `Len`,
`Aggregate`, `Name`, `Duration`) depends on where the expression stands: a variable's bound
events in a SASE+ pattern, an alias's event or a list's items in a LEAD rule.

Two normal forms keep printing and reading inverse to each other: `and`/`or` chains are flat
(`BoolOp` never holds a `BoolOp` of the same operator), and a negative number is a
`Constant`, never a minus applied to one. `conjunction`, `disjunction` and `negative` build
those forms.

>>> where = conjunction(Compare(">", Attr("b", "x"), Constant(1)), Equivalence(("k",)))
>>> [type(node).__name__ for node in walk(where)]
['BoolOp', 'Compare', 'Attr', 'Constant', 'Equivalence']
>>> negative(Constant(3))
Constant(value=-3)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeAlias
from typing import Literal as Lit

__all__ = [
    "AGGREGATES",
    "CURRENT",
    "NAVIGATIONS",
    "PAIR_AGGREGATES",
    "QUANTIFIERS",
    "ROW_AGGREGATES",
    "UNIVERSAL",
    "Aggregate",
    "Attr",
    "Binary",
    "BoolOp",
    "Call",
    "Case",
    "Classifier",
    "Compare",
    "Constant",
    "Duration",
    "Equivalence",
    "Expr",
    "Index",
    "IsNull",
    "Len",
    "MatchNumber",
    "Name",
    "Navigation",
    "Quantified",
    "RowAggregate",
    "Span",
    "Unary",
    "children",
    "conjunction",
    "conjuncts",
    "disjunction",
    "negative",
    "span_field",
    "walk",
    "written_args",
]

#: What an aggregate computes over a list of events (`values`: the set of values).
AGGREGATES = ("avg", "sum", "min", "max", "count", "values")
#: The `var` of an aggregate of the list a LEAD collect clause governs (`count()`): no
#: variable is named so.
CURRENT = ""
#: How a quantifier counts the items its body holds for (LEAD's ALL, ANY, AT LEAST n, ...).
QUANTIFIERS = ("all", "any", "at least", "at most", "exactly")
#: The `var` of a column a row pattern reads without naming a variable (SQL's universal row
#: pattern variable: every row of the match); no variable is named so.
UNIVERSAL = "*"
#: SQL's row pattern navigations: PREV and NEXT move over the partition's rows, FIRST and
#: LAST over the rows a variable's match holds.
NAVIGATIONS = ("prev", "next", "first", "last")
#: What an aggregate of a row pattern's rows computes.
ROW_AGGREGATES = (
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "max_by",
    "min_by",
    "count_if",
    "bool_and",
    "bool_or",
    "arbitrary",
)
#: The aggregates of two values a row (`max_by(x, y)`: x where y is largest), whose
#: `RowAggregate.arg` is the pair, an `array(x, y)` call.
PAIR_AGGREGATES = ("max_by", "min_by")


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node stands in the query text (lines and columns from 1, offsets from 0)."""

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int


def span_field() -> Any:
    """The `span` field of a node: keyword-only, left out of comparison and repr."""
    return field(default=None, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True, slots=True)
class Constant:
    """A number, string, boolean or null (None)."""

    value: int | float | str | bool | None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Index:
    """Which event of a Kleene variable b, as written between the brackets.

    `b[i]` is Index("i"), `b[i-1]` is Index("i", -1), `b[3]` is Index("abs", 3), `b[b.len]`
    is Index("last") and `b[b.len-1]` is Index("last", -1).
    """

    base: Lit["i", "abs", "last"]
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Attr:
    """`v.attr`: an attribute of the event bound to v (in SASE+, `b[index].attr` for a Kleene
    variable; in LEAD, of an alias's event, or of a list's item inside a quantifier)."""

    var: str
    attr: str
    index: Index | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Len:
    """`b.len`: how many events the Kleene variable b bound."""

    var: str
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Aggregate:
    """An aggregate over a list of events: SASE+'s `avg(b[].x)` over a Kleene variable's
    whole binding, `avg(b[..i-1].x)` over its events before b[i]; LEAD's `sum(l.x)` and
    `count(l)` over a list's items.

    `upto` is None for the whole list and k for `b[..i-k]`; `attr` is None only for a count
    of the events themselves. `var` is `CURRENT` for LEAD's `count()`: the list the collect
    clause it stands in governs. `values(b[].x)` is the set of the x values (for
    `contains`).
    """

    func: Lit["avg", "sum", "min", "max", "count", "values"]
    var: str
    attr: str | None
    upto: int | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a built-in or user-registered scalar function."""

    name: str
    args: tuple[Expr, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Unary:
    op: Lit["-", "not"]
    operand: Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic, and SQL's `||` (text joined)."""

    op: Lit["+", "-", "*", "/", "%", "||"]
    left: Expr
    right: Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Case:
    """SQL's `CASE WHEN c1 THEN v1 … ELSE e END`: the value of the first branch whose
    condition is true (null and false are not), else `default` (null when there is none).
    A simple `CASE x WHEN a THEN …` is read as `WHEN x = a THEN …`."""

    branches: tuple[tuple[Expr, Expr], ...]
    default: Expr | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class IsNull:
    """SQL's `x IS NULL`: true when x is null, false otherwise (never null itself)."""

    operand: Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Compare:
    op: Lit["=", "!=", "<", "<=", ">", ">="]
    left: Expr
    right: Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class BoolOp:
    """A flat `and` or `or` of two or more operands."""

    op: Lit["and", "or"]
    items: tuple[Expr, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Equivalence:
    """`[symbol]` or `[a1, a2]`: every event of the match has the same value of each attribute."""

    attrs: tuple[str, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Duration:
    """`3 days`: a length of time, in the unit written (`seconds` long); its value is that
    length in timestamp units."""

    amount: int | float
    unit: str
    seconds: float
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Name:
    """A bare name (LEAD): a time event (true while it lasts), a list, a named match, or an
    attribute PARTITION BY names."""

    name: str
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Quantified:
    """`ALL(cond)`, `ANY(cond)`, `AT LEAST n (cond)`, `AT MOST n (cond)`, `EXACTLY n (cond)`
    over the items of the one list `cond` reads (LEAD's repetition quantifiers): how many
    items the condition holds for, against all of them, one, or n."""

    quantifier: Lit["all", "any", "at least", "at most", "exactly"]
    body: Expr
    n: int | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Navigation:
    """SQL's row pattern navigation: `PREV(arg, offset)` and `NEXT(arg, offset)` read `arg`
    at the row `offset` rows before or after the row it would be read at (over the
    partition's rows); `FIRST(arg, offset)` and `LAST(arg, offset)` at the row `offset`
    rows after the first, or before the last, row mapped to the variable `arg` reads (over
    the match). `final`: FINAL semantics (the whole match) rather than RUNNING (the match
    up to the current row)."""

    func: Lit["prev", "next", "first", "last"]
    arg: Expr
    offset: int
    final: bool = False
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Classifier:
    """SQL's `CLASSIFIER(v)`: the variable the last row mapped to v (a variable, a subset,
    or `UNIVERSAL`: any row) is mapped to."""

    var: str = UNIVERSAL
    final: bool = False
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class MatchNumber:
    """SQL's `MATCH_NUMBER()`: the match's number in its partition, from 1."""

    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class RowAggregate:
    """An aggregate over the rows of a row pattern match mapped to `var` (a variable, a
    subset, or `UNIVERSAL`), of `arg` read at each (None: `count(*)`, the rows themselves).
    `func` is one of `ROW_AGGREGATES`, or the name of a user-defined aggregate, whose
    `function` it holds; the arguments of a `PAIR_AGGREGATES` one or of a user-defined one
    are one `array(x, …)` call (`written_args`). `final`: over the whole match rather than
    up to the current row."""

    func: str
    arg: Expr | None
    var: str = UNIVERSAL
    final: bool = False
    #: A user-defined aggregate's function (`kleene.register_aggregate`), called with a
    #: list of values for each argument.
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    span: Span | None = span_field()


def written_args(node: RowAggregate) -> tuple[Expr, ...]:
    """An aggregate's arguments as the query writes them (`max_by(x, y)`: x and y)."""
    if node.arg is None:
        return ()
    if (node.func in PAIR_AGGREGATES or node.function is not None) and isinstance(node.arg, Call):
        return node.arg.args
    return (node.arg,)


Expr: TypeAlias = (
    Constant
    | Attr
    | Len
    | Aggregate
    | Call
    | Unary
    | Binary
    | Compare
    | IsNull
    | Case
    | BoolOp
    | Equivalence
    | Duration
    | Name
    | Quantified
    | Navigation
    | Classifier
    | MatchNumber
    | RowAggregate
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
        isinstance(operand, Constant)
        and isinstance(operand.value, int | float)
        and not isinstance(operand.value, bool)
    ):
        return Constant(-operand.value, span=span)
    return Unary("-", operand, span=span)


def conjuncts(expr: Expr | None) -> tuple[Expr, ...]:
    """The top-level conjuncts of a condition."""
    if expr is None:
        return ()
    if isinstance(expr, BoolOp) and expr.op == "and":
        return expr.items
    return (expr,)


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of an expression node."""
    match expr:
        case Unary(operand=operand) | IsNull(operand=operand):
            return (operand,)
        case Binary(left=left, right=right) | Compare(left=left, right=right):
            return (left, right)
        case BoolOp(items=items):
            return items
        case Call(args=args):
            return args
        case Quantified(body=body) | Navigation(arg=body):
            return (body,)
        case RowAggregate(arg=arg) if arg is not None:
            return (arg,)
        case Case(branches=branches, default=default):
            found = tuple(part for branch in branches for part in branch)
            return found if default is None else (*found, default)
    return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of an expression, the node itself first."""
    yield expr
    for child in children(expr):
        yield from walk(child)
