"""Structured Streaming: `detect_stream` gives batch `detect`'s matches, once each, across
restarts from a checkpoint in another process; time moves on for filtered events; late
events are counted and collected; bad input is refused by name."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import kleene
from kleene.cli import main
from kleene.errors import EventError, KleeneError, StateError
from kleene.spark import detect
from kleene.spark.stream import detect_stream, detect_stream_job, progress

pytestmark = pytest.mark.spark

SCHEMA = "ts timestamp, type string, k string, x long, seq long"
START = datetime(2024, 3, 1, tzinfo=UTC)
KEYED = "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND a.x < c.x WITHIN 4 minutes"
NEGATED = "PATTERN SEQ(A a, B b, NOT(C c)) WHERE [k] AND a.x < b.x WITHIN 3 minutes"
UNKEYED = "PATTERN SEQ(A a, B b) WHERE a.x = b.x WITHIN 2 minutes"


def _log(seed: int, count: int, keys: int = 6) -> list[tuple[datetime, str, str, int, int]]:
    """A stream in timestamp order with ties, ending in an event of a type no query reads,
    far enough ahead that the watermark passes every window."""
    rng = random.Random(seed)
    rows, t = [], START
    for seq in range(count):
        t += timedelta(seconds=rng.choice([0, 0, 1, 7, 30]))
        rows.append((t, rng.choice("ABCD"), f"k{rng.randrange(keys)}", rng.randrange(8), seq))
    rows.append((t + timedelta(hours=2), "Z", "k0", 0, count))
    return rows


def _write(folder: Path, name: str, rows: list[tuple[datetime, str, str, int, int]]) -> None:
    """One CSV file of rows, appearing whole (as a stream source expects), and newer than
    the files before it (the file source reads files in that order)."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.time() + len(list(folder.iterdir()))
    lines = ["ts,type,k,x,seq"]
    for ts, kind, key, x, seq in rows:
        cell = "" if ts is None else ts.strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"{cell},{kind},{key},{x},{seq}")
    hidden = folder / f".{name}"
    hidden.write_text("\n".join(lines) + "\n")
    os.utime(hidden, (stamp, stamp))
    hidden.rename(folder / name)


def _stream(spark, folder: Path):
    """The folder as a stream, a file a micro-batch."""
    reader = spark.readStream.schema(SCHEMA).option("header", True)
    return reader.option("maxFilesPerTrigger", 1).csv(str(folder))


def _batch(spark, folder: Path):
    return spark.read.schema(SCHEMA).option("header", True).csv(str(folder))


def _run(spark, tmp: Path, query: str | dict[str, str], **arguments) -> list:
    """Process what the input holds now (in micro-batches of one file), then stop."""
    job = detect_stream_job(_stream(spark, tmp / "in"), query, id="seq", **arguments)
    started = job.start(str(tmp / "out"), checkpoint=str(tmp / "ck"), available_now=True)
    started.awaitTermination()
    return progress(started)


def _ids(frame) -> list[int]:
    return sorted(row.match_id for row in frame.select("match_id").collect())


