"""Reading MATCH_RECOGNIZE: every clause into the AST, printing back to text that reads to
an equal AST, and errors with a caret."""

import pytest
from hypothesis import given

from kleene.compiler.functions import known_functions
from kleene.compiler.row_pattern import check_clause
from kleene.errors import PatternError, PatternSyntaxError
from kleene.language import expr as E
from kleene.language.sql import ast as Q
from kleene.language.sql.printer import clause_text, pattern_text
from kleene.language.sql.reader import read
from kleene.testing.strategies import row_patterns

TRINO_V_SHAPE = """
MATCH_RECOGNIZE(
     PARTITION BY custkey
     ORDER BY orderdate
     MEASURES
              A.totalprice AS starting_price,
              LAST(B.totalprice) AS bottom_price,
              LAST(U.totalprice) AS top_price
     ONE ROW PER MATCH
     AFTER MATCH SKIP PAST LAST ROW
     PATTERN (A B+ C+ D+)
     SUBSET U = (C, D)
     DEFINE
              B AS totalprice < PREV(totalprice),
              C AS totalprice > PREV(totalprice) AND totalprice <= A.totalprice,
              D AS totalprice > PREV(totalprice)
     )"""


def test_the_clause_reads_into_its_parts():
    clause = read(TRINO_V_SHAPE)
    assert clause.partition_by == ("custkey",)
    assert clause.order_by == (Q.SortKey("orderdate"),)
    assert [m.name for m in clause.measures] == ["starting_price", "bottom_price", "top_price"]
    assert clause.measures[1].expr == E.Navigation("last", E.Attr("B", "totalprice"), 0)
    assert clause.rows == "one" and clause.skip == Q.Skip("past_last")
    assert clause.variables == ("A", "B", "C", "D")
    assert clause.subsets == (Q.Subset("U", ("C", "D")),)
    assert clause.members("U") == {"C", "D"}
    assert clause.definition("A") is None
    b = clause.definition("B")
    assert b == E.Compare(
        "<",
        E.Attr(E.UNIVERSAL, "totalprice"),
        E.Navigation("prev", E.Attr(E.UNIVERSAL, "totalprice"), 1),
    )
    check_clause(clause)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("A B", Q.Concat((Q.Label("A"), Q.Label("B")))),
        ("A | B C", Q.Alternation((Q.Label("A"), Q.Concat((Q.Label("B"), Q.Label("C")))))),
        ("A*", Q.Repeat(Q.Label("A"), 0, None)),
        ("A+?", Q.Repeat(Q.Label("A"), 1, None, False)),
        ("A??", Q.Repeat(Q.Label("A"), 0, 1, False)),
        ("A{3}", Q.Repeat(Q.Label("A"), 3, 3)),
        ("A{2,}", Q.Repeat(Q.Label("A"), 2, None)),
        ("A{,4}?", Q.Repeat(Q.Label("A"), 0, 4, False)),
        ("A{1,4}", Q.Repeat(Q.Label("A"), 1, 4)),
        ("(A B)+", Q.Repeat(Q.Concat((Q.Label("A"), Q.Label("B"))), 1, None)),
        ("^ A $", Q.Concat((Q.Anchor("^"), Q.Label("A"), Q.Anchor("$")))),
        ("A {- B -} C", Q.Concat((Q.Label("A"), Q.Exclusion(Q.Label("B")), Q.Label("C")))),
        (
            "PERMUTE(A, B | C)",
            Q.Permute((Q.Label("A"), Q.Alternation((Q.Label("B"), Q.Label("C"))))),
        ),
        ("()", Q.Concat(())),
        ("A | ()", Q.Alternation((Q.Label("A"), Q.Concat(())))),
        ('"my var" b', Q.Concat((Q.Label("my var"), Q.Label("B")))),
        ('a "a" A', Q.Concat((Q.Label("A"), Q.Label("a"), Q.Label("A")))),
    ],
)
def test_row_patterns(text, pattern):
    assert read(f"PATTERN ({text})").pattern == pattern


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FINAL LAST(A.x, 2)", E.Navigation("last", E.Attr("A", "x"), 2, final=True)),
        ("NEXT(x, 3)", E.Navigation("next", E.Attr(E.UNIVERSAL, "x"), 3)),
        (
            "PREV(FIRST(A.x), 2)",
            E.Navigation("prev", E.Navigation("first", E.Attr("A", "x"), 0), 2),
        ),
        ("count(*)", E.RowAggregate("count", None)),
        ("count(B.*)", E.RowAggregate("count", None, "B")),
        ("FINAL count()", E.RowAggregate("count", None, final=True)),
        ("s LIKE 'a%'", E.Call("like", (E.Attr(E.UNIVERSAL, "s"), E.Constant("a%")))),
        ("INTERVAL '90' seconds", E.Duration(90, "SECOND", 90.0)),
        ("INTERVAL '1.5' HOUR", E.Duration(1.5, "HOUR", 5400.0)),
        (
            "s NOT LIKE 'a!%' ESCAPE '!'",
            E.Unary(
                "not",
                E.Call("like", (E.Attr(E.UNIVERSAL, "s"), E.Constant("a!%"), E.Constant("!"))),
            ),
        ),
        (
            "COALESCE(x, y, 0)",
            E.Case(
                ((E.Unary("not", E.IsNull(E.Attr(E.UNIVERSAL, "x"))), E.Attr(E.UNIVERSAL, "x")),),
                E.Case(
                    (
                        (
                            E.Unary("not", E.IsNull(E.Attr(E.UNIVERSAL, "y"))),
                            E.Attr(E.UNIVERSAL, "y"),
                        ),
                    ),
                    E.Constant(0),
                ),
            ),
        ),
        (
            "NULLIF(x, 0)",
            E.Case(
                ((E.Compare("=", E.Attr(E.UNIVERSAL, "x"), E.Constant(0)), E.Constant(None)),),
                E.Attr(E.UNIVERSAL, "x"),
            ),
        ),
        (
            "FINAL sum(B.x * 2)",
            E.RowAggregate("sum", E.Binary("*", E.Attr("B", "x"), E.Constant(2)), "B", True),
        ),
        ("avg(x)", E.RowAggregate("avg", E.Attr(E.UNIVERSAL, "x"))),
        ("CLASSIFIER()", E.Classifier()),
        ("CLASSIFIER(U)", E.Classifier("U")),
        ("MATCH_NUMBER()", E.MatchNumber()),
        ("x IS NULL", E.IsNull(E.Attr(E.UNIVERSAL, "x"))),
        ("x IS NOT NULL", E.Unary("not", E.IsNull(E.Attr(E.UNIVERSAL, "x")))),
        ("'it''s' || s", E.Binary("||", E.Constant("it's"), E.Attr(E.UNIVERSAL, "s"))),
        (
            "x BETWEEN 1 AND 3",
            E.conjunction(
                E.Compare(">=", E.Attr(E.UNIVERSAL, "x"), E.Constant(1)),
                E.Compare("<=", E.Attr(E.UNIVERSAL, "x"), E.Constant(3)),
            ),
        ),
        ("x <> 1", E.Compare("!=", E.Attr(E.UNIVERSAL, "x"), E.Constant(1))),
        (
            "CASE WHEN x > 1 THEN 'a' END",
            E.Case(((E.Compare(">", E.Attr(E.UNIVERSAL, "x"), E.Constant(1)), E.Constant("a")),)),
        ),
        (
            "CASE x WHEN 1 THEN 2 ELSE 3 END",
            E.Case(
                ((E.Compare("=", E.Attr(E.UNIVERSAL, "x"), E.Constant(1)), E.Constant(2)),),
                E.Constant(3),
            ),
        ),
        ('"Total Price" > 1', E.Compare(">", E.Attr(E.UNIVERSAL, "Total Price"), E.Constant(1))),
        # a qualified name before "=" (a "=" of SUBSET's own was once lexed there)
        ("a.x = 1", E.Compare("=", E.Attr("A", "x"), E.Constant(1))),
        ('"a".X', E.Attr("a", "X")),
        ("count(a.*)", E.RowAggregate("count", None, "A")),
        ("CLASSIFIER(u)", E.Classifier("U")),
        (
            "CAST(x AS varchar(7))",
            E.Call("cast", (E.Attr(E.UNIVERSAL, "x"), E.Constant("VARCHAR(7)"))),
        ),
        (
            "cast (x as double precision)",
            E.Call("cast", (E.Attr(E.UNIVERSAL, "x"), E.Constant("DOUBLE PRECISION"))),
        ),
    ],
)
def test_expressions(text, expected):
    clause = read(f"MEASURES {text} AS m PATTERN (A B) SUBSET U = (A)")
    assert clause.measures[0].expr == expected


