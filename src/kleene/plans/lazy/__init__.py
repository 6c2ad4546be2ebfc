"""The `lazy_chain` plan (`chain.py`) and the `lazy_tree` plan (`tree.py`): lazy NFAs that
match events in the order of their types' frequencies (`shape.py`), with first-chance
negation (`first_chance.py`)."""

from kleene.plans.lazy.chain import LazyChain, LazyState
from kleene.plans.lazy.tree import LazyTree

__all__ = ["LazyChain", "LazyState", "LazyTree"]
