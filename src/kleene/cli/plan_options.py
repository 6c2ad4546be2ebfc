"""Plan options from the command line: `--option NAME=VALUE` text made into the values
`kleene.compile` takes (`Options.build` then checks them).

>>> plan_options(["merge=False", "order=C,B,A", "frequencies=A:100,C:1", "estimate=50"])
{'merge': False, 'order': ['C', 'B', 'A'], 'frequencies': {'A': 100.0, 'C': 1.0}, 'estimate': 50}
>>> plan_options(["frequencies=A"])
Traceback (most recent call last):
kleene.errors.PlanError: frequencies: expected NAME:RATE, not 'A'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kleene.errors import KleeneError, PlanError

__all__ = ["pair", "plan_options"]


def plan_options(items: Sequence[str]) -> dict[str, Any]:
    """Plan options from NAME=VALUE items: True and False become booleans, `order` a list
    of names (C,B,A), `frequencies` rates by name (A:100,B:1), `estimate` a number."""
    options: dict[str, Any] = {}
    for item in items:
        name, value = pair(item)
        read = _READERS.get(name)
        options[name] = read(value) if read else {"True": True, "False": False}.get(value, value)
    return options


def pair(item: str) -> tuple[str, str]:
    """NAME=VALUE as (NAME, VALUE)."""
    if "=" not in item:
        raise KleeneError(f"expected NAME=VALUE, not {item!r}")
    name, value = item.split("=", 1)
    return name.strip(), value.strip()


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _rates(text: str) -> dict[str, float]:
    rates: dict[str, float] = {}
    for item in text.split(","):
        name, _, rate = item.partition(":")
        try:
            rates[name.strip()] = float(rate)
        except ValueError:
            raise PlanError(f"frequencies: expected NAME:RATE, not {item.strip()!r}") from None
    return rates


def _number(text: str) -> int | str | None:
    """A whole number (`none`: no limit), or the text itself for `Options.build` to reject
    with its message."""
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        return text


_READERS: dict[str, Callable[[str], Any]] = {
    "order": _names,
    "frequencies": _rates,
    "estimate": _number,
    "max_partial_matches": _number,
    "max_partial_matches_per_key": _number,
    "max_matches_per_event": _number,
}
