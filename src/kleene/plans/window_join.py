"""`window_join`: skip-till-any-match over a window as loops over buffered events, in Python
generated for the query.

Under skip till any match with a window, a match of a flat SEQ (or AND) of single events is
any choice of one event per variable, in pattern order (any order for AND), all within the
window, that satisfies the conditions: no run needs to be kept, only the events of the last
window. So the plan keeps, per equivalence key, each variable's events of the last W time
units whose properties hold (checked once, when they arrive), and when an event that can be
the last of a match arrives it runs loops written for the query: one per variable, the
latest bound first, each condition tested in the loop where its last variable is bound,
each negation between two neighbours tested by a bisect into the negated events' positions.
No runs, no versioned buffer, no merging: CPython runs little more than the loops one would
write by hand (docs/benchmarks-journal.md: against CORE).

It runs skip_till_any_match with WITHIN, all matches (output="all", selection "all"), over
a SEQ of single-event variables with negations between two of them whose conditions read
the negated event alone, or an AND of single-event variables. It refuses anything else
with the reason, and `auto` goes on to the next plan.

>>> import kleene
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5", "window_join")
>>> print(plan.describe())
on B as b (last): for a (before b): a.x < b.x
>>> events = [kleene.Event("A", 1, {"x": 1}, 0), kleene.Event("A", 2, {"x": 9}, 1),
...           kleene.Event("B", 4, {"x": 5}, 2)]
>>> [m.ids() for m in kleene.match(plan, events)]
[{'a': (0,), 'b': (2,)}]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, combinations, islice
from math import comb
from operator import itemgetter
from typing import Any

from kleene.compiler.analysis import Analysis, Condition, Variable
from kleene.compiler.codegen import Writer
from kleene.compiler.evaluate import equivalence_values
from kleene.compiler.options import Options
from kleene.events import ATOMS, Event, Watermark, attribute_slot
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.matches import Match
from kleene.plans.base import Joint, Plan, register

__all__ = ["JoinState", "WindowJoinPlan"]

#: A buffer: (position, event) of one variable's events in the window, oldest first.
Buffer = list[tuple[int, Event]]


@dataclass
class JoinState:
    """One partition's window: per equivalence key, a buffer per positive variable (then one
    per negated variable), and the next arrival position."""

    position: int = 0
    buckets: dict[Hashable, list[Buffer]] = field(default_factory=dict)
    #: Sweep every key's buffers when the position reaches this (stale keys go).
    sweep_at: int = 1024
    #: Matches made, events buffered, events whose matches `max_matches_per_event` cut.
    completions: int = 0
    buffered: int = 0
    cut_events: int = 0


class _Full(Exception):  # noqa: N818 - a signal, not an error: stop the loops
    """The matches of one event reached `max_matches_per_event` under on_limit="drop"."""


#: The most variables a join nests loops for (Python allows 20 nested blocks; a condition
#: between two variables takes one of its own).
MAX_VARIABLES = 16


@register
class WindowJoinPlan(Plan[JoinState]):
    name = "window_join"
    analysis: Analysis

    @classmethod
    def unsupported(cls, analysis: Analysis, options: Options) -> str | None:
        reason = super().unsupported(analysis, options)
        if reason is not None:
            return reason
        if analysis.strategy != "skip_till_any_match":
            return "it joins any events of the window, which only skip_till_any_match allows"
        if analysis.pattern.within is None:
            return "it keeps the events of the window: the pattern needs WITHIN"
        if options.output != "all" or options.selection != "all" or analysis.skips:
            return "it reports every match (output='all', selection 'all', no AFTER MATCH SKIP)"
        if len(analysis.positive) > MAX_VARIABLES:
            return (
                f"its generated code nests a loop for each variable, and Python nests 20 "
                f"blocks at most: it joins up to {MAX_VARIABLES} variables, this pattern has "
                f"{len(analysis.positive)}"
            )
        return _shape(analysis)

    def __init__(self, analysis: Analysis, options: Options) -> None:
        super().__init__(analysis, options)
        assert self.window is not None
        structure = analysis.structure
        #: A SEQ (its variables bind events in pattern order), or an AND (any order)?
        self.in_sequence = isinstance(structure, A.Seq)
        items = structure.items if isinstance(structure, A.Seq | A.And) else (structure,)
        #: The positive variables in pattern order; negated ones, each with its neighbours.
        self.positive: list[Variable] = list(analysis.positive)
        index = {v.name: i for i, v in enumerate(self.positive)}
        self.negations: list[tuple[Variable, int, int]] = []
        before = -1
        for at, item in enumerate(items):
            if isinstance(item, A.EventVar):
                before = index[item.name]
            elif isinstance(item, A.Negation):
                after = next(index[i.name] for i in items[at + 1 :] if isinstance(i, A.EventVar))
                self.negations.append((analysis.variables[item.event.name], before, after))
        self.equivalences = analysis.equivalences
        #: An event's equivalence values, the key of its bucket (None: it lacks one).
        self._key = equivalence_values(self.equivalences)
        #: Per event type, the step for its events, eager and lazy, found when the type
        #: first comes: the one written for its route (`_written`: types that share a
        #: route, say every type a wildcard takes, share a step).
        self._steps: dict[str, Callable[[JoinState, Event], list[Match]]] = {}
        self._lazy_steps: dict[str, Callable[[JoinState, Event, list[Any]], list[Match]]] = {}
        self._written: dict[tuple[tuple[int, ...], tuple[int, ...], bool], Callable[..., Any]] = {}
        self._code = _Code(self)
        #: Per variable that can end a match: the loops that complete it.
        count = len(self.positive)
        both = {
            k: self._code.completer(k)
            for k in ([count - 1] if self.in_sequence else [*range(count)])
        }
        self.completers: dict[int, Callable[..., None]] = {k: c for k, (c, _) in both.items()}
        #: Each completer's generator twin (`step_lazily`).
        self.lazy: dict[Callable[..., None], Callable[..., Iterator[Match]]] = dict(both.values())
        self.properties = [self._code.property(v.name) for v in self.positive] + [
            self._code.property(n.name) for n, _, _ in self.negations
        ]

    def describe(self) -> str:
        return "\n".join(self._code.plans)

    @property
    def timed(self) -> bool:
        return False

    def new_state(self) -> JoinState:
        return JoinState()

    def _step_for(self, event_type: str, lazily: bool) -> Callable[..., Any]:
        """The step for events of this type: written for its route (`_Code.step`) when no
        type before had the same route."""
        ends, kept = self._route(event_type)
        route = (tuple(ends), tuple(kept), lazily)
        step = self._written.get(route)
        if step is None:
            step = self._written[route] = self._code.step(ends, kept, lazily)
        return step

    def _route(self, event_type: str) -> tuple[list[int], list[int]]:
        """What an event of this type may be: the end of a match (the slots of the
        completers it may end), a buffered variable's event or a negated variable's (the
        slots of the buffers it may join)."""
        slots = [i for i, v in enumerate(self.positive) if v.takes(event_type)]
        ends = [k for k in self.completers if k in slots]
        kept = [s for s in slots if not self.in_sequence or s != len(self.positive) - 1]
        kept += [
            len(self.positive) + j
            for j, (n, _, _) in enumerate(self.negations)
            if n.takes(event_type)
        ]
        return ends, kept

    def step(self, state: JoinState, event: Event) -> list[Match]:
        """`Plan.step`: the step written for the event's type (`_Code.step`: a
        loop over the peers' P0 calling the step ran 1.16x the one interpreted step for
        every type)."""
        return self.step_for(event.type)(state, event)

    def step_for(self, event_type: str) -> Callable[[JoinState, Event], list[Match]]:
        step = self._steps.get(event_type)
        if step is None:
            step = self._steps[event_type] = self._step_for(event_type, lazily=False)
        return step

    def step_lazily(self, state: JoinState, event: Event) -> Iterable[Match]:
        """`Plan.step_lazily`: the event is buffered now, and the loops run as the matches
        are asked for (each stops at the event's own position, so they read the window as
        it was before it)."""
        made: list[Iterator[Match]] = []
        step = self._lazy_steps.get(event.type)
        if step is None:
            step = self._lazy_steps[event.type] = self._step_for(event.type, lazily=True)
        step(state, event, made)
        if not made:
            return []

        def counted(number: int, cut: bool) -> None:
            state.completions += number
            state.cut_events += cut

        return self.capped(chain.from_iterable(made), event, counted)

    def _sweep(self, state: JoinState, low: float) -> None:
        """Drop every key's events that left the window, and the keys left empty."""
        for key, bucket in list(state.buckets.items()):
            for buffer in bucket:
                _expire(buffer, low)
            if not any(bucket):
                del state.buckets[key]
        state.sweep_at = state.position + max(1024, 4 * len(state.buckets))

    def full(self, event: Event, found: list[Match]) -> None:
        """The guard, called by the generated loops past `max_matches_per_event`."""
        if self.options.on_limit != "drop":
            raise self.too_many_matches(event)
        del found[int(self.match_cap) :]
        raise _Full

    def advance(self, state: JoinState, watermark: Watermark) -> list[Match]:
        return []

    def idle(self, state: JoinState, watermark: Watermark) -> bool:
        low = watermark.t - self.window  # type: ignore[operator]
        positives = len(self.positive)
        return not any(
            buffer and buffer[-1][1].t >= low
            for bucket in state.buckets.values()
            for buffer in bucket[:positives]
        )

    def counters(self, state: JoinState) -> dict[str, int]:
        counters = {"completions": state.completions, "buffered": state.buffered}
        return counters | ({"cut_events": state.cut_events} if state.cut_events else {})

    def joint_key(self) -> Hashable | None:
        """Joins without equivalence tests over one window keep their buffers together
        (`_Joint`): a buffer a variable's type and own conditions, shared by every query
        with such a variable."""
        if self.equivalences:
            return None
        return ("window_join", self.window, self.exclusive)

    @classmethod
    def joint(cls, plans: Sequence[Plan[Any]]) -> Joint:
        joined = [plan for plan in plans if isinstance(plan, WindowJoinPlan)]
        assert len(joined) == len(plans), "a window join steps jointly with window joins"
        return _Joint(joined)

    def _signatures(self) -> list[Hashable]:
        """What each buffer (positive variables', then negated ones') keeps: the events of
        its variable's types for which its own conditions hold, named by both."""
        variables = [*self.positive, *(n for n, _, _ in self.negations)]
        return [
            (
                None if v.types is None else frozenset(v.types),
                tuple(c.text for c in self.analysis.conditions if c.property_of == v.name)
                if self.properties[slot] is not _always
                else (),
            )
            for slot, v in enumerate(variables)
        ]


