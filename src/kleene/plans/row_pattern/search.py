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

from kleene.compiler.functions import known_functions
from kleene.compiler.row_pattern import (
    DICT_ROWS,
    NeedRowsError,
    RowCheck,
    Rows,
    compile_row_expr,
    history_free,
    within_check,
)
from kleene.errors import EventError, LimitError
from kleene.language.sql import ast as Q
from kleene.language.text import error_at
from kleene.plans.row_pattern.program import MAX_PROGRAM, compile_pattern, loops

__all__ = ["BLOCKED", "MAX_STEPS", "Decided", "Found", "Search"]

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


@dataclass(slots=True)
class Decided:
    """What the searches over one closed partition keep (`Search.table`): each variable's
    condition on each row (None: not decided yet), and each greedy loop's failed run, by
    (instruction, loop marks, exclusion depth): the rows from where it was entered to where
    it stopped."""

    rows: list[list[bool | None]]
    runs: dict[tuple[int, tuple[int, ...], int], tuple[int, int]]


class _Blocked:
    def __repr__(self) -> str:
        return "BLOCKED"


#: After how many steps a search starts remembering the states that failed.
_REMEMBER_AFTER = 64

# the instructions' numbers in the search's loop (those a remembered state starts first)
_LABEL, _MANY, _SPLIT, _JUMP, _SAVE, _LOOP, _EXCLUDE, _BEGIN, _END, _ACCEPT, _FAIL = range(11)
_CODES = {
    "label": _LABEL,
    "many": _MANY,
    "split": _SPLIT,
    "jump": _JUMP,
    "save": _SAVE,
    "loop": _LOOP,
    "exclude": _EXCLUDE,
    "begin": _BEGIN,
    "end": _END,
    "accept": _ACCEPT,
}

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
        #: Each variable's DEFINE condition, compiled (None: it holds for every row), and
        #: WITHIN's time limit with it.
        self.checks: tuple[RowCheck | None, ...] = tuple(
            _within(
                None
                if condition is None
                else compile_row_expr(condition, clause, self.functions, var, rows_are),
                within_check(clause, rows_are),
            )
            for var, condition in ((var, clause.definition(var)) for var in clause.variables)
        )
        self.memo = history_free(clause)
        #: After how many steps a search starts remembering the states that failed.
        self.remember_after = _REMEMBER_AFTER
        self.max_steps = max_steps
        #: The program as tuples of numbers, for the search's loop.
        self.code = tuple((_CODES[op.kind], op.a, op.b) for op in self.program)
        self.unmarked = (-1,) * self.loops

    def table(self, rows: Sequence[Any]) -> Decided | None:
        """What `run` keeps across the searches over all of a partition's rows (`closed`),
        when conditions read only rows (not how the match mapped them): whether each row
        satisfies each variable's condition, decided once per row, not once per search; and
        where a greedy loop of one variable failed. None when conditions read the match, or
        when WITHIN makes a row's fate depend on where the search started."""
        if not self.memo or self.clause.within is not None:
            return None
        return Decided([[None] * len(rows) for _ in self.checks], {})

    def run(
        self,
        rows: Sequence[Any],
        start: int,
        closed: bool,
        origin: int = 0,
        table: Decided | None = None,
        number: int = 1,
    ) -> Found | _Blocked | None:
        """The preferred match from row `start`, None when there is none, or `BLOCKED` when
        that depends on rows after the last of `rows` (`closed`: no more will come).
        `origin` is the partition's position of `rows[0]` (rows before it were dropped);
        `table` (`Search.table` of these rows) keeps what conditions decided, and where a
        greedy loop failed: from any row of the run it took, it fails again (its
        continuations from there are some of those that failed), so a long run a loop takes
        and nothing ends is walked once, not once per start row. `number` is the match's
        number, if it is one (what MATCH_NUMBER() reads in DEFINE)."""
        code, checks, n = self.code, self.checks, len(rows)
        runs = None if table is None else table.runs
        labels: list[int] = []
        excluded: list[bool] = []
        stack: list[tuple[int, int, int, tuple[int, ...], int]] = []
        pc, pos, marks, depth = 0, start, self.unmarked, 0
        # the states that failed, remembered once a search is long (most are short)
        seen: set[tuple[int, int, tuple[int, ...], int]] | None = None
        steps, watch = 0, self.remember_after
        # A condition that reads a row not there yet leaves its branch undecided: the
        # branch goes on by the pattern alone (no condition asked) from the stack's height
        # then (`assumed`), and the answer waits only if that reaches a match or the rows'
        # end, as it would if the condition held. Else the condition cannot matter, and
        # the search goes on below it, as the oracle, which asks conditions only along
        # the ways the pattern can take, does.
        assumed: int | None = None
        while True:
            steps += 1
            if steps >= watch:
                if steps > self.max_steps:
                    raise self._exploded(start)
                if seen is None and self.memo:
                    seen = set()
                watch = self.max_steps + 1
            op, a, b = code[pc]
            if seen is not None and op <= _SPLIT and assumed is None:
                key = (pc, pos, marks, depth)
                if key in seen:
                    op = _FAIL
                else:
                    seen.add(key)
            if op == _LABEL:
                if pos < n:
                    labels.append(a)
                    try:
                        holds = assumed is not None or _maps(
                            checks[a], table, a, rows, start, labels, pos, closed, number
                        )
                    except NeedRowsError:
                        holds, assumed = True, len(stack)
                    if holds:
                        excluded.append(depth > 0)
                        pos += 1
                        pc += 1
                        continue
                    labels.pop()
                elif not closed:
                    return BLOCKED
            elif op == _MANY:  # as many rows as hold, each a place to come back to
                if assumed is not None:
                    return BLOCKED  # (by the pattern alone it takes every row there is)
                if runs is not None:
                    failed = runs.get((pc, marks, depth))
                    if failed is not None and failed[0] <= pos <= failed[1]:
                        op = _FAIL
                if op == _MANY:
                    check = checks[a]
                    hidden = depth > 0
                    mark = len(stack)
                    if runs is not None:  # popped once every way on from the loop failed
                        stack.append((-1 - pc, pos, pos, marks, depth))
                    while True:
                        if pos >= n:
                            if not closed:
                                return BLOCKED
                            break
                        labels.append(a)
                        try:
                            holds = _maps(check, table, a, rows, start, labels, pos, closed, number)
                        except NeedRowsError:
                            return BLOCKED
                        if not holds:
                            labels.pop()
                            break
                        stack.append((b, pos, len(labels) - 1, marks, depth))
                        excluded.append(hidden)
                        pos += 1
                    if runs is not None:
                        sentinel = stack[mark]
                        stack[mark] = (sentinel[0], sentinel[1], pos, marks, depth)
                    pc = b
                    continue
            elif op == _SPLIT:
                stack.append((b, pos, len(labels), marks, depth))
                pc = a
                continue
            elif op == _JUMP:
                pc = a
                continue
            elif op == _SAVE:
                marks = (*marks[:a], pos, *marks[a + 1 :])
                pc += 1
                continue
            elif op == _LOOP:
                if pos != marks[a]:
                    pc = b
                    continue
            elif op == _EXCLUDE:
                depth += a
                pc += 1
                continue
            elif op == _BEGIN:
                if pos + origin == 0:
                    pc += 1
                    continue
            elif op == _END:
                if pos == n:
                    if not closed:
                        return BLOCKED
                    pc += 1
                    continue
            elif op == _ACCEPT:
                if assumed is not None:
                    return BLOCKED
                return Found(start, pos, tuple(labels), tuple(excluded))
            # the branch failed: back to the last choice
            while True:
                if not stack:
                    return None
                pc, pos, size, marks, depth = stack.pop()
                if assumed is not None and len(stack) < assumed:
                    assumed = None  # (a choice made before the undecided condition)
                if pc >= 0:
                    break
                runs[(-1 - pc, marks, depth)] = (pos, size)  # type: ignore[index]
            del labels[size:]
            del excluded[size:]

    def _exploded(self, start: int) -> LimitError:
        return LimitError(
            f"the search for a match from row {start + 1} of a partition took more than "
            f"{self.max_steps:,} steps: the row pattern can map long runs of rows in too many "
            "ways (make its variables' DEFINE conditions exclusive, or its quantifiers "
            "reluctant)"
        )


