"""LEAD rules in the compiler: do the names make sense together (`check_rule`), and what
the leaves of a rule's expressions read (`RuleScope` for the interpreter, `compile_value` and
`compile_condition` through the one code generator).

Each mistake `check_rule` finds is a `PatternError` with a caret:

- every alias a pattern reads is declared in FROM (once);
- every name a condition reads is an alias, a named match, a list, a sub-context's item, a
  time event, or (bare) an attribute PARTITION BY names;
- a quantifier (ALL, ANY, AT LEAST n, …) ranges over exactly one list, and aggregates
  (`count(l)`, `l.count()`, `sum(l.x)`) take a list; `count()` stands in a collect's clauses;
- `all` and `every` do not nest (Remark 2);
- an action's arguments name attributes that exist (an unnamed argument takes the name of
  the attribute it reads).

>>> from kleene.language.lead.reader import read_rule
>>> check_rule(read_rule("FROM A AS a MATCH a Followed By b EMIT Event X()"))
Traceback (most recent call last):
...
kleene.errors.PatternError: line 1, column 33: unknown stream alias 'b'; FROM declares a
  1 | FROM A AS a MATCH a Followed By b EMIT Event X()
    |                                 ^

A rule's expressions read a token's bindings (an alias → its event, a list → its items, a
named match → its value), the time now (time events are true from their start to their
end), and in a collect's clauses the list it governs (`count()`). They follow the SQL
nulls of every kleene expression (docs/semantics.md): a missing attribute is null, a
comparison with null is unknown, and a condition holds only when it is true.

>>> rule = read_rule("FROM A AS a MATCH a.filter(a.x + 1 > 2 and a.event_time < 5) "
...                  "EMIT Event X()")
>>> check = compile_condition(rule.pattern.condition, Names())
>>> early, late = Event("A", 3, {"x": 2}), Event("A", 6, {"x": 2})
>>> check(Env({"a": early}, now=3)), check(Env({"a": late}, now=6))
(True, False)
>>> check(Env({"a": Event("A", 3, {})}, now=3))  # a.x is null: unknown, so not true
False
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kleene.compiler.codegen import Writer
from kleene.compiler.evaluate import Scope, aggregate, evaluate, quantified
from kleene.compiler.functions import known_functions
from kleene.compiler.query import (
    EventFilter,
    Field,
    Kind,
    Output,
    Partition,
    Query,
    Read,
    value_kind,
)
from kleene.errors import PatternError
from kleene.events import Event
from kleene.language import expr as E
from kleene.language.expr import Span
from kleene.language.lead import ast as L
from kleene.language.lead.printer import rule_text
from kleene.language.lead.reader import AGGREGATES
from kleene.language.text import error_at

__all__ = [
    "Env",
    "Fn",
    "Names",
    "RuleAnalysis",
    "RuleScope",
    "actions_of",
    "analyze_rule",
    "argument_name",
    "check_rule",
    "compile_condition",
    "compile_value",
    "conditions_of",
    "duration",
    "item_attr",
    "lists_of",
    "patterns_in",
    "time_events_in",
]

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
    if isinstance(value, E.Attr):
        return value.attr
    if isinstance(value, E.Name):
        return value.name
    return None


def check_rule(rule: L.Rule) -> None:
    """Raise a `PatternError` at the first name that makes no sense."""
    text = rule.text

    def fail(message: str, span: Span | None) -> PatternError:
        return error_at(message, text, span)

    aliases: set[str] = set()
    for stream in rule.streams:
        if stream.alias in aliases:
            raise fail(f"alias {stream.alias!r} is declared twice", stream.span)
        aliases.add(stream.alias)
    names = _Names(aliases)
    names.lists = lists_of(rule.pattern)
    names.time_events = {t.name for t in rule.time_events}
    names.attributes = {a.attr for a in rule.partition}
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
    for name, argument, _ in _emitted_arguments(rule):
        if name in EVENT_FIELDS:
            raise fail(
                f"an emitted event's {name} is its own (the action's type, the time it is "
                f"emitted); name this attribute otherwise (… AS name)",
                argument.span,
            )


def patterns_in(p: L.Pattern) -> list[L.Pattern]:
    """The pattern and every pattern inside it, sub-context branches included."""
    found: list[L.Pattern] = [p]
    inner: tuple[L.Pattern, ...] = ()
    if isinstance(p, L.FollowedBy | L.Conjunction | L.Disjunction):
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


def conditions_of(p: L.Pattern) -> list[tuple[E.Expr, bool]]:
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


def _checkconditions_of(emit: tuple[L.Action, ...] | L.CheckBlock) -> list[E.Expr]:
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


def _check_expr(e: E.Expr, names: _Names, error: Fail, *, in_collect: bool) -> None:

    def visit(x: E.Expr, item: str | None) -> None:
        if isinstance(x, E.Attr):
            if x.var in names.lists and x.var != item:
                raise error(
                    f"{x.var} is a list; read its items inside a quantifier "
                    f"(ANY({x.var}.{x.attr} …)) or an aggregate (max({x.var}.{x.attr}))",
                    x.span,
                )
            if x.var not in names.aliases | names.values | names.lists:
                raise error(f"unknown name {x.var!r}", x.span)
        elif isinstance(x, E.Name):
            known = names.time_events | names.attributes | names.values | names.aliases
            if x.name not in known:
                raise error(
                    f"unknown attribute or name {x.name!r}; a bare name is a time event, a "
                    "named match, or an attribute PARTITION BY names",
                    x.span,
                )
        elif isinstance(x, E.Aggregate):
            func = x.func
            if x.var == E.CURRENT and (func != "count" or not in_collect):
                raise error(f"{func}() without a list stands only in a collect's clauses", x.span)
            if x.var == E.CURRENT:
                return
            elif x.var not in names.lists:
                raise error(
                    f"{x.var!r} is not a list (a named collect(…)); {func} takes one: "
                    f"{func}(l) or {func}(l.attr)",
                    x.span,
                )
            elif x.attr is None and func != "count":
                raise error(f"{func} needs an attribute of the items: {func}({x.var}.x)", x.span)
            return
        elif isinstance(x, E.Call):
            if x.name in AGGREGATES:
                raise error(f"{x.name}(…) takes one list: {x.name}(l) or {x.name}(l.attr)", x.span)
            raise error(f"unknown function {x.name!r}", x.span)
        elif isinstance(x, E.Quantified):
            over = L.lists_in(x, names.lists)
            if len(over) != 1:
                what = "no list" if not over else "lists " + ", ".join(sorted(over))
                raise error(
                    f"a quantifier ranges over one list; this condition reads {what}", x.span
                )
            visit(x.body, next(iter(over)))
            return
        for child in E.children(x):
            visit(child, item)

    visit(e, None)


# ---- what a rule's expressions read ---------------------------------------------------


@dataclass(frozen=True)
class Names:
    """What the compiler knows of a rule's names: the time events by name, the list names,
    the units, the bare names PARTITION BY makes attributes, the rule's text."""

    time_events: Mapping[str, L.TimeEvent] = field(default_factory=dict)
    lists: frozenset[str] = frozenset()
    #: Seconds per timestamp unit (durations become timestamp units).
    unit_seconds: float = 1.0
    #: Bare names that are attributes: name → the alias that carries it (PARTITION BY).
    attributes: Mapping[str, str] = field(default_factory=dict)
    #: The rule's text (errors point into it).
    text: str = ""


