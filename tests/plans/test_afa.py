"""The `afa` plan (the AFA paper) beyond the conformance suite, which already holds it to
`reference` on streams in order: events in any order, input retractions, punctuations and
the Cleanse factor, each checked against `reference` on the sorted stream."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.errors import EventError, KleeneError, PlanError
from kleene.matches import Retraction, net
from kleene.testing.strategies import cases


def keys(matches):
    return [(m.ids(), m.start_ts, m.end_ts) for m in matches]


def expected(pattern, events):
    """Reference on the stream sorted by time, equal times in arrival order."""
    return kleene.match(pattern, sorted(events, key=lambda e: e.t), plan="reference")


#: The plain operator, and Appendix D's anchors (AFA+ignore).
FLAVORS = pytest.mark.parametrize("flavor", [{}, {"anchors": True}], ids=["plain", "anchors"])


def compiles(pattern):
    try:
        kleene.compile(pattern, plan="afa")
    except PlanError:
        return False
    return True


@FLAVORS
@given(case=cases(), data=st.data())
def test_any_arrival_order_nets_the_sorted_streams_matches(case, data, flavor):
    if not compiles(case.pattern):
        return
    permuted = data.draw(st.permutations(case.events), label="arrival order")
    engine = kleene.Engine(case.pattern, "afa", **flavor)
    outputs = engine.send_many(permuted)
    outputs += engine.close()
    assert keys(net(outputs)) == keys(expected(case.pattern, permuted))
    # every retraction withdraws a match reported before it and not withdrawn since
    assert engine.metrics.matches - engine.metrics.retractions == len(net(outputs))


@FLAVORS
@given(case=cases(), data=st.data())
def test_retracting_events_equals_never_sending_them(case, data, flavor):
    if not compiles(case.pattern):
        return
    permuted = data.draw(st.permutations(case.events), label="arrival order")
    gone = data.draw(st.sets(st.sampled_from(range(len(permuted))) if permuted else st.nothing()))
    engine = kleene.Engine(case.pattern, "afa", **flavor)
    outputs = engine.send_many(permuted)
    for position in sorted(gone):
        outputs += engine.retract(permuted[position])
    kept = [e for p, e in enumerate(permuted) if p not in gone]
    assert keys(net(outputs + engine.close())) == keys(expected(case.pattern, kept))


@FLAVORS
@given(case=cases(), data=st.data())
def test_punctuations_and_cleanse_change_no_match(case, data, flavor):
    """With a watermark (max_delay d) every punctuation cleans state; whatever the
    speculation factor, the net matches are the sorted stream's, and with σ = 0 nothing is
    ever withdrawn."""
    if not compiles(case.pattern):
        return
    d = data.draw(st.integers(0, 3), label="max_delay")
    jitter = [data.draw(st.integers(0, d)) for _ in case.events]
    order = sorted(range(len(case.events)), key=lambda p: case.events[p].t + jitter[p])
    permuted = [case.events[p] for p in order]
    sigma = data.draw(st.sampled_from([0, 1, 2, float("inf")]), label="speculation")
    engine = kleene.Engine(
        case.pattern, "afa", max_delay=d, speculation=sigma, on_late="raise", **flavor
    )
    outputs = engine.send_many(permuted) + engine.close()
    assert keys(net(outputs)) == keys(expected(case.pattern, permuted))
    if sigma == 0:
        assert not any(isinstance(o, Retraction) for o in outputs)


@FLAVORS
@given(case=cases(), data=st.data())
def test_matches_before_the_output_punctuation_are_never_withdrawn(case, data, flavor):
    """`engine.punctuation` is the output punctuation: no retraction ever withdraws a match
    that ended before the punctuation given out before it."""
    if not compiles(case.pattern):
        return
    d = data.draw(st.integers(0, 3), label="max_delay")
    jitter = [data.draw(st.integers(0, d)) for _ in case.events]
    order = sorted(range(len(case.events)), key=lambda p: case.events[p].t + jitter[p])
    engine = kleene.Engine(case.pattern, "afa", max_delay=d, on_late="raise", **flavor)
    for position in order:
        punctuation = engine.punctuation
        for output in engine.send(case.events[position]):
            if isinstance(output, Retraction) and punctuation is not None:
                assert not punctuation.settles(output.match.end.t)


STREAM = [
    {"type": "A", "ts": 1, "id": "a1"},
    {"type": "B", "ts": 5, "id": "b1"},
    {"type": "A", "ts": 3, "id": "a2"},
    {"type": "C", "ts": 4, "id": "c1"},
]


def test_an_out_of_order_event_retracts_the_matches_it_breaks():
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WHERE strict_contiguity WITHIN 10", "afa")
    assert [m.ids() for m in engine.send_many(STREAM[:2])] == [{"a": ("a1",), "b": ("b1",)}]
    (withdrawn,) = engine.send(STREAM[3])  # c1 at 4 lands between a1 and b1
    assert isinstance(withdrawn, Retraction) and withdrawn.match.ids() == {
        "a": ("a1",),
        "b": ("b1",),
    }
    assert engine.metrics.retractions == 1


def test_retracting_an_unknown_or_punctuated_event_is_an_error():
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 10", "afa")
    engine.send_many(STREAM)
    with pytest.raises(EventError, match="no such event was sent") as unknown:
        engine.retract({"type": "A", "ts": 2, "id": "zz"})
    assert not unknown.value.late
    with pytest.raises(EventError, match="by its id"):
        engine.retract(kleene.Event("A", 1))
    engine.advance_to(3)
    with pytest.raises(EventError, match="already punctuated") as punctuated:
        engine.retract(STREAM[0])
    assert punctuated.value.late
    with pytest.raises(EventError, match="advance_to") as behind:
        engine.send({"type": "A", "ts": 2})
    assert behind.value.late


def test_punctuations_do_not_go_back_and_clean_up_state():
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WHERE [k] WITHIN 10", "afa")
    engine.send_many({"type": "A", "ts": t, "k": t} for t in range(100))
    assert engine.partitions == 100
    engine.advance_to(200)
    assert engine.partitions == 0
    with pytest.raises(KleeneError, match="goes back"):
        engine.advance_to(150)


def test_only_afa_takes_retractions_and_speculation():
    with pytest.raises(KleeneError, match="takes no retractions"):
        kleene.Engine("PATTERN SEQ(A a, B b)", "nfa").retract(STREAM[0])
    with pytest.raises(KleeneError, match="speculation"):
        kleene.Engine("PATTERN SEQ(A a, B b)", "nfa", speculation=0)


@pytest.mark.parametrize("option", [{"output": "non_overlapping"}, {"selection": "earliest"}])
def test_what_does_not_compile_says_why(option):
    with pytest.raises(PlanError, match="plan 'afa' cannot run this query: it reports all"):
        kleene.compile("PATTERN SEQ(A a, B b) WITHIN 3", plan="afa", **option)


@FLAVORS
@given(case=cases(), data=st.data())
def test_the_live_count_follows_the_index(case, data, flavor):
    """`live_runs` is kept as pmatches come and go, not recounted: it must equal the index."""
    if not compiles(case.pattern):
        return
    plan = kleene.compile(case.pattern, plan="afa", **flavor)
    state = plan.new_state()
    permuted = data.draw(st.permutations(case.events), label="arrival order")
    for position, event in enumerate(permuted):
        plan.step(state, event)
        if data.draw(st.booleans(), label="retract it"):
            plan.retract(state, event)
        if data.draw(st.booleans(), label="punctuate"):  # below every event still to come
            rest = [e.t for e in permuted[position + 1 :]]
            plan.advance(state, kleene.Watermark(min(rest, default=event.t), inclusive=False))
        held = sum(len(entry.pmatches) for entry in state.entries.values())
        held += len(state.anchors or ()) + len(
            state.open
        )  # one per run of ignorable steps (Appendix D)
        assert plan.live_runs(state) == held


def test_pmatches_with_unhashable_registers_are_not_merged() -> None:
    """A register holding a list cannot key the merge of equal pmatches; each goes alone,
    and the matches are the reference's."""
    query = "PATTERN SEQ(A+ a[], B b) WHERE skip_till_next_match { a[i].v = a[i-1].v } WITHIN 10"
    events = [
        kleene.Event("A", 1, {"v": [1, 2]}, id=0),
        kleene.Event("A", 2, {"v": [1, 2]}, id=1),
        kleene.Event("A", 3, {"v": [3]}, id=2),
        kleene.Event("B", 4, {}, id=3),
    ]
    expected = kleene.match(query, events, plan="reference")
    assert expected
    assert sorted(m.key for m in kleene.match(query, events, plan="afa")) == sorted(
        m.key for m in expected
    )


