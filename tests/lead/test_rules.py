"""LEAD rules run on the petri plan: the paper's Figure 2, Table 1 and the policies of
section 3.3.3, and each operator on a hand-made stream."""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import kleene
from kleene.events import Event

FIGURE_2 = (Path(__file__).parent / "figure2.lead").read_text()
DAY = 86400


def game_stream() -> list[dict[str, Any]]:
    """Four users of game 7, one per outcome of Example 1 (times in seconds)."""
    rows: list[tuple[str, int, int]] = []
    # user 1, Success: 5 plays, 2 shares, 2 artifacts bought within 3 days
    rows += [("Installations", 0, 1)] + [("Accesses", 1000 * (i + 1), 1) for i in range(5)]
    rows += [("Shares", 7000, 1), ("Shares", 8000, 1)]
    rows += [("ArtifactsBought", 9000, 1), ("ArtifactsBought", 9500, 1)]
    # user 2, Middle_Success_Leaving: 3 plays, the last on day 2, then 2 silent days
    rows += [("Installations", 10, 2), ("Accesses", 100, 2), ("Accesses", 200, 2)]
    rows += [("Accesses", 2 * DAY, 2)]
    # user 3, Middle_Success: 4 plays and one artifact bought
    rows += [("Installations", 20, 3)] + [("Accesses", 300 + i, 3) for i in range(4)]
    rows += [("ArtifactsBought", 400, 3)]
    # user 4, Failure: one play
    rows += [("Installations", 30, 4), ("Accesses", 500, 4)]
    # user 5: 3 plays, leaving within the 3 days (the last play on day 0): Middle_Success
    rows += [("Installations", 40, 5)] + [("Accesses", 600 + i, 5) for i in range(3)]
    rows.sort(key=lambda r: r[1])
    return [{"type": t, "ts": ts, "uid": uid, "gid": 7} for t, ts, uid in rows]


EXPECTED = [
    ("Success", 3 * DAY, 1),
    ("Middle_Success", 3 * DAY + 20, 3),
    ("Failure", 3 * DAY + 30, 4),
    ("Middle_Success", 3 * DAY + 40, 5),
    ("Middle_Success_Leaving", 4 * DAY, 2),
]


def _uid_of(events: list[Event], stream: list[dict[str, Any]]) -> list[tuple[str, Any, int]]:
    """(action, ts, user): the user is the partition, found from the emission time."""
    installs = {row["ts"]: row["uid"] for row in stream if row["type"] == "Installations"}
    found = []
    for e in events:
        assert e.attrs == {"gid": 7}
        t = e.t
        user = installs.get(t - 3 * DAY) if (t - 3 * DAY) in installs else 2
        found.append((e.type, e.ts, user))
    return found


def test_figure_2_classifies_every_player() -> None:
    stream = game_stream()
    emitted = kleene.lead.run(FIGURE_2, stream)
    assert _uid_of(emitted, stream) == EXPECTED


def test_figure_2_through_the_engine_emits_each_action_when_it_is_decided() -> None:
    engine = kleene.Engine(FIGURE_2)
    stream = game_stream()
    early = engine.send_many(stream)
    assert early == []  # nothing is decided before 3 days
    assert [e.type for e in engine.advance_to(3 * DAY)] == ["Success"]
    assert [e.type for e in engine.advance_to(3 * DAY + 40)] == [
        "Middle_Success",
        "Failure",
        "Middle_Success",
    ]
    assert engine.advance_to(4 * DAY - 1) == []
    assert [e.type for e in engine.advance_to(4 * DAY)] == ["Middle_Success_Leaving"]
    assert engine.close() == []
    assert engine.metrics.matches == 5


def test_figure_2_with_datetimes_emits_datetimes() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    stream = [{**row, "ts": start + timedelta(seconds=row["ts"])} for row in game_stream()]
    emitted = kleene.lead.run(FIGURE_2, stream)
    assert [(e.type, e.ts) for e in emitted] == [
        (kind, start + timedelta(seconds=t)) for kind, t, _ in EXPECTED
    ]