@dataclass(slots=True)
class Env:
    """What an expression sees when it runs: a token's bindings, the time now, and the items
    of the list a collect clause governs (`count()`), if any."""

    bindings: Mapping[str, Any]
    now: float = 0.0
    current: Sequence[Any] | None = None


#: A compiled expression of a rule.
Fn = Callable[[Env], Any]


def item_attr(item: Any, name: str) -> Any:
    """An attribute of a bound value: an event's (`event_time` is its timestamp), else None."""
    if isinstance(item, Event):
        if name == "event_time":
            return item.t
        return item.get(name)
    if isinstance(item, Mapping):
        return item.get(name)
    return None


def as_items(value: Any) -> Sequence[Any]:
    """A bound value as a list of items: a list as it is, one value as one item."""
    if value is None:
        return ()
    if isinstance(value, tuple | list):
        return value
    return (value,)


def duration(d: E.Duration, names: Names) -> float:
    """A duration in timestamp units (an int when whole, so int timestamps stay ints)."""
    length = d.seconds / names.unit_seconds
    return int(length) if length.is_integer() else length


def time_events_in(expr: E.Expr | None, names: Names) -> set[str]:
    """The time events an expression reads (its value changes as time passes)."""
    if expr is None:
        return set()
    return {
        node.name
        for node in E.walk(expr)
        if isinstance(node, E.Name) and node.name in names.time_events
    }


