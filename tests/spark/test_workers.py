"""Workers whose Python has pyspark, pyarrow and pandas but not kleene or lark: kleene ships
itself and its pure-Python dependencies to them (`kleene.spark.shipping`)."""

import os
import site
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import kleene
from kleene.io import write_columns
from kleene.spark.shipping import PACKAGES
from kleene.testing.workloads import StockStream

pytestmark = pytest.mark.spark

QUERY = (
    "PATTERN SEQ(Stock a, Stock+ b[], Stock c) WHERE [symbol] AND b[i].price > b[i-1].price "
    "AND c.price < a.price WITHIN 30"
)


def bare_python(folder: Path, without: tuple[str, ...] = PACKAGES) -> Path:
    """A Python that sees the test's packages but kleene's: the interpreter without its
    site-packages (`-S`: no `.pth`, so no editable kleene either), over a folder of links
    to every package there except those named `without`."""
    packages = Path(site.getsitepackages()[0])
    farm = folder / "packages"
    farm.mkdir()
    left_out = tuple(without)
    for entry in packages.iterdir():
        name = entry.name.lower()
        if name.startswith(left_out) or name.startswith("__editable__") or name.endswith(".pth"):
            continue
        (farm / entry.name).symlink_to(entry)
    python = folder / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{farm}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" -S "$@"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    for name in ("kleene", *without):
        done = subprocess.run(
            [str(python), "-c", f"import {name}"], capture_output=True, text=True, check=False
        )
        assert f"No module named '{name}'" in done.stderr  # it is bare
    done = subprocess.run([str(python), "-c", "import pandas, numpy, pyspark"], check=False)
    assert done.returncode == 0
    return python


def kleene_run(
    source: Path, out: Path, *where: str, python: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`kleene run QUERY` from `source` to `out` in a process of its own, on the master or
    server `where` names (`--master ...` or `--remote ...`), its workers' Python `python`."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    if python is not None:
        env["PYSPARK_PYTHON"] = str(python)
    command = [sys.executable, "-m", "kleene", "run", QUERY, "-i", str(source), "-o", str(out)]
    return subprocess.run(
        [*command, *where], capture_output=True, text=True, check=False, env=env, timeout=600
    )


def stocks_file(folder: Path, name: str = "stocks.csv") -> Path:
    """A generated stock stream, written to `folder` in the format `name` says."""
    source = folder / name
    write_columns(StockStream(size=400, symbols=3, seed=5).batches(), source)
    return source


def test_workers_without_kleene_run_the_drivers(tmp_path):
    source, out = stocks_file(tmp_path), tmp_path / "out" / "m.parquet"
    expected = len(kleene.match(QUERY, kleene.read_events(source)))
    assert expected > 0
    done = kleene_run(source, out, "--master", "local[1]", python=bare_python(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"{expected:,} matches" in done.stderr
    assert len(kleene.read_matches(out)) == expected


def test_local_workers_fork_from_a_daemon_that_imported_kleene(spark, tmp_path):
    """A local session's workers start with kleene's worker code loaded (imported once, by
    the daemon they fork from); a Python that cannot find this kleene is not given that
    daemon, and its jobs run as before (`test_workers_without_kleene_run_the_drivers`)."""
    from kleene.spark.session import _imports_this_kleene

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "kleene.spark.daemon"
    loaded = spark.sparkContext.parallelize(range(4), 2).map(
        lambda _: "kleene.spark.worker" in __import__("sys").modules
    )
    assert loaded.collect() == [True] * 4
    assert _imports_this_kleene(sys.executable)
    assert not _imports_this_kleene(str(bare_python(tmp_path)))
    assert not _imports_this_kleene(str(tmp_path / "no-such-python"))


def test_a_worker_that_cannot_import_says_what_it_lacks_and_leaves_no_output(tmp_path):
    """A worker without pyarrow (which a cluster must have): the error names the module, not
    Spark's summary line alone, and no empty output folder is left to read as a result."""
    source, out = stocks_file(tmp_path), tmp_path / "out" / "m.parquet"
    bare = bare_python(tmp_path, (*PACKAGES, "pyarrow"))
    done = kleene_run(source, out, "--master", "local[1]", python=bare)
    assert done.returncode == 1
    assert "a Spark worker failed: ModuleNotFoundError: No module named 'pyarrow'" in done.stderr
    assert "need pyspark, pyarrow, pandas and numpy installed" in done.stderr
    assert not out.exists()


def test_the_workers_zip_is_made_once_and_earlier_ones_unused_for_a_week_go(tmp_path, monkeypatch):
    import os
    import time

    from kleene.spark.cache import KEEP_UNUSED_DAYS
    from kleene.spark.shipping import shipment

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "kleene"
    folder.mkdir()
    stale, recent = folder / "kleene-workers-0.zip", folder / "kleene-workers-1.zip"
    for path, age in ((stale, KEEP_UNUSED_DAYS + 1), (recent, KEEP_UNUSED_DAYS - 1)):
        path.write_bytes(b"an earlier kleene")
        then = time.time() - age * 86_400
        os.utime(path, (then, then))
    made = shipment()
    assert made.parent == folder and made.exists()
    assert not stale.exists() and recent.exists()
    os.utime(made, (0, 0))
    assert shipment() == made
    assert made.stat().st_mtime > time.time() - 60  # used again: kept another week


def test_processes_making_the_workers_zip_at_once_never_replace_it(tmp_path):
    """Spark refuses a file added to a session that changed since: a zip in place stays
    the one every session added, whichever of several processes made it first."""
    script = (
        "import os, sys\n"
        "from kleene.spark import shipping\n"
        "made = shipping.shipment()\n"
        "print(made, os.stat(made).st_ino)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    makers = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    seen = {maker.communicate(timeout=120)[0].strip() for maker in makers}
    assert all(maker.returncode == 0 for maker in makers)
    assert len(seen) == 1, seen  # one path, one file: none was replaced after it was seen
    path, inode = seen.pop().rsplit(" ", 1)
    assert os.stat(path).st_ino == int(inode)
    assert [p.name for p in (tmp_path / "kleene").iterdir()] == [Path(path).name]
