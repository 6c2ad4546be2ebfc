"""The plan contract, checked the same way for every registered plan (as River checks every
estimator): run a plan and an oracle over one stream, and compare.

`check(name, query, events, **options)` runs every check of `CHECKS` that applies to the
plan (`applies`: the checks of events in any order apply to a plan that takes them so) and
that it does not declare it skips (`Plan.limits`); each raises AssertionError saying what
broke:

- `same_matches`: the outputs equal the oracle's, with their variables in the same order,
  and each is reported at the same event (or by `advance`/the end at the same point) as
  the oracle reports it. The oracle is the plan that states the query language's meaning
  (`ORACLES`: `reference` for SASE+, `row_reference` for SQL) on the query; for a LEAD rule, on the
  SASE+ pattern that means the same (`oracle=`: a rule's emitted event `M(a.n AS a, ...)`
  is the match binding a to the event whose n it holds);
- `partitioning`: splitting the stream by `plan.partition_key` changes nothing (where the
  partition is part of the query's meaning, the plan splits by it);
- `pickling`: every partition's state saved with `dump_state` and loaded with `load_state`
  after any event gives the outputs of an uninterrupted run;
- `checkpoints`: a `kleene.Engine` checkpointed after any event and resumed by a new one
  (with and without a reorder buffer) reports as the uninterrupted engine, event by event,
  and ends with the same metrics;
- `guards`: an engine with `max_partial_matches` one below the most partial matches the
  plan held at once (`peak_runs`), or with `max_matches_per_event` one below the most
  matches one event completed (`peak_matches`), stops with a `LimitError` naming it; at
  that most it reports as without a limit; and under on_limit="drop" the first report
  that differs is a part of what it was, and the cut is counted (`cut_events`). (Where
  the query chooses among an event's matches, a plan may build and count more than it
  reports, and trip at that most; a plan that reports a match after the event that
  completed it may report one event's matches in parts: only the trip below it is checked.)
- `idle_eviction`: dropping the states `plan.idle` calls idle, and keeping only the keys of
  those `plan.finished` calls finished (their later events go nowhere), after every event,
  changes nothing;
- `deadlines`: advancing a state to its deadline moves the deadline on (or clears it);
- `lazily`: `step_lazily`, read to its end, gives each event the outputs `step` gives it;
  read only in part and closed at one event, it leaves the state as `step` would;
- for a plan that takes events in any order: `disorder` (the events in other arrival
  orders net the oracle's matches on the sorted stream), `retractions` (retracting an
  event nets what never sending it does), `punctuations` (a match that ends before a
  punctuation, once reported, is never withdrawn, and the net is the oracle's).

A query the plan cannot run (`PlanError` from its `refusal`, or from building it: an
automaton too large) is `UnsupportedError`.

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
kleene.testing.conformance.UnsupportedError: plan 'lazy_chain' cannot run this query: ...
>>> numbered = [e.__class__(e.type, e.ts, {**e.attrs, "n": e.id}, e.id) for e in stream]
>>> check("petri", "FROM A AS a, B AS b MATCH all(a Followed By b) PARTITION BY a.k "
...       "EMIT Event M(a.n AS a, b.n AS b)", numbered,
...       oracle="PATTERN SEQ(A a, B b) WHERE [k]")
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

from kleene import plans
from kleene.compiler.options import Options
from kleene.compiler.pipeline import language_of, parse
from kleene.errors import PlanError
from kleene.events import Event, Watermark
from kleene.language.sase import ast as A
from kleene.matches import Retraction, Timeout, net
from kleene.plans.base import LIMITS, Plan, plan_class

__all__ = ["CHECKS", "UnsupportedError", "applies", "check", "drive"]


class UnsupportedError(Exception):
    """The plan cannot run this query with these options (by its own `refusal`)."""


#: An output as a comparable value: its variables in their order, with event ids.
Key = tuple[tuple[str, tuple[Any, ...]], ...]
#: What each report of a run looks like: the outputs (as keys, sorted) that one event (or
#: the final advance) reported.
Reports = list[list[Key]]


@dataclass
class Driven:
    """A plan driven over a stream: each event's reports, the outputs in report order, and
    how many states `idle` let go and `finished` retired."""

    reports: Reports
    outputs: list[Any]
    evicted: int = 0
    finished: int = 0


def key(found: Any) -> Key:
    """An output as a comparable value: a match's variables in their order with event ids
    (a timed-out partial match marked as one); an emitted event's attributes, or a row's
    columns, in their order, each a one-event binding."""
    if isinstance(found, Event):
        return tuple((name, (value,)) for name, value in found.attrs.items())
    if isinstance(found, Mapping):  # a row (MATCH_RECOGNIZE): its columns in their order
        return tuple((name, (value,)) for name, value in found.items())
    ids = tuple((name, tuple(e.id for e in events)) for name, events in found.bindings.items())
    return (("timeout", ()), *ids) if isinstance(found, Timeout) else ids


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
    and finished ones retired (their key's later events go nowhere) after every event; with
    `lazily`, events go to `step_lazily`, whose outputs are read to the end, except at
    event `close_at`: there only the first is read."""
    key_of: Callable[[Event], Hashable | None] | None = plan.partition_key if partition else None
    states: dict[Hashable | None, Any] = {}
    finished: set[Hashable | None] = set()
    run = Driven([], [])

    def report(found: list[Any]) -> None:
        run.outputs.extend(found)
        run.reports.append(sorted((key(m) for m in found), key=repr))

    if plan.count_window is not None:  # a count window measures stream positions
        events = [event.with_seq(index) for index, event in enumerate(events)]
    for index, event in enumerate(events):
        if index == resume_at:
            states = {k: plan.load_state(plan.dump_state(s)) for k, s in states.items()}
        now = Watermark(event.t, inclusive=False)
        found = _fire(plan, states, now)
        where = None if key_of is None else key_of(event)
        state = states.get(where)
        if where in finished:
            report(found)
            continue
        if state is None:
            state = states[where] = plan.new_state()
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
                if plan.finished(s):
                    del states[k]
                    finished.add(k)
                    run.finished += 1
                elif (deadline is None or not now.settles(deadline)) and plan.idle(s, now):
                    del states[k]
                    run.evicted += 1
        report(found)
    if resume_at == len(events):
        states = {k: plan.load_state(plan.dump_state(s)) for k, s in states.items()}
    end = Watermark(math.inf)
    report([m for s in states.values() for m in plan.advance(s, end)])
    return run


