"""Dynamic patterns on the `afa` plan (the AFA paper, sections 2.3, 5.2 and 5.4): arcs added and
removed while the stream runs, in the default operation mode and with explicit lifetimes,
checked against a brute-force reading of the paper's semantics: a match is a contiguous
subsequence of the sorted stream that the AFA accepts, each arc firing only for the events
its lifetime holds."""

import math
from dataclasses import replace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import kleene
from kleene.errors import KleeneError, PatternError, StateError
from kleene.matches import net
from kleene.plans.afa.model import Lifetime
from kleene.plans.afa.reader import read_arc
from tests.plans.test_afa_examples import VPATTERN

#: Rises: a positive x starts, each larger x counts, a negative x after two ends a match.
RISES = """
AFA rises WITHIN 6
REGISTER (n = 0, last = 0)
FINAL done
ARC first: start -> up WHEN e.x > 0 SET n = 1, last = e.x
ARC more: up -> up WHEN e.x > r.last SET n = r.n + 1, last = e.x
ARC end: up -> done WHEN e.x < 0 AND r.n >= 2
"""

#: Arcs a test may add: a shorter ending, a falling count, and a way to a new final state.
EXTRA = {
    "short": "ARC short: up -> done WHEN e.x < 0",
    "same": "ARC same: up -> up WHEN e.x = r.last SET n = r.n + 1",
    "drop": "ARC drop: up -> fell WHEN e.x <= -2",
}


def brute(afa, lifetimes, events):
    """Every match of `afa` over `events` sorted by (ts, arrival), by brute force: for each
    start, every computation along the arcs whose lifetime holds each event's ts. Returns
    (bound ids by variable, register) per match, one per final computation's events and
    register at each end event (the output is a set)."""
    ordered = sorted(range(len(events)), key=lambda p: (events[p].t, p))
    stream = [events[p] for p in ordered]
    found = []
    for i, first in enumerate(stream):
        computations = [(afa.start, afa.initial, ())]
        for last in stream[i:]:
            if afa.window is not None and last.t - first.t > afa.window:
                break
            step = []
            for state, register, bound in computations:
                for arc in afa.arcs:
                    life = lifetimes.get(arc.name, Lifetime())
                    if arc.source != state or not life.holds(last.t):
                        continue
                    after = arc.fire(last, register)
                    if after is not None:
                        taken = bound if arc.bind is None else (*bound, (arc.bind, last.id))
                        step.append((arc.target, after, taken))
            computations = step
            finals = {(b, r) for s, r, b in computations if s in afa.finals}
            found.extend(finals)
            if not computations:
                break
    return sorted(_shape(bound, register, afa.fields) for bound, register in found)


def _shape(bound, register, fields):
    ids = {}
    for variable, event_id in bound:
        ids[variable] = (*ids.get(variable, ()), event_id)
    return (sorted(ids.items()), sorted(zip(fields, register, strict=True)))


def outcome(matches):
    return sorted(
        ([(v, tuple(ids)) for v, ids in sorted(m.ids().items())], sorted(m.register.items()))
        for m in matches
    )


events_strategy = st.lists(
    st.tuples(st.integers(0, 9), st.integers(-2, 3)), min_size=1, max_size=9
).map(lambda rows: [kleene.Event("T", t, {"x": x}, id=i) for i, (t, x) in enumerate(rows)])

#: A change: add an extra arc (by name) or remove an arc, after some number of events.
changes_strategy = st.lists(
    st.tuples(
        st.integers(0, 9),
        st.sampled_from(["add short", "add same", "add drop", "remove more", "remove end"]),
    ),
    max_size=3,
)


