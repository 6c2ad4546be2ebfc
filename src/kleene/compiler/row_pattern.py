"""SQL's row pattern recognition as kleene checks and evaluates it: does a MATCH_RECOGNIZE
clause make sense (`check_clause`), and what its expressions mean over a match's rows
(`RowScope`, the `Scope` the one interpreter evaluates DEFINE conditions and MEASURES in).

A match maps each of its rows, in order, to a pattern variable. An expression is evaluated
at a *current row* of the match: in DEFINE, the row being mapped (the match up to it is
all there is yet); in MEASURES, each row for ALL ROWS PER MATCH (RUNNING semantics) or the
last row (ONE ROW PER MATCH, and FINAL anywhere). There:

- `A.x` (and `x`, over any variable) is x of the last row mapped to A up to the current
  row;
- `FIRST(A.x, n)` and `LAST(A.x, n)` count n rows mapped to A from the first or last of
  them; `PREV(e, n)` and `NEXT(e, n)` move n rows over the partition from the row `e` would
  be read at (which may lie outside the match);
- `CLASSIFIER(v)` is the variable the last row mapped to v is mapped to, `MATCH_NUMBER()`
  the match's number in its partition, from 1;
- an aggregate ranges over the rows mapped to its variable up to the current row.

Null where there is no such row, as everywhere in kleene.

>>> from kleene.language.sql.reader import read
>>> clause = read("PATTERN (A B+) DEFINE B AS x > PREV(x) AND x > A.x")
>>> check_clause(clause)
>>> rows = [{"x": 1}, {"x": 3}, {"x": 2}]
>>> scope = RowScope(clause, rows, start=0, labels=[0, 1], current=1)
>>> from kleene.compiler.evaluate import evaluate
>>> evaluate(clause.defines[0].condition, scope)
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn

from kleene.compiler.codegen import Writer
from kleene.compiler.evaluate import Scope, aggregate, apply, attribute, evaluate
from kleene.compiler.functions import Interval, call_error, known_functions
from kleene.compiler.query import Field, Output, Partition, Query, Read, value_kind
from kleene.errors import EventError
from kleene.events import Event, attributes
from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.language.sql.printer import clause_text
from kleene.language.text import error_at, expr_text

__all__ = [
    "DICT_ROWS",
    "EventRows",
    "NeedRowsError",
    "RowCheck",
    "RowPatternQuery",
    "RowScope",
    "Rows",
    "analyze_clause",
    "check_clause",
    "compile_row_expr",
    "history_free",
    "members_of",
    "navigated",
    "within_check",
]


class NeedRowsError(Exception):
    """An expression reads a row past the last one that has arrived (`NEXT`, in a
    partition still open): its value waits for more rows."""


# ---- checks ---------------------------------------------------------------------------


def check_clause(
    clause: Q.MatchRecognize, functions: Mapping[str, Callable[..., Any]] | None = None
) -> None:
    """Raise a `PatternError` with a caret where the clause makes no sense: a name that is
    no variable, a navigation or aggregate the standard does not allow where it stands, a
    function `functions` does not hold (when given: the validate pass has no table of the
    query's functions, so `analyze_clause`, which has, checks the calls)."""
    _Checker(clause, functions).check()


def _check_calls(clause: Q.MatchRecognize, functions: Mapping[str, Callable[..., Any]]) -> None:
    """A `PatternError` with a caret at a call of a function `functions` does not hold."""
    checker = _Checker(clause, functions)
    for expression in [d.condition for d in clause.defines] + [m.expr for m in clause.measures]:
        for node in E.walk(expression):
            if isinstance(node, E.Call):
                checker.call(node)


class _Checker:
    def __init__(
        self, clause: Q.MatchRecognize, functions: Mapping[str, Callable[..., Any]] | None
    ):
        self.clause = clause
        self.functions = functions
        self.variables = clause.variables

    def fail(self, message: str, span: E.Span | None) -> NoReturn:
        raise error_at(message, self.clause.text, span or self.clause.span)

    def check(self) -> None:
        clause = self.clause
        within = clause.within
        if within is not None and (not clause.order_by or clause.order_by[0].descending):
            self.fail(
                "WITHIN measures time on the first ORDER BY column, in ascending order: "
                "ORDER BY a time column first",
                within.span,
            )
        known = set(self.variables)
        for subset in clause.subsets:
            if subset.name in known:
                self.fail(f"SUBSET {subset.name} is also a pattern variable", subset.span)
            for member in subset.members:
                if member not in self.variables:
                    self.fail(
                        f"SUBSET {subset.name} names {member!r}, no pattern variable", subset.span
                    )
            known.add(subset.name)
        for definition in clause.defines:
            if definition.var not in self.variables:
                self.fail(
                    f"DEFINE {definition.var}: the pattern has no variable {definition.var!r} "
                    f"(it has {', '.join(self.variables) or 'none'})",
                    definition.span,
                )
            self.expression(definition.condition, known, define=True)
        for measure in clause.measures:
            self.expression(measure.expr, known, define=False)
            if measure.name in clause.partition_by:
                self.fail(
                    f"the measure {measure.name!r} is also a PARTITION BY column", measure.span
                )
        skip = clause.skip
        if skip.var is not None and skip.var not in known:
            self.fail(f"AFTER MATCH SKIP TO {skip.var}: no such pattern variable", skip.span)
        if clause.empty == "unmatched":
            for node in Q.walk_pattern(clause.pattern):
                if isinstance(node, Q.Exclusion):
                    self.fail(
                        "WITH UNMATCHED ROWS cannot show rows a pattern exclusion {- -} hides",
                        node.span,
                    )

    def expression(self, expr: E.Expr, known: set[str], define: bool) -> None:
        for node in E.walk(expr):
            match node:
                case E.Attr(var=var) | E.Classifier(var=var) | E.RowAggregate(var=var):
                    if var != E.UNIVERSAL and var not in known:
                        self.fail(f"{var!r} is no pattern variable or SUBSET", node.span)
                case E.Call():
                    self.call(node)
                case E.Aggregate() | E.Len() | E.Name() | E.Equivalence() | E.Quantified():
                    self.fail(f"{expr_text(node)} is not SQL", node.span)
            final = isinstance(node, E.Navigation | E.RowAggregate | E.Classifier) and node.final
            if final and define:
                self.fail(
                    f"{expr_text(node)}: FINAL has no meaning in DEFINE, where a row is "
                    "mapped before the match ends",
                    node.span,
                )
            if isinstance(node, E.Navigation):
                self.navigation(node)
            if isinstance(node, E.RowAggregate) and node.arg is not None:
                for inner in E.walk(node.arg):
                    if isinstance(inner, E.Navigation):
                        self.fail(
                            f"{expr_text(inner)} inside an aggregate: kleene aggregates the "
                            "rows' own values",
                            inner.span,
                        )

    def call(self, node: E.Call) -> None:
        if self.functions is not None and node.name.lower() not in self.functions:
            self.fail(
                f"unknown function {node.name}; register it with kleene.register_function or "
                "pass functions={...}",
                node.span,
            )
        wrong = call_error(node)
        if wrong is not None:
            self.fail(wrong, node.span)

    def navigation(self, node: E.Navigation) -> None:
        arg, name = node.arg, node.func.upper()
        inner = [n for n in E.walk(arg) if isinstance(n, E.Navigation)]
        if node.func in ("first", "last"):
            if inner:
                self.fail(
                    f"{name} cannot hold another navigation ({expr_text(inner[0])})", inner[0].span
                )
        elif inner and not (isinstance(arg, E.Navigation) and arg.func in ("first", "last")):
            self.fail(
                f"{name}'s argument may be FIRST(...) or LAST(...) as a whole, or an expression "
                "with no navigation",
                inner[0].span,
            )
        for found in E.walk(arg):
            if isinstance(found, E.RowAggregate):
                self.fail(f"an aggregate inside {name} has no meaning", found.span)
            if isinstance(found, E.MatchNumber):
                self.fail(f"MATCH_NUMBER() inside {name} has no meaning", found.span)
        reads = navigated(node)
        if reads is None:
            self.fail(f"{expr_text(node)} reads no column: navigation moves to a row", node.span)
        if len(reads) > 1:
            self.fail(
                f"the columns {name} reads name different variables ({', '.join(sorted(reads))}); "
                "it moves from the rows of one",
                node.span,
            )


def navigated(node: E.Navigation) -> set[str] | None:
    """The variables whose rows a navigation moves from (None: it reads no column)."""
    names = {n.var for n in E.walk(node.arg) if isinstance(n, E.Attr | E.Classifier)}
    return names or None


def history_free(clause: Q.MatchRecognize) -> bool:
    """Does whether a row may be mapped to a variable depend on the row (and its
    neighbours in the partition) alone, not on how the match so far mapped rows? Then the
    search may remember where it failed. (WITHIN depends on the match's first row too,
    which one search does not change: what it decides holds within a search, not across
    searches from other rows.)"""
    for definition in clause.defines:
        for node in E.walk(definition.condition):
            match node:
                case E.Attr(var=var) if var not in (E.UNIVERSAL, definition.var):
                    return False
                case E.Navigation(func="first" | "last"):
                    return False
                case E.RowAggregate() | E.Classifier() | E.MatchNumber():
                    return False
    return True


def within_check(
    clause: Q.MatchRecognize, rows_are: Rows
) -> Callable[[Sequence[Any], int, int], bool] | None:
    """WITHIN's test of the row at `position` for a match from row `start` (`check(rows,
    start, position)`): is it less than the interval after the first, on the first ORDER
    BY column (datetimes by their difference, numbers as seconds)? None without WITHIN.

    >>> from kleene.language.sql.reader import read
    >>> check = within_check(read("ORDER BY t PATTERN (A+) WITHIN INTERVAL '1' MINUTE"), DICT_ROWS)
    >>> rows = [{"t": 0}, {"t": 30}, {"t": 60}]
    >>> check(rows, 0, 1), check(rows, 0, 2), check(rows, 1, 2)
    (True, False, True)
    """
    within = clause.within
    if within is None:
        return None
    column, limit, value = clause.order_by[0].column, within.seconds, rows_are.value

    def check(rows: Sequence[Any], start: int, position: int) -> bool:
        first, last = value(rows[start], column), value(rows[position], column)
        if first is None or last is None:
            return False
        try:
            elapsed = last - first
            seconds = elapsed.total_seconds() if hasattr(elapsed, "total_seconds") else elapsed
            return bool(seconds < limit)
        except TypeError:
            raise EventError(
                f"WITHIN cannot measure the time from {first!r} to {last!r} on {column!r}",
                field=column,
            ) from None

    return check


# ---- what a row is ------------------------------------------------------------------------


class Rows:
    """How a row's columns are read: a row is a mapping of column to value."""

    def value(self, row: Any, name: str) -> Any:
        return row.get(name)

    def columns(self, row: Any) -> dict[str, Any]:
        return dict(row)


#: Rows that are mappings.
DICT_ROWS = Rows()


class EventRows(Rows):
    """Rows that are kleene `Event`s: the ORDER BY column is the event's time, the others
    its attributes (and `ts`, `type`, `id` its own fields)."""

    def __init__(self, order: str | None) -> None:
        self.order = order

    def value(self, row: Event, name: str) -> Any:
        return row.ts if name == self.order else attribute(row, name)

    def columns(self, row: Event) -> dict[str, Any]:
        """The event's time (under the ORDER BY column's name, else `ts`), then its
        attributes."""
        found = {self.order or "ts": row.ts}
        found.update(attributes(row))
        return found


# ---- evaluation -------------------------------------------------------------------------


class RowScope(Scope):
    """An expression's scope at a current row of a match (see the module's docstring).

    `rows` are the partition's rows (each a mapping of column to value, or an `Event`),
    `start` the match's first row, `labels` the index (in `clause.variables`) of the
    variable each row of the match so far is mapped to, `current` the current row (None:
    the match is empty), `final_end` one past the match's last row (for FINAL), `closed`
    whether the partition's last row has arrived (else a read past it raises `NeedRowsError`).
    """

    def __init__(
        self,
        clause: Q.MatchRecognize,
        rows: Sequence[Any],
        start: int,
        labels: Sequence[int],
        current: int | None,
        number: int = 0,
        closed: bool = True,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        members: Mapping[str, frozenset[int]] | None = None,
        rows_are: Rows = DICT_ROWS,
    ) -> None:
        self.clause = clause
        self.rows_are = rows_are
        self.rows = rows
        self.start = start
        self.labels = labels
        self.current = current
        self.number = number
        self.closed = closed
        self.functions = known_functions() if functions is None else functions
        self.members = members_of(clause) if members is None else members

    # where rows are
    def _end(self, final: bool) -> int:
        """One past the last row RUNNING (or FINAL) semantics sees."""
        if final:
            return self.start + len(self.labels)
        return self.start if self.current is None else self.current + 1

    def _last_of(self, var: str, final: bool = False) -> int | None:
        """The last row mapped to `var` (a variable, subset or the universal variable)."""
        return _nth(self.labels, self.start, self._end(final) - 1, self.members[var], 0, False)

    def _rows_of(self, var: str, final: bool) -> list[int]:
        """The rows mapped to `var`, in order."""
        return _positions(self.labels, self.start, self._end(final) - 1, self.members[var])

    def _read(self, position: int | None, attr: str) -> Any:
        if position is None or position < 0:
            return None
        if position >= len(self.rows):
            if not self.closed:
                raise NeedRowsError
            return None
        return self.rows_are.value(self.rows[position], attr)

    def label_at(self, position: int | None) -> str | None:
        """The variable a row of the match is mapped to (None: it is no row of the match
        so far)."""
        if position is None or not self.start <= position < self.start + len(self.labels):
            return None
        return self.clause.variables[self.labels[position - self.start]]

    def position(self, node: E.Navigation) -> int | None:
        """The row a navigation reads at (None: there is none)."""
        if node.func in ("first", "last"):
            (var,) = navigated(node) or {E.UNIVERSAL}
            end = self._end(node.final) - 1
            first = node.func == "first"
            return _nth(self.labels, self.start, end, self.members[var], node.offset, first)
        arg = node.arg
        if isinstance(arg, E.Navigation):
            base = self.position(arg)
        else:
            (var,) = navigated(node) or {E.UNIVERSAL}
            base = self._last_of(var)
        if base is None:
            return None
        moved = base - node.offset if node.func == "prev" else base + node.offset
        return moved if moved >= 0 else None

    # the Scope's leaves
    def attr(self, node: E.Attr) -> Any:
        return self._read(self._last_of(node.var), node.attr)

    def navigate(self, node: E.Navigation) -> Any:
        position = self.position(node)
        arg = node.arg
        while isinstance(arg, E.Navigation):
            arg = arg.arg
        if position is None or (position >= len(self.rows) and self.closed):
            return None
        if position >= len(self.rows):
            raise NeedRowsError
        return evaluate(arg, _AtRow(self, position))

    def classifier(self, node: E.Classifier) -> Any:
        return self.label_at(self._last_of(node.var, node.final))

    def match_number(self, node: E.MatchNumber) -> Any:
        return self.number

    def duration(self, node: E.Duration) -> Any:
        return Interval(node.seconds)

    def row_aggregate(self, node: E.RowAggregate) -> Any:
        positions = self._rows_of(node.var, node.final)
        if node.arg is None:
            return len(positions)
        return _row_aggregate(node, [evaluate(node.arg, _AtRow(self, p)) for p in positions])


class _AtRow(Scope):
    """A navigation's or aggregate's argument, read at one row."""

    def __init__(self, outer: RowScope, position: int) -> None:
        self.outer = outer
        self.position = position
        self.functions = outer.functions

    def attr(self, node: E.Attr) -> Any:
        return self.outer._read(self.position, node.attr)

    def classifier(self, node: E.Classifier) -> Any:
        return self.outer.label_at(self.position)

    def match_number(self, node: E.MatchNumber) -> Any:
        return self.outer.number

    def duration(self, node: E.Duration) -> Any:
        return Interval(node.seconds)


def members_of(clause: Q.MatchRecognize) -> dict[str, frozenset[int]]:
    """Each name's variables, by index: every variable's, every subset's, the universal
    variable's."""
    index = {name: i for i, name in enumerate(clause.variables)}
    members = {name: frozenset((i,)) for name, i in index.items()}
    for subset in clause.subsets:
        members[subset.name] = frozenset(index[m] for m in subset.members)
    members[E.UNIVERSAL] = frozenset(index.values())
    return members


# ---- the query the plans run ---------------------------------------------------------------


@dataclass(frozen=True)
class RowPatternQuery(Query):
    """A checked MATCH_RECOGNIZE clause, as the plan contract reads it: its partition
    (PARTITION BY, part of its meaning), the columns it reads, the rows it outputs. Over a
    stream, rows come in event-time order: ORDER BY names the time column (or nothing)."""

    language: ClassVar[str] = "sql"

    clause: Q.MatchRecognize
    partition: Partition | None
    functions: Mapping[str, Callable[..., Any]] = field(repr=False, default_factory=dict)

    @property
    def tree(self) -> Q.MatchRecognize:
        return self.clause

    def text(self) -> str:
        return clause_text(self.clause)

    @property
    def partition_is_meaning(self) -> bool:
        """PARTITION BY is part of the clause's meaning: each key's rows are matched alone."""
        return self.partition is not None

    @property
    def order(self) -> str | None:
        """The ORDER BY column: the events' time."""
        keys = self.clause.order_by
        return keys[0].column if keys else None

    @property
    def time_column(self) -> str | None:
        return self.order

    @property
    def typed(self) -> bool:
        return False

    @property
    def reads(self) -> tuple[Read, ...]:
        clause = self.clause
        found = [Read(name, f"PARTITION BY {name}", None) for name in clause.partition_by]
        expressions = [d.condition for d in clause.defines] + [m.expr for m in clause.measures]
        for expression in expressions:
            for node in E.walk(expression):
                if isinstance(node, E.Attr) and node.attr != self.order:
                    found.append(Read(node.attr, expr_text(node), None))
        return tuple(found)

    def output(self, timeouts: bool = False, retractions: bool = False) -> Output:
        """The rows: PARTITION BY columns and MEASURES (ONE ROW PER MATCH); for ALL ROWS
        PER MATCH also the ORDER BY column after the partition's, and the row's other
        columns after the measures."""
        clause = self.clause
        fields = [Field(name, "column", name) for name in clause.partition_by]
        if clause.rows == "all" and self.order is not None:
            fields.append(Field(self.order, "time"))
        for measure in clause.measures:
            kind, of = value_kind(measure.expr)
            fields.append(Field(measure.name, kind, of))
        return Output("rows", tuple(fields), carries=clause.rows == "all")


def analyze_clause(
    clause: Q.MatchRecognize,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    validated: bool = False,
) -> RowPatternQuery:
    """Check a clause (unless `validated` already) and derive its `RowPatternQuery`. A
    stream's rows come in event-time order, so ORDER BY names one column, ascending: the
    time (`kleene.match_recognize` sorts a table by any ORDER BY)."""
    functions = known_functions(functions)
    if validated:
        _check_calls(clause, functions)
    else:
        check_clause(clause, functions)
    keys = clause.order_by
    if len(keys) > 1 or (keys and keys[0].descending):
        raise error_at(
            "a stream's rows come in event-time order: ORDER BY names its time column, "
            "ascending (kleene.match_recognize sorts a table by any ORDER BY)",
            clause.text,
            keys[1].span if len(keys) > 1 else keys[0].span,
        )
    names = clause.partition_by
    classes = tuple(((E.UNIVERSAL, name),) for name in names)
    partition = Partition(classes, {}, names) if names else None
    return RowPatternQuery(clause, partition, functions)


# ---- compiled conditions --------------------------------------------------------------------

#: A compiled DEFINE condition or measure: its value for the rows, the match's start, its
#: labels so far, the current row (None: an empty match), whether the partition is
#: complete, and the match's number.
RowCheck = Callable[[Sequence[Any], int, Sequence[int], "int | None", bool, int], Any]


class _RowWriter(Writer):
    """Writes a row pattern expression as Python over the rows `R`, start `s`, labels `L`,
    current row `c`, completeness `closed` and match number `n`. A column of the current
    row, of the variable being defined (its row is the current one), and `PREV`/`NEXT` of
    them are read in place; anything that reads how the match mapped rows is handed to the
    interpreter (`RowScope`), leaf by leaf."""

    def __init__(
        self,
        clause: Q.MatchRecognize,
        functions: Mapping[str, Callable[..., Any]],
        own: str | None,
        rows_are: Rows,
    ) -> None:
        super().__init__(functions)
        self.clause = clause
        self.own = own
        self.rows_are = rows_are
        self.members = members_of(clause)

    def _here(self, var: str) -> bool:
        return var in (E.UNIVERSAL, self.own)

    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Any) -> str:
        if isinstance(node, E.Attr) and (ctx != "c" or self._here(node.var)):
            return self._read(ctx, node.attr)
        if isinstance(node, E.Attr) and node.var in self.members:  # a variable's last row
            at = f"p{next(self.numbers)}"
            found = self._nth(node.var, "last", 0, final=False)
            read = self._read(at, node.attr)
            return f"({read} if ({at} := {found}) is not None else None)"
        return self._interpreted(node, ctx)

    def duration(self, node: E.Duration, ctx: Any) -> str:
        """An INTERVAL: a value that timedeltas and seconds both meet (`Interval`)."""
        return self.constant(Interval(node.seconds))

    def _read(self, position: str, attr: str) -> str:
        """Code reading a column of the row at `position` (one that is there)."""
        if self.rows_are is DICT_ROWS:
            return f"R[{position}].get({attr!r})"
        return f"_value(R[{position}], {attr!r})"

    def _nth(self, var: str, func: str, offset: int, final: bool) -> str:
        """Code for the row FIRST or LAST (with `offset`) of `var` reads at, or None."""
        end = "s + len(L) - 1" if final else "c"
        if var == E.UNIVERSAL:
            if func == "first":
                return f"(s + {offset} if s + {offset} <= {end} else None)"
            return f"({end} - {offset} if {end} - {offset} >= s else None)"
        members = self.constant(self.members[var])
        return f"_nth(L, s, {end}, {members}, {offset}, {func == 'first'})"

    def _plain(self, node: E.Navigation) -> str | None:
        """The one variable a navigation's argument reads, when it reads columns only."""
        if any(
            isinstance(n, E.Navigation | E.Classifier | E.RowAggregate | E.MatchNumber)
            for n in E.walk(node.arg)
        ):
            return None
        names = {n.var for n in E.walk(node.arg) if isinstance(n, E.Attr)}
        return names.pop() if len(names) == 1 else None

    def row_term(
        self, node: E.Navigation | E.Classifier | E.MatchNumber | E.RowAggregate, ctx: Any
    ) -> str:
        if isinstance(node, E.MatchNumber):
            return "n"
        if isinstance(node, E.RowAggregate) and ctx == "c" and node.var in self.members:
            plain = node.arg is None or not any(
                isinstance(n, E.Navigation | E.Classifier | E.RowAggregate | E.MatchNumber)
                for n in E.walk(node.arg)
            )
            if plain:
                end = "s + len(L) - 1" if node.final else "c"
                members = self.constant(self.members[node.var])
                if node.arg is None:
                    if node.var == E.UNIVERSAL:
                        return f"({end} - s + 1)"
                    return f"len(_positions(L, s, {end}, {members}))"
                at = f"p{next(self.numbers)}"
                values = (
                    f"[{self.expr(node.arg, at)} for {at} in _positions(L, s, {end}, {members})]"
                )
                return f"_aggregate({self.constant(node)}, {values})"
        if isinstance(node, E.Navigation) and ctx == "c":
            at = f"p{next(self.numbers)}"
            var = self._plain(node)
            if node.func in ("first", "last") and var is not None and var in self.members:
                found = self._nth(var, node.func, node.offset, node.final)
                inner = self.expr(node.arg, at)
                return f"({inner} if ({at} := {found}) is not None else None)"
            if node.func in ("prev", "next"):
                sign = "-" if node.func == "prev" else "+"
                base, arg = None, node.arg
                inner_nav = node.arg
                if var is not None and self._here(var):
                    base = "c"
                elif isinstance(inner_nav, E.Navigation) and inner_nav.func in ("first", "last"):
                    inner_var = self._plain(inner_nav)
                    if inner_var is not None and inner_var in self.members:
                        base = self._nth(
                            inner_var, inner_nav.func, inner_nav.offset, inner_nav.final
                        )
                        arg = inner_nav.arg
                if base is not None:
                    inner = self.expr(arg, at)
                    moved = f"({at} := _moved({base}, {sign}{node.offset}))"
                    return f"({inner} if _valid(R, {moved}, closed) else None)"
        return self._interpreted(node, ctx)

    def _interpreted(self, node: E.Expr, ctx: Any) -> str:
        if ctx != "c":  # pragma: no cover - row_term reads other rows only in place
            raise TypeError(f"cannot compile {node!r} at another row")
        return f"_interpret({self.constant(node)}, R, s, L, c, closed, n)"


