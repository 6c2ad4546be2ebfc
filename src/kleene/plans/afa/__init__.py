"""The `afa` plan: augmented finite automata over disordered streams (seed 004)."""

from kleene.plans.afa.machine import AfaState, Machine, net
from kleene.plans.afa.model import Afa, Arc, Builder
from kleene.plans.afa.plan import AfaPlan

__all__ = ["Afa", "AfaPlan", "AfaState", "Arc", "Builder", "Machine", "net"]
