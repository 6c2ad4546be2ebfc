"""What reading and printing query text means in every language: source positions, syntax
errors in plain words with a caret, numbers, time units, and the printer of the one
expression tree (`ExprPrinter`, which each language's printer specializes).

>>> UNITS["hours"], UNITS["ms"]
(('hour', 3600.0), ('ms', 0.001))
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from collections.abc import Callable, Collection, Mapping
from importlib.resources import files
from typing import Any, ClassVar, NoReturn

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
from kleene.language import expr as E

__all__ = [
    "AND",
    "ATOM",
    "COMPARE",
    "MAX_DIGITS",
    "MAX_PARENS",
    "MAX_WINDOW",
    "NOT",
    "OR",
    "PRODUCT",
    "SUM",
    "UNARY",
    "UNITS",
    "ExprPrinter",
    "ExprReader",
    "check_nesting",
    "end_position",
    "expr_text",
    "grammar",
    "number_text",
    "read_with",
    "span_of",
    "syntax_error",
    "unescape",
]

#: The longest number literal (a float has 17 significant digits; more is a typo or a probe).
MAX_DIGITS = 100
#: The most parentheses open at once in query text.
MAX_PARENS = 100
#: The largest window or duration, whatever its unit (in weeks, still beyond any timestamp).
MAX_WINDOW = 1e12

#: Time units and their length in seconds, by every spelling the readers accept.
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

# Words for the grammars' terminals in error messages.
_WORDS = {
    "NAME": "a name",
    "EVENT_TYPE": "an event type",
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
_EXPRESSION_MORE = {"PERCENT", "MINUS", "LSQB", "QUOTED_NAME", "_TRUE", "_FALSE", "_NULL", "NOT"}


def span_of(meta: Meta | Token) -> E.Span:
    """The span of a parse-tree node or token."""
    if isinstance(meta, Token):
        return E.Span(
            meta.start_pos or 0,
            meta.end_pos or 0,
            meta.line or 0,
            meta.column or 0,
            meta.end_line or 0,
            meta.end_column or 0,
        )
    return E.Span(
        meta.start_pos, meta.end_pos, meta.line, meta.column, meta.end_line, meta.end_column
    )


def end_position(text: str) -> tuple[int, int]:
    """The line and column just after the text's last non-blank character."""
    stripped = text.rstrip()
    lines = stripped.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


def unescape(literal: str) -> str:
    r"""A quoted string literal's value: the quotes dropped, `\n`, `\t`, `\r`, `\0` and
    `\<any>` unescaped.

    >>> unescape(r"'it\'s\n'")
    "it's\n"
    """
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


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
        expected -= _EXPRESSION_START | _EXPRESSION_MORE
    words.extend(sorted({_describe(name, grammar) for name in expected}))
    return tuple(words)


def _near_miss(text: str, position: int, keywords: Collection[str]) -> str:
    """The keyword a word just before `position` looks like a misspelling of, or ""."""
    upper = {k.upper(): k for k in keywords}
    before = re.findall(r"[A-Za-z_]+", text[:position])
    for word in reversed(before[-2:]):
        if word.upper() in upper:
            continue
        close = difflib.get_close_matches(word.upper(), list(upper), n=1)
        if close:
            return upper[close[0]]
    return ""


def syntax_error(
    text: str, error: UnexpectedInput, grammar: Lark, keywords: Collection[str]
) -> PatternSyntaxError:
    """The error for text `grammar` does not read, in words: what stood at the caret, what
    could have, and the keyword (of `keywords`) a word nearby misspells."""
    line, column = error.line, error.column
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == "$END":
            found, width = "end of query", 1
            line, column = end_position(text)
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


def grammar(package: str, name: str = "grammar.lark") -> Lark:
    """A language's LALR parser, from the grammar file in its package."""
    text = files(package).joinpath(name).read_text(encoding="utf-8")
    return Lark(text, parser="lalr", propagate_positions=True)


