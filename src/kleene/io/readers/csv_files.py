"""Events from CSV: pyarrow's streaming reader, every cell read as text, then each attribute
column cast to the type its first batch suggests (a cell that does not fit named by row and
column, never a silent switch to text); only the empty cell is null, except in number
columns, where `NULL_TOKENS` are null too.
"""

from __future__ import annotations

import bisect
import csv
import io
import logging
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kleene.errors import EventError
from kleene.events import Event
from kleene.io.readers.arrow_batches import UNKNOWN, thinned
from kleene.io.readers.rows import Rows, decoded, row_events
from kleene.io.readers.source import (
    STDIN,
    EventReader,
    for_arrow,
    named_once,
    opened,
    where_of,
)

log = logging.getLogger("kleene")

__all__ = [
    "CSV_TYPES",
    "NULL_TOKENS",
    "OPEN_QUOTE",
    "UNCLOSED_QUOTE",
    "csv_batches",
    "unclosed_quote",
]

_CSV_BLOCK = 1 << 22  # bytes pyarrow reads per CSV block
_CSV_LARGEST_BLOCK = 1 << 30  # ... and at most, for a file with long fields
#: The types a CSV column may be given (`column_types`).
CSV_TYPES = ("int", "float", "bool", "string")


def csv_batches(
    reader: EventReader, path: Path, column_types: dict[str, str]
) -> Iterator[Iterator[Event]]:
    """CSV through pyarrow's streaming reader, every cell read as text, then each attribute
    column cast to the type its first batch suggests; a cell that does not fit is an error
    naming its row and column. A field longer than pyarrow's block makes it read the file
    again with blocks four times larger, from the row it had reached."""
    where = where_of(path)
    read = _CsvProgress(dict(column_types))
    block = _CSV_BLOCK
    while True:
        try:
            with opened(path) as raw:
                yield from _csv_stream(reader, raw, where, read, block)
            return
        except _StraddlingError:
            if str(path) == STDIN or block >= _CSV_LARGEST_BLOCK:
                raise EventError(
                    f"a field is longer than {block >> 20} MiB, more than kleene reads in one "
                    "piece"
                    + (
                        " from standard input; read it from a file"
                        if block < _CSV_LARGEST_BLOCK
                        else ""
                    ),
                    source=where,
                    row=read.rows + 1,
                ) from None
            block *= 4


@dataclass
class _CsvProgress:
    """How far a CSV file was read, kept across a read again with larger blocks: the
    column types chosen and the data rows consumed."""

    kinds: dict[str, str]
    rows: int = 0


class _StraddlingError(Exception):
    """pyarrow met a field longer than its block."""


