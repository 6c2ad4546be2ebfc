"""Several queries in one engine: each reports what it reports alone, when it would alone;
a rule's emitted events feed the queries that name their type, levels deep; a cycle is
refused; checkpoints resume."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.errors import KleeneError
from kleene.testing.strategies import cases


def ids(found):
    return [
        (type(m).__name__, m.ids()) if isinstance(m, kleene.Match) else (m.type, m.ts, m.attrs)
        for m in found
    ]


@given(st.lists(cases(max_events=8), min_size=2, max_size=3))
def test_each_query_reports_what_and_when_it_would_alone(drawn):
    events = drawn[0].events
    queries = {f"q{n}": case.pattern for n, case in enumerate(drawn)}
    together = kleene.Engine(queries)
    alone = {name: kleene.Engine(query, name=name) for name, query in queries.items()}
    for event in events:
        found = together.send(event)
        for name, engine in alone.items():
            assert ids([m for m in found if together.query_of(m) == name]) == ids(
                engine.send(event)
            ), (name, event)
    last = together.close()
    for name, engine in alone.items():
        assert ids([m for m in last if together.query_of(m) == name]) == ids(engine.close())
    many = kleene.Engine(queries)  # a chunk through one query after another
    found = by_query(many, many.send_many(events) + many.close())
    for name, query in queries.items():
        engine = kleene.Engine(query, name=name)
        assert found[name] == ids(engine.send_many(events) + engine.close())


RULE_X = (
    "FROM A AS a, B AS b MATCH every(a Followed By b) PARTITION BY a.k "
    "EMIT Event X(a.k AS k, b.v AS v)"
)
RULE_Y = (
    "FROM X AS x, C AS c MATCH every(x Followed By c Within 5 s) PARTITION BY x.k "
    "EMIT Event Y(x.k AS k, x.v AS v)"
)
PATTERN_Z = "PATTERN SEQ(Y p, Y q) WHERE [k] and q.v > p.v WITHIN 50"


def stream(size=60):
    rows = []
    for i in range(size):
        kind = "ABCC"[i % 4] if i % 7 else "B"
        rows.append({"type": kind, "ts": i // 2, "k": i % 3, "v": (i * 7) % 11})
    return rows


def by_hand(rule, rows):
    """A rule's emitted events merged into the stream by time, after the rows of their
    time, numbered as the engine numbers them."""
    made = [e.with_id(f"{name}#{n}") for name, found in [rule] for n, e in enumerate(found)]
    merged = [kleene.events.as_event(r, default_id=n) for n, r in enumerate(rows)] + made
    return sorted(merged, key=lambda e: (e.t, isinstance(e.id, str)))


def test_emitted_events_feed_queries_two_levels_deep():
    rows = stream()
    x = kleene.lead.run(RULE_X, rows)
    with_x = by_hand(("x", x), rows)
    y = kleene.lead.run(RULE_Y, with_x)
    with_y = by_hand(("y", y), with_x)
    z = kleene.match(PATTERN_Z, with_y)
    assert x and y and z  # every level makes something
    # given in an order where readers come before the rules they read
    found = kleene.match({"z": PATTERN_Z, "y": RULE_Y, "x": RULE_X}, rows)
    assert ids(found["x"]) == ids(x)
    assert ids(found["y"]) == ids(y)
    assert [m.ids() for m in found["z"]] == [m.ids() for m in z]
    pairs = list(kleene.match_iter({"z": PATTERN_Z, "y": RULE_Y, "x": RULE_X}, rows))
    assert sorted(name for name, _ in pairs) == sorted(
        ["x"] * len(x) + ["y"] * len(y) + ["z"] * len(z)
    )


#: Emits U when its time event fires: 3 s after an A no C followed.
RULE_U = (
    "FROM A AS a, C AS c MATCH every(a Followed By not c Within 3 s) PARTITION BY a.k "
    "EMIT Event U(a.k AS k, a.v AS v)"
)
#: Reads the emitted U and the stream's B: it needs each U in its place among the Bs.
PATTERN_UB = "PATTERN SEQ(U u, B b) WHERE [k] WITHIN 2"


@pytest.mark.parametrize(
    "queries",
    [{"z": PATTERN_Z, "y": RULE_Y, "x": RULE_X}, {"ub": PATTERN_UB, "u": RULE_U}],
    ids=["emitted as events come", "emitted as time passes"],
)
def test_chunks_of_a_long_stream_feed_emitted_events_in_order(queries):
    rows = stream(10_000)  # three chunks of send_many
    one_by_one = kleene.Engine(queries)
    expected = by_query(one_by_one, [o for r in rows for o in one_by_one.send(r)])
    for name, outputs in by_query(one_by_one, one_by_one.close()).items():
        expected[name] += outputs
    assert all(expected.values())
    chunked = kleene.Engine(queries)
    assert by_query(chunked, chunked.send_many(rows) + chunked.close()) == expected


def test_a_cycle_of_queries_is_refused_before_anything_runs():
    back = (
        "FROM Y AS y, A AS a MATCH every(y Followed By a) PARTITION BY y.k EMIT Event X(y.k AS k)"
    )
    loop = (
        "FROM X AS x, C AS c MATCH every(x Followed By c) PARTITION BY x.k EMIT Event Y(x.k AS k)"
    )
    with pytest.raises(KleeneError, match="cycle"):
        kleene.Engine({"a": back, "b": loop})


def test_names_and_refusals():
    engine = kleene.Engine(["PATTERN SEQ(A a, B b) WITHIN 3", "PATTERN SEQ(B b, C c) WITHIN 3"])
    assert list(engine.queries) == ["0", "1"]
    found = engine.send_many([{"type": t, "ts": i} for i, t in enumerate("ABC")])
    assert [(engine.query_of(m), m.pattern) for m in found] == [("0", "0"), ("1", "1")]
    with pytest.raises(KleeneError, match="named 'a'"):
        kleene.Engine([kleene.compile("PATTERN SEQ(A a)", name="a")] * 2)
    with pytest.raises(KleeneError, match="keys, not by name"):
        kleene.Engine({"a": "PATTERN SEQ(A a)"}, name="b")
    with pytest.raises(KleeneError, match="engine of its own"):
        kleene.Engine({"a": "PATTERN SEQ(A a, B b) WITHIN 3"}, plan="afa")
    with pytest.raises(KleeneError, match="for one query"):
        engine.retract({"type": "A", "ts": 1, "id": 0})
    with pytest.raises(kleene.EventError, match="timestamp order"):
        engine.send({"type": "D", "ts": 0})  # of no query's type, and still out of order


def test_out_of_order_input_is_put_in_order_once():
    rows = stream()
    shuffled = [rows[i ^ 1] for i in range(len(rows))]  # neighbours swapped, at most 1 late
    queries = {"z": PATTERN_Z, "y": RULE_Y, "x": RULE_X}
    expected = kleene.match(queries, rows)
    found = kleene.match(queries, shuffled, max_delay=1)
    for name in queries:
        assert [(o.ts if isinstance(o, kleene.Event) else o.ids()) for o in found[name]] == [
            (o.ts if isinstance(o, kleene.Event) else o.ids()) for o in expected[name]
        ]


def by_query(engine, found):
    """Each query's outputs (`ids`), in the order reported."""
    return {name: ids([o for o in found if engine.query_of(o) == name]) for name in engine.queries}


