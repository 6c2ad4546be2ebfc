"""Finding the MATCH_RECOGNIZE tables of a Spark SQL statement (`kleene.spark.sql` runs
them on kleene and the rest in Spark SQL)."""

import pytest

pytest.importorskip("pyspark")

from kleene.errors import PatternError
from kleene.spark.recognize import find_table


def test_a_table_name_before_the_keyword():
    text = "SELECT * FROM db.ticks MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS x > 1) AS m"
    (start, end), relation, clause = find_table(text)
    assert relation == "db.ticks" and clause == "PATTERN (A) DEFINE A AS x > 1"
    assert text[start:end] == "db.ticks MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS x > 1)"


def test_a_subquery_before_the_keyword_and_the_innermost_first():
    inner = "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (B))"
    text = f"SELECT * FROM ({inner}) match_recognize (PATTERN (A)) mr"
    (start, end), relation, clause = find_table(text)
    assert (relation, clause) == ("t", "PATTERN (B)")
    assert text[start:end] == "t MATCH_RECOGNIZE (PATTERN (B))"


def test_strings_names_and_comments_are_not_read_as_the_keyword():
    text = (
        "SELECT 'MATCH_RECOGNIZE (' AS s, `MATCH_RECOGNIZE(` -- MATCH_RECOGNIZE (\n"
        "/* MATCH_RECOGNIZE ( */ FROM t"
    )
    assert find_table(text) is None
    text = "SELECT * FROM t MATCH_RECOGNIZE (DEFINE A AS s = ')' PATTERN (A))"
    assert find_table(text)[2] == "DEFINE A AS s = ')' PATTERN (A)"


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("SELECT * FROM t MATCH_RECOGNIZE", r"needs its clause in \( … \)", 32),
        ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)", "never closed", 33),
        ("MATCH_RECOGNIZE (PATTERN (A))", "needs a table, a view or a subquery", 1),
    ],
)
def test_errors_point_at_the_statement(text, message, column):
    with pytest.raises(PatternError, match=message) as raised:
        find_table(text)
    assert raised.value.column == column
