"""The reference plans, each a query language's meaning written as plainly as possible:
`reference` (`plan.py`) for SASE+ patterns, skip-till-any-match by definition
(`bindings.py`), the other strategies by NFA^b runs (`runs.py`); `row_reference`
(`preferred.py`) for SQL's row patterns, every way to map rows in order of preference."""

from kleene.plans.reference.plan import Reference, ReferenceState
from kleene.plans.reference.preferred import RowReference, RowReferenceState

__all__ = ["Reference", "ReferenceState", "RowReference", "RowReferenceState"]
