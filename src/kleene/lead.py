"""LEAD rules (Al Bassit, Skhiri & Ammar, DEBS 2019): parse one, or run it over events.

A rule begins with FROM; `kleene.compile`, `kleene.Engine` and `kleene.spark.detect` take
one wherever they take a SASE+ query, and run it on the `petri` plan. What a rule returns
are the events its EMIT statement emits.

>>> import kleene
>>> rule = '''FROM Tick AS t
...           MATCH every(collect(t) terminate(count() == 2) AS pair)
...           EMIT Event Pair(pair.count() AS n)'''
>>> kleene.lead.run(rule, [{"type": "Tick", "ts": i} for i in range(5)])
[Event('Pair', 1, {'n': 2}), Event('Pair', 3, {'n': 2})]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kleene.compiler.rules import check_rule
from kleene.events import Event
from kleene.io.matching import match
from kleene.language.lead.ast import Rule
from kleene.language.lead.reader import read_rule

__all__ = ["parse", "run"]


def parse(text: str) -> Rule:
    """Read and check a LEAD rule: a `PatternSyntaxError` or `PatternError` (line, column,
    caret) for a rule that does not read or whose names make no sense."""
    rule = read_rule(text)
    check_rule(rule)
    return rule


def run(rule: Rule | str, events: Iterable[Any], **options: Any) -> list[Event]:
    """Every event the rule emits over `events` (in timestamp order), in the order they are
    emitted, the end of the stream included (pending time events and waits fire there); as
    `kleene.match` gives them. Text that is no LEAD rule is a syntax error at its start."""
    if not isinstance(rule, Rule):
        rule = read_rule(rule)
    emitted: list[Event] = match(rule, events, **options)
    return emitted
