"""The `petri` plan: a LEAD rule run as an aging-token prioritized coloured Petri net.

The net (`constructions.py`) sits under a root that is the rule's EMIT statement (Figure 3):
each match of the MATCH pattern reaching it is checked (CHECK FIRST / ANY, nested WHERE
clauses) and becomes the emitted events, each an `Event` whose type is the action's name,
whose attributes are its arguments by name and whose timestamp is the time of emission.

The plan keeps the plan contract (`kleene.plans.base`) as every plan does: it is compiled
from the rule's analysis (`kleene.compiler.rules.RuleAnalysis`), one marking per PARTITION
BY key, `step` for an event, `advance` for time passing (temporal guards: time events,
Wait, Within, bounded negation), `deadline` for the next guard, markings that pickle; its
output declares the events it emits. The rule is enabled at a partition's first event of a
stream it reads (FROM); events of other types only move time.

PARTITION BY is part of a rule's meaning: under the default policy the rule runs once per
partition, so a partition whose run has ended (its pattern matched or failed, nothing
waits) is `finished`: the engine keeps only its key, never the marking. With a frame, a run
ends at the frame's end, and the next event begins a new one: a marking is then `idle`
(a fresh one is the same) once its run has ended.

>>> import kleene
>>> rule = '''FROM Order AS o, Payment AS p
...           MATCH o Followed By not p Within 10 s
...           PARTITION BY o.order
...           EMIT Event Unpaid(o.order)'''
>>> stream = [{"type": "Order", "ts": 0, "order": 1}, {"type": "Order", "ts": 1, "order": 2},
...           {"type": "Payment", "ts": 5, "order": 1}]
>>> kleene.lead.run(rule, stream)
[Event('Unpaid', 11, {'order': 2})]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar

from kleene.compiler.options import Options
from kleene.compiler.rules import (
    Env,
    Fn,
    Names,
    RuleAnalysis,
    argument_name,
    compile_condition,
    compile_value,
    lists_of,
)
from kleene.events import Event, Watermark, attributes
from kleene.language.lead import ast as L
from kleene.language.text import UNITS
from kleene.plans.base import Plan, register
from kleene.plans.petri.constructions import (
    STATEFUL,
    Build,
    Every,
    Extremum,
    Source,
    construct,
)
from kleene.plans.petri.draw import draw_png
from kleene.plans.petri.net import Marking, Node, Token

__all__ = ["PetriPlan", "label"]

Actions = Callable[[dict[str, Any], float, Marking], list[Event]]


class Root(Node):
    """The EMIT statement: the rule's matches become events; the rule's pattern is enabled
    once, at the partition's first event of a stream the rule reads (once per frame, with
    a PARTITION BY frame: the guard at a time frame's end finalizes the rule's run)."""

    def __init__(self, child: Node, emit: Callable[[Token, Marking], list[Event]]) -> None:
        super().__init__([child])
        self.emit_events = emit

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        m.out.extend(self.emit_events(token, m))
        return True

    def guard(self, m: Marking, cid: int, tag: int) -> None:
        finish(self, m)

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        """The rule failed in this partition: nothing to emit, nothing left to do."""


def finish(root: Root, m: Marking) -> None:
    """End the rule's run in this partition (its frame is over): every token it holds goes
    to the garbage consumer, and the next event begins a new run."""
    for cid, context in list(m.contexts.items()):
        if context.parent is None:
            root.close(m, cid)
    m.garbage += 1
    m.started, m.count = False, 0
    m.deferred.clear()
    m.instant.clear()
    m.consumed.clear()


@register
class PetriPlan(Plan[Marking]):
    """LEAD rules on APCPNs (LEAD, section 5)."""

    name = "petri"
    languages: ClassVar[frozenset[str]] = frozenset({"lead"})
    analysis: RuleAnalysis

    def __init__(self, analysis: RuleAnalysis, options: Options) -> None:
        super().__init__(analysis, options)
        rule = self.rule = analysis.rule
        unit_seconds = UNITS[options.time_unit][1]
        partition = {a.attr: a.var for a in rule.partition}
        self.names = Names(
            {t.name: t for t in rule.time_events},
            frozenset(lists_of(rule.pattern)),
            unit_seconds,
            partition,
            rule.text,
        )
        self.types = {t.name: t for t in rule.event_types}
        enrich = {e.alias: e for e in rule.enrich}
        streams = {s.alias: s.type for s in rule.streams}
        #: The event types the rule reads (FROM).
        self.read = analysis.streams
        build = Build(self.names, streams, self._actions)
        self.root = Root(construct(rule.pattern, build), self._emit(rule.emit))
        self.nodes = self.root.walk()
        for i, node in enumerate(self.nodes):
            node.id, node.nodes = i, self.nodes
        #: The sources of each event type, in priority order.
        self.sources: dict[str, list[Source]] = {}
        for node in self.nodes:
            if isinstance(node, Source):
                self.sources.setdefault(node.stream, []).append(node)
        self.enrich: dict[str, list[tuple[str, Fn, str]]] = {}
        for alias, stream in streams.items():
            for name, value in enrich[alias].assignments if alias in enrich else ():
                self.enrich.setdefault(stream, []).append(
                    (name, compile_value(value, self.names), alias)
                )
        frame = rule.frame
        #: PARTITION BY a time frame (its length in timestamp units) or a count frame.
        self.frame_length: float | None = None
        self.frame_count: int | None = None
        if frame is not None and frame.unit == "events":
            self.frame_count = int(frame.amount)
        elif frame is not None:
            self.frame_length = frame.seconds / unit_seconds

    @classmethod
    def unsupported(cls, analysis: RuleAnalysis, options: Options) -> str | None:
        if options.timeouts:
            return (
                "timeouts=True reports a SASE+ pattern's partial matches; a LEAD rule says "
                "what to emit when time runs out with Wait and Within"
            )
        return None

    # -- the contract -----------------------------------------------------------------------

    def new_state(self) -> Marking:
        return Marking()

    def step(self, state: Marking, event: Event) -> list[Any]:
        m = state
        self._fire(m, event.t)
        m.now = event.t
        if event.type not in self.read:  # a stream the rule does not read: only time moves
            return self._drain(m)
        m.serial += 1
        if not m.started:  # the rule is enabled at the partition's (frame's) first event
            m.started = True
            m.datetimes = isinstance(event.ts, datetime)
            root = self.root.enable(m, None, Token({}, None, event.t, m.serial - 1))
            if self.frame_length is not None:
                end = (math.floor(event.t / self.frame_length) + 1) * self.frame_length
                m.timer(end, root)
        if m.deferred:
            self._retry(m)
        enriched = self._enriched(event)
        for source in self.sources.get(event.type, ()):
            source.offer(m, enriched)
        self._settle(m)
        m.count += 1
        if m.count == self.frame_count:
            finish(self.root, m)
        return self._drain(m)

    def advance(self, state: Marking, watermark: Watermark) -> list[Any]:
        self._fire(state, watermark.t)
        return self._drain(state)

    def deadline(self, state: Marking) -> float | None:
        timers = state.timers
        while timers and timers[0][2] not in state.contexts:
            heapq.heappop(timers)
        return timers[0][0] if timers else None

    def live_runs(self, state: Marking) -> int:
        return len(state.contexts)

    def _ended(self, m: Marking) -> bool:
        """Has the partition's run ended: no context but the root's is live, and nothing
        waits for the instant to end or for the next event?"""
        if m.instant or m.deferred or len(m.contexts) > 1:
            return False
        return not m.contexts or not next(iter(m.contexts.values())).children

    def idle(self, state: Marking, watermark: Watermark) -> bool:
        """A marking between runs (a frame's run ended at its frame's end, or no run began)
        is a fresh marking: the next event begins a new run either way."""
        return not state.started and not state.contexts and self.deadline(state) is None

    def finished(self, state: Marking) -> bool:
        """Without a frame the rule runs once per partition: once that run has ended (its
        pattern matched or failed, nothing waits), nothing more happens there."""
        if self.frame_length is not None or self.frame_count is not None:
            return False
        return state.started and self._ended(state) and self.deadline(state) is None

    def counters(self, state: Marking) -> dict[str, int]:
        return {"transitions_fired": state.fired, "garbage_consumed": state.garbage}

    def describe(self) -> str:
        lines = []
        for node in self.nodes:
            depth, parent = 0, node.parent
            while parent is not None:
                depth, parent = depth + 1, parent.parent
            lines.append("  " * depth + label(node))
        return "\n".join(lines)

    def draw(self, path: str) -> bool:
        """The net as a PNG, drawn with matplotlib."""
        draw_png(self.root, self.nodes, label, path)
        return True

    def dot(self) -> str:
        """The net in Graphviz DOT, drawn as Figures 3-9 draw it: streams feed sources, each
        construction is a transition (a box) with its input place (a circle: red when it
        stores tokens, blue when they pass at once); a parent's transition enables its
        children's places (dashed, In), children's matches go up by the high-priority arc
        (H), and tokens nothing takes go to the garbage consumer by the low one (L)."""
        lines = [
            "digraph petri {",
            "  rankdir=LR;",
            '  node [fontname="Helvetica", fontsize=10];',
            '  gc [label="GC", shape=box, style=filled, fillcolor=gray80];',
            '  sink [label="emitted events", shape=doublecircle];',
        ]
        for stream in sorted(self.sources):
            lines.append(f'  "s_{stream}" [label="{stream}", shape=cds];')
        for node in self.nodes:
            colour = "tomato" if isinstance(node, STATEFUL) else "lightblue"
            lines.append(
                f'  p{node.id} [label="", shape=circle, width=0.25, style=filled, '
                f"fillcolor={colour}];"
            )
            lines.append(f'  t{node.id} [label="{label(node)}", shape=box];')
            lines.append(f"  p{node.id} -> t{node.id};")
            if isinstance(node, Source):
                lines.append(f'  "s_{node.stream}" -> t{node.id} [label="H"];')
            for child in node.children:
                lines.append(f'  t{node.id} -> p{child.id} [style=dashed, label="In"];')
            target = "sink" if node.parent is None else f"t{node.parent.id}"
            lines.append(f'  t{node.id} -> {target} [label="H"];')
            lines.append(f'  p{node.id} -> gc [style=dotted, label="L"];')
        lines.append("}")
        return "\n".join(lines)

    # -- internals --------------------------------------------------------------------------

    def _fire(self, m: Marking, until: float) -> None:
        """Fire the temporal guards due at or before `until`, in time order."""
        timers = m.timers
        while timers and timers[0][0] <= until:
            due, _, cid, tag = heapq.heappop(timers)
            context = m.contexts.get(cid)
            if context is None:
                continue
            m.now = max(m.now, due)
            m.fired += 1
            self.nodes[context.node].guard(m, cid, tag)
            if m.instant and (not timers or timers[0][0] > due):
                self._settle(m)  # the guards of this instant have fired

    def _settle(self, m: Marking) -> None:
        """End the instant for the constructions that wait for it (`max`/`min`)."""
        while m.instant:
            node = self.nodes[next(iter(m.instant))]
            assert isinstance(node, Extremum)
            node.settle(m)

    def _retry(self, m: Marking) -> None:
        """Begin the deferred attempts of `every`, so that they see the event arriving."""
        deferred, m.deferred = m.deferred, {}
        for cid in deferred:
            context = m.contexts.get(cid)
            if context is not None:
                node = self.nodes[context.node]
                assert isinstance(node, Every)
                node.again(m, cid, m.serial - 1)

    def _drain(self, m: Marking) -> list[Any]:
        out, m.out = m.out, []
        return out

    def _enriched(self, event: Event) -> Event:
        assignments = self.enrich.get(event.type)
        if not assignments:
            return event
        attrs = attributes(event)
        for name, value, alias in assignments:
            attrs[name] = value(Env({alias: event}, event.t))
        return Event(event.type, event.ts, attrs, event.id)

    def _actions(self, actions: tuple[L.Action, ...]) -> Actions:
        """A function making the events of an action list from a token's bindings."""
        makers = [self._action(a) for a in actions]

        def run(bindings: dict[str, Any], now: float, m: Marking) -> list[Event]:
            env = Env(bindings, now)
            ts = _timestamp(now, m.datetimes)
            return [make(env, ts) for make in makers]

        return run

    def _action(self, action: L.Action) -> Callable[[Env, Any], Event]:
        kind = self.types.get(action.type)
        values = [compile_value(a.value, self.names) for a in action.args]
        if kind is not None:
            names = [f.name for f in kind.fields]
            defaults = {f.name: None if f.default is None else f.default.value for f in kind.fields}
        else:
            names = [argument_name(a) or "" for a in action.args]
            defaults = {}
        for i, argument in enumerate(action.args):
            if argument.name is not None:
                names[i] = argument.name

        def make(env: Env, ts: Any) -> Event:
            attrs = dict(defaults)
            for name, value in zip(names, values, strict=False):
                attrs[name] = value(env)
            return Event(action.type, ts, attrs)

        return make

    def _emit(
        self, emit: tuple[L.Action, ...] | L.CheckBlock
    ) -> Callable[[Token, Marking], list[Event]]:
        if not isinstance(emit, L.CheckBlock):
            actions = self._actions(emit)
            return lambda token, m: actions(token.bindings, m.now, m)
        block = self._block(emit)
        return lambda token, m: block(token.bindings, m.now, m)

    def _block(self, block: L.CheckBlock) -> Actions:
        """CHECK FIRST: the first WHERE that holds; CHECK ANY: every one that holds."""
        checks: list[tuple[Fn, Actions]] = []
        for check in block.checks:
            then = check.then
            run = self._block(then) if isinstance(then, L.CheckBlock) else self._actions(then)
            checks.append((compile_condition(check.condition, self.names), run))
        first = block.strategy == "first"

        def decide(bindings: dict[str, Any], now: float, m: Marking) -> list[Event]:
            env = Env(bindings, now)
            out: list[Event] = []
            for condition, run in checks:
                if condition(env) is True:
                    out.extend(run(bindings, now, m))
                    if first:
                        break
            return out

        return decide


def _timestamp(t: float, datetimes: bool) -> Any:
    if datetimes and math.isfinite(t):
        return datetime.fromtimestamp(t, tz=UTC)
    return t


def label(node: Node) -> str:
    """A construction's name in drawings: its kind and what it is about."""
    if isinstance(node, Root):
        return "EMIT"
    kind = type(node).__name__
    detail = ""
    for attribute in ("alias", "name", "list_name", "length"):
        value = getattr(node, attribute, None)
        if value not in (None, ""):
            detail = f" {value}"
            break
    mode = "" if node.first else " (all)"
    return f"{kind}{detail}{mode}"
