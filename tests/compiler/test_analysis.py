"""What analysis derives: conditions, properties, partition keys, order, negation scopes."""

import pytest

import kleene
from kleene.compiler.analysis import analyze


def info(text):
    return analyze(kleene.parse(text))


def test_properties_relationships_and_subjects():
    result = info(
        "PATTERN SEQ(A a, B+ b[], C c) WHERE a.x > 1 and b[i].y < 2 and b[1].z = 3 "
        "and b[b.len].z = 4 and b[i].y > b[i-1].y and c.x > a.x and b.len < 5"
    )
    assert [c.text for c in result.properties["a"]] == ["a.x > 1"]
    assert [c.text for c in result.properties["b"]] == ["b[i].y < 2"]
    assert [c.subject for c in result.conditions] == [
        "a",
        "b",
        "b[1]",
        "b[b.len]",
        None,
        None,
        None,
    ]
    assert {c.text for c in result.relationships} == {
        "b[1].z = 3",
        "b[b.len].z = 4",
        "b[i].y > b[i-1].y",
        "c.x > a.x",
        "b.len < 5",
    }


def test_condition_decidability():
    result = info(
        "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].y > avg(b[..i-1].y) + a.x "
        "and b[2].y > c.y and sum(b[].y) < 9"
    )
    family, second, whole = result.conditions
    assert (family.indexed, family.first_i, family.variables) == ("b", 2, {"a", "b"})
    assert family.instances({"a": (0,), "b": (1, 2, 3)}, set()) == [2, 3]
    assert family.instances({"b": (1, 2, 3)}, set()) == []
    assert second.instances({"b": (1,), "c": (5,)}, set()) == []
    assert second.instances({"b": (1,), "c": (5,)}, {"b"}) == [None]
    assert second.instances({"b": (1, 2), "c": (5,)}, set()) == [None]
    assert whole.instances({"b": (1, 2)}, set()) == []
    assert whole.instances({"b": (1, 2)}, {"b"}) == [None]


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("PATTERN SEQ(A a, B b) WHERE [k]", "k"),
        ("PATTERN SEQ(A a, B b, C c) WHERE a.x = b.x and c.x = b.x", "x"),
        ("PATTERN SEQ(A a, B+ b[], C c) WHERE a.x = b[i].x and c.x = b[i].x", "x"),
        ("PATTERN SEQ(A a, B+ b[]) WHERE a.x = b[1].x and b[i].x = b[i-1].x", "x"),
        ("PATTERN SEQ(A a, B b) WHERE a.x = b.y", "a.x = b.y"),
        (
            "PATTERN SEQ(A a, NOT(X n), C c) WHERE a.x = c.x and n.z = a.x WITHIN 5",
            "a.x = n.z = c.x",
        ),
        ("PATTERN OR(SEQ(A a, B b), C c) WHERE [k]", "k"),
        ("PATTERN SEQ(A a, B b) WHERE [k] and a.x = b.x", "k, x"),
        # no key: a chain through something a match may leave unbound or empty
        ("PATTERN SEQ(A a, B b, C c) WHERE a.x = b.x and b.y = c.y", None),
        ("PATTERN SEQ(A a, B* b[], C c) WHERE a.x = b[i].x and c.x = b[i].x", None),
        ("PATTERN SEQ(A a, B+ b[]) WHERE a.x = b[1].x", None),
        ("PATTERN SEQ(A a, NOT(X n), C c) WHERE a.x = c.x WITHIN 5", None),
        ("PATTERN SEQ(NOT(A n), A v) WHERE n.x = v.x WITHIN 3", None),
        ("PATTERN OR(SEQ(A a, B b), SEQ(C c, D d)) WHERE a.x = b.x and c.x = d.x", None),
        ("PATTERN SEQ(A a, A b) WHERE a.x = b.y", None),
    ],
)
def test_partition_keys(query, key):
    partition = info(query).partition
    assert (partition.describe() if partition else None) == key


def test_partition_key_of_an_event():
    partition = info("PATTERN SEQ(A a, B b) WHERE a.x = b.y").partition
    assert partition.key(kleene.Event("A", 1, {"x": 3})) == (3,)
    assert partition.key(kleene.Event("B", 1, {"y": 3})) == (3,)
    assert partition.key(kleene.Event("A", 1, {})) is None
    assert partition.key(kleene.Event("Other", 1, {"x": 3})) is None
    uniform = info("PATTERN SEQ(A a, B b) WHERE [k]").partition
    assert uniform.key(kleene.Event("Other", 1, {"k": 1})) == (1,)


@pytest.mark.parametrize(
    "query",
    ["PATTERN SEQ(A a, B b) WHERE [k]", "PATTERN SEQ(A a, B b) WHERE a.x = b.y"],
)
@pytest.mark.parametrize("value", [None, 3, "s", 2.5, True, [1, 2], (1,), {"a": 1}])
@pytest.mark.parametrize("kind", ["A", "B", "Other"])
def test_the_quick_keyer_keys_as_key_does(query, value, kind):
    partition = info(query).partition
    event = kleene.Event(kind, 1, {"k": value, "x": value, "y": value})
    assert partition.keyer(event) == partition.key(event)


def test_order_and_negation_neighbours():
    result = info("PATTERN SEQ(A a, AND(SEQ(NOT(B n), C c), D d), E e, NOT(F f)) WITHIN 5")
    assert result.before["c"] == {"a", "n"}
    assert result.before["e"] == {"a", "n", "c", "d"}
    assert (result.negations["n"].before, result.negations["n"].after) == ({"a"}, {"c", "e"})
    assert (result.negations["f"].before, result.negations["f"].after) == (
        {"a", "c", "d", "e"},
        set(),
    )


def test_negation_inside_an_or_branch_applies_to_that_branch():
    result = info("PATTERN OR(SEQ(A a, NOT(X x), B b), C c) WITHIN 5")
    negation = result.negations["x"]
    assert negation.applies({"a": (0,), "b": (1,)})
    assert not negation.applies({"c": (0,)})
    with pytest.raises(kleene.PatternError, match="variable of its own"):
        kleene.parse("PATTERN OR(SEQ(A a, NOT(X x), B b), SEQ(B b, A a)) WITHIN 5")


def test_prefilter_is_safe_only_when_irrelevant_events_are_skipped():
    assert info("PATTERN SEQ(A a, B b)").prefilter_safe
    assert info("PATTERN SEQ(A a, B b) WHERE skip_till_next_match").prefilter_safe
    assert not info("PATTERN SEQ(A a, B b) WHERE strict_contiguity").prefilter_safe
    assert not info("PATTERN SEQ(A a, B b) WHERE partition_contiguity { [k] }").prefilter_safe
