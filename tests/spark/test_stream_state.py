"""The stream's state outside Spark: checkpoint markers and group states."""

import json

import pytest

import kleene
from kleene.errors import StateError
from kleene.events import Event, Watermark
from kleene.plans.base import STATE_FORMAT
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


def test_an_output_folder_is_written_by_the_checkpoint_that_holds_its_batches(tmp_path):
    """A new checkpoint beside an output whose file-sink log holds batches 0-7 would have
    Spark skip those batch numbers (and this run's matches with them): refused, naming
    both; so is an output with late events apart (batch=N folders). The checkpoint that
    planned those batches goes on (one killed between the sink's commit and its own)."""
    plan, grouping = kleene.compile(QUERY), "64 hash buckets of k"
    out, late = tmp_path / "out", tmp_path / "late-out"
    (out / "_spark_metadata").mkdir(parents=True)
    for batch in range(8):
        (out / "_spark_metadata" / str(batch)).write_text("v1\n")
    sink = {"format": "parquet", "late": False}
    with pytest.raises(StateError, match=r"holds batches up to 7, which the checkpoint .*new"):
        check_checkpoint(str(tmp_path / "new"), plan, grouping, output=str(out), sink=sink)
    assert not (tmp_path / "new").exists()
    ck = tmp_path / "ck"
    (ck / "offsets").mkdir(parents=True)
    (ck / "commits").mkdir()
    for batch in range(8):
        (ck / "offsets" / str(batch)).write_text("")
    for batch in range(7):
        (ck / "commits" / str(batch)).write_text("")
    (ck / MARKER).write_text(
        json.dumps(
            {
                "format": STATE_FORMAT,
                "plan": plan.name,
                "query": plan.fingerprint,
                "grouping": grouping,
                "sink": sink,
            }
        )
    )
    check_checkpoint(str(ck), plan, grouping, output=str(out), sink=sink)
    (late / "batch=3").mkdir(parents=True)
    with pytest.raises(StateError, match="holds batches up to 3"):
        check_checkpoint(str(tmp_path / "other"), plan, grouping, output=str(late), sink=sink)


def test_a_restart_writes_as_the_run_it_goes_on(tmp_path):
    """Adding --late (or another format) on restart would send matches where Spark readers
    of the output do not look: refused."""
    plan, grouping = kleene.compile(QUERY), "64 hash buckets of k"
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")
    check_checkpoint(ck, plan, grouping, output=out, sink={"format": "parquet", "late": False})
    with pytest.raises(StateError, match="started writing parquet without --late"):
        check_checkpoint(ck, plan, grouping, output=out, sink={"format": "parquet", "late": True})
    with pytest.raises(StateError, match="this run would write json without --late"):
        check_checkpoint(ck, plan, grouping, output=out, sink={"format": "json", "late": False})
    check_checkpoint(ck, plan, grouping, output=out, sink={"format": "parquet", "late": False})


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
