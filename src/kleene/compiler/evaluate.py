"""Evaluate a predicate expression over bound events: the plain interpreter `reference` uses.

Values follow SQL: a missing attribute, a missing element (`b[3]` of a two-event binding), an
empty `avg`/`min`/`max`, a division by zero or a call with a null argument is null (None);
arithmetic and comparisons with null are null; `and`/`or`/`not` use three-valued logic; a
condition holds only when it is true.

>>> from kleene import Event, parse
>>> from kleene.compiler.evaluate import Env, evaluate
>>> where = parse("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > avg(b[..i-1].x) + a.x").where
>>> b = (Event("B", 2, {"x": 1}), Event("B", 3, {"x": 5}))
>>> evaluate(where, Env({"a": (Event("A", 1, {"x": 2}),), "b": b}, i=2))
True
>>> evaluate(where, Env({"a": (Event("A", 1, {}),), "b": b}, i=2)) is None
True
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kleene.compiler.functions import BUILTINS, known_functions
from kleene.errors import EventError, KleeneError
from kleene.events import Event
from kleene.language import ast as A
from kleene.language.printer import expr_text

__all__ = [
    "ARITHMETIC",
    "COMPARE",
    "Env",
    "aggregate",
    "apply",
    "attribute",
    "call",
    "evaluate",
    "holds",
    "multiply",
    "returned_values",
    "shared_values",
    "truth",
]


def multiply(a: Any, b: Any) -> Any:
    """`a * b` of numbers. Text or a list times a number is a type clash, not Python's
    repetition, which a large number makes explode (`a.name * 9007199254740993`).

    >>> multiply(2, 1.5), multiply("ab", 2)
    Traceback (most recent call last):
    TypeError: * takes numbers, not str
    """
    for value in (a, b):
        if isinstance(value, str | bytes | list | tuple):
            raise TypeError(f"* takes numbers, not {type(value).__name__}")
    return a * b


ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": multiply,
    "/": operator.truediv,
    "%": operator.mod,
}
COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_FIELDS = {"type": "type", "ts": "ts", "id": "id"}


@dataclass(frozen=True)
class Env:
    """What a predicate sees: each variable's events, the index i, the callable functions."""

    bindings: Mapping[str, Sequence[Event]]
    i: int | None = None
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=known_functions)


def attribute(event: Event, name: str) -> Any:
    """An event's attribute; `ts`, `type` and `id` fall back to the event's own fields."""
    attrs = event.attrs
    if name in attrs:
        return attrs[name]
    if name in _FIELDS:
        return getattr(event, name)
    return None


def holds(expr: A.Expr, env: Env) -> bool:
    """Is the condition true (not false, not null)?"""
    return evaluate(expr, env) is True


def evaluate(expr: A.Expr, env: Env) -> Any:
    """The value of `expr` in `env`; None is null."""
    match expr:
        case A.Literal(value=value):
            return value
        case A.Attr(var=var, attr=attr, index=index):
            events = env.bindings[var]
            position = 0 if index is None else _position(index, len(events), env.i)
            if position is None or not 0 <= position < len(events):
                return None
            return attribute(events[position], attr)
        case A.Len(var=var):
            return len(env.bindings[var])
        case A.Aggregate():
            return _aggregate(expr, env)
        case A.Call(name=name, args=args):
            function = env.functions.get(name.lower())
            if function is None:
                raise KleeneError(f"unknown function {name}")
            return call(expr, function, [evaluate(arg, env) for arg in args])
        case A.Unary(op="not", operand=operand):
            value = truth(evaluate(operand, env), operand)
            return None if value is None else not value
        case A.Unary(op="-", operand=operand):
            value = evaluate(operand, env)
            return None if value is None else apply(expr, operator.neg, value)
        case A.Binary(op=op, left=left, right=right):
            lhs, rhs = evaluate(left, env), evaluate(right, env)
            if lhs is None or rhs is None:
                return None
            if op in "/%" and rhs == 0:
                return None
            return apply(expr, ARITHMETIC[op], lhs, rhs)
        case A.Compare(op=op, left=left, right=right):
            lhs, rhs = evaluate(left, env), evaluate(right, env)
            if lhs is None or rhs is None:
                return None
            return bool(apply(expr, COMPARE[op], lhs, rhs))
        case A.BoolOp(op="and", items=items):
            result: bool | None = True
            for item in items:
                value = truth(evaluate(item, env), item)
                if value is False:
                    return False
                if value is None:
                    result = None
            return result
        case A.BoolOp(op="or", items=items):
            result = False
            for item in items:
                value = truth(evaluate(item, env), item)
                if value is True:
                    return True
                if value is None:
                    result = None
            return result
        case A.Equivalence(attrs=attrs):
            events = [e for bound in env.bindings.values() for e in bound]
            return shared_values(events, attrs) is not None
    raise TypeError(f"not an expression node: {expr!r}")


