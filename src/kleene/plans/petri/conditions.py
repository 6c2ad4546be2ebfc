"""LEAD expressions → Python functions of a token's colour: `condition(expr)(env)`.

An `Env` is what an expression may see: the names a token has bound (an alias → its event, a
list → its items), the time now (for time events), the list a collect clause governs
(`count()`), and the rule's time events. Missing values are None and make a comparison false,
as SQL's unknown does.

>>> from kleene.events import Event
>>> from kleene.language.lead_reader import read_rule
>>> rule = read_rule("FROM A AS a MATCH a.filter(a.x + 1 > 2 and a.event_time < 5) "
...                  "EMIT Event X()")
>>> check = compile_expr(rule.pattern.condition, Scope())
>>> early, late = Event("A", 3, {"x": 2}), Event("A", 6, {"x": 2})
>>> check(Env({"a": early}, now=3)), check(Env({"a": late}, now=6))
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kleene.compiler.evaluate import ARITHMETIC, COMPARE
from kleene.errors import EventError
from kleene.events import Event
from kleene.language import lead_ast as L

__all__ = ["Env", "Fn", "Scope", "compile_expr", "duration", "item_attr", "time_events_in"]


@dataclass(slots=True)
class Env:
    """What an expression sees when it runs."""

    bindings: Mapping[str, Any]
    now: float = 0.0
    #: The items of the list a collect clause governs (`count()`), if any.
    current: Sequence[Any] | None = None


@dataclass(frozen=True)
class Scope:
    """What the compiler knows: the time events by name, the list names, the units."""

    time_events: Mapping[str, L.TimeEvent] = field(default_factory=dict)
    lists: frozenset[str] = frozenset()
    #: Seconds per timestamp unit (durations become timestamp units).
    unit_seconds: float = 1.0
    #: Bare names that are attributes: name → the alias that carries it (PARTITION BY).
    attributes: Mapping[str, str] = field(default_factory=dict)
    #: The rule's text (errors point into it).
    text: str = ""


Fn = Callable[[Env], Any]


def item_attr(item: Any, name: str) -> Any:
    """An attribute of a bound value: an event's (`event_time` is its timestamp), else None."""
    if isinstance(item, Event):
        if name == "event_time":
            return item.t
        return item.attrs.get(name)
    if isinstance(item, Mapping):
        return item.get(name)
    return None


def _as_list(value: Any) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, tuple | list):
        return value
    return (value,)


def duration(d: L.Duration, scope: Scope) -> float:
    """A duration in timestamp units (an int when whole, so int timestamps stay ints)."""
    length = d.seconds / scope.unit_seconds
    return int(length) if length.is_integer() else length


def time_events_in(expr: L.Expr | None, scope: Scope) -> set[str]:
    """The time events an expression reads (its value changes as time passes)."""
    if expr is None:
        return set()
    found: set[str] = set()

    def visit(e: L.Expr) -> None:
        if isinstance(e, L.Name) and e.name in scope.time_events:
            found.add(e.name)
        for child in L.children(e):
            visit(child)

    visit(expr)
    return found


def compile_expr(e: L.Expr, scope: Scope) -> Fn:
    """A function computing `e` in an `Env`."""
    if isinstance(e, L.Value):
        value = e.value
        return lambda env: value
    if isinstance(e, L.Duration):
        length = duration(e, scope)
        return lambda env: length
    if isinstance(e, L.Name):
        return _name(e, scope)
    if isinstance(e, L.Attr):
        var, attr = e.var, e.name
        return lambda env: item_attr(env.bindings.get(var), attr)
    if isinstance(e, L.Method):
        return _aggregate(e.name, L.Name(e.var), scope)
    if isinstance(e, L.Call):
        if e.name == "count" and not e.args:
            return lambda env: len(env.current) if env.current is not None else 0
        return _aggregate(e.name, e.args[0], scope)
    if isinstance(e, L.Unary):
        inner = compile_expr(e.operand, scope)
        if e.op == "not":
            return lambda env: not _true(inner(env))
        return lambda env: _negate(inner(env))
    if isinstance(e, L.Binary):
        left, right, apply = (
            compile_expr(e.left, scope),
            compile_expr(e.right, scope),
            ARITHMETIC[e.op],
        )
        return lambda env: _arithmetic(apply, left(env), right(env), e.op)
    if isinstance(e, L.Compare):
        left, right, test = (
            compile_expr(e.left, scope),
            compile_expr(e.right, scope),
            COMPARE[e.op],
        )
        return lambda env: _compare(test, left(env), right(env))
    if isinstance(e, L.BoolOp):
        items = [compile_expr(i, scope) for i in e.items]
        if e.op == "and":
            return lambda env: all(_true(f(env)) for f in items)
        return lambda env: any(_true(f(env)) for f in items)
    return _quantifier(e, scope)


