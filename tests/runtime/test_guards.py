"""The guards on work and state: partial matches per key and in total, matches per event.

A query that explodes stops with a `LimitError` naming what grows and the fix, or, with
on_limit="drop", goes on without what passes the limit and counts it.
"""

import math

import pytest

import kleene
from kleene.cli import main
from kleene.events import Watermark
from kleene.plans.base import PLANS

RUNAWAY = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 1000"


def runaway(bs: int) -> list[dict]:
    """One A, `bs` B events, one C: 2**bs - 1 matches end at the C."""
    return [
        {"type": "A", "ts": 0},
        *({"type": "B", "ts": i + 1} for i in range(bs)),
        {"type": "C", "ts": bs + 1},
    ]


def sent(engine: kleene.Engine, events: list[dict]) -> list[kleene.Match]:
    found = []
    for event in events:
        found += engine.send(event)
    return found + engine.close()


def test_the_runaway_query_stops_and_names_cause_and_fix():
    # 20 B events: 1,048,575 matches (1.7 GB and a minute before the guard); the default
    # limit stops it at 100,000, before they are built
    engine = kleene.Engine(RUNAWAY)
    with pytest.raises(kleene.LimitError) as info:
        sent(engine, runaway(20))
    message = str(info.value)
    assert "more than 100,000 matches one event may complete (max_matches_per_event" in message
    assert "b[] is a Kleene variable under skip_till_any_match" in message
    assert "use skip_till_next_match" in message
    assert "on_limit='drop'" in message
    assert "no WITHIN" not in message  # it has one


@pytest.mark.parametrize("plan", [p for p in PLANS if "sase" in PLANS[p].languages])
def test_every_plan_honours_the_matches_per_event_limit(plan):
    with pytest.raises(kleene.LimitError, match=r"more than 5 matches one event may complete"):
        sent(kleene.Engine(RUNAWAY, plan=plan, max_matches_per_event=5), runaway(5))
    if plan == "match_window":
        with pytest.raises(kleene.PlanError, match="what a guard drops goes uncounted"):
            kleene.Engine(RUNAWAY, plan=plan, on_limit="drop")
        return
    dropped = kleene.Engine(RUNAWAY, plan=plan, max_matches_per_event=5, on_limit="drop")
    found = sent(dropped, runaway(5))
    assert len(found) == 5
    assert dropped.metrics.as_dict()["cut_events"] == 1
    everything = sent(kleene.Engine(RUNAWAY, plan=plan, max_matches_per_event=None), runaway(5))
    assert len(everything) == 31
    assert {m.ids()["b"] for m in found} <= {m.ids()["b"] for m in everything}


@pytest.mark.parametrize("plan", [p for p in PLANS if "sase" in PLANS[p].languages])
def test_the_matches_per_event_limit_without_a_kleene_variable(plan):
    """Three A and three B, then a C: nine matches end at the C. A limit of 4 stops them,
    or keeps four of them under on_limit="drop" (the joins check it once a loop ends)."""
    query = "PATTERN SEQ(A a, B b, C c) WITHIN 100"
    events = [{"type": t, "ts": i} for i, t in enumerate("AAABBBC")]
    with pytest.raises(kleene.LimitError, match=r"more than 4 matches one event may complete"):
        sent(kleene.Engine(query, plan=plan, max_matches_per_event=4), events)
    if plan == "match_window":
        return  # (it cannot drop: the test above)
    dropped = kleene.Engine(query, plan=plan, max_matches_per_event=4, on_limit="drop")
    found = sent(dropped, events)
    assert len(found) == 4
    assert len({m.key for m in found}) == 4
    assert dropped.metrics.as_dict()["cut_events"] == 1
    everything = {m.key for m in sent(kleene.Engine(query, plan=plan), events)}
    assert len(everything) == 9
    assert {m.key for m in found} <= everything


