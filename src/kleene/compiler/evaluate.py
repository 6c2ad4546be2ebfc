"""The interpreter of the one expression tree (`kleene.language.expr`), for every language.

Operators mean the same wherever they stand; what a leaf reads (an attribute, a length, an
aggregate, a bare name) is the business of the `Scope` the expression is evaluated in: a
SASE+ pattern's bound events (`Env`, below), a LEAD rule's token (`kleene.compiler.rules`).
The code generator (`kleene.compiler.codegen`) compiles the same meaning to Python.

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
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kleene.compiler.functions import BUILTINS, TAKES_NULLS, known_functions
from kleene.errors import EventError, KleeneError
from kleene.events import ATOMS, Event, attribute_slot
from kleene.language import expr as E
from kleene.language.text import expr_text

__all__ = [
    "ARITHMETIC",
    "COMPARE",
    "Env",
    "Scope",
    "aggregate",
    "apply",
    "attribute",
    "call",
    "equivalence_values",
    "evaluate",
    "holds",
    "multiply",
    "quantified",
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
    "||": lambda a, b: f"{a}{b}",
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


class Scope(ABC):
    """What the leaves of an expression read where it stands, and the functions it may
    call. A leaf a language does not have is an error."""

    functions: Mapping[str, Callable[..., Any]]

    @abstractmethod
    def attr(self, node: E.Attr) -> Any:
        """The value of `v.attr`."""

    def length(self, node: E.Len) -> Any:
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def aggregate(self, node: E.Aggregate) -> Any:
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def equivalent(self, node: E.Equivalence) -> Any:
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def name(self, node: E.Name) -> Any:
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def duration(self, node: E.Duration) -> Any:
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def items(self, node: E.Quantified) -> Iterable[Scope]:
        """A scope for each item of the list a quantifier ranges over."""
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def navigate(self, node: E.Navigation) -> Any:
        """A row pattern navigation's value (SQL's PREV, NEXT, FIRST, LAST)."""
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def row_aggregate(self, node: E.RowAggregate) -> Any:
        """An aggregate over a row pattern match's rows."""
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def classifier(self, node: E.Classifier) -> Any:
        """The variable a row pattern match's row is mapped to."""
        raise KleeneError(f"{expr_text(node)} has no meaning here")

    def match_number(self, node: E.MatchNumber) -> Any:
        """The number of a row pattern match."""
        raise KleeneError(f"{expr_text(node)} has no meaning here")


@dataclass(frozen=True)
class Env(Scope):
    """A SASE+ pattern's scope: each variable's bound events, the index i of the Kleene
    variable a condition iterates over, the callable functions."""

    bindings: Mapping[str, Sequence[Event]]
    i: int | None = None
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=known_functions)

    def attr(self, node: E.Attr) -> Any:
        events = self.bindings[node.var]
        index = node.index
        position = 0 if index is None else _position(index, len(events), self.i)
        if position is None or not 0 <= position < len(events):
            return None
        return attribute(events[position], node.attr)

    def length(self, node: E.Len) -> Any:
        return len(self.bindings[node.var])

    def aggregate(self, node: E.Aggregate) -> Any:
        events = self.bindings[node.var]
        if node.upto is not None:
            if self.i is None:
                raise KleeneError("b[..i-k] evaluated outside an iteration over b")
            events = events[: max(0, self.i - node.upto)]
        if node.attr is None:
            return len(events)
        return aggregate(node, [attribute(e, node.attr) for e in events])

    def equivalent(self, node: E.Equivalence) -> Any:
        events = [e for bound in self.bindings.values() for e in bound]
        return shared_values(events, node.attrs) is not None


_ABSENT = object()


def attribute(event: Event, name: str) -> Any:
    """An event's attribute; `ts`, `type` and `id` fall back to the event's own fields."""
    value = event.get(name, _ABSENT)
    if value is not _ABSENT:
        return value
    if name in _FIELDS:
        return getattr(event, name)
    return None


def holds(expr: E.Expr, env: Scope) -> bool:
    """Is the condition true (not false, not null)?"""
    return evaluate(expr, env) is True


