"""The shared versioned match buffer (SASE+ section 5.1).

One stack per automaton state (`a[1]`, `a[i]`, `b`, …) holds the events runs selected there,
each once, however many runs selected it. Each entry keeps predecessor pointers, one for
every run that selected the event, labelled with that run's *version*: a Dewey number that
grows as runs split. A run keeps its version while it goes one way; when it splits, each new
branch gets the version extended by a fresh digit. A pointer labelled v belongs to the history
of run u when v is a prefix of u, so a traversal from a run's last entry along pointers whose
labels are prefixes of its version retrieves exactly that run's match. The versions of the
runs alive at one time are prefix-free (a run that splits gives up its version), so at most
one pointer of an entry fits a version, and a traversal stops looking at the first.

Merged runs (section 5.2.2) get a fresh version and a *join* entry that points to the last
entry of each merged run under its own version; a traversal through a join yields one match
per merged run.

A traversal returns each history grouped by variable, as tuples of positions and events.
Long Kleene matches make that the expensive part of a query, and a run's successive matches
repeat most of it: so the run keeps what it read last as a `Memo`, and its next traversal
stops where that one began and extends the remembered histories by the entries after it. A
memo read for version v at entry e stays exact for any version extending v: the pointers
behind e were written by v's ancestors before any of its descendants existed.

>>> buffer = Buffer()
>>> e1 = buffer.add("a[1]", "a", 1, "e1", (1,), None)
>>> e2 = buffer.add("a[i]", "a", 2, "e2", (1,), e1)
>>> e3 = buffer.add("a[1]", "a", 3, "e3", (2,), None)
>>> e4 = buffer.add("a[i]", "a", 4, "e4", (1,), e2)
>>> e4 = buffer.add("a[i]", "a", 4, "e4", (2,), e3)
>>> [h.positions for h in buffer.histories(e4, (2,))]
[{'a': (3, 4)}]
>>> memo = Memo(e4, (1,), buffer.histories(e4, (1,)))
>>> e5 = buffer.add("a[i]", "a", 5, "e5", (1,), e4)
>>> [h.events for h in buffer.histories(e5, (1,), memo=memo)]
[{'a': ('e1', 'e2', 'e4', 'e5')}]
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import groupby, islice
from operator import attrgetter
from typing import Any

__all__ = ["Buffer", "Entry", "History", "Memo", "Version"]

Version = tuple[int, ...]

_NONE = 1 << 62  # a position no stream reaches

_variable = attrgetter("variable")
_position = attrgetter("position")
_event = attrgetter("event")


class Entry:
    """An event selected at one stack, with one labelled pointer per run that selected it.

    A pointer is (label, predecessor entry or None, version to go on with or None: the same,
    the latest start of the histories behind it or None, the merged run's memo or None). A
    join entry (merged runs) has no stack, variable or event.
    """

    __slots__ = ("event", "pointers", "position", "variable")

    def __init__(self, variable: str | None, position: int, event: Any) -> None:
        self.variable = variable
        self.position = position
        self.event = event
        self.pointers: list[Pointer] = []

    def __repr__(self) -> str:
        return f"Entry({self.variable}, {self.position}, {len(self.pointers)} pointers)"


class History:
    """One match history: each variable's positions and events, oldest first, in the order
    the variables were first bound, and the oldest event (None: the history is empty)."""

    __slots__ = ("events", "first", "positions")

    def __init__(
        self, first: Any, positions: dict[str, tuple[int, ...]], events: dict[str, tuple[Any, ...]]
    ) -> None:
        self.first = first
        self.positions = positions
        self.events = events

    def extended(self, groups: list[Group]) -> History:
        """This history followed by `groups` (see `_grouped`)."""
        if not groups:
            return self
        positions = self.positions if groups[0][1] is None else dict(self.positions)
        events = dict(self.events)
        for variable, ps, es in groups:
            if ps is not None:
                positions[variable] = positions.get(variable, ()) + ps
            events[variable] = events.get(variable, ()) + es
        return History(groups[0][2][0] if self.first is None else self.first, positions, events)


class Memo:
    """The histories a run read last: from `entry` back, for `version`."""

    __slots__ = ("entry", "histories", "version")

    def __init__(self, entry: Entry, version: Version, histories: list[History]) -> None:
        self.entry = entry
        self.version = version
        self.histories = histories


Group = tuple[str, tuple[int, ...] | None, tuple[Any, ...]]
Pointer = tuple[Version, Entry | None, Version | None, float | None, Memo | None]

_EMPTY = History(None, {}, {})


class Buffer:
    """The stacks of one partition's runs, and the joins of its merged runs. With
    `positions=False` histories carry only events (their `positions` stay empty)."""

    def __init__(self, positions: bool = True) -> None:
        self.positions = positions
        self.stacks: dict[str, list[Entry]] = {}
        self.joins: list[Entry] = []
        #: The oldest position any stack holds (_NONE: the stacks are empty).
        self.first = _NONE
        #: How many joins to keep before `expire` is worth its scan.
        self.kept = 64
        self.writes = 0

    def add(
        self,
        stack: str,
        variable: str,
        position: int,
        event: Any,
        label: Version,
        predecessor: Entry | None,
    ) -> Entry:
        """Select the event at `stack` for the run of version `label`, after `predecessor`."""
        entries = self.stacks.get(stack)
        if entries is None:
            entries = self.stacks[stack] = []
        if entries and entries[-1].position == position:
            entry = entries[-1]
        else:
            entry = Entry(variable, position, event)
            if not entries and position < self.first:
                self.first = position
            entries.append(entry)
        entry.pointers.append((label, predecessor, None, None, None))
        self.writes += 1
        return entry

    def join(
        self, label: Version, members: list[tuple[Entry | None, Version, float, Memo | None]]
    ) -> Entry:
        """An entry standing for several merged runs, each (last entry, version, the latest
        start among its histories, its memo)."""
        entry = Entry(None, -1, None)
        entry.pointers = [
            (label, last, version, start, memo) for last, version, start, memo in members
        ]
        self.joins.append(entry)
        self.writes += len(members)
        return entry

    def histories(
        self,
        entry: Entry | None,
        version: Version,
        since: float | None = None,
        memo: Memo | None = None,
        limit: float = math.inf,
    ) -> list[History]:
        """Every match history reachable from `entry` for the run of `version` (see
        `each_history`), read until there are more than `limit` (a guard: they may be
        exponentially many)."""
        walk = self.each_history(entry, version, since, memo)
        return list(walk if limit == math.inf else islice(walk, int(limit) + 1))

    def each_history(
        self,
        entry: Entry | None,
        version: Version,
        since: float | None = None,
        memo: Memo | None = None,
    ) -> Iterator[History]:
        """Every match history reachable from `entry` for the run of `version`, one at a
        time, using what `memo` remembers. With `since`, only histories that started at it
        or later: merged histories that all started before it are skipped, and dropped
        from their join for good (time only moves on). Entries only ever point back, so a
        walk begun after later events were added reads what it would have read before
        them."""
        todo: list[tuple[Entry | None, Version, Memo | None, list[Entry]]] = [
            (entry, version, memo, [])
        ]
        while todo:
            current, version, memo, segment = todo.pop()
            while current is not None:
                if (
                    memo is not None
                    and current is memo.entry
                    and version[: len(memo.version)] == memo.version
                ):
                    groups = _grouped(segment, self.positions)
                    for remembered in memo.histories:
                        history = remembered.extended(groups)
                        if since is None or history.first is None or history.first.t >= since:
                            yield history
                    break
                joined = current.variable is None
                if not joined:
                    segment.append(current)
                elif since is not None:
                    _expire(current, since)
                follow = None
                for label, predecessor, switch, _, inherited in current.pointers:
                    if label is version or version[: len(label)] == label:
                        after = (
                            predecessor,
                            version if switch is None else switch,
                            inherited if joined else memo,
                        )
                        if follow is not None:  # a join: the histories part here
                            todo.append((*follow, segment.copy()))
                        follow = after
                        if not joined:
                            break  # live versions are prefix-free: one pointer fits
                if follow is None:
                    break  # no history of this version passes here
                current, version, memo = follow
            else:
                history = _EMPTY.extended(_grouped(segment, self.positions))
                if since is None or history.first is None or history.first.t >= since:
                    yield history

    def first_histories(
        self, entry: Entry | None, version: Version, admit: Callable[[Entry], bool]
    ) -> list[History]:
        """Of the histories `histories` would give, those whose positions, oldest first,
        come first (every one tied there), among those whose oldest entry `admit`s: what
        non-overlapping output reports of a run, found without listing the others (they may
        be exponentially many). The order is that of the positions with a common later
        suffix appended, so of two where one is a prefix of the other, the longer comes
        first."""
        if entry is None:
            return [_EMPTY]
        done: dict[tuple[int, Version], list[_Link]] = {}
        todo: list[tuple[Entry, Version, bool]] = [(entry, version, False)]
        while todo:
            current, label, expanded = todo.pop()
            state = (id(current), label)
            if state in done and not expanded:
                continue
            ways = _ways(current, label)
            if not expanded:
                waiting = [
                    (before, then, False)
                    for before, then in ways
                    if before is not None and (id(before), then) not in done
                ]
                if waiting:
                    todo.append((current, label, True))
                    todo.extend(waiting)
                    continue
            found: list[_Link] = []
            for before, then in ways:
                found += [_ROOT] if before is None else done[(id(before), then)]
            if current.variable is None:  # a join: the first of its merged histories
                done[state] = _firsts(found)
                continue
            done[state] = [
                _Link(current, None) if link is _ROOT else _Link(current, link)
                for link in found
                if link is not _ROOT or admit(current)
            ]
        return [
            _EMPTY.extended(_grouped(link.segment(), self.positions))
            for link in _firsts(done[(id(entry), version)])
            if link is not _ROOT
        ]

    def prune(self, horizon: int) -> None:
        """Drop the entries of events before position `horizon`, which no live run reaches."""
        if horizon <= self.first:
            return
        for entries in self.stacks.values():
            if entries and entries[0].position < horizon:
                cut = bisect_left(entries, horizon, key=_position)
                del entries[:cut]
        self.first = min((e[0].position for e in self.stacks.values() if e), default=_NONE)

    def expire(self, since: float) -> None:
        """Drop the merged histories that started before `since` from every join. Traversals
        do it on their way; this reaches the joins that memos let them skip."""
        for join in self.joins:
            _expire(join, since)
        self.joins = [join for join in self.joins if join.pointers]
        self.kept = 2 * len(self.joins) + 64

    def __len__(self) -> int:
        return sum(len(entries) for entries in self.stacks.values())


def in_order(roots: Iterable[Entry | None]) -> list[Entry]:
    """Every entry reachable from `roots`, each after every entry it points to (directly or
    through a memo). Pickling them in this order first keeps pickle from recursing down a
    long chain of entries (a Kleene history, or the joins of runs merged over a window),
    which would exceed Python's recursion limit; each entry's pointers then refer to
    entries already pickled.

    >>> a = Entry("a", 0, "e0")
    >>> b = Entry("b", 1, "e1"); b.pointers.append(((1,), a, None, None, None))
    >>> [e.variable for e in in_order([b, a])]
    ['a', 'b']
    """
    ordered: list[Entry] = []
    done: set[int] = set()  # expanded: its predecessors are in `ordered` or on the way
    todo: list[tuple[Entry, bool]] = [(root, False) for root in roots if root is not None]
    while todo:
        entry, expanded = todo.pop()
        if expanded:
            ordered.append(entry)
            continue
        if id(entry) in done:
            continue
        done.add(id(entry))
        todo.append((entry, True))
        for pointer in entry.pointers:
            memo = pointer[4]
            for before in (pointer[1], None if memo is None else memo.entry):
                if before is not None and id(before) not in done:
                    todo.append((before, False))
    return ordered


class _Link:
    """A history read back from an entry: the entry and the link before it (None: the
    entry is the oldest)."""

    __slots__ = ("before", "entry")

    def __init__(self, entry: Entry | None, before: _Link | None) -> None:
        self.entry = entry
        self.before = before

    def segment(self) -> list[Entry]:
        """The entries, newest first."""
        entries = []
        link: _Link | None = self
        while link is not None and link.entry is not None:
            entries.append(link.entry)
            link = link.before
        return entries

    def order(self) -> tuple[float, ...]:
        """The positions oldest first, and a common later suffix standing for infinity."""
        return (*(e.position for e in reversed(self.segment())), math.inf)


#: The empty history, before any entry (a join reached the oldest end of a run).
_ROOT = _Link(None, None)


def _ways(entry: Entry, version: Version) -> list[tuple[Entry | None, Version]]:
    """Where the history of `version` goes on from `entry`: one predecessor (and the
    version to follow it with), several at a join, none when no history passes here."""
    ways = []
    for label, predecessor, switch, _, _ in entry.pointers:
        if label is version or version[: len(label)] == label:
            ways.append((predecessor, version if switch is None else switch))
            if entry.variable is not None:
                break  # live versions are prefix-free: one pointer fits
    return ways


def _firsts(links: list[_Link]) -> list[_Link]:
    """The links whose histories come first (`_Link.order`), every one tied there."""
    if len(links) <= 1:
        return links
    orders = [link.order() for link in links]
    least = min(orders)
    return [link for link, order in zip(links, orders, strict=True) if order == least]


def _expire(join: Entry, since: float) -> None:
    """Drop a join's histories that all started before `since`."""
    join.pointers = [p for p in join.pointers if p[3] is None or p[3] >= since]


def _grouped(segment: list[Entry], positions: bool) -> list[Group]:
    """Entries given newest first as runs of one variable, oldest first: (variable, positions
    or None when not wanted, events)."""
    groups: list[Group] = []
    for variable, run in groupby(reversed(segment), _variable):
        entries = tuple(run)
        ps = tuple(map(_position, entries)) if positions else None
        groups.append((variable, ps, tuple(map(_event, entries))))
    return groups
