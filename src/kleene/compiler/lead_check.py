"""LEAD rules: do the names make sense together? Each mistake is a `PatternError` with a caret.

- every alias a pattern reads is declared in FROM (once);
- every name a condition reads is an alias, a named match, a list, a sub-context's item, a
  time event, or (bare) an attribute PARTITION BY names;
- a quantifier (ALL, ANY, AT LEAST n, …) ranges over exactly one list, and aggregates
  (`count(l)`, `l.count()`, `sum(l.x)`) take a list; `count()` stands in a collect's clauses;
- `all` and `every` do not nest (Remark 2);
- an action's arguments name attributes that exist (an unnamed argument takes the name of
  the attribute it reads).

>>> from kleene.language.lead_reader import read_rule
>>> check_rule(read_rule("FROM A AS a MATCH a Followed By b EMIT Event X()"))
Traceback (most recent call last):
...
kleene.errors.PatternError: line 1, column 33: unknown stream alias 'b'; FROM declares a
  1 | FROM A AS a MATCH a Followed By b EMIT Event X()
    |                                 ^
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kleene.errors import PatternError
from kleene.language import lead_ast as L
from kleene.language.ast import Span

__all__ = [
    "actions_of",
    "argument_name",
    "check_rule",
    "conditions_of",
    "lists_of",
    "patterns_in",
]

AGGREGATES = frozenset({"count", "sum", "avg", "min", "max"})
#: Makes the error for a message at a place in the rule.
Fail = Callable[[str, Span | None], PatternError]


@dataclass
class _Names:
    aliases: set[str]
    lists: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    time_events: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)


def lists_of(pattern: L.Pattern) -> set[str]:
    """The names bound to lists: named repetitions and sub-contexts."""
    found: set[str] = set()
    for node in patterns_in(pattern):
        if isinstance(node, L.Named) and isinstance(node.pattern, L.Collect | L.Subcontext):
            found.add(node.name)
    return found


def argument_name(argument: L.Argument) -> str | None:
    """The attribute an action's argument fills: its AS name, or the attribute it reads."""
    if argument.name is not None:
        return argument.name
    value = argument.value
    if isinstance(value, L.Attr):
        return value.name
    if isinstance(value, L.Name):
        return value.name
    return None


def check_rule(rule: L.Rule) -> None:
    """Raise a `PatternError` at the first name that makes no sense."""
    text = rule.text

    def fail(message: str, span: Span | None) -> PatternError:
        if span is None or not text:
            return PatternError(message, "", 0, 0)
        width = span.end - span.start if span.end_line == span.line else 1
        return PatternError(message, text, span.line, span.column, max(1, width))

    aliases: set[str] = set()
    for stream in rule.streams:
        if stream.alias in aliases:
            raise fail(f"alias {stream.alias!r} is declared twice", stream.span)
        aliases.add(stream.alias)
    names = _Names(aliases)
    names.lists = lists_of(rule.pattern)
    names.time_events = {t.name for t in rule.time_events}
    names.attributes = {a.name for a in rule.partition}
    for node in patterns_in(rule.pattern):
        if isinstance(node, L.Named):
            names.values.add(node.name)
        if isinstance(node, L.Subcontext):
            names.values.add(node.item)
    for attr in rule.partition:
        if attr.var not in aliases:
            raise fail(f"unknown stream alias {attr.var!r} in PARTITION BY", attr.span)
    known = ", ".join(sorted(aliases))
    nested = 0
    for node in patterns_in(rule.pattern):
        if isinstance(node, L.Source) and node.alias not in aliases:
            raise fail(f"unknown stream alias {node.alias!r}; FROM declares {known}", node.span)
        if isinstance(node, L.Subcontext) and node.list not in names.lists:
            raise fail(f"{node.list!r} is not a list (a named collect(…))", node.span)
        if isinstance(node, L.All | L.Policy) and (
            isinstance(node, L.All) or node.policy == "every"
        ):
            for inner in patterns_in(node.pattern):
                if isinstance(inner, L.All) or (
                    isinstance(inner, L.Policy) and inner.policy == "every"
                ):
                    raise fail("all(…) and every(…) do not nest (Remark 2)", inner.span)
            nested += 1
        if isinstance(node, L.All):
            for name in node.consume:
                if name not in aliases and name not in names.values:
                    raise fail(
                        f"consume names {name!r}, which the pattern does not bind", node.span
                    )
        for expr, in_collect in conditions_of(node):
            _check_expr(expr, names, fail, in_collect=in_collect)
    for event in rule.time_events:
        _check_expr(event.start, names, fail, in_collect=False)
        _check_expr(event.end, names, fail, in_collect=False)
    for condition in _checkconditions_of(rule.emit):
        _check_expr(condition, names, fail, in_collect=False)
    types = {t.name: t for t in rule.event_types}
    for action in actions_of(rule):
        _check_action(action, types.get(action.type), names, fail)


