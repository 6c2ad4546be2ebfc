"""A local SparkSession set up for kleene (workers on this Python, UTC, quiet)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

from kleene.errors import KleeneError
from kleene.spark.jvm import class_archive, java_options

__all__ = [
    "KEEP_OBSERVATIONS",
    "OBSERVED_RULES",
    "classic_context",
    "default_parallelism",
    "local_cores",
    "spark_session",
    "worker_error",
]

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
    remote: str | None = None,
) -> SparkSession:
    """Get or create a SparkSession whose Python workers run this interpreter, or with
    `remote` (`sc://host:port`) a Spark Connect session with that server.

    The workers run `sys.executable` unless PYSPARK_PYTHON says otherwise (kleene's jobs
    ship kleene to them: `kleene.spark.shipping`). Timestamps are read in UTC. On a local
    master, shuffles default to four partitions a core rather than Spark's 200 (each
    partition is a Python task), and where the workers' Python finds this kleene, they
    fork from a daemon that has imported its worker code (`kleene.spark.daemon`).
    On a local master of at most two cores the JVM runs the serial garbage collector,
    unless `spark.driver.extraJavaOptions` chooses one, and every JVM started here maps
    kleene's archive of Spark's classes, or writes it as it exits when there is none yet
    (`kleene.spark.jvm`).
    Adaptive execution keeps a step that turned out empty (`KEEP_OBSERVATIONS`). Spark's
    own log prints errors only (`log4j2.properties` beside this module), unless
    `spark.driver.extraJavaOptions` names another log4j configuration.
    `conf` overrides any of this. A Connect session takes only the settings a session may
    change (the time zone, the rule kept, and `conf`): the server's owner set the rest.
    """
    settings = {"spark.sql.session.timeZone": "UTC", OBSERVED_RULES: KEEP_OBSERVATIONS}
    if remote is not None:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in {**settings, **(conf or {})}.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings["spark.ui.showConsoleProgress"] = "true"
    cores = local_cores(master)
    if cores is not None:
        settings["spark.sql.shuffle.partitions"] = str(4 * cores)
        if _imports_this_kleene(os.environ["PYSPARK_PYTHON"]):
            # the workers fork from a daemon that has imported kleene's worker code once
            settings["spark.python.daemon.module"] = "kleene.spark.daemon"
    settings.update(conf or {})
    options = java_options(settings.get("spark.driver.extraJavaOptions", ""), cores)
    settings["spark.driver.extraJavaOptions"] = f"{options} {class_archive(options)}".strip()
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _without_notice(_INCUBATOR):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _imports_this_kleene(python: str) -> bool:
    """Does `python`, started as a local worker is (this process's environment), find this
    very kleene? A probe: the interpreter is started and asked where kleene is, without
    importing it (a few hundredths of a second, once a session)."""
    probe = "import importlib.util as u; s = u.find_spec('kleene'); print(s and s.origin or '')"
    try:
        done = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    found = done.stdout.strip()
    mine = os.path.join(os.path.dirname(os.path.dirname(__file__)), "__init__.py")
    try:
        return done.returncode == 0 and bool(found) and os.path.samefile(found, mine)
    except OSError:  # found in a zip, say: not this file
        return False


#: What the JVM prints on its standard error as it starts, for the module Spark 4 adds; no
#: flag of the JVM's silences it.
_INCUBATOR = b"WARNING: Using incubator modules:"


@contextmanager
def _without_notice(notice: bytes) -> Iterator[None]:
    """Start the JVM (if this starts it) with a standard error that passes on every line
    but those beginning with `notice`: the process's own standard error is a pipe while
    this runs, which the JVM keeps; a thread forwards the pipe for as long as the process
    lives. (Nothing changes when there is no standard error to take back, or the JVM runs.)"""
    from pyspark import SparkContext

    if SparkContext._gateway is not None:  # the JVM runs: no new one starts here
        yield
        return
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    read, write = os.pipe()
    sys.stderr.flush()
    os.dup2(write, 2)
    os.close(write)

    def forward() -> None:
        with os.fdopen(read, "rb", buffering=0) as pipe:
            for line in iter(pipe.readline, b""):
                if not line.startswith(notice):
                    os.write(saved, line)

    threading.Thread(target=forward, name="kleene-jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)


def classic_context(session: Any) -> Any | None:
    """The session's SparkContext; None on Spark Connect, where the client has none."""
    try:
        return session.sparkContext
    except AttributeError:  # Connect's PySparkAttributeError (JVM_ATTRIBUTE_NOT_SUPPORTED)
        return None


def default_parallelism(session: Any) -> int:
    """How many tasks the session runs at once by default: Spark's default parallelism, or
    on Spark Connect (which does not say) its shuffle partitions."""
    context = classic_context(session)
    if context is not None:
        return int(context.defaultParallelism)
    return int(session.conf.get("spark.sql.shuffle.partitions") or 1)


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