def _values(node: E.Aggregate, items: Sequence[Any]) -> list[Any]:
    """What an aggregate of a list runs over: its items, or their attribute."""
    if node.attr is None:
        return list(items)
    return [item_attr(item, node.attr) for item in items]


def _list_of(node: E.Quantified, names: Names) -> str:
    (var,) = L.lists_in(node, names.lists)  # the checker guarantees exactly one
    return var


@dataclass(frozen=True)
class RuleScope(Scope):
    """The interpreter's view of a rule's expression in one environment."""

    names: Names
    env: Env
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=known_functions)

    def attr(self, node: E.Attr) -> Any:
        return item_attr(self.env.bindings.get(node.var), node.attr)

    def name(self, node: E.Name) -> Any:
        names, name = self.names, node.name
        event = names.time_events.get(name)
        if event is not None:
            low, high = evaluate(event.start, self), evaluate(event.end, self)
            return low is not None and high is not None and low <= self.env.now < high
        if name in names.attributes:
            return item_attr(self.env.bindings.get(names.attributes[name]), name)
        return self.env.bindings.get(name)

    def duration(self, node: E.Duration) -> Any:
        return duration(node, self.names)

    def aggregate(self, node: E.Aggregate) -> Any:
        env = self.env
        items = as_items(env.current if node.var == E.CURRENT else env.bindings.get(node.var))
        return aggregate(node, _values(node, items))

    def items(self, node: E.Quantified) -> Iterable[Scope]:
        var, env = _list_of(node, self.names), self.env
        for item in as_items(env.bindings.get(var)):
            yield RuleScope(self.names, Env({**env.bindings, var: item}, env.now, env.current))


def _aggregate_of(node: E.Aggregate, items: Any) -> Any:
    return aggregate(node, _values(node, as_items(items)))


def _within(low: Any, high: Any, now: float) -> bool:
    return low is not None and high is not None and low <= now < high


def _quantified(node: E.Quantified, held: Iterable[Any]) -> bool:
    return quantified(node, [value is True for value in held])


class _RuleWriter(Writer):
    """Reads a rule's leaves from `env` (bindings `B`); `ctx` maps the list a quantifier
    ranges over to the name of the item at hand."""

    def __init__(self, names: Names) -> None:
        super().__init__(known_functions())
        self.names = names

    def _bound(self, var: str, ctx: Mapping[str, str]) -> str:
        return ctx.get(var, f"B.get({var!r})")

    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Any) -> str:
        match node:
            case E.Attr(var=var, attr=attr):
                return f"_item_attr({self._bound(var, ctx)}, {attr!r})"
            case E.Aggregate(var=E.CURRENT):
                return f"_aggregate_of({self.constant(node)}, env.current)"
            case E.Aggregate(var=var):
                return f"_aggregate_of({self.constant(node)}, {self._bound(var, ctx)})"
        raise TypeError(f"not a LEAD term: {node!r}")  # pragma: no cover - checked

    def name(self, node: E.Name, ctx: Any) -> str:
        names, name = self.names, node.name
        if name in names.time_events:
            event = names.time_events[name]
            low, high = self.expr(event.start, ctx), self.expr(event.end, ctx)
            return f"_within({low}, {high}, env.now)"
        if name in names.attributes:
            return f"_item_attr({self._bound(names.attributes[name], ctx)}, {name!r})"
        return self._bound(name, ctx)

    def duration(self, node: E.Duration, ctx: Any) -> str:
        return repr(duration(node, self.names))

    def quantified(self, node: E.Quantified, ctx: Any) -> str:
        var = _list_of(node, self.names)
        item = f"q{next(self.numbers)}"
        inner = self.expr(node.body, {**ctx, var: item})
        items = f"_as_items({self._bound(var, ctx)})"
        return f"_quantified({self.constant(node)}, [({inner}) for {item} in {items}])"

    def compiled(self, fast: str, safe: str) -> Fn:
        """A function of an `Env` returning `fast`, or `safe` when `fast` raises (see
        `Writer.forms`)."""
        source = f"def run(env):\n    B = env.bindings\n    return {safe}\n"
        if fast != safe:
            source = (
                f"def run(env):\n    B = env.bindings\n    try:\n        return {fast}\n"
                f"    except (TypeError, ArithmeticError):\n        return {safe}\n"
            )
        helpers = {
            "_item_attr": item_attr,
            "_as_items": as_items,
            "_within": _within,
            "_aggregate_of": _aggregate_of,
            "_quantified": _quantified,
        }
        run: Fn = self.load(source, helpers)["run"]
        return run


