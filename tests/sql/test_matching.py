"""MATCH_RECOGNIZE's matches: golden cases from Oracle's documentation (its ticker table),
each construct on a table written by hand, and hypothesis against the definition of the
preferred match (`row_reference`, every way to map rows in order of preference)."""

import datetime as dt
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.compiler.row_pattern import check_clause
from kleene.errors import LimitError, PatternError
from kleene.language.sql import ast as Q
from kleene.language.sql.reader import read
from kleene.plans.reference import preferred as reference
from kleene.plans.row_pattern.partition import Matcher, Progress
from kleene.plans.row_pattern.search import BLOCKED, Search
from kleene.testing.strategies import clauses, tables


def run(text, rows, closed=True):
    clause = read(text)
    check_clause(clause)
    return Matcher(clause).advance(Progress(), [dict(r) for r in rows], closed)


# ---- Oracle's ticker table (Oracle Database Data Warehousing Guide, "SQL for Pattern
# Matching", Examples 20-1 to 20-3): the V and W shapes, with their published results ----

PRICES = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
TICKER = [
    {"symbol": "ACME", "tstamp": dt.date(2011, 4, day), "price": price}
    for day, price in enumerate(PRICES, 1)
]
V_SHAPE = """PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS DOWN.price < PREV(DOWN.price), UP AS UP.price > PREV(UP.price)"""


def day(n):
    return dt.date(2011, 4, n)


def test_the_v_shape_one_row_per_match():
    rows = run(
        "PARTITION BY symbol ORDER BY tstamp MEASURES STRT.tstamp AS start_tstamp, "
        "LAST(DOWN.tstamp) AS bottom_tstamp, LAST(UP.tstamp) AS end_tstamp "
        "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP " + V_SHAPE,
        TICKER,
    )
    assert [(r["start_tstamp"], r["bottom_tstamp"], r["end_tstamp"]) for r in rows] == [
        (day(5), day(6), day(10)),
        (day(10), day(12), day(13)),
        (day(14), day(16), day(18)),
    ]
    assert all(r["symbol"] == "ACME" for r in rows)


def test_the_v_shape_all_rows_per_match():
    rows = run(
        "PARTITION BY symbol ORDER BY tstamp MEASURES STRT.tstamp AS start_tstamp, "
        "FINAL LAST(DOWN.tstamp) AS bottom_tstamp, FINAL LAST(UP.tstamp) AS end_tstamp, "
        "MATCH_NUMBER() AS match_num, CLASSIFIER() AS var_match "
        "ALL ROWS PER MATCH AFTER MATCH SKIP TO LAST UP " + V_SHAPE,
        TICKER,
    )
    got = [(r["tstamp"].day, r["match_num"], r["var_match"], r["end_tstamp"].day) for r in rows]
    assert got == [
        (5, 1, "STRT", 10), (6, 1, "DOWN", 10), (7, 1, "UP", 10), (8, 1, "UP", 10),
        (9, 1, "UP", 10), (10, 1, "UP", 10),
        (10, 2, "STRT", 13), (11, 2, "DOWN", 13), (12, 2, "DOWN", 13), (13, 2, "UP", 13),
        (14, 3, "STRT", 18), (15, 3, "DOWN", 18), (16, 3, "DOWN", 18), (17, 3, "UP", 18),
        (18, 3, "UP", 18),
    ]  # fmt: skip
    assert list(rows[0]) == [
        "symbol", "tstamp", "start_tstamp", "bottom_tstamp", "end_tstamp", "match_num",
        "var_match", "price",
    ]  # fmt: skip


def test_the_w_shape():
    rows = run(
        "PARTITION BY symbol ORDER BY tstamp MEASURES STRT.tstamp AS start_tstamp, "
        "LAST(UP.tstamp) AS end_tstamp AFTER MATCH SKIP TO LAST UP "
        "PATTERN (STRT DOWN+ UP+ DOWN+ UP+) "
        "DEFINE DOWN AS DOWN.price < PREV(DOWN.price), UP AS UP.price > PREV(UP.price)",
        TICKER,
    )
    assert [(r["start_tstamp"], r["end_tstamp"]) for r in rows] == [(day(5), day(13))]


# ---- each construct, on hand-written tables ----------------------------------------------


