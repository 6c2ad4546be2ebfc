"""Benchmark: the Spark pipeline against the in-process engine on the same data.

For each setting it generates a stock stream (Parquet, kept under the work folder), runs a
query in-process (read + engine, one core) and on Spark (`local[n]` for each core count, a
fresh session each time), and reports events per second after start-up, the start-up time,
and the largest resident memory of a Python worker. Run it with `kleene bench spark`; the
numbers and the command go in docs/benchmarks.md.
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import kleene
from kleene.bench.workloads import StockStream
from kleene.io import write_columns

__all__ = ["KEYED", "UNKEYED", "Result", "generate", "in_process", "on_spark", "table"]

#: A partitioned query: the example job (partition contiguity, [symbol]), with a window wide
#: enough for a symbol that ticks once every thousand events.
KEYED = (
    "PATTERN SEQ(Stock+ a[], Stock b)\n"
    "WHERE partition_contiguity { [symbol] and a[1].volume > 900 and a[i].price > a[i-1].price\n"
    "    and a.len >= 3 and b.volume < 100 }\n"
    "WITHIN 3 hours"
)
#: A query without partition key: heavy volume, then a thin higher print, within 20 ticks.
UNKEYED = (
    "PATTERN SEQ(Stock a, Stock b)\n"
    "WHERE a.volume > 990 and b.volume < 10 and b.price > a.price\n"
    "WITHIN 20"
)


@dataclass
class Result:
    """One measured run."""

    setting: str
    runner: str
    events: int
    matches: int
    seconds: float
    startup: float = 0.0
    peak_mib: float = 0.0

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


def generate(folder: Path, size: int, keys: int, seed: int = 1) -> Path:
    """A stock stream of `size` events over `keys` symbols as Parquet (reused if present)."""
    path = folder / f"stocks-{size}-{keys}-{seed}.parquet"
    if not path.exists():
        stream = StockStream(size=size, symbols=keys, seed=seed, batch=262_144)
        write_columns(stream.batches(), path)
    return path


def in_process(path: Path, query: str, setting: str) -> Result:
    """Read the file and run the engine on one core; time both."""
    gc.collect()
    started = time.perf_counter()
    engine = kleene.Engine(query)
    found = 0
    events = 0
    for event in kleene.read_events(path):
        events += 1
        found += len(engine.send(event))
    found += len(engine.close())
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Result(setting, "in-process", events, found, seconds, 0.0, peak)


def on_spark(path: Path, query: str, cores: int, setting: str) -> Result:
    """Run detect() on Spark local[cores] in a fresh Python process (so start-up is a cold
    JVM start and worker memory is this run's own), writing to Spark's no-op sink."""
    script = (
        "import json, sys; from dataclasses import asdict; from pathlib import Path\n"
        "from kleene.bench.spark import _spark_run\n"
        "print(json.dumps(asdict(_spark_run(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), "
        "sys.argv[4]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), query, str(cores), setting],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the Spark run failed:\n{done.stderr[-4000:]}")
    return Result(**json.loads(done.stdout.strip().splitlines()[-1]))


def _spark_run(path: Path, query: str, cores: int, setting: str) -> Result:
    from kleene.spark import detection, spark_session

    started = time.perf_counter()
    spark = spark_session(
        f"local[{cores}]",
        {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": str(max(2, 4 * cores)),
            "spark.driver.memory": "4g",
        },
        app_name="kleene-bench",
    )
    spark.range(1).count()  # the JVM and the first job are start-up
    ready = time.perf_counter()
    result = detection(spark.read.parquet(str(path)), query)
    result.matches.write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - ready
    counts = result.counts()
    matches = result.matches.count() if counts["kept"] else 0
    spark.stop()
    return Result(
        setting,
        f"spark local[{cores}] ({result.grouping})",
        counts["read"],
        matches,
        seconds,
        ready - started,
        counts["worker_peak_kib"] / 1024,
    )


def table(results: Sequence[Result]) -> str:
    """The results as a Markdown table, with each Spark run's speed-up over in-process."""
    lines = [
        "| setting | runner | events | matches | events/s | × in-process | start-up s "
        "| worker peak MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    baseline: dict[str, float] = {}
    for result in results:
        if result.runner == "in-process":
            baseline[result.setting] = result.rate
        base = baseline.get(result.setting)
        ratio = f"{result.rate / base:.2f}" if base and result.runner != "in-process" else ""
        peak = f"{result.peak_mib:,.0f}" if result.runner != "in-process" else ""
        startup = f"{result.startup:.1f}" if result.startup else ""
        lines.append(
            f"| {result.setting} | {result.runner} | {result.events:,} | {result.matches:,} | "
            f"{result.rate:,.0f} | {ratio} | {startup} | {peak} |"
        )
    return "\n".join(lines)
