"""`kleene stream`: continuous detection with Spark Structured Streaming over a folder that
files keep arriving in (for example from `kleene replay`)."""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

from kleene.cli.common import (
    check_input_columns,
    compiled_texts,
    input_options,
    locate_failure,
    log,
    plan_arguments,
    query_texts,
    quiet_argument,
    role_types,
    spark_arguments,
    spark_failure,
    spark_for,
    sql_argument,
)
from kleene.cli.plan_options import plan_options
from kleene.compiler.query import Read
from kleene.errors import EventError, KleeneError
from kleene.io.readers import format_of

__all__ = ["add"]

#: How often the command looks at the query's progress (seconds).
_POLL = 0.5


def add(commands: Any) -> None:
    """Add `kleene stream` to the subcommands."""
    stream = commands.add_parser(
        "stream",
        help="find a pattern's matches continuously in a folder that files arrive in (Spark)",
        description="Watch a folder of event files (CSV, JSON lines or Parquet) with Spark "
        "Structured Streaming and write the matches as they become final, once each, to a "
        "folder. The state lives in the checkpoint folder: stop with Ctrl-C and run the same "
        "command again to go on where it stopped. Prints one line a micro-batch.",
    )
    stream.add_argument(
        "query",
        nargs="+",
        help="a query file, or the query text itself; several query files (or a folder of "
        "them) run over one read of the input, each output row with its query's name",
    )
    sql_argument(stream)
    stream.add_argument("--input", "-i", required=True, help="the folder files arrive in")
    stream.add_argument("--checkpoint", required=True, help="the folder for the query's state")
    stream.add_argument("--output", "-o", required=True, help="the folder for the matches")
    stream.add_argument(
        "--output-format", choices=["parquet", "json"], default="parquet", help="(parquet)"
    )
    stream.add_argument(
        "--watermark",
        default="10 minutes",
        help="how late an event may arrive and still be placed exactly ('10 minutes')",
    )
    stream.add_argument("--trigger", help="start a micro-batch this often (5s, 1 minute)")
    stream.add_argument(
        "--available-now",
        action="store_true",
        help="process the files there now, in micro-batches, then move the watermark past "
        "their end so every match is final (as kleene match finds them), and stop",
    )
    stream.add_argument(
        "--keep-open",
        action="store_true",
        help="with --available-now: leave the watermark where the data left it, for a folder "
        "that keeps growing (the matches near its end come in a later run)",
    )
    stream.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="stop cleanly after this long (default: run until Ctrl-C)",
    )
    stream.add_argument(
        "--late", metavar="DIR", help="also write late events to this folder (else counted)"
    )
    stream.add_argument(
        "--schema",
        help="the input's columns as Spark DDL ('ts timestamp, type string, ...'); "
        "by default read from the files already in the folder",
    )
    stream.add_argument("--arrival", help="a column ordering events with equal timestamps")
    stream.add_argument(
        "--max-files", type=int, metavar="N", help="at most N new files a micro-batch"
    )
    stream.add_argument(
        "--partition-by", help="comma-separated columns to group events by (overrides the query)"
    )
    stream.add_argument("--buckets", type=int, help="hash buckets of keys (0: a group a key)")
    input_options(stream)
    plan_arguments(stream, output_format=True)
    stream.add_argument("--master", default="local[*]", help="Spark master (local[*])")
    stream.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        help="run on a Spark Connect server instead of a master (paths are the server's; "
        "its workers need kleene installed: docs/spark.md)",
    )
    stream.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    stream.add_argument("--verbose", action="store_true", help="show Spark's own trace on errors")
    quiet_argument(stream)
    stream.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if args.keep_open and not args.available_now:  # before Spark starts
        raise KleeneError("--keep-open goes with --available-now (a run that stops)")
    if shutil.which("java") is None:
        raise KleeneError("kleene stream needs Java 17 for Spark, and no 'java' is on PATH")
    try:  # kleene.spark says what to install when pyspark is missing
        from kleene.spark import detect_stream_job
        from kleene.spark.batch import refuse_chains
    except ImportError as error:
        raise KleeneError(str(error)) from None
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    from kleene.spark.session import local_cores
    from kleene.spark.stream import final_folder, streamable

    texts = query_texts(args)
    options = plan_options(args.option)
    output = "non_overlapping" if args.non_overlapping else "all"
    settings = {"output": output, "time_unit": args.time_unit, **options}
    queries, compiled = compiled_texts(texts, args, **settings)  # errors before Spark starts
    if args.column_type:
        raise KleeneError("--column-type applies to kleene match; give --schema instead")
    for plan in compiled.values():
        streamable(plan)
    refuse_chains(compiled)
    several = len(compiled) > 1
    job_plan: Any = compiled if several else next(iter(compiled.values()))
    reads = [read for plan in compiled.values() for read in plan.analysis.reads]
    folder = Path(args.input)
    present = folder.is_dir() and any(not p.name.startswith((".", "_")) for p in folder.iterdir())
    if not present and args.format is None:
        raise KleeneError(f"{args.input} holds no files yet to tell the format by; give --format")
    if not present and args.schema is None:
        raise KleeneError(
            f"{args.input} holds no files yet to learn the columns from; give --schema "
            "('ts timestamp, type string, ...')"
        )
    if present:  # the files there now, before Spark starts
        for plan in compiled.values():
            check_input_columns(plan, args.input, args)
    started = time.perf_counter()
    conf = {"spark.ui.showConsoleProgress": str(args.verbose).lower()}
    cores = local_cores(args.master)
    if cores is not None:  # a state partition a core: the cost is per partition and batch
        conf["spark.sql.shuffle.partitions"] = str(cores)
    spark = spark_for(args, conf)
    try:
        job = detect_stream_job(
            _source(spark, args, reads),
            queries if several else next(iter(queries.values())),
            **spark_arguments(args),
            arrival=args.arrival,
            watermark=args.watermark,
            buckets=args.buckets,
            on_late="collect" if args.late else "count",
            final=final_folder(args.checkpoint, start=args.available_now and not args.keep_open),
            **settings,
            **({} if several else {"name": next(iter(queries))}),
        )
    except EventError as error:  # the input does not fit the query: say which input
        error.source = error.source or args.input
        raise
    except (CapturedException, Py4JJavaError) as error:  # reading the files there failed
        if args.verbose:
            raise
        raise spark_failure(error, args.input, args) from None

    def started_query() -> Any:
        return job.start(
            args.output,
            checkpoint=args.checkpoint,
            format=args.output_format,
            late=args.late,
            trigger=args.trigger,
            available_now=args.available_now,
        )

    query = started_query()
    stops = "stops when the files there are done" if args.available_now else "Ctrl-C stops"
    log.info(
        f"streaming {args.input} -> {args.output} (plan "
        f"{', '.join(sorted({plan.name for plan in compiled.values()}))}, grouped "
        f"{job.grouping}; Spark ready in {time.perf_counter() - started:.1f} s); {stops}"
    )
    interrupted = _followed(query, args, job_plan)
    finishing = args.available_now and job.final is not None and not args.keep_open
    if not interrupted and finishing:
        at = job.final_time(query)
        log.info(
            f"done with the files there; the watermark moves to {at.isoformat()}, past "
            "their end, for the matches near it (--keep-open leaves it)"
        )
        job.finish(at)  # a batch reads the row, and Spark runs one more under the watermark
        query = started_query()
        interrupted = _followed(query, args, job_plan)
    if interrupted:
        log.info("stopped; run the same command to go on from the checkpoint")
    elif args.available_now and not finishing:
        _held(query)
    return 0


