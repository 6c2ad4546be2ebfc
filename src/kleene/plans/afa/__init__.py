"""The `afa` plan: augmented finite automata over disordered streams (Chandramouli,
Goldstein & Maier, VLDB 2010). Users reach it through `kleene.afa`."""

from kleene.plans.afa.arcs import Arcs, arcs
from kleene.plans.afa.machine import AfaState, Machine
from kleene.plans.afa.model import Afa, Arc, Builder
from kleene.plans.afa.plan import AfaPlan, AfaQuery
from kleene.plans.afa.reader import read_afa, read_arc

__all__ = [
    "Afa",
    "AfaPlan",
    "AfaQuery",
    "AfaState",
    "Arc",
    "Arcs",
    "Builder",
    "Machine",
    "arcs",
    "read_afa",
    "read_arc",
]
