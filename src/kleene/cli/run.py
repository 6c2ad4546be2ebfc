"""`kleene run`: the main job, finding a pattern's matches in files with Spark."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kleene.cli.common import (
    check_input_columns,
    compiled_texts,
    disorder_options,
    input_options,
    is_afa,
    is_statement,
    locate_failure,
    log,
    plan_arguments,
    query_and_input,
    query_texts,
    quiet_argument,
    role_types,
    spark_arguments,
    spark_failure,
    spark_for,
)
from kleene.cli.plan_options import plan_options
from kleene.errors import EventError, KleeneError
from kleene.io.readers import STDIN, gzipped

__all__ = ["add"]


def add(commands: Any) -> None:
    """Add `kleene run` to the subcommands."""
    run = commands.add_parser(
        "run",
        help="find a pattern's matches in files with Spark (the main job)",
        description="Read events (CSV, JSON lines or Parquet: a file or a folder) with Spark, "
        "find the pattern's matches in parallel, and write them (Parquet, CSV or JSON lines, "
        "by the output's extension; Spark writes a folder). Needs the spark extra and Java.",
    )
    query_and_input(run, several=True)
    run.add_argument("--output", "-o", required=True, help="where to write the matches")
    run.add_argument("--overwrite", action="store_true", help="replace an existing output")
    input_options(run)
    disorder_options(run, raising=False)
    plan_arguments(run, output_format=True)
    run.add_argument(
        "--partition-by", help="comma-separated columns to group events by (overrides the query)"
    )
    run.add_argument("--slices", type=int, help="time slices for a query without partition key")
    run.add_argument("--master", default="local[*]", help="Spark master (local[*])")
    run.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        help="run on a Spark Connect server instead of a master (paths are the server's)",
    )
    run.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    run.add_argument(
        "--timeouts",
        metavar="PATH",
        help="also write the partial matches whose time window closed before they completed "
        "(Flink CEP's timed-out partial matches; plan reference) to PATH, in the format its "
        "extension names",
    )
    run.add_argument("--show", type=int, default=0, metavar="N", help="print the first N matches")
    run.add_argument(
        "--verbose", action="store_true", help="show Spark's progress bars and its traces on errors"
    )
    quiet_argument(run)
    run.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    runs_on = args.master if args.remote is None else args.remote
    with _spooled(args.input, args.format, runs_on) as source:
        return _job(args, source)


def _job(args: argparse.Namespace, source: str) -> int:
    """The job on events at `source` (the input, or a copy of standard input)."""
    if shutil.which("java") is None:
        raise KleeneError(
            "kleene run needs Java 17 for Spark, and no 'java' is on PATH; install it "
            "(Debian/Ubuntu: apt-get install openjdk-17-jre-headless)"
        )
    try:
        from kleene.spark import detect_job
        from kleene.spark.batch import refuse_chains
    except ImportError as error:
        raise KleeneError(str(error)) from None
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException
    from pyspark.sql import functions as F

    from kleene.spark.files import (
        check_output,
        query_columns,
        read_events_frame,
        write_matches_frame,
    )
    from kleene.spark.session import worker_error

    texts = query_texts(args)
    for text, _ in texts.values():
        if is_afa(text):
            raise KleeneError(
                "kleene run takes a query; an AFA written directly runs with kleene match"
            )
        if is_statement(text):
            if len(texts) > 1:
                raise KleeneError("a SQL statement around MATCH_RECOGNIZE runs alone in kleene run")
            return _statement(args, source, text)
    options = plan_options(args.option)
    if args.timeouts is not None:
        if len(texts) > 1:
            raise KleeneError("--timeouts takes one query")
        options["timeouts"] = True
    queries, compiled = compiled_texts(texts, args, time_unit=args.time_unit, **options)
    for plan in compiled.values():  # query and schema errors before Spark starts
        check_input_columns(plan, source, args)
    refuse_chains(compiled)
    check_output(args.output, overwrite=args.overwrite)
    if args.timeouts is not None:
        check_output(args.timeouts, overwrite=args.overwrite)
    if args.column_type:
        raise KleeneError("--column-type applies to kleene match; Spark infers column types")
    several = len(queries) > 1
    job_plan: Any = compiled if several else next(iter(compiled.values()))
    started = time.perf_counter()
    spark = spark_for(args, {"spark.ui.showConsoleProgress": str(args.verbose).lower()})
    ready = time.perf_counter()
    try:  # reading the frame and preparing the job run Spark jobs of their own
        reads = [read for plan in compiled.values() for read in plan.analysis.reads]
        columns = query_columns(reads, role_types(args))
        frame = read_events_frame(
            spark,
            source,
            args.format,
            ts=args.ts_column,
            tz=args.tz,
            on_error=args.on_error,
            columns=columns,
        )
        if not frame.columns:  # empty files only: no events, as kleene match reads them
            for path in filter(None, (args.output, args.timeouts)):
                write_matches_frame(spark.createDataFrame([], "pattern string"), path)
            log.info("0 events read (the input is empty), 0 matches")
            return 0
        job = detect_job(
            frame,
            queries if several else next(iter(queries.values())),
            **spark_arguments(args),
            slices=args.slices,
            max_delay=args.max_delay,
            output="non_overlapping" if args.non_overlapping else "all",
            time_unit=args.time_unit,
            **({} if several else {"name": next(iter(queries))}),
            **options,
        )
        matches = job.matches.persist() if args.show or args.timeouts else job.matches
        timed_out = None
        if args.timeouts is not None:  # one job's outputs, in two: matches and timeouts
            kind = F.col("kind")
            timed_out = write_matches_frame(
                matches.filter(kind == "timeout"), args.timeouts, overwrite=args.overwrite
            )
            matches = matches.filter(kind == "match").drop("kind")
        written = write_matches_frame(matches, args.output, overwrite=args.overwrite)
    except EventError as error:  # the frame does not fit the query: in which input
        error.source = error.source or source
        raise
    except (CapturedException, Py4JJavaError) as error:  # a worker or a reader failed
        if args.verbose:
            raise
        found = worker_error(error)
        if found is not None:
            found = locate_failure(found, source, args, job_plan)
        raise found or spark_failure(error, source, args) from None
    finished = time.perf_counter()
    counts = job.counts()
    plans_used = sorted({plan.name for plan in compiled.values()})
    outcome = (
        f"{written:,} outputs of {len(compiled)} queries"
        if several
        else job.plan.output.counted(written)
    )
    log.info(
        f"{counts['read']:,} events read, {counts['kept']:,} after filtering, {outcome}"
        + ("" if timed_out is None else f", {timed_out:,} timed-out partial matches")
        + f" in {finished - ready:.1f} s (+{ready - started:.1f} s Spark start; "
        f"plan {', '.join(plans_used)}, grouped {job.grouping})"
    )
    if counts["skipped"]:
        rows = f"{counts['skipped']:,} row{'s' if counts['skipped'] != 1 else ''}"
        log.warning(
            f"skipped {rows} without timestamp or type, or with a timestamp that is not one"
        )
    if counts["late"]:
        log.warning(
            f"dropped {counts['late']:,} late rows (more than --max-delay behind the "
            "latest timestamp before them); raise --max-delay to keep them"
        )
    if args.show:
        shown = matches if several else _first(matches, job.plan.output)
        for number, row in enumerate(shown.limit(args.show).collect(), 1):
            output = compiled[row["query"]].output if several else job.plan.output
            named = f"{row['query']}: " if several else ""
            print(f"{number:>3}. {named}{_short_row(row, output)}")
    return 0


def _first(matches: Any, output: Any) -> Any:
    """The outputs of one query in the order --show prints them: emitted events by time,
    matches by end and start, MATCH_RECOGNIZE's rows as they come."""
    if output.kind == "events":
        return matches.orderBy("ts")
    if output.kind == "rows":
        return matches
    return matches.orderBy("end_ts", "start_ts")


