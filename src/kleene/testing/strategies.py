"""Hypothesis strategies: random ASTs, and random small patterns with streams to run them on.

`asts()` draws any AST in normal form, sensible or not, for printer/parser round trips.
`cases()` draws a valid pattern over types A, B, C with integer attributes `x` and `k`, and a
short stream of A, B, C and D events (D matches only a variable of any type, `_ v`), for
comparing plans; with `extensions=True`, some use what kleene adds to SASE+ for Flink and
CORE users. Some patterns are ORs whose branches bind the same variables in different
orders (`OR(SEQ(A a, B b), SEQ(B b, A a))`, `OR(SEQ(A a, B b), AND(A a, B b))`).
`rule_cases()` draws a LEAD rule over the same streams: most with the SASE+ pattern that
means the same (`all` of a sequence is skip-till-any-match, `every` non-overlapping output,
PARTITION BY an equivalence test), some from `RULES`, which have none.
`row_patterns()` draws any row pattern of SQL's MATCH_RECOGNIZE, `clauses()` a clause over
a table of columns `i` and `x`, and `row_pattern_cases()` a clause over a stream.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from kleene.compiler.analysis import EXTENSIONS, analyze
from kleene.compiler.options import Options
from kleene.compiler.per_edge import edges
from kleene.compiler.pipeline import parse
from kleene.compiler.validate import guarantees_event, validate
from kleene.errors import PatternError
from kleene.events import Event
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.sql import ast as Q
from kleene.language.sql.printer import pattern_text
from kleene.plans import PLANS

__all__ = [
    "FLINK_STRATEGIES",
    "ROW_CONDITIONS",
    "RULES",
    "Case",
    "RowPatternCase",
    "RuleCase",
    "asts",
    "cases",
    "cases_for",
    "clauses",
    "flink_cases",
    "row_pattern_cases",
    "row_patterns",
    "rule_cases",
    "streams",
    "tables",
]

# ---- any AST ---------------------------------------------------------------------------

_names = st.from_regex(r"[a-z][a-z0-9_]{0,4}", fullmatch=True).filter(
    lambda n: n not in {"i", "and", "or", "not", "seq", "len", "null", "true", "false"}
)
_odd_names = st.sampled_from(["Stock", "A", "org:resource", "Stock Tick", "AND", "len", "x-y"])
_types = st.one_of(_odd_names, st.from_regex(r"[A-Z][A-Za-z0-9]{0,5}", fullmatch=True))
_quantifiers = st.one_of(
    st.none(),
    st.sampled_from([A.Quantifier(1, None), A.Quantifier(0, None)]),
    st.builds(lambda lo, extra: A.Quantifier(lo, lo + extra), st.integers(1, 3), st.integers(0, 3)),
    st.builds(lambda lo: A.Quantifier(lo, None), st.integers(2, 4)),
)


@st.composite
def _event_var(draw: st.DrawFn) -> A.EventVar:
    types = tuple(draw(st.lists(_types, min_size=1, max_size=3, unique=True)))
    name = draw(_names)
    quantifier = draw(_quantifiers)
    optional = (quantifier is None or quantifier.min > 0) and draw(st.integers(0, 3)) == 0
    greedy = until = None
    if quantifier is not None:
        greedy = draw(st.booleans())
        until = draw(st.one_of(st.none(), _exprs()))
    return A.EventVar(
        types if draw(st.integers(0, 5)) else None, name, quantifier, optional, bool(greedy), until
    )


def _elements() -> st.SearchStrategy[A.Element]:
    leaf = st.one_of(_event_var(), st.builds(A.Negation, _event_var()))
    return st.recursive(
        leaf,
        lambda inner: st.builds(
            lambda kind, items: kind(tuple(items)),
            st.sampled_from([A.Seq, A.And, A.Or]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        max_leaves=6,
    )


_literals = st.one_of(
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6),
    st.booleans(),
    st.none(),
).map(E.Constant)
_index = st.one_of(
    st.builds(lambda k: E.Index("i", -k), st.integers(0, 2)),
    st.builds(lambda k: E.Index("abs", k), st.integers(1, 3)),
    st.builds(lambda k: E.Index("last", -k), st.integers(0, 2)),
)
_attr_names = st.one_of(_names, st.sampled_from(["len", "org:resource", "price", "x y"]))
_operands = st.one_of(
    _literals,
    st.builds(E.Attr, _names, _attr_names, st.one_of(st.none(), _index)),
    st.builds(E.Len, _names),
    st.builds(
        E.Aggregate,
        st.sampled_from(E.AGGREGATES),
        _names,
        _attr_names,
        st.one_of(st.none(), st.integers(0, 2)),
    ),
    st.builds(E.Equivalence, st.lists(_attr_names, min_size=1, max_size=2).map(tuple)),
)


def _exprs() -> st.SearchStrategy[E.Expr]:
    def extend(inner: st.SearchStrategy[E.Expr]) -> st.SearchStrategy[E.Expr]:
        return st.one_of(
            st.builds(E.Binary, st.sampled_from(["+", "-", "*", "/", "%"]), inner, inner),
            st.builds(E.Compare, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), inner, inner),
            st.builds(lambda xs: E.conjunction(*xs), st.lists(inner, min_size=2, max_size=3)),
            st.builds(lambda xs: E.disjunction(*xs), st.lists(inner, min_size=2, max_size=3)),
            st.builds(lambda x: E.Unary("not", x), inner),
            inner.map(E.negative),
            st.builds(
                lambda name, args: E.Call(name, tuple(args)),
                _names,
                st.lists(inner, max_size=2),
            ),
        )

    return st.recursive(_operands, extend, max_leaves=8)


_clauses = st.lists(
    st.builds(
        A.Strategy,
        st.sampled_from(A.STRATEGIES),
        st.one_of(st.none(), st.lists(_names, min_size=1, max_size=3).map(tuple)),
    ),
    max_size=3,
).map(tuple)


@st.composite
def _windows(draw: st.DrawFn) -> A.Within:
    """A time window, a count window, or both."""
    events = draw(st.one_of(st.none(), st.integers(1, 10**6)))
    if events is not None and draw(st.booleans()):
        return A.Within(None, events=events)
    amount = draw(st.one_of(st.integers(1, 10**6), st.floats(0.001, 1e6)))
    unit = draw(st.sampled_from([None, "ms", "s", "min", "hour", "day"]))
    return A.Within(amount, unit, draw(st.booleans()), events)


def asts() -> st.SearchStrategy[A.Pattern]:
    """Any pattern AST in normal form (not necessarily one that makes sense)."""
    return st.builds(
        A.Pattern,
        _elements(),
        st.one_of(st.none(), _exprs()),
        _clauses,
        st.one_of(st.none(), _windows()),
        after_match=st.one_of(
            st.none(),
            st.sampled_from(A.SKIPS).flatmap(
                lambda skip: st.builds(
                    A.AfterMatch,
                    st.just(skip),
                    _names if skip in ("to_first", "to_last") else st.none(),
                )
            ),
        ),
    )


# ---- valid patterns and streams ----------------------------------------------------------

TYPES = ("A", "B", "C")


@dataclass(frozen=True)
class Case:
    pattern: A.Pattern
    events: tuple[Event, ...]

    def __repr__(self) -> str:
        rows = "\n".join(f"    {e.type} ts={e.ts} id={e.id} {dict(e.attrs)}" for e in self.events)
        return f"Case(\n{self.pattern}\n--\n{rows}\n)"


@st.composite
def streams(draw: st.DrawFn, max_size: int = 7) -> tuple[Event, ...]:
    """A short stream over types A-D with small integer attributes and shared timestamps."""
    size = draw(st.integers(0, max_size))
    t = 0
    result = []
    for position in range(size):
        t += draw(st.sampled_from([0, 1, 1, 2]))
        attrs: dict[str, Any] = {"k": draw(st.integers(0, 1))}
        if draw(st.integers(0, 9)) > 0:
            attrs["x"] = draw(st.integers(0, 3))
        kind = draw(st.sampled_from(["A", "A", "B", "B", "C", "C", "D"]))
        result.append(Event(kind, t, attrs, position))
    return tuple(result)


@st.composite
def _structure(draw: st.DrawFn, depth: int = 0) -> A.Element:
    kind = draw(
        st.sampled_from(["seq", "seq", "and", "or"] if depth == 0 else ["seq", "and", "leaf"])
    )
    if kind == "leaf" or depth > 1:
        return draw(_leaf())
    size = draw(st.integers(1, 3))
    items: list[A.Element] = [
        draw(_structure(depth + 1)) if draw(st.integers(0, 3)) == 0 else draw(_leaf())
        for _ in range(size)
    ]
    if kind != "or" and draw(st.integers(0, 2)) == 0:
        where = draw(st.integers(0, len(items)))
        negated = draw(st.sampled_from([*((t,) for t in TYPES), None]))
        items.insert(where, A.Negation(A.EventVar(negated, "n")))
    if kind == "seq":
        return A.Seq(tuple(items))
    return A.And(tuple(items)) if kind == "and" else A.Or(tuple(items))


@st.composite
def _flat(draw: st.DrawFn) -> A.Element:
    """A flat SEQ or AND of variables; a SEQ may hold negations between two."""
    size = draw(st.integers(1, 4))
    items: list[A.Element] = [draw(_leaf()) for _ in range(size)]
    sequence = draw(st.booleans())
    if sequence and size > 1 and draw(st.integers(0, 2)) == 0:
        negated = draw(st.sampled_from([*((t,) for t in TYPES), None]))
        items.insert(draw(st.integers(1, size - 1)), A.Negation(A.EventVar(negated, "n")))
    return A.Seq(tuple(items)) if sequence else A.And(tuple(items))


@st.composite
def _leaf(draw: st.DrawFn) -> A.EventVar:
    types = tuple(sorted(draw(st.sets(st.sampled_from(TYPES), min_size=1, max_size=2))))
    anything = draw(st.integers(0, 7)) == 0  # `_ v`: a variable of any type
    quantifier = draw(
        st.sampled_from(
            [None, None, None, A.Quantifier(1, None), A.Quantifier(0, None), A.Quantifier(1, 2)]
        )
    )
    return A.EventVar(None if anything else types, "v", quantifier)


def _rename(element: A.Element, counter: list[int]) -> A.Element:
    if isinstance(element, A.EventVar):
        counter[0] += 1
        return replace(element, name=f"v{counter[0]}")
    if isinstance(element, A.Negation):
        counter[0] += 1
        return A.Negation(A.EventVar(element.event.types, f"n{counter[0]}"))
    return type(element)(tuple(_rename(item, counter) for item in element.items))


@st.composite
def _conditions(draw: st.DrawFn, structure: A.Element) -> list[E.Expr]:
    variables = list(A.event_vars(structure))
    singles = [v.name for v in variables if not v.kleene]
    kleene = [v.name for v in variables if v.kleene]
    negated = {e.event.name for e in _walk_structure(structure) if isinstance(e, A.Negation)}
    positives = [n for n in singles if n not in negated]
    small = st.integers(0, 3).map(E.Constant)
    options: list[st.SearchStrategy[E.Expr]] = []
    if singles:
        single = st.sampled_from(singles)
        options.append(st.builds(lambda v, c: E.Compare(">=", E.Attr(v, "x"), c), single, small))
        options.append(st.builds(lambda v, c: E.Compare("!=", E.Attr(v, "x"), c), single, small))
    if len(singles) > 1:
        # a condition may constrain one absent event, so no pair of negated variables
        pair = st.lists(st.sampled_from(singles), min_size=2, max_size=2, unique=True).filter(
            lambda p: not (p[0] in negated and p[1] in negated)
        )
        options.append(
            st.builds(
                lambda p, op: E.Compare(op, E.Attr(p[0], "x"), E.Attr(p[1], "x")),
                pair,
                st.sampled_from(["<", "<=", "="]),
            )
        )
        options.append(
            st.builds(
                lambda p: E.disjunction(
                    E.Compare("=", E.Attr(p[0], "x"), E.Constant(1)),
                    E.Compare("=", E.Attr(p[1], "k"), E.Constant(0)),
                ),
                pair,
            )
        )
    for name in kleene:
        i, prev = E.Index("i"), E.Index("i", -1)
        options.extend(
            st.just(e)
            for e in (
                E.Compare(">=", E.Attr(name, "x", i), E.Attr(name, "x", prev)),
                E.Compare("=", E.Attr(name, "x", prev), E.Attr(name, "x", i)),
                E.Compare(">", E.Attr(name, "x", i), E.Aggregate("avg", name, "x", 1)),
                E.Compare("<=", E.Aggregate("sum", name, "x"), E.Constant(4)),
                E.Compare("<=", E.Len(name), E.Constant(2)),
                E.Compare("!=", E.Attr(name, "x", i), E.Constant(0)),
                E.Unary("not", E.Compare("=", E.Attr(name, "x", E.Index("last")), E.Constant(2))),
            )
        )
        if positives:
            other = st.sampled_from(positives)
            options.append(
                st.builds(
                    lambda v, name=name: E.Compare(
                        "<=", E.Attr(name, "x", E.Index("abs", 1)), E.Attr(v, "x")
                    ),
                    other,
                )
            )
            options.append(
                st.builds(
                    lambda v, name=name: E.Compare(
                        ">=", E.Attr(name, "x", E.Index("i")), E.Attr(v, "x")
                    ),
                    other,
                )
            )
        if negated:
            # an absent event against the Kleene variable's elements, aggregate, or first
            absent = st.sampled_from(sorted(negated))
            options.append(
                st.builds(
                    lambda n, e, name=name: E.Compare(">=", E.Attr(n, "x"), e),
                    absent,
                    st.sampled_from(
                        [
                            E.Attr(name, "x", E.Index("i")),
                            E.Aggregate("max", name, "x"),
                            E.Attr(name, "x", E.Index("abs", 1)),
                        ]
                    ),
                )
            )
    options.append(st.just(E.Equivalence(("k",))))
    return draw(st.lists(st.one_of(*options), max_size=3))


def _walk_structure(element: A.Element) -> list[A.Element]:
    if isinstance(element, A.EventVar | A.Negation):
        return [element]
    return [element, *(n for item in element.items for n in _walk_structure(item))]


@st.composite
def _twins(draw: st.DrawFn) -> A.Element:
    """An OR whose branches bind the same variables in different orders: a SEQ of two or
    three variables, and the same variables in another order or under AND."""
    leaves = [_rename(draw(_leaf()), [k]) for k in range(draw(st.integers(2, 3)))]
    other = draw(st.permutations(leaves))
    second = A.And(tuple(other)) if draw(st.booleans()) else A.Seq(tuple(other))
    return A.Or((A.Seq(tuple(leaves)), second))


@st.composite
def cases(
    draw: st.DrawFn,
    strategies: tuple[str, ...] | None = None,
    max_events: int = 7,
    flat: bool = False,
    extensions: bool | Collection[str] = False,
) -> Case:
    """A valid pattern over A, B, C and a stream to run it on. With `flat`, only a flat SEQ
    or AND within a window, negations between two of a SEQ's variables (the patterns
    `window_join` runs). With `extensions`, some patterns use what kleene adds to SASE+ for
    Flink and CORE users: optional elements, GREEDY and UNTIL loops, an AFTER MATCH clause,
    WITHIN ... EXCLUSIVE, count windows, per-edge strategies. `strategies`: those
    drawn from (SASE+'s four by default, and relaxed_contiguity with `extensions`).
    `extensions` may instead name which of `kleene.compiler.analysis.EXTENSIONS` to draw (a
    plan's own, say): AFTER MATCH and EXCLUSIVE are drawn with any."""
    wanted = frozenset(EXTENSIONS if extensions is True else extensions or ())
    if strategies is None:
        relaxed = ("relaxed_contiguity",) if "relaxed_contiguity" in wanted else ()
        strategies = A.SASE_STRATEGIES + relaxed
    twins = not flat and draw(st.integers(0, 7)) == 0
    if flat:
        structure = _rename(draw(_flat()), [0])
    else:
        structure = draw(_twins()) if twins else _rename(draw(_structure()), [0])
    conditions = draw(_conditions(structure))
    within = draw(
        st.integers(1, 5).map(A.Within)
        if flat
        else st.one_of(st.none(), st.integers(1, 5).map(A.Within))
    )
    if wanted & {"optional", "greedy", "until"} and not flat and draw(st.integers(0, 2)) == 0:
        structure = _loops(draw, structure, wanted)
    readings = frozenset(wanted & {"not_next", "not_followed"})
    if readings and draw(st.booleans()) is True:
        structure = _negation_readings(draw, structure, readings)
    strategy = draw(st.sampled_from(strategies))
    clauses: tuple[A.Strategy, ...] = ()
    if strategy != "skip_till_any_match" or draw(st.booleans()):
        clauses = (A.Strategy(strategy),)
    pattern = A.Pattern(
        structure, E.conjunction(*conditions) if conditions else None, clauses, within
    )
    try:
        validate(pattern)
    except PatternError:
        pattern = replace(pattern, within=A.Within(3))
        try:
            validate(pattern)
        except PatternError:
            reject()
    if extensions is not False:
        pattern = _extended(draw, pattern, strategies, wanted)
    return Case(pattern, draw(streams(max_events)))


#: Flink CEP's three contiguities: `next()`, `followedBy()`, `followedByAny()` (and, in a
#: loop, `consecutive()`, the default, `allowCombinations()`).
FLINK_STRATEGIES = ("strict_contiguity", "relaxed_contiguity", "skip_till_any_match")


@st.composite
def flink_cases(draw: st.DrawFn, max_events: int = 7) -> Case:
    """A pattern as Flink CEP writes it, and a stream: a flat SEQ of two to four variables,
    some optional, some loops GREEDY or with an UNTIL condition (iterative ones too),
    conditions, perhaps a window, and one of Flink's three contiguities for the query and
    perhaps another for each edge and loop."""
    leaves = tuple(draw(_leaf()) for _ in range(draw(st.integers(2, 4))))
    wanted = frozenset({"optional", "greedy", "until", "until_reading"})
    structure = _loops(draw, _rename(A.Seq(leaves), [0]), wanted)
    conditions = draw(_conditions(structure))
    places = [list(edge) for edge in edges(structure)]
    places += [[v.name] for v in A.event_vars(structure) if v.kleene]
    clauses = [A.Strategy(draw(st.sampled_from(FLINK_STRATEGIES)))]
    for names in places:
        if draw(st.booleans()):
            clauses.append(A.Strategy(draw(st.sampled_from(FLINK_STRATEGIES)), tuple(names)))
    within = draw(st.one_of(st.none(), st.integers(1, 5).map(A.Within)))
    where = E.conjunction(*conditions) if conditions else None
    pattern = A.Pattern(structure, where, tuple(clauses), within)
    if not _valid(pattern):
        reject()
    return Case(pattern, draw(streams(max_events)))


def _negation_readings(draw: st.DrawFn, element: A.Element, readings: frozenset[str]) -> A.Element:
    """`element` with some negations made NOT NEXT (those that follow an event in their
    SEQ) or NOT FOLLOWED (those right after a variable that binds an event, and before
    another element), of the `readings` wanted."""
    if isinstance(element, A.EventVar | A.Negation):
        return element
    items = [_negation_readings(draw, item, readings) for item in element.items]
    if isinstance(element, A.Seq):
        for index, item in enumerate(items):
            if not isinstance(item, A.Negation):
                continue
            choices = ["between"]
            if "not_next" in readings and any(guarantees_event(x) for x in items[:index]):
                choices.append("next")
            previous = items[index - 1] if index else None
            if (
                "not_followed" in readings
                and isinstance(previous, A.EventVar)
                and guarantees_event(previous)
                and index < len(items) - 1
            ):
                choices.append("followed")
            reading = draw(st.sampled_from(choices))
            items[index] = replace(item, next=reading == "next", followed=reading == "followed")
    return type(element)(tuple(items))


def _loops(
    draw: st.DrawFn,
    element: A.Element,
    wanted: frozenset[str],
    earlier: tuple[A.EventVar, ...] = (),
) -> A.Element:
    """`element` with some variables optional (`T? v`, `T{1,2}? v[]`) and some Kleene loops
    GREEDY or with an UNTIL condition on the event's x, or (Flink's iterative until) on the
    loop's events so far or a variable bound before it (`earlier`) (of those `wanted`)."""
    if isinstance(element, A.Negation):
        return element
    if isinstance(element, A.EventVar):
        quantifier = element.quantifier
        if "optional" in wanted and (quantifier is None or quantifier.min > 0):
            element = replace(element, optional=draw(st.integers(0, 4)) == 0)
        if quantifier is not None:
            bound = E.Constant(draw(st.integers(2, 3)))
            until: E.Expr = E.Compare(">=", E.Attr(element.name, "x"), bound)
            if "until_reading" in wanted and draw(st.booleans()):
                until = _iterative(draw, element.name, bound, earlier)
            element = replace(
                element,
                greedy="greedy" in wanted and draw(st.integers(0, 3)) == 0,
                until=until if "until" in wanted and draw(st.integers(0, 3)) == 0 else None,
            )
        return element
    if not isinstance(element, A.Seq):
        return type(element)(tuple(_loops(draw, item, wanted, earlier) for item in element.items))
    items = []
    for item in element.items:
        items.append(_loops(draw, item, wanted, earlier))
        if not isinstance(item, A.Negation):
            earlier += tuple(A.event_vars(item))
    return A.Seq(tuple(items))


def _iterative(
    draw: st.DrawFn, name: str, bound: E.Expr, earlier: tuple[A.EventVar, ...]
) -> E.Expr:
    """An UNTIL condition of loop `name` that reads more than the event at hand: the sum or
    count of the loop's events so far (with the event at hand or without), its previous or
    first event, or a variable bound before the loop."""
    at_hand = E.Attr(name, "x")
    choices: list[E.Expr] = [
        E.Compare(">=", E.Aggregate("sum", name, "x", 1), bound),
        E.Compare(">=", E.Aggregate("sum", name, "x", 0), bound),
        E.Compare(">=", E.Aggregate("count", name, "x", 1), bound),
        E.Compare(">", at_hand, E.Attr(name, "x", E.Index("i", -1))),
        E.Compare("<", at_hand, E.Attr(name, "x", E.Index("abs", 2))),
    ]
    for variable in earlier:
        index = None if variable.quantifier is None else E.Index("abs", 1)
        choices.append(E.Compare(">", at_hand, E.Attr(variable.name, "x", index)))
    return draw(st.sampled_from(choices))


def _extended(
    draw: st.DrawFn, pattern: A.Pattern, strategies: tuple[str, ...], wanted: frozenset[str]
) -> A.Pattern:
    """What kleene adds to SASE+ for Flink and CORE users, some of it: an AFTER MATCH
    clause, WITHIN ... EXCLUSIVE, and of those `wanted` a count window, per-edge strategy
    clauses, and a CONSUME BY or FREEZE clause (instead of AFTER MATCH)."""
    if "consume" in wanted and draw(st.integers(0, 3)) == 0:
        consume = A.Consume(draw(st.sampled_from(A.CONSUMPTIONS)))
        if _valid(replace(pattern, consume=consume)):
            pattern = replace(pattern, consume=consume)
    if "freeze" in wanted and pattern.consume is None and draw(st.integers(0, 3)) == 0:
        elements = A.elements_of_seq(pattern.structure)
        if elements:
            named = draw(st.lists(st.sampled_from(elements), min_size=1, max_size=2, unique=True))
            frozen = replace(pattern, freeze=A.Freeze(tuple(named)))
            if _valid(frozen):
                pattern = frozen
    if pattern.consume is None and pattern.freeze is None and draw(st.booleans()):
        pattern = replace(pattern, after_match=draw(_after_match(pattern.structure)))
    within = pattern.within
    if within is not None and draw(st.booleans()):
        pattern = replace(pattern, within=replace(within, exclusive=True))
    if "count_window" in wanted and draw(st.integers(0, 3)) == 0:
        events = draw(st.integers(1, 4))
        alone = within is None or draw(st.booleans())
        counted = (
            A.Within(None, events=events)
            if alone or within is None
            else replace(within, events=events)
        )
        if _valid(replace(pattern, within=counted)):
            pattern = replace(pattern, within=counted)
    if "per_edge" in wanted and draw(st.integers(0, 2)) == 0:
        places = [list(edge) for edge in edges(pattern.structure)]
        places += [[v.name] for v in A.event_vars(pattern.structure) if v.kleene]
        listed = draw(st.lists(st.sampled_from(places), max_size=2)) if places else []
        clauses = pattern.strategies + tuple(
            A.Strategy(draw(st.sampled_from(strategies)), tuple(names)) for names in listed
        )
        if _valid(replace(pattern, strategies=clauses)):
            pattern = replace(pattern, strategies=clauses)
    return pattern


def _valid(pattern: A.Pattern) -> bool:
    try:
        validate(pattern)
    except PatternError:
        return False
    return True


@st.composite
def _after_match(draw: st.DrawFn, structure: A.Element) -> A.AfterMatch:
    """An AFTER MATCH clause; TO FIRST and TO LAST name one of the positive variables."""
    skip = draw(st.sampled_from(A.SKIPS))
    if skip not in ("to_first", "to_last"):
        return A.AfterMatch(skip)
    names = sorted(A.positive_names(structure))
    return A.AfterMatch(skip, draw(st.sampled_from(names)))


# ---- LEAD rules --------------------------------------------------------------------------

#: LEAD rules over the streams `streams` draws, with no SASE+ pattern that means the same:
#: time events, Wait, collect, negation within a time, frames, conjunction and disjunction.
RULES = (
    "FROM A AS a, B AS b, C AS c MATCH all(a Followed By b.filter(b.x > a.x) Followed By c "
    "Within 3 s From a) PARTITION BY a.k EMIT Event M(a.x AS a, c.x AS c)",
    "FROM A AS a, B AS b MATCH every(a Followed By not b Within 2 s) PARTITION BY a.k "
    "EMIT Event Quiet(a.x AS x)",
    "FROM A AS a, B AS b, C AS c DEFINE TimeEvent open(a.event_time, a.event_time + 3 s) "
    "MATCH every(a Followed By collect(b) terminate(not open or count() == 2) AS bs "
    "Followed By c) EMIT CHECK ANY WHERE (count(bs) == 2) EMIT Event Two(c.x) "
    "WHERE (ALL(bs.x >= 1)) EMIT Event High(count(bs) AS n) END",
    "FROM A AS a, B AS b MATCH every(Wait(last(a), 2 s) and b) EMIT Event W(a.x AS a, b.x AS b)",
    "FROM A AS a, B AS b MATCH a Followed By not b Within 2 s PARTITION BY a.k, 3 s "
    "EMIT Event F(a.x)",
    "FROM A AS a, C AS c MATCH all(a Followed By c) consume(c) PARTITION BY 4 events "
    "EMIT Event N(a.x)",
    "FROM A AS a, B AS b, C AS c MATCH every(a Followed By (b or c) Followed By "
    "adj(a and c)) EMIT Event X(a.x)",
    "FROM A AS a, B AS b MATCH a Followed By not b Within 2 s PARTITION BY a.k "
    "EMIT Event Unpaid(a.k)",
)


@dataclass(frozen=True)
class RuleCase:
    """A LEAD rule, the SASE+ pattern that means the same (None: none is known) with the
    options it needs, and a stream whose events carry their ids as `n`."""

    rule: str
    twin: str | None
    options: Mapping[str, Any]
    events: tuple[Event, ...]

    def __repr__(self) -> str:
        rows = "\n".join(f"    {e.type} ts={e.ts} id={e.id} {dict(e.attrs)}" for e in self.events)
        return f"RuleCase(\n{self.rule}\n== {self.twin} {dict(self.options)}\n--\n{rows}\n)"


@st.composite
def rule_cases(draw: st.DrawFn, max_events: int = 8) -> RuleCase:
    """A rule and a stream (see the module docstring). A rule with a twin is `all` or
    `every` of a sequence of two or three streams (a type may repeat), each with an
    optional filter `x > n`, under `all` perhaps within a time of the first, perhaps
    PARTITION BY k;
    it emits the ids (`n`) of the events it matched, named as the twin's variables."""
    stream = tuple(
        Event(e.type, e.ts, {**e.attrs, "n": e.id}, e.id) for e in draw(streams(max_events))
    )
    if draw(st.integers(0, 3)) == 0:
        return RuleCase(draw(st.sampled_from(RULES)), None, {}, stream)
    names = ("a", "b", "c")[: draw(st.integers(2, 3))]
    types = [draw(st.sampled_from("ABC")) for _ in names]
    filters = [draw(st.sampled_from([None, None, 0, 1, 2])) for _ in names]
    policy = draw(st.sampled_from(["all", "every"]))
    # `every` under a window is no non-overlapping output: a failed attempt's events are
    # gone for the next one
    within = draw(st.sampled_from([None, 1, 2, 4])) if policy == "all" else None
    keyed = draw(st.booleans())
    elements = [
        n if f is None else f"{n}.filter({n}.x > {f})" for n, f in zip(names, filters, strict=True)
    ]
    if within is not None:  # last - first <= W is last - first < W + 1 (integer times)
        elements[-1] = f"{elements[-1]} Within {within + 1} s From a"
    rule = (
        "FROM "
        + ", ".join(f"{t} AS {n}" for t, n in zip(types, names, strict=True))
        + f" MATCH {policy}({' Followed By '.join(elements)})"
        + (" PARTITION BY a.k" if keyed else "")
        + f" EMIT Event M({', '.join(f'{n}.n AS {n}' for n in names)})"
    )
    conditions = [f"{n}.x > {f}" for n, f in zip(names, filters, strict=True) if f is not None]
    if keyed:
        conditions.insert(0, "[k]")
    variables = ", ".join(f"{t} {n}" for t, n in zip(types, names, strict=True))
    twin = f"PATTERN SEQ({variables}) WHERE skip_till_any_match"
    if conditions:
        twin += " { " + " and ".join(conditions) + " }"
    if within is not None:
        twin += f" WITHIN {within}"
    options = {"output": "non_overlapping"} if policy == "every" else {}
    return RuleCase(rule, twin, options, stream)


# ---- what one plan runs --------------------------------------------------------------------


@functools.cache
def _runs(plan: str, query: str) -> bool:
    return PLANS[plan].refusal(analyze(parse(query)), Options()) is None


def cases_for(plan: str, max_events: int = 8) -> st.SearchStrategy[Case]:
    """`cases` a plan of SASE+ patterns runs: drawn with the strategies it runs, flat if it
    runs only flat patterns (`window_join`), with what it runs of kleene's extensions (so
    that few are drawn only to be refused)."""
    strategies = tuple(
        s for s in A.STRATEGIES if _runs(plan, f"PATTERN SEQ(A a, B b) WHERE {s} WITHIN 3")
    )
    flat = not _runs(plan, "PATTERN SEQ(A a, AND(B b, C c)) WITHIN 3")
    extensions = PLANS[plan].extensions
    return cases(strategies=strategies, max_events=max_events, flat=flat, extensions=extensions)


# ---- SQL's row patterns ------------------------------------------------------------------

_ROW_NAMES = ("A", "B", "C")


def row_patterns(max_leaves: int = 6) -> st.SearchStrategy[Q.RowPattern]:
    """Row patterns over variables A, B, C: every construct of the regular expression."""
    leaf: st.SearchStrategy[Q.RowPattern] = st.one_of(
        st.sampled_from(_ROW_NAMES).map(Q.Label),
        st.sampled_from([Q.Anchor("^"), Q.Anchor("$"), Q.Concat(())]),
    )

    def grow(inner: st.SearchStrategy[Q.RowPattern]) -> st.SearchStrategy[Q.RowPattern]:
        items = st.lists(inner, min_size=2, max_size=3).map(tuple)
        bounds = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))).filter(
            lambda b: b[1] is None or b[0] <= b[1]
        )
        return st.one_of(
            items.map(Q.Concat),
            items.map(Q.Alternation),
            items.map(Q.Permute),
            inner.map(Q.Exclusion),
            st.builds(
                lambda body, b, g: Q.Repeat(body, b[0], b[1], g), inner, bounds, st.booleans()
            ),
        )

    return st.recursive(leaf, grow, max_leaves=max_leaves)


