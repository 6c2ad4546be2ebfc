"""The `row_pattern` plan: a MATCH_RECOGNIZE clause over a stream, each partition's rows in
event-time order, under the plan contract.

A partition's state keeps its rows from a little before where the next search starts (as
far back as PREV reads) and where the search stands; a step searches as far as the rows so
far decide, and the end of the stream (a watermark at infinity) decides the rest: until
then a greedy quantifier may still take the next row.

>>> import kleene
>>> plan = kleene.compile('''MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts
...     MEASURES FIRST(price) AS top, LAST(price) AS bottom
...     PATTERN (A B+) DEFINE B AS price < PREV(price))''')
>>> plan.name, plan.output.kind
('row_pattern', 'rows')
>>> state = plan.new_state()
>>> for ts, price in enumerate([5, 4, 3, 6]):
...     print(plan.step(state, kleene.Event("Tick", ts, {"sym": "A", "price": price})))
[]
[]
[]
[{'sym': 'A', 'top': 5, 'bottom': 3}]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kleene.compiler.options import Options
from kleene.compiler.row_pattern import EventRows, RowPatternQuery
from kleene.events import Event, Watermark
from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.plans.base import Plan, register
from kleene.plans.row_pattern.partition import Matcher, Progress
from kleene.plans.row_pattern.program import Op

__all__ = ["RowPatternPlan", "RowState"]


@dataclass
class RowState:
    """A partition's rows kept, and where its search stands."""

    rows: list[Event] = field(default_factory=list)
    progress: Progress = field(default_factory=Progress)


@register
class RowPatternPlan(Plan[RowState]):
    """SQL's row pattern recognition: the preferred match from each row, as the standard
    defines it, by a backtracking search over the row pattern's program."""

    name = "row_pattern"
    languages: ClassVar[frozenset[str]] = frozenset({"sql"})
    analysis: RowPatternQuery

    def __init__(self, analysis: RowPatternQuery, options: Options) -> None:
        super().__init__(analysis, options)
        self.clause = analysis.clause
        self.matcher = Matcher(
            analysis.clause, analysis.functions, rows_are=EventRows(analysis.order)
        )
        clause = analysis.clause
        #: Does a state that holds no row say all there is to say of its past? Not when a
        #: measure or a condition counts matches (MATCH_NUMBER), nor when `^` would hold
        #: again at a fresh state's first row.
        expressions = [m.expr for m in clause.measures] + [d.condition for d in clause.defines]
        self.forgets = not any(
            isinstance(node, E.MatchNumber) for e in expressions for node in E.walk(e)
        ) and not any(node == Q.Anchor("^") for node in Q.walk_pattern(clause.pattern))

    @classmethod
    def unsupported(cls, analysis: Any, options: Options) -> str | None:
        if options.timeouts:
            return "timeouts=True reports a SASE+ pattern's partial matches; a row pattern has none"
        return super().unsupported(analysis, options)

    def new_state(self) -> RowState:
        return RowState()

    def _search(self, state: RowState, closed: bool) -> list[Any]:
        found = self.matcher.advance(state.progress, state.rows, closed)
        self.matcher.trim(state.progress, state.rows)
        return found

    def step(self, state: RowState, event: Event) -> list[Any]:
        state.rows.append(event)
        return self._search(state, closed=False)

    def advance(self, state: RowState, watermark: Watermark) -> list[Any]:
        """Time alone decides nothing, until the stream ends (a watermark at infinity):
        then the partition's last row is there."""
        if watermark.t != math.inf:
            return []
        return self._search(state, closed=True)

    def deadline(self, state: RowState) -> float | None:
        """Rows whose match a later row may still change wait for the end of the stream
        (infinity); None when every row so far is decided."""
        return math.inf if state.progress.next < len(state.rows) else None

    def idle(self, state: RowState, watermark: Watermark) -> bool:
        """A fresh state would report the same whatever rows come: no row is kept (none
        waits for a match, none lies within PREV's reach), and nothing else of the past
        matters (`forgets`). A clause that reads PREV keeps its last rows for good, as its
        next row reads them however late it comes."""
        return self.forgets and not state.rows

    def live_runs(self, state: RowState) -> int:
        return len(state.rows) - state.progress.next

    def counters(self, state: RowState) -> dict[str, int]:
        return {"rows_held": len(state.rows)}

    def dot(self) -> str:
        """The row pattern's program in Graphviz DOT (`kleene explain --dot`)."""
        return _program_dot(self.matcher.search.program, self.clause.variables)

    def describe(self) -> str:
        """The row pattern's program, an instruction a line."""
        lines = ["program:"]
        lines += [
            f"  {at:>3}  {_op_text(op, self.clause.variables)}"
            for at, op in enumerate(self.matcher.search.program)
        ]
        return "\n".join(lines)


def _program_dot(program: tuple[Op, ...], variables: tuple[str, ...]) -> str:
    """The program in Graphviz DOT: an instruction a node, the way on solid, a choice's
    first way bold and its second dashed, a greedy loop's way back dotted."""
    lines = ["digraph row_pattern {", '  node [shape=box, fontname="Helvetica"];']
    for at, op in enumerate(program):
        shape = ", shape=doublecircle" if op.kind == "accept" else ""
        text = _op_text(op, variables).replace('"', '\\"')
        lines.append(f'  i{at} [label="{at}: {text}"{shape}];')
    for at, op in enumerate(program):
        edges: list[tuple[int, str]] = []
        match op.kind:
            case "split":
                edges = [(op.a, "style=bold"), (op.b, "style=dashed")]
            case "jump":
                edges = [(op.a, "")]
            case "loop":
                edges = [(op.b, 'label="took a row"')]
            case "many":
                edges = [(at, 'style=dotted, label="another row"'), (op.b, "")]
            case "accept":
                edges = []
            case _:
                edges = [(at + 1, "")]
        lines += [f"  i{at} -> i{target} [{style}];" for target, style in edges]
    lines.append("}")
    return "\n".join(lines)


def _op_text(op: Op, variables: tuple[str, ...]) -> str:
    """An instruction in words."""
    match op.kind:
        case "label":
            return f"map the row to {variables[op.a]}"
        case "many":
            name = variables[op.a]
            return f"map as many rows as can be to {name}, then go to {op.b} (fewer if it fails)"
        case "split":
            return f"try {op.a}, then {op.b}"
        case "jump":
            return f"go to {op.a}"
        case "save":
            return f"mark where repetition {op.a} begins"
        case "loop":
            return f"if repetition {op.a} took a row, go to {op.b}"
        case "exclude":
            return "begin an exclusion" if op.a > 0 else "end the exclusion"
        case "begin":
            return "only at the partition's first row"
        case "end":
            return "only after the partition's last row"
    return "match"
