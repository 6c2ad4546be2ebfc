"""One row shape on every surface (docs/output.md): `kleene match` in its three formats,
`kleene run`, `kleene stream` and the Python API give the same fields, with the same
events inside, the same match ids and keys; `to_pandas` is their flattened view."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

import kleene
from kleene.cli import main

QUERY = "PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 10 RETURN b.x - a.x AS rise"
FIELDS = ["match_id", "pattern", "start_ts", "end_ts", "key", "a", "b", "rise"]
EVENT = ["id", "type", "ts", "k", "x"]
ROWS = [("A", 1, "u1", 1, 10), ("A", 2, "u2", 4, 11), ("B", 3, "u1", 5, 12),
        ("B", 5, "u2", 9, 13), ("A", 6, "u1", 2, 14), ("B", 9, "u1", 3, 15),
        ("C", 100, "u1", 0, 16)]  # fmt: skip


def _identity(row):
    """What must agree across surfaces: the match id, the key, each variable's events'
    ids, the RETURN value."""
    key = row["key"]
    key = json.loads(key) if isinstance(key, str) else dict(key)
    return (row["match_id"], tuple(sorted(key.items())), _events_of(row, "a")[0]["id"], row["rise"])


def _events_of(row, name):
    value = row[name]
    return json.loads(value) if isinstance(value, str) else [dict(e) for e in value]


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "events.csv"
    path.write_text(
        "type,ts,k,x,id\n" + "".join(f"{t},{ts},{k},{x},{i}\n" for t, ts, k, x, i in ROWS)
    )
    return path


def test_every_surface_gives_one_row_shape(spark, data, tmp_path, capsys):
    expected = kleene.match(QUERY, kleene.read_events(data, id="id"))
    assert len(expected) == 4
    plan = kleene.compile(QUERY)
    assert [f.name for f in plan.output.fields] == FIELDS
    api = [plan.output.row(m) for m in expected]
    rows = {"api": api}
    common = ["-i", str(data), "--id-column", "id"]
    for kind in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"m.{kind}"
        assert main(["match", QUERY, *common, "-o", str(out)]) == 0
        if kind == "jsonl":
            rows[kind] = [json.loads(line) for line in out.read_text().splitlines()]
        elif kind == "csv":
            rows[kind] = pd.read_csv(out).to_dict("records")
            assert list(pd.read_csv(out).columns) == FIELDS
        else:
            assert pq.read_schema(out).names == FIELDS
            rows[kind] = pq.read_table(out).to_pylist()
    run_out = tmp_path / "run.parquet"
    assert main(["run", QUERY, *common, "-o", str(run_out), "--master", "local[2]"]) == 0
    frame = spark.read.parquet(str(run_out))
    assert frame.columns == FIELDS
    rows["run"] = [r.asDict(recursive=True) for r in frame.collect()]
    stream_out = tmp_path / "stream"
    command = ["stream", QUERY, "-i", str(data.parent), "-o", str(stream_out), "--id-column", "id"]
    command += ["--checkpoint", str(tmp_path / "ck"), "--available-now", "--watermark", "0 s"]
    assert main([*command, "--master", "local[2]"]) == 0
    streamed = spark.read.parquet(str(stream_out))
    assert streamed.columns == FIELDS
    rows["stream"] = [r.asDict(recursive=True) for r in streamed.collect()]
    capsys.readouterr()

    want = sorted(_identity(r) for r in api)
    assert want[0][1] == (("k", "u1"),)
    for surface, found in rows.items():
        assert sorted(_identity(r) for r in found) == want, surface
        for row in found:
            assert [list(e) for e in _events_of(row, "a")] == [EVENT], surface

    flat = kleene.to_pandas(expected)
    own = ["match_id", "pattern", "start_ts", "end_ts", "rise"]
    assert list(flat.columns) == own + [f"{v}.{f}" for v in "ab" for f in EVENT]
    assert sorted(flat["match_id"]) == sorted(r["match_id"] for r in api)
