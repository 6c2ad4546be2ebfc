"""Scalar functions a predicate may call: built-ins and those users register from Python.

>>> import kleene
>>> @kleene.register_function("spread")
... def spread(high: float, low: float) -> float:
...     return high - low
>>> [m.events[0].id for m in kleene.match(
...     "PATTERN SEQ(Bar a) WHERE spread(a.high, a.low) > 2",
...     [{"type": "Bar", "ts": 1, "high": 5, "low": 4},
...      {"type": "Bar", "ts": 2, "high": 9, "low": 1}],
... )]
[1]

A function receives plain values; when any argument is null the call is null and the function
is not called. A built-in's arithmetic failure (`sqrt(-1)`, `log(0)`) is null; a registered
function that raises stops the run with an `EventError` naming the call and its arguments
(return None for "no value"). Names are case-insensitive.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from functools import cache, total_ordering
from typing import Any, TypeVar

from kleene.language import expr as E

__all__ = [
    "BUILTINS",
    "TAKES_NULLS",
    "Interval",
    "array",
    "array_join",
    "call_error",
    "cardinality",
    "cast",
    "caster",
    "concat",
    "concat_ws",
    "contains",
    "corr",
    "element_at",
    "known_functions",
    "like",
    "register_function",
    "registered_functions",
    "substr",
    "unregister_function",
]

F = TypeVar("F", bound=Callable[..., Any])


def corr(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's correlation of two equally long series (the lazy-NFA paper's condition).

    >>> round(corr([1, 2, 3], [2, 4, 7]), 3)
    0.993
    """
    n = min(len(xs), len(ys))
    if n < 2:
        return None
    mean_x = sum(xs[:n]) / n
    mean_y = sum(ys[:n]) / n
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs[:n], ys[:n], strict=True))
    sxx = sum((x - mean_x) ** 2 for x in xs[:n])
    syy = sum((y - mean_y) ** 2 for y in ys[:n])
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def contains(collection: Any, value: Any) -> bool:
    """Is `value` one of `collection` (`contains(values(p[].sym), 'IBM')`), or a substring?

    >>> contains(frozenset({1, 2}), 2), contains("abc", "d")
    (True, False)
    """
    return value in collection


def cast(value: Any, to: str) -> Any:
    """SQL's `CAST(value AS to)`: `to` one of the types `caster` knows. A value the type
    cannot hold (`CAST('x' AS INTEGER)`) is null, as every built-in's failure is.

    >>> cast(2.5, "integer"), cast("7", "int"), cast(3, "double"), cast(1.25, "decimal(5, 1)")
    (3, 7, 3.0, 1.3)
    >>> cast("a_label!", "varchar(7)"), cast(True, "varchar"), cast("TRUE", "boolean")
    ('a_label', 'true', True)
    """
    try:
        convert = caster(to)
    except ValueError as error:  # not a value's failure: the call's (`call_error`)
        raise TypeError(str(error)) from None
    return convert(value)


def like(value: Any, pattern: Any, escape: Any = None) -> bool:
    """SQL's `value LIKE pattern [ESCAPE escape]`: `%` stands for any text, `_` for any one
    character, and the escape character before either for itself.

    >>> like("second_key3", "%key%"), like("a_b", "a!_b", "!"), like("axb", "a!_b", "!")
    (True, True, False)
    """
    if not isinstance(value, str) or not isinstance(pattern, str):
        raise TypeError(f"LIKE compares text, not {value!r} and {pattern!r}")
    return _like_pattern(pattern, escape).fullmatch(value) is not None


@cache
def _like_pattern(pattern: str, escape: str | None) -> re.Pattern[str]:
    if escape is not None and (not isinstance(escape, str) or len(escape) != 1):
        raise TypeError(f"LIKE's ESCAPE is one character, not {escape!r}")
    parts, escaped = [], False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == escape:
            escaped = True
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    if escaped:
        raise TypeError(f"LIKE pattern {pattern!r} ends with its escape character")
    return re.compile("".join(parts), re.DOTALL)


