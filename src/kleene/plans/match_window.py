"""The two-phase plan `match_window` (Cadonna, Gamper & Böhlen, *Efficient Event Pattern
Matching with Match Windows*): buffer, prune, then match.

Phase one buffers each partition's events in a *match window* (Definition 3: the events
from the window's first event e1 to e1.t + WITHIN) and prunes; phase two calls an inner
plan A, by name, on the windows that may hold a match, keeping the matches that start at e1.
Three pruning techniques, each switched on by a letter of the `pruning` option (the paper's
f / fp / fpc; "" is the plain window):

- **f, filtering** (Theorem 1): an event enters a window only if it satisfies the
  properties (its types and the conditions on it alone) of some variable, negated ones
  included, since they may spoil a match;
- **p, partitioning** (Definition 6): one window per value of the attributes the equality
  closure of the pattern's relationships makes every event of a match share (the analysis'
  partition key); A then runs without those equalities;
- **c, necessary match conditions** (Theorem 2), tested with bit-vector summary statistics
  (Definition 5, Theorem 3, section 5): the window holds at least as many events as a match
  needs (4), e1 satisfies the properties of a variable that can come first (5) and, for a
  pattern shaped as a sequence of sets of variables (SES: `SEQ(AND(C c, P+ p[]), B b)`),
  every variable has an event that follows an event of each variable of the set before (6,
  7; see `Summary`).

The result equals A's alone whenever this plan accepts the pattern: every match wanted
(a non-overlapping choice depends on matches outside the window), skip till next or any
match (under the contiguity strategies a filtered event would still break a run), a WITHIN
(the window's reach) and no negation looking back before a match's first event.

>>> import kleene
>>> events = [{"type": t, "ts": n, "k": 1, "x": n} for n, t in enumerate("CPPB")]
>>> engine = kleene.Engine("PATTERN SEQ(AND(C c, P p), B b) WHERE p.x > 1 WITHIN 5",
...                        plan="match_window", inner="nfa")
>>> [m.ids() for m in engine.send_many(events) + engine.close()]
[{'c': (0,), 'p': (2,), 'b': (3,)}]
>>> engine.metrics.plan["filtered"], engine.metrics.plan["calls"]  # the P with x = 1
(1, 1)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from kleene.compiler.analysis import Analysis, analyze
from kleene.compiler.codegen import Check, compile_condition
from kleene.compiler.options import Options
from kleene.errors import EventError, PlanError
from kleene.events import Event, Watermark
from kleene.language import expr as E
from kleene.matches import Match
from kleene.plans.base import Plan, instantiate, register

__all__ = ["MatchWindow", "SetLayout", "Summary", "WindowState"]


# ---- the pattern's shape: what the necessary match conditions read ------------------------


@dataclass(frozen=True)
class SetLayout:
    """The positive variables (bit j of an event's vector is variable j, written leftmost
    first as in the paper's Example 13), what a match needs of a window, and, for an SES
    pattern, its sets B1..Bk."""

    variables: tuple[str, ...]
    least: int  # the fewest events a match binds (condition 4)
    first: int  # the variables that can bind a match's first event (condition 5)
    sets: tuple[int, ...] | None  # each set's variables as a bit mask; None: not an SES

    @cached_property
    def column(self) -> tuple[int, ...]:
        """For an SES, each variable's set."""
        assert self.sets is not None
        m = len(self.variables)
        return tuple(
            next(i for i, mask in enumerate(self.sets) if mask & 1 << (m - 1 - j)) for j in range(m)
        )

    @cached_property
    def before(self) -> tuple[int, ...]:
        """For an SES, each variable's mask b̄: the variables of the set before its own."""
        assert self.sets is not None
        sets = self.sets
        return tuple(sets[s - 1] if s else 0 for s in self.column)

    def bit(self, name: str) -> int:
        return 1 << (len(self.variables) - 1 - self.variables.index(name))

    def bits(self, names: Iterator[str] | list[str]) -> int:
        mask = 0
        for name in names:
            mask |= self.bit(name)
        return mask

    def text(self, mask: int) -> str:
        """A bit vector as the paper writes it: variable 1 first."""
        return format(mask, f"0{len(self.variables)}b")


def shape(analysis: Analysis) -> SetLayout:
    names = tuple(v.name for v in analysis.positive)
    draft = SetLayout(names, 0, 0, None)
    sets = None if analysis.ses is None else tuple(draft.bits(list(s)) for s in analysis.ses)
    return SetLayout(names, analysis.least, draft.bits(list(analysis.first)), sets)


# ---- the summary statistics ---------------------------------------------------------------


class Summary:
    """Definition 5's counters over one window, kept as the paper's bit vectors (section 5).

    `counts[j]` counts the window's events that satisfy variable j's properties and arrived
    after an event counted for each variable of the set before j's; `zero` is the vector s̄
    (bit j set while counts[j] is 0); `before[j]` is the mask b̄ of the set before j's. An
    event counts for j if its vector has bit j and `zero & before[j] == 0` held when it
    arrived. When a counter drops to zero on dequeue, the counters of every later set are
    reset (their events can no longer follow one of that variable); an epoch per set lets
    the events counted before a reset leave without counting down again. All counters
    positive (`zero == 0`) is Theorem 3's test of conditions 6 and 7.
    """

    def __init__(self, shape: SetLayout) -> None:
        assert shape.sets is not None
        self.shape = shape
        m = len(shape.variables)
        self.counts = [0] * m
        self.zero = (1 << m) - 1
        self.column, self.before = shape.column, shape.before
        self.epochs = [0] * len(shape.sets)

    def add(self, vector: int) -> tuple[int, tuple[int, ...]] | None:
        """Count an arriving event; return what it counted for, to undo on dequeue (None:
        nothing)."""
        zero, m, counts, before = self.zero, len(self.counts), self.counts, self.before
        counted = 0
        rest = vector
        while rest:  # the event's bits, lowest first
            bit = rest & -rest
            rest ^= bit
            j = m - bit.bit_length()
            if not zero & before[j]:
                counts[j] += 1
                counted |= bit
        if not counted:
            return None
        self.zero = zero & ~counted
        return counted, tuple(self.epochs)

    def remove(self, counted: int, epochs: tuple[int, ...]) -> None:
        """Uncount the window's first event as it leaves."""
        m, counts = len(self.counts), self.counts
        rest = counted
        while rest:
            bit = rest & -rest
            rest ^= bit
            j = m - bit.bit_length()
            s = self.column[j]
            if epochs[s] != self.epochs[s]:
                continue
            counts[j] -= 1
            if counts[j] == 0:
                self.zero |= bit
                self._reset_after(s)

    def _reset_after(self, s: int) -> None:
        m = len(self.counts)
        for j in range(m):
            if self.column[j] > s and self.counts[j]:
                self.counts[j] = 0
                self.zero |= 1 << (m - 1 - j)
        for later in range(s + 1, len(self.epochs)):
            self.epochs[later] += 1

    def __repr__(self) -> str:
        counts = zip(self.shape.variables, self.counts, strict=True)
        pairs = ", ".join(f"({v}, {c})" for v, c in counts)
        return f"⟨{pairs}⟩"


# ---- the plan -----------------------------------------------------------------------------


@dataclass
class WindowState:
    """One partition's match window: events with their bit vectors and what they counted."""

    window: deque[tuple[Event, int, tuple[int, tuple[int, ...]] | None]] = field(
        default_factory=deque
    )
    summary: Summary | None = None
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("filtered", "windows", "pruned", "calls", "events_to_inner"), 0
        )
    )


