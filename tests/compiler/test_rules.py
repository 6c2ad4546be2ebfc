"""A LEAD rule's expressions through the one interpreter and the one code generator: the
compiled value of every expression is what the interpreter gives (`RuleScope`), errors
included, and conditions follow SQL's nulls as SASE+ conditions do."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene import Event
from kleene.compiler.evaluate import evaluate, holds
from kleene.compiler.rules import Env, Names, RuleScope, compile_condition, compile_value
from kleene.language import expr as E
from kleene.language.lead import ast as L
from kleene.language.lead.reader import read_rule

RULE = read_rule(
    "FROM A AS a, B AS b DEFINE TimeEvent open(a.event_time, a.event_time + 5 s) "
    "MATCH a Followed By collect(b) terminate(count() == 3) AS l PARTITION BY a.k "
    "EMIT Event X(a.x)"
)
NAMES = Names({t.name: t for t in RULE.time_events}, frozenset({"l"}), 1.0, {"k": "a"}, RULE.text)

values = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([0.5, "s", True]))


@st.composite
def envs(draw: st.DrawFn) -> Env:
    def event(kind: str, t: int) -> Event:
        attrs = {name: draw(values) for name in ("x", "k") if draw(st.booleans())}
        return Event(kind, t, {k: v for k, v in attrs.items() if v is not None})

    items = [event("B", 2 + n) for n in range(draw(st.integers(0, 3)))]
    bindings = {"a": event("A", draw(st.integers(0, 4))), "l": items}
    return Env(bindings, now=draw(st.integers(0, 10)), current=items)


leaves = st.one_of(
    values.map(E.Constant),
    st.sampled_from(
        [
            E.Attr("a", "x"),
            E.Attr("a", "event_time"),
            E.Name("open"),
            E.Name("k"),
            E.Duration(2, "s", 2.0),
            E.Aggregate("count", "l", None),
            E.Aggregate("sum", "l", "x"),
            E.Aggregate("max", "l", "x"),
            E.Aggregate("count", E.CURRENT, None),
        ]
    ),
)


def _tree(children: st.SearchStrategy[E.Expr]) -> st.SearchStrategy[E.Expr]:
    return st.one_of(
        st.builds(E.Binary, st.sampled_from(["+", "-", "*", "/", "%"]), children, children),
        st.builds(E.Compare, st.sampled_from(["=", "!=", "<", ">="]), children, children),
        st.builds(E.conjunction, children, children),
        st.builds(E.disjunction, children, children),
        st.builds(E.Unary, st.sampled_from(["not", "-"]), children),
    )


exprs = st.recursive(leaves, _tree, max_leaves=6)
quantified = st.builds(
    E.Quantified,
    st.sampled_from(["all", "any", "at least", "at most", "exactly"]),
    st.builds(E.Compare, st.sampled_from(["<", ">="]), st.just(E.Attr("l", "x")), exprs),
    st.integers(0, 2),
).map(lambda q: q if q.quantifier not in ("all", "any") else E.Quantified(q.quantifier, q.body))


def _outcome(run):
    try:
        return "value", run()
    except kleene.KleeneError as error:
        return "error", f"{type(error).__name__}: {error}"


@given(expr=st.one_of(exprs, quantified), env=envs())
def test_compiled_values_are_the_interpreters(expr: E.Expr, env: Env) -> None:
    scope = RuleScope(NAMES, env)
    expected = _outcome(lambda: evaluate(expr, scope))
    assert _outcome(lambda: compile_value(expr, NAMES)(env)) == expected
    if expected[0] == "value":
        assert compile_condition(expr, NAMES)(env) is (expected[1] is True)
        assert holds(expr, scope) is (expected[1] is True)


def test_time_events_and_partition_attributes() -> None:
    env = Env({"a": Event("A", 3, {"k": 7}), "l": []}, now=6)
    assert compile_value(E.Name("open"), NAMES)(env) is True  # 3 <= 6 < 8
    assert compile_value(E.Name("open"), NAMES)(Env(env.bindings, now=8)) is False
    assert compile_value(E.Name("k"), NAMES)(env) == 7


@pytest.mark.parametrize(
    ("condition", "emitted"),
    [
        ("a.x > 1", []),
        ("not (a.x > 1)", []),  # unknown, as SQL has it: not unknown is unknown
        ("a.x > 1 or a.y == 2", [2]),
        ("not (a.x > 1) or a.y == 2", [2]),
    ],
)
def test_a_missing_value_makes_a_condition_unknown(condition: str, emitted: list[int]) -> None:
    rule = f"FROM A AS a MATCH all(a.filter({condition})) EMIT Event X(a.y)"
    found = kleene.lead.run(rule, [{"type": "A", "ts": 1, "y": 2}])
    assert [e.attrs["y"] for e in found] == emitted


def test_a_condition_that_is_no_truth_value_is_an_error() -> None:
    rule = "FROM A AS a MATCH all(a.filter(a.x and a.y > 0)) EMIT Event X()"
    with pytest.raises(kleene.EventError, match=re.escape("a.x is 3, but a condition must")):
        kleene.lead.run(rule, [{"type": "A", "ts": 1, "x": 3, "y": 1}])


def test_every_expression_of_a_rule_is_one_tree() -> None:
    """A rule's conditions, aggregates and quantifiers are nodes of the shared tree: the
    LEAD AST holds no expression class of its own."""
    nodes = [
        node
        for check in (RULE.time_events[0].start, RULE.time_events[0].end)
        for node in E.walk(check)
    ]
    assert {type(n).__module__ for n in nodes} == {"kleene.language.expr"}
    assert not any(
        isinstance(obj, type)
        and obj.__module__ == L.__name__
        and name in {"Value", "Attr", "Call", "Unary", "Binary", "Compare", "BoolOp"}
        for name, obj in vars(L).items()
    )
