"""The plan contract on the petri plan: markings pickle and resume, deadlines move on,
PARTITION BY runs the rule once per key (the engine's partitions are the rule's)."""

import math
from typing import Any

import pytest
from hypothesis import given

import kleene
from kleene.events import Event, Watermark
from kleene.testing.strategies import streams
from tests.lead.test_rules import FIGURE_2, game_stream

RULES = [
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
]


def _run(plan: kleene.Plan, events: list[Event], *, reload: bool) -> list[tuple[Any, ...]]:
    """One marking per key, saved and loaded after every event when `reload`."""
    key = plan.partition_key
    states: dict[Any, Any] = {}
    out: list[tuple[Any, ...]] = []
    for event in events:
        k = None if key is None else key(event)
        for other_key, state in states.items():  # time moves for every key
            out += [
                (other_key, e.type, e.ts, dict(e.attrs))
                for e in plan.advance(state, Watermark(event.t, inclusive=False))
            ]
        state = states.setdefault(k, plan.new_state())
        out += [(k, e.type, e.ts, dict(e.attrs)) for e in plan.step(state, event)]
        if reload:
            states = {k2: plan.load_state(plan.dump_state(s)) for k2, s in states.items()}
    for k, state in states.items():
        out += [(k, e.type, e.ts, dict(e.attrs)) for e in plan.advance(state, Watermark(math.inf))]
    return sorted(out, key=repr)


@pytest.mark.parametrize("rule", RULES)
@given(stream=streams(max_size=10))
def test_markings_pickle_and_resume(rule: str, stream: tuple[Event, ...]) -> None:
    plan = kleene.compile(rule)
    events = list(stream)
    assert _run(plan, events, reload=True) == _run(plan, events, reload=False)


@pytest.mark.parametrize("rule", RULES)
@given(stream=streams(max_size=10))
def test_the_engine_runs_one_marking_per_partition(rule: str, stream: tuple[Event, ...]) -> None:
    plan = kleene.compile(rule)
    emitted = kleene.lead.run(rule, stream)
    expected = _run(plan, list(stream), reload=False)
    assert sorted(((e.type, e.ts, dict(e.attrs)) for e in emitted), key=repr) == sorted(
        ((t, ts, a) for _, t, ts, a in expected), key=repr
    )


@pytest.mark.parametrize("rule", RULES)
@given(stream=streams(max_size=10))
def test_deadlines_move_on(rule: str, stream: tuple[Event, ...]) -> None:
    plan = kleene.compile(rule)
    state = plan.new_state()
    for event in stream:
        plan.step(state, event)
        deadline = plan.deadline(state)
        if deadline is not None:
            plan.advance(state, Watermark(deadline))
            later = plan.deadline(state)
            assert later is None or later > deadline


def test_figure_2_markings_resume_mid_stream() -> None:
    plan = kleene.compile(FIGURE_2)
    stream = [kleene.events.as_event(row, default_id=i) for i, row in enumerate(game_stream())]
    assert _run(plan, stream, reload=True) == _run(plan, stream, reload=False)
    assert len(_run(plan, stream, reload=False)) == 5


def test_partition_false_is_refused_for_a_partitioned_rule() -> None:
    with pytest.raises(kleene.KleeneError, match="PARTITION BY is part of its meaning"):
        kleene.Engine(FIGURE_2, partition=False)


def test_a_sase_pattern_is_refused_by_the_petri_plan_and_a_rule_by_the_others() -> None:
    with pytest.raises(kleene.PlanError, match="LEAD rules"):
        kleene.compile("PATTERN SEQ(A a, B b)", plan="petri")
    with pytest.raises(kleene.PlanError, match="runs on plan 'petri'"):
        kleene.compile("FROM A AS a MATCH a EMIT Event X()", plan="nfa")


def test_state_of_another_rule_is_refused() -> None:
    one, two = kleene.compile(RULES[0]), kleene.compile(RULES[1])
    with pytest.raises(kleene.errors.StateError):
        two.load_state(one.dump_state(one.new_state()))
