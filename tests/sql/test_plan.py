"""MATCH_RECOGNIZE over a stream: the `row_pattern` plan under the engine, `kleene.match`
and the plan contract (the conformance suite checks the contract itself)."""

import math

import pandas
import pytest
from hypothesis import given

import kleene
from kleene.errors import PatternError, PlanError
from kleene.language.sql.reader import read
from kleene.testing.strategies import row_pattern_cases

QUERY = """MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts
    MEASURES FIRST(price) AS top, LAST(price) AS bottom, count(*) AS n
    PATTERN (A B+) DEFINE B AS price < PREV(price))"""


def ticks(*pairs):
    return [{"type": "Tick", "ts": i, "sym": s, "price": p} for i, (s, p) in enumerate(pairs)]


def test_the_engine_reports_a_match_once_a_row_ends_it_and_the_rest_at_the_end():
    engine = kleene.Engine(QUERY)
    reported = [engine.send(e) for e in ticks(("a", 5), ("a", 4), ("b", 9), ("a", 6), ("b", 8))]
    assert reported == [[], [], [], [{"sym": "a", "top": 5, "bottom": 4, "n": 2}], []]
    assert engine.close() == [{"sym": "b", "top": 9, "bottom": 8, "n": 2}]
    assert engine.metrics.matches == 2 and engine.metrics.partitions == 2


def test_kleene_match_takes_the_clause_as_a_query():
    found = kleene.match(QUERY, ticks(("a", 5), ("a", 4), ("a", 3)))
    assert found == [{"sym": "a", "top": 5, "bottom": 3, "n": 3}]
    frame = kleene.to_pandas(found)
    assert list(frame.columns) == ["sym", "top", "bottom", "n"]
    assert kleene.compile(QUERY).output.variables == ()


def test_the_order_by_column_is_the_event_time_and_other_fields_read_as_columns():
    query = """MATCH_RECOGNIZE (ORDER BY at MEASURES FIRST(at) AS first_at, LAST(type) AS kind
        ALL ROWS PER MATCH PATTERN (A+))"""
    events = [kleene.Event("Tick", t, {"v": t * 10}) for t in (1, 2)]
    assert kleene.match(query, events) == [
        {"at": 1, "first_at": 1, "kind": "Tick", "v": 10},
        {"at": 2, "first_at": 1, "kind": "Tick", "v": 20},
    ]


def test_a_partition_holds_only_the_rows_a_later_search_can_read():
    plan = kleene.compile(
        "MATCH_RECOGNIZE (ORDER BY ts MEASURES count(*) AS n PATTERN (A B+) "
        "DEFINE B AS x > PREV(x, 2))"
    )
    state = plan.new_state()
    held = 0
    for t in range(1000):
        plan.step(state, kleene.Event("R", t, {"x": t % 5}))
        held = max(held, len(state.rows))
    assert held <= 8  # a match is at most 5 rows long, and PREV reads 2 rows back
    assert plan.counters(state)["rows_held"] == len(state.rows)


def test_the_start_anchor_holds_once_even_after_rows_were_dropped():
    found = kleene.match(
        "MATCH_RECOGNIZE (ORDER BY ts MEASURES count(*) AS n PATTERN (^ A))",
        [{"type": "R", "ts": t} for t in range(50)],
    )
    assert found == [{"n": 1}]


def test_a_state_pickles_and_resumes():
    plan = kleene.compile(QUERY)
    state = plan.new_state()
    events = [kleene.Event("Tick", e["ts"], e) for e in ticks(("a", 5), ("a", 4), ("a", 3))]
    plan.step(state, events[0])
    plan.step(state, events[1])
    resumed = plan.load_state(plan.dump_state(state))
    plan.step(resumed, events[2])
    assert plan.advance(resumed, kleene.Watermark(float("inf"))) == [
        {"sym": "a", "top": 5, "bottom": 3, "n": 3}
    ]


def test_a_stream_is_ordered_by_one_time_column():
    for order, column in (("ORDER BY ts, x", 31), ("ORDER BY ts DESC", 27)):
        with pytest.raises(PatternError, match="ORDER BY names its time column") as raised:
            kleene.compile(f"MATCH_RECOGNIZE ({order} PATTERN (A))")
        assert raised.value.column == column


def test_other_plans_and_options_are_refused_with_the_plan_that_runs_it():
    with pytest.raises(PlanError, match="MATCH_RECOGNIZE clauses run on plan 'row_pattern'"):
        kleene.compile(QUERY, plan="nfa")
    with pytest.raises(PlanError, match="a row pattern has none"):
        kleene.compile(QUERY, timeouts=True)


def test_the_plan_describes_its_program():
    text = kleene.compile(QUERY).describe()
    assert text.startswith("program:")
    assert "map the row to B" in text and "map as many rows as can be to B" in text
    reluctant = kleene.compile(QUERY.replace("B+", "B+?")).describe()
    assert "if repetition 0 took a row, go to" in reluctant


@given(row_pattern_cases())
def test_over_a_stream_the_plan_gives_what_the_table_gives(case):
    """The plan keeps only the rows a later search can read and decides a match once no
    later row can change it; over the stream it gives what `match_recognize` gives over
    the whole table."""
    clause = read(case.query)
    try:
        streamed = kleene.match(case.query, case.events)
    except PatternError:
        return
    rows = [{"type": e.type, "ts": e.ts, **e.attrs} for e in case.events]
    table = kleene.match_recognize(rows, clause).to_dict("records")
    names = [*clause.partition_by, *(m.name for m in clause.measures)]
    if clause.rows == "all":
        names.append("ts")

    def shown(found):
        return sorted(
            tuple(repr(None if _missing(r.get(n)) else r.get(n)) for n in names) for r in found
        )

    assert shown(streamed) == shown(table)


def _missing(value):
    return value is None or value is pandas.NA or (isinstance(value, float) and math.isnan(value))


def test_a_partition_with_nothing_kept_is_dropped_and_one_that_reads_prev_is_kept():
    """A state that holds no row, in a clause with no MATCH_NUMBER and no ^, is idle: the
    engine drops it, so a stream of ever new keys holds only the keys with rows waiting.
    A clause reading PREV keeps each key's last row, however late the next comes."""
    events = [
        kleene.Event("R", 2 * n + i, {"k": n, "x": x})
        for n in range(3000)
        for i, x in enumerate((1, 2) if n % 100 else (1, 1))  # every 100th key waits
    ]
    text = (
        "MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts MEASURES {} AS n "
        "PATTERN (A B) DEFINE A AS x = 1, B AS x = {})"
    )
    pairs = kleene.Engine(text.format("count(*)", "2"))
    found = pairs.send_many(events)
    assert len(found) == 2970 and pairs.partitions <= 200
    numbered = kleene.Engine(text.format("MATCH_NUMBER()", "2"))
    assert len(numbered.send_many(events)) == 2970 and numbered.partitions == 3000
    rising = kleene.Engine(text.format("count(*)", "PREV(x) + 1"))
    assert len(rising.send_many(events)) == 2970 and rising.partitions == 3000
