"""What several subcommands share: their arguments, reading the query, where output goes,
progress."""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from itertools import chain
from pathlib import Path
from typing import Any, Literal

from kleene import plans
from kleene.cli.plan_options import pair
from kleene.compiler.analysis import Analysis
from kleene.compiler.growth import unbounded
from kleene.compiler.pipeline import language_of
from kleene.compiler.schema import check_columns
from kleene.errors import EventError, KleeneError, in_query
from kleene.io.readers import EventReader, read_events
from kleene.io.readers.csv_files import UNCLOSED_QUOTE
from kleene.io.readers.source import Columns
from kleene.language.text import UNITS
from kleene.runtime.engine import Engine

__all__ = [
    "ROW_TYPE",
    "as_sql",
    "compiled_texts",
    "delay",
    "disorder_options",
    "event_columns",
    "input_options",
    "is_statement",
    "named_texts",
    "plan_arguments",
    "progress",
    "query_and_input",
    "query_files",
    "query_text",
    "query_texts",
    "spark_arguments",
    "sql_argument",
]


def input_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reading events")
    group.add_argument("--format", choices=["csv", "jsonl", "parquet"], help="input format")
    group.add_argument(
        "--type-column",
        help="column with the event type (type; a MATCH_RECOGNIZE clause needs none)",
    )
    group.add_argument("--event-type", help="give every row this event type instead")
    group.add_argument(
        "--ts-column", help="column with the timestamp (ts; MATCH_RECOGNIZE's ORDER BY column)"
    )
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
        help="on a malformed row (or, without --max-delay, one earlier than a row before it): "
        "stop with an error (raise) or skip and count it",
    )


#: The type every row takes when the query tells no types apart and the input has no
#: type column (`event_columns`).
ROW_TYPE = "row"


def event_columns(args: argparse.Namespace, queries: list[Any]) -> None:
    """Fill in the columns of the events' roles the command line left out, from what the
    queries (their analyses) say: the timestamp is the column a query names as its time
    (MATCH_RECOGNIZE's ORDER BY), else `ts`; the type is the `type` column, but when no
    query tells types apart, every row takes one type (`ROW_TYPE`)."""
    if args.ts_column is None:
        named = {q.time_column for q in queries} - {None}
        if len(named) > 1:
            raise KleeneError(
                f"the queries order by different columns ({', '.join(sorted(named))}); "
                "name the timestamp with --ts-column"
            )
        args.ts_column = named.pop() if named else "ts"
    if args.type_column is None:
        args.type_column = "type"
        if args.event_type is None and not any(q.typed for q in queries):
            args.event_type = ROW_TYPE


def spark_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments `detect_job` and `detect_stream_job` take alike, from the command line
    (`input_options`, `plan_arguments` and --partition-by)."""
    return {
        "ts": args.ts_column,
        "type": args.type_column,
        "event_type": args.event_type,
        "id": args.id_column,
        "ts_unit": args.ts_unit,
        "partition_by": args.partition_by.split(",") if args.partition_by else None,
        "plan": args.plan,
        "on_error": args.on_error,
    }


def disorder_options(parser: argparse.ArgumentParser, *, raising: bool = True) -> None:
    """--max-delay and (where a late event can stop the run) --on-late: reading a stream
    that is not quite in timestamp order."""
    group = parser.add_argument_group("events out of order")
    group.add_argument(
        "--max-delay",
        type=delay,
        metavar="DELAY",
        help="events may come up to this much behind the latest timestamp seen and are put "
        "back in order: timestamp units (5) or a duration (30s, 10 min); later ones are "
        "late, counted and dropped",
    )
    if not raising:
        return
    group.add_argument(
        "--on-late",
        choices=["count", "raise"],
        default="count",
        help="an event later than --max-delay allows: count and drop it, or stop (count)",
    )


def delay(text: str) -> float | timedelta:
    """A --max-delay: a number of timestamp units, or an amount with a time unit."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", text)
    if found is None or (found[2] and found[2].lower() not in UNITS):
        raise argparse.ArgumentTypeError(
            f"expected a number or an amount with a time unit (30s, 10 min), not {text!r}"
        )
    amount = float(found[1])
    if not found[2]:
        return int(amount) if amount.is_integer() else amount
    return timedelta(seconds=amount * UNITS[found[2].lower()][1])


