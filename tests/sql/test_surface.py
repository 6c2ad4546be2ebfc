"""`kleene.match_recognize` over every input it takes, the output's columns, and bad input."""

import json

import pandas
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene
from kleene.errors import EventError, PatternError

CLAUSE = """PARTITION BY sym ORDER BY t
    MEASURES FIRST(price) AS top, LAST(DOWN.price) AS bottom, count(*) AS n
    PATTERN (START DOWN+) DEFINE DOWN AS price < PREV(price)"""

ROWS = [
    {"sym": "A", "t": 1, "price": 5.0},
    {"sym": "B", "t": 1, "price": 9.0},
    {"sym": "A", "t": 2, "price": 4.0},
    {"sym": "B", "t": 2, "price": 8.0},
    {"sym": "A", "t": 3, "price": 3.0},
    {"sym": "B", "t": 3, "price": 10.0},
]
EXPECTED = [
    {"sym": "A", "top": 5.0, "bottom": 3.0, "n": 3},
    {"sym": "B", "top": 9.0, "bottom": 8.0, "n": 2},
]


def records(frame):
    return frame.to_dict("records")


def test_pandas_arrow_and_mappings_give_the_same_frame():
    frame = pandas.DataFrame(ROWS)
    for data in (frame, pa.Table.from_pandas(frame), ROWS, iter(ROWS)):
        out = kleene.match_recognize(data, CLAUSE)
        assert list(out.columns) == ["sym", "top", "bottom", "n"]
        assert records(out) == EXPECTED


def test_files_of_each_format(tmp_path):
    frame = pandas.DataFrame(ROWS)
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    pq.write_table(pa.Table.from_pandas(frame), tmp_path / "t.parquet")
    for name in ("t.csv", "t.jsonl", "t.parquet"):
        assert records(kleene.match_recognize(tmp_path / name, CLAUSE)) == EXPECTED
        assert records(kleene.match_recognize(str(tmp_path / name), CLAUSE)) == EXPECTED


def test_events_are_rows_with_type_and_ts_columns():
    events = [kleene.Event("Tick", i, {"price": p}) for i, p in enumerate([3, 2, 1])]
    out = kleene.match_recognize(
        events,
        "ORDER BY ts MEASURES count(*) AS n, LAST(type) AS kind PATTERN (A B+) "
        "DEFINE B AS price < PREV(price)",
    )
    assert records(out) == [{"n": 3, "kind": "Tick"}]


def test_the_whole_clause_with_its_keyword_is_taken_too():
    out = kleene.match_recognize(ROWS, f"MATCH_RECOGNIZE ({CLAUSE})")
    assert records(out) == EXPECTED


def test_all_rows_columns_come_partition_order_measures_then_the_rest():
    rows = [{"x": 1, "t": 2, "k": "a", "y": "p"}, {"x": 2, "t": 1, "k": "a", "y": "q"}]
    out = kleene.match_recognize(
        rows, "PARTITION BY k ORDER BY t MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A+)"
    )
    assert list(out.columns) == ["k", "t", "c", "x", "y"]
    assert records(out) == [
        {"k": "a", "t": 1, "c": "A", "x": 2, "y": "q"},
        {"k": "a", "t": 2, "c": "A", "x": 1, "y": "p"},
    ]


def test_an_empty_result_has_every_column():
    out = kleene.match_recognize(ROWS, CLAUSE.replace("DOWN+", "DOWN{5}"))
    assert out.empty and list(out.columns) == ["sym", "top", "bottom", "n"]
    assert list(kleene.match_recognize([], "MEASURES count(*) AS n PATTERN (A)").columns) == ["n"]


