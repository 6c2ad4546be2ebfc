"""Reading event files into DataFrames and writing match DataFrames, by extension."""

from __future__ import annotations

import logging
import operator
import os
import shutil
from collections.abc import Iterable, Mapping
from functools import reduce
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kleene.compiler.query import Read
from kleene.compiler.schema import FIELDS
from kleene.errors import EventError
from kleene.io.readers import GZIP_MAGIC, format_of
from kleene.io.readers.csv_files import OPEN_QUOTE, UNCLOSED_QUOTE, unclosed_quote
from kleene.io.writers import check_overwrite, output_format

__all__ = [
    "CSV_OPTIONS",
    "check_output",
    "checked_text",
    "query_columns",
    "read_events_frame",
    "text_times",
    "unclosed_quotes",
    "write_matches_frame",
]

log = logging.getLogger("kleene")

#: How Spark must read CSV to read it as kleene's reader does: a quote inside a quoted cell
#: written twice (`""`), not after a backslash (Spark's default).
CSV_OPTIONS: dict[str, bool | str] = {"header": True, "escape": '"'}


def check_output(path: str, *, overwrite: bool = False) -> str:
    """The format an output path names ("parquet", "jsonl", "csv": `output_format`, as
    `kleene match` reads it); fails early on a path with another extension, or one that
    exists when not overwriting."""
    kind = output_format(path)
    if path == os.devnull:
        return kind  # counted, not written
    check_overwrite(path, overwrite)
    return kind


def read_events_frame(
    spark: SparkSession,
    path: str,
    format: str | None = None,  # noqa: A002
    *,
    ts: str | None = None,
    tz: str = "UTC",
    on_error: str = "raise",
    columns: Mapping[str, str] | None = None,
) -> DataFrame:
    """A CSV (with a header; types inferred), JSON lines or Parquet file or folder as a
    DataFrame. A `ts` column of text is read as kleene match reads it (`text_times`). A CSV row
    with more or fewer fields than the header fails the job (`on_error="raise"`) or is
    dropped ("skip"), as kleene match treats it, instead of Spark's default of keeping it
    (extra fields cut, missing ones null). JSON lines have no schema: of the `columns` the
    query needs (`query_columns`), one that no line holds is read as nulls of its type
    (logged), as `kleene match` reads events that lack it."""
    frame = _read_frame(spark, path, format, on_error, columns or {})
    if ts in frame.columns and isinstance(frame.schema[ts].dataType, T.StringType):
        frame = frame.withColumn(ts, text_times(frame, path, ts, tz, on_error))
    return frame


def text_times(sample: DataFrame | None, path: str, ts: str, tz: str, on_error: str) -> Column:
    """A `ts` column of text as timestamps: ISO 8601 times (as JSON lines hold them; naive
    ones in `tz`), or numbers when the first value in `sample` (the events, or for a stream
    the files there so far; None: times) that is either is a number (a CSV column of
    numbers is text when one of its values is not a number). A value that is neither,
    or of the other kind, fails the job with an error naming the file, the field and the
    value (`on_error="raise"`), or becomes null ("skip"), which `detect_job` drops and
    counts as it does a row without a timestamp. Spark's own cast would fail on the first
    row with a value Spark cannot cast, even a good number, and name neither file nor
    field."""
    text = F.col(f"`{ts}`")
    number = text.try_cast("double")
    time = F.try_to_timestamp(text)
    if tz != "UTC":
        time = F.to_utc_timestamp(time, tz)
    first = None
    if sample is not None:
        first = sample.where(number.isNotNull() | time.isNotNull()).select(number).first()
    numbers = first is not None and first[0] is not None
    parsed, other = (number, time) if numbers else (time, number)
    if on_error == "skip":
        return parsed
    where = F.lit(f"{path}, field {ts!r}: ")
    quoted = F.concat(F.lit("'"), text, F.lit("'"))
    wrong = F.when(
        other.isNotNull(),
        F.concat(where, F.lit("timestamps mix numbers and datetimes ("), quoted, F.lit(")")),
    ).otherwise(F.concat(where, quoted, F.lit(" is neither a number nor an ISO 8601 time")))
    return F.when(text.isNotNull() & parsed.isNull(), F.raise_error(wrong)).otherwise(parsed)