class _Joint(Joint):
    """Window joins stepping as one: each buffer of equal signature (`_signatures`) is one
    list in every plan's state, an event is kept in it once, numbered once (positions
    count the events any of the plans takes), and the loops of each plan the event may
    complete read the shared buffers, cut to the window first. What each plan's own step
    would do, with a buffer's appends and cuts done once for all (the rules benchmark:
    docs/benchmarks.md)."""

    def __init__(self, plans: list[WindowJoinPlan]) -> None:
        self.plans = plans
        first = plans[0]
        self.window: float = first.window  # type: ignore[assignment]
        self.exclusive = first.exclusive
        self.signatures = [plan._signatures() for plan in plans]
        #: The signatures of the buffers each plan's step appends to (every slot but a
        #: SEQ's last positive variable's), for its `buffered` counter.
        self.kept = [
            [
                signature
                for slot, signature in enumerate(signatures)
                if not (plan.in_sequence and slot == len(plan.positive) - 1)
            ]
            for plan, signatures in zip(plans, self.signatures, strict=True)
        ]
        #: The shared buffers by signature (made by `attach`), and the position reached.
        self.buffers: dict[Hashable, Buffer] = {}
        self.position = 0
        self.states: list[JoinState] = []
        #: Per event type: its step (`_joint_step`), written when the type first comes.
        self.routes: dict[str, Callable[..., list[Match]]] = {}
        self.sweep_at = 1024

    def attach(self, states: Sequence[Any]) -> None:
        self.states = list(states)
        for state, signatures in zip(self.states, self.signatures, strict=True):
            bucket = state.buckets.get(())
            for slot, signature in enumerate(signatures):
                if signature not in self.buffers:  # the first state's (a resumed one's) own
                    self.buffers[signature] = [] if bucket is None else bucket[slot]
            state.buckets[()] = [self.buffers[signature] for signature in signatures]
            self.position = max(self.position, state.position)
        self.routes.clear()

    def _route(self, event_type: str) -> Callable[..., list[Match]]:
        """The step for events of one type, written out (`_joint_step`): cut the buffers
        its completers read to the window, run each completer whose ending variable's own
        test holds, then keep the event in each buffer whose test holds."""
        completers: list[tuple[int, JoinState, Any, list[Buffer], Any]] = []
        read: dict[int, Buffer] = {}
        kept: dict[int, tuple[Buffer, Callable[[Event], bool], Hashable]] = {}
        for number, (plan, state) in enumerate(zip(self.plans, self.states, strict=True)):
            ends, slots = plan._route(event_type)
            bucket = state.buckets[()]
            for k in ends:
                completers.append((number, state, plan.completers[k], bucket, plan.properties[k]))
                read.update((id(buffer), buffer) for buffer in bucket)
            for slot in slots:
                signature = self.signatures[number][slot]
                kept.setdefault(id(bucket[slot]), (bucket[slot], plan.properties[slot], signature))
        numbers = {signature: at for at, signature in enumerate(self.buffers)}
        step = _joint_step(
            self.window,
            self.exclusive,
            completers,
            list(read.values()),
            [(buffer, holds, numbers[signature]) for buffer, holds, signature in kept.values()],
        )
        self.routes[event_type] = step
        return step

    def run(self, events: Sequence[Event]) -> list[list[tuple[Event, list[Any]]]]:
        out: list[list[tuple[Event, list[Any]]]] = [[] for _ in self.plans]
        routes = self.routes
        appended = [0] * len(self.buffers)
        # (a state stepped alone meanwhile numbered its events on: go on after them)
        position = max(self.position, *(state.position for state in self.states))
        found: list[Match] = []  # a completer's matches (a new list once they are handed out)
        sweep_at = self.sweep_at
        for event in events:
            position += 1
            step = routes.get(event.type)
            if step is None:
                step = self._route(event.type)
            found = step(event, position, found, out, appended)
            if position >= sweep_at:
                self._sweep(event.t - self.window, position)
                sweep_at = self.sweep_at
        self.position = position
        counted = dict(zip(self.buffers, appended, strict=True))
        for state, kept_by in zip(self.states, self.kept, strict=True):
            state.position = position
            state.buffered += sum(counted[signature] for signature in kept_by)
        return out

    def _sweep(self, low: float, position: int) -> None:
        """Cut every buffer to the window now and then (one no completer reads for a
        while would keep what left it)."""
        for buffer in self.buffers.values():
            _expire(buffer, low, self.exclusive)
        self.sweep_at = position + 1024