# ---- Table 1 and the policies (section 3.3.3) ----------------------------------------------

#: Figure 1 as Table 1's matches imply: A at 1 (twice, positions 1.1 and 1.2) and 4, B at 0,
#: 2, 3 and 5, C at 4, 5 and 7 (at equal times, in this arrival order).
FIGURE_1 = [
    ("B", 0, "0"),
    ("A", 1, "1.1"),
    ("A", 1, "1.2"),
    ("B", 2, "2"),
    ("B", 3, "3"),
    ("C", 4, "4"),
    ("A", 4, "4"),
    ("B", 5, "5"),
    ("C", 5, "5"),
    ("C", 7, "7"),
]
EVENTS = [{"type": t, "ts": ts, "pos": p} for t, ts, p in FIGURE_1]


def positions(match: str, streams: str = "A AS a, B AS b, C AS c") -> list[tuple[str, ...]]:
    names = [s.split(" AS ")[1] for s in streams.split(", ")]
    args = ", ".join(f"{n}.pos AS {n}" for n in names)
    rule = f"FROM {streams} MATCH {match} EMIT Event M({args})"
    return [tuple(e.attrs.values()) for e in kleene.lead.run(rule, EVENTS)]


def test_table_1_sequence_relation_under_all() -> None:
    """All of M for A → B → C: every A, B, C in that order (the table's first rows are
    (1.1,2,4), (1.1,2,5), (1.1,2,7), (1.1,3,4), (1.1,3,5))."""
    found = positions("all(a Followed By b Followed By c)")
    expected = {
        (a, b, c)
        for a, ta in (("1.1", 1), ("1.2", 1), ("4", 4.5))
        for b, tb in (("2", 2), ("3", 3), ("5", 5))
        for c, tc in (("4", 4), ("5", 5.5), ("7", 7))
        if ta < tb < tc
    }
    assert len(found) == len(set(found)) == 18
    assert set(found) == expected


def test_table_1_conjunction_relation_under_all() -> None:
    """A ∧ B ∧ A: two distinct A events and a B, in any order; the table lists
    (1.1,0,1.2), (1.1,2,1.2), (1.1,3,1.2), (1.1,5,1.2), (1.1,0,4), …"""
    found = positions("all(a and b and a2)", "A AS a, B AS b, A AS a2")
    bags = {(frozenset({a, a2}), b) for a, b, a2 in found}
    pairs = [frozenset(p) for p in (("1.1", "1.2"), ("1.1", "4"), ("1.2", "4"))]
    assert bags == {(p, b) for p in pairs for b in ("0", "2", "3", "5")}
    assert all(a != a2 for a, _, a2 in found)


def test_first_is_the_default() -> None:
    """φ1 = first(A) → first(B) → first(C): one match, of the first occurrences."""
    assert positions("a Followed By b Followed By c") == [("1.1", "2", "4")]
    assert positions("first(a) Followed By first(b) Followed By first(c)") == [("1.1", "2", "4")]


def test_last_selects_the_latest_before_the_next_element() -> None:
    """φ2 = A → last(B) → C: the last B before the first C after it."""
    assert positions("a Followed By last(b) Followed By c") == [("1.1", "3", "4")]


def test_adj_selects_the_closest_pair() -> None:
    """φ3 = adj(A → B → C) = last(A → B) → first(C)."""
    assert positions("adj(a Followed By b Followed By c)") == [("1.2", "3", "4")]
    assert positions("adj(a and c)", "A AS a, C AS c") == [("1.2", "4")]


def test_every_selects_matches_whose_life_cycles_do_not_overlap() -> None:
    assert positions("every(a Followed By b Followed By c)") == [
        ("1.1", "2", "4"),
        ("4", "5", "5"),
    ]


