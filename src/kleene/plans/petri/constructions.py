"""One construction per LEAD operator (section 5.1, Figures 4-9): each a sub-net of the APCPN.

`construct(pattern, build)` builds the net of a pattern from these; `PetriPlan` puts a root
on top that turns the rule's matches into emitted events.

>>> from kleene.language.lead.reader import read_rule
>>> net = construct(read_rule("FROM A AS a, B AS b MATCH a Followed By b EMIT Event X()").pattern,
...                 Build(Names()))
>>> [type(n).__name__ for n in net.walk()]
['FollowedBy', 'Source', 'Source']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kleene.compiler.rules import (
    Env,
    Fn,
    Names,
    compile_condition,
    compile_value,
    duration,
    time_events_in,
)
from kleene.errors import PatternError
from kleene.events import Event
from kleene.language import expr as E
from kleene.language.lead import ast as L
from kleene.language.text import error_at
from kleene.plans.petri.net import Marking, Node, Token

__all__ = ["STATEFUL", "Build", "construct"]


class Source(Node):
    """Figure 4: a stream's events enter through a source; while a context is enabled (its
    stateful place holds it) each later event of the stream passes by the high-priority arc."""

    def __init__(self, alias: str, stream: str) -> None:
        super().__init__()
        self.alias, self.stream = alias, stream

    def start(self, m: Marking, cid: int) -> None:
        m.waiting.setdefault(self.id, {})[cid] = None

    def offer(self, m: Marking, event: Event) -> None:
        """An event of the stream: to every context waiting since before it, in order."""
        for cid in list(m.waiting.get(self.id, ())):
            context = m.contexts.get(cid)
            if context is None or context.token.serial >= m.serial:
                continue
            bindings = {**context.token.bindings, self.alias: event}
            self.emit(m, cid, Token(bindings, event, event.t, m.serial))


class FollowedBy(Node):
    """Figure 6 (right): each element is enabled by a match of the one before it. An element
    under `last(…)` stays open, and the next element's match takes its latest match."""

    def __init__(self, children: list[Node], last: set[int]) -> None:
        super().__init__(children)
        self.last = last

    def start(self, m: Marking, cid: int) -> None:
        context = m.contexts[cid]
        context.data = {}
        self.children[0].enable(m, cid, context.token)

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        data = m.contexts[cid].data
        if slot in self.last:
            held = data.setdefault(slot, [])
            held[:] = [*held[-1:], token]  # the latest and the one before it
            if len(held) > 1:
                return True  # the next element is already enabled
        if slot > 0 and slot - 1 in self.last:
            latest = [t for t in data[slot - 1] if t.serial < token.serial][-1]
            token = Token({**token.bindings, **latest.bindings}, token.value, token.t, token.serial)
        if slot + 1 < len(self.children):
            self.children[slot + 1].enable(m, cid, token)
            return True
        return self.emit(m, cid, token)


class Conjunction(Node):
    """Figure 5 (right): every element is enabled at once; their matches wait in stateful
    places until each element has one, in any order. No event stands in two elements."""

    def start(self, m: Marking, cid: int) -> None:
        m.contexts[cid].data = [[] for _ in self.children]
        super().start(m, cid)

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        places: list[list[Token]] = m.contexts[cid].data
        places[slot].append(token)
        combos: list[list[Token]] = [[]]
        for i, place in enumerate(places):
            combos = [[*c, t] for c in combos for t in ([token] if i == slot else place)]
        for combo in combos:
            held = [id(e) for part in combo for e in _events(part.value)]
            if len(held) != len(set(held)):
                continue  # an event stands once in a match (uniqueness, section 3.3)
            bindings: dict[str, Any] = {}
            for part in combo:
                bindings.update(part.bindings)
            latest = max(combo, key=lambda t: t.serial)
            if (
                self.emit(
                    m, cid, Token(bindings, tuple(t.value for t in combo), m.now, latest.serial)
                )
                and cid not in m.contexts
            ):
                break
        return True

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        context = m.contexts.get(cid)
        if context is not None and not context.data[slot]:
            self.fail(m, cid)  # an element that never matched: the conjunction cannot


class Disjunction(Node):
    """Figure 5 (left): every element is enabled; the first match passes (under `first` the
    others are then garbage-collected)."""

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        return self.emit(m, cid, token)


