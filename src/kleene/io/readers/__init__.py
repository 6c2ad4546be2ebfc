"""Reading events from CSV, JSON lines, Parquet, pandas and Arrow, a batch at a time: one
module per format (`csv_files`, `json_lines`, `parquet_files`, `arrow_batches`, `records` for
Python tuples) over what
they share (`source`: columns, formats, the reader; `rows`: rows to events, checked).
`read_events` reads a path (`paths`).
"""

from kleene.io.readers.arrow_batches import from_arrow, from_pandas
from kleene.io.readers.csv_files import NULL_TOKENS
from kleene.io.readers.paths import count_rows, read_events
from kleene.io.readers.records import from_records
from kleene.io.readers.source import (
    FORMATS,
    GZIP_MAGIC,
    STDIN,
    Columns,
    EventReader,
    OnError,
    format_of,
    gzipped,
    named_format,
)

__all__ = [
    "FORMATS",
    "GZIP_MAGIC",
    "NULL_TOKENS",
    "STDIN",
    "Columns",
    "EventReader",
    "OnError",
    "count_rows",
    "format_of",
    "from_arrow",
    "from_pandas",
    "from_records",
    "gzipped",
    "named_format",
    "read_events",
]
