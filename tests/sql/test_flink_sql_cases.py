"""Cases from Flink SQL's own tests of MATCH_RECOGNIZE (`MatchRecognizeITCase`), each
query's clause run by `kleene.match_recognize` on the test's rows (as a table: the
processing-time order is the rows' order, written as a column), with Flink's expected rows.

Cases that call user-defined aggregates or window the stream around the clause are left
out, but for one that groups the matches by `MATCH_ROWTIME()` (pandas groups them here).
One case keeps the standard's answer where Flink's differs
(`test_flinks_greedy_quantifier_does_not_give_back_rows`).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any

import pandas as pd
import pytest

import kleene

N = None
TICKER = [("ACME", 1, 19, 1), ("ACME", 2, 17, 2), ("ACME", 3, 13, 3), ("ACME", 4, 20, 4)]
TICKER += [("ACME", 5, 20, 5), ("ACME", 6, 26, 6), ("ACME", 7, 20, 7), ("ACME", 8, 25, 8)]
FALLING = list(
    zip(range(1, 9), ["ACME"] * 8, range(1, 9), [20, 19, 18, 17, 16, 15, 14, 20], strict=True)
)
OFFSETS = ", ".join(
    [f"FIRST(id, {k}) AS id{k}" for k in range(8)]
    + [f"LAST(id, {k}) AS id{k + 8}" for k in range(8)]
)

#: (Flink's test, the rows, their columns, the clause, the columns read, the rows expected)
CASES: list[tuple[str, list[tuple[Any, ...]], list[str], str, list[str], list[tuple[Any, ...]]]]
CASES = [
    ("testSimplePattern", list(zip(range(1, 10), "azbcdabch", strict=True)), ["id", "name"],
     'ORDER BY id MEASURES `A"`.id AS aid, l.id AS bid, C.id AS cid PATTERN (`A"` l C) '
     "DEFINE `A\"` AS name = 'a', l AS name = 'b', C AS name = 'c'",
     ["aid", "bid", "cid"], [(6, 7, 8)]),
    ("testSimplePatternWithNulls",
     [(1, "a", N), (2, "b", N), (3, "c", N), (4, "d", N), (5, N, N), (6, "a", N), (7, "b", N),
      (8, "c", N), (9, N, N)], ["id", "name", "nullField"],
     "ORDER BY id MEASURES A.id AS aid, A.nullField AS aNull, LAST(B.nullField) AS bNull, "
     "C.id AS cid PATTERN (A B C) DEFINE A AS name = 'a' AND nullField IS NULL, "
     "B AS name = 'b' AND LAST(A.nullField) IS NULL, C AS name = 'c'",
     ["aid", "bNull", "cid", "aNull"], [(1, N, 3, N), (6, N, 8, N)]),
    ("testCodeSplitsAreProperlyGenerated",
     [(1, "a", "key1", "second_key3"), (2, "b", "key1", "second_key3"),
      (3, "c", "key1", "second_key3"), (4, "d", "key", "second_key"),
      (5, "e", "key", "second_key"), (6, "a", "key2", "second_key4"),
      (7, "b", "key2", "second_key4"), (8, "c", "key2", "second_key4"),
      (9, "f", "key", "second_key")], ["id", "name", "key1", "key2"],
     "PARTITION BY key1, key2 ORDER BY id MEASURES A.id AS aid, A.key1 AS akey1, "
     "LAST(B.id) AS bid, C.id AS cid, C.key2 AS ckey2 PATTERN (A B C) "
     "DEFINE A AS name = 'a' AND key1 LIKE '%key%' AND id > 0, "
     "B AS name = 'b' AND LAST(A.name, 2) IS NULL, C AS name = 'c' AND LAST(A.name) = 'a'",
     ["key1", "key2", "aid", "akey1", "bid", "cid", "ckey2"],
     [("key1", "second_key3", 1, "key1", 2, 3, "second_key3"),
      ("key2", "second_key4", 6, "key2", 7, 8, "second_key4")]),
    ("testEventsAreProperlyOrdered",
     [(2, 12, 1, "a", 1), (1, 11, 2, "b", 2), (3, 10, 3, "c", 3), (4, 8, 4, "a", 4),
      (4, 9, 5, "b", 5), (5, 7, 6, "c", 6), (6, 6, 8, "a", 7), (6, 6, 7, "b", 8),
      (8, 4, 9, "c", 9), (9, 3, 10, "a", 10), (10, 2, 11, "b", 11), (11, 1, 12, "c", 12)],
     ["rowtime", "secondaryOrder", "ternaryOrder", "name", "id"],
     "ORDER BY rowtime, secondaryOrder DESC, ternaryOrder ASC "
     "MEASURES A.id AS aid, B.id AS bid, C.id AS cid PATTERN (A B C) "
     "DEFINE A AS name = 'a', B AS name = 'b', C AS name = 'c'",
     ["aid", "bid", "cid"], [(10, 11, 12)]),
    ("testPartitionByWithParallelSource", TICKER[:4], ["symbol", "rowtime", "price", "tax"],
     "PARTITION BY symbol ORDER BY rowtime MEASURES DOWN.tax AS bottom_tax, UP.tax AS end_tax "
     "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (DOWN UP) "
     "DEFINE DOWN AS DOWN.price = 13, UP AS UP.price = 20",
     ["symbol", "bottom_tax", "end_tax"], [("ACME", 3, 4)]),
    ("testLogicalOffsetsWithStarVariable", FALLING, ["id", "symbol", "tstamp", "price"],
     f"ORDER BY tstamp MEASURES {OFFSETS} ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
     'PATTERN (`DOWN"`{2,} UP) DEFINE `DOWN"` AS price < LAST(price, 1) OR LAST(price, 1) '
     "IS NULL, UP AS price = FIRST(price) AND price > FIRST(price, 3) AND price = LAST(price, 7)",
     [f"id{k}" for k in range(16)], [(1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1)]),
    ("testLogicalOffsetOutsideOfRangeInMeasures", TICKER[:4],
     ["symbol", "tstamp", "price", "tax"],
     "ORDER BY tstamp MEASURES FIRST(DOWN.price) AS first, LAST(DOWN.price) AS last, "
     "FIRST(DOWN.price, 5) AS nullPrice ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
     "PATTERN (DOWN{2,} UP) DEFINE DOWN AS price < LAST(DOWN.price, 1) OR "
     "LAST(DOWN.price, 1) IS NULL, UP AS price > LAST(DOWN.price)",
     ["first", "last", "nullPrice"], [(19, 13, N)]),
    ("testAggregatesWithNullInputs",
     [(1, "a", 10), (2, "z", 10), (3, "b", N), (4, "c", N), (5, "d", 3), (6, "c", 3),
      (7, "c", 3), (8, "c", 3), (9, "c", 2)], ["id", "name", "price"],
     "ORDER BY id MEASURES SUM(A.price) AS sumA, COUNT(A.id) AS countAId, "
     "COUNT(A.price) AS countAPrice, COUNT(*) AS countAll, COUNT(price) AS countAllPrice, "
     "LAST(id) AS endId AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ C) "
     "DEFINE A AS SUM(A.price) < 30, C AS C.name = 'c'",
     ["sumA", "countAId", "countAPrice", "countAll", "countAllPrice", "endId"],
     [(29, 7, 5, 8, 6, 8)]),
]  # fmt: skip


def _rows(given: str, rows: list[tuple[Any, ...]], columns: list[str]) -> Any:
    data: Any = [dict(zip(columns, row, strict=True)) for row in rows]
    return pd.DataFrame(data, columns=columns) if given == "frame" else data


def _read(frame: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    def plain(value: Any) -> Any:
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            return None
        return value.item() if hasattr(value, "item") else value

    return [tuple(plain(r[c]) for c in columns) for r in frame.to_dict("records")]


@pytest.mark.parametrize("given", ["mappings", "frame"])
@pytest.mark.parametrize(
    ("rows", "columns", "clause", "read", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_flinks_case(given, rows, columns, clause, read, expected):
    frame = kleene.match_recognize(_rows(given, rows, columns), clause)
    assert sorted(_read(frame, read), key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize("given", ["mappings", "frame"])
def test_flinks_time_constraint(given):
    """Flink SQL's `WITHIN INTERVAL`, as its documentation's example uses it: a match's rows
    span less than the interval on the time column (here seconds); a run of falling prices
    that takes longer is cut where the interval ends."""
    clause = (
        "PARTITION BY symbol ORDER BY t MEASURES FIRST(A.t) AS start_t, LAST(A.t) AS end_t "
        "ONE ROW PER MATCH PATTERN (A{2,} B) WITHIN INTERVAL '1' MINUTE "
        "DEFINE A AS A.price < PREV(A.price) OR PREV(A.price) IS NULL, B AS B.price > A.price"
    )
    ticks = [("ACME", t, p) for t, p in [(0, 19), (30, 17), (50, 13), (61, 12), (62, 20)]]
    frame = kleene.match_recognize(_rows(given, ticks, ["symbol", "t", "price"]), clause)
    # from 0 the fall 0, 30, 50 stays inside the minute, and 61 (12) does not rise above 13:
    # no match; from 30 the fall 30, 50, 61 and the rise at 62 take 32 seconds
    assert _read(frame, ["start_t", "end_t"]) == [(30, 61)]
    unbounded = clause.replace("WITHIN INTERVAL '1' MINUTE ", "")
    frame = kleene.match_recognize(_rows(given, ticks, ["symbol", "t", "price"]), unbounded)
    assert _read(frame, ["start_t", "end_t"]) == [(0, 61)]


@pytest.mark.parametrize("given", ["mappings", "frame"])
def test_flinks_match_rowtime_grouped_into_windows(given):
    """`testWindowedGroupingAppliedToMatchRecognize`: MATCH_ROWTIME() is the time of each
    match's last row, on ORDER BY's column; Flink groups the matches into tumbling windows
    of 3 seconds around the clause, which pandas does here, with Flink's sums."""
    start = datetime(1970, 1, 1)
    ticks = [("ACME", start + timedelta(seconds=s), p, tax) for s, p, tax in [(1, 1, 1), (2, 2, 2)]]
    ticks += [("ACME", start + timedelta(seconds=s), p, t) for s, p, t in [(4, 1, 4), (5, 1, 3)]]
    clause = (
        "PARTITION BY symbol ORDER BY rowtime MEASURES A.price AS price, A.tax AS tax, "
        "MATCH_ROWTIME() AS matchRowtime ONE ROW PER MATCH PATTERN (A) DEFINE A AS A.price > 0"
    )
    frame = kleene.match_recognize(
        _rows(given, ticks, ["symbol", "rowtime", "price", "tax"]), clause
    )
    assert list(pd.to_datetime(frame["matchRowtime"])) == [t for _, t, _, _ in ticks]
    windows = frame.groupby(pd.to_datetime(frame["matchRowtime"]).dt.floor("3s"))["price"].sum()
    assert list(windows.items()) == [
        (pd.Timestamp(start), 3),
        (pd.Timestamp(start) + pd.Timedelta(3, "s"), 2),
    ]
    named = clause.replace("MATCH_ROWTIME()", "MATCH_ROWTIME(rowtime)")
    again = kleene.match_recognize(
        _rows(given, ticks, ["symbol", "rowtime", "price", "tax"]), named
    )
    assert again.equals(frame)


