"""Exact mode: with `max_delay`, a stream whose disorder is bounded gives the sorted stream's
matches on every plan; late events are counted, raised or collected, never lost silently."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.errors import EventError, KleeneError, PlanError
from kleene.matches import net
from kleene.plans import PLANS
from kleene.testing.strategies import cases


@st.composite
def disordered(draw):
    """A case, a bound d and the case's stream permuted with disorder at most d: each event
    comes at most d time units behind the latest timestamp before it."""
    case = draw(cases())
    d = draw(st.integers(0, 3))
    jitter = [draw(st.integers(0, d)) for _ in case.events]
    order = sorted(range(len(case.events)), key=lambda p: case.events[p].t + jitter[p])
    return case, d, [case.events[p] for p in order]


def keys(matches):
    return [(m.ids(), m.start_ts, m.end_ts) for m in matches]


@pytest.mark.parametrize("name", sorted(PLANS))
@given(drawn=disordered())
def test_bounded_disorder_gives_the_sorted_streams_matches(name, drawn):
    case, d, permuted = drawn
    in_order = sorted(permuted, key=lambda e: e.t)  # stable: equal timestamps keep arrival
    try:
        expected = kleene.match(case.pattern, in_order, name)
    except PlanError:
        return  # the plan does not run this pattern
    engine = kleene.Engine(case.pattern, name, max_delay=d, on_late="raise")
    found = engine.send_many(permuted) + engine.close()
    assert keys(net(found)) == keys(expected)  # afa may withdraw what it speculated
    assert engine.metrics.late == 0


STREAM = [("A", 1, "a1"), ("B", 4, "b1"), ("A", 2, "a2"), ("B", 9, "b2"), ("A", 3, "a3")]


def events(rows):
    return [{"type": t, "ts": ts, "id": i} for t, ts, i in rows]


def test_a_late_event_is_counted_and_dropped_by_default():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)", max_delay=3)
    found = engine.send_many(events(STREAM)) + engine.close()
    # a3 (ts 3) comes after b2 (ts 9): the watermark is 6, so a3 is late
    assert sorted(m.ids()["a"][0] + m.ids()["b"][0] for m in found) == [
        "a1b1",
        "a1b2",
        "a2b1",
        "a2b2",
    ]
    assert engine.metrics.late == 1
    assert engine.metrics.events == 5
    assert engine.late == []


def test_late_events_can_be_collected_or_raised():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)", max_delay=3, on_late="collect")
    engine.send_many(events(STREAM))
    assert [e.id for e in engine.late] == ["a3"]
    engine = kleene.Engine("PATTERN SEQ(A a, B b)", max_delay=3, on_late="raise")
    behind = r"event 'a3' has ts 3, more than max_delay=3 behind"
    with pytest.raises(EventError, match=behind) as raised:
        engine.send_many(events(STREAM))
    assert raised.value.late
    with pytest.raises(EventError, match="on_late is one of count, raise, collect"):
        kleene.Engine("PATTERN SEQ(A a, B b)", max_delay=3, on_late="drop")


def test_events_wait_until_the_watermark_passes_them():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)", max_delay=5)
    assert engine.send({"type": "A", "ts": 1}) == []
    assert engine.send({"type": "B", "ts": 2}) == []  # held: the watermark is 2 - 5
    assert [m.ids() for m in engine.send({"type": "C", "ts": 8})] == [{"a": (0,), "b": (1,)}]


def test_advance_to_and_close_release_what_is_held():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)", max_delay=100)
    engine.send_many([{"type": "A", "ts": 1}, {"type": "B", "ts": 3}, {"type": "B", "ts": 7}])
    assert [m.ids()["b"] for m in engine.advance_to(5)] == [(1,)]
    assert engine.send({"type": "A", "ts": 4}) == []  # behind advance_to(5): late
    assert engine.metrics.late == 1
    assert [m.ids()["b"] for m in engine.close()] == [(2,)]


def test_a_trailing_negation_is_decided_once_the_watermark_passes_its_window():
    query = "PATTERN SEQ(A a, NOT(C c)) WITHIN 5"
    engine = kleene.Engine(query, max_delay=2)
    assert engine.send_many([{"type": "A", "ts": 1}, {"type": "C", "ts": 3}]) == []
    engine = kleene.Engine(query, max_delay=2)
    engine.send_many([{"type": "A", "ts": 1}, {"type": "B", "ts": 7}])
    assert [m.ids() for m in engine.send({"type": "B", "ts": 9})] == [{"a": (0,)}]


def test_max_delay_as_a_timedelta_and_with_datetimes():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    stream = [
        {"type": "A", "ts": t0 + timedelta(minutes=2)},
        {"type": "A", "ts": t0},
        {"type": "B", "ts": t0 + timedelta(minutes=3)},
    ]
    found = kleene.match("PATTERN SEQ(A a, B b)", stream, max_delay=timedelta(minutes=2))
    assert sorted(m.ids()["a"] for m in found) == [(0,), (1,)]
    engine = kleene.Engine("PATTERN SEQ(A a, B b)", time_unit="ms", max_delay=timedelta(seconds=2))
    engine.send_many([{"type": "A", "ts": 5000}, {"type": "A", "ts": 3500}])
    assert engine.metrics.late == 0


@pytest.mark.parametrize("bad", [-1, "5", True, float("nan")])
def test_a_bad_max_delay_is_refused(bad):
    with pytest.raises(KleeneError, match="max_delay"):
        kleene.Engine("PATTERN SEQ(A a)", max_delay=bad)