def _statement(args: argparse.Namespace, source: str, text: str) -> int:
    """A SQL statement around MATCH_RECOGNIZE tables (`kleene.spark.sql`): the input is
    the table each of them reads by name; Spark SQL runs the rest."""
    from kleene.spark.files import check_output, read_events_frame, write_matches_frame
    from kleene.spark.recognize import relations, sql

    names = relations(text)
    if not names:
        raise KleeneError(
            "the statement reads no table by name before MATCH_RECOGNIZE; name the one the "
            "input stands for (SELECT … FROM events MATCH_RECOGNIZE (…))"
        )
    check_output(args.output, overwrite=args.overwrite)
    started = time.perf_counter()
    spark = spark_for(args, {"spark.ui.showConsoleProgress": str(args.verbose).lower()})
    ready = time.perf_counter()
    frame = read_events_frame(
        spark, source, args.format, ts=args.ts_column, tz=args.tz, on_error=args.on_error
    )
    for view in names:
        frame.createOrReplaceTempView(view)
    found = sql(spark, text)
    if args.show:
        found = found.persist()
    written = write_matches_frame(found, args.output, overwrite=args.overwrite)
    log.info(
        f"{written:,} rows in {time.perf_counter() - ready:.1f} s "
        f"(+{ready - started:.1f} s Spark start; the input as {', '.join(names)})"
    )
    for number, row in enumerate(found.limit(args.show).collect() if args.show else [], 1):
        print(f"{number:>3}. " + " ".join(f"{k}={v}" for k, v in row.asDict().items()))
    return 0


@contextmanager
def _spooled(path: str, format: str | None, master: str) -> Iterator[str]:  # noqa: A002
    """The input as a path Spark can read: standard input (`-`) is copied to a temporary
    file first (named .gz when it is gzip: Spark tells compression by the name)."""
    if path != STDIN:
        yield path
        return
    if format is None:
        raise KleeneError("standard input (-) has no extension; name its format (--format)")
    if not master.startswith("local"):
        raise KleeneError(
            "standard input (-) is copied to a local file, which only a local master reads; "
            "put the events where the cluster reads them"
        )
    raw = sys.stdin.buffer
    with tempfile.TemporaryDirectory(prefix="kleene-stdin-") as folder:
        target = Path(folder) / f"events.{format}"
        if gzipped(raw):
            target = target.with_name(f"{target.name}.gz")
        with target.open("wb") as out:
            shutil.copyfileobj(raw, out)
        yield str(target)


def _short_row(row: Any, output: Any) -> str:
    """An output row of the Spark job on one line: an emitted event's time, type and values;
    MATCH_RECOGNIZE's row as it is; a match's time span and each variable's ids."""
    values = {k: v for k, v in row.asDict().items() if k != "query"}
    if output.kind == "events":  # a rule's emitted events
        own = {k: v for k, v in values.items() if k not in ("type", "ts", "key")}
        return f"{row['ts']}  {row['type']} {own}"
    if output.kind == "rows":
        return " ".join(f"{k}={v}" for k, v in values.items())
    parts = [
        f"{name}=[{', '.join(str(e['id']) for e in row[name])}]"
        for name in output.variables
        if row[name] is not None
    ]
    return f"{row['start_ts']} .. {row['end_ts']}  {' '.join(parts)}"
