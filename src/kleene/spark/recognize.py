"""SQL's row pattern recognition on Spark DataFrames: `match_recognize(df, clause)` runs a
MATCH_RECOGNIZE clause with kleene's `row_pattern` plan, each PARTITION BY key's rows in a
Python worker, in ORDER BY order, and returns the rows SQL says as a DataFrame;
`sql(spark, text)` runs a Spark SQL statement whose MATCH_RECOGNIZE tables run so.

    from kleene.spark import match_recognize
    match_recognize(ticks, '''PARTITION BY symbol ORDER BY ts
        MEASURES FIRST(price) AS top, LAST(price) AS bottom
        PATTERN (A B+) DEFINE B AS price < PREV(price)''').show()
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kleene.compiler.pipeline import parse
from kleene.compiler.query import value_kind
from kleene.errors import PatternError
from kleene.language.sql import ast as Q
from kleene.language.sql.reader import read
from kleene.spark.batch import detect_job

__all__ = ["find_table", "match_recognize", "relations", "sql"]


def match_recognize(df: DataFrame, clause: str | Q.MatchRecognize, **arguments: Any) -> DataFrame:
    """The rows of `clause` (the text inside `MATCH_RECOGNIZE ( … )`, or the whole of it)
    over `df`, as a DataFrame: for ONE ROW PER MATCH the PARTITION BY columns and the
    MEASURES, for ALL ROWS PER MATCH the PARTITION BY columns, the ORDER BY columns, the
    MEASURES and the DataFrame's other columns. Rows that tie on ORDER BY keep the
    DataFrame's order. With one ascending ORDER BY column, it is the events' time (a row
    whose value is null is an error naming it, or skipped and counted with
    on_error="skip"); with several, or DESC, or NULLS FIRST/LAST, each partition's rows are
    numbered in that order first (a window over the DataFrame: one more sort).
    `arguments` as for `detect_job` (`id`, `arrival`, `ts_unit`, `on_error`, ...)."""
    tree = read(clause) if isinstance(clause, str) else clause
    parse(tree)
    keys = tree.order_by
    if not keys:
        raise PatternError(
            "on Spark, ORDER BY names the column that orders each partition's rows (a "
            "DataFrame has no order of its own)",
            tree.text,
            1,
            1,
        )
    if "type" not in arguments and "event_type" not in arguments:
        arguments.update(type=None, event_type="row")
    if len(keys) == 1 and not keys[0].descending and keys[0].nulls_first is None:
        arguments.setdefault("ts", keys[0].column)
        return _dates_kept(df, tree, detect_job(df, tree, **arguments).matches)
    # the rows numbered in ORDER BY order within their partition; the number is the time
    arrival = "kleene_arrival"
    ordered = df.withColumn(arrival, F.monotonically_increasing_id())
    window = Window.partitionBy(*tree.partition_by).orderBy(
        *(_sorted(key) for key in keys), F.col(arrival)
    )
    ordered = ordered.withColumn(_ORDER, F.row_number().over(window)).drop(arrival)
    numbered = replace(tree, order_by=(Q.SortKey(_ORDER),))
    found = detect_job(ordered, numbered, ts=_ORDER, **arguments).matches
    if tree.rows == "one":
        return found
    first = [*tree.partition_by, *(k.column for k in keys if k.column not in tree.partition_by)]
    measures = [m.name for m in tree.measures]
    rest = [c for c in df.columns if c not in first]
    return found.select(*first, *measures, *rest)


def _dates_kept(df: DataFrame, tree: Q.MatchRecognize, found: DataFrame) -> DataFrame:
    """The rows, with a date ORDER BY column (which detect reads as a timestamp, as the
    events' time) a date again, in every column that holds its values."""
    order = tree.order_by[0].column
    if order not in df.columns or not isinstance(df.schema[order].dataType, T.DateType):
        return found
    names = {m.name for m in tree.measures if value_kind(m.expr) == ("column", order)}
    if tree.rows == "all":
        names.add(order)
    return found.select(
        *(F.col(c).cast("date").alias(c) if c in names else F.col(c) for c in found.columns)
    )


#: The column that numbers a partition's rows in ORDER BY order, when there are several keys.
_ORDER = "kleene_order"


def _sorted(key: Q.SortKey) -> Column:
    """An ORDER BY key as Spark sorts it."""
    column = F.col(key.column)
    if key.descending:
        return column.desc_nulls_first() if key.nulls_come_first else column.desc_nulls_last()
    return column.asc_nulls_first() if key.nulls_come_first else column.asc_nulls_last()


def sql(spark: Any, text: str, **arguments: Any) -> DataFrame:
    """A Spark SQL statement in which `FROM relation MATCH_RECOGNIZE ( … ) [AS alias]`
    runs on kleene: each such table (a table or view name, or a subquery, before the
    keyword) becomes a temporary view of `match_recognize`'s rows, innermost first, and
    Spark SQL runs the rest. `arguments` as for `match_recognize`.

        sql(spark, '''SELECT sym, count(*) FROM ticks MATCH_RECOGNIZE (
                          PARTITION BY sym ORDER BY ts MEASURES count(*) AS n
                          PATTERN (A B+) DEFINE B AS price < PREV(price)) AS mr
                      WHERE n > 3 GROUP BY sym''')
    """
    while True:
        found = find_table(text)
        if found is None:
            statement: DataFrame = spark.sql(text)
            return statement
        (start, end), relation, clause = found
        if relation.startswith("("):
            source = sql(spark, relation[1:-1], **arguments)
        else:
            source = spark.table(relation)
        rows = match_recognize(source, clause, **arguments)
        view = f"kleene_match_recognize_{next(_VIEWS)}"
        rows.createOrReplaceTempView(view)
        text = f"{text[:start]}{view}{text[end:]}"


def relations(text: str) -> list[str]:
    """The tables and views a statement's MATCH_RECOGNIZE tables read by name (not
    subqueries), in order, each once.

    >>> relations("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) a, "
    ...           "(SELECT * FROM u MATCH_RECOGNIZE (PATTERN (B))) MATCH_RECOGNIZE (PATTERN (C))")
    ['t', 'u']
    """
    names: list[str] = []
    while (found := find_table(text)) is not None:
        (start, end), relation, _ = found
        if not relation.startswith("(") and relation not in names:
            names.append(relation)
        text = f"{text[:start]}kleene_done{text[end:]}"
    return names


_VIEWS = itertools.count()
_KEYWORD = re.compile(r"\bMATCH_RECOGNIZE\b", re.IGNORECASE)


def find_table(text: str) -> tuple[tuple[int, int], str, str] | None:
    """The first `relation MATCH_RECOGNIZE ( clause )` of SQL text (strings, quoted names
    and comments skipped): where it stands, the relation's text (a name, or a subquery in
    its parentheses) and the clause's, or None when there is none.

    >>> find_table("SELECT * FROM (SELECT * FROM t) MATCH_RECOGNIZE (PATTERN (A)) AS m")
    ((14, 61), '(SELECT * FROM t)', 'PATTERN (A)')
    """
    code, pairs = _code(text)
    keyword = _KEYWORD.search(code)
    if keyword is None:
        return None
    at = keyword.start()
    opening = _skip_space(code, keyword.end())
    if opening >= len(code) or code[opening] != "(":
        raise _positioned(text, keyword.end(), "MATCH_RECOGNIZE needs its clause in ( … )")
    closing = pairs.get(opening)
    if closing is None:
        raise _positioned(text, opening, "this ( is never closed")
    before = at
    while before > 0 and code[before - 1].isspace():
        before -= 1
    if before > 0 and code[before - 1] == ")":
        first = next((o for o, c in pairs.items() if c == before - 1), None)
        if first is None:  # pragma: no cover - every ) found has its (
            raise _positioned(text, before - 1, "this ) closes nothing")
        start = first
    else:
        start = before
        while start > 0 and (code[start - 1].isalnum() or code[start - 1] in "_.`"):
            start -= 1
        if start == before:
            raise _positioned(
                text, at, "MATCH_RECOGNIZE needs a table, a view or a subquery before it"
            )
    return (start, closing + 1), text[start:before], text[opening + 1 : closing]


def _code(text: str) -> tuple[str, dict[int, int]]:
    """The text with strings, quoted names and comments blanked (same length), and its
    parentheses' pairs (opening → closing)."""
    chars = list(text)
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char in "'\"`" or text.startswith(("--", "/*"), index):
            if char == "-":
                end = text.find("\n", index)
                end = size if end < 0 else end
            elif char == "/":
                end = text.find("*/", index + 2)
                end = size if end < 0 else end + 2
            else:
                end = index + 1
                while end < size:
                    if text[end] == char and text[end + 1 : end + 2] == char:
                        end += 2
                        continue
                    if text[end] == char:
                        break
                    end += 1
                end += 1
            # a quoted name stays a name (its letters no keyword), the rest is blanked
            filler = "x" if char == "`" else " "
            for blank in range(index + (char == "`"), min(end, size) - (char == "`")):
                chars[blank] = filler
            index = end
            continue
        index += 1
    code = "".join(chars)
    pairs: dict[int, int] = {}
    opened: list[int] = []
    for index, char in enumerate(code):
        if char == "(":
            opened.append(index)
        elif char == ")" and opened:
            pairs[opened.pop()] = index
    return code, pairs


def _skip_space(code: str, index: int) -> int:
    while index < len(code) and code[index].isspace():
        index += 1
    return index


def _positioned(text: str, offset: int, message: str) -> PatternError:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return PatternError(message, text, line, column)
