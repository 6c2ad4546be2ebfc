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

from kleene.spark.batch import DetectJob, detect, detect_job, match_schema
from kleene.spark.session import spark_session
from kleene.spark.stream import StreamJob, detect_stream, detect_stream_job, progress

__all__ = [
    "DetectJob",
    "StreamJob",
    "detect",
    "detect_job",
    "detect_stream",
    "detect_stream_job",
    "match_schema",
    "progress",
    "spark_session",
]
