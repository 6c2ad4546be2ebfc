"""What every benchmark shares: one `Result`, best-of-N timing, and a Markdown report stamped
with the Python version, the machine and the git commit it was measured on.

A suite measures settings into `Result`s (throughput comes from events and the best time),
names the extra columns it wants (`Column`s reading `Result.counts`), and `report` prints
them as one table, each row's throughput as a ratio to a baseline row of the same setting.

>>> rows = [Result("SEQ3", "nfa", 1000, 0.5, 7), Result("SEQ3", "lazy_chain", 1000, 0.25, 7)]
>>> print(table(rows, baseline="nfa"))
| setting | plan | events/s | matches | vs nfa |
|---|---|---:|---:|---:|
| SEQ3 | nfa | 2,000 | 7 | 1.00x |
| SEQ3 | lazy_chain | 4,000 | 7 | 2.00x |
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import FrameType
from typing import Any

import kleene

__all__ = [
    "SEND_LOOP",
    "TRACED",
    "Column",
    "Result",
    "best_of",
    "bytecodes",
    "count",
    "engine_run",
    "per_event",
    "report",
    "rounds",
    "stamp",
    "table",
    "total",
]

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Result:
    """One measured setting: its time is the best of the runs made (`best_of`)."""

    setting: str
    plan: str
    events: int
    seconds: float
    matches: int
    #: The suite's own measurements (counters, memory, start-up time), by name.
    counts: Mapping[str, float] = field(default_factory=dict)

    @property
    def throughput(self) -> float:
        return self.events / self.seconds if self.seconds else float("inf")

    def __str__(self) -> str:
        return (
            f"{self.setting} {self.plan}: {self.throughput:,.0f} events/s, {self.matches:,} matches"
        )


@dataclass(frozen=True)
class Column:
    """An extra column: its header, its value for a row (and the row of the baseline plan in
    the same setting, None when there is none), and a format; a None value prints empty."""

    header: str
    value: Callable[[Result, Result | None], float | None]
    format: str = ",.0f"


def best_of(repeat: int, measure: Callable[[], Result]) -> Result:
    """The fastest of `repeat` runs (on a shared machine the slower ones measure the
    neighbours)."""
    runs = [measure() for _ in range(max(1, repeat))]
    return min(runs, key=lambda r: r.seconds)


def rounds(
    runners: Mapping[str, Callable[[], tuple[Any, float]]], repeat: int
) -> dict[str, tuple[Any, float]]:
    """Each runner (returning what it made and its seconds) once per round, in turn,
    `repeat` rounds; the fastest round of each kept: a noisy spell of the machine costs
    every runner alike.

    >>> rounds({"a": lambda: ("x", 2.0)}, 3)
    {'a': ('x', 2.0)}
    """
    best: dict[str, tuple[Any, float]] = {}
    for _ in range(max(1, repeat)):
        for name, measure in runners.items():
            made, seconds = measure()
            if name not in best or seconds < best[name][1]:
                best[name] = (made, seconds)
    return best


def engine_run(
    query: Any,
    events: Sequence[Any],
    plan: str,
    setting: str,
    label: str = "",
    *,
    traced: bool = False,
    **options: Any,
) -> Result:
    """One in-process run of `query` (its text, or an AFA) over `events` (timing only the
    engine); `counts` has the engine's metrics (`Metrics.as_dict`) and `matched_events`,
    the events the matches bind. `traced`: the run's bytecodes are counted (`bytecodes`),
    in all and in the engine's send loop (`SEND_LOOP`, which every plan pays alike), and
    its time, the traced run's, means nothing."""
    engine = kleene.Engine(query, plan, **options)  # options may hold engine arguments

    def sent() -> list[Any]:
        return engine.send_many(events) + engine.close()

    counted: Counter[str] = Counter()
    started = time.perf_counter()
    if traced:
        found, counted = bytecodes(sent)
    else:
        found = sent()
    seconds = time.perf_counter() - started
    counts = {
        **engine.metrics.as_dict(),
        "matched_events": sum(len(es) for m in found for es in m.bindings.values()),
    }
    if traced:
        counts["bytecodes"] = sum(counted.values())
        counts["send_loop"] = sum(n for f, n in counted.items() if f.endswith(SEND_LOOP))
    return Result(setting, label or plan, len(events), seconds, len(found), counts)


