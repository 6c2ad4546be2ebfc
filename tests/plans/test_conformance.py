"""Every registered plan against the plan contract (`kleene.testing.conformance`): the same
outputs as an oracle, reported at the same event, with the same variable order; and
partitioning, pickled and resumed state, idle eviction (finished keys retired) and deadlines
changing nothing; for a plan taking events in any order, disorder, retractions and
punctuations netting the oracle's matches.

A plan added to the registry is checked here without a line more, on queries of the
languages it runs: SASE+ patterns against `reference`, LEAD rules against the SASE+ pattern
that means the same (where one is known), MATCH_RECOGNIZE clauses on every check that asks
no oracle (tests/sql checks their matches against a declarative one). A query a plan
cannot run is rejected (a plan says so by its `refusal`); a check a plan declares in its
`limits` is skipped, and nothing else."""

import random

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import kleene
from kleene.compiler.analysis import analyze
from kleene.compiler.options import Options
from kleene.plans import PLANS
from kleene.plans.base import STATE_FORMAT
from kleene.plans.window_join import _Choices
from kleene.testing import conformance
from kleene.testing.strategies import cases_for, row_pattern_cases, rule_cases

NAMES = sorted(PLANS)
#: The plans of SASE+ patterns.
PATTERN_PLANS = sorted(n for n, cls in PLANS.items() if "sase" in cls.languages)


options = st.one_of(
    st.just({}),
    st.just({"anchors": True}),  # the afa plan's Appendix D flavor; others ignore it
    st.just({"output": "non_overlapping"}),
    st.sampled_from(["earliest", "maximal", "earliest_maximal"]).map(lambda s: {"selection": s}),
    st.just({"timeouts": True}),  # timed-out partial matches, where a plan reports them
)


def test_every_plan_runs_some_language_the_suite_draws():
    assert all(PLANS[name].languages & {"sase", "lead", "sql"} for name in NAMES)


@pytest.mark.parametrize(
    ("name", "check"),
    [
        (name, check)
        for name in NAMES
        for check in sorted(conformance.CHECKS)
        if conformance.applies(check, PLANS[name])
    ],
)
@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_conformance(name, check, data):
    if "sase" in PLANS[name].languages:
        case = data.draw(cases_for(name), label="case")
        query, events, twin = case.pattern, case.events, {}
        chosen = data.draw(options, label="options")
    elif "sql" in PLANS[name].languages:  # MATCH_RECOGNIZE: row_reference is the oracle
        case = data.draw(row_pattern_cases(), label="case")
        query, events, twin, chosen = case.query, case.events, {}, {}
    else:
        rule = data.draw(rule_cases(), label="case")
        query, events, chosen = rule.rule, rule.events, {}
        twin = {} if rule.twin is None else {"oracle": rule.twin, "oracle_options": rule.options}
    try:
        conformance.check(name, query, events, checks=(check,), **twin, **chosen)
    except conformance.UnsupportedError:
        reject()


OR_BUGS = [
    ("PATTERN OR(SEQ(A a, B b), SEQ(B b, A a)) WITHIN 10", "BA", ["a=1 b=0"]),
    ("PATTERN OR(SEQ(A a, B b), AND(A a, B b)) WITHIN 10", "BA", ["a=1 b=0"]),
    ("PATTERN OR(SEQ(A a, B b), AND(A a, B b)) WITHIN 10", "AB", ["a=0 b=1"]),
    ("PATTERN OR(SEQ(B b, A a), SEQ(A a, B b)) WITHIN 10", "AB", ["b=1 a=0"]),
]


def _runs(name, query):
    return PLANS[name].refusal(analyze(kleene.parse(query)), Options()) is None


@pytest.mark.parametrize(
    ("name", "query", "types", "expected"),
    [(name, *bug) for name in PATTERN_PLANS for bug in OR_BUGS if _runs(name, bug[0])],
)
def test_or_branches_binding_the_same_variables(name, query, types, expected):
    """Each match once, found whichever branch orders its variables, its variables in
    pattern order (the order they are first declared in)."""
    events = [{"type": t, "ts": i} for i, t in enumerate(types)]
    found = kleene.match(query, events, plan=name)
    lines = [
        " ".join(f"{v}={','.join(map(str, ids))}" for v, ids in m.ids().items()) for m in found
    ]
    assert lines == expected


