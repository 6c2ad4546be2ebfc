"""The `nfa` plan: SASE+ NFA^b runs over a shared versioned buffer, with run merging.

Compilation follows the paper's steps: the automaton's states and edges from the PATTERN
clause with each condition instance placed where it becomes decidable (`automaton.py`), every
edge's formulas compiled into Python functions over the computation state vector V
(`vector.py`). At run time a partition's state holds its runs, the shared versioned buffer
(`buffer.py`) and the events still needed. On each event every run evaluates the edges of its
state for the event's type, splits where several hold, and ignores the event as the strategy
allows; the window is tested on every edge. Runs that end in the same state with the same
partition, equivalence values and masked V are merged. A completed run's matches are read from
the buffer along its version; negation (a nested query over the events between) and the output
format are then applied as `reference` applies them.

>>> import kleene
>>> events = [{"type": "Stock", "ts": t, "symbol": "A", "price": p, "volume": v}
...           for t, (p, v) in enumerate([(10, 900), (12, 800), (11, 700), (13, 100)])]
>>> query = '''PATTERN SEQ(Stock+ a[], Stock b)
...     WHERE skip_till_next_match { [symbol] AND a[i].price > a[i-1].price
...                                  AND b.volume < a[a.len].volume }'''
>>> [m.ids() for m in kleene.match(query, events, plan="nfa")][:3]
[{'a': (0,), 'b': (1,)}, {'a': (0, 1), 'b': (2,)}, {'a': (1,), 'b': (2,)}]
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from kleene.compiler.analysis import Analysis
from kleene.compiler.evaluate import shared_values
from kleene.compiler.options import Options
from kleene.events import Event, Watermark
from kleene.matches import Match
from kleene.plans.base import Plan, register
from kleene.plans.nfa.automaton import Automaton, Edge, build
from kleene.plans.nfa.buffer import Buffer, Entry, Version
from kleene.plans.nfa.vector import Compiled, EdgeCode, compile_automaton
from kleene.plans.reference.checks import Binding, Checks, as_events
from kleene.plans.reference.finalize import Finalizer, Pending
from kleene.plans.reference.stream import Stream

__all__ = ["Nfa", "NfaState", "Run", "moves"]


class _Node:
    """A state at run time: its edges by event type, and how to read its merge key."""

    __slots__ = ("by_type", "id", "label", "mask")

    def __init__(
        self,
        id: int,  # noqa: A002 - the automaton state's id
        label: str,
        by_type: dict[str, tuple[tuple[Edge, EdgeCode, _Node | None], ...]],
        mask: Callable[[tuple[Any, ...]], Any],
    ) -> None:
        self.id = id
        self.label = label
        self.by_type = by_type
        self.mask = mask


class Run:
    """A run's computation state: where it stands, V, partition and equivalence values, the
    youngest start time and its position, the oldest start position (for pruning), its
    version, how many branches it has split off, and its last entry in the buffer."""

    __slots__ = (
        "children",
        "horizon",
        "key",
        "last",
        "node",
        "origin",
        "start",
        "values",
        "vector",
        "version",
    )

    def __init__(
        self,
        node: _Node,
        vector: tuple[Any, ...],
        key: Hashable | None,
        values: tuple[Hashable, ...],
        start: float,
        origin: int,
        horizon: int,
        version: Version,
        last: Entry | None,
    ) -> None:
        self.node = node
        self.vector = vector
        self.key = key
        self.values = values
        self.start = start
        self.origin = origin
        self.horizon = horizon
        self.version = version
        self.children = 0
        self.last = last


@dataclass
class NfaState:
    """One partition's runs, buffer, needed events and undecided candidates."""

    stream: Stream = field(default_factory=Stream)
    runs: list[Run] = field(default_factory=list)
    buffer: Buffer = field(default_factory=Buffer)
    pending: Pending = field(default_factory=Pending)
    versions: int = 0
    kept: int = 64
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("runs_created", "runs_merged", "edge_evaluations", "final_takes", "completions"), 0
        )
    )