def _read_frame(
    spark: SparkSession,
    path: str,
    format: str | None,  # noqa: A002
    on_error: str,
    columns: Mapping[str, str],
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
    mode = "FAILFAST" if on_error == "raise" else "DROPMALFORMED"
    if kind == "csv":
        _closed_quotes(spark, path)
        reader = spark.read.options(**CSV_OPTIONS).option("inferSchema", True)
        return checked_text(reader.option("mode", mode).csv(path), on_error)
    if kind == "jsonl":  # a line that is not a JSON object fails, or is dropped, as a CSV row
        frame = spark.read.option("mode", mode).json(path)
        lacking = [T.StructField(name, _TYPES[typed]) for name, typed in columns.items()]
        lacking = [f for f in lacking if f.name not in frame.columns]
        if frame.columns and lacking:  # read again, with them: the files hold nulls there
            for field in lacking:
                log.warning(f"{path}: no line holds {field.name!r}: no event has it")
            schema = T.StructType([*frame.schema.fields, *lacking])
            frame = spark.read.schema(schema).option("mode", mode).json(path)
        return checked_text(frame, on_error)
    return spark.read.parquet(path)


def _closed_quotes(spark: SparkSession, path: str) -> None:
    """Spark reads a CSV file's lines apart, and closes a quote left open at a line's end
    without a word, where kleene's reader refuses the file (`unclosed_quote`): one pass
    over the lines as text finds the first such line, whatever `on_error` says; its row
    and field are then read in-process, on this error path only."""
    found = (
        spark.read.text(path)
        .where(F.col("value").rlike(OPEN_QUOTE))
        .select(F.input_file_name(), "value")
        .first()
    )
    if found is None:
        return
    file = Path(unquote(urlparse(found[0]).path))
    raise unclosed_quotes(str(file)) or EventError(
        f"a quote opened on the line {found[1]!r} is not closed on it", source=found[0]
    )


#: What Spark reads bytes that are not UTF-8 as (kleene's reader names their row).
REPLACED = "\ufffd"


#: The types `query_columns` names.
_TYPES: dict[str, T.DataType] = {"long": T.LongType(), "string": T.StringType()}


def query_columns(reads: Iterable[Read], roles: Mapping[str, str]) -> dict[str, str]:
    """The columns a query needs, with the Spark type each reads as when no JSON line holds
    it: the `roles` (name: type) and the attributes it reads (text)."""
    columns = dict(roles)
    for read in reads:
        if read.attr not in FIELDS:
            columns.setdefault(read.attr, "string")
    return columns


def checked_text(frame: DataFrame, on_error: str, *, line_breaks: bool = False) -> DataFrame:
    """A CSV or JSON lines frame whose text cells kleene's reader would refuse fail the
    job, naming the file and field (kleene then finds the row in-process): a cell that held
    bytes that are not UTF-8, which Spark reads as U+FFFD, and with `line_breaks` (a CSV
    read with `multiLine`, as a stream reads it) a cell holding a line break, where a
    quote was left open on its line. (A number column's cell that runs on fails the read
    itself.) Under on_error="skip" a row with bytes that are not UTF-8 is dropped instead.
    """
    texts = [f.name for f in frame.schema.fields if isinstance(f.dataType, T.StringType)]
    if not texts:
        return frame
    if on_error == "skip":
        replaced = [
            F.coalesce(F.col(f"`{name}`").contains(REPLACED), F.lit(False)) for name in texts
        ]
        frame = frame.where(~reduce(operator.or_, replaced))

    def checked(name: str) -> Column:
        cell = F.col(f"`{name}`")
        where = F.concat(F.input_file_name(), F.lit(f", field {name!r}: "))
        checks = [] if on_error == "skip" else [(cell.contains(REPLACED), "not UTF-8 text")]
        if line_breaks:
            checks.append((cell.contains("\n"), UNCLOSED_QUOTE))
        for bad, message in checks:
            cell = F.when(bad, F.raise_error(F.concat(where, F.lit(message)))).otherwise(cell)
        return cell.alias(name)

    return frame.select(*(checked(n) if n in texts else F.col(f"`{n}`") for n in frame.columns))


def unclosed_quotes(path: str) -> EventError | None:
    """The first line, in the CSV files at `path` (a file or a folder's visible files, in
    name order), that ends inside a quote it opened, as kleene's reader names it: read
    in-process, on an error path only."""
    root = Path(path)
    files = [root] if root.is_file() else sorted(root.rglob("*"))
    for file in files:
        hidden = any(part.startswith((".", "_")) for part in file.relative_to(root).parts)
        if file.is_file() and not hidden and (found := unclosed_quote(file)) is not None:
            return found
    return None


def write_matches_frame(matches: DataFrame, path: str, *, overwrite: bool = False) -> int:
    """Write matches as Parquet, JSON lines or CSV (nested columns as JSON text), by the
    path's extension; Spark writes a folder of part files. Return how many matches."""
    kind = check_output(path, overwrite=overwrite)
    if path == os.devnull:  # to time a run: the matches counted, not written
        return matches.count()
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
    writer = frame.write.mode("overwrite" if overwrite else "error")  # Connect: no "errorifexists"
    if path.lower().endswith(".gz"):
        writer = writer.option("compression", "gzip")
    try:
        if kind == "csv":
            writer.option("header", True).csv(path)
        elif kind == "jsonl":
            writer.json(path)
        else:
            writer.parquet(path)
    except BaseException:
        _unwritten(path)
        raise
    return int(counted.get.get("matches") or 0)


def _unwritten(path: str) -> None:
    """After a failed write, remove the folder Spark left at a local `path` without
    committing it (no `_SUCCESS`): an empty folder reads as a result of no rows. The path
    did not exist before, or was to be overwritten (Spark removed the old one first)."""
    parsed = urlparse(path)
    if parsed.scheme not in ("", "file"):
        return  # another file system: Spark's committer cleans up its own temporary files
    folder = Path(unquote(parsed.path) if parsed.scheme else path)
    if folder.is_dir() and not (folder / "_SUCCESS").exists():
        shutil.rmtree(folder, ignore_errors=True)