def _kleene(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kleene", *arguments]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.parametrize(
    ("query", "options"),
    [(KEYED, {}), (NEGATED, {}), (UNKEYED, {"output": "non_overlapping"})],
    ids=["keyed", "trailing-negation", "non-overlapping"],
)
def test_exactly_once_across_a_restart_in_another_process(spark, tmp_path, query, options):
    rows = _log(seed=len(query), count=900)
    # stop where a match is half built: its first event before, its last after
    events = [{"type": t, "ts": ts, "k": k, "x": x, "seq": seq} for ts, t, k, x, seq in rows]
    found = kleene.match(query, events, **options)
    split = next(m.end["seq"] for m in found if m.start["seq"] >= 300)
    first, second = rows[:split], rows[split:]
    _write(tmp_path / "in", "part-0.csv", first[: split // 2])
    _write(tmp_path / "in", "part-1.csv", first[split // 2 :])
    flags = ["--non-overlapping"] if options else []
    done = _kleene(
        "stream", query, "-i", str(tmp_path / "in"), "--checkpoint", str(tmp_path / "ck"),
        "-o", str(tmp_path / "out"), "--available-now", "--keep-open", "--watermark",
        "1 minute", "--id-column", "seq", "--max-files", "1", "--master", "local[2]", *flags,
        "--conf", "spark.sql.shuffle.partitions=2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "kleene: batch 1:" in done.stderr
    assert "stops when the files there are done" in done.stderr
    assert "groups hold events or partial matches after it in the checkpoint" in done.stderr
    before = _ids(spark.read.parquet(str(tmp_path / "out")))

    _write(tmp_path / "in", "part-2.csv", second)
    _run(spark, tmp_path, query, watermark="1 minute", **options)
    streamed = spark.read.parquet(str(tmp_path / "out"))
    expected = detect(_batch(spark, tmp_path / "in"), query, id="seq", arrival="seq", **options)
    assert _ids(streamed) == _ids(expected)
    assert len(set(_ids(streamed))) == len(_ids(streamed))  # none twice
    assert len(before) < len(_ids(streamed)) == len(found)


def test_available_now_ends_with_every_match_of_the_files(spark, tmp_path):
    """The matches near the input's end come too: --available-now moves the watermark past
    the end (by the window), as `kleene match` ends, where the data alone leaves the last
    minute's matches waiting; a second run on the same files adds nothing."""
    rows = _log(seed=7, count=300)[:-1]  # no far-ahead event to push the watermark on
    _write(tmp_path / "in", "part-0.csv", rows[:150])
    _write(tmp_path / "in", "part-1.csv", rows[150:])
    command = [
        "stream", NEGATED, "-i", str(tmp_path / "in"), "--checkpoint", str(tmp_path / "ck"),
        "-o", str(tmp_path / "out"), "--available-now", "--watermark", "1 minute",
        "--id-column", "seq", "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2",
    ]  # fmt: skip
    done = _kleene(*command)
    assert done.returncode == 0, done.stderr
    assert "the watermark moves to" in done.stderr
    expected = _ids(detect(_batch(spark, tmp_path / "in"), NEGATED, id="seq", arrival="seq"))
    events = [{"type": t, "ts": ts, "k": k, "x": x, "seq": seq} for ts, t, k, x, seq in rows]
    last = rows[-1][0]
    near = [m for m in kleene.match(NEGATED, events) if m.start_ts > last - timedelta(minutes=4)]
    assert near  # matches the watermark of the data alone leaves waiting
    assert _ids(spark.read.parquet(str(tmp_path / "out"))) == expected
    again = _kleene(*command)
    assert again.returncode == 0, again.stderr
    assert _ids(spark.read.parquet(str(tmp_path / "out"))) == expected


def test_several_queries_in_one_stream_give_batch_detects_rows_once_each(spark, tmp_path):
    """Several queries over one read of the stream, in micro-batches and across a
    restart: each query's rows are batch `detect`'s for the same queries (a keyed one,
    one with a trailing negation in buckets, one without a key), named by `query`."""
    queries = {"keyed": KEYED, "negated": NEGATED, "unkeyed": UNKEYED}
    rows = _log(seed=3, count=400)
    _write(tmp_path / "in", "part-0.csv", rows[:200])
    _run(spark, tmp_path, queries, watermark="1 minute")
    _write(tmp_path / "in", "part-1.csv", rows[200:])
    batches = _run(spark, tmp_path, queries, watermark="1 minute")
    assert sum(b["late"] for b in batches) == 0
    streamed = spark.read.parquet(str(tmp_path / "out"))
    assert streamed.columns[0] == "query"
    expected = detect(_batch(spark, tmp_path / "in"), queries, id="seq", arrival="seq")
    got = sorted((r.query, r.match_id) for r in streamed.select("query", "match_id").collect())
    want = sorted((r.query, r.match_id) for r in expected.select("query", "match_id").collect())
    assert got == want
    assert {name for name, _ in got} == set(queries)
    with pytest.raises(StateError, match="another query or other options"):
        _run(spark, tmp_path, {"keyed": KEYED, "negated": NEGATED}, watermark="1 minute")


def test_equal_timestamps_follow_the_arrival_column(spark, tmp_path):
    """Both events at one instant: by the arrival column A comes first (a match); by the
    id column B would."""
    at = START.strftime("%Y-%m-%d %H:%M:%S")
    later = (START + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    lines = ["ts,type,k,x,seq,arrived", f"{at},B,k1,1,0,2", f"{at},A,k1,1,3,1"]
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "events.csv").write_text("\n".join([*lines, f"{later},Z,k1,0,9,9"]) + "\n")
    schema = SCHEMA + ", arrived long"
    query = "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 1 minute"
    frame = spark.readStream.schema(schema).option("header", True).csv(str(folder))
    job = detect_stream_job(frame, query, id="seq", arrival="arrived", watermark="0 seconds")
    started = job.start(str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), available_now=True)
    started.awaitTermination()
    found = spark.read.parquet(str(tmp_path / "out"))
    assert [tuple(r) for r in found.selectExpr("a[0].id", "b[0].id").collect()] == [(3, 0)]
    batch = spark.read.schema(schema).option("header", True).csv(str(folder))
    assert _ids(found) == _ids(detect(batch, query, id="seq", arrival="arrived"))


def test_filtered_events_still_move_time_on(spark, tmp_path):
    """The push-down pitfall: after the last A and B of a key, only events the filter drops
    (type D, which no variable takes) arrive; the match waiting for 'no C within 3
    minutes' must still come out, with no new event for its key."""
    rows = [
        (START, "A", "k1", 1, 0),
        (START + timedelta(seconds=10), "B", "k1", 5, 1),
        *((START + timedelta(minutes=m), "D", "k2", 0, 1 + m) for m in range(1, 12)),
    ]
    _write(tmp_path / "in", "part-0.csv", rows[:2])
    _write(tmp_path / "in", "part-1.csv", rows[2:])
    job = detect_stream_job(_stream(spark, tmp_path / "in"), NEGATED, id="seq", watermark="1 min")
    started = job.start(str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), available_now=True)
    started.awaitTermination()
    plan = job.output._jdf.queryExecution().analyzed().toString()
    assert "Filter" in plan and "type#" in plan  # the push-down filter is there
    found = spark.read.parquet(str(tmp_path / "out")).selectExpr("a[0].id", "b[0].id")
    assert [tuple(r) for r in found.collect()] == [(0, 1)]
    assert sum(b["events"] for b in progress(started)) == len(rows)


def test_late_events_are_counted_and_collected(spark, tmp_path):
    rows = _log(seed=5, count=300)
    _write(tmp_path / "in", "part-0.csv", rows[:200])
    stray = (rows[10][0], "A", "k1", 0, 10_000)  # far behind the watermark by then
    _write(tmp_path / "in", "part-1.csv", [stray, *rows[200:]])
    job = detect_stream_job(
        _stream(spark, tmp_path / "in"), KEYED, id="seq", watermark="1 minute", on_late="collect"
    )
    with pytest.raises(KleeneError, match="late=DIR"):
        job.start(str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"))
    started = job.start(
        str(tmp_path / "out"),
        checkpoint=str(tmp_path / "ck"),
        late=str(tmp_path / "late"),
        available_now=True,
    )
    started.awaitTermination()
    assert sum(b["late"] for b in progress(started)) == 1
    late = spark.read.parquet(str(tmp_path / "late"))
    assert [r.seq for r in late.collect()] == [10_000]
    kept = _batch(spark, tmp_path / "in").filter("seq != 10000")
    expected = detect(kept, KEYED, id="seq", arrival="seq")
    assert _ids(spark.read.parquet(str(tmp_path / "out"))) == _ids(expected)
    with pytest.raises(KleeneError, match="side output"):
        detect_stream(_stream(spark, tmp_path / "in"), KEYED, on_late="collect")


def test_a_row_without_timestamp_follows_on_error(spark, tmp_path):
    rows: list = _log(seed=7, count=200)
    rows.insert(50, (None, "A", "k1", 3, 5_000))
    _write(tmp_path / "in", "part-0.csv", rows)
    progressed = _run(spark, tmp_path, KEYED, watermark="1 minute", on_error="skip")
    assert sum(b["skipped"] for b in progressed) == 1
    expected = detect(
        _batch(spark, tmp_path / "in"), KEYED, id="seq", arrival="seq", on_error="skip"
    )
    assert _ids(spark.read.parquet(str(tmp_path / "out"))) == _ids(expected)

    done = _kleene(
        "stream", KEYED, "-i", str(tmp_path / "in"), "--checkpoint", str(tmp_path / "ck2"),
        "-o", str(tmp_path / "out2"), "--available-now", "--id-column", "seq",
        "--master", "local[1]",
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].endswith(
        "part-0.csv, row 51, field 'ts': the timestamp is missing (--on-error skip drops such rows)"
    )
    assert "Traceback" not in done.stderr


def test_a_timestamp_of_the_other_kind_is_named_with_its_row(tmp_path):
    """A number among ISO times in the `ts` column failed the stream with the folder, the
    field and the value, but no row, as `kleene run` names it: the stream did not look for
    it in-process. Now it does."""
    rows = [(ts.strftime("%Y-%m-%d %H:%M:%S"), *rest) for ts, *rest in _log(seed=7, count=80)]
    rows[50] = ("1700000000", *rows[50][1:])
    folder = tmp_path / "in"
    folder.mkdir()
    lines = ["ts,type,k,x,seq", *(",".join(map(str, row)) for row in rows)]
    (folder / "part-0.csv").write_text("\n".join(lines) + "\n")
    done = _kleene(
        "stream", KEYED, "-i", str(folder), "--checkpoint", str(tmp_path / "ck"),
        "-o", str(tmp_path / "out"), "--available-now", "--id-column", "seq",
        "--master", "local[1]",
    )  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert "part-0.csv, row 51, field 'ts'" in last and "timestamps mix" in last, last
    assert "Traceback" not in done.stderr


def test_a_checkpoint_of_another_query_is_refused(spark, tmp_path):
    _write(tmp_path / "in", "part-0.csv", _log(seed=3, count=50))
    _run(spark, tmp_path, KEYED)
    changed = KEYED.replace("a.x < c.x", "a.x > c.x")
    with pytest.raises(StateError, match="another query or other options"):
        _run(spark, tmp_path, changed)
    with pytest.raises(StateError, match="plan 'window_join'"):
        _run(spark, tmp_path, KEYED, plan="reference")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "offsets").mkdir()
    job = detect_stream_job(_stream(spark, tmp_path / "in"), KEYED, id="seq")
    with pytest.raises(StateError, match="kleene did not start"):
        job.start(str(tmp_path / "o"), checkpoint=str(tmp_path / "foreign"))


def test_a_new_checkpoint_beside_an_old_output_and_late_added_on_restart_are_refused(
    spark, tmp_path
):
    """Both lost matches without a word: Spark's file sink skipped the batch numbers the old
    output had committed, and late=DIR moved a restart's matches beside the sink's files."""
    _write(tmp_path / "in", "part-0.csv", _log(seed=3, count=120))
    _run(spark, tmp_path, KEYED)
    assert list((tmp_path / "out" / "_spark_metadata").iterdir())
    (tmp_path / "out" / "part-99999-orphan.snappy.parquet").write_bytes(b"")  # a kill -9's
    committed = _ids(spark.read.parquet(str(tmp_path / "out")))
    assert committed
    assert sorted(kleene.read_matches(tmp_path / "out")["match_id"]) == committed
    job = detect_stream_job(_stream(spark, tmp_path / "in"), KEYED, id="seq")
    with pytest.raises(StateError, match="did not write"):
        job.start(str(tmp_path / "out"), checkpoint=str(tmp_path / "new"), available_now=True)
    late = detect_stream_job(_stream(spark, tmp_path / "in"), KEYED, id="seq", on_late="collect")
    with pytest.raises(StateError, match="without --late"):
        late.start(str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), late=str(tmp_path / "l"))


def test_the_stream_is_checked_before_it_starts(spark, tmp_path):
    _write(tmp_path / "in", "part-0.csv", _log(seed=3, count=5))
    stream = _stream(spark, tmp_path / "in")
    with pytest.raises(EventError, match="no column 'time'"):
        detect_stream(stream, KEYED, ts="time")
    with pytest.raises(EventError, match="no column 'kind'"):
        detect_stream(stream, KEYED, type="kind")
    with pytest.raises(EventError, match="no column 'price'"):
        detect_stream(stream, "PATTERN SEQ(A a, B b) WHERE a.price < b.price WITHIN 1 min")
    with pytest.raises(KleeneError, match="cannot read the watermark"):
        detect_stream(stream, KEYED, watermark="soon")
    with pytest.raises(EventError, match="write id instead of x"):
        detect_stream(stream, "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 1 min", id="x")
    with pytest.raises(KleeneError, match="streaming DataFrame"):
        detect_stream(_batch(spark, tmp_path / "in"), KEYED)


def test_any_streaming_source_runs(spark, tmp_path):
    """The rate source (as a Kafka topic would, any streaming DataFrame): ticks numbered
    0, 1, 2, ... ; each tick and the next make a match."""
    rate = spark.readStream.format("rate").option("rowsPerSecond", 20).load()
    query = "PATTERN SEQ(A a, A b) WHERE b.id = a.id + 1 WITHIN 10 seconds"
    matches = detect_stream(
        rate, query, ts="timestamp", event_type="A", id="value", watermark="1 second"
    )
    started = (
        matches.writeStream.format("memory")
        .queryName("kleene_rate")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not spark.table("kleene_rate").count():
        time.sleep(1)
    started.stop()
    found = spark.table("kleene_rate").selectExpr("a[0].id AS a", "b[0].id AS b").collect()
    assert found and all(r.b == r.a + 1 for r in found)


def test_ctrl_c_stops_cleanly_and_the_next_run_goes_on(spark, tmp_path):
    rows = _log(seed=11, count=400)
    _write(tmp_path / "in", "part-0.csv", rows[:200])
    command = [
        sys.executable, "-m", "kleene", "stream", KEYED, "-i", str(tmp_path / "in"),
        "--checkpoint", str(tmp_path / "ck"), "-o", str(tmp_path / "out"), "--trigger", "1s",
        "--id-column", "seq", "--watermark", "1 minute", "--master", "local[1]",
    ]  # fmt: skip
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    running = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert running.stderr is not None
    lines = []
    for line in running.stderr:  # wait for the first micro-batch
        lines.append(line)
        if line.startswith("kleene: batch 0:"):
            break
    running.send_signal(signal.SIGINT)
    _, rest = running.communicate(timeout=120)
    assert running.returncode == 0, "".join(lines) + rest
    assert "kleene: stopped; run the same command to go on from the checkpoint" in rest

    _write(tmp_path / "in", "part-1.csv", rows[200:])
    _run(spark, tmp_path, KEYED, watermark="1 minute")
    expected = detect(_batch(spark, tmp_path / "in"), KEYED, id="seq", arrival="seq")
    assert _ids(spark.read.parquet(str(tmp_path / "out"))) == _ids(expected)


def test_numeric_timestamps_from_zero(spark, tmp_path):
    """A stream of numbers counted from zero, with RETURN values: the same as batch."""
    folder = tmp_path / "in"
    folder.mkdir()
    rng = random.Random(2)
    lines = ["ts,type,k,x,seq"]
    lines += [f"{i // 2},{rng.choice('ABC')},k{i % 3},{rng.randrange(5)},{i}" for i in range(300)]
    lines.append("1000,Z,k0,0,300")
    (folder / "events.csv").write_text("\n".join(lines) + "\n")
    schema = "ts long, type string, k string, x long, seq long"
    query = (
        "PATTERN SEQ(A a, B b, C c) WHERE [k] AND a.x <= c.x WITHIN 20 "
        "RETURN a.x + c.x AS total, c.ts - a.ts AS gap"
    )
    frame = spark.readStream.schema(schema).option("header", True).csv(str(folder))
    job = detect_stream_job(frame, query, id="seq", watermark=5)
    started = job.start(str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), available_now=True)
    started.awaitTermination()
    batch = spark.read.schema(schema).option("header", True).csv(str(folder))
    expected = detect(batch, query, id="seq", arrival="seq")
    found = spark.read.parquet(str(tmp_path / "out"))
    assert _ids(found) == _ids(expected)
    assert _ids(expected)
    values = sorted((r["total"], r["gap"]) for r in found.collect())
    assert values == sorted((r["total"], r["gap"]) for r in expected.collect())


def test_disorder_within_the_watermark_is_put_back_in_order(spark, tmp_path):
    """Rows arrive up to the watermark delay out of timestamp order, across micro-batches:
    the matches are those of the sorted stream, and no event is late."""
    rows = _log(seed=13, count=600)
    rng = random.Random(13)
    body = rows[:-1]
    for i in range(0, len(body) - 1, 2):  # swap neighbours: at most 30 s apart, delay 1 min
        if rng.random() < 0.5:
            body[i], body[i + 1] = body[i + 1], body[i]
    arrived = [*body, rows[-1]]
    for part, (start, end) in enumerate([(0, 200), (200, 400), (400, None)]):
        _write(tmp_path / "in", f"part-{part}.csv", arrived[start:end])
    progressed = _run(spark, tmp_path, NEGATED, watermark="1 minute")
    assert sum(b["late"] for b in progressed) == 0
    expected = detect(_batch(spark, tmp_path / "in"), NEGATED, id="seq", arrival="seq")
    assert _ids(spark.read.parquet(str(tmp_path / "out"))) == _ids(expected)


def test_a_row_that_does_not_fit_the_columns_is_named(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    rows = ["ts,type,k,x", "2024-01-01 00:00:00,A,k1,1", "2024-01-01 00:00:05,B,k1,oops"]
    (folder / "a.csv").write_text("\n".join(rows) + "\n")
    done = _kleene(
        "stream", "PATTERN SEQ(A a, B b) WHERE [k] AND a.x < b.x WITHIN 1 min",
        "-i", str(folder), "--checkpoint", str(tmp_path / "ck"), "-o", str(tmp_path / "out"),
        "--available-now", "--schema", "ts timestamp, type string, k string, x long",
        "--master", "local[1]",
    )  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert last.startswith("kleene: file://") and "a.csv: a row does not fit the columns" in last
    assert '"oops"' in last


def test_epoch_milliseconds_under_a_window_in_minutes_are_refused(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    lines = ["ts,type,k,seq"] + [f"{1_700_000_000_000 + i * 1000},A,k0,{i}" for i in range(5)]
    (folder / "events.csv").write_text("\n".join(lines) + "\n")
    done = _kleene(
        "stream", "PATTERN SEQ(A a, A b) WITHIN 10 min", "-i", str(folder),
        "--checkpoint", str(tmp_path / "ck"), "-o", str(tmp_path / "out"), "--available-now",
        "--id-column", "seq", "--schema", "ts long, type string, k string, seq long",
        "--master", "local[1]",
    )  # fmt: skip
    assert done.returncode == 1
    assert "looks like epoch milliseconds" in done.stderr.splitlines()[-1]


def test_timed_out_partial_matches_on_a_stream(spark, tmp_path):
    """timeouts=True on a stream: a partial match times out as the watermark passes its
    deadline, marked by `kind`, as batch detect reports it; a count window is refused."""
    query = "PATTERN SEQ(A a, B b) WHERE relaxed_contiguity { [k] and a.x < b.x } WITHIN 1 minute"
    rows = _log(seed=5, count=240)
    _write(tmp_path / "in", "part-0.csv", rows[:120])
    _write(tmp_path / "in", "part-1.csv", rows[120:])
    _run(spark, tmp_path, query, watermark="1 minute", timeouts=True)
    streamed = spark.read.parquet(str(tmp_path / "out")).select("match_id", "kind").collect()
    batch = detect(_batch(spark, tmp_path / "in"), query, id="seq", arrival="seq", timeouts=True)
    expected = batch.select("match_id", "kind").collect()
    assert sorted(map(tuple, streamed)) == sorted(map(tuple, expected))
    assert {row.kind for row in expected} == {"match", "timeout"}
    with pytest.raises(KleeneError, match="count window"):
        detect_stream_job(_stream(spark, tmp_path / "in"), "PATTERN SEQ(A a, B b) WITHIN 3 EVENTS")


def test_iso_text_timestamps_in_json_lines_are_read_as_times(spark, tmp_path):
    """JSON lines hold times as ISO 8601 text, which Spark infers as strings: kleene stream
    refused them ("holds string"), where kleene match and kleene run read them. Now it
    reads them as kleene run does (the same matches as kleene match), and names a value
    that is no time; under --on-error skip, drops and counts its row, as kleene match
    does."""
    folder = tmp_path / "in"
    folder.mkdir()
    rows = [json.dumps({"ts": ts.isoformat(), "type": kind, "k": key, "x": x, "seq": seq})
            for ts, kind, key, x, seq in _log(seed=3, count=150)]  # fmt: skip
    (folder / "part-0.jsonl").write_text("\n".join(rows) + "\n")
    query = "PATTERN SEQ(A a, B b) WHERE [k] AND a.x < b.x WITHIN 2 minutes"
    expected = kleene.match(query, kleene.read_events(folder / "part-0.jsonl", id="seq"))
    assert expected
    done = _kleene(
        "stream", query, "-i", str(folder), "--checkpoint", str(tmp_path / "ck"),
        "-o", str(tmp_path / "out"), "--available-now", "--id-column", "seq",
        "--watermark", "1 minute", "--master", "local[1]",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = spark.read.parquet(str(tmp_path / "out")).collect()
    pairs = sorted((row.a[0]["id"], row.b[0]["id"]) for row in found)
    assert pairs == sorted((m.bindings["a"][0].id, m.bindings["b"][0].id) for m in expected)

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "part-0.jsonl").write_text(
        "\n".join([*rows[:5], rows[5].replace('"ts": "', '"ts": "x')])
    )
    done = _kleene(
        "stream", query, "-i", str(bad), "--checkpoint", str(tmp_path / "ck2"),
        "-o", str(tmp_path / "out2"), "--available-now", "--master", "local[1]",
    )  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert "field 'ts': 'x2024-03-01" in last and "is neither a number nor an ISO 8601" in last
    assert "Traceback" not in done.stderr

    skipping = tmp_path / "skipping"  # every row; one of a match's is bad
    skipping.mkdir()
    at = expected[0].bindings["a"][0].id  # its seq: its row
    rows[at] = rows[at].replace('"ts": "', '"ts": "x')
    (skipping / "part-0.jsonl").write_text("\n".join(rows) + "\n")
    done = _kleene(
        "stream", query, "-i", str(skipping), "--checkpoint", str(tmp_path / "ck3"),
        "-o", str(tmp_path / "out3"), "--available-now", "--id-column", "seq",
        "--watermark", "1 minute", "--master", "local[1]", "--on-error", "skip",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "1 skipped" in done.stderr  # dropped and counted, as a row without a timestamp
    kept = kleene.match(
        query, kleene.read_events(skipping / "part-0.jsonl", id="seq", on_error="skip")
    )
    assert kept and kept != expected
    found = spark.read.parquet(str(tmp_path / "out3")).collect()
    pairs = sorted((row.a[0]["id"], row.b[0]["id"]) for row in found)
    assert pairs == sorted((m.bindings["a"][0].id, m.bindings["b"][0].id) for m in kept)


@pytest.mark.parametrize(
    "schema", [None, "ts long, type string, x string", "ts long, type string, x long"]
)
def test_an_unclosed_quote_gets_the_verdict_kleene_match_gives(spark, tmp_path, capsys, schema):
    """Spark reads a CSV file's lines apart and closed a quote left open at a line's end
    without a word, so `kleene stream` read four events where `kleene match` refuses the
    file. A file there at the start is looked at before the stream starts; one that
    arrives later (as here, with the columns given) fails the query on its cell, a text
    cell or a number cell alike, and is then named as `kleene match` names it."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.csv").write_text('type,ts,x\nA,1,1\nB,2,"2\nA,3,0\nB,4,5\n')
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5"
    verdict = (
        f"kleene: {folder / 'a.csv'}, row 2, field 'x': a quote opened in this cell is not "
        "closed on its line"
    )
    assert main(["match", query, "-i", str(folder / "a.csv")]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(verdict)
    given = [] if schema is None else ["--schema", schema]
    arguments = ["stream", query, "-i", str(folder), "--checkpoint", str(tmp_path / "ck")]
    outputs = ["-o", str(tmp_path / "out"), "--available-now", "--master", "local[1]"]
    assert main([*arguments, *outputs, *given]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(verdict)


def test_a_column_with_a_dot_in_its_name_reaches_the_stream_workers(spark, tmp_path, capsys):
    """A header such as `px.usd` failed the stream (Spark read the dot as a struct's
    field): such a column travels under another name and comes out under its own."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "e.csv").write_text(
        "type,ts,k,px.usd\nA,1,x,1.5\nB,2,x,2.5\nA,3,y,0.5\nB,4,y,3.5\nZ,100,x,0\n"
    )
    query = "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 5"
    arguments = ["stream", query, "-i", str(folder), "--checkpoint", str(tmp_path / "ck")]
    out = tmp_path / "out"
    options = ["--available-now", "--watermark", "0 seconds", "--master", "local[1]"]
    assert main([*arguments, "-o", str(out), *options]) == 0
    rows = spark.read.parquet(str(out)).collect()
    found = sorted((r["a"][0]["px.usd"], r["b"][0]["px.usd"]) for r in rows)
    assert found == [(0.5, 3.5), (1.5, 2.5)]


@pytest.mark.parametrize(
    ("query", "files", "said"),
    [
        ("FROM A AS a MATCH a EMIT Event X()", True, "this query reports emitted events"),
        ("PATTERN SEQ(A a, B b) WITHIN 3 EVENTS", True, "a count window (WITHIN n EVENTS)"),
        ("PATTERN SEQ(A a, B b) WITHIN 1 min", False, "holds no files yet to tell the format"),
    ],
)
def test_kleene_stream_refuses_before_spark_starts(
    tmp_path, capsys, monkeypatch, query, files, said
):
    """A LEAD rule, a count window and an empty folder without --format were refused after
    20-30 s of Spark start-up: now before any session (starting one fails here)."""
    import kleene.spark

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(kleene.spark, "spark_session", no_spark)
    folder = tmp_path / "in"
    folder.mkdir()
    if files:
        (folder / "a.csv").write_text("type,ts\nA,1\nB,2\n")
    arguments = ["stream", query, "-i", str(folder), "--checkpoint", str(tmp_path / "ck")]
    assert main([*arguments, "-o", str(tmp_path / "out")]) == 1
    assert said in capsys.readouterr().err


def test_kleene_stream_runs_several_query_files(spark, tmp_path, capsys):
    """`kleene stream` over a folder of query files: one read of the input, each output row
    named by its query's file, each query's rows batch `detect`'s."""
    queries = tmp_path / "queries"
    queries.mkdir()
    (queries / "keyed.sase").write_text(KEYED)
    (queries / "unkeyed.sase").write_text(UNKEYED)
    rows = _log(seed=9, count=300)
    _write(tmp_path / "in", "part-0.csv", rows)
    arguments = ["stream", str(queries), "-i", str(tmp_path / "in"), "-o", str(tmp_path / "out")]
    arguments += ["--checkpoint", str(tmp_path / "ck"), "--available-now", "--id-column", "seq"]
    arguments += ["--arrival", "seq", "--watermark", "1 minute", "--master", "local[2]"]
    assert main(arguments) == 0
    assert "grouped keyed: " in capsys.readouterr().err
    found = spark.read.parquet(str(tmp_path / "out"))
    named = {"keyed": KEYED, "unkeyed": UNKEYED}
    expected = detect(_batch(spark, tmp_path / "in"), named, id="seq", arrival="seq")
    got = sorted(tuple(r) for r in found.select("query", "match_id").collect())
    assert got == sorted(tuple(r) for r in expected.select("query", "match_id").collect())
    assert {name for name, _ in got} == set(named)
