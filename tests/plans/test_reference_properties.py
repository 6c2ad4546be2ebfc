"""Random patterns and streams: the reference plan against independent statements of it."""

import dataclasses

from hypothesis import assume, given, reject
from hypothesis import strategies as st

import kleene
from kleene.compiler.analysis import analyze
from kleene.compiler.options import Options
from kleene.compiler.per_edge import Strategies
from kleene.language.sase import ast as A
from kleene.plans.reference import Reference
from kleene.testing.strategies import FLINK_STRATEGIES, cases, flink_cases
from tests import oracle

ANY = ("skip_till_any_match",)
SELECTIONS = ("earliest", "maximal", "earliest_maximal")
ORDER = (
    "strict_contiguity",
    "partition_contiguity",
    "skip_till_next_match",
    "relaxed_contiguity",
    "skip_till_any_match",
)
#: Each strategy with those that find at least its matches. SASE+'s skip till next match and
#: Flink's relaxed contiguity are apart: in `SEQ(A+ a[], B b)` on `a1 b1 b2` the first
#: ignores b1 in the loop and proceeds with b2 (a1 b2), the second leaves the loop at b1,
#: and then must take it; relaxed contiguity leaves a loop where the first cannot.
LOOSER = {
    "strict_contiguity": ORDER,
    "partition_contiguity": ORDER[1:],
    "skip_till_next_match": ("skip_till_next_match", "skip_till_any_match"),
    "relaxed_contiguity": ("relaxed_contiguity", "skip_till_any_match"),
    "skip_till_any_match": ("skip_till_any_match",),
}


def without_choices(pattern):
    """The pattern without the clauses that choose among its matches (AFTER MATCH SKIP,
    CONSUME BY, FREEZE)."""
    return dataclasses.replace(pattern, after_match=None, consume=None, freeze=None)


def keys(matches):
    return {frozenset(m.ids().items()) for m in matches}


def run(plan, events, partition=True):
    engine = kleene.Engine(plan, partition=partition)
    return engine.send_many(events) + engine.close()


@given(cases(strategies=ANY))
def test_skip_till_any_match_equals_the_independent_enumerator(case):
    found = kleene.match(case.pattern, case.events, plan="reference")
    assert len(found) == len(keys(found)), "a match is reported twice"
    assert keys(found) == oracle.matches(case.pattern, case.events)


def stated(pattern, events):
    """The independent enumerator's matches (UNTIL loops stopped in the plan's partitions).
    It states no GREEDY loop: those are checked against Flink's examples and by the
    properties below."""
    assume(not any(v.greedy for v in A.event_vars(pattern.structure)))
    return oracle.matches(pattern, events, partition_of(pattern))


def partition_of(pattern):
    """The pattern's partition key (None: it has none), as the plan reads it."""
    key = kleene.compile(pattern, plan="reference").analysis.partition
    return None if key is None else key.keyer


@given(cases(strategies=ANY, extensions=True))
def test_extensions_equal_the_independent_enumerator(case):
    """Exclusive and count windows, optional elements, UNTIL loops."""
    pattern = without_choices(case.pattern)
    found = kleene.match(pattern, case.events, plan="reference")
    assert len(found) == len(keys(found)), "a match is reported twice"
    assert keys(found) == stated(pattern, case.events)


@given(cases(strategies=ANY, extensions=True))
def test_after_match_skip_equals_the_independent_statement(case):
    clause = case.pattern.after_match
    assume(clause is not None)
    every = stated(without_choices(case.pattern), case.events)
    found = kleene.match(case.pattern, case.events, plan="reference")
    assert len(found) == len(keys(found)), "a match is reported twice"
    partition = kleene.compile(case.pattern, plan="reference").partition_key
    assert keys(found) == oracle.skipped(every, case.events, partition, clause)


