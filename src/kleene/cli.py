"""The `kleene` command: match patterns in files, explain queries, generate data.

    kleene run QUERY --input PATH --output PATH [--master URL] [--conf KEY=VALUE] ...
    kleene match QUERY --input FILE [--output FILE] [--plan NAME] [--stats] ...
    kleene explain QUERY
    kleene gen stock --output FILE [--events N] [--symbols K] [--ratio R] ...

QUERY is a query file or the query text itself. Matches go out as JSON lines; messages and
the summary go to stderr. Exit status: 0 done, 1 a query or data error (the message says
where), 2 a usage error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import kleene
import kleene.io
from kleene.errors import KleeneError
from kleene.events import Event

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.run(args)
        return result
    except KleeneError as error:
        print(f"kleene: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        print("kleene: interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    """After the reader of our output went away (`| head`), drop what is left quietly."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kleene",
        description="Complex event processing: find SASE+ patterns in event streams.",
    )
    parser.add_argument("--version", action="version", version=f"kleene {kleene.__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="find a pattern's matches in files with Spark (the main job)",
        description="Read events (CSV, JSON lines or Parquet: a file or a folder) with Spark, "
        "find the pattern's matches in parallel, and write them (Parquet, CSV or JSON lines, "
        "by the output's extension; Spark writes a folder). Needs the spark extra and Java.",
    )
    _query_and_input(run)
    run.add_argument("--output", "-o", required=True, help="where to write the matches")
    run.add_argument("--overwrite", action="store_true", help="replace an existing output")
    _input_options(run)
    _plan_options(run, output_format=True)
    run.add_argument(
        "--partition-by", help="comma-separated columns to group events by (overrides the query)"
    )
    run.add_argument("--slices", type=int, help="time slices for a query without partition key")
    run.add_argument("--master", default="local[*]", help="Spark master (local[*])")
    run.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    run.add_argument("--show", type=int, default=0, metavar="N", help="print the first N matches")
    run.set_defaults(run=_run)

    match = commands.add_parser(
        "match",
        help="find a pattern's matches in a file of events",
        description="Find a pattern's matches in a CSV, JSON lines or Parquet file (or a "
        "folder of them), in-process. Matches are written as JSON lines.",
    )
    _query_and_input(match)
    _input_options(match)
    match.add_argument("--output", "-o", help="write matches here (default: standard output)")
    _plan_options(match, output_format=True)
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
    match.set_defaults(run=_match)

    explain = commands.add_parser(
        "explain",
        help="print a query in canonical form and what kleene derives from it",
        description="Print the canonical query, its variables, properties, relationships, "
        "partition key, ordering constraints, window and plan.",
    )
    explain.add_argument("query", help="a query file, or the query text itself")
    _plan_options(explain)
    explain.add_argument("--dot", metavar="FILE", help="write the plan's automaton as Graphviz DOT")
    explain.add_argument(
        "--png", metavar="FILE", help="draw the automaton as PNG (needs Graphviz's dot command)"
    )
    explain.set_defaults(run=_explain)

    bench = commands.add_parser(
        "bench", help="run a benchmark", description="Run a benchmark; see docs/benchmarks.md."
    )
    suites = bench.add_subparsers(title="benchmarks", required=True, metavar="NAME")
    spark = suites.add_parser(
        "spark",
        help="the Spark pipeline against the in-process engine",
        description="Generate stock streams and run a partitioned and an unpartitioned query "
        "in-process and on Spark local[n]; print a Markdown table.",
    )
    spark.add_argument(
        "--events", type=int, nargs="+", default=[1_000_000], help="stream sizes (1000000)"
    )
    spark.add_argument("--keys", type=int, default=1000, help="symbols in the stream (1000)")
    spark.add_argument("--cores", type=int, nargs="+", default=[1, 2], help="Spark cores (1 2)")
    spark.add_argument(
        "--queries",
        nargs="+",
        choices=["keyed", "unkeyed"],
        default=["keyed", "unkeyed"],
        help="which queries (both)",
    )
    spark.add_argument("--skip-in-process", action="store_true", help="only run Spark")
    spark.add_argument("--work", default="build/bench", help="folder for generated data")
    spark.set_defaults(run=_bench_spark)

    nfa = suites.add_parser(
        "nfa",
        help="the SASE+ experiments: Kleene closure queries, basic vs merging",
        description="Run the SASE+ paper's query template (PATTERN SEQ(Stock+ a[], Stock b)) "
        "over a generated two-symbol stock stream with each predicate, strategy and partition "
        "window; print a Markdown table with throughput ratios to the first plan setting.",
    )
    nfa.add_argument("--events", type=int, default=20_000, help="stream size (20000)")
    nfa.add_argument("--predicates", nargs="+", default=["p1", "p2", "p3"], help="p1 p2 p3")
    nfa.add_argument("--strategies", nargs="+", default=["s2", "s3"], help="s2 s3")
    nfa.add_argument("--windows", type=int, nargs="+", default=[500], help="partition windows")
    nfa.add_argument("--modulus", type=int, default=100, help="M in a[1].price %% M = 0 (100)")
    nfa.add_argument("--p-up", type=float, default=0.7, help="chance a price rises (0.7)")
    nfa.add_argument(
        "--plans",
        nargs="+",
        default=["nfa:merge=False", "nfa"],
        help="plans to compare, NAME or NAME:option=value (nfa:merge=False nfa)",
    )
    nfa.add_argument(
        "--breakdown",
        action="store_true",
        help="run each nfa setting again with construct=False and report the share of time "
        "spent matching (the rest builds the matches)",
    )
    nfa.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each setting N times and keep the fastest (1); on a shared machine the "
        "slower runs measure the neighbours",
    )
    nfa.set_defaults(run=_bench_nfa)

    window = suites.add_parser(
        "window",
        help="the match-window experiments: Pseq and Pset, pruning f / fp / fpc",
        description="Run Pseq(k) = SEQ(T1 v1, ..., Tk vk) and Pset(k) = AND(...) with the "
        "match_window plan around --inner, with each pruning, over a hospital log (--data: "
        "the BPIC 2011 events .csv.gz; a generated one otherwise) or a stock stream; print "
        "a Markdown table with each pruning's throughput over the plain window's.",
    )
    window.add_argument("--stream", choices=["hospital", "stock"], default="hospital")
    window.add_argument(
        "--data",
        help="a real hospital log: bpic2011_hospital_events.csv.gz or sepsis_events_tidy.csv",
    )
    window.add_argument("--events", type=int, nargs="+", default=[2000], help="sizes (2000)")
    window.add_argument("--kinds", nargs="+", choices=["seq", "set"], default=["seq", "set"])
    window.add_argument("--ks", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="variables")
    window.add_argument(
        "--windows", type=float, nargs="+", default=[5], help="WITHIN, days or ticks (5)"
    )
    window.add_argument(
        "--prunings",
        nargs="+",
        default=["none", "f", "fp", "fpc", "alone"],
        help="pruning letters per run; none is the plain window, alone the inner plan "
        "without windows (none f fp fpc alone)",
    )
    window.add_argument("--inner", default="nfa", help="the plan A (nfa)")
    window.add_argument("--patterns", type=int, default=3, help="random patterns per k (3)")
    window.add_argument("--repeat", type=int, default=1, help="keep the fastest of N runs (1)")
    window.set_defaults(run=_bench_window)

    lazy = suites.add_parser(
        "lazy",
        help="the lazy-NFA experiments: eager nfa vs lazy_chain and lazy_tree",
        description="Run the lazy-NFA paper's patterns (SEQ3-5, AND2-3, NSEQ3, NAND3, NSEQ5, "
        "ITER3, ITER3EQ, OR2SEQ2, OR4SEQ2, OR2SEQ4) over a generated stock stream typed by symbol, "
        "every pair of events correlated; lazy_chain gets the right order (rarest first) "
        "unless it estimates one (lazy_chain:estimate=N starts from the pattern's, the worst). "
        "Experiments: window (a growing WITHIN), ratio (rarest-to-most-frequent), changing "
        "(the rarest type changes every --rotate events: chains in every order vs the tree), "
        "nasdaq (the real minute bars of --data, OpenCEP's NASDAQ_*.txt files, typed by symbol, "
        "pairs moving the same way, --windows in minutes), daily (--data: daily bars, a CSV "
        "with date, symbol, open, high, low, close, volume; symbols chosen by how many days "
        "they trade, for each of --ratios; --windows in days). "
        "Prints a Markdown table with ratios to the first plan's.",
    )
    lazy.add_argument(
        "--experiment",
        choices=["window", "ratio", "changing", "nasdaq", "daily"],
        default="window",
    )
    lazy.add_argument("--patterns", nargs="+", default=["SEQ3"], help="pattern names (SEQ3)")
    lazy.add_argument("--events", type=int, default=20_000, help="stream size (20000)")
    lazy.add_argument("--windows", type=float, nargs="+", default=[40.0], help="WITHIN (40)")
    lazy.add_argument(
        "--ratios", type=float, nargs="+", default=[100.0], help="rarest-to-most-frequent (100)"
    )
    lazy.add_argument("--rotate", type=int, default=5_000, help="changing: events per phase")
    lazy.add_argument(
        "--threshold", type=float, default=0.5, help="the correlation T each pair needs (0.5)"
    )
    lazy.add_argument(
        "--plans",
        nargs="+",
        default=["nfa", "lazy_chain", "lazy_tree"],
        help="NAME or NAME:option=value (nfa lazy_chain lazy_tree); the first is the baseline",
    )
    lazy.add_argument("--repeat", type=int, default=1, help="keep the fastest of N runs (1)")
    lazy.add_argument("--plot", type=Path, help="also draw the results into this PNG")
    lazy.add_argument(
        "--memory", action="store_true", help="also measure peak memory (one more run each)"
    )
    lazy.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=[],
        help="nasdaq: OpenCEP NASDAQ_*.txt files; daily: a daily-bars CSV",
    )
    lazy.set_defaults(run=_bench_lazy)

    gen = commands.add_parser("gen", help="generate event data", description="Generate event data.")
    kinds = gen.add_subparsers(title="generators", required=True, metavar="KIND")
    stock = kinds.add_parser(
        "stock",
        help="a stock ticker stream (SASE+ / AFA style)",
        description="A stock ticker stream: symbols with frequencies from rarest to most "
        "frequent by --ratio, a price random walk going up with probability --p-up, a "
        "uniform volume in 1..1000. Deterministic for a seed. Columns: type, ts, symbol, "
        "price, volume (and history).",
    )
    stock.add_argument(
        "--output", "-o", required=True, help="file to write (.csv, .jsonl, .parquet)"
    )
    stock.add_argument("--events", "-n", type=int, default=10_000, help="how many events (10000)")
    stock.add_argument("--symbols", type=int, default=10, help="how many symbols (10)")
    stock.add_argument(
        "--ratio", type=float, default=1.0, help="most frequent / rarest symbol frequency (1)"
    )
    stock.add_argument("--p-up", type=float, default=0.5, help="probability a price rises (0.5)")
    stock.add_argument("--seed", type=int, default=0, help="random seed (0)")
    stock.add_argument(
        "--types",
        choices=["constant", "symbol"],
        default="constant",
        help="event type: 'Stock' for all (constant) or the symbol (symbol)",
    )
    stock.add_argument("--interval", type=float, default=1.0, help="timestamp step (1)")
    stock.add_argument("--history", type=int, default=0, help="previous prices per event (0)")
    stock.add_argument(
        "--rotate",
        type=int,
        default=0,
        help="every N events the frequencies move on by one symbol, so the rarest changes (0)",
    )
    stock.set_defaults(run=_gen_stock)
    return parser


