"""kleene on Spark Connect: a server started from the pyspark package (its Python workers
without kleene), and `detect`, `detect_stream` and `kleene run --remote` as its clients.
Each client runs in a process of its own: a Connect session turns PySpark's functions to
Connect's for the whole process, which the other Spark tests share."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import kleene
from tests.spark.test_cluster import SPARK_HOME, _port, _started
from tests.spark.test_workers import QUERY, bare_python, kleene_run, stocks_file

pytestmark = pytest.mark.spark
pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect]")


def _server(folder: Path, python: str) -> Iterator[str]:
    """A Spark Connect server on one free port, its Python workers running `python`."""
    port = _port()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": python,
    }
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.ui.enabled=false",
    ]
    daemon = _started(command, folder / "server.log", "Spark Connect server started", env)
    try:
        yield f"sc://127.0.0.1:{port}"
    finally:
        daemon.terminate()
        daemon.wait(30)


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """A server whose workers' Python lacks kleene (batch jobs ship it)."""
    folder = tmp_path_factory.mktemp("connect")
    yield from _server(folder, str(bare_python(folder)))


@pytest.fixture(scope="module")
def kleene_server(tmp_path_factory) -> Iterator[str]:
    """A server whose workers have kleene: a streaming query's Python workers on Spark
    Connect do not see the session's artifacts (Spark 4.3), so nothing shipped reaches
    them (docs/spark.md)."""
    yield from _server(tmp_path_factory.mktemp("connect-kleene"), sys.executable)


def _found(matches: list[kleene.Match]) -> list[tuple[object, ...]]:
    """Each match in-process as its symbol and each variable's timestamps."""
    return sorted(
        (m.bindings["a"][0]["symbol"], *(tuple(e.ts for e in m.bindings[v]) for v in "abc"))
        for m in matches
    )


def _written(out: Path) -> list[tuple[object, ...]]:
    """Each match Spark wrote, as `_found` lays it out."""
    rows = kleene.read_matches(out).to_dict("records")
    return sorted(
        (row["a"][0]["symbol"], *(tuple(e["ts"] for e in row[v]) for v in "abc")) for row in rows
    )


CLIENT = """
import json, sys
import kleene, kleene.spark
from kleene.spark import spark_session
remote, source, out, how = sys.argv[1:5]
spark = spark_session(remote=remote)
frame = spark.read.parquet(source)
if how == "batch":
    kleene.spark.detect(frame, sys.argv[5]).write.parquet(out)
else:
    stream = spark.readStream.schema(frame.schema).parquet(source)
    job = kleene.spark.detect_stream_job(stream, sys.argv[5], watermark=5)
    job.start(out, checkpoint=out + ".checkpoint", available_now=True).awaitTermination()
"""


@pytest.mark.parametrize("how", ["batch", "stream"])
def test_detect_and_detect_stream_on_a_connect_session(request, tmp_path, how):
    server = request.getfixturevalue("server" if how == "batch" else "kleene_server")
    source = tmp_path / "in"
    source.mkdir()
    parquet = stocks_file(source, "stocks.parquet")
    expected = _found(kleene.match(QUERY, kleene.read_events(parquet)))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, server, str(source), str(out), how, QUERY],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, "\n".join(
        line for line in done.stderr.splitlines() if not line.lstrip().startswith("at ")
    )[-4000:]
    found = _written(out)
    if how == "batch":
        assert found == expected
    else:  # those the watermark settled: all but the input's last 5 time units' worth
        assert set(found) <= set(expected) and len(found) > 0.9 * len(expected)


def test_kleene_run_remote(server, tmp_path):
    source, out = stocks_file(tmp_path), tmp_path / "out" / "m.parquet"
    expected = _found(kleene.match(QUERY, kleene.read_events(source)))
    done = kleene_run(source, out, "--remote", server)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{len(expected):,} matches" in done.stderr
    assert _written(out) == expected


def test_kleene_stream_remote_ends_with_every_match(kleene_server, tmp_path):
    """`kleene stream --remote --available-now` on a Connect server: every match of the
    files, as `kleene match` finds them (the final watermark moves on Connect too)."""
    source = tmp_path / "in"
    source.mkdir()
    parquet = stocks_file(source, "stocks.parquet")
    expected = _found(kleene.match(QUERY, kleene.read_events(parquet)))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "kleene", "stream", QUERY, "-i", str(source), "-o"]
    command += [str(out), "--checkpoint", str(tmp_path / "ck"), "--available-now"]
    command += ["--watermark", "5s", "--remote", kleene_server]
    command += ["--conf", "spark.sql.shuffle.partitions=2"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "the watermark moves to" in done.stderr
    assert _written(out) == expected