def _apply(engine, afa, lifetimes, change, life, **explicit):
    """Make `change` on the engine, and in `afa` and `lifetimes` (the brute force's view),
    the arc's lifetime being `life` (added) or ending as `life` says (removed). Returns the
    AFA the brute force runs and the engine's outputs."""
    kind, name = change.split()
    if kind == "add":
        if name in {a.name for a in afa.arcs}:
            return afa, []
        final = name == "drop"
        outputs = kleene.afa.arcs(engine).add(EXTRA[name], final=final, **explicit)
        arc = read_arc(EXTRA[name], afa)
        states = afa.states if arc.target in afa.states else (*afa.states, arc.target)
        finals = afa.finals | {arc.target} if final else afa.finals
        afa = replace(afa, states=states, arcs=(*afa.arcs, arc), finals=finals)
        lifetimes[name] = life
        return afa, outputs
    if lifetimes.get(name, Lifetime()).end < math.inf:
        return afa, []  # removed already
    outputs = kleene.afa.arcs(engine).remove(name, **explicit)
    lifetimes[name] = lifetimes.get(name, Lifetime())._replace(end=life.end, through=life.through)
    return afa, outputs


@pytest.mark.parametrize("max_delay", [None, 0])
@given(events=events_strategy, changes=changes_strategy, data=st.data())
def test_default_mode_changes_arcs_for_the_events_after_the_latest(
    max_delay, events, changes, data
):
    """Section 2.3's default operation mode: an arc added fires for the events after the
    latest timestamp received, one removed stops after it; whatever the arrival order, the
    net matches are the brute force's with those lifetimes. With `max_delay=0` every event
    the plan takes comes in order, none before t_curr: a change between states the AFA has
    waits, no lifetime checked, until the first event after t_curr is taken (one at t_curr
    still sees the AFA as it was); the late events are dropped and counted."""
    arrival = data.draw(st.permutations(events), label="arrival order")
    afa = kleene.afa.read_afa(RISES)
    engine = kleene.Engine(afa, max_delay=max_delay)
    lifetimes, outputs, kept = {}, [], []
    plan = sorted(changes)
    latest = -math.inf  # t_curr: the largest timestamp received
    for sent, event in enumerate([*arrival, None]):
        while plan and plan[0][0] <= sent:
            change = plan.pop(0)[1]
            if change.startswith("add"):
                life = Lifetime(latest, after=True)
            else:
                life = Lifetime(end=latest, through=True)
            afa, changed = _apply(engine, afa, lifetimes, change, life)
            assert changed == []  # the default mode changes no match already made
            machine = engine.plan.machine
            if max_delay == 0 and "fell" not in machine.index:
                # every change waits for its event (drop's new state builds the arctable
                # again, giving the waiting ones lifetimes)
                assert not machine.lifetimes
        if event is not None:
            outputs += engine.send(event)
            if max_delay is None or event.t >= latest:
                kept.append(event)
            latest = max(latest, event.t)
    outputs += engine.close()
    assert outcome(net(outputs)) == brute(afa, lifetimes, kept)
    assert engine.metrics.late == len(arrival) - len(kept)


def test_in_order_a_change_waits_for_the_first_later_event_then_fires_unchecked():
    """With `max_delay=0`, the paper's in-place change of the arctable is made as the
    first event after t_curr is taken: an event at t_curr still runs the old row (the
    added arc does not fire for it), the next one the new row, with no lifetime checks."""
    engine = kleene.Engine(kleene.afa.read_afa(RISES), max_delay=0)
    engine.send(kleene.Event("T", 1, {"x": 1}, id=0))
    machine = engine.plan.machine
    rows = list(machine.table)
    arcs = kleene.afa.arcs(engine)
    arcs.add("ARC fall: up -> done WHEN e.x < -5")
    arcs.remove("end")
    up = machine.index["up"]
    assert machine.table == rows and not machine.lifetimes
    assert engine.send(kleene.Event("T", 1, {"x": -9}, id=1)) == []  # fall fires not at t=1
    found = engine.send_many([kleene.Event("T", 2, {"x": 3}, id=2),
                              kleene.Event("T", 3, {"x": -9}, id=3)])  # fmt: skip
    assert machine.table[up] is not rows[up] and not machine.lifetimes
    assert machine.table[up][-1][0] is machine.arcs["fall"].fire and "end" not in machine.arcs
    assert [m.ids()["events"] for m in found + engine.close()] == [(2, 3)]
    assert "end" not in {a.name for a in engine.plan.afa.arcs}


