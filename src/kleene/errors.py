"""Every error kleene raises on purpose, and the caret excerpts they show.

>>> import kleene
>>> try:
...     kleene.parse("PATTERN SEQ(A a, B b) WHERE a.x >")
... except kleene.PatternSyntaxError as error:
...     print(error)
line 1, column 34: unexpected end of query; expected an expression
  1 | PATTERN SEQ(A a, B b) WHERE a.x >
    |                                  ^
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "EventError",
    "KleeneError",
    "LimitError",
    "PatternError",
    "PatternSyntaxError",
    "PlanError",
    "StateError",
    "excerpt",
    "in_query",
]


class KleeneError(Exception):
    """The base of every error kleene raises on purpose."""


def excerpt(text: str, line: int, column: int, width: int = 1) -> str:
    """The source line `line` of `text` with carets under `width` characters from `column`.

    Lines and columns count from 1.

    >>> print(excerpt("SEQ(A a,\\n    B b b)", 2, 9))
      2 |     B b b)
        |         ^
    """
    lines = text.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    gutter = f"{line:>3} | "
    pad = " " * (len(gutter) - 2) + "| "
    width = max(1, min(width, max(1, len(source) - column + 1)))
    return f"{gutter}{source}\n{pad}{' ' * (column - 1)}{'^' * width}"


class _LocatedError(KleeneError):
    """An error at a place in a query's text."""

    def __init__(self, message: str, text: str, line: int, column: int, width: int = 1) -> None:
        self.message = message
        self.text = text
        self.line = line
        self.column = column
        self.width = width
        #: The name of the query, one of several, whose text this is (`in_query`).
        self.query: str | None = None
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"line {self.line}, column {self.column}: {self.message}"
        if self.query is not None:
            head = f"query {self.query!r}, {head}"
        if not self.text:
            return head
        return f"{head}\n{excerpt(self.text, self.line, self.column, self.width)}"


@contextmanager
def in_query(name: str) -> Iterator[None]:
    """An error in the text of one of several queries names that query: `query 'rise',
    line 1, column 24: ...` (tests/runtime/test_queries.py)."""
    try:
        yield
    except _LocatedError as error:
        error.query = name
        raise


class PatternSyntaxError(_LocatedError):
    """The query text does not follow the grammar.

    `expected` lists, in words, what could have stood at the caret.
    """

    def __init__(
        self,
        message: str,
        text: str,
        line: int,
        column: int,
        expected: tuple[str, ...] = (),
        width: int = 1,
    ) -> None:
        self.expected = expected
        super().__init__(message, text, line, column, width)


class PatternError(_LocatedError):
    """The query is well-formed but does not make sense (an unknown variable, say).

    When the pattern was built in Python rather than parsed, there is no text: `line` and
    `column` are 0 and the message stands alone.
    """

    def __str__(self) -> str:
        if self.line == 0:
            return self.message if self.query is None else f"query {self.query!r}: {self.message}"
        return super().__str__()


class EventError(KleeneError):
    """An event, or a row meant to become one, is malformed.

    `source` names the file (or the input), `row` counts data rows from 1, `field` names the
    column or attribute at fault; any of them may be None when unknown. `late` marks an
    event that is well formed but came after the time it belongs to: out of timestamp order,
    or behind a punctuation (sorting the input, or `max_delay`, cures it).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        row: int | None = None,
        field: str | None = None,
        late: bool = False,
    ) -> None:
        self.message = message
        self.source = source
        self.row = row
        self.field = field
        self.late = late
        #: The event at fault, when the engine found the error in one it was given (a
        #: reader's `locate` turns it into the event's file and row).
        self.event: Any = None
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.source is not None:
            where.append(self.source)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class PlanError(KleeneError):
    """A plan or option that does not exist, or a plan that cannot run a pattern."""


class LimitError(KleeneError):
    """A guard on work or state tripped: a query's partial matches, or the matches one event
    completes, passed the limit its options set. The message names what grows and the fix."""


class StateError(KleeneError):
    """Saved plan state that cannot be resumed: written by another kleene state format, for
    another plan, or for another query or options."""
