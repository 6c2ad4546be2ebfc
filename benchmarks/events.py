"""What an event costs to make, to hold and to match, from each form a user hands kleene:
the peers' tick stream (`benchmarks.peers`: 100k ticks of two numeric attributes, typed by
symbol) made into events, and matched by a compiled query from prebuilt events, from plain
dicts, from parsed tuples (`Event(...)` built inside the clock, or the tuples handed over
as records, `kleene.from_records`), from a pandas DataFrame,
a Parquet file and a CSV file (written to a temporary folder first).

The `make` setting times building the events alone: `Event(type, ts, {...}, id)` from the
tuples, a plain dict of the same fields (the floor a Python object sets), and `as_event`
of those dicts; `bytes/event` is what each form holds per event (tracemalloc, the tuples'
own values not counted). The match settings give each form's CPU time over the time on
prebuilt events (`time / events`, from the two rates in the same table). The goals: an
`Event` at 0.6 µs and 200 bytes, dicts at 1.2x the time of events.

>>> results, _, _ = run(argparse.Namespace(events=300, patterns=["P0"], repeat=1))
>>> [(r.setting, r.plan) for r in results]  # doctest: +NORMALIZE_WHITESPACE
[('make n=300', 'Event(...)'), ('make n=300', 'dict'), ('make n=300', 'as_event(dict)'),
 ('P0 n=300', 'events'), ('P0 n=300', 'dicts'), ('P0 n=300', 'tuples'),
 ('P0 n=300', 'records'), ('P0 n=300', 'pandas'), ('P0 n=300', 'parquet'), ('P0 n=300', 'csv')]
>>> len({r.matches for r in results[3:]})
1
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kleene
from benchmarks.harness import Column, Result, count, rounds
from benchmarks.peers import PATTERNS, RECORD, SYMBOLS, Tick, events_of, records_of, tick_rows
from kleene.errors import KleeneError
from kleene.events import as_event

__all__ = ["arguments", "run"]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=100_000, help="ticks (100000)")
    parser.add_argument("--patterns", nargs="+", default=["P0", "P3"], choices=list(PATTERNS))


def _dicts(rows: list[Tick]) -> list[dict[str, Any]]:
    symbols = SYMBOLS
    return [
        {"type": symbols[s], "ts": ts, "id": ts, "price": p, "volume": v} for s, p, v, ts in rows
    ]


def _timed(make: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    started = time.process_time()
    made = make()
    return made, time.process_time() - started


def _size(make: Callable[[], Any]) -> int:
    return len(make())


def _matched(plan: kleene.Plan[Any], make: Callable[[], Any]) -> int:
    return len(kleene.match(plan, make()))


def _held(make: Callable[[], Any], size: int) -> float:
    """Bytes per item that what `make` builds holds (allocated and still alive)."""
    gc.collect()
    tracemalloc.start()
    made = make()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del made
    return held / size


def _frame(rows: list[Tick]) -> Any:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["symbol", "price", "volume", "ts"])
    frame.insert(0, "type", [SYMBOLS[s] for s in frame.pop("symbol")])
    return frame


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    rows = tick_rows(args.events)
    size = len(rows)
    events = events_of(rows)
    dicts = _dicts(rows)
    frame = _frame(rows)
    records = records_of(rows)
    results: list[Result] = []
    makers: dict[str, Callable[[], Any]] = {
        "Event(...)": functools.partial(events_of, rows),
        "dict": functools.partial(_dicts, rows),
        "as_event(dict)": lambda: [as_event(d) for d in dicts],
    }
    setting = f"make n={size:,}"
    # each list is let go once timed: a list kept would grow the heap the next one's
    # garbage collections walk
    sized = {
        name: functools.partial(_timed, functools.partial(_size, make))
        for name, make in makers.items()
    }
    best = rounds(sized, args.repeat)
    for name, (_, seconds) in best.items():
        held = {"bytes": _held(makers[name], size), "us": seconds / size * 1e6}
        results.append(Result(setting, name, size, seconds, 0, held))
    with tempfile.TemporaryDirectory(prefix="kleene-events-") as folder:
        parquet, csv = Path(folder) / "ticks.parquet", Path(folder) / "ticks.csv"
        frame.to_parquet(parquet)
        frame.to_csv(csv, index=False)
        for name in args.patterns:
            plan = kleene.compile(PATTERNS[name])  # outside the clock
            inputs: dict[str, Callable[[], Any]] = {
                "events": lambda: events,
                "dicts": lambda: dicts,
                "tuples": functools.partial(events_of, rows),
                "records": functools.partial(kleene.from_records, records, RECORD, id="ts"),
                "pandas": lambda: frame,
                "parquet": functools.partial(kleene.read_events, parquet),
                "csv": functools.partial(kleene.read_events, csv),
            }
            runners = {
                form: functools.partial(_timed, functools.partial(_matched, plan, make))
                for form, make in inputs.items()
            }
            best = rounds(runners, args.repeat)
            found = {form: matches for form, (matches, _) in best.items()}
            if len(set(found.values())) > 1:
                raise KleeneError(f"{name}: the inputs give different counts: {found}")
            base = best["events"][1]
            for form, (matches, seconds) in best.items():
                counts = {"us": seconds / size * 1e6, "over_events": seconds / base}
                results.append(Result(f"{name} n={size:,}", form, size, seconds, matches, counts))
    for result in results:
        print(f"benchmarks: {result}", file=sys.stderr)
    columns = [
        Column("µs/event", count("us"), ".2f"),
        Column("bytes/event", count("bytes"), ".0f"),
        Column("time / events", count("over_events"), ".2f"),
    ]
    return results, columns, None
