"""The `match_window` plan: around each inner plan it returns what that plan returns alone,
with every combination of pruning; its summary statistics and bit vectors follow the paper's
Figure 5 and Example 13."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import kleene
from kleene.errors import PlanError
from kleene.testing import events
from kleene.testing.strategies import cases

PRUNINGS = ("", "f", "p", "c", "fp", "fc", "pc", "fpc")
SKIPPING = ("skip_till_next_match", "skip_till_any_match")


def ids(matches):
    return sorted(sorted(m.ids().items()) for m in matches)


def windowed(case, inner, pruning):
    try:
        engine = kleene.Engine(case.pattern, "match_window", inner=inner, pruning=pruning)
    except PlanError:
        assume(False)
    return ids(engine.send_many(case.events) + engine.close())


@given(
    cases(strategies=SKIPPING, max_events=9),
    st.sampled_from(["reference", "nfa"]),
    st.sampled_from(PRUNINGS),
)
def test_match_window_equals_its_inner_plan(case, inner, pruning):
    alone = ids(kleene.match(case.pattern, case.events, plan=inner))
    assert windowed(case, inner, pruning) == alone


@given(cases(strategies=("skip_till_any_match",), max_events=9), st.sampled_from(PRUNINGS))
def test_match_window_around_lazy_chain_equals_it(case, pruning):
    alone = ids(kleene.match(case.pattern, case.events, plan="lazy_chain"))
    assert windowed(case, "lazy_chain", pruning) == alone


@given(cases(strategies=SKIPPING, max_events=9), st.sampled_from(PRUNINGS))
def test_match_window_around_backtrack_equals_reference(case, pruning):
    expected = ids(kleene.match(case.pattern, case.events, plan="reference"))
    assert windowed(case, "nfa_backtrack", pruning) == expected


@pytest.mark.parametrize(
    ("query", "options", "reason"),
    [
        ("PATTERN SEQ(A a, B b)", {}, "WITHIN"),
        ("PATTERN SEQ(A a, B b) WITHIN 5", {"output": "non_overlapping"}, "all matches"),
        ("PATTERN SEQ(A a, B b) WHERE partition_contiguity WITHIN 5", {}, "contiguity"),
        ("PATTERN SEQ(NOT(C c), A a, B b) WITHIN 5", {}, "looks back"),
        ("PATTERN SEQ(A* a[], NOT(C c), B b) WITHIN 5", {}, "looks back"),
        ("PATTERN SEQ(A a, B b) WITHIN 5", {"pruning": "fx"}, "letters f, p and c"),
        ("PATTERN SEQ(A a, B b) WITHIN 5", {"inner": "match_window"}, "cannot be"),
        ("PATTERN SEQ(A a, B b) WITHIN 5", {"inner": "nope"}, "unknown plan"),
    ],
)
def test_what_match_window_declines(query, options, reason):
    with pytest.raises(PlanError, match=reason):
        kleene.compile(query, plan="match_window", **options)


# The paper's Figure 1 (PID, L as the event type, V; T as the day of July)
CHEMO = events("""
    type ts id  PID V
    C    3  e1  1   1672.5
    B    4  e2  1   7100
    P    5  e3  1   111.5
    B    6  e4  2   10100
    P    8  e5  2   88
    D    9  e6  2   84
    C    10 e7  2   1320
    P    11 e8  2   98
    P    12 e9  1   116.5
    P    15 e10 2   88
    B    17 e11 1   3400
    B    18 e12 2   4000
    B    19 e13 2   4900
    B    22 e14 1   3000
