"""LEAD rules on Spark: detect() returns the events the rule emits, the same as in-process."""

from datetime import UTC, datetime, timedelta

import pytest

import kleene
from kleene.errors import EventError
from kleene.spark import detect, detect_stream
from tests.lead.test_rules import FIGURE_2, game_stream

GAME = "type string, ts long, uid long, gid long"


def _rows(frame):
    return sorted(
        (
            r["type"],
            r["ts"],
            {k: v for k, v in r.asDict().items() if k not in ("type", "ts", "key")},
        )
        for r in frame.collect()
    )


def test_figure_2_on_spark_equals_in_process(spark):
    stream = game_stream()
    rows = [tuple(r[n] for n in ("type", "ts", "uid", "gid")) for r in stream]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), GAME)
    found = detect(df, FIGURE_2)
    assert [f.name for f in found.schema.fields] == ["type", "ts", "key", "gid"]
    expected = sorted((e.type, e.ts, dict(e.attrs)) for e in kleene.lead.run(FIGURE_2, stream))
    assert _rows(found) == expected
    keys = {(r["type"], r["key"]["uid"]) for r in found.collect()}
    assert ("Middle_Success_Leaving", "2") in keys and ("Success", "1") in keys


def test_an_unpartitioned_rule_with_timestamps(spark):
    rule = (
        "FROM Tick AS t, Halt AS h MATCH every(collect(t) terminate(count() == 2) AS pair "
        "Followed By not h Within 1 min) EMIT Event Pair(max(pair.price) AS top, pair.count() AS n)"
    )
    start = datetime(2026, 1, 1, tzinfo=UTC)
    stream = [
        {"type": kind, "ts": start + timedelta(seconds=s), "price": p}
        for kind, s, p in [("Tick", 0, 1.5), ("Tick", 5, 2.5), ("Other", 7, None),
                           ("Tick", 100, 3.0), ("Halt", 110, None), ("Tick", 200, 4.0),
                           ("Tick", 201, 1.0)]
    ]  # fmt: skip
    df = spark.createDataFrame(
        [(r["type"], r["ts"], r["price"]) for r in stream],
        "type string, ts timestamp, price double",
    )
    found = detect(df, rule)
    assert found.schema["top"].dataType.simpleString() == "double"
    assert found.schema["n"].dataType.simpleString() == "bigint"
    expected = [(e.type, e.ts, dict(e.attrs)) for e in kleene.lead.run(rule, stream)]
    rows = found.collect()  # Spark gives naive datetimes in the session's time zone, UTC
    got = [(r["type"], r["ts"].replace(tzinfo=UTC), {"top": r["top"], "n": r["n"]}) for r in rows]
    assert got == expected
    assert [e[2]["top"] for e in expected] == [2.5, 4.0]


def test_a_rule_reading_a_missing_column_fails_before_spark_runs(spark):
    df = spark.createDataFrame([("A", 1, 2)], "type string, ts long, x long")
    with pytest.raises(EventError, match=r"reads a.y but the DataFrame has no column 'y'"):
        detect(df, "FROM A AS a MATCH a.filter(a.y > 1) EMIT Event X()")
    with pytest.raises(kleene.KleeneError, match="its own partitions"):
        detect(df, "FROM A AS a MATCH a PARTITION BY a.x EMIT Event X(x)", partition_by=["x"])
    with pytest.raises(kleene.PatternError, match="'key' would clash with the rows' own 'key'"):
        detect(df, "FROM A AS a MATCH a PARTITION BY a.x EMIT Event X(a.ts AS key)")


def test_a_rule_on_a_stream_is_refused_with_a_reason(spark, tmp_path):
    (tmp_path / "in").mkdir()
    sdf = spark.readStream.schema("type string, ts timestamp, x long").json(str(tmp_path / "in"))
    with pytest.raises(
        kleene.KleeneError, match="writes matches and rows, and this query reports emitted"
    ):
        detect_stream(sdf, "FROM A AS a MATCH a EMIT Event X()")
