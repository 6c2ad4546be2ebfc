"""The `row_reference` plan: SQL's row pattern recognition by its definition, the oracle
the `row_pattern` plan (and the column-wise run) is tested against.

Every way the row pattern can map rows from a start row is generated from the AST, in the
pattern's order of preference (alternatives left to right, a greedy quantifier's more
iterations first, a reluctant one's fewer, PERMUTE's orders as their positions come); an
iteration past a quantifier's minimum maps at least one row (an empty one would give
nothing new, or loop forever). The preferred match is the first way in which every row
meets its variable's DEFINE condition, evaluated by the interpreter with the rows mapped up
to it. Over a stream, a way that needs a row not there yet (or a condition reading one)
makes the answer wait, unless a way before it matched. Then AFTER MATCH SKIP says where
the next search starts. Brute force: exponential in the rows a pattern can take, meant for
short partitions and as the oracle.

>>> import kleene
>>> query = '''MATCH_RECOGNIZE (ORDER BY ts MEASURES FIRST(x) AS top, count(*) AS n
...     PATTERN (A B+) DEFINE B AS x < PREV(x))'''
>>> ticks = [{"type": "R", "ts": t, "x": x} for t, x in enumerate([5, 4, 3, 6, 2])]
>>> kleene.match(query, ticks, plan="row_reference")
[{'top': 5, 'n': 3}, {'top': 6, 'n': 2}]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any, ClassVar, Final

from kleene.compiler.evaluate import evaluate
from kleene.compiler.functions import known_functions
from kleene.compiler.options import Options
from kleene.compiler.row_pattern import (
    DICT_ROWS,
    EventRows,
    NeedRowsError,
    RowPatternQuery,
    Rows,
    RowScope,
    members_of,
    within_check,
)
from kleene.errors import LimitError
from kleene.events import Event, Watermark
from kleene.language.sql import ast as Q
from kleene.plans.base import Plan, register
from kleene.plans.row_pattern.partition import output_row, skip_to
from kleene.plans.row_pattern.search import MAX_STEPS

__all__ = ["WAITS", "Path", "RowReference", "matches", "paths", "preferred"]


@dataclass(frozen=True, slots=True)
class Path:
    """A way to map rows: one past its last row, each row's variable, whether an exclusion
    hides it, and whether it goes on past the rows there are (it `waits` for more)."""

    end: int
    labels: tuple[str, ...] = ()
    excluded: tuple[bool, ...] = ()
    waits: bool = False

    def then(self, other: Path) -> Path:
        return Path(
            other.end, self.labels + other.labels, self.excluded + other.excluded, other.waits
        )


class _Waits:
    def __repr__(self) -> str:
        return "WAITS"


#: What `preferred` returns when the answer depends on rows not there yet.
WAITS: Final = _Waits()


def paths(
    node: Q.RowPattern, pos: int, n: int, closed: bool, hidden: bool = False
) -> Iterator[Path]:
    """Every way `node` maps rows from `pos` (of the `n` there are; `closed`: no more will
    come), preferred first; a way that needs a row past them ends there, waiting."""
    match node:
        case Q.Label(name=name):
            if pos < n:
                yield Path(pos + 1, (name,), (hidden,))
            elif not closed:
                yield Path(pos, waits=True)
        case Q.Anchor(kind="^"):
            if pos == 0:
                yield Path(pos)
        case Q.Anchor(kind="$"):
            if pos == n:
                yield Path(pos, waits=not closed)
        case Q.Exclusion(body=body):
            yield from paths(body, pos, n, closed, True)
        case Q.Concat(items=items):
            yield from _sequence(items, pos, n, closed, hidden)
        case Q.Alternation(items=items):
            for item in items:
                yield from paths(item, pos, n, closed, hidden)
        case Q.Permute(items=items):
            for order in permutations(items):
                yield from _sequence(order, pos, n, closed, hidden)
        case Q.Repeat():
            yield from _repeat(node, 0, pos, n, closed, hidden)


def _sequence(
    items: Sequence[Q.RowPattern], pos: int, n: int, closed: bool, hidden: bool
) -> Iterator[Path]:
    if not items:
        yield Path(pos)
        return
    for head in paths(items[0], pos, n, closed, hidden):
        if head.waits:
            yield head
            continue
        for tail in _sequence(items[1:], head.end, n, closed, hidden):
            yield head.then(tail)


def _repeat(
    node: Q.Repeat, count: int, pos: int, n: int, closed: bool, hidden: bool
) -> Iterator[Path]:
    def more() -> Iterator[Path]:
        if node.max is not None and count >= node.max:
            return
        for body in paths(node.body, pos, n, closed, hidden):
            if body.waits:
                yield body
                continue
            if body.end == pos and count >= node.min:
                continue
            for rest in _repeat(node, count + 1, body.end, n, closed, hidden):
                yield body.then(rest)

    def stop() -> Iterator[Path]:
        if count >= node.min:
            yield Path(pos)

    first, second = (more, stop) if node.greedy else (stop, more)
    yield from first()
    yield from second()


def preferred(
    clause: Q.MatchRecognize,
    rows: Sequence[Any],
    start: int,
    closed: bool = True,
    rows_are: Rows = DICT_ROWS,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    max_steps: int = MAX_STEPS,
    number: int = 1,
) -> Path | _Waits | None:
    """The preferred match from `start`, None when there is none, or `WAITS` when that
    depends on rows not there yet. `number` is the match's number, if it is one (what
    MATCH_NUMBER() reads in DEFINE)."""
    index = {name: i for i, name in enumerate(clause.variables)}
    functions = known_functions() if functions is None else functions
    scope = (rows_are, functions, members_of(clause), within_check(clause, rows_are))
    for tried, way in enumerate(paths(clause.pattern, start, len(rows), closed)):
        if tried > max_steps:
            raise LimitError(
                f"more than {max_steps:,} ways to map rows from row {start + 1} of a partition "
                "were tried: the row pattern can map its rows in too many ways"
            )
        numbers = [index[name] for name in way.labels]
        try:
            holds = all(
                _holds(clause, rows, start, numbers[: k + 1], closed, number, scope)
                for k in range(len(numbers))
            )
        except NeedRowsError:
            return WAITS
        if holds:
            return WAITS if way.waits else way
    return None


def _holds(
    clause: Q.MatchRecognize,
    rows: Sequence[Any],
    start: int,
    labels: list[int],
    closed: bool,
    number: int,
    scope: tuple[Rows, Mapping[str, Callable[..., Any]], Mapping[str, frozenset[int]], Any],
) -> bool:
    """Does the last row `labels` maps hold for its variable's condition, in the match
    numbered `number` (`scope`: how rows are read, the functions, the variables' members,
    WITHIN's test)?"""
    rows_are, functions, members, within = scope
    current = start + len(labels) - 1
    if within is not None and not within(rows, start, current):
        return False  # WITHIN: the row is too late to be part of a match from `start`
    condition = clause.definition(clause.variables[labels[-1]])
    if condition is None:
        return True
    at = RowScope(
        clause, rows, start, labels, current, number, closed, functions, members, rows_are
    )
    return evaluate(condition, at) is True


def matches(clause: Q.MatchRecognize, rows: Sequence[Any]) -> list[tuple[int, Path]]:
    """A whole partition's matches (start and way), the search going on as AFTER MATCH
    SKIP says; a skip the standard calls an error raises it."""
    found: list[tuple[int, Path]] = []
    position = 0
    members = members_of(clause)
    while position < len(rows):
        way = preferred(clause, rows, position, number=len(found) + 1)
        if way is None:
            position += 1
            continue
        assert isinstance(way, Path)
        found.append((position, way))
        position = _skipped(clause, members, position, way)
    return found


def _skipped(
    clause: Q.MatchRecognize, members: Mapping[str, frozenset[int]], start: int, way: Path
) -> int:
    index = {name: i for i, name in enumerate(clause.variables)}
    return skip_to(clause, members, start, way.end, [index[name] for name in way.labels])


# ---- the plan ----------------------------------------------------------------------------


@dataclass
class RowReferenceState:
    """A partition's every row, where the next search starts, the matches found, and one
    past the last row a match held."""

    rows: list[Event] = field(default_factory=list)
    next: int = 0
    number: int = 0
    covered: int = 0


@register
class RowReference(Plan[RowReferenceState]):
    """SQL's row pattern recognition by definition; slow, obviously right; the oracle."""

    name = "row_reference"
    languages: ClassVar[frozenset[str]] = frozenset({"sql"})
    analysis: RowPatternQuery

    def __init__(self, analysis: RowPatternQuery, options: Options) -> None:
        super().__init__(analysis, options)
        self.clause = analysis.clause
        self.functions = analysis.functions
        self.rows_are = EventRows(analysis.order)
        self.members = members_of(self.clause)

    @classmethod
    def unsupported(cls, analysis: Any, options: Options) -> str | None:
        if options.timeouts:
            return "timeouts=True reports a SASE+ pattern's partial matches; a row pattern has none"
        return super().unsupported(analysis, options)

    def new_state(self) -> RowReferenceState:
        return RowReferenceState()

    def step(self, state: RowReferenceState, event: Event) -> list[Any]:
        state.rows.append(event)
        return self._decide(state, closed=False)

    def advance(self, state: RowReferenceState, watermark: Watermark) -> list[Any]:
        return self._decide(state, closed=True) if watermark.t == math.inf else []

    def deadline(self, state: RowReferenceState) -> float | None:
        return math.inf if state.next < len(state.rows) else None

    def live_runs(self, state: RowReferenceState) -> int:
        return len(state.rows) - state.next

    def _decide(self, state: RowReferenceState, closed: bool) -> list[Any]:
        """The output of every match (and unmatched row) the rows so far decide."""
        clause, rows, out = self.clause, state.rows, []
        while state.next < len(rows):
            way = preferred(
                clause, rows, state.next, closed, self.rows_are, self.functions,
                number=state.number + 1,
            )  # fmt: skip
            if way is WAITS:
                break
            if way is None:
                shown = clause.rows == "all" and clause.empty == "unmatched"
                if shown and state.next >= state.covered:
                    nulls = {m.name: None for m in clause.measures}
                    out.append(output_row(clause, self.rows_are, rows[state.next], nulls))
                state.next += 1
                continue
            assert isinstance(way, Path)
            try:
                made = self._output(state, way, closed)
            except NeedRowsError:  # a measure reads a row not there yet
                break
            out.extend(made)
            state.number += 1
            state.covered = max(state.covered, way.end)
            state.next = _skipped(clause, self.members, state.next, way)
        return out

    def _output(self, state: RowReferenceState, way: Path, closed: bool) -> list[Any]:
        """The match's output rows: one (ONE ROW PER MATCH, at its last row), or one per
        row it shows (ALL ROWS PER MATCH; an empty match shows its start row, unless OMIT
        EMPTY MATCHES)."""
        clause, start = self.clause, state.next
        index = {name: i for i, name in enumerate(clause.variables)}
        labels = [index[name] for name in way.labels]
        number = state.number + 1

        def measured(current: int | None) -> dict[str, Any]:
            scope = RowScope(
                clause, state.rows, start, labels, current, number, closed, self.functions,
                self.members, self.rows_are,
            )  # fmt: skip
            return {m.name: evaluate(m.expr, scope) for m in clause.measures}

        empty = way.end == start
        if clause.rows == "one":
            return [output_row(clause, self.rows_are, state.rows[start],
                               measured(None if empty else way.end - 1), one=True)]  # fmt: skip
        if empty:
            if clause.empty == "omit":
                return []
            return [output_row(clause, self.rows_are, state.rows[start], measured(None))]
        return [
            output_row(clause, self.rows_are, state.rows[start + k], measured(start + k))
            for k, hidden in enumerate(way.excluded)
            if not hidden
        ]
