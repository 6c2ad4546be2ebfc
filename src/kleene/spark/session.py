"""A local SparkSession set up for kleene (workers on this Python, UTC, quiet)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from importlib.resources import files

from pyspark.sql import SparkSession

from kleene.errors import KleeneError

__all__ = ["KEEP_OBSERVATIONS", "OBSERVED_RULES", "local_cores", "spark_session", "worker_error"]

#: The setting of the adaptive optimizer's rules left out, and the rule kleene leaves out:
#: when every row is filtered away, it replaces the steps before with an empty relation
#: once they ran, and the observations there (the rows read, skipped and kept that
#: `DetectJob.counts` reports) are never delivered.
OBSERVED_RULES = "spark.sql.adaptive.optimizer.excludedRules"
KEEP_OBSERVATIONS = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"


def local_cores(master: str) -> int | None:
    """How many cores a local master uses (None: not a local master).

    >>> local_cores("local"), local_cores("local[3]"), local_cores("spark://host:7077")
    (1, 3, None)
    """
    found = re.fullmatch(r"local(?:\[(\d+|\*)\])?", master)
    if found is None:
        return None
    cores = found.group(1)
    if cores is None:
        return 1
    return (os.cpu_count() or 1) if cores == "*" else int(cores)


def spark_session(
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "kleene",
) -> SparkSession:
    """Get or create a SparkSession whose Python workers run this interpreter.

    The workers run `sys.executable` unless PYSPARK_PYTHON says otherwise (kleene's jobs
    ship kleene to them: `kleene.spark.shipping`). Timestamps are read in UTC. On a local master,
    shuffles default to four partitions a core rather than Spark's 200 (each partition is a
    Python task). Adaptive execution keeps a step that turned out empty (`KEEP_OBSERVATIONS`).
    Spark's own log prints errors only (`log4j2.properties` beside this
    module), unless `spark.driver.extraJavaOptions` names another log4j configuration.
    `conf` overrides any of this.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "true",
        OBSERVED_RULES: KEEP_OBSERVATIONS,
    }
    cores = local_cores(master)
    if cores is not None:
        settings["spark.sql.shuffle.partitions"] = str(4 * cores)
    settings.update(conf or {})
    options = settings.get("spark.driver.extraJavaOptions", "")
    if "log4j.configurationFile" not in options:  # Spark's start-up lines: errors only
        quiet = f"-Dlog4j.configurationFile={files('kleene.spark').joinpath('log4j2.properties')}"
        settings["spark.driver.extraJavaOptions"] = f"{options} {quiet}".strip()
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


_KLEENE_ERROR = re.compile(r"kleene\.errors\.\w+: (.*)")
#: What Spark says when a column's `raise_error` fires (kleene's columns raise so).
_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?)(?: SQLSTATE: \w+)*$", re.MULTILINE)


def worker_error(error: BaseException) -> KleeneError | None:
    """The kleene error a Spark job failed with, in a Python worker or in a column kleene
    built to fail on a bad value (`raise_error`), wrapped in Java and Python traces: as one
    error again; None when it failed with something else.

    >>> worker_error(Exception("...Traceback...\\nkleene.errors.EventError: the timestamp "
    ...                        "is missing (field ts)\\n\\tat org.apache.spark...")).args
    ('the timestamp is missing (field ts)',)
    >>> worker_error(Exception("[USER_RAISED_EXCEPTION] a.csv, field 'ts': 'x' is neither "
    ...                        "a number nor an ISO 8601 time SQLSTATE: P0001")).args
    ("a.csv, field 'ts': 'x' is neither a number nor an ISO 8601 time",)

    A streaming query's failure adds its own state:

    >>> worker_error(Exception("[STREAM_FAILED] ... [USER_RAISED_EXCEPTION] in, field 'ts': "
    ...     "timestamps mix numbers and datetimes ('1') SQLSTATE: P0001 SQLSTATE: XXKST\\n=== "
    ...     "Streaming Query ===")).args
    ("in, field 'ts': timestamps mix numbers and datetimes ('1')",)
    """
    text = str(error)
    found = _KLEENE_ERROR.findall(text) or _RAISED.findall(text)
    return KleeneError(found[-1]) if found else None