def _within(
    check: RowCheck | None, within: Callable[[Sequence[Any], int, int], bool] | None
) -> RowCheck | None:
    """A variable's condition with WITHIN's limit (a row past it maps to no variable)."""
    if within is None:
        return check

    def checked(
        rows: Sequence[Any], start: int, labels: Sequence[int], position: int | None,
        closed: bool, number: int,
    ) -> Any:  # fmt: skip
        if position is None or not within(rows, start, position):
            return False
        return check is None or check(rows, start, labels, position, closed, number)

    return checked


def _maps(
    check: RowCheck | None,
    table: Decided | None,
    var: int,
    rows: Sequence[Any],
    start: int,
    labels: list[int],
    position: int,
    closed: bool,
    number: int,
) -> bool:
    """Does the row at `position`, mapped last in `labels`, satisfy variable `var`'s
    condition (kept in `table` once decided, when there is one: only where no condition
    reads the match, its number included)? `NeedRowsError` when that waits for a later
    row."""
    if check is None:
        return True
    try:
        if table is None:
            return bool(check(rows, start, labels, position, closed, number))
        known = table.rows[var][position]
        if known is None:
            known = table.rows[var][position] = bool(
                check(rows, start, labels, position, closed, number)
            )
    except EventError as error:  # the row it was found in
        error.event = error.event if error.event is not None else rows[position]
        raise
    return known
