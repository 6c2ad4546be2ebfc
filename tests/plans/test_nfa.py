"""The `nfa` plan against `reference`: random patterns and streams, every strategy, both
output formats, with and without merging; and the shared versioned buffer by itself."""

import dataclasses

import pytest
from hypothesis import assume, given, reject
from hypothesis import strategies as st

import kleene
from kleene.events import Event
from kleene.language.sase import ast as A
from kleene.testing import conformance
from kleene.testing.strategies import cases, flink_cases

OUTPUTS = ("all", "non_overlapping")


def ids(matches):
    """The matches as comparable values, in a canonical order (the engine orders matches by
    end, start and event ids; ties between different bindings of one set of events remain),
    a timed-out partial match marked as one."""
    return sorted((type(m).__name__, sorted(m.ids().items())) for m in matches)


@given(cases(max_events=9), st.sampled_from(OUTPUTS), st.booleans())
def test_nfa_equals_reference(case, output, merge):
    expected = ids(kleene.match(case.pattern, case.events, plan="reference", output=output))
    actual = ids(kleene.match(case.pattern, case.events, plan="nfa", output=output, merge=merge))
    assert actual == expected


@given(flink_cases(max_events=9), st.booleans(), st.booleans())
def test_nfa_runs_flink_forms_as_reference_does(case, merge, timeouts):
    """Flink's three contiguities per edge and loop, optional elements, UNTIL loops: the
    same matches, and with a window the same timed-out partial matches."""
    if timeouts and case.pattern.within is None:
        timeouts = False
    options = {"timeouts": timeouts}
    expected = ids(kleene.match(case.pattern, case.events, plan="reference", **options))
    actual = ids(kleene.match(case.pattern, case.events, plan="nfa", merge=merge, **options))
    assert actual == expected


@given(cases(max_events=9, extensions=True), st.sampled_from(OUTPUTS), st.booleans())
def test_nfa_runs_kleenes_extensions_as_reference_does(case, output, merge):
    """Optional, GREEDY and UNTIL loops, per-edge strategies, count windows, NOT NEXT,
    CONSUME BY and AFTER MATCH on random patterns (those nfa refuses aside)."""
    try:
        plan = kleene.compile(case.pattern, "nfa", output=output, merge=merge)
        expected = ids(kleene.match(case.pattern, case.events, plan="reference", output=output))
    except kleene.PlanError:
        reject()
    assert ids(kleene.match(plan, case.events)) == expected


@given(cases(max_events=9, strategies=("skip_till_any_match",), extensions=True), st.data())
def test_nfa_freezes_as_reference_does(case, data):
    """FREEZE on random patterns: the same matches at the same events, with and without
    merging and partitions, and a state saved and resumed anywhere freezes as before."""
    elements = A.elements_of_seq(case.pattern.structure)
    assume(elements)
    named = data.draw(st.lists(st.sampled_from(elements), min_size=1, max_size=2, unique=True))
    plain = dataclasses.replace(case.pattern, after_match=None, consume=None)
    pattern = dataclasses.replace(plain, freeze=A.Freeze(tuple(named)))
    try:
        oracle = kleene.compile(pattern, "reference")
        plan = kleene.compile(pattern, "nfa", merge=data.draw(st.booleans()))
    except (kleene.PatternError, kleene.PlanError):
        reject()  # a negation at the end waits for later events (no FREEZE), or nfa refuses
    for check in (
        conformance.same_matches,
        conformance.partitioning,
        conformance.pickling,
        conformance.idle_eviction,
    ):
        check(plan, oracle, case.events)


@pytest.mark.parametrize(
    "options",
    [{"timeouts": True}, {"output": "non_overlapping"}, {"selection": "earliest"}],
)
def test_freeze_is_refused_where_another_choice_of_matches_would_meet_it(options):
    with pytest.raises(kleene.PlanError, match="FREEZE holds partial matches back"):
        kleene.compile("PATTERN SEQ(A a, B b, C c) WITHIN 5 FREEZE b", **options)


@given(cases(max_events=9), st.sampled_from(OUTPUTS))
def test_nfa_backtrack_equals_reference(case, output):
    expected = ids(kleene.match(case.pattern, case.events, plan="reference", output=output))
    assert (
        ids(kleene.match(case.pattern, case.events, plan="nfa_backtrack", output=output))
        == expected
    )


NEGATIVE_CONDITIONS = (
    "n.x >= avg(a[].x)",
    "n.x > a[i].x",
    "n.x = a[1].x and n.k = b.k",
    "n.x + a[a.len].x < b.x * 2",
    "n.x >= a.len or n.x = max(a[].x)",
)


def abc_events(rows):
    return [kleene.Event(t, n, {"x": x, "k": k}, n) for n, (t, x, k) in enumerate(rows)]


ABC = st.lists(
    st.tuples(st.sampled_from("ABC"), st.integers(0, 3), st.integers(0, 1)), max_size=10
).map(abc_events)