def test_states_from_another_query_or_format_are_refused():
    plan = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 10", "nfa")
    data = plan.dump_state(plan.new_state())
    other = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 11", "nfa")
    with pytest.raises(kleene.errors.StateError, match="another query"):
        other.load_state(data)
    with pytest.raises(kleene.errors.StateError, match="saved by plan 'nfa', not 'reference'"):
        kleene.compile("PATTERN SEQ(A a, B b) WITHIN 10", "reference").load_state(data)
    older = data.replace(f'"format": {STATE_FORMAT}'.encode(), b'"format": 1')
    with pytest.raises(kleene.errors.StateError, match="state format 1"):
        plan.load_state(older)
    with pytest.raises(kleene.errors.StateError, match="not a kleene plan state"):
        plan.load_state(b"\x80\x04junk")


class _Planted:
    """A pickle that, unpickled, writes a file: what a forged checkpoint would run."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_forged_checkpoint_runs_no_code(tmp_path):
    """The header anyone can compute from the query, over a payload that runs code when
    unpickled: refused by its signature before it is unpickled."""
    import json
    import pickle

    plan = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 10", "nfa")
    planted = tmp_path / "ran"
    header = {"format": STATE_FORMAT, "plan": plan.name, "query": plan.fingerprint}
    payload = pickle.dumps(_Planted(str(planted)))
    for forged in (header, {**header, "signature": "0" * 64}):
        data = b"kleene-state\n" + json.dumps(forged).encode() + b"\n" + payload
        with pytest.raises(kleene.errors.StateError, match="signature does not match"):
            plan.load_state(data)
        assert not planted.exists()
    saved = plan.dump_state(plan.new_state(), key=b"the key it was saved with")
    with pytest.raises(kleene.errors.StateError, match="saved with another key"):
        plan.load_state(saved)
    assert plan.load_state(saved, key=b"the key it was saved with") is not None
    altered = saved + b"more"
    with pytest.raises(kleene.errors.StateError, match="altered"):
        plan.load_state(altered, key=b"the key it was saved with")


def test_the_state_key_comes_from_the_environment_or_the_users_own_file(tmp_path, monkeypatch):
    from kleene.plans import signing

    monkeypatch.setenv(signing.ENVIRONMENT, "shared secret")
    assert signing.state_key() == b"shared secret"
    monkeypatch.delenv(signing.ENVIRONMENT)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    key = signing.state_key()
    made = tmp_path / "kleene" / "state-key"
    assert made.read_bytes() == key and len(key) == 64
    assert made.stat().st_mode & 0o777 == 0o600
    assert signing.state_key() == key  # made once


EVICTING = [n for n in PATTERN_PLANS if PLANS[n].idle is not kleene.plans.Plan.idle]


@pytest.mark.parametrize("name", EVICTING)
def test_idle_eviction_is_exercised(name):
    """Keys that come and go: the plans that let states go do let them go, so the
    idle_eviction check above compares something."""
    stream = kleene.testing.events(
        "type ts k\n" + "\n".join(f"{t} {i} {i // 3}" for i, t in enumerate("ABC" * 30))
    )
    plan = kleene.compile("PATTERN SEQ(A a, B b, C c) WHERE [k] WITHIN 2", name)
    run = conformance.drive(plan, stream, evict=True)
    assert run.evicted > 20
    assert len(run.outputs) == 30


def test_rules_let_their_partitions_go():
    """A rule's partitions that come and go: those whose run ended are retired (without a
    frame the rule runs once per partition: only the key is kept) or, with a frame, idle
    once the frame is over; so the idle_eviction check compares something on petri too."""
    stream = kleene.testing.events(
        "type ts k\n" + "\n".join(f"{t} {i} {i // 2}" for i, t in enumerate("AB" * 30))
    )
    once = "FROM A AS a, B AS b MATCH a Followed By b PARTITION BY a.k EMIT Event M(a.k)"
    run = conformance.drive(kleene.compile(once), stream, evict=True)
    assert (run.finished, run.evicted, len(run.outputs)) == (30, 0, 30)
    framed = once.replace("PARTITION BY a.k", "PARTITION BY a.k, 2 s")
    run = conformance.drive(kleene.compile(framed), stream, evict=True)
    assert run.finished == 0
    assert run.evicted > 20
    assert len(run.outputs) == 30


LONG = "PATTERN SEQ(A a, B+ b[], C c) WHERE skip_till_next_match WITHIN 100000"


@pytest.mark.parametrize("name", [n for n in PATTERN_PLANS if _runs(n, LONG)])
def test_long_histories_pickle(name):
    """A state holding a Kleene history of thousands of events saves and resumes on every
    plan that runs the pattern (pickle must not recurse down a chain of entries, trails or
    runs)."""
    plan = kleene.compile(LONG, name)
    state = plan.new_state()
    for n in range(3000):
        plan.step(state, kleene.Event("B" if n else "A", n, {}, n))
    state = plan.load_state(plan.dump_state(state))
    found = plan.step(state, kleene.Event("C", 3000, {}, 3000))
    found += plan.advance(state, kleene.Watermark(float("inf")))
    assert [m.ids()["b"] for m in found] == [tuple(range(1, 3000))]


def test_window_join_two_kleene_variables():
    """Each Kleene variable's loop keeps its own names: the inner one's events once replaced
    the outer's, and a match went missing (found by the thorough profile)."""
    events = [kleene.Event("A", 0, {"k": 0}, id=i) for i in range(5)]
    query = "PATTERN SEQ(_+ v1[], _ v2, _+ v3[], _ v4) WITHIN 1"
    conformance.check("window_join", query, events, checks=("same_matches",))
    assert len(kleene.match(query, events, plan="window_join")) == 7