#: DEFINE conditions: some read only the row and its neighbours, some how the match so far
#: mapped rows, one looks ahead, one reads the number the match would get.
ROW_CONDITIONS = (
    None,
    "x > PREV(x)",
    "x = 1",
    "x < 2",
    "x >= A.x",
    "count(A.*) < 2",
    "NEXT(x) > x",
    "FIRST(x) = x",
    "CLASSIFIER(U) IS NULL OR x <> 0",
    "MATCH_NUMBER() % 2 = 1 OR x = 0",
    "count_if(x > 0) < 2",
    "max_by(x, i) = x",
    "bool_or(U.x = 2) OR x = 0",
    "cardinality(array_agg(x)) < 3 AND element_at(array_agg(x), 1) IS NOT NULL",
)
_SKIPS = (
    "",
    "AFTER MATCH SKIP TO NEXT ROW",
    "AFTER MATCH SKIP TO FIRST B",
    "AFTER MATCH SKIP TO LAST A",
)


@st.composite
def clauses(
    draw: st.DrawFn,
    head: str = "ORDER BY i",
    rows: str = "ALL ROWS PER MATCH",
    measures: str = "MATCH_NUMBER() AS m, CLASSIFIER() AS c",
    skips: tuple[str, ...] = _SKIPS,
) -> str:
    """The text of a MATCH_RECOGNIZE clause (what goes inside the parentheses) reading a
    column x, after `head` (PARTITION BY, ORDER BY); every name it reads is the pattern's.
    A skip to a variable may fail at run time (the match maps no row to it)."""
    pattern = draw(row_patterns())
    present = set(Q.labels(pattern))
    members = [name for name in ("A", "B") if name in present]
    usable = [
        c
        for c in ROW_CONDITIONS
        if c is None or (("A." not in c or "A" in present) and ("U" not in c or members))
    ]
    defines = []
    for name in _ROW_NAMES:
        condition = draw(st.sampled_from(usable))
        if condition is not None and name in present:
            defines.append(f"{name} AS {condition}")
    define = f" DEFINE {', '.join(defines)}" if defines else ""
    subset = f" SUBSET U = ({', '.join(members)})" if members else ""
    skip = draw(st.sampled_from([s for s in skips if not s or s[-1] in present]))
    # (a WITHIN on the ORDER BY column, its numbers seconds)
    spans = ["", " WITHIN INTERVAL '2' SECOND", " WITHIN INTERVAL '3' SECOND"]
    within = draw(st.sampled_from(spans)) if "ORDER BY" in head else ""
    return (
        f"{head} MEASURES {measures} {rows} {skip} PATTERN ({pattern_text(pattern)})"
        f"{within}{subset}{define}"
    )


