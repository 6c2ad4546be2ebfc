"""LEAD rule text → AST (`ast.py`): the lark parser and the tree transformer.

`read_rule(text)` only reads: syntax errors come with line, column and caret, as for SASE+
queries (`kleene.language.text.syntax_error`). Whether the names make sense together is
`kleene.compiler.rules`'s job; `kleene.lead.parse` runs both.

>>> rule = read_rule("FROM A AS a, B AS b MATCH a Followed By b EMIT Event Found(a.x)")
>>> rule.pattern
FollowedBy(items=(Source(alias='a'), Source(alias='b')))
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from lark import Lark, Token, UnexpectedInput, v_args
from lark.exceptions import VisitError
from lark.tree import Meta

from kleene.errors import PatternError
from kleene.language import expr as E
from kleene.language.lead import ast as L
from kleene.language.text import (
    MAX_WINDOW,
    UNITS,
    ExprReader,
    check_nesting,
    end_position,
    error_at,
    grammar,
    span_of,
    syntax_error,
)

__all__ = ["AGGREGATES", "KEYWORDS", "read_rule"]

#: The rule keywords (a misspelling of one is pointed out).
KEYWORDS = (
    "FROM", "DEFINE", "TIMEEVENT", "EVENTTYPE", "ENRICH", "MATCH", "FOLLOWED", "BY", "AS",
    "WITHIN", "SUBCONTEXT", "COLLECT", "TERMINATE", "ACCEPT", "INVALIDATE", "WAIT", "PARTITION",
    "EMIT", "EVENT", "CHECK", "FIRST", "ANY", "WHERE", "END", "AND", "OR", "NOT",
)  # fmt: skip

#: The aggregates of a list (`count(l)`, `l.count()`, `sum(l.x)`).
AGGREGATES = ("count", "sum", "avg", "min", "max")


@cache
def _parser() -> Lark:
    return grammar("kleene.language.lead")


def read_rule(text: str) -> L.Rule:
    """Parse LEAD rule text into a `Rule`, or raise `PatternSyntaxError` / `PatternError`."""
    check_nesting(text)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise _unitless(text, error) or syntax_error(text, error, _parser(), KEYWORDS) from None
    try:
        rule: L.Rule = ToRule(text).transform(tree)
    except VisitError as error:
        raise error.orig_exc from None
    return rule


_WITHIN_AMOUNT = re.compile(r"\bwithin\s+[0-9][0-9.eE+-]*(\s+(\w+))?\s*$", re.IGNORECASE)


def _unitless(text: str, error: UnexpectedInput) -> PatternError | None:
    """The error for `Within 10` with no unit after the number (the parser takes the next
    word, `PARTITION` say, for the unit and stumbles after it), or None."""
    position = getattr(error, "pos_in_stream", None)
    if position is None:
        position = len(text)
    found = _WITHIN_AMOUNT.search(text[:position])
    if found is None or (found.group(2) or "").lower() in UNITS:
        return None
    start, end = (found.start(2), found.end(2)) if found.group(2) else (found.end(), found.end())
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    span = E.Span(start, max(end, start + 1), line, column, line, column + max(end - start, 1))
    known = ", ".join(sorted({c for c, _ in UNITS.values()}))
    word = f"; {found.group(2)} is no unit" if found.group(2) else ""
    return error_at(f"Within needs a time unit after its number ({known}){word}", text, span)


class ToRule(ExprReader):
    # -- the rule ------------------------------------------------------------------------

    def start(self, children: list[Any]) -> L.Rule:
        streams, *rest = children
        definitions: list[Any] = []
        enrich: tuple[L.Enrichment, ...] = ()
        pattern = emit = None
        partition: tuple[E.Attr, ...] = ()
        frame: L.Frame | None = None
        for child in rest:
            kind, value = child
            if kind == "define":
                definitions = value
            elif kind == "enrich":
                enrich = value
            elif kind == "match":
                pattern = value
            elif kind == "partition":
                partition, frame = value
            else:
                emit = value
        assert pattern is not None
        assert emit is not None
        return L.Rule(
            streams,
            tuple(d for d in definitions if isinstance(d, L.TimeEvent)),
            tuple(d for d in definitions if isinstance(d, L.EventType)),
            enrich,
            pattern,
            partition,
            emit,
            frame,
            text=self.text,
            span=E.Span(0, len(self.text), 1, 1, *end_position(self.text)),
        )

    def from_clause(self, children: list[L.Stream]) -> tuple[L.Stream, ...]:
        return tuple(children)

    @v_args(meta=True)
    def stream(self, meta: Meta, children: list[Token]) -> L.Stream:
        kind = str(children[0])
        alias = str(children[-1])
        return L.Stream(kind, alias, span=span_of(meta))

    def define_clause(self, children: list[Any]) -> tuple[str, list[Any]]:
        return "define", children

    @v_args(meta=True)
    def time_event(self, meta: Meta, children: list[Any]) -> L.TimeEvent:
        name, start, end = children
        return L.TimeEvent(str(name), start, end, span=span_of(meta))

    @v_args(meta=True)
    def event_type(self, meta: Meta, children: list[Any]) -> L.EventType:
        name, *fields = children
        return L.EventType(str(name), tuple(fields), span=span_of(meta))

    @v_args(meta=True)
    def field(self, meta: Meta, children: list[Any]) -> L.Field:
        kind, name, *default = children
        return L.Field(
            str(kind).upper(), str(name), default[0] if default else None, span=span_of(meta)
        )

    def enrich_clause(self, children: list[L.Enrichment]) -> tuple[str, tuple[L.Enrichment, ...]]:
        return "enrich", tuple(children)

    @v_args(meta=True)
    def enrichment(self, meta: Meta, children: list[Any]) -> L.Enrichment:
        alias, *assignments = children
        return L.Enrichment(str(alias), tuple(assignments), span=span_of(meta))

    def assignment(self, children: list[Any]) -> tuple[str, E.Expr]:
        return str(children[0]), children[1]

    def match_clause(self, children: list[Any]) -> tuple[str, L.Pattern]:
        return "match", children[0]

    def partition_clause(
        self, children: list[E.Attr | L.Frame]
    ) -> tuple[str, tuple[tuple[E.Attr, ...], L.Frame | None]]:
        frames = [c for c in children if isinstance(c, L.Frame)]
        if len(frames) > 1:
            span = frames[1].span
            assert span is not None
            raise PatternError("PARTITION BY takes one frame", self.text, span.line, span.column)
        attrs = tuple(c for c in children if isinstance(c, E.Attr))
        return "partition", (attrs, frames[0] if frames else None)

    @v_args(meta=True)
    def partition_attr(self, meta: Meta, children: list[Token]) -> E.Attr:
        return E.Attr(str(children[0]), str(children[1]), span=span_of(meta))

    @v_args(meta=True)
    def partition_frame(self, meta: Meta, children: list[Token]) -> L.Frame:
        amount, unit = children
        if str(unit).lower() in ("event", "events"):
            count = self._number(amount)
            if not isinstance(count, int) or count < 1:
                self._fail("a count frame is a whole number of events, at least 1", amount)
            return L.Frame(count, "events", span=span_of(meta))
        duration = self._duration(meta, children, frame=True)
        if duration.seconds <= 0:
            self._fail("a time frame must be longer than 0", amount)
        return L.Frame(duration.amount, duration.unit, duration.seconds, span=span_of(meta))

    # -- patterns ------------------------------------------------------------------------

    @v_args(meta=True)
    def source(self, meta: Meta, children: list[Token]) -> L.Source:
        return L.Source(str(children[0]), span=span_of(meta))

    @v_args(meta=True)
    def sequence(self, meta: Meta, children: list[Any]) -> L.Pattern:
        items: list[L.Pattern] = []
        for child in children:
            items.extend(child.items if isinstance(child, L.FollowedBy) else [child])
        return L.FollowedBy(tuple(items), span=span_of(meta))

    @v_args(meta=True)
    def conjunction(self, meta: Meta, children: list[Any]) -> L.Pattern:
        parts = [c for c in children if not isinstance(c, Token)]
        items: list[L.Pattern] = []
        for child in parts:
            items.extend(child.items if isinstance(child, L.Conjunction) else [child])
        return L.Conjunction(tuple(items), span=span_of(meta))

    @v_args(meta=True)
    def disjunction(self, meta: Meta, children: list[Any]) -> L.Pattern:
        parts = [c for c in children if not isinstance(c, Token)]
        items: list[L.Pattern] = []
        for child in parts:
            items.extend(child.items if isinstance(child, L.Disjunction) else [child])
        return L.Disjunction(tuple(items), span=span_of(meta))

    @v_args(meta=True)
    def negation(self, meta: Meta, children: list[Any]) -> L.Negation:
        inner = children[-1]
        if isinstance(inner, L.Within):  # `not p Within t`: the window bounds the negation
            return L.Negation(inner.pattern, inner.within, inner.start, span=span_of(meta))
        return L.Negation(inner, span=span_of(meta))

    @v_args(meta=True)
    def named(self, meta: Meta, children: list[Any]) -> L.Named:
        return L.Named(children[0], str(children[1]), span=span_of(meta))

    @v_args(meta=True)
    def within(self, meta: Meta, children: list[Any]) -> L.Within:
        pattern, duration, *start = children
        return L.Within(pattern, duration, start[0] if start else None, span=span_of(meta))

    @v_args(meta=True)
    def filtered(self, meta: Meta, children: list[Any]) -> L.Filtered:
        return L.Filtered(children[0], children[1], span=span_of(meta))

    @v_args(meta=True)
    def subcontext(self, meta: Meta, children: list[Any]) -> L.Subcontext:
        pattern, item, (name, bounds, condition), (branch, actions), *terminate = children
        return L.Subcontext(
            pattern,
            str(item),
            name,
            bounds,
            condition,
            branch,
            actions,
            terminate[0] if terminate else None,
            span=span_of(meta),
        )

    @v_args(meta=True)
    def list_ref(
        self, meta: Meta, children: list[Any]
    ) -> tuple[str, tuple[int, int] | None, E.Expr | None]:
        name, *rest = children
        numbers = [int(c) for c in rest if isinstance(c, Token) and c.type == "INT"]
        condition = next((c for c in rest if not isinstance(c, Token)), None)
        bounds = None
        if numbers:
            low, high = numbers
            if not 1 <= low <= high:
                self._fail(f"RANGE({low}, {high}) needs 1 <= n1 <= n2", meta)
            bounds = (low, high)
        return str(name), bounds, condition

    def subquery(self, children: list[Any]) -> tuple[L.Pattern, tuple[L.Action, ...]]:
        return children[0], children[1]

    @v_args(meta=True)
    def collect(self, meta: Meta, children: list[Any]) -> L.Collect:
        pattern, clauses = children
        found: dict[str, E.Expr] = {}
        for token, condition in clauses:
            kind = str(token).lower()
            if kind in found:
                self._fail(f"collect takes one {kind} clause", token)
            found[kind] = condition
        return L.Collect(
            pattern,
            found.get("accept"),
            found.get("terminate"),
            found.get("invalidate"),
            span=span_of(meta),
        )

    def clauses(self, children: list[Any]) -> list[Any]:
        return children

    def clause(self, children: list[Any]) -> tuple[Token, E.Expr]:
        return children[0], children[1]

    @v_args(meta=True)
    def wait(self, meta: Meta, children: list[Any]) -> L.Wait:
        return L.Wait(children[0], children[1], span=span_of(meta))

    @v_args(meta=True)
    def policy(self, meta: Meta, children: list[Any]) -> L.Policy:
        word = str(children[0]).lower()
        return L.Policy("adj" if word == "adjacent" else word, children[1], span=span_of(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def all(self, meta: Meta, children: list[Any]) -> L.All:
        pattern, *names = children
        return L.All(pattern, tuple(str(n) for n in names), span=span_of(meta))

    @v_args(meta=True)
    def extremum(self, meta: Meta, children: list[Any]) -> L.Extremum:
        word, pattern, aggregate = children
        return L.Extremum(str(word).lower(), pattern, aggregate, span=span_of(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def duration(self, meta: Meta, children: list[Token]) -> E.Duration:
        return self._duration(meta, children)

    def _duration(self, meta: Meta, children: list[Token], frame: bool = False) -> E.Duration:
        amount, unit = children
        spelling = str(unit).lower()
        if spelling not in UNITS:
            known = ", ".join(sorted({c for c, _ in UNITS.values()}))
            if frame:
                known += " (or events, for a count frame)"
            self._fail(f"unknown time unit {str(unit)!r}; the units are {known}", unit)
        canonical, seconds = UNITS[spelling]
        value = self._number(amount)
        if value > MAX_WINDOW:
            self._fail(f"a duration of more than {MAX_WINDOW:g} {canonical}", amount)
        return E.Duration(value, canonical, value * seconds, span=span_of(meta))

    # -- emit ----------------------------------------------------------------------------

    def actions(self, children: list[L.Action]) -> tuple[L.Action, ...]:
        return tuple(children)

    @v_args(meta=True)
    def action(self, meta: Meta, children: list[Any]) -> L.Action:
        name, *args = children
        return L.Action(str(name), tuple(args), span=span_of(meta))

    @v_args(meta=True)
    def argument(self, meta: Meta, children: list[Any]) -> L.Argument:
        value, *name = children
        return L.Argument(value, str(name[0]) if name else None, span=span_of(meta))

    @v_args(meta=True)
    def check_block(self, meta: Meta, children: list[Any]) -> L.CheckBlock:
        strategy = "first"
        if children and isinstance(children[0], Token):
            strategy = str(children[0]).lower()
            children = children[1:]
        return L.CheckBlock(strategy, tuple(children), span=span_of(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def check(self, meta: Meta, children: list[Any]) -> L.Check:
        return L.Check(children[0], children[1], span=span_of(meta))

    def emit_clause(self, children: list[Any]) -> tuple[str, Any]:
        return "emit", children[-1]

    # -- expressions ---------------------------------------------------------------------

    @v_args(meta=True)
    def attr(self, meta: Meta, children: list[Token]) -> E.Attr:
        return E.Attr(str(children[0]), str(children[1]), span=span_of(meta))

    @v_args(meta=True)
    def method(self, meta: Meta, children: list[Token]) -> E.Aggregate:
        """`l.count()`: an aggregate of a list, written as a method (printed `count(l)`)."""
        var, name = str(children[0]), str(children[1]).lower()
        if name not in AGGREGATES:
            self._fail(f"unknown list method {name!r}(); a list has {', '.join(AGGREGATES)}", meta)
        return E.Aggregate(name, var, None, span=span_of(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def call(self, meta: Meta, children: list[Any]) -> E.Expr:
        """`count(l)`, `sum(l.x)`, `count()` (the list a collect clause governs) are
        aggregates; any other call stays a call, for the checker to judge."""
        name, *args = children
        func, span = str(name).lower(), span_of(meta)
        if func in AGGREGATES:
            if not args:
                return E.Aggregate(func, E.CURRENT, None, span=span)  # type: ignore[arg-type]
            if len(args) == 1 and isinstance(args[0], E.Name):
                return E.Aggregate(func, args[0].name, None, span=span)  # type: ignore[arg-type]
            if len(args) == 1 and isinstance(args[0], E.Attr):
                return E.Aggregate(func, args[0].var, args[0].attr, span=span)  # type: ignore[arg-type]
        return E.Call(func, tuple(args), span=span)

    @v_args(meta=True)
    def name(self, meta: Meta, children: list[Token]) -> E.Name:
        return E.Name(str(children[0]), span=span_of(meta))

    @v_args(meta=True)
    def quantified(self, meta: Meta, children: list[Any]) -> E.Quantified:
        word, body = children
        return E.Quantified(str(word).lower(), body, span=span_of(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def counted(self, meta: Meta, children: list[Any]) -> E.Quantified:
        word, n, body = children
        quantifier = " ".join(str(word).lower().split())
        return E.Quantified(quantifier, body, int(n), span=span_of(meta))  # type: ignore[arg-type]