@pytest.mark.parametrize("times", ["datetimes", "seconds"])
def test_intervals_in_conditions_and_measures(times):
    """`INTERVAL '15' MINUTE` in an expression (Flink's and Oracle's time arithmetic): a
    datetime column's differences are timedeltas, a number column's seconds, and an
    interval meets both; a datetime plus an interval is a datetime."""
    base = datetime(2024, 1, 1)
    minutes = [(0, 10), (5, 12), (12, 15), (30, 16)]
    when = (lambda m: base + timedelta(minutes=m)) if times == "datetimes" else (lambda m: 60 * m)
    rows = [{"t": when(m), "p": p} for m, p in minutes]
    clause = (
        "ORDER BY t MEASURES LAST(B.t) AS b, A.t + INTERVAL '1' HOUR AS later ONE ROW PER MATCH "
        "PATTERN (A B+) DEFINE B AS B.p > PREV(B.p) AND B.t - A.t < INTERVAL '15' MINUTE"
    )
    [found] = kleene.match_recognize(rows, clause).to_dict("records")
    assert found["b"] == when(12)  # the row at 30 minutes is past the interval
    assert found["later"] == when(60)


@pytest.mark.parametrize("given", ["mappings", "frame"])
def test_flinks_greedy_quantifier_does_not_give_back_rows(given):
    """testLogicalOffsets: Flink finds only the match of rows 6-8. By the standard (and
    Trino) the search from row 1 maps rows 1-3 to DOWN, fails UP at row 4, and backtracks:
    DOWN{2,} gives row 3 back and UP takes it (13 < 19), a match of rows 1-3. Flink's
    greedy quantifier never gives back a row its condition takes (docs/sql.md)."""
    clause = (
        "ORDER BY tstamp MEASURES FIRST(DOWN.tstamp) AS start_tstamp, "
        "LAST(DOWN.tstamp) AS bottom_tstamp, UP.tstamp AS end_tstamp, "
        "FIRST(DOWN.price + DOWN.tax + 1) AS bottom_total, UP.price + UP.tax AS end_total "
        "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (DOWN{2,} UP) "
        "DEFINE DOWN AS price < LAST(DOWN.price, 1) OR LAST(DOWN.price, 1) IS NULL, "
        "UP AS price < FIRST(DOWN.price)"
    )
    columns = ["symbol", "tstamp", "price", "tax"]
    frame = kleene.match_recognize(_rows(given, TICKER, columns), clause)
    found = _read(
        frame, ["start_tstamp", "bottom_tstamp", "end_tstamp", "bottom_total", "end_total"]
    )
    flinks = (6, 7, 8, 33, 33)
    assert found == [(1, 2, 3, 21, 16), flinks]


