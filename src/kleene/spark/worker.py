"""What runs inside Spark's Python workers: sorted Arrow batches in, match batches out.

The driver ships a `JobSpec` (the pattern as an AST, options, which columns play which part);
each worker process compiles it once and runs one plan state per group (partition key, or
time slice). A query with a time window gets its rows in time order, groups interleaved:
the worker keeps the live groups' states and finishes those no later row needs as time
passes. Any other gets its rows a group at a time, each group's in time order, and
finishes a group's state when the next group starts. Either way memory holds the groups
live at a time, however long the partition.
"""

from __future__ import annotations

import itertools
import resource
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from itertools import groupby, repeat
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.accumulators import Accumulator, AccumulatorParam

from kleene import plans
from kleene.compiler.evaluate import returned_values
from kleene.compiler.functions import known_functions
from kleene.compiler.query import Output
from kleene.compiler.schema import check_time_scale
from kleene.errors import EventError, KleeneError
from kleene.events import (
    Event,
    Watermark,
    attributes,
    checked_events,
    event_types,
    numeric_times,
)
from kleene.language.text import UNITS
from kleene.matches import Match, Retraction, Timeout, event_record
from kleene.plans.base import Plan
from kleene.runtime.engine import fewer_collections, settle

__all__ = [
    "CARRIED",
    "GROUP",
    "HOME",
    "POSITION",
    "QUERY",
    "SEQ",
    "JobSpec",
    "PeakParam",
    "match_batches",
]

#: Helper columns detect() adds: the group (key columns or slice), an event's home slice, and
#: the arrival sequence.
GROUP = "_kleene_group"
HOME = "_kleene_home"
SEQ = "_kleene_seq"
#: An event's position in the whole stream (`Event.seq`), for a count window.
POSITION = "_kleene_position"
#: The number of a row's query, in a job of several queries.
QUERY = "_kleene_query"
#: The prefix of the names columns travel to the workers under (their own hold a dot).
CARRIED = "_kleene_column"
_END = Watermark(float("inf"))
_OUTPUT_ROWS = 4096
#: How many rows an unordered plan's group takes between punctuations.
_PUNCTUATE_EVERY = 256


@dataclass(frozen=True)
class JobSpec:
    """Everything a worker needs, small and picklable."""

    pattern: Any  # the query's AST (`Query.tree`)
    plan: str
    options: Mapping[str, Any]
    columns: tuple[str, ...]  # the event columns, in input order
    ts: str
    type: str | None
    event_type: str | None
    id: str
    #: The columns (by their own names) whose values name a row's group (none: one group).
    group_columns: tuple[str, ...]
    sliced: bool  # groups are time slices: keep a match only in its start event's home slice
    schema: pa.Schema = field(compare=False)  # the output batches' Arrow schema
    key_names: tuple[str, ...] = ()
    #: The columns that travel under another name (`CARRIED`...), by it: their own names.
    carried: Mapping[str, str] = field(default_factory=dict)
    positions: bool = False  # the rows carry their stream positions (POSITION)
    #: The rows come in time order, groups interleaved; else a group at a time.
    by_time: bool = False
    #: Rows in time order are taken this many at a time (`_chunks`).
    chunk: int = 131_072
    #: The query's name in a job of several queries (each output row carries it), or "".
    query: str = ""


_PLANS: dict[tuple[Any, str, tuple[tuple[str, str], ...]], Plan[Any]] = {}


def _plan(spec: JobSpec) -> Plan[Any]:
    """The compiled plan, once per worker process (keyed by the query, plan and options
    themselves: two jobs whose keys merely hash alike never share a plan)."""
    key = (spec.pattern, spec.plan, tuple(sorted((k, repr(v)) for k, v in spec.options.items())))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = plans.compile(spec.pattern, spec.plan, **spec.options)
    return plan


