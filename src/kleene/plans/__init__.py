"""Evaluation plans, chosen by name: `compile` turns a pattern into one.

>>> import kleene
>>> plan = kleene.compile("PATTERN SEQ(A a, B b) WITHIN 10", plan="reference")
>>> plan.name, plan.window
('reference', 10)
"""

from kleene.plans import afa as _afa  # noqa: F401 - registers the plan
from kleene.plans import lazy as _lazy  # noqa: F401 - registers lazy_chain and lazy_tree
from kleene.plans import match_window as _match_window  # noqa: F401 - registers the plan
from kleene.plans import nfa as _nfa  # noqa: F401 - registers nfa and nfa_backtrack
from kleene.plans import petri as _petri  # noqa: F401 - registers the plan
from kleene.plans import reference as _reference  # noqa: F401 - registers the plan
from kleene.plans import window_join as _window_join  # noqa: F401 - registers the plan
from kleene.plans.base import PLANS, PREFERENCE, Plan, compile, register
from kleene.plans.row_pattern import plan as _row_pattern  # noqa: F401 - registers the plan

__all__ = ["PLANS", "PREFERENCE", "Plan", "compile", "register"]
