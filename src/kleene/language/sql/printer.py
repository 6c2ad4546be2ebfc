"""A MATCH_RECOGNIZE clause as text that reads back to an equal AST (`read`).

>>> from kleene.language.sql.reader import read
>>> clause = read('partition by k order by ts desc pattern (a "b"+?) define "b" as "b".x > prev(x)')
>>> print(clause_text(clause))
MATCH_RECOGNIZE (
  PARTITION BY k
  ORDER BY ts DESC
  PATTERN (A "b"+?)
  DEFINE "b" AS "b".x > PREV(x)
)
>>> read(clause_text(clause)) == clause
True
"""

from __future__ import annotations

import re
from typing import Any

from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.language.text import ATOM, COMPARE, SUM, ExprPrinter

__all__ = ["SqlPrinter", "clause_text", "pattern_text"]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Words the clause's grammar reads as keywords: a name spelled so is quoted.
_RESERVED = frozenset(
    [
        "match_recognize",
        "partition",
        "by",
        "order",
        "asc",
        "desc",
        "nulls",
        "measures",
        "as",
        "one",
        "row",
        "rows",
        "per",
        "match",
        "all",
        "show",
        "empty",
        "matches",
        "omit",
        "with",
        "unmatched",
        "after",
        "skip",
        "past",
        "to",
        "pattern",
        "permute",
        "subset",
        "define",
        "within",
        "interval",
        "is",
        "between",
        "in",
        "like",
        "escape",
        "classifier",
        "match_number",
        "running",
        "final",
        "prev",
        "next",
        "first",
        "last",
        "and",
        "or",
        "not",
        "true",
        "false",
        "null",
        "case",
        "when",
        "then",
        "else",
        "end",
    ]
)


class SqlPrinter(ExprPrinter):
    """SQL's spelling of the one expression tree: strings in single quotes, names quoted
    where they are not plain words."""

    def constant(self, value: Any) -> tuple[str, int]:
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'", ATOM
        return super().constant(value)

    def name(self, name: str) -> str:
        if _PLAIN.match(name) and name.lower() not in _RESERVED:
            return name
        return _quoted(name)

    def strength(self, expr: E.Expr) -> tuple[str, int]:
        match expr:  # the built-in cast(e, 'TYPE') as SQL writes it
            case E.Call(name="cast", args=(value, E.Constant(value=str() as to))):
                return f"CAST({self.text(value)} AS {to})", ATOM
            case E.Duration(amount=amount, unit=unit):
                return f"INTERVAL '{amount}' {unit}", ATOM
            case E.Call(name="array", args=values):
                return f"ARRAY[{', '.join(self.text(value) for value in values)}]", ATOM
            case E.Call(name="like", args=(value, pattern, *escape)) if len(escape) <= 1:
                tail = f" ESCAPE {self.wrapped(escape[0], SUM)}" if escape else ""
                text = f"{self.wrapped(value, SUM)} LIKE {self.wrapped(pattern, SUM)}{tail}"
                return text, COMPARE
        return super().strength(expr)

    def variable(self, name: str) -> str:
        """A pattern variable's name: bare only when it reads back the same (a plain word
        in upper case; the reader folds an unquoted one to upper case)."""
        return self.name(name) if name == name.upper() else _quoted(name)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_PRINTER = SqlPrinter()


def pattern_text(pattern: Q.RowPattern) -> str:
    """A row pattern's text.

    >>> pattern_text(Q.Alternation((Q.Concat(()), Q.Repeat(Q.Label("A"), 2, None, False))))
    '() | A{2,}?'
    """
    return _pattern(pattern, 0)


# binding strength in a row pattern: alternation < concatenation < quantified
_ALTERNATION, _CONCAT, _QUANTIFIED = range(3)


def _pattern(node: Q.RowPattern, at_least: int) -> str:
    name = _PRINTER.variable
    match node:
        case Q.Label(name=label):
            return name(label)
        case Q.Anchor(kind=kind):
            return kind
        case Q.Exclusion(body=body):
            return f"{{- {_pattern(body, 0)} -}}"
        case Q.Permute(items=items):
            return f"PERMUTE({', '.join(_pattern(item, 0) for item in items)})"
        case Q.Concat(items=()):
            return "()"
        case Q.Concat(items=items):
            text = " ".join(_pattern(item, _QUANTIFIED) for item in items)
            return text if at_least <= _CONCAT else f"({text})"
        case Q.Alternation(items=items):
            text = " | ".join(_pattern(item, _CONCAT) for item in items)
            return text if at_least <= _ALTERNATION else f"({text})"
        case Q.Repeat(body=body, min=low, max=high, greedy=greedy):
            inner = _pattern(body, _QUANTIFIED + 1)
            if isinstance(body, Q.Repeat):
                inner = f"({inner})"
            return inner + _quantifier(low, high) + ("" if greedy else "?")
    raise TypeError(f"not a row pattern node: {node!r}")


def _quantifier(low: int, high: int | None) -> str:
    if (low, high) == (0, None):
        return "*"
    if (low, high) == (1, None):
        return "+"
    if (low, high) == (0, 1):
        return "?"
    if low == high:
        return f"{{{low}}}"
    return f"{{{low},{'' if high is None else high}}}"


def clause_text(clause: Q.MatchRecognize) -> str:
    """The whole clause, a sub-clause a line."""
    name, expr = _PRINTER.name, _PRINTER.text
    lines = []
    if clause.partition_by:
        lines.append("PARTITION BY " + ", ".join(name(c) for c in clause.partition_by))
    if clause.order_by:
        keys = []
        for key in clause.order_by:
            text = name(key.column) + (" DESC" if key.descending else "")
            if key.nulls_first is not None:
                text += " NULLS FIRST" if key.nulls_first else " NULLS LAST"
            keys.append(text)
        lines.append("ORDER BY " + ", ".join(keys))
    if clause.measures:
        measures = ", ".join(f"{expr(m.expr)} AS {name(m.name)}" for m in clause.measures)
        lines.append("MEASURES " + measures)
    if clause.rows == "all":
        lines.append(
            "ALL ROWS PER MATCH"
            + {"show": "", "omit": " OMIT EMPTY MATCHES", "unmatched": " WITH UNMATCHED ROWS"}[
                clause.empty
            ]
        )
    skip = clause.skip
    if skip.to != "past_last":
        target = {"next_row": "NEXT ROW", "first": "FIRST ", "last": "LAST "}[skip.to]
        variable = _PRINTER.variable
        lines.append(f"AFTER MATCH SKIP TO {target}{variable(skip.var) if skip.var else ''}")
    lines.append(f"PATTERN ({pattern_text(clause.pattern)})")
    if clause.within is not None:
        lines.append(f"WITHIN INTERVAL '{clause.within.amount}' {clause.within.unit}")
    if clause.subsets:
        variable = _PRINTER.variable
        subsets = (
            f"{variable(s.name)} = ({', '.join(map(variable, s.members))})" for s in clause.subsets
        )
        lines.append("SUBSET " + ", ".join(subsets))
    if clause.defines:
        defines = ", ".join(
            f"{_PRINTER.variable(d.var)} AS {expr(d.condition)}" for d in clause.defines
        )
        lines.append("DEFINE " + defines)
    return "MATCH_RECOGNIZE (\n" + "".join(f"  {line}\n" for line in lines) + ")"
