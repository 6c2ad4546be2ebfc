"""What every query tells the plans, the runtime, the writers and Spark, whatever its
language: the `Query` each language's analysis is (`kleene.compiler.analysis.Analysis` for
SASE+, `kleene.compiler.rules.RuleAnalysis` for LEAD, an AFA written directly in
`kleene.plans.afa`), and the declarations it makes:

- its `Output`: what `step` and `advance` return (matches, timed-out partial matches,
  retractions, or the events a rule emits) and the `Field`s of a row of it;
- its `Partition`: how the stream may be split into independent partitions;
- its `EventFilter`s: the events some part of it can take, so that readers and Spark may
  leave the others out;
- the attributes it reads (`Read`), checked against the input's columns.

Nothing outside `kleene.plans` asks which language a query is in or which plan runs it: it
reads these.

>>> from kleene import compile
>>> output = compile("PATTERN SEQ(A a, B+ b[]) WITHIN 5 RETURN b.len AS n").output
>>> output.kind, output.noun, output.counted(1), output.counted(2500)
('matches', 'matches', '1 match', '2,500 matches')
>>> [(f.name, f.kind) for f in output.fields]  # doctest: +NORMALIZE_WHITESPACE
[('match_id', 'long'), ('pattern', 'text'), ('start_ts', 'time'), ('end_ts', 'time'),
 ('a', 'events'), ('b', 'events'), ('n', 'long')]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from operator import attrgetter
from typing import Any, ClassVar, Literal

from kleene.errors import EventError
from kleene.events import ATOMS, Event, attribute_slot, attributes
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.matches import order_of

__all__ = [
    "EventFilter",
    "Field",
    "Output",
    "Partition",
    "Query",
    "Read",
    "emitted_row",
    "match_fields",
    "value_kind",
]

#: What a field of an output row holds: text, a timestamp of the input's kind, the events a
#: variable bound (each with the input's columns), a whole number, a float, a truth value,
#: the value of an input column (`Field.of`), a sum of one (whole when the column is, else
#: a float), a time as a number (`Event.t`), or a list of an input column's values (`of`;
#: text when None).
Kind = Literal[
    "text", "time", "events", "long", "double", "bool", "column", "sum", "t", "list", "key"
]


@dataclass(frozen=True)
class Field:
    """A field of an output row: its name, its kind, the input column whose type it has
    (kind "column"), and the expression that computes it (RETURN values; None for fields
    the output object carries)."""

    name: str
    kind: Kind
    of: str | None = None
    expr: E.Expr | None = field(default=None, compare=False)
    nullable: bool = True


def emitted_row(event: Event) -> dict[str, Any]:
    """An event a rule emitted as a flat row: its type, ts and attributes.

    >>> emitted_row(Event("Late", 5, {"order": 2}))
    {'type': 'Late', 'ts': 5, 'order': 2}
    """
    return {"type": event.type, "ts": event.ts, **attributes(event)}


def _emitted_at(event: Event) -> float:
    return event.t


def _as_made(row: Any) -> int:
    return 0


@dataclass(frozen=True)
class Output:
    """What a plan's `step` and `advance` return, and the rows it becomes.

    `kind` "matches": `Match`es, among them `Timeout`s when `timeouts` (partial matches
    whose window closed) and `Retraction`s of earlier matches when `retractions` (a plan
    taking events in any order); "events": the `Event`s a rule emits, in emission order;
    "rows": rows (dicts) made as SQL's MATCH_RECOGNIZE makes them, in the order made.
    """

    kind: Literal["matches", "events", "rows"]
    fields: tuple[Field, ...]
    timeouts: bool = False
    retractions: bool = False
    #: The event types a rule emits (kind "events"): what other queries may read of it.
    emits: frozenset[str] = frozenset()
    #: Does each row also carry the input's columns that are not among its fields (kind
    #: "rows": MATCH_RECOGNIZE's ALL ROWS PER MATCH)?
    carries: bool = False
    #: The partition key a match's `key` field holds (`keyed`); None: no such field.
    partition: Partition | None = field(default=None, compare=False)

    def keyed(self, partition: Partition | None) -> Output:
        """The output of a query the runtime splits by `partition`: a match's row holds the
        key's values as text (`Partition.labelled`) in a field `key`, after its times (and
        `kind`, `deadline`)."""
        if partition is None or self.kind != "matches":
            return self
        names = [f.name for f in self.fields]
        at = names.index("deadline" if self.timeouts else "end_ts") + 1
        fields = (*self.fields[:at], Field("key", "key", nullable=True), *self.fields[at:])
        return replace(self, fields=fields, partition=partition)

    @property
    def noun(self) -> str:
        """What to call the outputs in a message: "matches", "emitted events" or "rows"."""
        return {"matches": "matches", "events": "emitted events", "rows": "rows"}[self.kind]

    def counted(self, number: int) -> str:
        """`number` outputs, in words: "1 match", "2,500 matches", "1 emitted event"."""
        noun = self.noun
        if number == 1:
            noun = "match" if self.kind == "matches" else noun.removesuffix("s")
        return f"{number:,} {noun}"

    @property
    def sort_key(self) -> Callable[[Any], Any]:
        """The order outputs are reported in: matches by end time, start time and event
        ids (`Match.sort_key`); emitted events by the time they were emitted; rows as they
        were made (a sort by this key keeps their order)."""
        if self.kind == "rows":
            return _as_made
        return order_of if self.kind == "matches" else _emitted_at

    @property
    def variables(self) -> tuple[str, ...]:
        """The fields that hold a variable's events."""
        return tuple(f.name for f in self.fields if f.kind == "events")

    @property
    def computed(self) -> tuple[Field, ...]:
        """The fields computed from each output's bindings (RETURN values)."""
        return tuple(f for f in self.fields if f.expr is not None)

    def row(self, found: Any) -> dict[str, Any]:
        """One output as a flat row (docs/output.md): an emitted event's (`emitted_row`), a
        MATCH_RECOGNIZE row as it is, or a match's, every field this output declares in
        order (`Match.to_row`; a variable of an OR branch the match did not take is None),
        then what only some matches have (an AFA's `register`, a retraction's mark)."""
        if self.kind == "events":
            return emitted_row(found)
        if self.kind == "rows":
            return dict(found)
        made: dict[str, Any] = found.to_row()
        if self.timeouts:
            made.setdefault("kind", "match")
            made.setdefault("deadline", None)
        if self.partition is not None:
            made["key"] = self.partition.labelled(found.start)
        row = {f.name: made.pop(f.name, None) for f in self.fields}
        row.update(made)
        return row


