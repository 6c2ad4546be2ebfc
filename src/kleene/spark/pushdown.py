"""Single-event predicates as Spark columns, so events no variable can take never reach Python.

Only what means the same in Spark SQL as in kleene is translated: attributes, literals,
arithmetic (division and remainder guarded so that a zero divisor is null, as in kleene),
comparisons of like-typed operands, `and`/`or`/`not` (both use three-valued logic) and
`abs`. Anything else is left out, which only makes the filter keep more events: a filter is
a superset, the plan decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kleene.compiler.query import EventFilter
from kleene.language import expr as E

__all__ = ["NUMERIC", "EventColumns", "carried", "column", "prefilter"]


@dataclass(frozen=True)
class EventColumns:
    """How a DataFrame's columns make events: which hold type, ts and id; every column's type."""

    types: Mapping[str, T.DataType]
    ts: str
    type: str | None
    event_type: str | None
    id: str

    def field(self, name: str) -> str | None:
        """The column an attribute name reads: the column of that name, else the event's
        own ts/type/id column."""
        if name in self.types:
            return name
        return {"ts": self.ts, "type": self.type, "id": self.id}.get(name)


def col(name: str) -> Column:
    """A column by exact name (backquoted, so dots and colons stay part of the name)."""
    return F.col("`" + name.replace("`", "``") + "`")


def carried(names: Sequence[str], prefix: str) -> tuple[dict[str, str], list[Column]]:
    """The columns `names` as Spark hands them to Python workers: one with a dot in its name
    travels under `prefix` and a number (Spark reads the dot as a struct's field, even
    backquoted), and gets its own name back there. The names it travels under, by their
    own, and the columns to select."""
    renamed = {name: f"{prefix}{i}" for i, name in enumerate(names) if "." in name}
    return renamed, [col(n).alias(renamed[n]) if n in renamed else col(n) for n in names]


#: Spark's number types (for kleene, all one kind of value).
NUMERIC = (
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.DecimalType,
)


def _kind(data_type: T.DataType) -> str:
    if isinstance(data_type, NUMERIC):
        return "number"
    if isinstance(data_type, T.StringType):
        return "string"
    if isinstance(data_type, T.BooleanType):
        return "bool"
    return "other"


def column(expr: E.Expr, events: EventColumns) -> tuple[Column, str] | None:
    """`expr` (about one event) as a Spark column and the kind of its value, or None."""
    match expr:
        case E.Constant(value=value):
            if value is None:
                return F.lit(None), "null"
            if isinstance(value, bool):
                return F.lit(value), "bool"
            if isinstance(value, int | float):
                return F.lit(value), "number"
            return F.lit(value), "string"
        case E.Attr(attr=attr, index=None) | E.Attr(attr=attr, index=E.Index(base="i", offset=0)):
            if expr.attr == "type" and events.event_type is not None and "type" not in events.types:
                return F.lit(events.event_type), "string"
            name = events.field(attr)
            if name is None:
                return F.lit(None), "null"
            return col(name), _kind(events.types[name])
        case E.Unary(op="not", operand=operand):
            inner = column(operand, events)
            return (~inner[0], "bool") if inner and inner[1] in ("bool", "null") else None
        case E.Unary(op="-", operand=operand):
            inner = column(operand, events)
            return (-inner[0], "number") if inner and inner[1] == "number" else None
        case E.Binary(op=op, left=left, right=right):
            return _arithmetic(op, left, right, events)
        case E.Compare(op=op, left=left, right=right):
            lhs, rhs = column(left, events), column(right, events)
            if lhs is None or rhs is None:
                return None
            if "null" in (lhs[1], rhs[1]):
                return F.lit(None).cast("boolean"), "bool"
            if lhs[1] != rhs[1] or lhs[1] == "other":
                return None
            a, b = lhs[0], rhs[0]
            result = {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
            return result[op], "bool"
        case E.BoolOp(op=op, items=items):
            parts = [column(item, events) for item in items]
            if any(p is None or p[1] not in ("bool", "null") for p in parts):
                return None
            combined = parts[0][0]  # type: ignore[index]
            for part in parts[1:]:
                combined = (combined & part[0]) if op == "and" else (combined | part[0])  # type: ignore[index]
            return combined, "bool"
        case E.Call(name=name, args=(arg,)) if name.lower() == "abs":
            inner = column(arg, events)
            return (F.abs(inner[0]), "number") if inner and inner[1] == "number" else None
    return None


def _arithmetic(
    op: str, left: E.Expr, right: E.Expr, events: EventColumns
) -> tuple[Column, str] | None:
    lhs, rhs = column(left, events), column(right, events)
    if lhs is None or rhs is None or lhs[1] != "number" or rhs[1] != "number":
        return None
    a, b = lhs[0], rhs[0]
    if op == "+":
        return a + b, "number"
    if op == "-":
        return a - b, "number"
    if op == "*":
        return a * b, "number"
    if op == "/":
        return F.when(b != 0, a / b), "number"
    # Python's % floors; Spark's pmod agrees only for a positive divisor
    if isinstance(right, E.Constant) and isinstance(right.value, int | float) and right.value > 0:
        return F.pmod(a, b), "number"
    return None


def prefilter(filters: Sequence[EventFilter] | None, events: EventColumns) -> Column | None:
    """The union, over what the query can take (`Query.filters`: a SASE+ pattern's
    variables, a LEAD rule's streams), of "has one of its types and every property Spark
    can check"; None when no such filter is safe (contiguity strategies)."""
    if filters is None:
        return None
    alternatives: list[Column] = []
    for each in filters:
        if events.event_type is not None or each.types is None:
            if events.event_type is not None and not each.takes(events.event_type):
                continue
            condition = F.lit(True)
        else:
            assert events.type is not None
            condition = col(events.type).isin(sorted(each.types))
        for prop in each.properties:
            translated = column(prop, events)
            if translated is not None and translated[1] == "bool":
                condition = condition & translated[0]
        alternatives.append(condition)
    if not alternatives:
        return F.lit(False)
    combined = alternatives[0]
    for alternative in alternatives[1:]:
        combined = combined | alternative
    return combined
