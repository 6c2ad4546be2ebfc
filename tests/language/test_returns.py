"""RETURN: the values each match reports ("nothing chooses which fields come
back"), read, printed, checked, computed in-process, written, and on Spark (tests/spark)."""

import json

import pytest

import kleene
from kleene.cli import main

QUERY = (
    "PATTERN SEQ(A a, B+ b[], C c) WHERE skip_till_next_match { [sym] } WITHIN 10 "
    "RETURN a.sym, max(b[].price) AS peak, b.len AS n, c.price - a.price AS change, "
    "b[b.len].price > b[1].price AS rising"
)
EVENTS = [
    {"type": t, "ts": i, "sym": s, "price": p}
    for i, (t, s, p) in enumerate(
        [("A", "X", 10), ("B", "X", 11), ("B", "X", 14), ("C", "X", 9), ("A", "Y", 5)]
    )
]


def test_return_reads_and_prints_back():
    pattern = kleene.parse(QUERY)
    assert [r.name for r in pattern.returns] == ["a.sym", "peak", "n", "change", "rising"]
    assert str(pattern).splitlines()[-1] == (
        "RETURN a.sym, max(b[].price) AS peak, b.len AS n, c.price - a.price AS change, "
        "b[b.len].price > b[1].price AS rising"
    )
    assert kleene.parse(str(pattern)) == pattern


def test_each_match_carries_its_values():
    (found,) = kleene.match(QUERY, EVENTS)
    assert found.values == {"a.sym": "X", "peak": 14, "n": 2, "change": -1, "rising": True}
    assert found.to_dict()["values"] == found.values
    row = found.to_row()
    assert row["peak"] == 14 and row["a"][0]["price"] == 10
    frame = kleene.to_pandas([found])
    assert frame[["a.sym", "peak", "n", "change", "rising"]].to_dict("records") == [found.values]


def test_a_variable_of_another_or_branch_returns_null():
    query = "PATTERN OR(SEQ(A a, C c), SEQ(B b, C c)) WITHIN 5 RETURN a.price AS pa, b.price AS pb"
    values = [m.values for m in kleene.match(query, EVENTS)]
    assert {"pa": None, "pb": 14} in values and {"pa": 10, "pb": None} in values


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("PATTERN SEQ(A a, B+ b[]) RETURN b.price", "b is a Kleene variable"),
        ("PATTERN SEQ(A a, B+ b[]) RETURN b[i].price", "RETURN has no i"),
        ("PATTERN SEQ(A a, NOT(C c), B b) WITHIN 5 RETURN c.x", "c is negated"),
        ("PATTERN SEQ(A a, B b) RETURN z.x", "unknown variable z"),
        ("PATTERN SEQ(A a, B b) RETURN a.x AS v, b.x AS v", "RETURN names 'v' twice"),
        ("PATTERN SEQ(A a, B b) RETURN a.x AS start_ts", "a match's row already has"),
        ("PATTERN SEQ(A a, B b) RETURN [x]", "is a condition"),
    ],
)
def test_bad_returns_point_at_the_place(text, message):
    with pytest.raises(kleene.PatternError, match=message.replace("[", r"\[")) as caught:
        kleene.parse(text)
    assert caught.value.column > 1


def test_kleene_match_shows_and_writes_the_values(tmp_path, capsys):
    source = tmp_path / "e.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    out = tmp_path / "m.jsonl"
    assert main(["match", QUERY, "-i", str(source), "-o", str(out), "--show", "1"]) == 0
    shown = capsys.readouterr().out
    assert "a.sym='X' peak=14 n=2 change=-1 rising=True" in shown
    assert json.loads(out.read_text())["peak"] == 14  # beside the variables, as in every format


def test_the_builder_returns_too():
    from kleene.language.sase.builder import event, pattern, seq, var

    a, b = var("a"), var("b")
    built = pattern(
        seq(event("A", "a"), event("B", "b")), within=5, returns={"gain": b.price - a.price}
    )
    assert str(built).endswith("RETURN b.price - a.price AS gain")
    assert [m.values for m in kleene.match(built, EVENTS[:2])] == [{"gain": 1}]
