"""Events and matches as values."""

import pickle
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene import Event, Match, Retraction
from kleene.events import as_event, checked_events


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
