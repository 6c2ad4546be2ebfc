"""kleene.spark.match_recognize: the same rows as in-process, with Spark types."""

import random
from pathlib import Path

import pandas
import pytest

import kleene
from kleene.errors import PatternError
from kleene.spark import match_recognize

#: The V of examples/v_shape.sql, as `kleene match` and `kleene run` take it.
EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "v_shape.sql"
V_SHAPE = """PARTITION BY sym ORDER BY t
    MEASURES FIRST(price) AS top, LAST(DOWN.price) AS bottom, LAST(UP.price) AS back,
        count(*) AS n, CLASSIFIER() AS c, MATCH_NUMBER() AS m
    {rows} AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)"""


@pytest.fixture(scope="module")
def ticks():
    rng = random.Random(5)
    return [
        {"sym": sym, "t": t, "price": rng.randint(1, 9), "volume": rng.random()}
        for t in range(300)
        for sym in ("a", "b", "c")
        if rng.random() < 0.8
    ]


@pytest.mark.parametrize("rows", ["ONE ROW PER MATCH", "ALL ROWS PER MATCH"])
def test_spark_gives_the_in_process_rows(spark, ticks, rows):
    clause = V_SHAPE.format(rows=rows)
    df = spark.createDataFrame(ticks, "sym string, t long, price long, volume double")
    got = match_recognize(df, clause)
    want = kleene.match_recognize(ticks, clause)
    assert got.columns == list(want.columns)
    key = ["sym", "m"] + (["t"] if "ALL" in rows else [])
    left = got.toPandas().sort_values(key).reset_index(drop=True)
    right = want.sort_values(key).reset_index(drop=True)
    assert len(right) > 20
    pandas.testing.assert_frame_equal(left, right, check_dtype=False)
    types = dict(got.dtypes)
    assert types["n"] == "bigint" and types["c"] == "string" and types["top"] == "bigint"


def test_spark_keeps_flinks_time_constraint(spark, ticks):
    """WITHIN INTERVAL on Spark: the workers' search cuts a match where the in-process one
    does (a run of falling prices longer than 4 seconds of t is no match)."""
    clause = V_SHAPE.format(rows="ONE ROW PER MATCH").replace(
        "PATTERN (STRT DOWN+ UP+)", "PATTERN (STRT DOWN+ UP+) WITHIN INTERVAL '4' SECOND"
    )
    df = spark.createDataFrame(ticks, "sym string, t long, price long, volume double")
    got = match_recognize(df, clause).toPandas().sort_values(["sym", "m"])
    want = kleene.match_recognize(ticks, clause).sort_values(["sym", "m"])
    unbounded = kleene.match_recognize(ticks, V_SHAPE.format(rows="ONE ROW PER MATCH"))
    assert len(want) > 0 and len(want) != len(unbounded) and (want["n"] <= 4).all()
    pandas.testing.assert_frame_equal(
        got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False
    )


def test_spark_needs_an_order(spark):
    df = spark.createDataFrame([{"x": 1}])
    with pytest.raises(PatternError, match="ORDER BY names the column"):
        match_recognize(df, "PATTERN (A)")


def test_kleene_run_gives_what_kleene_match_gives(spark, stocks, tmp_path):
    from kleene.cli import main

    example, data = EXAMPLE, stocks
    ran, matched = tmp_path / "ran.parquet", tmp_path / "matched.parquet"
    assert main(["run", str(example), "-i", str(data), "-o", str(ran), "--master", "local[2]"]) == 0
    assert main(["match", str(example), "-i", str(data), "-o", str(matched)]) == 0
    key = ["symbol", "top", "bottom", "back", "ticks"]
    left = kleene.read_matches(ran).sort_values(key).reset_index(drop=True)
    right = pandas.read_parquet(matched).sort_values(key).reset_index(drop=True)
    assert len(right) > 0
    pandas.testing.assert_frame_equal(left, right, check_dtype=False)


