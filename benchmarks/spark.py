"""The Spark pipeline against the in-process engine on the same data.

For each setting it generates a stock stream (Parquet, kept under the work folder), runs a
query in-process (read + engine, one core) and on Spark (`local[n]` for each core count, a
fresh session in a fresh Python process each time), and reports events per second after
start-up, the start-up time, the largest resident memory of a Python worker, the wall time
per event and, for Spark, its overhead per event: the time per event beyond the in-process
run's. The first Spark job of a session also compiles the JVM's code and starts the Python
workers (9–10 s of the keyed query's 18 s at 1M events on 2 cores); the same job run again
in the session is reported beside it as warm.

CPU time per event counts every process of a run: the in-process run's own, and for Spark
the driver, the JVM and every Python worker together, read from a cpuacct cgroup made for
the run (cgroup v1 `cpuacct.usage` or v2 `cpu.stat`; where none can be made, as without
root, the CPU columns stay empty). A Spark job's CPU is what the cgroup used from the job's
start to its end (start-up apart), for the cold and the warm job alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import kleene
from benchmarks.harness import ROOT, Column, Result, best_of, count
from kleene.io import write_columns
from kleene.io.matching import check_input
from kleene.testing.workloads import StockStream

__all__ = ["KEYED", "UNKEYED", "arguments", "generate", "in_process", "on_spark", "run"]

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
IN_PROCESS = "in-process"


def generate(folder: Path, size: int, keys: int, seed: int = 1) -> Path:
    """A stock stream of `size` events over `keys` symbols as Parquet (reused if present)."""
    path = folder / f"stocks-{size}-{keys}-{seed}.parquet"
    if not path.exists():
        stream = StockStream(size=size, symbols=keys, seed=seed, batch=262_144)
        write_columns(stream.batches(), path)
    return path


def in_process(path: Path, query: str, setting: str) -> Result:
    """Read the file and run the engine on one core as `kleene.match` does (`send_many`;
    rows no variable can take are left out as they are read, as Spark's push-down filter
    leaves them out); time both. The events counted are the rows read."""
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    engine = kleene.Engine(query)
    reader = kleene.read_events(path)
    found = len(engine.send_many(check_input(engine.plan, reader))) + len(engine.close())
    seconds = time.perf_counter() - started
    used = {"cpu_us_event": 1e6 * (time.process_time() - cpu) / reader.rows}
    return Result(setting, IN_PROCESS, reader.rows, seconds, found, used)


def on_spark(path: Path, query: str, cores: int, setting: str) -> Result:
    """Run `detect` on Spark local[cores] in a fresh Python process (so start-up is a cold
    JVM start and worker memory is this run's own), writing to Spark's no-op sink."""
    script = (
        "import json, sys; from dataclasses import asdict; from pathlib import Path\n"
        "from benchmarks.spark import spark_run\n"
        "print(json.dumps(asdict(spark_run(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), "
        "sys.argv[4]))))"
    )
    path_entries = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path_entries)}
    with _cgroup() as group:
        if group is not None:
            env[_USAGE] = str(group.usage)
        done = subprocess.run(
            [sys.executable, "-c", script, str(path), query, str(cores), setting],
            capture_output=True,
            text=True,
            check=False,
            env=env,
            preexec_fn=None if group is None else group.join,
        )
    if done.returncode != 0:
        raise RuntimeError(f"the Spark run failed:\n{done.stderr[-4000:]}")
    return Result(**json.loads(done.stdout.strip().splitlines()[-1]))


def spark_run(path: Path, query: str, cores: int, setting: str) -> Result:
    """One Spark run in this process (`on_spark` runs it in a fresh one)."""
    from kleene.spark import detect_job, spark_session

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
    ready, cpu = time.perf_counter(), _used()
    job = detect_job(spark.read.parquet(str(path)), query)
    job.matches.write.format("noop").mode("overwrite").save()
    seconds, cold = time.perf_counter() - ready, _used()
    counts = job.counts()
    matches = job.matches.count() if counts["kept"] else 0
    # the same job again: the JVM's code is compiled and the Python workers are up
    again, before = time.perf_counter(), _used()
    detect_job(spark.read.parquet(str(path)), query).matches.write.format("noop").mode(
        "overwrite"
    ).save()
    warm, after = time.perf_counter() - again, _used()
    spark.stop()
    used = {}
    if cpu is not None and cold is not None and before is not None and after is not None:
        used = {
            "cpu_us_event": (cold - cpu) / 1e3 / counts["read"],
            "warm_cpu_us_event": (after - before) / 1e3 / counts["read"],
        }
    return Result(
        setting,
        f"spark local[{cores}] ({job.grouping})",
        counts["read"],
        seconds,
        matches,
        {
            "startup_s": ready - started,
            "worker_peak_mib": counts["worker_peak_kib"] / 1024,
            "warm_events_s": counts["read"] / warm,
            **used,
        },
    )


#: The environment variable naming the file the run's cgroup reports its CPU time in.
_USAGE = "KLEENE_BENCH_CPU_USAGE"


@dataclass(frozen=True)
class _Group:
    """A cgroup made for one run: the file to join it by and the one it reports CPU in."""

    procs: Path
    usage: Path

    def join(self) -> None:
        """Move the calling process (a child about to run the command) into the group."""
        self.procs.write_text(str(os.getpid()))


@contextmanager
def _cgroup() -> Iterator[_Group | None]:
    """A new cpuacct cgroup (v1) or cgroup (v2) for one run, removed after; None when none
    can be made here."""
    name = f"kleene-bench-{os.getpid()}-{time.monotonic_ns()}"
    for parent, usage in (
        (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"),
        (Path("/sys/fs/cgroup"), "cpu.stat"),
    ):
        folder = parent / name
        try:
            folder.mkdir()
        except OSError:
            continue
        if not (folder / usage).exists():
            folder.rmdir()
            continue
        try:
            yield _Group(folder / "cgroup.procs", folder / usage)
        finally:
            for _ in range(50):  # the run's processes leave it as they end
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        return
    yield None


def _used() -> float | None:
    """The CPU nanoseconds the run's cgroup has used so far (None: no cgroup)."""
    where = os.environ.get(_USAGE)
    if where is None:
        return None
    text = Path(where).read_text()
    if where.endswith("cpu.stat"):  # v2: "usage_usec N" among its lines
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return float(fields["usage_usec"]) * 1e3
    return float(text)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--events", type=int, nargs="+", default=[1_000_000], help="stream sizes (1000000)"
    )
    parser.add_argument("--keys", type=int, default=1000, help="symbols in the stream (1000)")
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2], help="Spark cores (1 2)")
    parser.add_argument(
        "--queries",
        nargs="+",
        choices=["keyed", "unkeyed"],
        default=["keyed", "unkeyed"],
        help="which queries (both)",
    )
    parser.add_argument("--skip-in-process", action="store_true", help="only run Spark")
    parser.add_argument("--work", type=Path, default=Path("build/bench"), help="generated data")


