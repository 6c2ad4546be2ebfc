"""SASE+ queries compiled to AFAs (the paper, Appendix G: "pattern languages such as SASE+
can be compiled into an AFA").

The AFA's states are those of the query's NFA^b (`kleene.plans.nfa.automaton`) and one final
state per way a match lists its variables. Its register is the NFA^b run's computation state
vector V with the run's partition key and equivalence values. Its arcs are:

- one per NFA^b edge (begin, take, proceed), whose fence is the edge's formulas (the event's
  type, its own predicates, those over V, the partition and equivalence values) and whose
  transfer is the edge's update of V; it binds the event to the edge's variable;
- one more into the final state for an edge that completes a match, fenced also by the
  conditions decided only when the match completes;
- the strategy's ignore arc at every state but the start, a self-loop that keeps the register
  and binds nothing (the paper's *ignorable arc*): always under skip-till-any-match; when no
  direct take fires under skip-till-next-match; for an event of another partition under
  partition contiguity; none under strict contiguity.

The AFA's contiguous-subsequence semantics then give exactly the NFA^b's runs: a run's events
are a contiguous subsequence once its ignored events are counted in, and the window is the
AFA's (here inclusive: last - first <= W, as WITHIN is).

OR branches may bind the same variables (`OR(SEQ(A a, B b), AND(A a, B b))`): one match
may then complete along two arcs, and the operator reports it once (its output is a set).

What does not compile, with the reason `unsupported` gives: negation, and output formats or
selections other than all matches (they choose among matches the AFA would have to retract).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from kleene.compiler.analysis import Analysis
from kleene.compiler.evaluate import equivalence_values
from kleene.compiler.options import Options
from kleene.plans.afa.model import Afa, Arc, Fire, Register
from kleene.plans.nfa.automaton import Automaton, Edge, build
from kleene.plans.nfa.vector import EdgeCode, compile_automaton

__all__ = ["Identity", "compile_sase", "identity", "unsupported"]


def unsupported(analysis: Analysis, options: Options) -> str | None:
    """Why a query does not compile to an AFA, or None."""
    if options.anchors and options.sequence is not None:
        return "anchors=True does not go with sequence numbers (AFA+O carries no gaps to skip)"
    if options.output != "all" or options.selection != "all" or analysis.skips:
        return "it reports all matches only (output='all', selection='all', no AFTER MATCH SKIP)"
    within = analysis.pattern.within
    if within is not None and within.exclusive:
        return "its windows are inclusive (last - first <= W): drop EXCLUSIVE"
    return None


def identity(analysis: Analysis) -> Identity:
    """The query's memo of an event's partition key and equivalence values: its arcs ask
    it, and so may the runtime for the partition key (`Identity.key_of`)."""
    partition = analysis.partition
    return Identity(
        partition.key if partition is not None else None,
        equivalence_values(analysis.equivalences),
    )


def compile_sase(analysis: Analysis, window: float | None, name: str, identify: Identity) -> Afa:
    """The AFA of a query the NFA^b runs (see the module docstring); its arcs read an
    event's key and equivalence values through `identify`."""
    automaton = build(analysis)
    code = compile_automaton(analysis, automaton)
    partition = analysis.partition
    states = [f"s{state.id}" for state in automaton.states]
    finals: dict[tuple[str, ...], str] = {}
    arcs: list[Arc] = []
    for state in automaton.states:
        direct: list[Fire] = []
        for position, edge in enumerate(state.edges):
            fire = _take(automaton, edge, code.edges[state.id, position], identify, state.id == 0)
            types = automaton.variables[edge.variable].types
            if edge.target is not None:
                arcs.append(
                    Arc(
                        f"{edge.kind} {edge.variable}",
                        states[state.id],
                        states[edge.target],
                        fire,
                        bind=edge.variable,
                        text=edge.formula,
                        types=types,
                    )
                )
                if edge.direct:
                    direct.append(fire)
            if edge.completes:
                final = finals.setdefault(edge.bound, f"F{len(finals) or ''}")
                arcs.append(
                    Arc(
                        f"{edge.kind} {edge.variable}",
                        states[state.id],
                        final,
                        _completing(fire, code.edges[state.id, position]),
                        bind=edge.variable,
                        text=edge.formula,
                        types=types,
                    )
                )
                if edge.direct and edge.target is None:
                    direct.append(fire)
        if state.id:
            ignore = _ignore(analysis.strategy, direct, identify, partition is not None)
            if ignore is not None:
                arcs.append(
                    Arc(
                        "ignore",
                        states[state.id],
                        states[state.id],
                        ignore,
                        bind=None,
                        text=_IGNORE_TEXT[analysis.strategy],
                        # it keeps any event no take can: under partition contiguity, an
                        # event of the run's own partition ends the run whatever its type
                        ignorable=analysis.strategy != "partition_contiguity",
                    )
                )
    initial: Register = (code.initial, None, None)
    return Afa(
        name,
        (*states, *finals.values()),
        tuple(arcs),
        states[0],
        frozenset(finals.values()),
        ("V", "key", "values"),
        initial,
        window,
        {final: bound for bound, final in finals.items()},
    )