def bytecodes(run: Callable[[], Any]) -> tuple[Any, Counter[str]]:
    """What `run` returns, and the bytecode instructions the interpreter executed meanwhile
    in Python code, counted by the file they belong to (`sys.settrace` with opcode events):
    a count that, unlike time, does not move with the machine's other work. A C function
    (a builtin, a dict lookup) counts as the one instruction that calls it.

    >>> made, counted = bytecodes(lambda: sum(i for i in range(10)))
    >>> made, sum(counted.values()) > 10
    (45, True)
    """
    counted: Counter[str] = Counter()

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            counted[frame.f_code.co_filename] += 1
        return trace

    previous = sys.gettrace()  # (a debugger's or a coverage tool's, put back after)
    sys.settrace(trace)
    try:
        made = run()
    finally:
        sys.settrace(previous)
    return made, counted


#: The file of the engine's send loops (`kleene.runtime.send`).
SEND_LOOP = str(Path("kleene", "runtime", "send.py"))


def total(results: Sequence[Result]) -> Result:
    """Several runs of one setting and plan as one: events, time, matches and counts summed."""
    first = results[0]
    counts: dict[str, float] = {}
    for result in results:
        for name, value in result.counts.items():
            counts[name] = counts.get(name, 0) + value
    return Result(
        first.setting,
        first.plan,
        sum(r.events for r in results),
        sum(r.seconds for r in results),
        sum(r.matches for r in results),
        counts,
    )


def table(
    results: Sequence[Result], columns: Sequence[Column] = (), baseline: str | None = None
) -> str:
    """A Markdown table: setting, plan, events/s, matches, the extra columns and, with a
    `baseline` plan, each row's throughput as a ratio to that plan's in the same setting."""
    head = ["setting", "plan", "events/s", "matches", *(c.header for c in columns)]
    if baseline is not None:
        head.append(f"vs {baseline}")
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    base = {r.setting: r for r in results if r.plan == baseline}
    for r in results:
        other = base.get(r.setting)
        cells = [r.setting, r.plan, f"{r.throughput:,.0f}", f"{r.matches:,}"]
        for column in columns:
            value = column.value(r, other)
            cells.append("" if value is None else format(value, column.format))
        if baseline is not None:
            cells.append(f"{r.throughput / other.throughput:.2f}x" if other else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stamp() -> str:
    """Where and on what the numbers were measured."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += " with uncommitted changes"
    return (
        f"{date.today().isoformat()}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"kleene commit {commit}"
    )


def report(
    results: Sequence[Result],
    columns: Sequence[Column] = (),
    baseline: str | None = None,
    command: Sequence[str] | None = None,
) -> str:
    """The stamp, the command that produced the numbers, and the table."""
    command = sys.argv if command is None else command
    head = f"`python -m benchmarks {' '.join(command[1:])}`" if command else ""
    return f"{stamp()}\n{head}\n\n{table(results, columns, baseline)}"


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def per_event(name: str) -> Callable[[Result, Result | None], float | None]:
    """A column value: counter `name` per event."""
    return lambda r, _: r.counts.get(name, 0) / r.events if r.events else None


def count(name: str) -> Callable[[Result, Result | None], float | None]:
    """A column value: counter `name` (empty when the run did not measure it)."""
    return lambda r, _: r.counts.get(name)


#: The columns of traced runs (`engine_run` with `traced`): bytecodes an event, in all
#: and in the send loop.
TRACED = [
    Column("bytecodes/event", per_event("bytecodes"), ",.1f"),
    Column("send loop/event", per_event("send_loop"), ",.1f"),
]
