"""Earliest and maximal matches (the match-window paper, section 3), by the definition."""

import pytest

import kleene
from kleene.testing import events, match_lines

STREAM = events("""
    type ts id x
    A    1  a1 1
    B    2  b1 1
    B    3  b2 2
    A    4  a2 5
    B    5  b3 3
""")
QUERY = "PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > b[i-1].x WITHIN 10"


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        # every subsequence of rising B events after an A
        ("all", 8),
        # per first event: b starts with the earliest B any match from there starts b with
        ("earliest", ["a=a1 b=b1", "a=a1 b=b1,b2", "a=a1 b=b1,b3", "a=a1 b=b1,b2,b3", "a=a2 b=b3"]),
        # no B can join b and still match: b1 b2 b3 from a1, b3 from a2
        ("maximal", ["a=a1 b=b1,b2,b3", "a=a2 b=b3"]),
        ("earliest_maximal", ["a=a1 b=b1,b2,b3", "a=a2 b=b3"]),
    ],
)
def test_selections_on_one_stream(selection, expected):
    found = sorted(match_lines(kleene.match(QUERY, STREAM, selection=selection)))
    if isinstance(expected, int):
        assert len(found) == expected
    else:
        assert found == sorted(expected)


def test_a_group_is_reported_once_its_window_has_passed():
    engine = kleene.Engine(QUERY, selection="maximal")
    assert engine.send_many(STREAM) == []  # a1's window (to ts 11) and a2's are still open
    assert match_lines(engine.advance_to(11)) == ["a=a1 b=b1,b2,b3"]
    assert match_lines(engine.close()) == ["a=a2 b=b3"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"selection": "latest"}, "selection must be one of"),
        ({"selection": "maximal", "output": "non_overlapping"}, "drop output"),
    ],
)
def test_bad_selections(options, message):
    with pytest.raises(kleene.PlanError, match=message):
        kleene.compile(QUERY, **options)