def _nth(
    labels: Sequence[int], start: int, end: int, members: frozenset[int], offset: int, first: bool
) -> int | None:
    """The row FIRST(v, offset) (or LAST) reads at: counting the rows of the match from
    `start` to `end` whose label is one of `members`."""
    rows = range(start, end + 1) if first else range(end, start - 1, -1)
    for position in rows:
        if labels[position - start] in members:
            if not offset:
                return position
            offset -= 1
    return None


def _positions(labels: Sequence[int], start: int, end: int, members: frozenset[int]) -> list[int]:
    """The rows of the match from `start` to `end` mapped to one of `members`."""
    return [p for p in range(start, end + 1) if labels[p - start] in members]


def _row_aggregate(node: E.RowAggregate, values: list[Any]) -> Any:
    """An aggregate of the values read at a variable's rows: nulls skipped (but kept by
    array_agg); count and count_if of none are 0, any other aggregate of none is null.
    `max_by(x, y)` is x at the first row whose y is largest (rows with a null y left
    out, x may be null), `arbitrary` the first value that is not null.

    >>> rows = [["p", "A"], ["q", "D"], ["r", None], ["s", "D"]]
    >>> _row_aggregate(E.RowAggregate("max_by", None), rows)
    'q'
    >>> _row_aggregate(E.RowAggregate("bool_and", None), [True, None, False])
    False
    """
    func = node.func
    if node.function is not None:
        return _user_aggregate(node, node.function, values)
    if func == "array_agg":
        return values
    if func in E.PAIR_AGGREGATES:
        pairs = [pair for pair in values if pair[1] is not None]
        if not pairs:
            return None
        best = max if func == "max_by" else min
        return apply(node, lambda ps: best(ps, key=_second)[0], pairs)
    present = [v for v in values if v is not None]
    if func == "count":
        return len(present)
    if func == "count_if":
        return sum(1 for v in present if _truth(node, v))
    if not present:
        return None
    if func == "arbitrary":
        return present[0]
    if func == "bool_and":
        return all(_truth(node, v) for v in present)
    if func == "bool_or":
        return any(_truth(node, v) for v in present)
    return aggregate(node, present)


