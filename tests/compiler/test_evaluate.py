"""The interpreter: values, SQL nulls, three-valued logic, errors on clashing types; and
the compiled conditions (`kleene.compiler.codegen`), which must agree on every case."""

import re
from contextlib import suppress

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import kleene
from kleene import Event
from kleene.compiler.codegen import compile_condition
from kleene.compiler.evaluate import Env, evaluate
from kleene.compiler.functions import known_functions


def value(where, i=None, **bindings):
    expr = kleene.parse(f"PATTERN SEQ(A a, B* b[]) WHERE {where}").where
    events = {"a": (Event("A", 1, bindings.pop("a", {}), id=0),)}
    events["b"] = tuple(
        Event("B", 2 + k, attrs, id=1 + k) for k, attrs in enumerate(bindings.pop("b", []))
    )
    functions = known_functions()
    compiled = compile_condition(expr, functions)
    try:
        result = evaluate(expr, Env(events, i, functions))
    except kleene.KleeneError as error:
        failure = error
    else:
        assert compiled(events, i) is (result is True), "the compiled condition disagrees"
        return result
    with pytest.raises(type(failure), match=re.escape(str(failure))):
        compiled(events, i)
    raise failure


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("a.x + 2 * 3 = 7", True),
        ("a.x / 0 = 1", None),
        ("a.x % 0 = 1", None),
        ("a.missing = 1", None),
        ("a.missing = 1 or a.x = 1", True),
        ("a.missing = 1 and a.x = 1", None),
        ("a.missing = 1 and a.x = 2", False),
        ("not a.missing = 1", None),
        ("a.x != null", None),
        ("a.ts = 1 and a.type = 'A' and a.id = 0", True),
        ("abs(-a.x) = 1 and round(2.6) = 3 and lower('AB') = 'ab'", True),
        ("sqrt(-1) = 1", None),
        ("abs(a.missing) = 1", None),
    ],
)
def test_scalars_and_nulls(where, expected):
    assert value(where, a={"x": 1}) is expected


@pytest.mark.parametrize(
    ("where", "i", "expected"),
    [
        ("b.len = 3", None, True),
        ("b[1].x = 1 and b[b.len].x = 5 and b[b.len-1].x = 2", None, True),
        ("b[4].x = 1", None, None),
        ("avg(b[].x) = 8 / 3 and sum(b[].x) = 8 and min(b[].x) = 1 and max(b[].x) = 5", None, True),
        ("count(b[]) = 3 and count(b[].y) = 1", None, True),
        ("b[i].x > avg(b[..i-1].x)", 3, True),
        ("b[i].x > max(b[..i-1].x)", 2, True),
        ("b[i-1].x = 1", 2, True),
        ("avg(b[..i-2].x) = 1", 3, True),
        ("contains(values(b[].x), 5) and not contains(values(b[].y), 5)", None, True),
        ("contains(values(b[..i-1].x), b[i].x)", 3, False),
    ],
)
def test_kleene_references(where, i, expected):
    assert value(where, i, b=[{"x": 1}, {"x": 2, "y": 0}, {"x": 5}]) is expected


def test_aggregates_of_nothing():
    assert value("sum(b[].x) = 0 and count(b[]) = 0", b=[]) is True
    assert value("avg(b[].x) = 0", b=[]) is None
    assert value("min(b[].x) = 0", b=[{"y": 1}]) is None
    assert value("not contains(values(b[].x), a.x)", a={"x": 1}, b=[{"y": 1}]) is True
    assert value("contains(values(b[].x), a.x)", a={}, b=[{"x": 1}]) is None


def test_equivalence():
    assert value("[k]", a={"k": 1}, b=[{"k": 1}, {"k": 1}]) is True
    assert value("[k]", a={"k": 1}, b=[{"k": 2}]) is False
    assert value("[k]", a={}, b=[]) is False


