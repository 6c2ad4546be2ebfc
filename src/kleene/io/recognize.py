"""SQL's row pattern recognition in-process: `match_recognize(data, clause)` runs a
`MATCH_RECOGNIZE` clause over a pandas DataFrame, an Arrow table, a CSV, JSON lines or
Parquet file, or Python mappings, and returns a pandas DataFrame shaped as SQL says.

>>> import pandas
>>> ticks = pandas.DataFrame({"sym": ["A"] * 6, "t": range(6), "price": [5, 4, 3, 4, 6, 5]})
>>> match_recognize(ticks, '''
...     PARTITION BY sym ORDER BY t
...     MEASURES FIRST(price) AS top, LAST(DOWN.price) AS bottom, LAST(price) AS back
...     PATTERN (START DOWN+ UP+)
...     DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)''')
  sym  top  bottom  back
0   A    5       3     6
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from kleene.compiler.functions import known_functions
from kleene.compiler.row_pattern import check_clause
from kleene.errors import EventError, PatternError
from kleene.events import Event, attributes
from kleene.io.frames import columns_frame, rows_frame
from kleene.io.readers import format_of
from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.language.sql.reader import read
from kleene.language.text import error_at
from kleene.plans.row_pattern.columnar import Columnar
from kleene.plans.row_pattern.partition import Matcher, Progress
from kleene.plans.row_pattern.search import MAX_STEPS

__all__ = ["match_recognize", "output_columns", "sort_rows"]

log = logging.getLogger("kleene")


def match_recognize(
    data: Any,
    clause: str | Q.MatchRecognize,
    *,
    max_steps: int = MAX_STEPS,
    functions: Mapping[str, Callable[..., Any]] | None = None,
) -> Any:
    """The rows of `clause` (the text inside `MATCH_RECOGNIZE ( … )`, or the whole of it)
    over `data`, as a pandas DataFrame: for ONE ROW PER MATCH the PARTITION BY columns and
    the MEASURES; for ALL ROWS PER MATCH the PARTITION BY columns, the ORDER BY columns,
    the MEASURES and the input's other columns.

    Partitions come in the order their first row comes in the input; rows that tie on
    ORDER BY keep their input order. A column of whole numbers with nulls is a nullable
    Int64 column (`kleene.io.frames.rows_frame`). `max_steps` bounds the search from one
    row (a `LimitError` past it). `functions` adds functions the clause may call, as for
    `kleene.compile`."""
    tree = read(clause) if isinstance(clause, str) else clause
    known = known_functions(functions)
    check_clause(tree, known)
    columns, table, rows = _input(data)
    _check_columns(tree, columns, schema=table is not None)
    out: list[dict[str, Any]] = []
    if table is not None and table.num_rows:
        arranged_table, cuts, order = _sorted(table, tree)
        columnar = Columnar.of(tree)
        found = None if columnar is None else columnar.run(arranged_table, cuts)
        if found is not None:
            return columns_frame(found, output_columns(tree, columns))
        arranged = arranged_table.to_pylist()
        partitions = [arranged[a:b] for a, b in pairwise(cuts)]
    elif table is not None:
        arranged, order, partitions = [], None, []
    else:
        arranged, order = rows or [], None
        partitions = list(_partitions(arranged, tree.partition_by))
        for partition in partitions:
            sort_rows(partition, tree.order_by)
    matcher = Matcher(tree, known, max_steps)
    for partition in partitions:
        try:
            out.extend(matcher.advance(Progress(), partition, closed=True))
        except EventError as error:  # name the input's row the error was found in
            raise _located(error, arranged, order, data) from None
    return rows_frame(out, output_columns(tree, columns))


def _located(error: EventError, arranged: list[Any], order: Any, data: Any) -> EventError:
    """The error, naming the input and the row (from 1, in the input's order) it was
    found in: `arranged` holds the rows as they were arranged, `order` each one's place in
    the input (None: the same)."""
    if error.source is None:
        error.source = str(data) if isinstance(data, str | Path) else "the input"
    if error.row is None and error.event is not None:
        at = next((i for i, row in enumerate(arranged) if row is error.event), None)
        if at is not None:
            error.row = (at if order is None else int(order[at])) + 1
    return EventError(
        error.message, source=error.source, row=error.row, field=error.field, late=error.late
    )


def output_columns(clause: Q.MatchRecognize, columns: Iterable[str]) -> list[str]:
    """The output's columns, in SQL's order."""
    measures = [m.name for m in clause.measures]
    if clause.rows == "one":
        return [*clause.partition_by, *measures]
    first = [*clause.partition_by]
    first += [key.column for key in clause.order_by if key.column not in first]
    return [*first, *measures, *(c for c in columns if c not in first)]


def sort_rows(rows: list[Any], keys: tuple[Q.SortKey, ...]) -> None:
    """Sort a partition's rows by ORDER BY, in place: stable, nulls first when ascending
    and last when descending unless NULLS says otherwise.

    >>> rows = [{"t": 2}, {"t": None}, {"t": 1}]
    >>> sort_rows(rows, (Q.SortKey("t", descending=True),)); rows
    [{'t': 2}, {'t': 1}, {'t': None}]
    """
    for key in reversed(keys):
        name = key.column
        nulls = [row for row in rows if row.get(name) is None]
        present = [row for row in rows if row.get(name) is not None]
        try:
            present.sort(key=lambda row: row[name], reverse=key.descending)
        except TypeError:
            kinds = sorted({type(row[name]).__name__ for row in present})
            raise EventError(
                f"ORDER BY {name}: its values cannot be ordered together ({', '.join(kinds)})",
                field=name,
            ) from None
        rows[:] = nulls + present if key.nulls_come_first else present + nulls


def _partitions(rows: list[dict[str, Any]], names: tuple[str, ...]) -> Iterable[list[Any]]:
    if not names:
        return [rows] if rows else []
    groups: dict[Any, list[Any]] = {}
    for number, row in enumerate(rows, 1):
        key = tuple(row.get(name) for name in names)
        try:
            groups.setdefault(key, []).append(row)
        except TypeError:
            bad = next(n for n in names if not _hashable(row.get(n)))
            raise EventError(
                f"PARTITION BY {bad}: row {number} holds {type(row.get(bad)).__name__} "
                f"{row.get(bad)!r}, which is no partition key (text, a number, a time)",
                row=number,
                field=bad,
            ) from None
    return groups.values()


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _sorted(table: Any, clause: Q.MatchRecognize) -> tuple[Any, list[int], Any]:
    """An Arrow table's rows sorted into partitions in ORDER BY order (stable: ties keep
    the input's order; partitions in the order of their first row), where each partition
    starts (and one past the last row), and each row's place in the input (None: the
    same)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    keys: list[tuple[str, str]] = []
    helpers: dict[str, Any] = {}
    if clause.partition_by:
        frame = table.select(list(clause.partition_by)).to_pandas()
        codes = frame.groupby(list(clause.partition_by), sort=False, dropna=False).ngroup()
        helpers["__kleene_partition"] = pa.array(codes.to_numpy(dtype="int64"))
        keys.append(("__kleene_partition", "ascending"))
    for number, key in enumerate(clause.order_by):
        nulls = f"__kleene_null{number}"
        helpers[nulls] = pc.is_null(table.column(key.column))
        keys.append((nulls, "descending" if key.nulls_come_first else "ascending"))
        keys.append((key.column, "descending" if key.descending else "ascending"))
    if not keys:
        return table, [0, table.num_rows], None
    sortable = table.select(sorted({k for k, _ in keys} - set(helpers)))
    for name, column in helpers.items():
        sortable = sortable.append_column(name, column)
    order = pc.sort_indices(sortable, sort_keys=keys)
    arranged = table.take(order)
    places = order.to_numpy()
    if not clause.partition_by:
        return arranged, [0, table.num_rows], places
    codes = helpers["__kleene_partition"].take(order).to_numpy()
    cuts = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), table.num_rows]
    return arranged, cuts, places