class Unless(Node):
    """`… not p Followed By q`: p and q are enabled together; q's match passes unless p
    matched first (the negation is bounded by the next element, formula 9)."""

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        if slot == 0:
            self.fail(m, cid)
            return True
        return self.emit(m, cid, token)

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        if slot == 1:
            self.fail(m, cid)


class Timed(Node):
    """A construction with a temporal guard at local age `length` after enabling (or, with
    `From x` for an x the token holds, `length` after x's time)."""

    def __init__(self, child: Node, length: float, anchor: str | None = None) -> None:
        super().__init__([child])
        self.length, self.anchor = length, anchor

    def start(self, m: Marking, cid: int) -> None:
        due = m.now + self.length
        if self.anchor is not None:
            held = m.contexts[cid].token.bindings.get(self.anchor)
            due = (held.t if isinstance(held, Event) else m.now) + self.length
        m.timer(due, cid)
        super().start(m, cid)


class Negation(Timed):
    """Figure 8: `not p Within t`: the temporal guard at t passes the enabling token, unless
    p matched before it (then the garbage consumer takes it)."""

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        self.fail(m, cid)
        return True

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        """p can no longer match: the guard still decides."""

    def guard(self, m: Marking, cid: int, tag: int) -> None:
        token = m.contexts[cid].token
        self.emit(m, cid, Token(token.bindings, None, m.now, token.serial))
        self.close(m, cid)


class Within(Timed):
    """Figure 7 (right): p's matches pass while the guard has not fired (less than t); the
    guard closes the context (a garbage collection if nothing passed)."""

    def guard(self, m: Marking, cid: int, tag: int) -> None:
        if m.contexts[cid].fired:
            self.close(m, cid)
        else:
            self.fail(m, cid)


class Wait(Node):
    """Figure 7 (left): p's matches wait in a stateful place; at local age t the temporal
    guard passes the first (the latest, for `Wait(last(p), t)`), or every one under `all`."""

    def __init__(self, child: Node, length: float, latest: bool) -> None:
        super().__init__([child])
        self.length, self.latest = length, latest

    def start(self, m: Marking, cid: int) -> None:
        m.contexts[cid].data = []
        m.timer(m.now + self.length, cid)
        super().start(m, cid)

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        held: list[Token] = m.contexts[cid].data
        if self.latest:
            held[:] = [token]
        elif not held or not self.first:
            held.append(token)
        return True

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        """What matched still waits for the guard."""

    def guard(self, m: Marking, cid: int, tag: int) -> None:
        held: list[Token] = m.contexts[cid].data
        if not held:
            self.fail(m, cid)
            return
        for token in held:
            self.emit(m, cid, Token(token.bindings, token.value, m.now, token.serial))
            if cid not in m.contexts:
                return
        self.close(m, cid)


class Filtered(Node):
    """`p.filter(c)`: an intermediate transition whose guard is c."""

    def __init__(self, child: Node, condition: Fn) -> None:
        super().__init__([child])
        self.condition = condition

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        if not self.condition(Env(token.bindings, m.now)):
            m.garbage += 1
            return False
        return self.emit(m, cid, token)


class Named(Node):
    """`p AS x`: the token's colour gains x, bound to p's match."""

    def __init__(self, child: Node, name: str) -> None:
        super().__init__([child])
        self.name = name

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        bindings = {**token.bindings, self.name: token.value}
        return self.emit(m, cid, Token(bindings, token.value, token.t, token.serial))


@dataclass
class Collected:
    """A collect context's list of the items accepted so far."""

    items: list[Any] = field(default_factory=list)