_IGNORE_TEXT = {
    "skip_till_any_match": "any event",
    "skip_till_next_match": "no direct take fires",
    "partition_contiguity": "an event of another partition",
}


class Identity:
    """An event's partition key and equivalence values, remembered for the last event asked
    about: every arc asks, for every pmatch, and the runtime asks for the key (a pure memo;
    it holds nothing a state needs)."""

    def __init__(
        self,
        key: Callable[[Any], Hashable | None] | None,
        values: Callable[[Any], Any],
    ) -> None:
        self.key = key
        self.values = values
        self.last: tuple[Any, Hashable | None, Any] = (None, None, None)

    def __call__(self, event: Any) -> tuple[Hashable | None, Any]:
        last = self.last
        if last[0] is not event:
            key = None if self.key is None else self.key(event)
            last = self.last = (event, key, self.values(event))
        return last[1], last[2]

    def key_of(self, event: Any) -> Hashable | None:
        """The event's partition key (the plan's `partition_key`)."""
        return self(event)[0]


def _take(
    automaton: Automaton,
    edge: Edge,
    code: EdgeCode,
    identify: Identity,
    begins: bool,
) -> Fire:
    """The fence and transfer of an NFA^b edge over the register (V, key, values)."""
    types = automaton.variables[edge.variable].types
    local, check, update, late = code.local, code.check, code.update, code.late
    # The last call's arguments and result: the skip-till-next-match ignore arc asks the
    # direct takes again about the event and register they were just asked about (never
    # about a begin: the start state has no ignore arc).
    memo: list[Any] = [None, None, None]

    def fire(event: Any, register: Register) -> Register | None:
        if memo[0] is event and memo[1] is register:
            known: Register | None = memo[2]
            return known
        memo[0], memo[1] = event, register
        memo[2] = after = _fire(event, register)
        return after

    def _fire(event: Any, register: Register) -> Register | None:
        if types is not None and event.type not in types:
            return None
        vector, run_key, run_values = register
        event_key, event_values = identify(event)
        if begins:
            if event_values is None:
                return None
            run_key, run_values = event_key, event_values
        elif run_values != event_values or run_key != event_key:
            return None
        if local is not None and not local(event):
            return None
        if check is not None and not check(event, vector):
            return None
        after = vector if update is None else update(vector, event)
        if late is not None and not late(event, after):
            return None
        return (after, run_key, run_values)

    return _fire if begins else fire


def _completing(take: Fire, code: EdgeCode) -> Fire:
    """An edge's fire into the final state: also the conditions decided at completion."""
    final = code.final
    if final is None:
        return take

    def fire(event: Any, register: Register) -> Register | None:
        after = take(event, register)
        if after is None or not final(event, after[0]):
            return None
        return after

    return fire


def _ignore(
    strategy: str,
    direct: list[Fire],
    identify: Identity,
    partitioned: bool,
) -> Fire | None:
    """The strategy's ignore self-loop (None: the strategy never ignores)."""
    if strategy == "skip_till_any_match":
        return _keep
    if strategy == "skip_till_next_match":

        def unless_taken(event: Any, register: Register) -> Register | None:
            for fire in direct:
                if fire(event, register) is not None:
                    return None
            return register

        return unless_taken
    if strategy == "partition_contiguity" and partitioned:

        def other_partition(event: Any, register: Register) -> Register | None:
            return register if identify(event)[0] != register[1] else None

        return other_partition
    return None


def _keep(event: Any, register: Register) -> Register:
    return register
