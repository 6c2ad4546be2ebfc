"""LEAD rules on the `petri` plan (Al Bassit, Skhiri & Ammar): against `nfa` on patterns both
languages write (a sequence under `all` is skip-till-any-match, under `every` it is
non-overlapping output; the counts must agree), and the paper's mobile-game rule (Figure 2)
on a generated stream of installations, accesses, shares and purchases (`GameStream`).

>>> results, _, _ = run(argparse.Namespace(events=[300], keys=5, window=5, game_events=[500],
...                                        users=20, repeat=1))
>>> [(r.setting.split()[0], r.plan) for r in results][:2]
[('all(A→B→C)', 'nfa'), ('all(A→B→C)', 'petri')]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import kleene
from benchmarks.harness import Column, Result, best_of
from kleene.errors import KleeneError
from kleene.events import Event
from kleene.testing.workloads import GameStream

__all__ = ["arguments", "run"]

FIGURE_2 = Path(__file__).resolve().parents[1] / "tests" / "lead" / "figure2.lead"
COLUMNS = [Column("garbage consumed", lambda r, _: r.counts.get("garbage_consumed"), ",.0f")]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--events",
        type=int,
        nargs="+",
        default=[20_000],
        help="stream sizes for the patterns both languages write",
    )
    parser.add_argument("--keys", type=int, default=20, help="partition keys (k) in them")
    parser.add_argument("--window", type=int, default=100, help="WITHIN (timestamp units)")
    parser.add_argument(
        "--game-events",
        type=int,
        nargs="+",
        default=[1_000_000],
        help="events of the mobile-game stream",
    )
    parser.add_argument("--users", type=int, default=10_000, help="players in it")  # fmt: skip


def abc_stream(size: int, keys: int, seed: int = 1) -> list[Event]:
    """Types A, B, C and D in equal shares, a key k, one event per time unit."""
    rng = random.Random(seed)
    return [Event(rng.choice("ABCD"), t, {"k": rng.randrange(keys)}, t) for t in range(size)]


def pairs(window: int) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Setting → (SASE+ query, LEAD rule, nfa options): the same matches."""
    emit = "EMIT Event M(a.k AS k)"
    head = "FROM A AS a, B AS b, C AS c MATCH"
    return {
        "all(A→B→C)": (
            f"PATTERN SEQ(A a, B b, C c) WHERE skip_till_any_match {{ [k] }} WITHIN {window}",
            f"{head} all(a Followed By (b Followed By c) Within {window + 1} s From a) "
            f"PARTITION BY a.k {emit}",
            {},
        ),
        "every(A→B→C)": (
            "PATTERN SEQ(A a, B b, C c) WHERE skip_till_any_match { [k] }",
            f"{head} every(a Followed By b Followed By c) PARTITION BY a.k {emit}",
            {"output": "non_overlapping"},
        ),
    }


def _run(query: str, events: list[Event], plan: str, setting: str, **options: Any) -> Result:
    engine = kleene.Engine(query, plan, **options)
    started = time.perf_counter()
    found = engine.send_many(events)
    found += engine.close()
    seconds = time.perf_counter() - started
    counts = {**engine.metrics.as_dict(), **engine.metrics.plan}
    return Result(setting, plan, len(events), seconds, len(found), counts)


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    results: list[Result] = []
    for size in args.events:
        events = abc_stream(size, args.keys)
        for name, (query, rule, options) in pairs(args.window).items():
            setting = f"{name} n={size:,}"
            sase = best_of(args.repeat, partial(_run, query, events, "nfa", setting, **options))
            lead = best_of(args.repeat, partial(_run, rule, events, "petri", setting))
            if sase.matches != lead.matches:
                raise KleeneError(
                    f"{setting}: nfa found {sase.matches} matches, petri {lead.matches}"
                )
            results += [sase, lead]
            print(f"benchmarks: {sase}\nbenchmarks: {lead}", file=sys.stderr)
    rule = FIGURE_2.read_text()
    for size in args.game_events:
        events = list(GameStream(size=size, users=args.users).events())
        setting = f"Figure 2 n={len(events):,} users={args.users:,}"
        game = best_of(args.repeat, partial(_run, rule, events, "petri", setting))
        results.append(game)
        print(f"benchmarks: {game}", file=sys.stderr)
    return results, COLUMNS, "nfa"