def numbered(pattern, events):
    """The events in timestamp order (equal times in list order), each with a sequence
    number `seq`, one more per event of its partition (AFA+O)."""
    key = kleene.compile(pattern, plan="afa").partition_key
    counts: dict = {}
    out = []
    for event in sorted(events, key=lambda e: e.t):
        partition = None if key is None else key(event)
        counts[partition] = counts.get(partition, -1) + 1
        out.append(
            kleene.Event(
                event.type, event.ts, {**event.attrs, "seq": counts[partition]}, id=event.id
            )
        )
    return out


@given(case=cases(), data=st.data())
def test_sequence_numbers_give_matches_that_are_never_withdrawn(case, data):
    """AFA+O (section 5.3): with sequence numbers, a computation never spans a missing
    number, so every match reported is final, in any arrival order."""
    if not compiles(case.pattern):
        return
    stream = numbered(case.pattern, case.events)
    permuted = data.draw(st.permutations(stream), label="arrival order")
    engine = kleene.Engine(case.pattern, "afa", sequence="seq")
    outputs = engine.send_many(permuted) + engine.close()
    assert not any(isinstance(m, Retraction) for m in outputs)
    reference = kleene.match(case.pattern, stream, plan="reference")
    assert keys(sorted(outputs, key=kleene.Match.sort_key)) == keys(reference)
    assert engine.metrics.as_dict().get("sequence_gaps", 0) == 0


