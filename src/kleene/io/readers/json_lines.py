"""Events from JSON lines: one object a line, a line that is not one named by its number."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path

from kleene.errors import EventError
from kleene.events import Event
from kleene.io.readers.rows import Rows
from kleene.io.readers.source import EventReader, opened, where_of

__all__ = ["jsonl_batches"]


def jsonl_batches(
    reader: EventReader, path: Path, column_types: dict[str, str]
) -> Iterator[Iterator[Event]]:
    rows = Rows(reader)
    where = where_of(path)

    def events() -> Iterator[Event]:
        with opened(path) as lines:
            number = 0
            for line in lines:
                if not line.strip():
                    continue
                number += 1
                bom = number == 1 and line.startswith(codecs.BOM_UTF8)  # a byte order mark
                try:
                    row = json.loads(line[len(codecs.BOM_UTF8) if bom else 0 :].decode("utf-8"))
                except UnicodeDecodeError as error:
                    message = f"not UTF-8 text (byte {error.start + 1} of the line)"
                    reader.fail(EventError(message, source=where, row=number))
                    continue
                except json.JSONDecodeError as error:
                    reader.fail(EventError(f"not JSON: {error.msg}", source=where, row=number))
                    continue
                if not isinstance(row, dict):
                    reader.fail(
                        EventError("a line must hold a JSON object", source=where, row=number)
                    )
                    continue
                event = rows.event(row, where, number)
                if event is not None:
                    yield event

    yield events()
