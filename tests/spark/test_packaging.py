"""pyspark stays optional: kleene imports without it, kleene.spark says what to install."""

import subprocess
import sys


def python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_kleene_imports_without_pyspark():
    blocked = "import sys; sys.modules['pyspark'] = None; "
    done = python(
        blocked
        + "import kleene, kleene.cli; "
        + "print(kleene.match('PATTERN SEQ(A a)', [{'type': 'A', 'ts': 1}]))"
    )
    assert done.returncode == 0, done.stderr
    assert "Match(a=[0])" in done.stdout
    done = python(blocked + "import kleene.spark")
    assert "kleene.spark needs pyspark: pip install 'kleene[spark]'" in done.stderr


def test_the_spark_extra_takes_a_range_of_pyspark():
    """Compatible-range pins: any pyspark 4, and the pandas and pyarrow it asks for (pandas
    below 3, which pyspark 4 warns it does not yet fully support)."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    spark = project["project"]["optional-dependencies"]["spark"]
    assert "pyspark[sql]>=4.0,<5" in spark
    assert "pandas>=2.2,<3" in spark and not any("==" in line for line in spark)


def test_a_worker_imports_neither_the_drivers_modules_nor_pandas():
    """A Python worker unpickles `kleene.spark.worker`'s function: importing it must not
    import the driver's modules and pandas through the package (0.65 s per worker)."""
    done = python(
        "import sys, kleene.spark.worker; "
        "print(sorted(m for m in ('pandas', 'kleene.spark.batch', 'kleene.spark.stream', "
        "'kleene.spark.session') if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    done = python("from kleene.spark import detect, progress, nothing")
    assert "cannot import name 'nothing' from 'kleene.spark'" in done.stderr
