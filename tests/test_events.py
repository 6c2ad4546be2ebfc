"""Events and matches as values."""

import pickle
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene import Event, Match, Retraction
from kleene.events import (
    as_event,
    attribute_slot,
    attributes,
    checked_events,
    event_of,
    schema_of,
)


def test_event_fields_and_numeric_time():
    moment = datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    event = Event("Tick", moment, {"price": 3})
    assert event.t == moment.timestamp()
    assert event["price"] == 3
    assert event.get("volume", 0) == 0
    assert Event("Tick", 7).t == 7


@pytest.mark.parametrize(
    ("ts", "message"),
    [
        (datetime(2024, 5, 1), "no time zone"),
        (True, "not True"),
        (float("nan"), "a timestamp must be a finite number, not nan"),
        (float("inf"), "a timestamp must be a finite number, not inf"),
        (-float("inf"), "a timestamp must be a finite number, not -inf"),
        (10**309, r"timestamp of 1027 bits is out of range \(at most 2\*\*63\)"),
        (10**20, r"timestamp 100000000000000000000 is out of range"),
        ("2024-05-01", "not str"),
    ],
)
def test_bad_timestamps(ts, message):
    with pytest.raises(kleene.EventError, match=message):
        Event("Tick", ts)


def test_bad_type():
    with pytest.raises(kleene.EventError, match="non-empty string"):
        Event("", 1)


def test_events_are_immutable_values():
    event = Event("A", 1, {"x": 1}, id=5)
    with pytest.raises(AttributeError):
        event.ts = 2
    assert event == Event("A", 1, {"x": 1}, id=5)
    assert event != Event("A", 1, {"x": 2}, id=5)
    assert hash(event) == hash(Event("A", 1, {"x": 1}, id=5))
    assert pickle.loads(pickle.dumps(event)) == event
    assert event.with_id(9).id == 9


def test_an_event_keeps_its_own_copy_of_the_attributes():
    """Changing the caller's dict after sending does not change the event (it made nfa and
    reference disagree)."""
    attrs = {"x": 1}
    event = Event("A", 1, attrs)
    attrs["x"] = 5
    assert event["x"] == 1
    with pytest.raises(TypeError):
        event.attrs["x"] = 2  # type: ignore[index]
    row = {"type": "A", "ts": 1, "x": 1}
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WHERE a.x < b.x")
    engine.send(row)
    row["x"] = 10
    assert [m.ids() for m in engine.send({"type": "B", "ts": 2, "x": 5})] == [
        {"a": (0,), "b": (1,)}
    ]


def test_mappings_become_events():
    event = as_event({"type": "A", "ts": 2, "id": "e", "x": 1}, default_id=0)
    assert event == Event("A", 2, {"x": 1}, id="e")
    assert as_event(Event("A", 2), default_id=3).id == 3
    with pytest.raises(kleene.EventError, match="no 'ts'"):
        as_event({"type": "A"})
    with pytest.raises(kleene.EventError, match="a mapping"):
        as_event(("A", 1))  # type: ignore[arg-type]


#: Attribute names a user may give: plain, Python keywords, the names of an event's own
#: fields and methods, text with spaces and signs, non-ASCII text (one that NFKC changes).
_NAMES = st.sampled_from(
    [
        "x",
        "price",
        "if",
        "class",
        "type",
        "ts",
        "id",
        "t",
        "seq",
        "attrs",
        "get",
        "names",
        "_k_x",
        "unit price",
        "a-b",
        "",
        "ﬁ",
        "fi",
        "Δt",
        "__dict__",
        "__class__",
    ]
)
_VALUES = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3))


@given(st.dictionaries(_NAMES, _VALUES, max_size=6), st.dictionaries(_NAMES, _VALUES, max_size=6))
def test_an_event_holds_any_attributes_as_given(attrs, other):
    """Each attribute lives in a slot of its own (`attribute_slot`), in a class made once
    per list of names: whatever the names (keywords, an event's own field names, text that
    is no identifier, text Python would normalize), the event gives back exactly the
    attributes it was made with, in order, and reads None for one it lacks."""
    event = Event("A", 1, attrs, id=0)
    assert dict(event.attrs) == attrs and list(event.attrs) == list(attrs)
    assert attributes(event) == attrs and attributes(event) is not attributes(event)
    assert event.names == tuple(attrs)
    for name in set(attrs) | set(other):
        assert event.get(name, "none") == attrs.get(name, "none")
        assert getattr(event, attribute_slot(name)) == attrs.get(name)
        if name not in attrs:
            with pytest.raises(KeyError):
                event[name]
    assert (event.type, event.ts, event.id) == ("A", 1, 0)
    assert (event == Event("A", 1, other, id=0)) == (attrs == other)
    assert pickle.loads(pickle.dumps(event.with_seq(4))) == event
    if not {"type", "ts", "id"} & set(attrs):  # a mapping's own fields
        assert as_event({"type": "A", **attrs, "ts": 1}, 0) == event
    assert event_of("A", 1, 1, attrs, 0) == event


def test_attribute_slots_are_the_same_in_every_process():
    """A compiled condition reads `event.<slot>`; a Spark worker compiles the query anew,
    so the slot of a name may not depend on what the process saw first."""
    assert attribute_slot("price") == "_k_price"
    assert attribute_slot("unit price") == "_kx_" + b"unit price".hex()
    assert attribute_slot("ﬁ") != attribute_slot("fi")


def test_an_attribute_name_is_text():
    with pytest.raises(kleene.EventError, match="an attribute name must be a string, not 1"):
        Event("A", 1, {1: 2})  # type: ignore[dict-item]