def match_fields(
    variables: tuple[str, ...], returns: tuple[A.Returned, ...], timeouts: bool
) -> tuple[Field, ...]:
    """The fields of a match's row: `match_id`, pattern, start and end time, `kind`
    ("match" or "timeout") and `deadline` (a timeout's, as a number) when timeouts are
    reported, each positive variable's events, each RETURN value."""
    fields = [
        Field("match_id", "long", nullable=False),
        Field("pattern", "text", nullable=False),
        Field("start_ts", "time", nullable=False),
        Field("end_ts", "time", nullable=False),
    ]
    if timeouts:
        fields.append(Field("kind", "text", nullable=False))
        fields.append(Field("deadline", "t", nullable=True))
    fields += [Field(name, "events") for name in variables]
    for returned in returns:
        kind, of = value_kind(returned.expr)
        fields.append(Field(returned.name, kind, of, returned.expr))
    return tuple(fields)


def value_kind(
    expr: E.Expr, names: Mapping[str, tuple[Kind, str | None]] | None = None
) -> tuple[Kind, str | None]:
    """The kind of an expression's value (and the column whose type it has, for kind
    "column"), from what it reads: an attribute has its column's type (an aggregate's min
    and max too; `event_time` is a time as a number), a count or a length is whole, an
    average or other arithmetic a float, a condition a truth value, a constant its own;
    `names` gives the kinds of bare names. A function's value is text.

    >>> value_kind(E.Aggregate("max", "b", "x")), value_kind(E.Len("b"))
    (('column', 'x'), ('long', None))
    """
    match expr:
        case E.Attr(attr="event_time", index=None) if names is not None:
            return "t", None
        case E.Attr(attr=attr):
            return "column", attr
        case E.Aggregate(func="count") | E.Len():
            return "long", None
        case E.Aggregate(func="min" | "max", attr=str() as attr):
            return "column", attr
        case E.Aggregate(func="sum", attr=str() as attr):
            return "sum", attr
        case E.Aggregate(func="avg"):
            return "double", None
        case E.Compare() | E.BoolOp() | E.Equivalence() | E.Quantified() | E.Unary(op="not"):
            return "bool", None
        case E.Constant(value=bool()):
            return "bool", None
        case E.Constant(value=int()):
            return "long", None
        case E.Binary(op="||"):
            return "text", None
        case E.Constant(value=float()) | E.Binary() | E.Unary() | E.Duration():
            return "double", None
        case E.Name(name=name) if names is not None and name in names:
            return names[name]
        case E.Navigation(arg=arg):
            return value_kind(arg, names)
        case E.RowAggregate(func="count" | "count_if") | E.MatchNumber():
            return "long", None
        case E.RowAggregate(func="bool_and" | "bool_or"):
            return "bool", None
        case E.RowAggregate(func="arbitrary", arg=E.Attr(attr=attr)):
            return "column", attr
        case E.RowAggregate(func="max_by" | "min_by", arg=E.Call(args=(E.Attr(attr=attr), _))):
            return "column", attr
        case E.Call(name="array"):
            return "list", None
        case E.RowAggregate(func="array_agg", arg=E.Attr(attr=attr)):
            return "list", attr
        case E.RowAggregate(func="array_agg"):
            return "list", None
        case E.RowAggregate(func="min" | "max", arg=E.Attr(attr=attr)):
            return "column", attr
        case E.RowAggregate(func="sum", arg=E.Attr(attr=attr)):
            return "sum", attr
        case E.RowAggregate(func="avg" | "sum"):
            return "double", None
        case E.IsNull():
            return "bool", None
        case E.Case(branches=((_, value), *_)):
            return value_kind(value, names)
    return "text", None