@total_ordering
class Interval:
    """SQL's `INTERVAL '10' MINUTE` as a value: a length of time that a datetime's
    difference (a timedelta) and a number of seconds both meet, and that a datetime or a
    number of seconds adds.

    >>> from datetime import datetime, timedelta
    >>> ten = Interval(600.0)
    >>> timedelta(minutes=9) < ten, 601 > ten, datetime(2024, 1, 1) + ten
    (True, True, datetime.datetime(2024, 1, 1, 0, 10))
    """

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    @staticmethod
    def _length(other: Any) -> float | None:
        if isinstance(other, Interval):
            return other.seconds
        if isinstance(other, timedelta):
            return other.total_seconds()
        if isinstance(other, int | float) and not isinstance(other, bool):
            return other
        return None

    def __lt__(self, other: Any) -> Any:
        length = self._length(other)
        return NotImplemented if length is None else self.seconds < length

    def __eq__(self, other: object) -> Any:
        length = self._length(other)
        return NotImplemented if length is None else self.seconds == length

    def __hash__(self) -> int:
        return hash(self.seconds)

    def __add__(self, other: Any) -> Any:
        if isinstance(other, datetime):
            return other + timedelta(seconds=self.seconds)
        length = self._length(other)
        if length is None:
            return NotImplemented
        return (
            Interval(self.seconds + length) if isinstance(other, Interval) else other + self.seconds
        )

    __radd__ = __add__

    def __rsub__(self, other: Any) -> Any:
        if isinstance(other, datetime):
            return other - timedelta(seconds=self.seconds)
        if isinstance(other, int | float) and not isinstance(other, bool):
            return other - self.seconds
        return NotImplemented

    def __neg__(self) -> Interval:
        return Interval(-self.seconds)

    def __repr__(self) -> str:
        return f"Interval({self.seconds!r})"


def call_error(call: E.Call) -> str | None:
    """What is wrong in a call of a built-in that its text shows (a CAST to a type kleene
    does not cast to), or None: each language's checks raise it with a caret.

    >>> call_error(E.Call("cast", (E.Constant(1), E.Constant("date"))))
    'CAST to date: kleene casts to INTEGER, DOUBLE, DECIMAL, VARCHAR and BOOLEAN'
    """
    if call.name.lower() != "cast":
        return None
    match call.args:
        case (_, E.Constant(value=str() as to)):
            try:
                caster(to)
            except ValueError as error:
                return str(error)
            return None
    return "cast(value, 'TYPE') takes a value and a type's name"


#: A type as SQL writes it: its name (one word or two) and up to two numbers in parentheses.
_TYPE = re.compile(r"\s*([a-z]+(?: [a-z]+)?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*\Z")


@cache
def caster(to: str) -> Callable[[Any], Any]:
    """The conversion `CAST(... AS to)` makes: to a whole number (INTEGER, INT, BIGINT,
    SMALLINT, TINYINT: a fraction rounds half away from zero), to a float (DOUBLE, DOUBLE
    PRECISION, FLOAT, REAL), to a rounded number (DECIMAL or NUMERIC, with a scale: that
    many places), to text (VARCHAR, CHAR, CHARACTER [VARYING], STRING, TEXT, with a length:
    cut to it; booleans as 'true' and 'false') or to a boolean (BOOLEAN: numbers are true
    when not 0, text when 'true' or 'false'). Anything else is a `ValueError` naming it.

    >>> caster("DATE")
    Traceback (most recent call last):
    ...
    ValueError: CAST to DATE: kleene casts to INTEGER, DOUBLE, DECIMAL, VARCHAR and BOOLEAN
    """
    found = _TYPE.match(to.lower())
    kind = found.group(1) if found else ""
    sizes = [int(n) for n in found.groups()[1:] if n is not None] if found else []
    if kind in ("integer", "int", "bigint", "smallint", "tinyint") and not sizes:
        return _whole
    if kind in ("double", "double precision", "float", "real") and len(sizes) <= 1:
        return _float
    if kind in ("decimal", "numeric", "dec"):
        places = sizes[1] if len(sizes) == 2 else 0
        return lambda value: _whole(value) if places == 0 else _rounded(value, places)
    if kind in ("varchar", "char", "character", "character varying", "string", "text"):
        length = sizes[0] if len(sizes) == 1 else None
        return lambda value: _text(value)[:length]
    if kind in ("boolean", "bool") and not sizes:
        return _boolean
    raise ValueError(f"CAST to {to}: kleene casts to INTEGER, DOUBLE, DECIMAL, VARCHAR and BOOLEAN")