def test_all_consume_uses_each_consumed_event_once() -> None:
    assert positions("all(a Followed By b Followed By c) consume(a)") == [
        ("1.1", "2", "4"),
        ("1.2", "2", "4"),
        ("4", "5", "5"),
    ]
    # φ8 = all(A → B → C within 1 s from B) consume(A), here with 2 s
    assert positions("all(a Followed By b Followed By c Within 2 s From b) consume(a)") == [
        ("1.1", "3", "4"),
        ("1.2", "3", "4"),
        ("4", "5", "5"),
    ]


# ---- operators ---------------------------------------------------------------------------


def emitted(rule: str, rows: list[tuple[Any, ...]], **options: Any) -> list[tuple[Any, ...]]:
    events = [{"type": t, "ts": ts, **attrs} for t, ts, attrs in rows]
    return [(e.type, e.ts, dict(e.attrs)) for e in kleene.lead.run(rule, events, **options)]


def test_disjunction_takes_the_first_branch_to_match() -> None:
    rule = "FROM A AS a, B AS b MATCH every(a or b) EMIT Event X(a.n AS a, b.n AS b)"
    rows = [("B", 1, {"n": 1}), ("A", 2, {"n": 2})]
    assert emitted(rule, rows) == [
        ("X", 1, {"a": None, "b": 1}),
        ("X", 2, {"a": 2, "b": None}),
    ]


def test_negation_bounded_by_the_next_element() -> None:
    rule = (
        "FROM A AS a, B AS b, C AS c MATCH every(a Followed By not b Followed By c) "
        "EMIT Event X(a.n AS a, c.n AS c)"
    )
    rows = [("A", 1, {"n": 1}), ("B", 2, {"n": 2}), ("C", 3, {"n": 3}), ("A", 4, {"n": 4})]
    rows += [("C", 5, {"n": 5})]
    assert emitted(rule, rows) == [("X", 5, {"a": 4, "c": 5})]


def test_negation_within_time_fires_when_time_passes() -> None:
    rule = "FROM A AS a, B AS b MATCH every(a Followed By not b Within 10 s) EMIT Event X(a.n)"
    rows = [("A", 0, {"n": 1}), ("B", 9, {}), ("A", 20, {"n": 2}), ("B", 30, {})]
    # the B at 30 is at 10 s exactly: not within (less than) 10 s
    assert emitted(rule, rows) == [("X", 30, {"n": 2})]
    engine = kleene.Engine(rule)
    engine.send_many([{"type": "A", "ts": 0, "n": 1}])
    assert engine.advance_to(9) == []
    assert [e.ts for e in engine.advance_to(10)] == [10]


def test_within_drops_late_matches() -> None:
    rule = "FROM A AS a, B AS b MATCH every(a Followed By b Within 5 s From a) EMIT Event X(b.n)"
    rows = [("A", 0, {}), ("B", 6, {"n": 1}), ("A", 10, {}), ("B", 14, {"n": 2})]
    assert emitted(rule, rows) == [("X", 14, {"n": 2})]


def test_wait_reports_after_the_wait() -> None:
    rule = "FROM A AS a MATCH every(Wait(a, 1 min)) EMIT Event X(a.n)"
    rows = [("A", 10, {"n": 1}), ("A", 20, {"n": 2}), ("A", 200, {"n": 3})]
    # enabled at 10, it reports the first A at 70 and is enabled again; the minute from 70
    # sees no A and fails; the next attempt begins with the next event, the A at 200, and
    # reports it at 260
    assert emitted(rule, rows) == [("X", 70, {"n": 1}), ("X", 260, {"n": 3})]


def test_wait_last_reports_the_latest() -> None:
    rule = "FROM A AS a MATCH Wait(last(a), 1 min) EMIT Event X(a.n)"
    rows = [("A", 10, {"n": 1}), ("A", 20, {"n": 2}), ("A", 200, {"n": 3})]
    assert emitted(rule, rows) == [("X", 70, {"n": 2})]


