"""The SASE+ query AST: the structure of a pattern and its clauses, as frozen dataclasses
that keep source positions but compare without them.

A query has two halves. The *structure* (the PATTERN clause) is a tree of `Seq`, `And`, `Or`,
`Negation` and `EventVar` nodes; the *predicates* (the WHERE clause) are the expression tree
every language shares (`kleene.language.expr`). Both come from the reader (`reader.py`) or
the builder (`builder.py`) and print back to text with `printer.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal as Lit
from typing import TypeAlias

from kleene.language.expr import Expr, Span, span_field

__all__ = [
    "ANY",
    "CONSUMPTIONS",
    "SASE_STRATEGIES",
    "SKIPS",
    "STRATEGIES",
    "AfterMatch",
    "And",
    "Consume",
    "Element",
    "EventVar",
    "Freeze",
    "Negation",
    "Or",
    "Pattern",
    "Quantifier",
    "Returned",
    "Seq",
    "Skip",
    "Strategy",
    "Within",
    "contains_or",
    "elements_of_seq",
    "event_vars",
    "next_negations",
    "positive_names",
    "seq_items",
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
Consumption: TypeAlias = Lit["any", "partition", "events", "none"]
CONSUMPTIONS: tuple[Consumption, ...] = ("any", "partition", "events", "none")
#: The type that stands for any type: `_ x` (and a bare name in SES) takes every event.
ANY = "_"


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
    span: Span | None = span_field()

    @property
    def kleene(self) -> bool:
        return self.quantifier is not None


@dataclass(frozen=True, slots=True)
class Negation:
    """`~(T v)`: no qualifying event of type T where the pattern puts it; with `next`,
    `NOT NEXT(T v)` (Flink's `notNext`): the event right after the one before it does not
    qualify; with `followed`, `NOT FOLLOWED(T v)` (Flink's `notFollowedBy`): none from the
    first event of the variable before it on, and none looked for when nothing after it
    binds an event."""

    event: EventVar
    next: bool = False
    followed: bool = False
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Element, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Element, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Element, ...]
    span: Span | None = span_field()


Element: TypeAlias = EventVar | Negation | Seq | And | Or


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
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Strategy:
    """An event selection strategy clause: `skip_till_next_match` for the whole query, or
    `strict_contiguity(a, b)` for the edges between the variables it lists and the loops of
    the Kleene ones (per-edge strategies, `kleene.compiler.per_edge`)."""

    name: str
    variables: tuple[str, ...] | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class AfterMatch:
    """`AFTER MATCH SKIP ...`: the matches a reported one rules out (docs/semantics.md,
    section 7). `skip` is one of `SKIPS`; `variable` names v of `TO FIRST v` / `TO LAST v`."""

    skip: Skip
    variable: str | None = None
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Consume:
    """`CONSUME BY ANY | PARTITION | EVENTS | NONE` (CORE's consumption policies, and
    OpenCEP's single use; docs/semantics.md section 7): which partial matches a reported
    match discards, or (EVENTS) which events it uses up."""

    policy: Consumption
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Freeze:
    """`FREEZE v, ...` (OpenCEP's freeze; docs/semantics.md section 7): an event that v can
    take holds back v and every variable before it in the pattern's SEQ until a reported
    match holds that event or the window has passed it."""

    variables: tuple[str, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Returned:
    """`RETURN expr AS name`: a value each match reports (MATCH_RECOGNIZE's MEASURES)."""

    expr: Expr
    name: str
    span: Span | None = span_field()


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
    #: CONSUME BY: the partial matches a reported match discards (None: none, as NONE).
    consume: Consume | None = field(default=None, kw_only=True)
    #: FREEZE: the variables whose events hold back new partial matches (None: none).
    freeze: Freeze | None = field(default=None, kw_only=True)
    #: RETURN: the values each match reports, in order.
    returns: tuple[Returned, ...] = field(default=(), kw_only=True)
    text: str | None = field(default=None, compare=False, repr=False, kw_only=True)
    span: Span | None = span_field()


# ---- walking the structure -------------------------------------------------------------


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


def next_negations(element: Element) -> frozenset[str]:
    """The names of the variables negated by `NOT NEXT(...)`."""
    if isinstance(element, Negation):
        return frozenset((element.event.name,)) if element.next else frozenset()
    if isinstance(element, EventVar):
        return frozenset()
    return frozenset().union(*(next_negations(item) for item in element.items))


def until_in_and(element: Element, inside: bool = False) -> bool:
    """Is a variable with an UNTIL condition part of an AND?"""
    if isinstance(element, EventVar):
        return inside and element.until is not None
    if isinstance(element, Negation):
        return False
    inside = inside or isinstance(element, And)
    return any(until_in_and(item, inside) for item in element.items)


def followed_negations(element: Element, next_: bool = False) -> dict[str, str]:
    """The names of the variables negated by `NOT FOLLOWED(...)` (with `next_`: by `NOT
    NEXT(...)`), each with the variable right before it in its SEQ, where one is
    (validation puts one before a NOT FOLLOWED)."""
    found: dict[str, str] = {}
    if isinstance(element, EventVar | Negation):
        return found
    for index, item in enumerate(element.items):
        if isinstance(item, Negation) and (item.next if next_ else item.followed) and index > 0:
            previous = element.items[index - 1]
            if isinstance(previous, EventVar):
                found[item.event.name] = previous.name
        found.update(followed_negations(item, next_))
    return found


def seq_items(structure: Element) -> tuple[Element, ...]:
    """The elements of a pattern's SEQ, in order (a pattern that is not a SEQ is its one
    element): what FREEZE names and holds back among."""
    return structure.items if isinstance(structure, Seq) else (structure,)


def elements_of_seq(structure: Element) -> list[str]:
    """The variables that are elements of the pattern's SEQ themselves (what FREEZE may
    name), in order."""
    return [item.name for item in seq_items(structure) if isinstance(item, EventVar)]


def event_vars(element: Element) -> Iterator[EventVar]:
    """Every event variable of a structure, negated ones included, in pattern order."""
    if isinstance(element, EventVar):
        yield element
    elif isinstance(element, Negation):
        yield element.event
    else:
        for item in element.items:
            yield from event_vars(item)
