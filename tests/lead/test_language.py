"""LEAD rules as text: the grammar reads the paper's Figure 2, the printer round-trips, and
mistakes are errors with line, column and caret."""

from pathlib import Path

import pytest

import kleene
from kleene.compiler.pipeline import language_of
from kleene.errors import PatternError, PatternSyntaxError
from kleene.language import expr as E
from kleene.language.lead import ast as L
from kleene.language.lead.printer import rule_text
from kleene.language.lead.reader import read_rule

FIGURE_2 = (Path(__file__).parent / "figure2.lead").read_text()


def test_figure_2_reads_as_printed_in_the_paper() -> None:
    rule = kleene.lead.parse(FIGURE_2)
    assert [s.alias for s in rule.streams] == ["_in", "_ac", "_ab", "_sh"]
    assert [t.name for t in rule.time_events] == ["tc"]
    assert rule.event_types[0].fields[0] == L.Field("BOOLEAN", "leaving", E.Constant(False))
    assert [a.attr for a in rule.partition] == ["uid", "gid"]
    sequence = rule.pattern
    assert isinstance(sequence, L.FollowedBy)
    named = sequence.items[1]
    assert isinstance(named, L.Named) and named.name == "ls"
    sub = named.pattern
    assert isinstance(sub, L.Subcontext)
    assert (sub.item, sub.list, sub.range) == ("ac", "acs", (3, 5))
    assert isinstance(sub.branch, L.Negation) and sub.branch.within is not None
    assert isinstance(rule.emit, L.CheckBlock) and rule.emit.strategy == "first"
    assert [type(c.then).__name__ for c in rule.emit.checks] == ["tuple", "CheckBlock", "tuple"]


def test_figure_2_with_the_keywords_the_extraction_lost() -> None:
    """The paper's text speaks of EMIT and CHECK FIRST; both forms read to one rule."""
    explicit = FIGURE_2.replace(
        "WHERE (count(acs)>=5", "EMIT CHECK FIRST WHERE (count(acs)>=5", 1
    ).replace("WHERE (count(acs)>=3)", "WHERE (count(acs)>=3) CHECK FIRST")
    assert kleene.lead.parse(explicit) == kleene.lead.parse(FIGURE_2)


@pytest.mark.parametrize(
    "text",
    [
        FIGURE_2,
        "FROM A AS a, B AS b MATCH a Followed By (b or a) and not b Followed By a "
        "EMIT Event X(a.x AS y, -a.z * (2 + a.w) AS z)",
        "FROM A AS a MATCH every(Wait(last(a), 5 min)) EMIT Event X(a.x)",
        "FROM A AS a, B AS b MATCH all(a Followed By b Within 1 s From a) consume(a) "
        "EMIT Event X(b.x)",
        "FROM A AS a MATCH collect(a.filter(a.x > 1)) accept(a.x < 9) terminate(count() >= 3) "
        "invalidate(a.x = 0) AS xs PARTITION BY a.k "
        "EMIT CHECK ANY WHERE (ALL(xs.x > 2)) EMIT Event Hi(k) "
        "WHERE (EXACTLY 2 (xs.x == 3) or AT MOST 1 (xs.x != 3)) EMIT Event Lo(k), Event Z(k) END",
        "FROM A AS a, B AS b ENRICH a(twice = a.x * 2) MATCH adj(a Followed By b) "
        "EMIT Event X(a.twice)",
        "FROM A AS a MATCH a PARTITION BY a.k, 90 min EMIT Event X(k)",
        "FROM A AS a MATCH a PARTITION BY 100 events EMIT Event X()",
    ],
)
def test_printing_round_trips(text: str) -> None:
    rule = kleene.lead.parse(text)
    printed = rule_text(rule)
    assert read_rule(printed) == rule
    assert rule_text(read_rule(printed)) == printed


def test_a_rule_is_told_from_a_sase_query() -> None:
    assert language_of("  -- note\n from A as a match a emit event X()").name == "lead"
    assert language_of("PATTERN SEQ(A a, B b)").name == "sase"
    assert kleene.compile("FROM A AS a MATCH a EMIT Event X()").name == "petri"


def _error(text: str) -> PatternError:
    with pytest.raises(PatternError) as caught:
        kleene.lead.parse(text)
    return caught.value


def test_an_undeclared_alias_points_at_it() -> None:
    error = _error("FROM A AS a\nMATCH a Followed By bb\nEMIT Event X()")
    assert (error.line, error.column, error.width) == (2, 21, 2)
    assert "unknown stream alias 'bb'" in str(error) and "^^" in str(error)