COMPARED = st.sampled_from(
    [
        "a.x < 2",
        "a.x = 1",
        "a.y != 'q'",
        "a.y > 1",
        "a.x >= a.y",
        "a.x + b[1].x > 1",
        "b[1].x = a.x",
        "a.x / 0 = 1",
    ]
)
VALUES = st.sampled_from([None, 0, 1, 2, "q", 1.5])


@given(st.lists(COMPARED, min_size=2, max_size=4), VALUES, VALUES, VALUES)
@example(["a.x = 1", "a.y > 1"], None, "q", None)  # null, then a clash: an EventError
def test_a_conjunction_of_comparisons_compiles_to_what_the_interpreter_says(items, x, y, bx):
    """Comparisons joined by AND are compared inline (the fast form), left to right: the
    result, the stop at a false one, and a null or a clash of types (then the safe form
    decides) as the interpreter has them."""
    bindings = {"a": {k: v for k, v in (("x", x), ("y", y)) if v is not None}}
    bindings["b"] = [{"x": bx}] if bx is not None else [{}]
    with suppress(kleene.EventError):  # `value` checked the compiled one raised it too
        value(" and ".join(items), **bindings)


def test_clashing_types_are_an_event_error():
    with pytest.raises(kleene.EventError, match=r"cannot compute a.x > 1 with 'high' \(str\)"):
        value("a.x > 1", a={"x": "high"})
    with pytest.raises(kleene.EventError, match="must be true or false"):
        value("a.flag and a.x = 1", a={"flag": 3, "x": 1})


@pytest.mark.parametrize("plan", ["auto", "reference", "nfa", "lazy_chain", "petri"])
def test_text_times_a_number_is_a_clash_not_a_repetition(plan):
    """Python repeats a string n times: `a.s * 2 = 'aa'` held in the compiled conditions'
    fast form, and a large n exhausted memory. Multiplying takes numbers, everywhere."""
    events = [{"type": "A", "ts": 1, "s": "a", "x": 3}, {"type": "B", "ts": 2}]
    query = "PATTERN SEQ(A a, B b) WHERE {} WITHIN 5"
    if plan == "petri":  # the same condition in a LEAD rule
        query = "FROM A AS a, B AS b MATCH all(a.filter({}) Followed By b) EMIT Event M(a.x AS x)"
    for condition in ("a.s * 2 = 'aa'", "a.s * 9007199254740993 = 1", "2 * a.s = 'aa'"):
        with pytest.raises(kleene.EventError, match="cannot compute"):
            kleene.match(query.format(condition), events, plan)
    assert len(kleene.match(query.format("a.x * 2 = 6"), events, plan)) == 1


def test_registered_and_passed_functions():
    kleene.register_function("double", lambda v: 2 * v)
    try:
        assert value("double(a.x) = 4", a={"x": 2}) is True
        found = kleene.match(
            "PATTERN SEQ(A a) WHERE triple(a.x) = 6",
            [{"type": "A", "ts": 1, "x": 2}],
            functions={"triple": lambda v: 3 * v},
        )
        assert len(found) == 1
    finally:
        kleene.unregister_function("double")
    with pytest.raises(kleene.PatternError, match="unknown function double"):
        kleene.compile("PATTERN SEQ(A a) WHERE double(a.x) = 4")


@pytest.mark.parametrize("plan", ["reference", "nfa", "lazy_chain"])
def test_a_registered_functions_arithmetic_error_is_not_a_silent_null(plan):
    """It used to become null, so the condition never held and the result was silently
    empty; a built-in's domain error stays null."""
    events = [{"type": "A", "ts": 1, "x": 0}]
    found = kleene.match("PATTERN SEQ(A a) WHERE sqrt(a.x - 1) > 0", events, plan)
    assert found == []
    with pytest.raises(kleene.EventError, match=r"ratio\(a.x\) failed on arguments \[0\]: Zero"):
        kleene.match(
            "PATTERN SEQ(A a) WHERE ratio(a.x) > 0",
            events,
            plan,
            functions={"ratio": lambda v: 1 / v},
        )


