"""A row pattern run column-wise over an Arrow table, when its clause allows: the DEFINE
conditions computed in Arrow for every row at once, the preferred matches found by Python's
`re` over a string of one character a row, and the MEASURES computed in Arrow for every
match at once. It gives exactly what the search (`search.py`, `partition.py`) gives, for
the clauses it takes; `Columnar.of` is None for the others, and `run` is None where the
data asks for the search (an overflow in Arrow, a skip the search refuses with an error).

Why `re` finds SQL's preferred match: a row is a character that stands for the set of
variables whose conditions it meets, a variable is the character class of the sets that
hold it, and the row pattern is the regular expression over those classes. Python's `re`
is a backtracking matcher that tries alternatives left to right and quantifiers greedy or
reluctant, and returns the first way to match, from the leftmost row where one exists:
the preference order SQL defines. A capture group around each variable (and its quantifier)
says which rows it took.

What it takes:
- DEFINE conditions that read the row and its neighbours only (`PREV`, `NEXT`), that
  `kleene.compiler.arrow` translates, over at most eight defined variables;
- a row pattern whose quantifiers apply to one variable each (or `?` to a group that
  cannot be empty), with PERMUTE of at most four items: then no iteration can be empty, as
  the two engines would differ there, and the capture groups name every row's variable;
- ONE ROW PER MATCH, with measures over those groups that Arrow computes.

It keeps `re`'s backtracking linear in the rows: where a loop's variable and a variable
that may follow it hold on one same row of the data, or a loop's variable holds on a run of
more than `LONGEST_RUN` rows, `run` leaves the clause to the search (which remembers failed
states and failed loops, and bounds its steps).

>>> import pyarrow as pa
>>> from kleene.language.sql.reader import read
>>> clause = read('''MEASURES FIRST(x) AS top, LAST(DOWN.x) AS bottom, count(*) AS n
...     PATTERN (STRT DOWN+ UP+) DEFINE DOWN AS x < PREV(x), UP AS x > PREV(x)''')
>>> columnar = Columnar.of(clause)
>>> columnar.groups  # a capture group for each place of a variable
[_Occurrence(var=0, loops=False), _Occurrence(var=1, loops=True), _Occurrence(var=2, loops=True)]
>>> found = columnar.run(pa.table({"x": [5, 4, 3, 4, 6, 5]}), [0, 6])
>>> {name: column.to_pylist() for name, column in found.items()}
{'top': [5], 'bottom': [3], 'n': [5]}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, permutations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kleene.compiler.arrow import ArrowValue, arrow_value, boolean, column_kind
from kleene.compiler.row_pattern import history_free, members_of, navigated
from kleene.language import expr as E
from kleene.language.sql import ast as Q

__all__ = ["Columnar"]

#: The most variables with a DEFINE condition (a row's character stands for a set of them).
MAX_DEFINED = 8
#: The longest run of rows a loop's variable may hold on (a longer one is left to the
#: search, which walks it once where `re` would walk it from each of its rows).
LONGEST_RUN = 256
#: The most items of a PERMUTE written out as alternatives.
MAX_PERMUTE = 4
#: The character of the row that meets no condition; the others follow it.
_BASE = 0x100
#: The character between partitions (`^` and `$` hold next to it).
_BETWEEN = "\n"


@dataclass(frozen=True)
class _Occurrence:
    """A capture group: the rows one place of the pattern maps to its variable (`loops`:
    its quantifier may take more than one row)."""

    var: int
    loops: bool


@dataclass
class _Regex:
    """A row pattern written as a regular expression over row characters, with its capture
    groups and which may follow which (to tell a loop from its exit on the data)."""

    bits: Mapping[int, int]
    variables: tuple[str, ...]
    groups: list[_Occurrence] = field(default_factory=list)
    #: (a, b): group b may take the row right after group a's last one.
    follows: set[tuple[int, int]] = field(default_factory=set)

    def write(self, node: Q.RowPattern) -> tuple[str, bool, set[int], set[int]] | None:
        """The expression of `node`, whether it may match no row, its first groups and its
        last groups (None: the node is not taken)."""
        match node:
            case Q.Label():
                return self.group(node, 1, 1, True)
            case Q.Repeat(body=Q.Label() as label, min=low, max=high, greedy=greedy):
                return self.group(label, low, high, greedy)
            case Q.Repeat(body=body, min=low, max=1, greedy=greedy):
                inner = self.write(body)
                if inner is None or inner[1]:
                    return None
                text, _, first, last = inner
                lazy = "" if greedy else "?"
                return f"(?:{text}){{{low},1}}{lazy}", low == 0, first, last
            case Q.Concat(items=items):
                return self.concat(items)
            case Q.Alternation(items=items):
                return self.alternatives(items)
            case Q.Permute(items=items) if len(items) <= MAX_PERMUTE:
                return self.alternatives(tuple(Q.Concat(order) for order in permutations(items)))
            case Q.Anchor(kind=kind):
                return kind, True, set(), set()
            case Q.Exclusion(body=body):  # it hides rows from ALL ROWS only, never run here
                return self.write(body)
        return None

    def group(
        self, label: Q.Label, low: int, high: int | None, greedy: bool
    ) -> tuple[str, bool, set[int], set[int]]:
        var = self.variables.index(label.name)
        number = len(self.groups)
        self.groups.append(_Occurrence(var, high is None or high > 1))
        bit = self.bits.get(var)
        if bit is None:
            chars = "."
        else:
            width = 1 << len(self.bits)
            chars = "[" + "".join(chr(_BASE + m) for m in range(width) if m >> bit & 1) + "]"
        if (low, high) == (1, 1):
            quantifier = ""
        else:
            quantifier = f"{{{low},{'' if high is None else high}}}" + ("" if greedy else "?")
        return f"({chars}{quantifier})", low == 0, {number}, {number}

    def concat(self, items: Sequence[Q.RowPattern]) -> tuple[str, bool, set[int], set[int]] | None:
        text, nullable, first, last = "", True, set[int](), set[int]()
        for item in items:
            written = self.write(item)
            if written is None:
                return None
            part, empty, head, tail = written
            self.follows.update((a, b) for a in last for b in head)
            text += part
            if nullable:
                first |= head
            last = (last | tail) if empty else tail
            nullable = nullable and empty
        return f"(?:{text})", nullable, first, last

    def alternatives(
        self, items: Sequence[Q.RowPattern]
    ) -> tuple[str, bool, set[int], set[int]] | None:
        texts, nullable, first, last = [], False, set[int](), set[int]()
        for item in items:
            written = self.write(item)
            if written is None:
                return None
            texts.append(written[0])
            nullable = nullable or written[1]
            first |= written[2]
            last |= written[3]
        return f"(?:{'|'.join(texts)})", nullable, first, last


class Columnar:
    """A clause compiled to run column-wise (see the module's docstring)."""

    def __init__(
        self, clause: Q.MatchRecognize, regex: _Regex, source: str, nullable: bool
    ) -> None:
        self.clause = clause
        #: Whether the pattern may match no row.
        self.nullable = nullable
        self.variables = clause.variables
        self.bits = regex.bits
        self.groups = regex.groups
        #: The pairs of variables (by index) a loop and what may follow it map: where one
        #: row meets both, the search takes the clause.
        self.exits = {
            (regex.groups[a].var, regex.groups[b].var)
            for a, b in regex.follows
            if regex.groups[a].loops
        }
        self.regex = re.compile(source, re.MULTILINE)
        self.members = members_of(clause)

    @classmethod
    def of(cls, clause: Q.MatchRecognize) -> Columnar | None:
        """The clause compiled, or None when it is one the search must run."""
        if clause.rows != "one" or clause.within is not None or not history_free(clause):
            return None
        defined = [v for v in clause.variables if clause.definition(v) is not None]
        if len(defined) > MAX_DEFINED:
            return None
        bits = {clause.variables.index(v): bit for bit, v in enumerate(defined)}
        regex = _Regex(bits, clause.variables)
        written = regex.write(clause.pattern)
        if written is None:
            return None
        return cls(clause, regex, written[0], written[1])

    # -- the run ---------------------------------------------------------------------------

    def run(self, table: pa.Table, cuts: Sequence[int]) -> dict[str, pa.Array] | None:
        """The output columns (partition columns, then measures) of the matches in `table`,
        whose rows are sorted into partitions, partition p being rows cuts[p] to
        cuts[p + 1]; None where the search must decide."""
        try:
            return self._run(table, np.asarray(cuts, dtype=np.int64))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, _DeclinedError):
            # an overflow in checked arithmetic, a kernel Arrow lacks for a type, or data the
            # column-wise run declines: the search decides, and names any error by its row
            return None

    def _run(self, table: pa.Table, cuts: np.ndarray) -> dict[str, pa.Array]:
        n = table.num_rows
        sizes = np.diff(cuts)
        part = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        rows = _Rows(table, part)
        masks = np.zeros(n, dtype=np.int64)
        for var, bit in self.bits.items():
            condition = self.clause.definition(self.variables[var])
            assert condition is not None
            value = arrow_value(condition, _row_leaf(rows, self.variables[var]))
            if value is None or value[1] not in ("bool", "null"):
                raise _DeclinedError
            holds = pc.fill_null(boolean(value), False)
            if isinstance(holds, pa.Scalar):
                masks |= (1 << bit) if holds.as_py() else 0
            else:
                masks |= np.asarray(holds.to_numpy(zero_copy_only=False), dtype=np.int64) << bit
        self._check_exits(np.unique(masks))
        self._check_runs(masks, n)
        codes = (masks + _BASE).astype(np.uint32)
        codes = np.insert(codes, cuts[1:-1], ord(_BETWEEN))
        text = codes.astype("<u4").tobytes().decode("utf-32-le")
        matches = self._matches(text, cuts)
        return _Measures(self, rows, matches).columns()

    def _check_exits(self, present: np.ndarray) -> None:
        """Decline where a loop's variable and a variable that may follow it hold on one
        row: `re` would try every split of the run between them."""
        for a, b in self.exits:
            both = np.ones(len(present), dtype=bool)
            for var in (a, b):
                bit = self.bits.get(var)
                if bit is not None:
                    both &= (present >> bit & 1).astype(bool)
            if both.any():
                raise _DeclinedError

    def _check_runs(self, masks: np.ndarray, n: int) -> None:
        """Decline where a loop's variable holds on a run of more than `LONGEST_RUN` rows:
        where nothing after the loop ends such a run, `re` walks it again from each of its
        rows (the search remembers where a loop failed, and walks it once)."""
        for var in {place.var for place in self.groups if place.loops}:
            bit = self.bits.get(var)
            if bit is None:
                if n > LONGEST_RUN:
                    raise _DeclinedError
                continue
            flags = (masks >> bit & 1).astype(np.int8)
            edges = np.diff(np.concatenate(([0], flags, [0])))
            lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
            if len(lengths) and int(lengths.max()) > LONGEST_RUN:
                raise _DeclinedError

    def _matches(self, text: str, cuts: np.ndarray) -> _Found:
        """The preferred matches, the search going on by the skip rule. A match never
        holds the character between partitions, so one pass over the whole string finds
        every partition's (an empty match there, at a partition's end, holds no row: it
        is passed over, as the search never starts past the last row)."""
        regex, skip, end = self.regex, self.clause.skip, len(text)
        found: list[tuple[tuple[int, int], ...]]
        if not self.nullable and skip.to == "past_last":
            found = [match.regs for match in regex.finditer(text)]
        else:
            found = []
            members = self.members[skip.var] if skip.var is not None else frozenset()
            groups = [g + 1 for g, place in enumerate(self.groups) if place.var in members]
            search, position = regex.search, 0
            while position < end:
                match = search(text, position)
                if match is None:
                    break
                start, stop = match.span()
                if start == stop and (start == end or text[start] == _BETWEEN):
                    position = start + 1
                    continue
                found.append(match.regs)
                if stop == start or skip.to == "next_row":
                    position = start + 1
                elif skip.to == "past_last":
                    position = stop
                else:
                    position = self._skipped_to(match.regs, groups)
        size = 2 * (len(self.groups) + 1)
        flat = chain.from_iterable(chain.from_iterable(found))
        regs = np.fromiter(flat, dtype=np.int64, count=size * len(found))
        regs = regs.reshape(len(found), len(self.groups) + 1, 2)
        between = cuts[1:-1] + np.arange(len(cuts) - 2)  # where each partition's string ends
        return _Found(regs, np.searchsorted(between, regs[:, 0, 0], side="right"))

    def _skipped_to(self, regs: tuple[tuple[int, int], ...], groups: list[int]) -> int:
        """Where AFTER MATCH SKIP TO FIRST or LAST v goes on (declined where the search
        raises its error: v maps no row, or the match's first row)."""
        spans = [regs[g] for g in groups if regs[g][1] > regs[g][0]]
        if not spans:
            raise _DeclinedError
        if self.clause.skip.to == "first":
            target = min(start for start, _ in spans)
        else:
            target = max(stop for _, stop in spans) - 1
        if target == regs[0][0]:
            raise _DeclinedError
        return target