@pytest.fixture
def flinks_functions():
    """Flink's `PrefixingScalarFunc` (prefix "PREF") and `RichAggFunc` (a sum that starts
    at 4), as kleene's registered function and aggregate."""
    kleene.register_function("prefix", lambda value: f"PREF:{value}")
    kleene.register_aggregate("countFrom", lambda prices: 4 + sum(prices))
    yield
    kleene.unregister_function("prefix")
    kleene.unregister_aggregate("countFrom")


@pytest.mark.parametrize("given", ["mappings", "frame"])
def test_flinks_user_defined_functions(given, flinks_functions):
    """`testUserDefinedFunctions`: a scalar function and an aggregate the user defines, in
    MEASURES and DEFINE; the aggregate ranges over A's rows so far, so A stops where the
    count from 4 would pass 8."""
    rows = [(1, "a", 1), (2, "a", 1), (3, "a", 1), (4, "a", 1), (5, "a", 1), (6, "b", 1)]
    rows += [(7, "a", 1), (8, "a", 1), (9, "f", 1)]
    clause = (
        "ORDER BY id MEASURES FIRST(id) AS firstId, prefix(A.name) AS prefixedNameA, "
        "countFrom(A.price) AS countFromA, LAST(id) AS lastId AFTER MATCH SKIP PAST LAST ROW "
        "PATTERN (A+ C) DEFINE A AS prefix(A.name) = 'PREF:a' AND countFrom(A.price) <= 8"
    )
    frame = kleene.match_recognize(_rows(given, rows, ["id", "name", "price"]), clause)
    columns = ["firstId", "prefixedNameA", "countFromA", "lastId"]
    assert _read(frame, columns) == [(1, "PREF:a", 8, 5), (7, "PREF:a", 6, 9)]