def _fire(plan: Plan[Any], states: dict[Hashable | None, Any], now: Watermark) -> list[Any]:
    """Advance every state whose deadline `now` has reached (as the runtime's timers do),
    until none has; each advance must move the deadline on."""
    found: list[Any] = []
    for state in states.values():
        while (deadline := plan.deadline(state)) is not None and now.settles(deadline):
            found += plan.advance(state, now)
            after = plan.deadline(state)
            assert after is None or after > deadline, (
                f"advancing past the deadline {deadline} left the deadline at {after}"
            )
    return found


def _flat(run: Driven) -> list[Key]:
    """Every output of the run, in an order that does not depend on the reports'."""
    return sorted((k for found in run.reports for k in found), key=repr)


def arrive(
    plan: Plan[Any],
    arrivals: Sequence[Event],
    *,
    retracted: Sequence[Event] = (),
    punctuate: bool = False,
) -> list[Any]:
    """Run a plan that takes events in any order over `arrivals` in that order, retract
    `retracted` after them, and with `punctuate` punctuate after every event at the
    earliest time still to come; then the end. Its outputs, retractions included, in the
    order made; a punctuated match withdrawn afterwards fails."""
    key_of = plan.partition_key
    states: dict[Hashable | None, Any] = {}
    outputs: list[Any] = []
    settled: Watermark | None = None

    def heard(found: list[Any]) -> None:
        for each in found:
            if isinstance(each, Retraction) and settled is not None:
                assert not settled.settles(each.end.t), (
                    f"{each!r} withdraws a match that ends before the punctuation {settled}"
                )
        outputs.extend(found)

    for index, event in enumerate(arrivals):
        where = None if key_of is None else key_of(event)
        state = states.setdefault(where, plan.new_state())
        heard(plan.step(state, event))
        later = [e.t for e in arrivals[index + 1 :]]
        if punctuate and later and not retracted:
            settled = Watermark(min(later), inclusive=False)
            for each in states.values():
                heard(plan.advance(each, settled))
    for event in retracted:
        where = None if key_of is None else key_of(event)
        found = plan.retract(states[where], event)
        assert found is not None, f"the plan lost the event {event!r} it was sent"
        heard(found)
    for state in states.values():
        heard(plan.advance(state, Watermark(math.inf)))
    return outputs


def _sorted(events: Sequence[Event]) -> list[Event]:
    """The stream the plan sees, whatever the arrival order: by time, equal times in
    arrival order."""
    return sorted(events, key=lambda e: e.t)


def _orders(events: Sequence[Event]) -> list[list[Event]]:
    """Arrival orders other than the stream's: reversed, and odd positions first."""
    reverse = list(reversed(events))
    split = list(events[1::2]) + list(events[::2])
    return [order for order in (reverse, split) if order != list(events)]


# ---- the checks ---------------------------------------------------------------------------

Check = Callable[[Plan[Any], Plan[Any], Sequence[Event]], None]


