"""kleene on a Spark standalone cluster started from the pyspark package (a master and a
worker, each a JVM of its own on this machine), its executors' Python without kleene."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import kleene
from kleene.io import write_columns
from kleene.testing.workloads import StockStream
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


@dataclass
class Cluster:
    """A standalone cluster on this machine: its master's URL, and each worker's process
    and work folder (where its executors keep their logs)."""

    url: str
    workers: list[tuple[subprocess.Popen, Path]]
    master_log: Path


@contextmanager
def _cluster(folder: Path, workers: int, cores: int) -> Iterator[Cluster]:
    """A master and `workers` workers of `cores` cores each, stopped after."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = _port()
    master_command = [spark_class, "org.apache.spark.deploy.master.Master", "--host"]
    master_command += ["127.0.0.1", "--port", str(port), "--webui-port", str(_port())]
    master = _started(master_command, folder / "master.log", "elected leader", env)
    url = f"spark://127.0.0.1:{port}"
    started: list[tuple[subprocess.Popen, Path]] = []
    try:
        for number in range(workers):
            work = folder / f"work{number}"
            command = [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--cores"]
            command += [str(cores), "--memory", "1g", "--webui-port", str(_port())]
            command += ["--work-dir", str(work)]
            log = folder / f"worker{number}.log"
            started.append((_started(command, log, "registered with master", env), work))
        yield Cluster(url, started, folder / "master.log")
    finally:
        for worker, _ in started:
            worker.kill()
            worker.wait(30)
        master.terminate()
        master.wait(30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    with _cluster(tmp_path_factory.mktemp("cluster"), workers=1, cores=2) as started:
        yield started.url


def test_kleene_run_on_a_standalone_cluster_whose_executors_lack_kleene(cluster, tmp_path):
    source, out = stocks_file(tmp_path), tmp_path / "out" / "m.parquet"
    expected = kleene.match(QUERY, kleene.read_events(source))
    done = kleene_run(source, out, "--master", cluster, python=bare_python(tmp_path))
    assert done.returncode == 0, done.stderr
    found = kleene.read_matches(out)
    assert len(found) == len(expected) > 0


def test_a_job_survives_a_killed_worker(tmp_path):
    """Two workers of one core; when the first executor runs a task, its worker and the
    executor are killed (kill -9): Spark runs the lost tasks again on the other, and the
    output is every match, once."""
    source, out = tmp_path / "stocks.parquet", tmp_path / "out" / "m.parquet"
    write_columns(StockStream(size=60_000, symbols=8, seed=11).batches(), source)
    expected = len(kleene.match(QUERY, kleene.read_events(source)))
    with _cluster(tmp_path / "cluster", workers=2, cores=1) as started:
        command = [sys.executable, "-m", "kleene", "run", QUERY, "-i", str(source), "-o"]
        command += [str(out), "--master", started.url, "--conf", "spark.sql.shuffle.partitions=8"]
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
        running = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        killed = _kill_when_busy(started.workers, running)
        _, stderr = running.communicate(timeout=600)
        told = started.master_log.read_text()
    assert killed, "no executor ran a task before the job ended: nothing was killed"
    assert "Telling app of lost executor" in told
    assert running.returncode == 0, stderr
    assert f"{expected:,} matches" in stderr
    assert len(kleene.read_matches(out)) == expected


def _kill_when_busy(workers: list[tuple[subprocess.Popen, Path]], job: subprocess.Popen) -> bool:
    """Kill the first worker whose executor is running a task (its log says so), with the
    executor; whether one was killed before `job` ended."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and job.poll() is None:
        for worker, work in workers:
            logs = list(work.glob("app-*/*/stderr"))
            if any("Running task" in log.read_text(errors="replace") for log in logs):
                for executor in _executors(work):
                    os.kill(executor, signal.SIGKILL)
                worker.kill()
                return True
        time.sleep(0.2)
    return False


def _executors(work: Path) -> list[int]:
    """The processes of the executors a worker started (their command names its folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "CoarseGrainedExecutorBackend" in line and str(work) in line:
                found.append(int(entry.name))
    return found
