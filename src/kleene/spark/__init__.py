"""kleene on Apache Spark: find pattern matches in DataFrames and files.

    from kleene.spark import detect, spark_session

    spark = spark_session("local[*]")
    ticks = spark.read.parquet("ticks.parquet")
    detect(ticks, open("examples/rally_fizzles.sase").read()).show()

Needs the `spark` extra (`pip install 'kleene[spark]'`) and Java 17; `import kleene` works
without them.
"""

try:
    import pyspark  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "kleene.spark needs pyspark: pip install 'kleene[spark]' (and Java 17 to run it)"
    ) from error

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kleene.spark.batch import DetectJob, detect, detect_job, output_schema
    from kleene.spark.recognize import match_recognize, sql
    from kleene.spark.session import spark_session
    from kleene.spark.stream import StreamJob, detect_stream, detect_stream_job, progress

#: Each name's module, imported when the name is first read: a Python worker unpickling
#: `kleene.spark.worker`'s function imports this package, and needs neither the driver's
#: modules nor pandas (0.65 s of each worker's start: docs/benchmarks-journal.md).
_MODULES = {
    "DetectJob": "batch",
    "detect": "batch",
    "detect_job": "batch",
    "output_schema": "batch",
    "match_recognize": "recognize",
    "sql": "recognize",
    "spark_session": "session",
    "StreamJob": "stream",
    "detect_stream": "stream",
    "detect_stream_job": "stream",
    "progress": "stream",
}

__all__ = [
    "DetectJob",
    "StreamJob",
    "detect",
    "detect_job",
    "detect_stream",
    "detect_stream_job",
    "match_recognize",
    "output_schema",
    "progress",
    "spark_session",
    "sql",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'kleene.spark' has no attribute {name!r}")
    value = getattr(import_module(f"kleene.spark.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
