"""The paper's examples (Chandramouli, Goldstein & Maier, VLDB 2010), written as AFAs in the
text form and with the Python builder, as golden cases."""

import itertools

import pytest

import kleene
from kleene.matches import Retraction, net

# Figure 3: a large price drop, then k V-patterns (Q1, k = 2). r1 counts downticks minus
# upticks in the current V, r2 the V-patterns done.
VPATTERN = """
AFA q1 WITHIN 7
REGISTER (r1 = 0, r2 = 0)
FINAL q3
ARC a0: q0 -> q1 WHEN e.change < -1
ARC a1: q1 -> q1 WHEN e.change < 0 SET r1 = r.r1 + 1
ARC a2: q1 -> q2 WHEN e.change < 0 SET r1 = r.r1 + 1
ARC a3: q2 -> q2 WHEN e.change > 0 AND r.r1 > 1 SET r1 = r.r1 - 1
ARC a4: q2 -> q1 WHEN e.change > 0 AND r.r1 = 1 AND r.r2 < 1 SET r1 = 0, r2 = r.r2 + 1
ARC a5: q2 -> q3 WHEN e.change > 0 AND r.r1 = 1 AND r.r2 = 1 SET r1 = 0, r2 = r.r2 + 1
"""

# Figure 2: e1 ... e8 in arrival order; e8 is out of order, its timestamp is 6. e1 is the
# large drop; then down, down, up, up, (e8) down, up.
FIGURE_2 = [
    ("e1", 1, -2.0),
    ("e2", 2, -0.5),
    ("e3", 3, -0.5),
    ("e4", 4, 0.5),
    ("e5", 5, 0.5),
    ("e6", 7, 0.5),
    ("e7", 8, 0.5),
    ("e8", 6, -0.5),
]


def ticks(rows):
    return [{"type": "tick", "ts": ts, "id": name, "change": c} for name, ts, c in rows]


def test_example_3_the_v_pattern_accepts_e1_to_e5_e8_e6_with_register_0_2():
    engine = kleene.Engine(kleene.afa.read_afa(VPATTERN))
    before = engine.send_many(ticks(FIGURE_2[:7]))
    assert before == []  # without e8, e6 is an uptick after a finished V: nothing matches
    (found,) = engine.send(ticks(FIGURE_2[7:])[0])  # Example 5: e8 arrives, the match appears
    assert [e.id for e in found.bindings["events"]] == ["e1", "e2", "e3", "e4", "e5", "e8", "e6"]
    assert found.register == {"r1": 0, "r2": 2}
    # Example 5: e8 is inserted out of order and its pmatch is propagated to e6's entry
    assert engine.metrics.plan["out_of_order"] == 1
    assert (found.start_ts, found.end_ts) == (1, 7)


@pytest.mark.parametrize("order", list(itertools.permutations(range(8)))[::997])
def test_the_v_pattern_in_any_arrival_order(order):
    events = ticks([FIGURE_2[p] for p in order])
    found = kleene.match(kleene.afa.read_afa(VPATTERN), events)
    assert [[e.id for e in m.bindings["events"]] for m in found] == [
        ["e1", "e2", "e3", "e4", "e5", "e8", "e6"]
    ]


def test_the_v_pattern_outside_the_window():
    """Lifetimes: with W = 5 the match's events span 1 .. 7, more than W."""
    narrow = VPATTERN.replace("WITHIN 7", "WITHIN 5")
    assert kleene.match(kleene.afa.read_afa(narrow), ticks(FIGURE_2)) == []