def patterns_in(p: L.Pattern) -> list[L.Pattern]:
    """The pattern and every pattern inside it, sub-context branches included."""
    found: list[L.Pattern] = [p]
    inner: tuple[L.Pattern, ...] = ()
    if isinstance(p, L.Sequence | L.Conjunction | L.Disjunction):
        inner = p.items
    elif isinstance(p, L.Negation | L.Within):
        inner = (p.pattern,) if p.start is None else (p.pattern, p.start)
    elif isinstance(p, L.Subcontext):
        inner = (p.pattern, p.branch)
    elif not isinstance(p, L.Source):
        inner = (p.pattern,)
    for child in inner:
        found.extend(patterns_in(child))
    return found


def conditions_of(p: L.Pattern) -> list[tuple[L.Expr, bool]]:
    """The conditions a pattern node itself holds, each with: is it a collect's clause?"""
    if isinstance(p, L.Collect):
        return [(c, True) for c in (p.accept, p.terminate, p.invalidate) if c is not None]
    if isinstance(p, L.Filtered):
        return [(p.condition, False)]
    if isinstance(p, L.Subcontext):
        return [(c, False) for c in (p.filter, p.terminate) if c is not None]
    if isinstance(p, L.Extremum):
        return [(p.aggregate, False)]
    return []


def actions_of(rule: L.Rule) -> list[L.Action]:
    """Every action of the rule: its sub-contexts' and its EMIT statement's."""
    found = [a for p in patterns_in(rule.pattern) if isinstance(p, L.Subcontext) for a in p.actions]

    def visit(emit: tuple[L.Action, ...] | L.CheckBlock) -> None:
        if isinstance(emit, L.CheckBlock):
            for check in emit.checks:
                visit(check.then)
        else:
            found.extend(emit)

    visit(rule.emit)
    return found


def _checkconditions_of(emit: tuple[L.Action, ...] | L.CheckBlock) -> list[L.Expr]:
    if not isinstance(emit, L.CheckBlock):
        return []
    return [e for c in emit.checks for e in (c.condition, *_checkconditions_of(c.then))]


def _check_action(action: L.Action, kind: L.EventType | None, names: _Names, fail: Fail) -> None:
    """An action of a DEFINEd event type takes its arguments in the type's order; any other
    names each argument (`x AS name`, or the attribute it reads)."""
    if kind is not None and len(action.args) > len(kind.fields):
        raise fail(
            f"event type {kind.name} has {len(kind.fields)} attributes; this action gives "
            f"{len(action.args)}",
            action.span,
        )
    fields = {f.name for f in kind.fields} if kind is not None else set()
    for argument in action.args:
        _check_expr(argument.value, names, fail, in_collect=False)
        if kind is None and argument_name(argument) is None:
            raise fail(f"name this argument of {action.type}: `… AS name`", argument.span)
        if kind is not None and argument.name is not None and argument.name not in fields:
            raise fail(f"event type {kind.name} has no attribute {argument.name!r}", argument.span)


def _check_expr(e: L.Expr, names: _Names, error: Fail, *, in_collect: bool) -> None:

    def visit(x: L.Expr, item: str | None) -> None:
        if isinstance(x, L.Attr):
            if x.var in names.lists and x.var != item:
                raise error(
                    f"{x.var} is a list; read its items inside a quantifier "
                    f"(ANY({x.var}.{x.name} …)) or an aggregate (max({x.var}.{x.name}))",
                    x.span,
                )
            if x.var not in names.aliases | names.values | names.lists:
                raise error(f"unknown name {x.var!r}", x.span)
        elif isinstance(x, L.Name):
            known = names.time_events | names.attributes | names.values | names.aliases
            if x.name not in known:
                raise error(
                    f"unknown attribute or name {x.name!r}; a bare name is a time event, a "
                    "named match, or an attribute PARTITION BY names",
                    x.span,
                )
        elif isinstance(x, L.Method):
            if x.var not in names.lists:
                raise error(f"{x.var!r} is not a list (a named collect(…))", x.span)
            if x.name not in AGGREGATES:
                raise error(f"unknown list method {x.name!r}()", x.span)
        elif isinstance(x, L.Call):
            if x.name not in AGGREGATES:
                raise error(f"unknown function {x.name!r}", x.span)
            if not x.args:
                if x.name != "count" or not in_collect:
                    raise error(
                        f"{x.name}() without a list stands only in a collect's clauses", x.span
                    )
            elif len(x.args) != 1 or not _list_arg(x.args[0], names.lists):
                raise error(f"{x.name}(…) takes one list: {x.name}(l) or {x.name}(l.attr)", x.span)
            return
        elif isinstance(x, L.Quantified | L.Counted):
            over = L.lists_in(x, names.lists)
            if len(over) != 1:
                what = "no list" if not over else "lists " + ", ".join(sorted(over))
                raise error(
                    f"a quantifier ranges over one list; this condition reads {what}", x.span
                )
            visit(x.body, next(iter(over)))
            return
        for child in L.children(x):
            visit(child, item)

    visit(e, None)


def _list_arg(arg: L.Expr, lists: set[str]) -> bool:
    return (isinstance(arg, L.Name) and arg.name in lists) or (
        isinstance(arg, L.Attr) and arg.var in lists
    )
