"""Cases from Flink CEP's own test suite (`NFAITCase`, `TimesRangeITCase`,
`UntilConditionITCase`, `GreedyITCase`, `TimesOrMoreITCase`, `NotPatternITCase`,
`AfterMatchSkipITCase`, `IterativeConditionsITCase`, `SameElementITCase`), each Java pattern
written as the kleene query docs/flink.md gives for it, run on every plan that takes the
query.

An event is `id:TYPE` or `id:TYPE:price`, one a time unit in the order written (or at the
time `@t` gives it); a match is the ids it binds in pattern order. Flink's conditions on the
event's name are kleene's types here.
"""

import itertools

import pytest

import kleene
from kleene.testing import plans_taking

#: (Flink's test, the query, the events, every match)
CASES = [
    (
        "testNoConditionNFA: begin(start).followedBy(end)",
        "PATTERN SEQ(_ s, _ e) WHERE relaxed_contiguity",
        "a:A b:B c:C d:D e:E",
        ["a b", "b c", "c d", "d e"],
    ),
    (
        "testAnyWithNoConditionNFA: begin(start).followedByAny(end)",
        "PATTERN SEQ(_ s, _ e)",
        "a:A b:B c:C",
        ["a b", "a c", "b c"],
    ),
    (
        "testStrictContinuityNoResults: next(end)",
        "PATTERN SEQ(A a, B b) WHERE strict_contiguity",
        "a1:A c1:C b1:B",
        [],
    ),
    (
        "testComplexBranchingAfterZeroOrMore: followedByAny(a).oneOrMore()"
        ".allowCombinations().optional(), then three followedByAny",
        "PATTERN SEQ(C c, A* a[], B b, D d, E e)",
        "c:C a1:A a2:A a3:A b:B d1:D d2:D e:E",
        [
            f"c {a}b {d} e".replace("  ", " ")
            for a in ["", "a1 ", "a2 ", "a3 ", "a1 a2 ", "a1 a3 ", "a2 a3 ", "a1 a2 a3 "]
            for d in ("d1", "d2")
        ],
    ),
    (
        "testEagerZeroOrMore: followedBy(a).oneOrMore().optional().followedBy(b)",
        "PATTERN SEQ(C c, A* a[], B b) WHERE relaxed_contiguity",
        "c:C a1:A a2:A d:D a3:A b:B",
        ["c b", "c a1 b", "c a1 a2 b", "c a1 a2 a3 b"],
    ),
    (
        "testBeginWithZeroOrMore: begin(a).oneOrMore().optional().followedBy(b)",
        "PATTERN SEQ(A* a[], B b) WHERE relaxed_contiguity",
        "a1:A a2:A a3:A b:B",
        ["b", "a1 b", "a2 b", "a3 b", "a1 a2 b", "a2 a3 b", "a1 a2 a3 b"],
    ),
    (
        "testZeroOrMoreAfterZeroOrMore: two optional allowCombinations loops",
        "PATTERN SEQ(C c, A* a[], D* d[], E e) WHERE relaxed_contiguity"
        " skip_till_any_match(c, a) skip_till_any_match(a[]) skip_till_any_match(d[])",
        "c:C a:A d1:D d2:D e:E",
        ["c e", "c a e", "c d1 e", "c a d1 e", "c d1 d2 e", "c a d1 d2 e"],
    ),
    (
        "testStrictContinuityNoResultsAfterZeroOrMore: an optional loop, then next(b)",
        "PATTERN SEQ(D d, A* a[], B b) WHERE relaxed_contiguity strict_contiguity(a, b)",
        "d:D a1:A a2:A c:C b:B",
        [],
    ),
    (
        "testStrictContinuityResultsAfterZeroOrMore: allowCombinations, then next(b)",
        "PATTERN SEQ(D d, A* a[], B b) WHERE skip_till_any_match strict_contiguity(a, b)",
        "d:D a1:A a2:A b:B",
        ["d a1 a2 b", "d a2 b"],
    ),
    (
        "testNextZeroOrMore: next(middle).oneOrMore().optional().consecutive()",
        "PATTERN SEQ(S s, M* m[], E e) WHERE relaxed_contiguity strict_contiguity(s, m)"
        " strict_contiguity(m[])",
        "s:S x:X m1:M m2:M m3:M e:E",
        ["s e"],
    ),
    (
        "testAtLeastOneEager: followedByAny(a).oneOrMore().followedByAny(b)",
        "PATTERN SEQ(C c, A+ a[], B b) WHERE relaxed_contiguity(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 b", "c a2 b", "c a3 b", "c a1 a2 b", "c a2 a3 b", "c a1 a2 a3 b"],
    ),
    (
        "testStartWithOptional: begin(c).optional().followedBy(b)",
        "PATTERN SEQ(C? c, B b) WHERE relaxed_contiguity",
        "c:C b:B",
        ["b", "c b"],
    ),
    (
        "testTimesNotStrictWithFollowedByNotEager: followedByAny(a).times(2)"
        ".allowCombinations().followedBy(b)",
        "PATTERN SEQ(C c, A{2} a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " skip_till_any_match(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 b", "c a1 a3 b", "c a2 a3 b"],
    ),
    (
        "testTimesStrictWithNextAndConsecutive: next(a).times(2).consecutive()",
        "PATTERN SEQ(C c, A{2} a[], B b) WHERE relaxed_contiguity strict_contiguity(c, a)"
        " strict_contiguity(a[])",
        "c:C a1:A f:F a2:A a3:A b:B",
        [],
    ),
    (
        "testTimesNonStrictOptional3: followedByAny(a).times(2).optional().followedBy(b)",
        "PATTERN SEQ(C c, A{2}? a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c b", "c a1 a2 b", "c a2 a3 b"],
    ),
    (
        "testOneOrMoreStrictOptional: followedByAny(a).oneOrMore().consecutive().optional()",
        "PATTERN SEQ(C c, A* a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " strict_contiguity(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c b", "c a1 b", "c a2 b", "c a3 b", "c a2 a3 b"],
    ),
    (
        "testStartWithOneOrMoreStrict: begin(a).oneOrMore().consecutive()",
        "PATTERN A+ a[] WHERE strict_contiguity",
        "c1:C a1:A c2:C a2:A a3:A",
        ["a1", "a2", "a3", "a2 a3"],
    ),
    (
        "testEndWithZeroOrMore: begin(c).followedBy(a).oneOrMore().optional()",
        "PATTERN SEQ(C c, A* a[]) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A",
        ["c", "c a1", "c a1 a2", "c a1 a2 a3"],
    ),
    (
        "testEndWLoopingWSameElement: begin(c).followedByAny(a).oneOrMore().optional()",
        "PATTERN SEQ(C c, A* a[]) WHERE relaxed_contiguity skip_till_any_match(c, a)",
        "c:C a1:A a2:A a3:A",
        ["c", "c a1", "c a2", "c a3", "c a1 a2", "c a2 a3", "c a1 a2 a3"],
    ),
    (
        "testSkipTillAnyOneOrMore: followedBy(a).oneOrMore().allowCombinations()",
        "PATTERN SEQ(C c, A+ a[], B b) WHERE relaxed_contiguity skip_till_any_match(a[])",
        "c:C d1:D a1:A a2:A a3:A d2:D a4:A b:B",
        [f"c a1 {rest}b" for rest in ["", "a2 ", "a3 ", "a4 ", "a2 a3 ", "a2 a4 ", "a3 a4 "]]
        + ["c a1 a2 a3 a4 b"],
    ),
    (
        "testMultipleTakesVersionCollision: two allowCombinations loops in a row",
        "PATTERN SEQ(C c, A+ a[], A+ x[], B b) WHERE relaxed_contiguity"
        " skip_till_any_match(a[]) skip_till_any_match(x[])",
        "c:C a1:A a2:A a3:A a4:A a5:A b:B",
        # Flink lists each match's events; the same events may be split two ways
        ["c a1 a2 a3 a4 a5 b"] * 4
        + ["c a1 a2 a3 a4 b"] * 3
        + ["c a1 a2 a4 a5 b"] * 2
        + ["c a1 a2 a3 a5 b"] * 2
        + ["c a1 a3 a4 a5 b"] * 2
        + ["c a1 a2 a3 b"] * 2
        + ["c a1 a3 a4 b", "c a1 a4 a5 b", "c a1 a2 a4 b", "c a1 a2 a5 b", "c a1 a2 b"],
    ),
    (
        "testRepeatingPatternWSameElement: an optional loop, an optional b, then an a",
        "PATTERN SEQ(C c, A* a[], B? b, A e) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A d:D b:B a4:A",
        [
            "c a1",
            "c a1 a2",
            "c a1 a2 a3",
            "c a1 a2 a3 a4",
            "c b a4",
            "c a1 b a4",
            "c a1 a2 b a4",
            "c a1 a2 a3 b a4",
        ],
    ),
    (
        "testIterativeWithLoopingStartingCombination: a loop under sum < 5 begins the pattern",
        "PATTERN SEQ(S* s[], E e) WHERE relaxed_contiguity skip_till_any_match(s[])"
        " { sum(s[..i-1].price) + s[i].price < 5 }",
        "s1:S:1 s2:S:2 s3:S:3 e:E",
        ["e", "s1 e", "s2 e", "s3 e", "s1 s2 e", "s1 s3 e"],
    ),
    (
        "testIterativeWithABACPattern: the loop's condition reads its own events",
        "PATTERN SEQ(S s, F f, S+ n[], E e) WHERE relaxed_contiguity skip_till_any_match(s, f)"
        " { sum(n[..i-1].price) + n[i].price <= 5 }",
        "s1:S:1 f1:F:1 s2:S:2 s3:S:3 f2:F:2 s4:S:4 f3:F:3 f4:F:1 e:E",
        ["s1 f1 s2 s3 e", "s1 f1 s2 e", "s1 f2 s4 e", "s2 f2 s4 e", "s3 f2 s4 e"],
    ),
    (
        "testIterativeConditionWSameElement: the last element reads the loop's sum",
        "PATTERN SEQ(C c, A* a[], _ e) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " skip_till_any_match(a[]) { sum(a[].price) = 4 }",
        "c:C:1 a1:A:2 a2:A:2 a3:A:2 b:B:5",
        ["c a1 a2 a3", "c a1 a3 b", "c a2 a3 b"],
    ),
    (
        "testNoConditionLoopingNFA: begin(start).followedBy(end).oneOrMore()",
        "PATTERN SEQ(_ s, _+ e[]) WHERE relaxed_contiguity",
        "a:A b:B c:C d:D",
        ["a b", "a b c", "a b c d", "b c", "b c d", "c d"],
    ),
    (
        "testNFAResultOrdering: times(4).allowCombinations(), followedByAny, times(3)"
        ".consecutive()",
        "PATTERN SEQ(A{4} a[], B{3} b[]) WHERE strict_contiguity(b[])",
        "a1:A a2:A a3:A a4:A b1:B b2:B b3:B",
        ["a1 a2 a3 a4 b1 b2 b3"],
    ),
    (
        "TimesRangeITCase.testTimesRangeFromZero: next(a).times(0, 2).allowCombinations()",
        "PATTERN SEQ(C c, A{0,2} a[], B b) WHERE relaxed_contiguity strict_contiguity(c, a)"
        " skip_till_any_match(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c b", "c a1 b", "c a1 a2 b", "c a1 a3 b"],
    ),
    (
        "TimesRangeITCase.testTimesRangeStrict: followedByAny(a).times(0, 3).consecutive()",
        "PATTERN SEQ(C c, A{0,3} a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " strict_contiguity(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c b", "c a1 b", "c a2 b", "c a3 b", "c a2 a3 b"],
    ),
    (
        "TimesRangeITCase.testTimesRangeNonStrictOptional3: times(2, 3).optional()",
        "PATTERN SEQ(C c, A{2,3}? a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c b", "c a1 a2 b", "c a2 a3 b", "c a1 a2 a3 b"],
    ),
    (
        "testNotNext: notNext(b) between a and a followedByAny c",
        "PATTERN SEQ(A a, NOT NEXT(B x), C c, D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, c)",
        "a:A c1:C b:B c2:C d:D",
        ["a c1 d", "a c2 d"],
    ),
    (
        "testNotNextNoMatchesAtTheEnd: notNext(b) ends the pattern",
        "PATTERN SEQ(A a, C c, D d, NOT NEXT(B x))",
        "a:A c1:C c2:C d:D b:B",
        [],
    ),
    (
        "testNotFollowedByBeforeOptionalAtTheEnd: an optional last element",
        "PATTERN SEQ(A a, NOT FOLLOWED(B x), C? c)",
        "a:A c1:C b:B c2:C",
        ["a", "a c1"],
    ),
    (
        "testNotFollowedByBeforeOptionalTimes: notFollowedBy, then times(2).optional()",
        "PATTERN SEQ(A a, NOT FOLLOWED(B x), C{2}? c[], D d) WHERE skip_till_any_match"
        " relaxed_contiguity(c[]) relaxed_contiguity(c, d)",
        "a:A c1:C b:B c2:C d:D",
        ["a c1 c2 d"],
    ),
    (
        "testNotFollowedByAnyAfterOneOrMoreCombinations: no c after the loop began",
        "PATTERN SEQ(A a, B+ b[], NOT FOLLOWED(C x), D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b) skip_till_any_match(b[])",
        "a:A b1:B b2:B b3:B c:C b4:B b5:B b6:B d:D",
        [f"a {b}d" for b in ["b4 ", "b5 ", "b6 ", "b4 b5 ", "b4 b6 ", "b5 b6 ", "b4 b5 b6 "]],
    ),
    # UntilConditionITCase: the loop stops at a price of 5 (`until`), or once the loop's
    # prices so far sum to 6 (an iterative `until`)
    (
        "testUntilConditionFollowedByOneOrMore: followedBy(end) where price 5",
        "PATTERN SEQ(C c, A+ m[] UNTIL (m.price = 5), _ e) WHERE relaxed_contiguity"
        " { e.price = 5 }",
        "c:C:1 m1:A:2 m2:A:3 brk:A:5 ign:A:6",
        ["c m1 m2 brk", "c m1 brk"],
    ),
    (
        "testUntilConditionFollowedByOneOrMoreCombinations: allowCombinations",
        "PATTERN SEQ(C c, A+ m[] UNTIL (m.price = 5), _ e) WHERE relaxed_contiguity"
        " skip_till_any_match(m[]) { e.price = 5 }",
        "c:C:1 m1:A:2 m2:A:3 m3:A:4 brk:A:5 ign:A:6",
        ["c m1 m2 m3 brk", "c m1 m2 brk", "c m1 m3 brk", "c m1 brk"],
    ),
    (
        "testUntilConditionFollowedByOneOrMoreConsecutive: consecutive",
        "PATTERN SEQ(C c, A+ m[] UNTIL (m.price = 5), _ e) WHERE relaxed_contiguity"
        " strict_contiguity(m[]) { e.price = 5 }",
        "c:C:1 m1:A:2 m2:A:3 brk:A:5 ign:A:6",
        ["c m1 m2 brk", "c m1 brk"],
    ),
    (
        "testUntilConditionFollowedByZeroOrMore: optional",
        "PATTERN SEQ(C c, A* m[] UNTIL (m.price = 5), _ e) WHERE relaxed_contiguity"
        " { e.price = 5 }",
        "c:C:1 m1:A:2 m2:A:3 brk:A:5 ign:A:6",
        ["c m1 m2 brk", "c m1 brk", "c brk"],
    ),
    (
        "testUntilConditionFollowedByZeroOrMoreCombinations: optional, allowCombinations",
        "PATTERN SEQ(C c, A* m[] UNTIL (m.price = 5), _ e) WHERE relaxed_contiguity"
        " skip_till_any_match(m[]) { e.price = 5 }",
        "c:C:1 m1:A:2 m2:A:3 m3:A:4 brk:A:5 ign:A:6",
        ["c m1 m2 m3 brk", "c m1 m2 brk", "c m1 m3 brk", "c m1 brk", "c brk"],
    ),
    (
        "testUntilConditionFollowedByZeroOrMoreConsecutive: optional, consecutive",
        "PATTERN SEQ(C c, A* m[] UNTIL (m.price = 5), _ e) WHERE relaxed_contiguity"
        " strict_contiguity(m[]) { e.price = 5 }",
        "c:C:1 m1:A:2 m2:A:3 brk:A:5 ign:A:6",
        ["c m1 m2 brk", "c m1 brk", "c brk"],
    ),
    (
        "testUntilConditionFollowedByAnyOneOrMore: followedByAny(middle), the loop last",
        "PATTERN SEQ(C c, A+ m[] UNTIL (m.price = 5)) WHERE relaxed_contiguity"
        " skip_till_any_match(c, m)",
        "c:C:1 m1:A:2 m2:A:3 brk:A:5 m3:A:6",
        ["c m1 m2", "c m1", "c m2", "c m3"],
    ),
    (
        "testUntilConditionFollowedByAnyZeroOrMore: followedByAny(middle), optional",
        "PATTERN SEQ(C c, A* m[] UNTIL (m.price = 5)) WHERE relaxed_contiguity"
        " skip_till_any_match(c, m)",
        "c:C:1 m1:A:2 m2:A:3 brk:A:5 m3:A:6",
        ["c m1 m2", "c m1", "c m2", "c m3", "c"],
    ),
    (
        "testUntilConditionWithEmptyWhere: a loop of any event",
        "PATTERN SEQ(C c, _+ m[] UNTIL (m.price = 5)) WHERE relaxed_contiguity",
        "c:C:1 m1:A:2 m2:A:3 m3:D:1 brk:A:5 ign:A:6",
        ["c m1 m2 m3", "c m1 m2", "c m1"],
    ),
    (
        "testIterativeUntilConditionOneOrMore: until the loop's prices sum to 6",
        "PATTERN SEQ(C c, _+ m[] UNTIL (sum(m[..i-1].price) = 6)) WHERE relaxed_contiguity",
        "c:C:1 m1:A:2 m2:A:3 m3:D:1 brk:A:5 ign:A:6",
        ["c m1 m2 m3", "c m1 m2", "c m1"],
    ),
    (
        "testIterativeUntilConditionZeroOrMore: the same, optional",
        "PATTERN SEQ(C c, _* m[] UNTIL (sum(m[..i-1].price) = 6)) WHERE relaxed_contiguity",
        "c:C:1 m1:A:2 m2:A:3 m3:D:1 brk:A:5 ign:A:6",
        ["c m1 m2 m3", "c m1 m2", "c m1", "c"],
    ),
    # GreedyITCase: begin(c).followedBy(a).oneOrMore()[.optional()].greedy()[.until(price > 3)]
    # .followedBy(d), with dummy events (x) between
    (
        "GreedyITCase.testGreedyZeroOrMore",
        "PATTERN SEQ(C c, A* a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A d:D",
        ["c a1 a2 a3 d"],
    ),
    (
        "GreedyITCase.testGreedyZeroOrMoreInBetween",
        "PATTERN SEQ(C c, A* a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C x1:X a1:A x2:X a2:A x3:X a3:A d:D",
        ["c a1 a2 a3 d"],
    ),
    (
        "GreedyITCase.testGreedyZeroOrMoreWithDummyEventsAfterQuantifier",
        "PATTERN SEQ(C c, A* a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C a1:A a2:A x:X d:D",
        ["c a1 a2 d"],
    ),
    (
        "GreedyITCase.testGreedyZeroOrMoreWithDummyEventsBeforeQuantifier",
        "PATTERN SEQ(C c, A* a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C x:X d:D",
        ["c d"],
    ),
    (
        "GreedyITCase.testGreedyUntilZeroOrMoreWithDummyEventsAfterQuantifier",
        "PATTERN SEQ(C c, A* a[] GREEDY UNTIL (a.price > 3), D d) WHERE relaxed_contiguity",
        "c:C:1 a1:A:2 a2:A:3 a3:A:3 a4:A:4 d:D:3",
        ["c a1 a2 a3 d"],
    ),
    (
        "GreedyITCase.testGreedyUntilWithDummyEventsBeforeQuantifier",
        "PATTERN SEQ(C c, A* a[] GREEDY UNTIL (a.price > 3), D d) WHERE relaxed_contiguity",
        "c:C:1 a4:A:4 a1:A:2 a2:A:3 a3:A:3 d:D:3",
        ["c d"],
    ),
    (
        "GreedyITCase.testGreedyOneOrMore",
        "PATTERN SEQ(C c, A+ a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A d:D",
        ["c a1 a2 a3 d"],
    ),
    (
        "GreedyITCase.testGreedyOneOrMoreInBetween",
        "PATTERN SEQ(C c, A+ a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C x1:X a1:A x2:X a2:A x3:X a3:A d:D",
        ["c a1 a2 a3 d"],
    ),
    (
        "GreedyITCase.testGreedyOneOrMoreWithDummyEventsAfterQuantifier",
        "PATTERN SEQ(C c, A+ a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C a1:A a2:A x:X d:D",
        ["c a1 a2 d"],
    ),
    (
        "GreedyITCase.testGreedyOneOrMoreWithDummyEventsBeforeQuantifier",
        "PATTERN SEQ(C c, A+ a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C x:X d:D",
        [],
    ),
    (
        "GreedyITCase.testGreedyUntilOneOrMoreWithDummyEventsAfterQuantifier",
        "PATTERN SEQ(C c, A+ a[] GREEDY UNTIL (a.price > 3), D d) WHERE relaxed_contiguity",
        "c:C:1 a1:A:2 a2:A:3 a3:A:3 a4:A:4 d:D:3",
        ["c a1 a2 a3 d"],
    ),
    (
        "GreedyITCase.testGreedyUntilOneOrMoreWithDummyEventsBeforeQuantifier",
        "PATTERN SEQ(C c, A+ a[] GREEDY UNTIL (a.price > 3), D d) WHERE relaxed_contiguity",
        "c:C:1 a4:A:4 a1:A:2 a2:A:3 a3:A:3 d:D:3",
        [],
    ),
    (
        "GreedyITCase.testGreedyZeroOrMoreBeforeGroupPattern: then (d e).times(2), then f",
        "PATTERN SEQ(C c, A* a[] GREEDY, D d1, E e1, D d2, E e2, F f) WHERE relaxed_contiguity",
        "c:C a1:A a2:A x:X a3:A d1:D e1:E d2:D e2:E f:F",
        ["c a1 a2 a3 d1 e1 d2 e2 f"],
    ),
    (
        "GreedyITCase.testEndWithZeroOrMoreGreedy: the loop last",
        "PATTERN SEQ(C c, A* a[] GREEDY) WHERE relaxed_contiguity",
        "c:C a1:A a2:A x:X a3:A",
        ["c", "c a1", "c a1 a2", "c a1 a2 a3"],
    ),
    (
        "GreedyITCase.testEndWithZeroOrMoreConsecutiveGreedy: the loop last, consecutive",
        "PATTERN SEQ(C c, A* a[] GREEDY) WHERE relaxed_contiguity strict_contiguity(a[])",
        "c:C a1:A a2:A x:X a3:A",
        ["c", "c a1", "c a1 a2"],
    ),
    (
        "GreedyITCase.testEndWithGreedyTimesRange: times(2, 5).greedy() last",
        "PATTERN SEQ(C c, A{2,5} a[] GREEDY) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A a4:A x:X",
        ["c a1 a2", "c a1 a2 a3", "c a1 a2 a3 a4"],
    ),
    (
        "GreedyITCase.testGreedyTimesRange: times(2, 5).greedy(), then d",
        "PATTERN SEQ(C c, A{2,5} a[] GREEDY, D d) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A a4:A d:D",
        ["c a1 a2 a3 a4 d"],
    ),
    # TimesOrMoreITCase: c, then a.timesOrMore(2) (A{2,} a[]), then followedBy(b)
    (
        "TimesOrMoreITCase.testTimesOrMore: followedBy(a).timesOrMore(2).allowCombinations()",
        "PATTERN SEQ(C c, A{2,} a[], B b) WHERE relaxed_contiguity skip_till_any_match(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a1 a3 b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreNonStrict: followedByAny(a), allowCombinations()",
        "PATTERN SEQ(C c, A{2,} a[], B b) WHERE relaxed_contiguity"
        " skip_till_any_match(c, a) skip_till_any_match(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a1 a3 b", "c a2 a3 b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreStrict: followedByAny(a).times(2).consecutive()",
        "PATTERN SEQ(C c, A{2} a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " strict_contiguity(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a2 a3 b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreStrictOptional: followedByAny(a), consecutive(),"
        " optional()",
        "PATTERN SEQ(C c, A{2,}? a[], B b) WHERE relaxed_contiguity"
        " skip_till_any_match(c, a) strict_contiguity(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a2 a3 b", "c b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreStrictOptional2: next(a), consecutive(), optional()",
        "PATTERN SEQ(C c, A{2,}? a[], B b) WHERE relaxed_contiguity"
        " strict_contiguity(c, a) strict_contiguity(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreNonStrictOptional: followedBy(a), optional()",
        "PATTERN SEQ(C c, A{2,}? a[], B b) WHERE relaxed_contiguity",
        "c:C f:F b:B",
        ["c b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreNonStrictOptional2: followedByAny(a),"
        " allowCombinations(), optional()",
        "PATTERN SEQ(C c, A{2,}? a[], B b) WHERE relaxed_contiguity"
        " skip_till_any_match(c, a) skip_till_any_match(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a1 a3 b", "c a2 a3 b", "c b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreNonStrictOptional3: followedByAny(a), optional()",
        "PATTERN SEQ(C c, A{2,}? a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a2 a3 b", "c b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreNonStrictWithNext: next(a), allowCombinations()",
        "PATTERN SEQ(C c, A{2,} a[], B b) WHERE relaxed_contiguity"
        " strict_contiguity(c, a) skip_till_any_match(a[])",
        "c:C a1:A f1:F a2:A f2:F a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a1 a3 b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreNotStrictWithFollowedBy: followedBy(a)",
        "PATTERN SEQ(C c, A{2,} a[], B b) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b"],
    ),
    (
        "TimesOrMoreITCase.testTimesOrMoreNotStrictWithFollowedByAny: followedByAny(a),"
        " allowCombinations()",
        "PATTERN SEQ(C c, A{2,} a[], B b) WHERE relaxed_contiguity"
        " skip_till_any_match(c, a) skip_till_any_match(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a1 a3 b", "c a2 a3 b"],
    ),
    # NotPatternITCase: notNext and notFollowedBy (NOT NEXT and NOT FOLLOWED)
    (
        "NotPatternITCase.testNotNextNoMatches: a, notNext(b), followedBy(c), followedBy(d)",
        "PATTERN SEQ(A a, NOT NEXT(B x), C c, D d) WHERE relaxed_contiguity",
        "a:A b:B c1:C c2:C d:D",
        [],
    ),
    (
        "NotPatternITCase.testNotFollowedBy: notFollowedBy(b), then followedByAny(c)",
        "PATTERN SEQ(A a, NOT FOLLOWED(B x), C c, D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, c)",
        "a:A c1:C b:B c2:C d:D",
        ["a c1 d"],
    ),
    (
        "NotPatternITCase.testNotFollowedByBeforeOptional: then followedByAny(c).optional()",
        "PATTERN SEQ(A a, NOT FOLLOWED(B x), C? c, D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, c)",
        "a:A c1:C b:B c2:C d:D",
        ["a c1 d"],
    ),
    (
        "NotPatternITCase.testTimesWithNotFollowedBy: followedByAny(b).times(2), notFollowedBy(c)",
        "PATTERN SEQ(A a, B{2} b[], NOT FOLLOWED(C x), D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b)",
        "a:A b1:B c:C b2:B d:D",
        [],
    ),
    (
        "NotPatternITCase.testIgnoreStateOfTimesWithNotFollowedBy: notFollowedBy(b), then"
        " followedByAny(c).times(2).optional()",
        "PATTERN SEQ(A a, NOT FOLLOWED(B x), C{2}? c[], D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, c)",
        "a1:A d1:D e:E b1:B c1:C c2:C d2:D",
        ["a1 d1"],
    ),
    (
        "NotPatternITCase.testTimesWithNotFollowedByAfter: the c after both b",
        "PATTERN SEQ(A a, B{2} b[], NOT FOLLOWED(C x), D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b)",
        "a1:A d1:D e:E b1:B b2:B c1:C d2:D",
        [],
    ),
    (
        "NotPatternITCase.testNotFollowedByWithBranchingAtStart",
        "PATTERN SEQ(A a, NOT FOLLOWED(B x), C c, D d) WHERE relaxed_contiguity",
        "a1:A b1:B c1:C a2:A c2:C d:D",
        ["a2 c2 d"],
    ),
    (
        "NotPatternITCase.testNotNextAfterOneOrMoreSkipTillNext: followedBy(b).oneOrMore(),"
        " notNext(c)",
        "PATTERN SEQ(A a, B+ b[], NOT NEXT(C x), D d) WHERE relaxed_contiguity",
        "a:A b1:B c:C b2:B d:D",
        [],
    ),
    (
        "NotPatternITCase.testNotNextAfterOneOrMoreSkipTillAny: followedByAny(b).oneOrMore()",
        "PATTERN SEQ(A a, B+ b[], NOT NEXT(C x), D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b)",
        "a:A b1:B c:C b2:B d:D",
        ["a b2 d"],
    ),
    (
        "NotPatternITCase.testNotFollowedByNextAfterOneOrMoreEager",
        "PATTERN SEQ(A a, B+ b[], NOT FOLLOWED(C x), D d) WHERE relaxed_contiguity",
        "a:A b1:B b2:B b3:B c:C b4:B b5:B b6:B d:D",
        [],
    ),
    (
        "NotPatternITCase.testNotFollowedByAnyAfterOneOrMoreEager: followedByAny(b)",
        "PATTERN SEQ(A a, B+ b[], NOT FOLLOWED(C x), D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b)",
        "a:A b1:B b2:B b3:B c:C b4:B b5:B b6:B d:D",
        ["a b4 b5 b6 d", "a b4 b5 d", "a b4 d", "a b5 b6 d", "a b5 d", "a b6 d"],
    ),
    (
        "NotPatternITCase.testNotFollowedByNextAfterOneOrMoreCombinations",
        "PATTERN SEQ(A a, B+ b[], NOT FOLLOWED(C x), D d) WHERE relaxed_contiguity"
        " skip_till_any_match(b[])",
        "a:A b1:B b2:B b3:B c:C b4:B b5:B b6:B d:D",
        [],
    ),
    (
        "NotPatternITCase.testNotFollowedByAnyBeforeOneOrMoreEager",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B+ b[], D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b)",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        ["a b1 b4 b5 b6 d", "a b1 b4 b5 d", "a b1 b4 d", "a b1 d"],
    ),
    (
        "NotPatternITCase.testNotFollowedByAnyBeforeOneOrMoreCombinations",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B+ b[], D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b) skip_till_any_match(b[])",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        [
            "a b1 b4 b5 b6 d",
            "a b1 b4 b6 d",
            "a b1 b4 b5 d",
            "a b1 b4 d",
            "a b1 b5 b6 d",
            "a b1 b5 d",
            "a b1 b6 d",
            "a b1 d",
        ],
    ),
    (
        "NotPatternITCase.testNotFollowedByBeforeOneOrMoreEager",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B+ b[], D d) WHERE relaxed_contiguity",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        ["a b1 b4 b5 b6 d", "a b1 b4 b5 d", "a b1 b4 d", "a b1 d"],
    ),
    (
        "NotPatternITCase.testNotFollowedByBeforeOneOrMoreCombinations",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B+ b[], D d) WHERE relaxed_contiguity"
        " skip_till_any_match(b[])",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        [
            "a b1 b4 b5 b6 d",
            "a b1 b4 b6 d",
            "a b1 b4 b5 d",
            "a b1 b4 d",
            "a b1 b5 b6 d",
            "a b1 b5 d",
            "a b1 b6 d",
            "a b1 d",
        ],
    ),
    (
        "NotPatternITCase.testNotFollowedByBeforeZeroOrMoreEagerSkipTillNext",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B* b[], D d) WHERE relaxed_contiguity",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        ["a b1 b4 b5 b6 d", "a b1 b4 b5 d", "a b1 b4 d", "a b1 d"],
    ),
    (
        "NotPatternITCase.testNotFollowedByBeforeZeroOrMoreCombinationsSkipTillNext",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B* b[], D d) WHERE relaxed_contiguity"
        " skip_till_any_match(b[])",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        [
            "a b1 b4 b5 b6 d",
            "a b1 b4 b6 d",
            "a b1 b4 b5 d",
            "a b1 b4 d",
            "a b1 b5 b6 d",
            "a b1 b5 d",
            "a b1 b6 d",
            "a b1 d",
        ],
    ),
    (
        "NotPatternITCase.testNotFollowedByBeforeZeroOrMoreEagerSkipTillAny",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B* b[], D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b)",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        ["a b1 b4 b5 b6 d", "a b1 b4 b5 d", "a b1 b4 d", "a b1 d"],
    ),
    (
        "NotPatternITCase.testNotFollowedByBeforeZeroOrMoreCombinationsSkipTillAny",
        "PATTERN SEQ(A a, NOT FOLLOWED(C x), B* b[], D d) WHERE relaxed_contiguity"
        " skip_till_any_match(a, b) skip_till_any_match(b[])",
        "a:A b1:B c:C b4:B b5:B b6:B d:D",
        [
            "a b1 b4 b5 b6 d",
            "a b1 b4 b6 d",
            "a b1 b4 b5 d",
            "a b1 b4 d",
            "a b1 b5 b6 d",
            "a b1 b5 d",
            "a b1 b6 d",
            "a b1 d",
        ],
    ),
    # AfterMatchSkipITCase: a name's `contains("a")` is a type list here ((A|AB) a)
    (
        "AfterMatchSkipITCase.testNoSkip: times(3)",
        "PATTERN SEQ(A{3} a[]) WHERE relaxed_contiguity AFTER MATCH NO SKIP",
        "a1:A a2:A a3:A a4:A a5:A a6:A",
        ["a1 a2 a3", "a2 a3 a4", "a3 a4 a5", "a4 a5 a6"],
    ),
    (
        "AfterMatchSkipITCase.testNoSkipWithFollowedByAny",
        "PATTERN SEQ(A a, B b)",
        "a1:A b1:B a2:A b2:B",
        ["a1 b1", "a1 b2", "a2 b2"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToNextWithFollowedByAny",
        "PATTERN SEQ(A a, B b) AFTER MATCH SKIP TO NEXT",
        "a1:A b1:B a2:A b2:B",
        ["a1 b1", "a2 b2"],
    ),
    (
        "AfterMatchSkipITCase.testNoSkipWithQuantifierAtTheEnd: next(b).oneOrMore()",
        "PATTERN SEQ(A a, B+ b[]) WHERE relaxed_contiguity strict_contiguity(a, b)",
        "a1:A b1:B b2:B b3:B",
        ["a1 b1 b2 b3", "a1 b1 b2", "a1 b1"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToNextWithQuantifierAtTheEnd",
        "PATTERN SEQ(A a, B+ b[]) WHERE relaxed_contiguity strict_contiguity(a, b)"
        " AFTER MATCH SKIP TO NEXT",
        "a1:A b1:B b2:B b3:B",
        ["a1 b1"],
    ),
    (
        "AfterMatchSkipITCase.testSkipPastLast: times(3)",
        "PATTERN SEQ(A{3} a[]) WHERE relaxed_contiguity AFTER MATCH SKIP PAST LAST EVENT",
        "a1:A a2:A a3:A a4:A a5:A a6:A",
        ["a1 a2 a3", "a4 a5 a6"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToFirst: times(2), next(end).times(2)",
        "PATTERN SEQ((A|AB){2} s[], (B|AB){2} e[]) WHERE relaxed_contiguity"
        " strict_contiguity(s, e) AFTER MATCH SKIP TO FIRST e",
        "ab1:AB ab2:AB ab3:AB ab4:AB ab5:AB ab6:AB",
        ["ab1 ab2 ab3 ab4", "ab3 ab4 ab5 ab6"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToLast: times(2), next(end).times(2)",
        "PATTERN SEQ((A|AB){2} s[], (B|AB){2} e[]) WHERE relaxed_contiguity"
        " strict_contiguity(s, e) AFTER MATCH SKIP TO LAST e",
        "ab1:AB ab2:AB ab3:AB ab4:AB ab5:AB ab6:AB ab7:AB",
        ["ab1 ab2 ab3 ab4", "ab4 ab5 ab6 ab7"],
    ),
    (
        "AfterMatchSkipITCase.testSkipPastLast2: followedByAny(b), followedByAny(c), followedBy(d)",
        "PATTERN SEQ(A a, B b, C c, D d) WHERE relaxed_contiguity skip_till_any_match(a, b)"
        " skip_till_any_match(b, c) AFTER MATCH SKIP PAST LAST EVENT",
        "a1:A a2:A b1:B b2:B c1:C c2:C d1:D d2:D",
        ["a1 b1 c1 d1"],
    ),
    (
        "AfterMatchSkipITCase.testSkipPastLast3: next(b)",
        "PATTERN SEQ(A a, B b) WHERE strict_contiguity AFTER MATCH SKIP PAST LAST EVENT",
        "a1:A c:C a2:A b2:B",
        ["a2 b2"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToFirstWithOptionalMatch: an optional loop first",
        "PATTERN SEQ(X* x[], (B|AB) b, C c) WHERE strict_contiguity AFTER MATCH SKIP TO FIRST b",
        "ab1:AB c1:C ab2:AB c2:C",
        ["ab1 c1", "ab2 c2"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToFirstAtStartPosition",
        "PATTERN SEQ((B|AB) b, C c) WHERE strict_contiguity AFTER MATCH SKIP TO FIRST b",
        "ab1:AB c1:C ab2:AB c2:C",
        ["ab1 c1", "ab2 c2"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToFirstWithOneOrMore: next(b).oneOrMore().consecutive()",
        "PATTERN SEQ(A a, B+ b[]) WHERE strict_contiguity AFTER MATCH SKIP TO FIRST b",
        "a1:A b1:B a2:A b2:B b3:B a3:A b4:B",
        ["a1 b1", "a2 b2", "a3 b4"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToFirstNonExistentPositionWithoutException",
        "PATTERN SEQ(A a, B* b[], C c) WHERE strict_contiguity AFTER MATCH SKIP TO FIRST b",
        "a:A c:C",
        ["a c"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToLastWithOneOrMore: next(b).oneOrMore().consecutive()",
        "PATTERN SEQ(A a, B+ b[]) WHERE strict_contiguity AFTER MATCH SKIP TO LAST b",
        "a1:A b1:B a2:A b2:B b3:B a3:A b4:B",
        ["a1 b1", "a2 b2", "a3 b4"],
    ),
    (
        "AfterMatchSkipITCase.testSkipPastLastWithOneOrMoreAtBeginning: a consecutive greedy"
        " loop, then next(b)",
        "PATTERN SEQ(A+ a[] GREEDY, B b) WHERE strict_contiguity AFTER MATCH SKIP PAST LAST EVENT",
        "a1:A a2:A a3:A b1:B",
        ["a1 a2 a3 b1"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToLastWithOneOrMoreAtBeginning",
        "PATTERN SEQ(A+ a[] GREEDY, B b) WHERE strict_contiguity AFTER MATCH SKIP TO LAST a",
        "a1:A a2:A a3:A b1:B",
        ["a1 a2 a3 b1", "a3 b1"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToFirstWithOneOrMoreAtBeginning",
        "PATTERN SEQ(A+ a[] GREEDY, B b) WHERE strict_contiguity AFTER MATCH SKIP TO FIRST a",
        "a1:A a2:A a3:A b1:B",
        ["a1 a2 a3 b1", "a2 a3 b1", "a3 b1"],
    ),
    (
        "AfterMatchSkipITCase.testNoSkipWithOneOrMoreAtBeginning",
        "PATTERN SEQ(A+ a[] GREEDY, B b) WHERE strict_contiguity AFTER MATCH NO SKIP",
        "a1:A a2:A a3:A b1:B",
        ["a1 a2 a3 b1", "a2 a3 b1", "a3 b1"],
    ),
    (
        "AfterMatchSkipITCase.testSkipToFirstDiscarding: (a|c), (b|c), c+ greedy, d",
        "PATTERN SEQ((A|C) x, (B|C) y, C+ z[] GREEDY, D d) WHERE relaxed_contiguity"
        " AFTER MATCH SKIP TO FIRST z",
        "a:A b:B c1:C c2:C c3:C d:D",
        ["a b c1 c2 c3 d", "c1 c2 c3 d"],
    ),
    (
        "AfterMatchSkipITCase.testSkipBeforeOtherAlreadyCompleted: b's price is a's",
        "PATTERN SEQ(A a, C c, B b) WHERE relaxed_contiguity { b.price = a.price }"
        " AFTER MATCH SKIP TO FIRST c",
        "a1:A:0 c1:C:0 a2:A:1 c2:C:0 b1:B:1 b2:B:0",
        ["a1 c1 b2", "a2 c2 b1"],
    ),
    # NFAITCase, more of it
    (
        "testStrictContinuityWithResults: next(end)",
        "PATTERN SEQ(A a, B b) WHERE strict_contiguity",
        "a:A b:B",
        ["a b"],
    ),
    (
        "testSimplePatternWithTimeWindowNFA: within(10): last - first < 10",
        "PATTERN SEQ(S s, M m, E e) WHERE relaxed_contiguity WITHIN 10 EXCLUSIVE",
        "s1:S@1 s2:S@2 m:M@3 f:F@4 e1:E@11 e2:E@13",
        ["s2 m e1"],
    ),
    (
        "testBranchingPattern: three followedByAny, the first a volume over 5",
        "PATTERN SEQ(S s, (F|N) m1, N m2, E e) WHERE skip_till_any_match { m1.price > 5 }",
        "s:S f1:F:10 f2:F:10 f3:F:10 n1:N:2 n2:N:2 e:E",
        [f"s {f} {n} e" for f in ("f1", "f2", "f3") for n in ("n1", "n2")],
    ),
    (
        "testZeroOrMore: followedByAny(a).oneOrMore().allowCombinations().optional()",
        "PATTERN SEQ(C c, A* a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " skip_till_any_match(a[])",
        "c:C a1:A a2:A b:B",
        ["c a1 a2 b", "c a1 b", "c a2 b", "c b"],
    ),
    (
        "testZeroOrMoreAfterBranching: followedByAny, an optional loop, followedBy(end)",
        "PATTERN SEQ(C c, A a, F f, D* d[], E e) WHERE skip_till_any_match"
        " relaxed_contiguity(d, e)",
        "c:C a1:A a2:A f:F d1:D d2:D e:E",
        [
            f"c {a} f {d}e".replace("  ", " ")
            for a in ("a1", "a2")
            for d in ("", "d1 ", "d2 ", "d1 d2 ")
        ],
    ),
    (
        "testAtLeastOne: followedByAny(a).oneOrMore().allowCombinations(), followedByAny(b)",
        "PATTERN SEQ(C c, A+ a[], B b)",
        "c:C a1:A a2:A b:B",
        ["c a1 a2 b", "c a1 b", "c a2 b"],
    ),
    (
        "testBeginWithAtLeastOne: begin(a).oneOrMore().allowCombinations().followedBy(b)",
        "PATTERN SEQ(A+ a[], B b) WHERE relaxed_contiguity skip_till_any_match(a[])",
        "a1:A a2:A a3:A b:B",
        ["a1 a2 a3 b", "a1 a2 b", "a1 a3 b", "a2 a3 b", "a1 b", "a2 b", "a3 b"],
    ),
    (
        "testOptional: followedBy(a).optional()",
        "PATTERN SEQ(C c, A? a, B b) WHERE relaxed_contiguity",
        "c:C a:A b:B",
        ["c a b", "c b"],
    ),
    (
        "testTimes: next(a).times(2).allowCombinations()",
        "PATTERN SEQ(C c, A{2} a[], B b) WHERE relaxed_contiguity strict_contiguity(c, a)"
        " skip_till_any_match(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 b", "c a1 a3 b"],
    ),
    (
        "testStartWithTimes: begin(a).times(2).consecutive()",
        "PATTERN SEQ(A{2} a[], B b) WHERE relaxed_contiguity strict_contiguity(a[])",
        "a1:A a2:A a3:A b:B",
        ["a1 a2 b", "a2 a3 b"],
    ),
    (
        "testTimesNonStrictWithNext: next(a).times(2).allowCombinations(), f between",
        "PATTERN SEQ(C c, A{2} a[], B b) WHERE relaxed_contiguity strict_contiguity(c, a)"
        " skip_till_any_match(a[])",
        "c:C a1:A f1:F a2:A f2:F a3:A b:B",
        ["c a1 a2 b", "c a1 a3 b"],
    ),
    (
        "testTimesNotStrictWithFollowedByEager: followedBy(a).times(2)",
        "PATTERN SEQ(C c, A{2} a[], B b) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 b"],
    ),
    (
        "testStartAndEndWithZeroOrMore: begin(a).oneOrMore().optional(), alone",
        "PATTERN SEQ(A* a[]) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A d1:D d2:D d3:D",
        ["a1 a2 a3", "a1 a2", "a1", "a2 a3", "a2", "a3"],
    ),
    (
        "testEndWithOptional: followedBy(a).optional() last",
        "PATTERN SEQ(C c, A? a) WHERE relaxed_contiguity",
        "c:C a1:A",
        ["c a1", "c"],
    ),
    (
        "testEndWithOneOrMore: followedBy(a).oneOrMore() last",
        "PATTERN SEQ(C c, A+ a[]) WHERE relaxed_contiguity",
        "c:C a1:A a2:A a3:A",
        ["c a1 a2 a3", "c a1 a2", "c a1"],
    ),
    (
        "testTimesNonStrictOptional1: followedBy(a).times(3).optional()",
        "PATTERN SEQ(C c, A{3}? a[], B b) WHERE relaxed_contiguity",
        "c:C f:F b:B",
        ["c b"],
    ),
    (
        "testTimesNonStrictOptional2: followedByAny(a).times(2).allowCombinations().optional()",
        "PATTERN SEQ(C c, A{2}? a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " skip_till_any_match(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a1 a2 b", "c a1 a3 b", "c a2 a3 b", "c b"],
    ),
    (
        "testTimesStrictOptional: followedByAny(a).times(2).consecutive().optional()",
        "PATTERN SEQ(C c, A{2}? a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " strict_contiguity(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a2 a3 b", "c b"],
    ),
    (
        "testTimesStrictOptional1: next(a).times(2).consecutive().optional()",
        "PATTERN SEQ(C c, A{2}? a[], B b) WHERE relaxed_contiguity strict_contiguity(c, a)"
        " strict_contiguity(a[])",
        "c:C a1:A a2:A a3:A b:B",
        ["c a1 a2 b", "c b"],
    ),
    (
        "testOptionalTimesNonStrictWithNext: next(a).times(2).allowCombinations().optional()",
        "PATTERN SEQ(C c, A{2}? a[], B b) WHERE relaxed_contiguity strict_contiguity(c, a)"
        " skip_till_any_match(a[])",
        "c:C a1:A f1:F a2:A f2:F a3:A b:B",
        ["c a1 a2 b", "c a1 a3 b", "c b"],
    ),
    (
        "testStrictOneOrMore: followedBy(a).oneOrMore().consecutive()",
        "PATTERN SEQ(C c, A+ a[], B b) WHERE relaxed_contiguity strict_contiguity(a[])",
        "c:C d1:D a1:A a2:A a3:A d2:D a4:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a1 b"],
    ),
    (
        "testSkipTillNextOneOrMore: followedBy(a).oneOrMore()",
        "PATTERN SEQ(C c, A+ a[], B b) WHERE relaxed_contiguity",
        "c:C d1:D a1:A a2:A a3:A d2:D a4:A b:B",
        ["c a1 a2 a3 a4 b", "c a1 a2 a3 b", "c a1 a2 b", "c a1 b"],
    ),
    (
        "testStrictEagerZeroOrMore: followedBy(a).oneOrMore().optional().consecutive()",
        "PATTERN SEQ(C c, A* a[], B b) WHERE relaxed_contiguity strict_contiguity(a[])",
        "c:C d1:D a1:A a2:A a3:A d2:D a4:A b:B",
        ["c a1 a2 a3 b", "c a1 a2 b", "c a1 b", "c b"],
    ),
    (
        "testSkipTillAnyZeroOrMore: followedBy(a).oneOrMore().optional().allowCombinations()",
        "PATTERN SEQ(C c, A* a[], B b) WHERE relaxed_contiguity skip_till_any_match(a[])",
        "c:C d1:D a1:A a2:A a3:A d2:D a4:A b:B",
        [
            f"c a1 {rest}b".replace("  ", " ")
            for rest in ("a2 a3 a4 ", "a2 a4 ", "a3 a4 ", "a4 ", "a2 a3 ", "a2 ", "a3 ", "")
        ]
        + ["c b"],
    ),
    (
        "testSkipTillNextZeroOrMore: followedBy(a).oneOrMore().optional()",
        "PATTERN SEQ(C c, A* a[], B b) WHERE relaxed_contiguity",
        "c:C d1:D a1:A a2:A a3:A d2:D a4:A b:B",
        ["c a1 a2 a3 a4 b", "c a1 a2 a3 b", "c a1 a2 b", "c a1 b", "c b"],
    ),
    (
        "testTimesNonStrict: followedByAny(a).times(2).allowCombinations()",
        "PATTERN SEQ(C c, A{2} a[], B b) WHERE relaxed_contiguity skip_till_any_match(c, a)"
        " skip_till_any_match(a[])",
        "c:C f1:F a1:A f2:F a2:A a3:A b:B",
        ["c a1 a2 b", "c a1 a3 b", "c a2 a3 b"],
    ),
    (
        "testStartWithZeroOrMoreStrict: begin(a).oneOrMore().optional().consecutive(), alone",
        "PATTERN SEQ(A* a[]) WHERE relaxed_contiguity strict_contiguity(a[])",
        "c1:C a1:A c2:C a2:A a3:A",
        ["a1", "a2 a3", "a2", "a3"],
    ),
    (
        "testBranchingPatternSkipTillNext: followedBy, followedBy, followedByAny",
        "PATTERN SEQ(S s, (F|N) m1, N m2, E e) WHERE relaxed_contiguity"
        " skip_till_any_match(m2, e) { m1.price > 5 }",
        "s:S f1:F:10 f2:F:10 f3:F:10 n1:N:2 n2:N:2 e:E",
        ["s f1 n1 e"],
    ),
    (
        "testBranchingPatternMixedFollowedBy: followedByAny, followedBy, followedByAny",
        "PATTERN SEQ(S s, (F|N) m1, N m2, E e) WHERE relaxed_contiguity"
        " skip_till_any_match(s, m1) skip_till_any_match(m2, e) { m1.price > 5 }",
        "s:S f1:F:10 f2:F:10 f3:F:10 n1:N:2 n2:N:2 e:E",
        ["s f1 n1 e", "s f2 n1 e", "s f3 n1 e"],
    ),
    (
        "testSimplePatternNFA: followedBy a SubEvent of volume over 5, then followedBy(end)",
        "PATTERN SEQ(START s, SUB m, END e) WHERE relaxed_contiguity { m.price > 5 }",
        "s1:START foobar:EV barfoo:SUB:5 m:SUB:10 s2:START e:END",
        ["s1 m e"],
    ),
    (
        "testNFAResultOrdering: times(4).allowCombinations(), followedByAny times(3).consecutive()",
        "PATTERN SEQ(A{4} s[], B{3} m[]) WHERE skip_till_any_match strict_contiguity(m[])",
        "a1:A a2:A a3:A a4:A b1:B b2:B b3:B",
        ["a1 a2 a3 a4 b1 b2 b3"],
    ),
    (
        "testNFAResultKeyOrdering: five next() steps",
        "PATTERN SEQ(A a, B b, AA aa, BB bb, AB ab) WHERE strict_contiguity",
        "a1:A b1:B aa1:AA bb1:BB ab1:AB",
        ["a1 b1 aa1 bb1 ab1"],
    ),
    # IterativeConditionsITCase: conditions on the loop's events so far
    (
        "IterativeConditionsITCase.testIterativeWithBranchingPatternEager: the loop's prices"
        " below 5",
        "PATTERN SEQ(S s, F+ m[], E e) WHERE relaxed_contiguity { sum(m[..i].price) < 5 }",
        "s1:S:1 f1:F:1 f2:F:2 s2:S:2 f3:F:3 f4:F:1 n:N:1 e:E:1",
        ["s1 f1 f2 f4 e", "s1 f1 f2 e", "s1 f1 e", "s2 f3 f4 e", "s2 f3 e"],
    ),
    (
        "IterativeConditionsITCase.testIterativeWithBranchingPatternCombinations",
        "PATTERN SEQ(S s, F+ m[], E e) WHERE relaxed_contiguity skip_till_any_match(m[])"
        " { sum(m[..i].price) < 5 }",
        "s1:S:1 f1:F:1 f2:F:2 s2:S:2 f3:F:3 f4:F:1 n:N:1 e:E:1",
        [
            "s1 f1 f2 f4 e",
            "s1 f1 f2 e",
            "s1 f1 f3 e",
            "s2 f3 f4 e",
            "s1 f1 f4 e",
            "s1 f1 e",
            "s2 f3 e",
        ],
    ),
    (
        "IterativeConditionsITCase.testIterativeWithLoopingStartingEager",
        "PATTERN SEQ(S* s[], E e) WHERE relaxed_contiguity { sum(s[..i].price) < 5 }",
        "s1:S:1 s2:S:2 s3:S:3 e:E:1",
        ["s1 s2 e", "s1 e", "s2 e", "s3 e", "e"],
    ),
    (
        "IterativeConditionsITCase.testIterativeWithPrevPatternDependency: end reads start",
        "PATTERN SEQ(S+ s[], E e) WHERE relaxed_contiguity { sum(s[].price) >= 2 }",
        "s1:S:1 s2:S:2 e:E:1",
        ["s1 s2 e", "s2 e"],
    ),
    (
        "IterativeConditionsITCase.testIterativeWithPrevPatternDependencyAfterBranching",
        "PATTERN SEQ(S+ s[], F m, E e) WHERE relaxed_contiguity skip_till_any_match(s, m)"
        " skip_till_any_match(m, e) { sum(s[].price) >= 2 }",
        "s1:S:1 s2:S:2 f1:F:1 s3:S:3 f2:F:2 e:E:1",
        [
            "s1 s2 f1 e",
            "s2 f1 e",
            "s1 s2 f2 e",
            "s1 s2 s3 f2 e",
            "s2 s3 f2 e",
            "s2 f2 e",
            "s3 f2 e",
        ],
    ),
    # SameElementITCase: events equal in Flink (one object sent twice) are two events here,
    # at one time
    (
        "SameElementITCase.testEagerZeroOrMoreSameElement: followedBy(a).oneOrMore().optional()",
        "PATTERN SEQ(C c, A* a[], B b) WHERE relaxed_contiguity",
        "c:C@1 a1:A@3 a1b:A@3 a1c:A@3 a2:A@4 d:D@5 a3:A@6 a3b:A@6 b:B@7",
        [
            "c a1 a1b a1c a2 a3 a3b b",
            "c a1 a1b a1c a2 a3 b",
            "c a1 a1b a1c a2 b",
            "c a1 a1b a1c b",
            "c a1 a1b b",
            "c a1 b",
            "c b",
        ],
    ),
    (
        "SameElementITCase.testZeroOrMoreSameElement: followedByAny, allowCombinations",
        "PATTERN SEQ(C c, A* a[], B b)",
        "c:C@1 a1:A@3 a1a:A@3 a2:A@4 d:D@5 a3:A@6 a3a:A@6 b:B@7",
        [
            " ".join(["c", *chosen, "b"])
            for k in range(6)
            for chosen in itertools.combinations(["a1", "a1a", "a2", "a3", "a3a"], k)
        ],
    ),
    (
        "SameElementITCase.testSimplePatternWSameElement: followedByAny(a).followedBy(b)",
        "PATTERN SEQ(C c, A a, B b) WHERE relaxed_contiguity skip_till_any_match(c, a)",
        "c:C@1 a1:A@3 a1b:A@3 b:B@7",
        ["c a1 b", "c a1b b"],
    ),
    (
        "SameElementITCase.testClearingBuffer: four followedBy at one time",
        "PATTERN SEQ(A a, B b, C c, D d) WHERE relaxed_contiguity",
        "a1:A@1 b1:B@2 c1:C@2 d:D@2",
        ["a1 b1 c1 d"],
    ),
    (
        "SameElementITCase.testClearingBufferWithUntilAtTheEnd: until three d so far",
        "PATTERN SEQ(A a, D+ d[] UNTIL (count(d[..i-1]) = 3)) WHERE relaxed_contiguity",
        "a1:A@1 d1:D@2 d2:D@2 d3:D@2 d4:D@4",
        ["a1 d1", "a1 d1 d2", "a1 d1 d2 d3"],
    ),
]


def _events(text: str) -> list[kleene.Event]:
    made = []
    for position, written in enumerate(text.split()):
        token, _, at = written.partition("@")  # a time of its own: id:TYPE@t
        t = float(at) if at else position
        ident, kind, *price = token.split(":")
        attrs = {"price": float(price[0])} if price else {"price": 0.0}
        made.append(kleene.Event(kind, t, attrs, id=ident))
    return made


@pytest.mark.parametrize(("case", "query", "stream", "expected"), CASES, ids=[c[0] for c in CASES])
def test_flink_case(case, query, stream, expected):
    events = _events(stream)
    ran = []
    for plan in plans_taking(query):
        found = kleene.match(query, events, plan=plan, max_delay=0)
        got = sorted(" ".join(e.id for es in m.bindings.values() for e in es) for m in found)
        assert got == sorted(expected), f"{plan}: {case}"
        ran.append(plan)
    assert {"reference", "nfa"} <= set(ran), f"{case}: only {ran} run it"
