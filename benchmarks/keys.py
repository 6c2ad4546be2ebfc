"""State follows live keys: every plan over a stream whose keys never come back.

Each key (an RFID tag, a session) has a few events within the window and is never seen
again, so a plan that keeps what a gone key left grows with the stream, and one that lets
quiet keys go stays flat. The engine's traced memory (tracemalloc: the Python objects
allocated and still alive) is sampled at a quarter of the stream and at its end, beside the
partition states held; `growth` is the end over the quarter (1.0: flat). The goal:
every plan stays flat, as `nfa` does. `afa` takes events in any order, so it may forget
only what a punctuation settles: it runs with `max_delay=0` (the engine punctuates at each
event's time); without punctuations it must keep every key.

>>> events = tagged(12, per_key=3, live=2)
>>> [(e.type, e.ts, e["tag"]) for e in events[:4]]
[('A', 0, 0), ('A', 1, 1), ('B', 2, 0), ('B', 3, 1)]
>>> len({e["tag"] for e in events})
4
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc

import kleene
from benchmarks.harness import Column, Result, count
from kleene.events import Event

__all__ = ["arguments", "run", "tagged"]

QUERY = "PATTERN SEQ(A a, B b, C c) WHERE [tag] AND a.x < c.x WITHIN 20"
PLANS = [
    "nfa",
    "window_join",
    "nfa_backtrack",
    "afa",
    "lazy_chain",
    "lazy_tree",
    "match_window",
    "reference",
]


def tagged(size: int, per_key: int = 3, live: int = 8) -> list[Event]:
    """`size` events, one per time unit: `live` keys at a time, each sending A, B, C (then
    more C) one after another, and then never again; a new key takes its place."""
    types = "ABC"
    events = []
    for ts in range(size):
        turn, slot = divmod(ts, live)
        round_, step = divmod(turn, per_key)
        tag = round_ * live + slot
        events.append(Event(types[min(step, 2)], ts, {"tag": tag, "x": (ts * 7) % 11}))
    return events


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=200_000, help="stream size (200000)")
    parser.add_argument("--plans", nargs="+", default=PLANS, help="plans to run (all)")


def measure(events: list[Event], plan: str) -> Result:
    """One run, traced: memory at a quarter of the stream and at its end."""
    gc.collect()
    tracemalloc.start()
    engine = kleene.Engine(QUERY, plan, max_delay=0 if plan == "afa" else None)
    quarter = len(events) // 4
    found = 0
    started = time.perf_counter()
    for event in events[:quarter]:
        found += len(engine.send(event))
    early, _ = tracemalloc.get_traced_memory()
    early_keys = engine.partitions
    for event in events[quarter:]:
        found += len(engine.send(event))
    seconds = time.perf_counter() - started
    late, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    counts = {
        "kib_quarter": early / 1024,
        "kib_end": late / 1024,
        "kib_peak": peak / 1024,
        "growth": late / early if early else 0.0,
        "keys_quarter": early_keys,
        "keys_end": engine.partitions,
    }
    return Result(f"{len(events):,} events, new keys", plan, len(events), seconds, found, counts)


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    events = tagged(args.events)
    results = []
    for plan in args.plans:
        results.append(measure(events, plan))
        print(f"benchmarks: {results[-1]}", file=sys.stderr)
    expected = results[0].matches
    for result in results:
        if result.matches != expected:
            raise kleene.KleeneError(
                f"{result.plan} found {result.matches:,} matches, {results[0].plan} {expected:,}"
            )
    columns = [
        Column("KiB at 1/4", count("kib_quarter")),
        Column("KiB at end", count("kib_end")),
        Column("growth", count("growth"), ".2f"),
        Column("keys at 1/4", count("keys_quarter")),
        Column("keys at end", count("keys_end")),
    ]
    return results, columns, "nfa"
