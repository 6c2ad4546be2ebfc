"""`kleene.read_matches`: a run's or a stream's output read as Spark commits it, so pandas
users read what Spark readers read, never an orphan part file a killed run left."""

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene


def _part(folder, name, ids):
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"match_id": ids}), folder / name)
    return folder / name


def _log(folder, batch, files, suffix=""):
    log = folder / "_spark_metadata"
    log.mkdir(parents=True, exist_ok=True)
    lines = ["v1"] + [
        json.dumps({"path": f"file://{path}", "size": 1, "action": "add"}) for path in files
    ]
    (log / f"{batch}{suffix}").write_text("\n".join(lines) + "\n")


def test_a_streams_output_is_read_from_the_file_sinks_log(tmp_path):
    out = tmp_path / "out"
    first, second = _part(out, "part-0.parquet", [1, 2]), _part(out, "part-1.parquet", [3])
    _part(out, "part-9.parquet", [99])  # a batch that never committed
    (out / "part-8.parquet").write_bytes(b"")  # what kill -9 leaves: pandas cannot read it
    _log(out, 0, [first])
    _log(out, 1, [second])
    with pytest.raises(Exception, match=r"0 bytes|size"):
        pd.read_parquet(out)
    assert sorted(kleene.read_matches(out)["match_id"]) == [1, 2, 3]


def test_a_compacted_log_is_read_from_its_latest_compaction(tmp_path):
    out = tmp_path / "out"
    old, kept, new = (_part(out, f"part-{n}.parquet", [n]) for n in range(3))
    _log(out, 0, [old])  # compacted since: 9.compact lists what holds now
    _log(out, 9, [kept], ".compact")
    _log(out, 10, [new])
    assert sorted(kleene.read_matches(out)["match_id"]) == [1, 2]


def test_batches_apart_and_batch_jobs_are_read_when_marked_done(tmp_path):
    out = tmp_path / "out"
    _part(out / "batch=0", "part-0.parquet", [1])
    (out / "batch=0" / "_SUCCESS").write_text("")
    _part(out / "batch=1", "part-0.parquet", [2])  # killed while writing: no _SUCCESS
    assert list(kleene.read_matches(out)["match_id"]) == [1]
    job = tmp_path / "job"
    _part(job, "part-0.parquet", [5])
    with pytest.raises(kleene.KleeneError, match="no run finished writing this folder"):
        kleene.read_matches(job)
    (job / "_SUCCESS").write_text("")
    assert list(kleene.read_matches(job)["match_id"]) == [5]
    assert list(kleene.read_matches(job / "part-0.parquet")["match_id"]) == [5]
    lines = tmp_path / "m.jsonl"
    lines.write_text('{"match_id": 7}\n')
    assert list(kleene.read_matches(lines)["match_id"]) == [7]
    with pytest.raises(kleene.KleeneError, match="no such file"):
        kleene.read_matches(tmp_path / "nothing")


def test_a_damaged_log_a_missing_file_and_a_damaged_file_are_named(tmp_path):
    out = tmp_path / "out"
    log = out / "_spark_metadata"
    log.mkdir(parents=True)
    (log / "0").write_text("v1\n{not json\n")
    with pytest.raises(kleene.KleeneError, match=r"_spark_metadata/0, line 2: not an entry"):
        kleene.read_matches(out)
    _log(out, 0, [out / "part-gone.parquet"])  # listed, then lost
    with pytest.raises(kleene.KleeneError, match=r"part-gone.parquet: cannot read it"):
        kleene.read_matches(out)
    (tmp_path / "bad.parquet").write_bytes(b"garbage")
    with pytest.raises(kleene.KleeneError, match=r"bad.parquet: cannot read it as matches"):
        kleene.read_matches(tmp_path / "bad.parquet")
