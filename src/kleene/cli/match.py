"""`kleene match`: find a pattern's matches in files, in-process."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any

import kleene
import kleene.io
from kleene.cli.common import (
    as_sql,
    disorder_options,
    event_columns,
    input_options,
    is_afa,
    is_statement,
    log,
    named_texts,
    plan_arguments,
    progress,
    query_and_input,
    query_files,
    query_text,
    quiet_argument,
    warn_growth,
)
from kleene.cli.plan_options import pair, plan_options
from kleene.compiler.query import Output
from kleene.errors import EventError, KleeneError
from kleene.events import Event
from kleene.io.matching import check_input
from kleene.io.readers import EventReader
from kleene.io.writers import NamedOutputs, check_overwrite
from kleene.matches import Timeout, event_record
from kleene.runtime.engine import fewer_collections, settle
from kleene.runtime.metrics import Metrics
from kleene.runtime.queries import Queries

__all__ = ["add"]


def add(commands: Any) -> None:
    """Add `kleene match` to the subcommands."""
    match = commands.add_parser(
        "match",
        help="find a pattern's matches in a file of events",
        description="Find a pattern's matches in a CSV, JSON lines or Parquet file (a "
        "folder of them, or standard input), in-process. Matches are written as JSON lines, "
        "or in the format the --output file's extension names.",
    )
    query_and_input(match, several=True)
    input_options(match)
    disorder_options(match)
    match.add_argument(
        "--output",
        "-o",
        help="write matches here: .jsonl (or .json), .csv or .parquet, .jsonl.gz or .csv.gz "
        "(default: JSON lines on standard output); written whole or not at all",
    )
    match.add_argument(
        "--overwrite", action="store_true", help="replace an existing output (as kleene run)"
    )
    plan_arguments(match, output_format=True)
    match.add_argument(
        "--timeouts",
        metavar="FILE",
        help="also write the partial matches whose time window closed before they completed "
        "(Flink CEP's timed-out partial matches; plan reference) to FILE, in the format its "
        "extension names, each with its deadline",
    )
    match.add_argument("--limit", type=int, help="stop after this many matches")
    match.add_argument(
        "--show",
        type=int,
        default=0,
        metavar="N",
        help="also print the first N matches as short lines (on standard output when "
        "--output names a file, else on standard error)",
    )
    match.add_argument("--stats", action="store_true", help="print the engine's counters")
    match.add_argument(
        "--progress",
        choices=["auto", "on", "off"],
        default="auto",
        help="show progress on stderr (auto: when it is a terminal)",
    )
    quiet_argument(match)
    match.set_defaults(run=_match)


def _match(args: argparse.Namespace) -> int:
    for path in (args.output, args.timeouts):
        if path not in (None, "-"):
            kleene.io.output_format(path)  # an unknown extension fails before reading
    if args.timeouts == "-" and args.output in (None, "-"):
        raise KleeneError("--timeouts - and the matches cannot both go to standard output")
    args.query = query_files(args.query)
    if len(args.query) > 1:
        return _match_several(args)
    text, name = query_text(args.query[0])
    if is_statement(text):
        raise KleeneError(
            "a SQL statement around MATCH_RECOGNIZE runs on Spark SQL: kleene run; kleene "
            "match takes the MATCH_RECOGNIZE ( … ) clause alone"
        )
    pattern: Any = as_sql(text, args, args.query[0])
    if is_afa(text):  # an AFA written directly runs on the afa plan
        pattern = kleene.afa.read_afa(text, time_unit=args.time_unit)
        name = pattern.name
    engine = kleene.Engine(
        pattern,
        args.plan,
        output="non_overlapping" if args.non_overlapping else "all",
        time_unit=args.time_unit,
        name=name,
        max_delay=args.max_delay,
        on_late=args.on_late,
        timeouts=args.timeouts is not None,
        **plan_options(args.option),
    )
    warn_growth(engine.plan)
    event_columns(args, [engine.plan.analysis])
    for path in (args.output, args.timeouts):  # before anything is read, as kleene run
        check_overwrite(path, args.overwrite)
    reader = _reader(args)
    started = time.perf_counter()
    written = timed_out = 0
    shown: list[kleene.Match | kleene.Event] = []
    shows = "off" if args.quiet else args.progress

    def rows() -> int | None:  # the bar's total, when the input says it cheaply
        return kleene.io.readers.count_rows(args.input, args.format)

    with (
        kleene.io.match_output(args.output, engine.plan.output) as write,
        _timeouts_output(args.timeouts, engine.plan.output) as write_timeouts,
        progress(shows, rows) as tick,
        fewer_collections(),
    ):
        events = check_input(engine.plan, reader)
        made = _made(engine, _chunks(events, tick, lambda: reader.rows), reader)
        for batch in made:
            found, late = _split(batch)
            timed_out += write_timeouts(late) if late else 0
            shown.extend(found[: args.show - len(shown)])
            written += write(_limited(found, args.limit, written))
            if args.limit is not None and written >= args.limit:
                made.close()
                break
    display = sys.stdout if args.output not in (None, "-") else sys.stderr
    fields = list(dict.fromkeys(read.attr for read in engine.plan.analysis.reads))
    output = engine.plan.output
    for number, each in enumerate(shown, 1):
        print(f"{number:>3}. {_short(each, fields, output)}", file=display)
    seconds = time.perf_counter() - started
    metrics = engine.metrics
    outcome = output.counted(written)
    if metrics.retractions:  # a speculative plan (afa): the lines are a changelog
        net = metrics.matches - metrics.retractions
        outcome = (
            f"{written:,} lines: {output.counted(metrics.matches)}, {metrics.retractions:,} "
            f'withdrawn ("retraction": true), {net:,} net'
        )
    if args.timeouts:
        outcome += f", {timed_out:,} timed-out partial matches ({args.timeouts})"
    events = f"{metrics.events:,} events"
    if not reader.rows:
        events = "0 events read (the input is empty)"  # as `kleene run` says it
    elif reader.left_out:  # rows no variable can take, left out as they were read
        events = f"{reader.rows:,} events ({reader.left_out:,} no variable can take, left out)"
    log.info(f"{events}, {outcome}, {seconds:.2f} s (plan {engine.plan.name})")
    _close_report(reader, metrics, args.stats)
    return 0


def _match_several(args: argparse.Namespace) -> int:
    """`kleene match` of several query files at once: one engine of several queries, each
    output with its query's name (`NamedOutputs`: `query` first in every record and row)."""
    if args.timeouts is not None:
        raise KleeneError("--timeouts takes one query")
    named = named_texts(args.query)
    engine = kleene.Engine(
        named,
        args.plan,
        output="non_overlapping" if args.non_overlapping else "all",
        time_unit=args.time_unit,
        max_delay=args.max_delay,
        on_late=args.on_late,
        **plan_options(args.option),
    )
    assert isinstance(engine, Queries)
    for lane in engine.queries.values():
        warn_growth(lane.plan)
    event_columns(args, [lane.plan.analysis for lane in engine.queries.values()])
    check_overwrite(args.output, args.overwrite)
    reader = _reader(args)
    started = time.perf_counter()
    outputs = NamedOutputs(
        {name: lane.plan.output for name, lane in engine.queries.items()}, engine.query_of
    )
    written = 0
    counts = dict.fromkeys(engine.queries, 0)
    shown: list[Any] = []
    with (
        kleene.io.match_output(args.output, outputs) as write,
        progress(
            "off" if args.quiet else args.progress,
            lambda: kleene.io.readers.count_rows(args.input, args.format),
        ) as tick,
        fewer_collections(),
    ):
        made = _made(engine, _chunks(reader, tick, lambda: reader.rows), reader)
        for batch in made:
            kept = _limited(batch, args.limit, written)
            for each in kept:
                counts[engine.query_of(each)] += 1
            shown.extend(kept[: args.show - len(shown)])
            written += write(kept)
            if args.limit is not None and written >= args.limit:
                made.close()
                break
    display = sys.stdout if args.output not in (None, "-") else sys.stderr
    for number, each in enumerate(shown, 1):
        name = engine.query_of(each)
        lane = engine.queries[name]
        fields = list(dict.fromkeys(read.attr for read in lane.plan.analysis.reads))
        print(f"{number:>3}. {name}: {_short(each, fields, lane.plan.output)}", file=display)
    metrics = engine.metrics
    each_query = ", ".join(f"{name} {count:,}" for name, count in counts.items())
    log.info(
        f"{metrics.events:,} events, {written:,} outputs of {len(named)} queries "
        f"({each_query}), {time.perf_counter() - started:.2f} s"
    )
    _close_report(reader, metrics, args.stats)
    return 0