def test_within_reads_flinks_time_constraint():
    clause = read("ORDER BY t PATTERN (A B) within interval '90' seconds")
    assert clause.within == Q.Within("90", "SECOND", 90.0)
    assert "WITHIN INTERVAL '90' SECOND" in clause_text(clause)
    assert read(clause_text(clause)) == clause


def test_rows_per_match_and_skips():
    assert read("ALL ROWS PER MATCH PATTERN (A)").rows == "all"
    assert read("ALL ROWS PER MATCH OMIT EMPTY MATCHES PATTERN (A)").empty == "omit"
    assert read("ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A)").empty == "unmatched"
    assert read("AFTER MATCH SKIP TO NEXT ROW PATTERN (A)").skip == Q.Skip("next_row")
    assert read("AFTER MATCH SKIP TO FIRST A PATTERN (A)").skip == Q.Skip("first", "A")
    assert read("AFTER MATCH SKIP TO A PATTERN (A)").skip == Q.Skip("last", "A")
    keys = read("ORDER BY a DESC, b ASC NULLS LAST, c NULLS FIRST PATTERN (A)").order_by
    assert keys == (Q.SortKey("a", True), Q.SortKey("b", False, False), Q.SortKey("c", False, True))
    assert [k.nulls_come_first for k in keys] == [False, False, True]


