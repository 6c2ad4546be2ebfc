"""The `lazy_chain` plan against `reference`: random skip-till-any-match patterns and streams,
under random (often wrong) evaluation orders; golden cases from the lazy-NFA paper."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.cli import main
from kleene.compiler.analysis import analyze
from kleene.errors import PlanError
from kleene.testing.strategies import cases, streams

OUTPUTS = ("all", "non_overlapping")
ANY = ("skip_till_any_match",)
NEGATIONS = ("post", "first_chance")


def ids(matches):
    return sorted(sorted(m.ids().items()) for m in matches)


@given(
    cases(strategies=ANY, max_events=9),
    st.randoms(use_true_random=False),
    st.sampled_from(OUTPUTS),
    st.sampled_from(NEGATIONS),
)
def test_lazy_chain_equals_reference_under_any_order(case, rng, output, negation):
    names = [v.name for v in analyze(case.pattern).positive]
    rng.shuffle(names)
    expected = ids(kleene.match(case.pattern, case.events, plan="reference", output=output))
    actual = kleene.match(
        case.pattern, case.events, plan="lazy_chain", order=names, output=output, negation=negation
    )
    assert ids(actual) == expected


EXAMPLE_1 = [("A", 1), ("A", 2), ("B", 3), ("B", 4), ("C", 5)]


@pytest.mark.parametrize(
    "order",
    [
        ["A", "B", "C"],
        ["A", "C", "B"],
        ["B", "A", "C"],
        ["B", "C", "A"],
        ["C", "A", "B"],
        ["C", "B", "A"],
    ],
)
def test_example_1_under_every_order(order):
    events = [{"type": t, "ts": ts, "price": 10} for t, ts in EXAMPLE_1]
    query = "PATTERN SEQ(A a, B b, C c) WHERE a.price > 5 AND b.price > 5 AND c.price > 5 WITHIN 60"
    found = kleene.match(query, events, plan="lazy_chain", order=order)
    assert sorted(tuple(m.ids().values()) for m in found) == [
        ((0,), (2,), (4,)),
        ((0,), (3,), (4,)),
        ((1,), (2,), (4,)),
        ((1,), (3,), (4,)),
    ]


def test_frequencies_choose_the_order_and_kleene_goes_last():
    plan = kleene.compile(
        "PATTERN SEQ(A a, B+ b[], C c)", plan="lazy_chain", frequencies={"A": 5, "B": 1, "C": 10}
    )
    assert plan.describe().splitlines()[1].strip() == "a <- c (after a) <- b (after a, before c)"


def test_bad_orders_and_strategies_are_errors():
    with pytest.raises(PlanError, match="neither a variable nor an event type"):
        kleene.compile("PATTERN SEQ(A a, B b)", plan="lazy_chain", order=["X"])
    with pytest.raises(PlanError, match="not both"):
        kleene.compile(
            "PATTERN SEQ(A a, B b)", plan="lazy_chain", order=["A"], frequencies={"B": 1}
        )
    with pytest.raises(PlanError, match="only skip_till_any_match"):
        kleene.compile("PATTERN SEQ(A a, B b) WHERE strict_contiguity", plan="lazy_chain")


def test_an_order_or_frequencies_give_the_chain():
    query = "PATTERN SEQ(A a, B b, C c)"
    by_order = kleene.compile(query, plan="lazy_chain", order=["C", "B", "A"]).describe()
    rates = {"A": 100, "B": 10, "C": 1}
    by_rates = kleene.compile(query, plan="lazy_chain", frequencies=rates).describe()
    assert by_order == by_rates
    assert by_order.splitlines()[1].strip() == "c <- b (before c) <- a (before c, b)"
    with pytest.raises(PlanError, match="order is a list of variables or types, not 'C,B,A'"):
        kleene.compile(query, plan="lazy_chain", order="C,B,A")


def test_orders_from_the_command_line(capsys):
    query = "PATTERN SEQ(A a, B b, C c)"
    assert main(["explain", query, "--plan", "lazy_chain", "--option", "order=C, B,A"]) == 0
    by_order = capsys.readouterr().out
    rates = "frequencies=A:100,B:10,C:1"
    assert main(["explain", query, "--plan", "lazy_chain", "--option", rates]) == 0
    assert capsys.readouterr().out == by_order
    assert "c <- b (before c) <- a (before c, b)" in by_order
    assert main(["explain", query, "--plan", "lazy_chain", "--option", "frequencies=A:1,B:x"]) == 1
    assert "expected NAME:RATE, not 'B:x'" in capsys.readouterr().err
    assert main(["explain", query, "--plan", "lazy_chain", "--option", "estimate=-1"]) == 1
    assert "estimate must be a number of events (0 or more), not -1" in capsys.readouterr().err


PATTERN_4 = "PATTERN SEQ(A a, NOT(B b), C c, D d) WHERE b.x < c.y WITHIN 1 hour"


def test_first_chance_rejects_before_the_last_event():
    """Figure 7: with the order C, A, D the absence of B is checked once a and c are bound,
    so a spoiled pair never searches for D (post-processing searches, then rejects)."""
    rows = [("A", None), ("B", 1), ("C", None), ("D", None), ("D", None), ("D", None)]
    events = [{"type": t, "ts": ts, "x": x, "y": 3} for ts, (t, x) in enumerate(rows)]
    counts = {}
    for negation in ("post", "first_chance"):
        engine = kleene.Engine(PATTERN_4, "lazy_chain", order=["C", "A", "D"], negation=negation)
        assert engine.send_many(events) + engine.close() == []
        counts[negation] = engine.metrics.plan
    assert counts["first_chance"]["negation_rejections"] == 1
    assert counts["post"]["negation_rejections"] == 0
    assert counts["first_chance"]["instances_created"] < counts["post"]["instances_created"]


def test_first_chance_is_described():
    plan = kleene.compile(
        PATTERN_4, plan="lazy_chain", order=["C", "A", "D"], negation="first_chance"
    )
    assert "NOT b checked once a, c are bound" in plan.describe()
    with pytest.raises(PlanError, match="negation must be one of post, first_chance"):
        kleene.compile(PATTERN_4, plan="lazy_chain", negation="early")


@given(
    cases(strategies=ANY, max_events=12),
    st.randoms(use_true_random=False),
    st.sampled_from(NEGATIONS),
)
def test_lazy_tree_equals_reference(case, rng, negation):
    names = [v.name for v in analyze(case.pattern).positive]
    rng.shuffle(names)  # the tree's first root and its ties follow this order
    expected = ids(kleene.match(case.pattern, case.events, plan="reference"))
    actual = kleene.match(
        case.pattern, case.events, plan="lazy_tree", order=names, negation=negation
    )
    assert ids(actual) == expected


LONG = [
    "PATTERN SEQ(A a, B b, C c) WHERE a.x <= c.x WITHIN 6",
    "PATTERN AND(A a, B b, D d) WITHIN 4",
    "PATTERN SEQ(A a, NOT(D n), B b, C c) WHERE n.x > a.x WITHIN 6",
    "PATTERN OR(SEQ(A a, C c), SEQ(B b, D d)) WHERE [k] WITHIN 5",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x >= a.x WITHIN 4",
]


@given(st.sampled_from(LONG), streams(max_size=48), st.sampled_from(NEGATIONS))
def test_lazy_tree_switching_roots_equals_reference(query, events, negation):
    """Long streams, so that the roots are reviewed (every 8 events) and hand over often."""
    expected = ids(kleene.match(query, events, plan="reference"))
    assert ids(kleene.match(query, events, plan="lazy_tree", negation=negation)) == expected


def test_lazy_tree_follows_the_rarest_type_as_it_changes():
    """A stream whose rarest type changes (C, then A): the tree's roots move with it, and it
    makes fewer partial matches than either fixed chain, each right for one half only."""
    rows = (["A"] * 8 + ["B"] * 3 + ["C"]) * 3 + (["C"] * 8 + ["B"] * 3 + ["A"]) * 3
    events = [{"type": t, "ts": i} for i, t in enumerate(rows)]
    query = "PATTERN AND(A a, B b, C c) WITHIN 12"
    expected = ids(kleene.match(query, events, plan="reference"))
    created = {}
    for plan, order in [
        ("lazy_tree", ()),
        ("lazy_chain", ("C", "B", "A")),
        ("lazy_chain", ("A", "B", "C")),
    ]:
        engine = kleene.Engine(query, plan, order=order)
        assert ids(engine.send_many(events) + engine.close()) == expected
        created[plan, order] = engine.metrics.plan["instances_created"]
        if plan == "lazy_tree":
            assert engine.metrics.plan["root_switches"] >= 2
    tree = created.pop(("lazy_tree", ()))
    assert all(tree < chain for chain in created.values())


@given(
    cases(strategies=ANY, max_events=12),
    st.randoms(use_true_random=False),
    st.integers(1, 12),
    st.sampled_from(NEGATIONS),
)
def test_lazy_chain_with_an_estimated_order_equals_reference(case, rng, estimate, negation):
    """The order changes after `estimate` events, partial matches half way along their
    chain go on in the new one, and the root hands over: the matches stay the same."""
    names = [v.name for v in analyze(case.pattern).positive]
    rng.shuffle(names)
    expected = ids(kleene.match(case.pattern, case.events, plan="reference"))
    actual = kleene.match(
        case.pattern,
        case.events,
        plan="lazy_chain",
        order=names,
        estimate=estimate,
        negation=negation,
    )
    assert ids(actual) == expected


def test_lazy_chain_estimates_the_order_from_a_prefix():
    """Pattern order A, B, C is the worst here (A is the most frequent); after the first 12
    events the chain takes C first, so partial matches stop waiting (C ends the sequence)
    once those begun before have timed out."""
    rows = (["A"] * 8 + ["B"] * 3 + ["C"]) * 6
    events = [{"type": t, "ts": i} for i, t in enumerate(rows)]
    query = "PATTERN SEQ(A a, B b, C c) WITHIN 12"
    expected = ids(kleene.match(query, events, plan="reference"))
    waiting = {}  # partial matches waiting after each event, summed over the last 36
    for estimate in (0, 12):
        engine = kleene.Engine(query, "lazy_chain", estimate=estimate)
        found = engine.send_many(events[:36])
        before = engine.metrics.run_steps
        assert ids(found + engine.send_many(events[36:]) + engine.close()) == expected
        waiting[estimate] = engine.metrics.run_steps - before
    assert waiting[12] == 0 < waiting[0]
    plan = kleene.compile(query, plan="lazy_chain", estimate=12)
    assert "the first 12 events of each partition" in plan.describe()
    with pytest.raises(PlanError, match="estimate must be a number of events"):
        kleene.compile(query, plan="lazy_chain", estimate=-1)


GROUPED = [
    "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x = b[i-1].x WITHIN 8",
    "PATTERN SEQ(A a, _* b[], C c) WHERE b[i-1].x = b[i].x AND b[i].x >= a.x WITHIN 6",
    "PATTERN AND(B{2,3} b[], C c) WHERE b[i].x = b[i-1].x AND avg(b[].x) < c.x + 2 WITHIN 6",
    "PATTERN OR(SEQ(A a, D+ d[]), SEQ(B b, D+ e[])) WHERE d[i].x = d[i-1].x WITHIN 5",
]


@given(st.sampled_from(GROUPED), streams(max_size=24), st.sampled_from(["lazy_chain", "lazy_tree"]))
def test_group_by_attribute_equals_reference(query, events, plan):
    """Section 4.5.3: subsets made within one value of x (events without x alone) find the
    same matches as all subsets, as reference does."""
    expected = ids(kleene.match(query, events, plan="reference"))
    for group in (True, False):
        assert ids(kleene.match(query, events, plan=plan, group=group)) == expected


def test_group_by_attribute_checks_fewer_predicates():
    """Ten B events in five values of x: grouped, the subsets never pair two values, so far
    fewer conditions are evaluated; the plan says which attribute it groups by."""
    query = "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x = b[i-1].x WITHIN 20"
    rows = [("A", None)] + [("B", k % 5) for k in range(10)] + [("C", None)]
    events = [{"type": t, "ts": i, "x": x} for i, (t, x) in enumerate(rows)]
    checks = {}
    for group in (True, False):
        engine = kleene.Engine(query, "lazy_chain", order=["C", "A", "B"], group=group)
        found = engine.send_many(events) + engine.close()
        assert len(found) == 5 * 3  # per value: {k}, {k, k+5}, {k+5}
        checks[group] = engine.metrics.plan["predicate_checks"]
    assert checks[True] * 2 < checks[False]
    assert "b grouped by x" in kleene.compile(query, plan="lazy_chain").describe()


def test_conditions_on_each_element_filter_the_pool_once():
    """`b[i].x > a.x` is true or false of each B alone: the ten B events are checked once
    each, and the subsets are made of the two that pass (C, then A, then 10 elements, then
    3 subsets grown and closed: 18 checks; checked per subset, 34)."""
    xs = [6, 1, 1, 1, 7, 1, 1, 1, 1, 1]
    rows = [("A", 5)] + [("B", x) for x in xs] + [("C", 0)]
    events = [{"type": t, "ts": i, "x": x} for i, (t, x) in enumerate(rows)]
    query = "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x > a.x WITHIN 20"
    engine = kleene.Engine(query, "lazy_chain", order=["C", "A", "B"])
    found = engine.send_many(events) + engine.close()
    assert sorted(len(m.bindings["b"]) for m in found) == [1, 1, 2]
    assert engine.metrics.plan["predicate_checks"] == 18