@pytest.mark.parametrize("plan", [p for p in PLANS if "sase" in PLANS[p].languages])
def test_the_matches_per_event_limit_counts_only_matches_inside_the_window(plan):
    """At the third event, an exclusive window of 2 holds two matches ({1, 2} and {2});
    those reaching back to the first event are not matches, and the guard does not count
    them: a limit of the most matches reported at once changes nothing."""
    query = "PATTERN SEQ(_+ v1[]) WITHIN 2 EXCLUSIVE"
    events = [{"type": "A", "ts": t} for t in range(3)]
    try:
        free = kleene.Engine(query, plan=plan, max_matches_per_event=None)
    except kleene.PlanError:
        pytest.skip(f"{plan} refuses the query (inclusive windows only, or its shape)")
    reports = [free.send(event) for event in events] + [free.close()]
    found = [m.ids()["v1"] for report in reports for m in report]
    assert sorted(found) == [(0,), (0, 1), (1,), (1, 2), (2,)]
    # a plan that counts its completions completed nothing outside the window
    assert free.metrics.as_dict().get("completions", len(found)) == len(found)
    most = max(map(len, reports))
    guarded = kleene.Engine(query, plan=plan, max_matches_per_event=most)
    assert [m.ids()["v1"] for m in sent(guarded, events)] == found


def test_nfa_with_drop_goes_on_past_an_explosion():
    engine = kleene.Engine(RUNAWAY, on_limit="drop", max_matches_per_event=1000)
    later = [{"type": "A", "ts": 2000}, {"type": "B", "ts": 2001}, {"type": "C", "ts": 2002}]
    events = [*runaway(16), *later]
    found = sent(engine, events)
    assert len(found) == 1000 + 1  # the cut event's first 1,000, then the next match
    assert found[-1].ids() == {"a": (18,), "b": (19,), "c": (20,)}


GROWING = "PATTERN SEQ(A a, B b) WHERE a.x < b.x"  # no WITHIN: every A waits for ever


def growing(count: int, key: str = "k") -> list[dict]:
    return [{"type": "A", "ts": i, "x": i, "k": key} for i in range(count)]


@pytest.mark.parametrize("plan", ["nfa", "nfa_backtrack", "lazy_chain", "afa"])
def test_partial_matches_per_key_are_bounded(plan):
    engine = kleene.Engine(GROWING, plan=plan, max_partial_matches_per_key=100)
    with pytest.raises(kleene.LimitError) as info:
        sent(engine, growing(300))
    message = str(info.value)
    assert "more than 100 partial matches held in one partition" in message
    assert "no WITHIN: a partial match never expires (add WITHIN" in message
    assert "no partition key" in message


def test_partial_matches_in_total_are_bounded_over_keys():
    query = "PATTERN SEQ(A a, B b) WHERE [k] AND a.x < b.x"
    engine = kleene.Engine(query, max_partial_matches=50)
    events = [e for k in range(10) for e in growing(10, f"k{k}")]
    events.sort(key=lambda e: e["ts"])
    with pytest.raises(
        kleene.LimitError, match=r"held in all partitions together .* over \d+ part"
    ):
        sent(engine, events)


def test_drop_keeps_the_youngest_partial_matches_and_counts_the_rest():
    engine = kleene.Engine(GROWING, max_partial_matches_per_key=100, on_limit="drop")
    found = sent(engine, [*growing(300), {"type": "B", "ts": 300, "x": 1000}])
    # the 100 youngest A events are still waiting when the B comes
    assert sorted(m.ids()["a"][0] for m in found) == list(range(200, 300))
    assert engine.metrics.partials_dropped == 200


def test_a_plan_that_cannot_drop_partial_matches_says_so():
    engine = kleene.Engine(GROWING, plan="afa", max_partial_matches_per_key=10, on_limit="drop")
    with pytest.raises(kleene.LimitError, match=r"cannot drop partial matches .* plan 'nfa'"):
        sent(engine, growing(50))