class Collect(Node):
    """Figure 6 (left): every match of p is an item; W_acc decides whether the list takes it,
    W_in garbage-collects the list, W_rt passes it on. Termination over time events is
    re-checked by temporal guards at their bounds."""

    def __init__(
        self,
        child: Node,
        accept: Fn | None,
        terminate: Fn,
        invalidate: Fn | None,
        bounds: list[Callable[[Env], Any]],
    ) -> None:
        super().__init__([child])
        self.accept, self.terminate, self.invalidate = accept, terminate, invalidate
        self.bounds = bounds
        #: The sub-contexts watching this list grow (their list name and construction).
        self.watchers: list[tuple[str, Subcontext]] = []
        self.list_name = ""

    def start(self, m: Marking, cid: int) -> None:
        context = m.contexts[cid]
        context.data = Collected()
        env = Env(context.token.bindings, m.now)
        for bound in self.bounds:
            due = bound(env)
            if due is not None and due > m.now:
                m.timer(due, cid)
        if not self.decide(m, cid):
            super().start(m, cid)

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        context = m.contexts[cid]
        data: Collected = context.data
        env = Env({**context.token.bindings, **token.bindings}, m.now, data.items)
        if self.accept is not None and not self.accept(env):
            return False
        data.items.append(token.value)
        for name, watcher in self.watchers:
            watcher.grew(m, cid, name, data.items, token)
        if cid in m.contexts:
            self.decide(m, cid, token)
        return True

    def guard(self, m: Marking, cid: int, tag: int) -> None:
        self.decide(m, cid)

    def decide(self, m: Marking, cid: int, item: Token | None = None) -> bool:
        """Check W_in and W_rt now (seeing the item just accepted, if any); True when the
        context ended."""
        context = m.contexts[cid]
        data: Collected = context.data
        bindings = (
            context.token.bindings if item is None else {**context.token.bindings, **item.bindings}
        )
        env = Env(bindings, m.now, data.items)
        if self.invalidate is not None and self.invalidate(env):
            self.fail(m, cid)
            return True
        if not self.terminate(env):
            return False
        items = tuple(data.items)
        last = context.token.serial if item is None else item.serial
        if not self.emit(m, cid, Token(context.token.bindings, items, m.now, max(last, m.serial))):
            self.fail(m, cid)
        self.close(m, cid)
        return True

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        """No more items can come; termination still decides."""


@dataclass
class Branches:
    """A sub-context's marking: the lists it has seen, its active branches, what they emitted."""

    lists: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    active: int = 0
    emitted: list[Event] = field(default_factory=list)
    disabled: bool = False
    inner: Token | None = None


class Subcontext(Node):
    """Figure 9: every item the watched repetition accepts (those in the range that pass the
    filter) opens a branch, counted by the active-branches counter; a branch's match emits
    its actions into this pattern's list. The termination clause disables the sub-context
    (its branches are garbage-collected, its list is empty). It matches once the pattern it
    extends has matched and no branch is active."""

    def __init__(
        self,
        pattern: Node,
        branch: Node,
        item: str,
        watched: str,
        bounds: tuple[int, int] | None,
        filter_: Fn | None,
        terminate: Fn | None,
        actions: Callable[[dict[str, Any], float, Marking], list[Event]],
    ) -> None:
        super().__init__([pattern, branch])
        self.item, self.watched, self.bounds = item, watched, bounds
        self.filter, self.terminate, self.actions = filter_, terminate, actions

    def start(self, m: Marking, cid: int) -> None:
        context = m.contexts[cid]
        context.data = Branches()
        self.children[0].enable(m, cid, context.token)

    def grew(self, m: Marking, collect_cid: int, name: str, items: list[Any], item: Token) -> None:
        """A repetition inside the pattern accepted an item."""
        cid = self._own(m, collect_cid)
        if cid is None:
            return
        context = m.contexts[cid]
        data: Branches = context.data
        if data.disabled:
            return
        data.lists[name] = tuple(items)
        env = Env({**context.token.bindings, **data.lists}, m.now)
        if self.terminate is not None and self.terminate(env):
            data.disabled, data.emitted, data.active = True, [], 0
            for child in self.children_of(m, cid, 1):
                self.children[1].close(m, child)
            return
        position = len(items)
        if name != self.watched or (
            self.bounds and not self.bounds[0] <= position <= self.bounds[1]
        ):
            return
        bindings = {**context.token.bindings, self.item: item.value}
        if self.filter is not None and not self.filter(Env(bindings, m.now)):
            return
        data.active += 1
        self.children[1].enable(m, cid, Token(bindings, item.value, m.now, item.serial))

    def _own(self, m: Marking, cid: int) -> int | None:
        """This construction's context above a context of its pattern."""
        current: int | None = cid
        while current is not None:
            context = m.contexts.get(current)
            if context is None:
                return None
            if context.node == self.id:
                return current
            current = context.parent
        return None

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        data: Branches = m.contexts[cid].data
        if slot == 0:
            data.inner = token
        elif not data.disabled:
            data.emitted.extend(self.actions(token.bindings, m.now, m))
            data.active -= 1
        self._complete(m, cid)
        return True

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        context = m.contexts.get(cid)
        if context is None:
            return
        if slot == 0:
            self.fail(m, cid)
            return
        context.data.active -= 1
        self._complete(m, cid)

    def _complete(self, m: Marking, cid: int) -> None:
        context = m.contexts.get(cid)
        if context is None:
            return
        data: Branches = context.data
        if data.inner is None or (data.active > 0 and not data.disabled):
            return
        inner = data.inner
        self.emit(
            m, cid, Token(inner.bindings, tuple(data.emitted), m.now, max(inner.serial, m.serial))
        )
        self.close(m, cid)


