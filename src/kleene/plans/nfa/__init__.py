"""The `nfa` plan (`plan.py`) and the `nfa_backtrack` plan (`backtrack.py`) over one
compiled automaton (`automaton.py`, `vector.py`, `negation.py`) and buffer (`buffer.py`)."""

from kleene.plans.nfa.backtrack import BacktrackState, NfaBacktrack
from kleene.plans.nfa.plan import Nfa, NfaState

__all__ = ["BacktrackState", "Nfa", "NfaBacktrack", "NfaState"]