@register
class Nfa(Plan):
    """SASE+ NFA^b with a shared versioned buffer and merging of equivalent runs."""

    name = "nfa"

    def __init__(self, analysis: Analysis, options: Options) -> None:
        super().__init__(analysis, options)
        self.automaton: Automaton = build(analysis)
        self.code: Compiled = compile_automaton(analysis, self.automaton)
        self.checks = Checks(analysis)
        self.finalizer = Finalizer(
            analysis, self.checks, self.window, options.output == "non_overlapping"
        )
        self.merge = options.merge
        self.construct = options.construct
        strategy = analysis.strategy
        self.partition = analysis.partition
        self.ignore_always = strategy == "skip_till_any_match"
        self.ignore_unless_taken = strategy == "skip_till_next_match"
        self.ignore_other_keys = strategy == "partition_contiguity" and self.partition is not None
        self.equivalences = analysis.equivalences
        self.negated = bool(analysis.negations)
        self.nodes = self._nodes()
        self.start_node = self.nodes[0]
        self._last: tuple[Event | None, Hashable | None] = (None, None)
        self._values = _equivalence(self.equivalences)

    @classmethod
    def unsupported(cls, analysis: Analysis, options: Options) -> str | None:
        if not options.construct and options.output != "all":
            return (
                "construct=False needs output='all' "
                "(non-overlapping output prunes runs by the matches it reports)"
            )
        return None

    def _nodes(self) -> list[_Node]:
        variables = self.automaton.variables
        nodes: list[_Node] = []
        for state in self.automaton.states:
            mask = self.code.masks[state.id]
            getter: Callable[[tuple[Any, ...]], Any] = (
                operator.itemgetter(*mask) if mask else _nothing
            )
            nodes.append(_Node(state.id, state.label, {}, getter))
        for state in self.automaton.states:
            by_type: dict[str, list[tuple[Edge, EdgeCode, _Node | None]]] = {}
            for position, edge in enumerate(state.edges):
                code = self.code.edges[state.id, position]
                target = None if edge.target is None else nodes[edge.target]
                for event_type in sorted(variables[edge.variable].types):
                    by_type.setdefault(event_type, []).append((edge, code, target))
            nodes[state.id].by_type = {t: tuple(moves) for t, moves in by_type.items()}
        return nodes

    @property
    def partition_key(self) -> Callable[[Event], Hashable | None] | None:
        """The base plan's key, remembering the last event's: `step` needs it too."""
        if super().partition_key is None:
            return None
        return self._key

    def _key(self, event: Event) -> Hashable | None:
        last = self._last
        if last[0] is event:
            return last[1]
        assert self.partition is not None
        key = self.partition.key(event)
        self._last = (event, key)
        return key

    def describe(self) -> str:
        """The automaton, then the columns of V and the ones each state's merging compares."""
        lines = ["automaton:"]
        lines += [f"  {line}" for line in self.automaton.describe().splitlines()]
        slots = self.code.slots
        lines.append(f"{'vector V:':<16}{', '.join(map(str, slots)) or 'empty'}")
        lines.append("merge on:" if self.merge else f"{'merge on:':<16}off (merge=False)")
        if self.merge:
            for state in self.automaton.states:
                columns = [str(slots[c]) for c in self.code.masks[state.id]]
                lines.append(f"  {state.label}: state, key{''.join(', ' + c for c in columns)}")
        return "\n".join(lines)

    def dot(self) -> str:
        return self.automaton.dot(self.analysis.strategy)

    def new_state(self) -> NfaState:
        return NfaState()

    def live_runs(self, state: NfaState) -> int:
        return len(state.runs)

    def counters(self, state: NfaState) -> dict[str, int]:
        return {**state.counters, "buffer_writes": state.buffer.writes}

    # -- one event ----------------------------------------------------------------------

    def step(self, state: NfaState, event: Event) -> list[Match]:
        stream = state.stream
        position = stream.append(event)
        t = event.t
        key = None if self.partition is None else self._key(event)
        values = self._values(event)
        window = self.window
        buffer = state.buffer
        event_type = event.type
        survivors: list[Run] = []
        completed: list[Binding] = []
        evaluations = 0
        created = 0
        finals = 0
        horizon = position + 1
        for run in state.runs:
            if window is not None and t - run.start > window:
                continue
            branches: list[tuple[Edge, Any, _Node]] | None = None
            taken = False
            if run.key == key and run.values == values:
                for edge, code, target in run.node.by_type.get(event_type, ()):
                    evaluations += 1
                    if code.local is not None and not code.local(event):
                        continue
                    if code.check is not None and not code.check(event, run.vector):
                        continue
                    vector = run.vector if code.update is None else code.update(run.vector, event)
                    if code.late is not None and not code.late(event, vector):
                        continue
                    if edge.direct:
                        taken = True
                    if edge.completes and (code.final is None or code.final(event, vector)):
                        finals += 1
                        if self.construct:
                            self._complete(run, edge, position, event, completed, buffer)
                    if target is not None:
                        if branches is None:
                            branches = []
                        branches.append((edge, vector, target))
            if self.ignore_always:
                ignored = True
            elif self.ignore_unless_taken:
                ignored = not taken
            else:
                ignored = self.ignore_other_keys and key != run.key
            if ignored:
                survivors.append(run)
                horizon = min(horizon, run.horizon)
            if branches is not None:
                created += len(branches)
                if not ignored and len(branches) == 1:
                    # the run goes on one way: it keeps its version
                    edge, vector, target = branches[0]
                    successor = self._spawn(
                        buffer, run, edge, vector, target, run.version, position, event, survivors
                    )
                    successor.children = run.children
                else:
                    # the run splits: every branch, the ignoring one too, gets a new version,
                    # so a version labels only pointers written before its branch split off
                    base = run.version
                    for edge, vector, target in branches:
                        version = (*base, run.children)
                        run.children += 1
                        self._spawn(
                            buffer, run, edge, vector, target, version, position, event, survivors
                        )
                    if ignored:
                        run.version = (*base, run.children)
                        run.children = 0
                horizon = min(horizon, run.horizon)
        if values is not None:
            fresh = Run(
                self.start_node, self.code.initial, key, values, t, position, position, (), None
            )
            evaluations += len(self.start_node.by_type.get(event_type, ()))
            for edge, vector, target, completes in moves(self.start_node, fresh.vector, event):
                if completes:
                    finals += 1
                    if self.construct:
                        self._complete(fresh, edge, position, event, completed, buffer)
                if target is not None:
                    state.versions += 1
                    version = (state.versions,)
                    last = buffer.add(edge.stack, edge.variable, position, event, version, None)
                    survivors.append(
                        Run(target, vector, key, values, t, position, position, version, last)
                    )
                    created += 1
                    horizon = min(horizon, position)
        counters = state.counters
        counters["edge_evaluations"] += evaluations
        counters["runs_created"] += created
        counters["final_takes"] += finals
        if self.merge and len(survivors) > 1:
            survivors = self._merged(state, survivors)
        state.runs = survivors
        if completed:
            counters["completions"] += len(completed)
            self.finalizer.add(
                state.pending,
                [self.finalizer.candidate(b, stream, self.partition_key) for b in completed],
            )
        if state.pending.undecided or state.pending.queues:
            matches = self._settle(state, Watermark(t, inclusive=False))
        else:
            matches = []
            if len(stream.events) > state.kept:
                self._forget(state, Watermark(t, inclusive=False))
        buffer.prune(horizon)
        return matches

    @staticmethod
    def _spawn(
        buffer: Buffer,
        run: Run,
        edge: Edge,
        vector: tuple[Any, ...],
        target: _Node,
        version: Version,
        position: int,
        event: Event,
        survivors: list[Run],
    ) -> Run:
        """The run after taking the event along `edge`, its event selected into the buffer."""
        last = buffer.add(edge.stack, edge.variable, position, event, version, run.last)
        successor = Run(
            target, vector, run.key, run.values, run.start, run.origin, run.horizon, version, last
        )
        survivors.append(successor)
        return successor

    def _complete(
        self,
        run: Run,
        edge: Edge,
        position: int,
        event: Event,
        completed: list[Binding],
        buffer: Buffer,
    ) -> None:
        """Read the matches a run completes on this take from the buffer."""
        window = self.window
        since = None if window is None else event.t - window
        for path in buffer.paths(run.last, run.version, since):
            if since is not None and path and path[0].event.t < since:
                continue  # one of the merged runs has expired
            bound: dict[str, list[int]] = {name: [] for name in edge.bound}
            for variable, entries in groupby(path, _variable):
                bound[variable].extend(map(_position, entries))
            bound[edge.variable].append(position)
            completed.append({name: tuple(ps) for name, ps in bound.items()})

    def _merged(self, state: NfaState, runs: list[Run]) -> list[Run]:
        """Merge runs with equal state, partition, equivalence values and masked V."""
        groups: dict[Hashable, list[Run]] = {}
        for run in runs:
            node = run.node
            groups.setdefault((node.id, run.key, run.values, node.mask(run.vector)), []).append(run)
        if len(groups) == len(runs):
            return runs
        merged: list[Run] = []
        for group in groups.values():
            if len(group) == 1:
                merged.append(group[0])
                continue
            state.versions += 1
            version = (state.versions,)
            join = state.buffer.join(version, [(r.last, r.version, r.start) for r in group])
            youngest = max(group, key=lambda r: r.start)
            merged.append(
                Run(
                    youngest.node,
                    youngest.vector,
                    youngest.key,
                    youngest.values,
                    youngest.start,
                    max(r.origin for r in group),
                    min(r.horizon for r in group),
                    version,
                    join,
                )
            )
            state.counters["runs_merged"] += len(group)
        return merged

    # -- time ---------------------------------------------------------------------------

    def advance(self, state: NfaState, watermark: Watermark) -> list[Match]:
        if self.window is not None:
            state.runs = [r for r in state.runs if watermark.t - r.start <= self.window]
        return self._settle(state, watermark)

    def deadline(self, state: NfaState) -> float | None:
        return self.finalizer.deadline(state.pending)

    def _settle(self, state: NfaState, watermark: Watermark) -> list[Match]:
        stream = state.stream
        pending = state.pending
        reported = self.finalizer.settle(pending, stream, watermark)
        matches = [Match(as_events(c.binding, stream), self.pattern_name) for c in reported]
        if reported and self.options.output == "non_overlapping":
            # a run that started before a reported match ended can only overlap it
            by_key = self.partition_key is not None
            ends = pending.last_end
            state.runs = [
                r for r in state.runs if r.origin > ends.get(r.key if by_key else None, -1)
            ]
        self._forget(state, watermark)
        return matches

    def _forget(self, state: Any, watermark: Watermark) -> None:
        """Drop the events no run, undecided candidate or negation can still need."""
        stream = state.stream
        needed = min((run.horizon for run in state.runs), default=stream.end)
        pending = state.pending
        for candidate in pending.undecided:
            needed = min(needed, candidate.first)
        for queue in pending.queues.values():
            for candidate in queue:
                needed = min(needed, candidate.first)
        if needed >= stream.end:
            cut = watermark.t if stream.end == stream.base else stream[stream.end - 1].t
        else:
            cut = stream[needed].t
        if self.negated and self.window is not None:
            cut = min(cut, watermark.t - 2 * self.window)  # a negation looks back a window
        stream.drop_before(cut)
        state.kept = 2 * len(stream.events) + 64  # forget again when the stream has doubled