def _close_report(reader: EventReader, metrics: Metrics, stats: bool) -> None:
    """What the run skipped and dropped (warnings), and with --stats the counters."""
    if reader.report():
        log.warning(reader.report())
    if metrics.late:
        log.warning(
            f"dropped {metrics.late:,} late events (more than --max-delay behind the "
            "latest timestamp); raise --max-delay to keep them"
        )
    if stats:
        _print_stats(metrics)


def _reader(args: argparse.Namespace) -> EventReader:
    """The reader of the command's input, as its options say."""
    return kleene.io.read_events(
        args.input,
        args.format,
        type=args.type_column,
        ts=args.ts_column,
        id=args.id_column,
        event_type=args.event_type,
        tz=args.tz,
        ts_unit=args.ts_unit,
        on_error=args.on_error,
        column_types=dict(pair(item) for item in args.column_type),
    )


def _print_stats(metrics: Metrics) -> None:
    """The engine's counters (`--stats`), aligned, with the process's peak memory."""
    counts = metrics.as_dict()
    peak = _peak_memory_kib()
    if peak is not None:  # the process's, as the lazy-NFA paper measures memory
        counts["peak_memory_kib"] = peak
    names = max(map(len, counts))
    numbers = max(len(f"{value:,}") for value in counts.values())
    for key, value in counts.items():
        print(f"  {key:<{names}}  {value:>{numbers},}", file=sys.stderr)