class Every(Node):
    """`every(p)`: p's first match passes, and p is enabled again after it, so the matches'
    life-cycles never overlap. After an attempt (matched or failed), p is enabled again at
    once if an event came since the attempt began, else at the next event: time alone brings
    nothing new to try on (and `every(not b Within t)` reports once per quiet spell, not
    forever at the end of the stream)."""

    def start(self, m: Marking, cid: int) -> None:
        self.again(m, cid, m.contexts[cid].token.serial)

    def again(self, m: Marking, cid: int, serial: int) -> None:
        """Enable p for a new attempt, taking the events after `serial`."""
        context = m.contexts[cid]
        context.data = m.serial
        self.children[0].enable(m, cid, Token(context.token.bindings, None, m.now, serial))

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        taken = self.emit(m, cid, token)
        self._next(m, cid, token.serial)
        return taken

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        self._next(m, cid, m.serial)

    def _next(self, m: Marking, cid: int, serial: int) -> None:
        context = m.contexts.get(cid)
        if context is None:
            return
        if context.data < m.serial:
            self.again(m, cid, serial)
        else:
            m.deferred[cid] = None


class All(Node):
    """`all(p) consume(x, …)`: every match of p passes; an event bound to a consumed name is
    used by one match only (the first to complete)."""

    def __init__(self, child: Node, consume: tuple[str, ...]) -> None:
        super().__init__([child])
        self.consume = consume

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        if self.consume:
            used = [
                _identity(e) for name in self.consume for e in _events(token.bindings.get(name))
            ]
            if any(u in m.consumed for u in used):
                m.garbage += 1
                return False
            m.consumed.update(used)
        return self.emit(m, cid, token)


class Extremum(Node):
    """`max(rp, agg)` / `min(rp, agg)` (section 3.3.3): of the repetition's matches that
    end together (at one event, or one temporal guard's time), across all its contexts, only
    the one whose aggregate is largest / smallest passes; the others go to the garbage
    consumer. Ties go to the longest life-cycle (the earliest enabled), the default."""

    def __init__(self, child: Node, largest: bool, aggregate: Fn) -> None:
        super().__init__([child])
        self.largest, self.aggregate = largest, aggregate

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        m.instant.setdefault(self.id, []).append((cid, token))
        return True

    def settle(self, m: Marking) -> None:
        """The instant is over: pass the best of the matches that ended in it."""
        ended = m.instant.pop(self.id, [])
        live = [(cid, t) for cid, t in ended if cid in m.contexts]
        if not live:
            return

        def rank(item: tuple[int, Token]) -> tuple[Any, float]:
            cid, token = item
            value = self.aggregate(Env(token.bindings, m.now))
            since = m.contexts[cid].since
            if value is None:
                return (math.inf, since) if not self.largest else (-math.inf, since)
            return (-value if self.largest else value, since)

        best = min(live, key=rank)
        for cid, token in live:
            if (cid, token) is best or (cid == best[0] and token is best[1]):
                self.emit(m, cid, token)
            else:
                m.garbage += 1


def _events(value: Any) -> list[Event]:
    if isinstance(value, Event):
        return [value]
    if isinstance(value, tuple | list):
        return [e for v in value for e in _events(v)]
    return []


def _identity(event: Event) -> tuple[Any, ...]:
    return (event.type, event.t, event.id)


#: The constructions whose places store tokens (drawn red, as in Figure 4).
STATEFUL = (Source, FollowedBy, Conjunction, Wait, Collect, Subcontext, All)