def _input_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reading events")
    group.add_argument("--format", choices=["csv", "jsonl", "parquet"], help="input format")
    group.add_argument("--type-column", default="type", help="column with the event type")
    group.add_argument("--event-type", help="give every row this event type instead")
    group.add_argument("--ts-column", default="ts", help="column with the timestamp")
    group.add_argument("--id-column", help="column with event ids (default: row position)")
    group.add_argument("--tz", default="UTC", help="time zone of naive datetimes (UTC)")
    group.add_argument(
        "--ts-unit",
        choices=["s", "ms", "us", "ns"],
        help="numeric timestamps count this unit since the epoch (they become datetimes)",
    )
    group.add_argument(
        "--time-unit",
        default="s",
        help="what one unit of a numeric timestamp is: ns, us, ms, s, min, hour, day (s)",
    )
    group.add_argument(
        "--column-type",
        action="append",
        default=[],
        metavar="NAME=TYPE",
        help="fix a CSV column's type: int, float, bool or string (repeatable)",
    )
    group.add_argument(
        "--on-error",
        choices=["raise", "skip"],
        default="raise",
        help="on a malformed row: stop with an error (raise) or skip and count it",
    )


def _query_and_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="a query file, or the query text itself")
    parser.add_argument("--input", "-i", required=True, help="events: a file or a folder")