def _whole(value: Any) -> int:
    if isinstance(value, str):
        text = value.strip()
        return int(text) if text.lstrip("+-").isdigit() else _whole(float(text))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} has no whole number")
        return int(math.copysign(math.floor(abs(value) + 0.5), value))
    if isinstance(value, int | bool):
        return int(value)
    raise ValueError(f"{value!r} is no number")


def _rounded(value: Any, places: int) -> float:
    """`value` rounded to `places` decimal places, half away from zero, as written in
    decimal (1.25 is 1.3, where the float nearest 1.25 rounds to 1.2 in binary)."""
    number = _float(value)
    if not math.isfinite(number):
        raise ValueError(f"{number} has no decimal value")
    step = Decimal(1).scaleb(-places)
    return float(Decimal(repr(number)).quantize(step, rounding=ROUND_HALF_UP))


def _float(value: Any) -> float:
    if isinstance(value, int | float | str):
        return float(value)
    raise ValueError(f"{value!r} is no number")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool | int | float):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError(f"{value!r} is no boolean")


def substr(text: str, start: int, length: int | None = None) -> str:
    """SQL's `substr(text, start[, length])`: from the `start`-th character (1 the first; a
    negative start counts from the end), `length` of them.

    >>> substr("kleene", 2), substr("kleene", 2, 3), substr("kleene", -2), substr("ab", -5, 2)
    ('leene', 'lee', 'ne', '')
    """
    if not isinstance(text, str):
        raise TypeError(f"substr takes text, not {text!r}")
    if length is not None and length < 0:
        raise ValueError(f"substr's length is negative: {length}")
    if start == 0 or -start > len(text):  # before the text: nothing (as Trino has it)
        return ""
    begin = start - 1 if start > 0 else len(text) + start
    return text[begin:] if length is None else text[begin : begin + length]


def concat(*parts: Any) -> str:
    """SQL's `concat(a, b, …)`: the texts one after another (null when one is null, as
    `||` is).

    >>> concat("a", "b", "c")
    'abc'
    """
    if not all(isinstance(part, str) for part in parts):
        raise TypeError(f"concat joins texts, not {parts!r}")
    return "".join(parts)


def array(*values: Any) -> list[Any]:
    """SQL's `ARRAY[a, b, …]`: a list of the values, nulls kept (one of `TAKES_NULLS`).
    It compares equal to an `array_agg` of the same values.

    >>> array(1, None, 3)
    [1, None, 3]
    """
    return list(values)


def concat_ws(separator: Any, *parts: Any) -> str | None:
    """`concat_ws(sep, a, b, …)` (or `concat_ws(sep, array)`): the texts joined by `sep`,
    nulls left out; null when `sep` is (one of `TAKES_NULLS`).

    >>> concat_ws("-", "a", None, "b"), concat_ws("", ["m", "a"]), concat_ws(None, "a")
    ('a-b', 'ma', None)
    """
    if separator is None:
        return None
    if len(parts) == 1 and isinstance(parts[0], list | tuple):
        parts = tuple(parts[0])
    present = [part for part in parts if part is not None]
    if not isinstance(separator, str) or not all(isinstance(p, str) for p in present):
        raise TypeError(f"concat_ws joins texts, not {[separator, *parts]!r}")
    return separator.join(present)


def array_join(values: Any, separator: str, null_text: str | None = None) -> str:
    """Trino's `array_join(array, sep[, null_text])`: the array's values as text, joined
    by `sep`; a null left out, or written as `null_text`.

    >>> array_join([1, None, 2], ", "), array_join(["a", None], "/", "?")
    ('1, 2', 'a/?')
    """
    if not isinstance(values, list | tuple):
        raise TypeError(f"array_join joins an array, not {values!r}")
    shown = [null_text if value is None else _shown(value) for value in values]
    return separator.join(text for text in shown if text is not None)