def _joint_step(
    window: float,
    exclusive: bool,
    completers: list[tuple[int, JoinState, Callable[..., None], list[Buffer], Any]],
    read: list[Buffer],
    kept: list[tuple[Buffer, Callable[[Event], bool], int]],
) -> Callable[..., list[Match]]:
    """`_Joint`'s step for one event type as one generated function, `step(event,
    position, found, out, appended)`: what the loop over the route's lists did, with
    every buffer, completer, test and state a name of its own (0.60 of the loop's
    bytecodes on the rules benchmark: 325 an event against 539). It returns the list the
    next matches go to."""
    names: dict[str, Any] = {"EXPIRE": _expire, "FULL": _Full, "WINDOW": window}
    lines = ["def step(event, position, found, out, appended):\n"]
    if completers:
        late = "<=" if exclusive else "<"
        lines.append("    low = event.t - WINDOW\n")
        for at, buffer in enumerate(read):
            names[f"R{at}"] = buffer
            lines.append(
                f"    if R{at} and R{at}[0][1].t {late} low: EXPIRE(R{at}, low, {exclusive})\n"
            )
    for at, (number, state, complete, bucket, holds) in enumerate(completers):
        names.update({f"C{at}": complete, f"B{at}": bucket, f"S{at}": state, f"H{at}": holds})
        indent = "    "
        if holds is not _always:
            lines.append(f"    if H{at}(event):\n")
            indent = "        "
        lines += [
            f"{indent}try:\n",
            f"{indent}    C{at}(B{at}, event, position, found)\n",
            f"{indent}except FULL:\n",
            f"{indent}    S{at}.cut_events += 1\n",
            f"{indent}if found:\n",
            f"{indent}    S{at}.completions += len(found)\n",
            f"{indent}    out[{number}].append((event, found))\n",
            f"{indent}    found = []\n",
        ]
    for at, (buffer, holds, number) in enumerate(kept):
        names.update({f"K{at}": buffer, f"KH{at}": holds})
        test = "" if holds is _always else f"if KH{at}(event): "
        lines.append(f"    {test}K{at}.append((position, event)); appended[{number}] += 1\n")
    lines.append("    return found\n")
    exec(compile("".join(lines), "<kleene joint>", "exec"), names)
    step: Callable[..., list[Match]] = names["step"]
    return step


