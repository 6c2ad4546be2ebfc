"""LEAD rules on Spark: what `detect` needs to know about a rule that a SASE+ pattern's
analysis would tell it. The rows are grouped by the rule's PARTITION BY attributes (one group
without them: a rule's meaning needs the whole stream), only the rule's streams are kept,
and the result is one row per emitted event.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import types as T

from kleene.compiler.rules import argument_name
from kleene.errors import EventError
from kleene.language import expr as E
from kleene.language.lead import ast as L
from kleene.plans.petri import PetriPlan
from kleene.spark.pushdown import EventColumns, col

__all__ = ["emitted_schema", "rule_filter", "rule_keys"]

#: Type names an EventType declares its attributes with, as Spark types.
_DECLARED: dict[str, T.DataType] = {
    "INT": T.LongType(),
    "INTEGER": T.LongType(),
    "LONG": T.LongType(),
    "FLOAT": T.DoubleType(),
    "DOUBLE": T.DoubleType(),
    "NUMBER": T.DoubleType(),
    "BOOLEAN": T.BooleanType(),
    "BOOL": T.BooleanType(),
    "STRING": T.StringType(),
    "TEXT": T.StringType(),
}


def rule_keys(plan: PetriPlan) -> list[tuple[str, Column]] | None:
    """The group columns: the PARTITION BY attributes, or None (one group)."""
    if not plan.rule.partition:
        return None
    return [(a.attr, col(a.attr)) for a in plan.rule.partition]


def rule_filter(plan: PetriPlan, events: EventColumns) -> Column | None:
    """Only the events of the rule's streams (FROM) matter to it."""
    if events.type is None:
        return None
    return col(events.type).isin(sorted(plan.read))


def emitted_schema(
    plan: PetriPlan, events: EventColumns, keys: list[tuple[str, Column]] | None
) -> T.StructType:
    """One row an emitted event: `type` (the action), `ts` (when it was emitted, of the
    timestamp column's type), `key` (the group's PARTITION BY values, when partitioned), then
    one column an attribute any top-level action gives, typed by what the argument reads (the
    column's type for `alias.attr`; declared for an EventType; long for counts; double for
    other numbers; boolean for conditions; text when two actions disagree)."""
    rule = plan.rule
    types = {t.name: t for t in rule.event_types}
    columns: dict[str, T.DataType] = {}
    for action in _emitted(rule.emit):
        kind = types.get(action.type)
        named = [f.name for f in kind.fields] if kind is not None else []
        for i, argument in enumerate(action.args):
            name = argument.name or (named[i] if kind is not None else argument_name(argument))
            assert name is not None
            declared = None
            if kind is not None:
                declared = next((f.type for f in kind.fields if f.name == name), None)
            data = _DECLARED.get(declared or "") or _type_of(argument.value, events, plan)
            previous = columns.get(name)
            columns[name] = data if previous in (None, data) else T.StringType()
        if kind is not None:
            for f in kind.fields:
                columns.setdefault(f.name, _DECLARED.get(f.type, T.StringType()))
    fields = [
        T.StructField("type", T.StringType(), False),
        T.StructField("ts", events.types[events.ts], False),
    ]
    if keys is not None:
        key_fields = [T.StructField(name, T.StringType(), True) for name, _ in keys]
        fields.append(T.StructField("key", T.StructType(key_fields), True))
    for name, data in columns.items():
        if name in ("type", "ts", "key"):
            raise EventError(
                f"an action's attribute {name!r} would clash with the emitted rows' own "
                f"{name!r} column on Spark; name it otherwise (… AS name)",
                field=name,
            )
        fields.append(T.StructField(name, data, True))
    return T.StructType(fields)


def _emitted(emit: tuple[L.Action, ...] | L.CheckBlock) -> list[L.Action]:
    if not isinstance(emit, L.CheckBlock):
        return list(emit)
    return [a for c in emit.checks for a in _emitted(c.then)]


def _type_of(e: E.Expr, events: EventColumns, plan: PetriPlan) -> T.DataType:
    if isinstance(e, E.Attr):
        if e.attr == "event_time":
            ts_type = events.types[events.ts]
            return ts_type if isinstance(ts_type, T.NumericType) else T.DoubleType()
        column = events.field(e.attr)
        return events.types[column] if column is not None else T.StringType()
    if isinstance(e, E.Name):
        if e.name in plan.names.attributes:
            column = events.field(e.name)
            return events.types[column] if column is not None else T.StringType()
        if e.name in plan.names.time_events:
            return T.BooleanType()
        return T.StringType()
    if isinstance(e, E.Constant):
        if isinstance(e.value, bool):
            return T.BooleanType()
        if isinstance(e.value, int):
            return T.LongType()
        if isinstance(e.value, float):
            return T.DoubleType()
        return T.StringType()
    if isinstance(e, E.Aggregate) and e.func == "count":
        return T.LongType()
    if isinstance(e, E.Compare | E.BoolOp | E.Quantified) or (
        isinstance(e, E.Unary) and e.op == "not"
    ):
        return T.BooleanType()
    return T.DoubleType()