def xs(*values):
    return [{"i": i, "x": x} for i, x in enumerate(values)]


def labels(text, rows, measures="CLASSIFIER() AS c, MATCH_NUMBER() AS m"):
    out = run(f"ORDER BY i MEASURES {measures} ALL ROWS PER MATCH {text}", rows)
    return [(r["m"], r["i"], r["c"]) for r in out]


def test_greedy_takes_the_most_and_reluctant_the_fewest():
    rows = xs(1, 1, 1, 2)
    assert labels("PATTERN (A+ B*) DEFINE A AS x = 1", rows) == [
        (1, 0, "A"), (1, 1, "A"), (1, 2, "A"), (1, 3, "B"),
    ]  # fmt: skip
    assert labels("PATTERN (A+? B*) DEFINE A AS x = 1", rows) == [
        (1, 0, "A"), (1, 1, "B"), (1, 2, "B"), (1, 3, "B"),
    ]  # fmt: skip
    assert labels("PATTERN (A+? B*?) DEFINE A AS x = 1", rows) == [
        (1, 0, "A"), (2, 1, "A"), (3, 2, "A"),
    ]  # fmt: skip


def test_alternation_prefers_the_left_branch_that_leads_to_a_match():
    rows = xs(1, 2)
    assert labels("PATTERN ((A | B) C) DEFINE A AS x = 1, C AS x = 2", rows) == [
        (1, 0, "A"), (1, 1, "C"),
    ]  # fmt: skip
    assert labels("PATTERN ((B | A) C) DEFINE A AS x = 1, C AS x = 2", rows) == [
        (1, 0, "B"), (1, 1, "C"),
    ]  # fmt: skip
    # the left branch fails later on: the right one is taken
    assert labels("PATTERN ((A | B) C) DEFINE B AS x = 1, C AS x = 2, A AS x = 9", rows) == [
        (1, 0, "B"), (1, 1, "C"),
    ]  # fmt: skip


def test_permute_tries_orders_as_their_positions_come():
    rows = xs(2, 1)
    assert labels("PATTERN (PERMUTE(A, B)) DEFINE A AS x = 1", rows) == [
        (1, 0, "B"), (1, 1, "A"),
    ]  # fmt: skip
    assert labels("PATTERN (PERMUTE(A, B))", rows) == [(1, 0, "A"), (1, 1, "B")]


def test_bounded_quantifiers():
    rows = xs(1, 1, 1, 1, 1)
    assert [r[0] for r in labels("PATTERN (A{2})", rows)] == [1, 1, 2, 2]
    assert [r[0] for r in labels("PATTERN (A{2,3})", rows)] == [1, 1, 1, 2, 2]
    assert [r[0] for r in labels("PATTERN (A{2,3}?)", rows)] == [1, 1, 2, 2]
    assert [r[0] for r in labels("PATTERN (A{,2})", rows)] == [1, 1, 2, 2, 3]


def test_anchors():
    rows = xs(1, 1, 1)
    assert labels("PATTERN (^ A)", rows) == [(1, 0, "A")]
    assert labels("PATTERN (A $)", rows) == [(1, 2, "A")]
    assert labels("PATTERN (^ A+ $)", rows) == [(1, 0, "A"), (1, 1, "A"), (1, 2, "A")]


def test_exclusion_hides_rows_from_all_rows_but_not_from_the_match():
    rows = xs(1, 2, 3)
    out = run(
        "ORDER BY i MEASURES count(*) AS n, FINAL count(*) AS total, CLASSIFIER() AS c "
        "ALL ROWS PER MATCH PATTERN (A {- B -} C)",
        rows,
    )
    assert [(r["i"], r["c"], r["n"], r["total"]) for r in out] == [
        (0, "A", 1, 3),
        (2, "C", 3, 3),
    ]


