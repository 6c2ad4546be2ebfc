"""The petri plan under the plan contract beyond what the conformance suite checks on every
plan (tests/plans/test_conformance.py: outputs, pickled markings, deadlines, idle and
finished partitions): PARTITION BY runs the rule once per key through the engine, the
paper's Figure 2 resumes mid-stream, and the refusals name the language a plan runs."""

import math
from typing import Any

import pytest
from hypothesis import given

import kleene
from kleene.events import Event, Watermark
from kleene.testing.strategies import RULES, streams
from tests.lead.test_rules import FIGURE_2, game_stream


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
def test_the_engine_runs_one_marking_per_partition(rule: str, stream: tuple[Event, ...]) -> None:
    plan = kleene.compile(rule)
    emitted = kleene.lead.run(rule, stream)
    expected = _run(plan, list(stream), reload=False)
    assert sorted(((e.type, e.ts, dict(e.attrs)) for e in emitted), key=repr) == sorted(
        ((t, ts, a) for _, t, ts, a in expected), key=repr
    )


def test_figure_2_markings_resume_mid_stream() -> None:
    plan = kleene.compile(FIGURE_2)
    stream = [kleene.events.as_event(row, default_id=i) for i, row in enumerate(game_stream())]
    assert _run(plan, stream, reload=True) == _run(plan, stream, reload=False)
    assert len(_run(plan, stream, reload=False)) == 5


def test_partition_false_is_refused_for_a_partitioned_rule() -> None:
    with pytest.raises(kleene.KleeneError, match="partitions are part of its meaning"):
        kleene.Engine(FIGURE_2, partition=False)


def test_a_sase_pattern_is_refused_by_the_petri_plan_and_a_rule_by_the_others() -> None:
    with pytest.raises(kleene.PlanError, match="it runs LEAD rules; SASE"):
        kleene.compile("PATTERN SEQ(A a, B b)", plan="petri")
    with pytest.raises(kleene.PlanError, match="LEAD rules run on plan 'petri'"):
        kleene.compile("FROM A AS a MATCH a EMIT Event X()", plan="nfa")


def test_state_of_another_rule_is_refused() -> None:
    one, two = kleene.compile(RULES[0]), kleene.compile(RULES[1])
    with pytest.raises(kleene.errors.StateError):
        two.load_state(one.dump_state(one.new_state()))


def test_a_finished_partition_keeps_only_its_key() -> None:
    """Without a frame the rule runs once per partition: once its run has ended, the
    engine keeps the key and drops the marking, and the key's later events change nothing."""
    rule = (
        "FROM A AS a, B AS b MATCH a Followed By not b Within 10 s PARTITION BY a.k "
        "EMIT Event U(a.k)"
    )
    engine = kleene.Engine(rule)
    for i in range(3):
        engine.send({"type": "A", "ts": i, "k": i})
    assert engine.partitions == 3
    assert engine.send({"type": "A", "ts": 20, "k": 3}) == [
        kleene.Event("U", i + 10, {"k": i}) for i in range(3)
    ]
    assert (engine.partitions, engine.finished) == (1, 3)
    assert engine.send({"type": "A", "ts": 21, "k": 0}) == []  # k = 0 ran once already
    assert [e.attrs for e in engine.close()] == [{"k": 3}]


def test_each_partition_value_is_its_own_partition_a_missing_one_too() -> None:
    """PARTITION BY groups as Spark's groupBy does: (1, missing) is a partition of its own,
    not merged with other events lacking an attribute."""
    engine = kleene.Engine("FROM A AS a MATCH a PARTITION BY a.k, a.j EMIT Event X(a.k, a.j)")
    found = [
        engine.send({"type": "A", "ts": t, **attrs})
        for t, attrs in enumerate([{"k": 1}, {"k": 1}, {"j": 1}, {"k": 1, "j": 2}])
    ]
    assert [len(each) for each in found] == [1, 0, 1, 1]
    assert engine.finished == 3


def test_a_partition_value_that_cannot_be_a_key_names_its_attribute() -> None:
    engine = kleene.Engine("FROM A AS a MATCH a PARTITION BY a.k EMIT Event X(a.k)")
    engine.send({"type": "A", "ts": 0, "k": "fine"})
    with pytest.raises(kleene.EventError, match="'k' holds list") as caught:
        engine.send({"type": "A", "ts": 1, "k": [1, 2]})
    assert (caught.value.field, caught.value.row) == ("k", 2)
