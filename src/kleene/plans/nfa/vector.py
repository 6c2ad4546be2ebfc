"""A run's computation state vector V (SASE+ section 5.2) and the code that reads and writes it.

V holds only what later edges read: for each pattern variable the attribute values its
conditions need, a Kleene variable's last few elements, its first few, its length, running
aggregates (`sum`, `avg`, `min`, `max`, `count` over `b[..i-k]` or `b[]`) and, only when a
condition over every `b[i]` is decided after b has moved on, the needed values of every
element. Each slot is one column of V; `masks[state]` lists the columns a run in that state
may still read, so two runs in the same state with equal masked values are equivalent and can
be merged (section 5.2.2).

Every edge's formulas are compiled once into Python functions (one module of generated code
per automaton; no expression tree is walked per event):

- `local(e)`: the instances that read only the new event (its properties);
- `check(e, V)`: the other instances, on the run's V (before the take: `b[i-1]` is V's last
  element of b, `min(b[..i-1])` its running minimum);
- `update(V, e)`: V after the take;
- `late(e, V)`: the few instances that need V after the take (`b[..i]`, or `b[..i-1]`
  decided only once b is closed);
- `final(e, V)`: the instances decided when the run completes, on V after the take;
- `until(e, V)`: the UNTIL condition of the variable v the edge takes into, with the event
  as v's next element (`v.x` and `v[i].x` name it, `v[i-1].x` and `sum(v[..i-1].x)` the
  loop's events before it, other names the variables bound before the loop), on V before
  the take (after it for an aggregate over the event too, `sum(v[..i].x)`);

and each exit's (`automaton.Exit`) closing instances, on V as it stands.

Values follow `kleene.compiler.evaluate` exactly: SQL nulls, three-valued logic, type clashes
as `EventError`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, NoReturn

from kleene.compiler.analysis import Analysis
from kleene.compiler.codegen import Writer
from kleene.compiler.evaluate import (
    aggregate,
    apply,
)
from kleene.errors import EventError
from kleene.events import Event, attribute_slot
from kleene.language import expr as E
from kleene.language.sase.printer import expr_text
from kleene.plans.nfa.automaton import Automaton, Edge, Exit, Placement, State

__all__ = [
    "Compiled",
    "Context",
    "EdgeCode",
    "Move",
    "Node",
    "Slot",
    "VectorWriter",
    "compile_automaton",
]

_FIELDS = ("ts", "type", "id")


# ---- slots -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """One column of V.

    kind: "value" (a single variable's attribute), "last" (element len-n of a Kleene
    variable), "first" (element n), "count", "running" (aggregate `func` over elements
    1..len-n), "elements" (every element's needed attributes).
    """

    kind: str
    var: str
    attr: str | None = None
    n: int = 0
    func: str | None = None

    def __str__(self) -> str:
        match self.kind:
            case "value":
                return f"{self.var}.{self.attr}"
            case "last":
                return f"{self.var}[len{-self.n or ''}].{self.attr}"
            case "first":
                return f"{self.var}[{self.n}].{self.attr}"
            case "count":
                return f"{self.var}.len"
            case "running":
                upto = f"..len-{self.n}" if self.n else ""
                return f"{self.func}({self.var}[{upto}].{self.attr})"
        return f"{self.var}[*]"

    @property
    def initial(self) -> Any:
        if self.kind == "count":
            return 0
        if self.kind == "elements":
            return ()
        if self.kind == "running":
            return {"sum": 0, "count": 0, "avg": (0, 0), "values": frozenset()}.get(self.func or "")
        return None


@dataclass(frozen=True)
class Failed:
    """A running aggregate that met values it cannot combine; reading it is an error."""

    func: str
    values: tuple[Any, ...]


def _running(func: str, combine: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A running aggregate's step: skip nulls, stay failed, fail on values that will not mix."""

    def add(acc: Any, value: Any) -> Any:
        if value is None or type(acc) is Failed:
            return acc
        try:
            return combine(acc, value)
        except TypeError:
            return Failed(func, (acc, value))

    add.__name__ = f"_running_{func}"
    return add


_RUNNING: dict[str, Callable[[Any, Any], Any]] = {
    "sum": _running("sum", operator.add),
    "avg": _running("avg", lambda acc, value: (acc[0] + value, acc[1] + 1)),
    "count": _running("count", lambda acc, value: acc + 1),
    "min": _running("min", lambda acc, value: value if acc is None or value < acc else acc),
    "max": _running("max", lambda acc, value: value if acc is None or value > acc else acc),
    "values": _running("values", lambda acc, value: acc | {value}),
}


def _failed(acc: Failed, node: E.Aggregate) -> NoReturn:
    shown = ", ".join(f"{v!r} ({type(v).__name__})" for v in acc.values)
    raise EventError(f"cannot compute {expr_text(node)} with {shown}")


def _running_value(acc: Any, node: E.Aggregate) -> Any:
    if type(acc) is Failed:
        _failed(acc, node)
    if node.func == "avg":
        total, n = acc
        return apply(node, operator.truediv, total, n) if n else None
    return acc


def _fast_running(func: str, acc: str, value: str) -> str:
    """A running aggregate's step written inline, as `_RUNNING[func]` computes it where
    that raises no TypeError (a failed aggregate, or values that will not mix, do: the
    caller then takes the helper's form)."""
    if func in {"min", "max"}:
        op = "<" if func == "min" else ">"
        return (
            f"({value} if {acc} is None else {acc} if {value} is None "
            f"or not {value} {op} {acc} else {value})"
        )
    if func == "sum":
        return f"({acc} if {value} is None else {acc} + {value})"
    if func == "count":
        return f"({acc} if {value} is None else {acc} + 1)"
    return f"_running_{func}({acc}, {value})"


def _element(elements: tuple[tuple[Any, ...], ...], position: int, index: int) -> Any:
    """Attribute `index` of element `position` (from 1), or null when there is none."""
    if 1 <= position <= len(elements):
        return elements[position - 1][index]
    return None


def _elements_aggregate(
    node: E.Aggregate, elements: tuple[tuple[Any, ...], ...], index: int, upto: int | None
) -> Any:
    chosen = elements if upto is None else elements[: max(0, upto)]
    if node.attr is None:
        return len(chosen)
    return aggregate(node, [element[index] for element in chosen])


_HELPERS: dict[str, Any] = {
    **{f"_running_{func}": add for func, add in _RUNNING.items()},
    "_running_value": _running_value,
    "_failed": _failed,
    "_Failed": Failed,
    "_element": _element,
    "_elements_aggregate": _elements_aggregate,
}


# ---- the compiled automaton ---------------------------------------------------------------


@dataclass
class EdgeCode:
    """An edge's compiled formulas (None: nothing to test or change)."""

    local: Callable[[Event], bool] | None
    update: Callable[[tuple[Any, ...], Event], tuple[Any, ...]] | None
    check: Callable[[Event, tuple[Any, ...]], bool] | None
    late: Callable[[Event, tuple[Any, ...]], bool] | None
    final: Callable[[Event, tuple[Any, ...]], bool] | None
    until: Callable[[Event, tuple[Any, ...]], bool] | None


@dataclass
class Compiled:
    slots: list[Slot]
    initial: tuple[Any, ...]
    edges: dict[tuple[int, int], EdgeCode]  # (state id, edge number) -> code
    masks: dict[int, tuple[int, ...]]  # state id -> the columns of V it may still read
    source: str
    #: (state id, exit number) -> the test of the conditions leaving decides (None: none)
    exits: dict[tuple[int, int], Callable[[Event, tuple[Any, ...]], bool] | None]


class Move(NamedTuple):
    """An edge as the run loop reads it: its compiled formulas unpacked, where it leads."""

    edge: Edge
    local: Callable[[Event], bool] | None
    check: Callable[[Event, tuple[Any, ...]], bool] | None
    update: Callable[[tuple[Any, ...], Event], tuple[Any, ...]] | None
    late: Callable[[Event, tuple[Any, ...]], bool] | None
    final: Callable[[Event, tuple[Any, ...]], bool] | None
    target: int | None  # the index of the node it leads to (None: it can only complete)
    direct: bool
    completes: bool


class Node:
    """A state at run time: its edges by event type (`other`: for a type no variable names,
    the edges of variables of any type), and how to read its merge key."""

    __slots__ = ("by_type", "id", "label", "mask", "other")

    def __init__(
        self,
        id: int,  # noqa: A002 - the automaton state's id
        label: str,
        by_type: dict[str, tuple[Move, ...]],
        mask: Callable[[tuple[Any, ...]], Any],
    ) -> None:
        self.id = id
        self.label = label
        self.by_type = by_type
        self.mask = mask
        self.other: tuple[Move, ...] = ()


class VectorWriter(Writer):
    """Writes the Python source of every edge's functions."""

    def __init__(self, analysis: Analysis, automaton: Automaton) -> None:
        super().__init__(analysis.functions)
        self.analysis = analysis
        self.automaton = automaton
        self.variables = automaton.variables
        self.slots: dict[Slot, int] = {}
        # the attributes "all" instances read of each variable's elements
        self.element_attrs: dict[str, list[str]] = {}
        for state in automaton.states:
            moves: tuple[Edge | Exit, ...] = (*state.edges, *state.exits)
            for move in moves:
                for instance in move.instances:
                    if instance.kind == "all" and instance.over is not None:
                        attrs = self.element_attrs.setdefault(instance.over, [])
                        for node in E.walk(instance.condition.expr):
                            if (
                                isinstance(node, E.Attr | E.Aggregate)
                                and node.var == instance.over
                                and node.attr is not None
                                and node.attr not in attrs
                            ):
                                attrs.append(node.attr)

    # -- slots ------------------------------------------------------------------------

    def slot(self, slot: Slot) -> str:
        if slot not in self.slots:
            if slot.kind == "last" and slot.n > 0:
                self.slot(Slot("last", slot.var, slot.attr, slot.n - 1))
            if slot.kind == "running" and slot.n > 0:
                self.slot(Slot("last", slot.var, slot.attr, slot.n - 1))
            self.slots[slot] = len(self.slots)
        return f"V[{self.slots[slot]}]"

    def current(self, attr: str) -> str:
        if attr in _FIELDS:
            return f"_attr(e, {attr!r})"
        return f"e.{attribute_slot(attr)}"

    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Context) -> str:
        """Code reading a variable's value: from the new event, from V before the take (the
        run's V as it stands) or, with `ctx.post`, from V after it."""
        var = node.var
        shift = 0 if ctx.post or var != ctx.taken else 1  # V before the take lags by one
        if ctx.over == var and ctx.kind == "all":
            return self.element_term(node, ctx)
        if isinstance(node, E.Len):
            return self.slot(Slot("count", var))
        if isinstance(node, E.Aggregate):
            if node.attr is None:
                count = self.slot(Slot("count", var))
                if node.upto is None:
                    return count
                return f"max(0, {count} + {shift} - {node.upto})"
            lag = (node.upto or 0) - shift
            if lag < 0:
                raise _AfterTakeError
            running = Slot("running", var, node.attr, lag, node.func)
            slot, constant = self.slot(running), self.constant(node)
            if node.func == "avg":
                return f"_running_value({slot}, {constant})"
            return f"(_failed({slot}, {constant}) if type({slot}) is _Failed else {slot})"
        if not self.variables[var].kleene:
            if var == ctx.taken:
                return self.current(node.attr)
            return self.slot(Slot("value", var, node.attr))
        index = node.index
        if index is None:  # only an UNTIL condition names the event at hand so (validation)
            assert var == ctx.taken, "validation: a Kleene variable's attribute needs an index"
            return self.current(node.attr)
        if index.base == "i":
            if index.offset == 0:
                return self.current(node.attr)
            return self.slot(Slot("last", var, node.attr, -index.offset - shift))
        if index.base == "last":
            return self.slot(Slot("last", var, node.attr, -index.offset - shift))
        n = index.offset
        length, exact = ctx.count(var)
        if exact and length < n:
            return "None"
        if exact and length == n and var == ctx.taken:
            return self.current(node.attr)
        return self.slot(Slot("first", var, node.attr, n))

    def element_term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Context) -> str:
        var = node.var
        elements = self.slot(Slot("elements", var))
        attrs = self.element_attrs[var]
        if var == ctx.taken and not ctx.post:
            fields = "".join(f"{self.current(a)}, " for a in attrs)
            elements = f"({elements} + (({fields}),))"
        if isinstance(node, E.Len):
            return f"len({elements})"
        if isinstance(node, E.Aggregate):
            column = attrs.index(node.attr) if node.attr is not None else 0
            upto = "None" if node.upto is None else f"i - {node.upto}"
            return f"_elements_aggregate({self.constant(node)}, {elements}, {column}, {upto})"
        where = node.index
        assert where is not None
        column = attrs.index(node.attr)
        position = {
            "i": f"i + {where.offset}",
            "abs": str(where.offset),
            "last": f"len({elements}) + {where.offset}",
        }[where.base]
        return f"_element({elements}, {position}, {column})"

    def condition(self, instance: Placement, ctx: Context) -> tuple[str, str]:
        """Code that is True when the instance holds: a fast form and a safe one.

        A top-level comparison fails on null and on false alike, so the fast form compares
        inline; a type clash there raises TypeError, and the caller then runs the safe form,
        which raises the `EventError` the reference raises."""
        expr = instance.condition.expr
        if instance.kind == "all":
            name = f"each{next(self.numbers)}"
            body = self.expr(expr, ctx)
            self.functions.append(f"def {name}(e, V, i):\n    return {body}\n")
            count = self.element_term(E.Len(ctx.over or ""), ctx)
            first = instance.condition.first_i
            code = f"all({name}(e, V, i) is True for i in range({first}, {count} + 1))"
            return code, code
        return self.forms(expr, ctx)

    # -- edges ------------------------------------------------------------------------

    def edge(self, number: int, edge: Edge) -> dict[str, str | None]:
        """Write the edge's formulas; return their function names (None: nothing to test)."""
        counts = dict(edge.before)
        before = counts.get(edge.variable, 0)
        counts[edge.variable] = before + 1
        for closing in edge.closes:
            counts.setdefault(closing, 0)
        parts: dict[str, list[tuple[str, str]]] = {
            "local": [],
            "check": [],
            "late": [],
            "final": [],
        }
        written = len(self.functions)
        caps = self.automaton.caps
        until = self.variables[edge.variable].until
        if until is not None:
            extra = len(self.functions)
            try:
                ctx = Context(edge.variable, "one", None, counts, caps, False)
                parts["until"] = [self.forms(until, ctx)]
            except _AfterTakeError:  # it reads the event at hand in an aggregate (`v[..i]`)
                del self.functions[extra:]
                ctx = Context(edge.variable, "one", None, counts, caps, True)
                parts["until"] = [self.forms(until, ctx)]
                self.after_take.add(number)
        for instance in edge.instances:
            extra = len(self.functions)
            try:
                if instance.final:
                    raise _AfterTakeError
                ctx = Context(edge.variable, instance.kind, instance.over, counts, caps, False)
                fast, safe = self.condition(instance, ctx)
                reads_v = "V[" in safe or len(self.functions) > extra
                kind = "check" if reads_v else "local"
            except _AfterTakeError:
                del self.functions[extra:]
                ctx = Context(edge.variable, instance.kind, instance.over, counts, caps, True)
                fast, safe = self.condition(instance, ctx)
                kind = "final" if instance.final else "late"
            parts[kind].append((fast, safe))
        names: dict[str, str | None] = {}
        for kind, codes in parts.items():
            if not codes:
                names[kind] = None
                continue
            name = f"{kind}{number}"
            args = "e" if kind == "local" else "e, V"
            fast = " and ".join(f for f, _ in codes)
            safe = " and ".join(s for _, s in codes)
            if kind == "until" and number in self.after_take:  # on V after the take
                self.functions.append(self.function(f"{name}_taken", args, fast, safe))
                self.functions.append(
                    f"def {name}(e, V):\n    return {name}_taken(e, update{number}(V, e))\n"
                )
            else:
                self.functions.append(self.function(name, args, fast, safe))
            names[kind] = name
        text = "".join(self.functions[written:])
        self.reads[number] = {c for slot, c in self.slots.items() if f"V[{c}]" in text}
        self.updates.append((number, edge, before))
        return names

    def exit(self, number: int, way: Exit) -> str | None:
        """Write the conditions an exit's closing decides, on V as it stands; return the
        function's name (None: nothing to test)."""
        if not way.instances:
            return None
        counts = dict(way.after)
        caps = self.automaton.caps
        written = len(self.functions)
        codes = [
            self.condition(i, Context(None, i.kind, i.over, counts, caps, True))
            for i in way.instances
        ]
        name = f"exit{number}"
        fast = " and ".join(f for f, _ in codes)
        safe = " and ".join(s for _, s in codes)
        self.functions.append(self.function(name, "e, V", fast, safe))
        text = "".join(self.functions[written:])
        self.exit_reads[way.source] |= {c for c in self.slots.values() if f"V[{c}]" in text}
        return name

    def update(self, number: int, edge: Edge, before: int) -> str:
        var = edge.variable
        values: list[str] = []
        attrs: dict[str, str] = {}

        def read(attr: str) -> str:
            if attr not in attrs:
                attrs[attr] = f"x{len(attrs)}"
            return attrs[attr]

        fast: dict[int, str] = {}  # inline forms of running aggregates, by column
        for slot, column in sorted(self.slots.items(), key=lambda item: item[1]):
            old = f"V[{column}]"
            new = old
            if slot.var == var:
                match slot.kind:
                    case "value":
                        new = read(slot.attr or "")
                    case "last":
                        if slot.n == 0:
                            new = read(slot.attr or "")
                        else:
                            new = f"V[{self.slots[Slot('last', var, slot.attr, slot.n - 1)]}]"
                    case "first":
                        if before == slot.n - 1:
                            new = read(slot.attr or "")
                    case "count":
                        new = f"{old} + 1"
                    case "running":
                        entering = (
                            read(slot.attr or "")
                            if slot.n == 0
                            else f"V[{self.slots[Slot('last', var, slot.attr, slot.n - 1)]}]"
                        )
                        new = f"_running_{slot.func}({old}, {entering})"
                        fast[len(values)] = _fast_running(slot.func or "", old, entering)
                    case "elements":
                        fields = ", ".join(read(a) for a in self.element_attrs[var])
                        new = f"{old} + (({fields},),)"
            values.append(new)
        lines = [f"def update{number}(V, e):"]
        lines += [f"    {name} = {self.current(attr)}" for attr, name in attrs.items()]
        comma = "," if len(values) == 1 else ""
        safe = f"({', '.join(values)}{comma})"
        if fast:
            inline = [fast.get(column, value) for column, value in enumerate(values)]
            lines.append(f"    try:\n        return ({', '.join(inline)}{comma})")
            lines.append(f"    except TypeError:\n        return {safe}")
        else:
            lines.append(f"    return {safe}")
        return "\n".join(lines) + "\n"

    def generate(self) -> Compiled:
        self.functions: list[str] = []
        #: The edges whose UNTIL condition reads V after the take.
        self.after_take: set[int] = set()
        self.updates: list[tuple[int, Edge, int]] = []
        self.reads: dict[int, set[int]] = {}
        self.exit_reads: dict[int, set[int]] = {s.id: set() for s in self.automaton.states}
        numbered: list[tuple[State, int, dict[str, str | None]]] = []
        exits: dict[tuple[int, int], str | None] = {}
        for state in self.automaton.states:
            for edge in state.edges:
                numbered.append((state, len(numbered), self.edge(len(numbered), edge)))
            for position, way in enumerate(state.exits):
                exits[state.id, position] = self.exit(len(exits), way)
        # updates last: every slot is known once all formulas are written
        touched = set()
        for number, edge, before in self.updates:
            if any(slot.var == edge.variable for slot in self.slots):
                touched.add(number)
                self.functions.append(self.update(number, edge, before))
        source = "\n".join(self.functions)
        namespace = self.load(source)
        edges: dict[tuple[int, int], EdgeCode] = {}
        by_state: dict[int, int] = {}
        for state, number, names in numbered:
            position = by_state.get(state.id, 0)
            by_state[state.id] = position + 1
            found = {k: None if n is None else namespace[n] for k, n in names.items()}
            update = namespace[f"update{number}"] if number in touched else None
            edges[state.id, position] = EdgeCode(
                found["local"],
                update,
                found["check"],
                found["late"],
                found["final"],
                found.get("until"),
            )
        slots = [slot for slot, _ in sorted(self.slots.items(), key=lambda item: item[1])]
        masks = self.masks([(state, number) for state, number, _ in numbered], slots)
        closings = {where: None if n is None else namespace[n] for where, n in exits.items()}
        return Compiled(slots, tuple(s.initial for s in slots), edges, masks, source, closings)

    def load(self, source: str, helpers: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return super().load(source, {**_HELPERS, **(helpers or {})})

    def masks(
        self, numbered: list[tuple[State, int]], slots: list[Slot]
    ) -> dict[int, tuple[int, ...]]:
        """For each state, the columns of V that any edge from it on may read, with the
        columns their updates derive them from."""
        reads = {state.id: set(self.exit_reads[state.id]) for state in self.automaton.states}
        for state, number in numbered:
            reads[state.id] |= self.reads[number]
        successors = {
            state.id: {e.target for e in state.edges if e.target is not None}
            | {way.target for way in state.exits}
            for state in self.automaton.states
        }
        masks = {}
        for state in self.automaton.states:
            seen, todo, needed = {state.id}, [state.id], set()
            while todo:
                current = todo.pop()
                needed |= reads[current]
                for following in successors[current]:
                    if following not in seen:
                        seen.add(following)
                        todo.append(following)
            for column in list(needed):
                needed |= self.sources(slots[column])
            masks[state.id] = tuple(sorted(needed))
        return masks

    def sources(self, slot: Slot) -> set[int]:
        """The columns a slot's updates read."""
        if slot.kind in ("last", "running") and slot.n > 0:
            found = set()
            for n in range(slot.n):
                found.add(self.slots[Slot("last", slot.var, slot.attr, n)])
            return found
        return set()


class _AfterTakeError(Exception):
    """An instance that can only be read from V after the take (e.g. over `b[..i]`)."""


@dataclass
class Context:
    """Where an instance is evaluated: the taken variable, the kind of instance, the counts
    after the take, and whether V is read before the take (False) or after it (True)."""

    taken: str | None
    kind: str
    over: str | None
    counts: Mapping[str, int]
    caps: Mapping[str, int]
    post: bool

    def count(self, var: str) -> tuple[int, bool]:
        """The variable's count after the take, and whether it is exact (not "at least")."""
        count = self.counts.get(var, 0)
        return count, var == self.taken or count < self.caps[var]


def compile_automaton(analysis: Analysis, automaton: Automaton) -> Compiled:
    """Generate and load the code of every edge of `automaton`."""
    return VectorWriter(analysis, automaton).generate()
