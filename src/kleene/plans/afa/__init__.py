"""The `afa` plan: augmented finite automata over disordered streams (seed 004)."""

from kleene.plans.afa.machine import AfaState, Machine
from kleene.plans.afa.model import Afa, Arc, Builder
from kleene.plans.afa.plan import AfaPlan
from kleene.plans.afa.text import read_afa

__all__ = ["Afa", "AfaPlan", "AfaState", "Arc", "Builder", "Machine", "read_afa"]