def evaluate(expr: E.Expr, env: Scope) -> Any:
    """The value of `expr` in `env`; None is null."""
    match expr:
        case E.Constant(value=value):
            return value
        case E.Attr():
            return env.attr(expr)
        case E.Compare(op=op, left=left, right=right):
            lhs, rhs = evaluate(left, env), evaluate(right, env)
            if lhs is None or rhs is None:
                return None
            return bool(apply(expr, COMPARE[op], lhs, rhs))
        case E.Binary(op=op, left=left, right=right):
            lhs, rhs = evaluate(left, env), evaluate(right, env)
            if lhs is None or rhs is None:
                return None
            if op in "/%" and rhs == 0:
                return None
            return apply(expr, ARITHMETIC[op], lhs, rhs)
        case E.BoolOp(op="and", items=items):
            result: bool | None = True
            for item in items:
                value = truth(evaluate(item, env), item)
                if value is False:
                    return False
                if value is None:
                    result = None
            return result
        case E.BoolOp(op="or", items=items):
            result = False
            for item in items:
                value = truth(evaluate(item, env), item)
                if value is True:
                    return True
                if value is None:
                    result = None
            return result
        case E.Unary(op="not", operand=operand):
            value = truth(evaluate(operand, env), operand)
            return None if value is None else not value
        case E.Unary(op="-", operand=operand):
            value = evaluate(operand, env)
            return None if value is None else apply(expr, operator.neg, value)
        case E.Len():
            return env.length(expr)
        case E.Aggregate():
            return env.aggregate(expr)
        case E.Call(name=name, args=args):
            function = env.functions.get(name.lower())
            if function is None:
                raise KleeneError(f"unknown function {name}")
            return call(expr, function, [evaluate(arg, env) for arg in args])
        case E.Equivalence():
            return env.equivalent(expr)
        case E.Name():
            return env.name(expr)
        case E.Duration():
            return env.duration(expr)
        case E.Quantified():
            return quantified(expr, [holds(expr.body, item) for item in env.items(expr)])
        case E.IsNull(operand=operand):
            return evaluate(operand, env) is None
        case E.Case(branches=branches, default=default):
            for condition, then in branches:
                if truth(evaluate(condition, env), condition) is True:
                    return evaluate(then, env)
            return None if default is None else evaluate(default, env)
        case E.Navigation():
            return env.navigate(expr)
        case E.RowAggregate():
            return env.row_aggregate(expr)
        case E.Classifier():
            return env.classifier(expr)
        case E.MatchNumber():
            return env.match_number(expr)
    raise TypeError(f"not an expression node: {expr!r}")


def quantified(node: E.Quantified, held: Sequence[bool]) -> bool:
    """Does a quantifier hold, given whether its body held for each item? ALL: for every
    item (so for an empty list), ANY: for one, AT LEAST / AT MOST / EXACTLY n: for so many.

    >>> quantified(E.Quantified("at least", E.Constant(True), 2), [True, False, True])
    True
    """
    count = sum(held)
    quantifier, n = node.quantifier, node.n or 0
    if quantifier == "all":
        return count == len(held)
    if quantifier == "any":
        return count > 0
    if quantifier == "at least":
        return count >= n
    if quantifier == "at most":
        return count <= n
    return count == n


def _position(index: E.Index, length: int, i: int | None) -> int | None:
    """The 0-based list position an index names, or None when it names nothing."""
    if index.base == "abs":
        return index.offset - 1
    if index.base == "last":
        return length - 1 + index.offset
    if i is None:
        raise KleeneError("b[i] evaluated outside an iteration over b")
    return i - 1 + index.offset


def aggregate(expr: E.Aggregate | E.RowAggregate, values: Sequence[Any]) -> Any:
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


def call(expr: E.Call, function: Callable[..., Any], args: list[Any]) -> Any:
    """A function call with SQL nulls: null in, null out. A built-in's arithmetic failure
    (`sqrt(-1)`, `log(0)`) is null; any other failure, a registered function's included, is an
    `EventError` naming the call (a registered function returns None for "no value").
    The few built-ins that take nulls (`TAKES_NULLS`: `ARRAY[...]`, `concat_ws`) are
    called with them."""
    if any(arg is None for arg in args) and function not in TAKES_NULLS:
        return None
    try:
        return function(*args)
    except (ArithmeticError, ValueError) as error:
        if BUILTINS.get(expr.name.lower()) is function:
            return None
        raise _failed(expr, args, error) from error
    except Exception as error:
        raise _failed(expr, args, error) from error


