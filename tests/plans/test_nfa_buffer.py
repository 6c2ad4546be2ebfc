"""The shared versioned buffer (SASE+ section 5.1, Figure 4) and the nfa plan's counters."""

import pytest

import kleene
from kleene.events import Event
from kleene.plans.nfa.buffer import Buffer


def matches(buffer, entry, version):
    return sorted(
        [p for ps in h.positions.values() for p in ps] for h in buffer.histories(entry, version)
    )


def test_versions_keep_two_runs_apart_in_shared_stacks():
    """R1 selects e1, e2, e4 and then e6; R2 selects e3, e4 and then e6. Both share the
    entries of e4 (stack a[i]) and e6 (stack b); following every pointer from e6 would also
    give the mixes e1 e2 e4 e6 under R2 and e3 e4 e6 under R1."""
    buffer = Buffer()
    e1 = buffer.add("a[1]", "a", 1, "e1", (1,), None)
    e2 = buffer.add("a[i]", "a", 2, "e2", (1,), e1)
    e3 = buffer.add("a[1]", "a", 3, "e3", (2,), None)
    e4 = buffer.add("a[i]", "a", 4, "e4", (1, 0), e2)
    assert buffer.add("a[i]", "a", 4, "e4", (2, 0), e3) is e4
    e6 = buffer.add("b", "b", 6, "e6", (1, 0), e4)
    assert buffer.add("b", "b", 6, "e6", (2, 0, 0), e4) is e6
    assert len(buffer.stacks["a[i]"]) == 2 and len(buffer.stacks["b"]) == 1
    assert matches(buffer, e6, (1, 0)) == [[1, 2, 4, 6]]
    assert matches(buffer, e6, (2, 0, 0)) == [[3, 4, 6]]


def test_the_erroneous_mix_of_figure_4_does_not_appear():
    """The paper's example: a pointer from e6 to e4 labelled 2.0.0 is not compatible with the
    pointer from e4 to e3 labelled 1.0, so e1 e2 e3 e4 e6 is not read for run 2.0.0."""
    buffer = Buffer()
    e1 = buffer.add("a[1]", "a", 1, "e1", (1,), None)
    e2 = buffer.add("a[i]", "a", 2, "e2", (1, 0), e1)
    e3 = buffer.add("a[i]", "a", 3, "e3", (1, 0), e2)
    r2 = buffer.add("a[1]", "a", 3, "e3", (2,), None)
    e4 = buffer.add("a[i]", "a", 4, "e4", (1, 0), e3)
    buffer.add("a[i]", "a", 4, "e4", (2, 0), r2)
    e6 = buffer.add("b", "b", 6, "e6", (2, 0, 0), e4)
    found = matches(buffer, e6, (2, 0, 0))
    assert [1, 2, 3, 4, 6] not in found
    assert found == [[3, 4, 6]]
    assert matches(buffer, e4, (1, 0)) == [[1, 2, 3, 4]]


def test_a_join_reads_one_match_per_merged_run():
    buffer = Buffer()
    x = buffer.add("a[1]", "a", 1, Event("A", 1.0), (1,), None)
    y = buffer.add("a[1]", "a", 2, Event("A", 2.0), (2,), None)
    join = buffer.join((3,), [(x, (1,), 1.0, None), (y, (2,), 2.0, None)])
    z = buffer.add("a[i]", "a", 3, Event("A", 3.0), (3,), join)
    assert matches(buffer, z, (3,)) == [[1, 3], [2, 3]]
    assert [h.positions for h in buffer.histories(z, (3,), since=1.5)] == [{"a": (2, 3)}]
    assert len(join.pointers) == 1, "the expired history is gone for good"
    buffer.prune(2)
    assert [e.position for e in buffer.stacks["a[1]"]] == [2]


QUERY = """PATTERN SEQ(Stock+ a[], Stock b)
WHERE skip_till_next_match { [symbol] AND a[i].price >= a[i-1].price AND b.volume < 150 }
WITHIN 20"""


def stock(prices_volumes):
    return [
        {"type": "Stock", "ts": t, "symbol": "X", "price": p, "volume": v}
        for t, (p, v) in enumerate(prices_volumes)
    ]


def test_equivalent_runs_merge_and_still_give_every_match():
    # equal prices: the runs begun at 0 and at 1 reach the same state with the same last price
    events = stock([(5, 900), (5, 900), (6, 900), (7, 100), (8, 100)])
    merged = kleene.Engine(QUERY, plan="nfa")
    found = merged.send_many(events) + merged.close()
    basic = kleene.Engine(QUERY, plan="nfa", merge=False)
    assert sorted(m.key for m in found) == sorted(
        m.key for m in basic.send_many(events) + basic.close()
    )
    assert sorted(m.key for m in found) == sorted(
        m.key for m in kleene.match(QUERY, events, plan="reference")
    )
    counts = merged.metrics.as_dict()
    assert counts["runs_merged"] > 0 and basic.metrics.as_dict()["runs_merged"] == 0
    assert counts["peak_runs"] < basic.metrics.as_dict()["peak_runs"]
    assert counts["peak_runs"] <= counts["run_steps"] < basic.metrics.as_dict()["run_steps"]
    assert counts["runs_created"] > 0 and counts["edge_evaluations"] > 0
    assert counts["buffer_writes"] > 0 and counts["completions"] == len(found)


def test_construct_false_matches_without_building():
    """SASE+ Expt 6 times matching alone: the runs still reach the final state as often, but
    no match is read from the buffer."""
    events = stock([(5, 900), (5, 900), (6, 900), (7, 100), (8, 100), (9, 100)])
    full = kleene.Engine(QUERY, plan="nfa")
    found = full.send_many(events) + full.close()
    bare = kleene.Engine(QUERY, plan="nfa", construct=False)
    assert bare.send_many(events) + bare.close() == []
    counts, bare_counts = full.metrics.as_dict(), bare.metrics.as_dict()
    assert found and bare_counts["completions"] == 0
    assert bare_counts["final_takes"] == counts["final_takes"] > 0
    assert bare_counts["edge_evaluations"] == counts["edge_evaluations"]


def test_construct_false_is_refused_where_it_cannot_hold():
    for plan, options in [
        ("reference", {}),
        ("nfa_backtrack", {}),
        ("nfa", {"output": "non_overlapping"}),
    ]:
        with pytest.raises(kleene.PlanError, match="construct=False"):
            kleene.Engine(QUERY, plan=plan, construct=False, **options)