def test_printing_reads_back():
    clause = read(TRINO_V_SHAPE)
    assert read(clause_text(clause)) == clause
    other = read(
        'PARTITION BY "the key" ORDER BY t DESC NULLS LAST MEASURES FINAL count(A.*) AS n, '
        "CLASSIFIER() AS c ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO FIRST A "
        "PATTERN (^ (A | B)+? PERMUTE(C, D){2} $) "
        "DEFINE A AS \"last\" IS NOT NULL AND s || 'x' = 'y'"
    )
    assert read(clause_text(other)) == other


@given(row_patterns())
def test_any_row_pattern_prints_to_text_that_reads_back(pattern):
    text = pattern_text(pattern)
    assert read(f"PATTERN ({text})").pattern == _normal(pattern)


def _normal(node):
    """A pattern as the reader builds it: a concatenation of one item is that item."""
    match node:
        case Q.Concat(items=items) if len(items) == 1:
            return _normal(items[0])
        case Q.Concat(items=items):
            return Q.Concat(tuple(_normal(i) for i in items))
        case Q.Alternation(items=items):
            return Q.Alternation(tuple(_normal(i) for i in items))
        case Q.Permute(items=items):
            return Q.Permute(tuple(_normal(i) for i in items))
        case Q.Exclusion(body=body):
            return Q.Exclusion(_normal(body))
        case Q.Repeat(body=body):
            return Q.Repeat(_normal(body), node.min, node.max, node.greedy)
    return node


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("PATTERN (A B", "unexpected end of query", 13),
        ("PATTERN (A) DEFINE A AS x >", "expected one of an expression", 28),
        ("PATTERN (A{5,2})", "{5,2} needs its minimum at most its maximum", 11),
        ("PATTERN (A{1001})", "at most 1000", 12),
        ("PATTERN (A) DEFINE A AS sum(*) > 1", "sum(*) has no meaning", 25),
        ("PATTERN (A) DEFINE A AS sum() > 1", "sum() needs an argument", 25),
        ("PATTERN (A) DEFINE A AS FINAL PREV(x) > 1", "not PREV", 25),
        ("PATTERN (A) DEFINE A AS sum(A.x + B.y) > 1", "name different variables (A, B)", 25),
        ("PATTERN (A) DEFINE A AS x > 1, A AS x < 1", "DEFINE names 'A' twice", 32),
        ("MEASURES x AS m, y AS m PATTERN (A)", "MEASURES names 'm' twice", 18),
        ("PARTITION BY k, k PATTERN (A)", "PARTITION BY names 'k' twice", 17),
        ("PATTERN (A) SUBSET U < (A)", "SUBSET U needs '=', not '<'", 22),
        ("PATTERN (A) WITHIN INTERVAL '1' WEEK", "WITHIN INTERVAL takes MILLISECOND", 33),
        ("PATTERN (A) WITHIN INTERVAL '-1' HOUR", "needs a positive number, not '-1'", 29),
        ("PATTERN (A) DEFINE A AS t < INTERVAL '1' YEAR", "INTERVAL takes MILLISECOND", 42),
        ("PATTERN (a) DEFINE a AS x > 1, A AS x < 1", "DEFINE names 'A' twice", 32),
        ("PATERN (A)", "unexpected 'PATERN'", 1),
        ("PATTERN (A) DEFINE A AS max_by(x) > 1", "max_by takes two arguments", 25),
        ("PATTERN (A) DEFINE A AS count_if(x, y) > 1", "count_if takes one argument", 25),
        ("MEASURES MATCH_ROWTIME() AS t PATTERN (A)", "this clause has no ORDER BY", 10),
        ("ORDER BY t MEASURES MATCH_PROCTIME() AS t PATTERN (A)", "MATCH_PROCTIME()", 21),
        ("PATTERN (A) DEFINE A AS max_by(A.x, B.y) > 1", "name different variables", 25),
    ],
)
def test_syntax_errors_point_at_the_text(text, message, column):
    with pytest.raises((PatternError, PatternSyntaxError)) as raised:
        read(text)
    assert message in str(raised.value)
    assert raised.value.column == column
    assert "^" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("PATTERN (A) DEFINE B AS x > 1", "the pattern has no variable 'B'", 20),
        ("PATTERN (A) DEFINE A AS Z.x > 1", "'Z' is no pattern variable or SUBSET", 25),
        ("PATTERN (A) SUBSET A = (A)", "SUBSET A is also a pattern variable", 20),
        ("PATTERN (A) SUBSET U = (B)", "names 'B', no pattern variable", 20),
        ("PATTERN (A) DEFINE A AS FINAL LAST(x) > 1", "FINAL has no meaning in DEFINE", 25),
        ("ORDER BY t PATTERN (A) DEFINE A AS MATCH_ROWTIME() > 1", "FINAL has no meaning", 36),
        ("PATTERN (A) DEFINE A AS max_by(x, PREV(y)) > 1", "inside an aggregate", 35),
        ("PATTERN (A) DEFINE A AS nope(x) > 1", "unknown function nope", 25),
        ("PATTERN (A) DEFINE A AS CAST(x AS date) > 1", "CAST to DATE: kleene casts to", 25),
        ("PATTERN (A) DEFINE A AS CAST(x AS int(3)) > 1", "CAST to INT(3)", 25),
        ('PATTERN (a) DEFINE "a" AS x > 1', "the pattern has no variable 'a'", 20),
        ("PATTERN (A) DEFINE A AS PREV(1) > 1", "reads no column", 25),
        ("PATTERN (A B) DEFINE A AS PREV(A.x + B.x) > 1", "name different variables", 27),
        ("PATTERN (A) DEFINE A AS FIRST(PREV(x)) > 1", "FIRST cannot hold another", 31),
        ("PATTERN (A) DEFINE A AS PREV(NEXT(x)) > 1", "as a whole", 30),
        ("PATTERN (A) DEFINE A AS PREV(count(*)) > 1", "aggregate inside PREV", 30),
        ("PATTERN (A) DEFINE A AS sum(PREV(x)) > 1", "inside an aggregate", 29),
        ("AFTER MATCH SKIP TO LAST B PATTERN (A)", "no such pattern variable", 1),
        ("PATTERN (A) WITHIN INTERVAL '1' HOUR", "ORDER BY a time column first", 13),
        ("ORDER BY t DESC PATTERN (A) WITHIN INTERVAL '2' DAYS", "in ascending order", 29),
        ("MEASURES x AS k PARTITION BY k PATTERN (A)", None, 0),
        ("ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A {- B -})", "WITH UNMATCHED ROWS", 51),
    ],
)
def test_clauses_that_make_no_sense_are_refused_with_a_caret(text, message, column):
    if message is None:  # MEASURES after PARTITION BY: the clauses keep SQL's order
        with pytest.raises(PatternSyntaxError):
            read(text)
        return
    with pytest.raises(PatternError) as raised:
        check_clause(read(text), known_functions())
    assert message in str(raised.value)
    assert raised.value.column == column


def test_a_measure_named_as_a_partition_column_is_refused():
    with pytest.raises(PatternError, match="also a PARTITION BY column"):
        check_clause(read("PARTITION BY k MEASURES x AS k PATTERN (A)"))