# Figure 14: head and shoulders. r1 = p1 (the start), r2 = p2 (the left shoulder), r3 = p4
# (the head); `last` is the previous price, to tell a rise from a decline.
HEAD_AND_SHOULDERS = """
AFA head_and_shoulders
REGISTER (p1 = null, p2 = null, p4 = null, last = null)
FINAL done
ARC start: q0 -> rise1 SET p1 = e.price, last = e.price
ARC up1: rise1 -> rise1 WHEN e.price > r.last SET last = e.price
ARC top1: rise1 -> fall1 WHEN e.price < r.last AND r.last > r.p1 SET p2 = r.last, last = e.price
ARC down1: fall1 -> fall1 WHEN e.price < r.last SET last = e.price
ARC low1: fall1 -> rise2 WHEN e.price > r.last AND r.last > r.p1 SET last = e.price
ARC up2: rise2 -> rise2 WHEN e.price > r.last SET last = e.price
ARC head: rise2 -> fall2 WHEN e.price < r.last AND r.last > r.p2 SET p4 = r.last, last = e.price
ARC down2: fall2 -> fall2 WHEN e.price < r.last SET last = e.price
ARC low2: fall2 -> rise3 WHEN e.price > r.last AND r.last > r.p1 SET last = e.price
ARC up3: rise3 -> rise3 WHEN e.price > r.last SET last = e.price
ARC top3: rise3 -> fall3 WHEN e.price < r.last AND r.last < r.p4 AND e.price >= r.p1
    SET last = e.price
ARC down3: fall3 -> fall3 WHEN e.price < r.last AND e.price >= r.p1 SET last = e.price
ARC below: fall3 -> done WHEN e.price < r.p1
"""
#          p1      p2      p3      p4      p5      p6      below p1
PRICES = [10, 12, 15, 13, 12, 14, 18, 16, 13, 14, 16, 12, 9]


def test_head_and_shoulders():
    events = [{"type": "tick", "ts": t, "id": t, "price": p} for t, p in enumerate(PRICES)]
    found = kleene.match(kleene.afa.read_afa(HEAD_AND_SHOULDERS), events)
    assert [m.ids()["events"] for m in found] == [tuple(range(13))]
    assert found[0].register == {"p1": 10, "p2": 15, "p4": 18, "last": 12}
    # a right shoulder as high as the head is no head and shoulders
    flat = [*PRICES[:10], 18, 12, 9]
    events = [{"type": "tick", "ts": t, "id": t, "price": p} for t, p in enumerate(flat)]
    assert kleene.match(kleene.afa.read_afa(HEAD_AND_SHOULDERS), events) == []


def uncertain(threshold=0.1):
    """Section 4: each event is present with probability `prob`; the register tracks the
    probability that the pattern (an A, then a B) occurred; a self-loop models the absence of
    an event in between, and matching stops below the threshold."""
    return (
        kleene.afa.Builder("uncertain", register={"prob": 1.0})
        .arc(
            "q0", "q1", fence=lambda e, r: e.type == "A", transfer=lambda e, r: {"prob": e["prob"]}
        )
        .arc(
            "q1",
            "q1",
            fence=lambda e, r: r["prob"] * (1 - e["prob"]) >= threshold,
            transfer=lambda e, r: {"prob": r["prob"] * (1 - e["prob"])},
            bind=None,
        )
        .arc(
            "q1",
            "q2",
            fence=lambda e, r: e.type == "B" and r["prob"] * e["prob"] >= threshold,
            transfer=lambda e, r: {"prob": r["prob"] * e["prob"]},
        )
        .final("q2")
        .build()
    )


def test_uncertain_streams_carry_the_probability_in_the_register():
    events = [
        {"type": "A", "ts": 1, "id": "a", "prob": 0.9},
        {"type": "B", "ts": 2, "id": "b1", "prob": 0.5},
        {"type": "B", "ts": 3, "id": "b2", "prob": 0.8},
        {"type": "B", "ts": 4, "id": "b3", "prob": 0.9},
    ]

    def found(threshold):
        matches = kleene.match(uncertain(threshold), events)
        return {m.ids()["events"]: m.register["prob"] for m in matches}

    # b3 needs two absences first: 0.9 * 0.5 * 0.2 * 0.9 = 0.081
    assert found(0.05) == pytest.approx(
        {("a", "b1"): 0.9 * 0.5, ("a", "b2"): 0.9 * 0.5 * 0.8, ("a", "b3"): 0.9 * 0.5 * 0.2 * 0.9}
    )
    # below the threshold matching stops: after two absences (0.09) nothing goes on
    assert found(0.1) == pytest.approx({("a", "b1"): 0.45, ("a", "b2"): 0.36})


