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

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kleene.compiler.arrow import ArrowValue, arrow_value, column_kind, constant, texts
from kleene.compiler.query import EventFilter
from kleene.io.readers import Columns
from kleene.language import expr as E

__all__ = ["RowFilter", "row_filter"]

#: A batch's mask of the rows to keep; None when every row must be kept (nothing decided).
RowFilter = Callable[[pa.RecordBatch], "pa.BooleanArray | None"]


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
        mask: Any = constant(False)
        for each in kept:
            taken = _variable(each.types, each.properties, batch, columns)
            if taken is None:
                return None
            mask = pc.or_kleene(mask, taken)
        if isinstance(mask, pa.Scalar):  # the same for every row
            return None if mask.as_py() else pc.is_valid(pa.nulls(batch.num_rows))
        return pc.fill_null(mask, constant(False))

    return keep


def _variable(
    types: frozenset[str] | None,
    properties: tuple[Any, ...],
    batch: pa.RecordBatch,
    columns: Columns,
) -> Any | None:
    """The rows one variable can take (a boolean array or scalar); None: any row."""
    taken: Any = constant(True)
    if types is not None and columns.event_type is None:
        names = batch.schema.names
        if columns.type not in names or not pa.types.is_string(
            batch.schema.field(columns.type).type
        ):
            return None  # the reader names what is wrong with the type column
        taken = pc.is_in(batch.column(columns.type), value_set=texts(tuple(sorted(types))))
    conditions = [_value(prop, batch, columns) for prop in properties]
    if all(c is not None and c[1] in ("bool", "null") for c in conditions):
        for condition, _ in conditions:  # type: ignore[misc]
            taken = pc.and_kleene(taken, condition)
    elif types is None:
        return None
    return taken


def _value(expr: E.Expr, batch: pa.RecordBatch, columns: Columns) -> ArrowValue | None:
    """`expr` (about one event) computed over the batch, with its kind; None when it is not
    translated."""

    def leaf(node: E.Expr) -> ArrowValue | None:
        match node:
            case (
                E.Attr(attr=attr, index=None) | E.Attr(attr=attr, index=E.Index(base="i", offset=0))
            ):
                return _attribute(attr, batch, columns)
        return None

    return arrow_value(expr, leaf)


def _attribute(attr: str, batch: pa.RecordBatch, columns: Columns) -> ArrowValue | None:
    """An attribute's column: the column of that name unless it plays another part (then the
    attribute is missing: null), else the event's own ts or type."""
    names = batch.schema.names
    special = columns.special()
    name: str | None = attr
    if attr in special or attr not in names:
        name = {"ts": columns.ts, "type": None if columns.event_type else columns.type}.get(attr)
        if attr == "type" and columns.event_type is not None:
            return texts((columns.event_type,))[0], "string"
        if name is None or name not in names:
            # an id of a reading position, or a missing attribute (null), or an attribute
            # named like a column with another part (also missing: the reader leaves it out)
            return None if attr == "id" else (constant(None), "null")
    if names.count(name) != 1:
        return None
    column = batch.column(name)
    kind = column_kind(column.type)
    return None if kind is None else (column, kind)