@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A+ x[], B a, C b, D+ d[], E e) WHERE a.v < e.v WITHIN 9",
        "PATTERN SEQ(A a, B+ b[], C c, D d) WHERE c.v > a.v WITHIN 8",
        "PATTERN SEQ(A a, B+ b[], C c, NOT(D d), E e) WITHIN 8",
        "PATTERN SEQ(A+ a[], B b) WHERE a[i].v > 2 WITHIN 5",
    ],
)
def test_window_join_takes_a_kleene_variables_events_between_its_neighbours(query):
    """A Kleene variable's events before its later neighbour are listed once that one is
    bound, and cut after its earlier neighbour once that one is (`_Code._window_of`): with
    loops in between, first in the SEQ, or with none of its events in reach."""
    rnd = random.Random(query)
    events = [
        kleene.Event(rnd.choice("ABCDE"), n // 2, {"v": rnd.randint(0, 5)}, id=n) for n in range(60)
    ]
    conformance.check("window_join", query, events, checks=("same_matches", "lazily"))
    assert kleene.match(query, events, plan="window_join")


@pytest.mark.parametrize("count", [10, 11])
def test_window_join_picks_a_kleene_variables_events_kept_or_as_read(count):
    """The ways to take a Kleene variable's events (`_Choices`) are kept up to a number and
    made as they are read beyond it; both give what `reference` gives. Kept, one binding's
    matches come out in the order they sort in (which makes `kleene.match`'s sort cheap)."""
    events = [kleene.Event("A", 0, {}, id=0)]
    events += [kleene.Event("B", n, {}, id=n) for n in range(1, count + 1)]
    events.append(kleene.Event("C", count + 1, {}, id=count + 1))
    query = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 100"
    conformance.check("window_join", query, events, checks=("same_matches", "lazily"))
    plan = kleene.compile(query, "window_join")
    state = plan.new_state()
    found = [m for event in events for m in plan.step(state, event)]
    assert len(found) == 2**count - 1
    kept = len(found) <= _Choices.KEPT
    assert kept == (count == 10)  # the two counts take the two paths
    if kept:
        assert found == sorted(found, key=kleene.Match.sort_key)


def test_window_join_writes_one_step_per_route_not_per_type():
    """`window_join` writes a step per route an event type takes (`_Code.step`); types
    that share a route share one, so a stream of many types a wildcard takes compiles a
    few steps, not one per type, and each gives what `reference` gives."""
    events = [kleene.Event(f"T{i}" if i % 3 else "A", i, {}, id=i) for i in range(300)]
    query = "PATTERN SEQ(A a, _ b) WITHIN 2"
    conformance.check("window_join", query, events, checks=("same_matches", "lazily"))
    plan = kleene.compile(query, "window_join")
    state = plan.new_state()
    for event in events:
        plan.step(state, event)
    assert len(plan._steps) == 201  # A and the 200 other types
    assert len(plan._written) == 2  # A (a or b) and any other (b)


def test_window_join_bindings_keep_their_names_from_the_conditions():
    """The loops' binding of an event (once `b<slot>`) shared a name with a comparison's
    temporary (`b<n>`): `v1.x <= v2.x` overwrote v4's binding with v2's x, and matches came
    out with an int for v4 (found by the thorough profile)."""
    events = [kleene.Event("A", 0, {"k": 0, "x": 0}, id=0), kleene.Event("A", 0, {"x": 0}, id=1)]
    events += [kleene.Event("A", 0, {"k": 0}, id=i) for i in (2, 3)]
    query = "PATTERN SEQ(_ v1, _ v2, _ v3, _ v4) WHERE v1.x <= v2.x WITHIN 1"
    conformance.check("window_join", query, events, checks=("same_matches", "lazily"))
    (found,) = kleene.match(query, events, plan="window_join")
    assert found.ids() == {"v1": (0,), "v2": (1,), "v3": (2,), "v4": (3,)}