def _peak_memory_kib() -> int | None:
    """The most memory this process has held (its peak resident set), where the system
    says (not on Windows)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes there, KiB elsewhere


def _short(found: Any, fields: list[str], output: Output) -> str:
    """A match on one line: its time span and its RETURN values, or else each variable's
    events, each with its id and the attributes the query reads (`fields`); an emitted
    event: its time, type and attributes; a row: its columns."""
    if output.kind == "events":
        return f"{found.ts}  {found.type} {dict(found.attrs)}"
    if output.kind == "rows":
        return " ".join(f"{name}={_shown(value)}" for name, value in found.items())

    def event(e: kleene.Event) -> str:
        values = " ".join(f"{f}={_shown(e.attrs[f])}" for f in fields if f in e.attrs)
        shown = event_record(e)["id"]  # as the output's records have it (docs/output.md)
        return f"{shown} {values}".strip()

    if found.values is not None:  # RETURN: the values the query asks for
        parts = " ".join(f"{name}={_shown(value)}" for name, value in found.values.items())
    else:
        parts = " ".join(
            f"{name}=[{', '.join(event(e) for e in events)}]"
            for name, events in found.bindings.items()
        )
    return f"{found.start_ts} .. {found.end_ts}  {parts}"


def _shown(value: Any) -> str:
    """A value as `--show` prints it: a float to 12 significant digits (13.06, not the
    13.059999999999999 a sum of prices may hold), a time in ISO 8601, anything else as
    Python writes it."""
    if isinstance(value, float):
        return format(value, ".12g")
    if isinstance(value, datetime | date):
        return value.isoformat()
    return repr(value)


@contextmanager
def _timeouts_output(path: str | None, output: Output) -> Iterator[Callable[[list[Any]], int]]:
    """Where timed-out partial matches go (`--timeouts FILE`); nowhere without it."""
    if path is None:
        yield lambda found: 0
        return
    with kleene.io.match_output(path, output) as write:
        yield write


def _split(found: list[Any]) -> tuple[list[Any], list[Any]]:
    """The matches, and the timed-out partial matches among them."""
    late = [m for m in found if isinstance(m, Timeout)]
    if not late:
        return found, late
    return [m for m in found if not isinstance(m, Timeout)], late


def _chunks(
    events: Any, tick: Any, read: Callable[[], int], size: int = 4096
) -> Iterator[list[Event]]:
    """The events in lists of `size`; after each, the progress bar moves on by the rows
    `read` since (more than the events, where rows no variable can take are left out)."""
    chunk: list[Event] = []
    done = 0
    for event in events:
        chunk.append(event)
        if len(chunk) >= size:
            yield chunk
            tick(read() - done)
            done = read()
            chunk = []
    if chunk:
        yield chunk
    tick(read() - done)


def _closed(engine: kleene.Engine, reader: EventReader) -> list[Any]:
    """What closing the engine reports (an event it still held may be at fault)."""
    try:
        return engine.close()
    except EventError as error:
        raise reader.locate(error) from None


def _made(
    engine: kleene.Engine, chunks: Iterator[list[Event]], reader: EventReader, size: int = 4096
) -> Generator[list[Any], None, None]:
    """What the events make the engine report, in lists of up to `size` handed on as they
    fill (`Engine.send_iter`: an event completing very many matches is written out as they
    come) and at the end of each chunk of events, then what closing it reports. An error
    the engine finds in an event (a time going back, values clashing in a condition) names
    the event's file and row; with --on-error skip the event is skipped and counted (the
    partial matches it was extending go on without it), and the events after it are sent."""
    for chunk in chunks:
        batch: list[Any] = []
        events = iter(chunk)
        while True:
            try:
                for found in engine.send_iter(events):
                    batch.append(found)
                    if len(batch) >= size:
                        yield batch
                        batch = []
                break
            except EventError as error:
                reader.fail(reader.locate(error))
        if batch:
            yield batch
        settle()
    closed = _closed(engine, reader)
    if closed:
        yield closed


def _limited(found: list[Any], limit: int | None, written: int) -> list[Any]:
    """The outputs that stay within --limit, `written` being written already."""
    return found if limit is None else found[: max(0, limit - written)]