def _expire(buffer: Buffer, low: float, strict: bool = False) -> None:
    """Drop a buffer's events before `low`, or at it too when `strict` (WITHIN ...
    EXCLUSIVE): a negated event before every event of the window can no longer sit between
    two of them. (The step writes the same loop out, for each buffer.)"""
    for at, (_, event) in enumerate(buffer):
        if not (event.t <= low if strict else event.t < low):
            del buffer[:at]
            return
    buffer.clear()


#: Marks a line of the loops that only their generator form has (`_Code.completer`).
_LAZY = "\0"

#: A buffer entry's position (the key the loops bisect buffers by, read in C).
_position: Callable[[tuple[int, Event]], int] = itemgetter(0)


def _shape(analysis: Analysis) -> str | None:
    """Why the pattern is not a flat SEQ or AND of single events (None when it is one)."""
    structure = analysis.structure
    items = structure.items if isinstance(structure, A.Seq | A.And) else (structure,)
    if not isinstance(structure, A.Seq | A.And | A.EventVar):
        return "it joins a flat SEQ or AND of events, not an OR"
    for at, item in enumerate(items):
        if isinstance(item, A.EventVar):
            if item.kleene:
                reason = _kleene_refusal(analysis, items, at)
                if reason is not None:
                    return reason
        elif isinstance(item, A.Negation):
            if isinstance(structure, A.And):
                return "a negation inside AND has no neighbours to sit between"
            if at == 0 or at == len(items) - 1:
                return "a negation at either end of a SEQ looks beyond the match"
        else:
            return "it joins a flat SEQ or AND of events, not a nested one"
    for condition in analysis.conditions:
        if any(isinstance(n, E.Equivalence) for n in E.walk(condition.expr)):
            return "an equivalence test inside a condition"
        if condition.negated is not None and condition.variables:
            return (
                f"a condition relates the negated {condition.negated} to other variables "
                f"({condition.text})"
            )
    return None


def _kleene_refusal(analysis: Analysis, items: tuple[A.Element, ...], at: int) -> str | None:
    """Why the Kleene variable at `at` cannot be joined as any subset of its events between
    its two neighbours (None: it can)."""
    item = items[at]
    assert isinstance(item, A.EventVar)
    name = f"{item.name}[]"
    if not isinstance(analysis.structure, A.Seq):
        return f"{name}: a Kleene variable is joined in a SEQ, not an AND"
    if at == len(items) - 1:
        return f"{name}: a Kleene variable ends the SEQ"
    if analysis.variables[item.name].min == 0:
        return f"{name}: a Kleene variable that may bind no event"
    neighbours = [items[i] for i in (at - 1, at + 1) if 0 <= i < len(items)]
    if any(not isinstance(n, A.EventVar) or n.kleene for n in neighbours):
        return f"{name}: a Kleene variable next to a negation or another Kleene variable"
    for condition in analysis.conditions:
        mentioned = condition.variables | ({condition.negated} if condition.negated else set())
        if item.name in mentioned and condition.property_of != item.name:
            return f"{name}: a condition on its events together ({condition.text})"
    return None


