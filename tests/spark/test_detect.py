"""detect() returns exactly the in-process engine's matches, however the stream is split."""

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings

import kleene
from kleene.spark import detect, detect_job
from kleene.testing import events as table
from kleene.testing.strategies import cases
from kleene.testing.workloads import StockStream

SCHEMA = "type string, ts long, id long, symbol string, price long, volume long"


def frame(spark, events, partitions=3, schema=SCHEMA):
    """A DataFrame of events in arrival order, spread over several input partitions."""
    names = [f.split()[0] for f in schema.split(", ")]
    rows = [
        tuple({"type": e.type, "ts": e.ts, "id": e.id, **e.attrs}.get(n) for n in names)
        for e in events
    ]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), schema)


def keys_of_rows(rows, variables):
    found = set()
    for row in rows:
        found.add(
            frozenset((v, tuple(e["id"] for e in row[v])) for v in variables if row[v] is not None)
        )
    return found


def keys_of_matches(matches):
    return {frozenset(m.ids().items()) for m in matches}


def same(spark_frame, query, events, **options):
    plan = kleene.compile(query)
    variables = [v.name for v in plan.analysis.positive]
    found = keys_of_rows(detect(spark_frame, query, id="id", **options).collect(), variables)
    local_options = {k: v for k, v in options.items() if k in ("output", "time_unit")}
    expected = keys_of_matches(kleene.match(query, events, **local_options))
    assert found == expected
    return found


@pytest.fixture(scope="module")
def stocks():
    stream = StockStream(size=2000, symbols=6, ratio=5, p_up=0.6, seed=11)
    # every third tick shares its timestamp with the one before
    return [kleene.Event(e.type, e.ts - (e.ts % 3 == 2), e.attrs, e.id) for e in stream.events()]


PARTITIONED = [
    "PATTERN SEQ(Stock+ a[], Stock b) WHERE partition_contiguity { [symbol] and "
    "a[i].price > a[i-1].price and a.len >= 2 and b.price < a[a.len].price } WITHIN 20",
    "PATTERN SEQ(Stock a, NOT(Stock n), Stock b) WHERE [symbol] and a.volume > 900 and "
    "b.volume > 900 and n.volume > 500 WITHIN 30",
    "PATTERN SEQ(Stock a, Stock b, NOT(Stock c)) WHERE skip_till_next_match { [symbol] and "
    "b.price > a.price + 1 and c.price < a.price } WITHIN 8",
]


@pytest.mark.parametrize("query", PARTITIONED)
def test_partitioned_queries(spark, stocks, query):
    assert same(frame(spark, stocks), query, stocks)


UNPARTITIONED = [
    "PATTERN SEQ(Stock a, Stock b) WHERE a.symbol = 'IBM' and b.symbol = 'MSFT' and "
    "b.price > a.price WITHIN 6",
    "PATTERN SEQ(NOT(Stock n), Stock a, Stock b) WHERE a.volume > 990 and b.volume > 990 and "
    "n.volume < 3 WITHIN 15",
    "PATTERN AND(Stock a, Stock b, NOT(Stock c)) WHERE a.symbol = 'IBM' and a.volume > 950 "
    "and b.symbol = 'AAPL' and b.volume > 950 and c.volume > 998 WITHIN 10",
    "PATTERN SEQ(Stock a, Stock b) WHERE strict_contiguity { a.volume > 800 and b.volume < 200 "
    "} WITHIN 3",
]


@pytest.mark.parametrize("query", UNPARTITIONED)
@pytest.mark.parametrize("slices", [1, 2, 9, 700])
def test_unpartitioned_queries_in_any_number_of_time_slices(spark, stocks, query, slices):
    """700 slices are about 3 timestamps wide: shorter than every window here."""
    found = detect_job(frame(spark, stocks), query, id="id", slices=slices)
    assert found.grouping.startswith(f"{slices} time slice")
    same(frame(spark, stocks), query, stocks, slices=slices)


