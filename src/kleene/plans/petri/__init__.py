"""The `petri` plan (`plan.py`): LEAD rules (Al Bassit, Skhiri & Ammar, DEBS 2019) as
aging-token prioritized coloured Petri nets, built from one construction per operator
(`constructions.py`) over the net's tokens, places and transitions (`net.py`); a rule's
conditions and values compile through the one code generator (`kleene.compiler.rules`)."""

from kleene.plans.petri.plan import PetriPlan

__all__ = ["PetriPlan"]
