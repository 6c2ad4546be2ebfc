"""The plan contract, checked the same way for every registered plan (as River checks every
estimator): run a plan and `reference` over one stream, and compare.

`check(name, pattern, events, **options)` runs every check of `CHECKS` that the plan does
not declare it skips (`Plan.limits`); each raises AssertionError saying what broke:

- `same_matches`: the matches equal reference's, with their variables (`Match.bindings`) in
  the same order, and each is reported at the same event (or by `advance`/the end at the
  same point) as reference reports it;
- `partitioning`: splitting the stream by `plan.partition_key` changes nothing;
- `pickling`: every partition's state saved with `dump_state` and loaded with `load_state`
  after any event gives the matches of an uninterrupted run;
- `idle_eviction`: dropping the states `plan.idle` calls idle, after every event, changes
  nothing (a key that comes back starts a fresh state);
- `deadlines`: advancing a state to its deadline moves the deadline on (or clears it);
- `lazily`: `step_lazily`, read to its end, gives each event the matches `step` gives it;
  read only in part and closed at one event, it leaves the state as `step` would (every
  later event reports the same).

A pattern the plan cannot run (`PlanError` from its `unsupported`) is `UnsupportedError`.

>>> from kleene.testing import events
>>> stream = events('''
...     type ts k
...     A    1  1
...     B    2  2
...     B    3  1
... ''')
>>> check("nfa", "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 5", stream)
>>> check("lazy_chain", "PATTERN SEQ(A a, B b) WHERE skip_till_next_match", stream)
Traceback (most recent call last):
...
kleene.testing.conformance.UnsupportedError: plan 'lazy_chain' cannot run this pattern: ...
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from kleene import plans
from kleene.compiler.analysis import analyze
from kleene.compiler.options import Options
from kleene.events import Event, Watermark
from kleene.language.sase.ast import Pattern
from kleene.matches import Match, Timeout
from kleene.plans.base import LIMITS, Plan, plan_class

__all__ = ["CHECKS", "UnsupportedError", "check", "drive"]


class UnsupportedError(Exception):
    """The plan cannot run this pattern with these options (by its own `unsupported`)."""


#: What each report of a run looks like: the matches (as comparable keys, sorted) that one
#: event (or the final advance) reported.
Reports = list[list[tuple[tuple[str, tuple[Any, ...]], ...]]]


@dataclass
class Driven:
    """A plan driven over a stream: each event's reports, the matches in report order, and
    how many states `idle` let go."""

    reports: Reports
    matches: list[Match]
    evicted: int = 0


def drive(
    plan: Plan[Any],
    events: Sequence[Event],
    *,
    partition: bool = True,
    resume_at: int | None = None,
    evict: bool = False,
    lazily: bool = False,
    close_at: int | None = None,
) -> Driven:
    """Run `plan` over `events` the way the runtime does (one state per partition key,
    deadlines fired before the event that passes them, everything advanced to the end),
    checking that every advance at a deadline moves it on. With `resume_at`, every state is
    saved and loaded again after that many events; with `evict`, idle states are dropped
    after every event; with `lazily`, events go to `step_lazily`, whose matches are read
    to the end, except at event `close_at`: there only the first is read."""
    key_of: Callable[[Event], Hashable | None] | None = plan.partition_key if partition else None
    states: dict[Hashable | None, Any] = {}
    reports: Reports = []
    matches: list[Match] = []
    evicted = 0

    def report(found: list[Match]) -> None:
        matches.extend(found)
        reports.append(sorted(_key(m) for m in found))

    if getattr(plan, "count_window", None) is not None:
        # a count window measures stream positions, which the runtime gives
        events = [event.with_seq(index) for index, event in enumerate(events)]
    for index, event in enumerate(events):
        if index == resume_at:
            states = {k: plan.load_state(plan.dump_state(s)) for k, s in states.items()}
        now = Watermark(event.t, inclusive=False)
        found = _fire(plan, states, now)
        key = None if key_of is None else key_of(event)
        state = states.get(key)
        if state is None:
            state = states[key] = plan.new_state()
        if not lazily:
            found += plan.step(state, event)
        else:
            made = iter(plan.step_lazily(state, event))
            found += islice(made, 1) if index == close_at else made
            close = getattr(made, "close", None)
            if close is not None:
                close()
        if evict:
            for k, s in list(states.items()):
                deadline = plan.deadline(s)
                if (deadline is None or not now.settles(deadline)) and plan.idle(s, now):
                    del states[k]
                    evicted += 1
        report(found)
    if resume_at == len(events):
        states = {k: plan.load_state(plan.dump_state(s)) for k, s in states.items()}
    end = Watermark(math.inf)
    report([m for s in states.values() for m in plan.advance(s, end)])
    return Driven(reports, matches, evicted)


def _fire(plan: Plan[Any], states: dict[Hashable | None, Any], now: Watermark) -> list[Match]:
    """Advance every state whose deadline `now` has reached (as the runtime's timers do),
    until none has; each advance must move the deadline on."""
    found: list[Match] = []
    for state in states.values():
        while (deadline := plan.deadline(state)) is not None and now.settles(deadline):
            found += plan.advance(state, now)
            after = plan.deadline(state)
            assert after is None or after > deadline, (
                f"advancing past the deadline {deadline} left the deadline at {after}"
            )
    return found


def _key(match: Match) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """A match as a comparable value: its variables in their order, with event ids (a
    timed-out partial match marked as one)."""
    key = tuple((name, tuple(e.id for e in events)) for name, events in match.bindings.items())
    return (("timeout", ()), *key) if isinstance(match, Timeout) else key


def _flat(run: Driven) -> list[tuple[tuple[str, tuple[Any, ...]], ...]]:
    return sorted(k for found in run.reports for k in found)


# ---- the checks ---------------------------------------------------------------------------


def same_matches(plan: Plan[Any], reference: Plan[Any], events: Sequence[Event]) -> None:
    expected, actual = drive(reference, events), drive(plan, events)
    assert _flat(actual) == _flat(expected), "the matches differ from reference's"
    if "prompt_emission" not in plan.limits:
        for index, (got, want) in enumerate(zip(actual.reports, expected.reports, strict=True)):
            when = f"event {index}" if index < len(events) else "the end"
            assert got == want, f"at {when} reference reports {want}, the plan {got}"


def partitioning(plan: Plan[Any], reference: Plan[Any], events: Sequence[Event]) -> None:
    whole = drive(plan, events, partition=False)
    assert _flat(drive(plan, events)) == _flat(whole), "partitioning changes the matches"


def pickling(plan: Plan[Any], reference: Plan[Any], events: Sequence[Event]) -> None:
    expected = drive(plan, events)
    for cut in range(len(events) + 1):
        resumed = drive(plan, events, resume_at=cut)
        assert resumed.reports == expected.reports, (
            f"a state saved and loaded after {cut} events reports otherwise"
        )


def idle_eviction(plan: Plan[Any], reference: Plan[Any], events: Sequence[Event]) -> None:
    kept = drive(plan, events)
    assert _flat(drive(plan, events, evict=True)) == _flat(kept), (
        "dropping the states idle() lets go changes the matches"
    )


def deadlines(plan: Plan[Any], reference: Plan[Any], events: Sequence[Event]) -> None:
    drive(plan, events)  # drive asserts at every deadline


def lazily(plan: Plan[Any], reference: Plan[Any], events: Sequence[Event]) -> None:
    eager = drive(plan, events)
    assert drive(plan, events, lazily=True).reports == eager.reports, (
        "step_lazily reports otherwise than step"
    )
    many = [i for i, found in enumerate(eager.reports[: len(events)]) if len(found) > 1]
    for at in dict.fromkeys(many[:1] + many[-1:]):  # the first and last with several
        cut = drive(plan, events, lazily=True, close_at=at)
        assert not Counter(cut.reports[at]) - Counter(eager.reports[at]), (
            f"at event {at} step_lazily, read in part, reports what step does not"
        )
        others = cut.reports[:at] + cut.reports[at + 1 :]
        assert others == eager.reports[:at] + eager.reports[at + 1 :], (
            f"closing step_lazily's matches after one at event {at} changes the state"
        )


CHECKS: dict[str, Callable[[Plan[Any], Plan[Any], Sequence[Event]], None]] = {
    "same_matches": same_matches,
    "partitioning": partitioning,
    "pickling": pickling,
    "idle_eviction": idle_eviction,
    "deadlines": deadlines,
    "lazily": lazily,
}


def check(
    name: str,
    pattern: Pattern | str,
    events: Sequence[Event],
    checks: Sequence[str] = tuple(CHECKS),
    **options: Any,
) -> None:
    """Run `checks` on plan `name` for `pattern` over `events`, with `options`."""
    if isinstance(pattern, str):
        pattern = plans.parse(pattern)
    settings = Options.build(**options)
    reason = plan_class(name).refusal(analyze(pattern, settings.functions), settings)
    if reason is not None:
        raise UnsupportedError(f"plan {name!r} cannot run this pattern: {reason}")
    plan = plans.compile(pattern, name, **options)
    unknown = plan.limits - LIMITS
    assert not unknown, f"plan {name!r} declares unknown limits {sorted(unknown)}"
    reference = plans.compile(pattern, "reference", **options)
    for check_name in checks:
        CHECKS[check_name](plan, reference, events)
