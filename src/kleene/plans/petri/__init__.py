"""The `petri` plan (`plan.py`): LEAD rules (seed 003) as aging-token prioritized coloured
Petri nets, built from one construction per operator (`constructions.py`) over the net's
tokens, places and transitions (`net.py`); conditions compile in `conditions.py`."""

from kleene.plans.petri.plan import PetriPlan

__all__ = ["PetriPlan"]