def _plan_options(parser: argparse.ArgumentParser, *, output_format: bool = False) -> None:
    parser.add_argument("--plan", default="auto", help="evaluation plan (auto)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a plan option, e.g. merge=False, inner=nfa, pruning=fp (repeatable)",
    )
    if output_format:
        parser.add_argument(
            "--non-overlapping",
            action="store_true",
            help="report only matches that start after the previous one ended (per partition)",
        )


def _query(text: str) -> tuple[str, str]:
    """The query text and a name for it, from a file path or the text itself."""
    path = Path(text)
    try:
        is_file = path.is_file()
    except OSError:  # a long query is no file name
        is_file = False
    if is_file:
        return path.read_text(encoding="utf-8"), path.stem
    if "pattern" not in text.lower():
        raise KleeneError(f"no such query file: {text}")
    return text, "pattern"


def _match(args: argparse.Namespace) -> int:
    text, name = _query(args.query)
    engine = kleene.Engine(
        text,
        args.plan,
        output="non_overlapping" if args.non_overlapping else "all",
        time_unit=args.time_unit,
        name=name,
        **_options(args),
    )
    column_types = dict(_pair(item) for item in args.column_type)
    reader = kleene.io.read_events(
        args.input,
        args.format,
        type_column=args.type_column,
        ts_column=args.ts_column,
        id_column=args.id_column,
        event_type=args.event_type,
        tz=args.tz,
        ts_unit=args.ts_unit,
        on_error=args.on_error,
        column_types=column_types,
    )
    started = time.perf_counter()
    written = 0
    shown: list[kleene.Match] = []
    with _opened(args.output) as out, _progress(args.progress) as tick:
        for batch in _chunks(reader, tick):
            found = engine.send_many(batch)
            shown.extend(found[: args.show - len(shown)])
            written += _emit(found, out, args.limit, written)
            if args.limit is not None and written >= args.limit:
                break
        else:
            found = engine.close()
            shown.extend(found[: args.show - len(shown)])
            written += _emit(found, out, args.limit, written)
    display = sys.stdout if args.output not in (None, "-") else sys.stderr
    for number, each in enumerate(shown, 1):
        print(f"{number:>3}. {_short(each)}", file=display)
    seconds = time.perf_counter() - started
    metrics = engine.metrics
    print(
        f"kleene: {metrics.events:,} events, {written:,} matches, {seconds:.2f} s "
        f"(plan {engine.plan.name})",
        file=sys.stderr,
    )
    if reader.report():
        print(f"kleene: {reader.report()}", file=sys.stderr)
    if args.stats:
        counts = metrics.as_dict()
        peak = _peak_memory_kib()
        if peak is not None:  # the process's, as the lazy-NFA paper measures memory
            counts["peak_memory_kib"] = peak
        for key, value in counts.items():
            print(f"  {key:<12} {value:>12,}", file=sys.stderr)
    return 0