def moves(
    node: _Node, vector: tuple[Any, ...], event: Event
) -> Iterator[tuple[Edge, tuple[Any, ...], _Node | None, bool]]:
    """The takes a run standing at `node` with `vector` may make on `event`: each edge whose
    formulas hold, with V after the take, the state it leads to (None: it can only complete)
    and whether the run completes a match there."""
    for edge, code, target in node.by_type.get(event.type, ()):
        if code.local is not None and not code.local(event):
            continue
        if code.check is not None and not code.check(event, vector):
            continue
        after = vector if code.update is None else code.update(vector, event)
        if code.late is not None and not code.late(event, after):
            continue
        completes = edge.completes and (code.final is None or code.final(event, after))
        yield edge, after, target, completes


_variable = operator.attrgetter("variable")
_position = operator.attrgetter("position")


def _nothing(vector: tuple[Any, ...]) -> None:
    return None


def _equivalence(attrs: tuple[str, ...]) -> Callable[[Event], tuple[Hashable, ...] | None]:
    """The event's values of the equivalence attributes (None: it lacks one)."""
    if not attrs:
        return lambda event: ()
    if len(attrs) == 1 and attrs[0] not in ("ts", "type", "id"):
        (name,) = attrs

        def one(event: Event) -> tuple[Hashable, ...] | None:
            value = event.attrs.get(name)
            if value is None:
                return None
            return (tuple(value) if isinstance(value, list) else value,)

        return one
    return lambda event: shared_values([event], attrs)
