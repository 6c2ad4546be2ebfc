"""Expressions computed column-wise in Arrow, exactly as kleene's interpreter computes them,
or not at all: `arrow_value(expr, leaf)` translates the operators, and `leaf` the nodes that
read data (an attribute of a batch's rows, a row pattern's navigation over a match, …).

Only what Arrow computes as kleene does is translated: literals, `+`, `-` and `*` of like
numbers (integers checked for overflow: Arrow raises `ArrowInvalid`, and the caller falls
back to the interpreter), unary minus, `abs`, comparisons of like values (an integer
column against a float literal is compared exactly), `IS NULL`, and `and`/`or`/`not` in
three-valued logic. Anything else is None, and the caller decides without Arrow.

>>> import pyarrow as pa
>>> from kleene.language.sql.reader import read
>>> condition = read("PATTERN (A) DEFINE A AS x * 2 > 3 AND NOT y IS NULL").defines[0].condition
>>> columns = {"x": pa.array([1, 2, None]), "y": pa.array(["a", None, "b"])}
>>> def column(node):
...     return (columns[node.attr], "int" if node.attr == "x" else "string") \\
...         if isinstance(node, E.Attr) else None
>>> value, kind = arrow_value(condition, column)
>>> value.to_pylist(), kind
([False, False, None], 'bool')
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kleene.language import expr as E

__all__ = ["ArrowValue", "Leaf", "arrow_value", "boolean", "column_kind", "constant", "texts"]

#: A value in Arrow (an array or a scalar) and its kind: "int", "float", "string", "bool"
#: or "null" (other kinds are not translated).
ArrowValue = tuple[Any, str]
#: Translates a node that reads data (None: it cannot be).
Leaf = Callable[[E.Expr], "ArrowValue | None"]
#: Integers a double holds exactly.
_EXACT = 2**53


def arrow_value(expr: E.Expr, leaf: Leaf) -> ArrowValue | None:
    """`expr` computed in Arrow, with its kind; None when it is not translated."""
    match expr:
        case E.Constant(value=value):
            return _literal(value)
        case E.Unary(op="not", operand=operand):
            inner = arrow_value(operand, leaf)
            if inner is None or inner[1] not in ("bool", "null"):
                return None
            return pc.invert(boolean(inner)), "bool"
        case E.Unary(op="-", operand=operand):
            inner = arrow_value(operand, leaf)
            if inner is None or inner[1] not in ("int", "float"):
                return None
            return pc.negate_checked(inner[0]), inner[1]
        case E.Call(name=name, args=(arg,)) if name.lower() == "abs":
            inner = arrow_value(arg, leaf)
            if inner is None or inner[1] not in ("int", "float"):
                return None
            return pc.abs_checked(inner[0]), inner[1]
        case E.Binary(op=op, left=left, right=right) if op in _ARITHMETIC:
            lhs, rhs = arrow_value(left, leaf), arrow_value(right, leaf)
            if lhs is None or rhs is None or lhs[1] != rhs[1] or lhs[1] not in ("int", "float"):
                return None
            return _ARITHMETIC[op](lhs[0], rhs[0]), lhs[1]
        case E.Compare(op=op, left=left, right=right):
            return _compare(op, arrow_value(left, leaf), arrow_value(right, leaf))
        case E.IsNull(operand=operand):
            inner = arrow_value(operand, leaf)
            if inner is None:
                return None
            if inner[1] == "null":
                return constant(True), "bool"
            return pc.is_null(inner[0]), "bool"
        case E.BoolOp(op=op, items=items):
            parts = [arrow_value(item, leaf) for item in items]
            if any(p is None or p[1] not in ("bool", "null") for p in parts):
                return None
            combine = pc.and_kleene if op == "and" else pc.or_kleene
            combined = boolean(parts[0])  # type: ignore[arg-type]
            for part in parts[1:]:
                combined = combine(combined, boolean(part))  # type: ignore[arg-type]
            return combined, "bool"
        case E.Unary() | E.Call() | E.Binary() | E.Case():
            return None
    return leaf(expr)


def column_kind(kind: pa.DataType) -> str | None:
    """The kind of a column of this Arrow type (None: not translated)."""
    if pa.types.is_integer(kind):
        return "int"
    if pa.types.is_floating(kind):
        return "float"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string"
    if pa.types.is_boolean(kind):
        return "bool"
    if pa.types.is_null(kind):
        return "null"
    return None


_ARITHMETIC = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}
_COMPARE = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}
#: The comparison that reads the same with its sides swapped.
_SWAPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _literal(value: Any) -> ArrowValue | None:
    if value is None:
        return constant(None), "null"
    if isinstance(value, bool):
        return constant(value), "bool"
    if isinstance(value, int):
        return (_integer(value), "int") if abs(value) < 2**63 else None
    if isinstance(value, float):
        return pc.cast(texts((repr(value),)), pa.float64())[0], "float"
    if isinstance(value, str):
        return texts((value,))[0], "string"
    return None


# Arrow values are made from buffers, not from Python values: pyarrow imports pandas the
# first time it converts one, and a reader never needs it.


@cache
def texts(values: tuple[str, ...]) -> pa.Array:
    """A string array of the values."""
    data = [value.encode("utf-8", "surrogatepass") for value in values]
    offsets = [0]
    for item in data:
        offsets.append(offsets[-1] + len(item))
    buffers = [
        pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)),
        pa.py_buffer(b"".join(data)),
    ]
    return pa.Array.from_buffers(pa.string(), len(values), [None, *buffers])


def _integer(value: int) -> pa.Scalar:
    return pc.cast(texts((str(value),)), pa.int64())[0]


def constant(value: bool | None) -> pa.Scalar:
    """True, False or null, as a boolean scalar."""
    if value is None:
        return pa.nulls(1, pa.bool_())[0]
    return pc.cast(texts(("true" if value else "false",)), pa.bool_())[0]


def boolean(value: ArrowValue) -> Any:
    """A boolean array or scalar (a null literal as a null boolean)."""
    array, kind = value
    return constant(None) if kind == "null" else array


def _compare(op: str, lhs: ArrowValue | None, rhs: ArrowValue | None) -> ArrowValue | None:
    if lhs is None or rhs is None:
        return None
    if "null" in (lhs[1], rhs[1]):
        return constant(None), "null"
    if lhs[1] == "int" and rhs[1] == "float" and isinstance(rhs[0], pa.Scalar):
        return _against_float(op, lhs[0], rhs[0].as_py())
    if lhs[1] == "float" and rhs[1] == "int" and isinstance(lhs[0], pa.Scalar):
        return _against_float(_SWAPPED[op], rhs[0], lhs[0].as_py())
    if lhs[1] == "float" and rhs[1] == "int" and isinstance(rhs[0], pa.Scalar):
        exact = abs(rhs[0].as_py()) <= _EXACT  # a double holds it: Arrow compares exactly
        return (_COMPARE[op](lhs[0], pc.cast(rhs[0], pa.float64())), "bool") if exact else None
    if lhs[1] == "int" and rhs[1] == "float" and isinstance(lhs[0], pa.Scalar):
        exact = abs(lhs[0].as_py()) <= _EXACT
        return (_COMPARE[op](pc.cast(lhs[0], pa.float64()), rhs[0]), "bool") if exact else None
    if lhs[1] != rhs[1]:
        return None  # kleene compares these as an error, or as Python does (1 == True)
    return _COMPARE[op](lhs[0], rhs[0]), "bool"


def _against_float(op: str, integers: Any, number: float) -> ArrowValue | None:
    """Integers against a float, exactly as Python compares them (Arrow would round the
    integers to doubles)."""
    if math.isnan(number):  # only != holds
        return _everywhere(integers, op == "!="), "bool"
    if abs(number) >= 2**62:  # beyond every integer of the column, or too near to say
        return None
    low, high = math.floor(number), math.ceil(number)
    if op in ("=", "!="):
        if low != high:  # no integer equals it
            return _everywhere(integers, op == "!="), "bool"
        return _COMPARE[op](integers, _integer(low)), "bool"
    bound = {"<": high, "<=": low, ">": low, ">=": high}[op]
    return _COMPARE[op](integers, _integer(bound)), "bool"


def _everywhere(values: Any, holds: bool) -> Any:
    """`holds` where a value is present, null where it is missing."""
    return pc.if_else(pc.is_valid(values), constant(holds), constant(None))