def _input(data: Any) -> tuple[list[str], Any, list[dict[str, Any]] | None]:
    """The input's column names, and the input as an Arrow table or else as rows (dicts;
    nulls as None)."""
    import pyarrow as pa

    if isinstance(data, str | Path):
        table = _read_file(Path(data))
    else:
        kind = type(data)
        module = kind.__module__.split(".")[0]
        if module == "pandas" and kind.__name__ == "DataFrame":
            table = pa.Table.from_pandas(data, preserve_index=False)
        elif module == "pyarrow" and kind.__name__ in ("Table", "RecordBatch"):
            table = data if kind.__name__ == "Table" else pa.Table.from_batches([data])
        else:
            columns, rows = _records(data)
            return columns, None, rows
    return list(table.column_names), table, None


def _records(data: Iterable[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """Rows given as Python mappings or kleene `Event`s (an event's type and ts are its
    columns `type` and `ts`)."""
    rows: list[dict[str, Any]] = []
    columns: dict[str, None] = {}
    for number, item in enumerate(data, 1):
        if isinstance(item, Event):
            row = {"type": item.type, "ts": item.ts, **attributes(item)}
        elif isinstance(item, Mapping):
            row = dict(item)
        else:
            raise EventError(
                f"row {number} is {type(item).__name__} {item!r}; a row is a mapping of "
                "column to value (or give a DataFrame, an Arrow table or a file)",
                row=number,
            )
        columns.update(dict.fromkeys(row))
        rows.append(row)
    return list(columns), rows


def _read_file(path: Path) -> Any:
    """A file as an Arrow table, its format by its extension."""
    import pyarrow as pa
    import pyarrow.csv
    import pyarrow.json
    import pyarrow.parquet

    if not path.exists():
        raise EventError(f"no such file: {path}", source=str(path))
    kind = format_of(path)
    readers: dict[str, Callable[[Any], Any]] = {
        "csv": pyarrow.csv.read_csv,
        "jsonl": pyarrow.json.read_json,
        "parquet": pyarrow.parquet.read_table,
    }
    try:
        return readers[kind](str(path))
    except (pa.ArrowInvalid, OSError) as error:
        raise EventError(f"cannot read {path}: {error}", source=str(path)) from None


def _check_columns(clause: Q.MatchRecognize, columns: list[str], schema: bool = True) -> None:
    """Every column the clause names is one of the input's (of a table: else an error with
    a caret; of rows given as mappings, which may leave a value out: else a warning, once);
    a measure of ALL ROWS PER MATCH is not (the row's own column would be hidden)."""
    known = set(columns)

    def missing(name: str, span: E.Span | None) -> PatternError | None:
        close = difflib.get_close_matches(name, columns, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        listed = ", ".join(columns[:20]) + (", …" if len(columns) > 20 else "")
        found = error_at(
            f"the input has no column {name!r}{hint}; its columns are {listed}", clause.text, span
        )
        if schema:
            return found
        if columns:  # (no rows at all: there is nothing a column could be missing from)
            log.warning("%s (no row carries it: it reads as null)", found)
        return None

    spans = {key.column: key.span for key in clause.order_by}
    names = [(name, spans.get(name, clause.span)) for name in (*clause.partition_by, *spans)]
    expressions = [d.condition for d in clause.defines] + [m.expr for m in clause.measures]
    names += [
        (node.attr, node.span)
        for expr in expressions
        for node in E.walk(expr)
        if isinstance(node, E.Attr)
    ]
    for name, span in names:
        if name not in known:
            error = missing(name, span)
            if error is not None:
                raise error
            known.add(name)  # warned once
    if clause.rows == "all":
        for measure in clause.measures:
            if measure.name in known:
                raise error_at(
                    f"the measure {measure.name!r} has an input column's name; ALL ROWS PER "
                    "MATCH shows both, so name the measure otherwise",
                    clause.text,
                    measure.span,
                )
