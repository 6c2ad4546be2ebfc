"""The `lazy_chain` plan: the lazy Chain and Multi-Chain NFA of Kolchinsky & Schuster,
*Efficient Detection of Complex Event Patterns Using Lazy Chain Automata* (sections 3-5),
for skip-till-any-match.

Events are not matched in arrival order but in the order of their types' frequencies, rarest
first (`shape.py` builds one chain of states per branch of the pattern in DNF). An arriving
event is *stored* in the input buffer (one arrival-ordered list of positions per variable
that a later state takes) and *taken* by the partial matches waiting for its variable. A new
partial match then searches the buffer for the next state's variable, only between the
positions its ordering filters allow (bisection, since the buffer is in arrival order) and
inside the window; an iterated variable takes every subset of its candidates (the `iterate`
edge; one that arrives later, only the subsets it ends). A partial match keeps waiting at a
state whose succ filter is empty, and times out when the window has passed its first event.
Complete bindings go to the finalizer `reference` uses, which applies negation after the
fact (the Post-Processing Chain NFA), the output format and selections.

>>> import kleene
>>> events = [{"type": t, "ts": i} for i, t in enumerate(["A", "A", "B", "B", "C"])]
>>> query = "PATTERN SEQ(A a, B b, C c) WITHIN 10"
>>> found = kleene.match(query, events, plan="lazy_chain", order=["C", "B", "A"])
>>> [tuple(m.ids().values()) for m in found]
[((0,), (2,), (4,)), ((0,), (3,), (4,)), ((1,), (2,), (4,)), ((1,), (3,), (4,))]

With C the rarest type nothing is matched until the C arrives: no partial match starts at an
A or a B (`instances_created` counts the four found at e4 and their prefixes C and CB):

>>> engine = kleene.Engine(query, plan="lazy_chain", order=["C", "B", "A"])
>>> _ = engine.send_many(events[:4]); engine.metrics.plan["instances_created"]
0
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Collection, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kleene.compiler.analysis import Analysis, Condition, Negated
from kleene.compiler.evaluate import attribute
from kleene.compiler.options import Options
from kleene.events import Event, Watermark
from kleene.language import expr as E
from kleene.matches import Match
from kleene.plans.base import Plan, register
from kleene.plans.common.arrivals import Stream
from kleene.plans.common.checks import Binding, Checks
from kleene.plans.common.finalize import Candidate, Finalizer, Partition
from kleene.plans.lazy.first_chance import dependencies
from kleene.plans.lazy.shape import Step, chains, group_by, rank, step

__all__ = ["Completions", "LazyChain", "LazyState", "Partial", "StateKey"]

#: `_candidates` without a group: every buffered event of the variable.
_ALL = object()


class _Unhashable:
    """The group of values that cannot be hashed: one group, equal to itself after a state
    is pickled and loaded again (a bare `object()` would not be)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable)

    def __hash__(self) -> int:
        return hash(_Unhashable.__name__)


_UNHASHABLE = _Unhashable()

#: The complete partial matches an event made, each once (by its binding).
Completions = dict[tuple[Any, ...], "Partial"]

#: A state of the automaton: a DNF branch and the variables its partial matches have taken,
#: in the order they took them (a chain's states are its prefixes; a tree's, any order).
StateKey = tuple[int, tuple[str, ...]]