@given(cases(extensions=True), st.integers(2, 5))
def test_an_exclusive_window_over_integer_times_is_one_unit_shorter(case, amount):
    exclusive = dataclasses.replace(case.pattern, within=A.Within(amount, exclusive=True))
    shorter = dataclasses.replace(case.pattern, within=A.Within(amount - 1))
    found = kleene.match(exclusive, case.events, plan="reference")
    assert keys(found) == keys(kleene.match(shorter, case.events, plan="reference"))


@given(cases(extensions=True))
def test_no_skip_and_consume_by_none_are_no_clause(case):
    plain = without_choices(case.pattern)
    no_skip = dataclasses.replace(plain, after_match=A.AfterMatch("no_skip"))
    assert keys(kleene.match(no_skip, case.events)) == keys(kleene.match(plain, case.events))
    no_skip = dataclasses.replace(plain, consume=A.Consume("none"))
    assert keys(kleene.match(no_skip, case.events)) == keys(kleene.match(plain, case.events))


@given(cases(strategies=ANY))
def test_non_overlapping_output_equals_the_independent_statement(case):
    every = oracle.matches(case.pattern, case.events)
    found = kleene.match(case.pattern, case.events, plan="reference", output="non_overlapping")
    partition = kleene.compile(case.pattern, plan="reference").partition_key
    assert keys(found) == oracle.non_overlapping(every, case.events, partition)


@given(cases(strategies=ANY), st.sampled_from(SELECTIONS))
def test_selections_equal_the_independent_statement(case, selection):
    every = oracle.matches(case.pattern, case.events)
    found = kleene.match(case.pattern, case.events, plan="reference", selection=selection)
    assert len(found) == len(keys(found)), "a match is reported twice"
    assert keys(found) == oracle.selected(every, selection)


@given(cases(strategies=ANY, extensions=True))
def test_run_semantics_with_everything_ignorable_equals_the_definition(case):
    """NFA^b runs that may ignore any event find exactly the declarative matches (optional
    elements and count windows too)."""
    analysis = analyze(case.pattern)
    assume(not analysis.extensions & {"greedy", "until"})  # runs are their only statement
    by_runs = Reference(analysis, Options(), any_match_by_runs=True)
    declared = Reference(analysis, Options())
    assert keys(run(by_runs, case.events)) == keys(run(declared, case.events))


@given(flink_cases())
def test_flink_contiguities_equal_the_independent_statement(case):
    """Flink's next, followedBy and followedByAny, for the query, each edge and each loop,
    over optional elements and UNTIL loops: the events between two of a match's events are
    ignored where the later one is taken."""
    anyway = dataclasses.replace(case.pattern, strategies=())
    every = oracle.matches(anyway, case.events, kleene.compile(anyway).partition_key)
    partition = partition_of(case.pattern)
    found = kleene.match(case.pattern, case.events, plan="reference")
    assert len(found) == len(keys(found)), "a match is reported twice"
    assert keys(found) == oracle.contiguous(case.pattern, case.events, every, partition)


@given(flink_cases(), st.data())
def test_relaxing_one_flink_clause_finds_a_superset(case, data):
    """next before followedBy before followedByAny, for the query, an edge or a loop; the
    loops and optional elements of these patterns are left without an event."""
    clauses = case.pattern.strategies
    index = data.draw(st.integers(0, len(clauses) - 1))
    flink = [s for s in LOOSER[clauses[index].name] if s in FLINK_STRATEGIES]
    looser = data.draw(st.sampled_from(flink))
    relaxed = (*clauses[:index], dataclasses.replace(clauses[index], name=looser))
    relaxed += clauses[index + 1 :]
    before = keys(kleene.match(case.pattern, case.events))
    try:
        after = keys(
            kleene.match(dataclasses.replace(case.pattern, strategies=relaxed), case.events)
        )
    except kleene.PatternError:
        reject()  # two clauses over the whole query, one relaxed: they disagree now
    assert before <= after