def test_events_made_before_the_schemas_are_forgotten_still_hold():
    """The schemas are kept up to a bound (a stream whose every event has other names);
    past it they are made anew, and the events made before keep theirs."""
    before = Event("A", 1, {"x": 1, "y": 2}, id=0)
    kleene.events._SCHEMAS.clear()
    after = Event("A", 1, {"x": 1, "y": 2}, id=0)
    assert type(after) is not type(before)
    assert before == after and before.with_id(0) == after and after["y"] == before["y"] == 2
    assert schema_of(("x", "y")).cls is type(after)


def test_mappings_in_any_key_order_become_the_same_events():
    first = as_event({"type": "A", "ts": 2, "x": 1, "y": None}, 7)
    second = as_event({"y": None, "ts": 2, "x": 1, "type": "A", "id": None}, 7)
    assert first == second == Event("A", 2, {"x": 1, "y": None}, id=7)
    assert as_event({"type": "A", "ts": "1970-01-01T00:00:05"}, 0).t == 5
    for bad, message in [
        ({"type": "A", "ts": True}, "not a time"),
        ({"type": "", "ts": 1}, "non-empty string"),
        ({"type": "A", "ts": float("inf")}, "finite number"),
        ({"ts": 1}, "no 'type'"),
        ({"type": "A", "ts": 2**64}, "out of range"),
    ]:
        with pytest.raises(kleene.EventError, match=message):
            as_event(bad)


def test_match_value():
    a, b1, b2 = Event("A", 1, id=0), Event("B", 4, id=1), Event("B", 9, id=2)
    found = Match({"a": (a,), "b": (b1, b2)}, "p")
    assert found.events == (a, b1, b2)
    assert (found.start_ts, found.end_ts) == (1, 9)
    assert found.ids() == {"a": (0,), "b": (1, 2)}
    assert found == Match({"a": (a,), "b": (b1, b2)}, "p")
    assert found != Match({"a": (a,), "b": (b1, b2)}, "q")
    assert pickle.loads(pickle.dumps(found)) == found
    assert found.to_dict()["bindings"]["b"][1] == {"id": 2, "type": "B", "ts": 9}
    later = Match({"a": (a,), "b": (b2,)}, "p")
    assert sorted([later, found], key=Match.sort_key)[0].ids() == {"a": (0,), "b": (1, 2)}


def test_a_match_laid_out_is_the_match_its_bindings_make():
    a, b1, b2 = Event("A", 1, id=0), Event("B", 4, id=1), Event("B", 9, id=2)
    star = Event("S", 5, id=3)
    bound = Match({"a": (a,), "s": (), "b": (b1, b2)}, "p")
    laid = Match.laid_out((a, b1, b2), bound.sort_key())
    assert laid.sort_key() is bound.sort_key()
    assert laid.bindings == {"a": (a,), "s": (), "b": (b1, b2)}
    assert list(laid.bindings) == ["a", "s", "b"]  # in pattern order, an empty star too
    assert laid == bound
    assert hash(laid) == hash(bound)
    assert laid.events == (a, b1, b2)
    assert (laid.start_ts, laid.end_ts) == (1, 9)
    assert laid.to_row() == bound.to_row()
    assert repr(laid) == "Match(a=[0], s=[], b=[1, 2])"
    assert pickle.loads(pickle.dumps(laid)) == bound
    assert Retraction.of(laid) == Retraction.of(bound)
    other = Match.laid_out((a, star, b2), Match({"a": (a,), "s": (star,), "b": (b2,)}).sort_key())
    assert other != laid
    assert other.ids() == {"a": (0,), "s": (3,), "b": (2,)}


@given(
    names=st.lists(st.text(max_size=3), max_size=5, unique=True),
    rows=st.integers(0, 6),
    data=st.data(),
)
def test_events_made_from_columns_are_the_events_made_one_by_one(names, rows, data):
    """`checked_events` writes its loop for the columns' names and nulls (`_loop_for`): the
    events are those `Event` makes from each row, a null cell no attribute, in column
    order; whatever the names are (quotes, `v0`, empty)."""
    cells = [
        data.draw(st.lists(st.one_of(st.none(), st.integers()), min_size=rows, max_size=rows))
        for _ in names
    ]
    kinds = [f"T{i % 2}" for i in range(rows)]
    made = list(checked_events(kinds, range(rows), range(rows), range(rows), names, cells))
    row_values = [[column[i] for column in cells] for i in range(rows)]
    expected = [
        Event(kind, i, {n: v for n, v in zip(names, values, strict=True) if v is not None}, id=i)
        for i, (kind, values) in enumerate(zip(kinds, row_values, strict=True))
    ]
    assert made == expected
    assert [list(e.attrs.items()) for e in made] == [list(e.attrs.items()) for e in expected]


def test_events_may_share_an_id_and_stay_two_events():
    """An id is a label (an order's id on each of its events): duplicates are two events,
    matched apart; a retraction withdraws the earliest of that type, time and id."""
    stream = [
        {"type": "A", "ts": 1, "id": "o1"},
        {"type": "B", "ts": 2, "id": "o1"},
        {"type": "B", "ts": 2, "id": "o1"},
    ]
    found = kleene.match("PATTERN SEQ(A a, B b) WITHIN 5", stream)
    assert [m.ids() for m in found] == [{"a": ("o1",), "b": ("o1",)}] * 2
    assert found[0].bindings["b"][0] is not found[1].bindings["b"][0]
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 5", plan="afa")
    sent = [kleene.Event(e["type"], e["ts"], {}, e["id"]) for e in stream]
    assert len(engine.send_many(sent)) == 2
    changed = engine.retract(sent[2])  # withdraws one of the two matches, on the net
    assert sum(-1 if isinstance(o, kleene.Retraction) else 1 for o in changed) == -1
