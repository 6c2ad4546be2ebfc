"""kleene beside CORE, the peer to beat, on the peers' workload
(`../shared/bench/peers/README.md` in the workplace): a stock-tick stream typed by symbol
S0..S9 (S0 100x more frequent than S9), one tick per time unit, and five patterns run with
skip-till-any-match, all matches, window 9 inclusive (CORE's exclusive `WITHIN 10`):

- P0 `SEQ(S0 a, S1 b, S2 c)`; P1 the same with `a.price < b.price < c.price`;
- P2 `SEQ(S0 a, S1+ b[], S2 c)`; P3 `SEQ(S0 a, NOT(S1 b), S2 c)`; P4 `AND(S0 a, S1 b, S2 c)`.

The stream is generated here exactly as the peers' `gen.py` does (numpy's default_rng, seed
42), so the counts equal the reference files'. Each plan's rate is in events per CPU-second
(the engine's work on events already in memory, as the peers measure). A rate is reported
only with the right count: the plans must agree with each other, and with `--expected
ref_100k.json` (the peers' counts) when given. Rows for a hand-written CPython loop show
the floor on P0: one that counts the matches, one that makes each (a tuple of its events,
where kleene makes a `Match`). With `--core-python` and `--core-script`, CORE runs in the
same run. With `--repeat N`, every runner (CORE and the loops too) runs once per round, in
turn, N rounds, and its best round is reported.

>>> results, _, _ = run(argparse.Namespace(events=2000, patterns=["P0", "P3"],
...     plans=["nfa", "reference"], expected=None, core_python=None, core_script=None,
...     repeat=1))
>>> [(r.setting, r.plan) for r in results][:4]  # doctest: +NORMALIZE_WHITESPACE
[('P0 n=2,000', 'nfa'), ('P0 n=2,000', 'nfa from tuples'), ('P0 n=2,000', 'nfa from records'),
 ('P0 n=2,000', 'reference')]
>>> len(results), len({r.matches for r in results[:8]})
(14, 1)
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kleene
from benchmarks.harness import Column, Result, rounds
from kleene.errors import KleeneError
from kleene.events import Event

__all__ = [
    "PATTERNS",
    "RECORD",
    "SYMBOLS",
    "arguments",
    "events_of",
    "hand_p0",
    "hand_p0_matches",
    "records_of",
    "run",
    "tick_rows",
    "ticks",
]

PATTERNS = {
    "P0": "PATTERN SEQ(S0 a, S1 b, S2 c) WITHIN 9",
    "P1": "PATTERN SEQ(S0 a, S1 b, S2 c) WHERE a.price < b.price AND b.price < c.price WITHIN 9",
    "P2": "PATTERN SEQ(S0 a, S1+ b[], S2 c) WITHIN 9",
    "P3": "PATTERN SEQ(S0 a, NOT(S1 b), S2 c) WITHIN 9",
    "P4": "PATTERN AND(S0 a, S1 b, S2 c) WITHIN 9",
}
COLUMNS = [Column("vs CORE", lambda r, _: r.counts.get("vs_core"), ".2f")]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=100_000, help="ticks (100000)")
    parser.add_argument("--patterns", nargs="+", default=list(PATTERNS), choices=list(PATTERNS))
    parser.add_argument("--plans", nargs="+", default=["auto"], help="plans to run (auto)")
    parser.add_argument(
        "--expected", help="the peers' counts for this size (ref_100k.json, ref_1m.json)"
    )
    parser.add_argument("--core-python", help="a Python with pycer installed (3.13)")
    parser.add_argument("--core-script", help="the peers' bench_pycer.py")


#: Row `(s, price, volume, ts)` of the peers' stream is an event of type `SYMBOLS[s]`.
SYMBOLS = [f"S{k}" for k in range(10)]
Tick = tuple[int, float, int, int]


def tick_rows(n: int, seed: int = 42) -> list[Tick]:
    """The peers' stream (`gen.py`) as the tuples CORE's script parses from its CSV: the
    symbol's number, price, volume and ts (= id); sym S0..S9 with weights 100^(-k/9), price
    uniform in [10, 110) to cents, volume 1..1000."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = 100.0 ** (-np.arange(10) / 9.0)
    symbols = rng.choice(10, size=n, p=weights / weights.sum())
    prices = np.round(rng.uniform(10.0, 110.0, size=n), 2)
    volumes = rng.integers(1, 1001, size=n)
    rows = zip(symbols.tolist(), prices.tolist(), volumes.tolist(), range(n), strict=True)
    return list(rows)