def test_empty_matches_and_unmatched_rows():
    rows = xs(3, 1, 2)
    pattern = "PATTERN (A*) DEFINE A AS x < PREV(x)"
    one = run(
        f"ORDER BY i MEASURES count(*) AS n, CLASSIFIER() AS c, MATCH_NUMBER() AS m {pattern}", rows
    )
    assert [(r["m"], r["n"], r["c"]) for r in one] == [(1, 0, None), (2, 1, "A"), (3, 0, None)]
    show = labels(pattern, rows)
    assert show == [(1, 0, None), (2, 1, "A"), (3, 2, None)]
    omit = run(
        f"ORDER BY i MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH OMIT EMPTY MATCHES {pattern}",
        rows,
    )
    assert [(r["i"], r["c"]) for r in omit] == [(1, "A")]
    plus = "PATTERN (A+) DEFINE A AS x < PREV(x)"
    unmatched = run(
        "ORDER BY i MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS m "
        f"ALL ROWS PER MATCH WITH UNMATCHED ROWS {plus}",
        rows,
    )
    assert [(r["i"], r["m"], r["c"]) for r in unmatched] == [
        (0, None, None),
        (1, 1, "A"),
        (2, None, None),
    ]


def test_running_and_final_semantics():
    rows = xs(1, 2, 3)
    out = run(
        "ORDER BY i MEASURES sum(x) AS running, FINAL sum(x) AS final, LAST(x) AS last, "
        "FINAL LAST(x) AS final_last, FIRST(x, 1) AS second, PREV(x) AS before, "
        "NEXT(x) AS after, avg(A.x) AS mean, array_agg(x) AS seen, min(x) AS low "
        "ALL ROWS PER MATCH PATTERN (A+)",
        rows,
    )
    assert [
        (r["running"], r["final"], r["last"], r["final_last"], r["second"], r["before"], r["after"])
        for r in out
    ] == [(1, 6, 1, 3, None, None, 2), (3, 6, 2, 3, 2, 1, 3), (6, 6, 3, 3, 2, 2, None)]
    assert [r["mean"] for r in out] == [1, 1.5, 2]
    assert out[-1]["seen"] == [1, 2, 3] and out[-1]["low"] == 1


def test_subsets_and_the_classifier_of_a_subset():
    rows = xs(1, 2, 3, 4)
    out = run(
        "ORDER BY i MEASURES LAST(U.x) AS u, CLASSIFIER(U) AS cu, count(U.*) AS n "
        "PATTERN (A B C D) SUBSET U = (B, C)",
        rows,
    )
    assert out == [{"u": 3, "cu": "C", "n": 2}]


def test_a_define_reading_other_variables_and_running_aggregates():
    # B rows must stay above the A row and their running average below 5
    rows = xs(2, 3, 6, 4, 1)
    assert labels("PATTERN (A B+) DEFINE B AS x > A.x AND avg(B.x) < 5", rows) == [
        (1, 0, "A"), (1, 1, "B"), (1, 2, "B"), (1, 3, "B"),
    ]  # fmt: skip


def test_physical_navigation_reaches_outside_the_match_and_logical_nests_in_it():
    rows = xs(5, 1, 2, 3)
    out = run(
        "ORDER BY i MEASURES PREV(FIRST(x), 1) AS before_start, NEXT(LAST(A.x), 1) AS after "
        "PATTERN (A{2}) DEFINE A AS x < 4",
        rows,
    )
    assert out == [{"before_start": 5, "after": 3}]


def test_skips():
    rows = xs(1, 1, 1)
    assert [r[:2] for r in labels("AFTER MATCH SKIP TO NEXT ROW PATTERN (A+)", rows)] == [
        (1, 0), (1, 1), (1, 2), (2, 1), (2, 2), (3, 2),
    ]  # fmt: skip
    assert [r[:2] for r in labels("AFTER MATCH SKIP TO LAST B PATTERN (A B+)", rows)] == [
        (1, 0), (1, 1), (1, 2),
    ]  # fmt: skip
    assert [r[:2] for r in labels("AFTER MATCH SKIP TO FIRST B PATTERN (A B)", rows)] == [
        (1, 0), (1, 1), (2, 1), (2, 2),
    ]  # fmt: skip


def test_a_skip_to_a_missing_variable_or_the_first_row_is_an_error_with_a_caret():
    with pytest.raises(PatternError, match="maps no row to B") as raised:
        run("AFTER MATCH SKIP TO LAST B PATTERN (A B?) DEFINE B AS x = 9", xs(1, 1))
    assert raised.value.column == 1 and "^" in str(raised.value)
    with pytest.raises(PatternError, match="the match's own first row"):
        run("AFTER MATCH SKIP TO FIRST A PATTERN (A B)", xs(1, 1))