def _position(index: A.Index, length: int, i: int | None) -> int | None:
    """The 0-based list position an index names, or None when it names nothing."""
    if index.base == "abs":
        return index.offset - 1
    if index.base == "last":
        return length - 1 + index.offset
    if i is None:
        raise KleeneError("b[i] evaluated outside an iteration over b")
    return i - 1 + index.offset


def _aggregate(expr: A.Aggregate, env: Env) -> Any:
    events = env.bindings[expr.var]
    if expr.upto is not None:
        if env.i is None:
            raise KleeneError("b[..i-k] evaluated outside an iteration over b")
        events = events[: max(0, env.i - expr.upto)]
    if expr.attr is None:
        return len(events)
    return aggregate(expr, [attribute(e, expr.attr) for e in events])


def aggregate(expr: A.Aggregate, values: Sequence[Any]) -> Any:
    """An aggregate of attribute values, nulls skipped: an empty sum is 0, empty values the
    empty set, an empty avg, min or max is null."""
    values = [v for v in values if v is not None]
    if expr.func == "count":
        return len(values)
    if expr.func == "values":
        return apply(expr, frozenset, values)
    if expr.func == "sum":
        return apply(expr, sum, values) if values else 0
    if not values:
        return None
    if expr.func == "avg":
        return apply(expr, lambda vs: sum(vs) / len(vs), values)
    return apply(expr, min if expr.func == "min" else max, values)


def call(expr: A.Call, function: Callable[..., Any], args: list[Any]) -> Any:
    """A function call with SQL nulls: null in, null out. A built-in's arithmetic failure
    (`sqrt(-1)`, `log(0)`) is null; any other failure, a registered function's included, is an
    `EventError` naming the call (a registered function returns None for "no value")."""
    if any(arg is None for arg in args):
        return None
    try:
        return function(*args)
    except (ArithmeticError, ValueError) as error:
        if BUILTINS.get(expr.name.lower()) is function:
            return None
        raise _failed(expr, args, error) from error
    except Exception as error:
        raise _failed(expr, args, error) from error


def _failed(expr: A.Call, args: list[Any], error: Exception) -> EventError:
    return EventError(
        f"{expr_text(expr)} failed on arguments {args!r}: {type(error).__name__}: {error}"
    )


def apply(expr: A.Expr, function: Callable[..., Any], *values: Any) -> Any:
    """`function(*values)` for the node `expr`: a type clash is an `EventError` naming the
    expression, an arithmetic failure is null."""
    try:
        return function(*values)
    except TypeError:
        shown = ", ".join(f"{v!r} ({type(v).__name__})" for v in values)
        raise EventError(f"cannot compute {expr_text(expr)} with {shown}") from None
    except ArithmeticError:
        return None


def truth(value: Any, expr: A.Expr) -> bool | None:
    """A value used as a condition: true, false or null; anything else is an `EventError`."""
    if value is None or isinstance(value, bool):
        return value
    raise EventError(f"{expr_text(expr)} is {value!r}, but a condition must be true or false")


def shared_values(events: Sequence[Event], attrs: Sequence[str]) -> tuple[Any, ...] | None:
    """The value of each attribute that all `events` share (an equivalence test), or None
    when some event lacks one or two differ. With no events, every value is None."""
    values: list[Any] = []
    for name in attrs:
        seen = {_hashable(attribute(e, name)) for e in events}
        if len(seen) > 1 or None in seen:
            return None
        values.append(seen.pop() if seen else None)
    return tuple(values)


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def returned_values(
    returns: Sequence[A.Returned],
    bindings: Mapping[str, Sequence[Event]],
    functions: Mapping[str, Callable[..., Any]],
) -> dict[str, Any]:
    """A match's RETURN values by name; a variable the match did not bind (another OR
    branch's) makes its values null."""
    env = Env(bindings, None, functions)
    values: dict[str, Any] = {}
    for returned in returns:
        try:
            values[returned.name] = evaluate(returned.expr, env)
        except KeyError:  # an unbound variable
            values[returned.name] = None
    return values
