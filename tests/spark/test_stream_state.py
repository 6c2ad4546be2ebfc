"""The stream's state outside Spark: checkpoint markers and group states."""

import json

import pytest

import kleene
from kleene.errors import StateError
from kleene.events import Event, Watermark
from kleene.spark.stream import (
    MARKER,
    StreamState,
    check_checkpoint,
    load_stream_state,
    next_due,
    release,
)

QUERY = "PATTERN SEQ(A a, B b, NOT(C c)) WHERE [k] WITHIN 10"


def test_a_checkpoint_marker_names_its_query(tmp_path):
    plan, grouping = kleene.compile(QUERY), "64 hash buckets of k"
    check_checkpoint(str(tmp_path / "ck"), plan, grouping)  # a new folder is marked
    check_checkpoint(str(tmp_path / "ck"), plan, grouping)  # ... and taken again
    other = kleene.compile(QUERY.replace("10", "11"))
    with pytest.raises(StateError, match="another query"):
        check_checkpoint(str(tmp_path / "ck"), other, grouping)
    with pytest.raises(StateError, match="groups keys as 64 hash buckets of k"):
        check_checkpoint(str(tmp_path / "ck"), plan, "16 hash buckets of k")
    marker = tmp_path / "ck" / MARKER
    old = {**json.loads(marker.read_text()), "format": 0}
    marker.write_text(json.dumps(old))
    with pytest.raises(StateError, match="state format 0"):
        check_checkpoint(str(tmp_path / "ck"), plan, grouping)
    marker.write_text("{no json")
    with pytest.raises(StateError, match="damaged"):
        check_checkpoint(str(tmp_path / "ck"), plan, grouping)


def test_a_group_holds_events_until_the_watermark_and_wakes_for_deadlines():
    plan = kleene.compile(QUERY)
    group = StreamState(grouping="by k")
    for order, (kind, t) in enumerate([("B", 2), ("A", 1)]):
        group.received += 1
        group.held.append((t, order, group.received, ("k1",), Event(kind, t, {"k": 1}, order)))
    group.held.sort()
    assert next_due(plan, group) == 1  # the earliest held event
    assert list(release(plan, group, Watermark(2, inclusive=False))) == []
    assert [e[3] for e in group.held] == [("k1",)]  # B at 2 waits: 2 is not before W
    assert list(release(plan, group, Watermark(3, inclusive=False))) == []
    assert next_due(plan, group) == 11  # no C within 10 of A: a deadline, no event needed
    again = load_stream_state(plan, plan.dump_state(group), "by k")
    ((key, found),) = list(release(plan, again, Watermark(12, inclusive=False)))
    assert key == ("k1",) and found[0].ids() == {"a": (1,), "b": (0,)}
    assert list(release(plan, again, Watermark(100, inclusive=False))) == []
    assert again.states == {}  # a key past its window is dropped
    with pytest.raises(StateError, match="layout"):
        load_stream_state(plan, plan.dump_state(plan.new_state()), "by k")
    with pytest.raises(StateError, match="groups keys as by k"):
        load_stream_state(plan, plan.dump_state(group), "by j")
