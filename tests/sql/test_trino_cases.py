"""Cases from Trino's own test suite for MATCH_RECOGNIZE (`TestRowPatternMatching`,
`TestAggregationsInRowPatternMatching` and `TestCopyAggregationStateInRowPatternMatching`),
each query's clause run by `kleene.match_recognize` on the same rows, given as Python
mappings and as a pandas DataFrame (which the columnar path may take), with Trino's
expected rows.

Two cases keep kleene's reading where Trino's differs; docs/sql.md says both:
`FIRST(value, 2)` under RUNNING semantics (the default) reads only the rows mapped so far,
and `CAST` fails to null where Trino raises.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

import kleene
from kleene.errors import PatternError

N = None
#: (id, value) rows of Trino's cases
R4 = [(1, 90), (2, 80), (3, 70), (4, 70)]
R6 = [(1, 90), (2, 80), (3, 70), (4, 80), (5, 70), (6, 80)]
R8 = [(1, 90), (2, 80), (3, 70), (4, 80), (5, 90), (6, 50), (7, 40), (8, 60)]
SHOWN = "ORDER BY id MEASURES match_number() AS match, RUNNING LAST(value) AS val, "
SHOWN += "classifier() AS label ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
FOUR = ["id", "match", "val", "label"]
EMPTY4 = [(1, 1, N, N), (2, 2, N, N), (3, 3, N, N), (4, 4, N, N)]
ALL8 = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"), (5, 1, 90, "C")]
ALL8 += [(6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")]
DOWN_UP = "DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value)"
#: Trino's quantifier cases: B* and its kin over R4, B a row not above the one before
GREEDY_B = [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 2, 70, "B")]
ONE_B = [(2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 70, "B")]
EACH_B = [(2, 1, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]
MAYBE_B = [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "B")]
TWO_B = [(2, 1, 80, "B"), (3, 1, 70, "B")]
QUANTIFIED = [
    ("B*", GREEDY_B),
    ("B*?", EMPTY4),
    ("B+", ONE_B),
    ("B+?", EACH_B),
    ("B?", MAYBE_B),
    ("B??", EMPTY4),
    ("B{,}", GREEDY_B),
    ("B{,}?", EMPTY4),
    ("B{1,}", ONE_B),
    ("B{1,}?", EACH_B),
    ("B{2,}", ONE_B),
    ("B{2,}?", TWO_B),
    ("B{5,}", []),
    ("B{5,}?", []),
    ("B{,1}", MAYBE_B),
    ("B{,1}?", EMPTY4),
    ("B{,2}", [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]),
    ("B{,2}?", EMPTY4),
    ("B{,5}", GREEDY_B),
    ("B{,5}?", EMPTY4),
    ("B{1,1}", EACH_B),
    ("B{1,1}?", EACH_B),
    ("B{1,5}", ONE_B),
    ("B{1,5}?", EACH_B),
    ("B{5,7}", []),
    ("B{5,7}?", []),
    ("B{1}", EACH_B),
    ("B{1}?", EACH_B),
    ("B{2}", TWO_B),
    ("B{2}?", TWO_B),
    ("B{5}", []),
    ("B{5}?", []),
]
SKIPPED = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C")]
SKIPPED_TO_C = [*SKIPPED, (4, 2, 80, "A"), (5, 2, 70, "B"), (6, 2, 80, "C")]
SKIPPING = (
    "ORDER BY id MEASURES match_number() AS match, RUNNING LAST(value) AS val, "
    "classifier() AS label ALL ROWS PER MATCH {} PATTERN (A B+ C+ D?) SUBSET U = (C, D) "
    "DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value), D AS false"
)
NAVIGATING = "ORDER BY id MEASURES {} AS measure ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true"
OUTSIDE = (
    "ORDER BY id MEASURES {} AS measure ONE ROW PER MATCH PATTERN (A B) "
    "DEFINE B AS B.value = PREV(B.value)"
)
IN_LIST = (
    "ORDER BY id MEASURES {} AS val ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW "
    "PATTERN (A+) DEFINE A AS {}"
)
ROWS_PER_MATCH = (
    "ORDER BY id MEASURES match_number() AS match, RUNNING LAST(value) AS val, "
    "classifier() AS label {} AFTER MATCH SKIP PAST LAST ROW PATTERN ({}) "
    "DEFINE B AS B.value < PREV (B.value)"
)
RUNNING_AND_FINAL = ", ".join(
    [
        "CLASSIFIER() AS label",
        "FINAL LAST(CLASSIFIER()) AS final_label",
        "RUNNING LAST(value) AS running_value",
        "FINAL LAST(value) AS final_value",
    ]
    + [f"{s} LAST({v}.value) AS {v}_{s.lower()}_value" for v in "ABC" for s in ("RUNNING", "FINAL")]
)
EIGHT_FIRSTS = " AND ".join(
    ["FIRST(CLASSIFIER()) = 'B'"] + [f"FIRST(CLASSIFIER(), {i}) = 'B'" for i in range(1, 8)]
)

#: (Trino's test, the rows, their columns, the clause, the columns read, the rows expected)
CASES: list[tuple[str, list[tuple[Any, ...]], list[str], str, list[str], list[tuple[Any, ...]]]]
CASES = [
    ("testSimpleQuery", R8, ["id", "value"], SHOWN + "PATTERN (A B+ C+) " + DOWN_UP, FOUR, ALL8),
    *[
        (
            f"testRowPattern {pattern}",
            R4,
            ["id", "value"],
            f"{SHOWN} PATTERN ({pattern}) {define}",
            FOUR,
            expected,
        )
        for pattern, define, expected in [
            ("() | A", "DEFINE A AS true", EMPTY4),
            ("^A", "DEFINE A AS true", [(1, 1, 90, "A")]),
            ("A^", "DEFINE A AS true", []),
            ("^A^", "DEFINE A AS true", []),
            ("A$", "DEFINE A AS true", [(4, 1, 70, "A")]),
            ("$A", "DEFINE A AS true", []),
            ("$A$", "DEFINE A AS true", []),
            (
                "A B C",
                "DEFINE B AS B.value < PREV (B.value), C AS C.value = PREV (C.value)",
                [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")],
            ),
            (
                "B | C | A",
                "DEFINE B AS B.value < PREV (B.value), C AS C.value <= PREV (C.value)",
                [(1, 1, 90, "A"), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "C")],
            ),
            (
                "PERMUTE(B, C)",
                "DEFINE B AS B.value < PREV (B.value), C AS C.value < PREV (C.value)",
                [(2, 1, 80, "B"), (3, 1, 70, "C")],
            ),
            (
                "((A) (B (C)))",
                "DEFINE B AS B.value < PREV (B.value), C AS C.value = PREV (C.value)",
                [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")],
            ),
        ]
    ],
    *[
        (
            f"testPatternQuantifiers {pattern}",
            R4,
            ["id", "value"],
            f"{SHOWN} PATTERN ({pattern}) DEFINE B AS B.value <= PREV (B.value)",
            FOUR,
            expected,
        )
        for pattern, expected in QUANTIFIED
    ],
    *[
        (
            f"testExclusionSyntax {pattern}",
            R8,
            ["id", "value"],
            f"{SHOWN} PATTERN ({pattern}) {DOWN_UP}",
            FOUR,
            expected,
        )
        for pattern, expected in [
            ("A B+ C+", ALL8),
            ("A {- B+ -} C+", [r for r in ALL8 if r[3] != "B"]),
            ("{- A -} {- B+ -} C+", [r for r in ALL8 if r[3] == "C"]),
            ("A {- {- B+ -} C+ -}", [r for r in ALL8 if r[3] == "A"]),
            ("{- A B+ C+ -}", []),
            ("A B+ {- ()* -} C+", ALL8),
            (" A {- B -}+ {- C -}+", [r for r in ALL8 if r[3] == "A"]),
            (" A {- B -}* {- C -}*", [r for r in ALL8 if r[3] == "A"]),
            (" A {- B -}{1,2} {- C -}{1,2}", [r for r in ALL8 if r[3] == "A"]),
            (" A {- C -}{2,3} {- B -}{2,3}", [(3, 1, 70, "A")]),
        ]
    ],
    (
        "testBackReference A",
        [(1,), (1,)],
        ["value"],
        "MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH PATTERN ((A | B)* X) "
        "DEFINE X AS value = A.value",
        ["value", "classy"],
        [(1, "A"), (1, "X")],
    ),
    (
        "testBackReference B",
        [(1,), (1,)],
        ["value"],
        "MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH PATTERN ((A | B)* X) "
        "DEFINE X AS value = B.value",
        ["value", "classy"],
        [(1, "B"), (1, "X")],
    ),
    (
        "testBackReference A and B",
        [(i,) for i in range(1, 7)],
        ["value"],
        "ORDER BY value MEASURES CLASSIFIER() AS classy, PREV(LAST(A.value), 3) + FIRST(A.value) "
        "+ PREV(LAST(B.value), 2) AS defining_condition ALL ROWS PER MATCH PATTERN ((A | B)* X) "
        "DEFINE X AS value = PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2)",
        ["value", "classy", "defining_condition"],
        [(1, "B", N), (2, "A", N), (3, "A", N), (4, "A", N), (5, "B", 6), (6, "X", 6)],
    ),
    (
        "testBackReference labels",
        [(i,) for i in range(1, 6)],
        ["value"],
        "ORDER BY value MEASURES CLASSIFIER() AS classy, PREV(CLASSIFIER(U), 1) = 'A' AND "
        "LAST(CLASSIFIER(), 3) = 'B' AND FIRST(CLASSIFIER(U)) = 'B' AS defining_condition "
        "ALL ROWS PER MATCH PATTERN ((A | B)* X $) SUBSET U = (A, B) DEFINE X AS "
        "PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B' "
        "AND FIRST(CLASSIFIER(U)) = 'B'",
        ["value", "classy", "defining_condition"],
        [(1, "B", N), (2, "B", False), (3, "A", False), (4, "A", True), (5, "X", True)],
    ),
    *[
        (
            f"testEmptyCycle {pattern}",
            R4,
            ["id", "value"],
            f"{SHOWN} PATTERN ({pattern}) DEFINE B AS B.value < PREV (B.value)",
            FOUR,
            expected,
        )
        for pattern, expected in [
            ("()* | B", EMPTY4),
            ("()+ | B", EMPTY4),
            ("(){5,} | B", EMPTY4),
            ("B | ()*", [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, N, N)]),
            ("(B ()*)*", [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, N, N)]),
            ("(B ()*)*?", EMPTY4),
            ("^* | B", EMPTY4),
            ("^+ | B", [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B")]),
            ("^* A B", [(1, 1, 90, "A"), (2, 1, 80, "B")]),
            ("$* | B", EMPTY4),
            ("$+ | B", [(2, 1, 80, "B"), (3, 2, 70, "B")]),
            ("B A $+", [(3, 1, 70, "B"), (4, 1, 70, "A")]),
        ]
    ],
    *[
        (
            f"testOutputModes {rows} {pattern}",
            R4,
            ["id", "value"],
            ROWS_PER_MATCH.format(rows, pattern),
            ["match", "val", "label"],
            expected,
        )
        for rows, pattern, expected in [
            ("ONE ROW PER MATCH", "B*", [(1, N, N), (2, 70, "B"), (3, N, N)]),
            ("", "B*", [(1, N, N), (2, 70, "B"), (3, N, N)]),
            ("ONE ROW PER MATCH", "B+", [(1, 70, "B")]),
            ("ALL ROWS PER MATCH", "B*", [(1, N, N), (2, 80, "B"), (2, 70, "B"), (3, N, N)]),
            ("ALL ROWS PER MATCH", "B+", [(1, 80, "B"), (1, 70, "B")]),
            (
                "ALL ROWS PER MATCH SHOW EMPTY MATCHES",
                "B*",
                [(1, N, N), (2, 80, "B"), (2, 70, "B"), (3, N, N)],
            ),
            ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B*", [(2, 80, "B"), (2, 70, "B")]),
            ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B+", [(1, 80, "B"), (1, 70, "B")]),
            (
                "ALL ROWS PER MATCH WITH UNMATCHED ROWS",
                "B+",
                [(N, N, N), (1, 80, "B"), (1, 70, "B"), (N, N, N)],
            ),
        ]
    ],
    *[
        (f"testAfterMatchSkip {skip}", R6, ["id", "value"], SKIPPING.format(skip), FOUR, expected)
        for skip, expected in [
            ("AFTER MATCH SKIP PAST LAST ROW", SKIPPED),
            (
                "AFTER MATCH SKIP TO NEXT ROW",
                [
                    *SKIPPED,
                    (2, 2, 80, "A"),
                    (3, 2, 70, "B"),
                    (4, 2, 80, "C"),
                    (4, 3, 80, "A"),
                    (5, 3, 70, "B"),
                    (6, 3, 80, "C"),
                ],
            ),
            ("AFTER MATCH SKIP TO FIRST C", SKIPPED_TO_C),
            ("AFTER MATCH SKIP TO LAST B", SKIPPED_TO_C),
            ("AFTER MATCH SKIP TO B", SKIPPED_TO_C),
            ("AFTER MATCH SKIP TO U", SKIPPED_TO_C),
        ]
    ],
    (
        "testEmptyMatches",
        [(1, 100), (2, 100), (3, 90), (4, 80), (5, 70), (6, 100)],
        ["id", "value"],
        "ORDER BY id MEASURES match_number() AS match, classifier() AS label ALL ROWS PER MATCH "
        "WITH UNMATCHED ROWS AFTER MATCH SKIP TO NEXT ROW PATTERN (A B{2}) "
        "DEFINE B AS B.value < PREV (B.value)",
        ["id", "match", "value", "label"],
        [
            (1, N, 100, N),
            (2, 1, 100, "A"),
            (3, 1, 90, "B"),
            (4, 1, 80, "B"),
            (3, 2, 90, "A"),
            (4, 2, 80, "B"),
            (5, 2, 70, "B"),
            (6, N, 100, N),
        ],
    ),
    (
        "testUnionVariable",
        [(1, 90), (2, 80), (3, 70), (4, 80)],
        ["id", "value"],
        "ORDER BY id MEASURES match_number() AS match, RUNNING LAST(value) AS val, "
        "classifier(U) AS lower_or_higher, classifier(W) AS label ALL ROWS PER MATCH "
        "PATTERN ((L | H) A) SUBSET U = (L, H), W = (A, L, H) "
        "DEFINE A AS A.value = 80, L AS L.value < 80, H AS H.value > 80",
        ["id", "match", "val", "lower_or_higher", "label"],
        [(1, 1, 90, "H", "H"), (2, 1, 80, "H", "A"), (3, 2, 70, "L", "L"), (4, 2, 80, "L", "A")],
    ),
    *[
        (
            f"testNavigationFunctions {measure}",
            [(1, 10), (2, 20), (3, 30)],
            ["id", "value"],
            NAVIGATING.format(measure),
            ["id", "measure"],
            list(zip((1, 2, 3), values, strict=True)),
        )
        for measure, values in [
            ("value", (10, 20, 30)),
            ("LAST(value)", (10, 20, 30)),
            ("RUNNING LAST(value)", (10, 20, 30)),
            ("FINAL LAST(value)", (30, 30, 30)),
            ("FIRST(value)", (10, 10, 10)),
            ("RUNNING FIRST(value)", (10, 10, 10)),
            ("FINAL FIRST(value)", (10, 10, 10)),
            ("FINAL LAST(value, 2)", (10, 10, 10)),
            # Trino: 30, 30, 30 (its FIRST reads past the current row under RUNNING)
            ("FIRST(value, 2)", (N, N, 30)),
            ("FINAL FIRST(value, 2)", (30, 30, 30)),
            ("LAST(value, 10)", (N, N, N)),
            ("FIRST(value, 10)", (N, N, N)),
            ("PREV(value)", (N, 10, 20)),
            ("NEXT(value)", (20, 30, N)),
            ("NEXT(FIRST(value), 2)", (30, 30, 30)),
            ("NEXT(FIRST(value), 10)", (N, N, N)),
            ("PREV(FIRST(value), 10)", (N, N, N)),
            ("PREV(FIRST(value, 10), 2)", (N, N, N)),
            ("PREV(LAST(value, 10), 2)", (N, N, N)),
        ]
    ],
    *[
        (
            f"testNavigationFunctions outside the match {measure}",
            [(1, 10), (2, 20), (3, 30), (4, 30), (5, 40)],
            ["id", "value"],
            OUTSIDE.format(measure),
            ["measure"],
            [(value,)],
        )
        for measure, value in [
            ("PREV(B.value, 4)", N),
            ("PREV(B.value, 3)", 10),
            ("PREV(B.value, 2)", 20),
            ("NEXT(B.value, 1)", 40),
            ("NEXT(B.value, 2)", N),
        ]
    ],
    (
        "testClassifierFunctionPastCurrentRow MEASURES",
        [(1, 90), (2, 80), (3, 70), (4, 80)],
        ["id", "value"],
        "ORDER BY id MEASURES CLASSIFIER() AS label, NEXT(CLASSIFIER()) AS next_label "
        "ALL ROWS PER MATCH PATTERN (A B+ C+) "
        "DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)",
        ["id", "value", "label", "next_label"],
        [(1, 90, "A", "B"), (2, 80, "B", "B"), (3, 70, "B", "C"), (4, 80, "C", N)],
    ),
    (
        "testClassifierFunctionPastCurrentRow DEFINE",
        [(1, 90), (2, 80), (3, 70), (4, 80)],
        ["id", "value"],
        "ORDER BY id MEASURES value AS val ALL ROWS PER MATCH PATTERN (A+) "
        "DEFINE A AS NEXT(CLASSIFIER()) = 'A'",
        ["id", "val"],
        [],
    ),
    (
        "testCaseSensitiveLabels",
        [(1, 90), (2, 80), (3, 70), (4, 80)],
        ["id", "value"],
        'ORDER BY id MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH PATTERN (a "b"+ C+) '
        'DEFINE "b" AS "b".value < PREV("b".value), C AS C.value > PREV(C.value)',
        ["id", "label"],
        [(1, "A"), (2, "b"), (3, "b"), (4, "C")],
    ),
    (
        "testScalarFunctions",
        [(1, 90), (2, 80), (3, 60)],
        ["id", "value"],
        "ORDER BY id MEASURES CAST(lower(LAST(CLASSIFIER())) || '_label' AS varchar(7)) AS label "
        "ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS B.value + 10 < abs(PREV (B.value))",
        ["id", "label"],
        [(2, "a_label"), (3, "b_label")],
    ),
    (
        "testRunningAndFinal",
        [(1, 90), (2, 80), (3, 70), (4, 100), (5, 200)],
        ["id", "value"],
        f"ORDER BY id MEASURES {RUNNING_AND_FINAL} ALL ROWS PER MATCH PATTERN (A B+ C+) {DOWN_UP}",
        [
            "id",
            "label",
            "final_label",
            "running_value",
            "final_value",
            "A_running_value",
            "A_final_value",
            "B_running_value",
            "B_final_value",
            "C_running_value",
            "C_final_value",
        ],
        [
            (1, "A", "C", 90, 200, 90, 90, N, 70, N, 200),
            (2, "B", "C", 80, 200, 90, 90, 80, 70, N, 200),
            (3, "B", "C", 70, 200, 90, 90, 70, 70, N, 200),
            (4, "C", "C", 100, 200, 90, 90, 70, 70, 100, 200),
            (5, "C", "C", 200, 200, 90, 90, 70, 70, 200, 200),
        ],
    ),
    (
        "testPartitioningAndOrdering",
        [
            (1, "p1", 90),
            (2, "p1", 80),
            (6, "p1", 80),
            (2, "p2", 20),
            (2, "p3", 60),
            (1, "p3", 50),
            (3, "p1", 70),
            (4, "p1", 80),
            (5, "p1", 90),
            (1, "p2", 20),
            (3, "p3", 70),
            (3, "p2", 10),
        ],
        ["id", "part", "value"],
        "PARTITION BY part ORDER BY id MEASURES match_number() AS match, "
        "PREV(RUNNING LAST(value)) AS val, classifier() AS label ALL ROWS PER MATCH "
        "AFTER MATCH SKIP PAST LAST ROW PATTERN (B+) DEFINE B AS B.value < PREV (B.value)",
        ["part", "id", "match", "val", "label"],
        [
            ("p1", 2, 1, 90, "B"),
            ("p1", 3, 1, 80, "B"),
            ("p1", 6, 2, 90, "B"),
            ("p2", 3, 1, 20, "B"),
        ],
    ),
    (
        "testPartitioningAndOrdering empty input",
        [],
        ["id", "part", "value"],
        "PARTITION BY part ORDER BY id MEASURES match_number() AS match ALL ROWS PER MATCH "
        "PATTERN (B+) DEFINE B AS B.value < PREV (B.value)",
        ["part", "id", "match"],
        [],
    ),
    (
        "testPartitioningAndOrdering unordered",
        [(5, 10), (2, 90), (1, 80), (4, 20), (3, 30)],
        ["id", "value"],
        f"{SHOWN} PATTERN (B+) DEFINE B AS B.value < PREV (B.value)",
        FOUR,
        [(3, 1, 30, "B"), (4, 1, 20, "B"), (5, 1, 10, "B")],
    ),
    (
        "testPartitioningAndOrdering no measures",
        [(5, "p2", 10), (2, "p1", 90), (1, "p1", 80), (4, "p2", 20), (3, "p1", 30)],
        ["id", "part", "value"],
        "PARTITION BY part ORDER BY id ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
        "PATTERN (B+) DEFINE B AS B.value < PREV (B.value)",
        ["id", "part"],
        [(3, "p1"), (5, "p2")],
    ),
    *[
        (
            f"testInPredicateWithoutSubquery {measure}",
            [(1, 100), (2, 200), (3, 300), (4, 400)],
            ["id", "value"],
            IN_LIST.format(measure, define),
            ["val"],
            [(v,) for v in values],
        )
        for measure, define, values in [
            ("FIRST(A.value) IN (300, LAST(A.value))", "true", (False, False, True, True)),
            ("CLASSIFIER() IN ('X', lower(CLASSIFIER()))", "true", (False,) * 4),
            ("MATCH_NUMBER() IN (0, MATCH_NUMBER())", "true", (True,) * 4),
            # testSubqueries, each subquery written as its value
            ("'x'", "true", ("x",) * 4),
            ("FINAL LAST(A.value + 1000)", "FIRST(A.value < 0 OR true)", (1400,) * 4),
            ("FIRST(id % 2 IN (0))", "FIRST(value * 0 IN (0))", (False, True, False, True)),
        ]
    ],
    (
        "testPotentiallyExponentialMatch",
        [(1,)] * 20,
        ["value"],
        "MEASURES CLASSIFIER() AS classy PATTERN ((A+)+ B) DEFINE A AS value = 1, B AS value = 2",
        ["classy"],
        [],
    ),
    (
        "testExponentialMatch",
        [(i,) for i in range(1, 10)],
        ["value"],
        "ORDER BY value MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH "
        f"PATTERN ((A | B)+ LAST) DEFINE LAST AS {EIGHT_FIRSTS}",
        ["classy"],
        [("B",)] * 8 + [("LAST",)],
    ),
]


#: (id, part, value) rows, out of order, of Trino's partitioned aggregation cases
PARTED = [(1, "p1", 1), (2, "p1", 1), (6, "p1", 1), (2, "p2", 10), (2, "p3", 100)]
PARTED += [(1, "p3", 100), (3, "p1", 1), (4, "p1", 1), (5, "p1", 1), (1, "p2", 10)]
PARTED += [(3, "p3", 100), (3, "p2", 10)]
ROLLING = [("p1", i, i) for i in range(1, 7)] + [("p2", i, 10 * i) for i in range(1, 4)]
ROLLING += [("p3", i, 100 * i) for i in range(1, 4)]
ROLLING_TWICE = [("p1", 1, 1), ("p1", 2, 2), ("p1", 3, 3), ("p1", 4, 1), ("p1", 5, 2)]
ROLLING_TWICE += [("p1", 6, 3), *ROLLING[6:]]
RISING = [(i, "p1", i) for i in range(1, 6)] + [(i, "p2", 2 * i) for i in range(1, 6)]
TENTATIVE = [("p1", 1, "B", 1), ("p1", 2, "B", 2), ("p1", 3, "B", 3), ("p1", 4, "B", 4)]
TENTATIVE += [("p1", 5, "A", 5), ("p2", 1, "B", 2), ("p2", 2, "B", 4), ("p2", 3, "A", 6)]
TENTATIVE += [("p2", 4, "A", 8), ("p2", 5, "A", 10)]
LETTERS = [("p1", i, c) for i, c in enumerate("abcdef", 1)]
LETTERS += [("p2", i, c) for i, c in enumerate("ghi", 1)] + [
    ("p3", i, c) for i, c in enumerate("jkl", 1)
]
SKIP_PAST = "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW"
EIGHT = [(i,) for i in range(1, 9)]
ABCD = list("ABCD")

#: TestAggregationsInRowPatternMatching, as CASES
AGGREGATION_CASES: list[tuple[str, list[tuple[Any, ...]], list[str], str, list[str], list[Any]]]
AGGREGATION_CASES = [
    (
        "testSimpleQuery sum",
        EIGHT,
        ["id"],
        f"ORDER BY id MEASURES RUNNING sum(id) AS s {SKIP_PAST} PATTERN (A*) DEFINE A AS true",
        ["id", "s"],
        [(i, i * (i + 1) // 2) for i in range(1, 9)],
    ),
    (
        "testSimpleQuery array_agg",
        EIGHT,
        ["id"],
        f"ORDER BY id MEASURES RUNNING array_agg(CLASSIFIER(A)) AS labels {SKIP_PAST} "
        "PATTERN (A*) DEFINE A AS true",
        ["id", "labels"],
        [(i, ["A"] * i) for i in range(1, 9)],
    ),
    (
        "testPartitioning",
        PARTED,
        ["id", "part", "value"],
        f"PARTITION BY part ORDER BY id MEASURES RUNNING sum(value) AS s {SKIP_PAST} "
        "PATTERN (B+) DEFINE B AS true",
        ["part", "id", "s"],
        ROLLING,
    ),
    (
        "testPartitioning skip to next row",
        PARTED,
        ["id", "part", "value"],
        "PARTITION BY part ORDER BY id MEASURES RUNNING sum(value) AS s, MATCH_NUMBER() AS m "
        "ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (B+) DEFINE B AS true",
        ["part", "m", "id", "s"],
        [
            (p, m, i, v * (i - m + 1))
            for p, n, v in (("p1", 6, 1), ("p2", 3, 10), ("p3", 3, 100))
            for m in range(1, n + 1)
            for i in range(m, n + 1)
        ],
    ),
    (
        "testTentativeLabelMatch avg(B)",
        [(1, 4), (2, 6), (3, 0)],
        ["id", "value"],
        "ORDER BY id MEASURES RUNNING avg(B.value) AS avg_b, CLASSIFIER() AS classy "
        f"{SKIP_PAST} PATTERN ((A | B)*) DEFINE A AS avg(B.value) = 5",
        ["id", "classy", "avg_b"],
        [(1, "B", 4), (2, "B", 5), (3, "A", 5)],
    ),
    (
        "testTentativeLabelMatch avg(A)",
        [(1, 4), (2, 6), (3, 0), (4, 5)],
        ["id", "value"],
        "ORDER BY id MEASURES RUNNING avg(A.value) AS avg_a, CLASSIFIER() AS classy "
        f"{SKIP_PAST} PATTERN ((A | B)*) DEFINE A AS avg(A.value) = 5",
        ["id", "classy", "avg_a"],
        [(1, "B", N), (2, "B", N), (3, "B", N), (4, "A", 5)],
    ),
    (
        "testTentativeLabelMatch sum over 1000",
        PARTED,
        ["id", "part", "value"],
        f"PARTITION BY part ORDER BY id MEASURES RUNNING sum(value) AS s {SKIP_PAST} "
        "PATTERN (B (A | B) B) DEFINE A AS sum(value) > 1000",
        ["part", "id", "s"],
        ROLLING_TWICE,
    ),
    (
        "testTentativeLabelMatch sum over 4",
        [(i, "p1", 1) for i in range(1, 6)] + [(i, "p2", 2) for i in range(1, 6)],
        ["id", "part", "value"],
        "PARTITION BY part ORDER BY id MEASURES RUNNING sum(value) AS s, CLASSIFIER() AS classy "
        f"{SKIP_PAST} PATTERN ((A | B)*) DEFINE A AS sum(value) > 4",
        ["part", "id", "classy", "s"],
        [(p, i, c, v) for p, i, c, v in TENTATIVE if p == "p2"]
        + [("p1", i, "B" if i < 5 else "A", i) for i in range(1, 6)],
    ),
    *[
        (
            name,
            RISING,
            ["id", "part", "value"],
            "PARTITION BY part ORDER BY id MEASURES RUNNING max(value) AS top, "
            f"CLASSIFIER() AS classy {SKIP_PAST} PATTERN ((A | B)*) DEFINE A AS {condition}",
            ["part", "id", "classy", "top"],
            TENTATIVE,
        )
        for name, condition in [
            ("testTentativeLabelMatch max", "max(value) > 4"),
            (
                "testTentativeLabelMatchWithRuntimeEvaluatedAggregationArgument",
                "max(value + MATCH_NUMBER()) > 5",
            ),
        ]
    ],
    (
        "testAggregationArguments value || CLASSIFIER()",
        LETTERS,
        ["part", "id", "value"],
        f"PARTITION BY part ORDER BY id MEASURES array_agg(value || CLASSIFIER()) AS m {SKIP_PAST} "
        "PATTERN (X Y Z+) DEFINE X AS true",
        ["part", "id", "m"],
        [
            (
                p,
                i,
                [
                    f"{c}{'XYZ'[min(j, 2)]}"
                    for j, (_, _, c) in enumerate([r for r in LETTERS if r[0] == p][:i])
                ],
            )
            for p, i, _ in LETTERS
        ],
    ),
    (
        "testAggregationArguments value || value",
        [(1, "a"), (2, "b"), (3, "c")],
        ["id", "value"],
        f"ORDER BY id MEASURES array_agg(value || value || CLASSIFIER()) AS m {SKIP_PAST} "
        "PATTERN (X Y Z) DEFINE X AS true",
        ["id", "m"],
        [(1, ["aaX"]), (2, ["aaX", "bbY"]), (3, ["aaX", "bbY", "ccZ"])],
    ),
    (
        "testAggregationArguments subqueries as values",
        [(1, "a"), (2, "b"), (3, "c")],
        ["id", "value"],
        "ORDER BY id MEASURES array_agg(CLASSIFIER() || 'A') AS m1, "
        "array_agg(MATCH_NUMBER() = 10 AND 0 IN (1)) AS m2, array_agg(MATCH_NUMBER() = 1) AS m3 "
        f"{SKIP_PAST} PATTERN (X Y Z) DEFINE X AS true",
        ["id", "m1", "m2", "m3"],
        [(i, [f"{c}A" for c in "XYZ"[:i]], [False] * i, [True] * i) for i in (1, 2, 3)],
    ),
    (
        "testSelectiveAggregation",
        [(1, "a"), (2, "b"), (3, "c"), (4, "d")],
        ["id", "value"],
        "ORDER BY id MEASURES array_agg(U.id) AS m1, array_agg(CLASSIFIER(U)) AS m2, "
        f"array_agg(U.value || CLASSIFIER(U)) AS m3 {SKIP_PAST} PATTERN (X Y Z Y) "
        "SUBSET U = (X, Z) DEFINE X AS true",
        ["id", "m1", "m2", "m3"],
        [
            (1, [1], ["X"], ["aX"]),
            (2, [1], ["X"], ["aX"]),
            (3, [1, 3], ["X", "Z"], ["aX", "cZ"]),
            (4, [1, 3], ["X", "Z"], ["aX", "cZ"]),
        ],
    ),
    (
        "testCountAggregation",
        [(1, "a"), (2, "b"), (3, "c"), (4, "d")],
        ["id", "value"],
        f"ORDER BY id MEASURES count(*) AS m1, count() AS m2 {SKIP_PAST} PATTERN (X Y Z) "
        "DEFINE X AS id > 1",
        ["id", "m1", "m2"],
        [(2, 1, 1), (3, 2, 2), (4, 3, 3)],
    ),
    (
        "testCountAggregation RUNNING and FINAL",
        [(1, "a"), (2, "b"), (3, "c"), (4, "d")],
        ["id", "value"],
        "ORDER BY id MEASURES RUNNING count(*) AS m1, FINAL count(*) AS m2, RUNNING count() AS m3, "
        f"FINAL count() AS m4 {SKIP_PAST} PATTERN (A B C D) DEFINE A AS true",
        ["id", "m1", "m2", "m3", "m4"],
        [(i, i, 4, i, 4) for i in range(1, 5)],
    ),
    (
        "testCountAggregation of variables",
        [(1, "a"), (2, "b"), (3, "c"), (4, "d")],
        ["id", "value"],
        f"ORDER BY id MEASURES count(C.*) AS m1, count(U.*) AS m2 {SKIP_PAST} PATTERN (A B C D) "
        "SUBSET U = (B, D) DEFINE A AS true",
        ["id", "m1", "m2"],
        [(1, 0, 0), (2, 0, 1), (3, 1, 1), (4, 1, 2)],
    ),
    (
        "testLabelAndColumnNames",
        [(1, "p"), (2, "q"), (3, None), (4, "s")],
        ["id", "A"],
        "ORDER BY id MEASURES CLASSIFIER() AS classy, count(A.A) AS m1, count(A) AS m2, "
        "count(A.*) AS m3 ALL ROWS PER MATCH PATTERN (A B A A) DEFINE A AS true",
        ["id", "classy", "m1", "m2", "m3"],
        [(1, "A", 1, 1, 1), (2, "B", 1, 2, 1), (3, "A", 1, 2, 2), (4, "A", 2, 3, 3)],
    ),
    (
        "testOneRowPerMatch",
        [("p1", i, c) for i, c in enumerate("abcdef", 1)]
        + [("p2", i, c) for i, c in enumerate("ghijkl", 1)],
        ["part", "id", "value"],
        "PARTITION BY part ORDER BY id MEASURES array_agg(value || CLASSIFIER()) AS m "
        "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z) DEFINE X AS true",
        ["part", "m"],
        [
            ("p1", ["aX", "bY", "cZ"]),
            ("p1", ["dX", "eY", "fZ"]),
            ("p2", ["gX", "hY", "iZ"]),
            ("p2", ["jX", "kY", "lZ"]),
        ],
    ),
    (
        "testExclusions",
        [(p, i, f"{p[1]}{c}") for p in ("p1", "p2") for i, c in enumerate("abcde", 1)],
        ["part", "id", "value"],
        "PARTITION BY part ORDER BY id MEASURES array_agg(value) AS m1, "
        f"array_agg(value || CLASSIFIER()) AS m2 {SKIP_PAST} PATTERN (P {{- Q R -}} S) "
        "DEFINE P AS id > 1",
        ["part", "m1", "m2"],
        [(p, [f"{p[1]}b"], [f"{p[1]}bP"]) for p in ("p1", "p2")]
        + [
            (p, [f"{p[1]}{c}" for c in "bcde"], [f"{p[1]}{c}" for c in ("bP", "cQ", "dR", "eS")])
            for p in ("p1", "p2")
        ],
    ),
    (
        "testBalancingSums",
        list(zip(range(1, 10), [4, 6, 10, 1, 1, 1, 10, 5, 1], strict=True)),
        ["id", "value"],
        "ORDER BY id MEASURES RUNNING sum(A.value) AS sa, RUNNING sum(B.value) AS sb, "
        f"CLASSIFIER() AS classy {SKIP_PAST} PATTERN ((A | B)*) "
        "DEFINE A AS sum(A.value) - A.value <= sum(B.value)",
        ["id", "classy", "sa", "sb"],
        [
            (1, "B", N, 4),
            (2, "A", 6, 4),
            (3, "B", 6, 14),
            (4, "A", 7, 14),
            (5, "A", 8, 14),
            (6, "A", 9, 14),
            (7, "A", 19, 14),
            (8, "B", 19, 19),
            (9, "A", 20, 19),
        ],
    ),
    (
        "testPeriodLength",
        [(1, 3), (1, 4), (1, 5), (1, 8), (1, 9), (2, 2), (2, 3), (2, 4)],
        ["user_id", "minute"],
        "PARTITION BY user_id ORDER BY minute MEASURES "
        "COALESCE(sum(C.minute) - sum(A.minute), 0) AS total ONE ROW PER MATCH "
        "PATTERN ((A B* C | D)*) DEFINE B AS minute = PREV(minute) + 1, "
        "C AS minute = PREV(minute) + 1",
        ["user_id", "total"],
        [(1, 3), (2, 2)],
    ),
    (
        "testSetPartitioning in two",
        EIGHT,
        ["id"],
        f"ORDER BY id MEASURES RUNNING array_agg(CLASSIFIER()) AS labels {SKIP_PAST} "
        "PATTERN (^(A | B)* (LAST_A | LAST_B)$) DEFINE LAST_A AS sum(A.id) + id = sum(B.id), "
        "LAST_B AS sum(B.id) + id = sum(A.id)",
        ["id", "labels"],
        [(i, (["A"] * 4 + ["B"] * 3 + ["LAST_A"])[:i]) for i in range(1, 9)],
    ),
    (
        "testSetPartitioning in three",
        [(i,) for i in range(1, 7)],
        ["id"],
        f"ORDER BY id MEASURES RUNNING array_agg(CLASSIFIER()) AS labels {SKIP_PAST} "
        "PATTERN (^(A | B | C)* (LAST_A | LAST_B | LAST_C)$) DEFINE "
        "LAST_A AS sum(A.id) + id = sum(B.id) AND sum(B.id) = sum(C.id), "
        "LAST_B AS sum(B.id) + id = sum(A.id) AND sum(A.id) = sum(C.id), "
        "LAST_C AS sum(C.id) + id = sum(A.id) AND sum(A.id) = sum(B.id)",
        ["id", "labels"],
        [(i, ["A", "B", "C", "C", "B", "LAST_A"][:i]) for i in range(1, 7)],
    ),
    (
        "testMultipleAggregationsInDefine",
        EIGHT,
        ["id"],
        "ORDER BY id MEASURES MATCH_NUMBER() AS m, array_agg(CLASSIFIER()) AS labels "
        "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ((A | B){4}) DEFINE "
        "A AS max(id - 2 * MATCH_NUMBER()) > 1 AND max(CLASSIFIER()) = 'B', "
        "B AS min(lower(CLASSIFIER())) = 'b' OR min(MATCH_NUMBER() + 100) < 0",
        ["m", "labels"],
        [(1, ["B", "B", "B", "A"]), (2, ["B", "A", "A", "A"])],
    ),
    (
        "testRunningAndFinalAggregations",
        EIGHT,
        ["id"],
        "ORDER BY id MEASURES MATCH_NUMBER() AS m, RUNNING array_agg(CLASSIFIER()) AS rl, "
        "FINAL array_agg(lower(CLASSIFIER())) AS fl, RUNNING sum(MATCH_NUMBER() * 100) AS rm, "
        f"FINAL sum(-MATCH_NUMBER()) AS fm {SKIP_PAST} PATTERN (A B C D) DEFINE A AS true",
        ["id", "m", "rl", "fl", "rm", "fm"],
        [
            (
                i,
                1 + (i > 4),
                ABCD[: (i - 1) % 4 + 1],
                list("abcd"),
                ((i - 1) % 4 + 1) * 100 * (1 + (i > 4)),
                -4 * (1 + (i > 4)),
            )
            for i in range(1, 9)
        ],
    ),
]


#: TestCopyAggregationStateInRowPatternMatching's cases in kleene's functions (the others
#: read Trino's map and array functions)
#: The cases that call Trino's arrays and its aggregates of pairs and of truth values
AGGREGATION_CASES += [
    (
        "testSimpleQuery concat_ws of an array_agg",
        EIGHT,
        ["id"],
        "ORDER BY id MEASURES concat_ws('', RUNNING array_agg(lower(CLASSIFIER(U)))) AS labels "
        f'{SKIP_PAST} PATTERN (M A X X T C H "!") SUBSET U = (M, A, T, C, H, "!") '
        "DEFINE M AS true",
        ["id", "labels"],
        list(enumerate(["m", "ma", "ma", "ma", "mat", "matc", "match", "match!"], 1)),
    ),
    (
        "testTentativeLabelMatch arbitrary over 1000",
        PARTED,
        ["id", "part", "value"],
        f"PARTITION BY part ORDER BY id MEASURES RUNNING sum(value) AS s {SKIP_PAST} "
        "PATTERN (B (A | B) B) DEFINE A AS arbitrary(value) > 1000",
        ["part", "id", "s"],
        ROLLING_TWICE,
    ),
    (
        "testAggregationArguments max_by of CLASSIFIER()",
        [(1, "p"), (2, "q"), (3, "r"), (4, "s")],
        ["id", "value"],
        f"ORDER BY id MEASURES max_by(value, CLASSIFIER()) AS m {SKIP_PAST} "
        "PATTERN (A B D C) DEFINE A AS true",
        ["id", "m"],
        [(1, "p"), (2, "q"), (3, "r"), (4, "r")],
    ),
    (
        "testMultipleAggregationArguments",
        EIGHT,
        ["id"],
        "ORDER BY id MEASURES MATCH_NUMBER() AS match, CLASSIFIER() AS classy, "
        "RUNNING max_by(MATCH_NUMBER() * 100 + id, CLASSIFIER()) AS running_measure, "
        "FINAL max_by(-MATCH_NUMBER() - id, lower(CLASSIFIER())) AS final_measure "
        f"{SKIP_PAST} PATTERN (A B C D) DEFINE A AS max_by(MATCH_NUMBER(), CLASSIFIER()) > 0",
        ["id", "classy", "match", "running_measure", "final_measure"],
        [
            (i, "ABCD"[(i - 1) % 4], (i + 3) // 4, (i + 3) // 4 * 100 + i, -5 * ((i + 3) // 4))
            for i in range(1, 9)
        ],
    ),
    (
        "testForkingThreads",
        [(1,), (2,), (3,), (4,)],
        ["id"],
        f"ORDER BY id MEASURES RUNNING array_agg(CLASSIFIER()) AS labels {SKIP_PAST} "
        "PATTERN ((A | B | C)* X) DEFINE X AS array_agg(CLASSIFIER()) = ARRAY['C', 'A', 'B', 'X']",
        ["id", "labels"],
        [(1, ["C"]), (2, ["C", "A"]), (3, ["C", "A", "B"]), (4, ["C", "A", "B", "X"])],
    ),
]
FORKED = "ORDER BY id MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH PATTERN ((A | B)* X) "
AGGREGATION_CASES += [
    (f"TestCopyAggregationStateInRowPatternMatching {define}", [(1,), (2,), (3,)], ["id"],
     FORKED + define, ["id", "classy"], [(1, "B"), (2, "A"), (3, "X")])
    for define in [
        "DEFINE X AS avg(CAST(B.id AS decimal(2, 1))) = 1e0",
        "DEFINE X AS avg(CAST(B.id AS decimal(30, 20))) = 1e0",
        "DEFINE X AS sum(CAST(B.id AS decimal(2, 1))) = 1.0",
        "DEFINE X AS sum(CAST(B.id AS decimal(30, 20))) = 1.0",
    ]
]  # fmt: skip


def _plain(value: Any) -> Any:
    """A cell as Python reads it: null for None, NaN and pandas' NA, whole floats as ints."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "tolist"):  # a numpy scalar or array (array_agg's lists)
        value = value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@pytest.mark.parametrize("given", ["mappings", "frame"])