def test_collect_accept_terminate_invalidate() -> None:
    rule = (
        "FROM A AS a, S AS s MATCH every(s Followed By collect(a) accept(a.x > 0) "
        "terminate(count() == 3) invalidate(a.x > 100) AS xs) "
        "EMIT Event Sum(sum(xs.x) AS total, count(xs) AS n)"
    )
    rows = [("S", 0, {}), ("A", 1, {"x": 5}), ("A", 2, {"x": -1}), ("A", 3, {"x": 6})]
    rows += [("A", 4, {"x": 7}), ("S", 5, {}), ("A", 6, {"x": 500}), ("S", 7, {})]
    rows += [("A", 8, {"x": 1}), ("A", 9, {"x": 1}), ("A", 10, {"x": 1})]
    assert emitted(rule, rows) == [
        ("Sum", 4, {"total": 18, "n": 3}),
        ("Sum", 10, {"total": 3, "n": 3}),
    ]


def test_time_events_terminate_a_collect() -> None:
    rule = (
        "FROM S AS s, A AS a DEFINE TimeEvent open(s.event_time, s.event_time + 10 s) "
        "MATCH s Followed By collect(a) terminate(not open) AS xs "
        "EMIT Event N(count(xs) AS n)"
    )
    rows = [("S", 0, {}), ("A", 3, {}), ("A", 9, {}), ("A", 10, {}), ("A", 11, {})]
    assert emitted(rule, rows) == [("N", 10, {"n": 2})]


def test_check_any_emits_every_matching_branch_and_first_only_one() -> None:
    base = "FROM A AS a MATCH a EMIT CHECK {} WHERE (a.x > 1) EMIT Event Big(a.x) "
    base += "WHERE (a.x > 2) EMIT Event Bigger(a.x) END"
    rows = [("A", 1, {"x": 5})]
    assert [e[0] for e in emitted(base.format("ANY"), rows)] == ["Big", "Bigger"]
    assert [e[0] for e in emitted(base.format("FIRST"), rows)] == ["Big"]


def test_enrich_and_event_types_with_defaults() -> None:
    rule = (
        "FROM A AS a DEFINE EventType Alert(INT level, BOOLEAN loud(TRUE)) "
        "ENRICH a(double = a.x * 2) MATCH a.filter(a.double > 4) EMIT Event Alert(a.double)"
    )
    assert emitted(rule, [("A", 1, {"x": 1}), ("A", 2, {"x": 3})]) == [
        ("Alert", 2, {"level": 6, "loud": True})
    ]


def test_partitions_run_the_rule_once_each() -> None:
    rule = "FROM A AS a, B AS b MATCH a Followed By b PARTITION BY a.k EMIT Event X(k)"
    rows = [("A", 1, {"k": 1}), ("A", 2, {"k": 2}), ("B", 3, {"k": 2}), ("B", 4, {"k": 1})]
    rows += [("A", 5, {"k": 1}), ("B", 6, {"k": 1})]
    assert emitted(rule, rows) == [("X", 3, {"k": 2}), ("X", 4, {"k": 1})]


def test_a_comparison_that_cannot_be_made_names_the_values() -> None:
    rule = "FROM A AS a MATCH a.filter(a.x > 1) EMIT Event X()"
    message = r"cannot compute a.x > 1 with 'x' \(str\), 1 \(int\)"
    with pytest.raises(kleene.EventError, match=message):
        emitted(rule, [("A", 1, {"x": "x"})])


def test_every_absence_reports_once_per_quiet_spell() -> None:
    rule = "FROM A AS a, B AS b MATCH every(not b Within 10 s) EMIT Event Quiet()"
    rows = [("A", 0, {}), ("A", 100, {}), ("B", 105, {}), ("A", 120, {})]
    # attempts begin at 0 (reported at 10), at 100 (B at 105 spoils it), at 105 (reported at
    # 115) and at 120 (reported at 130); no attempt begins without an event
    assert [e[1] for e in emitted(rule, rows)] == [10, 115, 130]