def _peak_memory_kib() -> int | None:
    """The most memory this process has held (its peak resident set), where the system
    says (not on Windows)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes there, KiB elsewhere


def _short(found: kleene.Match) -> str:
    """A match on one line: its time span and each variable's event ids."""
    parts = " ".join(
        f"{name}=[{', '.join(str(e.id) for e in events)}]"
        for name, events in found.bindings.items()
    )
    return f"{found.start_ts} .. {found.end_ts}  {parts}"


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The --option NAME=VALUE settings."""
    return _settings(args.option)


def _settings(items: list[str]) -> dict[str, Any]:
    """Plan options from NAME=VALUE items; True and False become booleans."""
    options: dict[str, Any] = {}
    for item in items:
        name, value = _pair(item)
        options[name] = {"True": True, "False": False}.get(value, value)
    return options


def _pair(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise KleeneError(f"expected NAME=VALUE, not {item!r}")
    name, kind = item.split("=", 1)
    return name, kind


def _chunks(events: Any, tick: Any, size: int = 4096) -> Iterator[list[Event]]:
    chunk: list[Event] = []
    for event in events:
        chunk.append(event)
        if len(chunk) >= size:
            yield chunk
            tick(len(chunk))
            chunk = []
    if chunk:
        yield chunk
        tick(len(chunk))


def _emit(found: list[kleene.Match], out: IO[str], limit: int | None, written: int) -> int:
    if limit is not None:
        found = found[: max(0, limit - written)]
    return kleene.io.write_matches(found, out)


@contextmanager
def _opened(path: str | None) -> Iterator[IO[str]]:
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        yield out


@contextmanager
def _progress(mode: str) -> Iterator[Any]:
    show = mode == "on" or (mode == "auto" and sys.stderr.isatty())
    if not show:
        yield lambda count: None
        return
    from tqdm import tqdm

    with tqdm(unit=" events", unit_scale=True, file=sys.stderr, leave=False) as bar:
        yield bar.update


def _run(args: argparse.Namespace) -> int:
    import shutil

    if shutil.which("java") is None:
        raise KleeneError(
            "kleene run needs Java 17 for Spark, and no 'java' is on PATH; install it "
            "(Debian/Ubuntu: apt-get install openjdk-17-jre-headless)"
        )
    try:
        from kleene.spark import detection, spark_session
    except ImportError as error:
        raise KleeneError(str(error)) from None
    from kleene.spark.files import check_output, read_events_frame, write_matches_frame

    text, name = _query(args.query)
    options = _options(args)
    kleene.compile(text, args.plan, time_unit=args.time_unit, **options)  # errors before Spark
    check_output(args.output, overwrite=args.overwrite)
    if args.column_type:
        raise KleeneError("--column-type applies to kleene match; Spark infers column types")
    started = time.perf_counter()
    spark = spark_session(args.master, dict(_pair(item) for item in args.conf))
    ready = time.perf_counter()
    frame = read_events_frame(spark, args.input, args.format)
    result = detection(
        frame,
        text,
        ts=args.ts_column,
        type=args.type_column,
        event_type=args.event_type,
        id=args.id_column,
        ts_unit=args.ts_unit,
        partition_by=args.partition_by.split(",") if args.partition_by else None,
        slices=args.slices,
        plan=args.plan,
        on_error=args.on_error,
        output="non_overlapping" if args.non_overlapping else "all",
        time_unit=args.time_unit,
        name=name,
        **options,
    )
    matches = result.matches.persist() if args.show else result.matches
    written = write_matches_frame(matches, args.output, overwrite=args.overwrite)
    finished = time.perf_counter()
    counts = result.counts()
    print(
        f"kleene: {counts['read']:,} events read, {counts['kept']:,} after filtering, "
        f"{written:,} matches in {finished - ready:.1f} s (+{ready - started:.1f} s Spark start; "
        f"plan {result.plan.name}, grouped {result.grouping})",
        file=sys.stderr,
    )
    if counts["skipped"]:
        print(
            f"kleene: skipped {counts['skipped']:,} rows without timestamp or type", file=sys.stderr
        )
    if args.show:
        from kleene.spark.batch import DEFAULT_ID

        variables = [v.name for v in result.plan.analysis.positive]
        id_field = args.id_column or DEFAULT_ID
        shown = matches.orderBy("end_ts", "start_ts").limit(args.show).collect()
        for number, row in enumerate(shown, 1):
            print(f"{number:>3}. {_short_row(row, variables, id_field)}")
    return 0


def _short_row(row: Any, variables: list[str], id_field: str) -> str:
    """A match row of the Spark output on one line: its time span and each variable's ids."""
    parts = [
        f"{name}=[{', '.join(str(e[id_field]) for e in row[name])}]"
        for name in variables
        if row[name] is not None
    ]
    return f"{row['start_ts']} .. {row['end_ts']}  {' '.join(parts)}"