class _DeclinedError(Exception):
    """The data asks for the search."""


@dataclass
class _Found:
    """The matches: `regs` [match, group (0: the whole match), start or end], positions in
    the string; `parts` each one's partition."""

    regs: np.ndarray
    parts: np.ndarray


class _Rows:
    """The table's rows, with each one's partition."""

    def __init__(self, table: pa.Table, part: np.ndarray) -> None:
        self.table = table
        self.part = part
        self.n = table.num_rows

    def column(self, name: str) -> ArrowValue:
        if name not in self.table.column_names:
            raise _DeclinedError
        column = self.table.column(name)
        kind = column_kind(column.type)
        if kind is None:
            raise _DeclinedError
        return column, kind

    def at(self, value: ArrowValue, positions: np.ndarray) -> ArrowValue:
        """The value read at each of `positions` (null at -1)."""
        array, kind = value
        missing = positions < 0
        if isinstance(array, pa.Scalar):
            if not missing.any():
                return pa.array([array.as_py()] * len(positions), array.type), kind
            return pc.if_else(pa.array(~missing), array, pa.scalar(None, array.type)), kind
        index = pa.array(np.where(missing, 0, positions), mask=missing)
        return pc.take(array, index), kind

    def shifted(self, steps: int) -> np.ndarray:
        """Each row moved by `steps` rows in its partition (-1 where there is no row)."""
        n, part = self.n, self.part
        target = np.arange(n, dtype=np.int64) + steps
        valid = np.zeros(n, dtype=bool)
        if steps >= 0:
            valid[: max(n - steps, 0)] = part[steps:] == part[: max(n - steps, 0)]
        else:
            valid[-steps:] = part[: n + steps] == part[-steps:]
        return np.where(valid, target, -1)

    def moved(self, base: np.ndarray, steps: int) -> np.ndarray:
        """`base` moved by `steps` rows in its partition (-1 where there is no row)."""
        target = base + steps
        inside = (base >= 0) & (target >= 0) & (target < self.n)
        safe = np.where(inside, target, 0)
        same = inside & (self.part[safe] == self.part[np.where(base >= 0, base, 0)])
        return np.where(same, target, -1)