@pytest.mark.parametrize(("policy", "expected"), [("max", [(1, 15)]), ("min", [(2, 10)])])
def test_max_and_min_choose_among_repetitions_ending_together(
    policy: str, expected: list[tuple[int, int]]
) -> None:
    rule = (
        f"FROM S AS s, A AS a MATCH all({policy}(s Followed By collect(a) terminate(a.x > 8) "
        "AS xs, sum(xs.x))) EMIT Event Pick(s.n AS s, sum(xs.x) AS total)"
    )
    rows = [("S", 0, {"n": 1}), ("A", 1, {"x": 5}), ("S", 2, {"n": 2}), ("A", 3, {"x": 1})]
    rows += [("A", 4, {"x": 9})]
    both = rule.replace(f"{policy}(", "(").replace(", sum(xs.x)))", "))")
    assert [(e[2]["s"], e[2]["total"]) for e in emitted(both, rows)] == [(1, 15), (2, 10)]
    assert [(e[2]["s"], e[2]["total"]) for e in emitted(rule, rows)] == expected


def test_max_settles_repetitions_ended_by_one_time_event() -> None:
    rule = (
        "FROM S AS s, A AS a DEFINE TimeEvent day(0, 10) MATCH all(max(s Followed By "
        "collect(a) terminate(not day) AS xs, count(xs))) EMIT Event Busiest(s.n AS s)"
    )
    rows = [("S", 1, {"n": 1}), ("S", 2, {"n": 2}), ("A", 3, {}), ("S", 4, {"n": 3})]
    rows += [("A", 5, {}), ("A", 11, {})]
    assert emitted(rule, rows) == [("Busiest", 10, {"s": 1})]  # 2 As each for 1 and 2: the earliest


def test_max_needs_a_repetition() -> None:
    with pytest.raises(kleene.PatternError, match="takes a repetition"):
        kleene.compile("FROM A AS a MATCH max(a, a.x) EMIT Event X()")


def test_a_time_frame_runs_the_rule_once_per_window() -> None:
    rule = (
        "FROM A AS a, B AS b MATCH a Followed By b PARTITION BY a.k, 10 s "
        "EMIT Event X(a.n AS a, b.n AS b)"
    )
    rows = [("A", 1, {"k": 1, "n": 1}), ("B", 2, {"k": 1, "n": 2}), ("B", 3, {"k": 1, "n": 3})]
    rows += [("A", 8, {"k": 1, "n": 4}), ("B", 12, {"k": 1, "n": 5}), ("A", 13, {"k": 1, "n": 6})]
    rows += [("B", 14, {"k": 1, "n": 7})]
    # [0, 10): a1 b2 (and a4 is too late for this frame's one run); [10, 20): a6 b7 (b5
    # comes before any A of the frame)
    assert emitted(rule, rows) == [("X", 2, {"a": 1, "b": 2}), ("X", 14, {"a": 6, "b": 7})]


def test_a_time_frame_ends_pending_waits() -> None:
    rule = (
        "FROM A AS a, B AS b MATCH a Followed By not b Within 5 s PARTITION BY 10 s "
        "EMIT Event X(a.n)"
    )
    rows = [("A", 7, {"n": 1}), ("A", 11, {"n": 2})]
    # the first run's negation would end at 12, after its frame [0, 10)
    assert emitted(rule, rows) == [("X", 16, {"n": 2})]


def test_a_count_frame_runs_the_rule_once_per_n_events() -> None:
    rule = "FROM A AS a MATCH every(a.filter(a.x > 0)) PARTITION BY 3 events EMIT Event X(a.n)"
    rows = [("A", t, {"x": x, "n": t}) for t, x in enumerate([0, 1, 2, 0, 0, 0, 5])]
    assert [e[2]["n"] for e in emitted(rule, rows)] == [1, 2, 6]
    first = "FROM A AS a MATCH a.filter(a.x > 0) PARTITION BY 3 events EMIT Event X(a.n)"
    assert [e[2]["n"] for e in emitted(first, rows)] == [1, 6]
