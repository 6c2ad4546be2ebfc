"""The `nfa` plan against `reference`: random patterns and streams, every strategy, both
output formats, with and without merging; and the shared versioned buffer by itself."""

from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.testing.strategies import cases

OUTPUTS = ("all", "non_overlapping")


def ids(matches):
    """The matches as comparable values, in a canonical order (the engine orders matches by
    end, start and event ids; ties between different bindings of one set of events remain)."""
    return sorted(sorted(m.ids().items()) for m in matches)


def run(plan, events, partition=True):
    engine = kleene.Engine(plan, partition=partition)
    return engine.send_many(events) + engine.close()


@given(cases(max_events=9), st.sampled_from(OUTPUTS), st.booleans())
def test_nfa_equals_reference(case, output, merge):
    expected = ids(kleene.match(case.pattern, case.events, plan="reference", output=output))
    actual = ids(kleene.match(case.pattern, case.events, plan="nfa", output=output, merge=merge))
    assert actual == expected


@given(cases(max_events=9))
def test_nfa_reports_each_match_when_reference_does(case):
    """Per event, the same matches come out: emission timing equals the reference's."""
    reference = kleene.Engine(case.pattern, plan="reference")
    nfa = kleene.Engine(case.pattern, plan="nfa")
    for event in case.events:
        assert ids(nfa.send(event)) == ids(reference.send(event))
    assert ids(nfa.close()) == ids(reference.close())


@given(cases(max_events=9))
def test_nfa_without_partitioning_equals_reference(case):
    plan = kleene.compile(case.pattern, plan="nfa")
    expected = ids(kleene.match(case.pattern, case.events, plan="reference"))
    assert ids(run(plan, case.events, partition=False)) == expected


@given(cases(max_events=9), st.sampled_from(OUTPUTS))
def test_nfa_backtrack_equals_reference(case, output):
    expected = ids(kleene.match(case.pattern, case.events, plan="reference", output=output))
    assert (
        ids(kleene.match(case.pattern, case.events, plan="nfa_backtrack", output=output))
        == expected
    )