@pytest.mark.parametrize(
    ("rows", "columns", "clause", "read", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES + AGGREGATION_CASES],
)
def test_trinos_case(given, rows, columns, clause, read, expected):
    data: Any = [dict(zip(columns, row, strict=True)) for row in rows]
    if given == "frame":
        data = pd.DataFrame(data, columns=columns)
    frame = kleene.match_recognize(data, clause)
    got = [tuple(_plain(record[c]) for c in read) for record in frame.to_dict("records")]
    assert sorted(got, key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize(
    ("skip", "message"),
    [
        ("AFTER MATCH SKIP TO A", "that is the match's own first row"),
        ("AFTER MATCH SKIP TO D", "maps no row to D"),
    ],
)
def test_trinos_failing_skips(skip, message):
    """testAfterMatchSkip: a skip to the match's first row, or to a variable it maps no row
    to, fails (Trino: "AFTER MATCH SKIP failed: ...")."""
    rows = [{"id": i, "value": v} for i, v in R6]
    with pytest.raises(PatternError, match=message):
        kleene.match_recognize(rows, SKIPPING.format(skip))


def test_trinos_output_layout():
    """testOutputLayout: ALL ROWS PER MATCH gives the PARTITION BY columns, the ORDER BY
    columns, the measures, then the input's other columns; ONE ROW PER MATCH the PARTITION
    BY columns and the measures."""
    rows = [{"id": "ordering", "part": "partitioning", "value": 90}]
    clause = "PARTITION BY part ORDER BY id MEASURES CLASSIFIER() AS classy {} PATTERN (A) "
    clause += "DEFINE A AS true"
    every = kleene.match_recognize(rows, clause.format("ALL ROWS PER MATCH"))
    assert every.to_dict("records") == [
        {"part": "partitioning", "id": "ordering", "classy": "A", "value": 90}
    ]
    assert list(every.columns) == ["part", "id", "classy", "value"]
    one = kleene.match_recognize(rows, clause.format("ONE ROW PER MATCH"))
    assert one.to_dict("records") == [{"part": "partitioning", "classy": "A"}]