class Partial:
    """A partial match: what each variable taken so far bound (positions, in the order they
    were taken, and the `events` there), the positions used, the times of its first and
    last event (None: it has none yet), and `floors`: positions below which a variable may
    not take events (a lazy tree's root hands older events to the root before it)."""

    __slots__ = ("bound", "events", "first", "floors", "last", "used")

    def __init__(
        self,
        bound: dict[str, tuple[int, ...]],
        events: dict[str, tuple[Event, ...]],
        used: frozenset[int],
        first: float | None,
        last: float | None,
        floors: Mapping[str, int] | None = None,
    ) -> None:
        self.bound = bound
        self.events = events
        self.used = used
        self.first = first
        self.last = last
        self.floors = floors

    @classmethod
    def empty(cls, floors: Mapping[str, int] | None = None) -> Partial:
        return cls({}, {}, frozenset(), None, None, floors)

    def with_events(self, name: str, positions: tuple[int, ...], stream: Stream) -> Partial:
        bound = {**self.bound, name: positions}
        taken = tuple([stream[p] for p in positions])
        events = {**self.events, name: taken}
        if not positions:
            return Partial(bound, events, self.used, self.first, self.last, self.floors)
        used = self.used.union(positions)
        if len(positions) == 1:
            t = taken[0].t
            first = t if self.first is None or t < self.first else self.first
            last = t if self.last is None or t > self.last else self.last
            return Partial(bound, events, used, first, last, self.floors)
        times = [e.t for e in taken]
        first = min(times) if self.first is None else min(self.first, *times)
        last = max(times) if self.last is None else max(self.last, *times)
        return Partial(bound, events, used, first, last, self.floors)


@dataclass
class LazyState(Partition):
    """One partition's events, candidates, input buffer and waiting partial matches."""

    buffers: dict[str, list[int]] = field(default_factory=dict)
    #: The buffers of iterated variables with a group-by attribute, hashed by its value.
    grouped: dict[str, dict[Hashable, list[int]]] = field(default_factory=dict)
    #: By the variable they wait for, by state: the partial matches waiting for events to
    #: come. A state exists while some partial match waits there (lazy instantiation).
    waiting: dict[str, dict[StateKey, list[Partial]]] = field(default_factory=dict)
    #: Per branch: its roots (the empty partial match, and what starred variables that bind
    #: nothing make of it), each with the variable it waits for.
    roots: list[list[tuple[str, Partial]]] = field(default_factory=list)
    #: Each branch's evaluation order (the plan's, until `estimate` events have come).
    orders: list[tuple[str, ...]] = field(default_factory=list)
    #: With `estimate`: each variable's events so far.
    sampled: dict[str, int] = field(default_factory=dict)
    #: The event types that make the roots look again (None: all; see `review`).
    watched: frozenset[str] | None = frozenset()
    live: int = 0  # waiting partial matches but the roots
    #: The position of the last event whose matches the guard cut (on_limit="drop").
    cut_at: int = -1
    #: Events per variable inside the window as of one stream position, and the first
    #: position inside it (the lazy tree's counters), filled in as asked.
    counted: tuple[int, int, dict[str, int]] = field(default_factory=lambda: (-1, 0, {}))
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            (
                "instances_created",
                "buffer_inserts",
                "buffer_removals",
                "predicate_checks",
                "timeouts",
                "negation_rejections",
            ),
            0,
        )
    )

    def wait(self, name: str, key: StateKey, instance: Partial) -> None:
        self.waiting.setdefault(name, {}).setdefault(key, []).append(instance)


