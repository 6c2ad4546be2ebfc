"""The attributes a query reads, checked against the columns of its input before matching.

A misspelled attribute (`b.pric`) is null on every event, so the condition never holds and
the result is silently empty. Where the input has a schema (CSV, Parquet, Arrow, pandas,
Spark), `check_columns` turns that into an error naming the attribute and listing the
columns; where it has none (`Engine` on dicts, JSON lines), `AttributeWatch` warns once
about an attribute none of the first events of its type carried.

The attributes a query reads are its analysis's (`kleene.compiler.query.Query.reads`):

>>> import kleene
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WHERE b.pric > a.price WITHIN 10")
>>> [(r.attr, r.place) for r in plan.analysis.reads]
[('pric', 'b.pric'), ('price', 'a.price')]
>>> check_columns(plan.analysis.reads, ["type", "ts", "price"], "events.csv")
Traceback (most recent call last):
...
kleene.errors.EventError: events.csv, field 'pric': the query reads b.pric, but there is no
column 'pric'; the columns are type, ts, price
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from kleene.compiler.query import Read
from kleene.errors import EventError
from kleene.events import Event

__all__ = ["AttributeWatch", "check_columns", "check_time_scale"]

log = logging.getLogger("kleene")

#: Seconds from the epoch to the year 3000: a numeric timestamp beyond it, read in the
#: engine's time unit, is another unit (epoch milliseconds, microseconds, nanoseconds).
YEAR_3000 = 32_503_680_000
#: Seconds in each epoch unit a numeric timestamp may count.
EPOCH_UNITS = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9}

#: The event fields every event has, whatever its columns (`a.ts`, `a.type`, `a.id`).
FIELDS = frozenset({"ts", "type", "id"})


def check_columns(
    reads: Collection[Read],
    columns: Collection[str],
    source: str,
    roles: Mapping[str, str] | None = None,
) -> None:
    """Raise `EventError` for the first attribute the query reads that no column holds.
    `roles` maps the columns that are no attribute (the event's ts, type and id columns) to
    their role: a query reading one by its column name would read null."""
    names = list(columns)
    listing = ", ".join(names)
    roles = dict(roles or {})
    for read in reads:
        role = roles.get(read.attr)
        if role is not None and role != read.attr:
            raise EventError(
                f"the query reads {read.place}, but {read.attr!r} is the event's {role} column, "
                f"which an event holds as its {role}: write {role} instead of {read.attr}",
                source=source,
                field=read.attr,
            )
        if read.attr in FIELDS or read.attr in names:
            continue
        raise EventError(
            f"the query reads {read.place}, but there is no column {read.attr!r}; the "
            f"columns are {listing}",
            source=source,
            field=read.attr,
        )


class AttributeWatch:
    """For input without a schema: after the first `after` events of each type a query reads
    attributes from, warn once (through the `kleene` logger, and in `missing`) about every
    attribute none of them carried. It costs a dict lookup per event until every type it
    watches has been seen `after` times.

    >>> import kleene
    >>> watch = AttributeWatch(kleene.compile(
    ...     "PATTERN SEQ(A a, B b) WHERE b.pric > a.price WITHIN 10").analysis.reads, after=2)
    >>> for t in ("A", "B", "B"):
    ...     watch.see(kleene.Event(t, 1, {"price": 1}))
    >>> watch.missing
    ['b.pric']
    """

    def __init__(self, reads: Collection[Read], after: int = 100) -> None:
        self.after = after
        #: For each watched type (None: any), the reads not yet carried and events left.
        self._open: dict[str | None, tuple[list[Read], list[int]]] = {}
        for read in reads:
            if read.attr in FIELDS:
                continue
            for kind in read.types if read.types is not None else (None,):
                pending, _ = self._open.setdefault(kind, ([], [after]))
                pending.append(read)
        #: The places that read an attribute none of their type's first events carried.
        self.missing: list[str] = []

    @property
    def done(self) -> bool:
        return not self._open

    def see(self, event: Event) -> None:
        for kind in (event.type, None):
            entry = self._open.get(kind)
            if entry is None:
                continue
            pending, left = entry
            names = event.names
            pending[:] = [r for r in pending if r.attr not in names]
            left[0] -= 1
            if not pending:
                del self._open[kind]
            elif left[0] <= 0:
                del self._open[kind]
                self._warn(kind, pending)

    def _warn(self, kind: str | None, reads: list[Read]) -> None:
        which = "events" if kind is None else f"{kind} events"
        for read in reads:
            if read.place in self.missing:
                continue
            self.missing.append(read.place)
            log.warning(
                "the query reads %s, but none of the first %d %s carried %r: is it "
                "misspelled? (an attribute an event lacks is null, and a condition on it "
                "never holds)",
                read.place,
                self.after,
                which,
                read.attr,
            )


def check_time_scale(ts: float, time_unit: str, seconds_per_unit: float) -> None:
    """Refuse a numeric timestamp that, read in `time_unit`, lies beyond the year 3000: it
    counts a smaller unit since the epoch, and a window in real time would be a thousand
    (or a million) times too short, silently. The error says which unit it looks like.

    >>> check_time_scale(1_700_000_000, "s", 1.0)
    >>> check_time_scale(1_700_000_000_000, "s", 1.0)
    Traceback (most recent call last):
    ...
    kleene.errors.EventError: field 'ts': timestamp 1700000000000 read in s is after the year
    3000; it looks like epoch milliseconds: read it with ts_unit='ms' (--ts-unit ms), ...
    """
    seconds = abs(ts) * seconds_per_unit
    if seconds <= YEAR_3000:
        return
    names = {"ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
    guess = next((u for u, size in EPOCH_UNITS.items() if abs(ts) * size <= YEAR_3000), "ns")
    raise EventError(
        f"timestamp {ts!r} read in {time_unit} is after the year 3000; it looks like epoch "
        f"{names[guess]}: read it with ts_unit={guess!r} (--ts-unit {guess}), or count in "
        f"them with time_unit={guess!r} (--time-unit {guess})",
        field="ts",
    )