def _name(e: L.Name, scope: Scope) -> Fn:
    name = e.name
    if name in scope.time_events:
        event = scope.time_events[name]
        start, end = compile_expr(event.start, scope), compile_expr(event.end, scope)

        def within(env: Env) -> bool:
            low, high = start(env), end(env)
            return low is not None and high is not None and low <= env.now < high

        return within
    if name in scope.attributes:
        alias = scope.attributes[name]
        return lambda env: item_attr(env.bindings.get(alias), name)
    return lambda env: env.bindings.get(name)


def _aggregate(name: str, arg: L.Expr, scope: Scope) -> Fn:
    """`count(l)`, `sum(l.x)`, `avg(l.x)`, `min(l.x)`, `max(l.x)` over a list's items."""
    if isinstance(arg, L.Name):
        var, attr = arg.name, None
    else:
        assert isinstance(arg, L.Attr), "the checker admits only l or l.attr"
        var, attr = arg.var, arg.name

    def values(env: Env) -> list[Any]:
        items = _as_list(env.bindings.get(var))
        if attr is None:
            return list(items)
        return [v for v in (item_attr(i, attr) for i in items) if v is not None]

    if name == "count":
        return lambda env: len(values(env))
    if name == "sum":
        return lambda env: sum(values(env))
    if name == "avg":
        return lambda env: (sum(vs) / len(vs)) if (vs := values(env)) else None
    pick = min if name == "min" else max
    return lambda env: pick(vs) if (vs := values(env)) else None


def _quantifier(e: L.Quantified | L.Counted, scope: Scope) -> Fn:
    (var,) = L.lists_in(e, scope.lists)  # the checker guarantees exactly one
    body = compile_expr(e.body, scope)

    def holds(env: Env) -> int:
        count = 0
        for item in _as_list(env.bindings.get(var)):
            inner = Env({**env.bindings, var: item}, env.now, env.current)
            count += _true(body(inner))
        return count

    if isinstance(e, L.Quantified):
        if e.quantifier == "all":
            return lambda env: holds(env) == len(_as_list(env.bindings.get(var)))
        return lambda env: holds(env) > 0
    n = e.n
    if e.quantifier == "at least":
        return lambda env: holds(env) >= n
    if e.quantifier == "at most":
        return lambda env: holds(env) <= n
    return lambda env: holds(env) == n


def _true(value: Any) -> bool:
    return value is True or (value is not None and value is not False and bool(value))


def _negate(value: Any) -> Any:
    return None if value is None else -value


def _arithmetic(apply: Callable[[Any, Any], Any], left: Any, right: Any, op: str) -> Any:
    if left is None or right is None:
        return None
    try:
        return apply(left, right)
    except ZeroDivisionError:
        return None
    except TypeError:
        raise EventError(
            f"cannot compute {left!r} {op} {right!r} ({type(left).__name__} and "
            f"{type(right).__name__})"
        ) from None


def _compare(test: Callable[[Any, Any], bool], left: Any, right: Any) -> bool:
    if left is None or right is None:
        return False
    try:
        return test(left, right)
    except TypeError:
        raise EventError(
            f"cannot compare {left!r} with {right!r} ({type(left).__name__} and "
            f"{type(right).__name__})"
        ) from None
