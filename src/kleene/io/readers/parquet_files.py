"""Events from Parquet files: a damaged file named as such, the batches read as Arrow's."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kleene.errors import EventError
from kleene.events import Event
from kleene.io.readers.arrow_batches import arrow_batches
from kleene.io.readers.source import BATCH_ROWS, EventReader, for_arrow, opened, where_of

__all__ = ["parquet_batches"]


def parquet_batches(
    reader: EventReader, path: Path, column_types: dict[str, str]
) -> Iterator[Iterator[Event]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = where_of(path)
    with opened(path) as raw:
        # a file pyarrow may seek in; standard input and gzip are read whole first
        seekable = isinstance(raw, io.BufferedReader) and raw.seekable()
        source = for_arrow(raw) if seekable else pa.BufferReader(raw.read())
        try:
            file = pq.ParquetFile(source)
        except (pa.ArrowInvalid, OSError) as error:
            raise EventError(f"not a Parquet file: {error}", source=where) from None
        except pa.ArrowException as error:  # a footer pyarrow reads but cannot take
            raise EventError(f"the Parquet file is damaged: {error}", source=where) from None
        except UnicodeDecodeError as error:  # pyarrow decodes the column names it read
            raise EventError(
                f"the Parquet file is damaged: a column name is not UTF-8 text ({error})",
                source=where,
            ) from None
        with file:
            reader.names, reader.where = tuple(file.schema_arrow.names), where
            reader.has_roles()
            yield from arrow_batches(reader, _parquet_read(file, where), where)


def _parquet_read(file: Any, where: str) -> Iterator[Any]:
    """A Parquet file's record batches, a damaged one an error naming the file."""
    import pyarrow as pa

    batches = file.iter_batches(batch_size=BATCH_ROWS)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as error:
            message = str(error).strip().replace("\n", "; ")
            raise EventError(f"the Parquet file is damaged: {message}", source=where) from None
        yield batch
