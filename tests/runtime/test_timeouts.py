"""Timed-out partial matches (`timeouts=True`): which, when, and how they travel."""

import pickle

import pytest

import kleene
from kleene.testing import events

ORDERS = events("""
    type    ts  id  order
    Order   0   o1  1
    Order   5   o2  2
    Payment 8   p2  2
    Order   12  o3  3
""")
PAID = "PATTERN SEQ(Order o, Payment p) WHERE relaxed_contiguity { [order] } WITHIN 10"


def test_a_partial_match_times_out_when_time_passes_its_deadline():
    engine = kleene.Engine(PAID, timeouts=True)
    assert engine.send(ORDERS[0]) == engine.send(ORDERS[1]) == []
    assert engine.send(ORDERS[2]) == [kleene.Match({"o": (ORDERS[1],), "p": (ORDERS[2],)})]
    (late,) = engine.send(ORDERS[3])  # past o1's deadline, 0 + 10
    assert isinstance(late, kleene.Timeout)
    assert (late.ids(), late.deadline, late.start_ts) == ({"o": ("o1",)}, 10, 0)
    assert engine.advance_to(21) == []
    assert engine.advance_to(22) == [kleene.Timeout({"o": (ORDERS[3],)}, deadline=22)]
    assert engine.close() == []
    assert (engine.metrics.matches, engine.metrics.timeouts) == (1, 2)


def test_the_end_of_the_stream_times_out_what_is_left():
    found = kleene.match(PAID, ORDERS, timeouts=True)
    assert [(type(m).__name__, m.ids()["o"]) for m in found] == [
        ("Timeout", ("o1",)),
        ("Match", ("o2",)),
        ("Timeout", ("o3",)),
    ]
    assert kleene.match(PAID, ORDERS) == [found[1]]


def test_which_partial_matches_time_out_depends_on_the_strategy():
    """Under skip till any match a run may skip what it could take, so a prefix of a match
    times out beside it; under skip till next match it must take it."""
    stream = events("""
        type ts id
        A    0  a1
        B    1  b1
    """)
    query = "PATTERN SEQ(A a, B b, C c) WHERE {} WITHIN 5"
    outcomes = {}
    for strategy in ("skip_till_next_match", "skip_till_any_match"):
        found = kleene.match(query.format(strategy), stream, timeouts=True)
        outcomes[strategy] = sorted(tuple(sorted(m.ids().items())) for m in found)
    assert outcomes["skip_till_next_match"] == [(("a", ("a1",)), ("b", ("b1",)))]
    assert outcomes["skip_till_any_match"] == [
        (("a", ("a1",)),),  # the run that skipped b1
        (("a", ("a1",)), ("b", ("b1",))),
    ]


def test_a_run_that_completed_its_match_does_not_time_out():
    stream = events("""
        type ts id
        A    0  a1
        B    1  b1
        B    2  b2
    """)
    query = "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match WITHIN 5"
    found = kleene.match(query, stream, timeouts=True)
    assert not any(isinstance(m, kleene.Timeout) for m in found)
    assert len(found) == 2


def test_timeouts_need_a_time_window_and_a_plan_that_reports_them():
    with pytest.raises(kleene.PlanError, match="no WITHIN time"):
        kleene.compile("PATTERN SEQ(A a, B b) WITHIN 5 EVENTS", timeouts=True)
    with pytest.raises(kleene.PlanError, match="does not run timed-out partial matches"):
        kleene.compile("PATTERN SEQ(A a, B b) WITHIN 5", "lazy_chain", timeouts=True)
    assert kleene.compile("PATTERN SEQ(A a, B b) WITHIN 5", timeouts=True).name == "nfa"
    rule = "FROM A AS a MATCH a EMIT Event X(a.x)"
    with pytest.raises(kleene.PlanError, match="a LEAD rule says what to emit"):
        kleene.compile(rule, timeouts=True)


def test_a_timeout_is_a_value():
    late = kleene.Timeout({"o": (ORDERS[0],)}, "paid", deadline=10)
    assert late == pickle.loads(pickle.dumps(late))
    assert late.deadline == pickle.loads(pickle.dumps(late)).deadline
    returning = kleene.Timeout({"o": (ORDERS[0],)}, "paid", deadline=10).returning({"n": 1})
    assert pickle.loads(pickle.dumps(returning)).values == {"n": 1}
    with pytest.raises(AttributeError):
        late.deadline = 11  # type: ignore[misc]
    assert late != kleene.Match({"o": (ORDERS[0],)}, "paid")
    assert len({late, kleene.Match({"o": (ORDERS[0],)}, "paid")}) == 2
    assert late.to_dict()["kind"] == "timeout"
    assert repr(late) == "Timeout(o=['o1'], deadline=10)"
    assert kleene.to_pandas([late])["kind"].tolist() == ["timeout"]
