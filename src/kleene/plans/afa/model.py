"""The AFA, the augmented finite automaton of Chandramouli, Goldstein & Maier (VLDB 2010):
states, arcs between any two of them (cycles and ε-arcs included), a start state, final
states, and a *register* of named fields that every computation carries.

An arc has a *fence* function, which says whether it may fire for an event and a register,
and a *transfer* function, which computes the register after it fires (section 2.2). An
ε-arc consumes no event: its functions see only the register. The event an arc consumes is
bound to the arc's variable (`bind`, "events" by default; None binds nothing), so a match
lists the events that made it. A *timeout* arc (the paper's end-of-window arc of Appendix
E, Figure 18) fires once time has passed a deadline its register gives, when no event came
between the computation's last event and the deadline: it ends a pattern with an absence
("A, then no B within 300 s").

>>> afa = (Builder("updown", register={"n": 0})
...        .arc("q0", "q1", fence=lambda e, r: e["x"] < 0, transfer=lambda e, r: {"n": 1})
...        .arc("q1", "q1", fence=lambda e, r: e["x"] < 0,
...             transfer=lambda e, r: {"n": r["n"] + 1})
...        .arc("q1", "q2", fence=lambda e, r: e["x"] > 0 and r["n"] >= 2)
...        .final("q2").build())
>>> afa.states, afa.start, sorted(afa.finals)
(('q0', 'q1', 'q2'), 'q0', ['q2'])
>>> print(afa.describe())
AFA updown  register (n=0)  start q0  final q2
  a0  q0 -> q1  <python>
  a1  q1 -> q1  <python>
  a2  q1 -> q2  <python>
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kleene.errors import PlanError
from kleene.events import Event

__all__ = ["Afa", "Arc", "Builder", "Deadline", "Fire", "Lifetime", "Register", "never"]

#: A register: its fields' values, in the order of the AFA's register schema.
Register = tuple[Any, ...]
#: An arc's fence and transfer in one: the register after the arc fires for the event (None
#: for an ε-arc), or None when its fence says it may not fire.
Fire = Callable[[Event | None, Register], Register | None]
#: What a Python fence or transfer function receives and returns as a register.
Fields = Mapping[str, Any]
#: A timeout arc's deadline: the time, from the register, after which it fires.
Deadline = Callable[[Register], float]


@dataclass(frozen=True)
class Arc:
    """One arc: from `source` to `target`, firing by `fire` (see `Fire`). `text` shows its
    functions; `bind` names the variable its event is bound to in matches."""

    name: str
    source: str
    target: str
    fire: Fire = field(repr=False, compare=False)
    epsilon: bool = False
    bind: str | None = "events"
    text: str = ""
    #: For a timeout arc: its deadline (it then consumes no event and `fire` is unused).
    deadline: Deadline | None = field(default=None, repr=False, compare=False)
    #: The event types the arc can fire for (None: any): an event of another type never
    #: passes its fence.
    types: frozenset[str] | None = None
    #: An ignorable arc (Appendix D): a self-loop that keeps the register and binds
    #: nothing, and fires for every event that no other arc of its state can fire for
    #: by `types` (as a query's skip loop does).
    ignorable: bool = False


class Lifetime(NamedTuple):
    """When an arc added while the stream runs may fire: for the events whose timestamp it
    holds (section 2.3), [start, end) by default. The default operation mode adds an arc
    for the events after the latest time seen (`after`: start excluded) and removes it
    after the events up to it (`through`: end included). (A named tuple: a pattern that
    changes every few events makes two at each change, at a quarter of a frozen
    dataclass's cost.)

    >>> Lifetime(5, 10).holds(5), Lifetime(5, 10).holds(10), Lifetime(5, after=True).holds(5)
    (True, False, False)
    """

    start: float = -math.inf
    end: float = math.inf
    after: bool = False
    through: bool = False

    def holds(self, t: float) -> bool:
        if t < self.start or (self.after and t == self.start):
            return False
        return t < self.end or (self.through and t == self.end)

    def bound(self, fire: Fire) -> Fire:
        """`fire`, firing only for the events this lifetime holds (the default operation
        mode's lifetimes, open at one end, test one bound).

        >>> def fire(event, register): return register
        >>> timed = Lifetime(5, after=True).bound(fire)
        >>> class E: t = 5
        >>> timed(E, "r"), Lifetime(4, 5, through=True).bound(fire)(E, "r")
        (None, 'r')
        >>> Lifetime(end=5, through=True).bound(fire)(E, "r"), Lifetime(end=5).bound(fire)(E, "r")
        ('r', None)
        """
        start, end = self.start, self.end
        if end == math.inf and self.after:

            def since(event: Event | None, register: Register) -> Register | None:
                return fire(event, register) if event is not None and event.t > start else None

            return since
        if start == -math.inf and self.through:  # the default mode's removed arc

            def until(event: Event | None, register: Register) -> Register | None:
                return fire(event, register) if event is not None and event.t <= end else None

            return until
        holds = self.holds

        def timed(event: Event | None, register: Register) -> Register | None:
            return fire(event, register) if event is not None and holds(event.t) else None

        return timed

    def describe(self) -> str:
        opening = "(" if self.after else "["
        closing = "]" if self.through else ")"
        return f"{opening}{self.start:g}, {self.end:g}{closing}"


@dataclass(frozen=True)
class Afa:
    """Definition 1's 7-tuple, less the event schema (events carry their attributes): the
    states, the arcs, the start state, the final states, the register schema (`fields`) and
    its initial value Z, and the window W over which an event can contribute (None: none)."""

    name: str
    states: tuple[str, ...]
    arcs: tuple[Arc, ...]
    start: str
    finals: frozenset[str]
    fields: tuple[str, ...] = ()
    initial: Register = ()
    window: float | None = None
    #: For a final state: the variables its matches list, in order (by default those the
    #: arcs bind, in the order of the arcs).
    outputs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        known = set(self.states)
        for arc in self.arcs:
            for end in (arc.source, arc.target):
                if end not in known:
                    raise PlanError(f"arc {arc.name} names an unknown state {end!r}")
        if self.start not in known:
            raise PlanError(f"the start state {self.start!r} is not a state of the AFA")
        if not self.finals:
            raise PlanError(f"AFA {self.name} has no final state: it could never match")
        for final in self.finals:
            if final not in known:
                raise PlanError(f"the final state {final!r} is not a state of the AFA")
        if len(self.initial) != len(self.fields):
            raise PlanError("the initial register must give every register field a value")

    @property
    def variables(self) -> tuple[str, ...]:
        """The variables arcs bind events to, in the order of the arcs."""
        return tuple(dict.fromkeys(a.bind for a in self.arcs if a.bind is not None))

    def describe(self) -> str:
        register = ", ".join(f"{n}={v!r}" for n, v in zip(self.fields, self.initial, strict=True))
        head = f"AFA {self.name}  register ({register})  start {self.start}"
        head += f"  final {', '.join(sorted(self.finals))}"
        if self.window is not None:
            head += f"  within {self.window:g}"
        lines = [head]
        for arc in self.arcs:
            kind = "  ε" if arc.epsilon else "  timeout" if arc.deadline is not None else ""
            lines.append(f"  {arc.name}  {arc.source} -> {arc.target}{kind}  {arc.text}".rstrip())
        return "\n".join(lines)

    def dot(self) -> str:
        """The AFA in Graphviz DOT: final states double circles, ε-arcs dashed."""
        lines = ["digraph afa {", "  rankdir=LR;", '  node [shape=circle, fontname="Helvetica"];']
        for state in self.states:
            shape = "doublecircle" if state in self.finals else "circle"
            lines.append(f'  "{state}" [shape={shape}];')
        for arc in self.arcs:
            style = "dashed" if arc.epsilon else "dotted" if arc.deadline is not None else "solid"
            label = f"{arc.name}: {arc.text}".replace('"', '\\"')
            lines.append(f'  "{arc.source}" -> "{arc.target}" [style={style}, label="{label}"];')
        lines.append("}")
        return "\n".join(lines)


class Builder:
    """Writes an AFA arc by arc (Appendix A: a set of states and arcs, each with its two
    functions). Fences and transfers are Python callables over the event (None on an ε-arc)
    and the register as a dict; a transfer returns the fields it changes. States are named
    by the arcs; the first arc's source is the start state unless `start` says otherwise."""

    def __init__(
        self,
        name: str = "afa",
        register: Mapping[str, Any] | None = None,
        window: float | None = None,
    ) -> None:
        self.name = name
        self.fields = tuple(register or {})
        self.initial = tuple((register or {}).values())
        self.window = window
        self.arcs: list[Arc] = []
        self.states: dict[str, None] = {}
        self._start: str | None = None
        self._finals: set[str] = set()

    def arc(
        self,
        source: str,
        target: str,
        fence: Callable[[Event, Fields], Any] | None = None,
        transfer: Callable[[Event, Fields], Fields] | None = None,
        *,
        bind: str | None = "events",
        name: str | None = None,
        on: Iterable[str] | None = None,
    ) -> Builder:
        """An event-consuming arc, firing for events of the types `on` (None: any). A
        self-loop with no fence, no transfer and `bind=None` is an ignorable arc."""
        return self._add(source, target, fence, transfer, False, bind, name, on)

    def epsilon(
        self,
        source: str,
        target: str,
        fence: Callable[[None, Fields], Any] | None = None,
        transfer: Callable[[None, Fields], Fields] | None = None,
        *,
        name: str | None = None,
    ) -> Builder:
        """An ε-arc: it fires on the register alone, consuming nothing."""
        return self._add(source, target, fence, transfer, True, None, name, None)

    def timeout(
        self,
        source: str,
        target: str,
        deadline: Callable[[Fields], float],
        *,
        name: str | None = None,
    ) -> Builder:
        """A timeout arc: once every event up to `deadline(register)` has come (a
        punctuation), a computation in `source` whose last event is the last one before the
        deadline moves to `target`, keeping its register."""
        self.states.setdefault(source, None)
        self.states.setdefault(target, None)
        names = self.fields

        def when(register: Register) -> float:
            return deadline(dict(zip(names, register, strict=True)))

        label = name or f"a{len(self.arcs)}"
        self.arcs.append(
            Arc(label, source, target, never, bind=None, text="<python>", deadline=when)
        )
        return self

    def start(self, state: str) -> Builder:
        self.states.setdefault(state, None)
        self._start = state
        return self

    def final(self, *states: str) -> Builder:
        for state in states:
            self.states.setdefault(state, None)
        self._finals.update(states)
        return self

    def build(self) -> Afa:
        if not self.states:
            raise PlanError(f"AFA {self.name} has no states: add arcs")
        start = self._start if self._start is not None else next(iter(self.states))
        return Afa(
            self.name,
            tuple(self.states),
            tuple(self.arcs),
            start,
            frozenset(self._finals),
            self.fields,
            self.initial,
            self.window,
        )

    def _add(
        self,
        source: str,
        target: str,
        fence: Callable[[Any, Fields], Any] | None,
        transfer: Callable[[Any, Fields], Fields] | None,
        epsilon: bool,
        bind: str | None,
        name: str | None,
        on: Iterable[str] | None,
    ) -> Builder:
        self.states.setdefault(source, None)
        self.states.setdefault(target, None)
        types = None if on is None else frozenset(on)
        fire = python_fire(self.fields, fence, transfer, types)
        label = name or f"a{len(self.arcs)}"
        text = "<python>" if fence is not None or transfer is not None else ""
        ignorable = source == target and not epsilon and bind is None and text == ""
        self.arcs.append(
            Arc(label, source, target, fire, epsilon, bind, text, types=types, ignorable=ignorable)
        )
        return self


def never(event: Event | None, register: Register) -> None:
    """The `fire` of a timeout arc: it consumes no event."""
    return None


def python_fire(
    fields: Sequence[str],
    fence: Callable[[Any, Fields], Any] | None,
    transfer: Callable[[Any, Fields], Fields] | None,
    types: frozenset[str] | None = None,
) -> Fire:
    """An arc's `Fire` from Python callables over the register as a dict: a transfer
    returns the fields it changes (a field it names that the schema lacks is an error);
    with `types`, it fires only for an event of one of them."""
    names = tuple(fields)

    def fire(event: Event | None, register: Register) -> Register | None:
        if types is not None and (event is None or event.type not in types):
            return None
        view = dict(zip(names, register, strict=True))
        if fence is not None and not fence(event, view):
            return None
        if transfer is None:
            return register
        changed = transfer(event, view)
        unknown = set(changed) - set(names)
        if unknown:
            raise PlanError(
                f"a transfer function set {', '.join(sorted(unknown))}, which the register "
                f"schema ({', '.join(names) or 'empty'}) does not have"
            )
        view.update(changed)
        return tuple(view[n] for n in names)

    return fire