def per_event(result: Result, _: Result | None) -> float:
    """Wall µs per event (after start-up: in-process has none)."""
    return 1e6 * result.seconds / result.events


def overhead(result: Result, in_process: Result | None) -> float | None:
    """What the Spark path costs per event beyond the in-process run of the same setting
    (read + match), in wall µs on all its cores: negative when Spark is faster."""
    if in_process is None or result is in_process:
        return None
    return per_event(result, None) - per_event(in_process, None)


def warm_ratio(result: Result, in_process: Result | None) -> float | None:
    """The warm run's events/s against the in-process run's."""
    warm = result.counts.get("warm_events_s")
    return None if warm is None or in_process is None else warm / in_process.throughput


def cpu_ratio(result: Result, in_process: Result | None) -> float | None:
    """CPU per event against the in-process run's (both figures are in their columns)."""
    mine = result.counts.get("cpu_us_event")
    theirs = None if in_process is None else in_process.counts.get("cpu_us_event")
    return None if mine is None or not theirs else mine / theirs


COLUMNS = [
    Column("start-up s", count("startup_s"), ".1f"),
    Column("CPU µs/event", count("cpu_us_event"), ".2f"),
    Column("CPU vs in-process", cpu_ratio, ".2f"),
    Column("warm CPU µs/event", count("warm_cpu_us_event"), ".2f"),
    Column("worker peak MiB", count("worker_peak_mib")),
    Column("µs/event", per_event, ".2f"),
    Column("overhead µs/event", overhead, "+.2f"),
    Column("warm events/s", count("warm_events_s")),
    Column("warm vs in-process", warm_ratio, ".2f"),
]


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    args.work.mkdir(parents=True, exist_ok=True)
    queries = {"keyed": KEYED, "unkeyed": UNKEYED}
    results = []
    for size in args.events:
        path = generate(args.work, size, args.keys)
        for name in args.queries:
            setting = f"{name}, {size:,} events, {args.keys:,} symbols"
            query = queries[name]
            measures = [] if args.skip_in_process else [partial(in_process, path, query, setting)]
            measures += [partial(on_spark, path, query, cores, setting) for cores in args.cores]
            for measure in measures:
                results.append(best_of(args.repeat, measure))
                print(f"benchmarks: {results[-1]}", file=sys.stderr)
    return results, COLUMNS, IN_PROCESS
