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

>>> buffer = Buffer()
>>> e1 = buffer.add("a[1]", "a", 1, "e1", (1,), None)
>>> e2 = buffer.add("a[i]", "a", 2, "e2", (1,), e1)
>>> e3 = buffer.add("a[1]", "a", 3, "e3", (2,), None)
>>> e4 = buffer.add("a[i]", "a", 4, "e4", (1,), e2)
>>> e4 = buffer.add("a[i]", "a", 4, "e4", (2,), e3)
>>> [[entry.position for entry in path] for path in buffer.paths(e4, (2,))]
[[3, 4]]
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

__all__ = ["Buffer", "Entry", "Version"]

Version = tuple[int, ...]


class Entry:
    """An event selected at one stack, with one labelled pointer per run that selected it.

    A pointer is (label, predecessor entry or None, version to go on with or None: the same,
    the latest start of the histories behind it or None). A join entry (merged runs) has no
    stack, variable or event.
    """

    __slots__ = ("event", "pointers", "position", "variable")

    def __init__(self, variable: str | None, position: int, event: Any) -> None:
        self.variable = variable
        self.position = position
        self.event = event
        self.pointers: list[tuple[Version, Entry | None, Version | None, float | None]] = []

    def __repr__(self) -> str:
        return f"Entry({self.variable}, {self.position}, {len(self.pointers)} pointers)"


class Buffer:
    """The stacks of one partition's runs."""

    def __init__(self) -> None:
        self.stacks: dict[str, list[Entry]] = {}
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
            entries.append(entry)
        entry.pointers.append((label, predecessor, None, None))
        self.writes += 1
        return entry

    def join(self, label: Version, members: list[tuple[Entry | None, Version, float]]) -> Entry:
        """An entry standing for several merged runs, each (last entry, version, the latest
        start among its histories)."""
        entry = Entry(None, -1, None)
        entry.pointers = [(label, last, version, start) for last, version, start in members]
        self.writes += len(members)
        return entry

    def paths(
        self, entry: Entry | None, version: Version, since: float | None = None
    ) -> Iterator[list[Entry]]:
        """Every match history reachable from `entry` for the run of `version`: the entries of
        its selected events, oldest first. With `since`, merged histories that all started
        before it are skipped, and dropped from their join for good (time only moves on, so
        they stay expired)."""
        todo: list[tuple[Entry | None, Version, list[Entry]]] = [(entry, version, [])]
        while todo:
            current, version, path = todo.pop()
            while current is not None:
                if current.variable is not None:
                    path.append(current)
                elif since is not None:
                    current.pointers = [
                        p for p in current.pointers if p[3] is None or p[3] >= since
                    ]
                follow = None
                for label, predecessor, switch, _ in current.pointers:
                    if label is version or version[: len(label)] == label:
                        if follow is not None:  # a join: the histories part here
                            todo.append((*follow, path.copy()))
                        follow = (predecessor, version if switch is None else switch)
                        if current.variable is not None:
                            break  # live versions are prefix-free: one pointer fits
                if follow is None:
                    break  # no history of this version passes here
                current, version = follow
            else:
                path.reverse()
                yield path

    def prune(self, horizon: int) -> None:
        """Drop the entries of events before position `horizon`, which no live run reaches."""
        for name, entries in self.stacks.items():
            if entries and entries[0].position < horizon:
                cut = bisect_left(entries, horizon, key=lambda e: e.position)
                del entries[:cut]
                if not entries:
                    self.stacks[name] = entries

    def __len__(self) -> int:
        return sum(len(entries) for entries in self.stacks.values())
