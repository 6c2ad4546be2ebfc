"""Query text → AST: the lark parser, the tree transformer, and syntax errors in plain words.

`read(text)` only reads: it checks the grammar and what the grammar leaves open (strategy
names, units, `b[i]` indices, where aggregates may stand). Whether the names make sense
together is `compiler/validate.py`'s job; `kleene.parse` runs both.
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from typing import Any, NoReturn

from lark import (
    Lark,
    Token,
    Transformer,
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    v_args,
)
from lark.exceptions import VisitError
from lark.tree import Meta

from kleene.errors import PatternError, PatternSyntaxError
from kleene.language import ast as A
from kleene.language.printer import expr_text

__all__ = ["UNITS", "read"]

#: Window units and their length in seconds, by every spelling the parser accepts.
#: The longest number literal (a float has 17 significant digits; more is a typo or a probe).
MAX_DIGITS = 100
#: The most parentheses open at once in query text.
MAX_PARENS = 100
#: The largest WITHIN amount, whatever its unit (in weeks, still beyond any timestamp range).
MAX_WINDOW = 1e12

UNITS: dict[str, tuple[str, float]] = {}
for _canonical, _seconds, _spellings in (
    ("us", 1e-6, ("us", "microsecond", "microseconds")),
    ("ms", 1e-3, ("ms", "millisecond", "milliseconds")),
    ("s", 1.0, ("s", "sec", "secs", "second", "seconds")),
    ("min", 60.0, ("min", "mins", "minute", "minutes")),
    ("hour", 3600.0, ("h", "hour", "hours")),
    ("day", 86400.0, ("d", "day", "days")),
    ("week", 604800.0, ("week", "weeks")),
):
    for _spelling in _spellings:
        UNITS[_spelling] = (_canonical, _seconds)

_COMPARE = {"==": "=", "=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}

# Words for the grammar's terminals in error messages.
_WORDS = {
    "NAME": "a name",
    "QUOTED_NAME": "a `quoted name`",
    "NUMBER": "a number",
    "INT": "a whole number",
    "PERCENT": "a number",
    "STRING": "a string",
    "STRATEGY": "an event selection strategy",
    "COMPARE": "an operator",
    "PLUS": "an operator",
    "MINUS": "an operator",
    "STAR": "an operator",
    "SLASH": "an operator",
    "MODULO": "an operator",
    "$END": "end of query",
}
_EXPRESSION_START = {"NAME", "NUMBER", "STRING", "LPAR"}
_KEYWORDS = (
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
    grammar = files("kleene.language").joinpath("sase.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True)


def read(text: str) -> A.Pattern:
    """Parse query text into a `Pattern`, or raise `PatternSyntaxError` / `PatternError`."""
    check_nesting(text)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise syntax_error(text, error) from None
    try:
        pattern: A.Pattern = ToAst(text).transform(tree)
    except VisitError as error:
        raise error.orig_exc from None
    return pattern


# ---- syntax errors ---------------------------------------------------------------------


def _describe(terminal: str, grammar: Lark) -> str:
    if terminal in _WORDS:
        return _WORDS[terminal]
    try:
        pattern = grammar.get_terminal(terminal).pattern
    except KeyError:
        return terminal
    if pattern.type == "str":
        return f"'{pattern.value}'" if not pattern.value.isalpha() else pattern.value.upper()
    if terminal.startswith("_"):  # a keyword
        return terminal.strip("_")
    return terminal.lower()


def _expected_words(expected: set[str], grammar: Lark) -> tuple[str, ...]:
    expected = set(expected)
    words: list[str] = []
    if expected >= _EXPRESSION_START:
        words.append("an expression")
        expected -= _EXPRESSION_START | {
            "PERCENT",
            "MINUS",
            "LSQB",
            "QUOTED_NAME",
            "_TRUE",
            "_FALSE",
            "_NULL",
            "NOT",
        }
    words.extend(sorted({_describe(name, grammar) for name in expected}))
    return tuple(words)


def _near_miss(text: str, position: int, keywords: tuple[str, ...]) -> str:
    """The keyword a word just before `position` looks like a misspelling of, or ""."""
    before = re.findall(r"[A-Za-z_]+", text[:position])
    for word in reversed(before[-2:]):
        if word.upper() in keywords or word.lower() in A.STRATEGIES:
            continue
        close = difflib.get_close_matches(word.upper(), [k.upper() for k in keywords], n=1)
        if close:
            return next(k for k in keywords if k.upper() == close[0])
    return ""


def check_nesting(text: str) -> None:
    """At most `MAX_PARENS` open parentheses at once (outside quotes): deeper text would
    exhaust the recursion of the tree walk. An error with a caret at the first one too many."""
    depth, quote, escaped = 0, "", False
    line, column = 1, 0
    for char in text:
        column += 1
        if char == "\n":
            line, column = line + 1, 0
        elif quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
            if depth > MAX_PARENS:
                raise PatternError(
                    f"parentheses nest more than {MAX_PARENS} deep here; kleene takes at most "
                    f"{MAX_PARENS}",
                    text,
                    line,
                    column,
                )
        elif char == ")":
            depth -= 1


def syntax_error(
    text: str,
    error: UnexpectedInput,
    grammar: Lark | None = None,
    keywords: tuple[str, ...] = _KEYWORDS,
) -> PatternSyntaxError:
    """The error for text `grammar` (SASE+ by default) does not read, in words: what stood at
    the caret, what could have, and the keyword a word nearby misspells."""
    grammar = grammar or _parser()
    line, column = error.line, error.column
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == "$END":
            found, width = "end of query", 1
            line, column = _end_position(text)
        else:
            found, width = repr(str(token.value)), len(str(token.value))
        expected = _expected_words(error.expected, grammar)
        position = token.start_pos if token.start_pos is not None else len(text)
    elif isinstance(error, UnexpectedCharacters):
        found, width = repr(text[error.pos_in_stream or 0]), 1
        expected = _expected_words(error.allowed or set(), grammar)
        position = error.pos_in_stream or 0
    else:  # pragma: no cover - LALR raises only the two above
        found, width, expected, position = "input", 1, (), 0
    message = f"unexpected {found}"
    if expected:
        what = expected[0] if len(expected) == 1 else "one of " + ", ".join(expected[:10])
        message += f"; expected {what}"
    hint = _near_miss(text, position + width, keywords)
    if hint and hint not in expected:
        message += f" (did you mean {hint}?)"
    return PatternSyntaxError(message, text, line, column, expected, width)


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    lines = stripped.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


# ---- tree → AST ------------------------------------------------------------------------


@dataclass(frozen=True)
class _LoopOption:
    """GREEDY, or UNTIL (condition), after a Kleene variable."""

    word: str
    condition: A.Expr | None
    span: A.Span


@dataclass(frozen=True)
class _WindowPart:
    """One side of WITHIN: a time (`10 s`) or a count (`5 EVENTS`)."""

    amount: int | float
    unit: str | None
    exclusive: bool
    events: bool
    span: A.Span


@dataclass(frozen=True)
class _Slice:
    """`b[]` or `b[..i-k]`: legal only as the argument of an aggregate."""

    var: str
    upto: int | None
    attr: str | None
    span: A.Span


def _span(meta: Meta | Token) -> A.Span:
    if isinstance(meta, Token):
        return A.Span(
            meta.start_pos or 0,
            meta.end_pos or 0,
            meta.line or 0,
            meta.column or 0,
            meta.end_line or 0,
            meta.end_column or 0,
        )
    return A.Span(
        meta.start_pos, meta.end_pos, meta.line, meta.column, meta.end_line, meta.end_column
    )


def _name(token: Token) -> str:
    value = str(token)
    return value[1:-1] if token.type == "QUOTED_NAME" else value


def _unescape(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


class ToAst(Transformer[Token, Any]):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def _fail(self, message: str, at: A.Span | Meta | Token) -> NoReturn:
        span = at if isinstance(at, A.Span) else _span(at)
        width = span.end - span.start if span.end_line == span.line else 1
        raise PatternError(message, self.text, span.line, span.column, max(1, width))

    def _expr(self, value: Any) -> A.Expr:
        if isinstance(value, _Slice):
            where = f"{value.var}[]" if value.upto is None else f"{value.var}[..i-{value.upto}]"
            self._fail(
                f"{where} names several events of {value.var}; it can only stand inside an "
                f"aggregate such as avg({value.var}[].x)",
                value.span,
            )
        result: A.Expr = value
        return result

    # -- query ---------------------------------------------------------------------------

    def start(self, children: list[Any]) -> A.Pattern:
        structure = children[0]
        where = within = after_match = None
        strategies: tuple[A.Strategy, ...] = ()
        returns: tuple[A.Returned, ...] = ()
        for child in children[1:]:
            if isinstance(child, A.Within):
                within = child
            elif isinstance(child, A.AfterMatch):
                after_match = child
            elif isinstance(child, list):
                returns = tuple(child)
            else:
                strategies, where = child
        span = A.Span(0, len(self.text), 1, 1, *_end_position(self.text))
        return A.Pattern(
            structure,
            where,
            strategies,
            within,
            after_match=after_match,
            returns=returns,
            text=self.text,
            span=span,
        )

    @v_args(meta=True)
    def skip_to_next(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("to_next", span=_span(meta))

    @v_args(meta=True)
    def skip_past_last(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("past_last", span=_span(meta))

    @v_args(meta=True)
    def skip_to_first(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("to_first", str(children[0]), span=_span(meta))

    @v_args(meta=True)
    def skip_to_last(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("to_last", str(children[0]), span=_span(meta))

    @v_args(meta=True)
    def no_skip(self, meta: Meta, children: list[Token]) -> A.AfterMatch:
        return A.AfterMatch("no_skip", span=_span(meta))

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
        return A.Returned(expr, name, span=_span(meta))

    def pattern_clause(self, children: list[A.Element]) -> A.Element:
        return children[0]

    # -- structure -----------------------------------------------------------------------

    @v_args(meta=True)
    def operator(self, meta: Meta, children: list[Any]) -> A.Element:
        keyword, *rest = children
        items, span = tuple(rest), _span(meta)
        kind = str(keyword).upper()
        if kind == "SEQ":
            return A.Seq(items, span=span)
        return A.And(items, span=span) if kind == "AND" else A.Or(items, span=span)

    @v_args(meta=True)
    def ses(self, meta: Meta, children: list[Any]) -> A.Element:
        sets = tuple(children[1:])
        return sets[0] if len(sets) == 1 else A.Seq(sets, span=_span(meta))

    @v_args(meta=True)
    def ses_set(self, meta: Meta, children: list[A.EventVar]) -> A.Element:
        return children[0] if len(children) == 1 else A.And(tuple(children), span=_span(meta))

    @v_args(meta=True)
    def ses_member(self, meta: Meta, children: list[Any]) -> A.EventVar:
        names = [c for c in children if isinstance(c, Token) and c.type == "NAME"]
        if names:
            return self._event(meta, children)
        types = children[0]
        if len(types) > 1:
            self._fail("a set's member needs a name: (A|B) x", meta)
        quantifier = next((c for c in children if isinstance(c, A.Quantifier)), None)
        return A.EventVar(None, types[0], quantifier, span=_span(meta))

    @v_args(meta=True)
    def negation(self, meta: Meta, children: list[Any]) -> A.Negation:
        return A.Negation(children[-1], span=_span(meta))

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
            span=_span(meta),
        )

    @v_args(meta=True)
    def greedy(self, meta: Meta, children: list[Any]) -> _LoopOption:
        return _LoopOption("GREEDY", None, _span(meta))

    @v_args(meta=True)
    def until(self, meta: Meta, children: list[Any]) -> _LoopOption:
        return _LoopOption("UNTIL", self._expr(children[-1]), _span(meta))

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

    def where_strategy(self, children: list[Any]) -> tuple[tuple[A.Strategy, ...], A.Expr | None]:
        clauses = tuple(c for c in children if isinstance(c, A.Strategy))
        rest = [c for c in children if not isinstance(c, A.Strategy)]
        return clauses, self._expr(rest[0]) if rest else None

    @v_args(meta=True)
    def strategy_clause(self, meta: Meta, children: list[Any]) -> A.Strategy:
        names = children[1] if len(children) > 1 else None
        return A.Strategy(str(children[0]).lower(), names or None, span=_span(meta))

    def where_plain(self, children: list[Any]) -> tuple[tuple[A.Strategy, ...], A.Expr]:
        return (), self._expr(children[0])

    def strategy_vars(self, children: list[str]) -> tuple[str, ...]:
        return tuple(children)

    def strategy_var(self, children: list[Any]) -> str:
        return str(children[0])

    @v_args(meta=True)
    def or_expr(self, meta: Meta, children: list[Any]) -> A.Expr:
        items = [self._expr(c) for c in children if not isinstance(c, Token)]
        return A.disjunction(*items, span=_span(meta))

    @v_args(meta=True)
    def and_expr(self, meta: Meta, children: list[Any]) -> A.Expr:
        items = [self._expr(c) for c in children if not isinstance(c, Token)]
        return A.conjunction(*items, span=_span(meta))

    @v_args(meta=True)
    def not_(self, meta: Meta, children: list[Any]) -> A.Expr:
        return A.Unary("not", self._expr(children[-1]), span=_span(meta))

    @v_args(meta=True)
    def comparison(self, meta: Meta, children: list[Any]) -> A.Expr:
        left, op, right = children
        return A.Compare(
            _COMPARE[str(op)],  # type: ignore[arg-type]
            self._expr(left),
            self._expr(right),
            span=_span(meta),
        )

    @v_args(meta=True)
    def in_list(self, meta: Meta, children: list[Any]) -> A.Expr:
        """`x IN (a, b, ...)`: `x = a OR x = b OR ...`, null as SQL has it (a null x, or
        no equal item and a null one, is unknown)."""
        left, *items = [self._expr(c) for c in children if not isinstance(c, Token)]
        span = _span(meta)
        equal = [A.Compare("=", left, item, span=span) for item in items]
        return equal[0] if len(equal) == 1 else A.disjunction(*equal, span=span)

    @v_args(meta=True)
    def not_in_list(self, meta: Meta, children: list[Any]) -> A.Expr:
        """`x NOT IN (...)`: NOT (x IN (...))."""
        return A.Unary("not", self.in_list(meta, children), span=_span(meta))

    def _fold(self, meta: Meta, children: list[Any]) -> A.Expr:
        result = self._expr(children[0])
        for op, operand in zip(children[1::2], children[2::2], strict=True):
            result = A.Binary(str(op), result, self._expr(operand), span=_span(meta))  # type: ignore[arg-type]
        return result

    @v_args(meta=True)
    def sum(self, meta: Meta, children: list[Any]) -> A.Expr:
        return self._fold(meta, children)

    @v_args(meta=True)
    def product(self, meta: Meta, children: list[Any]) -> A.Expr:
        return self._fold(meta, children)

    @v_args(meta=True)
    def neg(self, meta: Meta, children: list[Any]) -> A.Expr:
        return A.negative(self._expr(children[-1]), span=_span(meta))

    def number(self, children: list[Token]) -> A.Literal:
        return A.Literal(self._number(children[0]), span=_span(children[0]))

    def _number(self, token: Token) -> int | float:
        """A number literal; one longer than `MAX_DIGITS` or beyond a float's range is an
        error at its place."""
        text = str(token)
        if len(text) > MAX_DIGITS:
            self._fail(f"a number of {len(text)} characters; kleene takes {MAX_DIGITS}", token)
        if not any(c in text for c in ".eE"):
            return int(text)
        value = float(text)
        if math.isinf(value):
            self._fail(f"{text} is beyond the range of a number ({sys.float_info.max:.3g})", token)
        return value

    def percent(self, children: list[Token]) -> A.Literal:
        return A.Literal(float(str(children[0])[:-1]) / 100, span=_span(children[0]))

    def string(self, children: list[Token]) -> A.Literal:
        return A.Literal(_unescape(str(children[0])), span=_span(children[0]))

    @v_args(meta=True)
    def true(self, meta: Meta, children: list[Any]) -> A.Literal:
        return A.Literal(True, span=_span(meta))

    @v_args(meta=True)
    def false(self, meta: Meta, children: list[Any]) -> A.Literal:
        return A.Literal(False, span=_span(meta))

    @v_args(meta=True)
    def null(self, meta: Meta, children: list[Any]) -> A.Literal:
        return A.Literal(None, span=_span(meta))

    @v_args(meta=True)
    def attr(self, meta: Meta, children: list[Token]) -> A.Expr:
        var, attr = children
        if attr.type == "NAME" and str(attr) == "len":
            return A.Len(str(var), span=_span(meta))
        return A.Attr(str(var), _name(attr), span=_span(meta))

    @v_args(meta=True)
    def indexed_attr(self, meta: Meta, children: list[Any]) -> A.Attr:
        var, index, attr = children
        return A.Attr(str(var), _name(attr), self._index(str(var), index, meta), span=_span(meta))

    def _index(self, var: str, index: tuple[str, Any, int], meta: Meta) -> A.Index:
        kind, name, offset = index
        if kind == "int":
            if offset < 1:
                self._fail(f"elements of {var}[] count from 1: write {var}[1] for the first", meta)
            return A.Index("abs", offset)
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
            return A.Index("i", offset)
        owner, field = name
        if owner != var or field != "len":
            self._fail(f"the last element of {var}[] is {var}[{var}.len]", meta)
        return A.Index("last", offset)

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
        return _Slice(str(var), -offset, _name(attr[0]) if attr else None, _span(meta))

    @v_args(meta=True)
    def whole_ref(self, meta: Meta, children: list[Any]) -> _Slice:
        var, *attr = children
        return _Slice(str(var), None, _name(attr[0]) if attr else None, _span(meta))

    @v_args(meta=True)
    def call(self, meta: Meta, children: list[Any]) -> A.Expr:
        name, *args = children
        func = str(name).lower()
        if func == "prev":
            return self._prev(args, meta)
        if func in A.AGGREGATES:
            return self._aggregate(func, args, meta)
        return A.Call(str(name), tuple(self._expr(a) for a in args), span=_span(meta))

    def _prev(self, args: list[Any], meta: Meta) -> A.Attr:
        """`prev(p.V)`: V of the event before p[i] within p, that is `p[i-1].V`."""
        if len(args) != 1 or not isinstance(args[0], A.Attr) or args[0].index is not None:
            self._fail("prev takes an attribute of a Kleene variable: prev(p.V) is p[i-1].V", meta)
        return replace(args[0], index=A.Index("i", -1), span=_span(meta))

    def _aggregate(self, func: str, args: list[Any], meta: Meta) -> A.Aggregate:
        if len(args) != 1 or not isinstance(args[0], _Slice):
            self._fail(
                f"{func} aggregates a Kleene variable: {func}(b[].x) over all of b, or "
                f"{func}(b[..i-1].x) over the elements before b[i]",
                meta,
            )
        piece = args[0]
        if piece.attr is None and func != "count":
            self._fail(f"{func} needs an attribute: {func}({piece.var}[].x)", meta)
        return A.Aggregate(func, piece.var, piece.attr, piece.upto, span=_span(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def equivalence(self, meta: Meta, children: list[Token]) -> A.Equivalence:
        return A.Equivalence(tuple(_name(t) for t in children), span=_span(meta))

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
            span=_span(meta),
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
            return _WindowPart(amount, None, exclusive, True, _span(meta))
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
        return _WindowPart(amount, unit, exclusive, False, _span(meta))


def _unit_order(unit: str) -> float:
    return next(seconds for canonical, seconds in UNITS.values() if canonical == unit)
