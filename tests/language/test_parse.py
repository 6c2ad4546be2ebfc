"""Reading queries: every form the papers write, and errors that point at the text."""

import pytest

import kleene
from kleene.errors import PatternSyntaxError
from kleene.language import expr as E
from kleene.language.sase import ast as A

SHOPLIFTING = """
PATTERN SEQ(Shelf a, ~(Register b), Exit c)
WHERE skip_till_next_match(a, b, c) {
    a.tag_id = b.tag_id
    and a.tag_id = c.tag_id
    /* equivalently, [tag_id] */
}
WITHIN 12 hours
"""

STOCK_TREND = """
PATTERN SEQ(Stock+ a[], Stock b)
WHERE skip_till_next_match(a[], b) {
    [symbol]
    and a[1].volume > 1000
    and a[i].price > avg(a[..i-1].price)
    and b.volume < 80% * a[a.len].volume
}
WITHIN 1 hour
"""


def test_shoplifting_query_reads_as_the_paper_writes_it():
    pattern = kleene.parse(SHOPLIFTING)
    assert pattern.structure == A.Seq(
        (
            A.EventVar(("Shelf",), "a"),
            A.Negation(A.EventVar(("Register",), "b")),
            A.EventVar(("Exit",), "c"),
        )
    )
    assert pattern.strategies == (A.Strategy("skip_till_next_match", ("a", "b", "c")),)
    assert pattern.within == A.Within(12, "hour")
    assert E.conjuncts(pattern.where)[1] == E.Compare(
        "=", E.Attr("a", "tag_id"), E.Attr("c", "tag_id")
    )


def test_stock_trend_query_has_kleene_references_aggregates_and_percent():
    where = E.conjuncts(kleene.parse(STOCK_TREND).where)
    assert where[0] == E.Equivalence(("symbol",))
    assert where[1].left == E.Attr("a", "volume", E.Index("abs", 1))
    assert where[2] == E.Compare(
        ">", E.Attr("a", "price", E.Index("i")), E.Aggregate("avg", "a", "price", 1)
    )
    assert where[3].right == E.Binary("*", E.Constant(0.8), E.Attr("a", "volume", E.Index("last")))


@pytest.mark.parametrize(
    ("text", "structure"),
    [
        ("SEQ(A a, B b)", A.Seq((A.EventVar(("A",), "a"), A.EventVar(("B",), "b")))),
        (
            "AND(SEQ(A a, B b), SEQ(C c, D d), E e)",
            A.And(
                (
                    A.Seq((A.EventVar(("A",), "a"), A.EventVar(("B",), "b"))),
                    A.Seq((A.EventVar(("C",), "c"), A.EventVar(("D",), "d"))),
                    A.EventVar(("E",), "e"),
                )
            ),
        ),
        (
            "or(seq(A a, B b), (C|D) c)",
            A.Or(
                (
                    A.Seq((A.EventVar(("A",), "a"), A.EventVar(("B",), "b"))),
                    A.EventVar(("C", "D"), "c"),
                )
            ),
        ),
        ("SEQ(A a, NOT(B b), C c)", None),
        ("SEQ(A a, !(B b), C c)", None),
        ("SEQ(A a, B* b[], C c)", None),
        ("SEQ(A a, B{2,4} b[], C c)", None),
        ("SEQ(A a, B{3} b[], C c)", None),
        ("SEQ(A a, B{2,} b[], C c)", None),
        ("SEQ(A a, B+ b, C c)", None),
        ("SEQ(`Stock Tick` a, `AND` b)", None),
    ],
)
def test_pattern_forms(text, structure):
    pattern = kleene.parse(f"PATTERN {text} WITHIN 5")
    if structure is not None:
        assert pattern.structure == structure
    assert kleene.parse(str(pattern)) == pattern


def test_negation_spellings_are_one_node():
    forms = [kleene.parse(f"PATTERN SEQ(A a, {neg}(B b), C c)") for neg in ("NOT", "~", "!")]
    assert forms[0] == forms[1] == forms[2]


