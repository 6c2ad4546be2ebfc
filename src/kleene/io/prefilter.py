"""Which rows of an Arrow batch some part of a query can take, found in Arrow, so that a
reader makes events only of those (an event costs about a microsecond to make, a row's test
in Arrow a few nanoseconds: docs/benchmarks-journal.md).

What a query can take is what it declares (`kleene.compiler.query.Query.filters`): a row is
kept when, for some filter (a SASE+ variable, a LEAD rule's streams), it has one of its
types and meets every property (a condition on one event alone). Only what Arrow computes
exactly as kleene does is translated: attributes, literals, `+`, `-` and `*` of like numbers
(integers checked for overflow), unary minus, `abs`, comparisons of like values (an integer
column against a float literal is compared exactly), and `and`/`or`/`not` in three-valued
logic. A variable with a property that is not translated keeps every row of its types, so
a row kleene would find an error in (a string compared with a number) still reaches it.
The filter is a superset; the plan decides.

>>> import kleene, pyarrow as pa
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WHERE a.x > 2.5 AND b.y = 'on' WITHIN 5")
>>> keep = row_filter(plan.analysis.filters, kleene.io.Columns())
>>> batch = pa.record_batch({"type": ["A", "A", "B", "B", "C"], "ts": [1, 2, 3, 4, 5],
...                          "x": [2, 3, 9, None, 9], "y": ["on", None, "off", "on", "on"]})
>>> keep(batch).to_pylist()
[False, True, False, True, False]
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kleene.compiler.query import EventFilter
from kleene.io.readers import Columns
from kleene.language import expr as E

__all__ = ["RowFilter", "row_filter"]

#: A batch's mask of the rows to keep; None when every row must be kept (nothing decided).
RowFilter = Callable[[pa.RecordBatch], "pa.BooleanArray | None"]
#: A value in Arrow and its kind ("int", "float", "string", "bool", "null"; other kinds are
#: not translated).
_Value = tuple[Any, str]
#: Integers a double holds exactly.
_EXACT = 2**53


def row_filter(filters: Sequence[EventFilter] | None, columns: Columns) -> RowFilter | None:
    """The filter for a query's `filters` (None when no event may be left out: a contiguity
    strategy, UNTIL or a count window, or a part that takes every row)."""
    if filters is None:
        return None
    kept = list(filters)
    if columns.event_type is not None:
        kept = [f for f in kept if f.takes(columns.event_type)]
    if any(f.types is None and not f.properties for f in kept):
        return None

    def keep(batch: pa.RecordBatch) -> pa.BooleanArray | None:
        mask: Any = _constant(False)
        for each in kept:
            taken = _variable(each.types, each.properties, batch, columns)
            if taken is None:
                return None
            mask = pc.or_kleene(mask, taken)
        if isinstance(mask, pa.Scalar):  # the same for every row
            return None if mask.as_py() else pc.is_valid(pa.nulls(batch.num_rows))
        return pc.fill_null(mask, _constant(False))

    return keep


def _variable(
    types: frozenset[str] | None,
    properties: tuple[Any, ...],
    batch: pa.RecordBatch,
    columns: Columns,
) -> Any | None:
    """The rows one variable can take (a boolean array or scalar); None: any row."""
    taken: Any = _constant(True)
    if types is not None and columns.event_type is None:
        names = batch.schema.names
        if columns.type not in names or not pa.types.is_string(
            batch.schema.field(columns.type).type
        ):
            return None  # the reader names what is wrong with the type column
        taken = pc.is_in(batch.column(columns.type), value_set=_texts(tuple(sorted(types))))
    conditions = [_value(prop, batch, columns) for prop in properties]
    if all(c is not None and c[1] in ("bool", "null") for c in conditions):
        for condition, _ in conditions:  # type: ignore[misc]
            taken = pc.and_kleene(taken, condition)
    elif types is None:
        return None
    return taken


def _value(expr: E.Expr, batch: pa.RecordBatch, columns: Columns) -> _Value | None:
    """`expr` (about one event) computed over the batch, with its kind; None when it is not
    translated."""
    match expr:
        case E.Constant(value=value):
            return _literal(value)
        case E.Attr(attr=attr, index=None) | E.Attr(attr=attr, index=E.Index(base="i", offset=0)):
            return _attribute(attr, batch, columns)
        case E.Unary(op="not", operand=operand):
            inner = _value(operand, batch, columns)
            if inner is None or inner[1] not in ("bool", "null"):
                return None
            return pc.invert(_boolean(inner)), "bool"
        case E.Unary(op="-", operand=operand):
            inner = _value(operand, batch, columns)
            if inner is None or inner[1] not in ("int", "float"):
                return None
            return pc.negate_checked(inner[0]), inner[1]
        case E.Call(name=name, args=(arg,)) if name.lower() == "abs":
            inner = _value(arg, batch, columns)
            if inner is None or inner[1] not in ("int", "float"):
                return None
            return pc.abs_checked(inner[0]), inner[1]
        case E.Binary(op=op, left=left, right=right) if op in _ARITHMETIC:
            lhs, rhs = _value(left, batch, columns), _value(right, batch, columns)
            if lhs is None or rhs is None or lhs[1] != rhs[1] or lhs[1] not in ("int", "float"):
                return None
            return _ARITHMETIC[op](lhs[0], rhs[0]), lhs[1]
        case E.Compare(op=op, left=left, right=right):
            return _compare(op, _value(left, batch, columns), _value(right, batch, columns))
        case E.BoolOp(op=op, items=items):
            parts = [_value(item, batch, columns) for item in items]
            if any(p is None or p[1] not in ("bool", "null") for p in parts):
                return None
            combine = pc.and_kleene if op == "and" else pc.or_kleene
            combined = _boolean(parts[0])  # type: ignore[arg-type]
            for part in parts[1:]:
                combined = combine(combined, _boolean(part))  # type: ignore[arg-type]
            return combined, "bool"
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


def _literal(value: Any) -> _Value | None:
    if value is None:
        return _constant(None), "null"
    if isinstance(value, bool):
        return _constant(value), "bool"
    if isinstance(value, int):
        return (_integer(value), "int") if abs(value) < 2**63 else None
    if isinstance(value, float):
        return pc.cast(_texts((repr(value),)), pa.float64())[0], "float"
    if isinstance(value, str):
        return _texts((value,))[0], "string"
    return None


# Arrow values are made from buffers, not from Python values: pyarrow imports pandas the
# first time it converts one, and a reader never needs it.


@cache
def _texts(values: tuple[str, ...]) -> pa.Array:
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
    return pc.cast(_texts((str(value),)), pa.int64())[0]


def _constant(value: bool | None) -> pa.Scalar:
    """True, False or null, as a boolean scalar."""
    if value is None:
        return pa.nulls(1, pa.bool_())[0]
    return pc.cast(_texts(("true" if value else "false",)), pa.bool_())[0]


def _attribute(attr: str, batch: pa.RecordBatch, columns: Columns) -> _Value | None:
    """An attribute's column: the column of that name unless it plays another part (then the
    attribute is missing: null), else the event's own ts or type."""
    names = batch.schema.names
    special = columns.special()
    name: str | None = attr
    if attr in special or attr not in names:
        name = {"ts": columns.ts, "type": None if columns.event_type else columns.type}.get(attr)
        if attr == "type" and columns.event_type is not None:
            return _texts((columns.event_type,))[0], "string"
        if name is None or name not in names:
            # an id of a reading position, or a missing attribute (null), or an attribute
            # named like a column with another part (also missing: the reader leaves it out)
            return None if attr == "id" else (_constant(None), "null")
    if names.count(name) != 1:
        return None
    column = batch.column(name)
    kind = column.type
    if pa.types.is_integer(kind):
        return column, "int"
    if pa.types.is_floating(kind):
        return column, "float"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column, "string"
    if pa.types.is_boolean(kind):
        return column, "bool"
    return None


def _compare(op: str, lhs: _Value | None, rhs: _Value | None) -> _Value | None:
    if lhs is None or rhs is None:
        return None
    if "null" in (lhs[1], rhs[1]):
        return _constant(None), "null"
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


def _against_float(op: str, integers: Any, number: float) -> _Value | None:
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
    return pc.if_else(pc.is_valid(values), _constant(holds), _constant(None))


def _boolean(value: _Value) -> Any:
    """A boolean array or scalar (a null literal as a null boolean)."""
    array, kind = value
    return _constant(None) if kind == "null" else array