def _one_key(
    read: Callable[[Event], Any], key: Callable[[Event], Hashable | None], event: Event
) -> Hashable | None:
    """`Partition.key` when every event type keys on one attribute, which `read` reads
    from its slot (None where an event has none)."""
    value = read(event)
    if value is None:
        return None
    return (value,) if type(value) in ATOMS else key(event)


def _group_by_one(name: str, event: Event) -> Hashable:
    """`Partition.grouper` of one attribute."""
    value: Hashable = event.get(name)
    if value is None or type(value) in ATOMS:
        return value
    return _hashable(value, (name,), event)


def _group_by(names: tuple[str, ...], event: Event) -> Hashable:
    """`Partition.grouper` of several attributes."""
    get = event.get
    return _hashable(tuple([get(name) for name in names]), names, event)


def _hashable(value: Any, names: tuple[str, ...], event: Event) -> Hashable:
    """`value` as a partition key, or an `EventError` naming the attribute that cannot be
    one."""
    try:
        hash(value)
    except TypeError:
        for name in names:
            part = event.get(name)
            try:
                hash(part)
            except TypeError:
                raise EventError(
                    f"the partition attribute {name!r} holds {type(part).__name__} "
                    f"{part!r}; a partition key is a single value (text, a number, a time)",
                    field=name,
                ) from None
    key: Hashable = value
    return key


