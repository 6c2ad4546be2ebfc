"""AST → canonical query text that parses back to an equal AST.

>>> from kleene import parse
>>> print(parse("pattern seq(A a, ~(B b), C+ c[]) where [id] and c[i].x>c[i-1].x within 2 hours"))
PATTERN SEQ(A a, NOT(B b), C+ c[])
WHERE [id] and c[i].x > c[i-1].x
WITHIN 2 hours
"""

from __future__ import annotations

import math
import re

from kleene.language import ast as A

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

# Binding strength of each kind of expression; an operand weaker than its place gets ().
_OR, _AND, _NOT, _COMPARE, _SUM, _PRODUCT, _UNARY, _ATOM = range(8)
_WIDTH = 88
_BINARY = {"+": _SUM, "-": _SUM, "*": _PRODUCT, "/": _PRODUCT, "%": _PRODUCT}


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
    if pattern.returns:
        items = []
        for returned in pattern.returns:
            text = expr_text(returned.expr)
            items.append(text if returned.name == text else f"{text} AS {returned.name}")
        lines.append("RETURN " + ", ".join(items))
    return "\n".join(lines)


def _predicates(where: A.Expr, indent: int) -> str:
    """One line when short; otherwise one top-level conjunct a line, as the papers print."""
    text = expr_text(where)
    if indent + len(text) <= _WIDTH or not isinstance(where, A.BoolOp) or where.op != "and":
        return f" {text} "
    items = [_wrap(item, _NOT) for item in where.items]
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
        text = _number(within.amount)
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
        return f"NOT({_event(element.event)})"
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


def _number(value: int | float) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError("NaN has no text form in a query")
        if math.isinf(value):
            return "1e999" if value > 0 else "-1e999"
    return repr(value)


def _string(value: str) -> str:
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\t", "\\t")
        .replace("\r", "\\r")
        .replace("\0", "\\0")
    )
    return f'"{escaped}"'


def _index(var: str, index: A.Index) -> str:
    offset = f"-{-index.offset}" if index.offset else ""
    if index.base == "abs":
        return str(index.offset)
    if index.base == "i":
        return f"i{offset}"
    return f"{var}.len{offset}"


def expr_text(expr: A.Expr) -> str:
    """The text of a predicate expression.

    >>> from kleene.language import builder as b
    >>> print(expr_text(((b.var("a").x + 1) * 2 > b.avg(b.var("c")[:b.i - 1].y)).node))
    (a.x + 1) * 2 > avg(c[..i-1].y)
    """
    return _expr(expr)[0]


def _wrap(expr: A.Expr, at_least: int) -> str:
    text, strength = _expr(expr)
    return text if strength >= at_least else f"({text})"


def _expr(expr: A.Expr) -> tuple[str, int]:
    match expr:
        case A.Literal(value=value):
            if value is None:
                return "null", _ATOM
            if isinstance(value, bool):
                return ("true" if value else "false"), _ATOM
            if isinstance(value, str):
                return _string(value), _ATOM
            text = _number(value)
            return text, (_UNARY if text.startswith("-") else _ATOM)
        case A.Attr(var=var, attr=attr, index=None):
            return f"{var}.{quote_name(attr)}", _ATOM
        case A.Attr(var=var, attr=attr, index=A.Index() as index):
            return f"{var}[{_index(var, index)}].{quote_name(attr)}", _ATOM
        case A.Len(var=var):
            return f"{var}.len", _ATOM
        case A.Aggregate(func=func, var=var, attr=attr, upto=upto):
            where = "" if upto is None else f"..i-{upto}" if upto else "..i"
            field = "" if attr is None else f".{quote_name(attr)}"
            return f"{func}({var}[{where}]{field})", _ATOM
        case A.Call(name=name, args=args):
            return f"{name}({', '.join(_wrap(a, _OR) for a in args)})", _ATOM
        case A.Equivalence(attrs=attrs):
            return f"[{', '.join(quote_name(a) for a in attrs)}]", _ATOM
        case A.Unary(op="not", operand=operand):
            return f"not {_wrap(operand, _NOT)}", _NOT
        case A.Unary(op="-", operand=operand):
            inner = _wrap(operand, _UNARY)
            if inner.startswith("-"):
                inner = f"({inner})"
            return f"-{inner}", _UNARY
        case A.Binary(op=op, left=left, right=right):
            strength = _BINARY[op]
            return f"{_wrap(left, strength)} {op} {_wrap(right, strength + 1)}", strength
        case A.Compare(op=op, left=left, right=right):
            return f"{_wrap(left, _SUM)} {op} {_wrap(right, _SUM)}", _COMPARE
        case A.BoolOp(op="and", items=items):
            return " and ".join(_wrap(item, _NOT) for item in items), _AND
        case A.BoolOp(op="or", items=items):
            return " or ".join(_wrap(item, _AND) for item in items), _OR
    raise TypeError(f"not an expression node: {expr!r}")
