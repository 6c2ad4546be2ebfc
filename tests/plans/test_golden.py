"""The papers' worked examples and the semantics' micro-traces, run on every plan.

Each folder of tests/cases holds `pattern` (the query), `events` (a table, see
kleene.testing.events), `expected` (one match a line, in any order) and optionally `options`
(key=value lines passed to the plan).
"""

from pathlib import Path

import pytest

import kleene
from kleene.plans.base import PLANS
from kleene.testing import assert_matches, events, plans_taking

CASES = Path(__file__).parent.parent / "cases"


def load(case: Path):
    options = {}
    path = case / "options"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                key, value = line.split("=", 1)
                options[key.strip()] = value.strip()
    return (
        (case / "pattern").read_text(),
        events((case / "events").read_text()),
        (case / "expected").read_text().splitlines(),
        options,
    )


def _runs(plan, case):
    query, _, _, options = load(case)
    return plan in plans_taking(query, **options)


@pytest.mark.parametrize(
    ("case", "plan"),
    [
        (case, plan)
        for case in sorted(CASES.iterdir())
        for plan in sorted(PLANS)
        if _runs(plan, case)  # each plan on the cases it runs (petri runs LEAD rules)
    ],
    ids=lambda p: getattr(p, "name", p),
)
def test_case(case, plan):
    query, stream, expected, options = load(case)
    assert_matches(kleene.match(query, stream, plan=plan, **options), expected)


@pytest.mark.parametrize("case", sorted(CASES.iterdir()), ids=lambda p: p.name)
def test_case_without_partitioning(case):
    """Splitting the stream by partition key never changes the matches."""
    query, stream, expected, options = load(case)
    engine = kleene.Engine(query, plan="reference", partition=False, **options)
    found = engine.send_many(stream) + engine.close()
    assert_matches(found, expected)
