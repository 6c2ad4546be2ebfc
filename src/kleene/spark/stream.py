"""Detect patterns in a Spark Structured Streaming DataFrame: the streaming pipeline.

1. Check the stream against the query before it starts (the batch pipeline's checks), give
   every row an id and an arrival order (`id=`, `arrival=`: equal timestamps are ordered by
   it), and copy the timestamp into a hidden event-time column.
2. Split the stream in two branches of one query, reading the same rows. The *clock*
   carries the watermark on the event-time column and drops every row after it, so every
   row moves event time on, including those the push-down filter drops from the other
   branch (a filter Spark pushes below `withWatermark` would stall time for the matches
   that wait on it). The *data* branch applies the push-down filter (the variables'
   single-event predicates) and carries a watermark on a column no row is ever behind, so
   the stateful operator hands kleene every row: Spark would drop a late row there unseen
   and uncounted. The query's watermark is the smaller of the two (Spark's default policy
   for several watermarks), the clock's.
3. Group events by the partition key, or by hash buckets of it (`buckets=`), or all in one
   group for a query without a key, and run `applyInPandasWithState` with event-time
   timeouts. Each group's state is one versioned blob (`Plan.dump_state`: state format,
   plan, query fingerprint) holding the events not yet released and a plan state per key.
4. In each call, the group's frontier is kleene's `advance_to`: the later of the query's
   watermark and the latest timestamp the group has seen minus the delay (the `max_delay`
   rule, judged per micro-batch: rows of one micro-batch come in no order). Events before
   it are released to the plan in (timestamp, arrival) order, which is exactly the order
   batch `detect` feeds, so the matches are batch's, in the micro-batch that completes
   them; a timer at the group's next due time (its earliest held event, or a plan
   deadline: WITHIN expiry, a trailing negation) brings the group back when the watermark
   passes it, with no new event needed.
5. An event that arrives behind its group's frontier is late: counted
   (`observedMetrics["kleene"]["late"]` in the query's progress) and, with
   `on_late="collect"`, written to a side output by `StreamJob.start(..., late=DIR)`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from kleene.compiler.schema import check_time_scale
from kleene.errors import EventError, KleeneError, StateError
from kleene.events import Event, Watermark
from kleene.language.text import UNITS
from kleene.matches import Match
from kleene.plans.base import STATE_FORMAT, Plan
from kleene.plans.signing import state_key
from kleene.spark.batch import (
    ENTRY,
    Key,
    _event_columns,
    _keys,
    compiled_queries,
    exploded,
    job_spec,
    several_schema,
)
from kleene.spark.pushdown import EventColumns, carried, col, prefilter
from kleene.spark.shipping import ship
from kleene.spark.worker import CARRIED, QUERY, JobSpec, _events, _Output, _plan, _values

__all__ = [
    "LATE",
    "StreamJob",
    "detect_stream",
    "detect_stream_job",
    "final_folder",
    "progress",
    "streamable",
]

#: The column of the operator's output that carries a late event (null on a match row).
LATE = "_kleene_late"
#: The hidden columns: event time (watermarked), the never-late column, the arrival order,
#: the group and the key values.
TIME = "_kleene_time"
NEVER = "_kleene_never"
#: On the data branch of a job with `final`: is the row one that moves the watermark?
CONTROL = "_kleene_control"
ORDER = "_kleene_order"
GROUP = "_kleene_group"
KEY = "_kleene_key"
#: How many hash buckets keys are grouped into by default (Spark's cost is per group and
#: micro-batch; see docs/benchmarks-journal.md).
BUCKETS = 64
#: The name of the query's observed metrics (late events and matches per micro-batch).
METRICS = "kleene"
#: ... and of the rows skipped as malformed (on_error="skip").
SKIPPED = "kleene_skipped"
#: ... and of the rows read (before any filter).
READ = "kleene_read"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The never-late column's value: far ahead, yet within what pandas can hold (year 2262).
#: A watermark there (`StreamJob.finish` without a window) is the end of the input.
_FAR = datetime(2200, 1, 1, tzinfo=UTC)
_FAR_MS = int((_FAR - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000)
#: No real event is this old: the clock branch passes nothing on.
_NONE_BEFORE = datetime(1, 1, 2, tzinfo=UTC)
_STATE_SCHEMA = T.StructType([T.StructField("state", T.BinaryType(), False)])
#: The rows of the folder that moves the watermark (`StreamJob.finish`).
_CONTROL_SCHEMA = T.StructType([T.StructField(TIME, T.TimestampType(), True)])
#: The folder of a checkpoint that holds them (`final_folder`).
FINAL = "final"
_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)", re.IGNORECASE)
_SECONDS: dict[str, float] = {"millisecond": 0.001, "ms": 0.001, "second": 1, "sec": 1, "s": 1}
_SECONDS |= {"minute": 60, "min": 60, "m": 60, "hour": 3600, "h": 3600, "day": 86400, "d": 86400}


@dataclass
class StreamState:
    """One group's state between micro-batches: the events held until time passes them
    (sorted by timestamp, arrival, then receipt), one plan state per key, and the group's
    frontier: every event before it has been released, so an event arriving behind it is
    late."""

    LAYOUT: ClassVar[int] = 1

    held: list[tuple[float, Any, int, tuple[Any, ...], Event]] = field(default_factory=list)
    states: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    received: int = 0
    frontier: float = -math.inf
    grouping: str = ""  # how keys were grouped when the state was made (StreamJob.grouping)
    layout: int = LAYOUT


@dataclass(frozen=True)
class StreamSpec:
    """What the stateful function needs, small and picklable."""

    job: JobSpec
    keys: int  # how many key columns (0: one group)
    per_second: float  # timestamp units per second (the watermark is in milliseconds)
    delay: float  # the watermark delay, in timestamp units
    zone: str  # the session's time zone (of the timestamps pandas hands over)
    grouping: str  # how keys are grouped (a key's state must stay in its group)
    #: The driver's state key, which signs and checks the groups' saved states on every
    #: worker (`kleene.plans.signing`).
    state_key: bytes = field(default=b"", repr=False)


def detect_stream(sdf: DataFrame, query: Any, **arguments: Any) -> DataFrame:
    """The matches of `query` (or of several queries, a mapping of names to queries or a
    list) in the streaming DataFrame `sdf`, as a streaming DataFrame with the schema of
    batch `detect`; arguments as for `detect_stream_job`."""
    job = detect_stream_job(sdf, query, **arguments)
    if job.on_late == "collect":
        raise KleeneError(
            "on_late='collect' writes late events to a side output: use "
            "detect_stream_job(...).start(output, checkpoint=..., late=DIR)"
        )
    return job.matches


@dataclass
class StreamJob:
    """A prepared streaming job. `matches` is the streaming DataFrame of matches (start it
    with any sink); `start` writes them to files, and late events to `late` with
    `on_late="collect"`. `progress(query)` reads a running query's counters."""

    matches: DataFrame
    output: DataFrame  # matches and late events, the operator's own rows
    plan: Plan[Any]
    grouping: str
    on_late: str
    #: The folder whose rows move the watermark (`final`); None: none.
    final: str | None = None
    #: The watermark's delay and the query's window (the longest of several queries'), in
    #: seconds (None: no window).
    delay: float = 0.0
    window: float | None = None
    #: Several queries' plans by name (`plan` is the first's); empty for one query.
    queries: dict[str, Plan[Any]] = field(default_factory=dict)

    def start(
        self,
        path: str,
        *,
        checkpoint: str,
        format: str = "parquet",  # noqa: A002 - Spark's word
        late: str | None = None,
        trigger: str | None = None,
        available_now: bool = False,
        name: str | None = None,
    ) -> StreamingQuery:
        """Start writing the matches to `path` (a folder; Spark's file sink, exactly once),
        keeping the query's state in `checkpoint`. With `on_late="collect"`, `late` names
        the folder for late events; then each micro-batch writes its matches and late
        events to `path/batch=N` and `late/batch=N`, replaced whole if the batch runs again,
        so they too are written exactly once. A checkpoint made by another query is refused
        before anything runs."""
        if (late is None) != (self.on_late != "collect"):
            raise KleeneError(
                "late=DIR goes with on_late='collect', and on_late='collect' needs late=DIR"
            )
        sink = {"format": format, "late": late is not None}
        check_checkpoint(
            checkpoint,
            self.queries or self.plan,
            self.grouping,
            output=path,
            sink=sink,
            final=self.final is not None,
        )
        writer: Any
        if late is None:
            writer = self.matches.writeStream.format(format).option("path", path)
        else:
            writer = self.output.writeStream.foreachBatch(_split_writer(path, late, format))
        writer = writer.outputMode("append").option("checkpointLocation", checkpoint)
        if available_now:
            writer = writer.trigger(availableNow=True)
        elif trigger is not None:
            every = _delay_seconds(trigger, 1.0, "trigger")
            writer = writer.trigger(processingTime=f"{round(every * 1000)} milliseconds")
        if name is not None:
            writer = writer.queryName(name)
        started: StreamingQuery = writer.start()
        return started

    def final_time(self, query: StreamingQuery) -> datetime:
        """Where the watermark must stand for every match of the input `query` read to
        be final, as at the end of `kleene match`: past its latest event time by the
        window (and the delay, which the watermark keeps behind the latest time). Without a
        window, far ahead (then every later row is late)."""
        seen = []  # each batch's latest event time; an earlier run's, from its watermark
        for entry in query.recentProgress:
            read = _observed(entry, READ)
            if read is not None and read["latest"] is not None:
                seen.append(_aware(read["latest"]))
            mark = (entry.eventTime or {}).get("watermark")
            if mark is not None and _aware(mark) > _NONE_BEFORE:
                seen.append(_aware(mark) + timedelta(seconds=self.delay))
        latest = max(seen, default=None)
        if latest is None or self.window is None:
            return _FAR
        ahead = latest + timedelta(seconds=self.window + self.delay + 1)
        return min(ahead.replace(microsecond=0), _FAR)  # whole seconds: Spark reads them

    def finish(self, at: datetime) -> None:
        """Move the watermark to `at` when the query runs next (`final_time`): a row of
        the folder `final` reads, which no match takes. Run the query once more (with
        `available_now`) for the matches it makes final."""
        if self.final is None:
            raise KleeneError("this job reads no folder that moves its watermark (final=)")
        folder = Path(self.final)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        name = f"final-{len(list(folder.glob('final-*.json')))}.json"
        (folder / name).write_text(json.dumps({TIME: stamp}) + "\n")


