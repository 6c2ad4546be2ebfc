"""The Python builder makes exactly the AST the parser makes."""

import pytest

import kleene
from kleene.language.sase import builder as b


def test_query_3_built_in_python():
    a, last = b.var("a"), b.var("b")
    built = b.pattern(
        b.seq(b.event("Stock+", "a"), b.event("Stock", "b")),
        where=[
            b.equiv("symbol"),
            a[1].volume > 1000,
            a[b.i].price > b.avg(a[: b.i - 1].price),
            last.volume < 0.8 * a[b.last].volume,
        ],
        strategy="skip_till_next_match",
        within=(1, "hour"),
    )
    assert built == kleene.parse(
        """PATTERN SEQ(Stock+ a[], Stock b)
           WHERE skip_till_next_match {
               [symbol] and a[1].volume > 1000 and a[i].price > avg(a[..i-1].price)
               and b.volume < 0.8 * a[a.len].volume }
           WITHIN 1 hour"""
    )


def test_structure_builders():
    built = b.pattern(
        b.and_(
            b.seq(b.event("A", "a"), b.not_(b.event("X", "x")), b.event("B", "b")),
            b.or_(b.event(["C", "D"], "c"), b.event("E", "e", "{2,3}")),
        ),
        within=5,
    )
    assert built == kleene.parse(
        "PATTERN AND(SEQ(A a, NOT(X x), B b), OR((C|D) c, E{2,3} e[])) WITHIN 5"
    )


def test_operators():
    a, c = b.var("a"), b.var("c")
    built = b.pattern(
        b.seq(b.event("A", "a"), b.event("C*", "c")),
        where=((a.x + 1) * 2 % 3 - a.y / 2 >= -a.z) & ~(a.s != "x") & (b.length("c") <= 3)
        | (b.count(c[:]) == 0)
        & (b.call("abs", a.x) > b.sum_(c[:].x))
        & (b.min_(c[: b.i].x) < b.max_(c[: b.i - 2].x))
        & (c[b.i].x > c[b.i - 1].x)
        & (c[b.last - 1].x > 0)
        & (a.attr("len") == 1),
    )
    text = (
        "PATTERN SEQ(A a, C* c[]) WHERE (a.x + 1) * 2 % 3 - a.y / 2 >= -a.z "
        "and not a.s != 'x' and c.len <= 3 or count(c[]) = 0 and abs(a.x) > sum(c[].x) "
        "and min(c[..i].x) < max(c[..i-2].x) and c[i].x > c[i-1].x and c[c.len-1].x > 0 "
        "and a.`len` = 1"
    )
    assert built == kleene.parse(text)


def test_negative_numbers_stay_literals():
    assert (-b.lit(3)).node == kleene.parse("PATTERN SEQ(A a) WHERE a.x > -3").where.right


def test_predicates_refuse_python_truth():
    a = b.var("a")
    with pytest.raises(TypeError, match="combine predicates with &"):
        _ = (a.x > 1) and (a.y > 2)


def test_unknown_unit():
    with pytest.raises(ValueError, match="unknown time unit"):
        b.pattern(b.event("A", "a"), within=(3, "fortnights"))