def _failed(expr: E.Call, args: list[Any], error: Exception) -> EventError:
    return EventError(
        f"{expr_text(expr)} failed on arguments {args!r}: {type(error).__name__}: {error}"
    )


def apply(expr: E.Expr, function: Callable[..., Any], *values: Any) -> Any:
    """`function(*values)` for the node `expr`: a type clash is an `EventError` naming the
    expression, an arithmetic failure is null."""
    try:
        return function(*values)
    except TypeError:
        shown = ", ".join(f"{v!r} ({type(v).__name__})" for v in values)
        raise EventError(f"cannot compute {expr_text(expr)} with {shown}") from None
    except ArithmeticError:
        return None


def truth(value: Any, expr: E.Expr) -> bool | None:
    """A value used as a condition: true, false or null; anything else is an `EventError`."""
    if value is None or isinstance(value, bool):
        return value
    raise EventError(f"{expr_text(expr)} is {value!r}, but a condition must be true or false")


def shared_values(events: Sequence[Event], attrs: Sequence[str]) -> tuple[Any, ...] | None:
    """The value of each attribute that all `events` share (an equivalence test), or None
    when some event lacks one or two differ. With no events, every value is None."""
    values: list[Any] = []
    for name in attrs:
        try:
            seen = {_hashable(attribute(e, name)) for e in events}
        except TypeError:  # a value no equivalence test compares: named
            for event in events:
                _compared(attribute(event, name), name)
            raise
        if len(seen) > 1 or None in seen:
            return None
        values.append(seen.pop() if seen else None)
    return tuple(values)


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _compared(value: Any, name: str) -> None:
    """An `EventError` naming attribute `name` when an equivalence test cannot compare its
    value (a mapping, say: its events would be grouped by their values).

    >>> shared_values([Event("A", 1, {"k": {"x": 1}})], ["k"])
    Traceback (most recent call last):
    ...
    kleene.errors.EventError: field 'k': the attribute 'k' holds dict {'x': 1}; an \
equivalence test ([k]) compares single values (text, a number, a time) or lists of them
    """
    try:
        hash(_hashable(value))
    except TypeError:
        raise EventError(
            f"the attribute {name!r} holds {type(value).__name__} {value!r}; an equivalence "
            f"test ([{name}]) compares single values (text, a number, a time) or lists of them",
            field=name,
        ) from None


def equivalence_values(attrs: Sequence[str]) -> Callable[[Event], tuple[Any, ...] | None]:
    """`shared_values` of one event: its values of the equivalence attributes `attrs`,
    read from their slots (None when it lacks one). A plan reads them for every event it
    steps, so they are read without a call per attribute.

    >>> values = equivalence_values(["k", "tags"])
    >>> values(Event("A", 1, {"k": 3, "tags": [1, 2]})), values(Event("A", 1, {"k": 3}))
    ((3, (1, 2)), None)
    >>> equivalence_values([])(Event("A", 1, {})), equivalence_values(["type"])(Event("A", 1))
    ((), ('A',))
    """
    if not attrs:
        return _no_values
    names = tuple(attrs)
    if any(name in _FIELDS for name in names):  # read past the attributes
        return lambda event: shared_values([event], names)
    slots = [attribute_slot(name) for name in attrs]
    if len(slots) == 1:
        read = operator.attrgetter(slots[0])

        def one(event: Event) -> tuple[Any, ...] | None:
            value = read(event)
            if value is None:
                return None
            return (value,) if value.__class__ in ATOMS else shared_values([event], names)

        return one
    read_all = operator.attrgetter(*slots)

    def several(event: Event) -> tuple[Any, ...] | None:
        values: tuple[Any, ...] = read_all(event)
        for value in values:
            if value.__class__ not in ATOMS:
                return shared_values([event], names)
        return values

    return several


def _no_values(event: Event) -> tuple[Any, ...]:
    return ()


def returned_values(
    returns: Sequence[Any],
    bindings: Mapping[str, Sequence[Event]],
    functions: Mapping[str, Callable[..., Any]],
) -> dict[str, Any]:
    """A match's RETURN values by name (each `returned` has its `expr` and `name`); a
    variable the match did not bind (another OR branch's) makes its values null."""
    env = Env(bindings, None, functions)
    values: dict[str, Any] = {}
    for returned in returns:
        try:
            values[returned.name] = evaluate(returned.expr, env)
        except KeyError:  # an unbound variable
            values[returned.name] = None
    return values