def compile_value(expr: E.Expr, names: Names) -> Fn:
    """`expr` as a function of an `Env`: its value, as `evaluate` gives it in a
    `RuleScope`."""
    writer = _RuleWriter(names)
    value = writer.expr(expr, {})
    return writer.compiled(value, value)


def compile_condition(expr: E.Expr, names: Names) -> Fn:
    """`expr` as a function of an `Env`: True exactly when the condition holds (is true,
    not false or null)."""
    writer = _RuleWriter(names)
    return writer.compiled(*writer.forms(expr, {}))


# ---- the rule as a query --------------------------------------------------------------

#: Type names an EventType declares its attributes with, and the kinds of their values.
DECLARED: dict[str, Kind] = {
    "INT": "long",
    "INTEGER": "long",
    "LONG": "long",
    "FLOAT": "double",
    "DOUBLE": "double",
    "NUMBER": "double",
    "BOOLEAN": "bool",
    "BOOL": "bool",
    "STRING": "text",
    "TEXT": "text",
}
#: The fields an emitted event's row has of its own.
EVENT_FIELDS = ("type", "ts")


@dataclass(frozen=True)
class RuleAnalysis(Query):
    """A checked LEAD rule, as the plan contract reads it: its partition (PARTITION BY),
    the streams it reads, the attributes it reads, the events it emits."""

    language: ClassVar[str] = "lead"

    rule: L.Rule
    partition: Partition | None
    functions: Mapping[str, Callable[..., Any]] = field(repr=False, default_factory=dict)

    @property
    def tree(self) -> L.Rule:
        return self.rule

    def text(self) -> str:
        return rule_text(self.rule)

    @property
    def partition_is_meaning(self) -> bool:
        """PARTITION BY is part of a rule's meaning: it runs once per key."""
        return self.partition is not None

    @property
    def streams(self) -> frozenset[str]:
        """The event types the rule reads (FROM)."""
        return frozenset(s.type for s in self.rule.streams)

    @property
    def filters(self) -> tuple[EventFilter, ...]:
        """Only the events of the rule's streams matter to it; others only move time, which
        the next event of its streams (or the watermark) moves as well."""
        return (EventFilter(self.streams),)

    @property
    def reads(self) -> tuple[Read, ...]:
        """`alias.attr` in any expression, and the PARTITION BY attributes (`event_time` is
        the timestamp; ENRICHed attributes are made, not read)."""
        rule = self.rule
        streams = {s.alias: s.type for s in rule.streams}
        made = {name for e in rule.enrich for name, _ in e.assignments} | {"event_time"}
        found = [Read(a.attr, f"PARTITION BY {a.var}.{a.attr}", None) for a in rule.partition]
        for expression in _expressions(rule):
            for e in E.walk(expression):
                if isinstance(e, E.Attr) and e.var in streams and e.attr not in made:
                    found.append(Read(e.attr, f"{e.var}.{e.attr}", frozenset({streams[e.var]})))
        return tuple(found)

    @property
    def real_time(self) -> bool:
        """Does the rule write a duration (Within, Wait, `3 days`, a time frame)?"""
        rule = self.rule
        if rule.frame is not None and rule.frame.unit != "events":
            return True
        for node in patterns_in(rule.pattern):
            if isinstance(node, L.Within | L.Wait) or (
                isinstance(node, L.Negation) and node.within is not None
            ):
                return True
        return any(isinstance(e, E.Duration) for x in _expressions(rule) for e in E.walk(x))

    def output(self, timeouts: bool = False, retractions: bool = False) -> Output:
        """The events the rule emits: a row is the event's type and time, then every
        attribute a top-level action gives (its kind from what the argument reads, or as
        its EventType declares it; text where two actions disagree)."""
        rule = self.rule
        bare: dict[str, tuple[Kind, str | None]] = {
            t.name: ("bool", None) for t in rule.time_events
        }
        bare.update({a.attr: ("column", a.attr) for a in rule.partition})
        columns: dict[str, tuple[Kind, str | None]] = {}
        for name, argument, declared in _emitted_arguments(rule):
            found: tuple[Kind, str | None] = (
                (DECLARED[declared], None)
                if declared in DECLARED
                else value_kind(argument.value, bare)
            )
            columns[name] = found if columns.get(name, found) == found else ("text", None)
        for event_type in rule.event_types:  # the attributes defaults give
            if any(action.type == event_type.name for action in _emitted(rule.emit)):
                for f in event_type.fields:
                    columns.setdefault(f.name, (DECLARED.get(f.type, "text"), None))
        fields = [Field("type", "text", nullable=False), Field("ts", "time", nullable=False)]
        fields += [Field(name, kind, of) for name, (kind, of) in columns.items()]
        emits = frozenset(action.type for action in _emitted(rule.emit))
        return Output("events", tuple(fields), emits=emits)


