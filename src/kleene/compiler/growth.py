"""Where a query's work and state can grow, and what bounds them: the guards' words.

A query's partial matches live until its window passes them, and the matches one event
completes are every way the events before it can be combined. Some queries have no bound
on either. `sources` names what makes this one grow, each with its fix, for the error a
guard raises (`LimitError`); `unbounded` says why its state can only grow, for `explain`
and the CLI to warn before anything runs.

>>> from kleene.compiler.analysis import analyze
>>> from kleene.compiler.validate import parse
>>> runaway = analyze(parse("PATTERN SEQ(A a, B+ b[], C c)"))
>>> for cause in sources(runaway):
...     print("-", cause.split(":")[0])
- no WITHIN
- no partition key
- b[] is a Kleene variable under skip_till_any_match
>>> print(unbounded(runaway))
no WITHIN: a partial match never expires (add WITHIN, say WITHIN 10 min)
>>> unbounded(analyze(parse("PATTERN SEQ(A a, B b) WITHIN 10"))) is None
True
"""

from __future__ import annotations

from collections.abc import Sequence

from kleene.compiler.analysis import Analysis
from kleene.compiler.query import Query
from kleene.language.sase import ast as A

__all__ = ["GUARDS", "sources", "unbounded"]

#: The guards' options and what each bounds (documented in docs/semantics.md).
GUARDS = {
    "max_partial_matches": "partial matches held in all partitions together",
    "max_partial_matches_per_key": "partial matches held in one partition",
    "max_matches_per_event": "matches one event may complete",
}

_NO_WITHIN = "no WITHIN: a partial match never expires (add WITHIN, say WITHIN 10 min)"


def unbounded(analysis: Query) -> str | None:
    """Why the query's state can only grow (None: its window bounds it, or it is no SASE+
    pattern). Under the contiguity strategies a run dies at the first event it cannot take,
    so only the skipping strategies without WITHIN grow for ever."""
    if not isinstance(analysis, Analysis):
        return None
    within = analysis.pattern.within
    if within is None and analysis.skipping:
        return _NO_WITHIN
    if within is not None and within.amount is None and analysis.partition is not None:
        return (
            "a count window alone: a key whose events stop keeps its partial matches until "
            "the stream ends (add a time, say WITHIN 10 min AND 100 EVENTS)"
        )
    return None


def sources(analysis: Analysis) -> list[str]:
    """What can make the query's partial matches or matches many, each with its fix,
    most likely first."""
    found = []
    if analysis.pattern.within is None:
        found.append(_NO_WITHIN)
    if analysis.partition is None:
        found.append(
            "no partition key: every event meets every partial match (an equivalence test "
            "such as [id] splits them by key)"
        )
    for variable in analysis.positive:
        loop = analysis.strategies.loop(variable.name)
        if variable.kleene and variable.max is None and loop == "skip_till_any_match":
            names = sorted(variable.types or ["_"])
            types = names[0] if len(names) == 1 else f"({'|'.join(names)})"
            found.append(
                f"{variable.name}[] is a Kleene variable under skip_till_any_match: each "
                f"{types.strip('()')} event doubles the ways to match (2**n for n events "
                "in a window); "
                f"use skip_till_next_match, bound it ({types}{{1,5}} {variable.name}[]), "
                "or shorten the window"
            )
    widest = _widest_and(analysis.structure)
    if widest >= 3:
        found.append(
            f"an AND of {widest} elements: its parts match in any order, so the ways to "
            "combine them multiply; a SEQ, where the order is known, or a shorter window "
            "keeps them few"
        )
    if not found:
        found.append(
            "many events in one window: shorten the window or make the conditions more selective"
        )
    return found


def _widest_and(element: A.Element) -> int:
    if isinstance(element, A.EventVar | A.Negation):
        return 0
    inner = max((_widest_and(item) for item in element.items), default=0)
    return max(inner, len(element.items)) if isinstance(element, A.And) else inner


def tripped(
    analysis: Query | None, option: str, limit: int, where: str, more: Sequence[str] = ()
) -> str:
    """The message of a guard that tripped: what passed its limit, why the query grows (and
    the `more` causes the caller knows of), and the ways on.

    >>> from kleene.compiler.analysis import analyze
    >>> from kleene.compiler.validate import parse
    >>> message = tripped(analyze(parse("PATTERN SEQ(A a, B b) WHERE [id] WITHIN 5")),
    ...                   "max_matches_per_event", 10, "at event 7")
    >>> for line in message.splitlines():
    ...     print(line[:60].rstrip())
    more than 10 matches one event may complete (max_matches_per
    - many events in one window: shorten the window or make the
    Fix the query, raise the limit (max_matches_per_event=..., N
    """
    found = sources(analysis) if isinstance(analysis, Analysis) else []
    causes = ["- " + cause for cause in [*found, *more]]
    reason = "\n".join(["The query grows because of:", *causes]) if causes else ""
    return "\n".join(
        line
        for line in (
            f"more than {limit:,} {GUARDS[option]} ({option}={limit}), {where}."
            + (f" {reason.splitlines()[0]}" if reason else ""),
            *causes,
            f"Fix the query, raise the limit ({option}=..., None for no limit), or give "
            "on_limit='drop' to go on without what passes it (counted in the metrics).",
        )
    )
