"""The kleene command with MATCH_RECOGNIZE query files (.sql)."""

import json
from pathlib import Path

import pandas

import kleene
from kleene.cli import main

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "v_shape.sql"


def test_match_runs_a_sql_file_as_match_recognize_over_a_table(stocks, tmp_path, capsys):
    out = tmp_path / "v.csv"
    assert main(["match", str(EXAMPLE), "-i", str(stocks), "-o", str(out), "--show", "2"]) == 0
    shown, err = capsys.readouterr()
    assert shown.startswith("  1. symbol=") and "ticks=" in shown
    written = pandas.read_csv(out)
    assert list(written.columns) == ["symbol", "top", "bottom", "back", "ticks"]
    expected = kleene.match_recognize(stocks, EXAMPLE.read_text())
    assert len(written) == len(expected) > 0
    assert f"{len(written)} rows" in err


def test_match_takes_the_order_column_as_the_timestamp_and_needs_no_type(tmp_path, capsys):
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps({"at": t, "v": v}) + "\n" for t, v in enumerate([3, 2, 1])))
    query = tmp_path / "down.sql"
    query.write_text(
        "MATCH_RECOGNIZE (ORDER BY at MEASURES count(*) AS n, FIRST(at) AS since "
        "PATTERN (A B+) DEFINE B AS v < PREV(v))"
    )
    assert main(["match", str(query), "-i", str(data)]) == 0
    assert json.loads(capsys.readouterr().out) == {"n": 3, "since": 0}


def test_explain_shows_the_clause_and_its_program(capsys):
    assert main(["explain", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "PATTERN (START DOWN{3,} UP{3,})" in out and "plan:           row_pattern" in out
    assert "map the row to DOWN" in out


def test_a_bad_clause_points_at_the_file_text(tmp_path, capsys):
    query = tmp_path / "bad.sql"
    query.write_text("MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B) DEFINE C AS x > 1)")
    assert main(["match", str(query), "-i", str(tmp_path / "none.csv")]) == 1
    err = capsys.readouterr().err
    assert "the pattern has no variable 'C'" in err and "^" in err


def test_match_sends_a_statement_to_kleene_run(tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text("SELECT * FROM ticks MATCH_RECOGNIZE (ORDER BY ts PATTERN (A))")
    assert main(["match", str(query), "-i", str(tmp_path / "t.csv")]) == 1
    assert "runs on Spark SQL: kleene run" in capsys.readouterr().err


CLAUSE = """ORDER BY at MEASURES count(*) AS n, FIRST(at) AS since
PATTERN (A B+) DEFINE B AS v < PREV(v)"""


def test_sql_reads_the_clause_alone_from_a_file_or_the_command_line(tmp_path, capsys):
    """As kleene.spark.match_recognize takes it: without MATCH_RECOGNIZE ( … ) around it,
    from a .sql file, or any file or the text itself under --sql."""
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps({"at": t, "v": v}) + "\n" for t, v in enumerate([3, 2, 1])))
    (tmp_path / "down.sql").write_text(CLAUSE)
    (tmp_path / "down.txt").write_text(CLAUSE)
    for query in (["down.sql"], ["down.txt", "--sql"], [CLAUSE, "--sql"]):
        given = [str(tmp_path / query[0]) if query[0].startswith("down") else query[0]]
        assert main(["match", *given, *query[1:], "-i", str(data)]) == 0
        assert json.loads(capsys.readouterr().out) == {"n": 3, "since": 0}
    assert main(["explain", CLAUSE, "--sql"]) == 0
    assert "plan:           row_pattern" in capsys.readouterr().out
    assert main(["match", str(tmp_path / "down.txt"), "-i", str(data)]) == 1
    assert "line 1" in capsys.readouterr().err  # read as SASE+ without --sql


def test_a_bad_clause_under_sql_points_at_its_own_text(tmp_path, capsys):
    assert main(["match", "ORDER BY at PATTERN (A B+) DEFINE C AS v > 1", "--sql",
                 "-i", str(tmp_path / "none.csv")]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "line 1, column 35" in err and "the pattern has no variable 'C'" in err


def test_explain_draws_the_program(tmp_path):
    out = tmp_path / "v.dot"
    assert main(["explain", str(EXAMPLE), "--dot", str(out)]) == 0
    graph = out.read_text()
    assert graph.startswith("digraph row_pattern {") and "map the row to START" in graph
    assert "doublecircle" in graph and "i4 -> i4 [style=dotted" in graph  # DOWN{3,}'s loop