def test_sequence_numbers_against_speculation_on_one_disordered_stream():
    """The same late event: plain `afa` withdraws and reissues, AFA+O only adds."""
    query = "PATTERN SEQ(A a, B b) WHERE strict_contiguity WITHIN 10"
    rows = [("A", 1, 0), ("B", 3, 2), ("C", 2, 1), ("B", 4, 3)]  # C arrives late
    stream = [kleene.Event(t, ts, {"seq": n}, id=n) for t, ts, n in rows]
    plain = kleene.Engine(query, "afa").send_many(stream)
    assert any(isinstance(m, Retraction) for m in plain)
    engine = kleene.Engine(query, "afa", sequence="seq")
    assert engine.send_many(stream[:2]) == []  # A (0) and B (2) are not adjacent
    assert engine.send_many(stream[2:]) == []
    later = kleene.Engine(query, "afa", sequence="seq")
    found = later.send_many(
        [
            stream[0],
            stream[2],
            kleene.Event("A", 3.5, {"seq": 3}, id=9),
            kleene.Event("B", 4, {"seq": 4}, id=10),
        ]
    )
    assert [m.ids() for m in found] == [{"a": (9,), "b": (10,)}]


def test_sequence_number_errors_name_the_event_and_field():
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    engine = kleene.Engine(query, "afa", sequence="seq")
    with pytest.raises(EventError, match="no whole sequence number in 'seq'"):
        engine.send(kleene.Event("A", 1, {}, id=0))
    engine.send(kleene.Event("A", 1, {"seq": 5}, id=1))
    with pytest.raises(EventError, match="must follow the timestamps"):
        engine.send(kleene.Event("B", 2, {"seq": 5}, id=2))
    with pytest.raises(EventError, match="must follow the timestamps"):
        engine.send(kleene.Event("B", 0, {"seq": 7}, id=3))
    with pytest.raises(KleeneError, match="cannot be retracted"):
        engine.retract(kleene.Event("A", 1, {"seq": 5}, id=1))
    with pytest.raises(PlanError, match="sequence numbers"):
        kleene.compile(query, plan="nfa", sequence="seq")
    with pytest.raises(PlanError, match="names the attribute"):
        kleene.compile(query, plan="afa", sequence=3)


def test_a_gap_in_the_sequence_numbers_is_counted():
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    engine = kleene.Engine(query, "afa", sequence="seq")
    stream = [kleene.Event("A", 1, {"seq": 0}, id=0), kleene.Event("B", 2, {"seq": 2}, id=1)]
    assert engine.send_many(stream) + engine.close() == []
    assert engine.metrics.as_dict()["sequence_gaps"] == 1