def _emitted_arguments(rule: L.Rule) -> Iterator[tuple[str, L.Argument, str | None]]:
    """Each argument of the actions the rule emits: the attribute it fills (its AS name, its
    place in a DEFINEd type, or the attribute it reads), and the type it is declared with."""
    types = {t.name: t for t in rule.event_types}
    for action in _emitted(rule.emit):
        declared = types.get(action.type)
        fields = declared.fields if declared is not None else ()
        for i, argument in enumerate(action.args):
            name = argument.name or (fields[i].name if fields else argument_name(argument))
            assert name is not None, "the checker names every argument"
            kind = next((f.type for f in fields if f.name == name), None)
            yield name, argument, kind


def _emitted(emit: tuple[L.Action, ...] | L.CheckBlock) -> list[L.Action]:
    if not isinstance(emit, L.CheckBlock):
        return list(emit)
    return [a for c in emit.checks for a in _emitted(c.then)]


def _expressions(rule: L.Rule) -> list[E.Expr]:
    """Every expression of the rule: actions' arguments, conditions, time events' bounds,
    enrichments."""
    found: list[E.Expr] = [arg.value for action in actions_of(rule) for arg in action.args]
    found += [e for node in patterns_in(rule.pattern) for e, _ in conditions_of(node)]
    for event in rule.time_events:
        found += [event.start, event.end]
    for enrichment in rule.enrich:
        found += [value for _, value in enrichment.assignments]
    return found


def _partition(rule: L.Rule) -> Partition | None:
    """PARTITION BY's attributes, which every stream's events carry under the same names."""
    attrs = tuple(a.attr for a in rule.partition)
    if not attrs:
        return None
    classes = tuple(tuple((s.alias, attr) for s in rule.streams) for attr in attrs)
    return Partition(classes, {s.type: attrs for s in rule.streams}, attrs)


def analyze_rule(
    rule: L.Rule,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    validated: bool = False,
) -> RuleAnalysis:
    """Check a rule (`check_rule`, unless it is `validated` already) and derive its
    `RuleAnalysis`."""
    if not validated:
        check_rule(rule)
    return RuleAnalysis(rule, _partition(rule), known_functions(functions))
