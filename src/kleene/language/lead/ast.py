"""The LEAD rule AST: frozen dataclasses that keep source positions but compare without them.

A rule (`Rule`) has the clauses of the paper's template (section 4): FROM streams with
aliases, DEFINE time events and event types, ENRICH, MATCH a pattern, PARTITION BY attributes,
EMIT actions or a complex emit of nested checks. The pattern is a tree of the algebra's
operators (section 3.3, Table 2); conditions, actions' arguments and time events' bounds are
the expression tree every language shares (`kleene.language.expr`), over aliases, lists and
time events. `reader.py` builds it from text, `printer.py` prints it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from kleene.language import expr as E
from kleene.language.expr import Span, span_field

__all__ = [
    "Action",
    "All",
    "Argument",
    "Check",
    "CheckBlock",
    "Collect",
    "Conjunction",
    "Disjunction",
    "Enrichment",
    "EventType",
    "Extremum",
    "Field",
    "Filtered",
    "FollowedBy",
    "Frame",
    "Named",
    "Negation",
    "Pattern",
    "Policy",
    "Rule",
    "Source",
    "Stream",
    "Subcontext",
    "TimeEvent",
    "Wait",
    "Within",
    "lists_in",
]


def lists_in(expr: E.Expr, lists: frozenset[str] | set[str]) -> set[str]:
    """The list names an expression reads item by item (`ls.event_time`), outside the
    quantifiers it holds (each binds its own list); for a quantifier, those its body reads."""
    found: set[str] = set()

    def visit(e: E.Expr) -> None:
        if isinstance(e, E.Attr) and e.var in lists:
            found.add(e.var)
        if isinstance(e, E.Quantified):
            return  # a nested quantifier binds its own list
        for child in E.children(e):
            visit(child)

    for child in E.children(expr) if isinstance(expr, E.Quantified) else (expr,):
        visit(child)
    return found


# ---- patterns (section 3.3, Table 2) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """An atomic pattern: the next event of a stream, by its alias."""

    alias: str
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Named:
    """`p AS x`: the match of p (a list, for a repetition) is called x."""

    pattern: Pattern
    name: str
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class FollowedBy:
    """`p1 Followed By p2 …`: each matched only after the one before it."""

    items: tuple[Pattern, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Conjunction:
    """`p1 and p2 …`: all matched, in any order."""

    items: tuple[Pattern, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Disjunction:
    """`p1 or p2 …`: the first of them to match."""

    items: tuple[Pattern, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Negation:
    """`not p Within t`: p does not match for t after the negation is enabled; `From q`: for
    t after q matches. Inside a sequence, `not p` alone is bounded by the next element."""

    pattern: Pattern
    within: E.Duration | None = None
    start: Pattern | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Within:
    """`p Within t`: p matches less than t after it is enabled; `p Within t From q`: after q
    matches (q, then p, within t)."""

    pattern: Pattern
    within: E.Duration
    start: Pattern | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Collect:
    """`collect(p) accept(…) terminate(…) invalidate(…)`: a list of p's matches, until the
    termination holds (a match) or the invalidation does (none)."""

    pattern: Pattern
    accept: E.Expr | None = None
    terminate: E.Expr | None = None
    invalidate: E.Expr | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Wait:
    """`Wait(p, t)`: p's first match, reported once t has passed since enabling."""

    pattern: Pattern
    duration: E.Duration
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Filtered:
    """`p.filter(cond)`: p's matches for which cond holds."""

    pattern: Pattern
    condition: E.Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Policy:
    """`first(p)`, `last(p)`, `adj(p)` or `every(p)` (section 3.3.3)."""

    policy: Literal["first", "last", "adj", "every"]
    pattern: Pattern
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class All:
    """`all(p) consume(x, …)`: every match of p, each event of the named parts used once."""

    pattern: Pattern
    consume: tuple[str, ...] = ()
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Extremum:
    """`max(rp, agg)` / `min(rp, agg)`: among repetitions ending together, the one whose
    aggregate is largest / smallest."""

    op: Literal["max", "min"]
    pattern: Pattern
    aggregate: E.Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Subcontext:
    """`p Subcontext(item ==> list.RANGE(n1, n2).filter(c) (MATCH q EMIT …)) terminate(c2)`:
    every item the repetition `list` accepts (the n1-th to n2-th, those passing c) opens a
    branch running q; the events the branches emit form this pattern's list. It matches once
    p has and no branch is left; c2 disables it (no branches, an empty list)."""

    pattern: Pattern
    item: str
    list: str
    range: tuple[int, int] | None
    filter: E.Expr | None
    branch: Pattern
    actions: tuple[Action, ...]
    terminate: E.Expr | None = None
    span: Span | None = span_field()


Pattern: TypeAlias = (
    Source
    | Named
    | FollowedBy
    | Conjunction
    | Disjunction
    | Negation
    | Within
    | Collect
    | Wait
    | Filtered
    | Policy
    | All
    | Extremum
    | Subcontext
)


# ---- the rule --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stream:
    """`Installations AS _in`: events of type `type`, called `alias` in the rule."""

    type: str
    alias: str
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class TimeEvent:
    """`TimeEvent tc(start, end)`: true from start (inclusive) to end (exclusive)."""

    name: str
    start: E.Expr
    end: E.Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Field:
    """One attribute of a defined event type, with its type name and default."""

    type: str
    name: str
    default: E.Constant | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class EventType:
    """`EventType leaving(BOOLEAN leaving(FALSE))`: an action's attributes, in order."""

    name: str
    fields: tuple[Field, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Enrichment:
    """`ENRICH _in(score = _in.level * 2)`: new attributes of a stream's events."""

    alias: str
    assignments: tuple[tuple[str, E.Expr], ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Argument:
    """An action's argument: a value and the attribute name it gets."""

    value: E.Expr
    name: str | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Action:
    """`Event Success(gid)`: emit an event of this type with these attributes."""

    type: str
    args: tuple[Argument, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Check:
    """`WHERE cond` and what follows when it holds: actions, or a nested block."""

    condition: E.Expr
    then: tuple[Action, ...] | CheckBlock
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class CheckBlock:
    """`CHECK FIRST` (the first check that holds) or `CHECK ANY` (every one), up to END."""

    strategy: Literal["first", "any"]
    checks: tuple[Check, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Frame:
    """`PARTITION BY …, 1 day` (a time frame: tumbling windows aligned at multiples of the
    length) or `…, 100 events` (a count frame): the rule runs once per frame."""

    amount: int | float
    #: A time unit, or "events".
    unit: str
    #: The length in seconds (time frames; 0 for count frames).
    seconds: float = 0
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Rule:
    streams: tuple[Stream, ...]
    time_events: tuple[TimeEvent, ...]
    event_types: tuple[EventType, ...]
    enrich: tuple[Enrichment, ...]
    pattern: Pattern
    partition: tuple[E.Attr, ...]
    emit: tuple[Action, ...] | CheckBlock
    frame: Frame | None = None
    #: The rule's text, when it was parsed (for errors found later).
    text: str = field(default="", compare=False, repr=False)
    span: Span | None = span_field()