def _csv_stream(
    reader: EventReader, raw: io.BufferedIOBase, where: str, read: _CsvProgress, block: int
) -> Iterator[Iterator[Event]]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    first = raw.readline()
    while first and not first.rstrip(b"\r\n"):  # empty lines before the header are passed
        first = raw.readline()  # over, as Spark and pyarrow pass over empty lines
    try:
        line = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise EventError("the header is not UTF-8 text", source=where, row=0) from None
    if re.match(OPEN_QUOTE, line):
        raise EventError(UNCLOSED_QUOTE, source=where, row=0)
    header = next(csv.reader([line]), None)
    if not header:
        return  # an empty file: no events
    reader.names, reader.where = tuple(header), where
    reader.has_roles()
    named_once(header, where, "the header names", row=0)
    bad_lines: list[tuple[int | None, str]] = []
    broken: list[int | None] = []  # rows a quote left open ran on from

    def invalid(row: Any) -> str:
        if re.match(OPEN_QUOTE, row.text or ""):  # a quote left open ran on: always an error
            broken.append(row.number)
        bad_lines.append(
            (row.number, f"expected {row.expected_columns} fields, found {row.actual_columns}")
        )
        return "skip"

    if not raw.peek(1):  # type: ignore[attr-defined]
        return  # a header and no rows
    undecodable: list[UnicodeDecodeError] = []
    try:
        with _quiet_undecodable(undecodable):
            stream = pacsv.open_csv(
                for_arrow(raw),  # after the header: the data rows, numbered from 1
                read_options=pacsv.ReadOptions(
                    use_threads=False,
                    block_size=block,
                    column_names=header,
                    skip_rows_after_names=read.rows,
                ),
                parse_options=pacsv.ParseOptions(invalid_row_handler=invalid),
                convert_options=pacsv.ConvertOptions(
                    column_types={name: pa.binary() for name in header},  # UTF-8: `_text`
                    strings_can_be_null=True,
                    null_values=[""],  # "NA" and the like are null only in number columns (_cast)
                ),
            )
    except pa.ArrowInvalid as error:
        raise _unreadable(error, where, undecodable) from None
    textual = {reader.columns.ts} | (
        set() if reader.columns.event_type is not None else {reader.columns.type}
    )
    kinds = read.kinds
    rows = Rows(reader)
    skipped_lines: set[int] = set()  # data rows pyarrow dropped as malformed
    row = read.rows  # the data row number of the last row handed out
    for batch in _batches(stream, where):
        if broken:
            raise EventError(UNCLOSED_QUOTE, source=where, row=broken[0])
        for number, message in bad_lines:
            if number is not None:
                skipped_lines.add(number)
            reader.fail(EventError(message, source=where, row=number))
        bad_lines.clear()
        numbers = []
        for _ in range(batch.num_rows):
            row += 1
            while row in skipped_lines:
                row += 1
            numbers.append(row)
        read.rows = row
        table: dict[str, Any] = {}  # each column in Arrow, or as values where read cell by cell
        good = [True] * batch.num_rows
        for name, binary in zip(batch.schema.names, batch.columns, strict=True):
            _closed_quotes(binary, name, where, numbers)
            column = decoded(binary, name, reader, where, numbers, good)
            if name in textual:
                table[name] = column
                continue
            if name not in kinds:
                kinds[name] = _infer(column)
                if kinds[name] == "string":
                    _warn_numeric_text(column, name, where)
            table[name] = _cast(column, name, kinds, reader, where, numbers, good)
        names = list(table)
        if reader.keep is not None:
            kept = _csv_thinned(rows, table, numbers, where, good)
            if kept is not None:
                yield kept
                continue
        columns = [c if isinstance(c, list) else c.to_pylist() for c in table.values()]
        yield row_events(rows, names, columns, numbers, where, good)
    if broken:
        raise EventError(UNCLOSED_QUOTE, source=where, row=broken[0])
    for number, message in bad_lines:
        reader.fail(EventError(message, source=where, row=number))


#: A CSV field, complete, and the comma after it: quoted (`""` a quote inside), with what
#: follows the closing quote up to the comma read as text, as pyarrow and Spark read it; or
#: bare; or empty. Possessive, so a line is read once, left to right, as the readers read it.
_FIELD = r'(?:"(?:[^"]|"")*+"[^,]*|[^",][^,]*)?,'
#: A CSV line that ends inside a quote one of its fields opened. The same text is a Java
#: regular expression, for Spark, which reads a file's lines apart and closes such a quote
#: at the line's end without a word.
OPEN_QUOTE = rf'^(?:{_FIELD})*+"(?:[^"]|"")*+$'
UNCLOSED_QUOTE = (
    "a quote opened in this cell is not closed on its line, so the rest of the file would be "
    "read as this one cell; close the quote (kleene reads no line breaks inside cells)"
)


def unclosed_quote(path: Path, where: str | None = None) -> EventError | None:
    """The first line of a CSV file that ends inside a quote it opened (`OPEN_QUOTE`), as
    the error kleene's reader gives for it (its data row and field); None when every quote
    closes on its line.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "in.csv"
    ...     _ = path.write_text('type,ts,x\\nA,1,"a, ""b"" c"\\nB,2,"2\\nA,3,0\\n')
    ...     print(unclosed_quote(path, "in.csv"))
    in.csv, row 2, field 'x': a quote opened in this cell is not closed on its line, ...
    """
    open_quote, field = re.compile(OPEN_QUOTE), re.compile(_FIELD)
    with opened(path) as raw:
        header: list[str] | None = None
        number = 0  # the data row, from 1 (blank lines are passed over, as the readers do)
        for ended in raw:
            line = ended.decode("utf-8", "replace").rstrip("\r\n")
            if not line:
                continue
            if open_quote.match(line) is not None:
                at, fields = 0, 0
                while (complete := field.match(line, at)) is not None:
                    at, fields = complete.end(), fields + 1
                name = header[fields] if header is not None and fields < len(header) else None
                return EventError(UNCLOSED_QUOTE, source=where or str(path), row=number, field=name)
            if header is None:
                header = next(csv.reader([line]), [])
            number += 1
    return None


