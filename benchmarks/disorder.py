"""Exact mode's cost: a plan on a sorted stream against the same plan on the stream with a
fraction of its events delayed, put back in order by `max_delay`.

The stream is the SASE+ stock ticker; a `--fractions` share of its events is moved later in
arrival, each by up to `--delay` time units (so the disorder is at most `--delay`, and no
event is late). Both runs return the same matches; the table gives each disordered run's
throughput over the sorted run's (the goal: at least 1 / 1.3 at 10 % disorder).

>>> events = list(StockStream(size=300, symbols=2, seed=1).events())
>>> moved = disordered(events, 0.1, 5, seed=1)
>>> sorted(e.id for e in moved) == [e.id for e in events], moved != events
(True, True)
"""

from __future__ import annotations

import argparse
import random
import sys
from functools import partial

from benchmarks.harness import Column, Result, best_of, engine_run
from benchmarks.nfa import query
from kleene.events import Event
from kleene.testing.workloads import StockStream

__all__ = ["arguments", "disordered", "run"]

IN_ORDER = "in order"


def disordered(events: list[Event], fraction: float, delay: int, seed: int = 1) -> list[Event]:
    """The events with a `fraction` of them arriving up to `delay` time units late."""
    rng = random.Random(seed)
    lag = [rng.uniform(0, delay) if rng.random() < fraction else 0.0 for _ in events]
    order = sorted(range(len(events)), key=lambda p: (events[p].t + lag[p], p))
    return [events[p] for p in order]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=20_000, help="stream size (20000)")
    parser.add_argument(
        "--fractions", type=float, nargs="+", default=[0.1], help="share of late events (0.1)"
    )
    parser.add_argument("--delay", type=int, default=20, help="the most an event lags (20)")
    parser.add_argument("--plans", nargs="+", default=["nfa"], help="plans to run (nfa)")
    parser.add_argument("--window", type=int, default=500, help="the query's partition window")
    parser.add_argument(
        "--query", help="another query over the stock ticker (default: p2s3 with --window)"
    )


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    events = list(StockStream(size=args.events, symbols=2, p_up=0.7, seed=1).events())
    text = args.query or query("p2", "s3", args.window)
    results = []
    for plan in args.plans:
        setting = f"{'query' if args.query else f'p2s3 W={args.window}'} {plan}"
        results.append(
            best_of(args.repeat, partial(engine_run, text, events, plan, setting, IN_ORDER))
        )
        print(f"benchmarks: {results[-1]}", file=sys.stderr)
        for fraction in args.fractions:
            moved = disordered(events, fraction, args.delay)
            label = f"{fraction:.0%} late by <= {args.delay}, max_delay={args.delay}"
            measure = partial(engine_run, text, moved, plan, setting, label, max_delay=args.delay)
            results.append(best_of(args.repeat, measure))
            print(f"benchmarks: {results[-1]}", file=sys.stderr)
    return results, [], IN_ORDER