# Figure 18: a trade of A, then no trade of B within 300 s. The register holds the
# timeout; the end-of-window arc fires once time has passed it with no B.
NO_B_AFTER_A = """
AFA quiet_competitor
REGISTER (until = null)
FINAL q2
ARC a0: q0 -> q1 WHEN e.type = 'A' SET until = e.ts + 300
ARC a1: q1 -> q1 WHEN e.type != 'B' AND e.ts <= r.until BIND NONE
TIMEOUT a2: q1 -> q2 AFTER r.until
"""


def test_a_negative_pattern_at_the_end():
    trades = [
        {"type": "A", "ts": 0, "id": "a1"},
        {"type": "C", "ts": 100, "id": "c1"},
        {"type": "A", "ts": 200, "id": "a2"},
        {"type": "B", "ts": 400, "id": "b1"},  # 200 s after a2: spoils a2 only
        {"type": "A", "ts": 700, "id": "a3"},
    ]
    engine = kleene.Engine(kleene.afa.read_afa(NO_B_AFTER_A))
    assert engine.send_many(trades) == []  # nothing is decided before time passes
    assert [m.ids() for m in engine.advance_to(300)] == [{"events": ("a1",)}]
    assert engine.advance_to(999) == []  # a3's window ends at 1000
    assert [m.ids() for m in engine.close()] == [{"events": ("a3",)}]


def test_the_negative_pattern_written_in_sase_runs_on_the_afa_alike():
    """The same pattern as a query, `SEQ(A a, NOT(B b)) WITHIN 300`: its trailing negation
    waits, as the timeout arc does, for time to pass the window; a late B inside a middle
    negation's scope withdraws a match reported before it."""
    trades = [
        {"type": "A", "ts": 0, "id": "a1"},
        {"type": "C", "ts": 100, "id": "c1"},
        {"type": "A", "ts": 200, "id": "a2"},
        {"type": "B", "ts": 400, "id": "b1"},
        {"type": "A", "ts": 700, "id": "a3"},
    ]
    engine = kleene.Engine("PATTERN SEQ(A a, NOT(B b)) WITHIN 300", "afa")
    assert engine.send_many(trades) == []
    assert [m.ids() for m in engine.advance_to(300)] == [{"a": ("a1",)}]
    assert engine.advance_to(999) == []
    assert [m.ids() for m in engine.close()] == [{"a": ("a3",)}]
    middle = kleene.Engine("PATTERN SEQ(A a, NOT(B b), C c) WITHIN 300", "afa")
    assert [m.ids() for m in middle.send_many(trades[:2])] == [{"a": ("a1",), "c": ("c1",)}]
    (withdrawn,) = middle.send({"type": "B", "ts": 50, "id": "late"})
    assert isinstance(withdrawn, Retraction)


def test_a_late_b_withdraws_nothing_after_the_punctuation_but_is_refused():
    engine = kleene.Engine(kleene.afa.read_afa(NO_B_AFTER_A))
    engine.send({"type": "A", "ts": 0, "id": "a1"})
    assert len(engine.advance_to(300)) == 1
    with pytest.raises(kleene.EventError, match="advance_to"):
        engine.send({"type": "B", "ts": 250, "id": "late"})


def test_an_out_of_order_event_withdraws_a_speculative_match():
    """Figure 2's e8, the other way round: a strictly contiguous pattern matched across a
    gap is withdrawn when an event arrives inside the gap."""
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WHERE strict_contiguity WITHIN 10", "afa")
    assert len(engine.send_many([{"type": "A", "ts": 1}, {"type": "B", "ts": 3}])) == 1
    (withdrawn,) = engine.send({"type": "C", "ts": 2})
    assert isinstance(withdrawn, Retraction)
    assert net([*engine.send({"type": "B", "ts": 2.5})]) == []