def test_a_user_defined_aggregate_of_two_columns_and_its_errors(flinks_functions):
    """An aggregate gets a list for each argument (FINAL: over the whole match); one that
    raises is an EventError naming the call and the row; RUNNING and FINAL before a
    function that is no aggregate, an aggregate of no argument, and one over two
    variables' columns are refused with a caret."""
    kleene.register_aggregate(
        "weighted", lambda xs, ws: sum(x * w for x, w in zip(xs, ws, strict=True))
    )
    try:
        rows = [{"t": t, "x": x, "w": w} for t, x, w in [(1, 2, 1), (2, 3, 2), (3, 1, 3)]]
        clause = "ORDER BY t MEASURES RUNNING weighted(x, w) AS r, FINAL weighted(x, w) AS f "
        frame = kleene.match_recognize(rows, clause + "ALL ROWS PER MATCH PATTERN (A+)")
        assert _read(frame, ["t", "r", "f"]) == [(1, 2, 11), (2, 8, 11), (3, 11, 11)]
        text = [{"t": 1, "x": "two", "w": 1}]
        with pytest.raises(kleene.EventError, match=r"weighted\(x, w\) failed") as raised:
            kleene.match_recognize(text, clause + "PATTERN (A+)")
        assert raised.value.row == 1
    finally:
        kleene.unregister_aggregate("weighted")
    for wrong, message in [
        ("FINAL prefix(x)", "not prefix, which is no aggregate"),
        ("countFrom()", "countFrom() needs an argument"),
        ("countFrom(A.x, B.x)", "name different variables"),
    ]:
        with pytest.raises(kleene.PatternError, match=re.escape(message)) as raised:
            kleene.match_recognize([], f"ORDER BY t MEASURES {wrong} AS m PATTERN (A B)")
        assert raised.value.column == 21 and "^" in str(raised.value)
    with pytest.raises(ValueError, match="built-in aggregate"):
        kleene.register_aggregate("sum", sum)
