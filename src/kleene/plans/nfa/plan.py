"""The `nfa` plan: SASE+ NFA^b runs over a shared versioned buffer, with run merging.

Compilation follows the paper's steps: the automaton's states and edges from the PATTERN
clause with each condition instance placed where it becomes decidable (`automaton.py`), every
edge's formulas compiled into Python functions over the computation state vector V
(`vector.py`). At run time a partition's state holds its runs, the shared versioned buffer
(`buffer.py`) and the events still needed. On each event every run evaluates the edges of its
state for the event's type, splits where several hold, and ignores the event as the strategy
allows; the window is tested on every edge. Runs that end in the same state with the same
partition, equivalence values and masked V are merged. A completed run's matches are read from
the buffer along its version. Without negation and with all matches wanted, each is a match at
once; otherwise each is a candidate that the negative components' automata (`negation.py`) and
the output format decide, with `reference`'s finalizer.

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

import math
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from kleene.compiler.analysis import EXTENSIONS, Analysis
from kleene.compiler.evaluate import equivalence_values
from kleene.compiler.options import Options
from kleene.errors import KleeneError
from kleene.events import ATOMS, Event, Watermark
from kleene.language.sase import ast as A
from kleene.matches import Match, Timeout
from kleene.plans.base import Plan, begin_at_first, register
from kleene.plans.common.checks import Checks
from kleene.plans.common.finalize import Candidate, Partition
from kleene.plans.nfa.automaton import LANDINGS, Automaton, Edge, build
from kleene.plans.nfa.buffer import Buffer, Entry, History, Memo, Version, in_order
from kleene.plans.nfa.leaving import NOTHING, OTHERS, OWN, Leaving
from kleene.plans.nfa.negation import NegativeFinalizer
from kleene.plans.nfa.vector import Compiled, Move, Node, compile_automaton

__all__ = ["Nfa", "NfaState", "Run", "moves"]


class Run:
    """A run's computation state: where it stands (a node's index: state holds no
    functions, so it pickles), V, partition and equivalence values, the
    youngest start time and its position, the oldest start position (for pruning), its
    version, how many branches it has split off, its last entry in the buffer and the
    histories it read from there last (a memo, or None)."""

    __slots__ = (
        "children",
        "horizon",
        "key",
        "last",
        "memo",
        "node",
        "origin",
        "start",
        "values",
        "vector",
        "version",
    )

    def __init__(
        self,
        node: int,
        vector: tuple[Any, ...],
        key: Hashable | None,
        values: tuple[Hashable, ...],
        start: float,
        origin: int,
        horizon: int,
        version: Version,
        last: Entry | None,
        memo: Memo | None = None,
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
        self.memo = memo


#: What holds a run that left GREEDY loops without an event (`leaving.py`): the node it
#: left them at, those loops, and those of them that hold it past the first event of its
#: partition (it waits at the element right after them).
Hold = tuple[int, frozenset[str], frozenset[str]]


class Contiguous(Run):
    """A run under Flink's and CORE's rules (`leaving.py`): what it ignored since its last
    take, whether it got where it stands by leaving loops without an event (`landed`: it
    leaves no further), its first event's stream position (`seq`, for a count window),
    whether it stands as a completed match (`done`, for timeouts), and the GREEDY loops that
    hold it (`held`)."""

    __slots__ = ("done", "held", "ignored", "landed", "seq")

    def __init__(
        self,
        node: int,
        vector: tuple[Any, ...],
        key: Hashable | None,
        values: tuple[Hashable, ...],
        start: float,
        origin: int,
        horizon: int,
        version: Version,
        last: Entry | None,
        memo: Memo | None = None,
        seq: int | None = None,
        ignored: int = NOTHING,
        landed: bool = False,
        done: bool = False,
        held: Hold | None = None,
    ) -> None:
        super().__init__(node, vector, key, values, start, origin, horizon, version, last, memo)
        self.seq = seq
        self.ignored = ignored
        self.landed = landed
        self.done = done
        self.held = held

    def moved(
        self, node: int, ignored: int, version: Version | None = None, held: Hold | None = None
    ) -> Contiguous:
        """This run standing elsewhere without a take (its history shared)."""
        return Contiguous(
            node,
            self.vector,
            self.key,
            self.values,
            self.start,
            self.origin,
            self.horizon,
            self.version if version is None else version,
            self.last,
            self.memo,
            self.seq,
            ignored,
            True,
            self.done,
            held,
        )


#: Where a completion's histories are read from when they are read lazily (`step_lazily`):
#: the run's last entry and version, the window's start (None: no WITHIN), its memo, and
#: the edge that completed it.
_Walk = tuple[Entry | None, Version, float | None, Memo | None, Edge]

#: The events a state keeps at least before it forgets the ones nothing needs (a state
#: without runs keeps about this many: every key seen within the window has one).
KEPT = 16


@dataclass
class NfaState(Partition):
    """One partition's needed events, undecided candidates, runs and buffer. An immediate
    plan reads no event back from the stream (a match's events are in the buffer), so its
    stream keeps none and only counts positions (`base`). (On the keyed rally
    query, keeping them cost an event that meets a partition without runs about 1 µs of
    2.6; docs/benchmarks-journal.md.)"""

    runs: list[Run] = field(default_factory=list)
    #: The time of the latest event (a key seen within the window is not idle).
    latest: float = -math.inf
    #: The `edge_evaluations` counter, kept apart: a plain field costs less per event.
    evaluations: int = 0
    buffer: Buffer = field(default_factory=Buffer)
    versions: int = 0
    kept: int = KEPT
    begin: bool = True  # may an event begin a run (`matches_from`: only the first)
    #: Partial matches whose window closed, not reported yet (with timeouts=True).
    timeouts: list[Timeout] = field(default_factory=list)
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("runs_created", "runs_merged", "final_takes", "completions"), 0
        )
    )

    def __getstate__(self) -> dict[str, Any]:
        """The fields, after every buffer entry in pointer order (`in_order`), so that a
        state of long histories pickles without deep recursion."""
        buffer = self.buffer
        roots = [
            *(run.last for run in self.runs),
            *(run.memo.entry for run in self.runs if run.memo is not None),
            *buffer.joins,
            *(e for entries in buffer.stacks.values() for e in entries),
        ]
        return {"_entries": in_order(roots), **self.__dict__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.pop("_entries", None)
        # a state saved before `evaluations` was a field counted them in `counters`
        state["evaluations"] = state.get("evaluations", 0) + state.get("counters", {}).pop(
            "edge_evaluations", 0
        )
        self.__dict__.update(state)


@register
class Nfa(Plan[NfaState]):
    """SASE+ NFA^b with a shared versioned buffer and merging of equivalent runs."""

    name = "nfa"
    analysis: Analysis
    extensions = frozenset(EXTENSIONS)

    def __init__(self, analysis: Analysis, options: Options) -> None:
        super().__init__(analysis, options)
        #: Does a run follow Flink's or CORE's rules (`leaving.py`), or only SASE+'s? (NOT
        #: NEXT, NOT FOLLOWED and CONSUME BY are the finalizer's: they change no run.)
        self.flink = _flink(analysis, options)
        self.automaton: Automaton = build(analysis, leaving=_leaves(analysis, options))
        self.code: Compiled = compile_automaton(analysis, self.automaton)
        self.checks = Checks(analysis, compiled=True)
        self.finalizer = NegativeFinalizer(analysis, self.checks, self.window, options)
        self.merge = options.merge
        self.construct = options.construct
        #: No negation to wait for and every match wanted: a completion is a match at once.
        self.immediate = (
            not analysis.negations
            and options.output == "all"
            and options.selection == "all"
            and self.finalizer.skip is None
            and analysis.consume is None
            and not analysis.freeze
        )
        #: Non-overlapping output without negations reports, of the matches one event
        #: completes, only the first (see `finalize.py`): each run reads only its first
        #: histories from the buffer, not every one (as Flink's skip strategies prune).
        self.first_only = options.output == "non_overlapping" and not analysis.negations
        strategy = analysis.strategy
        self.partition = analysis.partition
        self.keyer = None if self.partition is None else self.partition.keyer
        self.ignore_always = strategy == "skip_till_any_match"
        self.ignore_unless_taken = strategy == "skip_till_next_match"
        self.ignore_other_keys = strategy == "partition_contiguity" and self.partition is not None
        self.equivalences = analysis.equivalences
        self.negated = bool(analysis.negations)
        #: Under OR, branches may bind the same variables (`OR(SEQ(A a, B b), AND(A a, B
        #: b))`): a match may complete along both, and is reported once.
        self.twins = A.contains_or(analysis.structure)
        self.nodes = self._nodes()
        self.start_node = self.nodes[0]
        self.values = equivalence_values(self.equivalences)
        #: Is an event's key its equivalence values, where they are one text or number?
        #: (`[k]` both splits the stream and equates k: the key is then read once.)
        single = None if self.partition is None else self.partition.attribute
        self.key_is_values = single not in (None, "ts", "type", "id") and tuple(
            self.equivalences
        ) == (single,)
        #: The Flink path's tables (None: the plain SASE+ step runs).
        self.leaving: Leaving | None = (
            Leaving(analysis, self.automaton, self.code, self.nodes, _leaves(analysis, options))
            if self.flink
            else None
        )
        leaving = self.leaving
        if leaving is not None and leaving.leaving and analysis.partition:
            # a run leaving loops at another partition's event lands at each place it may
            # wait at with its proceed edges, and one landed run may proceed to where another
            # stands: a match may complete along both, and is reported once (as `reference`
            # reports it)
            self.twins = self.finalizer.twins = True
        #: A run's own matches and timeouts are read one history at a time: under a count
        #: window or timeouts runs are not merged (a merged run would hold histories that
        #: leave the window at other times).
        self.merging = self.merge and not options.timeouts and self.count_window is None
        #: The variables a run at each node has bound (for its timeout).
        self.bound = [s.bound(self.automaton.variables) for s in self.automaton.states]
        if self.flink:
            self.step = self._step_flink  # type: ignore[method-assign]
        if analysis.freeze:
            self._step_unfrozen = self.step
            self.step = self._step_freezing  # type: ignore[method-assign]

    @classmethod
    def unsupported(cls, analysis: Analysis, options: Options) -> str | None:
        if A.until_in_and(analysis.structure):
            return (
                "an UNTIL loop inside AND stops at an event another part takes "
                "(plan 'reference' runs it)"
            )
        if _leaves(analysis, options) and _contains_and(analysis.structure):
            return (
                "a run leaving a loop or an optional element without an event (relaxed "
                "contiguity, skip till any match with GREEDY or UNTIL) inside or beside an "
                "AND (plan 'reference' runs it)"
            )
        if not options.construct and options.timeouts:
            return "construct=False builds no match, and no timed-out partial match either"
        if not options.construct and options.output != "all":
            return (
                "construct=False needs output='all' "
                "(non-overlapping output prunes runs by the matches it reports)"
            )
        return None

    def _nodes(self) -> list[Node]:
        variables = self.automaton.variables
        nodes: list[Node] = []
        for state in self.automaton.states:
            mask = self.code.masks[state.id]
            getter: Callable[[tuple[Any, ...]], Any] = (
                operator.itemgetter(*mask) if mask else _nothing
            )
            nodes.append(Node(state.id, state.label, {}, getter))
        named = sorted({t for v in variables.values() for t in v.types or ()})
        for state in self.automaton.states:
            by_type: dict[str, list[Move]] = {}
            other: list[Move] = []
            for position, edge in enumerate(state.edges):
                code = self.code.edges[state.id, position]
                move = Move(
                    edge,
                    code.local,
                    code.check,
                    code.update,
                    code.late,
                    code.final,
                    edge.target,
                    edge.direct,
                    edge.completes,
                )
                types = variables[edge.variable].types
                if types is None:
                    other.append(move)
                for event_type in named if types is None else sorted(types):
                    by_type.setdefault(event_type, []).append(move)
            nodes[state.id].by_type = {t: tuple(moves) for t, moves in by_type.items()}
            nodes[state.id].other = tuple(other)
        return nodes

    def describe(self) -> str:
        """The automaton, then the columns of V and the ones each state's merging compares."""
        lines = ["automaton:"]
        lines += [f"  {line}" for line in self.automaton.describe().splitlines()]
        for name, negative in self.finalizer.negatives.items():
            lines.append(f"negation {name} (its matches spoil a candidate):")
            lines.append(f"  {negative.describe()}")
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
        return NfaState(buffer=Buffer(positions=not self.immediate))

    def live_runs(self, state: NfaState) -> int:
        return len(state.runs)

    def shed(self, state: NfaState, keep: int) -> int:
        """Keep the `keep` youngest runs (latest start; the buffer forgets the rest as it
        prunes)."""
        dropped = len(state.runs) - keep
        if dropped <= 0:
            return 0
        state.runs = sorted(state.runs, key=_run_start)[dropped:]
        return dropped

    def idle(self, state: NfaState, watermark: Watermark) -> bool:
        if self.options.timeouts and (state.runs or state.timeouts):
            return False  # they time out at their deadline, which comes first
        starts = [run.start for run in state.runs]
        if not self._expired(starts, watermark) or not self.finalizer.quiet(state, watermark):
            return False
        # a key seen within the window is kept: its next event would make the state anew
        # (on the keyed rally query, one new state per event went to eviction and back)
        window = self.window
        return window is None or watermark.settles(state.latest + window)

    def _expired(self, starts: list[float], watermark: Watermark) -> bool:
        """Has the window passed the start of every run? (A run is otherwise only dropped
        by the next event of its key, which may never come.)"""
        window = self.window
        if window is None:
            return not starts
        return all(watermark.t - start > window for start in starts)

    def counters(self, state: NfaState) -> dict[str, int]:
        return {
            **state.counters,
            "edge_evaluations": state.evaluations,
            "buffer_writes": state.buffer.writes,
        }

    def matches_from(self, events: Sequence[Event]) -> list[Match]:
        """Only the first event begins a run: every match found starts there."""
        return begin_at_first(self, events)

    # -- one event ----------------------------------------------------------------------

    def step(self, state: NfaState, event: Event, walks: list[_Walk] | None = None) -> list[Match]:
        """`Plan.step`; given `walks` (see `step_lazily`), a completion is not read from the
        buffer but noted there, as where to read its histories from.

        Written whole: it is the plan's hot path, and its end moved into a method of its
        own measured 2 % slower on the CORE workload's P0 (103.7k against 105.8k events/s,
        best of 5 runs, twice; docs/benchmarks-journal.md)."""
        stream = state.stream
        start = self.start_node
        begun = None  # the takes that begin a run, when found before
        if not state.runs and (self.immediate or not state.pending):
            # idle, the common case of selective queries: unless the event begins a run,
            # it only needs a position (each take's own test, `local`, says no to most)
            opening = start.by_type.get(event.type, start.other) if state.begin else ()
            for take in opening:
                if take[1] is None or take[1](event):
                    values = self.values(event)
                    if values is not None:
                        begun = moves(start, self.code.initial, event)
                    break
            if not begun:
                state.latest = event.t
                if self.immediate:  # its stream only counts positions (`NfaState`)
                    position = stream.base
                    stream.base = position + 1
                else:
                    kept = stream.events
                    kept.append(event)
                    stream.times.append(event.t)
                    position = stream.base + len(kept) - 1
                    if len(kept) > state.kept:
                        self._forget(state, Watermark(event.t, inclusive=False))
                if opening:
                    state.evaluations += len(opening)
                buffer = state.buffer
                if position >= buffer.first:
                    buffer.prune(position + 1)
                return []
        else:
            values = self.values(event)
        t = state.latest = event.t
        if self.immediate:
            position = stream.base
            stream.base = position + 1
        else:
            position = stream.append(event)
        key = (
            values
            if self.key_is_values and (values is None or values[0].__class__ in ATOMS)
            else None
            if self.keyer is None
            else self.keyer(event)
        )
        window = self.window
        buffer = state.buffer
        event_type = event.type
        survivors: list[Run] = []
        completed: list[tuple[History, Edge]] = []
        nodes = self.nodes
        evaluations = 0
        created = 0
        finals = 0
        cut = False
        horizon = position + 1
        construct = self.construct
        ignore_always, ignore_unless_taken = self.ignore_always, self.ignore_unless_taken
        for run in state.runs:
            if window is not None and t - run.start > window:
                continue
            # the edges taken to a state: the first one in locals, any further in `more`
            first: tuple[Edge, Any, int] | None = None
            more: list[tuple[Edge, Any, int]] | None = None
            taken = False
            if run.key == key and run.values == values:
                for (
                    edge,
                    local,
                    check,
                    update,
                    late,
                    final,
                    target,
                    direct,
                    completes,
                ) in (node := nodes[run.node]).by_type.get(event_type, node.other):
                    evaluations += 1
                    if local is not None and not local(event):
                        continue
                    if check is not None and not check(event, run.vector):
                        continue
                    vector = run.vector if update is None else update(run.vector, event)
                    if late is not None and not late(event, vector):
                        continue
                    if direct:
                        taken = True
                    if completes and (final is None or final(event, vector)):
                        finals += 1
                        if construct and self._complete(
                            run, edge, position, event, completed, state, walks
                        ):
                            cut = True
                    if target is not None:
                        if first is None:
                            first = (edge, vector, target)
                        elif more is None:
                            more = [(edge, vector, target)]
                        else:
                            more.append((edge, vector, target))
            if ignore_always:
                ignored = True
            elif ignore_unless_taken:
                ignored = not taken
            else:
                ignored = self.ignore_other_keys and key != run.key
            if run.horizon < horizon and (ignored or first is not None):
                horizon = run.horizon
            if ignored:
                survivors.append(run)
            if first is None:
                continue
            if not ignored and more is None:
                # the run goes on one way: it keeps its version (and its object)
                created += 1
                edge, run.vector, run.node = first
                run.last = buffer.add(
                    edge.stack, edge.variable, position, event, run.version, run.last
                )
                survivors.append(run)
                continue
            # the run splits: every branch, the ignoring one too, gets a new version, so a
            # version labels only pointers written before its branch split off
            branches = [first] if more is None else [first, *more]
            created += len(branches)
            base = run.version
            for edge, vector, target in branches:
                version = (*base, run.children)
                run.children += 1
                self._spawn(buffer, run, edge, vector, target, version, position, event, survivors)
            if ignored:
                run.version = (*base, run.children)
                run.children = 0
        if values is not None and state.begin and (begins := _moves(start, event_type)) is not None:
            evaluations += len(begins)
            initial = self.code.initial
            if begun is None:
                begun = moves(start, initial, event)
            for edge, vector, target, completes in begun:
                if completes:
                    finals += 1
                    if construct:
                        fresh = Run(0, initial, key, values, t, position, position, (), None)
                        if self._complete(fresh, edge, position, event, completed, state, walks):
                            cut = True
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
        state.evaluations += evaluations
        if created:
            counters["runs_created"] += created
        if finals:
            counters["final_takes"] += finals
        if cut:
            counters["cut_events"] = counters.get("cut_events", 0) + 1
        if self.merge and len(survivors) > 1:
            survivors = self._merged(state, survivors)
        state.runs = survivors
        found: list[Match] = []
        if completed:
            counters["completions"] += len(completed)
            if self.immediate:
                found = [self._match(history, edge, event) for history, edge in completed]
                if self.twins:
                    found = list({_identity(m.bindings): m for m in found}.values())
            else:
                self.finalizer.add(
                    state.pending,
                    [self._candidate(state, h, edge, position, event) for h, edge in completed],
                )
        if not self.immediate and state.pending:  # (immediate: nothing is ever pending)
            matches = self._settle(state, Watermark(t, inclusive=False))
        else:
            matches = found
            if len(stream.events) > state.kept:
                self._forget(state, Watermark(t, inclusive=False))
        if horizon > buffer.first:
            buffer.prune(horizon)
        if window is not None and len(buffer.joins) > buffer.kept:
            buffer.expire(t - window)
        return matches

    def _step_flink(
        self, state: NfaState, event: Event, walks: list[_Walk] | None = None
    ) -> list[Match]:
        """`step` under Flink's and CORE's rules (`leaving.py`): per-edge strategies, runs
        that leave loops and optional elements without an event, UNTIL and GREEDY loops,
        count windows, timeouts."""
        if self.count_window is not None and event.seq is None:
            raise KleeneError(
                "a count window (WITHIN n EVENTS) measures each event's position in the "
                "stream, which kleene.Engine gives it (Event.with_seq); this event has none"
            )
        if not state.runs and (self.immediate or not state.pending):
            if not state.begin:
                return Nfa.step(self, state, event)  # idle, and it begins nothing: passes by
            for take in self.start_node.by_type.get(event.type, self.start_node.other):
                if take.local is None or take.local(event):
                    break
            else:
                return Nfa.step(self, state, event)
        stream = state.stream
        values = self.values(event)
        t = state.latest = event.t
        if self.immediate:
            position = stream.base
            stream.base = position + 1
        else:
            position = stream.append(event)
        key = (
            values
            if self.key_is_values and (values is None or values[0].__class__ in ATOMS)
            else None
            if self.keyer is None
            else self.keyer(event)
        )
        leaving = self.leaving
        assert leaving is not None, "the Flink path runs with its tables"
        buffer = state.buffer
        construct = self.construct
        survivors: list[Run] = []
        completed: list[tuple[History, Edge]] = []
        expired: list[Contiguous] = []
        evaluations = created = finals = 0
        cut = False
        horizon = position + 1
        runs: list[Contiguous] = state.runs  # type: ignore[assignment]
        window, count, seq = self.window, self.count_window, event.seq
        gated, other, always, ways = leaving.gated, leaving.other, leaving.always, leaving.ways
        event_type = event.type
        for run in runs:
            if (window is not None and t - run.start > window) or (
                count is not None and seq - run.seq > count  # type: ignore[operator]
            ):
                expired.append(run)
                continue
            node = run.node
            own = run.key == key
            same = own and run.values == values
            held = run.held
            if held is not None and same:
                left_at, loops, later = held
                if run.ignored != OWN:  # (a loop whose UNTIL stops at its first event lets go)
                    loops = leaving.unstopped(left_at, loops, event, run.vector)
                if loops and leaving.holding(left_at, loops, event, run.vector):
                    continue  # a GREEDY loop it left could take the event: it ends
                loops &= later
                run.held = (left_at, loops, loops) if loops else None
            found: list[tuple[Move, tuple[Any, ...]]] = []
            taken: AbstractSet[str] = _EMPTY
            if same and gated[node].get(event_type, other[node]):
                found, _, taken, evaluated = leaving.moves(node, run.vector, run.ignored, event)
                evaluations += evaluated
            ignored = always[node] or leaving.ignorable(node, same, own, event, taken, run.vector)
            level = OWN if own else max(run.ignored, OTHERS)
            branches: list[tuple[Edge, tuple[Any, ...], int, bool]] = []
            for move, vector in found:
                done = move.completes and (move.final is None or move.final(event, vector))
                if done:
                    finals += 1
                    if construct and self._complete(
                        run, move.edge, position, event, completed, state, walks
                    ):
                        cut = True
                if move.target is not None:
                    branches.append((move.edge, vector, move.target, done))
            landings: list[tuple[int, Hold | None]] = []
            # (a run that ignored an event of its partition lost its way out, and one that
            # landed here leaves no further)
            if ways[node] and not run.landed and run.ignored != OWN and (own or not ignored):
                for way in ways[node]:
                    greedy = way.greedy
                    if greedy and any(m.edge.variable in greedy for m, _ in found):
                        continue  # the GREEDY loop it leaves takes the event
                    if way.check is not None and not way.check(event, run.vector):
                        continue
                    target = way.target
                    there: AbstractSet[str] = _EMPTY
                    if same and not always[target] and gated[target].get(event_type, other[target]):
                        _, _, there, evaluated = leaving.moves(target, run.vector, NOTHING, event)
                        evaluations += evaluated
                    if always[target] or leaving.ignorable(
                        target, same, own, event, there, run.vector
                    ):
                        hold: Hold | None = None
                        if greedy and not same:  # it meets the loops at its partition's event
                            hold = (node, greedy, way.holding)
                        elif way.holding:
                            loops = leaving.unstopped(node, way.holding, event, run.vector)
                            hold = (node, loops, loops) if loops else None
                        landings.append((target, hold))
            if not (ignored or branches or landings):
                continue
            horizon = min(horizon, run.horizon)
            created += len(branches)
            if not ignored and len(branches) + len(landings) == 1:
                # the run goes on one way: it keeps its version (and its object)
                if branches:
                    edge, run.vector, run.node, run.done = branches[0]
                    run.last = buffer.add(
                        edge.stack, edge.variable, position, event, run.version, run.last
                    )
                    run.ignored, run.landed, run.held = NOTHING, False, None
                else:
                    run.node, run.held = landings[0]
                    run.ignored, run.landed = level, True
                survivors.append(run)
                continue
            base = run.version
            for edge, vector, target, done in branches:
                version = (*base, run.children)
                run.children += 1
                last = buffer.add(edge.stack, edge.variable, position, event, version, run.last)
                survivors.append(
                    Contiguous(
                        target,
                        vector,
                        run.key,
                        run.values,
                        run.start,
                        run.origin,
                        run.horizon,
                        version,
                        last,
                        run.memo,
                        run.seq,
                        NOTHING,
                        False,
                        done,
                    )
                )
            for target, hold in landings:
                version = (*base, run.children)
                run.children += 1
                survivors.append(run.moved(target, level, version, hold))
            if ignored:
                run.version = (*base, run.children)
                run.children = 0
                run.ignored = level
                survivors.append(run)
        if values is not None and state.begin and gated[0].get(event_type, other[0]):
            initial = self.code.initial
            begun, _, _, evaluated = leaving.moves(0, initial, NOTHING, event)
            if begun:
                evaluations += evaluated
            for move, vector in begun:
                edge = move.edge
                done = move.completes and (move.final is None or move.final(event, vector))
                if done:
                    finals += 1
                    if construct:
                        fresh = Run(0, initial, key, values, t, position, position, (), None)
                        if self._complete(fresh, edge, position, event, completed, state, walks):
                            cut = True
                if move.target is not None:
                    state.versions += 1
                    version = (state.versions,)
                    last = buffer.add(edge.stack, edge.variable, position, event, version, None)
                    survivors.append(
                        Contiguous(
                            move.target,
                            vector,
                            key,
                            values,
                            t,
                            position,
                            position,
                            version,
                            last,
                            None,
                            event.seq,
                            NOTHING,
                            False,
                            done,
                        )
                    )
                    created += 1
                    horizon = min(horizon, position)
        counters = state.counters
        state.evaluations += evaluations
        counters["runs_created"] += created
        counters["final_takes"] += finals
        if cut:
            counters["cut_events"] = counters.get("cut_events", 0) + 1
        if self.merging and len(survivors) > 1:
            survivors = self._merged(state, survivors)
        state.runs = survivors
        if expired:
            state.timeouts += self._timed_out(state, expired)
        matches = self._finish(state, completed, event, position)
        if horizon > buffer.first:
            buffer.prune(horizon)
        if window is not None and len(buffer.joins) > buffer.kept:
            buffer.expire(t - window)
        return matches

    def _finish(
        self,
        state: NfaState,
        completed: list[tuple[History, Edge]],
        event: Event,
        position: int,
    ) -> list[Match]:
        """One step's completions as matches (or candidates for the finalizer), what time
        settles, and the timeouts waiting."""
        found: list[Match] = []
        if completed:
            state.counters["completions"] += len(completed)
            if self.immediate:
                found = [self._match(history, edge, event) for history, edge in completed]
                if self.twins:
                    found = list({_identity(m.bindings): m for m in found}.values())
            else:
                self.finalizer.add(
                    state.pending,
                    [self._candidate(state, h, edge, position, event) for h, edge in completed],
                )
        if not self.immediate and state.pending:
            found = self._settle(state, Watermark(event.t, inclusive=False))
        elif len(state.stream.events) > state.kept:
            self._forget(state, Watermark(event.t, inclusive=False))
        if state.timeouts:
            found += state.timeouts
            state.timeouts = []
        return found

    def _timed_out(self, state: NfaState, runs: list[Contiguous]) -> list[Timeout]:
        """The runs whose window closed, as timeouts: those that had not completed their
        match, each binding once (`reference`'s rule)."""
        if not self.options.timeouts:
            return []
        window = self.window
        assert window is not None, "unsupported: timeouts need a time window"
        found: dict[tuple[Any, ...], Timeout] = {}
        for run in runs:
            if run.done:
                continue
            for history in state.buffer.histories(run.last, run.version):
                bound = {
                    n: events for n in self.bound[run.node] if (events := history.events.get(n, ()))
                }
                identity = _identity(bound)
                if identity not in found:
                    last = max(e.t for events in bound.values() for e in events)
                    found[identity] = Timeout(
                        bound, self.pattern_name, (run.start, last), deadline=run.start + window
                    )
        return list(found.values())

    @staticmethod
    def _spawn(
        buffer: Buffer,
        run: Run,
        edge: Edge,
        vector: tuple[Any, ...],
        target: int,
        version: Version,
        position: int,
        event: Event,
        survivors: list[Run],
    ) -> Run:
        """The run after taking the event along `edge`, its event selected into the buffer."""
        last = buffer.add(edge.stack, edge.variable, position, event, version, run.last)
        successor = Run(
            target,
            vector,
            run.key,
            run.values,
            run.start,
            run.origin,
            run.horizon,
            version,
            last,
            run.memo,
        )
        survivors.append(successor)
        return successor

    def _complete(
        self,
        run: Run,
        edge: Edge,
        position: int,
        event: Event,
        completed: list[tuple[History, Edge]],
        state: NfaState,
        walks: list[_Walk] | None = None,
    ) -> bool:
        """Read the matches a run completes on this take from the buffer (or, given
        `walks`, note where to read them); True when the guard `max_matches_per_event` cut
        them (on_limit="drop")."""
        window = self.window
        since = None if window is None else event.t - window
        if walks is not None:
            walks.append((run.last, run.version, since, run.memo, edge))
            return False
        buffer = state.buffer
        t = event.t
        if self.first_only:
            by_key = self.partition_key is not None
            ends = state.pending.last_end.get(run.key if by_key else None, -1)
            exclusive = self.exclusive

            def admit(entry: Entry) -> bool:  # it would not overlap the last match reported
                if entry.position <= ends or window is None:
                    return entry.position > ends
                begun: float = entry.event.t
                return t - begun < window if exclusive else begun >= t - window

            firsts = buffer.first_histories(run.last, run.version, admit)
            completed.extend((history, edge) for history in firsts)
            return False
        room = self.match_cap - len(completed)
        if self.exclusive and window is not None:
            # the guard counts the matches kept: those that began less than a window back
            histories, inside = [], 0
            for history in buffer.each_history(run.last, run.version, since, run.memo):
                histories.append(history)
                if history.first is None or t - history.first.t < window:
                    inside += 1
                    if inside > room:
                        break
            over = inside > room
        else:
            histories = buffer.histories(run.last, run.version, since, run.memo, room)
            over = len(histories) > room
        if over:
            if self.options.on_limit != "drop":
                raise self.too_many_matches(event)
            kept = self._inside(histories, t)[: max(0, int(room))]
            completed.extend((history, edge) for history in kept)
            return True  # cut: the memo would remember a part as the whole
        if run.last is not None:
            run.memo = Memo(run.last, run.version, histories)
        completed.extend((history, edge) for history in self._inside(histories, t))
        return False

    def _step_freezing(
        self, state: NfaState, event: Event, walks: list[_Walk] | None = None
    ) -> list[Match]:
        """`step` under FREEZE: the finalizer notes what the event is held back from, and
        whether it freezes a variable, before the plan takes it."""
        self.finalizer.arrive(state, event)
        return self._step_unfrozen(state, event, walks)

    def step_lazily(self, state: NfaState, event: Event) -> Iterable[Match]:
        """`Plan.step_lazily`: with every match reported at once (`immediate`, no OR that
        may complete one twice, no timeouts), the state moves on now and the matches are read
        from the buffer as they are asked for; else `step`'s list."""
        if not self.immediate or self.twins or self.options.timeouts:
            return self.step(state, event)
        walks: list[_Walk] = []
        self.step(state, event, walks)
        if not walks:
            return []
        counters = state.counters

        def counted(number: int, cut: bool) -> None:
            counters["completions"] += number
            if cut:
                counters["cut_events"] = counters.get("cut_events", 0) + 1

        return self.capped(self._walked(state, walks, event), event, counted)

    def _walked(self, state: NfaState, walks: list[_Walk], event: Event) -> Iterator[Match]:
        """The matches of the completions `step` noted, one at a time (what `_complete` and
        `_inside` read, without a memo of them: a memo would hold them all)."""
        each_history = state.buffer.each_history
        exclusive = self.exclusive and self.window is not None
        for last, version, since, memo, edge in walks:
            for history in each_history(last, version, since, memo):
                if exclusive and not self._inside([history], event.t):
                    continue
                yield self._match(history, edge, event)

    def _inside(self, histories: list[History], t: float) -> list[History]:
        """The histories a match completed at `t` may have: all of them (the buffer reads
        only those within the window), or under WITHIN ... EXCLUSIVE those that began less
        than a window before `t`."""
        window = self.window
        if not self.exclusive or window is None:
            return histories
        return [h for h in histories if h.first is None or t - h.first.t < window]

    def _match(self, history: History, edge: Edge, event: Event) -> Match:
        """A history completed by `event` along `edge`, as a match laid out flat
        (`Match.laid_out`: its events, and its sort key, whose ids and shape are read in
        the same pass)."""
        get, taken = history.events.get, edge.variable
        flat: list[Event] = []
        shape = []
        for name in edge.bound:
            events = get(name, ())
            if name == taken:
                events += (event,)
            flat += events
            shape.append((name, len(events)))
        start = event.t if history.first is None else history.first.t
        ids = tuple([e.id for e in flat])
        return Match.laid_out(tuple(flat), (event.t, start, ids, (self.pattern_name, tuple(shape))))

    def _candidate(
        self, state: NfaState, history: History, edge: Edge, position: int, event: Event
    ) -> Candidate:
        """A history completed by `event` along `edge`, for the finalizer to decide."""
        positions = {name: history.positions.get(name, ()) for name in edge.bound}
        events = {name: history.events.get(name, ()) for name in edge.bound}
        positions[edge.variable] += (position,)
        events[edge.variable] += (event,)
        return self.finalizer.candidate(positions, state.stream, self.partition_key, events)

    def _merged(self, state: NfaState, runs: list[Run]) -> list[Run]:
        """Merge runs with equal state, partition, equivalence values and masked V (a run
        whose V holds a list, say a price history, is kept apart)."""
        groups: dict[Hashable, list[Run]] = {}
        flink = self.flink
        for run in runs:
            key: Hashable = (run.node, run.key, run.values, self.nodes[run.node].mask(run.vector))
            if flink:  # runs that ignored or left differently go on differently
                assert isinstance(run, Contiguous)
                if run.held is not None:  # its loops read V where the node masks it
                    groups[id(run)] = [run]
                    continue
                key = (key, run.ignored, run.landed)
            try:
                groups.setdefault(key, []).append(run)
            except TypeError:
                groups[id(run)] = [run]
        if len(groups) == len(runs):
            return runs
        merged: list[Run] = []
        for group in groups.values():
            if len(group) == 1:
                merged.append(group[0])
                continue
            state.versions += 1
            version = (state.versions,)
            join = state.buffer.join(version, [(r.last, r.version, r.start, r.memo) for r in group])
            youngest = max(group, key=lambda r: r.start)
            fields = (
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
            if isinstance(youngest, Contiguous):
                merged.append(
                    Contiguous(
                        *fields,
                        None,
                        youngest.seq,
                        youngest.ignored,
                        youngest.landed,
                    )
                )
            else:
                merged.append(Run(*fields))
            state.counters["runs_merged"] += len(group)
        return merged

    # -- time ---------------------------------------------------------------------------

    def advance(self, state: NfaState, watermark: Watermark) -> list[Match]:
        window = self.window
        if window is not None and self.options.timeouts:
            # a run is over once every event its window holds is in (`reference`'s time)
            expired = [r for r in state.runs if watermark.settles(r.start + window)]
            if expired:
                state.runs = [r for r in state.runs if not watermark.settles(r.start + window)]
                state.timeouts += self._timed_out(state, expired)  # type: ignore[arg-type]
        elif window is not None:
            state.runs = [r for r in state.runs if watermark.t - r.start <= window]
        matches = self._settle(state, watermark)
        if state.timeouts:
            matches += state.timeouts
            state.timeouts = []
        return matches

    @property
    def timed(self) -> bool:
        """Only candidates waiting for time (`immediate` is False) and runs that may time
        out have deadlines."""
        return not self.immediate or self.options.timeouts

    def deadline(self, state: NfaState) -> float | None:
        timeouts = self.options.timeouts
        if self.immediate:  # no candidate waits: only the runs that may time out
            if not (timeouts and state.runs) or self.window is None:
                return None
            return min([run.start for run in state.runs]) + self.window
        starts = [run.start for run in state.runs] if timeouts else []
        return self.finalizer.deadline(state, starts)

    def _settle(self, state: NfaState, watermark: Watermark) -> list[Match]:
        matches = self.finalizer.report(state, watermark)
        if matches and self.options.output == "non_overlapping":
            # a run that started before a reported match ended can only overlap it
            by_key = self.partition_key is not None
            ends = state.pending.last_end
            state.runs = [
                r for r in state.runs if r.origin > ends.get(r.key if by_key else None, -1)
            ]
        elif matches and self.analysis.consume:
            # a run holding an event up to the last a reported match bound is discarded
            # (a merged run's origin is its latest: its older histories the finalizer drops)
            by_key = self.analysis.consume == "partition"
            floors = state.pending.floors
            state.runs = [
                r for r in state.runs if r.origin >= floors.get(r.key if by_key else None, 0)
            ]
        elif matches and self.finalizer.skip:
            # a run that started before the floor (AFTER MATCH SKIP) completes nothing kept
            # (a merged run's origin is its latest)
            by_key = self.partition_key is not None
            floors = state.pending.floors
            state.runs = [
                r for r in state.runs if r.origin >= floors.get(r.key if by_key else None, 0)
            ]
        self._forget(state, watermark)
        return matches

    def _forget(self, state: NfaState, watermark: Watermark) -> None:
        """Drop the events no run, undecided candidate or negation can still need."""
        stream = state.stream
        if self.immediate:  # its stream keeps no event (`NfaState`)
            return
        needed = min((run.horizon for run in state.runs), default=stream.end)
        for candidate in state.pending.waiting():
            needed = min(needed, candidate.first)
        if needed >= stream.end:
            cut = watermark.t if stream.end == stream.base else stream[stream.end - 1].t
        else:
            cut = stream[needed].t
        if self.negated and self.window is not None:
            cut = min(cut, watermark.t - 2 * self.window)  # a negation looks back a window
        stream.drop_before(cut)
        state.kept = 2 * len(stream.events) + KEPT  # forget again when it has doubled


_EMPTY: frozenset[str] = frozenset()


def _contains_and(element: A.Element) -> bool:
    if isinstance(element, A.EventVar | A.Negation):
        return False
    return isinstance(element, A.And) or any(_contains_and(item) for item in element.items)


def _flink(analysis: Analysis, options: Options) -> bool:
    """Does a run follow Flink's or CORE's rules (`leaving.py`)?"""
    return (
        bool(analysis.extensions - {"not_next", "not_followed", "consume", "freeze"})
        or options.timeouts
    )


def _leaves(analysis: Analysis, options: Options) -> bool:
    """Do runs leave loops and optional elements without an event (Flink's proceed edges
    into relaxed contiguity and any-match places; `leaving.py`)? Under skip till any match
    alone, a run that ignores events and then proceeds finds the same (SASE+'s rule), but
    for a GREEDY or UNTIL loop, which hold a run to the events they take."""
    if not _flink(analysis, options) or not analysis.strategies.used & LANDINGS:
        return False
    return analysis.strategy != "skip_till_any_match" or any(
        v.greedy or v.until is not None for v in analysis.positive
    )


def _run_start(run: Run) -> tuple[float, int]:
    return run.start, run.origin


def moves(
    node: Node, vector: tuple[Any, ...], event: Event
) -> list[tuple[Edge, tuple[Any, ...], int | None, bool]]:
    """The takes a run standing at `node` with `vector` may make on `event`: each edge whose
    formulas hold, with V after the take, the state it leads to (None: it can only complete)
    and whether the run completes a match there."""
    found = []
    for edge, local, check, update, late, final, target, _, completes in node.by_type.get(
        event.type, node.other
    ):
        if local is not None and not local(event):
            continue
        if check is not None and not check(event, vector):
            continue
        after = vector if update is None else update(vector, event)
        if late is not None and not late(event, after):
            continue
        found.append((edge, after, target, completes and (final is None or final(event, after))))
    return found


def _identity(bindings: Mapping[str, tuple[Event, ...]]) -> tuple[Any, ...]:
    """A match's events by variable, as identities (one step's matches hold the same event
    objects)."""
    return tuple((name, tuple(map(id, events))) for name, events in bindings.items())


def _nothing(vector: tuple[Any, ...]) -> None:
    return None


def _moves(node: Node, event_type: str) -> tuple[Move, ...] | None:
    """The node's edges an event of this type may take; None when there are none."""
    return node.by_type.get(event_type, node.other) or None