def test_spark_sql_runs_the_statement_around_the_clauses(spark, ticks):
    from kleene.spark import sql

    spark.createDataFrame(ticks, "sym string, t long, price long, volume double") \
        .createOrReplaceTempView("ticks")  # fmt: skip
    clause = V_SHAPE.format(rows="")
    found = sql(
        spark,
        f"SELECT sym, count(*) AS vs, max(n) AS longest FROM ticks MATCH_RECOGNIZE ({clause}) "
        "AS mr WHERE n > 3 GROUP BY sym ORDER BY sym",
    ).collect()
    want = kleene.match_recognize(ticks, clause)
    want = want[want.n > 3].groupby("sym").n.agg(["count", "max"])
    assert [(r.sym, r.vs, r.longest) for r in found] == [
        (sym, row["count"], row["max"]) for sym, row in want.iterrows()
    ]
    # two tables in one statement, one over a subquery that holds a third
    twice = sql(
        spark,
        f"SELECT a.sym, a.m FROM ticks MATCH_RECOGNIZE ({clause}) a "
        f"JOIN (SELECT * FROM ticks WHERE price > 0) MATCH_RECOGNIZE ({clause}) b "
        "ON a.sym = b.sym AND a.m = b.m",
    ).count()
    assert twice == len(kleene.match_recognize(ticks, clause))
    nested = sql(
        spark,
        "SELECT count(*) AS c FROM (SELECT sym, m AS t, n AS price FROM ticks "
        f"MATCH_RECOGNIZE ({clause})) MATCH_RECOGNIZE (PARTITION BY sym ORDER BY t "
        "MEASURES count(*) AS k PATTERN (A+)) x",
    ).collect()
    assert nested[0].c == ticks_symbols(ticks)


def ticks_symbols(ticks):
    return len({t["sym"] for t in ticks})


@pytest.mark.parametrize(
    "order", ["sym, t DESC", "price DESC NULLS FIRST, t", "t NULLS LAST", "volume, t"]
)
def test_several_order_keys_descending_and_nulls_order_as_in_process(spark, ticks, order):
    rows = [dict(r, price=None if r["t"] % 17 == 0 else r["price"]) for r in ticks[:200]]
    df = spark.createDataFrame(rows, "sym string, t long, price long, volume double")
    clause = (
        f"PARTITION BY sym ORDER BY {order} MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS m "
        "ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS price > PREV(price)"
    )
    got = match_recognize(df, clause).toPandas()
    want = kleene.match_recognize(rows, clause)
    assert list(got.columns) == list(want.columns)
    key = ["sym", "m", "t"]
    left = got.sort_values(key).reset_index(drop=True)
    right = want.sort_values(key).reset_index(drop=True)
    pandas.testing.assert_frame_equal(left, right, check_dtype=False)


def test_kleene_run_takes_a_statement_with_the_input_as_its_table(spark, stocks, tmp_path):
    from kleene.cli import main

    example, data = EXAMPLE, stocks
    statement = tmp_path / "count.sql"
    clause = "\n".join(
        line for line in example.read_text().splitlines() if not line.startswith("--")
    )
    statement.write_text(f"SELECT symbol, count(*) AS vs FROM stocks {clause} AS v GROUP BY symbol")
    out = tmp_path / "counts.csv"
    assert (
        main(["run", str(statement), "-i", str(data), "-o", str(out), "--master", "local[2]"]) == 0
    )
    got = kleene.read_matches(out).sort_values("symbol").reset_index(drop=True)
    rows = kleene.match_recognize(data, example.read_text())
    want = rows.groupby("symbol").size().reset_index(name="vs")
    assert got.to_dict("records") == want.to_dict("records")


def test_kleene_stream_gives_a_clauses_rows_once_each_as_the_table_does(spark, tmp_path):
    """A clause over files arriving in two micro-batches: each match once it is decided
    (a later row ends its greedy loop), the rest when --available-now ends the input; the
    rows are those kleene.match_recognize finds in the whole table."""
    import os
    import subprocess
    import sys
    from datetime import UTC, datetime, timedelta

    example = tmp_path / "v.sql"
    example.write_text(
        "MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES FIRST(price) AS top, "
        "LAST(DOWN.price) AS bottom, LAST(UP.price) AS back, count(*) AS ticks "
        "PATTERN (STRT DOWN+ UP+) DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))"
    )
    start = datetime(2024, 3, 1, tzinfo=UTC)
    rng = random.Random(11)
    rows = [
        {"symbol": f"S{i % 3}", "ts": start + timedelta(seconds=i), "price": rng.randint(1, 9)}
        for i in range(240)
    ]
    folder = tmp_path / "in"
    folder.mkdir()
    for part, chunk in enumerate((rows[:120], rows[120:])):
        lines = ["symbol,ts,price"] + [
            f"{r['symbol']},{r['ts']:%Y-%m-%d %H:%M:%S},{r['price']}" for r in chunk
        ]
        (folder / f"part-{part}.csv").write_text("\n".join(lines) + "\n")
    command = [
        sys.executable, "-m", "kleene", "stream", str(example), "-i", str(folder),
        "--checkpoint", str(tmp_path / "ck"), "-o", str(tmp_path / "out"), "--available-now",
        "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2",
    ]  # fmt: skip
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    key = ["symbol", "top", "bottom", "back", "ticks"]
    got = kleene.read_matches(tmp_path / "out")
    assert list(got.columns) == key
    got = got.sort_values(key).reset_index(drop=True)
    want = kleene.match_recognize(rows, example.read_text()).sort_values(key)
    assert len(want) > 5
    pandas.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=False)


