"""Plans with options, as the benchmarks' command lines name them: `NAME:option=value,...`.

>>> plans(["nfa:merge=False", "lazy_chain:order=C;B;A"])
[('nfa', {'merge': False}), ('lazy_chain', {'order': ['C', 'B', 'A']})]
>>> label("nfa", {"merge": False})
'nfa merge=False'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kleene.cli.plan_options import plan_options

__all__ = ["label", "plans"]


def plans(specs: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Plans with options, from NAME:option=value,option=value (a list value separated by
    `;`: `order=C;B;A`); `max_delay=d` is the engine's.

    >>> plans(["afa:max_delay=0"])
    [('afa', {'max_delay': 0.0})]
    """
    chosen = []
    for spec in specs:
        name, _, rest = spec.partition(":")
        items = [item.replace(";", ",") for item in rest.split(",") if item]
        options = plan_options(items)
        if "max_delay" in options:  # an engine argument: punctuate at the watermark
            options["max_delay"] = float(options["max_delay"])
        chosen.append((name, options))
    return chosen


def label(name: str, options: Mapping[str, Any]) -> str:
    """A plan and its options on one line, as tables show them."""
    return name + "".join(f" {k}={_shown(v)}" for k, v in options.items())


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