#: The ticks as records (`kleene.from_records`): what a CSV reader parses each line into,
#: the symbol kept as text (CORE's script keeps its number, its event type's id).
RECORD = ("type", "price", "volume", "ts")
Record = tuple[str, float, int, int]


def records_of(rows: list[Tick]) -> list[Record]:
    return [(SYMBOLS[s], p, v, ts) for s, p, v, ts in rows]


def ticks(n: int, seed: int = 42) -> list[Event]:
    """The peers' stream as events, typed by sym (`events_of`)."""
    return events_of(tick_rows(n, seed))


def events_of(rows: list[Tick]) -> list[Event]:
    """Ticks as events: what a user writes to hand kleene parsed values (the timed work of
    a `from tuples` run)."""
    symbols = SYMBOLS
    return [Event(symbols[s], ts, {"price": p, "volume": v}, ts) for s, p, v, ts in rows]


def hand_p0(events: list[Event], window: int = 9) -> int:
    """P0 by hand, the floor plain CPython sets: a deque of recent S0 times, and of recent S1
    events each with the S0 times before it; each S2 counts the pairs inside the window."""
    a_times: deque[int] = deque()
    b_entries: deque[tuple[int, tuple[int, ...]]] = deque()
    found = 0
    for e in events:
        t = e.ts
        assert isinstance(t, int)
        low = t - window
        kind = e.type
        if kind == "S0":
            a_times.append(t)
        elif kind == "S1":
            while a_times and a_times[0] < low:
                a_times.popleft()
            b_entries.append((t, tuple(a_times)))
        elif kind == "S2":
            while b_entries and b_entries[0][0] < low:
                b_entries.popleft()
            found += sum(len(a) - bisect_left(a, low) for _, a in b_entries)
    return found


def hand_p0_matches(events: list[Event], window: int = 9) -> list[tuple[Event, Event, Event]]:
    """P0 by hand, each match made as what a user reads of it: its three events, in a tuple
    (`hand_p0` counts them without making them; kleene makes a `Match` of each)."""
    a_events: deque[Event] = deque()
    b_entries: deque[tuple[Event, tuple[Event, ...]]] = deque()
    found: list[tuple[Event, Event, Event]] = []
    for e in events:
        t = e.ts
        assert isinstance(t, int)
        low = t - window
        kind = e.type
        if kind == "S0":
            a_events.append(e)
        elif kind == "S1":
            while a_events and a_events[0].t < low:
                a_events.popleft()
            b_entries.append((e, tuple(a_events)))
        elif kind == "S2":
            while b_entries and b_entries[0][0].t < low:
                b_entries.popleft()
            found += [(a, b, e) for b, before in b_entries for a in before if a.t >= low]
    return found


def _engine(compiled: kleene.Plan[Any], events: list[Event]) -> tuple[int, float]:
    started = time.process_time()
    found = len(kleene.match(compiled, events))
    return found, time.process_time() - started


def _from_tuples(compiled: kleene.Plan[Any], rows: list[Tick]) -> tuple[int, float]:
    started = time.process_time()
    found = len(kleene.match(compiled, events_of(rows)))
    return found, time.process_time() - started


def _from_records(compiled: kleene.Plan[Any], records: list[Record]) -> tuple[int, float]:
    started = time.process_time()
    found = len(kleene.match(compiled, kleene.from_records(records, RECORD, id="ts")))
    return found, time.process_time() - started