def test_order_by_descending_nulls_and_ties():
    rows = [{"t": 1, "v": "a"}, {"t": None, "v": "b"}, {"t": 2, "v": "c"}, {"t": 1, "v": "d"}]
    query = "ORDER BY t {} MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A+)"
    order = lambda how: list(kleene.match_recognize(rows, query.format(how))["v"])  # noqa: E731
    assert order("") == ["b", "a", "d", "c"]  # nulls first ascending; ties in input order
    assert order("DESC") == ["c", "a", "d", "b"]  # nulls last descending
    assert order("NULLS LAST") == ["a", "d", "c", "b"]
    assert order("DESC NULLS FIRST") == ["b", "c", "a", "d"]


def test_partitions_come_in_the_order_of_their_first_row():
    rows = [{"k": k, "t": i} for i, k in enumerate("babc")]
    out = kleene.match_recognize(
        rows, "PARTITION BY k ORDER BY t MEASURES count(*) AS n PATTERN (A+)"
    )
    assert records(out) == [{"k": "b", "n": 2}, {"k": "a", "n": 1}, {"k": "c", "n": 1}]


def test_an_unknown_column_is_an_error_with_a_caret_and_a_guess():
    frame = pandas.DataFrame(ROWS)
    with pytest.raises(PatternError) as raised:
        kleene.match_recognize(frame, CLAUSE.replace("LAST(DOWN.price)", "LAST(DOWN.prize)"))
    message = str(raised.value)
    assert "no column 'prize' (did you mean price?)" in message and "^^^" in message
    with pytest.raises(PatternError, match="no column 'when'"):
        kleene.match_recognize(frame, "ORDER BY when PATTERN (A)")


def test_rows_as_mappings_warn_of_a_column_none_carries(caplog):
    clause = CLAUSE.replace("LAST(DOWN.price)", "LAST(DOWN.prize)")
    out = kleene.match_recognize(ROWS, clause)
    assert "no column 'prize'" in caplog.text and "reads as null" in caplog.text
    assert out["bottom"].isna().all() and len(out) == 2


def test_no_rows_at_all_give_no_matches_and_no_warning_of_columns(caplog):
    """An empty list has no columns to miss: the clause's output columns, no rows, no
    warning (each column it names used to be warned of, with an empty list of columns)."""
    out = kleene.match_recognize([], CLAUSE)
    assert len(out) == 0 and "bottom" in out.columns
    assert "no column" not in caplog.text


def test_a_measure_hiding_an_input_column_is_refused():
    with pytest.raises(PatternError, match="has an input column's name"):
        kleene.match_recognize(ROWS, "MEASURES count(*) AS price ALL ROWS PER MATCH PATTERN (A)")


def test_bad_rows_are_named():
    with pytest.raises(EventError, match="ORDER BY t: its values cannot be ordered together"):
        kleene.match_recognize([{"t": 1}, {"t": "x"}], "ORDER BY t PATTERN (A)")
    with pytest.raises(EventError, match="PARTITION BY k: row 2 holds list"):
        kleene.match_recognize([{"k": 1}, {"k": [1]}], "PARTITION BY k PATTERN (A)")
    with pytest.raises(EventError, match="row 2 is int 5"):
        kleene.match_recognize([{"k": 1}, 5], "PATTERN (A)")
    with pytest.raises(EventError, match="cannot compute"):
        kleene.match_recognize([{"x": "a"}, {"x": 1}], "PATTERN (A B) DEFINE B AS x > PREV(x)")


def test_a_value_that_cannot_be_computed_names_its_input_row(tmp_path):
    rows = [
        {"k": "a", "t": 3, "x": 1},
        {"k": "b", "t": 1, "x": "oops"},
        {"k": "b", "t": 0, "x": 2},
    ]
    clause = "PARTITION BY k ORDER BY t PATTERN (A B) DEFINE B AS x > PREV(x) + 1"
    with pytest.raises(EventError, match=r"^the input, row 2: cannot compute x > PREV\(x\)"):
        kleene.match_recognize(rows, clause)
    path = tmp_path / "t.csv"
    path.write_text("k,t,s\na,3,p\nb,1,q\nb,0,r\n")
    with pytest.raises(EventError) as raised:
        kleene.match_recognize(
            path, "PARTITION BY k ORDER BY t PATTERN (A B) DEFINE B AS s + 1 > 0"
        )
    assert (raised.value.source, raised.value.row) == (str(path), 2)
    measured = "ORDER BY t MEASURES x * 2 AS twice PATTERN (A)"
    with pytest.raises(EventError, match="row 2: cannot compute"):
        kleene.match_recognize([{"t": 0, "x": 1}, {"t": 1, "x": "z"}], measured)