def test_the_guards_can_be_lifted():
    engine = kleene.Engine(GROWING, max_partial_matches_per_key=None, max_partial_matches=None)
    found = sent(engine, [*growing(300), {"type": "B", "ts": 300, "x": 1000}])
    assert len(found) == 300


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_matches_per_event": 0}, "max_matches_per_event is a number"),
        ({"max_partial_matches": "many"}, "max_partial_matches is a number"),
        ({"max_partial_matches_per_key": True}, "max_partial_matches_per_key is a number"),
        ({"on_limit": "ignore"}, "on_limit is 'raise' or 'drop'"),
    ],
)
def test_bad_guard_options_are_refused(options, message):
    with pytest.raises(kleene.PlanError, match=message):
        kleene.compile(GROWING, **options)


def test_explain_and_the_cli_warn_about_state_that_can_only_grow(tmp_path, capsys):
    assert main(["explain", GROWING]) == 0
    assert "window:         none (warning: no WITHIN: a partial match never expires" in (
        capsys.readouterr().out
    )
    path = tmp_path / "events.csv"
    path.write_text("type,ts,x\nA,1,1\nB,2,5\n")
    assert main(["match", GROWING, "-i", str(path)]) == 0
    assert "this query's state can only grow: no WITHIN" in capsys.readouterr().err
    assert main(["match", "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5", "-i", str(path)]) == 0
    assert "can only grow" not in capsys.readouterr().err
    # under strict contiguity a run dies at the first event it cannot take
    contiguous = "PATTERN SEQ(A a, B b) WHERE strict_contiguity"
    assert main(["match", contiguous, "-i", str(path)]) == 0
    assert "can only grow" not in capsys.readouterr().err


def test_a_guard_trips_through_the_cli_as_one_line_and_option(tmp_path, capsys):
    path = tmp_path / "events.csv"
    rows = [f"B,{i + 1}" for i in range(12)]
    path.write_text("\n".join(["type,ts", "A,0", *rows, "C,20"]) + "\n")
    assert main(["match", RUNAWAY, "-i", str(path), "--option", "max_matches_per_event=100"]) == 1
    assert "kleene: more than 100 matches one event may complete" in capsys.readouterr().err
    options = ["--option", "max_matches_per_event=100", "--option", "on_limit=drop"]
    assert main(["match", RUNAWAY, "-i", str(path), "--stats", *options]) == 0
    assert "cut_events" in capsys.readouterr().err


def test_the_cli_writes_one_events_matches_as_they_are_made(tmp_path, capsys):
    """`kleene match` reads an event's matches as they are made (`Engine.send_iter`): with
    --limit 5 it stops after the fifth of the C's 1,048,575 (building them first tripped
    the default guard), and with the guard lifted it writes them all out as they come."""
    path = tmp_path / "events.csv"
    path.write_text("type,ts\n" + "".join(f"{e['type']},{e['ts']}\n" for e in runaway(20)))
    out = tmp_path / "first.jsonl"
    assert main(["match", RUNAWAY, "-i", str(path), "-o", str(out), "--limit", "5"]) == 0
    assert len(out.read_text().splitlines()) == 5
    path.write_text("type,ts\n" + "".join(f"{e['type']},{e['ts']}\n" for e in runaway(13)))
    out = tmp_path / "all.jsonl"
    lifted = ["--option", "max_matches_per_event=none"]
    assert main(["match", RUNAWAY, "-i", str(path), "-o", str(out), *lifted]) == 0
    assert len(out.read_text().splitlines()) == 2**13 - 1
    assert "15 events, 8,191 matches" in capsys.readouterr().err


def test_match_iter_hands_out_what_match_finds():
    """`kleene.match_iter` gives `kleene.match`'s matches, in the order made."""
    events = [*runaway(8), {"type": "A", "ts": 10}, {"type": "B", "ts": 11}]
    events += [{"type": "C", "ts": 12}]
    for plan in ("nfa", "window_join", "reference"):
        lazily = [m.key for m in kleene.match_iter(RUNAWAY, events, plan)]
        assert sorted(lazily) == sorted(m.key for m in kleene.match(RUNAWAY, events, plan))
        assert len(lazily) == 2**8 - 1 + 2**9 - 1 + 1  # the second C: the first A's too