def _explain(args: argparse.Namespace) -> int:
    from kleene.compiler.explain import explain

    text, _ = _query(args.query)
    plan = kleene.compile(text, args.plan, **_options(args))
    print(explain(plan))
    if args.dot or args.png:
        graph = plan.dot()
        if graph is None:
            raise KleeneError(f"plan {plan.name!r} has no automaton to draw; try --plan nfa")
        if args.dot:
            Path(args.dot).write_text(graph + "\n")
        if args.png:
            dot = shutil.which("dot")
            if dot is None:
                raise KleeneError(
                    "--png needs Graphviz's dot command (Debian: apt-get install graphviz); "
                    "--dot writes the graph for any Graphviz viewer"
                )
            subprocess.run([dot, "-Tpng", "-o", args.png], input=graph, text=True, check=True)
    return 0


def _bench_spark(args: argparse.Namespace) -> int:
    from kleene.bench import spark as bench

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    queries = {"keyed": bench.KEYED, "unkeyed": bench.UNKEYED}
    results = []
    for size in args.events:
        path = bench.generate(work, size, args.keys)
        for name in args.queries:
            setting = f"{name}, {size:,} events, {args.keys:,} symbols"
            if not args.skip_in_process:
                results.append(bench.in_process(path, queries[name], setting))
                print(f"kleene: {results[-1]}", file=sys.stderr)
            for cores in args.cores:
                results.append(bench.on_spark(path, queries[name], cores, setting))
                print(f"kleene: {results[-1]}", file=sys.stderr)
    print(bench.table(results))
    return 0