def test_non_overlapping_output(spark, stocks):
    query = "PATTERN SEQ(Stock a, Stock b) WHERE [symbol] and b.price > a.price + 2 WITHIN 50"
    same(frame(spark, stocks), query, stocks, output="non_overlapping")
    unkeyed = "PATTERN SEQ(Stock a, Stock b) WHERE b.price > a.price + 60 WITHIN 5"
    same(frame(spark, stocks), unkeyed, stocks, output="non_overlapping", slices=5)


def test_patterns_that_could_match_empty(spark, stocks):
    """A pattern of T* elements only: every non-empty match, never an empty one."""
    query = (
        "PATTERN SEQ(Stock* a[], Stock* b[]) WHERE strict_contiguity { a[i].price > 300 "
        "and b[i].price < 120 } WITHIN 5"
    )
    assert same(frame(spark, stocks), query, stocks)


def test_after_match_skip(spark, stocks):
    """A kept match rules out later ones: keyed, one state per symbol; unkeyed, one slice
    whatever `slices` asks (a slice would not see the matches before it)."""
    keyed = (
        "PATTERN SEQ(Stock a, Stock+ b[]) WHERE [symbol] and b[i].price > a.price WITHIN 20 "
        "AFTER MATCH SKIP TO LAST b"
    )
    same(frame(spark, stocks), keyed, stocks)
    unkeyed = (
        "PATTERN SEQ(Stock a, Stock b) WHERE b.price > a.price + 60 WITHIN 5 "
        "AFTER MATCH SKIP PAST LAST EVENT"
    )
    found = detect_job(frame(spark, stocks), unkeyed, id="id", slices=5)
    assert not found.grouping.startswith("5 time slice")
    same(frame(spark, stocks), unkeyed, stocks, slices=5)


@pytest.mark.parametrize("clause", ["CONSUME BY ANY", "CONSUME BY EVENTS", "FREEZE a", "FREEZE b"])
def test_consumption_and_freeze_without_a_key_run_in_one_slice(spark, stocks, clause):
    """What a reported match consumes, uses up or lets go decides later matches: a slice
    would not see the matches before it."""
    query = f"PATTERN SEQ(Stock a, Stock b) WHERE b.price > a.price WITHIN 5 {clause}"
    found = detect_job(frame(spark, stocks), query, id="id", slices=5)
    same(frame(spark, stocks), query, stocks, slices=5)
    assert not found.grouping.startswith("5 time slice")


FLINK = [
    # relaxed contiguity with a strict loop (Flink's consecutive()), keyed
    "PATTERN SEQ(Stock a, Stock+ b[], Stock c) WHERE relaxed_contiguity strict_contiguity(b[]) "
    "{ [symbol] and b[i].price > b[i-1].price and c.price < a.price } WITHIN 10",
    # an optional element, a GREEDY UNTIL loop, a time and a count window, unkeyed
    "PATTERN SEQ(Stock a, Stock? m, Stock* b[] GREEDY UNTIL (b.volume < 100), Stock c) WHERE "
    "relaxed_contiguity { a.symbol = 'IBM' and m.volume > 500 and b[i].symbol = 'IBM' and "
    "c.symbol = 'MSFT' } WITHIN 12 AND 6 EVENTS",
]


@pytest.mark.parametrize("query", FLINK)
def test_flink_and_core_forms(spark, stocks, query):
    """What kleene adds for Flink and CORE users runs on Spark as in-process (a count window
    on the positions of the whole stream, whatever the slices)."""
    assert same(frame(spark, stocks), query, stocks, slices=4)


def test_timed_out_partial_matches(spark, stocks):
    """timeouts=True: the partial matches whose window closed, marked by `kind`."""
    query = (
        "PATTERN SEQ(Stock a, Stock b) WHERE relaxed_contiguity { [symbol] and "
        "b.price > a.price + 5 } WITHIN 30"
    )
    rows = detect(frame(spark, stocks), query, id="id", timeouts=True).collect()
    local = kleene.match(query, stocks, timeouts=True)
    kinds = Counter(row["kind"] for row in rows)
    assert kinds == Counter("timeout" if isinstance(m, kleene.Timeout) else "match" for m in local)
    assert kinds["timeout"] and kinds["match"]
    timed_out = [r for r in rows if r["kind"] == "timeout"]
    assert keys_of_rows(timed_out, ["a", "b"]) == keys_of_matches(
        m for m in local if isinstance(m, kleene.Timeout)
    )


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(max_events=7))
def test_random_patterns(spark, case):
    schema = "type string, ts long, id long, k long, x long"
    same(frame(spark, case.events, schema=schema), case.pattern, case.events)