def test_non_overlapping_output_never_builds_the_matches_it_drops():
    """Of the 1,048,575 matches the C completes, non-overlapping output reports one: nfa
    reads only that one from its buffer (Flink's SKIP_PAST_LAST_EVENT prunes so)."""
    engine = kleene.Engine(RUNAWAY, output="non_overlapping")
    [found] = sent(engine, runaway(20))
    assert found.ids() == {"a": (0,), "b": tuple(range(1, 21)), "c": (21,)}
    assert engine.metrics.as_dict()["completions"] == 1
    for plan in ("nfa", "reference"):  # the same answer as the brute force on a smaller one
        small = sent(kleene.Engine(RUNAWAY, plan, output="non_overlapping"), runaway(8))
        assert [m.ids() for m in small] == [{"a": (0,), "b": tuple(range(1, 9)), "c": (9,)}]


def test_nfa_backtrack_stops_an_explosion_before_it_is_built():
    """Its runs complete one at a time, depth first: the guard stops them at the limit
    (it built all 2**bs of them first: 2.8 GB for 25 B events)."""
    plan = kleene.compile(RUNAWAY, plan="nfa_backtrack", max_matches_per_event=1000)
    state = plan.new_state()
    events = [kleene.Event(e["type"], e["ts"], {}, i) for i, e in enumerate(runaway(20))]
    for event in events:
        plan.step(state, event)
    with pytest.raises(kleene.LimitError, match="more than 1,000 matches one event"):
        plan.advance(state, Watermark(math.inf))  # the end of the stream: every run reads on
    assert plan.counters(state)["completions"] == 1000


def test_nfa_backtrack_drops_runs_past_the_partial_match_limit():
    """Depth first holds one run at a time, but every run that reads an event is a partial
    match alive at it: past max_partial_matches_per_key runs of one event it stops (or
    under on_limit="drop", stops following the rest and counts them), so the work stays
    bounded where it was 2**25 runs (minutes) before."""
    events = runaway(25)
    engine = kleene.Engine(RUNAWAY, plan="nfa_backtrack", max_partial_matches_per_key=1000)
    with pytest.raises(kleene.LimitError, match="more than 1,000 partial matches held in one"):
        sent(engine, events)
    engine = kleene.Engine(
        RUNAWAY, plan="nfa_backtrack", max_partial_matches_per_key=1000, on_limit="drop"
    )
    found = sent(engine, events)
    counts = engine.metrics.as_dict()
    assert counts["runs_created"] <= 1000 * len(events)
    assert counts["partials_dropped"] > 0
    assert 0 < len(found) <= 1000
    for match in found:  # each a match of the query, none twice
        ids = match.ids()
        assert ids["a"] == (0,) and ids["c"] == (26,) and list(ids["b"]) == sorted(set(ids["b"]))
    assert len({m.ids()["b"] for m in found}) == len(found)


def test_afa_without_punctuations_says_so_at_start_and_in_the_guard(caplog):
    """afa forgets a key's state only at a punctuation: max_delay gives them (its state
    stays bounded as keys come and go); without them a warning, and the guard names both."""
    query = "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 10"
    ever_new = [{"type": "A", "ts": t, "k": t} for t in range(300)]
    with caplog.at_level("WARNING", logger="kleene"):
        bounded = kleene.Engine(query, plan="afa", max_delay=5)
    assert not caplog.records
    bounded.send_many(ever_new)
    assert bounded.partitions <= 64  # idle states go once there are 64 (of 300 keys)
    with caplog.at_level("WARNING", logger="kleene"):
        engine = kleene.Engine(query, plan="afa", max_partial_matches=50)
    assert "forgets a partition's state only at a punctuation" in caplog.text
    with pytest.raises(kleene.LimitError, match=r"give max_delay= .* engine.advance_to\(t\)"):
        engine.send_many(ever_new)