def _bench_window(args: argparse.Namespace) -> int:
    from kleene.bench import window as bench
    from kleene.bench.workloads import HospitalStream, StockStream

    results = []
    for size in args.events:
        if args.stream == "stock":
            stream = StockStream(size=size, symbols=20, ratio=10, types="symbol", seed=1)
            events, key = list(stream.events()), None
        elif args.data:
            events, key = list(bench.hospital_log(Path(args.data), size)), "PID"
        else:
            events, key = list(HospitalStream(size=size, seed=1).events()), "PID"
        for kind in args.kinds:
            for k in args.ks:
                for tau in args.windows:
                    setting = f"P{kind} k={k} W={tau:g} n={size}"
                    queries = [
                        bench.pattern(kind, bench.pick_types(events, k, seed), tau, key)
                        for seed in range(args.patterns)
                    ]
                    for pruning in args.prunings:
                        letters = "" if pruning == "none" else pruning
                        runs = [
                            bench.measure(q, events, args.inner, letters, setting, args.repeat)
                            for q in queries
                        ]
                        results.append(bench.total(runs))
                        print(f"kleene: {results[-1]}", file=sys.stderr)
    print(bench.table(results))
    return 0


def _bench_nfa(args: argparse.Namespace) -> int:
    from kleene.bench import nfa as bench
    from kleene.bench.workloads import StockStream

    stream = StockStream(size=args.events, symbols=2, p_up=args.p_up, seed=1)
    settings = _plans(args.plans)
    results = []
    for predicate in args.predicates:
        for strategy in args.strategies:
            for window in args.windows:
                text = bench.query(predicate, strategy, window, args.modulus)
                for name, options in settings:
                    setting = f"{predicate}{strategy} W={window}"
                    results.append(
                        bench.measure(
                            text, name, stream, setting, args.breakdown, args.repeat, **options
                        )
                    )
                    print(f"kleene: {results[-1]}", file=sys.stderr)
    print(bench.table(results, baseline=results[0].plan if results else None))
    return 0