def same_matches(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    expected, actual = drive(oracle, events), drive(plan, events)
    assert _flat(actual) == _flat(expected), "the outputs differ from the oracle's"
    if "prompt_emission" not in plan.limits:
        for index, (got, want) in enumerate(zip(actual.reports, expected.reports, strict=True)):
            when = f"event {index}" if index < len(events) else "the end"
            assert got == want, f"at {when} the oracle reports {want}, the plan {got}"


def partitioning(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    if plan.analysis.partition_is_meaning:  # the query runs once per key: split by it
        assert plan.partition_key is not None, "the plan must split by its query's partitions"
        return
    whole = drive(plan, events, partition=False)
    assert _flat(drive(plan, events)) == _flat(whole), "partitioning changes the outputs"


def pickling(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    expected = drive(plan, events)
    for cut in range(len(events) + 1):
        resumed = drive(plan, events, resume_at=cut)
        assert resumed.reports == expected.reports, (
            f"a state saved and loaded after {cut} events reports otherwise"
        )


def checkpoints(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    for delay in (None, 1):
        expected = _engine_run(plan, events, delay)
        for cut in range(len(events) + 1):
            assert _engine_run(plan, events, delay, cut) == expected, (
                f"an engine (max_delay={delay}) checkpointed after {cut} events and resumed "
                "reports otherwise, or ends with other metrics"
            )


def _engine_run(
    plan: Plan[Any], events: Sequence[Event], delay: float | None, cut: int | None = None
) -> tuple[list[list[Key]], dict[str, Any]]:
    """What an engine reports at each event and at the end, and its metrics; checkpointed
    after `cut` events and resumed by a new engine."""
    from kleene.runtime.engine import Engine

    engine = Engine(plan, max_delay=delay)
    reports = []
    for index, event in enumerate([*events, None]):
        if index == cut:
            saved = engine.checkpoint()
            engine = Engine(plan, max_delay=delay)
            engine.resume(saved)
        found = engine.close() if event is None else engine.send(event)
        reports.append([key(f) for f in found])
    metrics = engine.metrics.as_dict()
    metrics.pop("seconds", None)
    return reports, metrics


def guards(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    from kleene.errors import LimitError, PlanError
    from kleene.runtime.engine import Engine

    def run(**limits: Any) -> tuple[list[list[Key]], Any]:
        engine = Engine(type(plan)(plan.analysis, replace(plan.options, **limits)))
        found = [[key(f) for f in engine.send(event)] for event in events]
        return [*found, [key(f) for f in engine.close()]], engine.metrics

    def trips(option: str, **limits: Any) -> None:
        tripped = None
        try:
            run(**limits)
        except LimitError as error:
            tripped = str(error)
        assert tripped is not None, f"{option}={limits[option]} (below what it needs) never trips"
        assert f"({option}=" in tripped, f"the guard that tripped is not {option}: {tripped}"

    free = {"max_partial_matches": None, "max_partial_matches_per_key": None}
    unguarded, metrics = run(**free, max_matches_per_event=None)
    peak = metrics.peak_runs
    if peak >= 1:  # else the plan holds no partial match (or does not count them)
        assert run(**{**free, "max_partial_matches": peak})[0] == unguarded, (
            f"max_partial_matches={peak} (the most the stream needs) changes the outputs"
        )
        trips("max_partial_matches", **{**free, "max_partial_matches": peak - 1})
    most = metrics.peak_matches
    if most < 2:
        return
    trips("max_matches_per_event", max_matches_per_event=most - 1)
    if _chooses(plan) or "prompt_emission" in plan.limits:
        return  # the plan may build, and count, matches it does not report (yet)
    assert run(max_matches_per_event=most)[0] == unguarded, (
        f"max_matches_per_event={most} (the most one event completes) changes the outputs"
    )
    try:
        dropped, metrics = run(max_matches_per_event=most - 1, on_limit="drop")
    except PlanError:
        return  # the plan cannot count what a guard drops, and says so at compile time
    cut = next((at for at, found in enumerate(dropped) if found != unguarded[at]), None)
    assert cut is not None, f"on_limit='drop' at max_matches_per_event={most - 1} cuts nothing"
    assert len(dropped[cut]) < len(unguarded[cut]), "on_limit='drop' adds where it should cut"
    assert not Counter(dropped[cut]) - Counter(unguarded[cut]), (
        "on_limit='drop' reports at the cut what it would not report there without the limit"
    )
    assert metrics.as_dict().get("cut_events", 0) >= 1, "on_limit='drop' cut matches uncounted"


def _has_or(node: Any) -> bool:
    return isinstance(node, A.Or) or any(_has_or(item) for item in getattr(node, "items", ()))


def _chooses(plan: Plan[Any]) -> bool:
    """Does the query choose among the matches an event completes (an AFTER MATCH SKIP, a
    selection strategy, non-overlapping output, a negation, CONSUME BY, FREEZE, or an OR whose
    branches may complete one match twice)? A plan may then build, and hold to
    `max_matches_per_event`, more matches than it reports."""
    analysis, options = plan.analysis, plan.options
    pattern = getattr(analysis, "pattern", None)
    return bool(
        (pattern is not None and _has_or(pattern.structure))
        or getattr(analysis, "negations", None)
        or getattr(analysis, "skips", False)
        or getattr(analysis, "consume", None)
        or getattr(analysis, "freeze", None)
        or options.selection != "all"
        or options.output != "all"
    )


def idle_eviction(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    kept = drive(plan, events)
    assert _flat(drive(plan, events, evict=True)) == _flat(kept), (
        "dropping the states idle() lets go, or the events of keys finished() retired, "
        "changes the outputs"
    )


def deadlines(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    drive(plan, events)  # drive asserts at every deadline


def lazily(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
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
            f"closing step_lazily's outputs after one at event {at} changes the state"
        )


def _net(outputs: list[Any]) -> list[Key]:
    return sorted((key(m) for m in net(outputs)), key=repr)


def disorder(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    for order in _orders(events):  # equal times stay in arrival order
        expected = _flat(drive(oracle, _sorted(order)))
        assert _net(arrive(plan, order)) == expected, (
            f"in arrival order {[e.id for e in order]} the net outputs differ from the oracle's"
        )


def retractions(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    for gone in events:
        kept = [e for e in events if e is not gone]
        expected = _flat(drive(oracle, _sorted(kept)))
        assert _net(arrive(plan, list(events), retracted=[gone])) == expected, (
            f"retracting event {gone.id!r} nets otherwise than never sending it"
        )


def punctuations(plan: Plan[Any], oracle: Plan[Any], events: Sequence[Event]) -> None:
    for order in [list(events), *_orders(events)]:
        expected = _flat(drive(oracle, _sorted(order)))
        assert _net(arrive(plan, order, punctuate=True)) == expected, (
            "punctuating after every event changes the net outputs"
        )


CHECKS: dict[str, Check] = {
    "same_matches": same_matches,
    "partitioning": partitioning,
    "pickling": pickling,
    "checkpoints": checkpoints,
    "guards": guards,
    "idle_eviction": idle_eviction,
    "deadlines": deadlines,
    "lazily": lazily,
    "disorder": disorder,
    "retractions": retractions,
    "punctuations": punctuations,
}
#: The checks of events in any order: only for a plan that takes them so.
UNORDERED = frozenset({"disorder", "retractions", "punctuations"})


#: The plan that states each language's meaning: every other plan's oracle (a LEAD rule has
#: none; its oracle is a SASE+ pattern that means the same, `check(..., oracle=)`).
ORACLES = {"sase": "reference", "sql": "row_reference"}


def applies(name: str, cls: type[Plan[Any]]) -> bool:
    """Does check `name` apply to plans of this class?"""
    return name not in UNORDERED or not cls.ordered


def check(
    name: str,
    query: Any,
    events: Sequence[Event],
    checks: Sequence[str] = tuple(CHECKS),
    *,
    oracle: Any = None,
    oracle_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> None:
    """Run the `checks` that apply to plan `name` for `query` over `events`, with
    `options`. The oracle is the plan of `ORACLES` on `oracle` (a query meaning what `query`
    means, a SASE+ pattern for a LEAD rule; by default `query` itself), with
    `oracle_options` (by default `options`)."""
    cls = plan_class(name)
    tree = parse(query) if isinstance(query, str) else query
    settings = Options.build(**options)
    language = language_of(tree)
    analysis = language.analyse(tree, settings.functions, True)
    reason = cls.refusal(analysis, settings)
    if reason is not None:
        raise UnsupportedError(f"plan {name!r} cannot run this query: {reason}")
    try:
        plan = plans.compile(tree, name, **options)
    except PlanError as error:  # one it finds too large to build (an automaton's states)
        raise UnsupportedError(str(error)) from error
    unknown = plan.limits - LIMITS
    assert not unknown, f"plan {name!r} declares unknown limits {sorted(unknown)}"
    wanted = [c for c in checks if applies(c, cls)]
    asks = {"same_matches"} | UNORDERED  # the checks that ask the oracle
    twin = tree if oracle is None else oracle
    meaning = ORACLES.get(language_of(twin).name)
    if meaning is None:  # no plan states the language's meaning, and no twin: none to ask
        wanted = [c for c in wanted if c not in asks]
    reference = plan  # the checks that ask no oracle are handed the plan itself
    if asks & set(wanted):
        assert meaning is not None
        twin_options = options if oracle_options is None else oracle_options
        reference = plans.compile(twin, meaning, **twin_options)
    for check_name in wanted:
        CHECKS[check_name](plan, reference, events)