@dataclass(frozen=True)
class Partition:
    """The partition key: one attribute per equality class that covers every variable.

    `classes` holds, for each class, the (variable, attribute) pairs it equates; `by_type`
    maps each event type of the query to its key attributes, one per class; `default`
    gives them for other event types when every class uses a single attribute name.
    """

    classes: tuple[tuple[tuple[str, str], ...], ...]
    by_type: Mapping[str, tuple[str, ...]]
    default: tuple[str, ...] | None

    def key(self, event: Event) -> Hashable | None:
        """The event's partition key; None when it lacks a value (such events form one more
        partition: alone in any match they join, they spoil no other)."""
        names = self.by_type.get(event.type, self.default)
        if names is None:
            return None
        get = event.get
        if len(names) == 1:
            value = get(names[0])
            if value is None:
                return None
            if type(value) in ATOMS:
                return (value,)
            values: tuple[Any, ...] = (value,)
        else:
            values = tuple([get(name) for name in names])
            if None in values:
                return None
        try:
            hash(values)
        except TypeError:
            return None
        return values

    @property
    def grouper(self) -> Callable[[Event], Hashable]:
        """The key where the partition is the query's meaning (a LEAD rule's PARTITION
        BY): the attributes' values as Spark groups them, a missing one a value of its own
        (None) and a value that cannot be a key (a list, a mapping) an `EventError`.

        >>> grouper = Partition((), {}, ("k", "j")).grouper
        >>> grouper(Event("A", 1, {"k": 1})), Partition((), {}, ("k",)).grouper(Event("A", 1, {}))
        ((1, None), None)
        """
        names = self.default
        if names is None or len(set(self.by_type.values()) - {names}):
            raise ValueError("a grouping partition keys every event type on the same attributes")
        if len(names) == 1:
            return partial(_group_by_one, names[0])
        return partial(_group_by, names)

    @property
    def keyer(self) -> Callable[[Event], Hashable | None]:
        """`key`, quicker where every event type keys on the same one attribute."""
        single = self.attribute
        if single is not None:
            return partial(_one_key, attrgetter(attribute_slot(single)), self.key)
        return self.key

    @cached_property
    def attribute(self) -> str | None:
        """The one attribute every event type keys on, if there is one: then the key of
        an event whose value is a text, a number or a truth value is that value alone, in
        a tuple."""
        names = set(self.by_type.values())
        if self.default is not None:
            names.add(self.default)
        if len(names) == 1 and len(single := names.pop()) == 1 and self.default is not None:
            return single[0]
        return None

    @cached_property
    def names(self) -> tuple[str, ...]:
        """What a row's `key` calls each class's value: its attribute, or `key<n>` where
        the class equates attributes of several names."""
        found = []
        for index, members in enumerate(self.classes):
            attrs = {attr for _, attr in members}
            found.append(next(iter(attrs)) if len(attrs) == 1 else f"key{index}")
        return tuple(found)

    def labelled(self, event: Event) -> dict[str, str | None]:
        """The event's key values as a row's `key` holds them: by `names`, as text (as
        Spark casts them: true/false for truth values), None for a missing one.

        >>> Partition(((("a", "k"),),), {}, ("k",)).labelled(Event("A", 1, {"k": 7}))
        {'k': '7'}
        """
        attrs = self.by_type.get(event.type, self.default) or ()
        values = [event.get(name) for name in attrs]
        values += [None] * (len(self.classes) - len(values))
        return {name: _text(value) for name, value in zip(self.names, values, strict=True)}

    def describe(self) -> str:
        parts = []
        for members in self.classes:
            attrs = {attr for _, attr in members}
            parts.append(
                attrs.pop() if len(attrs) == 1 else " = ".join(f"{v}.{a}" for v, a in members)
            )
        return ", ".join(parts)


