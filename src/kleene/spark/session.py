"""A local SparkSession set up for kleene (workers on this Python, UTC, quiet)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

__all__ = ["spark_session"]


def spark_session(
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "kleene",
) -> SparkSession:
    """Get or create a SparkSession whose Python workers run this interpreter.

    Workers must import kleene, so they use `sys.executable` (the one kleene is installed
    in) unless PYSPARK_PYTHON says otherwise. Timestamps are read in UTC.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
