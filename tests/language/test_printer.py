"""Printing: canonical text that parses back to an equal AST, for any AST."""

from hypothesis import given

import kleene
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.sase.printer import expr_text, to_text
from kleene.language.sase.reader import read
from kleene.testing.strategies import asts


@given(asts())
def test_printed_text_parses_back_to_an_equal_ast(pattern):
    assert read(to_text(pattern)) == pattern


def test_canonical_text():
    pattern = kleene.parse(
        "pattern seq(Stock+ a[], ~(Stock b), Stock c) where skip_till_next_match(a, c) "
        "{[symbol] and a[i].price>a[i-1].price} within 90 min"
    )
    assert str(pattern) == (
        "PATTERN SEQ(Stock+ a[], NOT(Stock b), Stock c)\n"
        "WHERE skip_till_next_match(a[], c) { [symbol] and a[i].price > a[i-1].price }\n"
        "WITHIN 90 min"
    )


def test_long_predicates_print_one_condition_a_line():
    text = str(
        kleene.parse(
            "PATTERN SEQ(Stock+ a[], Stock b) WHERE skip_till_next_match { [symbol] and "
            "a[1].volume > 1000 and a[i].price > avg(a[..i-1].price) and "
            "b.volume < 80% * a[a.len].volume } WITHIN 1 hour"
        )
    )
    assert text.splitlines()[1:6] == [
        "WHERE skip_till_next_match {",
        "    [symbol]",
        "    and a[1].volume > 1000",
        "    and a[i].price > avg(a[..i-1].price)",
        "    and b.volume < 0.8 * a[a.len].volume",
    ]


def test_parentheses_only_where_needed():
    def show(where):
        return expr_text(kleene.parse(f"PATTERN SEQ(A a, B b) WHERE {where}").where)

    assert show("(a.x + 1) * 2 > b.x") == "(a.x + 1) * 2 > b.x"
    assert show("a.x - (b.x - 1) > 0") == "a.x - (b.x - 1) > 0"
    assert show("((a.x > 1)) and ((b.x > 1))") == "a.x > 1 and b.x > 1"
    assert show("(a.x > 1 or b.x > 1) and a.y = 2") == "(a.x > 1 or b.x > 1) and a.y = 2"
    assert show("not (a.x > 1 and b.x > 1)") == "not (a.x > 1 and b.x > 1)"
    assert show("-(-a.x) < 0") == "-(-a.x) < 0"
    assert show("a.x - -2 > 0") == "a.x - -2 > 0"


def test_names_that_need_quoting():
    pattern = A.Pattern(
        A.Seq((A.EventVar(("Stock Tick",), "a"), A.EventVar(("and",), "b"))),
        E.Compare("=", E.Attr("a", "org:resource"), E.Attr("b", "len")),
    )
    assert to_text(pattern) == (
        "PATTERN SEQ(`Stock Tick` a, `and` b)\nWHERE a.`org:resource` = b.`len`"
    )
    assert read(to_text(pattern)) == pattern