def tables(max_rows: int = 7) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Rows {i, x}: i the row's position, x small (and sometimes null)."""
    values = st.one_of(st.integers(0, 2), st.none())
    return st.lists(values, max_size=max_rows).map(
        lambda xs: [{"i": i, "x": x} for i, x in enumerate(xs)]
    )


@dataclass(frozen=True)
class RowPatternCase:
    """A MATCH_RECOGNIZE query over a stream (PARTITION BY k, ORDER BY ts), and the stream."""

    query: str
    events: tuple[Event, ...]

    def __repr__(self) -> str:
        rows = "\n".join(f"    {e.type} ts={e.ts} id={e.id} {dict(e.attrs)}" for e in self.events)
        return f"RowPatternCase(\n{self.query}\n--\n{rows}\n)"


@st.composite
def row_pattern_cases(draw: st.DrawFn, max_events: int = 7) -> RowPatternCase:
    """A clause over a stream of rows: its partitions by k, in event-time order; it never
    skips to a variable (which may fail at run time)."""
    head = draw(st.sampled_from(["PARTITION BY k ORDER BY ts", "ORDER BY ts", ""]))
    rows = draw(st.sampled_from(["ALL ROWS PER MATCH", "ONE ROW PER MATCH"]))
    measures = draw(
        st.sampled_from(
            [
                "MATCH_NUMBER() AS m, CLASSIFIER() AS c, count(*) AS n",
                "count(*) AS n, NEXT(x) AS after, FINAL LAST(x) AS last",  # reads past the match
            ]
        )
    )
    clause = draw(clauses(head, rows, measures, _SKIPS[:2]))
    return RowPatternCase(f"MATCH_RECOGNIZE ({clause})", draw(streams(max_events)))
