"""The options object and plan registry."""

import pytest

import kleene
from kleene.compiler.options import Options


def test_window_is_converted_to_timestamp_units():
    assert kleene.compile("PATTERN SEQ(A a) WITHIN 2 min").window == 120
    assert kleene.compile("PATTERN SEQ(A a) WITHIN 2 min", time_unit="ms").window == 120_000
    assert kleene.compile("PATTERN SEQ(A a) WITHIN 90", time_unit="ms").window == 90
    assert kleene.compile("PATTERN SEQ(A a) WITHIN 1.5 hours", time_unit="min").window == 90
    assert kleene.compile("PATTERN SEQ(A a)").window is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"colour": "red"}, "unknown option 'colour'"),
        ({"output": "some"}, "output must be one of all, non_overlapping"),
        ({"time_unit": "fortnight"}, "unknown time_unit"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(kleene.PlanError, match=message):
        kleene.compile("PATTERN SEQ(A a)", **options)


def test_unknown_plan():
    known = "auto, afa, lazy_chain, lazy_tree, match_window, nfa, nfa_backtrack, petri, reference"
    with pytest.raises(kleene.PlanError, match=f"unknown plan 'fast'; the plans are: {known}"):
        kleene.compile("PATTERN SEQ(A a)", plan="fast")


def test_auto_picks_a_plan_that_runs_the_pattern():
    assert kleene.compile("PATTERN SEQ(A a)", plan="auto").name == "nfa"


def test_options_are_frozen():
    options = Options.build(name="q")
    with pytest.raises(AttributeError):
        options.name = "other"  # type: ignore[misc]
