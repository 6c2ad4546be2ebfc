"""SQL's preferred match stated declaratively, apart from kleene's program and search: every
way the row pattern can map rows from a start row, in the pattern's order of preference,
generated from the AST; the preferred match is the first of them in which every row
satisfies its variable's DEFINE condition (evaluated with the rows mapped up to it).

An iteration of a quantified pattern past its minimum maps at least one row (an empty one
would give nothing new, or loop forever)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import permutations

from kleene.compiler.evaluate import evaluate
from kleene.compiler.row_pattern import RowScope
from kleene.language.sql import ast as Q

Path = tuple[int, tuple[str, ...], tuple[bool, ...]]  # end, labels, excluded


def paths(node: Q.RowPattern, pos: int, n: int, hidden: bool = False) -> Iterator[Path]:
    """Every way `node` maps rows from `pos` (of `n`), preferred first."""
    match node:
        case Q.Label(name=name):
            if pos < n:
                yield pos + 1, (name,), (hidden,)
        case Q.Anchor(kind="^"):
            if pos == 0:
                yield pos, (), ()
        case Q.Anchor(kind="$"):
            if pos == n:
                yield pos, (), ()
        case Q.Exclusion(body=body):
            yield from paths(body, pos, n, True)
        case Q.Concat(items=items):
            yield from _sequence(items, pos, n, hidden)
        case Q.Alternation(items=items):
            for item in items:
                yield from paths(item, pos, n, hidden)
        case Q.Permute(items=items):
            for order in permutations(items):
                yield from _sequence(order, pos, n, hidden)
        case Q.Repeat():
            yield from _repeat(node, 0, pos, n, hidden)


def _sequence(items, pos, n, hidden) -> Iterator[Path]:
    if not items:
        yield pos, (), ()
        return
    for end, labels, excluded in paths(items[0], pos, n, hidden):
        for end2, labels2, excluded2 in _sequence(items[1:], end, n, hidden):
            yield end2, labels + labels2, excluded + excluded2


def _repeat(node: Q.Repeat, count: int, pos: int, n: int, hidden: bool) -> Iterator[Path]:
    def more() -> Iterator[Path]:
        if node.max is not None and count >= node.max:
            return
        for end, labels, excluded in paths(node.body, pos, n, hidden):
            if end == pos and count >= node.min:
                continue
            for end2, labels2, excluded2 in _repeat(node, count + 1, end, n, hidden):
                yield end2, labels + labels2, excluded + excluded2

    def stop() -> Iterator[Path]:
        if count >= node.min:
            yield pos, (), ()

    first, second = (more, stop) if node.greedy else (stop, more)
    yield from first()
    yield from second()


def preferred(clause: Q.MatchRecognize, rows: list, start: int) -> Path | None:
    """The preferred match from `start`, or None."""
    index = {name: i for i, name in enumerate(clause.variables)}
    for end, labels, excluded in paths(clause.pattern, start, len(rows)):
        numbers = [index[name] for name in labels]
        if all(
            _holds(clause, rows, start, numbers[: k + 1], start + k) for k in range(len(numbers))
        ):
            return end, labels, excluded
    return None


def _holds(clause, rows, start, labels, current) -> bool:
    condition = clause.definition(clause.variables[labels[-1]])
    if condition is None:
        return True
    return evaluate(condition, RowScope(clause, rows, start, labels, current)) is True


def matches(clause: Q.MatchRecognize, rows: list) -> list[tuple[int, Path]]:
    """A partition's matches (start and path), the search going on as AFTER MATCH SKIP
    says (after an empty match, from the next row); a skip to the match's own first row
    ends the list with None."""
    found, position = [], 0
    while position < len(rows):
        match = preferred(clause, rows, position)
        if match is None:
            position += 1
            continue
        end, labels, _ = match
        found.append((position, match))
        skip = clause.skip
        if end == position or skip.to == "next_row":
            position += 1
        elif skip.to == "past_last":
            position = end
        else:
            members = clause.members(skip.var)
            at = [position + i for i, name in enumerate(labels) if name in members]
            if not at or (at[0] if skip.to == "first" else at[-1]) == position:
                return [*found, None]
            position = at[0] if skip.to == "first" else at[-1]
    return found
