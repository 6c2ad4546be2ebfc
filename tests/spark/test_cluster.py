"""kleene on a Spark standalone cluster started from the pyspark package (a master and a
worker, each a JVM of its own on this machine), its executors' Python without kleene."""

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kleene
from tests.spark.test_workers import QUERY, bare_python, kleene_run, stocks_file

pytestmark = pytest.mark.spark

SPARK_HOME = Path(__import__("pyspark").__file__).parent


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _started(command: list[str], log: Path, ready: str, env: dict[str, str]) -> subprocess.Popen:
    """A Spark daemon, once its log says `ready` (within two minutes)."""
    daemon = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if re.search(ready, log.read_text(errors="replace")):
            return daemon
        if daemon.poll() is not None:
            break
        time.sleep(0.5)
    daemon.kill()
    raise AssertionError(f"{command[1:3]} did not start:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = _port()
    master = _started(
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(_port()),
        ],
        folder / "master.log",
        "I have been elected leader",
        env,
    )
    url = f"spark://127.0.0.1:{port}"
    try:
        worker = _started(
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--cores",
                "2",
                "--memory",
                "1g",
                "--webui-port",
                str(_port()),
                "--work-dir",
                str(folder / "work"),
            ],
            folder / "worker.log",
            "Successfully registered with master",
            env,
        )
        try:
            yield url
        finally:
            worker.terminate()
            worker.wait(30)
    finally:
        master.terminate()
        master.wait(30)


def test_kleene_run_on_a_standalone_cluster_whose_executors_lack_kleene(cluster, tmp_path):
    source, out = stocks_file(tmp_path), tmp_path / "out" / "m.parquet"
    expected = kleene.match(QUERY, kleene.read_events(source))
    done = kleene_run(source, out, "--master", cluster, python=bare_python(tmp_path))
    assert done.returncode == 0, done.stderr
    found = kleene.read_matches(out)
    assert len(found) == len(expected) > 0
