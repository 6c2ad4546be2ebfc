"""Events from Python records (`kleene.from_records`): the events `Event(...)` makes of each
record, a malformed record named by its number and field, or skipped and counted."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene import Event

_VALUES = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=2))


@given(
    st.lists(
        st.tuples(st.sampled_from(["A", "B"]), st.integers(0, 3), _VALUES, _VALUES), max_size=30
    ).map(lambda rows: sorted(rows, key=lambda row: row[1])),
    st.sampled_from([tuple, list]),
)
def test_records_become_the_events_made_one_by_one(rows, kind):
    """Whatever the values (a None is no attribute), the records read as columns give the
    events `Event(...)` gives record by record, ids their positions."""
    records = [kind(row) for row in rows]
    expected = [
        Event(t, ts, {k: v for k, v in (("x", x), ("y", y)) if v is not None}, at)
        for at, (t, ts, x, y) in enumerate(rows)
    ]
    assert list(kleene.from_records(records, ["type", "ts", "x", "y"])) == expected
    assert list(kleene.from_records(iter(records), ("type", "ts", "x", "y"))) == expected


def test_roles_by_name_and_times_as_text():
    rows = [("k1", "2024-05-01T10:00:00", 1.5), ("k2", "2024-05-01T10:00:05+02:00", 2)]
    found = list(
        kleene.from_records(rows, ["key", "when", "px"], ts="when", id="key", event_type="Tick")
    )
    assert [(e.type, e.id, e["px"]) for e in found] == [("Tick", "k1", 1.5), ("Tick", "k2", 2)]
    assert found[0].ts == datetime(2024, 5, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([("A", 1, 0), ("A", 2)], "records, row 2: the record holds 2 values for 3 columns"),
        ([("A", 1, 0), 7], "records, row 2: a record is a tuple or a list, not int 7"),
        ([("A", 1, 0), "A20"], "records, row 2: a record is a tuple or a list, not str 'A20'"),
        ([("A", 1, 0), (None, 2, 0)], "records, row 2, field 'type': the event type is missing"),
        ([("A", 1, 0), ("A", "soon", 0)], "records, row 2, field 'ts': "),
    ],
)
def test_a_malformed_record_is_named_or_skipped(records, message):
    with pytest.raises(kleene.EventError, match=message.replace("(", r"\(")):
        list(kleene.from_records(records, ["type", "ts", "x"]))
    reader = kleene.from_records(records, ["type", "ts", "x"], on_error="skip")
    assert list(reader) == [Event("A", 1, {"x": 0}, 0)]
    assert reader.skipped == 1 and str(reader.errors[0]).startswith(message)


def test_columns_are_named_once_and_hold_the_roles():
    with pytest.raises(kleene.EventError, match="'x' more than once"):
        kleene.from_records([], ["type", "ts", "x", "x"])
    with pytest.raises(kleene.EventError, match="no column 'ts'"):
        list(kleene.from_records([("A", 1)], ["type", "time"]))


def test_a_query_matches_records_and_their_columns_are_checked_first():
    records = [("A", 1, 5), ("B", 2, 7), ("B", 3, 1)]
    query = "PATTERN SEQ(A a, B b) WHERE b.x > a.x WITHIN 5"
    found = kleene.match(query, kleene.from_records(records, ["type", "ts", "x"]))
    assert [m.ids() for m in found] == [{"a": (0,), "b": (1,)}]
    with pytest.raises(kleene.EventError, match="price"):
        kleene.match(
            "PATTERN SEQ(A a, B b) WHERE b.price > 1 WITHIN 5",
            kleene.from_records(records, ["type", "ts", "x"]),
        )
