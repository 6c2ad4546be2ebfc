"""Helpers for testing patterns: streams as small tables, matches as short lines.

>>> from kleene.testing import events, match_lines
>>> stream = events('''
...     type  ts  id  price
...     A     1   a1  10
...     B     2   b1  -
...     A     2   a2  'x y'
... ''')
>>> stream[1]
Event('B', 2, {}, id='b1')
>>> import kleene
>>> match_lines(kleene.match("PATTERN SEQ(A a, B b)", stream))
['a=a1 b=b1']

In a table, `-` leaves the attribute out, `null` sets it to None, numbers and `true`/`false`
are read as such, quotes keep spaces, and anything else is a string. The `id` column is
optional; `type` and `ts` are required. A column `attr.type` is the attribute `type` (a
plain `type` column is the event type).
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable
from typing import Any

from kleene.events import Event
from kleene.matches import Match

__all__ = ["assert_matches", "events", "match_lines", "parse_match_line", "plans_taking", "value"]


def value(text: str) -> Any:
    """A table cell as a Python value."""
    if text == "null":
        return None
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def events(table: str) -> list[Event]:
    """Events from a whitespace-separated table with a header row."""
    rows = [shlex.split(line) for line in table.strip().splitlines() if line.strip()]
    if not rows:
        return []
    header, *body = rows
    for required in ("type", "ts"):
        if required not in header:
            raise ValueError(f"the table needs a {required!r} column")
    result = []
    for number, row in enumerate(body):
        if len(row) != len(header):
            raise ValueError(f"row {number + 1} has {len(row)} cells, the header {len(header)}")
        cells = dict(zip(header, row, strict=True))
        attrs = {
            k.removeprefix("attr."): value(v)
            for k, v in cells.items()
            if k not in ("type", "ts", "id") and v != "-"
        }
        event_id = value(cells["id"]) if "id" in cells else number
        result.append(Event(cells["type"], value(cells["ts"]), attrs, event_id))
    return result


def match_lines(matches: Iterable[Match]) -> list[str]:
    """Each match as a line `var=id,id …`, in the given order."""
    lines = []
    for found in matches:
        parts = [
            f"{name}={','.join(str(e.id) for e in bound)}" for name, bound in found.bindings.items()
        ]
        lines.append(" ".join(parts))
    return lines


def parse_match_line(line: str) -> str:
    """A match line in canonical form (variables in the order written, ids as written)."""
    return " ".join(part.strip() for part in line.split())


def assert_matches(actual: Iterable[Match], expected: Iterable[str]) -> None:
    """Assert that the matches are exactly the expected lines, in any order."""
    got = Counter(match_lines(actual))
    want = Counter(parse_match_line(line) for line in expected if line.strip())
    if got != want:
        missing = sorted((want - got).elements())
        extra = sorted((got - want).elements())
        raise AssertionError(f"missing matches: {missing}\nunexpected matches: {extra}")


def plans_taking(query: str, **options: Any) -> list[str]:
    """The registered plans that run `query` (with `options`), by name.

    >>> {"reference", "nfa", "window_join"} <= set(plans_taking("PATTERN SEQ(A a, B b) WITHIN 5"))
    True
    >>> plans_taking("PATTERN SEQ(A+ a[], B b) WHERE skip_till_any_match strict_contiguity(a[])")
    ['nfa', 'reference']
    """
    from kleene.plans import base  # (the plans import this package's users)

    compiled = base.compile(query, "reference", **options)
    return [
        name
        for name in sorted(base.PLANS)
        if base.PLANS[name].refusal(compiled.analysis, compiled.options) is None
    ]
