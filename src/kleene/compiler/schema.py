"""The attributes a query reads, checked against the columns of its input before matching.

A misspelled attribute (`b.pric`) is null on every event, so the condition never holds and
the result is silently empty. Where the input has a schema (CSV, Parquet, Arrow, pandas,
Spark), `check_columns` turns that into an error naming the attribute and listing the
columns; where it has none (`Engine` on dicts, JSON lines), `AttributeWatch` warns once
about an attribute none of the first events of its type carried.

>>> import kleene
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WHERE b.pric > a.price WITHIN 10")
>>> [(r.attr, r.place) for r in attributes_read(plan)]
[('pric', 'b.pric'), ('price', 'a.price')]
>>> check_columns(plan, ["type", "ts", "price"], "events.csv")
Traceback (most recent call last):
...
kleene.errors.EventError: events.csv, field 'pric': the query reads b.pric, but there is no
column 'pric'; the columns are type, ts, price
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kleene.compiler.rules import actions_of, conditions_of, patterns_in
from kleene.errors import EventError
from kleene.events import Event
from kleene.language import expr as E
from kleene.language.lead import ast as L

__all__ = [
    "AttributeWatch",
    "Read",
    "attributes_read",
    "check_columns",
    "check_time_scale",
    "counts_real_time",
]

log = logging.getLogger("kleene")

#: Seconds from the epoch to the year 3000: a numeric timestamp beyond it, read in the
#: engine's time unit, is another unit (epoch milliseconds, microseconds, nanoseconds).
YEAR_3000 = 32_503_680_000
#: Seconds in each epoch unit a numeric timestamp may count.
EPOCH_UNITS = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9}

#: The event fields every event has, whatever its columns (`a.ts`, `a.type`, `a.id`).
FIELDS = frozenset({"ts", "type", "id"})


@dataclass(frozen=True)
class Read:
    """An attribute a query reads: its name, a place that reads it (for messages), and the
    event types whose events it is read from (None: any type)."""

    attr: str
    place: str
    types: frozenset[str] | None


def attributes_read(plan: Any) -> list[Read]:
    """Every attribute the compiled query (SASE+ pattern or LEAD rule) reads, in text order."""
    rule = getattr(plan, "rule", None)
    if isinstance(rule, L.Rule):
        return _rule_reads(rule)
    analysis = getattr(plan, "analysis", None)
    if analysis is None:  # an AFA written directly: its conditions are its own
        return []
    where = analysis.pattern.where
    found: list[Read] = []
    if where is None:
        return found
    for node in E.walk(where):
        if isinstance(node, E.Attr):
            types = analysis.variables[node.var].types if node.var in analysis.variables else None
            found.append(Read(node.attr, f"{node.var}.{node.attr}", types))
        elif isinstance(node, E.Aggregate) and node.attr is not None:
            types = analysis.variables[node.var].types if node.var in analysis.variables else None
            found.append(Read(node.attr, f"{node.func}({node.var}[].{node.attr})", types))
        elif isinstance(node, E.Equivalence):
            found.extend(Read(attr, f"[{attr}]", None) for attr in node.attrs)
    return found


#: What a rule's `alias.attr` names without reading a column: the event's timestamp.
_NOT_READ = frozenset({"event_time"})


def _rule_reads(rule: L.Rule) -> list[Read]:
    """A LEAD rule's reads: `alias.attr` in any expression, and the PARTITION BY attributes
    (`event_time` is the timestamp; ENRICHed attributes are made, not read)."""
    streams = {s.alias: s.type for s in rule.streams}
    enriched = {name for e in rule.enrich for name, _ in e.assignments}
    found = [Read(a.attr, f"PARTITION BY {a.var}.{a.attr}", None) for a in rule.partition]
    expressions: list[E.Expr] = [arg.value for action in actions_of(rule) for arg in action.args]
    expressions += [e for node in patterns_in(rule.pattern) for e, _ in conditions_of(node)]
    for event in rule.time_events:
        expressions += [event.start, event.end]
    for enrichment in rule.enrich:
        expressions += [value for _, value in enrichment.assignments]

    for expression in expressions:
        for e in E.walk(expression):
            if isinstance(e, E.Attr) and e.var in streams and e.attr not in _NOT_READ | enriched:
                found.append(Read(e.attr, f"{e.var}.{e.attr}", frozenset({streams[e.var]})))
    return found


def check_columns(
    plan: Any,
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
    for read in attributes_read(plan):
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
    >>> watch = AttributeWatch(attributes_read(kleene.compile(
    ...     "PATTERN SEQ(A a, B b) WHERE b.pric > a.price WITHIN 10")), after=2)
    >>> for t in ("A", "B", "B"):
    ...     watch.see(kleene.Event(t, 1, {"price": 1}))
    >>> watch.missing
    ['b.pric']
    """

    def __init__(self, reads: list[Read], after: int = 100) -> None:
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
            attrs = event.attrs
            pending[:] = [r for r in pending if r.attr not in attrs]
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


def counts_real_time(plan: Any) -> bool:
    """Does the query measure time in real units (`WITHIN 10 min`, a LEAD duration), so that
    numeric timestamps must count the engine's `time_unit` since the epoch (or from any
    origin) for the windows to mean what they say?"""
    rule = getattr(plan, "rule", None)
    if isinstance(rule, L.Rule):
        return _has_durations(rule)
    analysis = getattr(plan, "analysis", None)
    within = None if analysis is None else analysis.pattern.within
    return within is not None and within.unit is not None


def _has_durations(rule: L.Rule) -> bool:
    """Does the rule write a duration (Within, Wait, `3 days`, a time frame)?"""
    if rule.frame is not None and rule.frame.unit != "events":
        return True
    for node in patterns_in(rule.pattern):
        if isinstance(node, L.Within | L.Wait) or (
            isinstance(node, L.Negation) and node.within is not None
        ):
            return True
    expressions = [e for node in patterns_in(rule.pattern) for e, _ in conditions_of(node)]
    expressions += [e for t in rule.time_events for e in (t.start, t.end)]
    expressions += [arg.value for action in actions_of(rule) for arg in action.args]
    return any(isinstance(e, E.Duration) for x in expressions for e in E.walk(x))


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