def test_output_schema_and_values(spark):
    stream = table("""
        type ts id  symbol price volume
        Stock 1  1  IBM    10    5
        Stock 2  2  IBM    12    5
        Stock 3  3  GOOG   20    5
        Stock 4  4  IBM    9     5
    """)
    query = "PATTERN SEQ(Stock+ a[], Stock b) WHERE [symbol] and b.price < a[a.len].price"
    first = detect(frame(spark, stream), query, id="id", name="dip")
    assert first.columns == ["match_id", "pattern", "start_ts", "end_ts", "key", "a", "b"]
    rows = sorted(first.collect(), key=lambda r: r["start_ts"])
    assert [(r["pattern"], r["start_ts"], r["end_ts"], r["key"]["symbol"]) for r in rows] == [
        ("dip", 1, 4, "IBM"),
        ("dip", 1, 4, "IBM"),
        ("dip", 2, 4, "IBM"),
    ]
    assert rows[0]["b"][0].asDict() == {
        "type": "Stock",
        "ts": 4,
        "id": 4,
        "symbol": "IBM",
        "price": 9,
        "volume": 5,
    }
    again = detect(frame(spark, stream, partitions=1), query, id="id", name="dip")
    assert {r["match_id"] for r in again.collect()} == {r["match_id"] for r in rows}


def test_timestamps_dates_and_epoch_units(spark):
    start = datetime(2011, 1, 5, tzinfo=UTC)
    rows = [
        ("C", start, 1),
        ("P", start + timedelta(days=14), 2),
        ("P", start + timedelta(days=16), 3),
    ]
    df = spark.createDataFrame(rows, "type string, ts timestamp, id long")
    found = detect(df, "PATTERN SEQ(C c, P p) WITHIN 15 days", id="id").collect()
    assert [(r["c"][0]["id"], r["p"][0]["id"]) for r in found] == [(1, 2)]
    assert found[0]["start_ts"] == datetime(2011, 1, 5)
    days = spark.createDataFrame(
        [("C", date(2011, 1, 5), 1), ("P", date(2011, 1, 6), 2)], "type string, ts date, id long"
    )
    assert detect(days, "PATTERN SEQ(C c, P p) WITHIN 1 day", id="id").count() == 1
    epoch = spark.createDataFrame(
        [("C", 1_700_000_000_000, 1), ("P", 1_700_000_001_500, 2)], "type string, ts long, id long"
    )
    assert detect(epoch, "PATTERN SEQ(C c, P p) WITHIN 2 s", id="id", ts_unit="ms").count() == 1
    assert detect(epoch, "PATTERN SEQ(C c, P p) WITHIN 1 s", id="id", ts_unit="ms").count() == 0


def test_constant_type_default_ids_and_counts(spark, stocks):
    df = frame(spark, stocks).drop("type", "id")
    query = (
        "PATTERN SEQ(Tick a, Tick b) WHERE [symbol] and a.volume > 950 and b.volume < 50 WITHIN 40"
    )
    result = detect_job(df, query, event_type="Tick")
    rows = result.matches.collect()
    ticks = [kleene.Event("Tick", e.ts, e.attrs, e.id) for e in stocks]
    expected = kleene.match(query, ticks)
    assert expected

    # default ids are unique but not arrival positions: compare events by their contents
    def content(event):
        return (event["ts"], event["symbol"], event["price"], event["volume"])

    found = Counter((content(r["a"][0]), content(r["b"][0])) for r in rows)
    local = Counter(
        tuple(content({"ts": e.ts, **e.attrs}) for e in (m.bindings["a"][0], m.bindings["b"][0]))
        for m in expected
    )
    assert found == local
    assert len({r["a"][0]["id"] for r in rows}) == len({c[0] for c in found})
    counts = result.counts()
    assert counts["read"] == len(stocks)
    assert 0 < counts["kept"] < len(stocks) / 2
    # six symbols, keyed and windowed: a worker held some of them at once, never more
    assert 1 <= counts["worker_peak_groups"] <= 6


