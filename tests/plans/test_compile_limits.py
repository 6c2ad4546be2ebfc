"""Compile work is bounded on every plan: a pattern too large for a plan's construction is
refused with a `KleeneError` that names why (never a Python error from generated code, a
recursion limit or a hang), and `auto` picks a plan that takes it."""

import pytest

import kleene
from kleene.plans import PLANS
from tests.test_fuzz import bounded

LARGE = {
    "seq of 60": "PATTERN SEQ(" + ", ".join(f"A a{i}" for i in range(60)) + ") WITHIN 5",
    "and of 12": "PATTERN AND(" + ", ".join(f"A a{i}" for i in range(12)) + ") WITHIN 5",
    "or of 40": "PATTERN OR(" + ", ".join(f"SEQ(A a{i}, B b{i})" for i in range(40)) + ") WITHIN 5",
    "kleene 20": "PATTERN SEQ(" + ", ".join(f"A+ a{i}[]" for i in range(20)) + ") WITHIN 5",
    "and of seqs": "PATTERN SEQ(A a0, AND("
    + ", ".join(f"SEQ(A x{i}, B y{i})" for i in range(8))
    + ")) WITHIN 5",
}
SASE_PLANS = sorted(n for n, cls in PLANS.items() if "sase" in cls.languages)


@pytest.mark.parametrize("plan", SASE_PLANS)
@pytest.mark.parametrize("name", sorted(LARGE))
def test_a_large_pattern_compiles_or_is_refused_with_a_reason(plan, name):
    refused = None
    with bounded():
        try:
            compiled = kleene.compile(LARGE[name], plan)
        except kleene.KleeneError as error:
            refused = str(error)
    if refused is not None:
        assert "cannot run this query" in refused or "states" in refused, refused
        return
    events = [kleene.Event("A", 0, {}, 0), kleene.Event("B", 1, {}, 1)]
    with bounded():
        kleene.match(compiled, events)  # runs too


@pytest.mark.parametrize("name", sorted(LARGE))
def test_auto_picks_a_plan_that_takes_a_large_pattern(name):
    with bounded():
        assert kleene.compile(LARGE[name]).name in SASE_PLANS


def test_the_automatons_refusal_names_the_wide_and():
    with pytest.raises(kleene.KleeneError, match="an AND of 8 elements tracks each combination"):
        kleene.compile(LARGE["and of seqs"], "nfa")