@pytest.mark.parametrize("condition", NEGATIVE_CONDITIONS)
@pytest.mark.parametrize("structure", ["SEQ(A+ a[], NOT(C n), B b)", "SEQ(NOT(C n), A+ a[], B b)"])
@given(ABC, st.sampled_from(["skip_till_next_match", "skip_till_any_match"]))
def test_compiled_negation_equals_reference(condition, structure, events, strategy):
    """The negative component's compiled formula reads the candidate's Kleene elements,
    aggregates and single events as the interpreter does."""
    query = f"PATTERN {structure} WHERE {strategy} {{ {condition} }} WITHIN 4"
    expected = ids(kleene.match(query, events, plan="reference"))
    assert ids(kleene.match(query, events, plan="nfa")) == expected


def test_compiled_negation_raises_as_the_interpreter_does():
    query = "PATTERN SEQ(A+ a[], NOT(C n), B b) WHERE n.x > sum(a[].x)"
    events = [
        kleene.Event("A", 1, {"x": 1}),
        kleene.Event("A", 2, {"x": "one"}),
        kleene.Event("C", 3, {"x": 5}),
        kleene.Event("B", 4, {}),
    ]
    for plan in ("reference", "nfa"):  # (which candidate fails first is the plan's order)
        with pytest.raises(kleene.EventError, match=r"cannot compute sum\(a\[\]\.x\)"):
            kleene.match(query, events, plan=plan)


def test_explain_shows_the_negative_automaton():
    plan = kleene.compile("PATTERN SEQ(A a, NOT(C n), B b) WHERE n.x > a.x", plan="nfa")
    assert "negation n (its matches spoil a candidate):\n  begin n -> F  if n.x > a.x" in (
        plan.describe()
    )


SELECTIONS = ("earliest", "maximal", "earliest_maximal")


@given(
    cases(max_events=9),
    st.sampled_from(SELECTIONS),
    st.sampled_from(["nfa", "nfa_backtrack"]),
)
def test_selections_equal_reference(case, selection, plan):
    expected = ids(kleene.match(case.pattern, case.events, plan="reference", selection=selection))
    assert ids(kleene.match(case.pattern, case.events, plan=plan, selection=selection)) == expected


@pytest.mark.parametrize("selection", SELECTIONS)
def test_backtrack_selection_does_not_wait_on_a_postponed_run(selection):
    # the run begun by the first A stays postponed while the singleton lives on; the group
    # of matches starting at the first A must still be reported once its window has passed
    # (this looped forever: the group's deadline passed while the run held it back)
    events = [{"type": "A", "ts": 0}, {"type": "A", "ts": 2}]
    query = "PATTERN A+ a[] WHERE strict_contiguity WITHIN 1"
    found = kleene.match(query, events, plan="nfa_backtrack", selection=selection)
    assert [m.ids() for m in found] == [{"a": (0,)}, {"a": (1,)}]


def test_backtrack_with_non_overlapping_output_ends_the_runs_a_match_overlaps():
    """A run finds a match: every run reads up to it, it is reported, and the runs begun
    before it ended stop, as the SASE+ paper's backtrack algorithm goes on after a match
    (not searching every run through, which read each A's run to the window's end)."""
    events = [{"type": "A" if n % 3 else "B", "ts": n} for n in range(60)]
    query = "PATTERN SEQ(A+ a[], B b) WHERE skip_till_next_match WITHIN 30"
    steps = {}
    for output in ("all", "non_overlapping"):
        engine = kleene.Engine(query, plan="nfa_backtrack", output=output)
        found = engine.send_many(events) + engine.close()
        expected = kleene.match(query, events, plan="reference", output=output)
        assert ids(found) == ids(expected)
        steps[output] = engine.metrics.as_dict()["run_steps"]
    assert len(expected) == 19  # each B but the first ends one, of the two A before it
    assert steps["non_overlapping"] * 10 < steps["all"]


def test_runs_holding_lists_are_not_merged_but_still_match():
    """A list attribute (the lazy-NFA paper's price history) in V cannot key a merge."""
    rows = [("A", [1, 2, 3]), ("A", [1, 2, 3]), ("B", [2, 4, 6])]
    events = [{"type": t, "ts": i, "h": h} for i, (t, h) in enumerate(rows)]
    query = "PATTERN SEQ(A a, B b) WHERE corr(a.h, b.h) > 0.9 WITHIN 5"
    expected = ids(kleene.match(query, events, plan="reference"))
    assert len(expected) == 2
    assert ids(kleene.match(query, events, plan="nfa")) == expected


WIDE_AND = "PATTERN AND(" + ", ".join(f"T{n} v{n}" for n in range(15)) + ") WITHIN 10"


@pytest.mark.parametrize(
    ("query", "cause"),
    [
        (WIDE_AND, r"an AND of 15 elements tracks each combination of .*: 2\^15"),
        ("PATTERN SEQ(A{20000} a[], B b)", "a Kleene variable's count is tracked"),
        ("PATTERN SEQ(A+ a[], B b) WHERE a[20000].x > 1", "a Kleene variable's count is tracked"),
    ],
)
def test_an_automaton_too_large_is_refused_quickly_and_auto_moves_on(query, cause):
    """These took more than 30 s (or hung) compiling; now nfa stops at 4,096 states and
    names the cause, and `auto` takes the next plan that runs the pattern."""
    with pytest.raises(kleene.PlanError, match=cause):
        kleene.compile(query, plan="nfa")
    chosen = kleene.compile(query)
    assert chosen.name in ("window_join", "lazy_chain", "reference")
    strict = query.replace("WITHIN 10", "WHERE skip_till_next_match WITHIN 10")
    if strict != query:
        assert kleene.compile(strict).name == "reference"