def query_and_input(parser: argparse.ArgumentParser, *, several: bool = False) -> None:
    """The query (with `several`, one or more, as a list) and `--input`."""
    if several:
        parser.add_argument(
            "query",
            nargs="+",
            help="a query file, or the query text itself; several query files (or a folder "
            "of .sase, .lead and .afa files) run over the input at once, in one engine, each "
            "output with its query's name (the file's)",
        )
    else:
        parser.add_argument("query", help="a query file, or the query text itself")
    sql_argument(parser)
    parser.add_argument(
        "--input",
        "-i",
        required=True,
        help="events: a file, a folder, or - for standard input (gzip is read as what it holds)",
    )


def plan_arguments(parser: argparse.ArgumentParser, *, output_format: bool = False) -> None:
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


def query_text(text: str) -> tuple[str, str]:
    """The query text and a name for it, from a file path or the text itself (a SASE+
    query, an AFA or a LEAD rule)."""
    path = Path(text)
    if _names(path, Path.is_file):
        return path.read_text(encoding="utf-8"), path.stem
    rule = language_of(text).name == "lead"
    if "pattern" not in text.lower() and not is_afa(text) and not rule:
        raise KleeneError(f"no such query file: {text}")
    return text, "pattern"


def _names(path: Path, test: Callable[[Path], bool]) -> bool:
    """Does a query argument name a file (or folder, as `test` asks)? A query's text too
    long for a file name is neither."""
    try:
        return test(path)
    except OSError:
        return False


#: What a folder of queries holds: SASE+ queries, LEAD rules, AFAs, MATCH_RECOGNIZE clauses.
QUERY_FILES = (".sase", ".lead", ".afa", ".sql")


def query_files(queries: list[str]) -> list[str]:
    """The queries given, a folder standing for the query files in it (by name)."""
    found: list[str] = []
    for query in queries:
        folder = Path(query)
        if not _names(folder, Path.is_dir):
            found.append(query)
            continue
        files = sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in QUERY_FILES)
        if not files:
            raise KleeneError(f"the folder {query} holds no query file ({', '.join(QUERY_FILES)})")
        found += files
    return found


def named_texts(files: list[str]) -> dict[str, str]:
    """Several queries' texts by name (each file's stem); two of one name are refused."""
    named: dict[str, str] = {}
    for query in files:
        text, name = query_text(query)
        if name in named:
            raise KleeneError(f"two query files are named {name!r}; rename one")
        named[name] = text
    return named


def query_texts(args: argparse.Namespace) -> dict[str, tuple[str, str]]:
    """The queries the command names (`args.query`: files, folders of them, or one query's
    text), by name: each's text and the argument it came from."""
    files = query_files(args.query)
    if len(files) == 1:
        text, name = query_text(files[0])
        return {name: (text, files[0])}
    texts = named_texts(files)
    return {name: (text, file) for (name, text), file in zip(texts.items(), files, strict=True)}