@pytest.mark.parametrize("max_delay", [0, None])
def test_a_change_that_cannot_wait_gives_the_waiting_ones_their_lifetimes(max_delay):
    """An arc to a new state builds the arctable again at once; a removal still waiting
    (in order) becomes a lifetime ending at t_curr first: the removed arc fires for an
    event at t_curr, the new one only after, as with lifetimes from the start."""
    engine = kleene.Engine(kleene.afa.read_afa(RISES), max_delay=max_delay)
    send = engine.send_many
    found = send([kleene.Event("T", 1, {"x": 1}, id=0), kleene.Event("T", 2, {"x": 2}, id=1)])
    arcs = kleene.afa.arcs(engine)
    arcs.remove("end")
    arcs.add(EXTRA["drop"], final=True)
    later = [(2, 2, -2), (3, 3, 1), (4, 4, 2), (5, 5, -1), (6, 6, 1), (7, 7, -2)]
    found += send([kleene.Event("T", t, {"x": x}, id=i) for i, t, x in later])
    found += engine.close()
    # end fires at t = 2 (0 1 2), not at 5 (3 4 5); drop not at 2 (1 2), but at 7 (6 7)
    assert sorted(m.ids()["events"] for m in net(found)) == [(0, 1, 2), (6, 7)]


@given(events=events_strategy, data=st.data())
def test_explicit_lifetimes_match_events_already_received_again(events, data):
    """Section 5.2: an arc-event with an explicit lifetime reaches the events already
    received; the engine's retractions and new matches net the brute force's matches."""
    arrival = data.draw(st.permutations(events), label="arrival order")
    afa = kleene.afa.read_afa(RISES)
    engine = kleene.Engine(afa, arc_lifetimes="explicit")
    lifetimes = {}
    outputs = []
    changes = data.draw(changes_strategy, label="changes")
    plan = sorted(changes)
    for sent, event in enumerate([*arrival, None]):
        while plan and plan[0][0] <= sent:
            kind, name = plan.pop(0)[1].split()
            start = data.draw(st.integers(0, 10), label="lifetime start")
            if kind == "add":
                end = data.draw(st.none() | st.integers(start, 11), label="lifetime end")
                life = Lifetime(start, math.inf if end is None else end)
                afa, changed = _apply(
                    engine, afa, lifetimes, f"add {name}", life, lifetime=(start, end)
                )
            else:
                life = Lifetime(end=start)
                afa, changed = _apply(engine, afa, lifetimes, f"remove {name}", life, end=start)
            outputs += changed
        if event is not None:
            outputs += engine.send(event)
    outputs += engine.close()
    assert outcome(net(outputs)) == brute(afa, lifetimes, arrival)


def test_example_4_changes_k_while_the_stream_runs():
    """Example 4: the V-pattern count k changes from 2 to 1 by removing the arcs that test
    k and adding ones for k'; later V-patterns match with k' = 1, and the state is kept."""
    vpattern = kleene.afa.read_afa(VPATTERN.replace("WITHIN 7", "WITHIN 20"))
    v = [-2, -0.5, -0.5, 0.5, 0.5]  # one V (down three times, up twice)
    engine = kleene.Engine(vpattern)
    first = [{"type": "tick", "ts": t, "id": t, "change": c} for t, c in enumerate(v)]
    assert engine.send_many(first) == []  # one V is not two
    for name in ("a4", "a5"):
        assert kleene.afa.arcs(engine).remove(name) == []
    kleene.afa.arcs(engine).add(
        "ARC a5k: q2 -> q3 WHEN e.change > 0 AND r.r1 = 1 AND r.r2 = 0 SET r1 = 0"
    )
    second = [{"type": "tick", "ts": 10 + t, "id": 10 + t, "change": c} for t, c in enumerate(v)]
    found = engine.send_many(second)
    assert [m.ids()["events"] for m in found] == [(10, 11, 12, 13, 14)]
    assert [a.name for a in engine.plan.afa.arcs][-1] == "a5k"


