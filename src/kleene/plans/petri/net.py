"""The aging-token prioritized coloured Petri net (APCPN, LEAD section 5) that runs a rule.

The net is immutable: a list of *constructions* (`constructions.py`), one per operator of the
rule, each a small sub-net. Everything that changes lives in a `Marking` (one per partition):

- **Tokens** are coloured by what a partial match has bound (`Token.bindings`: an alias →
  its event, a list name → its items). A token is born at the time of the match that made it
  (its *global age* counts from there); a construction enabled by it starts a *local age*
  (`Context.since`), which its temporal guards read.
- **Places** hold the tokens. A construction's *input place* holds one `Context` per token
  that enabled it (the paper's In predicate); a source's place is *stateful* (an ordered store
  of the contexts waiting for the stream's next event), the arcs between constructions are
  *stateless* (a token passes at once).
- **Transitions** fire by priority. An event offered to a source goes by the high-priority arc
  to every enabled context, in the order they were enabled; a token no construction takes is
  taken by the low-priority *garbage consumer* (`Marking.garbage` counts them). *Temporal
  guards* fire when a token's local age reaches their time (`Marking.timers`): Within, Wait,
  bounded negation and time events.

Selection policies decide how many tokens a context lets through: under `first` (the default)
a construction's context closes after its first accepted output, so its place empties and
later events pass by; under `all` it stays open. Closing a context garbage-collects every
context it enabled, so no token outlives the pattern that needs it.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

from kleene.events import Event

__all__ = ["Context", "Marking", "Node", "Token"]


@dataclass(frozen=True, slots=True)
class Token:
    """A coloured token: a partial match's bindings and value, born at `t`."""

    bindings: dict[str, Any]
    #: What the construction that made it matched: an event, a list, …
    value: Any
    #: When it was born (the time of the match).
    t: float
    #: The arrival serial of the latest event it holds (-1: none); what it enables takes only
    #: later events.
    serial: int


@dataclass(slots=True)
class Context:
    """One token in a construction's input place: the construction enabled by it."""

    node: int
    parent: int | None
    token: Token
    #: The time it was enabled (its local age counts from here).
    since: float
    #: The construction's own marking for this context.
    data: Any = None
    #: The contexts it enabled (closed with it).
    children: set[int] = field(default_factory=set)
    #: Has it let a token through?
    fired: bool = False


@dataclass
class Marking:
    """A partition's marking of the net: the live contexts, the stores, the clock."""

    contexts: dict[int, Context] = field(default_factory=dict)
    #: Each source's stateful place: the contexts waiting for its stream (an ordered set).
    waiting: dict[int, dict[int, None]] = field(default_factory=dict)
    #: Temporal guards: (due, order, context, tag).
    timers: list[tuple[float, int, int, int]] = field(default_factory=list)
    next_id: int = 0
    #: Events seen (their arrival serials count from 0).
    serial: int = -1
    now: float = -math.inf
    #: Matches held until the current instant ends (`max`/`min`), by construction.
    instant: dict[int, list[tuple[int, Token]]] = field(default_factory=dict)
    #: `every` contexts whose next attempt begins at the next event.
    deferred: dict[int, None] = field(default_factory=dict)
    #: Has the rule been enabled (at the partition's first event)?
    started: bool = False
    #: Events of the rule's streams in this run (for a count frame).
    count: int = 0
    #: The events consumed by `all … consume`.
    consumed: set[tuple[Any, ...]] = field(default_factory=set)
    #: Tokens the garbage consumers took, and transitions fired.
    garbage: int = 0
    fired: int = 0
    #: Timestamps are datetimes (emitted events get datetimes too).
    datetimes: bool = False
    #: What the current step emitted (empty between steps).
    out: list[Event] = field(default_factory=list)

    def timer(self, due: float, context: int, tag: int = 0) -> None:
        heapq.heappush(self.timers, (due, self.next_id, context, tag))
        self.next_id += 1


class Node:
    """A construction: a sub-net with an input place (its contexts) and an output arc to its
    parent construction. Subclasses say what enabling does (`start`) and what their children's
    tokens (`receive`) and temporal guards (`guard`) do."""

    #: `first`: a context closes after its first accepted output (the default policy).
    first: bool = True

    def __init__(self, children: list[Node] | None = None) -> None:
        self.id = -1
        #: Every construction of the net, by id (set when the net numbers them).
        self.nodes: list[Node] = []
        self.parent: Node | None = None
        self.slot = 0
        self.children = children or []
        for slot, child in enumerate(self.children):
            child.parent, child.slot = self, slot

    def walk(self) -> list[Node]:
        found: list[Node] = [self]
        for child in self.children:
            found.extend(child.walk())
        return found

    # -- the input place ------------------------------------------------------------------

    def enable(self, m: Marking, parent: int | None, token: Token) -> int:
        """Put a token in the input place: a new context, started."""
        cid = m.next_id
        m.next_id += 1
        m.contexts[cid] = Context(self.id, parent, token, m.now)
        if parent is not None:
            m.contexts[parent].children.add(cid)
        m.fired += 1
        self.start(m, cid)
        return cid

    def start(self, m: Marking, cid: int) -> None:
        """What enabling does: enable children, wait for events, set temporal guards."""
        for child in self.children:
            child.enable(m, cid, m.contexts[cid].token)

    def receive(self, m: Marking, cid: int, slot: int, token: Token) -> bool:
        """A child's token reached this construction; True when it was taken."""
        return self.emit(m, cid, token)

    def guard(self, m: Marking, cid: int, tag: int) -> None:
        """A temporal guard of this context fired (its local age reached the due time)."""

    def child_failed(self, m: Marking, cid: int, slot: int) -> None:
        """A child context was garbage-collected without a match. By default this context
        fails too once no child of it is left."""
        context = m.contexts.get(cid)
        if context is not None and not context.children:
            self.fail(m, cid)

    # -- the output arc -------------------------------------------------------------------

    def emit(self, m: Marking, cid: int, token: Token) -> bool:
        """Pass a token to the parent; under `first`, the context then closes."""
        context = m.contexts.get(cid)
        if context is None:
            return False
        parent = self.parent
        assert parent is not None, "the root takes tokens, it does not emit them"
        assert context.parent is not None
        taken = parent.receive(m, context.parent, self.slot, token)
        if taken:
            context.fired = True
            if self.first:
                self.close(m, cid)
        return taken

    def fail(self, m: Marking, cid: int) -> None:
        """Garbage-collect the context (no match), and tell the parent."""
        context = m.contexts.get(cid)
        if context is None:
            return
        self.close(m, cid)
        m.garbage += 1
        if context.parent is not None and self.parent is not None:
            self.parent.child_failed(m, context.parent, self.slot)

    def close(self, m: Marking, cid: int) -> None:
        """Remove the context and every context it enabled from their places."""
        context = m.contexts.pop(cid, None)
        if context is None:
            return
        if context.parent is not None:
            parent = m.contexts.get(context.parent)
            if parent is not None:
                parent.children.discard(cid)
        waiting = m.waiting.get(context.node)
        if waiting is not None:
            waiting.pop(cid, None)
        m.deferred.pop(cid, None)
        for child in list(context.children):
            owner = m.contexts.get(child)
            if owner is not None:
                self.nodes[owner.node].close(m, child)

    def children_of(self, m: Marking, cid: int, slot: int) -> list[int]:
        """The live contexts this context enabled in the child at `slot`."""
        context = m.contexts[cid]
        child = self.children[slot].id
        return [c for c in context.children if m.contexts[c].node == child]
