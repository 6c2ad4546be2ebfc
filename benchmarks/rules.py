"""Many rules over one stream: one engine running N rules of the peers' kind at once
against N separate runs (`kleene.match` a rule at a time), in-process, on the same list
of dicts.

The rules are the peers' five shapes (P0-P4, `benchmarks.peers`) over triples of the
symbols S0..S9, drawn with a fixed seed, all under skip-till-any-match within 9 ticks.
Each side converts the dicts itself: the separate runs each convert every tick; the one
engine converts a tick once and sends it only to the rules naming its symbol. The matches
are counted on both sides and must agree, rule by rule.

>>> results, _, _ = run(argparse.Namespace(events=2000, rules=6, repeat=1))
>>> [(r.plan, r.matches == results[0].matches) for r in results]
[('6 separate runs', True), ('one engine, 6 rules', True)]
"""

from __future__ import annotations

import argparse
import random
import time

import kleene
from benchmarks.harness import Column, Result, rounds
from benchmarks.peers import PATTERNS, SYMBOLS, tick_rows
from kleene.errors import KleeneError

__all__ = ["arguments", "rules", "run"]


def rules(count: int, seed: int = 7) -> dict[str, str]:
    """`count` rules: the peers' shapes in turn, each over three symbols drawn at random."""
    draw = random.Random(seed)
    shapes = list(PATTERNS.values())
    made = {}
    for number in range(count):
        text = shapes[number % len(shapes)]
        for old, new in zip(("S0", "S1", "S2"), draw.sample(SYMBOLS, 3), strict=True):
            text = text.replace(f"{old} ", f"@{new} ")
        made[f"r{number}"] = text.replace("@", "")
    return made


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=100_000, help="ticks (100000)")
    parser.add_argument("--rules", type=int, default=100, help="rules (100)")


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str]:
    ticks = [
        {"type": SYMBOLS[s], "ts": ts, "price": p, "volume": v}
        for s, p, v, ts in tick_rows(args.events)
    ]
    queries = rules(args.rules)
    compiled = {name: kleene.compile(text, name=name) for name, text in queries.items()}

    def separate() -> tuple[dict[str, int], float]:
        started = time.process_time()
        counts = {name: len(kleene.match(plan, ticks)) for name, plan in compiled.items()}
        return counts, time.process_time() - started

    def together() -> tuple[dict[str, int], float]:
        started = time.process_time()
        found = kleene.match(dict(compiled), ticks)
        return {name: len(each) for name, each in found.items()}, time.process_time() - started

    apart = f"{args.rules} separate runs"
    one = f"one engine, {args.rules} rules"
    best = rounds({apart: separate, one: together}, args.repeat)
    if best[apart][0] != best[one][0]:
        differ = sorted(n for n in queries if best[apart][0][n] != best[one][0][n])
        raise KleeneError(f"the rules' counts differ between the two sides: {differ[:5]}")
    setting = f"{args.rules} rules, n={args.events:,}"
    results = [
        Result(setting, name, args.events, seconds, sum(counts.values()))
        for name, (counts, seconds) in best.items()
    ]
    return results, [Column("CPU s", lambda r, _: r.seconds, ".2f")], apart
