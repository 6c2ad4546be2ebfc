"""Spark Structured Streaming: `detect_stream` on a stock stream arriving as files.

The stream (events over symbols, one timestamp unit apart) is written as Parquet files of
`--batch` events; the query reads one file a micro-batch (`availableNow`, as files arrive
in a folder), for each way of grouping keys (`--buckets`: 0 is a group a key) and number
of state partitions (`--partitions`). A first run, unmeasured, warms the JVM up. Reported
per setting: events per second over the micro-batches after the first (the steady state; the
first pays for Python workers starting), the first micro-batch's time, the state store's
size after the last micro-batch, and the latency from the micro-batch that brought a match's
last event to the one that wrote the match (in micro-batches: median and largest).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.harness import Column, Result, best_of, count
from benchmarks.spark import KEYED
from kleene.testing.workloads import StockStream

__all__ = ["arguments", "feed", "run"]


def feed(folder: Path, size: int, keys: int, batch: int, seed: int = 1) -> int:
    """The stream as numbered Parquet files of `batch` events, each event numbered (`seq`);
    reused if present. Returns how many files."""
    files = -(-size // batch)
    if folder.is_dir() and len(list(folder.glob("*.parquet"))) == files:
        return files
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    stream = StockStream(size=size, symbols=keys, seed=seed, batch=batch)
    start = 0
    for number, columns in enumerate(stream.batches()):
        table = pa.table(dict(columns))
        table = table.append_column("seq", pa.array(range(start, start + table.num_rows)))
        pq.write_table(table, folder / f"part-{number:05d}.parquet")
        start += table.num_rows
    return files


def stream_run(
    folder: Path,
    work: Path,
    query: str,
    buckets: int,
    watermark: float,
    setting: str,
    partitions: int = 2,
) -> Result:
    """One streaming run over every file in `folder`, a file a micro-batch, with the state
    in `partitions` partitions."""
    from kleene.spark import spark_session
    from kleene.spark.stream import detect_stream_job, progress

    spark = spark_session(
        "local[2]",
        {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"},
        app_name="kleene-bench-stream",
    )
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    checkpoint = work / f"checkpoint-{buckets}"
    shutil.rmtree(checkpoint, ignore_errors=True)
    schema = spark.read.parquet(str(folder)).schema
    source = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))
    job = detect_stream_job(source, query, id="seq", watermark=watermark, buckets=buckets)
    emitted: list[tuple[int, int]] = []  # (micro-batch, seq of the match's last event)

    def keep(batch: Any, batch_id: int) -> None:
        emitted.extend((batch_id, row[0]) for row in batch.selectExpr("b[0].seq").collect())

    started = time.perf_counter()
    query_run = (
        job.matches.writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query_run.awaitTermination()
    seconds = time.perf_counter() - started
    batches = progress(query_run)
    data = [b for b in batches if b["events"]]
    steady = data[1:] or data
    events = sum(b["events"] for b in data)
    rate = sum(b["events"] for b in steady) / max(1e-9, sum(b["ms"] for b in steady) / 1000)
    # the micro-batch each event arrived in, from the events each one read
    ends, total = [], 0
    for b in batches:
        total += b["events"]
        ends.append((total, b["batch"]))
    latency = [emit - next(n for end, n in ends if seq < end) for emit, seq in emitted]
    return Result(
        setting,
        f"stream local[2], {partitions} partitions, buckets={buckets}",
        events,
        events / rate,
        len(emitted),
        {
            "batch_s": statistics.mean(b["ms"] for b in steady) / 1000,
            "first_s": data[0]["ms"] / 1000,
            "state_mib": batches[-1]["state_bytes"] / 2**20,
            "latency_median": statistics.median(latency) if latency else 0,
            "latency_max": max(latency, default=0),
            "wall_s": seconds,
        },
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=500_000, help="stream size (500000)")
    parser.add_argument("--keys", type=int, default=1000, help="symbols (1000)")
    parser.add_argument("--batch", type=int, default=50_000, help="events a file (50000)")
    parser.add_argument(
        "--buckets", type=int, nargs="+", default=[0, 64], help="key groupings (0 64)"
    )
    parser.add_argument(
        "--watermark", type=float, default=60, help="watermark delay, timestamp units (60)"
    )
    parser.add_argument(
        "--partitions", type=int, nargs="+", default=[2], help="state partitions (2)"
    )
    parser.add_argument("--work", type=Path, default=Path("build/bench"), help="generated data")


COLUMNS = [
    Column("s a batch", count("batch_s"), ".2f"),
    Column("first batch s", count("first_s"), ".1f"),
    Column("state MiB", count("state_mib"), ".1f"),
    Column("latency (batches, median)", count("latency_median"), ".0f"),
    Column("latency (max)", count("latency_max"), ".0f"),
]


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    folder = args.work / f"stream-{args.events}-{args.keys}-{args.batch}"
    files = feed(folder, args.events, args.keys, args.batch)
    setting = f"keyed, {args.events:,} events, {args.keys:,} symbols, {files} micro-batches"
    # the JVM compiles its hot paths during the first runs: warm it up, unmeasured
    stream_run(folder, args.work, KEYED, args.buckets[0], args.watermark, setting)
    results = []
    for partitions in args.partitions:
        for buckets in args.buckets:
            measure = partial(
                stream_run, folder, args.work, KEYED, buckets, args.watermark, setting, partitions
            )
            results.append(best_of(args.repeat, measure))
            print(f"benchmarks: {results[-1]}", file=sys.stderr)
    return results, COLUMNS, None