class _Output:
    """Output rows, gathered and handed out as Arrow batches of the output schema: a row
    a match, or a row an event a rule emitted, as the plan's output declares."""

    def __init__(self, spec: JobSpec, output: Output) -> None:
        self.spec = spec
        self.emitted = output.kind == "events"
        #: MATCH_RECOGNIZE's rows are rows already.
        self.made_rows = output.kind == "rows"
        self.positives = output.variables
        self.rows: list[dict[str, Any]] = []
        #: RETURN: the values each match row carries (a value for a text column as text).
        self.returns = output.computed
        self.functions = known_functions(spec.options.get("functions"))
        self.text = {f.name for f in spec.schema if pa.types.is_string(f.type)}
        self.text_lists = {
            f.name
            for f in spec.schema
            if pa.types.is_list(f.type) and pa.types.is_string(f.type.value_type)
        }
        #: Timed-out partial matches come too, each row marked by `kind`.
        self.kinds = output.timeouts
        #: The fields of an event inside a row (`event_struct`).
        self.event_names = _event_names(spec.schema, output)
        #: Each row's first column, in a job of several queries: the query's name.
        self.named = {"query": spec.query} if spec.query else {}

    def extend(self, matches: Iterable[Any], group: tuple[Any, ...]) -> None:
        """Rows for the matches (or a LEAD rule's emitted events)."""
        for found in matches:
            self.put(found, group)

    def filled(self, matches: Iterable[Any], group: tuple[Any, ...]) -> Iterator[pa.RecordBatch]:
        """Rows for the matches, as they are made; each time the rows fill a batch, the
        batch."""
        for found in matches:
            self.put(found, group)
            if self.full():
                yield self.batch()

    def put(self, found: Any, group: tuple[Any, ...]) -> None:
        """A row for a match, for an event a rule emitted, or a row as it is."""
        if self.made_rows:
            self.rows.append(self.named | self.fitted(found))
        elif self.emitted:
            self.add_emitted(found, group)
        else:
            self.add(found, group)

    def fitted(self, row: dict[str, Any]) -> dict[str, Any]:
        """A MATCH_RECOGNIZE row with the values of its text columns as text (a measure
        whose kind is not known before it is computed: `CLASSIFIER()`, a function's
        value, an array_agg of computed values)."""
        for name in self.text:
            value = row.get(name)
            if value is not None and not isinstance(value, str):
                row[name] = str(value)
        for name in self.text_lists:
            values = row.get(name)
            if values is not None:
                row[name] = [v if v is None or isinstance(v, str) else str(v) for v in values]
        return row

    def add_emitted(self, event: Event, group: tuple[Any, ...]) -> None:
        """A row for an event a LEAD rule emitted."""
        row = {**self.named, "type": event.type, "ts": event.ts, **attributes(event)}
        if self.spec.key_names:
            row["key"] = dict(zip(self.spec.key_names, group, strict=True))
        self.rows.append(row)

    def add(self, found: Match, group: tuple[Any, ...]) -> None:
        spec = self.spec
        row: dict[str, Any] = {
            **self.named,
            "match_id": found.match_id,
            "pattern": found.pattern,
            "start_ts": found.start_ts,
            "end_ts": found.end_ts,
        }
        if spec.key_names:
            row["key"] = dict(zip(spec.key_names, group, strict=True))
        if self.kinds:
            timed_out = found if isinstance(found, Timeout) else None
            row["kind"] = "match" if timed_out is None else "timeout"
            row["deadline"] = None if timed_out is None else timed_out.deadline
        for name in self.positives:
            bound = found.bindings.get(name)
            row[name] = None if bound is None else [self.record(e) for e in bound]
        if self.returns:
            values = returned_values(self.returns, found.bindings, self.functions)
            for name, value in values.items():
                text = name in self.text and value is not None and not isinstance(value, str)
                row[name] = str(value) if text else value
        self.rows.append(row)

    def record(self, event: Event) -> dict[str, Any]:
        """An event inside an output row (`kleene.matches.event_record`, `event_struct`)."""
        values = event_record(event)
        return {name: values.get(name) for name in self.event_names}

    def input_record(self, event: Event) -> dict[str, Any]:
        """An event as the input's row: its columns by their own names."""
        spec = self.spec
        values = attributes(event)
        values[spec.ts] = event.ts
        values[spec.id] = event.id
        if spec.type is not None:
            values[spec.type] = event.type
        return {name: values.get(name) for name in spec.columns}

    def full(self) -> bool:
        return len(self.rows) >= _OUTPUT_ROWS

    def batch(self) -> pa.RecordBatch:
        rows, self.rows = self.rows, []
        return pa.RecordBatch.from_pylist(rows, schema=self.spec.schema)