def _split_writer(path: str, late: str, format: str) -> Callable[[DataFrame, int], None]:  # noqa: A002
    """The foreachBatch function writing a micro-batch's matches and late events, each to a
    folder of its own named by the batch (replaced whole if the batch runs again)."""

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        try:
            found = batch.filter(col(LATE).isNull()).drop(LATE)
            behind = batch.filter(col(LATE).isNotNull()).select(f"{LATE}.*")
            found.write.mode("overwrite").format(format).save(f"{path}/batch={batch_id}")
            behind.write.mode("overwrite").format(format).save(f"{late}/batch={batch_id}")
        finally:
            batch.unpersist()

    return write


def detect_stream_job(
    sdf: DataFrame,
    query: Any,
    *,
    ts: str = "ts",
    type: str | None = "type",  # noqa: A002 - the column's role
    event_type: str | None = None,
    id: str | None = None,  # noqa: A002
    arrival: str | None = None,
    ts_unit: str | None = None,
    watermark: str | float | timedelta = "10 minutes",
    partition_by: Sequence[str] | None = None,
    buckets: int | None = None,
    plan: str = "auto",
    on_error: str = "raise",
    on_late: str = "count",
    final: str | None = None,
    **options: Any,
) -> StreamJob:
    """Prepare the streaming job that finds `query`'s matches in `sdf` (see the module
    docstring for the steps). Arguments as for batch `detect_job`, and:

    - `query`: one query, or several (a mapping of names to queries, or a list), over one
      read of the stream: each row goes to the queries that can take it, each query's
      groups hold their own states (the query's number is the first group column), and
      every output row names its query in a first column, `query`. An event late for a
      query is late for it alone: each such query counts it (and, with
      `on_late="collect"`, collects it: the late folder holds it once a query);

    - `final`: a folder whose rows (JSON lines of one timestamp, written by
      `StreamJob.finish`) move the watermark, so that a run can end with every match of
      the input final, as `kleene match` ends (`kleene stream --available-now` does);

    - `watermark`: how far behind the latest timestamp an event may arrive and still be
      placed exactly (a Spark interval such as "10 minutes", a `timedelta`, or a number in
      timestamp units); matches are final once the watermark passes them;
    - `id`: a column of unique event ids; without one, an event's id is a hash of its row
      (`kleene_id`), so rows equal in every column share an id;
    - `arrival`: a column that orders events with equal timestamps (the input's order in
      batch); by default the id;
    - `buckets`: group keys into this many hash buckets per micro-batch call (0: one call per
      key); Spark's cost is per group and micro-batch, so buckets make small batches over
      many keys cheap. By default 64 (`BUCKETS`). A checkpoint keeps the grouping it was
      started with: a restart with other buckets is refused;
    - `on_late`: "count" (late events are counted in the progress metrics) or "collect"
      (also written by `StreamJob.start(..., late=DIR)`).
    """
    if not sdf.isStreaming:
        raise KleeneError("detect_stream takes a streaming DataFrame; for a batch one use detect")
    named = compiled_queries(query, plan, options)
    compiled = [each for _, each in named]
    for each in compiled:
        streamable(each)
    first = compiled[0]
    ship(sdf.sparkSession)
    if on_error not in ("raise", "skip"):
        raise KleeneError(f"on_error is 'raise' or 'skip', not {on_error!r}")
    if on_late not in ("count", "collect"):
        raise KleeneError(f"on_late is 'count' or 'collect' on a stream, not {on_late!r}")
    spark = sdf.sparkSession
    policy = spark.conf.get("spark.sql.streaming.multipleWatermarkPolicy", "min")
    if str(policy).lower() != "min":
        raise KleeneError(
            "kleene needs spark.sql.streaming.multipleWatermarkPolicy=min (Spark's default), "
            f"not {policy!r}"
        )
    names = set(sdf.columns)
    if id is None:
        if "kleene_id" in names:
            raise KleeneError("the stream has a column 'kleene_id'; pass id='kleene_id'")
        if ts in names:  # a missing ts is reported below, by name
            sdf = sdf.withColumn("kleene_id", F.xxhash64(*(col(n) for n in sdf.columns)))
        id = "kleene_id"  # noqa: A001
    if arrival is not None and arrival not in names:
        raise EventError(
            f"the stream has no column {arrival!r} (arrival); it has {', '.join(sdf.columns)}",
            field=arrival,
        )
    df, events = _event_columns(sdf, compiled, ts, type, event_type, id, ts_unit, partition_by)
    per_second = first.options.window_length(1, "s")
    delay = _delay_seconds(watermark, per_second)
    df = df.withColumn(TIME, _event_time(events, per_second))
    df = df.withColumn(ORDER, col(arrival or events.id))
    typed = F.lit(True) if events.type is None else col(events.type).isNotNull()
    data = df
    if on_error == "skip":
        skipped = col(TIME).isNull() | ~typed
        data = data.observe(SKIPPED, F.count(F.when(skipped, 1)).alias("skipped"))
    kept = [_kept(prefilter(each.analysis.filters, events), typed, on_error) for each in compiled]
    taken = [each for each in kept if each is not None]
    if len(taken) == len(kept):
        data = data.filter(functools.reduce(operator.or_, taken))

    keys = [_keys(each, events, partition_by) for each in compiled]
    event_names = [n for n in df.columns if n not in (TIME, ORDER)]
    event_fields = [df.schema[name] for name in event_names]
    if buckets is None:  # not from the session's settings: a checkpoint pins the grouping
        buckets = 0 if all(each is None for each in keys) else BUCKETS
    if buckets < 0:
        raise KleeneError(f"buckets is 0 (one group a key) or more, not {buckets}")
    renamed, event_columns = carried(event_names, CARRIED)
    width = max(len(each or []) for each in keys)
    if len(named) == 1:
        key_columns = [
            k.expr.cast("string").alias(f"{KEY}{i}") for i, k in enumerate(keys[0] or [])
        ]
        data = data.select(*event_columns, col(ORDER), *key_columns)
        groups, grouping = _groups(keys[0], buckets)
    else:
        data = _per_query(data, kept, keys, width, event_columns)
        groups, grouping = _query_groups(named, keys, width, buckets)
    data = data.select(*groups, *(col(n) for n in data.columns), F.lit(_FAR).alias(NEVER))
    control = None
    if final is not None:
        Path(final).mkdir(parents=True, exist_ok=True)
        control = spark.readStream.schema(_CONTROL_SCHEMA).json(final)
    df = _with_clock(data, df, delay, control)

    zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC"))
    carried_names = {alias: name for name, alias in renamed.items()}
    made = [
        job_spec(each, events, event_fields, key, (), False)
        for each, key in zip(compiled, keys, strict=True)
    ]
    schema = (
        made[0][1]
        if len(named) == 1
        else several_schema(
            [(name, each) for (name, _), (_, each) in zip(named, made, strict=True)]
        )
    )
    arrow = to_arrow_schema(schema, timezone="UTC")
    specs = [
        StreamSpec(
            replace(job, carried=carried_names, query=name, schema=arrow),
            len(key or []),
            per_second,
            delay * per_second,
            zone,
            grouping,
            state_key(),
        )
        for (name, _), (job, _), key in zip(named, made, keys, strict=True)
    ]
    output_schema = T.StructType(
        [*schema.fields, T.StructField(LATE, T.StructType(event_fields), True)]
    )
    group_names = [f"{GROUP}{i}" for i in range(len(groups))]
    output = df.groupBy(*group_names).applyInPandasWithState(
        StreamFunction(specs),
        output_schema,
        _STATE_SCHEMA,
        "append",
        GroupStateTimeout.EventTimeTimeout,
    )
    late = col(LATE).isNotNull()
    output = output.observe(
        METRICS,
        F.count(F.when(late, 1)).alias("late"),
        F.count(F.when(~late, 1)).alias("matches"),
    )
    matches = output.filter(~late).drop(LATE)
    windows = [each.window for each in compiled if each.window is not None]
    window = max(windows) / per_second if len(windows) == len(compiled) else None
    queries = dict(named) if len(named) > 1 else {}
    return StreamJob(matches, output, first, grouping, on_late, final, delay, window, queries)


