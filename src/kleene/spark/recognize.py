"""SQL's row pattern recognition on Spark DataFrames: `match_recognize(df, clause)` runs a
MATCH_RECOGNIZE clause with kleene's `row_pattern` plan, each PARTITION BY key's rows in a
Python worker, in ORDER BY order, and returns the rows SQL says as a DataFrame.

    from kleene.spark import match_recognize
    match_recognize(ticks, '''PARTITION BY symbol ORDER BY ts
        MEASURES FIRST(price) AS top, LAST(price) AS bottom
        PATTERN (A B+) DEFINE B AS price < PREV(price)''').show()
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from kleene.compiler.pipeline import parse
from kleene.errors import PatternError
from kleene.language.sql import ast as Q
from kleene.language.sql.reader import read
from kleene.spark.batch import detect_job

__all__ = ["match_recognize"]


def match_recognize(df: DataFrame, clause: str | Q.MatchRecognize, **arguments: Any) -> DataFrame:
    """The rows of `clause` (the text inside `MATCH_RECOGNIZE ( … )`, or the whole of it)
    over `df`, as a DataFrame: for ONE ROW PER MATCH the PARTITION BY columns and the
    MEASURES, for ALL ROWS PER MATCH the PARTITION BY columns, the ORDER BY column, the
    MEASURES and the DataFrame's other columns. ORDER BY names one column, ascending (a
    DataFrame has no order of its own); rows that tie on it keep the DataFrame's order.
    `arguments` as for `detect_job` (`id`, `arrival`, `ts_unit`, `on_error`, ...)."""
    tree = read(clause) if isinstance(clause, str) else clause
    parse(tree)
    if not tree.order_by:
        raise PatternError(
            "on Spark, ORDER BY names the column that orders each partition's rows (a "
            "DataFrame has no order of its own)",
            tree.text,
            1,
            1,
        )
    arguments.setdefault("ts", tree.order_by[0].column)
    if "type" not in arguments and "event_type" not in arguments:
        arguments.update(type=None, event_type="row")
    return detect_job(df, tree, **arguments).matches