def test_anchors_keep_a_run_of_skipped_events_as_one_pmatch():
    """Appendix D: the pmatch after `a` steps over fifty C events; the plain operator lists
    it at each of them, an anchor once, and both find the same match."""
    query = "PATTERN SEQ(A a, B b) WITHIN 100"
    events = [kleene.Event("A", 0, id=0)]
    events += [kleene.Event("C", t, id=t) for t in range(1, 51)]
    events += [kleene.Event("B", 51, id=51)]
    held = {}
    for flavor in ("plain", "anchors"):
        plan = kleene.compile(query, plan="afa", anchors=flavor == "anchors")
        state = plan.new_state()
        found = [m for e in events for m in plan.step(state, e)]
        assert [m.ids() for m in found] == [{"a": (0,), "b": (51,)}]
        held[flavor] = plan.live_runs(state)
    assert held["plain"] > 50 and held["anchors"] <= 3
    late = kleene.compile(query, plan="afa", anchors=True)
    state = late.new_state()
    for event in [*events[:30], *events[31:]]:
        late.step(state, event)
    assert late.step(state, events[30]) == []  # a skipped event, late: nothing changes


def test_an_anchor_a_take_ends_derives_its_pmatches_once():
    """Under skip-till-next-match an X is stepped over (an anchor opens) and the next B ends
    the anchor (its take fires): the match a·b comes once in every round, also once the
    index already holds anchors closed in the rounds before."""
    query = "PATTERN SEQ(A a, B b) WHERE skip_till_next_match WITHIN 100"
    kinds = ["A", "X", "X", "B"] * 4
    events = [kleene.Event(kind, t, id=t) for t, kind in enumerate(kinds)]
    expected_ids = [{"a": (t,), "b": (t + 3,)} for t in range(0, 16, 4)]
    for flavor in ({}, {"anchors": True}):
        found = kleene.match(query, events, plan="afa", **flavor)
        assert [m.ids() for m in found] == expected_ids


def test_an_event_only_ignorable_arcs_take_changes_nothing_it_steps_over():
    """An X no take of the query fires for (`Machine.quiet`): every state but the start
    steps over it, and past the window a pmatch ends there (no match reaches over it)."""
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    plan = kleene.compile(query, plan="afa", anchors=True)
    assert plan.machine.quiet("X") == (False, True, False)
    assert plan.machine.quiet("B") is None
    events = [kleene.Event("A", 0, id=0), kleene.Event("A", 3, id=1)]
    events += [kleene.Event("X", t, id=t) for t in range(4, 8)]
    events += [kleene.Event("B", 8, id=8)]
    state = plan.new_state()
    found = [m for e in events for m in plan.step(state, e)]
    assert [m.ids() for m in found] == [{"a": (1,), "b": (8,)}]
    assert [m.ids() for m in found] == [m.ids() for m in kleene.match(query, events)]


def test_a_written_afa_takes_types_and_ignorable_arcs():
    """`ON` names the types an arc fires for; a self-loop with no WHEN, no SET and BIND
    NONE is an ignorable arc. The plain operator and anchors find the same matches, and
    arcs do not change while the stream runs with anchors."""
    text = """AFA ups WITHIN 10
    FINAL done
    ARC first: start -> up ON Stock WHEN e.change > 0
    ARC more: up -> done ON Stock WHEN e.change > 0
    ARC skip: up -> up ON Noise BIND NONE"""
    afa = kleene.afa.read_afa(text)
    assert [(a.name, a.types, a.ignorable) for a in afa.arcs] == [
        ("first", frozenset({"Stock"}), False),
        ("more", frozenset({"Stock"}), False),
        ("skip", frozenset({"Noise"}), True),
    ]
    assert "skip  up -> up  ON Noise" in afa.describe()
    kinds = ["Stock", "Noise", "Noise", "Stock", "Other", "Stock", "Stock"]
    events = [kleene.Event(k, t, {"change": 1}, id=t) for t, k in enumerate(kinds)]
    spans = {}
    for flavor in ({}, {"anchors": True}):
        found = kleene.match(afa, events, plan="afa", **flavor)
        spans[bool(flavor)] = [tuple(e.id for e in m.events) for m in found]
    assert spans[False] == spans[True] == [(0, 3), (5, 6)]
    plan = kleene.compile(afa, plan="afa", anchors=True)
    with pytest.raises(KleeneError, match="anchors=True"):
        plan.end_arc("skip", 3)