def _followed(query: Any, args: argparse.Namespace, plan: Any) -> bool:
    """`_follow` the query, a failure said in one line (located by running `plan`, or
    several queries' plans by name, in-process); whether Ctrl-C stopped it."""
    from pyspark.errors import StreamingQueryException

    from kleene.spark.files import unclosed_quotes
    from kleene.spark.session import worker_error

    try:
        return _follow(query, args.duration)
    except KeyboardInterrupt:
        query.stop()
        return True
    except StreamingQueryException as error:
        if args.verbose:
            raise
        found = worker_error(error)
        if found is not None:
            found = locate_failure(found, args.input, args, plan)
        if (args.format or format_of(Path(args.input))) == "csv":
            found = unclosed_quotes(args.input) or found  # what the worker saw, located
        raise found or _failure(error) from None


def _held(query: Any) -> None:
    """Say what an --available-now run leaves waiting: the events after the watermark (the
    input's latest time less the delay) stay in the checkpoint, matched later."""
    from kleene.spark.stream import progress

    batches = progress(query)
    last = batches[-1] if batches else None
    if last is None or not last["state_rows"]:
        return
    log.info(
        f"done with the files there; the watermark stands at {last['watermark']}, and "
        f"{last['state_rows']:,} groups hold events or partial matches after it in the "
        "checkpoint: their matches come when a later run moves the watermark past them "
        "(kleene run finds every match of files that are complete)"
    )


