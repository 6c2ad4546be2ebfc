"""Malformed queries: the error names the place (line, column, caret) and what was expected."""

import pytest

import kleene


def error(text, kind=kleene.PatternSyntaxError):
    with pytest.raises(kind) as info:
        kleene.parse(text)
    return info.value


def test_missing_operand_at_end():
    e = error("PATTERN SEQ(A a, B b)\nWHERE a.x >")
    assert (e.line, e.column) == (2, 12)
    assert "unexpected end of query" in e.message
    assert "an expression" in e.expected
    assert str(e).endswith("  2 | WHERE a.x >\n    |            ^")


def test_missing_comma_in_pattern():
    e = error("PATTERN SEQ(A a B b)")
    assert (e.line, e.column) == (1, 17)
    assert "unexpected 'B'" in e.message
    assert "','" in e.expected and "')'" in e.expected


def test_misspelt_keyword_gets_a_hint():
    e = error("PATERN SEQ(A a)")
    assert (e.line, e.column, e.width) == (1, 1, 6)
    assert "expected PATTERN" in e.message
    e = error("PATTERN SEQ(A a) WHERE skip_till_nxt_match(a) { a.x > 1 }")
    assert "did you mean skip_till_next_match?" in e.message
    assert e.column == 47


def test_unexpected_character():
    e = error("PATTERN SEQ(A a) WHERE a.x > 1 @")
    assert (e.line, e.column) == (1, 32)
    assert "unexpected '@'" in e.message


def test_empty_query():
    e = error("")
    assert "unexpected end of query" in e.message
    assert "PATTERN" in e.expected


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("PATTERN SEQ(A a) WHERE price > 1", 24, "'price' alone is not a value"),
        ("PATTERN SEQ(A a) WHERE avg(a.x) > 1", 24, "avg aggregates a Kleene variable"),
        ("PATTERN SEQ(A+ a[]) WHERE avg(a[i].x) > 1", 27, "avg aggregates a Kleene variable"),
        ("PATTERN SEQ(A a[])", 13, "marks a Kleene variable"),
        ("PATTERN SEQ(A+ a[]) WHERE a[i+1].x > 1", 27, "looks ahead"),
        ("PATTERN SEQ(A+ a[]) WHERE a[0].x > 1", 27, "count from 1"),
        ("PATTERN SEQ(A+ a[]) WHERE a[j].x > 1", 27, "an index is i"),
        ("PATTERN SEQ(A+ a[]) WHERE a[].x > 1", 27, "can only stand inside an aggregate"),
        ("PATTERN SEQ(A a) WITHIN 5 fortnights", 27, "unknown time unit 'fortnights'"),
        ("PATTERN SEQ(A a) WITHIN 0", 25, "longer than 0"),
        ("PATTERN SEQ(A{3,2} a[])", 14, "needs 3 <= 2"),
        ("PATTERN SEQ((A|A) a)", 13, "listed twice"),
    ],
)
def test_reading_errors_point_at_the_text(text, column, message):
    e = error(text, kleene.PatternError)
    assert e.line == 1
    assert e.column == column
    assert message in e.message
    assert "^" in str(e)