def _user_aggregate(node: E.RowAggregate, function: Callable[..., Any], rows: list[Any]) -> Any:
    """A user-defined aggregate (`kleene.register_aggregate`): its function called with a
    list of values for each argument (`rows` holds each row's values, as a list); what it
    raises is an `EventError` naming the call."""
    width = len(E.written_args(node))
    columns = [[row[at] for row in rows] for at in range(width)]
    try:
        return function(*columns)
    except Exception as error:
        raise EventError(
            f"{expr_text(node)} failed on {columns!r}: {type(error).__name__}: {error}"
        ) from error


def _second(pair: Sequence[Any]) -> Any:
    return pair[1]


def _truth(node: E.RowAggregate, value: Any) -> bool:
    """A truth value that count_if, bool_and or bool_or reads (a number or a text is an
    error naming the aggregate)."""
    if value is True or value is False:
        return value
    raise EventError(f"{expr_text(node)} reads truth values, not {value!r}")


def _moved(position: int | None, steps: int) -> int:
    """A row `steps` on from `position` (-1, no row, when there is none to move from)."""
    return -1 if position is None else position + steps


def _valid(rows: Sequence[Any], position: int, closed: bool) -> bool:
    """Is there a row at `position`? Past the last one, not yet when more may come."""
    if position < 0:
        return False
    if position >= len(rows):
        if not closed:
            raise NeedRowsError
        return False
    return True


