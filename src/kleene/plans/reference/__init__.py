"""The `reference` plan (`plan.py`): skip-till-any-match by definition (`bindings.py`), the
other strategies by NFA^b runs (`runs.py`)."""

from kleene.plans.reference.plan import Reference, ReferenceState

__all__ = ["Reference", "ReferenceState"]