@given(cases(strategies=ANY, extensions=True), st.sampled_from(A.CONSUMPTIONS))
def test_consume_by_equals_the_independent_statement(case, policy):
    """CORE's consumption policies over every match: walking them by their last event, a
    match is reported unless an earlier reported one (of its partition, with PARTITION)
    ended at or after its first event."""
    plain = without_choices(case.pattern)
    pattern = dataclasses.replace(plain, consume=A.Consume(policy))
    try:
        found = kleene.match(pattern, case.events, plan="reference")
    except kleene.PatternError:
        reject()  # a negation at the end waits for later events: no CONSUME BY there
    every = stated(plain, case.events)
    assert len(found) == len(keys(found)), "a match is reported twice"
    partition = partition_of(pattern) if policy == "partition" else None
    if policy == "events":
        expected = oracle.used_up(every)
    else:
        expected = every if policy == "none" else oracle.consumed(every, case.events, partition)
    assert keys(found) == expected


def strategies_of(pattern, choose):
    """`pattern` with its strategy clauses replaced: `choose(clause)` for each."""
    clauses = tuple(dataclasses.replace(c, name=choose(c)) for c in pattern.strategies)
    return dataclasses.replace(pattern, strategies=clauses or (A.Strategy(choose(None)),))


@given(cases(extensions=True))
def test_each_strategy_finds_a_subset_of_every_more_relaxed_one(case):
    pattern = without_choices(case.pattern)
    found = {}
    for strategy in ORDER:
        uniform = dataclasses.replace(pattern, strategies=(A.Strategy(strategy),))
        found[strategy] = keys(kleene.match(uniform, case.events, plan="reference"))
    for stricter, looser in LOOSER.items():
        for relaxed in looser:
            assert found[stricter] <= found[relaxed], (stricter, relaxed)


@given(cases(extensions=True), st.data())
def test_relaxing_one_clause_finds_a_superset(case, data):
    """Per-edge strategies: moving one clause (an edge, a loop, or the query's) to a more
    relaxed strategy only adds matches."""
    pattern = without_choices(case.pattern)
    clauses = pattern.strategies or (A.Strategy("skip_till_any_match"),)
    index = data.draw(st.integers(0, len(clauses) - 1))
    looser = data.draw(st.sampled_from(LOOSER[clauses[index].name]))
    relaxed = (*clauses[:index], dataclasses.replace(clauses[index], name=looser))
    relaxed += clauses[index + 1 :]
    before = keys(kleene.match(dataclasses.replace(pattern, strategies=clauses), case.events))
    try:
        after = keys(kleene.match(dataclasses.replace(pattern, strategies=relaxed), case.events))
    except kleene.PatternError:
        reject()  # two clauses over the whole query, one relaxed: they disagree now
    assert before <= after


@given(cases(extensions=True))
def test_clauses_that_all_agree_are_one_strategy(case):
    """A strategy written for every edge and loop, or for the whole query, is the same."""
    from kleene.compiler.per_edge import edges

    pattern = without_choices(case.pattern)
    name = pattern.strategies[0].name if pattern.strategies else "skip_till_any_match"
    places = list(edges(pattern.structure))
    places += [(v.name,) for v in A.event_vars(pattern.structure) if v.kleene]
    spelled = (A.Strategy(name), *(A.Strategy(name, tuple(p)) for p in places))
    whole = dataclasses.replace(pattern, strategies=(A.Strategy(name),))
    each = dataclasses.replace(pattern, strategies=spelled)
    assert keys(kleene.match(each, case.events)) == keys(kleene.match(whole, case.events))


@given(cases(strategies=("skip_till_next_match",), max_events=6, extensions=("count_window",)))
def test_relaxed_contiguity_is_skip_till_next_match_where_no_loop_can_be_left(case):
    """What lets the analysis read the one as the other (and `nfa` run such queries): the
    runs under relaxed contiguity, not so read, find what skip till next match finds."""
    variables = list(A.event_vars(case.pattern.structure))
    assume(not any(v.kleene or v.optional for v in variables))
    written = dataclasses.replace(case.pattern, strategies=(A.Strategy("relaxed_contiguity"),))
    assert analyze(written).strategy == "skip_till_next_match"
    analysis = analyze(case.pattern)
    relaxed = dataclasses.replace(
        analysis, strategies=Strategies("relaxed_contiguity"), strategy="relaxed_contiguity"
    )
    found = keys(run(Reference(relaxed, Options()), case.events))
    assert found == keys(run(Reference(analysis, Options()), case.events))


