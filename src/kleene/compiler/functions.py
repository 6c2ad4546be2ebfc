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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = [
    "BUILTINS",
    "contains",
    "corr",
    "known_functions",
    "register_function",
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
}

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