def test_nulls_are_not_true():
    assert run("ORDER BY i MEASURES count(*) AS n PATTERN (A) DEFINE A AS x > 0", xs(None)) == []
    assert run("ORDER BY i MEASURES A.y AS y PATTERN (A)", xs(1)) == [{"y": None}]


def test_an_exploding_search_trips_the_guard_naming_the_cause():
    clause = read("PATTERN ((A | B)* C) DEFINE A AS x >= FIRST(x), B AS x >= FIRST(x), C AS x < 0")
    check_clause(clause)
    matcher = Matcher(clause, max_steps=10_000)
    with pytest.raises(LimitError, match="too many ways"):
        matcher.advance(Progress(), xs(*[1] * 40), closed=True)


def test_a_row_reading_the_next_one_waits_for_it():
    search = Search(read("PATTERN (A) DEFINE A AS NEXT(x) > x"))
    assert search.run(xs(1), 0, closed=False) is BLOCKED
    assert search.run(xs(1), 0, closed=True) is None
    assert search.run(xs(1, 2), 0, closed=False).end == 1


def test_a_condition_reading_a_later_row_waits_only_where_its_branch_can_match():
    """A branch the pattern cannot complete decides nothing, whatever its condition would
    say (the oracle asks conditions only along the ways the pattern can take): `C` then
    `^` never matches, so the preferred match, empty, is known at once. Where the branch
    needs a row still to come (`C B`), or can match (`C`), it waits, as the oracle does."""
    cases = [
        ("PATTERN ((C | ^) ^) DEFINE C AS NEXT(x) > x", xs(1), 0, (0, 0, ())),
        ("PATTERN ((C B | ^) ^) DEFINE C AS NEXT(x) > x", xs(1), 0, BLOCKED),
        ("PATTERN (C B | A) DEFINE C AS NEXT(x) > x", xs(1, 2), 1, BLOCKED),
        ("PATTERN (C B | A) DEFINE C AS NEXT(x) > x", xs(1, 2), 0, (0, 2, (0, 1))),
        ("PATTERN ((C | A) ^) DEFINE C AS NEXT(x) > x", xs(1), 0, None),
    ]
    for pattern, rows, start, want in cases:
        clause = read(pattern)
        found = Search(clause).run(rows, start, closed=False)
        oracle = reference.preferred(clause, rows, start, closed=False)
        if want is BLOCKED:
            assert found is BLOCKED and oracle is reference.WAITS, pattern
        elif want is None:
            assert found is None and oracle is None, pattern
        else:
            assert (found.start, found.end, found.labels) == want, pattern
            assert (oracle.end, len(oracle.labels)) == (want[1], len(want[2])), pattern


# ---- against the oracle -----------------------------------------------------------------


def expected(clause, rows):
    """ALL ROWS PER MATCH's (match number, row, classifier), from the reference's
    definition of the preferred match (`row_reference`), or "error"."""
    try:
        found = reference.matches(clause, rows)
    except PatternError:
        return "error"
    out = []
    for number, (start, way) in enumerate(found, 1):
        if way.end == start:
            out.append((number, start, None))
        out += [
            (number, start + k, name)
            for k, (name, excluded) in enumerate(zip(way.labels, way.excluded, strict=True))
            if not excluded
        ]
    return out


def actual(clause, rows, closed=True):
    try:
        out = Matcher(clause).advance(Progress(), rows, closed)
    except PatternError:
        return "error"
    return [(r["m"], r["i"], r["c"]) for r in out]


@given(clauses(), tables())
def test_the_preferred_matches_are_the_references(text, rows):
    clause = read(text)
    check_clause(clause)
    assert actual(clause, rows) == expected(clause, rows)


@given(clauses(), tables())
def test_rows_given_a_few_at_a_time_give_the_same_output(text, rows):
    clause = read(text)
    check_clause(clause)
    matcher = Matcher(clause)
    try:
        whole = matcher.advance(Progress(), rows, closed=True)
    except PatternError:
        return
    progress, parts, seen = Progress(), [], []
    for row in rows:
        seen.append(row)
        parts += matcher.advance(progress, seen, closed=False)
    parts += matcher.advance(progress, seen, closed=True)
    assert parts == whole


