"""The match-window experiments (Cadonna, Gamper & Böhlen, section 6): the throughput of the
`match_window` plan with filtering (f), partitioning (p) and the necessary match conditions
(c) over the plain match window, for

- Pseq(k) = `SEQ(T1 v1, ..., Tk vk)` and Pset(k) = `AND(T1 v1, ..., Tk vk)`, k variables
  whose types are drawn (by a seed) from the stream's most frequent ones, every event of a
  match sharing the partition attribute when the stream has one (the patient);
- a hospital log (the BPIC 2011 gynaecology/oncology log or the sepsis log when given,
  `HospitalStream` otherwise) and a stock stream (types are symbols, no partition
  attribute: f and c only);
- a varying WITHIN and a varying stream size (the factor should stay flat).

Each row sums the runs of `--patterns` random patterns (the paper averages over ten per k).

>>> from kleene.testing.workloads import HospitalStream
>>> events = list(HospitalStream(size=300, patients=20, per_day=30).events())
>>> query = pattern("set", ["L00", "L01"], 2, "PID")
>>> plain, fpc = (measure(query, events, "nfa", p, "Pset k=2") for p in ("none", "fpc"))
>>> plain.matches == fpc.matches, fpc.counts["calls"] < plain.counts["calls"]
(True, True)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import random
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

from benchmarks.harness import (
    TRACED,
    Column,
    Result,
    best_of,
    count,
    engine_run,
    total,
)
from kleene.errors import KleeneError
from kleene.events import Event
from kleene.testing.workloads import HospitalStream, StockStream

__all__ = ["arguments", "hospital_log", "measure", "pattern", "pick_types", "run"]

#: The pruning label of the plain match window, and of the inner plan run alone.
NONE, ALONE = "none", "alone"


def pattern(kind: str, types: list[str], window: float, key: str | None) -> str:
    """Pseq ("seq") or Pset ("set") over variables of these types."""
    operator = {"seq": "SEQ", "set": "AND"}[kind]
    items = ", ".join(f"`{t}` v{n}" for n, t in enumerate(types, 1))
    where = f" WHERE [{key}]" if key else ""
    return f"PATTERN {operator}({items}){where} WITHIN {window}"


def pick_types(events: list[Event], k: int, seed: int, pool: int = 12) -> list[str]:
    """k distinct types from the `pool` most frequent (repeats once k exceeds the pool)."""
    frequent = [t for t, _ in Counter(e.type for e in events).most_common(pool)]
    rng = random.Random(seed)
    if k <= len(frequent):
        return rng.sample(frequent, k)
    return rng.choices(frequent, k=k)


def measure(
    query: str,
    events: list[Event],
    inner: str,
    pruning: str,
    setting: str,
    repeat: int = 1,
    traced: bool = False,
) -> Result:
    """`match_window` around `inner` with `pruning` letters (`NONE`: the plain window;
    `ALONE`: `inner` by itself, without windows); the fastest of `repeat` runs, or with
    `traced` one run whose bytecodes are counted (`engine_run`)."""
    if pruning == ALONE:
        return best_of(
            repeat, lambda: engine_run(query, events, inner, setting, ALONE, traced=traced)
        )
    letters = "" if pruning == NONE else pruning
    return best_of(
        repeat,
        lambda: engine_run(
            query,
            events,
            "match_window",
            setting,
            pruning,
            traced=traced,
            inner=inner,
            pruning=letters,
        ),
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stream", choices=["hospital", "stock"], default="hospital")
    parser.add_argument(
        "--data",
        type=Path,
        help="a real hospital log: bpic2011_hospital_events.csv.gz or sepsis_events_tidy.csv",
    )
    parser.add_argument("--events", type=int, nargs="+", default=[2000], help="sizes (2000)")
    parser.add_argument("--kinds", nargs="+", choices=["seq", "set"], default=["seq", "set"])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="variables")
    parser.add_argument(
        "--windows", type=float, nargs="+", default=[5], help="WITHIN, days or ticks (5)"
    )
    parser.add_argument(
        "--prunings",
        nargs="+",
        default=[NONE, "f", "fp", "fpc", ALONE],
        help="pruning letters per run; none is the plain window, alone the inner plan "
        "without windows (none f fp fpc alone)",
    )
    parser.add_argument("--inner", default="nfa", help="the plan A (nfa)")
    parser.add_argument(
        "--bytecodes",
        action="store_true",
        help="count each run's bytecode instructions an event (traced once) instead of "
        "timing it; the events/s column is then the traced run's",
    )
    parser.add_argument("--patterns", type=int, default=3, help="random patterns per k (3)")


COLUMNS = [Column("calls to A", count("calls")), Column("events to A", count("events_to_inner"))]


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    results = []
    traced = getattr(args, "bytecodes", False)
    repeat = 1 if traced else args.repeat  # (a count comes back the same every run)
    for size in args.events:
        if args.stream == "stock":
            stream = StockStream(size=size, symbols=20, ratio=10, types="symbol", seed=1)
            events, key = list(stream.events()), None
        elif args.data:
            events, key = list(hospital_log(args.data, size)), "PID"
        else:
            events, key = list(HospitalStream(size=size, seed=1).events()), "PID"
        for kind in args.kinds:
            for k in args.ks:
                for tau in args.windows:
                    setting = f"P{kind} k={k} W={tau:g} n={size}"
                    queries = [
                        pattern(kind, pick_types(events, k, seed), tau, key)
                        for seed in range(args.patterns)
                    ]
                    for pruning in args.prunings:
                        runs = [
                            measure(q, events, args.inner, pruning, setting, repeat, traced)
                            for q in queries
                        ]
                        results.append(total(runs))
                        print(f"benchmarks: {results[-1]}", file=sys.stderr)
    if traced:  # (the traced runs' events/s say nothing: no ratio of them)
        return results, [*COLUMNS, *TRACED], None
    return results, COLUMNS, NONE


def bpic2011(path: Path, size: int) -> Iterator[Event]:
    """The first `size` events of the BPIC 2011 hospital log (`bpic2011_hospital_events.csv.gz`):
    type `a<activity code>`, ts in days since the log's first day, PID the patient."""
    first: int | None = None
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        for position, row in enumerate(csv.DictReader(handle)):
            if position >= size:
                return
            day = date.fromisoformat(row["timestamp"][:10]).toordinal()
            first = day if first is None else first
            attrs = {"PID": row["case_id"], "V": float(row["number_of_executions"] or 0)}
            yield Event(f"a{row['activity_code']}", day - first, attrs, position)