def test_a_checkpoint_resumes_every_query():
    rows = stream()
    queries = {"z": PATTERN_Z, "y": RULE_Y, "x": RULE_X}
    whole = kleene.Engine(queries)
    expected = by_query(whole, whole.send_many(rows) + whole.close())
    first = kleene.Engine(queries)
    found = by_query(first, first.send_many(rows[:31]))
    saved = first.checkpoint()
    second = kleene.Engine(queries)
    second.resume(saved)
    for name, outputs in by_query(second, second.send_many(rows[31:]) + second.close()).items():
        found[name] += outputs
    assert found == expected
    with pytest.raises(KleeneError, match=r"saved by|these queries"):
        kleene.Engine({"z": PATTERN_Z, "x": RULE_X}).resume(saved)


def test_a_rule_quiet_at_a_chunks_end_still_emits_in_time():
    """The rule's only event comes first; its time event fires as the stream's Bs pass
    (no event of its own moves its time), before the B that follows it in time."""
    rows = [{"type": "A", "ts": 0, "k": 0, "v": 1}]
    rows += [{"type": "B", "ts": t, "k": 0} for t in range(1, 5000)]
    queries = {"ub": PATTERN_UB, "u": RULE_U}
    expected = [{"u": ("u#0",), "b": (4,)}, {"u": ("u#0",), "b": (5,)}]
    assert [m.ids() for m in kleene.match(queries, rows)["ub"]] == expected
    engine = kleene.Engine(queries)
    found = [o for r in rows for o in engine.send(r)]
    assert [m.ids() for m in found if engine.query_of(m) == "ub"] == expected


