"""SASE+ query text → AST: the lark parser and the tree transformer.

`read(text)` only reads: it checks the grammar and what the grammar leaves open (strategy
names, units, `b[i]` indices, where aggregates may stand), and gives syntax errors in plain
words with a caret (`kleene.language.text.syntax_error`). Whether the names make sense
together is `kleene.compiler.validate`'s job; `kleene.parse` runs both.

>>> read("PATTERN SEQ(A a, B b) WHERE a.x < b.x").where
Compare(op='<', left=Attr(var='a', attr='x', index=None), right=Attr(var='b', attr='x', index=None))
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any, NoReturn

from lark import Lark, Token, v_args
from lark.tree import Meta

from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.sase.printer import expr_text
from kleene.language.text import (
    MAX_WINDOW,
    UNITS,
    ExprReader,
    end_position,
    grammar,
    read_with,
    span_of,
)

__all__ = ["KEYWORDS", "read"]

#: The query keywords (a misspelling of one is pointed out).
KEYWORDS = (
    "PATTERN",
    "WHERE",
    "WITHIN",
    "RETURN",
    "SEQ",
    "SES",
    "AND",
    "OR",
    "NOT",
    "IN",
    *A.STRATEGIES,
)


@cache
def _parser() -> Lark:
    return grammar("kleene.language.sase")


def read(text: str) -> A.Pattern:
    """Parse query text into a `Pattern`, or raise `PatternSyntaxError` / `PatternError`."""
    pattern: A.Pattern = read_with(text, _parser(), KEYWORDS, ToPattern)
    return pattern


# ---- tree → AST ------------------------------------------------------------------------


@dataclass(frozen=True)
class _LoopOption:
    """GREEDY, or UNTIL (condition), after a Kleene variable."""

    word: str
    condition: E.Expr | None
    span: E.Span


@dataclass(frozen=True)
class _WindowPart:
    """One side of WITHIN: a time (`10 s`) or a count (`5 EVENTS`)."""

    amount: int | float
    unit: str | None
    exclusive: bool
    events: bool
    span: E.Span


@dataclass(frozen=True)
class _Slice:
    """`b[]` or `b[..i-k]`: legal only as the argument of an aggregate."""

    var: str
    upto: int | None
    attr: str | None
    span: E.Span


def _name(token: Token) -> str:
    value = str(token)
    return value[1:-1] if token.type == "QUOTED_NAME" else value


class ToPattern(ExprReader):
    def _expr(self, value: Any) -> E.Expr:
        if isinstance(value, _Slice):
            where = f"{value.var}[]" if value.upto is None else f"{value.var}[..i-{value.upto}]"
            self._fail(
                f"{where} names several events of {value.var}; it can only stand inside an "
                f"aggregate such as avg({value.var}[].x)",
                value.span,
            )
        result: E.Expr = value
        return result

    # -- query ---------------------------------------------------------------------------

    def start(self, children: list[Any]) -> A.Pattern:
        structure = children[0]
        where = within = after_match = consume = freeze = None
        strategies: tuple[A.Strategy, ...] = ()
        returns: tuple[A.Returned, ...] = ()
        for child in children[1:]:
            if isinstance(child, A.Within):
                within = child
            elif isinstance(child, A.AfterMatch):
                after_match = child
            elif isinstance(child, A.Consume):
                consume = child
            elif isinstance(child, A.Freeze):
                freeze = child
            elif isinstance(child, list):
                returns = tuple(child)
            else:
                strategies, where = child
        span = E.Span(0, len(self.text), 1, 1, *end_position(self.text))
        return A.Pattern(
            structure,
            where,
            strategies,
            within,
            after_match=after_match,
            consume=consume,
            freeze=freeze,
            returns=returns,
            text=self.text,
            span=span,
        )

    @v_args(meta=True)
    def skip_to_next(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("to_next", span=span_of(meta))

    @v_args(meta=True)
    def skip_past_last(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("past_last", span=span_of(meta))

    @v_args(meta=True)
    def skip_to_first(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("to_first", str(children[0]), span=span_of(meta))

    @v_args(meta=True)
    def skip_to_last(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("to_last", str(children[0]), span=span_of(meta))

    @v_args(meta=True)
    def consume_clause(self, meta: Meta, children: list[Token]) -> A.Consume:
        policy = children[0].lower()
        if policy not in A.CONSUMPTIONS:
            self._fail(
                f"CONSUME BY {children[0]}: the policies are ANY (a match discards every "
                "partial match), PARTITION (those of its partition), EVENTS (an event is in "
                "one reported match at most) and NONE",
                children[0],
            )
        return A.Consume(policy, span=span_of(meta))

    @v_args(meta=True)
    def freeze_clause(self, meta: Meta, children: list[Token]) -> A.Freeze:
        return A.Freeze(tuple(str(name) for name in children), span=span_of(meta))

    @v_args(meta=True)
    def no_skip(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("no_skip", span=span_of(meta))

    def return_clause(self, children: list[A.Returned]) -> list[A.Returned]:
        seen: set[str] = set()
        for returned in children:
            if returned.name in seen:
                assert returned.span is not None
                self._fail(
                    f"RETURN names {returned.name!r} twice; name one otherwise (AS)", returned.span
                )
            seen.add(returned.name)
        return list(children)

    @v_args(meta=True)
    def returned(self, meta: Meta, children: list[Any]) -> A.Returned:
        expr = self._expr(children[0])
        name = _name(children[1]) if len(children) > 1 else expr_text(expr)
        return A.Returned(expr, name, span=span_of(meta))

    def pattern_clause(self, children: list[A.Element]) -> A.Element:
        return children[0]

    # -- structure -----------------------------------------------------------------------

    @v_args(meta=True)
    def operator(self, meta: Meta, children: list[Any]) -> A.Element:
        keyword, *rest = children
        items, span = tuple(rest), span_of(meta)
        kind = str(keyword).upper()
        if kind == "SEQ":
            return A.Seq(items, span=span)
        return A.And(items, span=span) if kind == "AND" else A.Or(items, span=span)

    @v_args(meta=True)
    def ses(self, meta: Meta, children: list[Any]) -> A.Element:
        sets = tuple(children[1:])
        return sets[0] if len(sets) == 1 else A.Seq(sets, span=span_of(meta))

    @v_args(meta=True)
    def ses_set(self, meta: Meta, children: list[A.EventVar]) -> A.Element:
        return children[0] if len(children) == 1 else A.And(tuple(children), span=span_of(meta))

    @v_args(meta=True)
    def ses_member(self, meta: Meta, children: list[Any]) -> A.EventVar:
        names = [c for c in children if isinstance(c, Token) and c.type == "NAME"]
        if names:
            return self._event(meta, children)
        types = children[0]
        if len(types) > 1:
            self._fail("a set's member needs a name: (A|B) x", meta)
        quantifier = next((c for c in children if isinstance(c, A.Quantifier)), None)
        return A.EventVar(None, types[0], quantifier, span=span_of(meta))

    @v_args(meta=True)
    def negation(self, meta: Meta, children: list[Any]) -> A.Negation:
        return A.Negation(children[-1], span=span_of(meta))

    @v_args(meta=True)
    def next_negation(self, meta: Meta, children: list[Any]) -> A.Negation:
        return A.Negation(children[-1], next=True, span=span_of(meta))

    @v_args(meta=True)
    def followed_negation(self, meta: Meta, children: list[Any]) -> A.Negation:
        return A.Negation(children[-1], followed=True, span=span_of(meta))

    @v_args(meta=True)
    def event(self, meta: Meta, children: list[Any]) -> A.EventVar:
        return self._event(meta, children)

    def _event(self, meta: Meta, children: list[Any]) -> A.EventVar:
        types = children[0]
        quantifier = next((c for c in children if isinstance(c, A.Quantifier)), None)
        name = next(c for c in children if isinstance(c, Token) and c.type == "NAME")
        brackets = "[]" in children
        optional = any(isinstance(c, Token) and c.type == "OPTIONAL" for c in children)
        options = [c for c in children if isinstance(c, _LoopOption)]
        if brackets and quantifier is None:
            self._fail(
                f"{name}[] marks a Kleene variable, but its type has no quantifier; "
                f"write {types[0]}+ {name}[] (one or more) or {types[0]}* {name}[] (zero or more)",
                meta,
            )
        if optional and quantifier is not None and quantifier.min == 0:
            self._fail(f"{name}[] may bind no event already; drop the ?", meta)
        if options and quantifier is None:
            self._fail(
                f"{options[0].word} shapes the loop of a Kleene variable, and {name} binds one "
                "event",
                options[0].span,
            )
        greedy, until = False, None
        for option in options:
            if option.word == "GREEDY":
                if greedy:
                    self._fail("GREEDY is written twice", option.span)
                greedy = True
            else:
                if until is not None:
                    self._fail("a loop has one UNTIL condition; join them with and/or", option.span)
                until = option.condition
        if A.ANY in types and types != (A.ANY,):
            self._fail(f"{A.ANY} already means any type; it cannot be an alternative", meta)
        return A.EventVar(
            None if types == (A.ANY,) else types,
            str(name),
            quantifier,
            optional,
            greedy,
            until,
            span=span_of(meta),
        )

    @v_args(meta=True)
    def greedy(self, meta: Meta, children: list[Any]) -> _LoopOption:
        return _LoopOption("GREEDY", None, span_of(meta))

    @v_args(meta=True)
    def until(self, meta: Meta, children: list[Any]) -> _LoopOption:
        return _LoopOption("UNTIL", self._expr(children[-1]), span_of(meta))

    def single_type(self, children: list[Token]) -> tuple[str, ...]:
        return (_name(children[0]),)

    @v_args(meta=True)
    def type_alternatives(self, meta: Meta, children: list[Token]) -> tuple[str, ...]:
        types = tuple(_name(t) for t in children)
        if len(set(types)) != len(types):
            self._fail("a type is listed twice in these alternatives", meta)
        return types

    def kleene_brackets(self, children: list[Any]) -> str:
        return "[]"

    def plus(self, children: list[Any]) -> A.Quantifier:
        return A.Quantifier(1, None)

    def star(self, children: list[Any]) -> A.Quantifier:
        return A.Quantifier(0, None)

    @v_args(meta=True)
    def exactly(self, meta: Meta, children: list[Token]) -> A.Quantifier:
        count = int(children[0])
        if count < 1:
            self._fail("a repetition needs at least one event: {n} with n >= 1", meta)
        return A.Quantifier(count, count)

    @v_args(meta=True)
    def bounded(self, meta: Meta, children: list[Token]) -> A.Quantifier:
        low = int(children[0])
        high = int(children[1]) if len(children) > 1 else None
        if high is not None and (high < low or high < 1):
            self._fail(f"a repetition {{{low},{high}}} needs {low} <= {high} and {high} >= 1", meta)
        return A.Quantifier(low, high)

    # -- WHERE ---------------------------------------------------------------------------

    def where_strategy(self, children: list[Any]) -> tuple[tuple[A.Strategy, ...], E.Expr | None]:
        clauses = tuple(c for c in children if isinstance(c, A.Strategy))
        rest = [c for c in children if not isinstance(c, A.Strategy)]
        return clauses, self._expr(rest[0]) if rest else None

    @v_args(meta=True)
    def strategy_clause(self, meta: Meta, children: list[Any]) -> A.Strategy:
        names = children[1] if len(children) > 1 else None
        return A.Strategy(str(children[0]).lower(), names or None, span=span_of(meta))

    def where_plain(self, children: list[Any]) -> tuple[tuple[A.Strategy, ...], E.Expr]:
        return (), self._expr(children[0])

    def strategy_vars(self, children: list[str]) -> tuple[str, ...]:
        return tuple(children)

    def strategy_var(self, children: list[Any]) -> str:
        return str(children[0])

    def percent(self, children: list[Token]) -> E.Constant:
        return E.Constant(float(str(children[0])[:-1]) / 100, span=span_of(children[0]))

    @v_args(meta=True)
    def attr(self, meta: Meta, children: list[Token]) -> E.Expr:
        var, attr = children
        if attr.type == "NAME" and str(attr) == "len":
            return E.Len(str(var), span=span_of(meta))
        return E.Attr(str(var), _name(attr), span=span_of(meta))

    @v_args(meta=True)
    def indexed_attr(self, meta: Meta, children: list[Any]) -> E.Attr:
        var, index, attr = children
        return E.Attr(str(var), _name(attr), self._index(str(var), index, meta), span=span_of(meta))

    def _index(self, var: str, index: tuple[str, Any, int], meta: Meta) -> E.Index:
        kind, name, offset = index
        if kind == "int":
            if offset < 1:
                self._fail(f"elements of {var}[] count from 1: write {var}[1] for the first", meta)
            return E.Index("abs", offset)
        if offset > 0:
            self._fail(
                f"{var}[...+{offset}] looks ahead; kleene binds elements in order, so compare "
                f"{var}[i] with {var}[i-1] instead",
                meta,
            )
        if kind == "name":
            if name != "i":
                self._fail(
                    f"an index is i, i-k, a number or {var}.len, not {name!r}",
                    meta,
                )
            return E.Index("i", offset)
        owner, field = name
        if owner != var or field != "len":
            self._fail(f"the last element of {var}[] is {var}[{var}.len]", meta)
        return E.Index("last", offset)

    def index_name(self, children: list[Token]) -> tuple[str, Any, int]:
        return "name", str(children[0]), self._offset(children[1:])

    def index_len(self, children: list[Token]) -> tuple[str, Any, int]:
        return "len", (str(children[0]), str(children[1])), self._offset(children[2:])

    def index_int(self, children: list[Token]) -> tuple[str, Any, int]:
        return "int", None, int(children[0])

    @staticmethod
    def _offset(tokens: list[Token]) -> int:
        if not tokens:
            return 0
        sign, amount = tokens
        return int(amount) if str(sign) == "+" else -int(amount)

    @v_args(meta=True)
    def prefix_ref(self, meta: Meta, children: list[Any]) -> _Slice:
        var, index, *attr = children
        kind, name, offset = index
        if kind != "name" or name != "i" or offset > 0:
            self._fail(
                f"a prefix slice is {var}[..i] or {var}[..i-k] (the elements up to b[i-k])", meta
            )
        return _Slice(str(var), -offset, _name(attr[0]) if attr else None, span_of(meta))

    @v_args(meta=True)
    def whole_ref(self, meta: Meta, children: list[Any]) -> _Slice:
        var, *attr = children
        return _Slice(str(var), None, _name(attr[0]) if attr else None, span_of(meta))

    @v_args(meta=True)
    def call(self, meta: Meta, children: list[Any]) -> E.Expr:
        name, *args = children
        func = str(name).lower()
        if func == "prev":
            return self._prev(args, meta)
        if func in E.AGGREGATES:
            return self._aggregate(func, args, meta)
        return E.Call(str(name), tuple(self._expr(a) for a in args), span=span_of(meta))

    def _prev(self, args: list[Any], meta: Meta) -> E.Attr:
        """`prev(p.V)`: V of the event before p[i] within p, that is `p[i-1].V`."""
        if len(args) != 1 or not isinstance(args[0], E.Attr) or args[0].index is not None:
            self._fail("prev takes an attribute of a Kleene variable: prev(p.V) is p[i-1].V", meta)
        return replace(args[0], index=E.Index("i", -1), span=span_of(meta))

    def _aggregate(self, func: str, args: list[Any], meta: Meta) -> E.Aggregate:
        if len(args) != 1 or not isinstance(args[0], _Slice):
            self._fail(
                f"{func} aggregates a Kleene variable: {func}(b[].x) over all of b, or "
                f"{func}(b[..i-1].x) over the elements before b[i]",
                meta,
            )
        piece = args[0]
        if piece.attr is None and func != "count":
            self._fail(f"{func} needs an attribute: {func}({piece.var}[].x)", meta)
        return E.Aggregate(func, piece.var, piece.attr, piece.upto, span=span_of(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def equivalence(self, meta: Meta, children: list[Token]) -> E.Equivalence:
        return E.Equivalence(tuple(_name(t) for t in children), span=span_of(meta))

    def bare_name(self, children: list[Token]) -> NoReturn:
        token = children[0]
        self._fail(
            f"{str(token)!r} alone is not a value; write v.{token} for an attribute of the "
            f"event bound to v, or '{token}' for a string",
            token,
        )

    # -- WITHIN --------------------------------------------------------------------------

    @v_args(meta=True)
    def within_clause(self, meta: Meta, children: list[Any]) -> A.Within:
        parts = [c for c in children if isinstance(c, _WindowPart)]
        times = [p for p in parts if not p.events]
        counts = [p for p in parts if p.events]
        if len(times) > 1 or len(counts) > 1:
            kind = "time windows" if len(times) > 1 else "count windows"
            self._fail(f"two {kind}; a window joins one time window AND one count", meta)
        time = times[0] if times else None
        count = counts[0] if counts else None
        if count is not None and count.exclusive:
            self._fail(
                f"EXCLUSIVE is for time windows; {int(count.amount)} EVENTS already means at most "
                f"{int(count.amount)} positions from first to last (write one fewer)",
                count.span,
            )
        return A.Within(
            None if time is None else time.amount,
            None if time is None else time.unit,
            time is not None and time.exclusive,
            None if count is None else int(count.amount),
            span=span_of(meta),
        )

    @v_args(meta=True)
    def window_part(self, meta: Meta, children: list[Token]) -> _WindowPart:
        exclusive = children[-1].type == "EXCLUSIVE"
        if exclusive:
            children = children[:-1]
        number = children[0]
        amount = self._number(number)
        word = str(children[1]) if len(children) > 1 else None
        if word is not None and word.lower() in ("events", "event"):
            if not isinstance(amount, int) or amount < 1:
                self._fail("a count window is a whole number of events, at least 1", number)
            if amount > MAX_WINDOW:
                self._fail(f"a count window of at most {MAX_WINDOW:.0e} events", number)
            return _WindowPart(amount, None, exclusive, True, span_of(meta))
        if amount <= 0:
            self._fail("a window must be longer than 0", number)
        if amount > MAX_WINDOW:
            self._fail(f"a window of at most {MAX_WINDOW:.0e} units; drop WITHIN for none", number)
        unit = None
        if word is not None:
            if word.lower() not in UNITS:
                known = ", ".join(sorted({c for c, _ in UNITS.values()}, key=_unit_order))
                self._fail(
                    f"unknown time unit {word!r}; use one of {known}, or EVENTS for a count",
                    children[1],
                )
            unit = UNITS[word.lower()][0]
        return _WindowPart(amount, unit, exclusive, False, span_of(meta))


def _unit_order(unit: str) -> float:
    return next(seconds for canonical, seconds in UNITS.values() if canonical == unit)
