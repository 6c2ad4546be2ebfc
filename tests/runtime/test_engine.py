"""The engine: ids, time order, watermarks, partitions, timers, picklable states."""

import pickle
import random
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import kleene
from kleene.errors import KleeneError
from kleene.plans import PLANS
from kleene.testing import events, match_lines, plans_taking
from kleene.testing.strategies import cases_for


def test_ids_default_to_arrival_positions():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)")
    engine.send({"type": "A", "ts": 1})
    assert [m.ids() for m in engine.send(kleene.Event("B", 2))] == [{"a": (0,), "b": (1,)}]


@pytest.mark.parametrize("pattern", [None, 42, [42]])  # a list: several queries
def test_an_engine_needs_a_query(pattern):
    with pytest.raises(kleene.KleeneError, match=r"a query is text, a Pattern \(sase\), a Rule"):
        kleene.Engine(pattern)


def test_timestamps_must_not_go_back():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)")
    engine.send({"type": "A", "ts": 5})
    with pytest.raises(kleene.EventError, match="earlier than an event before it") as info:
        engine.send({"type": "B", "ts": 4})
    assert (info.value.row, info.value.field, info.value.late) == (2, "ts", True)


def test_events_after_a_watermark_are_late():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)")
    engine.advance_to(10)
    engine.send({"type": "A", "ts": 11})
    late = kleene.Engine("PATTERN SEQ(A a)")
    late.advance_to(3)
    with pytest.raises(kleene.EventError, match="already declared") as info:
        late.send({"type": "A", "ts": 3})
    assert info.value.late


@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 5",
        "PATTERN SEQ(A a, B b) WHERE skip_till_next_match { [k] } WITHIN 5",
        "PATTERN SEQ(A a, B b) WHERE [k, j] WITHIN 5",
    ],
)
def test_an_equivalence_test_names_a_value_it_cannot_compare(query):
    # lists compare as tuples; a mapping is named, on every plan (nfa matched it, the
    # others failed with Python's own TypeError)
    listed = [
        {"type": "A", "ts": 1, "k": [1, 2], "j": 1},
        {"type": "B", "ts": 2, "k": [1, 2], "j": 1},
    ]
    mapped = [{**e, "k": {"x": 1}} for e in listed]
    for plan in plans_taking(query):
        options = {"max_delay": 0} if plan == "afa" else {}
        assert [m.ids() for m in kleene.match(query, listed, plan=plan, **options)] == [
            {"a": (0,), "b": (1,)}
        ], plan
        with pytest.raises(kleene.EventError, match="'k' holds dict") as info:
            kleene.match(query, mapped, plan=plan, **options)
        assert info.value.field == "k", plan


def test_timestamps_do_not_mix_kinds():
    engine = kleene.Engine("PATTERN SEQ(A a, B b)")
    engine.send({"type": "A", "ts": datetime(2024, 1, 1, tzinfo=UTC)})
    with pytest.raises(kleene.EventError, match="mix numbers and datetimes") as info:
        engine.send({"type": "B", "ts": 5})
    assert not info.value.late  # a kind of its own, not out of order: sorting does not cure it
    with pytest.raises(kleene.EventError, match="measured in seconds"):
        kleene.Engine("PATTERN SEQ(A a)", time_unit="ms").send(
            {"type": "A", "ts": datetime(2024, 1, 1, tzinfo=UTC)}
        )


def test_datetime_windows():
    start = datetime(2011, 1, 5, tzinfo=UTC)
    stream = [
        {"type": "C", "ts": start},
        {"type": "P", "ts": start + timedelta(days=14, hours=23)},
        {"type": "P", "ts": start + timedelta(days=15, seconds=1)},
    ]
    found = kleene.match("PATTERN SEQ(C c, P p) WITHIN 15 days", stream)
    assert [m.ids() for m in found] == [{"c": (0,), "p": (1,)}]


def test_closed_engine():
    engine = kleene.Engine("PATTERN SEQ(A a)")
    engine.close()
    assert engine.close() == []
    with pytest.raises(kleene.KleeneError, match="closed"):
        engine.send({"type": "A", "ts": 1})