def test_explicit_mode_holds_state_until_both_punctuations():
    """Section 5.4: the effective punctuation is the earlier of the events' and the arcs';
    an arc-event may begin at the arc punctuation, however far the events went, and still
    reach the events received after it."""
    engine = kleene.Engine(kleene.afa.read_afa(RISES), arc_lifetimes="explicit")
    for t, x in enumerate([1, 2, 3, -1]):
        engine.send(kleene.Event("T", t, {"x": x}, id=t))
    engine.advance_to(3)
    assert engine.metrics.as_dict()["peak_runs"] > 0
    held = sum(len(s.entries) for s in engine._states.values())
    assert held == 4  # no arc punctuation yet: nothing is cleaned
    added = kleene.afa.arcs(engine).add(EXTRA["short"], lifetime=(1, None))
    assert [m.ids()["events"] for m in added] == [(2, 3)]  # a rise of one, then a fall
    kleene.afa.arcs(engine).advance_to(2)
    assert sum(len(s.entries) for s in engine._states.values()) < held
    with pytest.raises(KleeneError, match="before the arc punctuation"):
        kleene.afa.arcs(engine).add(EXTRA["same"], lifetime=(1, None))
    with pytest.raises(KleeneError, match="goes back"):
        kleene.afa.arcs(engine).advance_to(1)


def test_an_arc_added_later_reaches_back_with_an_explicit_lifetime():
    engine = kleene.Engine(kleene.afa.read_afa(RISES), arc_lifetimes="explicit")
    rows = [(0, 1), (1, 2), (2, -1), (3, 5), (4, -1)]
    found = engine.send_many(kleene.Event("T", t, {"x": x}, id=t) for t, x in rows)
    assert [m.ids()["events"] for m in found] == [(0, 1, 2)]
    added = kleene.afa.arcs(engine).add(EXTRA["short"], lifetime=(3, None))
    assert [m.ids()["events"] for m in added] == [(3, 4)]
    removed = kleene.afa.arcs(engine).remove("end", end=1)
    assert [(type(m).__name__, m.ids()["events"]) for m in removed] == [("Retraction", (0, 1, 2))]