def test_a_bad_row_is_named_by_its_file_and_row(tmp_path):
    path = tmp_path / "ticks.csv"
    path.write_text("type,ts,k\nA,1,1\nD,0,1\n")  # D: of no query's type, and out of order
    queries = {"a": "PATTERN SEQ(A a, B b) WITHIN 3", "b": "PATTERN SEQ(B b, C c) WITHIN 3"}
    with pytest.raises(kleene.EventError, match=r"ticks.csv, row 2, field 'ts'.*timestamp order"):
        kleene.match(queries, kleene.read_events(path))


def test_metrics_count_the_stream_once_and_sum_the_queries():
    queries = {"a": "PATTERN SEQ(A a, B b) WITHIN 3", "b": "PATTERN SEQ(B b, C c) WITHIN 3"}
    engine = kleene.Engine(queries)
    events = [{"type": t, "ts": i} for i, t in enumerate("ABCABCD")]
    engine.send_many(events)
    engine.close()
    alone = [kleene.Engine(q) for q in queries.values()]
    for each in alone:
        each.send_many(events)
        each.close()
    metrics = engine.metrics
    assert metrics.events == len(events)  # each event counted once, not once a query
    assert metrics.matches == sum(e.metrics.matches for e in alone) == 4
    plans = [e.metrics.plan for e in alone]
    assert metrics.plan == {k: sum(p.get(k, 0) for p in plans) for k in set().union(*plans)}


SHAPES = [
    "PATTERN SEQ({x} a, {y} b){where} WITHIN {w}",
    "PATTERN SEQ({x} a, NOT({y} n), {z} c){where} WITHIN {w}",
    "PATTERN AND({x} a, {y} b){where} WITHIN {w}",
    "PATTERN SEQ({x} a, {y}+ b[], {z} c){where} WITHIN {w}",
]
WHERE = ["", " WHERE a.v > 2", " WHERE a.v < c.v", " WHERE a.v > 1 AND b.v >= a.v"]


@st.composite
def joint_queries(draw):
    """Window joins of one window (and one of another), some with conditions of their
    own variables, over the types A, B, C: queries that step as one (`Plan.joint`)."""
    count = draw(st.integers(3, 6))
    window = draw(st.sampled_from([2, 3, 5]))
    queries = {}
    for number in range(count):
        shape = draw(st.sampled_from(SHAPES))
        x, y, z = draw(st.permutations("ABC"))
        where = draw(st.sampled_from(WHERE))
        if ("c.v" in where and "{z}" not in shape) or ("b.v" in where and "NOT" in shape):
            where = ""
        if "b[]" in shape and "b.v" in where:  # b's events with a: no window join
            where = ""
        w = window if number else window + 1
        queries[f"q{number}"] = shape.format(x=x, y=y, z=z, where=where, w=w)
    return queries