def read_with(
    text: str,
    parser: Lark,
    keywords: Collection[str],
    reader: Callable[[str], Transformer[Token, Any]],
) -> Any:
    """`text` read by `parser` and turned into an AST by `reader(text)`: a syntax error in
    words with a caret (a misspelt one of `keywords` pointed out), and the reader's own
    errors raised as they are."""
    check_nesting(text)
    try:
        tree = parser.parse(text)
    except UnexpectedInput as error:
        raise syntax_error(text, error, parser, keywords) from None
    try:
        return reader(text).transform(tree)
    except VisitError as error:
        raise error.orig_exc from None


def number_text(value: int | float) -> str:
    """A number as query text reads it back (an infinity as 1e999)."""
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError("NaN has no text form in a query")
        if math.isinf(value):
            return "1e999" if value > 0 else "-1e999"
    return repr(value)


# Binding strength of each kind of expression; an operand weaker than its place gets ().
OR, AND, NOT, COMPARE, SUM, PRODUCT, UNARY, ATOM = range(8)
_BINARY = {"+": SUM, "-": SUM, "||": SUM, "*": PRODUCT, "/": PRODUCT, "%": PRODUCT}


def error_at(message: str, text: str | None, span: E.Span | None) -> PatternError:
    """The error of `message` at `span` of the query `text`, with a caret under it (the
    message alone when there is no text or no place: a query built in Python).

    >>> print(error_at("no such thing", "SEQ(A a)", E.Span(4, 5, 1, 5, 1, 6)))
    line 1, column 5: no such thing
      1 | SEQ(A a)
        |     ^
    """
    if span is None or not text:
        return PatternError(message, "", 0, 0)
    width = span.end - span.start if span.end_line == span.line else 1
    return PatternError(message, text, span.line, span.column, max(1, width))