def compiled_texts(
    texts: Mapping[str, tuple[str, str]], args: argparse.Namespace, **settings: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The queries (`query_texts`) as the commands read them (`as_sql`), and compiled on
    `--plan` with `settings`, by name; a warning for a state that can only grow, and the
    event columns the command line left out filled in (`event_columns`)."""
    queries = {name: as_sql(text, args, file) for name, (text, file) in texts.items()}
    compiled = {}
    for name, query in queries.items():  # an error in one of several names its query
        with in_query(name) if len(queries) > 1 else nullcontext():
            compiled[name] = plans.compile(query, args.plan, name=name, **settings)
    for plan in compiled.values():
        warn_growth(plan)
    event_columns(args, [plan.analysis for plan in compiled.values()])
    return queries, compiled


def sql_argument(parser: argparse.ArgumentParser) -> None:
    """`--sql`: the query is SQL whatever its file's extension or first word."""
    parser.add_argument(
        "--sql",
        action="store_true",
        help="read the query as SQL: a MATCH_RECOGNIZE clause, with or without "
        "MATCH_RECOGNIZE ( … ) around it (as kleene.spark.match_recognize takes it), or a "
        "SELECT statement for kleene run",
    )


def as_sql(text: str, args: argparse.Namespace, source: str) -> Any:
    """The query as the commands compile it: read as SQL (its AST, whose errors point at
    `text`) under `--sql` or from a `.sql` file (`source`, the query argument), where it
    may be the clause alone; else the text, whose first word says its language."""
    sql = getattr(args, "sql", False) or Path(source).suffix.lower() == ".sql"
    if not sql or is_statement(text):
        return text
    from kleene.language.sql.reader import read

    return read(text)


def is_statement(text: str) -> bool:
    """Is the query a SQL statement (SELECT or WITH …) around MATCH_RECOGNIZE tables?"""
    return re.match(r"\s*(?:--[^\n]*\n\s*)*(SELECT|WITH)\b", text, re.IGNORECASE) is not None


def is_afa(text: str) -> bool:
    """Is the query an AFA in its text form (`AFA name ...`, docs/plans/afa.md)?"""
    return re.match(r"\s*AFA\b", text, re.IGNORECASE) is not None


#: kleene's logger: the CLI's summary lines are its INFO records, `AttributeWatch`'s its
#: warnings.
log = logging.getLogger("kleene")


def skipping_reader(
    source: str, args: argparse.Namespace, on_error: Literal["raise", "skip"] = "skip"
) -> EventReader:
    """kleene's own reader over the job's input, skipping malformed rows (or raising)."""
    return read_events(
        source,
        args.format,
        type=args.type_column,
        ts=args.ts_column,
        id=args.id_column,
        event_type=args.event_type,
        on_error=on_error,
    )


def role_types(args: argparse.Namespace) -> dict[str, str]:
    """The columns of the events' roles by name, with the Spark type a missing one reads as
    (all nulls): the timestamp, the type (unless --event-type gives it), the id if named."""
    columns = Columns(args.type_column, args.ts_column, args.id_column, args.event_type)
    return {name: "long" if role == "ts" else "string" for name, role in columns.roles().items()}


def check_input_columns(plan: Any, source: str, args: argparse.Namespace) -> None:
    """Check the attributes the query reads against the input's columns (CSV header,
    Parquet schema) the way `kleene match` does, before Spark starts: its first rows are read
    by kleene's own reader. JSON lines have no schema; Spark checks them later."""
    reader = skipping_reader(source, args)  # malformed rows are the job's to report
    next(iter(reader), None)  # opens the input: its columns are known now
    if reader.names is not None:
        check_columns(
            plan.analysis.reads, reader.names, reader.where or reader.source, reader.roles()
        )


def malformed_row(source: str, args: argparse.Namespace) -> KleeneError | None:
    """The first row kleene's own reader refuses in the job's input (within
    `LOCATE_SECONDS`), for a Spark reader's failure that names neither file nor row: on
    that error path only."""
    deadline = time.monotonic() + LOCATE_SECONDS
    try:
        for _ in skipping_reader(source, args, on_error="raise"):
            if time.monotonic() > deadline:
                return None
    except KleeneError as error:
        return error
    return None


def locate_failure(
    found: KleeneError, source: str, args: argparse.Namespace, plan: Any
) -> KleeneError:
    """A Spark worker failed on a row, and knows neither its file nor its row: find them
    in-process, on this error path only. A cell that is not UTF-8 text or holds a line
    break is found by kleene's own reader, which refuses it too; a row without timestamp or
    type, or with a
    timestamp that is not one, is found by reading the input again; an event whose values
    clash in a condition, or whose timestamp is of another kind than those before it, by
    running the plan over it in-process (within `LOCATE_SECONDS`; rows out of time order,
    which Spark sorts, are passed over). When nothing is found, the worker's own line
    stands."""
    text = str(found)
    if "not UTF-8 text" in text or UNCLOSED_QUOTE in text:  # kleene's reader refuses it too
        return malformed_row(source, args) or found
    try:
        reader = skipping_reader(source, args)
    except KleeneError:
        return found
    mixed = "timestamps mix" in text
    roles = (f"field {args.ts_column!r}: ", f"field {args.type_column!r}: ")
    if not mixed and (" is missing" in text or any(role in text for role in roles)):
        return _missing(found, reader, args)
    engine = Engine(plan)
    deadline = time.monotonic() + LOCATE_SECONDS
    try:
        for event in reader:
            try:
                engine.send(event)
            except EventError as error:
                if error.late:
                    continue  # out of order here; Spark sorts the rows first
                return KleeneError(str(reader.locate(error)))
            if time.monotonic() > deadline:
                break
    except KleeneError:
        pass  # the input itself fails here: the worker's line is the better one
    return found


#: How long `locate_failure` runs the plan in-process to find the row a worker failed on.
LOCATE_SECONDS = 120


def _missing(found: KleeneError, reader: EventReader, args: argparse.Namespace) -> KleeneError:
    """The first row without timestamp or type, or with a timestamp that is not one, as a
    `kleene:` line."""
    ts, kind = args.ts_column, args.type_column
    checked = 0
    for _ in chain(reader, [None]):  # one more look after the last row
        for error in reader.errors[checked:]:
            if error.field == ts or (error.field == kind and "missing" in error.message):
                return KleeneError(f"{error} (--on-error skip drops such rows)")
        checked = len(reader.errors)
    return found


def spark_failure(error: BaseException, source: str, args: argparse.Namespace) -> KleeneError:
    """A Spark failure that is not kleene's, in one line: a CSV row that does not fit the
    header, by its text; else the row kleene's own reader refuses, found in-process; else
    the innermost cause Spark gives (the trace is --verbose's)."""
    text = str(error)
    malformed = re.search(r"Malformed CSV record: (.*?)(?: SQLSTATE|$)", text, re.MULTILINE)
    if malformed:
        return KleeneError(
            f"{source}: a row does not have the header's fields: {malformed.group(1)} "
            "(--on-error skip drops such rows)"
        )
    located = malformed_row(source, args)
    if located is not None:
        return located
    failed = python_failure(text)
    if failed is not None:
        return KleeneError(f"{source}: {failed}")
    causes = re.findall(r"Caused by: [\w.$]+: (.*)", text) or text.strip().splitlines()[:1]
    return KleeneError(f"{source}: {causes[-1] if causes else type(error).__name__}")


def python_failure(text: str) -> str | None:
    r"""What a Spark Python worker failed with, from the traceback in a Spark error's text:
    the exception's own line (Spark's one-line summary ends where the traceback starts);
    None when the text holds no Python traceback.

    >>> print(python_failure("PythonException: An exception was thrown from the Python "
    ...     "worker:\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
    ...     "    import pyarrow\nModuleNotFoundError: No module named 'pyarrow'\n\tat org.x"))
    a Spark worker failed: ModuleNotFoundError: No module named 'pyarrow' (a cluster's workers
    need pyspark, pyarrow, pandas and numpy installed; kleene ships the rest: docs/spark.md)
    """
    at = text.rfind("Traceback (most recent call last):")
    if at < 0:
        return None
    lines = text[at:].splitlines()[1:]
    raised = next((line for line in lines if line and not line[0].isspace()), None)
    if raised is None:
        return None
    hint = ""
    if raised.startswith("ModuleNotFoundError"):
        hint = (
            " (a cluster's workers need pyspark, pyarrow, pandas and numpy installed; kleene "
            "ships the rest: docs/spark.md)"
        )
    return f"a Spark worker failed: {raised.strip()}{hint}"


def warn_growth(plan: Any) -> None:
    """Warn, before anything runs, when the query's state can only grow."""
    analysis = getattr(plan, "analysis", None)
    reason = unbounded(analysis) if isinstance(analysis, Analysis) else None
    if reason is not None:
        log.warning(
            f"this query's state can only grow: {reason}; the guards stop it at "
            "max_partial_matches (--option max_partial_matches=N)"
        )


def spark_for(args: argparse.Namespace, conf: Mapping[str, str]) -> Any:
    """The Spark session a command runs on: a Spark Connect session with `--remote`, else
    one on `--master` with `conf` (Spark's log off unless --verbose: kleene says what failed,
    in one line); `--conf KEY=VALUE` settings over both."""
    from kleene.spark import spark_session

    given = dict(pair(item) for item in args.conf)
    if args.remote is not None:
        return spark_session(conf=given, remote=args.remote)
    spark = spark_session(args.master, {**conf, **given})
    if not args.verbose:
        spark.sparkContext.setLogLevel("OFF")
    return spark


def quiet_argument(parser: Any) -> None:
    """`--quiet`: only warnings and errors (no summary lines, no progress)."""
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print only warnings and errors on stderr"
    )


@contextmanager
def logging_to_stderr(quiet: bool, verbose: bool) -> Iterator[None]:
    """kleene's log on stderr as `kleene: …` lines while a command runs: INFO and up, only
    warnings with --quiet, DEBUG with --verbose; the logger is left as it was after. (On
    even where the process's logging configuration disabled it: `logging.config` disables
    every logger it does not name, and a command's summary is its output.)"""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kleene: %(message)s"))
    saved = (log.level, log.propagate, log.disabled)
    log.addHandler(handler)
    log.propagate = False
    log.disabled = False
    log.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate, log.disabled = saved[1:]


@contextmanager
def progress(mode: str, total: Callable[[], int | None] = lambda: None) -> Iterator[Any]:
    """A progress bar on stderr (`on`, or `auto` on a terminal), with a total and so an ETA
    when `total()` knows how many events are coming; a function taking counts."""
    show = mode == "on" or (mode == "auto" and sys.stderr.isatty())
    if not show:
        yield lambda count: None
        return
    from tqdm import tqdm

    with tqdm(total=total(), unit=" events", unit_scale=True, file=sys.stderr, leave=False) as bar:
        yield bar.update