@given(
    joint_queries(),
    st.lists(st.tuples(st.sampled_from("ABCD"), st.integers(0, 2), st.integers(0, 5)), max_size=40),
    st.integers(0, 40),
)
def test_queries_stepping_as_one_report_what_they_would_alone(queries, rows, cut):
    """Window joins share their buffers (`Plan.joint`): each query still reports what,
    and when, it would alone, counts what it would, and resumes from a checkpoint."""
    events, t = [], 0
    for kind, gap, v in rows:
        t += gap
        events.append({"type": kind, "ts": t, "v": v})
    together = kleene.Engine(queries)
    assert together._together  # the joint runs here
    alone = {name: kleene.Engine(query, name=name) for name, query in queries.items()}
    first = events[:cut]
    found = [(together.query_of(m), m) for m in together.send_many(first)]
    expected = {name: engine.send_many(first) for name, engine in alone.items()}
    resumed = kleene.Engine(queries)
    resumed.resume(together.checkpoint())
    for event in events[cut:]:  # one at a time, on the resumed engine
        found += [(resumed.query_of(m), m) for m in resumed.send(event)]
        for name, engine in alone.items():
            expected[name] += engine.send(event)
    found += [(resumed.query_of(m), m) for m in resumed.close()]
    for name, engine in alone.items():
        expected[name] += engine.close()
        assert ids([m for owner, m in found if owner == name]) == ids(expected[name])
        peak = resumed.queries[name].metrics.peak_matches
        assert peak == engine.metrics.peak_matches  # the most one event completed
    plans = [engine.metrics.plan for engine in alone.values()]
    summed = {k: sum(p.get(k, 0) for p in plans) for k in set().union(*plans)}
    # (a query alone holds a state, of zero counters, for events of no type it takes)
    assert {k: v for k, v in resumed.metrics.plan.items() if v} == {
        k: v for k, v in summed.items() if v
    }


def test_queries_stepping_as_one_refuse_an_event_advance_to_passed():
    """The joint's queries check each event as their own loop would: one at or before
    the time `advance_to` declared is refused as one query alone refuses it."""
    queries = {f"q{i}": f"PATTERN SEQ(A a, B b) WHERE a.v > {i} WITHIN 5" for i in range(3)}
    engine = kleene.Engine(queries)
    assert engine._together
    alone = kleene.Engine(queries["q0"])
    for each in (engine, alone):
        each.send_many([{"type": "A", "ts": 1, "v": 9}, {"type": "B", "ts": 2, "v": 1}])
        each.advance_to(10)
        with pytest.raises(kleene.EventError, match="advance_to"):
            each.send_many([{"type": "A", "ts": 10, "v": 9}])
    later = [{"type": "A", "ts": 11, "v": 9}, {"type": "B", "ts": 12, "v": 0}]
    assert len(engine.send_many(later)) == 3


def test_an_error_in_one_of_several_queries_names_it():
    """With several queries, a query's syntax or meaning error says which query, then the
    line, column and caret as for one."""
    broken = {"ok": "PATTERN SEQ(A a, B b) WITHIN 5", "rise": "PATTERN SEQ(A a) WHERE b.x > 1"}
    with pytest.raises(kleene.PatternError, match=r"^query 'rise', line 1, column 24: unknown"):
        kleene.Engine(broken)
    with pytest.raises(kleene.PatternSyntaxError, match=r"^query 'ok', line 1, column"):
        kleene.match({"ok": "PATTERN SEQ(A a, B b) WHERE a.x > WITHIN 5"}, [])
    with pytest.raises(kleene.PatternError) as alone:
        kleene.Engine(broken["rise"])
    assert str(alone.value).startswith("line 1, column 24")