def streamable(compiled: Plan[Any]) -> None:
    """Refuse a query a stream cannot run (a LEAD rule's emitted events, a count window),
    with the way on; `kleene stream` asks before Spark starts."""
    if compiled.output.kind == "events":
        raise KleeneError(
            f"detect_stream writes matches and rows, and this query reports "
            f"{compiled.output.noun} (a LEAD rule): run it on a batch DataFrame with detect(), "
            "or in-process with kleene.Engine"
        )
    if compiled.count_window is not None:
        raise KleeneError(
            "a count window (WITHIN n EVENTS) counts positions in the whole stream, which a "
            "stream read in micro-batches and split by key does not number; use a time "
            "window here, or detect() on a batch DataFrame"
        )


def _with_clock(
    data: DataFrame, rows: DataFrame, delay: float, control: DataFrame | None = None
) -> DataFrame:
    """The data branch, with a watermark on a column no row is behind, and the clock: `rows`
    (every row read) carrying the query's watermark on the event time, delay `delay`
    seconds, and the `control` rows (`StreamJob.finish`'s) with it. The clock reads only the
    event time, and (nearly) no row of it goes further: its filter names the event-time
    column, so it stays above the watermark, and cannot be folded away; a row that passes
    it is all nulls (NEVER too), and the worker skips it."""
    if control is not None:  # each branch sees the row (after a restart, Spark holds the
        # watermark until every branch has had a row), which the worker then skips
        data = data.withColumn(CONTROL, F.lit(False))
        blank = [
            (F.lit(True) if f.name == CONTROL else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in data.schema.fields
            if f.name != NEVER
        ]
        data = data.unionByName(control.select(*blank, F.lit(_FAR).alias(NEVER)))
    data = data.withWatermark(NEVER, "0 seconds")
    read = (F.count(F.lit(1)).alias("events"), F.max(TIME).alias("latest"))
    clock = rows.select(TIME).observe(READ, *read)
    if control is not None:
        clock = clock.unionByName(control)
    clock = clock.withWatermark(TIME, f"{round(delay * 1_000_000)} microseconds")
    clock = clock.filter(col(TIME) < F.lit(_NONE_BEFORE)).select(
        *(F.lit(None).cast(f.dataType).alias(f.name) for f in data.schema.fields)
    )
    return data.unionByName(clock)


def _groups(keys: list[Key] | None, buckets: int) -> tuple[list[Column], str]:
    """The group columns of the stateful operator, and how they group, in words."""
    if keys is None:
        return [F.lit(0).alias(f"{GROUP}0")], "one group (the query has no key)"
    names = ", ".join(key.name for key in keys)
    if buckets == 0:
        return [col(f"{KEY}{i}").alias(f"{GROUP}{i}") for i in range(len(keys))], (
            f"one group a key: {names}"
        )
    hashed = F.pmod(F.xxhash64(*(col(f"{KEY}{i}") for i in range(len(keys)))), F.lit(buckets))
    return [hashed.alias(f"{GROUP}0")], f"{buckets} hash buckets of {names}"


def _per_query(
    data: DataFrame,
    kept: Sequence[Column | None],
    keys: Sequence[list[Key] | None],
    width: int,
    event_columns: Sequence[Column],
) -> DataFrame:
    """Several queries' rows from one read: each row becomes a row per query whose filter
    (`kept`) it passes, carrying the query's number (`QUERY`) and its key values as text
    (`KEY`0.., null past the query's own)."""
    kind = T.StructType(
        [
            T.StructField("q", T.IntegerType(), False),
            *(T.StructField(f"k{i}", T.StringType(), True) for i in range(width)),
        ]
    )
    entries = []
    for number, (condition, key) in enumerate(zip(kept, keys, strict=True)):
        values = [k.expr.cast("string") for k in key or []]
        values += [F.lit(None).cast("string")] * (width - len(values))
        entry = F.array(
            F.struct(F.lit(number).alias("q"), *(v.alias(f"k{i}") for i, v in enumerate(values)))
        )
        entries.append(entry if condition is None else F.when(condition, entry))
    spread = exploded(data, entries, kind, [*event_columns, col(ORDER)])
    entry = col(ENTRY)
    return spread.select(
        entry.getField("q").alias(QUERY),
        *(col(c) for c in spread.columns if c != ENTRY),
        *(entry.getField(f"k{i}").alias(f"{KEY}{i}") for i in range(width)),
    )


def _query_groups(
    named: Sequence[tuple[str, Plan[Any]]],
    keys: Sequence[list[Key] | None],
    width: int,
    buckets: int,
) -> tuple[list[Column], str]:
    """The group columns of several queries' rows (`_per_query`): the query's number, then
    its key values, or a hash bucket of them; and how each query groups, in words."""
    words = "; ".join(
        f"{name}: {_groups(key, buckets)[1]}" for (name, _), key in zip(named, keys, strict=True)
    )
    query = col(QUERY).alias(f"{GROUP}0")
    if width == 0:
        return [query], words
    values = [col(f"{KEY}{i}") for i in range(width)]
    if buckets == 0:
        return [query, *(v.alias(f"{GROUP}{i + 1}") for i, v in enumerate(values))], words
    hashed = F.pmod(F.xxhash64(*values), F.lit(buckets))
    return [query, hashed.alias(f"{GROUP}1")], words


def _kept(condition: Column | None, typed: Column, on_error: str) -> Column | None:
    """The push-down filter of the data branch. Under "raise", rows without timestamp or
    type pass, for the worker to name; under "skip" they are dropped (and counted)."""
    valid = col(TIME).isNotNull() & typed
    if on_error == "raise":
        return None if condition is None else ~valid | condition
    return valid if condition is None else valid & condition


def _delay_seconds(
    watermark: str | float | timedelta, per_second: float, what: str = "watermark"
) -> float:
    """A delay in seconds, from an interval ("10 minutes", "5s", "1 hour 30 min"), a
    timedelta or a number of timestamp units.

    >>> _delay_seconds("1 hour 30 min", 1), _delay_seconds("5s", 1), _delay_seconds(120, 1000)
    (5400.0, 5.0, 0.12)
    """
    if isinstance(watermark, timedelta):
        seconds = watermark.total_seconds()
    elif isinstance(watermark, int | float) and not isinstance(watermark, bool):
        seconds = watermark / per_second
    elif isinstance(watermark, str):
        parts = _INTERVAL.findall(watermark)
        if not parts or _INTERVAL.sub("", watermark).strip():
            raise KleeneError(
                f"cannot read the {what} {watermark!r}: give a delay such as "
                "'10 minutes', '30 seconds' or '1 hour 30 minutes'"
            )
        seconds = 0.0
        for amount, word in parts:
            unit = word.lower()
            unit = unit if unit in _SECONDS else unit.removesuffix("s")
            if unit not in _SECONDS:
                raise KleeneError(
                    f"unknown unit {word!r} in the {what} {watermark!r}; the units are "
                    "milliseconds, seconds, minutes, hours and days"
                )
            seconds += float(amount) * _SECONDS[unit]
    else:
        raise KleeneError(f"the {what} is a delay such as '10 minutes', not {watermark!r}")
    if not seconds >= 0 or math.isinf(seconds):
        raise KleeneError(f"the {what} must be 0 or more, not {watermark!r}")
    return seconds


def _event_time(events: EventColumns, per_second: float) -> Any:
    """The timestamp as a Spark timestamp, for the watermark (numbers count timestamp units
    since the epoch)."""
    if isinstance(events.types[events.ts], T.TimestampType):
        return col(events.ts)
    micros = col(events.ts).cast("double") * F.lit(1_000_000 / per_second)
    return F.timestamp_micros(micros.cast("long"))


class StreamFunction:
    """The function `applyInPandasWithState` calls per group and micro-batch (and when the
    group's timer fires): one query's (`QueryStream`), or several queries', each group
    going to its query's (its first group value is the query's number)."""

    def __init__(self, specs: Sequence[StreamSpec]) -> None:
        self.queries = [QueryStream(spec) for spec in specs]

    def __call__(
        self, group: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        if len(self.queries) == 1:
            return self.queries[0](group, frames, state)
        if pd.isna(group[0]):  # the clock's rows and those moving the watermark only
            return iter(())
        return self.queries[int(group[0])](group, frames, state)


class QueryStream:
    """What `StreamFunction` does for one query's group: see the module docstring, step 4."""

    def __init__(self, spec: StreamSpec) -> None:
        self.spec = spec

    def __call__(
        self, group: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        spec = self.spec
        plan = _plan(spec.job)
        output = _Output(spec.job, plan.output)
        floor = state.getCurrentWatermarkMs()
        if state.exists:
            current = load_stream_state(plan, state.get[0], spec.grouping, spec.state_key)
        else:
            current = StreamState(grouping=spec.grouping)
        # Every event before the query's watermark has arrived, and so has every event more
        # than the delay behind the latest one seen (a later one would be late): the
        # frontier is the plan's advance_to. It moves per micro-batch, not per row: rows of
        # one micro-batch come in no order, and are placed among each other exactly.
        before = Watermark(max(current.frontier, floor / 1000 * spec.per_second), False)
        late: list[dict[str, Any]] = []
        latest = -math.inf
        for frame in frames:
            latest = max(latest, self.receive(plan, current, frame, before, output, late))
        current.frontier = max(before.t, latest - spec.delay)
        now = Watermark(current.frontier, inclusive=False)
        # the watermark at the far end (StreamJob.finish without a window, less the delay
        # the clock keeps): the input has ended
        end = _FAR_MS - round(spec.delay / spec.per_second * 1000)
        if floor >= end:
            now = Watermark(math.inf)
        for key, found in release(plan, current, now):
            output.extend(found, key)
        if current.held or current.states:
            state.update((plan.dump_state(current, spec.state_key),))
            due = next_due(plan, current)
            if due is not None:  # a state waiting for the end of the input: the far end
                at = end - 1 if math.isinf(due) else math.floor(due / spec.per_second * 1000)
                state.setTimeoutTimestamp(max(floor, at, 1))  # Spark takes only times > 0
        else:
            state.remove()
        rows = output.rows + late
        if rows:  # object columns: a missing value is None, never NaN
            names = [*spec.job.schema.names, LATE]
            columns = {n: pd.Series([r.get(n) for r in rows], dtype=object) for n in names}
            yield pd.DataFrame(columns)

    def receive(
        self,
        plan: Plan[Any],
        current: StreamState,
        frame: pd.DataFrame,
        before: Watermark,
        output: _Output,
        late: list[dict[str, Any]],
    ) -> float:
        """Hold the frame's events until time passes them; the late ones (behind `before`)
        go to `late` as rows of the output. Returns the latest timestamp held."""
        if CONTROL in frame.columns:  # rows that moved the watermark: no events
            frame = frame[~frame[CONTROL].astype(bool)].drop(columns=CONTROL)
        if frame.empty:
            return -math.inf
        batch = pa.RecordBatch.from_pandas(frame, preserve_index=False)
        own = self.spec.job.carried
        table = {own.get(n, n): self.values(batch, n) for n in batch.schema.names}
        orders, clock = table[ORDER], table[NEVER]
        keys = [table[f"{KEY}{i}"] for i in range(self.spec.keys)]
        latest = -math.inf
        held = current.held
        scale = plan.analysis.real_time  # the first numeric timestamp: epoch ms? (refused)
        for row, event in enumerate(_events(self.spec.job, table, batch.num_rows)):
            if clock[row]:  # a clock row that passed its filter
                continue
            if scale:
                scale = False
                if isinstance(event.ts, int | float):
                    unit = plan.options.time_unit
                    check_time_scale(event.t, unit, UNITS[unit][1])
            key = (keys[0][row],) if len(keys) == 1 else tuple(column[row] for column in keys)
            t = event.t
            if before.settles(t):
                late.append(self.late_row(plan, output.input_record(event), key))
                continue
            latest = max(latest, t)
            current.received += 1
            held.append((t, orders[row], current.received, key, event))
        return latest

    def values(self, batch: pa.RecordBatch, name: str) -> list[Any]:
        """A column's values; timestamps (pandas hands them over without a zone, in the
        session's) as datetimes in UTC, as batch `detect` reads them."""
        column = batch.column(name)
        if name == NEVER:  # only whether it is null matters
            return column.is_null().to_pylist()  # type: ignore[no-any-return]
        if not pa.types.is_timestamp(column.type) or column.type.tz is not None:
            return _values(batch, name)
        if self.spec.zone != "UTC":
            column = pc.assume_timezone(column, self.spec.zone)
        naive = column.cast(pa.timestamp("us")).to_pylist()  # then a zone: faster than Arrow's
        return [None if v is None else v.replace(tzinfo=UTC) for v in naive]

    @property
    def named(self) -> dict[str, str]:
        """A row's first column in a job of several queries: the query's name."""
        query = self.spec.job.query
        return {"query": query} if query else {}

    def late_row(self, plan: Plan[Any], record: dict[str, Any], key: tuple[Any, ...]) -> Any:
        """A late event as a row of the output: the match columns mostly empty, the event in
        the LATE column."""
        ts = record[self.spec.job.ts]
        if plan.output.kind == "rows":  # MATCH_RECOGNIZE's: the event alone
            return {**self.named, LATE: record}
        row: dict[str, Any] = {
            **self.named,
            "match_id": 0,
            "pattern": plan.pattern_name,
            "start_ts": ts,
            "end_ts": ts,
            LATE: record,
        }
        if self.spec.job.key_names:
            row["key"] = dict(zip(self.spec.job.key_names, key, strict=True))
        return row


def release(
    plan: Plan[Any], current: StreamState, now: Watermark
) -> Iterator[tuple[tuple[Any, ...], list[Match]]]:
    """Feed the held events the watermark passes to their keys' plan states, in (timestamp,
    arrival) order, then move every state's time to the watermark; the matches, by key.
    States left idle are dropped."""
    held, states = current.held, current.states
    held.sort()  # nearly sorted already: the held ones, then a micro-batch's in its order
    cut = 0
    for t, _, _, key, event in held:
        if not now.settles(t):
            break
        cut += 1
        state = states.get(key)
        if state is None:
            state = states[key] = plan.new_state()
        found = plan.step(state, event)
        if found:
            yield key, found
    del held[:cut]
    waiting = {entry[3] for entry in held}
    for key, state in list(states.items()):
        found = plan.advance(state, now)
        if found:
            yield key, found
        if key not in waiting and plan.idle(state, now):
            del states[key]


def next_due(plan: Plan[Any], current: StreamState) -> float | None:
    """When the group next needs the watermark (timestamp units): its earliest held event, or
    the earliest plan deadline (WITHIN expiry, a negation waiting); None: never."""
    due = [current.held[0][0]] if current.held else []
    due.extend(d for s in current.states.values() if (d := plan.deadline(s)) is not None)
    return min(due, default=None)


def load_stream_state(
    plan: Plan[Any], data: bytes, grouping: str, key: bytes | None = None
) -> StreamState:
    """A group's state from the state store, signed with `key`; one of another layout, or
    grouped otherwise (its keys' states would be looked for in other groups), is refused."""
    loaded = plan.load_state(data, key)
    if not isinstance(loaded, StreamState) or loaded.layout != StreamState.LAYOUT:
        raise StateError(
            "this checkpoint holds state of another layout than this kleene's stream state "
            f"(layout {StreamState.LAYOUT}): start from a fresh checkpoint"
        )
    if loaded.grouping != grouping:
        raise StateError(
            f"this checkpoint groups keys as {loaded.grouping}, this query as {grouping}: give "
            "the buckets= (--buckets) it was started with"
        )
    return loaded


#: The file kleene writes into a checkpoint folder: which query the state belongs to.
MARKER = "kleene.json"


def _local(path: str) -> Path | None:
    """A path on this machine's file system (None: one on a distributed file system)."""
    if "://" in path and not path.startswith("file://"):
        return None
    return Path(path.removeprefix("file://"))


def _numbers(folder: Path, pattern: str = "*") -> list[int]:
    """The batch numbers a folder's entries are named by (`7`, `9.compact`, `batch=3`)."""
    found = []
    for entry in folder.glob(pattern) if folder.is_dir() else ():
        text = entry.name.removeprefix("batch=").split(".")[0]
        if text.isdigit():
            found.append(int(text))
    return found


def _written(output: Path) -> int | None:
    """The latest batch an output folder holds: in the file sink's log (`_spark_metadata`)
    or as a `batch=N` folder (late events collected); None: none."""
    batches = _numbers(output / "_spark_metadata") + _numbers(output, "batch=*")
    return max(batches, default=None)


def _reached(folder: Path) -> int:
    """The latest batch a checkpoint has planned or committed (-1: none)."""
    return max(_numbers(folder / "offsets") + _numbers(folder / "commits"), default=-1)


def check_checkpoint(
    checkpoint: str,
    plan: Plan[Any] | Mapping[str, Plan[Any]],
    grouping: str,
    *,
    output: str | None = None,
    sink: Mapping[str, Any] | None = None,
    final: bool = False,
) -> None:
    """Refuse a checkpoint written for another query, plan, state format or grouping of keys
    (a key's state must stay in its group), or for another way of writing the output
    (`sink`: format, late events apart); refuse an `output` folder holding batches the
    checkpoint did not reach (Spark's file sink would skip those batch numbers, and this
    run's first matches with them); mark a new checkpoint. (A checkpoint on a distributed
    file system is checked in the workers instead.) `plan`: the query's plan, or several
    queries' by name."""
    folder = _local(checkpoint)
    if folder is None:
        return
    marker = folder / MARKER
    plan_name, fingerprint = _identity(plan)
    mine: dict[str, Any] = {
        "format": STATE_FORMAT,
        "plan": plan_name,
        "query": fingerprint,
        "grouping": grouping,
    }
    if sink is not None:
        mine["sink"] = dict(sink)
    if final:
        mine["final"] = True
    out = None if output is None else _local(output)
    written = None if out is None else _written(out)
    if written is not None and _reached(folder) < written:
        raise StateError(
            f"the output folder {output} holds batches up to {written}, which the checkpoint "
            f"{checkpoint} did not write ({_said(_reached(folder))}): Spark would skip those "
            "batch numbers and lose this run's matches. Give a new output folder, or the "
            "checkpoint that wrote this one"
        )
    if marker.exists():
        try:
            theirs = json.loads(marker.read_text())
        except ValueError:
            raise StateError(f"{marker} is damaged; start from a fresh checkpoint") from None
        if "sink" in theirs and "sink" in mine and theirs["sink"] != mine["sink"]:
            raise StateError(
                f"the checkpoint {checkpoint} was started writing {_sink(theirs['sink'])}, "
                f"this run would write {_sink(mine['sink'])}: a restart writes as the run it "
                "goes on (Spark readers of the output would miss what goes elsewhere); "
                "start from a new checkpoint and output folder to change it"
            )
        theirs.pop("sink", None)
        mine.pop("sink", None)
        if bool(theirs.pop("final", False)) != bool(mine.pop("final", False)):
            raise StateError(
                f"the checkpoint {checkpoint} was started "
                + ("with" if final is False else "without")
                + " a folder that moves its watermark (final=), this run "
                + ("has none" if final is False else "has one")
                + ": Spark keeps a query's sources; pass final=final_folder(CHECKPOINT) "
                "to detect_stream_job, as kleene stream does"
            )
        if theirs.get("grouping", grouping) != grouping and theirs.get("query") == mine["query"]:
            raise StateError(
                f"the checkpoint {checkpoint} groups keys as {theirs.get('grouping')}, this "
                f"query as {grouping}: give the buckets= (--buckets) it was started with"
            )
        if theirs != mine:
            what = (
                f"state format {theirs.get('format')}"
                if theirs.get("format") != STATE_FORMAT
                else f"plan {theirs.get('plan')!r}"
                if theirs.get("plan") != plan_name
                else "another query or other options"
            )
            raise StateError(
                f"the checkpoint {checkpoint} was written by {what} (fingerprint "
                f"{theirs.get('query')}, this query's is {fingerprint}): start from a "
                "fresh checkpoint folder, or run the query it was written with"
            )
        return
    if folder.exists() and any(p.name != FINAL for p in folder.iterdir()):
        raise StateError(
            f"the checkpoint {checkpoint} holds a query kleene did not start (no {MARKER}): "
            "give an empty or new folder"
        )
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(mine, sort_keys=True) + "\n")


def _identity(plan: Plan[Any] | Mapping[str, Plan[Any]]) -> tuple[str, str]:
    """The plan's name and query fingerprint a checkpoint records; for several queries,
    each plan's name and one fingerprint of every query with its name."""
    if isinstance(plan, Plan):
        return plan.name, plan.fingerprint
    text = json.dumps(sorted((name, each.fingerprint) for name, each in plan.items()))
    names = ", ".join(sorted({each.name for each in plan.values()}))
    return names, hashlib.sha256(text.encode()).hexdigest()[:16]


def final_folder(checkpoint: str, start: bool = True) -> str | None:
    """The folder of a local checkpoint whose rows move the watermark (`StreamJob.finish`),
    when its query reads one: a checkpoint started with it (its marker says so), or with
    `start` a new one. None for a checkpoint started without (an older kleene's, or
    `kleene stream --keep-open`'s: Spark keeps a query's sources), or on a distributed
    file system."""
    folder = _local(checkpoint)
    if folder is None:
        return None
    marker = folder / MARKER
    if marker.exists():
        try:
            if not json.loads(marker.read_text()).get("final"):
                return None
        except ValueError:
            return None  # check_checkpoint names the damage
    elif not start:
        return None
    return str(folder / FINAL)


def _aware(moment: datetime | str) -> datetime:
    """A time of a progress report (ISO 8601 text, `Z` for UTC; or a datetime of the
    session's time zone, UTC as `spark_session` sets it) as an aware datetime."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _said(reached: int) -> str:
    return "it holds no batch" if reached < 0 else f"its latest batch is {reached}"


def _sink(sink: Mapping[str, Any]) -> str:
    late = "with late events apart (--late)" if sink.get("late") else "without --late"
    return f"{sink.get('format')} {late}"


def _observed(entry: Any, name: str) -> dict[str, Any] | None:
    """An observation of a progress report by its columns' names (None: none). Spark
    Connect hands it over as the values and the schema's JSON, times as epoch
    milliseconds.

    >>> from pyspark.sql import Row
    >>> class Report: observedMetrics = {"m": Row(values=[3, 0], schema={"fields": [
    ...     {"name": "events", "type": "long"}, {"name": "latest", "type": "timestamp"}]})}
    >>> _observed(Report(), "m")
    {'events': 3, 'latest': datetime.datetime(1970, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)}
    """
    row = (entry.observedMetrics or {}).get(name)
    if row is None:
        return None
    fields = row.__fields__ if hasattr(row, "__fields__") else ()
    if tuple(fields) != ("values", "schema"):
        return row.asDict()  # type: ignore[no-any-return]
    values = {}
    for column, value in zip(row["schema"]["fields"], row["values"], strict=True):
        timed = column["type"] == "timestamp" and value is not None
        values[column["name"]] = _EPOCH + timedelta(milliseconds=value) if timed else value
    return values


def progress(query: StreamingQuery) -> list[dict[str, Any]]:
    """The counters of a query's recent micro-batches: events read, late events, matches,
    state rows and bytes, time taken (ms), and the watermark."""
    found = []
    for entry in query.recentProgress:
        observed = _observed(entry, METRICS)
        skipped = _observed(entry, SKIPPED)
        read = _observed(entry, READ)
        operators = entry.stateOperators or []
        found.append(
            {
                "batch": entry.batchId,
                "events": int(read["events"]) if read else 0,
                "late": int(observed["late"]) if observed else 0,
                "skipped": int(skipped["skipped"]) if skipped else 0,
                "matches": int(observed["matches"]) if observed else 0,
                "state_rows": sum(o.numRowsTotal for o in operators),
                "state_bytes": sum(o.memoryUsedBytes for o in operators),
                "ms": int((entry.durationMs or {}).get("triggerExecution", 0)),
                "watermark": (entry.eventTime or {}).get("watermark"),
            }
        )
    return found
