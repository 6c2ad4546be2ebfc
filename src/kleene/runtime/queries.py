"""Several queries over one stream in one engine: `kleene.Engine({"name": query, ...})`.

Each event is converted once (and, with `max_delay`, put in order once) and goes only to
the queries that can take its type (one dispatch table, by type). The events a LEAD rule
emits go on, within the same call, to the queries that name their type, in timestamp
order: a rule's events can feed a pattern, or another rule, any number of levels deep; a
cycle of queries feeding each other is refused before anything runs. Each query keeps its
own states, timers and guards (an `Engine` of its own, `engine.queries[name]`).

>>> import kleene
>>> engine = kleene.Engine({
...     "rise": "PATTERN SEQ(A a, B b) WHERE [k] and b.x > a.x WITHIN 10",
...     "alarm": "FROM A AS a, B AS b MATCH every(a Followed By b) PARTITION BY a.k "
...              "EMIT Event Alarm(a.k AS k)",
...     "twice": "PATTERN SEQ(Alarm p, Alarm q) WHERE [k] WITHIN 100",
... })
>>> for each in engine.send_many([{"type": "A", "ts": 1, "k": 1, "x": 1},
...                               {"type": "B", "ts": 2, "k": 1, "x": 5},
...                               {"type": "A", "ts": 3, "k": 1, "x": 9},
...                               {"type": "B", "ts": 4, "k": 1, "x": 2}]):
...     print(engine.query_of(each), each)
rise Match(a=[0], b=[1])
rise Match(a=[0], b=[3])
alarm Event('Alarm', 2, {'k': 1}, id='alarm#0')
alarm Event('Alarm', 4, {'k': 1}, id='alarm#1')
twice Match(p=['alarm#0'], q=['alarm#1'])

`send` reports each output as its event comes; `send_many` (and `kleene.match`) send a
chunk of events through one query after another, so their outputs come query by query
within a chunk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import timedelta
from graphlib import CycleError, TopologicalSorter
from operator import attrgetter
from typing import Any

from kleene.errors import EventError, KleeneError, in_query
from kleene.events import Event, Watermark, as_event, numeric_time
from kleene.plans.base import Plan
from kleene.runtime.engine import (
    SEVERAL,
    Engine,
    EventLike,
    fewer_collections,
    out_of_order,
    settle,
)
from kleene.runtime.metrics import Metrics
from kleene.runtime.reorder import OnLate, Reorder, delay_units
from kleene.runtime.send import at_fault, unconverted

__all__ = ["Queries", "feeds", "named_queries"]

#: What queries reported, in order: each query's name with a list of its outputs.
Reported = list[tuple[str, list[Any]]]
_type = attrgetter("type")
_ts = attrgetter("ts")


class Queries(Engine):
    """An engine running several queries over one stream (see the module docstring): what
    `Engine` does for one, with each output's query told by `query_of`."""

    def __init__(
        self,
        queries: Mapping[str, Any] | Sequence[Any],
        plan: str = "auto",
        *,
        partition: bool = True,
        max_delay: float | timedelta | None = None,
        on_late: OnLate = "count",
        speculation: float | None = None,
        **options: Any,
    ) -> None:
        if "name" in options:
            raise KleeneError("several queries are named by their keys, not by name=")
        if speculation is not None:
            raise KleeneError("speculation is for one query on plan 'afa', alone in its engine")
        named = named_queries(queries)
        lanes: dict[str, Engine] = {}
        for name, query in named:
            if isinstance(query, Plan):
                lane = Engine(query, partition=partition)
            else:
                with in_query(name):
                    lane = Engine(query, plan, partition=partition, name=name, **options)
            if not lane.plan.ordered:
                raise KleeneError(
                    f"query {name!r} runs on plan {lane.plan.name!r}, which takes events in any "
                    "order: run it in an engine of its own"
                )
            lanes[name] = lane
        self._order = _producers_first(lanes)
        #: Each query's own engine, by name, in the order they run (producers first).
        self.queries: dict[str, Engine] = {name: lanes[name] for name in self._order}
        #: Which queries take an event of a type (None: every type), by its type.
        self._takes = {name: lane.plan.analysis.taken_types for name, lane in self.queries.items()}
        self._routes: dict[str, tuple[str, ...]] = {}
        #: The queries reading an emitted event, by its producer and type.
        self._readers_of: dict[tuple[str, str], tuple[str, ...]] = {}
        #: The queries waiting for a time (`Engine.due`): an event they do not take moves it.
        self._waiting: set[str] = set()
        #: The queries whose outputs other queries read.
        self._producers = tuple(n for n in self._order if self.queries[n].plan.output.emits)
        #: The queries whose outputs are events (a rule's: each named, `rule#n`).
        self._emitting = {n for n in self._order if self.queries[n].plan.output.kind == "events"}
        #: Queries whose plans step as one (`Plan.joint`), sharing what they keep; the
        #: dispatch table (`_takes`) leaves them to their joint.
        self._together = _together(self.queries, self._order, self._producers)
        for group in self._together:
            for name in group.names:
                del self._takes[name]
        #: The types taken (from the stream, or fed by a producer) by each query whose
        #: states may wait for a time and that leaves some type out: a chunk's other events
        #: move its time (`_send_chunk`).
        self._timed_takes = {
            name: types | (self.queries[name].plan.analysis.named_types or frozenset())
            for name, types in self._takes.items()
            if types is not None and self.queries[name]._timed
        }
        self._owner: dict[int, str] = {}
        #: How many events each rule has emitted (an emitted event's id: "rule#n").
        self._made: dict[str, int] = {}
        self._metrics = Metrics()
        self._arrivals = 0
        self._last_t: float | None = None
        self._closed = False
        self._busy = False
        self._reorder = None
        if max_delay is not None:
            units = delay_units(max_delay, next(iter(self.queries.values())).plan.options)
            self._reorder = Reorder(units, on_late)
        self._settings = (partition, max_delay, on_late, speculation)

    # -- what is reported ------------------------------------------------------------------

    def query_of(self, output: Any) -> str:
        """The name of the query that reported `output` (a match, or an emitted event)."""
        name = self._owner.get(id(output))
        if name is None:
            raise KleeneError("this engine did not report that output")
        return name

    @property
    def metrics(self) -> Metrics:
        """The events sent and the late ones dropped, and every query's other counters
        summed, the plans' own too (`engine.queries[name].metrics` has one query's); a
        peak summed so bounds what was alive at once across the queries."""
        total = self._metrics
        own = {"events", "late", "plan", "missing_attributes"}
        summed = {f.name: 0 for f in fields(Metrics) if f.name not in own}
        plan: dict[str, int] = {}
        missing: list[str] = []
        for name, lane in self.queries.items():
            metrics = lane.metrics
            for field_name in summed:
                summed[field_name] += getattr(metrics, field_name)
            for counter, value in metrics.plan.items():
                plan[counter] = plan.get(counter, 0) + value
            missing += [f"{name}: {place}" for place in metrics.missing_attributes]
        for field_name, value in summed.items():
            setattr(total, field_name, value)
        total.plan = plan
        total.missing_attributes = missing
        if self._reorder is not None:
            total.late = self._reorder.dropped
        return total

    @property
    def late(self) -> list[Event]:
        return [] if self._reorder is None else self._reorder.late

    @property
    def partitions(self) -> int:
        """The partition states every query holds now, summed."""
        return sum(lane.partitions for lane in self.queries.values())

    @property
    def finished(self) -> int:
        return sum(lane.finished for lane in self.queries.values())

    @property
    def punctuation(self) -> Watermark | None:
        """The earliest of the queries' punctuations (None while one has none)."""
        marks = [lane.punctuation for lane in self.queries.values()]
        if any(mark is None for mark in marks):
            return None
        return min(marks, key=lambda mark: (mark.t, mark.inclusive))  # type: ignore[union-attr]

    @property
    def now(self) -> float:
        return max(lane.now for lane in self.queries.values())

    def retract(self, event: EventLike) -> list[Any]:
        raise KleeneError(_ONE_QUERY.format("retract"))

    def states(self) -> Iterator[tuple[Any, Any]]:
        raise KleeneError(_ONE_QUERY.format("states"))

    def refresh(self, key: Any, state: Any) -> None:
        raise KleeneError(_ONE_QUERY.format("refresh"))

    def report(self, found: list[Any]) -> list[Any]:
        raise KleeneError(_ONE_QUERY.format("report"))

    def repunctuate(self) -> list[Any]:
        raise KleeneError(_ONE_QUERY.format("repunctuate"))

    # -- the stream ------------------------------------------------------------------------

    def _send_one(self, event: EventLike) -> list[Any]:
        return self._outputs(self._send_named(event))

    def _send_named(self, event: EventLike) -> Reported:
        return self._run(self._items([event]))

    def _items(self, events: list[EventLike]) -> list[Event]:
        """The events converted, numbered and checked in order (or, with `max_delay`,
        those the reorder buffer releases), once for every query."""
        items: list[Event] = []
        reorder = self._reorder
        for event in events:
            try:
                item = as_event(event, default_id=self._arrivals)
            except EventError as error:
                unconverted(error, self._arrivals)
                raise
            self._arrivals += 1
            self._metrics.events += 1
            try:
                if reorder is None:
                    self._in_order(item)
                    items.append(item)
                else:
                    items.extend(reorder.push(item, self._arrivals))
            except EventError as error:
                at_fault(error, item, self._arrivals)
                raise
        return items

    def _outputs(self, reported: Reported) -> list[Any]:
        """The outputs, each noted with its query for `query_of`."""
        owner = self._owner
        if len(owner) > _OWNERS:  # only the latest outputs are asked about
            self._owner = owner = dict(list(owner.items())[-_OWNERS // 2 :])
        outputs: list[Any] = []
        for name, found in reported:
            for each in found:
                owner[id(each)] = name
            outputs += found
        return outputs

    def named(self, events: Iterable[EventLike]) -> Iterator[tuple[str, Any]]:
        """Send the events and end the stream: each output with its query's name, a chunk
        of events at a time (`batches`; what `match_iter` reads)."""
        for batch in self.batches(events):
            for name, found in batch:
                for each in found:
                    yield name, each

    def batches(self, events: Iterable[EventLike], sort: bool = True) -> Iterator[Reported]:
        """`named`, a chunk's outputs at a time, each query's in a list: (name, outputs).
        With `sort=False`, each event's outputs are left in the order its plan made them,
        for a caller that sorts each query's outputs (`kleene.match`)."""
        self._ready()
        with fewer_collections():
            for chunk in _chunks(events):
                yield self._send_chunk(chunk, sort)
                settle()
        yield self._close_named()

    def _send_chunk(self, chunk: list[EventLike], sort: bool = True) -> Reported:
        """Send a chunk of events: each converted, numbered and put in order here once,
        then each query sends its share through its own loop (`Engine.send_many`),
        producers first. A query whose states may wait for a time (`Plan.timed`) is sent
        every event, those of types it does not take only moving its time (`takes`), as
        the same events sent one by one move it (`_run_one`), so that what it makes final
        at those times is reported then, and what a producer emits reaches its readers in
        order. Each query's outputs are those of sending the events one by one, in the
        order the queries run, not the events came."""
        items = self._items(chunk)
        if not items:
            return []
        taken: dict[str, list[Event]] = {}
        for item in items:
            for name in self._route(item.type):
                share = taken.get(name)
                if share is None:
                    taken[name] = [item]
                else:
                    share.append(item)
        reported: Reported = []
        for group in self._together:
            reported += group.run(items, sort)
        emitted: dict[str, list[Event]] = {}
        for name in self._order:
            lane = self.queries[name]
            fed = emitted.pop(name, None)
            takes = self._timed_takes.get(name)
            if takes is not None:
                found = lane._send_many(_merged(items, fed or []), sort=sort, takes=takes)
            else:
                own = taken.get(name)
                if not own and not fed:
                    continue
                found = lane._send_many(_merged(own or [], fed or []), sort=sort)
            if found:
                self._collect(name, found, reported, emitted)
            if lane.due is None:
                self._waiting.discard(name)
            else:
                self._waiting.add(name)
        return reported

    def _in_order(self, item: Event) -> None:
        last = self._last_t
        if last is not None and item.t < last:
            raise out_of_order(item, self._arrivals)
        self._last_t = item.t

    def send_many(self, events: Iterable[EventLike]) -> list[Any]:
        """Feed events in order, a chunk at a time (`_send_chunk`); the outputs they make
        final."""
        self._ready()
        reported: list[Any] = []
        with fewer_collections():
            for chunk in _chunks(events):
                reported += self._outputs(self._send_chunk(chunk))
                settle()
        return reported

    def send_iter(self, events: Iterable[EventLike]) -> Iterator[Any]:
        self._ready()
        for event in events:
            yield from self._send_one(event)

    def advance_to(self, ts: float | Any) -> list[Any]:
        self._ready()
        reported = self._run(self._reorder.advance_to(numeric_time(ts)) if self._reorder else [])
        return self._outputs(reported + self._each_lane(lambda lane: lane.advance_to(ts)))

    def close(self) -> list[Any]:
        if self._closed:
            return []
        self._ready()
        return self._outputs(self._close_named())

    def _close_named(self) -> Reported:
        reported = self._run(self._reorder.release_all() if self._reorder else [])
        reported += self._each_lane(Engine.close)
        self._closed = True
        return reported

    def checkpoint(self) -> bytes:
        """Every query's checkpoint and this engine's own counters, as one query's
        `Engine.checkpoint` is (signed by the first query's plan)."""
        self._ready()
        first = next(iter(self.queries.values()))
        saved = {
            "queries": {name: lane.checkpoint() for name, lane in self.queries.items()},
            "own": (
                self._metrics,
                self._arrivals,
                self._last_t,
                self._reorder,
                self._made,
                self._waiting,
            ),
            "settings": self._settings,
        }
        return first.plan.dump_state(saved)

    def resume(self, data: bytes) -> None:
        self._ready()
        if self._arrivals:
            raise KleeneError("resume a checkpoint on a new engine, before it receives events")
        first = next(iter(self.queries.values()))
        loaded = first.plan.load_state(data)
        if not isinstance(loaded, dict) or set(loaded.get("queries", {})) != set(self.queries):
            raise KleeneError("this checkpoint is not one of an engine with these queries")
        if loaded["settings"] != self._settings:
            raise KleeneError("this checkpoint was made by an engine with other settings")
        for name, lane in self.queries.items():
            lane.resume(loaded["queries"][name])
        own = loaded["own"]
        self._metrics, self._arrivals, self._last_t, self._reorder, self._made, self._waiting = own

    # -- one step through the queries -------------------------------------------------------

    def _run(self, items: list[Event]) -> Reported:
        """Send events in order through the queries (`_run_one`)."""
        reported: Reported = []
        for item in items:
            reported += self._run_one(item)
        return reported

    def _run_one(self, item: Event) -> Reported:
        """One event through the queries, producers first: each query gets it if it takes
        its type, and the events the queries before it emitted of a type it names, in
        timestamp order (an emitted event after the stream's events of its time); a query
        that waits for a time before the event's and does not take it has its time moved
        there (`Engine.reach`), as one engine of that query alone would on any event.
        What each reports, in that order."""
        reported: Reported = []
        for group in self._together:
            reported += group.run([item])
        takers = self._route(item.type)
        t = item.t
        waiting = self._waiting
        if not self._producers:  # no query feeds another
            for name in [n for n in waiting if n not in takers]:
                self._moved(name, t, reported)
            for name in takers:
                lane = self.queries[name]
                found = lane.send(item)
                if found:
                    self._collect(name, found, reported, None)
                if lane.due is not None:
                    waiting.add(name)
            return reported
        emitted: dict[str, list[Event]] = {}
        for name in self._order:
            fed = emitted.pop(name, None)
            takes = name in takers
            if not takes and not fed and name not in waiting:
                continue
            lane = self.queries[name]
            for event in _merged([item] if takes else [], fed or []):
                found = lane.send(event)
                if found:
                    self._collect(name, found, reported, emitted)
            if not takes:
                self._moved(name, t, reported, emitted)
            elif lane.due is not None:
                waiting.add(name)
        return reported

    def _moved(
        self,
        name: str,
        t: float,
        reported: Reported,
        emitted: dict[str, list[Event]] | None = None,
    ) -> None:
        """Move a query's time to `t` (an event it does not take came): what its timers due
        before then make final."""
        lane = self.queries[name]
        due = lane.due
        if due is not None and due < t:
            self._collect(name, lane.reach(t), reported, emitted)
            due = lane.due
        if due is None:
            self._waiting.discard(name)
        else:
            self._waiting.add(name)

    def _each_lane(self, call: Any) -> Reported:
        """Call each query's engine in order (advance_to, close), its events emitted sent
        first to the queries after it."""
        reported: Reported = []
        emitted: dict[str, list[Event]] = {}
        for name in self._order:
            lane = self.queries[name]
            for event in _merged([], emitted.pop(name, [])):
                self._collect(name, lane.send(event), reported, emitted)
            self._collect(name, call(lane), reported, emitted)
            if lane.due is None:
                self._waiting.discard(name)
        return reported

    def _collect(
        self,
        name: str,
        found: list[Any],
        reported: Reported,
        emitted: dict[str, list[Event]] | None,
    ) -> None:
        """Report the outputs with their query's name, and hold each emitted event for the
        queries after it that name its type."""
        if not found:
            return
        if name not in self._emitting:  # matches or rows, as they are
            reported.append((name, found))
            return
        named: list[Any] = []
        for made in found:
            each = made
            if isinstance(made, Event) and made.id is None:  # named for those it feeds
                each = made.with_id(f"{name}#{self._made.get(name, 0)}")
                self._made[name] = self._made.get(name, 0) + 1
            named.append(each)
            if emitted is not None and isinstance(each, Event):
                for reader in self._readers(each.type, name):
                    emitted.setdefault(reader, []).append(each)
        reported.append((name, named))

    def _route(self, event_type: str) -> tuple[str, ...]:
        """The queries that take events of this type, from the stream."""
        found = self._routes.get(event_type)
        if found is None:
            found = self._routes[event_type] = tuple(
                name for name, types in self._takes.items() if types is None or event_type in types
            )
        return found

    def _readers(self, event_type: str, producer: str) -> tuple[str, ...]:
        """The queries after `producer` that name an emitted event's type."""
        found = self._readers_of.get((producer, event_type))
        if found is None:
            after = self._order[self._order.index(producer) + 1 :]
            found = self._readers_of[producer, event_type] = tuple(
                name
                for name in after
                if event_type in (self.queries[name].plan.analysis.named_types or ())
            )
        return found


_ONE_QUERY = "{} is for one query: call it on engine.queries[name]"
#: How many outputs `query_of` remembers (the latest half is kept when it is full).
_OWNERS = 1 << 16


class _Together:
    """Queries whose plans step as one (`Plan.joint`): the joint, and each query's name,
    engine and the types it takes. Each engine keeps its own state, counters and guards;
    the joint steps the states (`Engine._checked` and `Engine._joint_reported` do what
    the engine's own loop does around each step)."""

    def __init__(self, names: list[str], lanes: list[Engine]) -> None:
        self.names = names
        self.lanes = lanes
        first = lanes[0].plan
        self.joint = type(first).joint([lane.plan for lane in lanes])
        self.takes = [lane.plan.analysis.taken_types for lane in lanes]
        self.types: frozenset[str] | None = (
            None if None in self.takes else frozenset().union(*self.takes)  # type: ignore[arg-type]
        )
        self.states: list[Any] = []

    def run(self, items: list[Event], sort: bool = True) -> Reported:
        """Send the events (in order, checked) that any of the queries takes through the
        joint; what each query reports, query by query (each event's sorted, unless
        `sort` is False)."""
        types = self.types
        mine = items if types is None else [item for item in items if item.type in types]
        if not mine:
            return []
        lanes = self.lanes
        states = [lane._state(None) for lane in lanes]
        if len(states) != len(self.states) or any(
            a is not b for a, b in zip(states, self.states, strict=True)
        ):  # new, resumed or dropped and made again
            self.joint.attach(states)
            self.states = states
        counts = Counter(map(_type, mine))
        lasts: dict[str, float] = {}
        for item in reversed(mine):  # each type's latest time
            if item.type not in lasts:
                lasts[item.type] = item.t
                if len(lasts) == len(counts):
                    break
        kind = type(mine[0].ts)
        mixed = len(set(map(type, map(_ts, mine)))) > 1
        first = mine[0].t  # (no later event can be behind advance_to where it is not)
        for lane, takes in zip(lanes, self.takes, strict=True):
            mark = lane._watermark
            new_kind = kind is not lane._ts_type
            if (
                mixed
                or lane._watch is not None
                or (mark is not None and (new_kind or mark.settles(first)))
            ):
                lane._checked([i for i in mine if takes is None or i.type in takes])
            elif new_kind:  # (its first events, of one kind: the first of them tells it)
                taken = next((i for i in mine if takes is None or i.type in takes), None)
                if taken is not None:
                    lane._checked([taken])
        made = self.joint.run(mine)
        reported: Reported = []
        for name, lane, takes, own in zip(self.names, lanes, self.takes, made, strict=True):
            kinds = list(counts) if takes is None else [t for t in counts if t in takes]
            if kinds:
                sent = sum(counts[t] for t in kinds)
                found = lane._joint_reported(own, sent, max(lasts[t] for t in kinds), sort)
                if found:
                    reported.append((name, found))
        return reported


def _together(
    lanes: dict[str, Engine], order: list[str], producers: tuple[str, ...]
) -> list[_Together]:
    """The queries whose plans step as one: those of equal `Plan.joint_key` (two at least)
    whose engines step one state in order with nothing around the step (no partition key,
    timers, deadlines or run counts), that feed no other query and read none's events."""
    emitted = {t for name in producers for t in lanes[name].plan.output.emits}
    groups: dict[Any, list[str]] = {}
    for name in order:
        lane = lanes[name]
        key = lane.plan.joint_key()
        alone = (
            key is None
            or lane._key is not None
            or lane._timed
            or lane._runs
            or lane._finishing
            or not lane.plan.ordered
            or name in producers
            or bool(emitted & (lane.plan.analysis.named_types or emitted))
        )
        if not alone:
            groups.setdefault(key, []).append(name)
    return [
        _Together(names, [lanes[name] for name in names])
        for names in groups.values()
        if len(names) > 1
    ]


def named_queries(queries: Mapping[str, Any] | Sequence[Any]) -> list[tuple[str, Any]]:
    """The queries with their names: a mapping's keys; for a list, each compiled plan's or
    query text's own name is not known before compiling, so its position."""
    if isinstance(queries, Mapping):
        named = [(str(name), query) for name, query in queries.items()]
    else:
        named = [
            (query.pattern_name if isinstance(query, Plan) else str(position), query)
            for position, query in enumerate(queries)
        ]
    if not named:
        raise KleeneError("give at least one query")
    names = [name for name, _ in named]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise KleeneError(f"two queries are named {twice[0]!r}; name each query once")
    return named


def feeds(compiled: Mapping[str, Plan[Any]]) -> dict[str, set[str]]:
    """Per query, the queries whose emitted events it names (its producers)."""
    graph: dict[str, set[str]] = {name: set() for name in compiled}
    for producer, plan in compiled.items():
        for event_type in plan.output.emits:
            for reader, other in compiled.items():
                if event_type in (other.analysis.named_types or ()):
                    graph[reader].add(producer)
    return graph


def _producers_first(lanes: dict[str, Engine]) -> list[str]:
    """The queries in an order where each comes after every query whose emitted events it
    names; a cycle is an error naming it."""
    graph = feeds({name: lane.plan for name, lane in lanes.items()})
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        cycle = " -> ".join(error.args[1])
        raise KleeneError(f"queries feed each other in a cycle: {cycle}") from None
    depth: dict[str, int] = {}  # how many producers deep (0: it reads only the stream)
    for name in order:  # producers come first
        depth[name] = 1 + max((depth[p] for p in graph[name]), default=-1)
    given = list(lanes)
    # among queries free to go in any order, keep the order given
    return sorted(order, key=lambda name: (depth[name], given.index(name)))


def _merged(own: list[Event], fed: list[Event]) -> list[Event]:
    """The stream's events (in order) and emitted ones in timestamp order, an emitted
    event after the stream's events of its time, emitted ones of one time as emitted."""
    if not fed:
        return own
    tagged = [(e.t, 0, n, e) for n, e in enumerate(own)] + [
        (e.t, 1, n, e) for n, e in enumerate(fed)
    ]
    return [e for *_, e in sorted(tagged, key=lambda x: x[:3])]


#: How many events `send_many` takes at a time.
_CHUNK = 4096


def _chunks(events: Iterable[EventLike]) -> Iterator[list[EventLike]]:
    chunk: list[EventLike] = []
    for event in events:
        chunk.append(event)
        if len(chunk) == _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


SEVERAL.append(Queries)
