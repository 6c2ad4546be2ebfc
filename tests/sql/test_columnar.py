"""The column-wise run of a row pattern (`Columnar`: conditions and measures in Arrow, the
preferred matches by Python's `re`) gives what the search gives: hypothesis over clauses it
takes and tables with partitions and nulls, and each construct by hand."""

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import kleene
from kleene.compiler.row_pattern import check_clause
from kleene.io.frames import columns_frame
from kleene.io.recognize import output_columns
from kleene.language.sql import ast as Q
from kleene.language.sql.printer import pattern_text
from kleene.language.sql.reader import read
from kleene.plans.row_pattern.columnar import Columnar

#: Measures the column-wise run computes (FIRST(A.x, 1) over a variable in two places
#: is declined at run time, and left to the search).
MEASURES = (
    "MATCH_NUMBER() AS m",
    "CLASSIFIER() AS c",
    "count(*) AS n",
    "FIRST(x) AS f",
    "LAST(B.x) AS lb",
    "count(A.*) AS na",
    "sum(x) AS s",
    "max(A.x) AS mx",
    "min(x) AS mn",
    "avg(B.x) AS av",
    "count(U.x) AS cu",
    "PREV(x) AS p",
    "NEXT(FIRST(x), 1) AS nf",
    "LAST(x, 1) AS l1",
    "FIRST(A.x, 1) AS fa1",
    "x AS cur",
    "A.x * 2 - 1 AS a1",
    "CLASSIFIER(U) AS cl",
    "U.x IS NULL AS un",
)
CONDITIONS = (
    None,
    "x > PREV(x)",
    "x = 1",
    "x < 2 OR x IS NULL",
    "NEXT(x) > x",
    "x <= PREV(x, 2) + 1",
    "NOT x = 0",
)
NAMES = ("A", "B", "C")


def simple_patterns() -> st.SearchStrategy[Q.RowPattern]:
    """Row patterns whose quantifiers apply to one variable: what `Columnar` takes."""
    bounds = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))).filter(
        lambda b: b[1] is None or b[0] <= b[1]
    )
    quantified = st.builds(
        lambda name, b, greedy: Q.Repeat(Q.Label(name), b[0], b[1], greedy),
        st.sampled_from(NAMES),
        bounds,
        st.booleans(),
    )
    leaf = st.one_of(
        st.sampled_from(NAMES).map(Q.Label),
        quantified,
        st.sampled_from([Q.Anchor("^"), Q.Anchor("$")]),
    )

    def grow(inner):
        items = st.lists(inner, min_size=2, max_size=3).map(tuple)
        return st.one_of(items.map(Q.Concat), items.map(Q.Alternation), items.map(Q.Permute))

    return st.recursive(leaf, grow, max_leaves=5)


@st.composite
def cases(draw):
    pattern = draw(simple_patterns().filter(Q.labels))
    present = Q.labels(pattern)
    defines = [
        f"{name} AS {condition}"
        for name in present
        if (condition := draw(st.sampled_from(CONDITIONS))) is not None
    ]
    members = [name for name in ("A", "B") if name in present] or [present[0]]
    skips = ["", "AFTER MATCH SKIP TO NEXT ROW", "AFTER MATCH SKIP PAST LAST ROW"]
    skips += [f"AFTER MATCH SKIP TO {w} {n}" for w in ("FIRST", "LAST") for n in present]
    skip = draw(st.sampled_from(skips))
    head = draw(st.sampled_from(["PARTITION BY k ORDER BY i", "ORDER BY i DESC", ""]))
    measures = draw(st.lists(st.sampled_from(MEASURES), min_size=1, max_size=5, unique=True))
    measures = [m for m in measures if "A." not in m or "A" in present]
    measures = [m for m in measures if "B." not in m or "B" in present] or ["count(*) AS n"]
    define = f" DEFINE {', '.join(defines)}" if defines else ""
    text = (
        f"{head} MEASURES {', '.join(measures)} ONE ROW PER MATCH {skip} "
        f"PATTERN ({pattern_text(pattern)}) SUBSET U = ({', '.join(members)}){define}"
    )
    xs = draw(st.lists(st.one_of(st.integers(0, 2), st.none()), min_size=1, max_size=12))
    keys = draw(st.lists(st.sampled_from("pq"), min_size=len(xs), max_size=len(xs)))
    rows = [{"k": k, "i": i, "x": x} for i, (k, x) in enumerate(zip(keys, xs, strict=True))]
    return text, rows


def by_search(text, rows):
    """What the search gives (rows as mappings take no column-wise run), or its error."""
    try:
        return kleene.match_recognize(rows, text)
    except kleene.KleeneError as error:
        return type(error)