SEVERAL = {
    "keyed": PARTITIONED[1],
    "sliced": UNPARTITIONED[0],
    "whole": "PATTERN SEQ(Stock a, Stock b) WHERE strict_contiguity { a.volume > 900 and "
    "b.volume > 900 }",
    "rule": "FROM Stock AS s MATCH every(s.filter(s.volume > 995)) PARTITION BY s.symbol "
    "EMIT Event Loud(s.price AS price)",
}


def test_several_queries_read_the_input_once_and_each_finds_its_own(spark, stocks, tmp_path):
    """Several queries in one job: a keyed query, one cut in time slices, one in a single
    group, and a LEAD rule, each with the rows it finds alone, named by `query`; the job's
    plan scans the input once."""
    path = str(tmp_path / "stocks.parquet")
    frame(spark, stocks).write.parquet(path)
    job = detect_job(spark.read.parquet(path), SEVERAL, id="id", slices=3)
    plan = job.matches._jdf.queryExecution().executedPlan().toString()
    assert plan.count("FileScan parquet") == 1, plan
    assert job.matches.columns[0] == "query"
    assert set(job.queries) == set(SEVERAL)
    rows = job.matches.collect()
    assert {r["query"] for r in rows} == set(SEVERAL)
    for name, query in SEVERAL.items():
        own = [r for r in rows if r["query"] == name]
        if name == "rule":
            expected = sorted((e.ts, e["price"]) for e in kleene.match(query, stocks))
            assert sorted((r["ts"], r["price"]) for r in own) == expected
            assert {r["key"]["symbol"] for r in own} <= {e["symbol"] for e in stocks}
            continue
        variables = [v.name for v in kleene.compile(query).analysis.positive]
        assert keys_of_rows(own, variables) == keys_of_matches(kleene.match(query, stocks)), name
    counts = job.counts()
    assert counts["read"] == len(stocks)
    assert "sliced: 3 time slices" in job.grouping and "keyed: by symbol" in job.grouping


def test_several_queries_on_spark_refuse_a_chain_and_clashing_columns(spark, stocks):
    df = frame(spark, stocks[:10])
    chain = {"rule": SEVERAL["rule"], "reader": "PATTERN SEQ(Loud a, Loud b) WITHIN 5"}
    with pytest.raises(kleene.KleeneError, match="'reader' reads the events 'rule' emits"):
        detect(df, chain, id="id")
    clash = {
        "p": "PATTERN SEQ(Stock a, Stock b) WITHIN 3",
        "q": "PATTERN SEQ(Stock x, Stock b) WITHIN 3 RETURN b.price AS a",
    }
    with pytest.raises(kleene.KleeneError, match="queries 'p' and 'q' both give a column 'a'"):
        detect(df, clash, id="id")
    with pytest.raises(kleene.KleeneError, match="named by their keys"):
        detect(df, clash, id="id", name="n")


def test_malformed_rows(spark):
    df = spark.createDataFrame(
        [("A", 1, 1), ("B", None, 2), (None, 3, 3), ("B", 4, 4)], "type string, ts long, id long"
    )
    result = detect_job(df, "PATTERN SEQ(A a, B b)", id="id", on_error="skip")
    assert [(r["a"][0]["id"], r["b"][0]["id"]) for r in result.matches.collect()] == [(1, 4)]
    assert result.counts()["skipped"] == 2
    with pytest.raises(Exception, match="the timestamp is missing"):
        detect(df, "PATTERN SEQ(A a, B b)", id="id").collect()


