"""A bare attribute of a Kleene variable means every event of it (the SES reading), checked
by the definition: a relationship on two Kleene variables holds for every pair of events."""

import operator

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.compiler.evaluate import attribute
from kleene.testing import events, match_lines
from kleene.testing.strategies import streams

_OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_OPERATORS |= {"=": operator.eq, "!=": operator.ne}


def _every_pair(match: kleene.Match, op: str) -> bool:
    """The definition: every event of p against every event of q; a null never satisfies."""
    for left in match.bindings["p"]:
        for right in match.bindings["q"]:
            a, b = attribute(left, "x"), attribute(right, "x")
            if a is None or b is None or not _OPERATORS[op](a, b):
                return False
    return True


@given(
    streams(),
    st.sampled_from(sorted(_OPERATORS)),
    st.sampled_from(["SEQ", "AND"]),
    st.sampled_from(["+", "*"]),
    st.sampled_from(["reference", "nfa", "lazy_chain", "match_window"]),
)
def test_a_relationship_on_two_kleene_variables_holds_for_every_pair(
    stream, op, structure, quantifier, plan
):
    pattern = f"PATTERN {structure}(A+ p[], B{quantifier} q[], C c)"
    unconstrained = kleene.match(f"{pattern} WITHIN 3", stream)
    expected = sorted(match_lines(m for m in unconstrained if _every_pair(m, op)))
    found = kleene.match(f"{pattern} WHERE p.x {op} q.x WITHIN 3", stream, plan=plan)
    assert sorted(match_lines(found)) == expected


def test_prev_compares_consecutive_events_of_a_kleene_variable():
    stream = events("""
        type ts id x
        A    1  a1 1
        A    2  a2 3
        A    3  a3 2
        B    4  b1 0
    """)
    query = "PATTERN SEQ(A+ p[], B b) WHERE prev(p.x) < p.x and p.x > b.x WITHIN 10"
    found = sorted(match_lines(kleene.match(query, stream)))
    # every rising subsequence of a1 a2 a3 (each above b1's 0)
    assert found == sorted(f"p={p} b=b1" for p in ["a1", "a2", "a3", "a1,a2", "a1,a3"])


def test_ses_notation_reads_as_seq_of_and():
    ses = kleene.parse("PATTERN SES({C c, P+ p}, {B b}) WHERE p.V > 1 WITHIN 15")
    seq = kleene.parse("PATTERN SEQ(AND(C c, P+ p[]), B b) WHERE p[i].V > 1 WITHIN 15")
    assert ses == seq
    untyped = kleene.parse("PATTERN SES({c, p+}, {b})")
    assert str(untyped) == "PATTERN SEQ(AND(_ c, _+ p[]), _ b)"
    assert kleene.parse(str(untyped)) == untyped


def test_a_variable_of_any_type_takes_every_event():
    stream = events("""
        type ts id
        A    1  a1
        X    2  x1
        B    3  b1
    """)
    found = sorted(match_lines(kleene.match("PATTERN SEQ(A a, _ m, B b)", stream, plan="nfa")))
    assert found == ["a=a1 m=x1 b=b1"]


def test_an_unknown_variable_inside_prev_is_named_with_its_place() -> None:
    with pytest.raises(kleene.PatternError, match="unknown variable q") as caught:
        kleene.compile("PATTERN SEQ(A a, B+ p[]) WHERE prev(q.V) < p.V WITHIN 15")
    assert "column 32" in str(caught.value)
