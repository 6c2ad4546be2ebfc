"""MATCH_RECOGNIZE text → AST: the lark parser and the tree transformer.

`read(text)` takes the text inside `MATCH_RECOGNIZE ( … )`, or the whole clause, and gives
syntax errors in plain words with a caret. It also checks what the grammar leaves open: a
quantifier's bounds, a navigation's offset, where RUNNING and FINAL may stand, names given
twice. Whether the names make sense together is `kleene.compiler.row_pattern`'s job.

>>> clause = read("PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)")
>>> clause.pattern
Concat(items=(Label(name='A'), Repeat(body=Label(name='B'), min=1, max=None, greedy=True)))
>>> clause.defines[0].condition.right
Navigation(func='prev', arg=Attr(var='B', attr='price', index=None), offset=1, final=False)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from lark import Lark, Token, v_args
from lark.tree import Meta

from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.language.text import ExprReader, end_position, grammar, read_with, span_of

__all__ = ["KEYWORDS", "MAX_REPEAT", "read", "register_aggregate", "unregister_aggregate"]

#: The clause's keywords (a misspelling of one is pointed out).
KEYWORDS = (
    "MATCH_RECOGNIZE",
    "PARTITION",
    "ORDER",
    "MEASURES",
    "ONE",
    "ALL",
    "ROWS",
    "AFTER",
    "SKIP",
    "PATTERN",
    "SUBSET",
    "DEFINE",
    "WITHIN",
    "PERMUTE",
    "RUNNING",
    "FINAL",
    "PREV",
    "NEXT",
    "FIRST",
    "LAST",
    "CLASSIFIER",
    "MATCH_NUMBER",
    "MATCH_ROWTIME",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
)
#: The largest bound a quantifier may write (`{n,m}`): the matcher unrolls bounded
#: repetitions.
MAX_REPEAT = 1000


@cache
def _parser() -> Lark:
    return grammar("kleene.language.sql")


def read(text: str) -> Q.MatchRecognize:
    """Parse a MATCH_RECOGNIZE clause into a `MatchRecognize`, or raise
    `PatternSyntaxError` / `PatternError`."""
    clause: Q.MatchRecognize = read_with(text, _parser(), KEYWORDS, ToClause)
    return clause


def _name(token: Token) -> str:
    """A column's (or a measure's) name as written: a quoted name without its quotes (""
    inside stands for ")."""
    text = str(token)
    if token.type == "QUOTED_NAME":
        return text[1:-1].replace('""', '"') if text[0] == '"' else text[1:-1]
    return text


def _variable(token: Token) -> str:
    """A pattern variable's (or a SUBSET's) name, as the standard reads it: unquoted, in
    upper case (`a` and `A` are one variable, and CLASSIFIER() gives 'A'); quoted, as
    written (`"b"` is b). Column names stay as written: they name the input's fields.

    >>> from lark import Token
    >>> _variable(Token("NAME", "up")), _variable(Token("QUOTED_NAME", '"up"'))
    ('UP', 'up')
    """
    return _name(token) if token.type == "QUOTED_NAME" else str(token).upper()


#: User-defined aggregates by name (`register_aggregate`), which the reader reads as such.
_AGGREGATES: dict[str, Callable[..., Any]] = {}
#: The aggregates' other names (`any_value` is Trino's `arbitrary`, `every` the standard's
#: `bool_and`).
_SYNONYMS = {"any_value": "arbitrary", "every": "bool_and"}


def register_aggregate(name: str, function: Callable[..., Any] | None = None) -> Any:
    """Make `function` an aggregate of MATCH_RECOGNIZE by `name` (Flink SQL's
    user-defined `AggregateFunction`); also usable as a decorator. A call `name(x, …)`
    in a clause read afterwards calls `function` with, for each argument, the list of
    the values it reads at the rows mapped to the variable its columns name (every row
    of the match when they name none), up to the current row (FINAL: the whole match),
    in row order, nulls included. The clause holds the function: on Spark it goes to the
    workers with it.

    >>> import kleene
    >>> @kleene.register_aggregate("count_from")
    ... def count_from(prices):  # Flink's RichAggFunc: a count that starts at 4
    ...     return 4 + sum(prices)
    >>> rows = [{"id": i, "price": 1} for i in range(1, 7)]
    >>> kleene.match_recognize(rows, "ORDER BY id MEASURES count_from(A.price) AS n "
    ...     "PATTERN (A+ C) DEFINE A AS count_from(A.price) <= 8").to_dict("records")
    [{'n': 8}]
    >>> kleene.unregister_aggregate("count_from")
    """

    def add(f: Callable[..., Any]) -> Callable[..., Any]:
        if not name.isidentifier():
            raise ValueError(f"an aggregate's name must be an identifier, not {name!r}")
        if name.lower() in E.ROW_AGGREGATES or name.lower() in _SYNONYMS:
            raise ValueError(f"{name} is a built-in aggregate")
        _AGGREGATES[name.lower()] = f
        return f

    return add if function is None else add(function)


def unregister_aggregate(name: str) -> None:
    """Forget an aggregate registered with `register_aggregate`."""
    _AGGREGATES.pop(name.lower(), None)


class ToClause(ExprReader):
    """Parse tree → `MatchRecognize` and the one expression tree."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        #: ORDER BY's first column, which `MATCH_ROWTIME()` reads (the tree is read left
        #: to right, so ORDER BY before MEASURES and DEFINE).
        self.order_column: str | None = None

    # -- the clause ----------------------------------------------------------------------

    def start(self, children: list[Any]) -> Q.MatchRecognize:
        clause: Q.MatchRecognize = children[-1]
        return clause

    @v_args(meta=True)
    def clause(self, meta: Meta, children: list[Any]) -> Q.MatchRecognize:
        parts: dict[str, Any] = {}
        for kind, value in children:
            parts[kind] = value
        rows, empty = parts.get("rows", ("one", "show"))
        span = E.Span(0, len(self.text), 1, 1, *end_position(self.text))
        return Q.MatchRecognize(
            pattern=parts["pattern"],
            partition_by=parts.get("partition", ()),
            order_by=parts.get("order", ()),
            measures=parts.get("measures", ()),
            rows=rows,
            empty=empty,
            skip=parts.get("skip", Q.Skip()),
            subsets=parts.get("subsets", ()),
            defines=parts.get("defines", ()),
            within=parts.get("within"),
            text=self.text,
            span=span,
        )

    def partition_clause(self, children: list[Any]) -> tuple[str, Any]:
        return "partition", self._unique("PARTITION BY", [(c, span) for c, span in children])

    def order_clause(self, children: list[Q.SortKey]) -> tuple[str, Any]:
        self._unique("ORDER BY", [(key.column, key.span) for key in children])
        self.order_column = children[0].column  # (read before MEASURES and DEFINE are)
        return "order", tuple(children)

    @v_args(meta=True)
    def sort_key(self, meta: Meta, children: list[Any]) -> Q.SortKey:
        (column, _), *rest = children
        descending = any(c == "desc" for c in rest)
        nulls = [c for c in rest if isinstance(c, bool)]
        return Q.SortKey(column, descending, nulls[0] if nulls else None, span=span_of(meta))

    def direction(self, children: list[Token]) -> str:
        return str(children[0]).lower()

    def nulls(self, children: list[Token]) -> bool:
        return str(children[0]).upper() == "FIRST"

    @v_args(meta=True)
    def column(self, meta: Meta, children: list[Token]) -> tuple[str, E.Span]:
        return _name(children[0]), span_of(meta)

    def _unique(self, clause: str, names: list[tuple[str, E.Span | None]]) -> tuple[str, ...]:
        seen: set[str] = set()
        for name, span in names:
            if name in seen:
                self._fail(f"{clause} names {name!r} twice", span or E.Span(0, 0, 0, 0, 0, 0))
            seen.add(name)
        return tuple(name for name, _ in names)

    def measures_clause(self, children: list[Q.Measure]) -> tuple[str, Any]:
        self._unique("MEASURES", [(m.name, m.span) for m in children])
        return "measures", tuple(children)

    @v_args(meta=True)
    def measure(self, meta: Meta, children: list[Any]) -> Q.Measure:
        return Q.Measure(children[0], _name(children[-1]), span=span_of(meta))

    def one_row(self, children: list[Any]) -> tuple[str, Any]:
        return "rows", ("one", "show")

    def all_rows(self, children: list[Any]) -> tuple[str, Any]:
        return "rows", ("all", children[0] if children else "show")

    def show_empty(self, children: list[Any]) -> str:
        return "show"

    def omit_empty(self, children: list[Any]) -> str:
        return "omit"

    def with_unmatched(self, children: list[Any]) -> str:
        return "unmatched"

    @v_args(meta=True)
    def skip_past_last(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "skip", Q.Skip("past_last", span=span_of(meta))

    @v_args(meta=True)
    def skip_to_next(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "skip", Q.Skip("next_row", span=span_of(meta))

    @v_args(meta=True)
    def skip_to_first(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "skip", Q.Skip("first", _variable(children[-1]), span=span_of(meta))

    @v_args(meta=True)
    def skip_to_last(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "skip", Q.Skip("last", _variable(children[-1]), span=span_of(meta))

    @v_args(meta=True)
    def within_clause(self, meta: Meta, children: list[Token]) -> tuple[str, Any]:
        amount, unit, seconds = self._interval(children[0], children[1], "WITHIN INTERVAL")
        return "within", Q.Within(amount, unit, seconds, span=span_of(meta))

    @v_args(meta=True)
    def interval(self, meta: Meta, children: list[Token]) -> E.Expr:
        """`INTERVAL '10' MINUTE` in an expression: a length of time (`Duration`)."""
        amount, unit, seconds = self._interval(children[0], children[1], "INTERVAL")
        number = float(amount)
        value = int(number) if number.is_integer() else number
        return E.Duration(value, unit, seconds, span=span_of(meta))

    def _interval(
        self, amount_token: Token, unit_token: Token, what: str
    ) -> tuple[str, str, float]:
        """An interval's amount as written, its unit (singular, in upper case) and its
        length in seconds, or an error with a caret."""
        amount = str(amount_token)[1:-1].strip()
        unit = str(unit_token).upper().removesuffix("S")
        if unit not in Q.INTERVAL_UNITS:
            units = ", ".join(Q.INTERVAL_UNITS)
            self._fail(f"{what} takes {units}, not {str(unit_token)!r}", unit_token)
        try:
            length = float(amount)
        except ValueError:
            length = -1.0
        if not 0 < length < float("inf"):
            self._fail(f"{what} needs a positive number, not '{amount}'", amount_token)
        return amount, unit, length * Q.INTERVAL_UNITS[unit]

    def subset_clause(self, children: list[Q.Subset]) -> tuple[str, Any]:
        self._unique("SUBSET", [(s.name, s.span) for s in children])
        return "subsets", tuple(children)

    @v_args(meta=True)
    def subset(self, meta: Meta, children: list[Token]) -> Q.Subset:
        first, equals, *rest = children
        if str(equals) != "=":
            self._fail(f"SUBSET {_variable(first)} needs '=', not {str(equals)!r}", equals)
        name, *members = (_variable(c) for c in (first, *rest))
        return Q.Subset(name, tuple(members), span=span_of(meta))

    def define_clause(self, children: list[Q.Definition]) -> tuple[str, Any]:
        self._unique("DEFINE", [(d.var, d.span) for d in children])
        return "defines", tuple(children)

    @v_args(meta=True)
    def definition(self, meta: Meta, children: list[Any]) -> Q.Definition:
        return Q.Definition(_variable(children[0]), children[1], span=span_of(meta))

    # -- the row pattern -------------------------------------------------------------------

    def pattern_clause(self, children: list[Q.RowPattern]) -> tuple[str, Any]:
        return "pattern", children[0]

    @v_args(meta=True)
    def alternation(self, meta: Meta, children: list[Q.RowPattern]) -> Q.RowPattern:
        return Q.Alternation(tuple(children), span=span_of(meta))

    @v_args(meta=True)
    def concatenation(self, meta: Meta, children: list[Q.RowPattern]) -> Q.RowPattern:
        if len(children) == 1:
            return children[0]
        return Q.Concat(tuple(children), span=None if meta.empty else span_of(meta))

    @v_args(meta=True)
    def label(self, meta: Meta, children: list[Token]) -> Q.RowPattern:
        return Q.Label(_variable(children[0]), span=span_of(meta))

    @v_args(meta=True)
    def start_anchor(self, meta: Meta, children: list[Any]) -> Q.RowPattern:
        return Q.Anchor("^", span=span_of(meta))

    @v_args(meta=True)
    def end_anchor(self, meta: Meta, children: list[Any]) -> Q.RowPattern:
        return Q.Anchor("$", span=span_of(meta))

    @v_args(meta=True)
    def exclusion(self, meta: Meta, children: list[Q.RowPattern]) -> Q.RowPattern:
        return Q.Exclusion(children[0], span=span_of(meta))

    @v_args(meta=True)
    def permute(self, meta: Meta, children: list[Q.RowPattern]) -> Q.RowPattern:
        return Q.Permute(tuple(children), span=span_of(meta))

    @v_args(meta=True)
    def repeat(self, meta: Meta, children: list[Any]) -> Q.RowPattern:
        body, (low, high, greedy) = children
        return Q.Repeat(body, low, high, greedy, span=span_of(meta))

    @staticmethod
    def _greedy(tokens: list[Token]) -> bool:
        return not any(t.type == "RELUCTANT" for t in tokens)

    def star(self, children: list[Token]) -> tuple[int, int | None, bool]:
        return 0, None, self._greedy(children)

    def plus(self, children: list[Token]) -> tuple[int, int | None, bool]:
        return 1, None, self._greedy(children)

    def optional(self, children: list[Token]) -> tuple[int, int | None, bool]:
        return 0, 1, self._greedy(children[1:])

    @v_args(meta=True)
    def exactly(self, meta: Meta, children: list[Token]) -> tuple[int, int | None, bool]:
        count = self._bound(children[0])
        return count, count, self._greedy(children[1:])

    @v_args(meta=True)
    def bounded(self, meta: Meta, children: list[Token]) -> tuple[int, int | None, bool]:
        ints = [c for c in children if c.type == "INT"]
        text = self.text[meta.start_pos : meta.end_pos].rstrip("?")
        # which side of the comma an INT stands on: its position against the comma's
        low = high = None
        for token in ints:
            before_comma = self.text[meta.start_pos : token.start_pos].count(",") == 0
            if before_comma:
                low = self._bound(token)
            else:
                high = self._bound(token)
        low = low or 0
        if high is not None and high < low:
            self._fail(f"a quantifier {text} needs its minimum at most its maximum", meta)
        return low, high, self._greedy(children)

    def _bound(self, token: Token) -> int:
        value = int(str(token))
        if value > MAX_REPEAT:
            self._fail(
                f"a quantifier bound of {value}; kleene takes at most {MAX_REPEAT} (write + or * "
                "for no bound)",
                token,
            )
        return value

    # -- expressions -----------------------------------------------------------------------

    @v_args(meta=True)
    def column_ref(self, meta: Meta, children: list[Token]) -> E.Expr:
        return E.Attr(E.UNIVERSAL, _name(children[0]), span=span_of(meta))

    @v_args(meta=True)
    def qualified_ref(self, meta: Meta, children: list[Token]) -> E.Expr:
        return E.Attr(_variable(children[0]), _name(children[1]), span=span_of(meta))

    def semantics(self, children: list[Token]) -> bool:
        return str(children[0]).upper() == "FINAL"

    def nav_func(self, children: list[Token]) -> str:
        return str(children[0]).lower()

    @v_args(meta=True)
    def navigation(self, meta: Meta, children: list[Any]) -> E.Expr:
        final = children[0] if isinstance(children[0], bool) else None
        func, arg, *offset = children[1:] if final is not None else children
        default = 1 if func in ("prev", "next") else 0
        steps = int(str(offset[0])) if offset else default
        if final is not None and func in ("prev", "next"):
            self._fail(
                f"RUNNING and FINAL go before FIRST, LAST, aggregates and CLASSIFIER, not "
                f"{func.upper()}",
                meta,
            )
        return E.Navigation(func, arg, steps, bool(final), span=span_of(meta))

    @v_args(meta=True)
    def aggregate(self, meta: Meta, children: list[Any]) -> E.Expr:
        """An aggregate of the rows a variable maps; `any_value` is Trino's `arbitrary`,
        `every` the standard's `bool_and`, and `max_by(x, y)`'s pair is one argument,
        `array(x, y)`."""
        final = children[0] if isinstance(children[0], bool) else False
        rest = children[1:] if isinstance(children[0], bool) else children
        func_token, arg, *by = rest
        func = _SYNONYMS.get(str(func_token).lower(), str(func_token).lower())
        if (func in E.PAIR_AGGREGATES) != bool(by):
            wanted = "two arguments: " if func in E.PAIR_AGGREGATES else "one argument: "
            example = f"{func}(x, y)" if func in E.PAIR_AGGREGATES else f"{func}(x)"
            self._fail(f"{func} takes {wanted}{example}", meta)
        if isinstance(arg, tuple):  # count(*) or count(A.*)
            if func != "count":
                self._fail(f"{func}(*) has no meaning; * counts rows: count(*)", meta)
            var, expr = arg[0], None
        else:
            if by:
                arg = E.Call("array", (arg, by[0]), span=span_of(meta))
            var, expr = self._aggregated(func, arg, meta), arg
        return E.RowAggregate(func, expr, var, final, span=span_of(meta))

    @v_args(meta=True)
    def aggregate_of_nothing(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`count()`: count(*), as Trino reads it; any other aggregate needs an argument."""
        final = children[0] if isinstance(children[0], bool) else False
        func = str(children[-1]).lower()
        if func != "count":
            self._fail(f"{func}() needs an argument: {func}(x) or {func}(A.x)", meta)
        return E.RowAggregate("count", None, E.UNIVERSAL, final, span=span_of(meta))

    def _aggregated(self, func: str, arg: E.Expr, meta: Meta) -> str:
        """The variable whose rows an aggregate ranges over: the one every column its
        argument reads names (the universal variable when they name none)."""
        names = {node.var for node in E.walk(arg) if isinstance(node, E.Attr | E.Classifier)}
        if len(names) > 1:
            listed = ", ".join(sorted("(unqualified)" if n == E.UNIVERSAL else n for n in names))
            self._fail(
                f"the columns {func}(...) reads name different variables ({listed}); an "
                "aggregate ranges over the rows of one",
                meta,
            )
        for node in E.walk(arg):
            if isinstance(node, E.RowAggregate):
                self._fail("an aggregate inside an aggregate has no meaning", node.span or meta)
        return names.pop() if names else E.UNIVERSAL

    def count_rows(self, children: list[Any]) -> tuple[str]:
        return (E.UNIVERSAL,)

    def count_var_rows(self, children: list[Any]) -> tuple[str]:
        return (_variable(children[0]),)

    @v_args(meta=True)
    def classifier(self, meta: Meta, children: list[Any]) -> E.Expr:
        final = children[0] if children and isinstance(children[0], bool) else False
        names = [c for c in children if isinstance(c, Token)]
        var = _variable(names[0]) if names else E.UNIVERSAL
        return E.Classifier(var, final, span=span_of(meta))

    @v_args(meta=True)
    def match_number(self, meta: Meta, children: list[Any]) -> E.Expr:
        return E.MatchNumber(span=span_of(meta))

    @v_args(meta=True)
    def match_rowtime(self, meta: Meta, children: list[Token]) -> E.Expr:
        """Flink SQL's `MATCH_ROWTIME([column])`: the time of the match's last row, on the
        column named or ORDER BY's first (`FINAL LAST(column)`)."""
        if children:
            column = _name(children[0])
        elif self.order_column is not None:
            column = self.order_column
        else:
            self._fail(
                "MATCH_ROWTIME() reads the time on ORDER BY's first column, and this clause "
                "has no ORDER BY; name the column: MATCH_ROWTIME(ts)",
                meta,
            )
        span = span_of(meta)
        return E.Navigation("last", E.Attr(E.UNIVERSAL, column, span=span), 0, True, span=span)

    @v_args(meta=True)
    def match_proctime(self, meta: Meta, children: list[Any]) -> E.Expr:
        self._fail(
            "MATCH_PROCTIME() reads the clock as the match is made; kleene's answers depend "
            "on the rows alone: read a column of the rows' arrival times instead",
            meta,
        )

    @v_args(meta=True)
    def array(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`ARRAY[a, b, …]`: the built-in `array(a, b, …)`, a list (nulls kept)."""
        return E.Call("array", tuple(children[1:]), span=span_of(meta))

    @v_args(meta=True)
    def cast(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`CAST(e AS type)`: the built-in `cast(e, 'TYPE')` (`kleene.compiler.functions`,
        which checks the type)."""
        _, value, to = children
        return E.Call("cast", (value, E.Constant(to)), span=span_of(meta))

    def type_name(self, children: list[Token]) -> str:
        words = [str(c).upper() for c in children if c.type == "NAME"]
        sizes = [str(c) for c in children if c.type == "INT"]
        return " ".join(words) + (f"({', '.join(sizes)})" if sizes else "")

    @v_args(meta=True)
    def call(self, meta: Meta, children: list[Any]) -> E.Expr:
        """A function call; SQL's COALESCE and NULLIF, which a null argument does not make
        null, as the CASE expressions they stand for; a user-defined aggregate's
        (`kleene.register_aggregate`), with its arguments as one `array(x, …)`."""
        final = children[0] if isinstance(children[0], bool) else None
        name, *args = children[1:] if final is not None else children
        span = span_of(meta)
        function = _AGGREGATES.get(str(name).lower())
        if function is not None:
            if not args:
                self._fail(f"{name}() needs an argument: {name}(x) or {name}(A.x)", meta)
            arg = E.Call("array", tuple(args), span=span)
            var = self._aggregated(str(name), arg, meta)
            return E.RowAggregate(str(name), arg, var, bool(final), function, span=span)
        if final is not None:
            self._fail(
                f"RUNNING and FINAL go before FIRST, LAST, aggregates and CLASSIFIER, not "
                f"{name}, which is no aggregate (a user-defined one is registered with "
                "kleene.register_aggregate before the clause is read)",
                meta,
            )
        if str(name).lower() == "coalesce" and args:
            value: E.Expr = args[-1]
            for arg in reversed(args[:-1]):  # the first of them that is not null
                value = E.Case(((E.Unary("not", E.IsNull(arg)), arg),), value, span=span)
            return value
        if str(name).lower() == "nullif":
            if len(args) != 2:
                self._fail("NULLIF takes two values: NULLIF(x, y)", meta)
            is_equal = E.Compare("=", args[0], args[1])
            return E.Case(((is_equal, E.Constant(None)),), args[0], span=span)
        return E.Call(str(name), tuple(args), span=span)

    def when(self, children: list[Any]) -> tuple[E.Expr, E.Expr]:
        return children[0], children[1]

    @v_args(meta=True)
    def searched_case(self, meta: Meta, children: list[Any]) -> E.Expr:
        branches = tuple(c for c in children if isinstance(c, tuple))
        rest = [c for c in children if not isinstance(c, tuple)]
        return E.Case(branches, rest[0] if rest else None, span=span_of(meta))

    @v_args(meta=True)
    def simple_case(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`CASE x WHEN a THEN …`: `CASE WHEN x = a THEN …`."""
        subject, *rest = children
        span = span_of(meta)
        branches = tuple(
            (E.Compare("=", subject, c[0], span=span), c[1]) for c in rest if isinstance(c, tuple)
        )
        default = [c for c in rest if not isinstance(c, tuple)]
        return E.Case(branches, default[0] if default else None, span=span)

    def string(self, children: list[Token]) -> E.Constant:
        """A SQL string: in single quotes, a quote inside written twice."""
        text = str(children[0])
        return E.Constant(text[1:-1].replace("''", "'"), span=span_of(children[0]))

    @v_args(meta=True)
    def is_null(self, meta: Meta, children: list[Any]) -> E.Expr:
        return E.IsNull(children[0], span=span_of(meta))

    @v_args(meta=True)
    def is_not_null(self, meta: Meta, children: list[Any]) -> E.Expr:
        span = span_of(meta)
        return E.Unary("not", E.IsNull(children[0], span=span), span=span)

    @v_args(meta=True)
    def between(self, meta: Meta, children: list[Any]) -> E.Expr:
        value, low, _, high = children
        span = span_of(meta)
        return E.conjunction(
            E.Compare(">=", value, low, span=span), E.Compare("<=", value, high, span=span)
        )

    @v_args(meta=True)
    def like(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`x LIKE pattern [ESCAPE c]`: the built-in `like(x, pattern[, c])`."""
        return E.Call("like", tuple(children), span=span_of(meta))

    @v_args(meta=True)
    def not_like(self, meta: Meta, children: list[Any]) -> E.Expr:
        value, _, *rest = children
        return E.Unary("not", self.like(meta, [value, *rest]), span=span_of(meta))

    @v_args(meta=True)
    def not_between(self, meta: Meta, children: list[Any]) -> E.Expr:
        value, _, low, _, high = children
        return E.Unary("not", self.between(meta, [value, low, None, high]), span=span_of(meta))
