"""The one code generator: expressions compiled to Python functions with the same values as
the interpreter (`kleene.compiler.evaluate`: SQL nulls, three-valued logic, type clashes as
`EventError`), without walking the tree.

`Writer` turns an expression into Python source; a subclass says how a leaf is read
(`term`): `compile_condition` below reads the events bound to each SASE+ variable, as the
interpreter does; the `nfa` plan reads its runs' state vector (`plans/nfa/vector.py`); a
LEAD rule reads a token's bindings (`kleene.compiler.rules`).

>>> from kleene import Event, parse
>>> from kleene.compiler.analysis import analyze
>>> analysis = analyze(parse("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > a.x + 1"))
>>> check = compile_condition(analysis.conditions[0].expr, analysis.functions)
>>> a, b = (Event("A", 1, {"x": 2}),), (Event("B", 2, {"x": 5}), Event("B", 3, {"x": 3}))
>>> check({"a": a, "b": b}, 1), check({"a": a, "b": b}, 2)
(True, False)
>>> check({"a": (Event("A", 1, {}),), "b": b}, 1)  # null is not true
False
"""

from __future__ import annotations

import ast
import itertools
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from kleene.compiler.evaluate import (
    ARITHMETIC,
    COMPARE,
    Env,
    apply,
    attribute,
    call,
    evaluate,
    multiply,
    shared_values,
    truth,
)
from kleene.events import Event, attribute_slot
from kleene.language import expr as E

__all__ = ["HELPERS", "Check", "Writer", "compile_condition"]

#: A compiled condition: is it true for these bound events and this value of i?
Check = Callable[[Mapping[str, Sequence[Event]], "int | None"], bool]

_FIELDS = ("ts", "type", "id")


def _compare(function: Callable[[Any, Any], Any], a: Any, b: Any, node: E.Expr) -> Any:
    if a is None or b is None:
        return None
    return bool(apply(node, function, a, b))


def _arithmetic(function: Callable[[Any, Any], Any], a: Any, b: Any, node: E.Binary) -> Any:
    if a is None or b is None:
        return None
    if node.op in "/%" and b == 0:
        return None
    return apply(node, function, a, b)


def _negate(value: Any, node: E.Expr) -> Any:
    return None if value is None else apply(node, operator.neg, value)


def _null() -> bool:
    """Where a fast form meets a null it cannot decide: the safe form takes over."""
    raise TypeError("null")


def _not(value: Any, node: E.Expr) -> Any:
    value = truth(value, node)
    return None if value is None else not value


#: What generated code may call, besides its own constants.
HELPERS: dict[str, Any] = {
    "_attr": attribute,
    "_compare": _compare,
    "_arithmetic": _arithmetic,
    "_multiply": multiply,
    "_negate": _negate,
    "_not": _not,
    "_null": _null,
    "_truth": truth,
    "_call": call,
}

