"""Matches as a pandas DataFrame: one row a match, a column per variable field, or one row an
event of a match with `explode=True`. The events a LEAD rule emits become one row each.

>>> import kleene
>>> events = [{"type": t, "ts": ts, "price": p} for t, ts, p in
...           [("A", 1, 10), ("B", 2, 11), ("B", 3, 12), ("C", 4, 9)]]
>>> found = kleene.match("PATTERN SEQ(A a, B+ b[], C c) WHERE skip_till_next_match "
...                      "{ c.price < a.price } WITHIN 10", events)
>>> frame = kleene.to_pandas(found)
>>> frame[["start_ts", "end_ts", "a.price", "b.price", "c.price"]]
   start_ts  end_ts  a.price   b.price  c.price
0         1       4       10  [11, 12]        9
>>> kleene.to_pandas(found, explode=True)[["match", "variable", "position", "id", "price"]]
   match variable  position  id  price
0      0        a         0   0     10
1      0        b         0   1     11
2      0        b         1   2     12
3      0        c         0   3      9
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kleene.errors import KleeneError
from kleene.events import Event
from kleene.matches import Match, Retraction, Timeout

__all__ = ["to_pandas"]


def to_pandas(found: Iterable[Match | Event], *, explode: bool = False) -> Any:
    """A pandas DataFrame of matches (or of a LEAD rule's emitted events).

    One row a match: `pattern`, `start_ts`, `end_ts`, the query's RETURN values (one column
    each), then for each variable `v` the columns
    `v.id`, `v.ts` and `v.<attribute>` for every attribute its events carry: a value for a
    variable that binds one event in every match, a list (in order) for a Kleene variable.
    With `explode=True`, one row an event of a match: `match` (the match's row number),
    `pattern`, `start_ts`, `end_ts`, `variable`, `position` (within the variable), `id`,
    `type`, `ts` and the event's attributes. A retraction (plan `afa`) has `retraction`
    True; with timed-out partial matches among the matches (`timeouts=True`), `kind` says
    "match" or "timeout" and `deadline` when a timeout's window closed. Emitted events are
    one row each: `type`, `ts` and their attributes."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with kleene[spark]
        raise KleeneError("to_pandas needs pandas: pip install pandas") from None
    items = list(found)
    if any(isinstance(item, Event) for item in items):
        return pd.DataFrame([{"type": e.type, "ts": e.ts, **e.attrs} for e in items])  # type: ignore[union-attr]
    matches: list[Match] = items  # type: ignore[assignment]
    retractions = any(isinstance(m, Retraction) for m in matches)
    timeouts = any(isinstance(m, Timeout) for m in matches)

    def marks(m: Match) -> dict[str, Any]:
        """A retraction's and a timeout's own columns."""
        found: dict[str, Any] = {}
        if retractions:
            found["retraction"] = isinstance(m, Retraction)
        if timeouts:
            found["kind"] = "timeout" if isinstance(m, Timeout) else "match"
            found["deadline"] = m.deadline if isinstance(m, Timeout) else None
        return found

    if explode:
        rows = []
        for number, m in enumerate(matches):
            head = {
                "match": number,
                "pattern": m.pattern,
                "start_ts": m.start_ts,
                "end_ts": m.end_ts,
                **marks(m),
            }
            for name, events in m.bindings.items():
                for position, e in enumerate(events):
                    rows.append(
                        {**head, "variable": name, "position": position, "id": e.id,
                         "type": e.type, "ts": e.ts, **e.attrs}
                    )  # fmt: skip
        return pd.DataFrame(rows)
    many = {name for m in matches for name, events in m.bindings.items() if len(events) != 1}
    fields: dict[str, list[str]] = {}
    for m in matches:
        for name, events in m.bindings.items():
            known = fields.setdefault(name, ["id", "ts"])
            for e in events:
                known.extend(a for a in e.attrs if a not in known)
    rows = []
    for m in matches:
        row: dict[str, Any] = {"pattern": m.pattern, "start_ts": m.start_ts, "end_ts": m.end_ts}
        row.update(marks(m))
        row.update(m.values or {})
        for name, names in fields.items():
            events = m.bindings.get(name, ())
            for field in names:
                values = [_field(e, field) for e in events]
                row[f"{name}.{field}"] = values if name in many else (values[0] if values else None)
        rows.append(row)
    return pd.DataFrame(rows)


def _field(event: Event, name: str) -> Any:
    if name == "id":
        return event.id
    if name == "ts":
        return event.ts
    return event.attrs.get(name)
