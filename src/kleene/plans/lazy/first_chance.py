"""First-Chance negation (section 4.4.2): reject a partial match as soon as it binds what
decides a negation, instead of after the whole match (post-processing).

For a negated variable h and one DNF branch, DEP(h) is what the check reads: the latest
variables SEQ puts before h (ImmPrec) and the earliest it puts after h (ImmSucc), which fix
the range where h is forbidden; the variables h's conditions mention; and every variable of
the branch that could take an event of h's type (an event of the match never counts as h).
Once a partial match binds all of DEP, the range and every test on an event in it are those
of the complete match, so the check's verdict is the one post-processing would reach later.

A negation that has nothing before or after it in the branch (the window bounds its range,
so it can only be decided at the end) stays with post-processing, as the paper says; so
does one whose ImmPrec or ImmSucc may bind nothing (`*`), unless every variable on that
side is in DEP.

>>> from kleene import parse
>>> from kleene.compiler.analysis import analyze
>>> analysis = analyze(parse("PATTERN SEQ(A a, NOT(B h), C c, D d, E e) WITHIN 10"))
>>> sorted(dependencies(analysis, analysis.negations["h"], frozenset("acde")))
['a', 'c']
>>> dependencies(analysis, analysis.negations["h"], frozenset("a")) is None
True
"""

from __future__ import annotations

from collections.abc import Iterable

from kleene.compiler.analysis import Analysis, Negated

__all__ = ["dependencies"]


def dependencies(
    analysis: Analysis, negation: Negated, branch: frozenset[str]
) -> frozenset[str] | None:
    """DEP(h) in `branch`, or None when the negation is left to post-processing there."""
    variables = analysis.variables
    before, after = negation.before & branch, negation.after & branch
    if not _bounded(before, analysis) or not _bounded(after, analysis):
        return None
    latest = {v for v in before if not any(v in analysis.before[u] for u in before)}
    earliest = {v for v in after if not any(u in analysis.before[v] for u in after)}
    if any(variables[v].min == 0 for v in latest):
        latest = set(before)
    if any(variables[v].min == 0 for v in earliest):
        earliest = set(after)
    mentioned = {v for c in negation.conditions for v in c.variables} & branch
    types = negation.variable.types
    rivals = {v for v in branch if types is None or _overlap(types, variables[v].types)}
    return frozenset(latest | earliest | mentioned | rivals)


def _overlap(types: frozenset[str], others: frozenset[str] | None) -> bool:
    return others is None or bool(types & others)


def _bounded(side: Iterable[str], analysis: Analysis) -> bool:
    """Does a complete match always bind an event on this side (a variable of min >= 1)?"""
    return any(analysis.variables[v].min > 0 for v in side)