class ExprReader(Transformer[Token, Any]):
    """The parse-tree rules every language reads the same way: literals, operators, and an
    error at a place in the query text. Each language's reader subclasses it (and says, in
    `_expr`, what a child that is not yet an expression means)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def _fail(self, message: str, at: E.Span | Meta | Token) -> NoReturn:
        raise error_at(message, self.text, at if isinstance(at, E.Span) else span_of(at))

    def _expr(self, value: Any) -> E.Expr:
        """A child of an operator as an expression."""
        result: E.Expr = value
        return result

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

    def number(self, children: list[Token]) -> E.Constant:
        return E.Constant(self._number(children[0]), span=span_of(children[0]))

    def string(self, children: list[Token]) -> E.Constant:
        return E.Constant(unescape(str(children[0])), span=span_of(children[0]))

    @v_args(meta=True)
    def or_expr(self, meta: Meta, children: list[Any]) -> E.Expr:
        items = [self._expr(c) for c in children if not isinstance(c, Token)]
        return E.disjunction(*items, span=span_of(meta))

    @v_args(meta=True)
    def and_expr(self, meta: Meta, children: list[Any]) -> E.Expr:
        items = [self._expr(c) for c in children if not isinstance(c, Token)]
        return E.conjunction(*items, span=span_of(meta))

    @v_args(meta=True)
    def not_(self, meta: Meta, children: list[Any]) -> E.Expr:
        return E.Unary("not", self._expr(children[-1]), span=span_of(meta))

    @v_args(meta=True)
    def comparison(self, meta: Meta, children: list[Any]) -> E.Expr:
        left, op, right = children
        return E.Compare(
            _COMPARE[str(op)],  # type: ignore[arg-type]
            self._expr(left),
            self._expr(right),
            span=span_of(meta),
        )

    @v_args(meta=True)
    def in_list(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`x IN (a, b, ...)`: `x = a OR x = b OR ...`, null as SQL has it (a null x, or
        no equal item and a null one, is unknown)."""
        left, *items = [self._expr(c) for c in children if not isinstance(c, Token)]
        span = span_of(meta)
        equal = [E.Compare("=", left, item, span=span) for item in items]
        return equal[0] if len(equal) == 1 else E.disjunction(*equal, span=span)

    @v_args(meta=True)
    def not_in_list(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`x NOT IN (...)`: NOT (x IN (...))."""
        return E.Unary("not", self.in_list(meta, children), span=span_of(meta))

    def _fold(self, meta: Meta, children: list[Any]) -> E.Expr:
        result = self._expr(children[0])
        for op, operand in zip(children[1::2], children[2::2], strict=True):
            result = E.Binary(str(op), result, self._expr(operand), span=span_of(meta))  # type: ignore[arg-type]
        return result

    @v_args(meta=True)
    def sum(self, meta: Meta, children: list[Any]) -> E.Expr:
        return self._fold(meta, children)

    @v_args(meta=True)
    def product(self, meta: Meta, children: list[Any]) -> E.Expr:
        return self._fold(meta, children)

    @v_args(meta=True)
    def neg(self, meta: Meta, children: list[Any]) -> E.Expr:
        return E.negative(self._expr(children[-1]), span=span_of(meta))

    @v_args(meta=True)
    def null(self, meta: Meta, children: list[Any]) -> E.Constant:
        return E.Constant(None, span=span_of(meta))

    @v_args(meta=True)
    def true(self, meta: Meta, children: list[Any]) -> E.Constant:
        return E.Constant(True, span=span_of(meta))

    @v_args(meta=True)
    def false(self, meta: Meta, children: list[Any]) -> E.Constant:
        return E.Constant(False, span=span_of(meta))


class ExprPrinter:
    """Expression text that reads back to an equal tree: operators and their precedence are
    every language's; a language's printer says how its constants, leaves and comparison
    operators are spelled.

    >>> ExprPrinter().text(E.Binary("*", E.Binary("+", E.Attr("a", "x"), E.Constant(1)),
    ...                             E.Constant(2)))
    '(a.x + 1) * 2'
    """

    #: How each comparison is written.
    compare_symbols: ClassVar[Mapping[str, str]] = {
        op: op for op in ("=", "!=", "<", "<=", ">", ">=")
    }

    def text(self, expr: E.Expr) -> str:
        """The text of an expression."""
        return self.strength(expr)[0]

    def wrapped(self, expr: E.Expr, at_least: int) -> str:
        """The text, in parentheses if it binds more weakly than `at_least`."""
        text, strength = self.strength(expr)
        return text if strength >= at_least else f"({text})"

    def strength(self, expr: E.Expr) -> tuple[str, int]:
        """The text and how strongly it binds."""
        match expr:
            case E.Constant(value=value):
                return self.constant(value)
            case E.Unary(op="not", operand=operand):
                return f"not {self.wrapped(operand, NOT)}", NOT
            case E.Unary(op="-", operand=operand):
                inner = self.wrapped(operand, UNARY)
                if inner.startswith("-"):
                    inner = f"({inner})"
                return f"-{inner}", UNARY
            case E.Binary(op=op, left=left, right=right):
                strength = _BINARY[op]
                return (
                    f"{self.wrapped(left, strength)} {op} {self.wrapped(right, strength + 1)}",
                    strength,
                )
            case E.Compare(op=op, left=left, right=right):
                symbol = self.compare_symbols[op]
                return f"{self.wrapped(left, SUM)} {symbol} {self.wrapped(right, SUM)}", COMPARE
            case E.IsNull(operand=operand):
                return f"{self.wrapped(operand, SUM)} is null", COMPARE
            case E.Case(branches=branches, default=default):
                parts = [f"WHEN {self.text(c)} THEN {self.text(v)}" for c, v in branches]
                if default is not None:
                    parts.append(f"ELSE {self.text(default)}")
                return f"CASE {' '.join(parts)} END", ATOM
            case E.BoolOp(op="and", items=items):
                return " and ".join(self.wrapped(item, NOT) for item in items), AND
            case E.BoolOp(op="or", items=items):
                return " or ".join(self.wrapped(item, AND) for item in items), OR
            case E.Call(name=name, args=args):
                return f"{name}({', '.join(self.wrapped(a, OR) for a in args)})", ATOM
        return self.leaf(expr), ATOM

    def constant(self, value: Any) -> tuple[str, int]:
        """A constant's text and strength (a negative number binds as a unary minus)."""
        if value is None:
            return "null", ATOM
        if isinstance(value, bool):
            return ("true" if value else "false"), ATOM
        if isinstance(value, str):
            escaped = (
                value.replace("\\", "\\\\")
                .replace('"', '\\"')
                .replace("\n", "\\n")
                .replace("\t", "\\t")
                .replace("\r", "\\r")
                .replace("\0", "\\0")
            )
            return f'"{escaped}"', ATOM
        text = number_text(value)
        return text, (UNARY if text.startswith("-") else ATOM)

    def name(self, name: str) -> str:
        """A variable's, attribute's or type's name as the language writes it."""
        return name

    def variable(self, name: str) -> str:
        """A variable's name as the language writes it (`name`, unless the language reads
        variables' names apart from others)."""
        return self.name(name)

    def leaf(self, expr: E.Expr) -> str:
        """The text of a leaf: SASE+'s spelling for attributes, lengths and aggregates of
        Kleene variables and equivalence tests, LEAD's for bare names, durations, `count()`
        and quantifiers."""
        name = self.name
        match expr:
            case E.Attr(var=E.UNIVERSAL, attr=attr, index=None):
                return name(attr)
            case E.Attr(var=var, attr=attr, index=None):
                return f"{self.variable(var)}.{name(attr)}"
            case E.Attr(var=var, attr=attr, index=E.Index() as index):
                return f"{var}[{_index(var, index)}].{name(attr)}"
            case E.Len(var=var):
                return f"{var}.len"
            case E.Aggregate(func=func, var=E.CURRENT):
                return f"{func}()"
            case E.Aggregate(func=func, var=var, attr=attr, upto=upto):
                where = "" if upto is None else f"..i-{upto}" if upto else "..i"
                field = "" if attr is None else f".{name(attr)}"
                return f"{func}({var}[{where}]{field})"
            case E.Equivalence(attrs=attrs):
                return f"[{', '.join(name(a) for a in attrs)}]"
            case E.Name(name=bare):
                return bare
            case E.Duration(amount=amount, unit=unit):
                return f"{amount} {unit}"
            case E.Quantified(quantifier=quantifier, body=body, n=None):
                return f"{quantifier.upper()}({self.text(body)})"
            case E.Quantified(quantifier=quantifier, body=body, n=n):
                return f"{quantifier.upper()} {n} ({self.text(body)})"
            case E.Navigation(func=func, arg=arg, offset=offset, final=final):
                default = 1 if func in ("prev", "next") else 0
                steps = "" if offset == default else f", {offset}"
                return f"{_final(final)}{func.upper()}({self.text(arg)}{steps})"
            case E.Classifier(var=var, final=final):
                inner = "" if var == E.UNIVERSAL else self.variable(var)
                return f"{_final(final)}CLASSIFIER({inner})"
            case E.MatchNumber():
                return "MATCH_NUMBER()"
            case E.RowAggregate(func=func, arg=arg, var=var, final=final):
                if arg is None:
                    inner = "*" if var == E.UNIVERSAL else f"{self.variable(var)}.*"
                else:
                    inner = ", ".join(self.text(part) for part in E.written_args(expr))
                return f"{_final(final)}{func}({inner})"
        raise TypeError(f"not an expression node: {expr!r}")


def _final(final: bool) -> str:
    return "FINAL " if final else ""


def _index(var: str, index: E.Index) -> str:
    offset = f"-{-index.offset}" if index.offset else ""
    if index.base == "abs":
        return str(index.offset)
    if index.base == "i":
        return f"i{offset}"
    return f"{var}.len{offset}"


def expr_text(expr: E.Expr) -> str:
    """The text of any expression, for messages (each language's printer spells its own).

    >>> expr_text(E.Compare(">", E.Attr("b", "x", E.Index("i", -1)), E.Name("limit")))
    'b[i-1].x > limit'
    """
    return _PRINTER.text(expr)


_PRINTER = ExprPrinter()
