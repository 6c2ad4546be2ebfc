"""Ignorable arcs with anchors and an interval index (the paper's Appendix D).

An *ignorable* step carries a pmatch over an event unchanged: a self-loop that binds nothing
and keeps the register (every strategy's skip loop in a compiled query). Over a run of such
events Algorithm 1 lists the same pmatch at every entry. Here it is listed once, as an
*anchor*: the pmatch and the interval of keys [origin, until] over which it ends at every
entry. The anchors are kept in a sorted list by `until` (the interval index), so the
anchors that cover a key are a suffix of it, filtered by origin; an anchor that keeps
stepping over the events as they come in order has `until` = ∞ (the paper's "avoiding
frequent itree updates") and costs no update at all.

What the index holds at an entry is its own pmatches (`Entry.pmatches`, created there by an
arc that is not ignorable, or begun there) and the anchors covering its key; everything the
operator does is Algorithm 1 over that, with Appendix D's changes:

- an event in order fires every arc of the last entry's pmatches and anchors; an ignorable
  step makes a pmatch an anchor open to ∞ (or leaves an open one as it is), and an anchor
  that does not step over the event is closed at the last entry;
- an event out of order finds the pmatches before its place (own and covering anchors); a
  start all of whose computations step over it keeps everything after it (the anchors'
  intervals simply include it); the other starts are withdrawn after it — own pmatches cut,
  anchors truncated before it or dropped — and derived again from it on;
- a delete withdraws every start up to the event and derives again from the entry before;
- a punctuation drops the anchors whose interval ends before the cover, and those the
  window has ended.

The machine runs this for compiled queries without ε-arcs, timeouts or sequence numbers
(`Machine.anchored`); the test suite holds it to `reference` like the plain one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from sortedcontainers import SortedKeyList

from kleene.events import Event, Watermark
from kleene.plans.afa.machine import (
    AfaState,
    Entry,
    Key,
    Machine,
    Merged,
    PMatch,
    Report,
    start_key,
)

__all__ = ["Anchor", "AnchoredMachine", "new_index"]

INF: Key = (math.inf, math.inf)


class Anchor:
    """A pmatch ending at every entry with a key from `origin` to `until` (INF: on to the
    last entry, and to the events after it that it steps over)."""

    __slots__ = ("origin", "pmatch", "until")

    def __init__(self, pmatch: PMatch, origin: Key, until: Key) -> None:
        self.pmatch = pmatch
        self.origin = origin
        self.until = until

    def __getstate__(self) -> tuple[PMatch, Key, Key]:
        return (self.pmatch, self.origin, self.until)

    def __setstate__(self, state: tuple[PMatch, Key, Key]) -> None:
        self.pmatch, self.origin, self.until = state


def _until(anchor: Anchor) -> Key:
    return anchor.until


def new_index() -> SortedKeyList:
    return SortedKeyList(key=_until)


#: A pmatch at an entry: the pmatch, and its anchor when it is one.
Item = tuple[PMatch, Anchor | None]


class AnchoredMachine(Machine):
    """Algorithm 1 with Appendix D's anchors (see the module docstring)."""

    # -- the index ----------------------------------------------------------------------

    def _index(self, state: AfaState) -> SortedKeyList:
        if state.anchors is None:
            state.anchors = new_index()
        return state.anchors

    def _covering(self, state: AfaState, key: Key) -> list[Anchor]:
        """The anchors whose interval holds `key`: open ones from it on, closed ones to it."""
        found = [a for a in state.open if a.origin <= key]
        found += [a for a in self._index(state).irange_key(min_key=key) if a.origin <= key]
        return found

    def _items(self, state: AfaState, position: int) -> list[Item]:
        """The pmatches ending at the entry at `position`: its own, then its anchors."""
        key, entry = state.entries.peekitem(position)
        items: list[Item] = [(p, None) for p in entry.pmatches]
        items += [(a.pmatch, a) for a in self._covering(state, key)]
        return items

    def _add(self, state: AfaState, anchor: Anchor) -> None:
        if anchor.until == INF:
            state.open.append(anchor)
        else:
            self._index(state).add(anchor)

    def _take_out(self, state: AfaState, anchor: Anchor) -> None:
        if anchor.until == INF:
            state.open.remove(anchor)
        else:
            self._index(state).remove(anchor)

    def _reach(self, state: AfaState, anchor: Anchor, until: Key) -> None:
        self._take_out(state, anchor)
        anchor.until = until
        self._add(state, anchor)

    def _drop(self, state: AfaState, anchor: Anchor) -> None:
        self._take_out(state, anchor)
        state.live -= 1

    def _all(self, state: AfaState) -> list[Anchor]:
        return [*state.open, *(state.anchors or ())]

    # -- one event ----------------------------------------------------------------------

    def _steps(self, pmatches: list[PMatch], event: Event) -> list[tuple[bool, list[PMatch]]]:
        """For each pmatch: does it step over `event` unchanged (an ignorable step), and
        the pmatches its other arcs make there."""
        merged: Merged | None = {} if self.merge else None
        result: list[tuple[bool, list[PMatch]]] = []
        for pmatch in pmatches:
            made: list[PMatch] = []
            result.append((self._step(pmatch, event, merged, made, None), made))
        return result

    def _step(
        self,
        pmatch: PMatch,
        event: Event,
        merged: Merged | None,
        made: list[PMatch],
        quiet: tuple[bool, ...] | None,
    ) -> bool:
        """Does `pmatch` step over `event` unchanged (an ignorable step)? The pmatches its
        other arcs make there go to `made`. For an event only ignorable arcs fire for
        (`quiet`, by state: `Machine.quiet`) no arc is asked."""
        start, start_t, state, register, bound = pmatch
        window = self.window
        if window is not None and event.t - start_t > window:
            return False
        if quiet is not None:
            return quiet[state]
        same = False
        for target, after, bind in self._fired(state, register, event, merged):
            if bind is None and target == state and (after is register or after == register):
                same = True
            else:
                taken = bound if bind is None else (bind, event, bound)
                made.append((start, start_t, target, after, taken))
        return same

    def _carry(
        self,
        state: AfaState,
        items: list[Item],
        steps: list[tuple[bool, list[PMatch]]],
        before: tuple[Key, Entry],
        key: Key,
        open_end: bool,
    ) -> tuple[list[PMatch], list[Item]]:
        """Apply `steps` over the event at `key` to the `items` ending at the entry `before`:
        the pmatches made there (by start), and the items carried over it, their anchors
        reaching it (to ∞ with `open_end`: the event is the last one)."""
        made: list[PMatch] = []
        carried: list[Item] = []
        anchored: set[int] = set()
        reach = INF if open_end else key
        for (pmatch, held), (same, derived) in zip(items, steps, strict=True):
            made += derived
            if same:
                anchor = held
                if anchor is None:
                    anchor = Anchor(pmatch, before[0], reach)
                    self._add(state, anchor)
                    anchored.add(id(pmatch))
                elif anchor.until < reach:
                    self._reach(state, anchor, reach)
                carried.append((pmatch, anchor))
            elif open_end and held is not None and held.until == INF:
                self._reach(state, held, before[0])  # it stops at the last entry
        if anchored:
            entry = before[1]
            entry.pmatches = [p for p in entry.pmatches if id(p) not in anchored]
        made.sort(key=start_key)
        return made, carried

    # -- the operator ---------------------------------------------------------------------

    def insert(self, state: AfaState, event: Event) -> list[Report]:
        key = state.key = self._key(state, event)
        entries = state.entries
        out: list[Report] = []
        last = state.last
        made: list[PMatch] = []
        if last is None or key > last[0]:  # in order
            quiet = self.quiet(event.type)
            if last is not None and (quiet is None or not self._still(state, last, event, quiet)):
                made = self._in_order(state, event, last, quiet)
            if quiet is None:
                self._begin(key, event, made)
            entry = entries[key] = Entry(event, made)
            state.last = (key, entry)
            if made:
                self._took(state, made)
                self._report(made, [], event, out)
            return out
        position = entries.bisect_left(key)
        state.counters["out_of_order"] += 1
        items = self._items(state, position - 1) if position else []
        steps = self._steps([p for p, _ in items], event)
        steady = self._steps_steady(items, steps)
        # truncating anchors before the event leaves them covering the entry before it,
        # so `items` and `steps` stand
        self._invalidate_anchored(state, position, key, steady, out)
        carried: list[Item] = []
        if position:
            before = entries.peekitem(position - 1)
            made, carried = self._carry(state, items, steps, before, key, False)
        self._begin(key, event, made)
        entries[key] = Entry(event, made)
        self._took(state, made)
        self._report(made, [], event, out)
        onward: list[Item] = [(p, None) for p in made]
        onward += [(p, a) for p, a in carried if p[0] not in steady]
        self._propagate_anchored(state, position + 1, onward, out)
        return out

    def _remove(self, state: AfaState, position: int, key: Key, out: list[Report]) -> None:
        self._invalidate_anchored(state, position, key, set(), out)
        state.live -= len(state.entries.pop(key).pmatches)
        if position:
            self._propagate_anchored(state, position, self._items(state, position - 1), out)

    def _in_order(
        self,
        state: AfaState,
        event: Event,
        last: tuple[Key, Entry],
        quiet: tuple[bool, ...] | None,
    ) -> list[PMatch]:
        """An event after the last entry: the pmatches made there; the last entry's own
        pmatches that step over it become anchors open to ∞, open anchors that do not are
        closed at the last entry, and anchors closed there that do are opened again. An
        event only ignorable arcs fire for (`quiet`) fires no arc: each pmatch steps over
        it or ends."""
        at, entry = last
        own = entry.pmatches
        index = state.anchors
        merged: Merged | None = {} if self.merge else None
        closed = []
        if index and index[-1].until >= at:  # (sorted by `until`)
            closed = [a for a in index.irange_key(min_key=at) if a.origin <= at]
        step = self._step
        made: list[PMatch] = []
        still: list[Anchor] = []
        kept: list[PMatch] = []
        for pmatch in own:
            if step(pmatch, event, merged, made, quiet):
                still.append(Anchor(pmatch, at, INF))
            else:
                kept.append(pmatch)
        for anchor in state.open:
            if step(anchor.pmatch, event, merged, made, quiet):
                still.append(anchor)
            else:
                anchor.until = at
                self._index(state).add(anchor)
        for anchor in closed:
            if step(anchor.pmatch, event, merged, made, quiet):
                index.remove(anchor)
                anchor.until = INF
                still.append(anchor)
        if len(kept) != len(own):
            entry.pmatches = kept
        state.open = still
        if len(made) > 1:
            made.sort(key=start_key)
        return made

    def _still(
        self, state: AfaState, last: tuple[Key, Entry], event: Event, quiet: tuple[bool, ...]
    ) -> bool:
        """Does an event after the `last` entry that only ignorable arcs fire for change
        nothing? When that entry holds no pmatch of its own, no anchor closed there, and
        every open anchor steps over it."""
        at, entry = last
        if entry.pmatches:
            return False
        index = state.anchors
        if index and index[-1].until >= at:
            return False
        t, window = event.t, self.window
        for anchor in state.open:
            pmatch = anchor.pmatch
            if not quiet[pmatch[2]] or (window is not None and t - pmatch[1] > window):
                return False
        return True

    def _took(self, state: AfaState, made: list[PMatch]) -> None:
        state.counters["pmatches_created"] += len(made)
        state.live += len(made)

    def _steps_steady(self, items: list[Item], steps: list[tuple[bool, list[PMatch]]]) -> set[Key]:
        """The starts all of whose pmatches (that can still grow) step over the event."""
        steady: set[Key] = set()
        unsteady: set[Key] = set()
        dead = self.dead
        for (pmatch, _), (same, _) in zip(items, steps, strict=True):
            if dead[pmatch[2]]:
                continue
            (steady if same else unsteady).add(pmatch[0])
        return steady - unsteady

    def _invalidate_anchored(
        self, state: AfaState, position: int, key: Key, steady: set[Key], out: list[Report]
    ) -> None:
        """Withdraw, from the entry at `position` on, every computation of a start up to
        `key` but the `steady` ones: anchors reaching there are truncated before it (or
        dropped, when they begin there or later), own pmatches cut, until no entry holds one
        and no withdrawn anchor reached that far."""
        entries = state.entries
        if position >= len(entries):
            return
        first = entries.peekitem(position)[0]
        previous = entries.peekitem(position - 1)[0] if position else None
        farthest: Key | None = None
        for anchor in [*state.open, *self._index(state).irange_key(min_key=first)]:
            start = anchor.pmatch[0]
            if start > key or start in steady:
                continue
            if farthest is None or anchor.until > farthest:
                farthest = anchor.until
            if previous is not None and anchor.origin <= previous:
                self._reach(state, anchor, previous)
            else:
                self._drop(state, anchor)
            state.counters["pmatches_invalidated"] += 1
        while position < len(entries):
            at, entry = entries.peekitem(position)
            pmatches = entry.pmatches
            cut = 0
            while cut < len(pmatches) and pmatches[cut][0] <= key:
                cut += 1
            gone = [p for p in pmatches[:cut] if p[0] not in steady]
            if gone:
                entry.pmatches = [p for p in pmatches[:cut] if p[0] in steady] + pmatches[cut:]
                state.counters["pmatches_invalidated"] += len(gone)
                state.live -= len(gone)
                self._withdraw(gone, entry.pmatches, entry.event, out)
            elif farthest is None or at > farthest:
                return
            position += 1

    def _propagate_anchored(
        self, state: AfaState, position: int, moving: list[Item], out: list[Report]
    ) -> None:
        """PropagateInsert: carry the items ending at the entry before `position` over the
        entries from there on, until none is left."""
        entries = state.entries
        while moving and position < len(entries):
            before = entries.peekitem(position - 1)
            key, entry = entries.peekitem(position)
            assert entry.event is not None, "entries after a punctuation's cover keep events"
            steps = self._steps([p for p, _ in moving], entry.event)
            last = position == len(entries) - 1
            made, carried = self._carry(state, moving, steps, before, key, last)
            self._report(made, entry.pmatches, entry.event, out)
            held = entry.pmatches
            if made and held and held[0][0] < made[-1][0]:
                entry.pmatches = sorted(held + made, key=start_key)
            else:
                held[:0] = made
            self._took(state, made)
            moving = [(p, None) for p in made] + carried
            position += 1

    def punctuate(self, state: AfaState, watermark: Watermark) -> list[Report]:
        cover = self._clean(state, watermark)
        if cover is None:
            return []
        index = state.anchors
        if index:
            for anchor in list(index.irange_key(max_key=cover, inclusive=(True, False))):
                self._drop(state, anchor)
        window = self.window
        if window is not None:
            t = watermark.t
            for anchor in [a for a in self._all(state) if a.pmatch[1] + window < t]:
                self._drop(state, anchor)
        return []

    def idle(self, state: AfaState, watermark: Watermark) -> bool:
        entries = state.entries
        if not entries:
            return not self._all(state)
        key, entry = entries.peekitem(-1)
        if not watermark.settles(key[0]):
            return False
        window, dead = self.window, self.dead
        present = [*entry.pmatches, *(a.pmatch for a in self._covering(state, key))]
        return all(
            dead[p[2]] or (window is not None and watermark.t - p[1] > window) for p in present
        )

    def earliest(self, state: AfaState) -> float:
        starts: Iterable[float] = (p[1] for entry in state.entries.values() for p in entry.pmatches)
        anchored = (a.pmatch[1] for a in self._all(state))
        return min((*starts, *anchored), default=math.inf)