_SYMBOLS = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class Writer(ABC):
    """Writes expressions as Python source; `term` (a subclass's) reads variables' values.

    Constants (functions, AST nodes for error messages, literals) are named `k0`, `k1`, ...
    and handed to `load` with the helpers."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        self.callables = functions
        self.constants: dict[str, Any] = {}
        self.numbers = itertools.count()

    def constant(self, value: Any) -> str:
        name = f"k{next(self.numbers)}"
        self.constants[name] = value
        return name

    @abstractmethod
    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Any) -> str:
        """Code reading a variable's attribute, length or aggregate in context `ctx`."""

    def name(self, node: E.Name, ctx: Any) -> str:
        """Code reading a bare name (a language that has them says how)."""
        raise TypeError(f"cannot compile {node!r}")  # pragma: no cover - validation

    def duration(self, node: E.Duration, ctx: Any) -> str:
        """Code for a duration in timestamp units."""
        raise TypeError(f"cannot compile {node!r}")  # pragma: no cover - validation

    def quantified(self, node: E.Quantified, ctx: Any) -> str:
        """Code for a quantifier over a list's items."""
        raise TypeError(f"cannot compile {node!r}")  # pragma: no cover - validation

    def expr(self, node: E.Expr, ctx: Any) -> str:
        match node:
            case E.Constant(value=value):
                if value is None or isinstance(value, bool | int):
                    return repr(value)
                return self.constant(value)
            case E.Attr() | E.Len() | E.Aggregate():
                return self.term(node, ctx)
            case E.Name():
                return self.name(node, ctx)
            case E.Duration():
                return self.duration(node, ctx)
            case E.Quantified():
                return self.quantified(node, ctx)
            case E.Call(name=name, args=args):
                callee = self.constant(self.callables[name.lower()])
                inner = ", ".join(self.expr(arg, ctx) for arg in args)
                return f"_call({self.constant(node)}, {callee}, [{inner}])"
            case E.Unary(op="not", operand=operand):
                return f"_not({self.expr(operand, ctx)}, {self.constant(operand)})"
            case E.Unary(op="-", operand=operand):
                return f"_negate({self.expr(operand, ctx)}, {self.constant(node)})"
            case E.Binary(op=op, left=left, right=right):
                arithmetic = self.constant(ARITHMETIC[op])
                lhs, rhs = self.expr(left, ctx), self.expr(right, ctx)
                return f"_arithmetic({arithmetic}, {lhs}, {rhs}, {self.constant(node)})"
            case E.Compare(op=op, left=left, right=right):
                comparison = self.constant(COMPARE[op])
                lhs, rhs = self.expr(left, ctx), self.expr(right, ctx)
                return f"_compare({comparison}, {lhs}, {rhs}, {self.constant(node)})"
            case E.BoolOp(op=op, items=items):
                return self.boolean(op, items, ctx)
            case E.IsNull(operand=E.Constant(value=value)):
                return repr(value is None)
            case E.IsNull(operand=operand):
                return f"(({self.expr(operand, ctx)}) is None)"
            case E.Case(branches=branches, default=default):
                text = "None" if default is None else self.expr(default, ctx)
                for condition, then in reversed(branches):
                    test = f"_truth({self.expr(condition, ctx)}, {self.constant(condition)})"
                    text = f"({self.expr(then, ctx)} if {test} is True else {text})"
                return text
            case E.Equivalence():
                return self.equivalence(node, ctx)
            case E.Navigation() | E.Classifier() | E.MatchNumber() | E.RowAggregate():
                return self.row_term(node, ctx)
        raise TypeError(f"cannot compile {node!r}")  # pragma: no cover - validation

    def row_term(
        self, node: E.Navigation | E.Classifier | E.MatchNumber | E.RowAggregate, ctx: Any
    ) -> str:
        """Code for a leaf of SQL's row patterns (a language that has them says how)."""
        raise TypeError(f"cannot compile {node!r}")  # pragma: no cover - validation

    def equivalence(self, node: E.Equivalence, ctx: Any) -> str:
        """Code for an equivalence test `[x]` (only a writer over bound events has one)."""
        raise TypeError(f"cannot compile {node!r}")  # pragma: no cover - validation

    def boolean(self, op: Literal["and", "or"], items: tuple[E.Expr, ...], ctx: Any) -> str:
        """Three-valued `and`/`or`, evaluated left to right, stopping where the reference does.
        A long one (a watch-list of 200 `or`s) is written as a balanced tree of groups of at
        most `_GROUP`, which Kleene logic allows, so the code never nests past CPython's
        parser limit."""
        if len(items) > _GROUP:
            size = -(-len(items) // _GROUP)
            groups = [items[at : at + size] for at in range(0, len(items), size)]
            items = tuple(E.BoolOp(op, g) if len(g) > 1 else g[0] for g in groups)
        stop = "False" if op == "and" else "True"
        names = []
        text = ""
        for item in items:
            name = f"t{next(self.numbers)}"
            names.append(name)
            text += (
                f"({stop} if ({name} := _truth({self.expr(item, ctx)}, "
                f"{self.constant(item)})) is {stop} else "
            )
        nulls = " or ".join(f"{n} is None" for n in names)
        text += f"(None if {nulls} else {'True' if op == 'and' else 'False'})"
        return text + ")" * len(items)

    def forms(self, expr: E.Expr, ctx: Any) -> tuple[str, str]:
        """Code that is True when `expr` is true: a fast form and a safe one.

        A top-level comparison fails on null and on false alike, so the fast form compares
        inline; a type clash there raises TypeError, and the caller then runs the safe form,
        which raises the `EventError` the reference raises."""
        code = self.expr(expr, ctx)
        value = _literal(code)
        if value is not _NOT_LITERAL:  # `5 is True` is Python's SyntaxWarning: decide it here
            return repr(value is True), repr(value is True)
        safe = f"({code}) is True"
        if isinstance(expr, E.BoolOp) and expr.op == "and":
            compares = [item for item in expr.items if isinstance(item, E.Compare)]
            if len(compares) == len(expr.items):
                # true when every comparison is: each compared inline, left to right,
                # stopping at a false one as the safe form does; a null (where the safe
                # form goes on to the next) or a clash raises, and the safe form decides
                strict = [self.compared(item, ctx, "_null()") for item in compares]
                return f"({' and '.join(strict)})", safe
            return safe, safe
        if not isinstance(expr, E.Compare):
            return safe, safe
        return self.compared(expr, ctx, "False"), safe

    def compared(self, expr: E.Compare, ctx: Any, null: str) -> str:
        """A comparison inline (a fast form): `null` where an operand is null ("False", or
        a call that raises so that the safe form decides)."""
        lhs, rhs = self.fast(expr.left, ctx), self.fast(expr.right, ctx)
        a, b = f"a{next(self.numbers)}", f"b{next(self.numbers)}"
        symbol = _SYMBOLS[expr.op]
        right = expr.right
        constant = isinstance(right, E.Constant) and right.value is not None
        if null == "False":  # a null fails it
            if constant:
                return f"(({a} := {lhs}) is not None and {a} {symbol} {rhs})"
            return (
                f"(({a} := {lhs}) is not None and ({b} := {rhs}) is not None and {a} {symbol} {b})"
            )
        if constant:
            return f"({null} if ({a} := {lhs}) is None else {a} {symbol} {rhs})"
        return f"({null} if ({a} := {lhs}) is None or ({b} := {rhs}) is None else {a} {symbol} {b})"

    def fast(self, node: E.Expr, ctx: Any) -> str:
        """`expr` for a fast form: plain Python arithmetic where it computes the same value
        or raises (a null operand: TypeError), so the caller's safe form takes over."""
        if isinstance(node, E.Binary) and (
            node.op in "+-*"
            or (
                isinstance(node.right, E.Constant)
                and type(node.right.value) in (int, float)
                and node.right.value != 0
            )
        ):
            lhs, rhs = self.fast(node.left, ctx), self.fast(node.right, ctx)
            if node.op == "*":  # text times a number is a clash, not Python's repetition
                return f"_multiply({lhs}, {rhs})"
            return f"({lhs} {node.op} {rhs})"
        return self.expr(node, ctx)

    @staticmethod
    def function(name: str, args: str, fast: str, safe: str) -> str:
        """A function returning `fast`, or `safe` when `fast` raises."""
        if fast == safe:
            return f"def {name}({args}):\n    return {fast}\n"
        return (
            f"def {name}({args}):\n    try:\n        return {fast}\n"
            f"    except (TypeError, ArithmeticError):\n        return {safe}\n"
        )

    def load(self, source: str, helpers: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run the generated source; its names, with the helpers and constants it uses."""
        namespace: dict[str, Any] = {**HELPERS, **(helpers or {}), **self.constants}
        exec(compile(source, "<kleene>", "exec"), namespace)
        return namespace


_NOT_LITERAL = object()


def _literal(code: str) -> Any:
    """The value of generated code that is a Python literal (a constant condition, a
    duration), else `_NOT_LITERAL`."""
    try:
        return ast.literal_eval(code)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL


#: The most items one generated `and`/`or` nests (each nests one level of parentheses).
_GROUP = 8


# ---- conditions over bound events ---------------------------------------------------------


def _at(events: Sequence[Event], position: int, attr: str) -> Any:
    """Attribute `attr` of the event at list position `position`, or null when there is none."""
    return attribute(events[position], attr) if 0 <= position < len(events) else None


def _aggregate(node: E.Aggregate, events: Sequence[Event], i: int | None) -> Any:
    return evaluate(node, Env({node.var: events}, i, {}))


def _equivalent(bindings: Mapping[str, Sequence[Event]], attrs: Sequence[str]) -> bool:
    return shared_values([e for bound in bindings.values() for e in bound], attrs) is not None


class _EventsWriter(Writer):
    """Reads a variable's values from its bound events `E[var]`, with `i` the index."""

    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Any) -> str:
        events = f"E[{node.var!r}]"
        if isinstance(node, E.Len):
            return f"len({events})"
        if isinstance(node, E.Aggregate):
            return f"_aggregate({self.constant(node)}, {events}, i)"
        if node.index is None:
            if node.attr in _FIELDS:
                return f"_attr({events}[0], {node.attr!r})"
            return f"{events}[0].{attribute_slot(node.attr)}"
        offset = node.index.offset
        position = {"abs": "-1", "last": f"len({events}) - 1", "i": "i - 1"}
        return f"_at({events}, {position[node.index.base]} + {offset}, {node.attr!r})"

    def equivalence(self, node: E.Equivalence, ctx: Any) -> str:
        return f"_equivalent(E, {node.attrs!r})"


def compile_condition(expr: E.Expr, functions: Mapping[str, Callable[..., Any]]) -> Check:
    """`expr` as a function of the bound events (each variable's, in order) and i, true
    exactly when `evaluate` gives True."""
    writer = _EventsWriter(functions)
    fast, safe = writer.forms(expr, None)
    source = writer.function("check", "E, i", fast, safe)
    helpers = {"_at": _at, "_aggregate": _aggregate, "_equivalent": _equivalent}
    check: Check = writer.load(source, helpers)["check"]
    return check