def _closed_quotes(column: Any, name: str, where: str, numbers: list[int]) -> None:
    """A cell that holds a line break was opened with a quote that its line never closes:
    the rest of the file would be read as that one cell (and rows silently lost), so it is
    an error, whatever `on_error` says."""
    _, bounds, data = column.buffers()
    if data is None or len(column) == 0:
        return
    # where each cell of this batch's slice starts in the data (32-bit offsets, as CSV's)
    offsets = memoryview(bounds).cast("i")[column.offset : column.offset + len(column) + 1]
    at = memoryview(data)[offsets[0] : offsets[-1]].tobytes().find(b"\n")
    if at >= 0:
        broken = bisect.bisect_right(offsets, offsets[0] + at) - 1
        raise EventError(
            UNCLOSED_QUOTE,
            source=where,
            row=numbers[broken],
            field=name,
        )


def _csv_thinned(
    rows: Rows, table: dict[str, Any], numbers: list[int], where: str, good: list[bool]
) -> Iterator[Event] | None:
    """`thinned` for a CSV batch whose cells all read as their columns' types in Arrow,
    its timestamps being numbers (text to the reader, which reads each kept one as it reads
    any); None when the batch must be read whole."""
    import pyarrow as pa
    import pyarrow.compute as pc

    reader, spec = rows.reader, rows.columns
    stamps = table.get(spec.ts)
    times = None
    read_whole = stamps is None or any(isinstance(c, list) for c in table.values())
    if False not in good and not read_whole:
        for kind in (pa.int64(), pa.float64()):  # what `to_timestamp` reads as these, alike
            try:
                times = pc.cast(stamps, kind)
                break
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
    if times is None:
        reader._latest = UNKNOWN
        return None
    batch = pa.RecordBatch.from_arrays(list(table.values()), names=list(table))
    return thinned(rows, batch, numbers, where, times)


def _batches(stream: Any, where: str) -> Iterator[Any]:
    """pyarrow's CSV batches, its errors named as the file's."""
    import pyarrow as pa

    undecodable: list[UnicodeDecodeError] = []
    while True:
        try:
            with _quiet_undecodable(undecodable):
                batch = stream.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as error:
            raise _unreadable(error, where, undecodable) from None
        yield batch


@contextmanager
def _quiet_undecodable(found: list[UnicodeDecodeError]) -> Iterator[None]:
    """pyarrow hands a row with too many or too few fields to `invalid` (which skips and
    counts it) as text; a row that is not UTF-8 fails before it gets there, the read stops
    on the row, and Python prints the failure as "Exception ignored". Keep it off the
    terminal, in `found`: the error names the row and says why (`_unreadable`)."""
    hook = sys.unraisablehook

    def undecodable(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, UnicodeDecodeError):
            found.append(unraisable.exc_value)
        else:
            hook(unraisable)

    sys.unraisablehook = undecodable
    try:
        yield
    finally:
        sys.unraisablehook = hook


def _unreadable(
    error: Exception, where: str, undecodable: Sequence[UnicodeDecodeError] = ()
) -> EventError:
    """pyarrow's word on a CSV it cannot read (it does not say the row), and whether a
    malformed row it stopped on was not UTF-8 text either (`_quiet_undecodable`)."""
    if "straddl" in str(error):
        raise _StraddlingError from None
    hint = " (a CSV file must be UTF-8 text)" if "UTF8" in str(error) else ""
    if undecodable:  # a malformed row `invalid` never saw
        hint = (
            " (the row is not UTF-8 text either, which even --on-error skip cannot pass over: "
            "a CSV file must be UTF-8 text)"
        )
    row = re.search(r"Row #(\d+)", str(error))  # a malformed row pyarrow could not hand over
    number = None if row is None else int(row.group(1))
    if "\n" in str(error):  # the row it quotes ran on over lines: a quote left open
        return EventError(UNCLOSED_QUOTE, source=where, row=number)
    return EventError(f"cannot read the CSV: {error}{hint}", source=where, row=number)


#: Cells that mean "no value" in a number column (in a text column they are text).
NULL_TOKENS = frozenset({"NA", "N/A", "#N/A", "NULL", "null", "None", "nan", "NaN", "-"})