@register
class LazyChain(Plan[LazyState]):
    """Lazy evaluation in frequency order: a chain of states per DNF branch."""

    name = "lazy_chain"
    analysis: Analysis
    #: Events between two looks at the roots (0: never look).
    review = 0

    @classmethod
    def unsupported(cls, analysis: Analysis, options: Options) -> str | None:
        if analysis.strategy != "skip_till_any_match":
            return (
                "lazy evaluation reorders events, which only skip_till_any_match allows "
                f"(the pattern uses {analysis.strategy})"
            )
        return super().unsupported(analysis, options)

    def __init__(self, analysis: Analysis, options: Options) -> None:
        super().__init__(analysis, options)
        self.checks = Checks(analysis, compiled=True)
        self.ranks = rank(analysis, options.order, options.frequencies)
        #: The DNF branches: each has a chain (a tree) of its own, with its own SEQ order.
        self.branches = analysis.dnf
        #: Each branch's variables in evaluation order (iterated ones last).
        self.orders = [
            tuple(sorted(b.variables, key=self.ranks.__getitem__)) for b in self.branches
        ]
        self._dependencies = [self._checked_early(branch.names) for branch in self.branches]
        #: The negations to check at a state (First-Chance), found as states are reached: a
        #: pure memo (it depends on the query only, never on a partition's events).
        self._due: dict[StateKey, tuple[Negated, ...]] = {}
        later = [n for n in analysis.negations.values() if self._post_somewhere(n)]
        self.finalizer = Finalizer(analysis, self.checks, self.window, options, later)
        self.buffered = self._buffered()
        #: Iterated variables whose subsets share an attribute's value, with the attribute.
        self.groups = group_by(analysis) if options.group else {}
        #: By iterated variable: the conditions each of its events passes or fails alone.
        self._elementwise = {
            name: _elementwise(self.checks.conditions, name)
            for name, v in analysis.variables.items()
            if v.kleene
        }
        self.variable_order = tuple(analysis.variables)
        #: A pure memo of `_route`, by event type.
        self._routes: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        #: A pure memo of the steps, by branch, variables taken and variable to take.
        self._steps: dict[tuple[int, tuple[str, ...], str], Step] = {}

    def _buffered(self) -> tuple[str, ...]:
        """The variables some state searches the buffer for: all but those only ever taken
        first (an iterated variable's subsets come from the buffer wherever it stands); with
        `estimate`, any may come later in the order found."""
        if self.options.estimate:
            return tuple(n for n, v in self.analysis.variables.items() if not v.negated)
        return tuple(
            name
            for name in self.analysis.variables
            if any(
                n == name and (k > 0 or self.analysis.variables[n].kleene)
                for order in self.orders
                for k, n in enumerate(order)
            )
        )

    def _checked_early(self, branch: frozenset[str]) -> list[tuple[Negated, frozenset[str]]]:
        """With First-Chance negation: the negations of a branch checked as soon as a partial
        match binds their DEP, each with its DEP."""
        if self.options.negation != "first_chance":
            return []
        found = []
        for negation in self.analysis.negations.values():
            if negation.applies(dict.fromkeys(branch)):
                dep = dependencies(self.analysis, negation, branch)
                if dep is not None:
                    found.append((negation, dep))
        return found

    def _post_somewhere(self, negation: Negated) -> bool:
        """Is the negation left to post-processing in some branch it applies to?"""
        return any(
            negation.applies(dict.fromkeys(branch.variables))
            and all(n is not negation for n, _ in self._dependencies[b])
            for b, branch in enumerate(self.branches)
        )

    def describe(self) -> str:
        lines = ["lazy chains, one per DNF branch, states in evaluation order (rarest first):"]
        lines += [f"  {chain}" for chain in chains(self.analysis, self.ranks)]
        if self.options.estimate:
            lines.append(
                f"  then in the order the first {self.options.estimate} events of each "
                "partition show (rarest first)"
            )
        lines += self._described()
        return "\n".join(lines)

    def _described(self) -> list[str]:
        """What both plans say of group-by attributes and First-Chance negations."""
        lines = [
            f"  {name} grouped by {attr}: its subsets share one value (group-by attribute)"
            for name, attr in self.groups.items()
        ]
        for b, found in enumerate(self._dependencies):
            for negation, dep in found:
                lines.append(
                    f"  first-chance: NOT {negation.variable.name} checked once "
                    f"{', '.join(sorted(dep))} are bound (branch {b + 1})"
                )
        return lines

    def new_state(self) -> LazyState:
        state = LazyState(
            buffers={name: [] for name in self.buffered},
            grouped={name: {} for name in self.groups},
            orders=list(self.orders),
        )
        for b, order in enumerate(self.orders):
            roots: list[tuple[str, Partial]] = []
            root = Partial.empty()
            for name in order:  # a root waits at each state that the empty
                roots.append((name, root))  # bindings of starred variables reach
                state.wait(name, (b, tuple(root.bound)), root)
                variable = self.analysis.variables[name]
                if variable.min > 0:
                    break
                closed = frozenset(root.bound)
                nothing = root.with_events(name, (), state.stream)
                before, after = (root.bound, closed), (nothing.bound, closed | {name})
                if not self.checks.new_instances_hold(before, after, state.stream):
                    break  # a condition on the empty binding fails (`x[x.len].v = 1`)
                root = nothing
            state.roots.append(roots)
        return state

    def live_runs(self, state: LazyState) -> int:
        return state.live

    def counters(self, state: LazyState) -> dict[str, int]:
        return dict(state.counters)

    # -- events ---------------------------------------------------------------------------

    def step(self, state: LazyState, event: Event) -> list[Match]:
        stream = state.stream
        position = stream.append(event)
        takers, buffered = self._routes.get(event.type) or self._route(event.type)
        found: Completions = {}
        fresh: list[tuple[str, StateKey, Partial]] = []
        for name in takers:
            states = state.waiting.get(name)
            if not states:
                continue
            for key, instances in list(states.items()):
                b, taken = key
                step = self._step(b, taken, name)
                kept = []
                for instance in instances:
                    if self._expired(instance, event.t):
                        state.counters["timeouts"] += 1
                        state.live -= 1
                        continue
                    kept.append(instance)
                    for extended in self._take_arriving(state, step, instance, position):
                        self._search(state, b, extended, position, found, fresh)
                if kept:
                    states[key] = kept
                else:
                    del states[key]
        for name in buffered:
            state.buffers[name].append(position)
            if name in self.groups:
                group = _group(event, self.groups[name])
                state.grouped[name].setdefault(group, []).append(position)
        state.counters["buffer_inserts"] += len(buffered)
        if position < self.options.estimate:
            for name in buffered:
                state.sampled[name] = state.sampled.get(name, 0) + 1
            if position + 1 == self.options.estimate:
                self._estimated(state, found, fresh)
        elif self.review and (
            state.watched is None or event.type in state.watched or not position % self.review
        ):
            self._review(state, found, fresh)
        for name, key, instance in fresh:  # waiting from the next event on
            state.wait(name, key, instance)
        state.live += len(fresh)
        if found:
            self.finalizer.add(state.pending, [self._candidate(i, stream) for i in found.values()])
        if not state.pending and position % 64:
            return []  # nothing to report; forget old events and partial matches now and then
        return self._settle(state, Watermark(event.t, inclusive=False))

    def _candidate(self, instance: Partial, stream: Stream) -> Candidate:
        """A complete partial match for the finalizer, its variables in pattern order."""
        names = [n for n in self.variable_order if n in instance.bound]
        binding = {n: instance.bound[n] for n in names}
        events = {n: instance.events[n] for n in names}
        return self.finalizer.candidate(binding, stream, self.partition_key, events)

    def _review(
        self,
        state: LazyState,
        found: Completions,
        fresh: list[tuple[str, StateKey, Partial]],
    ) -> None:
        """After an event, with `review`: a chain's roots never change (a lazy tree's do)."""

    def _estimated(
        self,
        state: LazyState,
        found: Completions,
        fresh: list[tuple[str, StateKey, Partial]],
    ) -> None:
        """The first `estimate` events have come: each branch's order becomes its variables
        by their counts, rarest first (iterated ones still last, ties as ranked), and the
        root hands over to the new first variable (unless either is iterated: the roots of
        a chain beginning with one stay as they are). Partial matches made so far go on in the
        new order from where they stand (any order finds the same matches)."""
        for b, order in enumerate(state.orders):
            state.orders[b] = tuple(
                sorted(
                    order,
                    key=lambda n: (
                        self.analysis.variables[n].kleene,
                        state.sampled.get(n, 0),
                        self.ranks[n],
                    ),
                )
            )
            roots, first = state.roots[b], state.orders[b][0]
            variables = self.analysis.variables
            if len(roots) != 1 or variables[roots[0][0]].kleene or variables[first].kleene:
                continue  # a subset of an iterated variable may straddle the hand-over
            if roots[0][0] != first:
                self._hand_over(state, b, first, found, fresh)

    def _hand_over(
        self,
        state: LazyState,
        b: int,
        name: str,
        found: Completions,
        fresh: list[tuple[str, StateKey, Partial]],
    ) -> None:
        """A new root for branch `b` that takes `name` first. The old root stops: it keeps
        the partial matches it began, and the new one takes the old one's variable only from
        now on (a *floor*) and searches the buffer for its own, so each match is found once:
        by the root that held its event of that root's variable when it arrived."""
        end = state.stream.end
        ((old, root),) = state.roots[b]
        key: StateKey = (b, ())
        waiting = state.waiting[old][key]
        waiting.remove(root)
        if not waiting:
            del state.waiting[old][key]
        successor = Partial.empty({**(root.floors or {}), old: end})
        state.roots[b] = [(name, successor)]
        state.wait(name, key, successor)
        self._expand(state, b, successor, self._step(b, (), name), end, found, fresh)

    def _route(self, event_type: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The variables whose states take events of a type, and those whose buffers store
        them (computed once per type)."""
        variables = self.analysis.variables
        takers = tuple(n for n, v in variables.items() if not v.negated and v.takes(event_type))
        buffered = tuple(n for n in self.buffered if variables[n].takes(event_type))
        self._routes[event_type] = (takers, buffered)
        return takers, buffered

    def _step(self, b: int, taken: tuple[str, ...], name: str) -> Step:
        found = self._steps.get((b, taken, name))
        if found is None:
            branch = self.branches[b]
            found = self._steps[b, taken, name] = step(self.analysis, branch, taken, name)
        return found

    def advance(self, state: LazyState, watermark: Watermark) -> list[Match]:
        return self._settle(state, watermark)

    def deadline(self, state: LazyState) -> float | None:
        return self.finalizer.deadline(state)

    def idle(self, state: LazyState, watermark: Watermark) -> bool:
        return self.finalizer.idle(state, watermark)

    def _settle(self, state: LazyState, watermark: Watermark) -> list[Match]:
        matches = self.finalizer.report(state, watermark)
        if self.window is not None:
            self._forget(state, watermark)
        return matches

    def _forget(self, state: LazyState, watermark: Watermark) -> None:
        """Drop timed-out partial matches (and states no partial match waits at), and the
        events neither a partial match nor a negation can still use (negations look back up
        to a window before a match)."""
        window = self.window
        assert window is not None
        now = watermark.t
        for states in state.waiting.values():
            for key, waiting in list(states.items()):
                alive = [i for i in waiting if i.first is None or now - i.first <= window]
                state.counters["timeouts"] += len(waiting) - len(alive)
                state.live -= len(waiting) - len(alive)
                if alive:
                    states[key] = alive
                else:
                    del states[key]
        stream = state.stream
        stream.drop_before(now - 2 * window)
        for positions in state.buffers.values():
            cut = bisect_left(positions, stream.base)
            if cut:
                del positions[:cut]
                state.counters["buffer_removals"] += cut
        for groups in state.grouped.values():
            for value, positions in list(groups.items()):
                del positions[: bisect_left(positions, stream.base)]
                if not positions:
                    del groups[value]

    def _expired(self, instance: Partial, t: float) -> bool:
        return (
            self.window is not None
            and instance.first is not None
            and (t - instance.first > self.window)
        )

    # -- take and search --------------------------------------------------------------------

    def _take_arriving(
        self, state: LazyState, step: Step, instance: Partial, position: int
    ) -> Iterator[Partial]:
        """The partial matches a waiting `instance` makes by taking the arriving event at
        `position` for `step` (an iterated variable: with each subset of its buffered
        candidates that the event ends)."""
        variable = step.variable
        if not variable.kleene:
            extended = self._extend(state, instance, variable.name, position)
            if extended is not None:
                yield extended
            return
        groups = self.groups.get(variable.name)
        if groups is None:
            pool = self._candidates(state, step, instance, position)
        else:  # only its own group's events can share a subset with it
            value = _group(state.stream[position], groups)
            pool = self._candidates(state, step, instance, position, value)
        yield from self._subsets(state, instance, step, pool, position)

    def _next(self, state: LazyState, b: int, instance: Partial) -> str:
        """The variable the partial match takes next: the chain's next state (the first in
        the branch's order that it lacks: an estimated order may differ from the one it
        began with)."""
        bound = instance.bound
        return next(n for n in state.orders[b] if n not in bound)

    def _search(
        self,
        state: LazyState,
        b: int,
        instance: Partial,
        now: int,
        found: Completions,
        fresh: list[tuple[str, StateKey, Partial]],
    ) -> None:
        """Go on with a partial match of branch `b` made while the event at `now` was
        processed: check the negations it now decides (First-Chance), choose the variable
        to take next, search the buffer for it, and wait for events to come when the
        ordering filters allow them."""
        taken = tuple(instance.bound)
        if self._dependencies[b] and self._rejected(state, b, taken, instance):
            return
        if len(taken) == len(self.orders[b]):
            if len(found) >= self.match_cap:  # the guard, before the explosion is built
                if self.options.on_limit != "drop":
                    raise self.too_many_matches(state.stream[now])
                if state.cut_at != now:
                    state.cut_at = now
                    state.counters["cut_events"] = 1 + state.counters.get("cut_events", 0)
                return
            bound = instance.bound
            found.setdefault(
                tuple((n, bound[n]) for n in self.variable_order if n in bound), instance
            )
            return
        name = self._next(state, b, instance)
        step = self._step(b, taken, name)
        if step.waits(instance.bound):
            fresh.append((name, (b, taken), instance))
        self._expand(state, b, instance, step, now, found, fresh)

    def _expand(
        self,
        state: LazyState,
        b: int,
        instance: Partial,
        step: Step,
        now: int,
        found: Completions,
        fresh: list[tuple[str, StateKey, Partial]],
    ) -> None:
        """Take `step`'s variable from the buffer (events before `now`) and go on."""
        pool = self._candidates(state, step, instance, now)
        name = step.variable.name
        if step.variable.kleene:
            for extended in self._subsets(state, instance, step, pool, None):
                self._search(state, b, extended, now, found, fresh)
            return
        for position in pool:
            taken = self._extend(state, instance, name, position)
            if taken is not None:
                self._search(state, b, taken, now, found, fresh)

    def _rejected(
        self, state: LazyState, b: int, taken: tuple[str, ...], instance: Partial
    ) -> bool:
        """First-Chance negation: does an event of a negation whose DEP the partial match
        has just bound whole lie where the negation forbids it?"""
        due = self._due.get((b, taken))
        if due is None:
            bound, before = set(taken), set(taken[:-1])
            due = self._due[b, taken] = tuple(
                n for n, dep in self._dependencies[b] if dep <= bound and not dep <= before
            )
        if not due:
            return False
        stream = state.stream
        candidate = self.finalizer.candidate(instance.bound, stream, None, instance.events)
        for negation in due:
            if self.finalizer.spoiled(candidate, negation, stream, Watermark(math.inf)):
                state.counters["negation_rejections"] += 1
                return True
        return False

    def _candidates(
        self, state: LazyState, step: Step, instance: Partial, now: int, group: Any = _ALL
    ) -> list[int]:
        """The buffered positions `step` may take for `instance`, before `now`: after its
        prec variables' events, before its succ variables' events, inside the window (and
        with `group`, those whose group-by attribute has that value)."""
        stream = state.stream
        name = step.variable.name
        low, high = stream.base, now  # positions low <= p < high
        if instance.floors is not None:
            low = max(low, instance.floors.get(name, low))
        for other in step.after:
            positions = instance.bound.get(other, ())
            if positions:
                low = max(low, positions[-1] + 1)
        for other in step.before:
            positions = instance.bound.get(other, ())
            if positions:
                high = min(high, positions[0])
        if self.window is not None:
            if instance.first is None:  # it will take an event at `now` or later
                low = max(low, stream.first_from(stream.times[-1] - self.window))
            else:
                assert instance.last is not None
                low = max(low, stream.first_from(instance.last - self.window))
                high = min(high, stream.last_until(instance.first + self.window) + 1)
        if low >= high:
            return []
        buffer = state.buffers[name] if group is _ALL else state.grouped[name].get(group, [])
        start, stop = bisect_left(buffer, low), bisect_left(buffer, high)
        return [p for p in buffer[start:stop] if p not in instance.used]

    def _subsets(
        self,
        state: LazyState,
        instance: Partial,
        step: Step,
        pool: list[int],
        ending: int | None,
    ) -> Iterator[Partial]:
        """The iterate edge: `instance` with each subset of `pool` (in arrival order, within
        the variable's bounds, every prefix passing the conditions decidable on it) for the
        step's variable, closed; with `ending`, only the subsets that end with it (`pool`
        then holds only events of its group, when the variable has a group-by attribute)."""
        variable = step.variable
        name, low, high = variable.name, variable.min, variable.max
        stream = state.stream
        closed = frozenset(instance.bound)
        # conditions true or false of each event alone (`b[i].x > a.x`): decided once per
        # candidate, leaving out of the pool those that fail them, instead of per subset
        local = [c for c in self._elementwise[name] if c.variables - {name} <= closed]
        skip = frozenset(id(c) for c in local)
        if local:
            if ending is not None and not self._element_holds(state, instance, name, local, ending):
                return
            pool = [p for p in pool if self._element_holds(state, instance, name, local, p)]

        def grow(
            partial: Partial, prefix: tuple[int, ...], start: int, pool: list[int]
        ) -> Iterator[Partial]:
            size = len(prefix)
            if ending is None:
                if size >= low:
                    yield from self._close(state, partial, name, closed)
                if high is not None and size >= high:
                    return
            else:
                if high is None or size < high:
                    last = self._grown(state, partial, name, (*prefix, ending), closed, skip)
                    if last is not None and size + 1 >= low:
                        yield from self._close(state, last, name, closed)
                if high is not None and size + 2 > high:
                    return  # no room for one more event before the ending one
            for offset in range(start, len(pool)):
                longer = (*prefix, pool[offset])
                grown = self._grown(state, partial, name, longer, closed, skip)
                if grown is not None:
                    yield from grow(grown, longer, offset + 1, pool)

        start = instance.with_events(name, (), stream)
        attr = self.groups.get(name)
        if ending is not None or attr is None:
            yield from grow(start, (), 0, pool)
            return
        if low == 0:  # the empty subset, once; the others within one group each
            yield from self._close(state, start, name, closed)
        groups: dict[Hashable, list[int]] = {}
        for position in pool:
            groups.setdefault(_group(stream[position], attr), []).append(position)
        for group in groups.values():
            for offset, position in enumerate(group):
                grown = self._grown(state, start, name, (position,), closed, skip)
                if grown is not None:
                    yield from grow(grown, (position,), offset + 1, group)

    def _grown(
        self,
        state: LazyState,
        partial: Partial,
        name: str,
        prefix: tuple[int, ...],
        closed: frozenset[str],
        skip: Collection[int] = (),
    ) -> Partial | None:
        """`partial` with the iterated variable bound to `prefix` (one event more; still
        open), if the conditions decidable on it (but those in `skip`, decided already)
        hold and the window allows it."""
        grown = partial.with_events(name, prefix, state.stream)
        if not self._fits(grown):
            return None
        if not self._holds(state, (partial.bound, closed), (grown.bound, closed), grown, skip):
            return None
        return grown

    def _element_holds(
        self,
        state: LazyState,
        instance: Partial,
        name: str,
        local: list[Condition],
        position: int,
    ) -> bool:
        """Does the event at `position`, as any element b[i] of the iterated variable, pass
        the conditions that read only b[i] (and variables `instance` binds)?"""
        state.counters["predicate_checks"] += 1
        events = {**instance.events, name: (state.stream[position],)}
        return all(self.checks.holds(c, events, (1,)) for c in local)

    def _close(
        self,
        state: LazyState,
        grown: Partial,
        name: str,
        closed: frozenset[str],
    ) -> Iterator[Partial]:
        """The iterated variable's subset is final: the conditions on all of it."""
        if self._holds(state, (grown.bound, closed), (grown.bound, closed | {name}), grown):
            state.counters["instances_created"] += 1
            yield grown

    def _extend(
        self, state: LazyState, instance: Partial, name: str, position: int
    ) -> Partial | None:
        """`instance` with `name` bound to the event at `position`, if the window and the
        conditions this decides allow it."""
        extended = instance.with_events(name, (position,), state.stream)
        if not self._fits(extended):
            return None
        state.counters["predicate_checks"] += 1
        if not self.checks.taking_holds(extended.bound, name, extended.events):
            return None
        if not self._equivalent(state, extended):
            return None
        state.counters["instances_created"] += 1
        return extended

    def _fits(self, instance: Partial) -> bool:
        if self.window is None or instance.first is None:
            return True
        assert instance.last is not None
        span = instance.last - instance.first
        return span < self.window if self.exclusive else span <= self.window

    def _holds(
        self,
        state: LazyState,
        before: tuple[Binding, frozenset[str]],
        after: tuple[Binding, frozenset[str]],
        instance: Partial,
        skip: Collection[int] = (),
    ) -> bool:
        state.counters["predicate_checks"] += 1
        return self.checks.new_instances_hold(
            before, after, state.stream, instance.events, skip
        ) and self._equivalent(state, instance)

    def _equivalent(self, state: LazyState, instance: Partial) -> bool:
        """Do the partial match's events share the equivalence attributes (`[symbol]`)?"""
        if not self.checks.equivalences:
            return True
        stream = state.stream
        return self.checks.equivalent([stream[p] for p in instance.used]) is not None


