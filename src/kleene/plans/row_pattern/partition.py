"""One partition's matches, as SQL's row pattern recognition finds them: from the first
row, the preferred match (`search.Search`); then on from the row the AFTER MATCH SKIP rule
names; where no match starts, on from the next row. Each match becomes the rows its
ROWS PER MATCH option asks for, with its MEASURES.

The search keeps its place in a `Progress`, so rows may arrive a few at a time: a match
waits while a later row could still change it, and `closed=True` says the partition's
last row is there.

>>> from kleene.language.sql.reader import read
>>> clause = read('''MEASURES FIRST(x) AS low, LAST(x) AS high, count(*) AS n
...                  PATTERN (A B+) DEFINE B AS x > PREV(x)''')
>>> matcher = Matcher(clause)
>>> rows = [{"k": 1, "x": v} for v in (5, 1, 2, 3, 2, 4)]
>>> progress = Progress()
>>> matcher.advance(progress, rows, closed=True)
[{'low': 1, 'high': 3, 'n': 3}, {'low': 2, 'high': 4, 'n': 2}]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kleene.compiler.evaluate import evaluate
from kleene.compiler.row_pattern import (
    DICT_ROWS,
    NeedRowsError,
    RowCheck,
    Rows,
    RowScope,
    compile_row_expr,
    members_of,
)
from kleene.errors import EventError
from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.language.text import error_at
from kleene.plans.row_pattern.search import BLOCKED, MAX_STEPS, Found, Search

__all__ = ["Matcher", "Progress", "output_row", "skip_to"]


@dataclass
class Progress:
    """Where a partition's search stands: the row the next search starts from, the
    matches found, one past the last row a match held (rows before it are matched), and
    how many of the partition's first rows were dropped (`Matcher.trim`); positions count
    in the rows kept."""

    next: int = 0
    number: int = 0
    covered: int = 0
    origin: int = 0


class Matcher:
    """A clause compiled for partitions: `advance` turns a partition's rows into output
    rows (dicts, columns in SQL's order)."""

    def __init__(
        self,
        clause: Q.MatchRecognize,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        max_steps: int = MAX_STEPS,
        rows_are: Rows = DICT_ROWS,
    ) -> None:
        self.clause = clause
        self.rows_are = rows_are
        self.search = Search(clause, functions, max_steps, rows_are)
        #: How far before a search's start row an expression may read (PREV's offsets).
        self.reach = max(
            (
                node.offset
                for expr in _expressions(clause)
                for node in E.walk(expr)
                if isinstance(node, E.Navigation) and node.func == "prev"
            ),
            default=0,
        )
        self.functions = self.search.functions
        self.members = members_of(clause)
        #: Each measure, by name, compiled for a current row.
        self.measured: tuple[tuple[str, RowCheck], ...] = tuple(
            (m.name, compile_row_expr(m.expr, clause, self.functions, None, rows_are, False))
            for m in clause.measures
        )

    def advance(
        self, progress: Progress, rows: Sequence[Any], closed: bool
    ) -> list[dict[str, Any]]:
        """The output rows of every match (and unmatched row) the rows so far decide."""
        out: list[dict[str, Any]] = []
        clause = self.clause
        # once every row is there, what a condition decides of a row holds for good
        table = self.search.table(rows) if closed and progress.next < len(rows) else None
        while progress.next < len(rows):
            found = self.search.run(
                rows, progress.next, closed, progress.origin, table, progress.number + 1
            )
            if found is BLOCKED:
                break
            if found is None:
                shown = clause.rows == "all" and clause.empty == "unmatched"
                if shown and progress.next >= progress.covered:
                    out.append(self.unmatched(rows, progress.next))
                progress.next += 1
                continue
            assert isinstance(found, Found)
            try:
                out.extend(self.output(rows, found, progress.number + 1, closed))
            except NeedRowsError:  # a measure reads a row not there yet: the match waits
                break
            progress.number += 1
            progress.covered = max(progress.covered, found.end)
            progress.next = self.skip(found)
        return out

    def trim(self, progress: Progress, rows: list[Any]) -> None:
        """Drop the rows no later search or output can read: those more than `reach`
        before where the next search starts."""
        drop = progress.next - self.reach
        if drop > 0:
            del rows[:drop]
            progress.next -= drop
            progress.covered = max(0, progress.covered - drop)
            progress.origin += drop

    def skip(self, found: Found) -> int:
        """Where the next search starts, by the AFTER MATCH SKIP rule."""
        return skip_to(self.clause, self.members, found.start, found.end, found.labels)

    # -- output rows ---------------------------------------------------------------------

    def measures(
        self,
        rows: Sequence[Any],
        found: Found,
        current: int | None,
        number: int,
        closed: bool = True,
    ) -> dict[str, Any]:
        """The measures at a current row of a match (over an empty match, interpreted);
        `NeedRowsError` when one reads a row not there yet (`closed`: none will come)."""
        if current is None:
            scope = RowScope(
                self.clause,
                rows,
                found.start,
                found.labels,
                None,
                number,
                closed,
                self.functions,
                self.members,
                self.rows_are,
            )
            return {m.name: evaluate(m.expr, scope) for m in self.clause.measures}
        start, labels = found.start, found.labels
        try:
            return {
                name: measure(rows, start, labels, current, closed, number)
                for name, measure in self.measured
            }
        except EventError as error:  # the row it was found in
            error.event = error.event if error.event is not None else rows[current]
            raise

    def output(
        self, rows: Sequence[Any], found: Found, number: int, closed: bool = True
    ) -> list[dict[str, Any]]:
        """A match's output rows: one (ONE ROW PER MATCH), or one per row it does not
        exclude (ALL ROWS PER MATCH; an empty match shows its start row, unless OMIT EMPTY
        MATCHES)."""
        clause, rows_are = self.clause, self.rows_are
        if clause.rows == "one":
            last = found.end - 1 if not found.empty else None
            measures = self.measures(rows, found, last, number, closed)
            return [output_row(clause, rows_are, rows[found.start], measures, one=True)]
        if found.empty:
            if clause.empty == "omit":
                return []
            measures = self.measures(rows, found, None, number, closed)
            return [output_row(clause, rows_are, rows[found.start], measures)]
        out = []
        for offset, hidden in enumerate(found.excluded):
            if not hidden:
                position = found.start + offset
                measures = self.measures(rows, found, position, number, closed)
                out.append(output_row(clause, rows_are, rows[position], measures))
        return out

    def unmatched(self, rows: Sequence[Any], position: int) -> dict[str, Any]:
        """An unmatched row's output (WITH UNMATCHED ROWS): its columns, null measures."""
        nulls = {m.name: None for m in self.clause.measures}
        return output_row(self.clause, self.rows_are, rows[position], nulls)


def skip_to(
    clause: Q.MatchRecognize,
    members: Mapping[str, frozenset[int]],
    start: int,
    end: int,
    labels: Sequence[int],
) -> int:
    """Where the search goes on after the match of rows `start` to `end` (its rows mapped
    to `labels`), by the AFTER MATCH SKIP rule (after an empty match, the next row); the
    standard's error for a skip to a variable the match maps no row to, or to its first
    row."""
    skip = clause.skip
    if end == start or skip.to == "next_row":
        return start + 1
    if skip.to == "past_last":
        return end
    assert skip.var is not None
    chosen = members[skip.var]
    positions = [start + i for i, label in enumerate(labels) if label in chosen]
    where = f"AFTER MATCH SKIP TO {skip.to.upper()} {skip.var}"
    if not positions:
        raise error_at(
            f"{where}: the match from row {start + 1} of its partition maps no row to {skip.var}",
            clause.text,
            skip.span,
        )
    target = positions[0] if skip.to == "first" else positions[-1]
    if target == start:
        raise error_at(
            f"{where}: that is the match's own first row (row {start + 1} of its partition), "
            "where the search would find the same match forever",
            clause.text,
            skip.span,
        )
    return target


def output_row(
    clause: Q.MatchRecognize,
    rows_are: Rows,
    row: Any,
    measures: dict[str, Any],
    one: bool = False,
) -> dict[str, Any]:
    """An output row: the partition columns (read at `row`) and the measures (`one`: ONE
    ROW PER MATCH); for ALL ROWS PER MATCH also the ordering columns after the partition's,
    and the row's other columns after the measures."""
    value = rows_are.value
    out = {name: value(row, name) for name in clause.partition_by}
    if one:
        out.update(measures)
        return out
    for key in clause.order_by:
        out[key.column] = value(row, key.column)
    out.update(measures)
    for name, column in rows_are.columns(row).items():
        if name not in out:
            out[name] = column
    return out


def _expressions(clause: Q.MatchRecognize) -> list[E.Expr]:
    return [d.condition for d in clause.defines] + [m.expr for m in clause.measures]