@given(clauses(), tables())
def test_remembering_failed_states_changes_no_match(text, rows):
    clause = read(text)
    check_clause(clause)
    plain = Search(clause)
    plain.memo = False
    memo = Search(clause)
    if not memo.memo:  # only a clause whose conditions ignore the match so far
        return
    memo.remember_after = 1  # from the first step, not only in long searches
    table = memo.table(rows)
    for start in range(len(rows)):
        assert memo.run(rows, start, True, table=table) == plain.run(rows, start, True)


def test_a_clause_can_be_given_as_an_ast():
    clause = replace(read("PATTERN (A)"), measures=())
    assert Matcher(clause).advance(Progress(), xs(1), True) == [{}]


@given(clauses(rows="ONE ROW PER MATCH", measures="MATCH_NUMBER() AS m, FINAL count(*) AS n, "
               "FINAL LAST(CLASSIFIER()) AS c"), tables())  # fmt: skip
def test_one_row_and_all_rows_name_the_same_matches(text, rows):
    """ALL ROWS PER MATCH shows the rows ONE ROW PER MATCH counts, match by match (an
    excluded row is counted but not shown; an empty match shows one row)."""
    one_clause = read(text)
    all_clause = read(text.replace("ONE ROW PER MATCH", "ALL ROWS PER MATCH"))
    check_clause(one_clause)
    try:
        one = Matcher(one_clause).advance(Progress(), rows, True)
    except PatternError:
        return
    every = Matcher(all_clause).advance(Progress(), rows, True)
    hidden = any(isinstance(n, Q.Exclusion) for n in Q.walk_pattern(one_clause.pattern))
    shown: dict[int, int] = {}
    for row in every:
        shown[row["m"]] = shown.get(row["m"], 0) + 1
        assert row["n"] == next(r["n"] for r in one if r["m"] == row["m"])  # FINAL agrees
    if hidden:  # a match whose every row is excluded shows none
        assert set(shown) <= {r["m"] for r in one}
        return
    assert sorted(shown) == [r["m"] for r in one]
    for row in one:
        assert shown[row["m"]] == max(row["n"], 1)


@given(
    st.lists(st.sampled_from("ABC"), max_size=9),
    st.sampled_from(["A B+ C", "A B? C", "A+ B", "A B C+"]),
)
def test_each_preferred_match_is_one_of_the_sase_twins_matches(kinds, shape):
    """Where the two languages say the same (a partition's rows one after another, each
    variable a type), the match MATCH_RECOGNIZE prefers from a row is one of the matches
    SASE+ reports under partition contiguity; the search goes on from the next row so
    that every row's preferred match is found."""
    events = [{"type": kind, "ts": t, "k": 0} for t, kind in enumerate(kinds)]
    names = {"A": "a", "B": "b", "C": "c"}
    parts = []
    for token in shape.split():
        letter, mark = token[0], token[1:]
        kleene_var = mark == "+"
        name = names[letter] + ("[]" if kleene_var else "")
        parts.append(f"{letter}{mark} {name}")
    sase = f"PATTERN SEQ({', '.join(parts)}) WHERE partition_contiguity {{ [k] }}"
    twins = {
        tuple(sorted(e for ids in m.ids().values() for e in ids))
        for m in kleene.match(sase, events)
    }
    defines = ", ".join(f"{letter} AS type = '{letter}'" for letter in "ABC" if letter in shape)
    clause = (
        "MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts MEASURES FIRST(ts) AS first, "
        "array_agg(ts) AS rows AFTER MATCH SKIP TO NEXT ROW "
        f"PATTERN ({shape}) DEFINE {defines})"
    )
    preferred = kleene.match(clause, events)
    for row in preferred:
        assert tuple(row["rows"]) in twins
    starts = {row["first"] for row in preferred}
    assert starts == {min(t) for t in twins}