def _text(value: Any) -> str | None:
    """A key value as text, as Spark casts it to a string."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class EventFilter:
    """The events one part of a query can take: one of `types` (None: any type) for which
    every property holds (conditions on the event alone, `v.attr` naming its attributes)."""

    types: frozenset[str] | None
    properties: tuple[E.Expr, ...] = ()

    def takes(self, event_type: str) -> bool:
        return self.types is None or event_type in self.types


@dataclass(frozen=True)
class Read:
    """An attribute a query reads: its name, a place that reads it (for messages), and the
    event types whose events it is read from (None: any type)."""

    attr: str
    place: str
    types: frozenset[str] | None


class Query(ABC):
    """A query as analysed for the plans: what the plan contract (`kleene.plans.base`) and
    everything around it read, whatever the language."""

    #: The language it is written in ("sase", "lead", "afa"): a plan runs one.
    language: ClassVar[str]
    #: The callable functions its expressions may call.
    functions: Mapping[str, Callable[..., Any]]
    #: How the stream may split into partitions that never share a match (None: it may
    #: not).
    partition: Partition | None

    @property
    @abstractmethod
    def tree(self) -> Any:
        """The query itself (its AST, or an AFA): what a worker compiles again."""

    @abstractmethod
    def text(self) -> str:
        """The query as canonical text (what a saved state's fingerprint hashes)."""

    @property
    def within(self) -> A.Within | None:
        """The query's WITHIN clause (None: none)."""
        return None

    @property
    def partition_is_meaning(self) -> bool:
        """Is the partition part of what the query means (it runs once per key), rather
        than a way to split the work that never changes the result?"""
        return False

    @property
    def strict(self) -> bool:
        """Does some run follow strict contiguity (the stream may then not split)?"""
        return False

    @property
    def extensions(self) -> frozenset[str]:
        """What it uses of what kleene adds to SASE+ (`kleene.compiler.analysis.
        EXTENSIONS`)."""
        return frozenset()

    @property
    def skips(self) -> bool:
        """Does an AFTER MATCH SKIP rule out some matches?"""
        return False

    @property
    def consume(self) -> str | None:
        """The partial matches a reported match discards: "any" (every one), "partition"
        (those of its partition), None (none)."""
        return None

    @property
    def freeze(self) -> dict[str, frozenset[str]]:
        """FREEZE: each variable whose events hold back new partial matches, with the
        variables they hold back (empty: none)."""
        return {}

    @property
    def filters(self) -> tuple[EventFilter, ...] | None:
        """The events some part of the query can take; None when every event matters
        (a contiguity strategy, UNTIL, a count window: leaving one out changes a match)."""
        return None

    @property
    def reads(self) -> tuple[Read, ...]:
        """The attributes it reads, in text order."""
        return ()

    @property
    def taken_types(self) -> frozenset[str] | None:
        """The event types whose events matter to it (None: events of every type do, as
        under a contiguity strategy, or some part takes an event of any type); an event of
        another type may be left out without changing an output (`filters`)."""
        filters = self.filters
        if filters is None or any(f.types is None for f in filters):
            return None
        return frozenset(t for f in filters for t in f.types or ())

    @property
    def named_types(self) -> frozenset[str] | None:
        """The event types its parts name (None: some part takes an event of any type).
        Events of another type may still matter to it (they break a contiguous run), but
        only these can be part of an output. By default `taken_types`."""
        return self.taken_types

    @property
    def time_column(self) -> str | None:
        """The input column the query itself names as the event time (MATCH_RECOGNIZE's
        ORDER BY), which a reader takes as the timestamp unless told otherwise (None: the
        reader's own, `ts`)."""
        return None

    @property
    def typed(self) -> bool:
        """Does the query tell events apart by type? A MATCH_RECOGNIZE clause does not:
        an input without a type column gives every row one type."""
        return True

    @property
    def real_time(self) -> bool:
        """Does it measure time in real units (`WITHIN 10 min`, a duration), so that
        numeric timestamps must count the engine's time unit?"""
        return False

    @abstractmethod
    def output(self, timeouts: bool = False, retractions: bool = False) -> Output:
        """What a plan running it reports, with timeouts and retractions as asked."""