# ---- the construction of a pattern ------------------------------------------------------


@dataclass
class Build:
    """What constructing needs: the names expressions read, the streams by alias, the
    actions compiler (for sub-contexts)."""

    names: Names
    streams: dict[str, str] = field(default_factory=dict)
    actions: (
        Callable[[tuple[L.Action, ...]], Callable[[dict[str, Any], float, Marking], list[Event]]]
        | None
    ) = None
    #: Is the pattern under construction inside `all(…)` (its contexts stay open)?
    many: bool = False
    #: The names bound by the sequence elements constructed so far (for `From x`).
    bound: set[str] = field(default_factory=set)
    #: The collects by list name, for sub-contexts to watch.
    collects: dict[str, Collect] = field(default_factory=dict)


def construct(p: L.Pattern, b: Build) -> Node:
    """The sub-net of a pattern."""
    node = _construct(p, b)
    node.first = not b.many and not isinstance(node, Every | All)  # those two stay open
    return node


def _length(d: E.Duration, b: Build) -> float:
    return duration(d, b.names)


def _construct(p: L.Pattern, b: Build) -> Node:
    if isinstance(p, L.Source):
        return Source(p.alias, b.streams.get(p.alias, p.alias))
    if isinstance(p, L.FollowedBy):
        return _sequence(p, b)
    if isinstance(p, L.Conjunction):
        return Conjunction([construct(i, b) for i in p.items])
    if isinstance(p, L.Disjunction):
        return Disjunction([construct(i, b) for i in p.items])
    if isinstance(p, L.Negation):
        inner = _many(p.pattern, b, many=False)
        if p.within is None:
            raise _error(b, "a negation needs a bound: `not p Within t`, or an element after it", p)
        anchor = _anchor(p.start, b)
        negation = Negation(inner, _length(p.within, b), anchor)
        if p.start is None or anchor is not None:
            return negation
        return FollowedBy([construct(p.start, b), negation], set())
    if isinstance(p, L.Within):
        anchor = _anchor(p.start, b)
        within = Within(construct(p.pattern, b), _length(p.within, b), anchor)
        if p.start is None or anchor is not None:
            return within
        return FollowedBy([construct(p.start, b), within], set())
    if isinstance(p, L.Wait):
        latest = isinstance(p.pattern, L.Policy) and p.pattern.policy == "last"
        waited = p.pattern.pattern if isinstance(p.pattern, L.Policy) and latest else p.pattern
        return Wait(_many(waited, b, many=latest or b.many), _length(p.duration, b), latest)
    if isinstance(p, L.Filtered):
        return Filtered(construct(p.pattern, b), compile_condition(p.condition, b.names))
    if isinstance(p, L.Named):
        node = Named(construct(p.pattern, b), p.name)
        if isinstance(node.children[0], Collect):
            node.children[0].list_name = p.name
            b.collects[p.name] = node.children[0]
        return node
    if isinstance(p, L.Collect):
        return _collect(p, b)
    if isinstance(p, L.Subcontext):
        return _subcontext(p, b)
    if isinstance(p, L.Policy):
        return _policy(p, b)
    if isinstance(p, L.All):
        return All(_many(p.pattern, b, many=True), p.consume)
    if not _repetition(p.pattern):
        raise _error(b, f"{p.op}(rp, aggregate) takes a repetition: collect(…) AS name", p)
    return Extremum(construct(p.pattern, b), p.op == "max", compile_value(p.aggregate, b.names))


def _repetition(p: L.Pattern) -> bool:
    """Does the pattern end in a repetition (its matches end when a collect terminates)?"""
    if isinstance(p, L.Named | L.Filtered | L.Within):
        return _repetition(p.pattern)
    if isinstance(p, L.FollowedBy):
        return _repetition(p.items[-1])
    return isinstance(p, L.Collect)


def _anchor(start: L.Pattern | None, b: Build) -> str | None:
    """`From x` where x is already bound (by an earlier element of the sequence): age from
    x's time. Otherwise `From q` is a new element q before the bounded pattern."""
    if isinstance(start, L.Source) and start.alias in b.bound:
        return start.alias
    return None