def test_bad_arc_events_are_errors_that_name_the_cause():
    afa = kleene.afa.read_afa(RISES)
    engine = kleene.Engine(afa)
    with pytest.raises(KleeneError, match="leaves state 'nowhere'"):
        kleene.afa.arcs(engine).add("ARC x: nowhere -> done")
    with pytest.raises(KleeneError, match="already has an arc more"):
        kleene.afa.arcs(engine).add("ARC more: up -> done")
    with pytest.raises(KleeneError, match="has no arc gone"):
        kleene.afa.arcs(engine).remove("gone")
    with pytest.raises(KleeneError, match="only event arcs"):
        kleene.afa.arcs(engine).add("EPSILON e1: up -> done")
    with pytest.raises(KleeneError, match="not a final one"):
        kleene.afa.arcs(engine).add("ARC y: start -> up", final=True)
    eps = kleene.Engine(kleene.afa.read_afa(RISES + "EPSILON skip: up -> done WHEN r.n >= 9"))
    with pytest.raises(KleeneError, match="only event arcs can be removed"):
        kleene.afa.arcs(eps).remove("skip")
    with pytest.raises(KleeneError, match="explicit"):
        kleene.afa.arcs(engine).add(EXTRA["short"], lifetime=(0, None))
    with pytest.raises(KleeneError, match="explicit"):
        kleene.afa.arcs(engine).advance_to(3)
    with pytest.raises(PatternError, match="no field size"):
        kleene.afa.arcs(engine).add("ARC z: up -> done WHEN r.size > 1")
    explicit = kleene.Engine(afa, arc_lifetimes="explicit")
    with pytest.raises(KleeneError, match="needs lifetime"):
        kleene.afa.arcs(explicit).add(EXTRA["short"])
    with pytest.raises(KleeneError, match="needs end"):
        kleene.afa.arcs(explicit).remove("end")
    query = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 5", plan="afa")
    with pytest.raises(KleeneError, match="written directly"):
        kleene.afa.arcs(query).add(EXTRA["short"])
    with pytest.raises(KleeneError, match="runs plan 'nfa'"):
        kleene.afa.arcs(kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 5", plan="nfa"))
    with pytest.raises(KleeneError, match="'default' or 'explicit'"):
        kleene.Engine(afa, arc_lifetimes="sometimes")


def test_ended_arcs_are_forgotten_once_punctuated():
    engine = kleene.Engine(kleene.afa.read_afa(RISES))
    engine.send(kleene.Event("T", 1, {"x": 1}, id=0))
    kleene.afa.arcs(engine).remove("more")
    assert "more" in {a.name for a in engine.plan.afa.arcs}
    engine.advance_to(1)
    assert "more" not in {a.name for a in engine.plan.afa.arcs}


def test_a_change_touches_one_row_and_an_added_arc_fires_unchecked_once_punctuated():
    """Section 5.2: a change between states the AFA has updates the arctable, nothing else:
    the other states' rows are the same objects; an added arc fires through its lifetime's
    check until the punctuation passes its start, then as the AFA's own arcs do."""
    engine = kleene.Engine(kleene.afa.read_afa(RISES))
    engine.send(kleene.Event("T", 1, {"x": 1}, id=0))
    machine = engine.plan.machine
    rows = list(machine.table)
    kleene.afa.arcs(engine).add("ARC fall: up -> done WHEN e.x < -5")
    up, start = machine.index["up"], machine.index["start"]
    assert machine.table[start] is rows[start] and machine.table[up] is not rows[up]
    fall = machine.table[up][-1][0]
    assert "fall" in machine.lifetimes and fall is not machine.arcs["fall"].fire
    engine.advance_to(1)
    assert "fall" not in machine.lifetimes and machine.table[up][-1][0] is machine.arcs["fall"].fire
    found = engine.send_many([kleene.Event("T", 2, {"x": 3}, id=1),
                              kleene.Event("T", 3, {"x": -9}, id=2)])  # fmt: skip
    assert sorted(m.ids()["events"] for m in found) == [(0, 1, 2), (1, 2)]  # (1, 2) by fall


def _changed_run(arrival, changes, cut, **settings):
    """Send `arrival`, making each change (its position, add or remove, and with explicit
    lifetimes its time) before the event at its position; with `cut`, checkpoint there and
    go on with a new engine of the AFA as given. The outputs at each event and the end,
    and the metrics."""
    engine = kleene.Engine(kleene.afa.read_afa(RISES), **settings)
    explicit = settings.get("arc_lifetimes") == "explicit"
    reports = []
    plan = sorted(changes)
    for sent, event in enumerate([*arrival, None]):
        if sent == cut:
            saved = engine.checkpoint()
            engine = kleene.Engine(kleene.afa.read_afa(RISES), **settings)
            engine.resume(saved)
        found = []
        while plan and plan[0][0] <= sent:
            _, change, at = plan.pop(0)
            kind, name = change.split()
            arcs = kleene.afa.arcs(engine)
            present = {arc.name for arc in engine.plan.afa.arcs}
            if kind == "add" and name not in present:
                lifetime = {"lifetime": (at, None)} if explicit else {}
                found += arcs.add(EXTRA[name], final=name == "drop", **lifetime)
            elif kind == "remove" and name in present and name not in engine.plan._leaving:
                found += arcs.remove(name, **({"end": at} if explicit else {}))
        found += engine.close() if event is None else engine.send(event)
        reports.append(sorted(repr(output) for output in found))
    metrics = engine.metrics.as_dict()
    metrics.pop("seconds", None)
    # the plan keeps the ARC line of an arc it still has, not of every arc it ever had
    assert set(engine.plan._lines) <= {arc.name for arc in engine.plan.afa.arcs}
    return reports, metrics


@pytest.mark.parametrize(
    "settings", [{}, {"max_delay": 0}, {"arc_lifetimes": "explicit"}], ids=repr
)
@given(
    events=events_strategy,
    changes=st.lists(
        st.tuples(
            st.integers(0, 9),
            st.sampled_from(["add short", "add same", "add drop", "remove more", "remove end"]),
            st.integers(0, 10),
        ),
        max_size=3,
    ),
    data=st.data(),
)
def test_a_checkpoint_keeps_the_arcs_as_they_changed(settings, events, changes, data):
    """An engine checkpointed after its arcs changed (added, removed, waiting for the
    first later event, or with explicit lifetimes) and resumed on a new engine of the AFA
    as given reports what the engine that went on reports, event by event."""
    arrival = data.draw(st.permutations(events), label="arrival order")
    cut = data.draw(st.integers(0, len(arrival)), label="checkpoint before event")
    try:
        whole = _changed_run(arrival, changes, None, **settings)
    except KleeneError:  # an explicit change before the arc punctuation, say
        assume(False)
    assert _changed_run(arrival, changes, cut, **settings) == whole


def test_a_checkpoint_of_changed_arcs_names_what_it_cannot_hold():
    """An arc added as a Python Arc cannot be saved (its conditions are code); a saved
    change cannot be resumed on an engine whose arcs changed already, nor on another AFA."""
    afa = kleene.afa.read_afa(RISES)
    engine = kleene.Engine(afa)
    engine.send(kleene.Event("T", 1, {"x": 1}, id=0))
    kleene.afa.arcs(engine).add(read_arc(EXTRA["short"], afa))
    with pytest.raises(KleeneError, match="arc short was added as a Python Arc"):
        engine.checkpoint()
    engine = kleene.Engine(afa)
    kleene.afa.arcs(engine).add(EXTRA["short"])
    saved = engine.checkpoint()
    changed = kleene.Engine(kleene.afa.read_afa(RISES))
    kleene.afa.arcs(changed).remove("end")
    with pytest.raises(KleeneError, match="resume the checkpoint before changing the arcs"):
        changed.resume(saved)
    unchanged = kleene.Engine(afa).checkpoint()  # (no arc changed before it)
    with pytest.raises(KleeneError, match="resume the checkpoint before changing the arcs"):
        changed.resume(unchanged)
    other = kleene.Engine(kleene.afa.read_afa(RISES.replace("WITHIN 6", "WITHIN 7")))
    with pytest.raises(StateError, match="another query"):
        other.resume(saved)


def test_engines_of_one_compiled_afa_change_their_own_arcs():
    """Arcs changed through one engine's handle change that engine's AFA only, also when
    several engines run one compiled plan."""
    plan = kleene.compile(kleene.afa.read_afa(RISES), plan="afa")
    changed, kept = kleene.Engine(plan), kleene.Engine(plan)
    kleene.afa.arcs(changed).remove("end")
    stream = [kleene.Event("T", t, {"x": x}, id=t) for t, x in enumerate([1, 2, -1])]
    assert changed.send_many(stream) + changed.close() == []
    assert [m.ids()["events"] for m in kept.send_many(stream) + kept.close()] == [(0, 1, 2)]
    assert "end" in {arc.name for arc in plan.afa.arcs}
    again = kleene.Engine(changed.plan)  # a copy of the arcs as they are now
    assert again.send_many(stream) + again.close() == []
    kleene.afa.arcs(again).add(EXTRA["short"])
    assert "short" not in {arc.name for arc in changed.plan.afa.arcs}