def test_trailing_negation_waits_for_time():
    engine = kleene.Engine("PATTERN SEQ(A a, NOT(C c)) WHERE [k] WITHIN 10")
    assert engine.send({"type": "A", "ts": 0, "k": 1}) == []
    assert engine.send({"type": "A", "ts": 1, "k": 2}) == []
    assert engine.send({"type": "C", "ts": 5, "k": 2}) == []
    assert engine.advance_to(9) == []
    assert [m.ids() for m in engine.advance_to(10)] == [{"a": (0,)}]
    assert engine.advance_to(10) == []
    with pytest.raises(KleeneError, match="goes back"):
        engine.advance_to(4)  # a punctuation never goes back, on any plan
    assert engine.close() == []


def test_a_later_event_of_another_partition_moves_time_for_all():
    engine = kleene.Engine("PATTERN SEQ(A a, NOT(C c)) WHERE [k] WITHIN 10")
    engine.send({"type": "A", "ts": 0, "k": 1})
    assert [m.ids() for m in engine.send({"type": "B", "ts": 11, "k": 2})] == [{"a": (0,)}]
    counts = engine.metrics.as_dict()
    # B is of no type the query takes: it moves the time, and makes no partition of its own
    assert (counts["events"], counts["matches"], counts["partitions"]) == (2, 1, 1)
    engine.send({"type": "C", "ts": 12, "k": 2})
    assert engine.metrics.as_dict()["partitions"] == 2


def test_events_without_a_key_value_form_their_own_partition():
    # b may be empty, so an A without x is a match on its own
    query = "PATTERN SEQ(A a, B* b[], C c) WHERE a.x = c.x"
    stream = events("""
        type ts id x
        A    1  a1 -
        A    2  a2 1
        C    3  c1 1
        C    4  c2 -
    """)
    engine = kleene.Engine(query)
    assert engine.plan.partition_key is None
    keyed = "PATTERN SEQ(A a, B+ b[]) WHERE a.x = b[i].x"
    engine = kleene.Engine(keyed)
    found = engine.send_many(
        events("""
        type ts id x
        A    1  a1 -
        B    2  b1 -
        A    3  a2 1
        B    4  b2 1
    """)
    )
    assert match_lines(found) == ["a=a2 b=b2"]
    assert engine.partitions == 2
    assert match_lines(kleene.match(query, stream)) == ["a=a2 b= c=c1"]


def test_states_pickle_and_resume():
    plan = kleene.compile(
        "PATTERN SEQ(A a, B+ b[], NOT(C c)) WHERE skip_till_next_match { b[i].x > b[i-1].x } "
        "WITHIN 10"
    )
    stream = events("""
        type ts id x
        A    1  a  0
        B    2  b1 1
        B    3  b2 2
        C    20 c  0
    """)
    state = plan.new_state()
    for event in stream[:3]:
        plan.step(state, event)
    resumed = pickle.loads(pickle.dumps(state))
    expected = ["a=a b=b1", "a=a b=b1,b2"]
    assert sorted(match_lines(plan.step(resumed, stream[3]))) == expected
    assert sorted(match_lines(plan.step(state, stream[3]))) == expected


def test_matches_come_sorted_by_end_start_and_ids():
    stream = events("""
        type ts id
        A    1  a1
        A    2  a2
        B    3  b1
        B    3  b2
    """)
    found = kleene.match("PATTERN SEQ(A a, B b)", stream)
    assert match_lines(found) == ["a=a1 b=b1", "a=a1 b=b2", "a=a2 b=b1", "a=a2 b=b2"]


@pytest.mark.parametrize("plan", ["nfa", "nfa_backtrack"])
@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B+ b[]) WHERE [tag] AND b[i].x >= a.x WITHIN 6",
        "PATTERN SEQ(NOT(C n), A a, B b) WHERE [tag] WITHIN 6",
        "PATTERN SEQ(A a, NOT(C n), B b) WHERE skip_till_next_match { [tag] } WITHIN 6",
    ],
)
def test_idle_partitions_are_dropped_and_nothing_changes(plan, query):
    """Keys that come and go (one per RFID tag): the engine keeps only the states that
    still matter, and reports what keeping them all would."""
    rng = random.Random(7)
    stream = []
    for t in range(3000):
        tag = t // 12 + rng.randrange(3)  # each tag lives for about 12 time units
        stream.append({"type": rng.choice("ABC"), "ts": t, "tag": tag, "x": rng.randrange(4)})
    engine = kleene.Engine(query, plan)
    found = engine.send_many(stream) + engine.close()
    if plan == "nfa":  # (nfa_backtrack drops a state only once it has released its matches)
        assert engine.partitions < 130  # 250 tags came by
        assert engine.metrics.partitions > 250
    assert engine.metrics.plan["runs_created"] > 0
    expected = kleene.match(query, stream, plan="reference")
    assert sorted(sorted(m.ids().items()) for m in found) == sorted(
        sorted(m.ids().items()) for m in expected
    )


