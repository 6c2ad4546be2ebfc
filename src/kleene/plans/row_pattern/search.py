"""The search for a row pattern's preferred match: a backtracking machine over the
pattern's program (`program.py`) that tries the pattern's choices in order of preference
and stops at the first way to map rows from a start row to variables that satisfies every
DEFINE condition. SQL's preferred match is exactly that first one.

A DEFINE condition is evaluated as its row is mapped, with the rows mapped so far (RUNNING
semantics), so a failed condition cuts the whole branch. When no condition looks at how
earlier rows were mapped (`history_free`), a state of the machine (instruction, row, loop
marks) that failed once fails again, and is not tried twice: the search is then
polynomial, as a regular expression's is.

>>> from kleene.language.sql.reader import read
>>> clause = read("PATTERN (A B+) DEFINE A AS x = 1, B AS x > PREV(x)")
>>> search = Search(clause)
>>> rows = [{"x": 1}, {"x": 2}, {"x": 3}, {"x": 1}]
>>> found = search.run(rows, 0, closed=True)
>>> found.start, found.end, found.labels
(0, 3, (0, 1, 1))
>>> search.run(rows, 3, closed=True) is None
True
>>> search.run(rows[:3], 0, closed=False) is BLOCKED  # a fourth row might extend B+
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kleene.compiler.evaluate import evaluate
from kleene.compiler.functions import known_functions
from kleene.compiler.row_pattern import (
    DICT_ROWS,
    NeedRowsError,
    Rows,
    RowScope,
    _members,
    history_free,
)
from kleene.errors import LimitError
from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.language.text import error_at
from kleene.plans.row_pattern.program import MAX_PROGRAM, compile_pattern, loops

__all__ = ["BLOCKED", "MAX_STEPS", "Found", "Search"]

#: The most machine steps one search from a start row may take before it stops with a
#: `LimitError` (an ambiguous pattern over long runs of rows explodes).
MAX_STEPS = 5_000_000


@dataclass(frozen=True, slots=True)
class Found:
    """A match: its first row, one past its last, and for each of its rows the index of
    the variable it is mapped to and whether an exclusion `{- -}` hides it."""

    start: int
    end: int
    labels: tuple[int, ...]
    excluded: tuple[bool, ...]

    @property
    def empty(self) -> bool:
        return self.end == self.start


class _Blocked:
    def __repr__(self) -> str:
        return "BLOCKED"


#: What a search returns when the answer depends on rows that have not arrived.
BLOCKED: Final = _Blocked()


class Search:
    """A clause's compiled search (immutable): `run(rows, start, closed)` finds the
    preferred match from a start row."""

    def __init__(
        self,
        clause: Q.MatchRecognize,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        max_steps: int = MAX_STEPS,
        rows_are: Rows = DICT_ROWS,
    ) -> None:
        self.clause = clause
        self.rows_are = rows_are
        self.functions = known_functions() if functions is None else functions
        try:
            self.program = compile_pattern(clause.pattern, clause.variables)
        except OverflowError:
            raise error_at(
                f"the row pattern unrolls to more than {MAX_PROGRAM} steps; bound its "
                "quantifiers less, or write + or * for no bound",
                clause.text,
                getattr(clause.pattern, "span", None),
            ) from None
        self.loops = loops(self.program)
        self.conditions: tuple[E.Expr | None, ...] = tuple(
            clause.definition(var) for var in clause.variables
        )
        self.memo = history_free(clause)
        self.members = _members(clause)
        self.max_steps = max_steps

    def holds(
        self, var: int, rows: Sequence[Any], start: int, labels: list[int], closed: bool
    ) -> bool:
        """Does the row after `labels` (the match so far, itself mapped last) satisfy
        variable `var`'s DEFINE condition? `NeedRowsError` when it reads a row not yet there."""
        condition = self.conditions[var]
        if condition is None:
            return True
        current = start + len(labels) - 1
        scope = RowScope(
            self.clause,
            rows,
            start,
            labels,
            current,
            0,
            closed,
            self.functions,
            self.members,
            self.rows_are,
        )
        return evaluate(condition, scope) is True

    def run(
        self, rows: Sequence[Any], start: int, closed: bool, origin: int = 0
    ) -> Found | _Blocked | None:
        """The preferred match from row `start`, None when there is none, or `BLOCKED` when
        that depends on rows after the last of `rows` (`closed`: no more will come).
        `origin` is the partition's position of `rows[0]` (rows before it were dropped)."""
        program, n = self.program, len(rows)
        labels: list[int] = []
        excluded: list[bool] = []
        stack: list[tuple[int, int, int, tuple[int, ...], int]] = []
        pc, pos, marks, depth = 0, start, (-1,) * self.loops, 0
        seen: set[tuple[int, int, tuple[int, ...], int]] | None = set() if self.memo else None
        steps = 0
        while True:
            steps += 1
            if steps > self.max_steps:
                raise LimitError(
                    f"the search for a match from row {start + 1} of a partition took more "
                    f"than {self.max_steps:,} steps: the row pattern can map long runs of "
                    "rows in too many ways (make its variables' DEFINE conditions exclusive, "
                    "or its quantifiers reluctant)"
                )
            op = program[pc]
            kind = op.kind
            ok = True
            if seen is not None and kind in ("label", "split"):
                key = (pc, pos, marks, depth)
                if key in seen:
                    ok = False
                else:
                    seen.add(key)
            if not ok:
                pass
            elif kind == "label":
                if pos >= n:
                    if not closed:
                        return BLOCKED
                    ok = False
                else:
                    labels.append(op.a)
                    try:
                        ok = self.holds(op.a, rows, start, labels, closed)
                    except NeedRowsError:
                        return BLOCKED
                    if ok:
                        excluded.append(depth > 0)
                        pos += 1
                        pc += 1
                    else:
                        labels.pop()
            elif kind == "split":
                stack.append((op.b, pos, len(labels), marks, depth))
                pc = op.a
            elif kind == "jump":
                pc = op.a
            elif kind == "save":
                marks = (*marks[: op.a], pos, *marks[op.a + 1 :])
                pc += 1
            elif kind == "loop":
                if pos == marks[op.a]:
                    ok = False
                else:
                    pc = op.b
            elif kind == "exclude":
                depth += op.a
                pc += 1
            elif kind == "begin":
                ok = pos + origin == 0
                pc += 1
            elif kind == "end":
                if pos == n and not closed:
                    return BLOCKED
                ok = pos == n
                pc += 1
            else:  # accept
                return Found(start, pos, tuple(labels), tuple(excluded))
            if not ok:
                if not stack:
                    return None
                pc, pos, size, marks, depth = stack.pop()
                del labels[size:]
                del excluded[size:]