_PRUNING = frozenset("fpc")


@register
class MatchWindow(Plan[WindowState]):
    """Match windows around an inner plan, with filtering, partitioning and necessary match
    conditions."""

    name = "match_window"
    analysis: Analysis
    #: A window's matches are found once the window has passed its first event.
    limits = frozenset({"prompt_emission"})

    @classmethod
    def unsupported(cls, analysis: Analysis, options: Options) -> str | None:
        reason = super().unsupported(analysis, options)
        if reason is not None:
            return reason
        if analysis.pattern.within is None:
            return "a match window needs the pattern's WITHIN"
        if analysis.pattern.within.exclusive:
            return "its match windows are inclusive (last - first <= W): drop EXCLUSIVE"
        if options.output != "all" or analysis.skips:
            return (
                "it finds all matches (a non-overlapping choice or an AFTER MATCH SKIP depends "
                "on other windows)"
            )
        if options.on_limit == "drop":
            return "its inner plan runs each window apart, so what a guard drops goes uncounted"
        if not analysis.prefilter_safe:
            return "under a contiguity strategy an event outside the window's plan breaks runs"
        if any(not n.before & analysis.mandatory for n in analysis.negations.values()):
            return (
                "a negation with no event of the match surely before it looks back before "
                "the match's first event, out of the window"
            )
        return None

    def __init__(self, analysis: Analysis, options: Options) -> None:
        super().__init__(analysis, options)
        if not set(options.pruning) <= _PRUNING:
            raise PlanError(f"pruning takes the letters f, p and c, not {options.pruning!r}")
        if options.inner == self.name:
            raise PlanError("the inner plan of match_window cannot be match_window")
        assert self.window is not None
        self.span: float = self.window
        self.filtering = "f" in options.pruning
        self.partitioning = "p" in options.pruning and analysis.partition is not None
        self.conditions = "c" in options.pruning
        self.shape = shape(analysis)
        self.by_type, self.other = self._tests()
        #: A for windows of events sharing a key value (the key's equalities dropped when
        #: partitioning), and for the others (no key value, or no partitioning).
        self.inner = self._inner(analysis)
        self.keyed = self._inner(_without_key(analysis)) if self.partitioning else self.inner

    def _inner(self, analysis: Analysis) -> Plan[Any]:
        options = replace(self.options, inner="auto", pruning="fpc")
        return instantiate(self.options.inner, analysis, options)

    def _tests(self) -> tuple[dict[str, TypeTests], TypeTests]:
        """What an event's vector reads, by its type (and for the types no variable names):
        the bits of the variables that take the type without a property of their own, and
        the others' bits (positive ones; 0 for negated ones) with their properties, compiled
        (`kleene.compiler.codegen`)."""
        analysis = self.analysis
        tested: list[tuple[int, frozenset[str] | None, tuple[Property, ...]]] = []
        for name, variable in analysis.variables.items():
            bit = 0 if variable.negated else self.shape.bit(name)
            checks = tuple(
                (name, 1 if c.indexed else None, compile_condition(c.expr, analysis.functions))
                for c in analysis.properties[name]
            )
            tested.append((bit, variable.types, checks))

        def tests(event_type: str | None) -> TypeTests:
            taken = [
                (bit, checks)
                for bit, types, checks in tested
                if types is None or event_type in types
            ]
            plain = [bit for bit, checks in taken if not checks]
            bits = 0
            for bit in plain:
                bits |= bit
            return bits, bool(plain), tuple((bit, checks) for bit, checks in taken if checks)

        named = {t for _, types, _ in tested if types is not None for t in types}
        return {t: tests(t) for t in named}, tests(None)

    @property
    def partition_key(self) -> Callable[[Event], Hashable | None] | None:
        return super().partition_key if self.partitioning else None

    def describe(self) -> str:
        shape = self.shape
        pruning = [
            name
            for on, name in (
                (self.filtering, "f (filtering)"),
                (self.partitioning, "p (partitioning)"),
                (self.conditions, "c (necessary match conditions)"),
            )
            if on
        ]
        lines = [
            f"{'inner plan:':<16}{self.inner.name}",
            f"{'pruning:':<16}{', '.join(pruning) or 'none (the plain match window)'}",
            f"{'variables:':<16}{', '.join(shape.variables)}",
            f"{'least events:':<16}{shape.least}",
            f"{'first:':<16}{shape.text(shape.first)}",
        ]
        if shape.sets is not None:
            sets = " ".join(shape.text(mask) for mask in shape.sets)
            lines.append(f"{'sets (SES):':<16}{sets}")
        inner = self.inner.describe()
        if inner:
            lines += ["inner:", *(f"  {line}" for line in inner.splitlines())]
        return "\n".join(lines)

    # -- states ---------------------------------------------------------------------------

    def new_state(self) -> WindowState:
        summary = Summary(self.shape) if self.conditions and self.shape.sets else None
        return WindowState(summary=summary)

    def counters(self, state: WindowState) -> dict[str, int]:
        return dict(state.counters)

    def deadline(self, state: WindowState) -> float | None:
        """When the first window closes, if some window may hold a match. Else, until
        another event comes, none can: no later window passes conditions (4), (6) and (7)
        that the first fails (each holds fewer of the same events, and its summary keeps
        every counter the first has at zero). The windows then wait for the partition's
        next event, or go a window's length after the first closes, many at once."""
        window = state.window
        if not window:
            return None
        if self._filled(state):
            return window[0][0].t + self.span
        return window[0][0].t + 2 * self.span

    def idle(self, state: WindowState, watermark: Watermark) -> bool:
        return not state.window

    def live_runs(self, state: WindowState) -> int:
        return len(state.window)

    # -- events ---------------------------------------------------------------------------

    def vector(self, event: Event) -> int | None:
        """The event's bit vector (ē: bit j set when it satisfies variable j's properties);
        None when it satisfies no variable's, negated ones included."""
        vector, relevant, tested = self.by_type.get(event.type, self.other)
        for bit, properties in tested:
            if _satisfies(event, properties):
                vector |= bit
                relevant = True
        return vector if relevant else None

    def step(self, state: WindowState, event: Event) -> list[Match]:
        window, t = state.window, event.t
        found = (
            self.advance(state, Watermark(t, inclusive=False))
            if window and window[0][0].t + self.span < t  # a window closes before it
            else []
        )
        vector = self.vector(event)
        if vector is None and self.filtering:
            state.counters["filtered"] += 1
            return found
        vector = vector or 0
        if not window and self.conditions and not vector & self.shape.first:
            # a window of its own would fail condition (5), and no earlier one is open
            state.counters["windows"] += 1
            state.counters["pruned"] += 1
            return found
        summary = state.summary
        counted = None if summary is None else summary.add(vector)
        state.window.append((event, vector, counted))
        return found

    def advance(self, state: WindowState, watermark: Watermark) -> list[Match]:
        """Close every window whose time span has passed: match it if it may hold a match
        starting at its first event, then drop that event (Algorithm 1)."""
        window = state.window
        found: list[Match] = []
        while window and watermark.settles(window[0][0].t + self.span):
            candidate = self._candidate(state)
            if candidate:
                found += self._match(state)
            self._leave(state, pruned=not candidate)
            if self.conditions:  # the windows that cannot begin a match (5) go at once
                first = self.shape.first
                while window and not window[0][1] & first:
                    self._leave(state, pruned=True)
        return found

    def _leave(self, state: WindowState, pruned: bool) -> None:
        """Drop the first window's first event (its window done), and uncount it."""
        state.counters["windows"] += 1
        if pruned:
            state.counters["pruned"] += 1
        _, _, counted = state.window.popleft()
        if state.summary is not None and counted is not None:
            state.summary.remove(*counted)

    def _candidate(self, state: WindowState) -> bool:
        """Theorem 2's necessary match conditions (4-7) for the window's first event."""
        return self._filled(state) and (
            not self.conditions or bool(state.window[0][1] & self.shape.first)
        )

    def _filled(self, state: WindowState) -> bool:
        """Conditions (4), (6) and (7) for the first window (true without pruning by them)."""
        if not self.conditions:
            return True
        summary = state.summary
        return len(state.window) >= self.shape.least and (summary is None or summary.zero == 0)

    def _match(self, state: WindowState) -> list[Match]:
        """A(P, W): the inner plan's matches over the window that start at its first event."""
        events = [event for event, _, _ in state.window]
        partition = self.analysis.partition
        key = None if not self.partitioning or partition is None else partition.key(events[0])
        if key is None:
            inner = self.inner
        else:  # the keyed plan leaves the key's equalities out: keep the key's events only
            inner = self.keyed  # (a state sees other keys' events when the stream is not split)
            events = [e for e in events if partition.key(e) == key]  # type: ignore[union-attr]
        state.counters["calls"] += 1
        state.counters["events_to_inner"] += len(events)
        return inner.matches_from(events)


