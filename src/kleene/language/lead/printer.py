"""LEAD AST → rule text that reads back to an equal AST (`read_rule(rule_text(r)) == r`).

>>> from kleene.language.lead.reader import read_rule
>>> rule = read_rule("from A as a, B as b match a followed by not b within 5 s "
...                  "emit event Alone(a.x as x)")
>>> print(rule_text(rule))
FROM A AS a, B AS b
MATCH a Followed By not b Within 5 s
EMIT Event Alone(a.x AS x)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kleene.language import expr as E
from kleene.language.lead import ast as L
from kleene.language.text import ATOM, UNARY, ExprPrinter

__all__ = ["expr_text", "pattern_text", "rule_text"]

# Binding strength of pattern operators: a child weaker than its place is parenthesized.
_SEQUENCE, _DISJUNCTION, _CONJUNCTION, _NEGATION, _POSTFIX = range(5)


def rule_text(rule: L.Rule) -> str:
    """The rule as text, one clause per line."""
    lines = ["FROM " + ", ".join(f"{s.type} AS {s.alias}" for s in rule.streams)]
    definitions = [
        f"TimeEvent {t.name}({expr_text(t.start)}, {expr_text(t.end)})" for t in rule.time_events
    ] + [_event_type(e) for e in rule.event_types]
    if definitions:
        lines.append("DEFINE " + "\n  ".join(definitions))
    if rule.enrich:
        lines.append("ENRICH " + ", ".join(_enrichment(e) for e in rule.enrich))
    lines.append("MATCH " + pattern_text(rule.pattern))
    if rule.partition or rule.frame:
        items = [expr_text(a) for a in rule.partition]
        if rule.frame is not None:
            items.append(f"{rule.frame.amount} {rule.frame.unit}")
        lines.append("PARTITION BY " + ", ".join(items))
    if isinstance(rule.emit, L.CheckBlock):
        lines.append("EMIT " + _block(rule.emit, 0))
    else:
        lines.append(_actions(rule.emit))
    return "\n".join(lines)


def _event_type(kind: L.EventType) -> str:
    fields = []
    for f in kind.fields:
        default = "" if f.default is None else f"({expr_text(f.default)})"
        fields.append(f"{f.type} {f.name}{default}")
    return f"EventType {kind.name}({', '.join(fields)})"


def _enrichment(enrichment: L.Enrichment) -> str:
    parts = ", ".join(f"{name} = {expr_text(value)}" for name, value in enrichment.assignments)
    return f"{enrichment.alias}({parts})"


def _actions(actions: tuple[L.Action, ...]) -> str:
    return "EMIT " + ", ".join(_action(a) for a in actions)


def _action(action: L.Action) -> str:
    args = ", ".join(
        expr_text(a.value) + ("" if a.name is None else f" AS {a.name}") for a in action.args
    )
    return f"Event {action.type}({args})"


def _block(block: L.CheckBlock, depth: int) -> str:
    pad = "  " * (depth + 1)
    lines = [f"CHECK {block.strategy.upper()}"]
    for check in block.checks:
        head = f"{pad}WHERE ({expr_text(check.condition)})"
        if isinstance(check.then, L.CheckBlock):
            lines.append(f"{head} {_block(check.then, depth + 1)}")
        else:
            lines.append(f"{head} {_actions(check.then)}")
    lines.append("  " * depth + "END")
    return "\n".join(lines)


# ---- patterns --------------------------------------------------------------------------


def pattern_text(pattern: L.Pattern, place: int = _SEQUENCE) -> str:
    """A pattern as text, parenthesized if it binds more weakly than `place` needs."""
    strength, text = _pattern(pattern)
    return f"({text})" if strength < place else text


def _pattern(p: L.Pattern) -> tuple[int, str]:
    if isinstance(p, L.Source):
        return _POSTFIX, p.alias
    if isinstance(p, L.FollowedBy):
        return _SEQUENCE, " Followed By ".join(pattern_text(i, _DISJUNCTION) for i in p.items)
    if isinstance(p, L.Disjunction):
        return _DISJUNCTION, " or ".join(pattern_text(i, _CONJUNCTION) for i in p.items)
    if isinstance(p, L.Conjunction):
        return _CONJUNCTION, " and ".join(pattern_text(i, _NEGATION) for i in p.items)
    if isinstance(p, L.Negation):
        inner = pattern_text(p.pattern, _POSTFIX)
        if p.within is not None:
            inner += f" Within {_duration(p.within)}"
            if p.start is not None:
                inner += f" From {pattern_text(p.start, _POSTFIX + 1)}"
        return _NEGATION, f"not {inner}"
    if isinstance(p, L.Named):
        return _POSTFIX, f"{pattern_text(p.pattern, _POSTFIX)} AS {p.name}"
    if isinstance(p, L.Within):
        text = f"{pattern_text(p.pattern, _POSTFIX)} Within {_duration(p.within)}"
        if p.start is not None:
            text += f" From {pattern_text(p.start, _POSTFIX + 1)}"
        return _POSTFIX, text
    if isinstance(p, L.Filtered):
        return _POSTFIX, f"{pattern_text(p.pattern, _POSTFIX)}.filter({expr_text(p.condition)})"
    if isinstance(p, L.Subcontext):
        ref = p.list
        if p.range is not None:
            ref += f".RANGE({p.range[0]}, {p.range[1]})"
        if p.filter is not None:
            ref += f".filter({expr_text(p.filter)})"
        branch = f"(MATCH {pattern_text(p.branch)} {_actions(p.actions)})"
        text = f"{pattern_text(p.pattern, _POSTFIX)} Subcontext ({p.item} ==> {ref} {branch})"
        if p.terminate is not None:
            text += f" terminate({expr_text(p.terminate)})"
        return _POSTFIX, text
    if isinstance(p, L.Collect):
        text = f"collect({pattern_text(p.pattern)})"
        for word, clause in (
            ("accept", p.accept),
            ("terminate", p.terminate),
            ("invalidate", p.invalidate),
        ):
            if clause is not None:
                text += f" {word}({expr_text(clause)})"
        return _POSTFIX + 1, text
    if isinstance(p, L.Wait):
        return _POSTFIX + 1, f"Wait({pattern_text(p.pattern)}, {_duration(p.duration)})"
    if isinstance(p, L.Policy):
        return _POSTFIX + 1, f"{p.policy}({pattern_text(p.pattern)})"
    if isinstance(p, L.All):
        consume = f" consume({', '.join(p.consume)})" if p.consume else ""
        return _POSTFIX + 1, f"all({pattern_text(p.pattern)}){consume}"
    return _POSTFIX + 1, f"{p.op}({pattern_text(p.pattern)}, {expr_text(p.aggregate)})"


def _duration(d: E.Duration) -> str:
    return f"{d.amount} {d.unit}"


# ---- expressions -----------------------------------------------------------------------


class LeadPrinter(ExprPrinter):
    """LEAD's spelling: `==`, TRUE and FALSE, single-quoted strings, `count(l)`,
    `sum(l.x)`, `count()`, durations, bare names and quantifiers."""

    compare_symbols: ClassVar[Mapping[str, str]] = {**ExprPrinter.compare_symbols, "=": "=="}

    def constant(self, value: Any) -> tuple[str, int]:
        if isinstance(value, bool):
            return ("TRUE" if value else "FALSE"), ATOM
        if isinstance(value, str):
            escaped = value.replace("\\", "\\\\").replace("'", "\\'")
            return f"'{escaped}'", ATOM
        if value is None:
            raise TypeError("LEAD has no null literal")
        return repr(value), (UNARY if value < 0 else ATOM)

    def leaf(self, expr: E.Expr) -> str:
        match expr:
            case E.Aggregate(func=func, var=var, attr=None) if var != E.CURRENT:
                return f"{func}({var})"
            case E.Aggregate(func=func, var=var, attr=str() as attr) if var != E.CURRENT:
                return f"{func}({var}.{attr})"
        return super().leaf(expr)


_PRINTER = LeadPrinter()


def expr_text(e: E.Expr) -> str:
    """An expression as text.

    >>> from kleene.language.lead.reader import read_rule
    >>> rule = read_rule("FROM A AS a MATCH a.filter(not (a.x + 1) * 2 > 3 or a.y == 'n') "
    ...                  "EMIT Event X()")
    >>> expr_text(rule.pattern.condition)
    "not (a.x + 1) * 2 > 3 or a.y == 'n'"
    """
    return _PRINTER.text(e)