class _Code(Writer):
    """Writes the plan's loops: a variable's event is the local `e<slot>`, its position
    `p<slot>`."""

    def __init__(self, plan: WindowJoinPlan) -> None:
        super().__init__(plan.analysis.functions)
        self.plan = plan
        self.slots = {v.name: i for i, v in enumerate(plan.positive)}
        self.slots.update(
            {n.name: len(plan.positive) + j for j, (n, _, _) in enumerate(plan.negations)}
        )
        self.plans: list[str] = []
        self.choices = _Choices(plan.positive, plan.pattern_name)

    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Any) -> str:
        assert isinstance(node, E.Attr)  # one event: no b.len, no aggregates
        assert node.index is None or (node.index.base, node.index.offset) == ("i", 0)
        event = f"e{self.slots[node.var]}"
        if node.attr in ("ts", "type", "id"):
            return f"_attr({event}, {node.attr!r})"
        return f"{event}.{attribute_slot(node.attr)}"

    def test(self, condition: Condition, indent: str) -> str:
        """Code that goes on to the next loop turn when `condition` is not true."""
        fast, safe = self.forms(condition.expr, None)
        if fast == safe:
            return f"{indent}if not ({fast}): continue\n"
        return (
            f"{indent}try:\n{indent}    if not ({fast}): continue\n"
            f"{indent}except (TypeError, ArithmeticError):\n"
            f"{indent}    if not ({safe}): continue\n"
        )

    def step(self, ends: list[int], kept: list[int], lazily: bool = False) -> Callable[..., Any]:
        """The plan's step for events of one type, which may end a match at the slots
        `ends` (each completer after the variable's own test) and join the buffers `kept`:
        the position counted; the event's key and bucket found; for an end, the buffers
        cut to the window and the completers run (`lazily`: added to `made` as generators,
        to be run as their matches are read); the event buffered; every key swept now and
        then. Written out per type, with no test, loop or lookup that the type does not
        need."""
        plan = self.plan
        lines = [
            f"def step(state, event{', made' if lazily else ''}):\n",
            "    position = state.position\n    state.position = position + 1\n",
        ]
        if not ends and not kept:
            lines.append("    return []\n")
        else:
            equivalences = plan.equivalences
            if len(equivalences) == 1 and equivalences[0] not in ("ts", "type", "id"):
                # (read from its slot: an atom is its own key, KEY makes any other value's)
                lines.append(
                    f"    key = event.{attribute_slot(equivalences[0])}\n"
                    "    if key is None:\n        return []\n"
                    "    key = (key,) if key.__class__ in ATOMS else KEY(event)\n"
                )
            elif equivalences:  # an event without an equivalence attribute is in no match
                lines.append("    key = KEY(event)\n    if key is None:\n        return []\n")
            else:
                lines.append("    key = ()\n")
            lines.append(
                "    bucket = state.buckets.get(key)\n    if bucket is None:\n"
                "        bucket = state.buckets[key] = [[] for _ in range(BUFFERS)]\n"
            )
            if ends:
                lines.append("    found = []\n")
        helpers: dict[str, Any] = {
            "KEY": plan._key,
            "ATOMS": ATOMS,
            "BUFFERS": len(plan.properties),
            "WINDOW": plan.window,
            "FULL": _Full,
            "SWEEP": plan._sweep,
        }
        if ends:  # the loops read the window: its buffers drop what left it first
            # (`_expire`, written out for each buffer: a call fewer an event)
            edge = "<=" if plan.exclusive else "<"
            lines.append("    low = event.t - WINDOW\n")
            never = len(plan.positive) - 1 if plan.in_sequence else None  # (`_route`)
            for slot in range(len(plan.properties)):
                if slot == never:
                    continue  # a SEQ's last variable is never buffered
                lines.append(
                    f"    b = bucket[{slot}]\n    if b and b[0][1].t {edge} low:\n"
                    f"        for i, (_, x) in enumerate(b):\n"
                    f"            if not x.t {edge} low: break\n"
                    "        else:\n            i = len(b)\n"
                    "        del b[:i]\n"
                )
            calls = []
            for k in ends:
                complete = plan.completers[k]
                helpers[f"COMPLETE{k}"] = plan.lazy[complete] if lazily else complete
                call = (
                    f"made.append(COMPLETE{k}(bucket, event, position))"
                    if lazily
                    else f"COMPLETE{k}(bucket, event, position, found)"
                )
                calls.append(self._held(k, call, helpers))
            if lazily:
                lines += [f"    {call}\n" for call in calls]
            else:
                lines.append("    try:\n")
                lines += [f"        {call}\n" for call in calls]
                lines.append(
                    "    except FULL:\n        state.cut_events += 1\n"
                    "    state.completions += len(found)\n"
                )
        for slot in kept:
            kept_line = f"bucket[{slot}].append((position, event)); state.buffered += 1"
            lines.append(f"    {self._held(slot, kept_line, helpers)}\n")
        if ends or kept:
            lines.append(
                "    if position >= state.sweep_at:\n        SWEEP(state, event.t - WINDOW)\n"
                f"    return {'found' if ends else '[]'}\n"
            )
        step: Callable[..., Any] = self.load("".join(lines), helpers)["step"]
        return step

    def _held(self, slot: int, statement: str, helpers: dict[str, Any]) -> str:
        """`statement`, run only when the slot's variable's own test holds (if it has one)."""
        holds = self.plan.properties[slot]
        if holds is _always:
            return statement
        helpers[f"HOLDS{slot}"] = holds
        return f"if HOLDS{slot}(event): {statement}"

    def property(self, name: str) -> Callable[[Event], bool]:
        """A test of the variable's own conditions on one event."""
        conditions = [c for c in self.plan.analysis.conditions if c.property_of == name]
        if not conditions:
            return _always
        slot = self.slots[name]
        body = "".join(self.test(c, "        ") for c in conditions)
        source = f"def holds(e{slot}):\n    for _ in (0,):\n{body}        return True\n"
        source += "    return False\n"
        holds: Callable[[Event], bool] = self.load(source)["holds"]
        return holds

    def _window_of(self, kleene: list[int], bound: int, last: int, indent: str) -> list[str]:
        """Once `bound` is bound, what a Kleene variable next to it can be: for one just
        before it, its events (`w<s>`) and their ids (`wi<s>`) before `bound`; for one just
        after it (whose later neighbour a SEQ's loops bind first), those after `bound` too
        (`es<s>`, `is<s>`). None of them: no match here, as the variable binds one event at
        least. (Made in the innermost loop, once per binding of both neighbours,
        the lists cost 8 % of the peers' P2.)"""
        lines = []
        slot = bound - 1
        if slot in kleene:
            lines += [
                f"c{slot} = bucket[{slot}]",
                f"h{slot} = _bisect_left(c{slot}, p{bound}, key=_position)",
                f"if not h{slot}: {'return' if bound == last else 'continue'}",
                f"w{slot} = [e for _, e in c{slot}[:h{slot}]]",
                f"wi{slot} = [e.id for e in w{slot}]",
            ]
            if not slot:
                lines += [f"es{slot} = w{slot}", f"is{slot} = wi{slot}"]
        slot = bound + 1
        if slot in kleene:
            lines += [
                f"l{slot} = _bisect(c{slot}, p{bound}, 0, h{slot}, key=_position)",
                f"if l{slot} == h{slot}: break",  # none after this binding: none after later ones
                f"es{slot} = w{slot}[l{slot}:]",
                f"is{slot} = wi{slot}[l{slot}:]",
            ]
        return [f"{indent}{line}\n" for line in lines]

    def completer(self, last: int) -> tuple[Callable[..., None], Callable[..., Iterator[Match]]]:
        """The loops completing matches whose latest event binds variable `last`: as a
        function appending them to a list (`complete(bucket, e, p, found)`, which calls
        `FULL` past `CAP`), and as a generator making them one at a time (`made(bucket, e,
        p)`, see `WindowJoinPlan.step_lazily`). The generator is read once the event is
        buffered too, so each of its loops also stops at the event's own position."""
        plan = self.plan
        positive = plan.positive
        kleene = [s for s, v in enumerate(positive) if v.kleene]
        others = [s for s in range(len(positive)) if s != last and s not in kleene]
        if plan.in_sequence:
            others.reverse()  # the latest bound first: each loop stops at its successor
        bound = {last}
        decided = {
            id(c)
            for c in plan.analysis.conditions
            if c.property_of is not None or c.negated is not None
        }
        lines = [f"def complete(bucket, e{last}, p{last}, found):\n"]
        constant_tests = [
            c for c in plan.analysis.conditions if not c.variables and c.negated is None
        ]
        lines += [self.test(c, "    ").replace("continue", "return") for c in constant_tests]
        decided |= {id(c) for c in constant_tests}
        # what each loop level finds is found once there, not once per match: in an AND,
        # the earliest time so far (m<slot>; not b<n>, which the condition writer takes for
        # its own locals)
        lines.append(f"    m{last} = e{last}.t\n")
        lines += self._window_of(kleene, last, last, "    ")
        earliest = f"m{last}"
        described = [f"on {'|'.join(sorted(positive[last].types or ['_']))} as "]
        described[0] += f"{positive[last].name} (last):"
        indent = "    "
        for depth, slot in enumerate(others):
            names = {positive[s].name for s in bound | {slot}}
            # a negation between this variable and a later one, bound already: the loop
            # starts at the last negated event before the later one (none may sit between)
            starts = []
            for j, (_, before, after) in enumerate(plan.negations):
                if before == slot and after in bound:
                    lines.append(
                        f"{indent}n = bucket[{len(positive) + j}]\n"
                        f"{indent}k = _bisect_left(n, p{after}, key=_position)\n"
                        f"{indent}s{j} = _bisect_left(bucket[{slot}], n[k - 1][0], "
                        "key=_position) if k else 0\n"
                    )
                    starts.append(f"s{j}")
            if starts:
                start = starts[0] if len(starts) == 1 else f"max({', '.join(starts)})"
                lines.append(
                    f"{indent}for p{slot}, e{slot} in _islice(bucket[{slot}], {start}, None):\n"
                )
            if plan.in_sequence:
                successor = others[depth - 1] if depth else last
                if not starts:
                    lines.append(f"{indent}for p{slot}, e{slot} in bucket[{slot}]:\n")
                if depth:
                    lines.append(f"{indent}    if p{slot} >= p{successor}: break\n")
                else:
                    lines.append(f"{_LAZY}{indent}    if p{slot} >= p{last}: break\n")
                relation = f"before {positive[successor].name}"
            else:
                lines.append(f"{indent}for p{slot}, e{slot} in bucket[{slot}]:\n")
                lines.append(f"{_LAZY}{indent}    if p{slot} >= p{last}: break\n")
                relation = "any order"
            indent += "    "
            for other in () if plan.in_sequence else bound:  # SEQ: the positions differ
                if other != last and _overlap(positive[slot], positive[other]):
                    lines.append(f"{indent}if p{slot} == p{other}: continue\n")
            unless = []
            for j, (variable, before, after) in enumerate(plan.negations):
                if {before, after} <= bound | {slot} and slot in (before, after):
                    unless.append(
                        f"no {variable.name} between {positive[before].name} and "
                        f"{positive[after].name}"
                    )
                    if before == slot and after in bound:
                        continue  # the loop's start tested it
                    negated = len(positive) + j
                    lines.append(
                        f"{indent}n = bucket[{negated}]\n"
                        f"{indent}if n and (j := _bisect(n, p{before}, key=_position)) < len(n) "
                        f"and n[j][0] < p{after}: continue\n"
                    )
            tests = [
                c for c in plan.analysis.conditions if id(c) not in decided and c.variables <= names
            ]
            decided |= {id(c) for c in tests}
            lines += [self.test(c, indent) for c in tests]
            lines += self._window_of(kleene, slot, last, indent)
            if not plan.in_sequence:
                lines.append(
                    f"{indent}m{slot} = e{slot}.t if e{slot}.t < {earliest} else {earliest}\n"
                )
                earliest = f"m{slot}"
            bound.add(slot)
            shown = " and ".join([*unless, *(c.text for c in tests)])
            described.append(
                f"for {positive[slot].name} ({relation}){': ' + shown if shown else ''}"
            )
        first = earliest  # an AND's earliest time; a SEQ's first event's
        kleene_first = plan.in_sequence and positive[0].kleene  # then each way's own
        if plan.in_sequence:
            first = "f[0].t" if kleene_first else "e0.t"
        if kleene:  # each between its two neighbours, bound by now: any subset of each
            for slot in kleene:
                neighbours = " and ".join(positive[s].name for s in (slot - 1, slot + 1) if s >= 0)
                described.append(f"for {positive[slot].name}[] (any subset between {neighbours})")
            if not kleene_first:
                lines.append(f"{indent}t = {first}\n")  # the same for every subset below
            row = ", ".join(f"*es{s}" if v.kleene else f"e{s}" for s, v in enumerate(positive))
            ids = ", ".join(f"*is{s}" if v.kleene else f"e{s}.id" for s, v in enumerate(positive))
            lines.append(
                f"{indent}row = [{row}]\n{indent}rid = [{ids}]\n"
                f"{indent}for g, sh in CHOICES({', '.join(f'len(es{s})' for s in kleene)}):\n"
                f"{indent}    f = g(row)\n"
            )
            indent += "    "
            if kleene_first:
                lines.append(f"{indent}t = {first}\n")
            laid, order = "f", f"(m{last}, t, g(rid), sh)"
        else:
            lines.append(f"{indent}t = {first}\n")
            flat = ", ".join(f"e{s}" for s in range(len(positive)))
            ids = ", ".join(f"e{s}.id" for s in range(len(positive)))
            laid, order = f"({flat},)", f"(m{last}, t, ({ids},), SHAPE)"
        self.plans.append(" ".join(described))
        helpers = {
            "_new": object.__new__,
            "_Match": Match,
            "_bisect": bisect_right,
            "_bisect_left": bisect_left,
            "_islice": islice,
            "_position": _position,
            "NAME": plan.pattern_name,
            "SHAPE": (plan.pattern_name, tuple((v.name, 1) for v in positive)),
            "CAP": plan.match_cap,
            "FULL": plan.full,
            "CHOICES": self.choices,
        }
        # `Match.laid_out`, written out: one call fewer per match
        made = (
            f"{indent}_m = _new(_Match); _m._flat = {laid}; _m._order = {order}; _m._more = None\n"
        )
        eager = [line for line in lines if not line.startswith(_LAZY)]
        # the guard: after each match where a Kleene variable's subsets may explode, else
        # once the innermost loop (over one buffer, cut to the window) ends; `FULL` keeps
        # the first `CAP` matches made either way
        guarded = kleene or not others
        guard_at = indent if guarded else indent[:-4]
        eager.append(
            f"{made}{indent}found.append(_m)\n{guard_at}if len(found) > CAP: FULL(e{last}, found)\n"
        )
        lazy = [line.removeprefix(_LAZY) for line in lines[1:]]
        lazy.insert(0, f"def made(bucket, e{last}, p{last}):\n")
        lazy.append(f"{made}{indent}yield _m\n")
        complete: Callable[..., None] = self.load("".join(eager), helpers)["complete"]
        generator: Callable[..., Iterator[Match]] = self.load("".join(lazy), helpers)["made"]
        return complete, generator