def test_a_date_order_column_stays_a_date(spark):
    import datetime as dt

    rows = [("A", dt.date(2011, 4, d), p) for d, p in enumerate([5, 4, 3, 6], 1)]
    df = spark.createDataFrame(rows, "sym string, day date, price long")
    clause = (
        "PARTITION BY sym ORDER BY day MEASURES FIRST(day) AS since, count(*) AS n {} "
        "PATTERN (A B+) DEFINE B AS price < PREV(price)"
    )
    one = match_recognize(df, clause.format(""))
    assert dict(one.dtypes)["since"] == "date"
    assert [tuple(r) for r in one.collect()] == [("A", dt.date(2011, 4, 1), 3)]
    every = match_recognize(df, clause.format("ALL ROWS PER MATCH"))
    assert dict(every.dtypes)["day"] == "date" and every.count() == 3


def test_array_agg_and_computed_measures_have_spark_types(spark):
    rows = [("A", t, p) for t, p in enumerate([5, 4, 3, 6])]
    df = spark.createDataFrame(rows, "sym string, t long, price long")
    found = match_recognize(
        df,
        "PARTITION BY sym ORDER BY t MEASURES array_agg(price) AS prices, "
        "array_agg(price * 2) AS doubled, CLASSIFIER() AS c, lower(sym) AS s "
        "PATTERN (A B+) DEFINE B AS price < PREV(price)",
    )
    types = dict(found.dtypes)
    assert types["prices"] == "array<bigint>" and types["doubled"] == "array<string>"
    assert [tuple(r) for r in found.collect()] == [("A", [5, 4, 3], ["10", "8", "6"], "B", "a")]


def test_trinos_and_flinks_aggregates_have_spark_types(spark):
    """max_by and arbitrary have their column's type, count_if a count's, bool_or a truth
    value's, MATCH_ROWTIME() the ORDER BY column's; the rows are the in-process ones."""
    rows = [("A", t, p) for t, p in enumerate([5, 4, 3, 6])]
    df = spark.createDataFrame(rows, "sym string, t long, price long")
    clause = (
        "PARTITION BY sym ORDER BY t MEASURES max_by(price, t) AS latest, arbitrary(B.price) "
        "AS some_b, count_if(price > 3) AS high, bool_or(price > 4) AS any_high, "
        "MATCH_ROWTIME() AS at PATTERN (A B+) DEFINE B AS price < PREV(price)"
    )
    found = match_recognize(df, clause)
    types = dict(found.dtypes)
    assert (types["latest"], types["some_b"], types["high"]) == ("bigint", "bigint", "bigint")
    assert (types["any_high"], types["at"]) == ("boolean", "bigint")
    want = kleene.match_recognize(
        [dict(zip(["sym", "t", "price"], r, strict=True)) for r in rows], clause
    )
    assert [tuple(r) for r in found.collect()] == [tuple(r) for r in want.to_numpy().tolist()]
    assert [tuple(r) for r in found.collect()] == [("A", 3, 4, 2, True, 2)]


def test_registered_functions_and_aggregates_reach_the_workers(spark):
    """A function registered with kleene.register_function and an aggregate registered
    with kleene.register_aggregate run on the workers as in-process (whose processes have
    none registered: the job ships the functions, the clause holds its aggregates)."""
    kleene.register_function("tagged", lambda value: f"#{value}")
    kleene.register_aggregate("span_of", lambda prices: max(prices) - min(prices))
    try:
        rows = [("A", t, p) for t, p in enumerate([5, 4, 3, 6])]
        df = spark.createDataFrame(rows, "sym string, t long, price long")
        clause = (
            "PARTITION BY sym ORDER BY t MEASURES tagged(sym) AS tag, span_of(B.price) AS s "
            "PATTERN (A B+) DEFINE B AS price < PREV(price) AND span_of(B.price) < 5"
        )
        found = [tuple(r) for r in match_recognize(df, clause).collect()]
        want = kleene.match_recognize(
            [dict(zip(["sym", "t", "price"], r, strict=True)) for r in rows], clause
        )
        assert [tuple(r) for r in want.to_numpy().tolist()] == [("A", "#A", 1)]
        assert found == [("A", "#A", "1")]  # (on Spark a function's value is text)
    finally:
        kleene.unregister_function("tagged")
        kleene.unregister_aggregate("span_of")