def compile_row_expr(
    expr: E.Expr,
    clause: Q.MatchRecognize,
    functions: Mapping[str, Callable[..., Any]],
    own: str | None = None,
    rows_are: Rows = DICT_ROWS,
    condition: bool = True,
) -> RowCheck:
    """`expr` (a DEFINE condition of variable `own`, or a measure) as a function with the
    value `evaluate` gives in a `RowScope` (for a condition: whether it is true)."""
    writer = _RowWriter(clause, functions, own, rows_are)
    members = writer.members
    value = rows_are.value

    def _interpret(
        node: E.Expr, rows: Sequence[Any], start: int, labels: Sequence[int],
        current: int | None, closed: bool, number: int,
    ) -> Any:  # fmt: skip
        scope = RowScope(
            clause, rows, start, labels, current, number, closed, functions, members, rows_are
        )
        return evaluate(node, scope)

    helpers = {
        "_value": value,
        "_valid": _valid,
        "_interpret": _interpret,
        "_nth": _nth,
        "_moved": _moved,
        "_positions": _positions,
        "_aggregate": _row_aggregate,
    }
    args = "R, s, L, c, closed, n"
    if condition:
        fast, safe = writer.forms(expr, "c")
        source = writer.function("check", args, fast, safe)
    else:
        source = writer.function("check", args, *([f"({writer.expr(expr, 'c')})"] * 2))
    check: RowCheck = writer.load(source, helpers)["check"]
    return check
