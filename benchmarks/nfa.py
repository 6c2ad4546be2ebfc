"""The SASE+ paper's experiments 1-6: Kleene closure queries over a stock ticker.

The query template (section 6) is

    PATTERN SEQ(Stock+ a[], Stock b)
    WHERE ES { [symbol] AND a[1].price % M = 0 AND P AND b.volume < 150 } WITHIN T

with P one of p1 (true), p2 (`a[i].price > a[i-1].price`), p3 (`a[i].price >
min(a[..i-1].price)`), ES one of s2 (partition contiguity) and s3 (skip till next match). The
paper's partition window W (events of one symbol a run may read) is T times the share of one
symbol: with two symbols and one event per time unit, T = 2W. The paper uses M = 500 on a
price range lost in its text; our price is a ±1 random walk, on which M = 500 would begin a run
once per ~900 events of a symbol, so M is a parameter (default 100).

Each setting runs one query with one plan over the same generated events in-process and
reports throughput with the paper's profile: runs per event, mean match length, and (with
`--breakdown`) the share of the time spent matching rather than building matches.

>>> from benchmarks.harness import engine_run
>>> events = list(StockStream(size=2000, symbols=2, p_up=0.7).events())
>>> result = engine_run(query("p2", "s2", 50), events, "nfa", "p2s2")
>>> result.events, result.matches > 0
(2000, True)
"""

from __future__ import annotations

import argparse
import sys
from contextlib import suppress
from functools import partial
from typing import Any

from benchmarks.harness import Column, Result, best_of, count, engine_run, per_event
from benchmarks.settings import label, plans
from kleene.errors import PlanError
from kleene.testing.workloads import StockStream

__all__ = ["PREDICATES", "STRATEGIES", "arguments", "query", "run"]

PREDICATES = {
    "p1": "true",
    "p2": "a[i].price > a[i-1].price",
    "p3": "a[i].price > min(a[..i-1].price)",
}
STRATEGIES = {"s2": "partition_contiguity", "s3": "skip_till_next_match"}


def query(predicate: str, strategy: str, window: int, modulus: int = 100) -> str:
    """The template with P, ES and the partition window W filled in. "p3*" is experiment 4's
    harder variant: p3 followed by a third event c with `a[1].price < c.price <
    a[a.len].price`."""
    if predicate == "p3*":
        structure = "SEQ(Stock+ a[], Stock b, Stock c)"
        extra = " AND c.price > a[1].price AND c.price < a[a.len].price"
        predicate = "p3"
    else:
        structure, extra = "SEQ(Stock+ a[], Stock b)", ""
    return (
        f"PATTERN {structure}\n"
        f"WHERE {STRATEGIES[strategy]} {{ [symbol] AND a[1].price % {modulus} = 0\n"
        f"    AND {PREDICATES[predicate]} AND b.volume < 150{extra} }}\n"
        f"WITHIN {2 * window}"
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=20_000, help="stream size (20000)")
    parser.add_argument("--predicates", nargs="+", default=["p1", "p2", "p3"], help="p1 p2 p3")
    parser.add_argument("--strategies", nargs="+", default=["s2", "s3"], help="s2 s3")
    parser.add_argument("--windows", type=int, nargs="+", default=[500], help="partition windows")
    parser.add_argument("--modulus", type=int, default=100, help="M in a[1].price %% M = 0 (100)")
    parser.add_argument("--p-up", type=float, default=0.7, help="chance a price rises (0.7)")
    parser.add_argument(
        "--plans",
        nargs="+",
        default=["nfa:merge=False", "nfa"],
        help="plans to compare, NAME or NAME:option=value (nfa:merge=False nfa); the first "
        "is the baseline",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="run each setting again with construct=False and report the share of time "
        "spent matching (the rest builds the matches)",
    )


def _matching_share(result: Result, _: Result | None) -> float | None:
    """The share of the time spent matching; the rest builds the matches (Table 2)."""
    matching = result.counts.get("matching_seconds")
    if matching is None or not result.seconds:
        return None
    return min(1.0, matching / result.seconds)


COLUMNS = [
    Column(
        "mean length",
        lambda r, _: r.counts["matched_events"] / r.matches if r.matches else 0.0,
        ".1f",
    ),
    Column("runs/event", per_event("run_steps"), ".3f"),
    Column("peak runs", count("peak_runs")),
]


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    events = list(StockStream(size=args.events, symbols=2, p_up=args.p_up, seed=1).events())
    settings = plans(args.plans)
    results = []
    for predicate in args.predicates:
        for strategy in args.strategies:
            for window in args.windows:
                text = query(predicate, strategy, window, args.modulus)
                setting = f"{predicate}{strategy} W={window}"
                for name, options in settings:
                    measure = partial(
                        engine_run, text, events, name, setting, label(name, options), **options
                    )
                    result = best_of(args.repeat, measure)
                    if args.breakdown:
                        result = _with_breakdown(result, text, events, name, options, args.repeat)
                    results.append(result)
                    print(f"benchmarks: {result}", file=sys.stderr)
    columns = COLUMNS + ([Column("matching", _matching_share, ".0%")] if args.breakdown else [])
    return results, columns, label(*settings[0]) if settings else None


def _with_breakdown(
    result: Result, text: str, events: list[Any], name: str, options: dict[str, Any], repeat: int
) -> Result:
    """The result with the time of the same runs without building matches, when the plan can
    skip building them."""
    with suppress(PlanError):
        quiet = {**options, "construct": False}
        alone = best_of(repeat, partial(engine_run, text, events, name, "", **quiet))
        return Result(
            result.setting,
            result.plan,
            result.events,
            result.seconds,
            result.matches,
            {**result.counts, "matching_seconds": alone.seconds},
        )
    return result