def _source(spark: Any, args: argparse.Namespace, reads: list[Read]) -> Any:
    """The input folder as a streaming DataFrame; malformed rows fail the query (FAILFAST)
    rather than becoming nulls, and a `ts` column of text is read as `kleene run` reads it
    (`text_times`, deciding between numbers and times on the files there so far)."""
    folder = Path(args.input)
    kind = args.format or format_of(folder)  # (`_run` checked there is a way to tell)
    from pyspark.sql.types import StringType

    from kleene.spark.files import (
        CSV_OPTIONS,
        checked_text,
        query_columns,
        read_events_frame,
        text_times,
    )

    schema, sample = args.schema, None
    if schema is None:
        columns = query_columns(reads, role_types(args))
        sample = read_events_frame(spark, args.input, kind, columns=columns)
        if not sample.columns:
            raise KleeneError(
                f"{args.input} holds only empty files yet, no columns to learn; give --schema "
                "('ts timestamp, type string, ...')"
            )
        schema = sample.schema
    reader = spark.readStream.schema(schema)
    if args.max_files:
        reader = reader.option("maxFilesPerTrigger", args.max_files)
    if kind == "csv":
        # each file read whole, so that a quote left open runs to the next line, and fails
        # the query here (`checked_text`), where Spark would close it at the line's end
        reader = reader.options(**CSV_OPTIONS).option("multiLine", True)
        frame = reader.option("mode", "FAILFAST").csv(args.input)
        frame = checked_text(frame, args.on_error, line_breaks=True)
    elif kind == "jsonl":
        frame = checked_text(reader.option("mode", "FAILFAST").json(args.input), args.on_error)
    else:
        frame = reader.parquet(args.input)
    ts = args.ts_column
    if ts in frame.columns and isinstance(frame.schema[ts].dataType, StringType):
        # ISO 8601 text (JSON lines hold times so): read as kleene match reads it
        frame = frame.withColumn(ts, text_times(sample, args.input, ts, args.tz, args.on_error))
    return frame


def _follow(query: Any, duration: float | None) -> bool:
    """Print a line for each micro-batch until the query ends (or `duration` seconds pass,
    or Ctrl-C: then stop it); whether Ctrl-C stopped it.

    Ctrl-C only raises a flag here, which the loop reads between polls: PySpark's own
    handler cancels the jobs through the JVM connection the main thread may be using at
    that moment, and the two calls then read each other's answers."""
    from kleene.spark.stream import progress

    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda number, frame: interrupted.set())
    shown = -1
    until = None if duration is None else time.monotonic() + duration
    try:
        while True:
            ended = query.awaitTermination(_POLL)
            late = until is not None and time.monotonic() >= until
            if not ended and (late or interrupted.is_set()):
                query.stop()
                ended = True
            for batch in progress(query):
                if batch["batch"] <= shown:
                    continue
                shown = batch["batch"]
                log.info(_line(batch))
            if ended:
                return interrupted.is_set()
    finally:
        signal.signal(signal.SIGINT, previous)


def _line(batch: dict[str, Any]) -> str:
    """One micro-batch's counters on one line."""
    late = f", {batch['late']:,} late" if batch["late"] else ""
    skipped = f", {batch['skipped']:,} skipped" if batch["skipped"] else ""
    return (
        f"batch {batch['batch']}: {batch['events']:,} events{late}{skipped}, "
        f"{batch['matches']:,} matches, state {batch['state_rows']:,} groups "
        f"({batch['state_bytes'] / 1024:,.0f} KiB), {batch['ms'] / 1000:.1f} s, "
        f"watermark {batch['watermark']}"
    )


def _failure(error: BaseException) -> KleeneError:
    """A failed query's error in one line: for an input row that does not fit the columns,
    the file, the value and the row as Spark parsed it (from the Java causes)."""
    causes: list[str] = []
    java = getattr(error, "_origin", None)
    while java is not None and len(causes) < 20:
        causes.append(str(java.getMessage() or ""))
        java = java.getCause()
    text = "\n".join([str(error), *causes])
    where = re.search(r"error while reading file (\S+?)\.?\s", text)
    row = re.search(r"Malformed records are detected in record parsing: (\[.*?\])", text)
    if where is not None and row is not None:
        value = next((c for c in reversed(causes) if c and "Malformed" not in c), "")
        return KleeneError(
            f"{where[1]}: a row does not fit the columns ({value}); Spark parsed it as "
            f"{row[1]}; fix the row or the --schema"
        )
    lines = str(error).strip().splitlines()
    return KleeneError(lines[0] if lines else type(error).__name__)
