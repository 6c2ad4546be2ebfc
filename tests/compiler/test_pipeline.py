"""The compile pipeline: the language by the first keyword, and "auto" choosing among the
plans of that language only."""

import pytest

import kleene
from kleene.compiler.pipeline import PASSES, language_of
from kleene.errors import PlanError


def test_the_passes_run_in_order() -> None:
    assert [name for name, _ in PASSES] == ["read", "validate", "analyse", "choose", "instantiate"]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("PATTERN SEQ(A a)", "sase"),
        ("  -- a comment\n/* another */ from A AS a MATCH a EMIT Event X()", "lead"),
        ("SELECT 1", "sase"),  # SASE+ says what it expected, at line 1, column 1
    ],
)
def test_the_first_keyword_names_the_language(text: str, language: str) -> None:
    assert language_of(text).name == language


def test_auto_gives_the_reasons_of_the_plans_of_the_querys_language_only() -> None:
    with pytest.raises(PlanError) as caught:
        kleene.compile("PATTERN SEQ(A a, B b) WITHIN 5", construct=False, timeouts=True)
    message = str(caught.value)
    assert message.startswith("no plan can run this query; ")
    assert "reference: it always builds its matches" in message
    assert "lazy_chain, afa: it does not run timed-out partial matches" in message
    assert "nfa: construct=False builds no match" in message
    assert "petri" not in message and "LEAD" not in message


def test_a_plan_of_another_language_says_which_plans_run_it() -> None:
    with pytest.raises(PlanError, match="LEAD rules run on plan 'petri'"):
        kleene.compile("FROM A AS a MATCH a EMIT Event X()", "nfa")


def test_a_pattern_too_deep_for_a_plans_generated_code_goes_to_another_plan() -> None:
    """window_join nests a loop per variable; Python nests 20 blocks at most."""
    query = "PATTERN SEQ(" + ", ".join(f"A a{i}" for i in range(22)) + ") WITHIN 30"
    with pytest.raises(PlanError, match="nests a loop for each variable"):
        kleene.compile(query, plan="window_join")
    events = [{"type": "A", "ts": t} for t in range(23)]
    assert kleene.compile(query).name != "window_join"
    assert len(kleene.match(query, events)) == 23  # choose 22 of 23 in order