def _hand(events: list[Event]) -> tuple[int, float]:
    started = time.process_time()
    found = hand_p0(events)
    return found, time.process_time() - started


def _hand_made(events: list[Event]) -> tuple[int, float]:
    started = time.process_time()
    found = len(hand_p0_matches(events))
    return found, time.process_time() - started


def _core_run(python: str, script: str, pattern: str, events: list[Event]) -> tuple[int, float]:
    """CORE's count and CPU seconds (from its events per CPU-second)."""
    core = _core(python, script, pattern, events)
    return core["matches"], len(events) / core["eps_cpu"]


def _core(python: str, script: str, pattern: str, events: list[Event]) -> dict[str, Any]:
    """CORE on the same ticks, as the peers' README runs it (a private network namespace,
    since its offline server binds local ports)."""
    with tempfile.TemporaryDirectory(prefix="kleene-peers-") as folder:
        path = Path(folder) / "ticks.csv"
        with path.open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["id", "ts", "sym", "price", "volume"])
            for e in events:
                writer.writerow([e.id, e.ts, e.type, f"{e['price']:.2f}", e["volume"]])
        command = f"ip link set lo up; {python} {script} {pattern} {path}"
        done = subprocess.run(  # in the folder: CORE writes its logs to ./logs
            ["unshare", "-n", "sh", "-c", command],
            capture_output=True,
            text=True,
            check=False,
            cwd=folder,
        )
    if done.returncode != 0:
        raise KleeneError(f"CORE failed on {pattern}: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _refusal(query: str, plan: str) -> str | None:
    """Why `plan` does not run `query` (None: it does; "auto" runs everything)."""
    try:
        kleene.compile(query, plan)
    except kleene.PlanError as error:
        return str(error)
    return None


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    rows = tick_rows(args.events)
    events = events_of(rows)
    records = records_of(rows)
    expected = None
    if args.expected:
        reference = json.loads(Path(args.expected).read_text())
        expected = reference["all"]
    results: list[Result] = []
    for name in args.patterns:
        query = PATTERNS[name]
        setting = f"{name} n={args.events:,}"
        runners: dict[str, Callable[[], tuple[int, float]]] = {}
        if args.core_python and args.core_script:
            runners["CORE (pycer)"] = functools.partial(
                _core_run, args.core_python, args.core_script, name, events
            )
        for plan in args.plans:
            refusal = _refusal(query, plan)
            if refusal is not None:
                print(f"benchmarks: {name} {plan}: {refusal}", file=sys.stderr)
                continue
            compiled = kleene.compile(query, plan)  # outside the clock, as CORE's query is
            runners[plan] = functools.partial(_engine, compiled, events)
            runners[f"{plan} from tuples"] = functools.partial(_from_tuples, compiled, rows)
            runners[f"{plan} from records"] = functools.partial(_from_records, compiled, records)
        if name == "P0":
            runners["hand-written loop"] = functools.partial(_hand, events)
            runners["hand-written loop, matches made"] = functools.partial(_hand_made, events)
        best = rounds(runners, args.repeat)
        counts = {runner: found for runner, (found, _) in best.items()}
        core = best.get("CORE (pycer)")
        for runner, (found, seconds) in best.items():
            extra = {}
            if core is not None and runner.split(" from ")[0] in args.plans:
                extra = {"vs_core": core[1] / seconds if seconds else float("inf")}
            results.append(Result(setting, runner, len(events), seconds, found, extra))
        want = expected.get(name) if expected else None
        agreed = set(counts.values())
        if len(agreed) > 1 or (want is not None and agreed != {want}):
            raise KleeneError(
                f"{name}: the counts disagree ({counts}"
                + (f"; the peers' reference says {want}" if want is not None else "")
                + "): no rate is reported for a wrong count"
            )
        for result in results[-len(counts) :]:
            print(f"benchmarks: {result}", file=sys.stderr)
    return results, COLUMNS, None