@pytest.mark.parametrize("plan", ["reference", "nfa", "nfa_backtrack"])
def test_advance_moves_the_deadline_on(plan):
    """With non-overlapping output a candidate that could be decided early waits behind the
    undecided head of its queue; the deadline is the head's, or the engine would advance the
    state at the same time forever (found by hypothesis)."""
    compiled = kleene.compile(
        "PATTERN AND(NOT(B n), (A|B) v, (A|C) w) WITHIN 3", plan, output="non_overlapping"
    )
    stream = events("""
        type ts id k x
        A    0  0  0 -
        A    0  1  0 0
        B    1  2  1 -
        A    1  3  0 1
        A    2  4  1 3
        C    2  5  1 3
    """)
    state = compiled.new_state()
    for event in stream:
        compiled.step(state, event)
    deadlines = []
    while (deadline := compiled.deadline(state)) is not None and len(deadlines) < 10:
        deadlines.append(deadline)
        compiled.advance(state, kleene.Watermark(deadline))
    assert deadlines == sorted(set(deadlines))  # each advance moves it on
    assert len(deadlines) < 10


@pytest.mark.parametrize(
    "plan", sorted(n for n, cls in kleene.plans.PLANS.items() if "sase" in cls.languages)
)
def test_state_follows_live_keys_on_every_plan(plan):
    """Ever-new keys: every plan lets a key's state go once the window has passed it, so
    the states held stay few (reference and nfa_backtrack held one per key before). A plan
    taking events in any order learns that time moved from punctuations: here the watermark
    of max_delay=0."""
    punctuated = {} if kleene.plans.PLANS[plan].ordered else {"max_delay": 0}
    query = "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 5"
    engine = kleene.Engine(query, plan, **punctuated)
    found = 0
    for i in range(3000):
        found += len(engine.send({"type": "ABC"[i % 3], "ts": i, "k": i // 3}))
    assert engine.partitions < 100
    assert found + len(engine.close()) == 1000


def test_nfa_backtrack_reports_on_advance_to():
    """Its matches wait for the runs still to read their last event (here the second A's,
    postponed while the first A's reads B); once the window has closed on them, advance_to
    reports them (it held them until close before). A match no run can still reach is
    reported at once: a run begins only at an event the start state takes."""
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 5", "nfa_backtrack")
    rows = [{"type": "A", "ts": 1}, {"type": "A", "ts": 2}, {"type": "B", "ts": 3}]
    assert engine.send_many(rows) == []
    assert [m.ids() for m in engine.advance_to(10)] == [
        {"a": (0,), "b": (2,)},
        {"a": (1,), "b": (2,)},
    ]
    assert engine.close() == []
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 5", "nfa_backtrack")
    found = engine.send_many([{"type": "A", "ts": 1}, {"type": "B", "ts": 2}])
    assert [m.ids() for m in found] == [{"a": (0,), "b": (1,)}]


def test_send_takes_the_timestamps_the_readers_take(tmp_path):
    """ISO 8601 text, naive datetimes (as UTC) and dates: Engine.send refused what the file
    readers accept."""
    rows = [
        {"type": "A", "ts": "2026-01-02T03:00:00"},
        {"type": "B", "ts": datetime(2026, 1, 2, 3, 30)},
        {"type": "B", "ts": "2026-01-02 04:00:00+00:00"},
    ]
    query = "PATTERN SEQ(A a, B b) WITHIN 1 hour"
    found = kleene.match(query, rows)
    assert [m.ids() for m in found] == [{"a": (0,), "b": (1,)}, {"a": (0,), "b": (2,)}]
    assert found[0].start_ts == datetime(2026, 1, 2, 3, tzinfo=UTC)
    path = tmp_path / "same.jsonl"
    path.write_text(
        '{"type": "A", "ts": "2026-01-02T03:00:00"}\n'
        '{"type": "B", "ts": "2026-01-02T03:30:00"}\n'
        '{"type": "B", "ts": "2026-01-02 04:00:00+00:00"}\n'
    )
    assert [m.ids() for m in kleene.match(query, kleene.read_events(path))] == [
        m.ids() for m in found
    ]
    with pytest.raises(kleene.EventError, match="'soon' is neither a number nor an ISO 8601"):
        kleene.Engine(query).send({"type": "A", "ts": "soon"})


SASE_PLANS = sorted(n for n, cls in PLANS.items() if "sase" in cls.languages)


@pytest.mark.parametrize("plan", SASE_PLANS)
@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_send_many_reports_what_sending_one_by_one_does(plan, data):
    """`send_many`'s loop (the plain case hoisted: `Engine._send_plain`) reports the same
    matches in the same order as `send`, event by event, and counts the same (the events,
    the matches, the most one event completed, ...); a batch cut anywhere gives the same
    too."""
    case = data.draw(cases_for(plan), label="case")
    try:
        one = kleene.Engine(case.pattern, plan)
    except kleene.PlanError:
        reject()
    expected = [m for e in case.events for m in one.send(e)] + one.close()
    cut = data.draw(st.integers(0, len(case.events)), label="cut")
    many = kleene.Engine(case.pattern, plan)
    found = many.send_many(case.events[:cut]) + many.send_many(case.events[cut:])
    found += many.close()
    assert [m.key for m in found] == [m.key for m in expected]
    assert many.metrics.events == one.metrics.events == len(case.events)
    assert many.metrics.as_dict() == one.metrics.as_dict()


@pytest.mark.parametrize("plan", SASE_PLANS)
@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_send_many_passes_over_mappings_no_variable_takes_as_if_sent(plan, data):
    """Mappings of a type no variable takes, which `send_many` passes over without making
    events of them, change nothing that sending them one by one gives: the matches, the
    ids of later events (their arrival numbers) and the events counted."""
    case = data.draw(cases_for(plan), label="case")
    try:
        one = kleene.Engine(case.pattern, plan)
    except kleene.PlanError:
        reject()
    rows: list[dict] = []
    for event in case.events:
        rows.append({"type": event.type, "ts": event.ts, **event.attrs})
        if data.draw(st.booleans(), label="one of no type taken after it"):
            rows.append({"type": "Z", "ts": event.ts, "x": 1})
    try:
        expected = [m for row in rows for m in one.send(row)] + one.close()
    except kleene.LimitError:
        reject()  # the pattern explodes on this stream (say Kleene variables in an AND)
    many = kleene.Engine(case.pattern, plan)
    found = many.send_many(rows) + many.close()
    assert [m.key for m in found] == [m.key for m in expected]
    assert many.metrics.events == one.metrics.events == len(rows)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"type": "Z", "ts": 1}, "ts"),  # before the latest
        ({"type": "Z", "ts": "soon"}, "ts"),
        ({"type": "Z", "ts": float("nan")}, "ts"),
        ({"type": "Z", "ts": 6.5}, "no error"),  # a float among whole numbers: made an event
        ({"type": "Z", "ts": 6, 7: "x"}, None),
        ({"type": "", "ts": 6}, "type"),
    ],
)
def test_send_many_names_a_bad_mapping_no_variable_takes(bad, field):
    """A mapping of a type the query does not take is passed over only when it is well
    formed: a bad one is still made an event, and its error is `send`'s."""
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    stream = [{"type": "A", "ts": 2, "x": 0}, {"type": "Z", "ts": 5, "x": 0}, bad]
    stream.append({"type": "B", "ts": 8, "x": 0})

    def outcome(send: Callable[[kleene.Engine], list]) -> object:
        try:
            return [m.ids() for m in send(kleene.Engine(query))]
        except kleene.EventError as error:
            return (error.row, error.field, str(error))

    by_one = outcome(lambda engine: [m for row in stream for m in engine.send(row)])
    assert outcome(lambda engine: engine.send_many(stream)) == by_one
    if field == "no error":
        assert by_one == [{"a": (0,), "b": (3,)}]
    else:
        assert isinstance(by_one, tuple) and by_one[1] == field
        assert by_one[0] == 3 and str(by_one[2]).startswith("row 3")