@pytest.mark.parametrize(
    ("query", "options", "message"),
    [
        (
            "PATTERN SEQ(A a) WHERE a.price > 1",
            {},
            "the query reads a.price but the DataFrame has no column 'price'",
        ),
        ("PATTERN SEQ(A a) WHERE [region]", {}, "reads [region]"),
        ("PATTERN SEQ(A a)", {"ts": "time"}, "no column 'time' (the timestamp)"),
        ("PATTERN SEQ(A a)", {"type": "kind"}, "no column 'kind' (the event type)"),
        ("PATTERN SEQ(A a)", {"ts": "label"}, "holds string, which cannot be ordered in time"),
        ("PATTERN SEQ(A a)", {"partition_by": ["zone"]}, "no column 'zone' (partition_by)"),
        ("PATTERN SEQ(A a)", {"ts_unit": "ms", "ts": "label"}, "ts_unit needs numbers"),
        ("PATTERN SEQ(A a)", {"id": "nope"}, "no column 'nope' (the event id)"),
        ("PATTERN SEQ(A a", {}, "unexpected end of query"),
    ],
)
def test_errors_before_the_job_starts(spark, query, options, message):
    df = spark.createDataFrame([("A", 1, "x")], "type string, ts long, label string")
    with pytest.raises(kleene.KleeneError) as info:
        detect(df, query, **options)
    assert message in str(info.value)


@pytest.mark.parametrize("query", [PARTITIONED[0], UNPARTITIONED[0]])
def test_max_delay_drops_the_rows_the_engine_finds_late(spark, stocks, query):
    """Rows in a disordered arrival order: with max_delay the job drops exactly the rows the
    in-process engine finds late, and matches what the engine matches."""
    import random

    rng = random.Random(5)
    arrival = sorted(stocks, key=lambda e: e.ts + rng.choice([0, 0, 0, 2, 9]))
    engine = kleene.Engine(query, max_delay=4)
    expected = keys_of_matches(engine.send_many(arrival) + engine.close())
    assert engine.metrics.late > 0
    job = detect_job(frame(spark, arrival, partitions=4), query, id="id", max_delay=4)
    variables = [v.name for v in job.plan.analysis.positive]
    assert keys_of_rows(job.matches.collect(), variables) == expected
    assert job.counts()["late"] == engine.metrics.late
    assert job.counts()["read"] == len(arrival)
    with pytest.raises(kleene.KleeneError, match="late rows are counted and dropped"):
        detect_job(frame(spark, arrival), query, max_delay=4, on_late="raise")


def test_the_afa_plan_runs_on_spark(spark, stocks):
    """The afa plan, rows in timestamp order: the in-process engine's matches, with the
    negations and partitions above (the worker punctuates it as it goes)."""
    for query in PARTITIONED:
        assert same(frame(spark, stocks), query, stocks, plan="afa")
    same(frame(spark, stocks), UNPARTITIONED[2], stocks, plan="afa", slices=9)


def test_return_values_are_columns_of_the_spark_matches(spark):
    query = (
        "PATTERN SEQ(Stock a, Stock+ b[], Stock c) WHERE skip_till_next_match { [symbol] and "
        "b[i].price > a.price and c.price < a.price } WITHIN 10 "
        "RETURN a.symbol, max(b[].price) AS peak, b.len AS n, c.price - a.price AS change"
    )
    events = list(StockStream(size=400, symbols=3, seed=5).events())
    df = frame(spark, events)
    rows = detect(df, query, id="id").collect()
    schema = {f.name: f.dataType.simpleString() for f in detect(df, query, id="id").schema}
    assert schema["a.symbol"] == "string" and schema["peak"] == "bigint"
    assert schema["n"] == "bigint" and schema["change"] == "double"
    local = kleene.match(query, events)
    assert len(rows) == len(local) > 0
    assert sorted((r["peak"], r["n"], r["change"]) for r in rows) == sorted(
        (m.values["peak"], m.values["n"], m.values["change"]) for m in local
    )


def test_a_registered_function_reaches_the_workers(spark, stocks):
    """A function registered in the driver runs on the workers (whose processes have none
    registered: the job ships them), with the in-process matches."""
    kleene.register_function("big_move", lambda a, b: abs(b - a) > 2)
    try:
        query = (
            "PATTERN SEQ(Stock a, Stock b) WHERE [symbol] and big_move(a.price, b.price) WITHIN 9"
        )
        assert same(frame(spark, stocks), query, stocks)
    finally:
        kleene.unregister_function("big_move")