def test_quantifiers():
    def quantifier(text):
        return kleene.parse(f"PATTERN SEQ(A a, B{text} b[])").structure.items[1].quantifier

    assert quantifier("+") == A.Quantifier(1, None)
    assert quantifier("*") == A.Quantifier(0, None)
    assert quantifier("{2,4}") == A.Quantifier(2, 4)
    assert quantifier("{3}") == A.Quantifier(3, 3)
    assert quantifier("{2,}") == A.Quantifier(2, None)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("a.x = 1", E.Compare("=", E.Attr("a", "x"), E.Constant(1))),
        ("a.x == 1", E.Compare("=", E.Attr("a", "x"), E.Constant(1))),
        ("a.x <> 1", E.Compare("!=", E.Attr("a", "x"), E.Constant(1))),
        ("a.x != -1.5", E.Compare("!=", E.Attr("a", "x"), E.Constant(-1.5))),
        ("a.s = 'it\\'s'", E.Compare("=", E.Attr("a", "s"), E.Constant("it's"))),
        ('a.s = "tab\\t"', E.Compare("=", E.Attr("a", "s"), E.Constant("tab\t"))),
        ("a.flag = TRUE", E.Compare("=", E.Attr("a", "flag"), E.Constant(True))),
        ("a.v = null", E.Compare("=", E.Attr("a", "v"), E.Constant(None))),
        ("a.price % 500 == 0", None),
        ("a.x + 2 * c[i].y > 3", None),
        ("not a.x > 1 and c.len >= 2 or a.y < 0", None),
        ("c[b.len].x > 0", None),
        ("c[i-2].x > c[c.len - 1].x", None),
        ("sum(c[].x) > count(c[]) and min(c[..i].x) < max(c[..i-2].y)", None),
        ("corr(a.history, c[1].history) > 0.7", None),
        ("[symbol] and [a1, a2]", None),
        ("a.`org:resource` = 'x'", E.Compare("=", E.Attr("a", "org:resource"), E.Constant("x"))),
        ("a.`len` > 1", E.Compare(">", E.Attr("a", "len"), E.Constant(1))),
    ],
)
def test_predicates(where, expected):
    text = f"PATTERN SEQ(A a, C+ c[]) WHERE {where}"
    if "b.len" in where:
        with pytest.raises(kleene.PatternError, match=r"c\[c\.len\]"):
            kleene.parse(text)
        return
    pattern = kleene.parse(text)
    if expected is not None:
        assert pattern.where == expected
    assert kleene.parse(str(pattern)) == pattern


def test_where_forms_and_keywords_ignore_case():
    plain = kleene.parse("pattern seq(A a) where a.x > 1 within 1 HOUR")
    braced = kleene.parse("PATTERN SEQ(A a) WHERE skip_till_any_match { a.x > 1 } WITHIN 1 hour")
    listed = kleene.parse("PATTERN SEQ(A a) WHERE SKIP_TILL_ANY_MATCH(a) { a.x > 1 } WITHIN 1 h")
    assert plain.where == braced.where == listed.where
    assert plain.strategies == ()
    assert braced.strategies == (A.Strategy("skip_till_any_match"),)
    assert listed.strategies == (A.Strategy("skip_till_any_match", ("a",)),)
    assert plain.within == braced.within == listed.within == A.Within(1, "hour")
    bare = kleene.parse("PATTERN SEQ(A a) WHERE strict_contiguity")
    assert bare.strategies == (A.Strategy("strict_contiguity"),)
    assert bare.where is None


@pytest.mark.parametrize(
    ("within", "expected"),
    [
        ("500", A.Within(500)),
        ("1.5 s", A.Within(1.5, "s")),
        ("250 ms", A.Within(250, "ms")),
        ("10 min", A.Within(10, "min")),
        ("2 hours", A.Within(2, "hour")),
        ("15 days", A.Within(15, "day")),
        ("1hour", A.Within(1, "hour")),
    ],
)
def test_windows(within, expected):
    assert kleene.parse(f"PATTERN SEQ(A a) WITHIN {within}").within == expected


def test_comments_are_ignored():
    text = "-- a comment\nPATTERN SEQ(A a) # another\n/* and\na block */ WHERE a.x > 1"
    assert kleene.parse(text) == kleene.parse("PATTERN SEQ(A a) WHERE a.x > 1")


def test_positions_are_kept():
    pattern = kleene.parse("PATTERN SEQ(A a,\n  B b)\nWHERE b.x > 1")
    b = pattern.structure.items[1]
    assert (b.span.line, b.span.column) == (2, 3)
    assert (pattern.where.span.line, pattern.where.span.column) == (3, 7)


def test_in_is_a_watch_list_of_equalities_with_sql_nulls():
    """`x IN (a, b)` is `x = a or x = b`; `x NOT IN (...)` its negation; a null value, or no
    equal item and a null one, is unknown (no match either way)."""
    query = kleene.parse("PATTERN SEQ(A a) WHERE a.sym IN ('IBM', 'MSFT') AND a.x NOT IN (1, 2)")
    same = kleene.parse(
        "PATTERN SEQ(A a) WHERE (a.sym = 'IBM' OR a.sym = 'MSFT') AND NOT (a.x = 1 OR a.x = 2)"
    )
    assert query.where == same.where
    rows = [("IBM", 3), ("MSFT", 1), ("X", 3), (None, 3), ("IBM", None)]
    events = [kleene.Event("A", t, {"sym": s, "x": x}, id=t) for t, (s, x) in enumerate(rows)]
    for plan in ("reference", "nfa", "lazy_chain", "afa"):
        assert [m.ids()["a"] for m in kleene.match(query, events, plan=plan)] == [(0,)]
    with_null = "PATTERN SEQ(A a) WHERE a.x {} (1, null)"
    ones = [kleene.Event("A", 0, {"x": 1}, id=0), kleene.Event("A", 1, {"x": 3}, id=1)]
    assert [m.ids()["a"] for m in kleene.match(with_null.format("IN"), ones)] == [(0,)]
    assert kleene.match(with_null.format("NOT IN"), ones) == []
    assert kleene.match("PATTERN SEQ(A a) WHERE a.in = 1", [kleene.Event("A", 0, {"in": 1})])
    with pytest.raises(PatternSyntaxError, match="column 32: unexpected '\\)'"):
        kleene.parse("PATTERN SEQ(A a) WHERE a.x IN ()")