def test_a_number_beyond_a_float_points_at_it() -> None:
    text = "FROM A AS a MATCH a EMIT CHECK FIRST WHERE (a.x > 1e999) EMIT Event X() END"
    error = _error(text)
    assert "1e999 is beyond the range of a number" in str(error)
    assert (error.column, error.width) == (text.index("1e999") + 1, 5)


def test_a_quantifier_over_a_non_list_points_at_it() -> None:
    error = _error(
        "FROM A AS a MATCH collect(a) terminate(count() == 2) AS xs "
        "EMIT CHECK FIRST WHERE (ANY(a.x > 1)) EMIT Event X() END"
    )
    assert "a quantifier ranges over one list; this condition reads no list" in str(error)
    assert error.column == 84


def test_a_list_read_as_an_event_is_refused() -> None:
    error = _error("FROM A AS a MATCH collect(a) terminate(count() == 2) AS xs EMIT Event X(xs.x)")
    assert "xs is a list" in str(error)


def test_a_policy_on_an_operator_that_cannot_take_it() -> None:
    with pytest.raises(PatternError, match=r"adj\(p\) takes a sequence") as caught:
        kleene.compile("FROM A AS a MATCH adj(a) EMIT Event X()")
    assert caught.value.column == 19
    with pytest.raises(PatternError, match="do not nest"):
        kleene.lead.parse("FROM A AS a MATCH every(all(a)) EMIT Event X()")
    with pytest.raises(PatternError, match="last"):
        kleene.compile("FROM A AS a MATCH last(a) EMIT Event X()")


def test_an_action_argument_naming_an_unknown_attribute() -> None:
    with pytest.raises(PatternSyntaxError, match="expected one of ',', DEFINE, ENRICH, MATCH"):
        kleene.lead.parse("FROM A AS a PARTITION BY a.k MATCH a EMIT Event X(user)")
    error = _error("FROM A AS a MATCH a PARTITION BY a.k EMIT Event X(user)")
    assert "unknown attribute or name 'user'" in str(error)
    assert (error.line, error.column) == (1, 51)
    error = _error("FROM A AS a DEFINE EventType Y(INT n) MATCH a EMIT Event Y(a.n AS m)")
    assert "event type Y has no attribute 'm'" in str(error)


def test_syntax_errors_have_a_caret() -> None:
    with pytest.raises(PatternSyntaxError) as caught:
        kleene.lead.parse("FROM A AS a MATCH a Followed EMIT Event X()")
    assert caught.value.column == 30 and "expected" in str(caught.value)
    with pytest.raises(PatternError, match="unknown time unit"):
        kleene.lead.parse("FROM A AS a MATCH not a Within 3 fortnights EMIT Event X()")


@pytest.mark.parametrize(
    ("rule", "column", "said"),
    [
        ("all(a Followed By b Within 10) PARTITION BY a.k", 56, ""),
        ("all(a Followed By b) Within 10 PARTITION BY a.k", 58, "; PARTITION is no unit"),
    ],
)
def test_a_window_without_its_unit_says_so(rule: str, column: int, said: str) -> None:
    """The parser would take the next word for the unit and stumble after it."""
    with pytest.raises(PatternError, match="Within needs a time unit after its number") as caught:
        kleene.compile(f"FROM A AS a, B AS b MATCH {rule} EMIT Event M(a.k AS k)")
    assert caught.value.column == column
    assert str(caught.value).splitlines()[0].endswith(said or "week)")


def test_unbounded_constructs_are_refused() -> None:
    with pytest.raises(PatternError, match="negation needs a bound"):
        kleene.compile("FROM A AS a, B AS b MATCH not b EMIT Event X()")
    with pytest.raises(PatternError, match="terminate"):
        kleene.compile("FROM A AS a MATCH collect(a) AS xs EMIT Event X(count(xs) AS n)")


def test_partition_frames_are_checked() -> None:
    with pytest.raises(PatternError, match="or events, for a count frame"):
        kleene.lead.parse("FROM A AS a MATCH a PARTITION BY 3 fortnights EMIT Event X()")
    with pytest.raises(PatternError, match="one frame"):
        kleene.lead.parse("FROM A AS a MATCH a PARTITION BY 3 s, 4 events EMIT Event X()")
    with pytest.raises(PatternError, match="whole number of events"):
        kleene.lead.parse("FROM A AS a MATCH a PARTITION BY 0 events EMIT Event X()")