@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B b) WITHIN 10",
        "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 10",  # a state per key
        "PATTERN SEQ(A a, B b) WHERE skip_till_next_match WITHIN 10",  # nfa, run counts
        {"one": "PATTERN SEQ(A a, B b) WITHIN 10", "two": "PATTERN SEQ(A a, C c) WITHIN 10"},
    ],
)
@pytest.mark.parametrize("bad", [{"typ": "B", "ts": 3}, {"type": "B", "ts": "soon"}])
def test_a_mapping_that_is_no_event_is_named_by_its_row_on_every_way_in(query, bad):
    """A malformed mapping is named by its place in what was sent (from 1), as a file's
    row is: by `send`, `send_many` and `kleene.match`, of one query or several."""
    stream = [{"type": "A", "ts": 1, "k": 0}, {"type": "B", "ts": 2, "k": 0}, bad]

    def one_by_one(engine: Any) -> None:
        for row in stream:
            engine.send(row)

    ways = {
        "send": one_by_one,
        "send_many": lambda engine: engine.send_many(stream),
        "match": lambda _: kleene.match(query, stream),
    }
    for way, run in ways.items():
        with pytest.raises(kleene.EventError) as raised:
            run(kleene.Engine(query))
        assert raised.value.row == 3, way
        assert str(raised.value).startswith("row 3, field "), way