def sepsis(path: Path, size: int) -> Iterator[Event]:
    """The first `size` events of the 4TU sepsis log (`sepsis_events_tidy.csv`, sorted by
    time): type the activity, ts in days since the first event, PID the patient, V the lab
    value (0 for events without one)."""
    first: datetime | None = None
    with path.open(encoding="utf-8", newline="") as handle:
        for position, row in enumerate(csv.DictReader(handle)):
            if position >= size:
                return
            moment = datetime.fromisoformat(row["timestamp"])
            first = moment if first is None else first
            attrs = {"PID": row["case_id"], "V": float(row["value"] or 0)}
            days = (moment - first).total_seconds() / 86400
            yield Event(row["event_type"], days, attrs, position)


def hospital_log(path: Path, size: int) -> Iterator[Event]:
    """The first `size` events of a real hospital log, read by its file name: the BPIC 2011
    log (`*.csv.gz`) or the sepsis log (`sepsis_events_tidy.csv`)."""
    if path.name.endswith(".csv.gz"):
        return bpic2011(path, size)
    if path.name == "sepsis_events_tidy.csv":
        return sepsis(path, size)
    raise KleeneError(
        f"{path.name}: not a known hospital log (bpic2011_hospital_events.csv.gz or "
        "sepsis_events_tidy.csv)"
    )
