"""A misspelled attribute is never a silent empty result. With a schema (CSV,
Parquet, Arrow, pandas) it is an error naming it and listing the columns, before matching;
without one (dicts, JSON lines) kleene warns once, through logging and the metrics."""

import json
import logging

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene
from kleene.cli import main

QUERY = "PATTERN SEQ(A a, B b) WHERE b.pric > a.price WITHIN 10"
ROWS = [{"type": "A", "ts": 1, "price": 10}, {"type": "B", "ts": 2, "price": 11}]


@pytest.fixture
def files(tmp_path):
    csv = tmp_path / "events.csv"
    csv.write_text("type,ts,price\nA,1,10\nB,2,11\n")
    parquet = tmp_path / "events.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), parquet)
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return {"csv": csv, "parquet": parquet, "jsonl": jsonl}


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_file_without_the_column_is_an_error_before_matching(files, kind):
    with pytest.raises(kleene.EventError) as caught:
        kleene.match(QUERY, kleene.read_events(files[kind]))
    message = str(caught.value)
    assert f"events.{kind}" in message and "field 'pric'" in message
    assert "the query reads b.pric, but there is no column 'pric'" in message
    assert "the columns are type, ts, price" in message


def test_pandas_and_arrow_are_checked_the_same_way():
    for events in (
        kleene.from_pandas(pd.DataFrame(ROWS)),
        kleene.from_arrow(pa.Table.from_pylist(ROWS)),
    ):
        with pytest.raises(kleene.EventError, match="no column 'pric'"):
            kleene.match(QUERY, events)
    assert kleene.match(
        QUERY.replace("b.pric ", "b.price "), kleene.from_pandas(pd.DataFrame(ROWS))
    )


def test_kleene_match_says_it_on_one_line(files, capsys):
    assert main(["match", QUERY, "-i", str(files["csv"])]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kleene: ") and "no column 'pric'" in err


def test_reading_the_id_column_by_its_name_is_an_error(tmp_path):
    path = tmp_path / "orders.csv"
    path.write_text("type,ts,order_id,price\nA,1,7,10\nB,2,8,11\n")
    query = "PATTERN SEQ(A a, B b) WHERE b.order_id > a.order_id WITHIN 10"
    with pytest.raises(kleene.EventError, match="is the event's id column"):
        kleene.match(query, kleene.read_events(path, id="order_id"))


def test_without_a_schema_kleene_warns_once(caplog):
    engine = kleene.Engine(QUERY)
    with caplog.at_level(logging.WARNING, logger="kleene"):
        for i in range(300):
            engine.send({"type": "AB"[i % 2], "ts": i, "price": i})
    warnings = [r for r in caplog.records if r.name == "kleene"]
    assert len(warnings) == 1
    assert "b.pric" in warnings[0].getMessage() and "first 100 B events" in warnings[0].getMessage()
    assert engine.metrics.missing_attributes == ["b.pric"]


def test_json_lines_warn_and_present_attributes_do_not(files, caplog):
    with caplog.at_level(logging.WARNING, logger="kleene"):
        engine = kleene.Engine(QUERY)
        engine.send_many(kleene.read_events(files["jsonl"]))
        assert engine.metrics.missing_attributes == []  # fewer than 100 events: no verdict
        many = [{"type": "AB"[i % 2], "ts": i, "price": i, "pric": i} for i in range(300)]
        kleene.match(QUERY, many)
    assert not [r for r in caplog.records if r.name == "kleene"]


def test_a_lead_rule_is_checked_too(files):
    rule = "FROM A AS a, B AS b MATCH a Followed By b.filter(b.pric > 1) EMIT Event X()"
    with pytest.raises(kleene.EventError, match=r"reads b\.pric"):
        kleene.match(rule, kleene.read_events(files["csv"]))


# ---- time units --------------------------------------------------------------------------

EPOCH_MS = [{"type": "A", "ts": 1_700_000_000_000 + i * 60_000, "x": i} for i in range(3)]


def test_epoch_milliseconds_under_a_window_in_minutes_are_refused():
    with pytest.raises(kleene.EventError, match="looks like epoch milliseconds") as caught:
        kleene.match("PATTERN SEQ(A a, A b) WITHIN 10 min", EPOCH_MS)
    assert "--ts-unit ms" in str(caught.value) and caught.value.row == 1
    assert len(kleene.match("PATTERN SEQ(A a, A b) WITHIN 10 min", EPOCH_MS, time_unit="ms")) == 3
    # a window in timestamp units says nothing about the epoch: raw numbers are fine
    assert kleene.match("PATTERN SEQ(A a, A b) WITHIN 10", EPOCH_MS) == []
    micro = [{**e, "ts": e["ts"] * 1000} for e in EPOCH_MS]
    with pytest.raises(kleene.EventError, match="epoch microseconds"):
        kleene.match("PATTERN SEQ(A a, A b) WITHIN 10 min", micro)


def test_kleene_match_points_at_ts_unit(tmp_path, capsys):
    path = tmp_path / "ticks.parquet"
    pq.write_table(pa.Table.from_pylist(EPOCH_MS), path)
    query = "PATTERN SEQ(A a, A b) WITHIN 10 min"
    assert main(["match", query, "-i", str(path)]) == 1
    assert "--ts-unit ms" in capsys.readouterr().err
    assert main(["match", query, "-i", str(path), "--ts-unit", "ms"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_explain_says_what_numeric_timestamps_count(capsys):
    assert main(["explain", "PATTERN SEQ(A a, A b) WITHIN 10 min"]) == 0
    assert "numeric timestamps count s (time_unit)" in capsys.readouterr().out
    assert main(["explain", "PATTERN SEQ(A a, A b) WITHIN 10"]) == 0
    assert "numeric timestamps" not in capsys.readouterr().out


def test_a_rule_without_durations_takes_any_numbers():
    rule = "FROM A AS a MATCH a EMIT Event X(a.x)"
    assert kleene.lead.run(rule, EPOCH_MS) == [kleene.Event("X", EPOCH_MS[0]["ts"], {"x": 0})]
    with pytest.raises(kleene.EventError, match="epoch milliseconds"):
        kleene.lead.run("FROM A AS a MATCH Wait(a, 1 min) EMIT Event X(a.x)", EPOCH_MS)
