"""The operator's sorted index of events (the paper's red-black tree): a `SortedDict` by key,
with the events that arrive in order appended to a plain run after it.

An in-order event is the common case, and it needs no search: it goes after every key held.
So the index keeps such events in two plain lists (keys, entries) after the tree's last key,
and moves them into the tree only when an event lands among them or one of them is removed
by key. Punctuations drop entries from the front, of the run as of the tree. An in-order
stream thus never pays for the tree; a disordered one pays what the tree costs.

Positions run over the tree, then the run, as if they were one sorted sequence.

>>> index = Index()
>>> for key in [(1, 0), (2, 1), (4, 2)]:
...     index[key] = str(key[0])
>>> index[(3, 3)] = "3"  # lands among them: the run moves into the tree
>>> index[(5, 4)] = "5"
>>> len(index), index.peekitem(-1), index.bisect_left((3, 3)), index.popfirst()
(5, ((5, 4), '5'), 2, ((1, 0), '1'))
>>> [value for _, value in index.items()]
['2', '3', '4', '5']
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Generic, TypeVar

from sortedcontainers import SortedDict

__all__ = ["Index"]

Key = tuple[float, float]
V = TypeVar("V")


class Index(Generic[V]):
    """Entries by key, in key order; see the module docstring."""

    __slots__ = ("head", "run", "runkeys", "tree")

    def __init__(self) -> None:
        self.tree = SortedDict()
        #: The keys and entries appended after the tree's last key, from `head` on (the
        #: ones before it were dropped from the front).
        self.runkeys: list[Key] = []
        self.run: list[V | None] = []
        self.head = 0

    def __len__(self) -> int:
        return len(self.tree) + len(self.run) - self.head

    def __setitem__(self, key: Key, entry: V) -> None:
        keys = self.runkeys
        if len(keys) > self.head:
            after = key > keys[-1]
        else:
            after = not self.tree or key > self.tree.peekitem(-1)[0]
        if after:
            keys.append(key)
            self.run.append(entry)
        else:
            self._settle()
            self.tree[key] = entry

    def get(self, key: Key) -> V | None:
        """The entry at `key`, or None."""
        head, keys = self.head, self.runkeys
        if len(keys) > head and key >= keys[head]:
            at = bisect_left(keys, key, head)
            return self.run[at] if at < len(keys) and keys[at] == key else None
        return self.tree.get(key)  # type: ignore[no-any-return]

    def pop(self, key: Key) -> V:
        """Remove the entry at `key` and return it (KeyError when none)."""
        self._settle()
        return self.tree.pop(key)  # type: ignore[no-any-return]

    def popfirst(self) -> tuple[Key, V]:
        """Remove the first entry and return it with its key."""
        if self.tree:
            return self.tree.popitem(0)  # type: ignore[no-any-return]
        head = self.head
        if head >= len(self.run):
            raise IndexError("the index is empty")
        key, entry = self.runkeys[head], self.run[head]
        self.run[head] = None  # let it go; the key stays, so the run keys stay sorted
        self.head = head = head + 1
        if head >= 64 and 2 * head >= len(self.run):
            del self.runkeys[:head], self.run[:head]
            self.head = 0
        assert entry is not None, "the run holds entries from head on"
        return key, entry

    def peekitem(self, position: int = -1) -> tuple[Key, V]:
        """The key and entry at `position` (negative: from the end)."""
        tree = self.tree
        inside = len(tree)
        if position < 0:
            position += len(self)
        if position < inside:
            if position < 0:
                raise IndexError("index position out of range")
            return tree.peekitem(position)  # type: ignore[no-any-return]
        at = self.head + position - inside
        if at >= len(self.run):
            raise IndexError("index position out of range")
        entry = self.run[at]
        assert entry is not None, "the run holds entries from head on"
        return self.runkeys[at], entry

    def bisect_left(self, key: Key) -> int:
        """The position of the first entry whose key is not below `key`."""
        head, keys = self.head, self.runkeys
        if len(keys) > head and key > keys[head]:
            return len(self.tree) + bisect_left(keys, key, head) - head
        return self.tree.bisect_left(key)  # type: ignore[no-any-return]

    def bisect_right(self, key: Key) -> int:
        """The position of the first entry whose key is above `key`."""
        head, keys = self.head, self.runkeys
        if len(keys) > head and key >= keys[head]:
            return len(self.tree) + bisect_right(keys, key, head) - head
        return self.tree.bisect_right(key)  # type: ignore[no-any-return]

    def items(self, start: int = 0) -> list[tuple[Key, V]]:
        """The keys and entries from position `start` on."""
        return [self.peekitem(position) for position in range(start, len(self))]

    def values(self) -> Iterator[V]:
        """The entries, in key order."""
        yield from self.tree.values()
        yield from self.run[self.head :]  # type: ignore[misc]

    def _settle(self) -> None:
        """Move the run into the tree (before an event lands among its keys)."""
        head = self.head
        if len(self.run) > head:
            self.tree.update(zip(self.runkeys[head:], self.run[head:], strict=True))
        self.runkeys, self.run, self.head = [], [], 0