def _infer(column: Any) -> str:
    """The narrowest type the non-null cells of a text column fit: int, float, bool or string.
    Null tokens (`NULL_TOKENS`) do not count against a number; a column whose other cells are
    nearly all numbers (all but one in 20) is a number column, and `_cast` names the cells
    that are not, so stray text never turns numbers into text silently."""
    import pyarrow as pa
    import pyarrow.compute as pc

    present = _present(column)
    if not len(present):
        return "string"
    for kind, arrow in (("int", pa.int64()), ("float", pa.float64()), ("bool", pa.bool_())):
        try:
            pc.cast(present, arrow)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        return kind
    cells = present.to_pylist()
    numbers = _numbers(cells, len(cells) // 10)  # past that, far from 95 %: text
    if numbers is not None and len(numbers) >= 2 and len(numbers) >= 0.95 * len(cells):
        return "int" if all(_reads_as(int, c) for c in numbers) else "float"
    return "string"


#: `NULL_TOKENS` as one regular expression, for Arrow to match (`_tokens`).
_TOKEN_PATTERN = "^(?:" + "|".join(map(re.escape, sorted(NULL_TOKENS))) + ")$"


def _tokens(column: Any) -> Any:
    """Which cells of a text column are null tokens (`NULL_TOKENS`), found by a regular
    expression in Arrow: a value set would be an array made from Python strings, and the
    first such array makes pyarrow import pandas (0.4 s of a small `kleene match`)."""
    import pyarrow.compute as pc

    return pc.match_substring_regex(column, _TOKEN_PATTERN)


def _present(column: Any) -> Any:
    """A text column's cells that hold a value: neither null nor a null token."""
    import pyarrow.compute as pc

    return pc.filter(column, pc.and_kleene(pc.is_valid(column), pc.invert(_tokens(column))))


def _numbers(cells: list[str], most_failures: int) -> list[str] | None:
    """The cells that read as numbers; None once more than `most_failures` do not (a text
    column fails on every cell, and a failing `float` costs a raised error)."""
    numbers, failures = [], 0
    for cell in cells:
        if _reads_as(float, cell):
            numbers.append(cell)
        else:
            failures += 1
            if failures > most_failures:
                return None
    return numbers


def _shown(text: str, width: int = 40) -> str:
    """A cell as an error message quotes it: at most `width` characters of it.

    >>> print(_shown("y" * 100, 10))
    'yyyyyyyyyy'… (100 characters)
    """
    return repr(text) if len(text) <= width else f"{text[:width]!r}… ({len(text):,} characters)"


def _warn_numeric_text(column: Any, name: str, where: str) -> None:
    """Say so when a column read as text is half numbers or more: comparisons on it compare
    text ("10" < "9"), which is rarely what numbers meant."""
    cells = _present(column).to_pylist()
    numbers = _numbers(cells, len(cells) // 2)  # more fail: fewer than half are numbers
    if numbers is None or len(numbers) < 2 or 2 * len(numbers) < len(cells):
        return
    other = next(c for c in cells if not _reads_as(float, c))
    log.warning(
        f"{where}: column {name!r} is read as text: {len(numbers):,} of its first {len(cells):,} "
        f"cells are numbers, but not {_shown(other)}; comparisons on it compare text ('10' < "
        f"'9'). Give it a type (--column-type {name}=float, column_types=) to read numbers "
        "and name the other cells as errors"
    )


def _reads_as(kind: Callable[[str], Any], text: str) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


def _cast(
    column: Any,
    name: str,
    kinds: dict[str, str],
    reader: EventReader,
    where: str,
    numbers: list[int],
    good: list[bool],
) -> Any:
    """A text column as its kind's values: an Arrow array where every cell casts, else
    the values read cell by cell (each cell that does not fit named, or its row skipped)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrow = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    kind = kinds[name]
    if kind == "string":
        return column
    if kind != "bool":
        tokens = _tokens(column)
        if pc.any(tokens).as_py():
            column = pc.if_else(tokens, pa.nulls(len(column), pa.string()), column)
    try:
        return pc.cast(column, arrow[kind])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    if kind == "int":
        try:
            values = pc.cast(column, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            kinds[name] = "float"
            return values
    values = []
    converters: dict[str, Callable[[str], Any]] = {"int": _number, "float": float, "bool": _boolean}
    convert = converters[kind]
    for offset, text in enumerate(column.to_pylist()):
        if text is None:
            values.append(None)
            continue
        try:
            values.append(convert(text))
        except ValueError:
            values.append(None)
            if good[offset]:
                good[offset] = False
                reader.fail(
                    EventError(
                        f"{_shown(text)} is not "
                        f"{'a number' if kind != 'bool' else 'true or false'} "
                        f"like the rest of the column (give the column a type with "
                        f"column_types / --column-type {name}=string)",
                        source=where,
                        row=numbers[offset],
                        field=name,
                    )
                )
    return values


def _number(text: str) -> int | float:
    """An int, or a float where the column has widened."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ValueError(text)
