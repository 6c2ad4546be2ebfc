"""Cases from CORE's own test suite (`evaluation_algorithm.cpp`, `consumption_policy.cpp`,
`not-eval.cpp`), each CEQL query written as the kleene query docs/core.md gives for it,
run on every plan that takes the query.

CORE's stream is the papers' stock example: SELL and BUY events with a name and a price
(and a partition number where the query partitions), one a time unit. A match is the
positions of the events it binds. A name CEQL binds several times (`SELL as msft: … SELL as
msft`) is a variable each time in kleene; CEQL's `NOT(SELL)` (one event of another type,
not reported) is `_ n` with `n.type != 'SELL'`, which kleene reports.
"""

from __future__ import annotations

from typing import Any

import pytest

import kleene
from kleene.testing import plans_taking

PAPER = "SELL:MSFT:101 SELL:MSFT:102 SELL:INTL:80 BUY:INTL:80 SELL:AMZN:1900"
FILTERS = (
    "msft.name = 'MSFT' AND msft.price > 100 AND intel.name = 'INTL' AND amzn.name = 'AMZN' "
    "AND amzn.price < 2000"
)
THREE = f"PATTERN SEQ(SELL msft, SELL intel, SELL amzn) WHERE {FILTERS}"
MIXED = (
    "PATTERN SEQ(SELL+ msft[], (SELL | BUY) intel, SELL amzn) WHERE skip_till_any_match "
    "strict_contiguity(msft[]) { msft[i].name = 'MSFT' AND intel.name = 'INTL' AND "
    "amzn.name = 'AMZN' }"
)
#: CEQL's long contiguous query binds msft, intel and amzn three times each
LONG_NAMES = [f"{v}{k}" for k in range(3) for v in ("m", "i", "a")]
LONG = (
    f"PATTERN SEQ({', '.join('SELL ' + n for n in LONG_NAMES)}) WHERE strict_contiguity {{ "
    + " AND ".join(
        f"{n}.name = '{ {'m': 'MSFT', 'i': 'INTL', 'a': 'AMZN'}[n[0]] }'" for n in LONG_NAMES
    )
    + " }"
)
ANY_TYPE = "(SELL | BUY)"
PARTS = " ".join(
    f"{kind}:{name}:{price}:{part}"
    for kind, name, price in [
        ("SELL", "MSFT", 101), ("SELL", "MSFT", 102), ("SELL", "INTL", 80), ("BUY", "INTL", 80),
        ("SELL", "AMZN", 1900), ("SELL", "INTL", 81), ("SELL", "AMZN", 1920),
    ]
    for part in (0, 1)
)  # fmt: skip

