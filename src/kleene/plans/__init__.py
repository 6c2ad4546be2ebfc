"""Evaluation plans, chosen by name: `compile` turns a pattern into one.

>>> import kleene
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 10", plan="reference")
>>> plan.name, plan.window
('reference', 10)
"""

from __future__ import annotations

from typing import Any

from kleene.compiler.analysis import analyze
from kleene.compiler.options import Options
from kleene.language.ast import Pattern
from kleene.plans import lazy as _lazy  # noqa: F401 - registers lazy_chain and lazy_tree
from kleene.plans import match_window as _match_window  # noqa: F401 - registers the plan
from kleene.plans import nfa as _nfa  # noqa: F401 - registers nfa and nfa_backtrack
from kleene.plans import reference as _reference  # noqa: F401 - registers the plan
from kleene.plans.base import PLANS, Plan, choose, plan_class, register

__all__ = ["PLANS", "Plan", "compile", "parse", "register"]


def parse(text: str) -> Pattern:
    """Read a SASE+ query and check that it makes sense.

    Raises `PatternSyntaxError` (with line, column and a caret) when the text does not follow
    the grammar, and `PatternError` when it does but does not make sense.
    """
    from kleene.compiler.validate import validate
    from kleene.language.quantified import quantify
    from kleene.language.to_ast import read

    pattern = quantify(read(text))
    validate(pattern)
    return pattern


def compile(pattern: Pattern | str, plan: str = "auto", **options: Any) -> Plan[Any]:
    """Compile a pattern (or query text) with the plan of that name; see `Options`."""
    if isinstance(pattern, str):
        pattern = parse(pattern)
    settings = Options.build(**options)
    analysis = analyze(pattern, settings.functions)
    cls = choose(analysis, settings) if plan == "auto" else plan_class(plan)
    return cls(analysis, settings)
