"""A second, independent statement of skip-till-any-match, for checking `reference`.

It shares nothing with the reference plan but the expression interpreter: it tries every
assignment of events to the positive variables (every subset for a Kleene variable), keeps the
ones that fit the structure, the window, the conditions and the negations, and returns their
keys. Exponential; for streams of a handful of events (an example with more than
`ASSIGNMENTS` to try is rejected).

`contiguous` states Flink CEP's contiguities over those matches, gap by gap: which of them
a flat SEQ under `strict_contiguity`, `relaxed_contiguity` and `skip_till_any_match` clauses
keeps.

`non_overlapping`, `skipped` and `selected` state the output formats, AFTER MATCH SKIP and
selections of docs/semantics.md (sections 7 and 10) over those keys, so the finalizer that every
plan shares is checked too.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from hypothesis import reject

from kleene.compiler.evaluate import Env, attribute, evaluate
from kleene.compiler.functions import known_functions
from kleene.compiler.structure import least
from kleene.events import Event
from kleene.language import expr as E
from kleene.language.sase import ast as A

UNBOUND = None
#: The most assignments `matches` tries: a drawn example with more (several Kleene variables
#: over one type) is left out, and hypothesis draws another.
ASSIGNMENTS = 300_000
Assignment = dict[str, tuple[int, ...] | None]
Key = frozenset[tuple[str, tuple[Any, ...]]]


def matches(
    pattern: A.Pattern,
    events: Sequence[Event],
    partition: Callable[[Event], Hashable | None] | None = None,
) -> set[Key]:
    """The skip-till-any-match matches, each as a set of (variable, event ids). A count
    window measures positions in `events`; an UNTIL condition stops a loop at events of the
    match's `partition`, and NOT NEXT looks at the next event of it (the pattern's partition
    key; None: every event)."""
    positive, in_or = _positive_vars(pattern.structure)
    choices = []
    for var in positive:
        options: list[tuple[int, ...] | None] = _choices(var, events)
        if var.name in in_or or (var.optional and var.quantifier is None):
            options.append(UNBOUND)
        choices.append(options)
    if math.prod(len(options) for options in choices) > ASSIGNMENTS:
        reject()  # too many assignments to try in a test's time
    within = pattern.within
    window = None if within is None else within.amount
    count = None if within is None else within.events
    exclusive = within is not None and within.exclusive
    found = set()
    for combination in itertools.product(*choices):
        assignment: Assignment = {v.name: c for v, c in zip(positive, combination, strict=True)}
        positions = [p for ps in assignment.values() if ps for p in ps]
        if not positions or len(set(positions)) != len(positions):
            continue
        if not _fits(pattern.structure, assignment):
            continue
        if count is not None and max(positions) - min(positions) > count:
            continue
        times = [events[p].t for p in positions]
        if window is not None and max(times) - min(times) > window:
            continue
        if exclusive and max(times) - min(times) == window:
            continue
        bound = {n: tuple(events[p] for p in ps) for n, ps in assignment.items() if ps is not None}
        if not _conditions_hold(pattern, bound):
            continue
        if _negations_spoil(pattern, assignment, bound, events, window, exclusive, partition):
            continue
        if _stopped(pattern, assignment, bound, events, partition):
            continue
        found.add(frozenset((n, tuple(e.id for e in es)) for n, es in bound.items()))
    return found


def _positive_vars(structure: A.Element) -> tuple[list[A.EventVar], set[str]]:
    seen: dict[str, A.EventVar] = {}
    in_or: set[str] = set()

    def visit(element: A.Element, under_or: bool) -> None:
        if isinstance(element, A.EventVar):
            seen.setdefault(element.name, element)
            if under_or:
                in_or.add(element.name)
        elif isinstance(element, A.Seq | A.And | A.Or):
            for item in element.items:
                visit(item, under_or or isinstance(element, A.Or))

    visit(structure, False)
    return list(seen.values()), in_or


def _takes(var: A.EventVar, event: Event) -> bool:
    return var.types is None or event.type in var.types  # None: `_ v`, any type


def _choices(var: A.EventVar, events: Sequence[Event]) -> list[tuple[int, ...] | None]:
    fitting = [p for p, e in enumerate(events) if _takes(var, e)]
    if var.quantifier is None:
        return [(p,) for p in fitting]
    low = var.quantifier.min
    high = var.quantifier.max if var.quantifier.max is not None else len(fitting)
    result: list[tuple[int, ...] | None] = [()] if var.optional and low > 0 else []
    for size in range(low, min(high, len(fitting)) + 1):
        result.extend(itertools.combinations(fitting, size))
    return result


def _names(element: A.Element) -> set[str]:
    if isinstance(element, A.EventVar):
        return {element.name}
    if isinstance(element, A.Negation):
        return set()
    return set().union(*(_names(item) for item in element.items))


def _spots(element: A.Element, assignment: Assignment) -> list[int]:
    return [p for n in _names(element) for p in (assignment.get(n) or ())]


def _fits(element: A.Element, assignment: Assignment) -> bool:
    if isinstance(element, A.EventVar):
        # an optional Kleene variable that took nothing is bound to no events, not unbound
        unbound_ok = element.optional and element.quantifier is None
        return unbound_ok or assignment[element.name] is not None
    if isinstance(element, A.Negation):
        return True
    items = [item for item in element.items if not isinstance(item, A.Negation)]
    if isinstance(element, A.Or):
        fitting = []
        for item in items:
            mine = _names(item)
            others = set().union(*(_names(o) for o in items if o is not item)) - mine
            if any(assignment[n] is not None for n in mine) and all(
                assignment[n] is None for n in others
            ):
                fitting.append(item)
        return any(_fits(item, assignment) for item in fitting)  # branches may share variables
    if not all(_fits(item, assignment) for item in items):
        return False
    if isinstance(element, A.Seq):
        for earlier, later in itertools.combinations(items, 2):
            first, second = _spots(earlier, assignment), _spots(later, assignment)
            if first and second and max(first) >= min(second):
                return False
    return True


def _stopped(
    pattern: A.Pattern,
    assignment: Assignment,
    bound: dict[str, tuple[Event, ...]],
    events: Sequence[Event],
    partition: Callable[[Event], Hashable | None] | None,
) -> bool:
    """Does an UNTIL condition stop a loop inside the match: does it hold for one of the
    loop's events, or for an event of the match's partition between its first and last?"""
    some = next(e for es in bound.values() for e in es)
    attrs = [a for c in E.conjuncts(pattern.where) if isinstance(c, E.Equivalence) for a in c.attrs]
    # a variable the match leaves unbound (an optional one) reads as null
    everyone: dict[str, tuple[Event, ...]] = {v.name: () for v in A.event_vars(pattern.structure)}
    for var in A.event_vars(pattern.structure):
        spots = assignment.get(var.name)
        if var.until is None or not spots:
            continue
        for position in range(spots[0], spots[-1] + 1):
            event = events[position]
            if partition is not None and partition(event) != partition(some):
                continue
            if any(attribute(event, a) != attribute(some, a) for a in attrs):
                continue
            taken = tuple(events[p] for p in spots if p < position)
            if _until_holds(var, event, taken, everyone | bound):
                return True
    return False


def _until_holds(
    var: A.EventVar, event: Event, taken: tuple[Event, ...], bound: dict[str, tuple[Event, ...]]
) -> bool:
    """Does `var`'s UNTIL condition hold for the event at hand, the loop having taken
    `taken` (the match's other variables as `bound`)? The event is `var[i]`, and `var.x`
    reads it too."""
    assert var.until is not None
    scope = {**bound, var.name: (*taken, event)}
    at_hand = _at_hand(var.until, var.name)
    return evaluate(at_hand, Env(scope, len(taken) + 1, known_functions())) is True


def _at_hand(expr: E.Expr, name: str) -> E.Expr:
    """`expr` with `name.x` written `name[i].x`."""
    if isinstance(expr, E.Attr) and expr.var == name and expr.index is None:
        return dataclasses.replace(expr, index=E.Index("i"))
    if isinstance(expr, E.Compare | E.Binary):
        return dataclasses.replace(
            expr, left=_at_hand(expr.left, name), right=_at_hand(expr.right, name)
        )
    if isinstance(expr, E.BoolOp):
        return dataclasses.replace(expr, items=tuple(_at_hand(i, name) for i in expr.items))
    if isinstance(expr, E.Unary):
        return dataclasses.replace(expr, operand=_at_hand(expr.operand, name))
    return expr


def _references(expr: E.Expr) -> Iterator[E.Attr | E.Len | E.Aggregate]:
    for node in E.walk(expr):
        if isinstance(node, E.Attr | E.Len | E.Aggregate):
            yield node


def _instances(expr: E.Expr, bound: dict[str, tuple[Event, ...]]) -> list[int | None]:
    """The values of i a condition must hold for (one None when it has no i)."""
    var, back = None, 0
    for node in _references(expr):
        if isinstance(node, E.Attr) and node.index is not None and node.index.base == "i":
            var, back = node.var, max(back, -node.index.offset)
        if isinstance(node, E.Aggregate) and node.upto is not None:
            var, back = node.var, max(back, node.upto)
    if var is None:
        return [None]
    return list(range(1 + back, len(bound[var]) + 1))


def _holds(expr: E.Expr, bound: dict[str, tuple[Event, ...]]) -> bool:
    functions = known_functions()
    return all(evaluate(expr, Env(bound, i, functions)) is True for i in _instances(expr, bound))


def _conditions_hold(pattern: A.Pattern, bound: dict[str, tuple[Event, ...]]) -> bool:
    negated = _negated_names(pattern.structure)
    for conjunct in E.conjuncts(pattern.where):
        if isinstance(conjunct, E.Equivalence):
            events = [e for es in bound.values() for e in es]
            for name in conjunct.attrs:
                values = {attribute(e, name) for e in events}
                if None in values or len(values) > 1:
                    return False
            continue
        names = {node.var for node in _references(conjunct)}
        if names & negated or not names <= set(bound):
            continue
        if not _holds(conjunct, bound):
            return False
    return True


def _negated_names(structure: A.Element) -> set[str]:
    if isinstance(structure, A.Negation):
        return {structure.event.name}
    if isinstance(structure, A.EventVar):
        return set()
    return set().union(*(_negated_names(item) for item in structure.items))


def _taken(path: tuple[tuple[A.Element, int], ...], assignment: Assignment) -> bool:
    """Did the assignment take every OR branch on the way down to this place?"""
    for ancestor, index in path:
        if isinstance(ancestor, A.Or):
            mine = _names(ancestor.items[index])
            others = set().union(*(_names(o) for j, o in enumerate(ancestor.items) if j != index))
            if not any(assignment.get(n) is not None for n in mine - others):
                return False
    return True


def _negations(
    element: A.Element, path: tuple[tuple[A.Element, int], ...] = ()
) -> Iterator[tuple[A.EventVar, tuple[tuple[A.Element, int], ...]]]:
    if isinstance(element, A.Negation):
        yield element.event, path
    elif not isinstance(element, A.EventVar):
        for index, item in enumerate(element.items):
            yield from _negations(item, (*path, (element, index)))


def _negations_spoil(
    pattern: A.Pattern,
    assignment: Assignment,
    bound: dict[str, tuple[Event, ...]],
    events: Sequence[Event],
    window: float | None,
    exclusive: bool,
    partition: Callable[[Event], Hashable | None] | None,
) -> bool:
    own = {p for ps in assignment.values() if ps for p in ps}
    start = min(events[p].t for p in own)
    end = max(events[p].t for p in own)
    for var, path in _negations(pattern.structure):
        if not _taken(path, assignment):
            continue
        if var.name in A.next_negations(pattern.structure):
            if _next_spoils(pattern, var, path, assignment, bound, events, partition):
                return True
            continue
        before: list[int] = []
        after: list[int] = []
        for ancestor, index in path:
            if isinstance(ancestor, A.Seq):
                for item in ancestor.items[:index]:
                    before.extend(_spots(item, assignment))
                for item in ancestor.items[index + 1 :]:
                    after.extend(_spots(item, assignment))
        since = A.followed_negations(pattern.structure).get(var.name)
        if since is not None:
            # Flink's notFollowedBy: none from the first event of the variable before it
            # up to the first after it; none looked for when nothing after it is bound
            if not after:
                continue
            before = [min(assignment[since])]
        for position, event in enumerate(events):
            if position in own or not _takes(var, event):
                continue
            if before and position <= max(before):
                continue
            if not before and (window is None or event.t < end - window):
                continue
            if not before and exclusive and event.t == end - window:
                continue
            if after and position >= min(after):
                continue
            if not after and (window is None or event.t > start + window):
                continue
            if not after and exclusive and event.t == start + window:
                continue
            if _qualifies(pattern, var, event, bound):
                return True
    return False


def _next_spoils(
    pattern: A.Pattern,
    var: A.EventVar,
    path: tuple[tuple[A.Element, int], ...],
    assignment: Assignment,
    bound: dict[str, tuple[Event, ...]],
    events: Sequence[Event],
    partition: Callable[[Event], Hashable | None] | None,
) -> bool:
    """NOT NEXT: the first event of the match's partition after the last one bound before
    the negation qualifies (whether or not the match binds it); or, right after a loop, an
    event of the partition from the one after the loop's least number of events on (Flink
    tests notNext wherever the run may leave the loop)."""
    before = [
        p
        for ancestor, index in path
        if isinstance(ancestor, A.Seq)
        for item in ancestor.items[:index]
        for p in _spots(item, assignment)
    ]
    if not before:
        return False
    last = events[max(before)]
    ancestor, index = path[-1]
    previous = ancestor.items[index - 1] if isinstance(ancestor, A.Seq) and index else None
    if isinstance(previous, A.EventVar) and previous.quantifier is not None:
        loop = assignment.get(previous.name) or ()
        least = max(previous.quantifier.min, 1)
        if loop:
            for event in events[loop[least - 1] + 1 : max(before) + 1]:
                mine = partition is None or partition(event) == partition(last)
                if mine and _takes(var, event) and _qualifies(pattern, var, event, bound):
                    return True
    within = pattern.within
    start = min(e.t for es in bound.values() for e in es)
    reach = math.inf if within is None or within.amount is None else start + within.amount
    for event in events[max(before) + 1 :]:
        if partition is None or partition(event) == partition(last):
            if event.t > reach or (within is not None and within.exclusive and event.t == reach):
                return False  # beyond the window
            return _takes(var, event) and _qualifies(pattern, var, event, bound)
    return False


def _qualifies(
    pattern: A.Pattern, var: A.EventVar, event: Event, bound: dict[str, tuple[Event, ...]]
) -> bool:
    with_it = {**bound, var.name: (event,)}
    for conjunct in E.conjuncts(pattern.where):
        if isinstance(conjunct, E.Equivalence):
            if not _shares(conjunct, event, next(e for es in bound.values() for e in es)):
                return False
            continue
        names = {node.var for node in _references(conjunct)}
        if var.name not in names or not names <= set(with_it):
            continue
        if not _holds(conjunct, with_it):
            return False
    return True


def contiguous(
    pattern: A.Pattern,
    events: Sequence[Event],
    found: set[Key],
    partition: Callable[[Event], Hashable | None] | None = None,
) -> set[Key]:
    """The matches of `found` (a flat SEQ's skip-till-any-match matches, event ids being
    positions) that Flink's contiguities keep. Between two events a match takes, every event
    is ignored where the later one is taken: in the loop of its variable when the earlier
    one is of the same variable, else at its variable's entry (Flink leaves a loop, or
    passes an optional element, only at the event right after the last take). There, strict
    contiguity ignores nothing; relaxed contiguity ignores an event the variable could not
    take as it stands (an event its UNTIL condition alone refuses counts as one it could
    take, at the entry); skip till any match ignores everything; and no loop ignores an
    event of the match's `partition` its UNTIL condition holds for.

    A GREEDY loop v before the variable w that takes the match's next event (v's own last
    event, or the one before v if v is empty, coming first): from the first event of the
    match's partition after that one (its UNTIL condition aside, which frees the match
    there) up to w's event, no event of the partition is one v could take, where w is the
    element right after v; else the first one only is not (a run leaves v and passes the
    optional elements after it at that event, Flink's proceed edges, guarded by the greedy
    condition there only)."""
    from kleene.compiler.per_edge import resolve

    table = resolve(pattern)
    variables = {v.name: v for v in A.event_vars(pattern.structure)}
    order = list(variables)
    # what an UNTIL condition reads of a variable the match left unbound: null
    unbound: dict[str, tuple[Event, ...]] = dict.fromkeys(order, ())
    kept = set()
    for match in found:
        taken = sorted((p, name) for name, ps in match for p in ps)
        start = taken[0][0]
        first = events[start]
        same = [
            a for c in E.conjuncts(pattern.where) if isinstance(c, E.Equivalence) for a in c.attrs
        ]
        bound: dict[str, tuple[Event, ...]] = {}
        ok = True
        for (before, previous), (at, name) in itertools.pairwise([(None, None), *taken]):
            var = variables[name]
            looping = previous == name
            for earlier in order[: order.index(name)]:
                if variables[earlier].quantifier is not None:
                    bound.setdefault(earlier, ())
            if not looping:
                for greedy in order[order.index(previous) if previous else 0 : order.index(name)]:
                    if variables[greedy].greedy and _greedy_keeps(
                        pattern,
                        variables,
                        greedy,
                        name,
                        (before, at, start),
                        events,
                        bound,
                        same,
                        partition,
                    ):
                        ok = False
                if not ok:
                    break
            if before is not None:
                strategy = table.loop(name) if looping else table.entry(name)
                for gap in range(before + 1, at):
                    event = events[gap]
                    stops = (
                        var.until is not None
                        and (partition is None or partition(event) == partition(first))
                        and all(attribute(event, a) == attribute(first, a) for a in same)
                        and _until_holds(
                            var, event, bound.get(name, ()) if looping else (), unbound | bound
                        )
                    )
                    if strategy == "strict_contiguity" or (looping and stops):
                        ok = False
                    elif strategy in ("relaxed_contiguity", "skip_till_next_match"):
                        # (the table reads relaxed contiguity so where nothing loops)
                        ok = not _could_take(pattern, var, event, bound, first, gap - start)
                    if not ok:
                        break
            if not ok:
                break
            bound[name] = (*bound.get(name, ()), events[at])
        if ok:
            kept.add(match)
    return kept


def _greedy_keeps(
    pattern: A.Pattern,
    variables: dict[str, A.EventVar],
    loop: str,
    name: str,
    step: tuple[int | None, int, int],
    events: Sequence[Event],
    bound: dict[str, tuple[Event, ...]],
    same: list[E.Attr],
    partition: Callable[[Event], Hashable | None] | None,
) -> bool:
    """Does the GREEDY loop `loop` keep the match from taking events[at] into `name`, the
    match's event before being events[before] and its first events[start] (`step`; see
    `contiguous`)?"""
    var = variables[loop]
    before, at, start = step
    first = events[start]
    unbound: dict[str, tuple[Event, ...]] = dict.fromkeys(variables, ())
    taken = bound.get(loop, ())
    gap = [
        p
        for p in range(at if before is None else before + 1, at + 1)
        if all(attribute(events[p], a) == attribute(first, a) for a in same)
        and (partition is None or partition(events[p]) == partition(first))
    ]
    if var.until is not None and _until_holds(var, events[gap[0]], taken, unbound | bound):
        return False
    most = var.quantifier.max if var.quantifier is not None else 1
    if most is not None and len(taken) >= most:
        return False
    right_after = list(variables).index(name) == list(variables).index(loop) + 1
    right_after = right_after and least(variables[name]) > 0  # (an optional one: first only)
    return any(
        _could_take(pattern, var, events[p], bound, first, p - start)
        for p in (gap if right_after else gap[:1])
    )


def _could_take(
    pattern: A.Pattern,
    var: A.EventVar,
    event: Event,
    bound: dict[str, tuple[Event, ...]],
    first: Event,
    distance: int,
) -> bool:
    """Could a run holding `bound` (`var` still open) take the event into `var`: its type,
    the window, the equivalences and every condition it can decide now."""
    if not _takes(var, event):
        return False
    within = pattern.within
    if within is not None and within.amount is not None:
        span = event.t - first.t
        if span > within.amount or (within.exclusive and span == within.amount):
            return False
    if within is not None and within.events is not None and distance > within.events:
        return False
    grown = {**bound, var.name: (*bound.get(var.name, ()), event)}
    negated = _negated_names(pattern.structure)
    for conjunct in E.conjuncts(pattern.where):
        if isinstance(conjunct, E.Equivalence):
            if not _shares(conjunct, event, first):
                return False
            continue
        names = {node.var for node in _references(conjunct)}
        if names & negated or not names <= set(grown) or _waits(conjunct, var.name, grown):
            continue
        if not _holds(conjunct, grown):
            return False
    return True


def _waits(conjunct: E.Expr, name: str, bound: dict[str, tuple[Event, ...]]) -> bool:
    """Does the condition need more of the open variable `name` than it holds: all of it
    (`b.len`, `b[b.len]`, `avg(b[].x)`), or an event it has not taken yet (`b[3]`)?"""
    for node in E.walk(conjunct):
        if isinstance(node, E.Len) and node.var == name:
            return True
        if isinstance(node, E.Aggregate) and node.var == name and node.upto is None:
            return True
        if isinstance(node, E.Attr) and node.var == name and node.index is not None:
            index = node.index
            if index.base == "last" or (index.base == "abs" and index.offset > len(bound[name])):
                return True
    return False


def consumed(
    found: set[Key],
    events: Sequence[Event],
    partition: Callable[[Event], Hashable | None] | None,
) -> set[Key]:
    """CONSUME BY ANY (`partition` None) or PARTITION over every match: walking the stream,
    each event that completes reported matches discards every partial match of their
    partition, so a match is reported when no reported match of its partition ended at or
    after its first event and before its last."""
    kept: set[Key] = set()
    for match in sorted(found, key=lambda m: max(_positions(m))):
        first, last = min(_positions(match)), max(_positions(match))
        key = None if partition is None else partition(events[first])
        if not any(
            first <= max(_positions(other)) < last
            and (partition is None or partition(events[min(_positions(other))]) == key)
            for other in kept
        ):
            kept.add(match)
    return kept


def used_up(found: set[Key]) -> set[Key]:
    """CONSUME BY EVENTS over every match: in the order the matches complete (their last
    event; ties: the earliest first event, then the positions, then the binding), each is
    reported unless it holds an event of one reported before."""
    used: set[int] = set()
    kept: set[Key] = set()
    order = sorted(
        found,
        key=lambda m: (max(_positions(m)), min(_positions(m)), sorted(_positions(m)), sorted(m)),
    )
    for match in order:
        if used.isdisjoint(_positions(match)):
            used.update(_positions(match))
            kept.add(match)
    return kept


def frozen(
    found: set[Key],
    pattern: A.Pattern,
    events: Sequence[Event],
    partition: Callable[[Event], Hashable | None] | None,
) -> set[Key]:
    """FREEZE over every match (OpenCEP's freeze, as its evaluation tree does it): walking
    the stream, an event a named variable v can take (its type, and each condition about v
    alone) freezes v unless a live freezer of its partition holds it back from v. A live
    freezer of v holds each later event of its partition back from v and from the
    variables before v in the SEQ. A match is reported at its last event when none of its
    events is bound where it was held back; a reported match lets its events go, and a
    freezer goes once the window does not span it and the event at hand."""
    assert pattern.freeze is not None
    structure = pattern.structure
    items = structure.items if isinstance(structure, A.Seq) else (structure,)
    negated = _negated_names(structure)
    upto: dict[str, set[str]] = {}
    before: set[str] = set()
    for item in items:
        before |= {v.name for v in A.event_vars(item)} - negated
        if isinstance(item, A.EventVar) and item.name in pattern.freeze.variables:
            upto[item.name] = set(before)
    declared = {v.name: v for v in A.event_vars(structure)}
    alone = {
        name: [
            c
            for c in E.conjuncts(pattern.where)
            if not isinstance(c, E.Equivalence)
            and all(
                isinstance(r, E.Attr)
                and r.var == name
                and (r.index is None or (r.index.base == "i" and r.index.offset == 0))
                for r in _references(c)
            )
            and any(True for _ in _references(c))
        ]
        for name in upto
    }
    within = pattern.within
    window = None if within is None else within.amount
    count = None if within is None else within.events
    exclusive = within is not None and within.exclusive
    by_end: dict[int, list[Key]] = {}
    for match in found:
        by_end.setdefault(max(_positions(match)), []).append(match)
    freezers: list[tuple[int, str]] = []  # (position, variable)
    held: dict[int, set[str]] = {}
    kept: set[Key] = set()
    for position, event in enumerate(events):
        key = None if partition is None else partition(event)
        freezers = [
            (p, v)
            for p, v in freezers
            if (window is None or event.t - events[p].t < window)
            or (not exclusive and event.t - events[p].t == window)
        ]
        freezers = [(p, v) for p, v in freezers if count is None or position - p <= count]
        held[position] = {
            n
            for p, v in freezers
            if partition is None or partition(events[p]) == key
            for n in upto[v]
        }
        for name in upto:
            if name in held[position] or not _takes(declared[name], event):
                continue
            if all(_holds(c, {name: (event,)}) for c in alone[name]):
                freezers.append((position, name))
        reported = [
            m
            for m in by_end.get(position, [])
            if not any(name in held[p] for name, ps in m for p in ps)
        ]
        kept.update(reported)
        used = {p for m in reported for p in _positions(m)}
        freezers = [(p, v) for p, v in freezers if p not in used]
    return kept


def _shares(equivalence: E.Equivalence, event: Event, other: Event) -> bool:
    """Does the event have the other's (non-null) values of the equivalence's attributes?"""
    return all(
        (value := attribute(event, name)) is not None and value == attribute(other, name)
        for name in equivalence.attrs
    )


def _positions(match: Key) -> list[int]:
    return sorted(p for _, ps in match for p in ps)


def non_overlapping(
    found: set[Key],
    events: Sequence[Event],
    partition: Callable[[Event], Hashable | None] | None,
) -> set[Key]:
    """The matches `output="non_overlapping"` reports, given every match (`found`, keyed by
    event ids that are stream positions): per partition, in the order matches complete (then
    earliest start, smaller positions, smaller sorted binding), a match is kept when it starts
    after the last kept one ended."""
    kept: set[Key] = set()
    last_end: dict[Hashable | None, int] = {}
    order = sorted(
        found, key=lambda m: (max(_positions(m)), min(_positions(m)), _positions(m), sorted(m))
    )
    for match in order:
        first, last = min(_positions(match)), max(_positions(match))
        group = None if partition is None else partition(events[first])
        if first > last_end.get(group, -1):
            kept.add(match)
            last_end[group] = last
    return kept


def skipped(
    found: set[Key],
    events: Sequence[Event],
    partition: Callable[[Event], Hashable | None] | None,
    clause: A.AfterMatch,
) -> set[Key]:
    """The matches an AFTER MATCH clause keeps, given every match (keyed by event ids that
    are stream positions): per partition, in the order matches start (then end, positions,
    sorted binding), a match is kept unless it starts before the floor, which each kept match
    moves to its first event + 1 (TO NEXT), its last + 1 (PAST LAST EVENT), or its first or
    last event of v (TO FIRST v, TO LAST v; nowhere when it binds v no event)."""
    if clause.skip == "no_skip":
        return set(found)
    kept: set[Key] = set()
    floors: dict[Hashable | None, int] = {}
    order = sorted(
        found, key=lambda m: (min(_positions(m)), max(_positions(m)), _positions(m), sorted(m))
    )
    for match in order:
        first, last = min(_positions(match)), max(_positions(match))
        group = None if partition is None else partition(events[first])
        floor = floors.get(group, 0)
        if first < floor:
            continue
        kept.add(match)
        ids = dict(match).get(clause.variable or "", ())
        moved = {
            "to_next": first + 1,
            "past_last": last + 1,
            "to_first": ids[0] if ids else floor,
            "to_last": ids[-1] if ids else floor,
        }[clause.skip]
        floors[group] = max(floor, moved)
    return kept


def selected(found: set[Key], selection: str) -> set[Key]:
    """The matches a selection keeps, given every match: per group of matches starting at one
    event, `earliest` keeps those where each variable starts at the earliest event it starts
    at in the group, `maximal` those no match of the group extends by one event of one
    variable; `earliest_maximal` both."""
    groups: dict[int, list[Key]] = {}
    for match in found:
        groups.setdefault(min(_positions(match)), []).append(match)
    kept: set[Key] = set()
    for group in groups.values():
        chosen = group
        if selection in ("earliest", "earliest_maximal"):
            starts: dict[str, int] = {}
            for match in group:
                for name, ids in match:
                    if ids:
                        starts[name] = min(starts.get(name, ids[0]), ids[0])
            chosen = [m for m in chosen if all(not ids or ids[0] == starts[n] for n, ids in m)]
        if selection in ("maximal", "earliest_maximal"):
            chosen = [m for m in chosen if not any(_one_more(o, m) for o in group)]
        kept.update(chosen)
    return kept


def _one_more(longer: Key, shorter: Key) -> bool:
    """Is `longer` the match `shorter` with one more event for exactly one variable?"""
    big, small = dict(longer), dict(shorter)
    if big.keys() != small.keys():
        return False
    grown = [n for n in small if big[n] != small[n]]
    return (
        len(grown) == 1
        and set(small[grown[0]]) < set(big[grown[0]])
        and (len(big[grown[0]]) == len(small[grown[0]]) + 1)
    )
