"""The AST of a `MATCH_RECOGNIZE` clause: the row pattern (a regular expression over
pattern variables) and the clauses around it, over the one expression tree
(`kleene.language.expr`) for DEFINE conditions and MEASURES.

Nodes are frozen dataclasses that keep source positions and compare without them, as every
kleene AST does.

>>> pattern = Concat((Label("A"), Repeat(Label("B"), 1, None)))
>>> [type(node).__name__ for node in walk_pattern(pattern)]
['Concat', 'Label', 'Repeat', 'Label']
>>> labels(pattern)
('A', 'B')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from kleene.language import expr as E
from kleene.language.expr import Span, span_field

__all__ = [
    "Alternation",
    "Anchor",
    "Concat",
    "Definition",
    "Exclusion",
    "Label",
    "MatchRecognize",
    "Measure",
    "Permute",
    "Repeat",
    "RowPattern",
    "Skip",
    "SortKey",
    "Subset",
    "labels",
    "walk_pattern",
]


@dataclass(frozen=True, slots=True)
class Label:
    """A pattern variable: one row for which its DEFINE condition holds."""

    name: str
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Concat:
    """Row patterns one after another; no items is the empty pattern `()`."""

    items: tuple[RowPattern, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Alternation:
    """`p | q | …`: the first alternative that leads to a match is preferred."""

    items: tuple[RowPattern, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Repeat:
    """A quantified pattern: `*` is (0, None), `+` (1, None), `?` (0, 1), `{n}` (n, n),
    `{n,m}` (n, m). Greedy prefers more repetitions, reluctant (`*?`, …) fewer."""

    body: RowPattern
    min: int
    max: int | None
    greedy: bool = True
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Permute:
    """`PERMUTE(p, q, …)`: every order of the items, preferred in the order of the
    permutations of their positions (p q r before p r q before q p r, …)."""

    items: tuple[RowPattern, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Anchor:
    """`^`: the start of the partition; `$`: its end."""

    kind: Literal["^", "$"]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Exclusion:
    """`{- p -}`: the rows p matches are part of the match but not of ALL ROWS PER MATCH's
    output."""

    body: RowPattern
    span: Span | None = span_field()


RowPattern: TypeAlias = Label | Concat | Alternation | Repeat | Permute | Anchor | Exclusion


@dataclass(frozen=True, slots=True)
class SortKey:
    """An ORDER BY key: a column, descending or not, nulls first or last (None: as Spark
    orders them, first when ascending and last when descending)."""

    column: str
    descending: bool = False
    nulls_first: bool | None = None
    span: Span | None = span_field()

    @property
    def nulls_come_first(self) -> bool:
        return (not self.descending) if self.nulls_first is None else self.nulls_first


@dataclass(frozen=True, slots=True)
class Measure:
    """`expr AS name` of MEASURES."""

    expr: E.Expr
    name: str
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Subset:
    """`SUBSET U = (A, B)`: a union variable, the rows mapped to any of its members."""

    name: str
    members: tuple[str, ...]
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Definition:
    """`A AS condition` of DEFINE."""

    var: str
    condition: E.Expr
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class Skip:
    """Where the search goes on after a match: past its last row, to the row after its
    first, or to the first or last row mapped to a variable."""

    to: Literal["past_last", "next_row", "first", "last"] = "past_last"
    var: str | None = None
    span: Span | None = span_field()


#: The units `WITHIN INTERVAL 'n' unit` takes, in seconds.
INTERVAL_UNITS = {"MILLISECOND": 0.001, "SECOND": 1.0, "MINUTE": 60.0, "HOUR": 3600.0}
INTERVAL_UNITS["DAY"] = 86400.0


@dataclass(frozen=True, slots=True)
class Within:
    """`WITHIN INTERVAL '10' MINUTE` (Flink SQL's time constraint): a match's rows span less
    than `seconds`, on the first ORDER BY column (numbers are seconds). `amount` and `unit`
    are as written (the unit singular, in upper case)."""

    amount: str
    unit: str
    seconds: float
    span: Span | None = span_field()


@dataclass(frozen=True, slots=True)
class MatchRecognize:
    """A whole `MATCH_RECOGNIZE ( … )` clause.

    `rows` is "one" (ONE ROW PER MATCH) or "all"; `empty` says what ALL ROWS PER MATCH does
    with empty matches and rows no match holds: "show" (SHOW EMPTY MATCHES), "omit" (OMIT
    EMPTY MATCHES) or "unmatched" (WITH UNMATCHED ROWS)."""

    pattern: RowPattern
    partition_by: tuple[str, ...] = ()
    order_by: tuple[SortKey, ...] = ()
    measures: tuple[Measure, ...] = ()
    rows: Literal["one", "all"] = "one"
    empty: Literal["show", "omit", "unmatched"] = "show"
    skip: Skip = Skip()
    subsets: tuple[Subset, ...] = ()
    defines: tuple[Definition, ...] = ()
    within: Within | None = None
    #: The text it was read from ("" when built in Python), for errors with a caret.
    text: str = field(default="", compare=False, repr=False)
    span: Span | None = span_field()

    @property
    def variables(self) -> tuple[str, ...]:
        """The pattern variables, in the order the pattern first names them."""
        return labels(self.pattern)

    def definition(self, var: str) -> E.Expr | None:
        """The DEFINE condition of a variable (None: it holds for every row)."""
        for definition in self.defines:
            if definition.var == var:
                return definition.condition
        return None

    def members(self, name: str) -> frozenset[str] | None:
        """The variables a name stands for: itself, a subset's members, or every variable
        for the universal variable (None: no such name)."""
        if name == E.UNIVERSAL:
            return frozenset(self.variables)
        if name in self.variables:
            return frozenset((name,))
        for subset in self.subsets:
            if subset.name == name:
                return frozenset(subset.members)
        return None


def walk_pattern(node: RowPattern) -> Iterator[RowPattern]:
    """Every node of a row pattern, the node itself first."""
    yield node
    match node:
        case Concat(items=items) | Alternation(items=items) | Permute(items=items):
            for item in items:
                yield from walk_pattern(item)
        case Repeat(body=body) | Exclusion(body=body):
            yield from walk_pattern(body)


def labels(node: RowPattern) -> tuple[str, ...]:
    """The pattern variables a row pattern names, each once, in the order of the text."""
    names: dict[str, None] = {}
    for item in walk_pattern(node):
        if isinstance(item, Label):
            names.setdefault(item.name)
    return tuple(names)
