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

Each `measure` runs one query with one plan over the same generated events in-process and
reports throughput with the paper's profile: runs per event, mean match length, and (with
`breakdown`) the share of the time spent matching rather than building matches.

>>> from kleene.bench.nfa import measure, query
>>> result = measure(query("p2", "s2", 50), "nfa", StockStream(size=2000, symbols=2, p_up=0.7))
>>> result.events, result.matches > 0
(2000, True)
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import kleene
from kleene.bench.workloads import StockStream
from kleene.errors import PlanError
from kleene.events import Event

__all__ = ["PREDICATES", "STRATEGIES", "Result", "measure", "query", "table"]

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


@dataclass(frozen=True)
class Result:
    setting: str
    plan: str
    events: int
    seconds: float
    matches: int
    run_steps: int
    peak_runs: int
    matched_events: int
    #: The same run's time without building matches (None: not measured).
    matching_seconds: float | None = None

    @property
    def throughput(self) -> float:
        return self.events / self.seconds if self.seconds else float("inf")

    @property
    def mean_length(self) -> float:
        return self.matched_events / self.matches if self.matches else 0.0

    @property
    def runs_per_event(self) -> float:
        """Runs alive after an event, on average (the paper's runs per time step)."""
        return self.run_steps / self.events if self.events else 0.0

    @property
    def matching_share(self) -> float | None:
        """The share of the time spent matching; the rest builds the matches (Table 2)."""
        if self.matching_seconds is None or not self.seconds:
            return None
        return min(1.0, self.matching_seconds / self.seconds)

    def __str__(self) -> str:
        text = (
            f"{self.setting} {self.plan}: {self.throughput:,.0f} events/s, "
            f"{self.matches:,} matches of {self.mean_length:.1f} events, "
            f"{self.runs_per_event:.3f} runs/event"
        )
        share = self.matching_share
        return text if share is None else f"{text}, {share:.0%} matching"


def measure(
    text: str,
    plan: str,
    stream: StockStream,
    setting: str = "",
    breakdown: bool = False,
    repeat: int = 1,
    **options: Any,
) -> Result:
    """Run one query with one plan over the stream's events; time only the engine, and
    keep the fastest of `repeat` runs (on a shared machine the others measure the
    neighbours). With `breakdown`, run it again with `construct=False` to split the time
    into matching and match construction."""
    events = list(stream.events())
    seconds, matches, matched_events, counts = _run(text, plan, events, options)
    for _ in range(repeat - 1):
        seconds = min(seconds, _run(text, plan, events, options)[0])
    matching = None
    if breakdown:
        with suppress(PlanError):  # a plan that always builds its matches: no breakdown
            matching = min(
                _run(text, plan, events, {**options, "construct": False})[0] for _ in range(repeat)
            )
    label = plan if not options else f"{plan} ({', '.join(f'{k}={v}' for k, v in options.items())})"
    return Result(
        setting,
        label,
        len(events),
        seconds,
        matches,
        counts.get("run_steps", 0),
        counts.get("peak_runs", 0),
        matched_events,
        matching,
    )


def _run(
    text: str, plan: str, events: list[Event], options: dict[str, Any]
) -> tuple[float, int, int, dict[str, Any]]:
    """Seconds, matches, matched events and metrics of one engine run over the events."""
    engine = kleene.Engine(text, plan, **options)
    matches = 0
    matched_events = 0
    start = time.perf_counter()
    for event in events:
        for found in engine.send(event):
            matches += 1
            matched_events += sum(map(len, found.bindings.values()))
    for found in engine.close():
        matches += 1
        matched_events += sum(map(len, found.bindings.values()))
    seconds = time.perf_counter() - start
    return seconds, matches, matched_events, engine.metrics.as_dict()


def table(results: list[Result], baseline: str | None = None) -> str:
    """A Markdown table; with `baseline`, each row's throughput as a ratio to that plan's
    in the same setting; with breakdowns, the share of time spent matching."""
    head = "| setting | plan | events/s | matches | mean length | runs/event | peak runs |"
    rule = "|---|---|---:|---:|---:|---:|---:|"
    shares = any(r.matching_share is not None for r in results)
    if shares:
        head += " matching |"
        rule += "---:|"
    if baseline is not None:
        head += f" vs {baseline} |"
        rule += "---:|"
    rows = [head, rule]
    base = {r.setting: r.throughput for r in results if r.plan == baseline}
    for r in results:
        row = (
            f"| {r.setting} | {r.plan} | {r.throughput:,.0f} | {r.matches:,} | "
            f"{r.mean_length:.1f} | {r.runs_per_event:.2f} | {r.peak_runs:,} |"
        )
        if shares:
            share = r.matching_share
            row += " |" if share is None else f" {share:.0%} |"
        if baseline is not None:
            ratio = r.throughput / base[r.setting] if r.setting in base else float("nan")
            row += f" {ratio:.2f}x |"
        rows.append(row)
    return "\n".join(rows)