def _row_leaf(
    rows: _Rows, own: str | None, every: bool = False
) -> Callable[[E.Expr], ArrowValue | None]:
    """Leaves of an expression read at every row as a current row: its columns (of no
    variable, or of `own`, the one being defined; of any variable when `every`, for an
    argument read at rows a navigation or aggregate chose), and PREV/NEXT of them."""

    def leaf(node: E.Expr) -> ArrowValue | None:
        match node:
            case E.Attr(var=var, attr=attr) if every or var in (E.UNIVERSAL, own):
                return rows.column(attr)
            case E.Navigation(func="prev" | "next" as func, arg=arg, offset=offset):
                if any(isinstance(n, E.Navigation) for n in E.walk(arg)):
                    return None
                if not (navigated(node) or set()) <= {E.UNIVERSAL, own}:
                    return None
                inner = arrow_value(arg, leaf)
                if inner is None:
                    return None
                return rows.at(inner, rows.shifted(-offset if func == "prev" else offset))
        return None

    return leaf


class _Measures:
    """The measures of ONE ROW PER MATCH, for every match at once (RUNNING and FINAL are
    one at the last row)."""

    def __init__(self, columnar: Columnar, rows: _Rows, found: _Found) -> None:
        self.columnar = columnar
        self.rows = rows
        regs = found.regs - found.parts[:, None, None]
        regs[found.regs < 0] = -1
        self.start, self.end = regs[:, 0, 0], regs[:, 0, 1]
        self.g_start, self.g_end = regs[:, 1:, 0], regs[:, 1:, 1]
        self.g_len = np.maximum(self.g_end - self.g_start, 0)
        self.parts = found.parts
        self.count = len(found.parts)

    def columns(self) -> dict[str, pa.Array]:
        clause = self.columnar.clause
        out: dict[str, pa.Array] = {}
        for name in clause.partition_by:
            out[name] = self.rows.at(self.rows.column(name), self.start)[0]
        for measure in clause.measures:
            value = arrow_value(measure.expr, self.leaf)
            if value is None:
                raise _DeclinedError
            array = value[0]
            if isinstance(array, pa.Scalar):
                array = pa.array([array.as_py()] * self.count, array.type)
            out[measure.name] = array
        return out

    # the rows of a variable in each match
    def _groups(self, var: str) -> list[int]:
        members = self.columnar.members[var]
        return [g for g, o in enumerate(self.columnar.groups) if o.var in members]

    def last(self, var: str) -> np.ndarray:
        if var == E.UNIVERSAL:
            return np.where(self.end > self.start, self.end - 1, -1)
        groups = self._groups(var)
        if not groups:
            return np.full(self.count, -1, dtype=np.int64)
        ends = np.where(self.g_len[:, groups] > 0, self.g_end[:, groups] - 1, -1)
        return np.asarray(ends.max(axis=1), dtype=np.int64)

    def first(self, var: str) -> np.ndarray:
        if var == E.UNIVERSAL:
            return np.where(self.end > self.start, self.start, -1)
        groups = self._groups(var)
        if not groups:
            return np.full(self.count, -1, dtype=np.int64)
        big = np.iinfo(np.int64).max
        starts = np.where(self.g_len[:, groups] > 0, self.g_start[:, groups], big).min(axis=1)
        return np.where(starts == big, -1, starts)

    def size(self, var: str) -> np.ndarray:
        if var == E.UNIVERSAL:
            return np.asarray(self.end - self.start, dtype=np.int64)
        return np.asarray(self.g_len[:, self._groups(var)].sum(axis=1), dtype=np.int64)

    def nth(self, var: str, offset: int, from_first: bool) -> np.ndarray:
        """The row FIRST(var, offset) (or LAST) reads at, -1 where there is none."""
        if offset and var != E.UNIVERSAL and len(self._groups(var)) > 1:
            raise _DeclinedError  # the rows lie in several groups
        base = self.first(var) if from_first else self.last(var)
        moved = base + offset if from_first else base - offset
        return np.where((base >= 0) & (offset < self.size(var)), moved, -1)

    def row_values(self, arg: E.Expr) -> ArrowValue:
        """`arg` (of one row's columns) at every row of the table."""
        value = arrow_value(arg, _row_leaf(self.rows, None, every=True))
        if value is None:
            raise _DeclinedError
        return value

    def position(self, node: E.Navigation) -> tuple[np.ndarray, E.Expr]:
        """The row a navigation reads at, and what it reads there."""
        if node.func in ("first", "last"):
            (var,) = navigated(node) or {E.UNIVERSAL}
            return self.nth(var, node.offset, node.func == "first"), node.arg
        arg = node.arg
        if isinstance(arg, E.Navigation):
            base, read = self.position(arg)
        else:
            (var,) = navigated(node) or {E.UNIVERSAL}
            base, read = self.last(var), arg
        steps = -node.offset if node.func == "prev" else node.offset
        return self.rows.moved(base, steps), read

    def leaf(self, node: E.Expr) -> ArrowValue | None:
        match node:
            case E.Attr(var=var, attr=attr):
                return self.rows.at(self.rows.column(attr), self.last(var))
            case E.Navigation():
                if any(
                    isinstance(n, E.Classifier | E.MatchNumber | E.RowAggregate)
                    for n in E.walk(node.arg)
                ):
                    return None
                positions, read = self.position(node)
                return self.rows.at(self.row_values(read), positions)
            case E.MatchNumber():
                return pa.array(self._numbers()), "int"
            case E.Classifier(var=var):
                return self._classifier(var), "string"
            case E.RowAggregate(func=func, arg=arg, var=var):
                return self._aggregate(func, arg, var)
        return None

    def _numbers(self) -> np.ndarray:
        """Each match's number in its partition, from 1."""
        if not self.count:
            return np.zeros(0, dtype=np.int64)
        new = np.concatenate(([True], self.parts[1:] != self.parts[:-1]))
        firsts = np.flatnonzero(new)
        return np.arange(self.count) - np.repeat(firsts, np.diff([*firsts, self.count])) + 1

    def _classifier(self, var: str) -> pa.Array:
        groups = list(range(len(self.columnar.groups))) if var == E.UNIVERSAL else self._groups(var)
        names = [self.columnar.variables[self.columnar.groups[g].var] for g in groups]
        if not groups:
            return pa.nulls(self.count, pa.string())
        ends = np.where(self.g_len[:, groups] > 0, self.g_end[:, groups], -1)
        which = ends.argmax(axis=1)
        chosen = pa.array(names).take(pa.array(which))
        return pc.if_else(pa.array(ends.max(axis=1) >= 0), chosen, pa.scalar(None, pa.string()))

    def _aggregate(self, func: str, arg: E.Expr | None, var: str) -> ArrowValue:
        if arg is None:
            return pa.array(self.size(var)), "int"
        if func not in ("count", "sum", "avg", "min", "max"):
            raise _DeclinedError
        if any(
            isinstance(n, E.Navigation | E.Classifier | E.MatchNumber | E.RowAggregate)
            for n in E.walk(arg)
        ):
            raise _DeclinedError
        values, kind = self.row_values(arg)
        rows, owners = self._rows_of(var)
        if isinstance(values, pa.Scalar):
            values = pa.array([values.as_py()] * self.rows.n, values.type)
        taken = values.take(pa.array(rows))
        if func in ("sum", "avg"):
            if kind != "int":
                raise _DeclinedError  # Python adds floats in its own order (and since 3.12 exactly)
            magnitude = pc.max(pc.abs_checked(taken)).as_py() or 0
            if magnitude * max(1, int(self.size(var).max(initial=0))) >= 2**53:
                raise _DeclinedError
        if func in ("min", "max") and kind == "float" and pc.any(pc.is_nan(taken)).as_py():
            raise _DeclinedError  # Python's min and max of NaN depend on the order
        if func in ("min", "max") and kind not in ("int", "float", "string", "bool"):
            raise _DeclinedError
        grouped = pa.table({"m": pa.array(owners), "v": taken}).group_by("m")
        if func == "avg":
            done = grouped.aggregate([("v", "sum"), ("v", "count")])
            result = pc.divide(
                pc.cast(done.column("v_sum"), pa.float64()),
                pc.cast(done.column("v_count"), pa.float64()),
            )
            out_kind = "float"
        else:
            done = grouped.aggregate([("v", func)])
            result = done.column(f"v_{func}")
            out_kind = "int" if func == "count" else kind
        place = np.full(self.count, -1, dtype=np.int64)
        place[done.column("m").to_numpy()] = np.arange(done.num_rows)
        spread = self.rows.at((result.combine_chunks(), out_kind), place)[0]
        if func == "count":
            spread = pc.fill_null(spread, 0)
        return spread, out_kind

    def _rows_of(self, var: str) -> tuple[np.ndarray, np.ndarray]:
        """Each match's rows mapped to `var`, and the match each is of."""
        if var == E.UNIVERSAL:
            starts, lengths = self.start, self.end - self.start
            owners = np.arange(self.count)
        else:
            groups = self._groups(var)
            starts = self.g_start[:, groups].ravel()
            lengths = self.g_len[:, groups].ravel()
            owners = np.repeat(np.arange(self.count), len(groups))
        total = int(lengths.sum())
        offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return np.repeat(starts, lengths) + offsets, np.repeat(owners, lengths)
