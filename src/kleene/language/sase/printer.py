"""SASE+ AST → canonical query text that reads back to an equal AST.

>>> from kleene import parse
>>> print(parse("pattern seq(A a, ~(B b), C+ c[]) where [id] and c[i].x>c[i-1].x within 2 hours"))
PATTERN SEQ(A a, NOT(B b), C+ c[])
WHERE [id] and c[i].x > c[i-1].x
WITHIN 2 hours
"""

from __future__ import annotations

import re

from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.text import NOT, ExprPrinter, number_text

__all__ = ["after_match_text", "expr_text", "quote_name", "to_text", "within_text"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = {
    "pattern",
    "where",
    "within",
    "seq",
    "ses",
    "and",
    "or",
    "not",
    "true",
    "false",
    "null",
    "greedy",
    "until",
    *A.STRATEGIES,
}
_WIDTH = 88


def quote_name(name: str) -> str:
    """A type or attribute name as the grammar reads it: backticks unless a plain word."""
    if _IDENTIFIER.match(name) and name.lower() not in _RESERVED and name != "len":
        return name
    if "`" in name:
        raise ValueError(f"a name cannot contain a backtick: {name!r}")
    return f"`{name}`"


def to_text(pattern: A.Pattern) -> str:
    """The canonical text of a whole query."""
    lines = [f"PATTERN {_element(pattern.structure)}"]
    if pattern.strategies:
        kleene = _kleene_names(pattern.structure)
        head = "WHERE " + " ".join(_strategy(clause, kleene) for clause in pattern.strategies)
        if pattern.where is not None:
            head += f" {{{_predicates(pattern.where, len(head) + 2)}}}"
        lines.append(head)
    elif pattern.where is not None:
        lines.append(f"WHERE {_predicates(pattern.where, 6).strip()}")
    if pattern.within is not None:
        lines.append(f"WITHIN {within_text(pattern.within)}")
    if pattern.after_match is not None:
        lines.append(after_match_text(pattern.after_match))
    if pattern.consume is not None:
        lines.append(f"CONSUME BY {pattern.consume.policy.upper()}")
    if pattern.freeze is not None:
        lines.append("FREEZE " + ", ".join(pattern.freeze.variables))
    if pattern.returns:
        items = []
        for returned in pattern.returns:
            text = expr_text(returned.expr)
            items.append(text if returned.name == text else f"{text} AS {returned.name}")
        lines.append("RETURN " + ", ".join(items))
    return "\n".join(lines)


def _predicates(where: E.Expr, indent: int) -> str:
    """One line when short; otherwise one top-level conjunct a line, as the papers print."""
    text = expr_text(where)
    if indent + len(text) <= _WIDTH or not isinstance(where, E.BoolOp) or where.op != "and":
        return f" {text} "
    items = [_PRINTER.wrapped(item, NOT) for item in where.items]
    return "\n    " + "\n    and ".join(items) + "\n"


def _kleene_names(element: A.Element) -> set[str]:
    if isinstance(element, A.EventVar):
        return {element.name} if element.kleene else set()
    if isinstance(element, A.Negation):
        return set()
    return set().union(*(_kleene_names(item) for item in element.items))


def _strategy(clause: A.Strategy, kleene: set[str]) -> str:
    if clause.variables is None:
        return clause.name
    names = (f"{n}[]" if n in kleene else n for n in clause.variables)
    return f"{clause.name}({', '.join(names)})"


def within_text(within: A.Within) -> str:
    """`12 hours`, `500 ms`, `90`, `10 s EXCLUSIVE`, `5 EVENTS`, `10 s AND 100 EVENTS`: a
    window as WITHIN prints it."""
    parts = []
    if within.amount is not None:
        text = number_text(within.amount)
        if within.unit is not None:
            plural = within.unit in {"hour", "day", "week"} and within.amount != 1
            text += f" {within.unit}{'s' if plural else ''}"
        parts.append(f"{text} EXCLUSIVE" if within.exclusive else text)
    if within.events is not None:
        parts.append(f"{within.events} EVENTS")
    return " AND ".join(parts)


def after_match_text(clause: A.AfterMatch) -> str:
    """`AFTER MATCH SKIP PAST LAST EVENT` and the like."""
    return {
        "no_skip": "AFTER MATCH NO SKIP",
        "to_next": "AFTER MATCH SKIP TO NEXT",
        "past_last": "AFTER MATCH SKIP PAST LAST EVENT",
        "to_first": f"AFTER MATCH SKIP TO FIRST {clause.variable}",
        "to_last": f"AFTER MATCH SKIP TO LAST {clause.variable}",
    }[clause.skip]


def _element(element: A.Element) -> str:
    if isinstance(element, A.EventVar):
        return _event(element)
    if isinstance(element, A.Negation):
        reading = " NEXT" if element.next else " FOLLOWED" if element.followed else ""
        return f"NOT{reading}({_event(element.event)})"
    keyword = {A.Seq: "SEQ", A.And: "AND", A.Or: "OR"}[type(element)]
    return f"{keyword}({', '.join(_element(item) for item in element.items)})"


def _event(event: A.EventVar) -> str:
    if event.types is None:
        types = A.ANY
    elif len(event.types) == 1:
        types = quote_name(event.types[0])
    else:
        types = "(" + "|".join(quote_name(t) for t in event.types) + ")"
    quantifier = event.quantifier
    optional = "?" if event.optional else ""
    if quantifier is None:
        return f"{types}{optional} {event.name}"
    text = f"{types}{_quantifier(quantifier)}{optional} {event.name}[]"
    if event.greedy:
        text += " GREEDY"
    if event.until is not None:
        text += f" UNTIL ({expr_text(event.until)})"
    return text


def _quantifier(quantifier: A.Quantifier) -> str:
    low, high = quantifier.min, quantifier.max
    if high is None:
        return {1: "+", 0: "*"}.get(low, f"{{{low},}}")
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


class SasePrinter(ExprPrinter):
    """SASE+'s spelling: names quoted where they are no plain word."""

    def name(self, name: str) -> str:
        return quote_name(name)


_PRINTER = SasePrinter()


def expr_text(expr: E.Expr) -> str:
    """The text of a predicate expression.

    >>> from kleene.language.sase import builder as b
    >>> print(expr_text(((b.var("a").x + 1) * 2 > b.avg(b.var("c")[:b.i - 1].y)).node))
    (a.x + 1) * 2 > avg(c[..i-1].y)
    """
    return _PRINTER.text(expr)


# str() of a pattern is its canonical text (given here, where the printing lives, so that
# the AST module needs no printer).
A.Pattern.__str__ = to_text  # type: ignore[method-assign, assignment]
