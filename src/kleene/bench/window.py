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

>>> from kleene.bench.window import measure, pattern
>>> from kleene.bench.workloads import HospitalStream
>>> events = list(HospitalStream(size=300, patients=20, per_day=30).events())
>>> query = pattern("set", ["L00", "L01"], 2, "PID")
>>> plain, fpc = (measure(query, events, "nfa", p, "Pset k=2") for p in ("", "fpc"))
>>> plain.matches == fpc.matches, fpc.calls < plain.calls
(True, True)
"""

from __future__ import annotations

import csv
import gzip
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import kleene
from kleene.errors import KleeneError
from kleene.events import Event

__all__ = [
    "ALONE",
    "Result",
    "bpic2011",
    "hospital_log",
    "measure",
    "pattern",
    "pick_types",
    "sepsis",
    "table",
    "total",
]


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


@dataclass(frozen=True)
class Result:
    setting: str
    pruning: str
    events: int
    seconds: float
    matches: int
    calls: int
    to_inner: int

    @property
    def throughput(self) -> float:
        return self.events / self.seconds if self.seconds else float("inf")

    def __str__(self) -> str:
        return (
            f"{self.setting} pruning={self.pruning or '-'}: {self.throughput:,.0f} events/s, "
            f"{self.matches:,} matches, {self.calls:,} calls to A with {self.to_inner:,} events"
        )


#: The pruning label of the inner plan run alone, without match windows.
ALONE = "alone"


def measure(
    query: str, events: list[Event], inner: str, pruning: str, setting: str, repeat: int = 1
) -> Result:
    """Run `match_window` around `inner` with `pruning` (or, with `ALONE`, `inner` by
    itself); the fastest of `repeat` runs."""
    best = None
    for _ in range(repeat):
        if pruning == ALONE:
            engine = kleene.Engine(query, inner)
        else:
            engine = kleene.Engine(query, "match_window", inner=inner, pruning=pruning)
        start = time.perf_counter()
        matches = len(engine.send_many(events)) + len(engine.close())
        seconds = time.perf_counter() - start
        counters = engine.metrics.plan
        result = Result(
            setting,
            pruning,
            len(events),
            seconds,
            matches,
            counters.get("calls", 0),
            counters.get("events_to_inner", 0),
        )
        if best is None or seconds < best.seconds:
            best = result
    assert best is not None
    return best


def total(results: list[Result]) -> Result:
    """Several patterns' runs as one (the paper averages over ten patterns per k): events,
    time, matches and calls summed."""
    first = results[0]
    return Result(
        first.setting,
        first.pruning,
        sum(r.events for r in results),
        sum(r.seconds for r in results),
        sum(r.matches for r in results),
        sum(r.calls for r in results),
        sum(r.to_inner for r in results),
    )


def table(results: list[Result]) -> str:
    """A Markdown table; each row's throughput as a factor over the plain window's in the same
    setting (the paper's figures 6-8)."""
    plain = {r.setting: r.throughput for r in results if r.pruning == ""}
    lines = [
        "| setting | pruning | events/s | matches | calls to A | events to A | vs plain |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        base = plain.get(r.setting)
        factor = f"{r.throughput / base:.1f}x" if base else "-"
        lines.append(
            f"| {r.setting} | {r.pruning or 'none'} | {r.throughput:,.0f} | {r.matches:,} | "
            f"{r.calls:,} | {r.to_inner:,} | {factor} |"
        )
    return "\n".join(lines)


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