@given(cases())
def test_the_column_wise_run_gives_what_the_search_gives(case):
    text, rows = case
    clause = read(text)
    check_clause(clause)
    columnar = Columnar.of(clause)
    assert columnar is not None
    table = pa.Table.from_pylist(rows, schema=pa.schema([("k", pa.string()), ("i", pa.int64()),
                                                         ("x", pa.int64())]))  # fmt: skip
    want = by_search(text, rows)
    arranged, cuts = _arranged(table, clause)
    found = columnar.run(arranged, cuts)
    event("declined" if found is None else "run column-wise")
    if found is None:
        return
    assert not isinstance(want, type), f"the search raised {want.__name__}"
    got = columns_frame(found, output_columns(clause, table.column_names))
    pd.testing.assert_frame_equal(got, want)


def _arranged(table, clause):
    from kleene.io.recognize import _sorted

    arranged, cuts, _ = _sorted(table, clause)
    return arranged, cuts


def test_the_benchmarks_clauses_run_column_wise():
    """The V, the W and a run of rises (docs/benchmarks.md) are taken, and give the
    search's rows, on a random walk of several symbols."""
    from benchmarks.sql import QUERIES, prices

    frame = prices(3000, 3)
    for clause_text in QUERIES.values():
        clause = read(clause_text)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        arranged, cuts = _arranged(table, clause)
        found = Columnar.of(clause).run(arranged, cuts)
        assert found is not None
        got = columns_frame(found, output_columns(clause, table.column_names))
        want = kleene.match_recognize(frame.to_dict("records"), clause_text)
        assert len(want) > 50
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize(
    "text",
    [
        "PATTERN ((A B)+)",  # a quantified group: the capture groups would not name rows
        "PATTERN (A) DEFINE A AS x > A.y OR CLASSIFIER() = 'A'",  # reads the match so far
        "ALL ROWS PER MATCH PATTERN (A)",
        "PATTERN (PERMUTE(A, B, C, D, E))",
        "PATTERN ((A?)?)",  # an optional group that may be empty
    ],
)
def test_clauses_the_search_must_run_are_not_taken(text):
    clause = read(text)
    assert Columnar.of(clause) is None


def test_a_loop_whose_exit_holds_on_its_rows_is_left_to_the_search():
    """`A+ B` where a row meets A and B: `re` would try every split of the run; the
    search (which remembers failed states) takes it."""
    clause = read("MEASURES count(*) AS n PATTERN (A+ B) DEFINE A AS x > 0, B AS x > 1")
    table = pa.table({"x": [1, 2, 2, 0]})
    assert Columnar.of(clause).run(table, [0, 4]) is None
    exclusive = read("MEASURES count(*) AS n PATTERN (A+ B) DEFINE A AS x = 1, B AS x = 2")
    assert Columnar.of(exclusive).run(table, [0, 4])["n"].to_pylist() == [2]


def test_an_overflow_in_arrow_is_left_to_the_search():
    clause = read("MEASURES count(*) AS n PATTERN (A) DEFINE A AS x * x > 0")
    table = pa.table({"x": [2**40, 3]})
    assert Columnar.of(clause).run(table, [0, 2]) is None
    assert kleene.match_recognize(table, clause)["n"].tolist() == [1, 1]


def test_a_skip_to_a_variable_the_match_lacks_is_the_searchs_error():
    text = "MEASURES count(*) AS n AFTER MATCH SKIP TO FIRST B PATTERN (A B?) DEFINE B AS x = 9"
    table = pa.table({"x": [1, 2]})
    assert Columnar.of(read(text)).run(table, [0, 2]) is None
    with pytest.raises(kleene.KleeneError, match="maps no row to B"):
        kleene.match_recognize(table, text)


def test_a_loop_over_a_long_run_is_left_to_the_search_which_walks_it_once():
    """A falling partition of 20,000 rows under `STRT DOWN+ UP+`: nothing ends the run, so
    `re` would walk it again from each of its rows; the search remembers where DOWN+ failed
    (this ran 96 s before it did)."""
    clause = read("ORDER BY t MEASURES count(*) AS n PATTERN (STRT DOWN+ UP+) "
                  "DEFINE DOWN AS x < PREV(x), UP AS x > PREV(x)")  # fmt: skip
    falling = pa.table({"t": range(20_000), "x": range(20_000, 0, -1)})
    assert Columnar.of(clause).run(falling, [0, 20_000]) is None
    assert len(kleene.match_recognize(falling, clause)) == 0
    short = pa.table({"t": range(6), "x": [5, 4, 3, 4, 6, 5]})
    assert Columnar.of(clause).run(short, [0, 6])["n"].to_pylist() == [5]