def test_flinks_price_fell_then_rose():
    """Flink SQL's documentation example ("Detecting Patterns in Tables"): its ACME ticks
    and its published result."""
    prices = [12, 17, 19, 21, 25, 18, 15, 14, 24, 25, 19]
    ticks = [
        {"symbol": "ACME", "rowtime": dt.datetime(2011, 4, 1, 10, 0, second), "price": p}
        for second, p in enumerate(prices)
    ]
    rows = run(
        "PARTITION BY symbol ORDER BY rowtime MEASURES START_ROW.rowtime AS start_tstamp, "
        "LAST(PRICE_DOWN.rowtime) AS bottom_tstamp, LAST(PRICE_UP.rowtime) AS end_tstamp "
        "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST PRICE_UP "
        "PATTERN (START_ROW PRICE_DOWN+ PRICE_UP) "
        "DEFINE PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND "
        "PRICE_DOWN.price < START_ROW.price) OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1), "
        "PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)",
        ticks,
    )
    at = [
        (r["start_tstamp"].second, r["bottom_tstamp"].second, r["end_tstamp"].second) for r in rows
    ]
    assert at == [(4, 7, 8)]


def test_trinos_v_shape_over_orders():
    """The V over customers' orders that Trino's community broadcast (episode 23, "Trino
    looking for patterns") runs: its rows, and the result worked out by hand from them; in
    pandas, as Arrow, and over the rows as mappings (the column-wise run and the search)."""
    import pandas

    orders = pandas.DataFrame(
        [
            ("cust_1", dt.date(2020, 5, 11), 100),
            ("cust_1", dt.date(2020, 5, 12), 200),
            ("cust_2", dt.date(2020, 5, 13), 8),
            ("cust_1", dt.date(2020, 5, 14), 100),
            ("cust_2", dt.date(2020, 5, 15), 4),
            ("cust_1", dt.date(2020, 5, 16), 50),
            ("cust_1", dt.date(2020, 5, 17), 100),
            ("cust_2", dt.date(2020, 5, 18), 6),
        ],
        columns=["customer_id", "order_date", "price"],
    )
    clause = """PARTITION BY customer_id ORDER BY order_date
        MEASURES START.price AS start_price, LAST(DOWN.price) AS bottom_price,
            LAST(UP.price) AS final_price, START.order_date AS start_date,
            LAST(UP.order_date) AS final_date
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (START DOWN+ UP+)
        DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)"""
    published = [
        ("cust_1", 200, 50, 100, dt.date(2020, 5, 12), dt.date(2020, 5, 17)),
        ("cust_2", 8, 4, 6, dt.date(2020, 5, 13), dt.date(2020, 5, 18)),
    ]
    for data in (orders, orders.to_dict("records")):
        found = kleene.match_recognize(data, clause)
        assert list(found.itertuples(index=False, name=None)) == published
    numbered = orders.assign(order_date=range(8))  # the days as positions: Arrow computes all
    found = kleene.match_recognize(numbered, clause)
    assert list(found.itertuples(index=False, name=None)) == [
        (*row[:4], day, last) for row, (day, last) in zip(published, [(1, 6), (2, 7)], strict=True)
    ]


def test_case_picks_the_first_true_branch():
    rows = xs(1, 5, 2, None)
    out = run(
        "ORDER BY i MEASURES CASE WHEN x > 2 THEN 'big' WHEN x IS NULL THEN 'none' "
        "ELSE 'small' END AS size, CASE CLASSIFIER() WHEN 'A' THEN 1 END AS first "
        "ALL ROWS PER MATCH PATTERN (A B*) DEFINE B AS CASE WHEN x > 1 THEN true "
        "ELSE x IS NULL END",
        rows,
    )
    assert [(r["size"], r["first"]) for r in out] == [
        ("small", 1), ("big", None), ("small", None), ("none", None),
    ]  # fmt: skip


def test_within_keeps_the_search_from_trying_one_state_twice():
    """Trino's potentially exponential `(A+)+ B` over 20 rows A can take: with WITHIN the
    search still remembers the states that failed (WITHIN fixes nothing a search from one
    row changes); it once ran into the step limit."""
    rows = [{"t": t, "v": 1} for t in range(20)]
    clause = (
        "ORDER BY t MEASURES CLASSIFIER() AS c PATTERN ((A+)+ B) WITHIN INTERVAL '100' SECOND "
        "DEFINE A AS v = 1, B AS v = 2"
    )
    assert len(kleene.match_recognize(rows, clause, max_steps=100_000)) == 0