def _bound(p: L.Pattern) -> set[str]:
    """The names a pattern's match binds."""
    if isinstance(p, L.Source):
        return {p.alias}
    if isinstance(p, L.Named):
        return {p.name} | _bound(p.pattern)
    if isinstance(p, L.FollowedBy | L.Conjunction):
        return {n for i in p.items for n in _bound(i)}
    if isinstance(p, L.Filtered | L.Policy | L.All | L.Wait):
        return _bound(p.pattern)
    if isinstance(p, L.Within):
        return _bound(p.pattern) | (set() if p.start is None else _bound(p.start))
    return set()


def _many(p: L.Pattern, b: Build, *, many: bool) -> Node:
    saved = b.many
    b.many = many
    try:
        return construct(p, b)
    finally:
        b.many = saved


def _sequence(p: L.FollowedBy, b: Build) -> Node:
    items = list(p.items)
    nodes: list[Node] = []
    last: set[int] = set()
    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, L.Negation) and item.within is None:
            if i + 1 == len(items):
                raise _error(b, "a negation at the end of a sequence needs `Within t`", item)
            nodes.append(Unless([_many(item.pattern, b, many=False), construct(items[i + 1], b)]))
            i += 2
            continue
        if isinstance(item, L.Policy) and item.policy == "last":
            if i + 1 == len(items):
                raise _error(b, "last(p) needs an element after it (or Wait) to bound it", item)
            last.add(len(nodes))
            nodes.append(_many(item.pattern, b, many=True))
        else:
            nodes.append(construct(item, b))
        b.bound |= _bound(item)
        i += 1
    if len(nodes) == 1:
        return nodes[0]
    return FollowedBy(nodes, last)


def _collect(p: L.Collect, b: Build) -> Node:
    if p.terminate is None:
        raise _error(b, "a repetition needs a terminate(…) clause (Remark 3)", p)
    names = b.names
    bounds: list[Callable[[Env], Any]] = []
    for name in sorted(time_events_in(p.terminate, names) | time_events_in(p.invalidate, names)):
        event = names.time_events[name]
        bounds += [compile_value(event.start, names), compile_value(event.end, names)]
    return Collect(
        _many(p.pattern, b, many=True),
        None if p.accept is None else compile_condition(p.accept, names),
        compile_condition(p.terminate, names),
        None if p.invalidate is None else compile_condition(p.invalidate, names),
        bounds,
    )


def _subcontext(p: L.Subcontext, b: Build) -> Node:
    assert b.actions is not None
    pattern = construct(p.pattern, b)
    branch = _many(p.branch, b, many=False)
    node = Subcontext(
        pattern,
        branch,
        p.item,
        p.list,
        p.range,
        None if p.filter is None else compile_condition(p.filter, b.names),
        None if p.terminate is None else compile_condition(p.terminate, b.names),
        b.actions(p.actions),
    )
    for name, collect in b.collects.items():
        if any(n is collect for n in pattern.walk()):
            collect.watchers.append((name, node))
    return node


def _policy(p: L.Policy, b: Build) -> Node:
    if p.policy == "first":
        return _many(p.pattern, b, many=False)
    if p.policy == "every":
        return Every([_many(p.pattern, b, many=False)])
    if p.policy == "adj":
        return construct(_adjacent(p, b), b)
    raise _error(
        b, "last(p) stands in a sequence before another element, or in Wait(last(p), t)", p
    )


def _adjacent(p: L.Policy, b: Build) -> L.Pattern:
    """adj (formula 16): `adj(p1 → … → pn)` is `last(p1 → … → pn-1) → first(pn)`;
    `adj(p1 and p2)` is `last(p1) → first(p2)` or `last(p2) → first(p1)`."""
    inner = p.pattern
    if isinstance(inner, L.FollowedBy):
        head = inner.items[0] if len(inner.items) == 2 else L.FollowedBy(inner.items[:-1])
        return L.FollowedBy((L.Policy("last", head), inner.items[-1]))
    if isinstance(inner, L.Conjunction) and len(inner.items) == 2:
        one, two = inner.items
        return L.Disjunction(
            (
                L.FollowedBy((L.Policy("last", one), two)),
                L.FollowedBy((L.Policy("last", two), one)),
            )
        )
    raise _error(b, "adj(p) takes a sequence or a conjunction of two patterns", p)


def _error(b: Build, message: str, at: L.Pattern) -> PatternError:
    return error_at(message, b.names.text, at.span)