def _event_names(schema: pa.Schema, output: Output) -> tuple[str, ...]:
    """The field names of an event inside a row of `schema`: those of a variable's list
    of structs (none when the output holds no events)."""
    for name in output.variables:
        kind = schema.field(name).type
        if pa.types.is_list(kind) and pa.types.is_struct(kind.value_type):
            return tuple(kind.value_type.field(i).name for i in range(kind.value_type.num_fields))
    return ()


class _Group:
    """One group's plan state: a partition key's events, or a time slice's."""

    def __init__(self, plan: Plan[Any], spec: JobSpec, key: tuple[Any, ...]) -> None:
        self.plan = plan
        self.key = key
        self.state = plan.new_state()
        #: For a time slice: its number; a match belongs to the slice of its start event.
        self.slice = key[0] if spec.sliced else None
        #: A plan taking events in any order (`afa`) keeps them until a punctuation; the
        #: rows come sorted, so every so many the time reached is one.
        self.punctuate_in = None if plan.ordered else _PUNCTUATE_EVERY
        #: The event's matches, made as they are read (`Plan.step_lazily`: one event's
        #: many matches go out in batches, never all held at once); the plan's own method
        #: when nothing is added to it (a call less on every row).
        self.step: Callable[[Event], Iterable[Match]] = (
            partial(plan.step_lazily, self.state)
            if self.punctuate_in is None and self.slice is None
            else self._step
        )

    def _step(self, event: Event) -> Iterable[Match]:
        if self.punctuate_in is None:
            return self.keep(self.plan.step_lazily(self.state, event))
        found = self.plan.step(self.state, event)
        self.punctuate_in -= 1
        if not self.punctuate_in:
            self.punctuate_in = _PUNCTUATE_EVERY
            found += self.plan.advance(self.state, Watermark(event.t, inclusive=False))
        if any(isinstance(m, Retraction) for m in found):
            raise KleeneError(
                f"plan {self.plan.name!r} withdrew a match on rows in timestamp order; "
                "that is a bug, please report it with the query"
            )
        return self.keep(found)

    def finish(self) -> Iterable[Match]:
        return self.keep(self.plan.advance(self.state, _END))

    def keep(self, matches: Iterable[Match]) -> Iterable[Match]:
        if self.slice is None or matches == []:  # most events make none
            return matches
        return (m for m in matches if m.start.get(HOME) == self.slice)


class PeakParam(AccumulatorParam[int]):
    """An accumulator of the largest value added: workers' peak memory, in KiB."""

    def zero(self, value: int) -> int:
        return 0

    def addInPlace(self, value1: int, value2: int) -> int:  # noqa: N802 - pyspark's name
        return max(value1, value2)