#: A match's shape: the pattern's name, and each variable's name and number of events (the
#: last part of its sort key).
Shape = tuple[str, tuple[tuple[str, int], ...]]


class _Choices:
    """The ways a match can take its Kleene variables' events, once its other variables are
    bound and each Kleene variable's events between its neighbours are known:
    `choices(k1, k2, ...)`, for the numbers of those events, gives (getter, shape) pairs.
    The getter picks the match's events from a row of the bound events and the Kleene
    variables' events in pattern order, and their ids from a row of ids laid out alike,
    each in one C call; the shape is the sort key's last part.

    They are made once per numbers, in the order of the events they pick (so one binding's
    matches come out as they sort, when the ids follow the stream), and kept while there
    are at most `KEPT`; beyond, made as they are read, so that an explosion stops at the
    match guard before it is built. (A loop over each variable's `combinations`,
    unpacking each into a new tuple of events and one of ids, made the peers' P2 1.3x
    slower, and its sort 2x.)

    >>> from kleene.compiler.analysis import analyze
    >>> import kleene
    >>> a, b, c = analyze(kleene.parse("PATTERN SEQ(A a, B+ b[], C c)")).positive
    >>> for get, shape in _Choices([a, b, c], "p")(2):  # a, two b to choose from, c
    ...     print(get("ABCD"), get([0, 1, 2, 3]), shape)
    ('A', 'B', 'C', 'D') (0, 1, 2, 3) ('p', (('a', 1), ('b', 2), ('c', 1)))
    ('A', 'B', 'D') (0, 1, 3) ('p', (('a', 1), ('b', 1), ('c', 1)))
    ('A', 'C', 'D') (0, 2, 3) ('p', (('a', 1), ('b', 1), ('c', 1)))
    """

    KEPT = 1024

    def __init__(self, positive: list[Variable], name: str) -> None:
        self.positive = positive
        self.name = name
        self.kept: dict[tuple[int, ...], list[tuple[Callable[[Any], Any], Shape]]] = {}

    def __call__(self, *counts: int) -> Iterable[tuple[Callable[[Any], Any], Shape]]:
        found = self.kept.get(counts)
        if found is not None:
            return found
        ways = self._ways(counts, 0, 0, (), ())
        if self._number(counts) > self.KEPT:
            return ((itemgetter(*picked), shape) for picked, shape in ways)
        found = self.kept[counts] = [(itemgetter(*picked), shape) for picked, shape in sorted(ways)]
        return found

    def _number(self, counts: tuple[int, ...]) -> int:
        """How many ways there are."""
        number = 1
        kleene = (v for v in self.positive if v.kleene)
        for variable, count in zip(kleene, counts, strict=True):
            most = count if variable.max is None else min(variable.max, count)
            number *= sum(comb(count, r) for r in range(variable.min, most + 1))
        return number

    def _ways(
        self,
        counts: tuple[int, ...],
        at: int,
        offset: int,
        picked: tuple[int, ...],
        shape: tuple[tuple[str, int], ...],
    ) -> Iterator[tuple[tuple[int, ...], Shape]]:
        """The positions each way picks in the row, and its shape, from variable `at` (at
        `offset` in the row) on, after `picked` and `shape` for the variables before it."""
        if at == len(self.positive):
            yield picked, (self.name, shape)
            return
        variable = self.positive[at]
        if not variable.kleene:
            named = (*shape, (variable.name, 1))
            yield from self._ways(counts, at + 1, offset + 1, (*picked, offset), named)
            return
        count, rest = counts[0], counts[1:]
        most = count if variable.max is None else min(variable.max, count)
        for r in range(variable.min, most + 1):
            named = (*shape, (variable.name, r))
            for some in combinations(range(offset, offset + count), r):
                yield from self._ways(rest, at + 1, offset + count, (*picked, *some), named)


def _always(event: Event) -> bool:
    return True


def _overlap(one: Variable, other: Variable) -> bool:
    """Can one event bind both variables?"""
    return one.types is None or other.types is None or bool(one.types & other.types)
