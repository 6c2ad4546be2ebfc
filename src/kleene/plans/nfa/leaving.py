"""Flink's and CORE's forms on the automaton: per-edge strategies, relaxed contiguity, loops
and optional elements left without an event, GREEDY and UNTIL loops, count windows.

The rules are `reference`'s (`kleene.plans.reference.runs`, docs/semantics.md, section 5),
read off the automaton's states once, at compile time:

- a run ignores an event as the strategy of every *place* it waits at allows (`Place`): the
  entry of a variable, or the loop of a Kleene variable it is inside;
- a run remembers what it ignored since its last take (`NOTHING`, `OTHERS`, `OWN`): having
  ignored an event of its own partition it proceeds only into skip till next match edges,
  having ignored one of another partition into no strict edge (`Gate.levels`: Flink's
  loop and optional states go to an ignore state without proceed edges);
- a run that just took an event also stands past every loop and optional element it may
  leave (`automaton.Exit`), where relaxed contiguity or skip till any match lets it wait.
  `reference` files those runs at once; here they stay *virtual* while the run's proceed
  takes do what they would, and become runs of their own (`Contiguous.landed`) at the
  first event of the run's partition they ignore, or at an event of another partition the
  run itself cannot ignore. So no match is found twice along two ways;
- an UNTIL condition refuses the event to its loop; inside the loop the run may not ignore
  it, and at the loop's entry it may neither take nor ignore an event only the condition
  refuses. It is the edge's own test (`vector.EdgeCode.until`, on the event and V: Flink's
  iterative `until` reads the loop's events so far and the variables before it from V);
- a GREEDY loop keeps an event it can take from a run proceeding past it, and holds a run
  that left it without an event (`Way.holding`, `Leaving.holding`): at the first event of its
  partition, and while the run waits at the element right after the loop if a match cannot
  skip that element, an event the loop could take ends it; the first event frees it instead
  if the loop's UNTIL condition holds for it (`Leaving.unstopped`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from kleene.compiler.analysis import Analysis
from kleene.compiler.residuals import Arithmetic
from kleene.compiler.structure import successors
from kleene.events import Event
from kleene.plans.nfa.automaton import Automaton, Edge, State, places
from kleene.plans.nfa.vector import Compiled, Move, Node

__all__ = ["NOTHING", "OTHERS", "OWN", "Gate", "Leaving", "Place", "Way"]

#: What a run ignored since its last take: nothing, events of other partitions only, an
#: event of its own partition.
NOTHING, OTHERS, OWN = 0, 1, 2

#: An UNTIL condition's test: on the event at hand and the run's V (before the take).
Test = Callable[[Event, tuple[Any, ...]], bool]


@dataclass(frozen=True, slots=True)
class Place:
    """A variable a run may bind next where it stands: inside its loop or at its entry,
    the strategy there, and the loop's UNTIL test (None: none, or not inside the loop: the
    test of the loop's take from there)."""

    name: str
    strategy: str
    until: Test | None


@dataclass(frozen=True, slots=True)
class Gate:
    """What an edge adds to its formulas under Flink's rules: the ignored levels a run may
    take it from (`levels`), the UNTIL test of the variable it takes into, whether it is
    the variable's first event (`entry`), and the GREEDY loops it proceeds past."""

    levels: frozenset[int]
    until: Test | None
    entry: bool
    greedy: frozenset[str]


@dataclass(frozen=True, slots=True)
class Way:
    """An exit as a run reads it: the node it lands at, the test of what closing decides
    (on the event and V), the GREEDY loops it leaves, and those of them that hold the run
    past the first event of its partition (it lands at the element right after them)."""

    target: int
    check: Callable[[Event, tuple[Any, ...]], bool] | None
    greedy: frozenset[str]
    holding: frozenset[str]