#: (CORE's test, the query, the events TYPE:name:price[:part], every match as positions)
CASES: list[tuple[str, str, str, list[tuple[int, ...]]]] = [
    ("the example stream of the papers, CONSUME BY NONE", THREE + " CONSUME BY NONE",
     PAPER + " SELL:INTL:81 SELL:AMZN:1920",
     [(1, 2, 4), (0, 2, 4), (1, 2, 6), (0, 2, 6), (1, 5, 6), (0, 5, 6)]),
    ("the example stream of the paper within 5 events", THREE + " WITHIN 5 EVENTS",
     PAPER + " SELL:INTL:81 SELL:AMZN:1920", [(1, 2, 4), (0, 2, 4), (1, 2, 6), (1, 5, 6)]),
    ("a query with contiguous events",
     f"PATTERN SEQ(SELL msft, SELL intel, SELL amzn) WHERE strict_contiguity {{ {FILTERS} }}",
     PAPER + " SELL:MSFT:101 SELL:INTL:80 SELL:AMZN:1900 SELL:INTL:81 SELL:AMZN:1920",
     [(5, 6, 7)]),
    ("long query", LONG,
     PAPER + " SELL:MSFT:101 SELL:INTL:80 SELL:AMZN:1900" * 3 + " SELL:INTL:81 SELL:AMZN:1900",
     [tuple(range(5, 14))]),
    ("long query with continuous and OR",
     f"PATTERN SEQ(SELL v0, {', '.join(f'{ANY_TYPE} v{k}' for k in range(1, 8))}) "
     "WHERE strict_contiguity",
     "SELL:MSFT:101 SELL:INTL:80 BUY:AMZN:1900 SELL:MSFT:101 SELL:INTL:80 SELL:AMZN:1900 "
     "BUY:MSFT:101 BUY:INTL:80 SELL:INTL:81 SELL:AMZN:1920", [tuple(range(8)), tuple(range(1, 9))]),
    ("longer query with continuous and OR v2",
     f"PATTERN SEQ({', '.join(f'{ANY_TYPE} v{k}' for k in range(16))}) WHERE strict_contiguity",
     "SELL:MSFT:101 SELL:INTL:80 BUY:AMZN:1900 SELL:MSFT:101 SELL:INTL:80 SELL:AMZN:1900 "
     "BUY:MSFT:101" + " BUY:INTL:80" * 9, [tuple(range(16))]),
    ("a query with mix of contiguous sequencing, contiguous iteration, and OR", MIXED,
     PAPER + " SELL:MSFT:105 SELL:INTL:85 SELL:AMZN:1901",
     [(1, 2, 4), (0, 1, 2, 4), (0, 2, 4), (1, 3, 4), (0, 1, 3, 4), (0, 3, 4), (5, 6, 7),
      (1, 6, 7), (0, 1, 6, 7), (0, 6, 7), (1, 2, 7), (0, 1, 2, 7), (1, 3, 7), (0, 1, 3, 7),
      (0, 3, 7), (0, 2, 7)]),
    ("a query with mix of contiguous iteration, contiguous sequencing, non contiguous "
     "sequencing, and OR v2",
     MIXED.replace("(msft[])", "(msft[]) strict_contiguity(msft[], intel)"),
     "SELL:MSFT:101 SELL:MSFT:102 BUY:INTL:80 SELL:INTL:80 SELL:AMZN:1900",
     [(1, 2, 4), (0, 1, 2, 4)]),
    ("non contiguous iteration, contiguous sequencing, and non contiguous sequencing",
     "PATTERN SEQ(SELL+ s[], BUY b, SELL c) WHERE skip_till_any_match strict_contiguity(s[], b) "
     "strict_contiguity(b, c)",
     "SELL:MSFT:101 BUY:INTL:80 SELL:MSFT:102 BUY:INTL:80 SELL:AMZN:1900",
     [(0, 1, 2), (2, 3, 4), (0, 2, 3, 4)]),
    ("non contiguous iteration, OR, and AS",
     f"PATTERN SEQ({ANY_TYPE}+ msft[]) WHERE msft[i].name = 'MSFT'",
     "SELL:MSFT:101 BUY:INTL:80 BUY:MSFT:102", [(0,), (2,), (0, 2)]),
    ("non contiguous iteration, and AS", "PATTERN SEQ(SELL+ msft[]) WHERE msft[i].name = 'MSFT'",
     "SELL:MSFT:101 BUY:INTL:80 SELL:MSFT:102", [(0,), (2,), (0, 2)]),
    ("consume by any", THREE + " CONSUME BY ANY", PAPER + " SELL:INTL:81 SELL:AMZN:1920",
     [(1, 2, 4), (0, 2, 4)]),
    ("contiguous sequencing, contiguous iteration, and OR with consume by any",
     MIXED + " CONSUME BY ANY", PAPER + " SELL:MSFT:105 SELL:INTL:85 SELL:AMZN:1901",
     [(1, 2, 4), (0, 1, 2, 4), (0, 2, 4), (1, 3, 4), (0, 1, 3, 4), (0, 3, 4), (5, 6, 7)]),
    ("partition-by two evaluators with consume by any",
     THREE.replace("WHERE ", "WHERE [part] AND ") + " CONSUME BY ANY", PARTS,
     [(2, 4, 8), (0, 4, 8)]),
    ("partition-by two evaluators with consume by partition",
     THREE.replace("WHERE ", "WHERE [part] AND ") + " CONSUME BY PARTITION", PARTS,
     [(2, 4, 8), (0, 4, 8), (3, 5, 9), (1, 5, 9)]),
    ("NOT on the example stream of the papers", "PATTERN SEQ(_ n) WHERE n.type != 'SELL'",
     "SELL:MSFT:101 SELL:MSFT:102 SELL:INTL:80 BUY:INTL:80 SELL:AMZN:100 BUY:AMZN:2000",
     [(3,), (5,)]),
    ("contiguos NOT query", "PATTERN SEQ(_ n, BUY b, SELL s) WHERE n.type != 'SELL'",
     "SELL:MSFT:101 BUY:MSFT:10 BUY:AMZN:1010 SELL:INTL:200", [(1, 2, 3)]),
    ("NOT in a more complex query",
     f"PATTERN SEQ(_ n, SELL msft, SELL intel, BUY amzn) WHERE n.type != 'SELL' AND {FILTERS}",
     "BUY:AMZN:1000 SELL:MSFT:20 BUY:MSFT:900 SELL:MSFT:101 SELL:INTL:100 BUY:AMZN:1000",
     [(2, 3, 4, 5), (0, 3, 4, 5)]),
    ("sequencing NOT query",
     "PATTERN SEQ(_ n, BUY b, SELL s) WHERE strict_contiguity { n.type != 'SELL' }",
     "BUY:MSFT:101 SELL:INTL:1000 BUY:AMZN:200 SELL:AMZN:1000 BUY:INTL:300 BUY:MSFT:1000 "
     "SELL:AMZN:30", [(4, 5, 6)]),
    ("contiguos interspersed NOT query",
     "PATTERN SEQ(BUY b1, _ n1, BUY b2, _ n2, SELL s) WHERE n1.type != 'SELL' AND n2.type != 'BUY'",
     "BUY:MSFT:101 BUY:AMZN:10 BUY:INTL:200 SELL:MSFT:1000 SELL:INTL:212", [(0, 1, 2, 3, 4)]),
]  # fmt: skip


def _events(text: str) -> list[dict[str, Any]]:
    made = []
    for position, written in enumerate(text.split()):
        kind, name, price, *part = written.split(":")
        event = {"type": kind, "ts": position, "name": name, "price": int(price)}
        made.append(event | ({"part": int(part[0])} if part else {}))
    return made


@pytest.mark.parametrize(("case", "query", "stream", "expected"), CASES, ids=[c[0] for c in CASES])
def test_core_case(case, query, stream, expected):
    events = _events(stream)
    ran = []
    for plan in plans_taking(query):
        found = kleene.match(query, events, plan=plan)
        got = sorted(tuple(sorted(e.id for e in m.events)) for m in found)
        assert got == sorted(expected), f"{plan}: {case}"
        ran.append(plan)
    assert {"reference", "nfa"} <= set(ran), f"{case}: only {ran} run it"
