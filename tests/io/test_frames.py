"""kleene.to_pandas: matches as a DataFrame, flat or exploded ("results are hard
to use")."""

import kleene

EVENTS = [
    {"type": "A", "ts": 1, "sym": "X", "price": 10},
    {"type": "B", "ts": 2, "sym": "X", "price": 11},
    {"type": "B", "ts": 3, "sym": "X", "price": 12},
    {"type": "C", "ts": 4, "sym": "X", "price": 9, "note": "drop"},
]
QUERY = "PATTERN SEQ(A a, B+ b[], C c) WHERE skip_till_any_match { [sym] } WITHIN 10"


def test_one_row_a_match_with_a_column_per_variable_field():
    found = kleene.match(QUERY, EVENTS)
    frame = kleene.to_pandas(found)
    assert len(frame) == len(found) == 3
    assert list(frame.columns) == [
        "match_id", "pattern", "start_ts", "end_ts",
        "a.id", "a.type", "a.ts", "a.sym", "a.price",
        "b.id", "b.type", "b.ts", "b.sym", "b.price",
        "c.id", "c.type", "c.ts", "c.sym", "c.price", "c.note",
    ]  # fmt: skip
    assert frame["match_id"].tolist() == [m.match_id for m in found]
    assert frame["a.price"].tolist() == [10, 10, 10]
    assert sorted(map(tuple, frame["b.price"])) == [(11,), (11, 12), (12,)]
    assert frame["c.note"].tolist() == ["drop"] * 3


def test_exploded_one_row_an_event():
    found = kleene.match(QUERY, EVENTS)
    frame = kleene.to_pandas(found, explode=True)
    assert len(frame) == sum(len(es) for m in found for es in m.bindings.values())
    first = frame[frame["match"] == 0]
    assert first["variable"].tolist()[0] == "a" and first["position"].tolist()[0] == 0
    assert {"type", "ts", "id", "sym", "price"} <= set(frame.columns)


def test_emitted_events_and_retractions():
    rule = "FROM A AS a MATCH every(a) EMIT Event Seen(a.price)"
    frame = kleene.to_pandas(kleene.lead.run(rule, EVENTS))
    assert frame.to_dict("records") == [{"type": "Seen", "ts": 1, "price": 10}]
    engine = kleene.Engine("PATTERN SEQ(A a, NOT(B b), C c) WITHIN 10", plan="afa")
    outputs = engine.send_many([EVENTS[0], EVENTS[3]]) + engine.send_many([{**EVENTS[1], "ts": 2}])
    frame = kleene.to_pandas(outputs)
    assert frame["retraction"].tolist() == [False, True]
    assert kleene.to_pandas([]).empty
