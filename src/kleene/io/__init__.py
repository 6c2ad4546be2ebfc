"""Events in and out: readers for CSV, JSON lines, Parquet, pandas, Arrow and Python records;
writers."""

from kleene.io.frames import read_matches, to_pandas
from kleene.io.readers import (
    Columns,
    EventReader,
    format_of,
    from_arrow,
    from_pandas,
    from_records,
    read_events,
)
from kleene.io.writers import match_output, output_format, write_columns, write_matches

__all__ = [
    "Columns",
    "EventReader",
    "format_of",
    "from_arrow",
    "from_pandas",
    "from_records",
    "match_output",
    "output_format",
    "read_events",
    "read_matches",
    "to_pandas",
    "write_columns",
    "write_matches",
]