class Leaving:
    """The tables of one compiled automaton: each node's places, exits and gated edges."""

    def __init__(
        self,
        analysis: Analysis,
        automaton: Automaton,
        code: Compiled,
        nodes: list[Node],
        leaving: bool,
    ) -> None:
        """`leaving`: do runs leave loops without an event (else they proceed into any-match
        edges after ignoring events, by SASE+'s rule)?"""
        self.leaving = leaving
        strategies = analysis.strategies
        shape = Arithmetic(analysis.variables)
        greedy = frozenset(v.name for v in analysis.positive if v.greedy)
        self.greedy = bool(greedy)
        # (where a GREEDY loop holds a run past the first event: the element right after it,
        # if a match cannot skip it; Flink's optional sink ignores into an unguarded state)
        steady = frozenset(n for n, v in analysis.variables.items() if not v.empty_ok)
        sinks = {n: v & steady for n, v in successors(analysis.structure).items()}
        self.partitioned = analysis.partition is not None
        self.variables = analysis.variables
        self.places: list[tuple[Place, ...]] = []
        #: Per node: does a run there ignore every event (skip till any match at every
        #: place, no UNTIL)?
        self.always: list[bool] = []
        self.ways: list[tuple[Way, ...]] = []
        #: Per node, by event type: its edges (`Move`) each with its `Gate`.
        self.gated: list[dict[str, tuple[tuple[Move, Gate], ...]]] = []
        self.other: list[tuple[tuple[Move, Gate], ...]] = []
        #: Per node: the UNTIL test of each GREEDY loop a run there may leave (inside its
        #: loop, or at its entry).
        self.untils: list[dict[str, Test]] = []
        for state, node in zip(automaton.states, nodes, strict=True):
            counts = dict(state.counts)
            until = {id(e): code.edges[state.id, n].until for n, e in enumerate(state.edges)}
            self.places.append(
                tuple(
                    Place(
                        name,
                        strategies.loop(name) if inside else strategies.entry(name),
                        _looping(state, name, until) if inside else None,
                    )
                    for name, inside in places(shape, state.residual, counts, state.closed)
                )
            )
            self.always.append(
                all(
                    p.strategy == "skip_till_any_match" and p.until is None for p in self.places[-1]
                )
            )
            ways = []
            for number, way in enumerate(state.exits):
                left = greedy & way.closes - state.closed
                at = automaton.states[way.target]
                lands = {n for n, _ in places(shape, at.residual, dict(at.counts), at.closed)}
                holding = frozenset(name for name in left if sinks[name] & lands)
                ways.append(Way(way.target, code.exits[state.id, number], left, holding))
            self.ways.append(tuple(ways))
            self.untils.append(
                {
                    e.variable: test
                    for e in state.edges
                    if e.variable in greedy and (test := until[id(e)]) is not None
                }
            )
            edges = {id(m): m for moves in (*node.by_type.values(), node.other) for m in moves}
            gates = {
                key: self._gate(m.edge, until[id(m.edge)], state.closed, greedy, strategies.entry)
                for key, m in edges.items()
            }
            self.gated.append(
                {t: tuple((m, gates[id(m)]) for m in moves) for t, moves in node.by_type.items()}
            )
            self.other.append(tuple((m, gates[id(m)]) for m in node.other))

    def _gate(
        self,
        edge: Edge,
        until: Test | None,
        closed: frozenset[str],
        greedy: frozenset[str],
        entry: Callable[[str], str],
    ) -> Gate:
        levels = {NOTHING, OTHERS, OWN}
        strategy = entry(edge.variable)
        # (an any-match edge where no run waits past the loop: SASE+'s rule, any level)
        relaxed = strategy != "skip_till_any_match" or self.leaving
        if not edge.direct and strategy == "strict_contiguity":
            levels = {NOTHING}
        elif not edge.direct and strategy != "skip_till_next_match" and relaxed:
            levels = {NOTHING, OTHERS}
        return Gate(
            frozenset(levels),
            until,
            edge.kind == "begin",
            greedy & edge.closes - closed if not edge.direct else frozenset(),
        )

    def moves(
        self, node: int, vector: tuple[Any, ...], ignored: int, event: Event, until: bool = True
    ) -> tuple[list[tuple[Move, tuple[Any, ...]]], set[str], set[str], int]:
        """The valid takes of the event (of the run's partition and equivalence values) by
        a run at `node` with V `vector` that ignored `ignored` since its last take: each
        edge with V after it; the variables it takes directly; those and the entries only
        an UNTIL condition refuses (`taken`: where skip till next match and relaxed
        contiguity may not ignore the event); and how many edges were evaluated
        (`until=False`: were it not for UNTIL conditions)."""
        table = self.gated[node].get(event.type, self.other[node])
        found: list[tuple[Move, tuple[Any, ...], Gate]] = []
        direct: set[str] = set()
        taken: set[str] = set()
        #: (the variables only an UNTIL condition keeps from taking the event)
        stopped: set[str] = set()
        for move, gate in table:
            if ignored not in gate.levels:
                continue  # (an entry's gate takes every level: no stopped entry is missed)
            ok = (move.local is None or move.local(event)) and (
                move.check is None or move.check(event, vector)
            )
            after = vector
            if ok:
                after = vector if move.update is None else move.update(vector, event)
                ok = move.late is None or move.late(event, after)
            if not ok:
                continue
            if until and gate.until is not None and gate.until(event, vector):
                if gate.entry:
                    taken.add(move.edge.variable)  # neither taken nor ignored there
                stopped.add(move.edge.variable)
                continue
            if move.direct:
                direct.add(move.edge.variable)
            found.append((move, after, gate))
        # a GREEDY loop keeps an event it takes (where the run stands, or proceeding to it)
        # from the runs proceeding past it; after ignoring an event of its partition, one
        # its UNTIL condition alone refuses too (the run is held as one that left it)
        if self.greedy and found:
            into = {m.edge.variable for m, _, _ in found}
            if ignored == OWN:
                into |= stopped
            kept = [(m, v) for m, v, gate in found if not (gate.greedy and gate.greedy & into)]
        else:
            kept = [(m, v) for m, v, _ in found]
        return kept, direct, taken | direct if taken else direct, len(table)

    def ignorable(
        self,
        node: int,
        same: bool,
        own: bool,
        event: Event,
        taken: AbstractSet[str],
        vector: tuple[Any, ...],
    ) -> bool:
        """May a run at `node` with V `vector` skip the event, by the strategy of every
        place it waits at (`same`: the event is of its partition and equivalence values;
        `own`: of its partition)?"""
        for place in self.places[node]:
            if place.until is not None and same and place.until(event, vector):
                return False  # the loop stops at the event
            strategy = place.strategy
            if strategy == "skip_till_any_match":
                continue
            if strategy in ("skip_till_next_match", "relaxed_contiguity"):
                if place.name in taken:
                    return False
            elif strategy == "partition_contiguity":
                if not self.partitioned or own:
                    return False
            else:
                return False
        return True

    def unstopped(
        self, node: int, loops: frozenset[str], event: Event, vector: tuple[Any, ...]
    ) -> frozenset[str]:
        """These GREEDY loops but those whose UNTIL condition holds for the event, by a run
        at `node` (that may leave them) with V `vector`: those that hold a run leaving them
        at the event."""
        tests = self.untils[node]
        if not tests:
            return loops
        return frozenset(
            name for name in loops if (test := tests.get(name)) is None or not test(event, vector)
        )

    def holding(
        self, node: int, loops: AbstractSet[str], event: Event, vector: tuple[Any, ...]
    ) -> bool:
        """Could one of these GREEDY loops take the event (by its type and conditions, its
        UNTIL aside), for a run at `node` with V `vector`?"""
        found = self.moves(node, vector, NOTHING, event, until=False)[0]
        return any(move.edge.variable in loops for move, _ in found)


def _looping(state: State, name: str, until: Mapping[int, Test | None]) -> Test | None:
    """The UNTIL test of loop `name` where a run at `state` stands inside it: its take's
    (`until`: each edge's test, by the edge's id)."""
    for edge in state.edges:
        if edge.kind == "take" and edge.variable == name:
            return until[id(edge)]
    raise AssertionError(f"a run inside {name}'s loop at {state.label} has no take of it")