#: A property compiled: its variable, the instance it reads (1 for `v[i]`), its test.
Property = tuple[str, int | None, Check]
#: What an event of one type reads for its vector (`MatchWindow._tests`).
TypeTests = tuple[int, bool, tuple[tuple[int, tuple[Property, ...]], ...]]


def _satisfies(event: Event, properties: tuple[Property, ...]) -> bool:
    """Does the event satisfy these properties? A property that cannot be evaluated on it
    (a type clash) counts as satisfied: the inner plan decides, and raises if it must."""
    for name, instance, check in properties:
        try:
            if not check({name: (event,)}, instance):
                return False
        except EventError:
            continue
    return True


def _without_key(analysis: Analysis) -> Analysis:
    """The pattern without the equalities the partition key implies (every event of a
    keyed window shares the key's values)."""
    partition = analysis.partition
    assert partition is not None
    members = [set(m) for m in partition.classes]
    equivalent = {attr for m in members for _, attr in m if len({a for _, a in m}) == 1}

    def implied(expr: E.Expr) -> bool:
        if isinstance(expr, E.Equivalence):
            return set(expr.attrs) <= equivalent
        if isinstance(expr, E.Compare) and expr.op == "=":
            left, right = expr.left, expr.right
            if (
                isinstance(left, E.Attr)
                and isinstance(right, E.Attr)
                and left.index is None
                and right.index is None
            ):
                pair = {(left.var, left.attr), (right.var, right.attr)}
                return any(pair <= m for m in members)
        return False

    pattern = analysis.pattern
    kept = [c for c in E.conjuncts(pattern.where) if not implied(c)]
    where = E.conjunction(*kept) if kept else None
    return analyze(replace(pattern, where=where), analysis.functions)