def _bench_lazy(args: argparse.Namespace) -> int:
    from kleene.bench import lazy as bench

    unknown = [p for p in args.patterns if p not in bench.PATTERNS]
    if unknown:
        raise KleeneError(f"unknown patterns {unknown}; known: {', '.join(bench.PATTERNS)}")
    results = []

    def run(text: str, source: Any, name: str, options: dict[str, Any], setting: str) -> None:
        results.append(
            bench.measure(text, source, name, setting, args.repeat, args.memory, **options)
        )
        print(
            f"kleene: {setting} {results[-1].plan}: {results[-1].throughput:,.0f} events/s",
            file=sys.stderr,
        )

    def every_plan(text: str, source: Any, setting: str, right: tuple[str, ...]) -> None:
        """Run each --plans entry; lazy_chain gets the right order unless it estimates one."""
        for name, options in _plans(args.plans):
            told = name == "lazy_chain" and "estimate" not in options
            run(text, source, name, {"order": right, **options} if told else options, setting)

    if args.experiment == "changing":
        for pattern in args.patterns:
            count = bench.PATTERNS[pattern]
            text, source, settings = bench.changing(
                pattern,
                count,
                args.ratios[0],
                args.events,
                args.rotate,
                args.windows[0],
                args.threshold,
            )
            setting = f"{pattern} ratio=1:{args.ratios[0]:g} rotate={args.rotate}"
            for name, options in settings:
                run(text, source, name, options, setting)
    elif args.experiment == "nasdaq":
        if not args.data:
            raise KleeneError("the nasdaq experiment reads --data FILE ...")
        for path in args.data:
            events = bench.nasdaq(path)
            names = bench.rarest_first(events)
            for pattern in args.patterns:
                if bench.PATTERNS[pattern] > len(names):
                    print(f"kleene: {path.name} has too few symbols for {pattern}", file=sys.stderr)
                    continue
                for window in args.windows:
                    text = bench.query(
                        pattern, names, window, bench.MOVED, "minutes", price="close"
                    )
                    setting = f"{pattern} {path.stem} window={window:g}"
                    every_plan(text, events, setting, tuple(names[: bench.PATTERNS[pattern]]))
    elif args.experiment == "daily":
        if not args.data:
            raise KleeneError("the daily experiment reads --data FILE.csv[.gz]")
        for pattern in args.patterns:
            for ratio in args.ratios:
                events, names = bench.daily(args.data[0], bench.PATTERNS[pattern], ratio)
                counts = Counter(e.type for e in events)
                shown = counts[names[-1]] / counts[names[0]]
                for window in args.windows:
                    text = bench.query(pattern, names, window, bench.MOVED, "days", price="close")
                    setting = f"{pattern} ratio=1:{shown:.0f} window={window:g}"
                    every_plan(text, events, setting, tuple(names))
    else:
        for pattern in args.patterns:
            for ratio in args.ratios:
                source = bench.stream(bench.PATTERNS[pattern], ratio, args.events)
                for window in args.windows:
                    text = bench.query(pattern, source.names, window, threshold=args.threshold)
                    setting = f"{pattern} ratio=1:{ratio:g} window={window:g}"
                    every_plan(
                        text, source, setting, tuple(source.names[: bench.PATTERNS[pattern]])
                    )
    baseline = results[0].plan if results else "nfa"
    print(bench.table(results, baseline))
    if args.plot:
        x = {"window": "window", "ratio": "ratio", "changing": "plan"}[args.experiment]
        bench.plot(results, x, args.plot)
        print(f"kleene: drew {args.plot}", file=sys.stderr)
    return 0


def _plans(specs: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Plans with options, from NAME:option=value,option=value."""
    plans = []
    for spec in specs:
        name, _, rest = spec.partition(":")
        plans.append((name, _settings(list(filter(None, rest.split(","))))))
    return plans


def _gen_stock(args: argparse.Namespace) -> int:
    from kleene.bench.workloads import StockStream

    interval: int | float = int(args.interval) if args.interval.is_integer() else args.interval
    try:
        stream = StockStream(
            size=args.events,
            symbols=args.symbols,
            ratio=args.ratio,
            p_up=args.p_up,
            seed=args.seed,
            types=args.types,
            interval=interval,
            history=args.history,
            rotate=args.rotate,
        )
    except ValueError as error:
        raise KleeneError(str(error)) from None
    rows = kleene.io.write_columns(stream.batches(), args.output)
    print(f"kleene: wrote {rows:,} events to {args.output}", file=sys.stderr)
    return 0