@pytest.mark.parametrize("plan", SASE_PLANS)
@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_send_iter_reports_what_send_does(plan, data):
    """`send_iter` hands out each event's matches (in the order made, so compared as a set
    per event), counts them, and, closed after any number of matches, leaves the engine
    where `send` leaves it: the events after give the same."""
    case = data.draw(cases_for(plan), label="case")
    try:
        one = kleene.Engine(case.pattern, plan)
    except kleene.PlanError:
        reject()
    expected = [sorted(m.key for m in one.send(e)) for e in case.events]
    lazily = kleene.Engine(case.pattern, plan)
    got = [sorted(m.key for m in lazily.send_iter([e])) for e in case.events]
    assert got == expected
    assert lazily.metrics.matches == one.metrics.matches
    assert sorted(m.key for m in lazily.close()) == sorted(m.key for m in one.close())
    at = data.draw(st.integers(0, len(case.events)), label="closed at event")
    read = data.draw(st.integers(0, 3), label="after reading")
    cut = kleene.Engine(case.pattern, plan)
    for e in case.events[:at]:
        list(cut.send_iter([e]))
    sent: list[kleene.Event] = []

    def feed() -> Iterator[kleene.Event]:
        for e in case.events[at:]:
            sent.append(e)
            yield e

    iterator = cut.send_iter(feed())
    for _ in zip(range(read), iterator, strict=False):
        pass
    iterator.close()  # the event being sent is sent; its matches not read are not made
    after = at + len(sent)
    rest = [sorted(m.key for m in cut.send_iter([e])) for e in case.events[after:]]
    assert rest == expected[after:]


@pytest.mark.parametrize("plan", ["nfa", "window_join"])
def test_send_iter_never_holds_all_of_one_events_matches(plan):
    """An event completing 2**12 - 1 matches at once: `send_iter` makes them one at a time
    (a tenth of the memory `send` needs, at most), and the guard still stops them at
    `max_matches_per_event`, or cuts them there under on_limit="drop"."""
    query = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 100"
    stream = [{"type": "A", "ts": 0}, *({"type": "B", "ts": t} for t in range(1, 13))]
    stream.append({"type": "C", "ts": 13})

    # (compiled once: each engine of a query's text would compile it again, and generate
    # the plan's code, whose peak is the lazy path's own several times over)
    compiled = kleene.compile(query, plan, max_matches_per_event=None)

    def peak(send: Callable[[kleene.Engine], int]) -> int:
        engine = kleene.Engine(compiled)
        tracemalloc.start()
        try:
            assert send(engine) == 2**12 - 1
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    def lazy(engine: kleene.Engine) -> int:
        return sum(1 for _ in engine.send_iter(stream))

    whole = peak(lambda engine: len(engine.send_many(stream)))
    peak(lazy)  # the first run also allocates what Python caches once (run alone: 200 kB)
    # tracemalloc counts every thread's allocations (xdist's I/O thread too): the least of
    # three runs is the lazy path's own peak
    lazily = min(peak(lazy) for _ in range(3))
    assert lazily * 10 < whole
    capped = kleene.Engine(query, plan, max_matches_per_event=100)
    made = capped.send_iter(stream)
    with pytest.raises(kleene.LimitError, match="max_matches_per_event"):
        for _ in made:
            pass
    assert capped.metrics.matches == 100  # handed out before the guard tripped
    dropped = kleene.Engine(query, plan, max_matches_per_event=100, on_limit="drop")
    assert sum(1 for _ in dropped.send_iter(stream)) == 100
    assert dropped.metrics.plan["cut_events"] == 1  # as when `send` cuts them