def test_long_histories_pickle_without_deep_recursion():
    """A state holding a chain of thousands of entries (runs merged over a long window, or a
    long Kleene history) saves and resumes: pickle must not recurse down the chain."""
    merged = kleene.compile("PATTERN SEQ(A a, A b) WHERE b.v = a.v + 1 WITHIN 1000")
    state = merged.new_state()
    for n in range(3000):  # no event has v: every run waits, and they merge
        merged.step(state, kleene.Event("A", n, {}, n))
    state = merged.load_state(merged.dump_state(state))
    assert merged.step(state, kleene.Event("A", 3001, {"v": 1}, 3001)) == []

    kleene_plus = kleene.compile(
        "PATTERN SEQ(A a, B+ b[], C c) WHERE skip_till_next_match WITHIN 10000"
    )
    state = kleene_plus.new_state()
    for n in range(3000):
        kleene_plus.step(state, kleene.Event("B" if n else "A", n, {}, n))
    state = kleene_plus.load_state(kleene_plus.dump_state(state))
    (found,) = kleene_plus.step(state, kleene.Event("C", 3000, {}, 3000))
    assert found.ids()["b"] == tuple(range(1, 3000))


def test_a_state_saved_with_its_evaluations_in_the_counters_dict_resumes_them():
    """Before `edge_evaluations` was a field of the state, it was an entry of `counters`:
    such a saved state resumes with its count (and no entry twice)."""
    plan = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 10", "nfa")
    state = plan.new_state()
    for n, kind in enumerate("AAB"):
        plan.step(state, kleene.Event(kind, n, {}, n))
    counted = plan.counters(state)["edge_evaluations"]
    assert counted > 0
    del state.__dict__["evaluations"]  # the old layout
    state.counters["edge_evaluations"] = counted
    resumed = plan.load_state(plan.dump_state(state))
    assert plan.counters(resumed)["edge_evaluations"] == counted
    assert "edge_evaluations" not in resumed.counters


def test_a_match_two_landed_runs_complete_is_reported_once():
    """A strict loop meets another partition's event it cannot ignore: the run lands past
    the loop at both places it may wait at (b's entry and c's), and the one at b's entry
    proceeds to c's later, where the other stands; their one match is reported once."""
    query = (
        "PATTERN SEQ(A+ a[], B* b[], C* c[]) "
        "WHERE relaxed_contiguity strict_contiguity(a[]) { [k] }"
    )
    events = [
        Event("A", 0, {"k": 0}, id="a"),
        Event("X", 1, {"k": 1}, id="x"),
        Event("C", 2, {"k": 0}, id="c"),
    ]
    found = sorted(str(m.ids()) for m in kleene.match(query, events, plan="nfa"))
    assert found == [
        "{'a': ('a',), 'b': (), 'c': ('c',)}",
        "{'a': ('a',), 'b': (), 'c': ()}",
    ]


@pytest.mark.parametrize(
    ("until", "prices", "expected"),
    [
        # the loop's first element, read past the count the automaton otherwise tracks
        ("a.price < a[2].price", "5 3 4 2", ["a1", "a1 a2", "a1 a2 a3"]),
        ("a.price < a[i-1].price", "2 3 1 4", ["a1", "a1 a2"]),
        ("sum(a[..i-1].price) >= 5", "2 3 1 4", ["a1", "a1 a2"]),
        ("sum(a[..i].price) > 6", "2 3 4 1", ["a1", "a1 a2"]),  # the event at hand too
        ("count(a[..i-1].price) = 2", "2 3 4 1", ["a1", "a1 a2"]),
        ("a.price > c.price", "2 3 4 1", ["a1", "a1 a2"]),  # an earlier variable
    ],
)
def test_an_iterative_until_runs_on_the_automaton(until, prices, expected):
    """An UNTIL condition that reads the loop's events so far or an earlier variable
    (Flink's iterative `until`) is a test of each edge into the loop on the run's V: `auto`
    picks `nfa`, which finds what `reference` finds (c's price is 3; the loop stops at the
    first event the condition holds for, and each run left it before)."""
    query = f"PATTERN SEQ(C c, A+ a[] UNTIL ({until}), D d) WHERE relaxed_contiguity"
    events = [Event("C", 0, {"price": 3}, id="c")]
    for n, price in enumerate(prices.split(), 1):
        events.append(Event("A", n, {"price": int(price)}, id=f"a{n}"))
    events.append(Event("D", len(events), {"price": 0}, id="d"))
    assert kleene.compile(query).name == "nfa"
    for plan in ("nfa", "reference"):
        found = kleene.match(query, events, plan=plan)
        assert sorted(" ".join(map(str, m.ids()["a"])) for m in found) == expected, plan
