"""Matching in-process over whatever holds the events: `kleene.match` and
`kleene.match_iter` take Python events or mappings, a reader (`read_events`, `from_arrow`,
`from_pandas`), a pandas DataFrame or an Arrow table, and run the engine over them.

A reader with a schema has the query's attributes checked against its columns before any
event is matched (`check_columns`), and a reader of Arrow batches makes events only of the
rows some part of the query can take (`kleene.io.prefilter`), where leaving the others out
changes no output.

>>> import kleene, pandas
>>> frame = pandas.DataFrame({"type": ["A", "B", "B"], "ts": [1, 2, 3], "x": [1, 2, 0]})
>>> [m.ids() for m in kleene.match("PATTERN SEQ(A a, B b) WHERE b.x > a.x WITHIN 5", frame)]
[{'a': (0,), 'b': (1,)}]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Any, overload

from kleene.compiler.schema import check_columns
from kleene.events import Event
from kleene.io.prefilter import row_filter
from kleene.io.readers import EventReader, from_arrow, from_pandas
from kleene.matches import net
from kleene.plans.base import Plan
from kleene.runtime.engine import Engine, fewer_collections, located
from kleene.runtime.queries import Queries

__all__ = ["check_input", "events_of", "match", "match_iter"]

EventLike = Event | Mapping[str, Any]


def events_of(data: Any) -> Iterable[Any]:
    """The events `data` holds: a pandas DataFrame or an Arrow table (or record batch) read
    with the default columns `ts` and `type` (`from_pandas` and `from_arrow` name others);
    anything else as it is (events, mappings, a reader)."""
    kind = type(data)
    module = kind.__module__.split(".")[0]
    if module == "pandas" and kind.__name__ == "DataFrame":
        return from_pandas(data)
    if module == "pyarrow" and kind.__name__ in ("Table", "RecordBatch", "RecordBatchReader"):
        return from_arrow(data)
    return data  # type: ignore[no-any-return]


def check_input(plan: Plan[Any], events: Iterable[Any]) -> Iterable[Any]:
    """The events, unchanged; when they come from a reader with a schema (CSV, Parquet,
    Arrow, pandas), the query's attributes are first checked against its columns
    (`check_columns`: an `EventError` for an attribute no column holds, before any event is
    matched), and a reader of Arrow batches (Parquet, Arrow, pandas) makes events only of
    the rows some part of the query can take (`Query.filters`), when leaving the others out
    changes nothing. Other events are handed back as they are (no layer per event)."""
    if not isinstance(events, EventReader):
        return events
    if events.arrow and events.keep is None:
        events.keep = row_filter(plan.analysis.filters, events.columns)
    return _Checked(plan, events)


class _Checked:
    """A reader whose columns are checked against the query's attributes when it is first
    read (it opens then): the events it makes, with no layer per event."""

    def __init__(self, plan: Plan[Any], events: EventReader) -> None:
        self.plan, self.events = plan, events

    def __iter__(self) -> Iterator[Any]:
        events = self.events
        iterator = iter(events)
        first = next(iterator, None)  # opens the input: its columns are known now
        if events.names is not None:
            check_columns(
                self.plan.analysis.reads,
                events.names,
                events.where or events.source,
                events.roles(),
            )
        return iterator if first is None else chain((first,), iterator)


@overload
def match(
    query: Mapping[str, Any] | list[Any] | tuple[Any, ...],
    events: Any,
    plan: str = "auto",
    **options: Any,
) -> dict[str, list[Any]]: ...
@overload
def match(query: Any, events: Any, plan: str = "auto", **options: Any) -> list[Any]: ...
def match(query: Any, events: Any, plan: str = "auto", **options: Any) -> Any:
    """All outputs of `query` over `events` (see the module docstring for what `events` may
    be): matches sorted by end time, start time and event ids; a rule's emitted events in
    the order they were emitted; with a plan that takes events in any order (`afa`), the
    matches that remain once every retraction is applied. Several queries (a mapping of
    names to queries, or a list: `kleene.Engine` runs them over the stream at once) give
    a dict of each query's outputs, sorted so, by its name.

    >>> import kleene
    >>> events = [{"type": t, "ts": i} for i, t in enumerate("AABBC")]
    >>> len(kleene.match("PATTERN SEQ(A a, B b, C c) WITHIN 1 hour", events))
    4
    """
    engine = Engine(query, plan, **options)
    data = events_of(events)
    if isinstance(engine, Queries):
        return _each_query(engine, data)
    with fewer_collections(), located(data):
        # each event's outputs are left unsorted: they are all sorted once, below
        found = engine._send_many(check_input(engine.plan, data), sort=False)
        found.extend(engine.close())
    output = engine.plan.output
    if output.retractions:
        return net(found)
    found.sort(key=output.sort_key)
    return found


def match_iter(query: Any, events: Any, plan: str = "auto", **options: Any) -> Iterator[Any]:
    """The outputs of `query` over `events` as they are made (`Engine.send_iter`), then
    those the end of the stream makes final: in the order reported, not sorted as `match`
    sorts them, and none held longer than it takes to hand it out. A plan that takes events
    in any order (`afa`) gives its `Retraction`s too, as they come. Several queries give
    pairs of a query's name and an output.

    >>> import kleene
    >>> events = [{"type": t, "ts": i} for i, t in enumerate("AABBC")]
    >>> for m in kleene.match_iter("PATTERN SEQ(A a, B b, C c) WITHIN 1 hour", events):
    ...     print(m.ids())
    {'a': (0,), 'b': (2,), 'c': (4,)}
    {'a': (1,), 'b': (2,), 'c': (4,)}
    {'a': (0,), 'b': (3,), 'c': (4,)}
    {'a': (1,), 'b': (3,), 'c': (4,)}
    """
    engine = Engine(query, plan, **options)
    data = events_of(events)
    with located(data):
        if isinstance(engine, Queries):
            yield from engine.named(data)
            return
        yield from engine.send_iter(check_input(engine.plan, data))
        yield from engine.close()


def _each_query(engine: Queries, data: Iterable[Any]) -> dict[str, list[Any]]:
    """`match` of several queries: each query's outputs by its name, sorted as `match`
    sorts one query's."""
    by_query: dict[str, list[Any]] = {name: [] for name in engine.queries}
    with located(data):
        for batch in engine.batches(data, sort=False):  # each query's sorted below
            for name, found in batch:
                by_query[name] += found
    for name, outputs in by_query.items():
        output = engine.queries[name].plan.output
        if output.retractions:
            by_query[name] = net(outputs)
        else:
            outputs.sort(key=output.sort_key)
    return by_query
