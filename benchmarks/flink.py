"""The forms Flink CEP and CORE users write: five Flink-style queries (the CEP guide's `C A+ B`
loop under followedBy, a fraud pattern of strict next() steps within a window, an optional
element before an UNTIL loop, an iterative UNTIL, timed-out partial matches) and two
CORE-style ones (contiguous iteration, CONSUME BY ANY), on a generated stream of keyed,
priced events (`flink_stream`).

Each runs on `auto` and on `reference` (their counts must agree), and the nearest query
SASE+ writes runs on `nfa` beside them (its own count: it means something else). The ratio
column divides each row's events/s by reference's in the same setting.

>>> results, _, _ = run(argparse.Namespace(events=400, keys=4, queries=["loop", "consume"],
...                                        repeat=1, bytecodes=False))
>>> [(r.setting.split()[0], r.plan) for r in results]  # doctest: +NORMALIZE_WHITESPACE
[('loop', 'reference'), ('loop', 'auto: nfa'), ('loop', 'nfa (SASE+ form)'),
 ('consume', 'reference'), ('consume', 'auto: nfa'), ('consume', 'nfa (SASE+ form)')]

With `--bytecodes`, each run is traced once and its cost counted in bytecode instructions,
which do not move with the machine: in all, and in the engine's send loop, which every plan
pays alike. A plan cannot run at ten times `reference` where a tenth of reference's count is
less than the send loop's own.

>>> results, columns, _ = run(argparse.Namespace(events=400, keys=4, queries=["loop"],
...                                              repeat=1, bytecodes=True))
>>> reference, auto, _ = results
>>> reference.matches == auto.matches, 0 < auto.counts["send_loop"] < auto.counts["bytecodes"]
(True, True)
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from functools import partial
from typing import Any

import kleene
from benchmarks.harness import (
    TRACED,
    Column,
    Result,
    best_of,
    count,
    engine_run,
)
from kleene.errors import KleeneError
from kleene.events import Event

__all__ = ["BYTECODE_COLUMNS", "QUERIES", "arguments", "flink_stream", "run"]

#: Setting → (the query, its engine options, the nearest SASE+ query, its options).
QUERIES: dict[str, tuple[str, dict[str, Any], str, dict[str, Any]]] = {
    # begin(c).followedBy(a).oneOrMore().followedBy(b), keyed, within 20
    "loop": (
        "PATTERN SEQ(C c, A+ a[], B b) WHERE relaxed_contiguity { [k] } WITHIN 20",
        {},
        "PATTERN SEQ(C c, A+ a[], B b) WHERE skip_till_next_match { [k] } WITHIN 20",
        {},
    ),
    # begin(a).next(b).next(c) on a keyed stream: three rising prices in a row
    "fraud": (
        "PATTERN SEQ(A a, B b, C c) WHERE partition_contiguity"
        " { [k] AND b.price > a.price AND c.price > b.price } WITHIN 10 EXCLUSIVE",
        {},
        "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match"
        " { [k] AND b.price > a.price AND c.price > b.price } WITHIN 10 EXCLUSIVE",
        {},
    ),
    # begin(c).followedBy(b).optional().followedBy(a).oneOrMore().until(price > 90)
    #   .followedBy(d)
    "optional until": (
        "PATTERN SEQ(C c, B? b, A+ a[] UNTIL (a.price > 90), D d)"
        " WHERE relaxed_contiguity { [k] } WITHIN 20",
        {},
        "PATTERN SEQ(C c, A+ a[], D d) WHERE skip_till_next_match { [k] } WITHIN 20",
        {},
    ),
    # begin(c).followedBy(a).oneOrMore().until(the loop's prices so far above 150)
    #   .followedBy(d): an iterative until
    "iterative until": (
        "PATTERN SEQ(C c, A+ a[] UNTIL (sum(a[..i-1].price) > 150), D d)"
        " WHERE relaxed_contiguity { [k] } WITHIN 20",
        {},
        "PATTERN SEQ(C c, A+ a[], D d) WHERE skip_till_next_match { [k] } WITHIN 20",
        {},
    ),
    # a TimedOutPartialMatchHandler on begin(a).followedBy(b).followedBy(c).within(10)
    "timeouts": (
        "PATTERN SEQ(A a, B b, C c) WHERE relaxed_contiguity { [k] } WITHIN 10",
        {"timeouts": True},
        "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match { [k] } WITHIN 10",
        {},
    ),
    # CORE: (A as a):+ ; B as b WITHIN 10 [ts]
    "contiguous iteration": (
        "PATTERN SEQ(A+ a[], B b) WHERE skip_till_any_match strict_contiguity(a[]) WITHIN 10",
        {},
        "PATTERN SEQ(A+ a[], B b) WHERE strict_contiguity WITHIN 10",
        {},
    ),
    # CORE: A as a ; B as b ; C as c WITHIN 10 [ts] CONSUME BY ANY
    "consume": (
        "PATTERN SEQ(A a, B b, C c) WITHIN 10 CONSUME BY ANY",
        {},
        "PATTERN SEQ(A a, B b, C c) WITHIN 10",
        {"output": "non_overlapping"},
    ),
}


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=100_000, help="stream size (100000)")
    parser.add_argument("--keys", type=int, default=20, help="partition keys k (20)")
    parser.add_argument(
        "--queries", nargs="+", choices=list(QUERIES), default=list(QUERIES), help="which to run"
    )
    parser.add_argument(
        "--bytecodes",
        action="store_true",
        help="count the bytecode instructions an event costs (once, traced) instead of "
        "timing: in all, and in the engine's send loop (kleene/runtime/send.py); the "
        "events/s column is then the traced run's",
    )


def flink_stream(size: int, keys: int, seed: int = 7) -> list[Event]:
    """Types A, B, C, D and X (A and B twice as often), a price in 1..100 and a key k, one
    event per time unit."""
    rng = random.Random(seed)
    return [
        Event(rng.choice("AABBCDX"), t, {"k": rng.randrange(keys), "price": rng.randint(1, 100)}, t)
        for t in range(size)
    ]


#: The columns of `--bytecodes`: each run's bytecodes an event, the send loop's, and
#: reference's over its own.
BYTECODE_COLUMNS = [*TRACED, Column("reference / this", count("vs_reference"), ".2f")]


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    events = flink_stream(args.events, args.keys)
    results: list[Result] = []
    measure = partial(engine_run, traced=args.bytecodes)
    repeat = 1 if args.bytecodes else args.repeat
    for name in args.queries:
        query, options, sase, sase_options = QUERIES[name]
        setting = f"{name} n={args.events:,}"
        chosen = kleene.compile(query, **options).name
        measured = [
            best_of(repeat, partial(measure, query, events, "reference", setting, **options)),
            best_of(
                repeat,
                partial(measure, query, events, "auto", setting, f"auto: {chosen}", **options),
            ),
            best_of(
                repeat,
                partial(measure, sase, events, "nfa", setting, "nfa (SASE+ form)", **sase_options),
            ),
        ]
        if measured[0].matches != measured[1].matches:
            raise KleeneError(
                f"{setting}: reference found {measured[0].matches} matches, auto "
                f"({chosen}) {measured[1].matches}"
            )
        for result in measured:
            print(f"benchmarks: {result}", file=sys.stderr)
        if args.bytecodes:  # each run's count against reference's, which it divides
            spent = measured[0].counts["bytecodes"]
            measured = [
                replace(r, counts={**r.counts, "vs_reference": spent / r.counts["bytecodes"]})
                for r in measured
            ]
        results += measured
    if args.bytecodes:  # (the traced runs' events/s say nothing: no ratio of them)
        return results, BYTECODE_COLUMNS, None
    return results, [], "reference"