def test_the_builder_takes_types_and_makes_a_bare_self_loop_ignorable():
    afa = (
        kleene.afa.Builder("ups", window=10)
        .arc("start", "up", fence=lambda e, r: e["change"] > 0, on=["Stock"])
        .arc("up", "done", fence=lambda e, r: e["change"] > 0, on=["Stock"])
        .arc("up", "up", bind=None, on=["Noise"])
        .final("done")
        .build()
    )
    assert [(a.types, a.ignorable) for a in afa.arcs] == [
        (frozenset({"Stock"}), False),
        (frozenset({"Stock"}), False),
        (frozenset({"Noise"}), True),
    ]
    plan = kleene.compile(afa, plan="afa", anchors=True)
    assert plan.machine.quiet("Noise") == (False, True, False)
    assert plan.machine.quiet("Stock") is None
    kinds = ["Stock", "Noise", "Stock", "Other", "Stock", "Stock"]
    events = [kleene.Event(k, t, {"change": 1}, id=t) for t, k in enumerate(kinds)]
    spans = [
        [tuple(e.id for e in m.events) for m in kleene.match(afa, events, plan="afa", **flavor)]
        for flavor in ({}, {"anchors": True})
    ]
    assert spans[0] == spans[1] == [(0, 2), (4, 5)]


def test_on_without_a_type_is_a_syntax_error_at_the_keyword_after_it():
    """ON names event types: a clause's keyword after it is not taken for a type name."""
    with pytest.raises(kleene.PatternSyntaxError) as error:
        kleene.afa.read_afa("AFA x FINAL q\nARC a: p -> q ON WHEN e.x > 0")
    assert (error.value.line, error.value.column) == (2, 18)
    assert "unexpected 'WHEN'; expected an event type" in error.value.message
    with pytest.raises(kleene.PatternSyntaxError, match="unexpected 'set'"):
        kleene.afa.read_arc(
            "ARC b: p -> p ON Noise, set", kleene.afa.read_afa("AFA x FINAL q ARC a: p -> q")
        )
    afa = kleene.afa.read_afa("AFA x FINAL q ARC a: p -> q ON Whenever, Settle BIND NONE")
    assert afa.arcs[0].types == {"Whenever", "Settle"}


def test_an_arc_with_types_is_checked_where_it_is_written():
    with pytest.raises(kleene.PatternError, match="takes no type") as error:
        kleene.afa.read_afa("AFA x FINAL q ARC a: p -> q EPSILON e: q -> q ON A")
    assert "^" in str(error.value)
    timed = "AFA x FINAL q ARC a: p -> q TIMEOUT t: q -> q AFTER r.n"
    with pytest.raises(PlanError, match="without ε-arcs or timeout arcs"):
        kleene.compile(
            kleene.afa.read_afa("AFA x REGISTER (n = 1) FINAL q " + timed[14:]),
            plan="afa",
            anchors=True,
        )


def test_a_punctuation_keeps_the_negated_events_a_later_candidate_can_span() -> None:
    """With no WITHIN and no partial match held, a punctuation forgot every negated event,
    also those after it: the B at ts 1, which arrived before the events a later match
    starts with, no longer spoiled that match."""
    query = (
        "PATTERN SEQ(_ v1, NOT(A n2), _+ v3[], NOT(B n4), _ v5) "
        "WHERE skip_till_next_match { v3[i].x >= v3[i-1].x AND v1.x >= 0 }"
    )
    arrivals = [("A", 2, {}, 3), ("B", 1, {}, 2), ("A", 0, {"x": 0}, 1), ("A", 0, {}, 0)]
    engine = kleene.Engine(query, "afa")
    found = []
    for kind, ts, attrs, id_ in arrivals:
        found += engine.send(kleene.Event(kind, ts, attrs, id_))
        if ts == 1:
            found += engine.advance_to(-1)
    found += engine.close()
    in_order = sorted(arrivals, key=lambda e: e[1])  # equal times in arrival order
    expected = kleene.match(query, [kleene.Event(k, t, a, i) for k, t, a, i in in_order])
    assert [m.ids() for m in net(found)] == [m.ids() for m in expected]
    assert [m.ids() for m in expected] == [{"v1": (1,), "v3": (0,), "v5": (2,)}]