def _shown(value: Any) -> str:
    """A value as SQL's `CAST(value AS VARCHAR)` writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cardinality(values: Any) -> int:
    """SQL's `cardinality(array)`: how many values the array holds.

    >>> cardinality([1, None])
    2
    """
    if not isinstance(values, list | tuple):
        raise TypeError(f"cardinality counts an array's values, not {values!r}")
    return len(values)


def element_at(values: Any, index: int) -> Any:
    """Trino's `element_at(array, i)`: the i-th value (1 the first, -1 the last), null
    past either end.

    >>> element_at(["a", "b"], 1), element_at(["a", "b"], -1), element_at(["a"], 3)
    ('a', 'b', None)
    """
    if not isinstance(values, list | tuple):
        raise TypeError(f"element_at reads an array, not {values!r}")
    if index == 0:  # (an error, as Trino's: not a null, which a ValueError would give)
        raise IndexError("element_at counts from 1 (or from -1 at the end), not 0")
    at = index - 1 if index > 0 else len(values) + index
    return values[at] if 0 <= at < len(values) else None


def _mod(dividend: Any, divisor: Any) -> Any:
    """SQL's `mod(a, b)`: the remainder, with the dividend's sign (whole numbers stay
    whole).

    >>> _mod(7, 3), _mod(-7, 3), _mod(7.5, 2)
    (1, -1, 1.5)
    """
    if isinstance(dividend, int) and isinstance(divisor, int):
        remainder = abs(dividend) % abs(divisor)
        return remainder if dividend >= 0 else -remainder
    return math.fmod(dividend, divisor)


def _least(*values: Any) -> Any:
    return min(values)


def _greatest(*values: Any) -> Any:
    return max(values)


BUILTINS: Mapping[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "sqrt": math.sqrt,
    "log": math.log,
    "exp": math.exp,
    "lower": str.lower,
    "upper": str.upper,
    "length": len,
    "corr": corr,
    "contains": contains,
    "cast": cast,
    "like": like,
    "concat": concat,
    "substr": substr,
    "substring": substr,
    "trim": str.strip,
    "ltrim": str.lstrip,
    "rtrim": str.rstrip,
    "replace": str.replace,
    "greatest": _greatest,
    "least": _least,
    "mod": _mod,
    "power": math.pow,
    "sign": lambda x: (x > 0) - (x < 0),
    "ln": math.log,
    "log10": math.log10,
    "array": array,
    "cardinality": cardinality,
    "array_join": array_join,
    "concat_ws": concat_ws,
    "element_at": element_at,
}

#: The built-ins a null argument does not make null: they are called with it.
TAKES_NULLS: tuple[Callable[..., Any], ...] = (array, concat_ws)

_REGISTERED: dict[str, Callable[..., Any]] = {}


def register_function(name: str, function: F | None = None) -> Any:
    """Make `function` callable by `name` in predicates; also usable as a decorator.

    A registered function shadows a built-in of the same name.
    """

    def add(f: F) -> F:
        if not name.isidentifier():
            raise ValueError(f"a function name must be an identifier, not {name!r}")
        _REGISTERED[name.lower()] = f
        return f

    return add if function is None else add(function)


def registered_functions() -> dict[str, Callable[..., Any]]:
    """The functions registered with `register_function`, by name (what a Spark job ships
    to its workers, whose processes have none registered)."""
    return dict(_REGISTERED)


def unregister_function(name: str) -> None:
    """Forget a function registered with `register_function`."""
    _REGISTERED.pop(name.lower(), None)


def known_functions(
    extra: Mapping[str, Callable[..., Any]] | None = None,
) -> dict[str, Callable[..., Any]]:
    """Built-ins, then registered functions, then `extra` (the `functions=` option)."""
    table = {**BUILTINS, **_REGISTERED}
    for name, function in (extra or {}).items():
        table[name.lower()] = function
    return table
