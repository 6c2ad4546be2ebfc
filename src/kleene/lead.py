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
from kleene.errors import KleeneError
from kleene.events import Event
from kleene.language.lead.ast import Rule
from kleene.language.lead.reader import is_rule, read_rule

__all__ = ["is_rule", "parse", "run"]


def parse(text: str) -> Rule:
    """Read and check a LEAD rule: a `PatternSyntaxError` or `PatternError` (line, column,
    caret) for a rule that does not read or whose names make no sense."""
    rule = read_rule(text)
    check_rule(rule)
    return rule


def run(rule: Rule | str, events: Iterable[Any], **options: Any) -> list[Event]:
    """Every event the rule emits over `events` (in timestamp order), in emission order, the
    end of the stream included (pending time events and waits fire there)."""
    from kleene.runtime.engine import Engine

    engine = Engine(rule, **options)
    if not engine.plan.emits_events:
        raise KleeneError("kleene.lead.run takes a LEAD rule (text that begins with FROM)")
    emitted: list[Any] = [*engine.send_many(events), *engine.close()]
    return emitted
