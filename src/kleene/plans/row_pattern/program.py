"""A row pattern compiled to a program for a backtracking search: instructions that map a
row to a variable, branch in order of preference, loop, and mark exclusions, as regular
expression engines compile theirs (and as Trino compiles row patterns).

>>> from kleene.language.sql.reader import read
>>> for at, op in enumerate(compile_pattern(read("PATTERN (A B*?)").pattern, ("A", "B"))):
...     print(at, op)
0 Op(kind='label', a=0, b=0)
1 Op(kind='split', a=5, b=2)
2 Op(kind='save', a=0, b=0)
3 Op(kind='label', a=1, b=0)
4 Op(kind='loop', a=0, b=1)
5 Op(kind='accept', a=0, b=0)

`split a b` tries a first, then b (a reluctant `*?` prefers leaving the loop); `save r`
notes where an iteration began and `loop r t` goes on to t only if the iteration took a
row: an iteration past the quantifier's minimum must take one (else the same match would
be found again, or a loop would never end).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from typing import Literal

from kleene.language.sql import ast as Q

__all__ = ["MAX_PROGRAM", "Op", "Program", "compile_pattern"]

#: The most instructions a row pattern compiles to (bounded quantifiers are unrolled).
MAX_PROGRAM = 100_000


@dataclass(frozen=True, slots=True)
class Op:
    """One instruction: `label v` maps the row to variable v; `many v b` maps as many rows
    as it can to v and goes on at b, and on failure there, with one row fewer each time (a
    greedy loop of one variable: what `split`, `save`, `label` and `loop` would do, in one
    step a row); `split a b` tries a, then b;
    `jump a`; `save r` remembers where repetition r's iteration began; `loop r a` goes on
    to a if that iteration took a row (and fails otherwise); `exclude d` enters (d=1) or leaves
    (d=-1) an exclusion; `begin` and `end` are the anchors ^ and $; `accept` ends a match."""

    kind: Literal[
        "label", "many", "split", "jump", "save", "loop", "exclude", "begin", "end", "accept"
    ]
    a: int = 0
    b: int = 0


Program = tuple[Op, ...]


class _Builder:
    def __init__(self, variables: tuple[str, ...]) -> None:
        self.index = {name: i for i, name in enumerate(variables)}
        self.ops: list[Op] = []
        self.loops = 0

    def emit(self, op: Op) -> int:
        if len(self.ops) >= MAX_PROGRAM:
            raise OverflowError
        self.ops.append(op)
        return len(self.ops) - 1

    def patch(self, at: int, op: Op) -> None:
        self.ops[at] = op

    def build(self, node: Q.RowPattern) -> None:
        match node:
            case Q.Label(name=name):
                self.emit(Op("label", self.index[name]))
            case Q.Anchor(kind=kind):
                self.emit(Op("begin" if kind == "^" else "end"))
            case Q.Exclusion(body=body):
                self.emit(Op("exclude", 1))
                self.build(body)
                self.emit(Op("exclude", -1))
            case Q.Concat(items=items):
                for item in items:
                    self.build(item)
            case Q.Alternation(items=items):
                self.alternatives(items)
            case Q.Permute(items=items):
                # every order, preferred as the orders of the items' positions come
                self.alternatives(tuple(Q.Concat(order) for order in permutations(items)))
            case Q.Repeat():
                self.repeat(node)

    def alternatives(self, items: tuple[Q.RowPattern, ...]) -> None:
        """`split L1 N1; L1: p1; jump END; N1: split L2 N2; …; pn; END`."""
        jumps = []
        for item in items[:-1]:
            split = self.emit(Op("split"))
            self.build(item)
            jumps.append(self.emit(Op("jump")))
            self.patch(split, Op("split", split + 1, len(self.ops)))
        self.build(items[-1])
        for jump in jumps:
            self.patch(jump, Op("jump", len(self.ops)))

    def choice(self, at: int, take: int, leave: int, greedy: bool) -> None:
        self.patch(at, Op("split", take, leave) if greedy else Op("split", leave, take))

    def repeat(self, node: Q.Repeat) -> None:
        for _ in range(node.min):
            self.build(node.body)
        if node.max is None and node.greedy and isinstance(node.body, Q.Label):
            at = len(self.ops)
            self.emit(Op("many", self.index[node.body.name], at + 1))
            return
        if node.max is None:
            register = self.loops
            self.loops += 1
            top = self.emit(Op("split"))
            self.emit(Op("save", register))
            self.build(node.body)
            self.emit(Op("loop", register, top))
            self.choice(top, top + 1, len(self.ops), node.greedy)
            return
        register = self.loops
        self.loops += 1
        splits = []
        for _ in range(node.max - node.min):
            splits.append(self.emit(Op("split")))
            self.emit(Op("save", register))
            self.build(node.body)
            self.emit(Op("loop", register, len(self.ops) + 1))
        for split in splits:
            self.choice(split, split + 1, len(self.ops), node.greedy)


def compile_pattern(pattern: Q.RowPattern, variables: tuple[str, ...]) -> Program:
    """The program of a row pattern over `variables` (indices into them), or
    `OverflowError` past `MAX_PROGRAM` instructions."""
    builder = _Builder(variables)
    builder.build(pattern)
    builder.emit(Op("accept"))
    return tuple(builder.ops)


def loops(program: Program) -> int:
    """How many loop registers a program uses."""
    return 1 + max((op.a for op in program if op.kind == "save"), default=-1)