def match_batches(
    specs: Sequence[JobSpec],
    peak: Accumulator[int] | None = None,
    groups: Accumulator[int] | None = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function mapInArrow runs over one Spark partition: one query's (`specs` holds
    one), or several queries' rows, a query's after another's (each row's `QUERY` is its
    number in `specs`). When done, it adds the worker's peak resident memory (KiB) to
    `peak` and the most groups it held at once to `groups`."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        most = 0
        with fewer_collections():  # a worker process runs one job: its threshold only
            for spec, own in _by_query(specs, batches):
                partition = _Partition(_plan(spec), spec)
                if spec.by_time:
                    for chunk in _chunks(own, spec.chunk):
                        yield from partition.finish_idle(chunk)
                        yield from partition.step(_grouped(chunk, spec))
                        settle()
                else:
                    for batch in own:
                        yield from partition.step(batch)
                        settle()
                yield from partition.finish()
                yield from partition.rest()
                most = max(most, partition.most)
        if peak is not None:
            peak.add(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        if groups is not None:
            groups.add(most)

    return run


def _by_query(
    specs: Sequence[JobSpec], batches: Iterator[pa.RecordBatch]
) -> Iterator[tuple[JobSpec, Iterator[pa.RecordBatch]]]:
    """Each query's spec and its rows' batches (the rows come a query at a time; one
    query's: all of them)."""
    if len(specs) == 1:
        yield specs[0], batches
        return
    pieces = (piece for batch in batches for piece in _query_runs(batch))
    for number, run in groupby(pieces, key=itemgetter(0)):
        yield specs[number], (batch for _, batch in run)


def _query_runs(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The batch cut where its rows' query changes, each piece with its query's number."""
    numbers = batch.column(QUERY).to_numpy()
    cuts = [0, *(np.flatnonzero(numbers[1:] != numbers[:-1]) + 1).tolist(), len(numbers)]
    for start, end in itertools.pairwise(cuts):
        yield int(numbers[start]), batch.slice(start, end - start)


class _Partition:
    """The groups of one Spark partition and their output.

    Rows that come a group at a time finish a group's state when the next group begins.
    Rows in time order (`JobSpec.by_time`) keep a state a live group; each time the groups
    have doubled, the states no later row needs (`Plan.idle` at the time reached) are
    finished, so memory follows the groups live within the window, as `Engine`'s does."""

    def __init__(self, plan: Plan[Any], spec: JobSpec) -> None:
        self.plan = plan
        self.spec = spec
        self.output = _Output(spec, plan.output)
        self.live: dict[tuple[Any, ...], _Group] = {}
        self.check_at = _CHECK_LIVE
        self.most = 0  # the most groups held at once
        #: A numeric timestamp of a query counting real time is checked once (epoch ms?).
        self.scale = plan.analysis.real_time

    def step(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Run the batch's rows through their groups' states; each time the outputs fill
        a batch, the batch."""
        spec, plan, output, live = self.spec, self.plan, self.output, self.live
        table = {spec.carried.get(n, n): _values(batch, n) for n in batch.schema.names}
        columns = [table[name] for name in spec.group_columns]
        # a row's group: the value of the one group column (made a key when it changes), or
        # a tuple of the values of several
        single = len(columns) == 1
        values = columns[0] if single else zip(*columns, strict=True) if columns else repeat(())
        current: object = _NONE
        group: _Group | None = None
        key: tuple[Any, ...] = ()
        for event, value in zip(_events(spec, table, batch.num_rows), values, strict=False):
            if self.scale:
                self.scale = False
                if isinstance(event.ts, int | float):
                    unit = plan.options.time_unit
                    check_time_scale(event.t, unit, UNITS[unit][1])
            if value != current:
                current = value
                key = (value,) if single else value
                group = live.get(key)
                if group is None:
                    if not spec.by_time:  # the group before is done
                        yield from self.finish()
                    group = live[key] = _Group(plan, spec, key)
            made = group.step(event)  # type: ignore[union-attr]
            if made:  # most events make none (an empty list)
                yield from output.filled(made, key)

    def finish_idle(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Before a batch of rows in time order, when the groups have doubled since the
        last look: finish and let go the groups whose states no row from the batch's time
        on needs (their matches still held, a negation's or a timeout, are final now)."""
        if len(self.live) < self.check_at or not batch.num_rows:
            return
        reached = _first_time(batch, self.spec)
        if reached is None:
            return
        self.most = max(self.most, len(self.live))
        for key, group in list(self.live.items()):
            if self.plan.idle(group.state, reached):
                del self.live[key]
                yield from self.output.filled(group.finish(), key)
        self.check_at = max(_CHECK_LIVE, 2 * len(self.live))

    def finish(self) -> Iterator[pa.RecordBatch]:
        """Finish every group held (each time the outputs fill a batch, the batch)."""
        self.most = max(self.most, len(self.live))
        for group in self.live.values():
            yield from self.output.filled(group.finish(), group.key)
        self.live.clear()

    def rest(self) -> Iterator[pa.RecordBatch]:
        """The outputs that did not fill a batch."""
        if self.output.rows:
            yield self.output.batch()


#: How many groups a worker keeps before it first looks for states no later row needs.
_CHECK_LIVE = 64
#: No group's key.
_NONE = object()


def _chunks(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """The batches gathered into batches of at least `size` rows (the last may have fewer):
    each group's rows of one are stepped together (Spark hands over 10,000 rows at a time;
    with 1,000 groups live, ten a group left most of that gain untaken)."""
    held: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if not batch.num_rows:  # nothing to gather (and a table of none has no batch)
            continue
        held.append(batch)
        rows += batch.num_rows
        if rows >= size:
            yield _one_batch(held)
            held, rows = [], 0
    if held:
        yield _one_batch(held)


def _one_batch(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _first_time(batch: pa.RecordBatch, spec: JobSpec) -> Watermark | None:
    """How far time has reached at a batch of rows in time order (the first row's time: no
    row from here on is earlier); None when that row has no usable time (its event says)."""
    name = next(n for n in batch.schema.names if spec.carried.get(n, n) == spec.ts)
    times = numeric_times([_zoned(_values(batch.slice(0, 1), name)[0])])
    return None if times is None else Watermark(times[0], inclusive=False)


def _grouped(batch: pa.RecordBatch, spec: JobSpec) -> pa.RecordBatch:
    """The batch's rows, a group's one after another, each group's in the batch's order, so
    a state's rows are stepped together and their events are made one after another
    (memory read in order is what keeps the time order's many states fast). Groups are
    sorted by their numbers in a dictionary of the batch's values, not by the values: a
    sixth of the cost of sorting the text."""
    own = {spec.carried.get(n, n): n for n in batch.schema.names}
    numbers = {
        f"{n}": batch.column(own[name]).dictionary_encode().indices
        for n, name in enumerate(spec.group_columns)
    }
    order = pc.sort_indices(pa.table(numbers), sort_keys=[(n, "ascending") for n in numbers])
    return batch.take(order)  # a stable sort: each group's rows keep their time order


def _values(batch: pa.RecordBatch, name: str) -> list[Any]:
    column = batch.column(name)
    kind = column.type
    if pa.types.is_timestamp(kind) and kind.unit == "ns":
        column = column.cast(pa.timestamp("us", kind.tz))
    return list(column.to_pylist())


def _zoned(ts: Any) -> Any:
    """A naive datetime from Spark is UTC (the session's time zone)."""
    return ts.replace(tzinfo=UTC) if isinstance(ts, datetime) and ts.tzinfo is None else ts


def _events(spec: JobSpec, table: dict[str, list[Any]], rows: int) -> Iterator[Event]:
    helper = {spec.ts, spec.id, *([spec.type] if spec.type else [])}
    attrs = [name for name in spec.columns if name not in helper]
    if spec.sliced:
        attrs.append(HOME)
    columns = [(name, table[name]) for name in attrs]
    ts_values, ids = table[spec.ts], table[spec.id]
    types = table[spec.type] if spec.type else None
    positions = table[POSITION] if spec.positions else None
    if positions is None and (types is None or event_types(types)):
        stamps = ts_values
        if datetime in set(map(type, stamps)):
            stamps = [_zoned(ts) for ts in stamps]
        times = numeric_times(stamps)
        if times is not None:  # every row well formed: checked a column at a time
            kinds = repeat(spec.event_type or "", rows) if types is None else types
            names = [name for name, _ in columns]
            yield from checked_events(kinds, stamps, times, ids, names, [c for _, c in columns])
            return
    for row in range(rows):
        ts = ts_values[row]
        if ts is None:
            raise EventError("the timestamp is missing", source="spark", row=None, field=spec.ts)
        ts = _zoned(ts)
        kind = spec.event_type if spec.event_type is not None else types[row]  # type: ignore[index]
        if kind is None:
            raise EventError(
                f"the event type of event {ids[row]!r} is missing", source="spark", field=spec.type
            )
        values = {name: value for name, column in columns if (value := column[row]) is not None}
        event = Event(kind, ts, values, ids[row])
        yield event if positions is None else event.with_seq(positions[row])
