"""A worker's groups: rows in time order with keys interleaved give the in-process engine's
matches, and the worker holds the keys live within the window, not every key it saw."""

from dataclasses import replace

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import kleene
from kleene.spark.batch import Key, job_spec
from kleene.spark.pushdown import EventColumns
from kleene.spark.worker import PeakParam, match_batches

TYPES = {
    "type": T.StringType(),
    "ts": T.LongType(),
    "symbol": T.StringType(),
    "price": T.LongType(),
    "kleene_id": T.LongType(),
}
QUERIES = [
    # matches held until the window closes (a trailing negation), made final as a key goes
    "PATTERN SEQ(Stock a, Stock b, NOT(Stock c)) WHERE skip_till_next_match { [symbol] and "
    "b.price > a.price and c.price < a.price } WITHIN 6",
    "PATTERN SEQ(Stock+ a[], Stock b) WHERE partition_contiguity { [symbol] and "
    "a[i].price > a[i-1].price and b.price < a[a.len].price } WITHIN 9",
]


def ticks(symbols: int = 400) -> list[dict]:
    """Symbol k ticks a dozen times between 5k and 5k + 30: a few symbols live at a time."""
    rows = []
    for k in range(symbols):
        for i in range(12):
            ts = 5 * k + (i * 7) % 31
            rows.append(
                {"type": "Stock", "ts": ts, "symbol": f"S{k}", "price": (k * 13 + i * 5) % 9}
            )
    rows.sort(key=lambda row: row["ts"])
    for number, row in enumerate(rows):
        row["kleene_id"] = number
    return rows


def found(rows: list[dict], query: str, by_time: bool, spark) -> tuple[set, int]:
    """The worker's matches (start, end, ids a variable) over the rows in the order Spark
    sorts them, in batches of 100, and the most keys it held at once."""
    plan = kleene.compile(query)
    events = EventColumns(TYPES, "ts", "type", None, "kleene_id")
    fields = [T.StructField(name, kind) for name, kind in TYPES.items()]
    keys = [Key("symbol", F.col("symbol"), "symbol")]
    spec, _ = job_spec(plan, events, fields, keys, ("symbol",), False, False, by_time)
    spec = replace(spec, chunk=256)
    order = (lambda r: (r["ts"], r["kleene_id"])) if by_time else (lambda r: (r["symbol"], r["ts"]))
    table = pa.Table.from_pylist(sorted(rows, key=order))
    held = spark.sparkContext.accumulator(0, PeakParam())
    empty = pa.RecordBatch.from_pylist([], schema=table.schema)  # Spark may hand over one
    batches = [empty, *table.to_batches(100), empty, empty]
    out = pa.Table.from_batches(list(match_batches([spec], None, held)(iter(batches))), spec.schema)
    names = [v.name for v in plan.analysis.positive]
    matches = {
        (
            row["start_ts"],
            row["end_ts"],
            tuple(tuple(e["id"] for e in row[n]) for n in names),
        )
        for row in out.to_pylist()
    }
    return matches, held.value


@pytest.mark.parametrize("query", QUERIES)
def test_keys_interleaved_in_time_order_match_as_in_process_and_stay_few(spark, query):
    rows = ticks()
    events = [
        kleene.Event(
            r["type"], r["ts"], {"symbol": r["symbol"], "price": r["price"]}, r["kleene_id"]
        )
        for r in rows
    ]
    plan = kleene.compile(query)
    names = [v.name for v in plan.analysis.positive]
    expected = {
        (m.start_ts, m.end_ts, tuple(m.ids()[n] for n in names)) for m in kleene.match(plan, events)
    }
    assert expected  # the case means something
    in_time, most = found(rows, query, True, spark)
    assert in_time == expected
    # a key ticks within 31 time units and at most 64 + a chunk's new keys are held before
    # the worker looks: far fewer than the 400 keys it saw
    assert 1 < most < 150
    by_key, one = found(rows, query, False, spark)
    assert by_key == expected
    assert one == 1