def without_loop_options(element):
    if isinstance(element, A.EventVar):
        return dataclasses.replace(element, greedy=False, until=None)
    if isinstance(element, A.Negation):
        return element
    return type(element)(tuple(without_loop_options(item) for item in element.items))


@given(cases(extensions=True))
def test_greedy_and_until_only_rule_matches_out(case):
    """But for an UNTIL loop inside an AND under skip till next match (docs/semantics.md):
    another part's stopping event closes it, and the run may then skip what it had to take."""
    pattern = without_choices(case.pattern)
    analysis = kleene.compile(pattern, plan="reference").analysis
    next_match = "skip_till_next_match" in analysis.strategies.used
    assume(not (next_match and A.until_in_and(pattern.structure)))
    plain = dataclasses.replace(pattern, structure=without_loop_options(pattern.structure))
    assert keys(kleene.match(pattern, case.events)) <= keys(kleene.match(plain, case.events))


@given(cases(extensions=True))
def test_partitioning_the_stream_changes_nothing(case):
    plan = kleene.compile(case.pattern, plan="reference")
    assert keys(run(plan, case.events, partition=False)) == keys(run(plan, case.events))


@given(cases())
def test_non_overlapping_matches_are_all_matches_that_do_not_overlap(case):
    every = kleene.match(case.pattern, case.events, plan="reference")
    some = kleene.match(case.pattern, case.events, plan="reference", output="non_overlapping")
    assert keys(some) <= keys(every)
    plan = kleene.compile(case.pattern, plan="reference")
    key = plan.partition_key
    last_end: dict = {}
    position = {e.id: e.id for e in case.events}
    for found in sorted(some, key=lambda m: max(position[e.id] for e in m.events)):
        first = min(position[e.id] for e in found.events)
        end = max(position[e.id] for e in found.events)
        group = None if key is None else key(found.events[0])
        assert first > last_end.get(group, -1)
        last_end[group] = end
    if every:
        assert some


@given(cases(strategies=ANY))
def test_emission_timing_does_not_depend_on_partitioning(case):
    """Per-step output is the same whether or not the engine splits the stream."""
    plan = kleene.compile(case.pattern, plan="reference")
    split = kleene.Engine(plan)
    whole = kleene.Engine(plan, partition=False)
    for event in case.events:
        assert keys(split.send(event)) == keys(whole.send(event))
    assert keys(split.close()) == keys(whole.close())


def test_strategies_are_all_exercised():
    assert set(ORDER) == set(A.STRATEGIES)


@given(cases(strategies=ANY, extensions=True), st.data())
def test_freeze_equals_the_independent_statement(case, data):
    """OpenCEP's freeze over every match: walking the stream, an event a named variable can
    take holds that variable and those before it back until a match holding it is reported
    or the window leaves it behind."""
    plain = without_choices(case.pattern)
    elements = A.elements_of_seq(case.pattern.structure)
    assume(elements)
    named = data.draw(st.lists(st.sampled_from(elements), min_size=1, max_size=2, unique=True))
    pattern = dataclasses.replace(plain, freeze=A.Freeze(tuple(named)))
    try:
        found = kleene.match(pattern, case.events, plan="reference")
    except kleene.PatternError:
        reject()  # a negation at the end waits for later events: no FREEZE there
    assert len(found) == len(keys(found)), "a match is reported twice"
    expected = oracle.frozen(
        stated(plain, case.events), pattern, case.events, partition_of(pattern)
    )
    assert keys(found) == expected