""")
P1 = "PATTERN SEQ(AND(C c, P+ p[]), B b) WHERE [PID] AND p[i].V > p[i-1].V WITHIN 15"


def test_bit_vectors_of_example_13():
    plan = kleene.compile(P1, plan="match_window")
    shape = plan.shape
    assert [shape.text(plan.vector(e)) for e in CHEMO[:3]] == ["100", "001", "010"]
    state = plan.new_state()
    summary = state.summary
    assert shape.text(summary.zero) == "111"
    for event in CHEMO[:3]:
        plan.step(state, event)
    assert shape.text(summary.zero) == "001"
    assert [shape.text(mask) for mask in summary.before] == ["000", "000", "110"]
    assert plan.vector(CHEMO[5]) is None  # e6, a D event, is filtered out (Example 8)


def test_summary_statistics_of_figure_5():
    """Patient 1's window, event by event, with conditions (4)-(7) as the figure marks them.
    The figure's last column is the window <e2, e3, e9, e11> after e1 left: e2 (a B) can
    begin no match (condition 5), so its window goes with e1's, and the statistics the
    figure shows are those of <e3, e9, e11>, whose first event passes (5)."""
    plan = kleene.compile(P1, plan="match_window")
    state = plan.new_state()
    rows = []

    def conditions():
        window = state.window
        four = len(window) >= plan.shape.least
        five = bool(window and window[0][1] & plan.shape.first)
        six_seven = state.summary.zero == 0
        return "".join("T" if c else "F" for c in (four, five, six_seven))

    patient_1 = [e for e in CHEMO if e.attrs["PID"] == 1]
    for event in patient_1[:5]:  # e1 e2 e3 e9 e11
        plan.step(state, event)
        rows.append((repr(state.summary), conditions()))
    found = plan.advance(state, kleene.Watermark(18))  # all of 3 Jul + 15 days is in
    rows.append((repr(state.summary), conditions()))
    assert rows == [
        ("⟨(c, 1), (p, 0), (b, 0)⟩", "FTF"),
        ("⟨(c, 1), (p, 0), (b, 0)⟩", "FTF"),
        ("⟨(c, 1), (p, 1), (b, 0)⟩", "TTF"),
        ("⟨(c, 1), (p, 2), (b, 0)⟩", "TTF"),
        ("⟨(c, 1), (p, 2), (b, 1)⟩", "TTT"),
        ("⟨(c, 0), (p, 2), (b, 0)⟩", "TTF"),
    ]
    assert [event.id for event, _, _ in state.window] == ["e3", "e9", "e11"]
    assert {tuple(sorted(m.ids().items())) for m in found} == {
        (("b", ("e11",)), ("c", ("e1",)), ("p", ("e3",))),
        (("b", ("e11",)), ("c", ("e1",)), ("p", ("e3", "e9"))),
        (("b", ("e11",)), ("c", ("e1",)), ("p", ("e9",))),
    }
    assert state.counters["calls"] == 1


@pytest.mark.parametrize("pruning", PRUNINGS)
def test_chemo_counts_per_pruning(pruning):
    """Filtering drops e6 (the engine passes over it before: no variable takes a D);
    partitioning splits by patient; the conditions leave A a call only for windows starting
    at a C or P event that some B follows."""
    engine = kleene.Engine(P1, "match_window", inner="nfa", pruning=pruning)
    found = engine.send_many(CHEMO) + engine.close()
    assert ids(found) == ids(kleene.match(P1, CHEMO, plan="reference"))
    counters = engine.metrics.plan
    assert counters["filtered"] == 0
    assert counters["windows"] == 13
    plan = engine.plan
    state = plan.new_state()
    plan.step(state, CHEMO[5])  # e6, given to the plan itself
    assert state.counters["filtered"] == (1 if "f" in pruning else 0)
    if "c" in pruning and "p" in pruning:
        assert counters["calls"] == 3  # e1 (patient 1), e5 and e7 (patient 2)


@given(
    cases(strategies=SKIPPING, max_events=9),
    st.sampled_from(["earliest", "maximal", "earliest_maximal"]),
    st.sampled_from(PRUNINGS),
)
def test_match_window_keeps_the_inner_plans_selection(case, selection, pruning):
    alone = ids(kleene.match(case.pattern, case.events, plan="nfa", selection=selection))
    try:
        engine = kleene.Engine(
            case.pattern, "match_window", inner="nfa", pruning=pruning, selection=selection
        )
    except PlanError:
        assume(False)
    assert ids(engine.send_many(case.events) + engine.close()) == alone


def test_keyed_windows_keep_their_key_when_the_stream_is_not_split():
    """Partitioning pruning drops the key's equalities from the inner plan; a state that sees
    every key (Engine(partition=False)) must still not match across keys (found by the
    conformance suite under the thorough profile)."""
    query = "PATTERN SEQ(_ v1, _+ v2[]) WHERE skip_till_next_match { [k] } WITHIN 1"
    stream = [{"type": "A", "ts": 0, "k": 0}, {"type": "A", "ts": 0, "k": 1}]
    engine = kleene.Engine(query, "match_window", partition=False)
    assert engine.send_many(stream) + engine.close() == []
