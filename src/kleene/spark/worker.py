"""What runs inside Spark's Python workers: sorted Arrow batches in, match batches out.

The driver ships a `JobSpec` (the pattern as an AST, options, which columns play which part);
each worker process compiles it once. A Spark partition arrives sorted by group (partition
key, or time slice), then timestamp, then arrival; the worker runs one plan state per group
and finishes a group's state as soon as the next group starts, so memory holds one group's
window at a time, however long the partition.
"""

from __future__ import annotations

import hashlib
import resource
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import repeat
from typing import Any

import pyarrow as pa
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
from kleene.matches import Match, Retraction, Timeout
from kleene.plans.base import Plan
from kleene.runtime.engine import fewer_collections

__all__ = ["CARRIED", "GROUP", "HOME", "POSITION", "SEQ", "JobSpec", "PeakParam", "match_batches"]

#: Helper columns detect() adds: the group (key columns or slice), an event's home slice, and
#: the arrival sequence.
GROUP = "_kleene_group"
HOME = "_kleene_home"
SEQ = "_kleene_seq"
#: An event's position in the whole stream (`Event.seq`), for a count window.
POSITION = "_kleene_position"
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
    groups: int  # how many group columns precede the event columns (0: one group)
    sliced: bool  # groups are time slices: keep a match only in its start event's home slice
    schema: pa.Schema = field(compare=False)  # the output batches' Arrow schema
    key_names: tuple[str, ...] = ()
    #: The columns that travel under another name (`CARRIED`...), by it: their own names.
    carried: Mapping[str, str] = field(default_factory=dict)
    positions: bool = False  # the rows carry their stream positions (POSITION)


_PLANS: dict[tuple[Any, str, tuple[tuple[str, str], ...]], Plan[Any]] = {}


def _plan(spec: JobSpec) -> Plan[Any]:
    """The compiled plan, once per worker process (keyed by the query, plan and options
    themselves: two jobs whose keys merely hash alike never share a plan)."""
    key = (spec.pattern, spec.plan, tuple(sorted((k, repr(v)) for k, v in spec.options.items())))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = plans.compile(spec.pattern, spec.plan, **spec.options)
    return plan


def match_id(found: Match) -> int:
    """A stable 64-bit id for a match: its pattern and events' ids, hashed."""
    text = repr(found.key).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big", signed=True)


class _Output:
    """Output rows, gathered and handed out as Arrow batches of the output schema: a row
    a match, or a row an event a rule emitted, as the plan's output declares."""

    def __init__(self, spec: JobSpec, output: Output) -> None:
        self.spec = spec
        self.emitted = output.kind == "events"
        self.positives = output.variables
        self.rows: list[dict[str, Any]] = []
        #: RETURN: the values each match row carries (a value for a text column as text).
        self.returns = output.computed
        self.functions = known_functions(spec.options.get("functions"))
        self.text = {f.name for f in spec.schema if pa.types.is_string(f.type)}
        #: Timed-out partial matches come too, each row marked by `kind`.
        self.kinds = output.timeouts

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
        """A row for a match, or for an event a rule emitted."""
        if self.emitted:
            self.add_emitted(found, group)
        else:
            self.add(found, group)

    def add_emitted(self, event: Event, group: tuple[Any, ...]) -> None:
        """A row for an event a LEAD rule emitted."""
        row: dict[str, Any] = {"type": event.type, "ts": event.ts, **attributes(event)}
        if self.spec.key_names:
            row["key"] = dict(zip(self.spec.key_names, group, strict=True))
        self.rows.append(row)

    def add(self, found: Match, group: tuple[Any, ...]) -> None:
        spec = self.spec
        row: dict[str, Any] = {
            "match_id": match_id(found),
            "pattern": found.pattern,
            "start_ts": found.start_ts,
            "end_ts": found.end_ts,
        }
        if spec.key_names:
            row["key"] = dict(zip(spec.key_names, group, strict=True))
        if self.kinds:
            row["kind"] = "timeout" if isinstance(found, Timeout) else "match"
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

    def step(self, event: Event) -> Iterable[Match]:
        """The event's matches, made as they are read (`Plan.step_lazily`: one event's
        many matches go out in batches, never all held at once)."""
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
        return (m for m in matches if m.start.attrs[HOME] == self.slice)


class PeakParam(AccumulatorParam[int]):
    """An accumulator of the largest value added: workers' peak memory, in KiB."""

    def zero(self, value: int) -> int:
        return 0

    def addInPlace(self, value1: int, value2: int) -> int:  # noqa: N802 - pyspark's name
        return max(value1, value2)


def match_batches(
    spec: JobSpec, peak: Accumulator[int] | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function mapInArrow runs over one Spark partition; it adds the worker's peak
    resident memory (KiB) to `peak` when done."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan = _plan(spec)
        output = _Output(spec, plan.output)
        group: _Group | None = None
        #: A numeric timestamp of a query counting real time is checked once (epoch ms?).
        scale = plan.analysis.real_time
        with fewer_collections():  # a worker process runs one job: its threshold only
            for batch in batches:
                names = batch.schema.names
                table = {spec.carried.get(n, n): _values(batch, n) for n in names}
                columns = [table[f"{GROUP}{g}"] for g in range(spec.groups)]
                keys = zip(*columns, strict=True) if columns else repeat(())
                for event, key in zip(_events(spec, table, batch.num_rows), keys, strict=False):
                    if scale:
                        scale = False
                        if isinstance(event.ts, int | float):
                            unit = plan.options.time_unit
                            check_time_scale(event.t, unit, UNITS[unit][1])
                    if group is None or key != group.key:
                        if group is not None:
                            yield from output.filled(group.finish(), group.key)
                        group = _Group(plan, spec, key)
                    made = group.step(event)
                    if made:  # most events make none (an empty list)
                        yield from output.filled(made, key)
        if group is not None:
            yield from output.filled(group.finish(), group.key)
        if output.rows:
            yield output.batch()
        if peak is not None:
            peak.add(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)

    return run


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