def test_long_or_lists_compile_on_every_plan():
    """A 300-way `or` (a watch-list) used to be a SyntaxError in the generated code."""
    watched = " or ".join(f"a.sym = 'S{n}'" for n in range(300))
    query = f"PATTERN SEQ(A a, B b) WHERE ({watched}) and b.x > a.x WITHIN 10"
    events = [
        {"type": "A", "ts": 1, "sym": "S299", "x": 1},
        {"type": "A", "ts": 2, "sym": "Q", "x": 1},
        {"type": "B", "ts": 3, "x": 2},
    ]
    for plan in sorted(n for n, cls in kleene.plans.PLANS.items() if "sase" in cls.languages):
        found = kleene.match(query, events, plan)
        assert [m.ids() for m in found] == [{"a": (0,), "b": (2,)}], plan
    listed = " or ".join(f"a.sym == 'S{n}'" for n in range(300))
    rule = (
        f"FROM A AS a, B AS b MATCH all(a.filter({listed}) Followed By b.filter(b.x > a.x)) "
        "EMIT Event M(a.sym)"
    )
    assert [e.attrs for e in kleene.match(rule, events)] == [{"sym": "S299"}]


def test_a_failing_function_names_itself():
    kleene.register_function("boom", lambda v: {}[v])
    try:
        with pytest.raises(
            kleene.EventError, match=r"boom\(a.x\) failed on arguments \[1\]: KeyError"
        ):
            value("boom(a.x) = 1", a={"x": 1})
    finally:
        kleene.unregister_function("boom")


@pytest.mark.parametrize("plan", ["reference", "nfa"])
def test_cast_converts_as_sql_does_and_a_bad_value_is_null(plan):
    """`cast(x, 'TYPE')` (SQL's CAST): text to numbers and back; a value the type cannot
    hold is null, so the condition fails for that event only."""
    events = [{"type": "A", "ts": t, "x": x} for t, x in enumerate(["2", "2.5", "two", 3.4])]
    found = kleene.match("PATTERN SEQ(A a) WHERE cast(a.x, 'integer') >= 3", events, plan)
    assert [m.events[0].id for m in found] == [1, 3]
    found = kleene.match("PATTERN SEQ(A a) WHERE cast(a.x, 'varchar(1)') = '2'", events, plan)
    assert [m.events[0].id for m in found] == [0, 1]


def test_cast_to_a_type_kleene_does_not_know_is_refused_with_a_caret():
    with pytest.raises(kleene.PatternError, match="CAST to money") as raised:
        kleene.compile("PATTERN SEQ(A a) WHERE cast(a.x, 'money') > 1")
    assert raised.value.column == 24
    with pytest.raises(kleene.PatternError, match=r"takes a value and a type's name"):
        kleene.compile("PATTERN SEQ(A a) WHERE cast(a.x) > 1")


@pytest.mark.parametrize("plan", ["reference", "nfa"])
def test_sqls_scalar_functions_run_in_conditions(plan):
    """The SQL functions kleene has built in (`concat`, `substr`, `trim`, `replace`,
    `greatest`, `least`, `mod`, `power`, `sign`), in a SASE+ condition on every plan."""
    events = [{"type": "A", "ts": 0, "s": " IBM ", "x": -7, "y": 3}]
    holds = [
        "concat(trim(a.s), '!') = 'IBM!'",
        "substr(trim(a.s), 2, 1) = 'B'",
        "replace(a.s, 'I', 'i') = ' iBM '",
        "greatest(a.x, a.y, 0) = 3 and least(a.x, a.y) = -7",
        "mod(a.x, a.y) = -1 and power(a.y, 2) = 9 and sign(a.x) = -1",
    ]
    for condition in holds:
        found = kleene.match(f"PATTERN SEQ(A a) WHERE {condition}", events, plan)
        assert len(found) == 1, condition