@pytest.mark.parametrize(
    ("text", "fragment", "message"),
    [
        ("PATTERN SEQ(A a) WHERE b.x > 1", "b.x", "unknown variable b"),
        ("PATTERN SEQ(A abc) WHERE abd.x > 1", "abd.x", "did you mean abc?"),
        ("PATTERN SEQ(A a) WHERE a[i].x > 1", "a[i].x", "binds a single event"),
        ("PATTERN SEQ(A a) WHERE a.len > 1", "a.len", "binds a single event"),
        ("PATTERN SEQ(A a) WHERE sum(a[].x) > 1", "sum(a[].x)", "binds a single event"),
        (
            "PATTERN AND(A+ a[], B+ b[], C c) WHERE a.x < b.x or c.x = 1",
            "a.x < b.x or c.x = 1",
            "every combination of events of a and b",
        ),
        ("PATTERN SEQ(A a) WHERE prev(a.x) < a.x", "prev(a.x)", "binds a single event"),
        ("PATTERN SEQ(A+ a[]) WHERE prev(a[1].x) < 1", "prev(a[1].x)", "prev takes an attribute"),
        ("PATTERN SES({A a, B a})", "B a", "declared twice"),
        ("PATTERN SES({a}, {(A|B)})", "(A|B)", "needs a name"),
        ("PATTERN SEQ((A|_) a)", "(A|_) a", "already means any type"),
        (
            "PATTERN SEQ(A+ a[], B+ b[]) WHERE a[i].x > b[i].x",
            "b[i].x",
            "i already ranges over a[]",
        ),
        (
            "PATTERN SEQ(A a, NOT(B b), NOT(C c), D d) WHERE b.x = c.x",
            "c.x",
            "two negated variables",
        ),
        ("PATTERN SEQ(A a, B b) WHERE a.x > 1 or [k]", "[k]", "must stand on its own"),
        ("PATTERN SEQ(A a, B a)", "B a", "declared twice"),
        ("PATTERN SEQ(A a, NOT(B b))", "NOT(B b)", "needs WITHIN"),
        ("PATTERN SEQ(NOT(B b), A a)", "NOT(B b)", "needs WITHIN"),
        ("PATTERN AND(A a, NOT(B b))", "NOT(B b)", "needs WITHIN"),
        ("PATTERN SEQ(A a, B* c[], NOT(D d))", "NOT(D d)", "needs WITHIN"),
        ("PATTERN OR(A a, NOT(B b)) WITHIN 5", "NOT(B b)", "inside SEQ(...) or AND(...)"),
        ("PATTERN NOT(B b) WITHIN 5", "NOT(B b)", "inside SEQ(...) or AND(...)"),
        ("PATTERN SEQ(A a, NOT(B+ b[]), C c)", "NOT(B+ b[])", "not a Kleene variable"),
        ("PATTERN SEQ(NOT(A a), NOT(B b)) WITHIN 5", "SEQ(NOT(A a), NOT(B b))", "not negated"),
        ("PATTERN OR(A a, B* b[])", "B* b[]", "OR branch must match"),
        ("PATTERN SEQ(A i)", "A i", "cannot name a variable"),
        ("PATTERN SEQ(A a) WHERE a.x + 1", "a.x + 1", "not a condition"),
        ("PATTERN SEQ(A a) WHERE 5", "5", "is a number, not a condition"),
        ("PATTERN SEQ(A a) WHERE skip_till_next_match(b) { a.x > 1 }", None, "unknown variable b"),
        # what kleene adds for Flink and CORE users
        ("PATTERN SEQ(A a, B b GREEDY)", "GREEDY", "shapes the loop of a Kleene variable"),
        ("PATTERN SEQ(A a, B b UNTIL (b.x > 1))", "UNTIL (b.x > 1)", "and b binds one event"),
        ("PATTERN SEQ(A a, B*? b[])", "B*? b[]", "may bind no event already"),
        ("PATTERN SEQ(A a, NOT(B? b), C c)", "NOT(B? b)", "absent already"),
        ("PATTERN SEQ(B+ b[] UNTIL (c.x > 1), C c)", "c.x", "c is not bound before b"),
        # a negated variable binds nothing, however deep in the SEQ before the loop
        (
            "PATTERN SEQ(A a, SEQ(D d, NOT(N n)), E e, B+ b[] UNTIL (b.x > n.x), C c) WITHIN 5",
            "n.x",
            "n is not bound before b",
        ),
        ("PATTERN SEQ(A a, B+ b[] UNTIL (b.len > 1))", "b.len", "not known while the loop runs"),
        ("PATTERN SEQ(A a, B+ b[] UNTIL (sum(b[].x) > 1))", "sum(b[].x)", "not taken yet"),
        ("PATTERN SEQ(A+ a[], B+ b[] UNTIL (a[i].x > 1))", "a[i].x", "not the loop"),
        ("PATTERN SEQ(A a, B+ b[] UNTIL (b.x + 1))", "b.x + 1", "not a condition"),
        ("PATTERN SEQ(A a, B b) WITHIN 3 EVENTS AND 4 EVENTS", None, "two count windows"),
        ("PATTERN SEQ(A a, B b) WITHIN 3 EVENTS EXCLUSIVE", "3 EVENTS EXCLUSIVE", "time windows"),
        ("PATTERN SEQ(A a, B b) WITHIN 2.5 EVENTS", "2.5", "whole number of events"),
        ("PATTERN SEQ(A a, B b) WITHIN 3 eons", "eons", "or EVENTS for a count"),
        ("PATTERN SEQ(A a, NOT(C c)) WITHIN 3 EVENTS", "NOT(C c)", "needs WITHIN a time"),
        (
            "PATTERN SEQ(A a, B b, C c) WHERE strict_contiguity(a, c)",
            "strict_contiguity(a, c)",
            "covers no edge",
        ),
        (
            "PATTERN SEQ(A a, B b, C c) WHERE strict_contiguity(b)",
            "strict_contiguity(b)",
            "b binds one event, so it has no loop",
        ),
        (
            "PATTERN SEQ(A a, B+ b[], C c) WHERE strict_contiguity(a, b) skip_till_any_match(b, a)",
            "skip_till_any_match(b, a)",
            "the edge from a to b is covered by both",
        ),
        (
            "PATTERN SEQ(A a, B+ b[]) WHERE strict_contiguity(b) skip_till_any_match(b)",
            "skip_till_any_match(b)",
            "the loop of b[] is covered by both",
        ),
        (
            "PATTERN SEQ(A a, B b) WHERE strict_contiguity skip_till_any_match",
            "skip_till_any_match",
            "two clauses set the whole query's strategy",
        ),
        ("PATTERN SEQ(A a, B b) WHERE skip_till_next_match(a, c)", None, "unknown variable c"),
        (
            "PATTERN SEQ(NOT FOLLOWED(C c), B b) WITHIN 5",
            "NOT FOLLOWED(C c)",
            "needs a variable that is not optional right before it",
        ),
        (
            "PATTERN SEQ(A? a, NOT FOLLOWED(C c), B b)",
            "NOT FOLLOWED(C c)",
            "needs a variable that is not optional right before it",
        ),
        (
            "PATTERN SEQ(A a, NOT FOLLOWED(C c)) WITHIN 5",
            "NOT FOLLOWED(C c)",
            "needs an element after it",
        ),
        ("PATTERN SEQ(A a, B b) CONSUME BY SOME", "SOME", "EVENTS (an event is in one"),
        ("PATTERN SEQ(A a, B b) WITHIN 5 FREEZE x", "FREEZE x", "unknown variable x"),
        ("PATTERN SEQ(A a, NOT(C c), B b) FREEZE c", "FREEZE c", "which is negated"),
        (
            "PATTERN SEQ(A a, AND(B b, D d), C c) FREEZE d",
            "FREEZE d",
            "not an element of the pattern's SEQ",
        ),
        ("PATTERN SEQ(A a, B b) FREEZE b, b", "FREEZE b, b", "names a variable twice"),
        (
            "PATTERN SEQ(A a, B b) WHERE skip_till_next_match FREEZE b",
            "skip_till_next_match",
            "under skip_till_any_match",
        ),
        ("PATTERN SEQ(A a, B b) CONSUME BY ANY FREEZE b", "FREEZE b", "keep one"),
        (
            "PATTERN SEQ(A a, B b) AFTER MATCH SKIP PAST LAST EVENT FREEZE b",
            "FREEZE b",
            "keep one",
        ),
        (
            "PATTERN SEQ(A a, B b, NOT(C c)) WITHIN 5 FREEZE b",
            "FREEZE b",
            "FREEZE needs every match decided when it completes",
        ),
        # each of these crashed with a Python error before
        ("PATTERN SEQ(A a) WHERE a.x = " + "9" * 5000, "9" * 5000, "a number of 5000 characters"),
        ("PATTERN SEQ(A a) WITHIN " + "9" * 400 + " ms", "9" * 400, "a number of 400 characters"),
        ("PATTERN SEQ(A a) WITHIN 1e15 ms", "1e15", "a window of at most 1e+12 units"),
        ("PATTERN SEQ(A a) WHERE a.x = 1e999", "1e999", "beyond the range of a number"),
        ("PATTERN SEQ(A a) WHERE " + "not " * 198 + "a.x = 1", None, "nests more than 32 levels"),
        ("PATTERN " + "SEQ(" * 40 + "A a" + ")" * 40, None, "nests more than 32 levels"),
        ("PATTERN " + "SEQ(" * 1000 + "A a" + ")" * 1000, "(", "parentheses nest more than 100"),
    ],
)
def test_semantic_errors_point_at_the_offending_text(text, fragment, message):
    e = error(text, kleene.PatternError)
    assert message in e.message
    if fragment is not None:
        assert text[e.column - 1 : e.column - 1 + e.width] == fragment


def test_or_branches_may_share_a_variable_declared_alike():
    kleene.parse("PATTERN OR(SEQ(A a, B b, C c), SEQ(C c, D d, E e)) WITHIN 1 hour")
    e = error("PATTERN OR(SEQ(A a, C c), SEQ(D c, E e))", kleene.PatternError)
    assert "declared twice" in e.message


def test_unknown_function_is_reported_at_compile_time():
    with pytest.raises(kleene.PatternError, match="unknown function corelation") as info:
        kleene.compile("PATTERN SEQ(A a, B b) WHERE corelation(a.h, b.h) > 0.5")
    assert info.value.column == 29


def test_parentheses_inside_quotes_do_not_count():
    quoted = "'" + "(" * 150 + "\\' (" + "'"
    kleene.parse(f"PATTERN SEQ(A a) WHERE a.s = {quoted}")
