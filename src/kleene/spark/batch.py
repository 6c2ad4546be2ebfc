"""Detect patterns in a Spark DataFrame: the batch pipeline.

1. Compile the query on the driver and check the DataFrame against it (columns the query
   reads, an orderable timestamp, the type column) before any job starts.
2. Number the rows in arrival order and push the union of the variables' single-event
   predicates down as a Spark filter (only where dropping events cannot change a match).
3. Group the events: by the partition key (the query's equivalence tests and equalities, or
   `partition_by=`) when there is one; otherwise by time slice, each slice extended by the
   window on both sides so every match starting in it is found there.
4. Sort each Spark partition by timestamp and arrival (with a time window: groups
   interleave, and a worker drops a group's state once no later row needs it) or by group,
   timestamp and arrival, and run the plan over it in Python workers through Arrow batches
   (`mapInArrow`), one state per group.
5. Return the outputs as a DataFrame (see `output_schema`).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from pyspark.accumulators import Accumulator
from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from kleene import plans
from kleene.compiler.functions import registered_functions
from kleene.compiler.query import Field
from kleene.errors import EventError, KleeneError, PatternError, in_query
from kleene.plans.base import Plan
from kleene.runtime.engine import several
from kleene.runtime.queries import feeds, named_queries
from kleene.runtime.reorder import delay_units
from kleene.spark.pushdown import NUMERIC, EventColumns, carried, col, prefilter
from kleene.spark.session import classic_context, default_parallelism
from kleene.spark.shipping import ship
from kleene.spark.worker import (
    CARRIED,
    GROUP,
    HOME,
    POSITION,
    QUERY,
    SEQ,
    JobSpec,
    PeakParam,
    match_batches,
)

__all__ = [
    "ENTRY",
    "DetectJob",
    "Key",
    "compiled_queries",
    "detect",
    "detect_job",
    "event_struct",
    "exploded",
    "output_schema",
    "refuse_chains",
    "several_schema",
    "spark_type",
]

#: The column that marks late rows, with `max_delay`.
LATE = "_kleene_late"
#: The id column detect() adds when the DataFrame names none.
DEFAULT_ID = "kleene_id"

_TIME_TYPES = (*NUMERIC, T.TimestampType, T.TimestampNTZType, T.DateType)
_EPOCH = {
    "s": F.timestamp_seconds,
    "ms": F.timestamp_millis,
    "us": F.timestamp_micros,
}


@dataclass
class DetectJob:
    """A prepared detection job: its matches DataFrame (`detect` returns only that), the
    compiled plan and how events are grouped, and counters filled in as the job runs.

    `counts()` (after an action on `matches`) gives the events read, the rows skipped as
    malformed, the late rows dropped (with `max_delay`), the events left after the push-down
    filter, the largest resident memory a Python worker reached (KiB), and the most groups
    (keys, or time slices) a worker held at once.
    """

    matches: DataFrame
    plan: Plan[Any]
    grouping: str
    read: Observation
    skipped: Observation | None
    kept: Observation
    #: The workers' peak resident memory (KiB); None on Spark Connect, which has no
    #: accumulators.
    peak: Accumulator[int] | None
    late: Observation | None = None
    #: The most groups (keys, or time slices) a worker held at once; None on Spark Connect.
    groups: Accumulator[int] | None = None
    #: Several queries' plans by name (`plan` is the first's); empty for one query.
    queries: dict[str, Plan[Any]] = field(default_factory=dict)

    def counts(self) -> dict[str, Any]:
        return {
            "read": _observed(self.read, "read"),
            "skipped": _observed(self.skipped, "skipped"),
            "late": _observed(self.late, "late"),
            "kept": _observed(self.kept, "kept"),
            "worker_peak_kib": None if self.peak is None else int(self.peak.value),
            "worker_peak_groups": None if self.groups is None else int(self.groups.value),
        }


def _observed(observation: Observation | None, name: str) -> int:
    """A counter an observation gathered (0 when there is none)."""
    if observation is None:
        return 0
    from py4j.protocol import Py4JJavaError

    from kleene.spark.session import KEEP_OBSERVATIONS, OBSERVED_RULES

    try:
        return int(observation.get.get(name) or 0)
    except Py4JJavaError:  # every row was filtered away, and the step that counted them
        raise KleeneError(  # was replaced by an empty one after it ran
            f"Spark did not deliver the count of rows {name}: set {OBSERVED_RULES}="
            f"{KEEP_OBSERVATIONS} (kleene's spark_session does)"
        ) from None


def detect(df: DataFrame, query: Any, **arguments: Any) -> DataFrame:
    """The outputs of `query` in `df` as a DataFrame: its matches, or for a LEAD rule the
    events it emits, one a row (see `output_schema`); arguments as for `detect_job`."""
    return detect_job(df, query, **arguments).matches


def detect_job(
    df: DataFrame,
    query: Any,
    *,
    ts: str = "ts",
    type: str | None = "type",  # noqa: A002 - the column's role
    event_type: str | None = None,
    id: str | None = None,  # noqa: A002
    arrival: str | None = None,
    ts_unit: str | None = None,
    partition_by: Sequence[str] | None = None,
    slices: int | None = None,
    plan: str = "auto",
    on_error: str = "raise",
    max_delay: float | timedelta | None = None,
    on_late: str = "count",
    **options: Any,
) -> DetectJob:
    """Prepare the job that finds `query`'s matches in `df` (nothing runs until an action on
    `.matches`); see the module docstring for the steps.

    - `query`: one query, or several: a mapping of names to queries, or a list (named by
      position). Several run in one job that reads `df` once: each row goes to the queries
      that can take it, each query groups its rows its own way, and every output row names
      its query in a first column, `query` (see `several_schema`);
    - `ts`: the timestamp column (numbers, timestamps or dates); `ts_unit` ("s", "ms", "us",
      "ns") when numbers count that unit since the epoch (they become timestamps);
    - `type`: the event type column, or `event_type`: one type for every row;
    - `id`: a column of event ids; without one, detect adds `kleene_id` (unique, not dense);
    - `arrival`: a column that orders events with equal timestamps (default: the rows' order
      in the DataFrame, which for a folder of files need not be the files' order);
    - `partition_by`: columns to group events by instead of the query's partition key (a
      promise that events with different values never belong to one match);
    - `slices`: for a query without a partition key, how many time slices to split the stream
      into (default: from the cores and the window);
    - `on_error`: "raise" stops at an event without timestamp or type; "skip" drops and
      counts such rows;
    - `max_delay`: as for `kleene.Engine`: the rows' order is their arrival order, and a row
      whose timestamp is more than `max_delay` behind the largest timestamp of the rows
      before it is late: dropped and counted (`on_late="count"`, the only choice on Spark:
      the job cannot stop at one row or hand rows back). Without it, order does not matter
      here: every group is sorted by timestamp;
    - `plan` and `**options` (`output`, `time_unit`, `functions`, `name`): as for
      `kleene.compile`, for every query.
    """
    named = compiled_queries(query, plan, options)
    first = named[0][1]
    ship(df.sparkSession)
    if on_error not in ("raise", "skip"):
        raise KleeneError(f"on_error is 'raise' or 'skip', not {on_error!r}")
    if on_late != "count":
        raise KleeneError(
            f"on Spark late rows are counted and dropped (on_late='count'), not {on_late!r}; "
            "DetectJob.counts()['late'] says how many"
        )
    delay = None if max_delay is None else delay_units(max_delay, first.options)
    if arrival is not None and arrival not in df.columns:
        raise EventError(f"the DataFrame has no column {arrival!r} (arrival)", field=arrival)
    if arrival is not None and delay is not None:
        raise KleeneError(
            "max_delay reads arrival order from the rows' order; it takes no arrival column"
        )
    compiled = [each for _, each in named]
    df, events = _event_columns(df, compiled, ts, type, event_type, id, ts_unit, partition_by)
    if partition_by and any(each.analysis.partition_is_meaning for each in compiled):
        raise KleeneError(
            "this query is grouped by its own partitions (a LEAD rule's PARTITION BY); drop "
            "partition_by"
        )
    span = _Span(df, events)  # before any column is added: the time range, read once if asked
    if arrival is None and id is None:  # the id made above numbers the rows already
        sequence = DEFAULT_ID
    else:
        sequence = SEQ
        df = df.withColumn(
            SEQ, F.monotonically_increasing_id() if arrival is None else col(arrival)
        )
    counted = any(each.count_window is not None for each in compiled)
    if delay is not None:
        df = _with_lateness(df, events, delay, sequence)  # before any observation: reads df twice
    job = next(_JOBS)  # one statement may hold several jobs: their metrics' names differ
    read = Observation(f"kleene_read_{job}")
    df = df.observe(read, F.count(F.lit(1)).alias("read"))
    late = None
    if delay is not None:
        late = Observation(f"kleene_late_{job}")
        df = df.observe(late, F.sum(col(LATE).cast("long")).alias("late"))
        df = df.filter(~col(LATE)).drop(LATE)
    skipped = None
    if on_error == "skip":
        skipped = Observation(f"kleene_skipped_{job}")
        valid = col(events.ts).isNotNull()
        if isinstance(events.types[events.ts], T.FloatType | T.DoubleType):
            valid = valid & ~F.isnan(col(events.ts))
        if events.type is not None:
            valid = valid & col(events.type).isNotNull()
        df = df.observe(skipped, F.sum((~valid).cast("long")).alias("skipped")).filter(valid)
    if counted:  # a count window measures positions in the whole stream, in time order
        df = df.withColumn(POSITION, F.row_number().over(Window.orderBy(events.ts, sequence)) - 1)
    conditions = [_taken(each, events, on_error) for each in compiled]
    taken = [each for each in conditions if each is not None]
    condition = functools.reduce(operator.or_, taken) if len(taken) == len(conditions) else None
    if condition is not None:
        df = df.filter(condition)
    kept = Observation(f"kleene_kept_{job}")
    df = df.observe(kept, F.count(F.lit(1)).alias("kept"))

    event_names = [name for name in df.columns if name not in (SEQ, POSITION)]
    renamed, event_columns = carried(event_names, CARRIED)
    helpers = [col(POSITION)] if counted else []
    if sequence == SEQ:
        helpers.append(col(SEQ))
    event_fields = [df.schema[name] for name in event_names]
    rows = _Rows(event_columns, helpers, renamed, event_fields, sequence)
    if len(named) == 1:
        grouped, specs, schema, grouping = _one(df, first, events, rows, partition_by, slices, span)
    else:
        grouped, specs, schema, grouping = _several(
            df, named, events, conditions, rows, partition_by, slices, span
        )
    context = classic_context(df.sparkSession)
    peak = None if context is None else context.accumulator(0, PeakParam())
    held = None if context is None else context.accumulator(0, PeakParam())
    matches = grouped.mapInArrow(match_batches(specs, peak, held), schema)
    queries = dict(named) if len(named) > 1 else {}
    return DetectJob(matches, first, grouping, read, skipped, kept, peak, late, held, queries)


#: Numbers the jobs of a session, so that each job's observed metrics have names of their own.
_JOBS = itertools.count()


def compiled_queries(query: Any, plan: str, options: dict[str, Any]) -> list[tuple[str, Plan[Any]]]:
    """The query compiled (named ""), or each of several with its name; several queries
    where one reads the events another emits are refused (that chain runs in-process)."""
    if not several(query):
        return [("", plans.compile(query, plan, **options))]
    if "name" in options:
        raise KleeneError("several queries are named by their keys, not by name=")
    named: list[tuple[str, Plan[Any]]] = []
    for name, given in named_queries(query):
        with in_query(name):
            compiled = (
                given
                if isinstance(given, Plan)
                else plans.compile(given, plan, name=name, **options)
            )
        named.append((name, compiled))
    refuse_chains(dict(named))
    return named


def refuse_chains(compiled: dict[str, Plan[Any]]) -> None:
    """Refuse several queries where one reads the events another emits (a chain runs
    in-process: on Spark a query reads only the DataFrame's rows)."""
    chained = {reader: fed for reader, fed in feeds(compiled).items() if fed}
    if chained:
        reader, fed = next(iter(chained.items()))
        raise KleeneError(
            f"query {reader!r} reads the events {sorted(fed)[0]!r} emits; on Spark a query "
            "reads only the DataFrame's rows: run the chain in-process (kleene.match, "
            "kleene.Engine), or detect the producer first and union its rows into the input"
        )


def _taken(plan: Plan[Any], events: EventColumns, on_error: str) -> Column | None:
    """The push-down filter of a query's rows (None: every row); under on_error="raise" a
    row without a type passes too, for the worker to name."""
    condition = prefilter(plan.analysis.filters, events)
    if condition is not None and on_error == "raise" and events.type is not None:
        typed = col(events.type)
        condition = condition | typed.isNull() | (typed.cast("string") == F.lit(""))
    return condition


@dataclass(frozen=True)
class _Rows:
    """What every grouping selects of the filtered rows: the event columns (as they travel
    to the workers), the helper columns, the travelling names by the columns' own, the
    event columns' fields, and the column of arrival order."""

    columns: list[Column]
    helpers: list[Column]
    renamed: dict[str, str]
    fields: list[T.StructField]
    sequence: str

    def travelling(self, name: str) -> Column:
        return col(self.renamed.get(name, name))


class _Span:
    """The time range of a DataFrame's events, read (one aggregate) only when a query
    without a partition key asks, and once however many ask."""

    def __init__(self, df: DataFrame, events: EventColumns) -> None:
        self.df, self.events = df, events
        self._range: tuple[Any, Any] | None = None

    def range(self) -> tuple[Any, Any]:
        if self._range is None:
            t = _seconds(self.events)
            t = F.when(~F.isnan(t), t)  # a NaN time is the worker's to name, by its row
            row = self.df.agg(F.min(t), F.max(t)).first()
            self._range = (None, None) if row is None else (row[0], row[1])
        return self._range


def _one(
    df: DataFrame,
    plan: Plan[Any],
    events: EventColumns,
    rows: _Rows,
    partition_by: Sequence[str] | None,
    slices: int | None,
    span: _Span,
) -> tuple[DataFrame, list[JobSpec], T.StructType, str]:
    """One query's rows, grouped and sorted for the workers; its spec, output schema and
    grouping in words."""
    keys = _keys(plan, events, partition_by)
    if keys is not None:
        key_names = tuple(key.name for key in keys)
        # a key that is a text column is read from it; any other travels as text of its own
        group_columns = tuple(
            key.column
            if key.column is not None and isinstance(events.types[key.column], T.StringType)
            else f"{GROUP}{g}"
            for g, key in enumerate(keys)
        )
        grouped = df.select(
            *(
                key.expr.cast("string").alias(f"{GROUP}{g}")
                for g, key in enumerate(keys)
                if group_columns[g] != key.column
            ),
            *rows.columns,
            *rows.helpers,
        )
        grouped = grouped.repartition(*(rows.travelling(name) for name in group_columns))
        sliced, grouping = False, "by " + ", ".join(key_names)
    else:
        bounds = _bounds(plan, span, slices, default_parallelism(df.sparkSession))
        grouped, count = _slices(df, events, rows.columns, plan.window, bounds, rows.helpers)
        group_columns = (f"{GROUP}0",)
        sliced, grouping = count > 1, f"{count} time slice{'s' if count != 1 else ''}"
    # with a time window, a state no later event needs is dropped as time passes, so the rows
    # come in time order, groups interleaved (Spark sorts by a number: cheaper); without
    # one a group's state lives until its last row, so they come a group at a time
    by_time = plan.window is not None
    first = [] if by_time else [rows.travelling(name) for name in group_columns]
    grouped = grouped.sortWithinPartitions(
        *first, rows.travelling(events.ts), rows.travelling(rows.sequence)
    )
    if rows.sequence == SEQ:
        grouped = grouped.drop(SEQ)
    counted = plan.count_window is not None
    spec, schema = job_spec(
        plan, events, rows.fields, keys, group_columns, sliced, counted, by_time
    )
    spec = replace(spec, carried={alias: name for name, alias in rows.renamed.items()})
    return grouped, [spec], schema, grouping


def _several(
    df: DataFrame,
    named: list[tuple[str, Plan[Any]]],
    events: EventColumns,
    conditions: list[Column | None],
    rows: _Rows,
    partition_by: Sequence[str] | None,
    slices: int | None,
    span: _Span,
) -> tuple[DataFrame, list[JobSpec], T.StructType, str]:
    """Several queries' rows from one read: each row becomes a row per query that takes it
    (and per time slice that needs it, for a query without a key), carrying the query's
    number (`QUERY`) and its group (`GROUP`0.., as text); one shuffle by both, and each
    Spark partition sorted by query, then as each query needs (`_one`). The workers run a
    query's rows, then the next's (`match_batches`)."""
    keys = [_keys(plan, events, partition_by) for _, plan in named]
    width = max(1 if each is None else len(each) for each in keys)
    parallelism = default_parallelism(df.sparkSession)
    t = _seconds(events)
    entries: list[Column] = []
    specs: list[tuple[JobSpec, T.StructType]] = []
    words: list[str] = []
    for number, ((name, plan), key, condition) in enumerate(
        zip(named, keys, conditions, strict=True)
    ):
        if key is not None:
            made = F.array(_entry(number, width, [k.expr for k in key], F.lit(None)))
            grouping, sliced = "by " + ", ".join(k.name for k in key), False
        else:
            bounds = _bounds(plan, span, slices, parallelism)
            if bounds is None or plan.window is None:
                made, count = F.array(_entry(number, width, [F.lit(0)], F.lit(0))), 1
            else:
                made, count = _sliced_entries(number, width, t, plan.window, bounds), bounds[2]
            grouping = f"{count} time slice{'s' if count != 1 else ''}"
            sliced = count > 1
        entries.append(made if condition is None else F.when(condition, made))
        group_columns = tuple(f"{GROUP}{j}" for j in range(1 if key is None else len(key)))
        by_time = plan.window is not None
        counted = plan.count_window is not None
        spec, schema = job_spec(
            plan, events, rows.fields, key, group_columns, sliced, counted, by_time
        )
        specs.append((replace(spec, query=name), schema))
        words.append(f"{name}: {grouping}")
    schema = several_schema([(spec.query, schema) for spec, schema in specs])
    arrow = to_arrow_schema(schema, timezone="UTC")
    carried_names = {alias: name for name, alias in rows.renamed.items()}
    spread = exploded(df, entries, _entry_type(width), [*rows.columns, *rows.helpers])
    entry = col(ENTRY)
    grouped = spread.select(
        entry.getField("q").alias(QUERY),
        *(entry.getField(f"g{j}").alias(f"{GROUP}{j}") for j in range(width)),
        entry.getField("home").alias(HOME),
        *(col(c) for c in spread.columns if c != ENTRY),
    )
    group_names = [col(f"{GROUP}{j}") for j in range(width)]
    grouped = grouped.repartition(col(QUERY), *group_names)
    timed = [number for number, (_, plan) in enumerate(named) if plan.window is not None]
    order = [
        F.when(col(QUERY).isin(timed), F.lit(None)).otherwise(g) if timed else g
        for g in group_names
    ]
    grouped = grouped.sortWithinPartitions(
        col(QUERY), *order, rows.travelling(events.ts), rows.travelling(rows.sequence)
    )
    if rows.sequence == SEQ:
        grouped = grouped.drop(SEQ)
    done = [replace(spec, carried=carried_names, schema=arrow) for spec, _ in specs]
    return grouped, done, schema, "; ".join(words)


def job_spec(
    plan: Plan[Any],
    events: EventColumns,
    event_fields: Sequence[T.StructField],
    keys: list[Key] | None,
    group_columns: Sequence[str],
    sliced: bool,
    counted: bool = False,
    by_time: bool = False,
) -> tuple[JobSpec, T.StructType]:
    """What the workers need (`JobSpec`), and the outputs' schema (`output_schema`);
    `group_columns`: the columns (by their own names) whose values name a row's group;
    `counted`: the rows carry their stream positions (`POSITION`), for a count window;
    `by_time`: the rows come in time order, groups interleaved (else a group at a time)."""
    schema = output_schema(plan, events, event_fields, keys)
    spec = JobSpec(
        pattern=plan.analysis.tree,
        plan=plan.name,
        options=_shipped_options(plan),
        columns=tuple(f.name for f in event_fields),
        ts=events.ts,
        type=events.type,
        event_type=events.event_type,
        id=events.id,
        group_columns=tuple(group_columns),
        sliced=sliced,
        by_time=by_time,
        schema=to_arrow_schema(schema, timezone="UTC"),
        key_names=tuple(key.name for key in keys or []),
        positions=counted,
    )
    return spec, schema


def _shipped_options(plan: Plan[Any]) -> dict[str, Any]:
    options = plan.options
    shipped: dict[str, Any] = {
        "output": options.output,
        "time_unit": options.time_unit,
        "name": options.name,
    }
    if options.timeouts:
        shipped["timeouts"] = True
    functions = {**registered_functions(), **(options.functions or {})}
    if functions:  # (the workers' processes have none registered)
        shipped["functions"] = functions
    return shipped


def _event_columns(
    df: DataFrame,
    compiled: Sequence[Plan[Any]],
    ts: str,
    type_column: str | None,
    event_type: str | None,
    id_column: str | None,
    ts_unit: str | None,
    partition_by: Sequence[str] | None,
) -> tuple[DataFrame, EventColumns]:
    """Check the DataFrame against the queries; normalize the timestamp, type and id columns."""
    names = set(df.columns)
    listing = ", ".join(df.columns)

    def missing(name: str, role: str) -> EventError:
        return EventError(
            f"the DataFrame has no column {name!r} ({role}); it has {listing}", field=name
        )

    for name in names:
        if name.startswith("_kleene"):
            raise EventError(
                f"column names starting with _kleene are kleene's own: {name}", field=name
            )
    if ts not in names:
        raise missing(ts, "the timestamp")
    kind = df.schema[ts].dataType
    if ts_unit is not None:
        if not isinstance(kind, NUMERIC):
            raise EventError(
                f"ts_unit needs numbers in {ts!r}, not {kind.simpleString()}", field=ts
            )
        if ts_unit == "ns":
            df = df.withColumn(ts, F.timestamp_micros(F.floor(col(ts) / 1000).cast("long")))
        elif ts_unit in _EPOCH:
            df = df.withColumn(ts, _EPOCH[ts_unit](col(ts)))
        else:
            raise EventError(f"ts_unit is one of s, ms, us, ns, not {ts_unit!r}", field=ts)
    elif not isinstance(kind, _TIME_TYPES):
        hint = (
            "; convert text with pyspark.sql.functions.to_timestamp"
            if isinstance(kind, T.StringType)
            else ""
        )
        raise EventError(
            f"the timestamp column {ts!r} holds {kind.simpleString()}, which cannot be ordered "
            f"in time; it must hold numbers, timestamps or dates{hint}",
            field=ts,
        )
    elif isinstance(kind, T.DateType | T.TimestampNTZType):
        df = df.withColumn(ts, col(ts).cast("timestamp"))
    elif isinstance(kind, T.DecimalType):
        df = df.withColumn(ts, col(ts).cast("double"))
    if event_type is None:
        if type_column is None:
            raise EventError("name the event type column (type=...) or give event_type=...")
        if type_column not in names:
            raise missing(type_column, "the event type")
        if not isinstance(df.schema[type_column].dataType, T.StringType):
            df = df.withColumn(type_column, col(type_column).cast("string"))
        type_name: str | None = type_column
    else:
        type_name = None  # a column named like type_column is then a plain attribute
    if id_column is None:
        if DEFAULT_ID in names:
            raise EventError(f"the DataFrame has a column {DEFAULT_ID!r}; pass id={DEFAULT_ID!r}")
        df = df.withColumn(DEFAULT_ID, F.monotonically_increasing_id())
        id_column = DEFAULT_ID
    elif id_column not in names:
        raise missing(id_column, "the event id")
    for name in partition_by or ():
        if name not in names:
            raise missing(name, "partition_by")
    events = EventColumns(
        {f.name: f.dataType for f in df.schema.fields}, ts, type_name, event_type, id_column
    )
    roles = {ts: "ts", id_column: "id", **({type_name: "type"} if type_name else {})}
    for read in (read for plan in compiled for read in plan.analysis.reads):
        attr, place = read.attr, read.place
        role = roles.get(attr)
        if role is not None and role != attr:  # such a column is no attribute: always null
            raise EventError(
                f"the query reads {place}, but {attr!r} is the event's {role} column, which "
                f"an event holds as its {role}: write {role} instead of {attr}",
                field=attr,
            )
        if events.field(attr) is None:
            raise EventError(
                f"the query reads {place} but the DataFrame has no column {attr!r}; it has "
                + listing,
                field=attr,
            )
    return df, events


@dataclass(frozen=True)
class Key:
    """One column of a partitioned query's group key: its name in the output's `key`, the
    expression that computes it, and the input column it is when it is one as it stands."""

    name: str
    expr: Column
    column: str | None = None


def _keys(
    plan: Plan[Any], events: EventColumns, partition_by: Sequence[str] | None
) -> list[Key] | None:
    """The group key of a partitioned query, a `Key` a column, or None."""
    if partition_by:
        return [Key(name, col(name), name) for name in partition_by]
    partition = plan.analysis.partition
    if partition is None or plan.partition_key is None:
        return None
    keys = []
    for index, (members, name) in enumerate(zip(partition.classes, partition.names, strict=True)):
        attrs = {attr for _, attr in members}
        if events.event_type is not None:
            per_type = partition.by_type.get(events.event_type, partition.default)
            column = None if per_type is None else per_type[index]
            keys.append(Key(name, F.lit(None) if column is None else col(column), column))
        elif len(attrs) == 1:
            keys.append(Key(name, col(name), name))
        else:
            assert events.type is not None
            chain: Column | None = None
            for event_type, per_type in sorted(partition.by_type.items()):
                branch = col(events.type) == event_type
                value = col(per_type[index]).cast("string")
                chain = F.when(branch, value) if chain is None else chain.when(branch, value)
            keys.append(Key(name, F.lit(None) if chain is None else chain))
    return keys


def _with_lateness(df: DataFrame, events: EventColumns, delay: float, sequence: str) -> DataFrame:
    """The rows with a column `LATE`: as `kleene.Engine` with `max_delay` finds late events,
    a row is late when its timestamp is more than `delay` behind the largest timestamp of
    the rows before it in arrival order (`sequence`). That running maximum is the maximum of the
    Spark partitions before the row's (a small aggregate) and of the rows before it in its
    own partition (`monotonically_increasing_id` keeps the partition in the upper bits of
    `sequence`). A row without a timestamp is not late (`on_error` deals with it)."""
    home, t = "_kleene_home_partition", "_kleene_t"
    df = df.withColumn(home, F.shiftright(col(sequence), 33)).withColumn(t, _seconds(events))
    maxima = df.groupBy(home).agg(F.max(t).alias("_kleene_max"))
    earlier = Window.orderBy(home).rowsBetween(Window.unboundedPreceding, -1)
    prior = maxima.select(home, F.max("_kleene_max").over(earlier).alias("_kleene_prior"))
    before = Window.partitionBy(home).orderBy(sequence).rowsBetween(Window.unboundedPreceding, -1)
    high = F.greatest(col("_kleene_prior"), F.max(t).over(before))
    late = F.coalesce(col(t) < high - F.lit(delay), F.lit(False))
    df = df.join(F.broadcast(prior), home).withColumn(LATE, late)
    return df.drop(home, t, "_kleene_prior")


def _seconds(events: EventColumns) -> Column:
    """The timestamp as a number, as `Event.t` measures it (epoch seconds for timestamps)."""
    kind = events.types[events.ts]
    if isinstance(kind, T.TimestampType):
        return F.unix_micros(col(events.ts)) / 1_000_000
    return col(events.ts).cast("double")


def _bounds(
    plan: Plan[Any], span: _Span, slices: int | None, parallelism: int
) -> tuple[float, float, int] | None:
    """For an unpartitioned query: the time range and how many slices to cut it into, or None
    for one slice (no window, a single instant, or a choice that depends on every earlier
    match: non-overlapping output, AFTER MATCH SKIP, CONSUME BY, FREEZE)."""
    if slices is not None and slices < 1:
        raise KleeneError(f"slices must be at least 1, not {slices}")
    window = plan.window  # None for a query without one (a LEAD rule, a count window)
    if window is None or slices == 1:
        return None
    analysis = plan.analysis
    if (
        plan.options.output == "non_overlapping"
        or analysis.skips
        or analysis.consume
        or analysis.freeze
    ):
        return None
    low, high = span.range()
    if low is None or high is None or high <= low:
        return None
    span_length = float(high - low)
    count = slices or max(1, min(4 * parallelism, math.ceil(span_length / window)))
    return float(low), span_length / count, count


def _slot(bounds: tuple[float, float, int]) -> Callable[[Column], Column]:
    """The number of the slice a time falls in (the first or last for times beyond)."""
    low, width, count = bounds

    def slot(value: Column) -> Column:
        position = F.floor((value - F.lit(low)) / F.lit(width)).cast("int")
        return F.least(F.greatest(position, F.lit(0)), F.lit(count - 1))

    return slot


#: The column of a row's entry for one query of several (`exploded`).
ENTRY = "_kleene_entry"


def exploded(
    df: DataFrame, entries: Sequence[Column], kind: T.StructType, columns: Sequence[Column]
) -> DataFrame:
    """Several queries' rows from one read: a row of `df` a entry of its (`entries`: a
    column a query, an array of `kind` structs, null where the query does not take the
    row), the entry as the column `ENTRY`, beside `columns`."""
    empty = F.array().cast(T.ArrayType(kind))
    each = F.flatten(F.array(*(F.coalesce(entry, empty) for entry in entries)))
    return df.select(F.explode(each).alias(ENTRY), *columns)


def _entry(number: int, width: int, groups: Sequence[Column], home: Column) -> Column:
    """A row's entry for query `number` of several (`_entry_type`)."""
    padded = [*groups, *([F.lit(None)] * (width - len(groups)))]
    return F.struct(
        F.lit(number).alias("q"),
        *(g.cast("string").alias(f"g{j}") for j, g in enumerate(padded)),
        home.cast("string").alias("home"),
    )


def _sliced_entries(
    number: int, width: int, t: Column, window: float, bounds: tuple[float, float, int]
) -> Column:
    """A row's entries for query `number` of several, cut in time slices: one a slice
    whose matches may need the row (as `_slices` finds them), each with its home slice."""
    slot, count = _slot(bounds), bounds[2]
    reach = F.lit(window)
    needed = F.filter(
        F.sequence(slot(t - reach) - 1, slot(t + reach) + 1), lambda s: s.between(0, count - 1)
    )
    home = slot(t)
    return F.transform(needed, lambda s: _entry(number, width, [s], home))


def _entry_type(width: int) -> T.StructType:
    """A row's entry for one query of several: the query's number, its group (`width`
    values of text, null past the query's own) and home slice."""
    return T.StructType(
        [
            T.StructField("q", T.IntegerType(), False),
            *(T.StructField(f"g{j}", T.StringType(), True) for j in range(width)),
            T.StructField("home", T.StringType(), True),
        ]
    )


def _slices(
    df: DataFrame,
    events: EventColumns,
    columns: Sequence[Column],
    window: float | None,
    bounds: tuple[float, float, int] | None,
    helpers: Sequence[Column] = (),
) -> tuple[DataFrame, int]:
    """Events grouped by time slice: each event goes to every slice whose matches may need it
    (its own, and those within a window and a slice of it), and carries its home slice:
    where the matches it starts are kept."""
    if bounds is None or window is None:
        single = df.select(
            F.lit(0).alias(f"{GROUP}0"),
            F.lit(0).alias(HOME),
            *columns,
            *helpers,
        ).repartition(1)
        return single, 1
    count = bounds[2]
    t = _seconds(events)
    slot = _slot(bounds)
    exploded = df.select(
        F.explode(F.sequence(slot(t - F.lit(window)) - 1, slot(t + F.lit(window)) + 1)).alias(
            f"{GROUP}0"
        ),
        slot(t).alias(HOME),
        *columns,
        *helpers,
    ).filter(col(f"{GROUP}0").between(0, count - 1))
    return exploded.repartition(col(f"{GROUP}0")), count


def output_schema(
    plan: Plan[Any],
    events: EventColumns,
    event_fields: Sequence[T.StructField],
    keys: list[Key] | None,
) -> T.StructType:
    """One row an output, the fields the plan's output declares (`Plan.output`,
    docs/output.md), typed by the DataFrame's columns; `key` holds `keys` (the group's
    key values, as text), and is added after the times (or an emitted event's `ts`) when
    the rows are grouped by `partition_by`, or for a LEAD rule's emitted events.

    A MATCH_RECOGNIZE clause's row: its partition's columns, its measures, and for ALL
    ROWS PER MATCH the ORDER BY column after the partition's and the other columns after
    the measures. A match's row: `match_id`, `pattern`, `start_ts` and `end_ts` (the
    timestamp column's type), `kind` ("match", or "timeout" for a partial match whose
    window closed first) and `deadline` with timeouts=True, `key`, one column a positive
    variable (the events it bound, an array of structs: `event_struct`; null for a
    variable of an OR branch the match did not take), and one a RETURN value. An emitted
    event's row: `type`, `ts` (when it was emitted), `key`, then every attribute an action
    gives it."""
    output = plan.output
    event = event_struct(events, event_fields)
    key = (
        None
        if keys is None
        else T.StructType([T.StructField(k.name, T.StringType(), True) for k in keys])
    )
    fields = []
    for f in output.fields:
        if f.kind != "key":
            fields.append(T.StructField(f.name, spark_type(f, events, event), f.nullable))
        elif key is not None:
            fields.append(T.StructField("key", key, True))
    if output.kind == "rows":  # MATCH_RECOGNIZE: the partition's columns are its fields
        return T.StructType(fields + _row_columns(plan, events, event_fields, fields))
    if key is not None and not any(f.kind == "key" for f in output.fields):
        if any(f.name == "key" for f in output.fields):
            raise PatternError(
                "an output's attribute 'key' would clash with the rows' own 'key' column on "
                "Spark (the group's key values); name it otherwise (… AS name)",
                "",
                0,
                0,
            )
        after = "ts" if output.kind == "events" else "deadline" if output.timeouts else "end_ts"
        at = next(i for i, f in enumerate(fields) if f.name == after) + 1
        fields.insert(at, T.StructField("key", key, True))
    return T.StructType(fields)


def event_struct(events: EventColumns, event_fields: Sequence[T.StructField]) -> T.StructType:
    """An event inside an output row, as in-process (`kleene.matches.event_record`): `id`,
    `type` and `ts` (typed by their columns; a column in no role named like one takes its
    place), then the other columns."""
    by_name = {f.name: f for f in event_fields}
    roles = {"id": events.id, "type": events.type, "ts": events.ts}
    placed = []
    for role, column in roles.items():
        if role in by_name and column != role:  # a column in no role, named like one
            kind = by_name[role].dataType
        elif column is not None:
            kind = by_name[column].dataType
        else:  # one type for every row (event_type=)
            kind = T.StringType()
        placed.append(T.StructField(role, kind, True))
    taken = {*roles, *(c for c in roles.values() if c is not None)}
    return T.StructType(placed + [f for f in event_fields if f.name not in taken])


def several_schema(schemas: Sequence[tuple[str, T.StructType]]) -> T.StructType:
    """The output schema of several queries (each's `output_schema`, by name): `query` (the
    query's name) first, then every query's fields in the order they first come, each
    nullable (a row fills its own query's); the group `key` holds every query's key
    names. Two queries giving one name two types are refused."""
    merged: dict[str, T.StructField] = {"query": T.StructField("query", T.StringType(), False)}
    owner: dict[str, str] = {}
    for name, schema in schemas:
        for each in schema.fields:
            if each.name == "query":
                raise PatternError(
                    f"query {name!r} has an output named 'query', which several queries' "
                    "rows use for the query's name; name it otherwise (… AS name)",
                    "",
                    0,
                    0,
                )
            have = merged.get(each.name)
            if have is None:
                merged[each.name] = T.StructField(each.name, each.dataType, True)
                owner[each.name] = name
            elif each.name == "key" and isinstance(have.dataType, T.StructType):
                assert isinstance(each.dataType, T.StructType)
                known = set(have.dataType.names)
                extra = [f for f in each.dataType.fields if f.name not in known]
                merged["key"] = T.StructField("key", T.StructType(have.dataType.fields + extra))
            elif have.dataType != each.dataType:
                raise KleeneError(
                    f"queries {owner[each.name]!r} and {name!r} both give a column "
                    f"{each.name!r}, as {have.dataType.simpleString()} and "
                    f"{each.dataType.simpleString()}; one output holds both queries' rows: "
                    "name one of them otherwise"
                )
    return T.StructType(list(merged.values()))


def _row_columns(
    plan: Plan[Any],
    events: EventColumns,
    event_fields: Sequence[T.StructField],
    fields: list[T.StructField],
) -> list[T.StructField]:
    """The input's columns an output row of ALL ROWS PER MATCH carries after the measures
    (none for ONE ROW PER MATCH): every column but those already there and the events'
    type and id."""
    if not plan.output.carries:
        return []
    taken = {f.name for f in fields} | {events.type, events.id}
    return [f for f in event_fields if f.name not in taken]


def spark_type(field: Field, events: EventColumns, event: T.StructType) -> T.DataType:
    """The Spark type of an output field (`kleene.compiler.query.Field`): an input
    column's for kind "column" (text where there is none), the timestamp column's for
    "time" (and for "t", a time as a number, when the timestamps are numbers), an array
    of the events' structs for "events"."""
    kind = field.kind
    column = None if field.of is None else events.field(field.of)
    column_type = None if column is None else events.types[column]
    ts_type = events.types[events.ts]
    if kind == "events":
        return T.ArrayType(event, False)
    if kind == "time":
        return ts_type
    if kind == "t":
        return ts_type if isinstance(ts_type, T.NumericType) else T.DoubleType()
    if kind == "column":
        return column_type if column_type is not None else T.StringType()
    if kind == "list":  # an array of a column's values (text when they are computed)
        return T.ArrayType(column_type if column_type is not None else T.StringType(), True)
    if kind == "sum":
        integral = isinstance(column_type, T.IntegralType)
        return T.LongType() if integral else T.DoubleType()
    return {"long": T.LongType(), "double": T.DoubleType(), "bool": T.BooleanType()}.get(
        kind, T.StringType()
    )
