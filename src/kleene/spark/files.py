"""Reading event files into DataFrames and writing match DataFrames, by extension."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kleene.errors import EventError, KleeneError
from kleene.io.readers import GZIP_MAGIC, format_of
from kleene.io.writers import output_format

__all__ = ["check_output", "read_events_frame", "write_matches_frame"]


def check_output(path: str, *, overwrite: bool = False) -> str:
    """The format an output path names ("parquet", "jsonl", "csv": `output_format`, as
    `kleene match` reads it); fails early on a path with another extension, or one that
    exists when not overwriting."""
    kind = output_format(path)
    if Path(path).exists() and not overwrite:
        raise KleeneError(f"{path} exists; pass --overwrite to replace it")
    return kind


def read_events_frame(
    spark: SparkSession,
    path: str,
    format: str | None = None,  # noqa: A002
    *,
    ts: str | None = None,
    tz: str = "UTC",
    on_error: str = "raise",
) -> DataFrame:
    """A CSV (with a header; types inferred), JSON lines or Parquet file or folder as a
    DataFrame. A `ts` column of text (ISO 8601, as JSON lines hold timestamps) becomes
    timestamps, as kleene match reads it: naive text in `tz`. A CSV row with more or fewer
    fields than the header fails the job (`on_error="raise"`) or is dropped ("skip"), as
    kleene match treats it, instead of Spark's default of keeping it (extra fields cut,
    missing ones null)."""
    frame = _read_frame(spark, path, format, on_error)
    text = ts is not None and ts in frame.columns
    if text and isinstance(frame.schema[ts].dataType, T.StringType):  # type: ignore[index]
        parsed = F.to_timestamp(F.col(f"`{ts}`"))
        if tz != "UTC":
            parsed = F.to_utc_timestamp(parsed, tz)
        frame = frame.withColumn(ts, parsed)  # type: ignore[arg-type]
    return frame


def _read_frame(
    spark: SparkSession,
    path: str,
    format: str | None,  # noqa: A002
    on_error: str,
) -> DataFrame:
    if not Path(path).exists():
        raise EventError(f"no such file or folder: {path}")
    kind = format or format_of(path)
    if Path(path).is_file() and not path.lower().endswith(".gz"):
        with open(path, "rb") as head:
            if head.read(2) == GZIP_MAGIC:
                raise EventError(
                    f"{path} is gzip-compressed; Spark tells compression by the name, so "
                    "name it with .gz at the end"
                )
    if kind == "csv":
        mode = "FAILFAST" if on_error == "raise" else "DROPMALFORMED"
        reader = spark.read.option("header", True).option("inferSchema", True)
        return reader.option("mode", mode).csv(path)
    if kind == "jsonl":
        return spark.read.json(path)
    return spark.read.parquet(path)


def write_matches_frame(matches: DataFrame, path: str, *, overwrite: bool = False) -> int:
    """Write matches as Parquet, JSON lines or CSV (nested columns as JSON text), by the
    path's extension; Spark writes a folder of part files. Return how many matches."""
    kind = check_output(path, overwrite=overwrite)
    from pyspark.sql import Observation

    counted = Observation("kleene_written")
    frame = matches.observe(counted, F.count(F.lit(1)).alias("matches"))
    if kind == "csv":
        nested = (T.ArrayType, T.StructType, T.MapType)
        frame = frame.select(
            *(
                F.to_json(F.col(f.name)).alias(f.name)
                if isinstance(f.dataType, nested)
                else F.col(f.name)
                for f in frame.schema.fields
            )
        )
    writer = frame.write.mode("overwrite" if overwrite else "errorifexists")
    if path.lower().endswith(".gz"):
        writer = writer.option("compression", "gzip")
    if kind == "csv":
        writer.option("header", True).csv(path)
    elif kind == "jsonl":
        writer.json(path)
    else:
        writer.parquet(path)
    return int(counted.get.get("matches") or 0)