def test_send_iter_refuses_other_calls_until_it_ends():
    """While `send_iter`'s matches are being read, the engine takes no other call (the
    events it is sending would interleave); once read or closed, it goes on."""
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 10")
    made = engine.send_iter([{"type": "A", "ts": 1}, {"type": "B", "ts": 2}])
    assert next(made).ids() == {"a": (0,), "b": (1,)}
    for call in (
        lambda: engine.send({"type": "B", "ts": 3}),
        lambda: engine.send_many([]),
        lambda: list(engine.send_iter([])),
        lambda: engine.advance_to(5),
        engine.close,
    ):
        with pytest.raises(KleeneError, match="read its matches to the end, or close"):
            call()
    made.close()
    assert [m.ids() for m in engine.send({"type": "B", "ts": 3})] == [{"a": (0,), "b": (2,)}]


@pytest.mark.parametrize("plan", ["nfa", "window_join", "reference"])
def test_send_many_names_the_row_send_names(plan):
    """An error in a batch names the row (arrival) of the event, as `send` does, after the
    matches the events before it made were reported to the engine's counters."""
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    stream = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}, {"type": "B", "ts": 1}]
    one = kleene.Engine(query, plan)
    one.send(stream[0])
    one.send(stream[1])
    with pytest.raises(kleene.EventError) as by_one:
        one.send(stream[2])
    many = kleene.Engine(query, plan)
    with pytest.raises(kleene.EventError) as by_many:
        many.send_many(stream)
    assert (by_many.value.row, by_many.value.field) == (by_one.value.row, "ts") == (3, "ts")
    assert by_many.value.event.id == by_one.value.event.id == 2
    assert many.metrics.matches == one.metrics.matches == 1
    with pytest.raises(kleene.EventError, match="mapping has no 'ts'") as missing:
        kleene.Engine(query, plan).send_many([stream[0], {"type": "B"}])
    assert missing.value.event is None


def test_match_takes_a_dataframe_or_an_arrow_table_as_it_is():
    """`kleene.match` reads a pandas DataFrame or an Arrow table as `from_pandas` and
    `from_arrow` do with their default columns (`ts`, `type`), and checks the query's
    attributes against their columns."""
    import pandas as pd
    import pyarrow as pa

    rows = {"type": ["A", "B", "B"], "ts": [1, 2, 3], "x": [1, 2, 0]}
    query = "PATTERN SEQ(A a, B b) WHERE b.x > a.x WITHIN 5"
    expected = [{"a": (0,), "b": (1,)}]
    for data in (pd.DataFrame(rows), pa.table(rows), pa.table(rows).to_batches()[0]):
        assert [m.ids() for m in kleene.match(query, data)] == expected
        assert [m.ids() for m in kleene.match_iter(query, data)] == expected
    with pytest.raises(kleene.EventError, match="no column 'y'"):
        kleene.match(query.replace("b.x >", "b.y >"), pd.DataFrame(rows))


def test_a_batch_freezes_what_survives_and_leaves_a_process_own_freeze_alone():
    """`fewer_collections` takes what survives a young collection, and what the chunks of
    a batch leave (`settle`), out of the collector's sight for the batch, and hands it all
    back at its end; a process that froze objects of its own keeps them frozen, and
    nothing more is frozen."""
    import gc

    from kleene.runtime.engine import GC_SETTLE, fewer_collections, settle

    assert gc.get_freeze_count() == 0
    with fewer_collections():
        kept = [[n] for n in range(300_000)]  # lives on: survives young collections
        assert gc.get_freeze_count() > len(kept) // 2
    assert gc.get_freeze_count() == 0
    with fewer_collections():
        young = gc.get_stats()[0]["collections"]
        few = [[n] for n in range(GC_SETTLE // 2)]
        settle()  # too few to freeze
        assert gc.get_freeze_count() == 0
        chunk = [[n] for n in range(GC_SETTLE)]
        settle()  # frozen, with no collection walking them
        assert gc.get_freeze_count() >= len(few) + len(chunk)
        assert gc.get_stats()[0]["collections"] == young
    assert gc.get_freeze_count() == 0
    settle()  # outside a batch: nothing
    assert gc.get_freeze_count() == 0
    gc.freeze()
    own = gc.get_freeze_count()
    try:
        with fewer_collections():
            more = [[n] for n in range(300_000)]
            assert gc.get_freeze_count() <= own
        assert 0 < gc.get_freeze_count() <= own and len(more) == len(kept)
    finally:
        gc.unfreeze()