def test_bad_files_are_named(tmp_path):
    with pytest.raises(EventError, match="no such file"):
        kleene.match_recognize(tmp_path / "none.csv", "PATTERN (A)")
    (tmp_path / "t.txt").write_text("x\n1\n")
    with pytest.raises(EventError, match="cannot tell the format"):
        kleene.match_recognize(tmp_path / "t.txt", "PATTERN (A)")
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\n{"x": \n')
    with pytest.raises(EventError, match=r"bad\.jsonl"):
        kleene.match_recognize(tmp_path / "bad.jsonl", "PATTERN (A)")


def test_a_clause_calls_the_functions_its_options_pass():
    """functions={...} reaches a MATCH_RECOGNIZE clause as it reaches a SASE+ query (its
    calls are checked against the query's own table, not only the registered one)."""
    clause = "MATCH_RECOGNIZE (ORDER BY ts MEASURES tagged(A.x) AS t PATTERN (A))"
    events = [{"type": "T", "ts": 1, "x": 3}]
    assert kleene.match(clause, events, functions={"tagged": lambda v: f"#{v}"}) == [{"t": "#3"}]
    with pytest.raises(kleene.PatternError, match="unknown function tagged") as raised:
        kleene.match(clause, events)
    assert raised.value.column == 39


def test_match_recognize_takes_functions_as_compile_does():
    rows = [{"t": 1, "x": 3}, {"t": 2, "x": 5}]
    clause = "ORDER BY t MEASURES tagged(LAST(x)) AS m PATTERN (A+)"
    frame = kleene.match_recognize(rows, clause, functions={"tagged": lambda v: f"#{v}"})
    assert frame.to_dict("records") == [{"m": "#5"}]
    with pytest.raises(PatternError, match="unknown function tagged"):
        kleene.match_recognize(rows, clause)


def test_arrays_and_the_functions_that_read_them():
    """ARRAY[...] keeps its nulls and equals an array_agg of the same values; cardinality,
    element_at (from 1, or -1 at the end; 0 is an error naming the row), contains,
    array_join and concat_ws (which leave nulls out, or write array_join's null text)."""
    rows = [{"t": 1, "x": 3, "s": "a"}, {"t": 2, "x": None, "s": None}, {"t": 3, "x": 5, "s": "c"}]
    clause = (
        "ORDER BY t MEASURES array_agg(x) = ARRAY[3, null, 5] AS same, ARRAY[x, null] AS pair, "
        "cardinality(array_agg(x)) AS n, element_at(array_agg(x), -1) AS last, "
        "element_at(array_agg(x), 4) AS past, contains(array_agg(s), 'c') AS has_c, "
        "array_join(array_agg(x), '/') AS joined, array_join(array_agg(x), '/', '?') AS shown, "
        "concat_ws('-', FIRST(s), LAST(s, 1), LAST(s)) AS words PATTERN (A+)"
    )
    [found] = kleene.match_recognize(rows, clause).to_dict("records")
    assert found == {
        "same": True, "pair": [5, None], "n": 3, "last": 5, "past": None, "has_c": True,
        "joined": "3/5", "shown": "3/?/5", "words": "a-c",
    }  # fmt: skip
    with pytest.raises(EventError, match=r"element_at\(array_agg\(x\), 0\) failed") as raised:
        kleene.match_recognize(
            rows, "ORDER BY t MEASURES element_at(array_agg(x), 0) AS m PATTERN (A+)"
        )
    assert raised.value.row is not None