def _elementwise(conditions: tuple[Condition, ...], name: str) -> tuple[Condition, ...]:
    """The conditions over iterated variable `name` that read only `name[i]` of it (`b[i].x
    > a.x`, not `b[i].x > b[i-1].x` or `avg(b[].x)`): each of its events passes or fails
    them alone, whatever subset it is in."""
    found = []
    for condition in conditions:
        if condition.indexed != name or condition.first_i != 1:
            continue
        reads = [
            node
            for node in E.walk(condition.expr)
            if isinstance(node, E.Attr | E.Len | E.Aggregate) and node.var == name
        ]
        if all(
            isinstance(node, E.Attr)
            and node.index is not None
            and (node.index.base, node.index.offset) == ("i", 0)
            for node in reads
        ):
            found.append(condition)
    return tuple(found)


def _group(event: Event, attr: str) -> Hashable:
    """The event's group for a group-by attribute: its value (a list as a tuple; a value
    that cannot be hashed in one group of its own kind, whose subsets the conditions sort
    out, since grouping only ever leaves out events that cannot be equal)."""
    value = attribute(event, attr)
    if isinstance(value, list):
        value = tuple(value)
    try:
        hash(value)
    except TypeError:
        return _UNHASHABLE
    return value  # type: ignore[no-any-return]
