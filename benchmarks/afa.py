"""The AFA paper's experiments (Chandramouli, Goldstein & Maier, VLDB 2010: section 6 and
Appendix D) on the `afa` plan.

`--experiment` picks one:

- `disorder` (figures 12, 13): throughput and state against the share of events that
  arrive late, for `afa` (speculating; `max_delay` punctuates), AFA+O (sequence numbers)
  and `nfa` in exact mode (`max_delay` reorders), baseline `nfa`.
- `speculation` (figures 10, 11): output size (matches and retractions) and latency
  against the Cleanse factor σ, on a disordered stream with `--ignorable` shares of
  ignorable events (I, the paper's 70 % and 90 %), with AFA+O beside. Latency is
  counted in events: how many arrivals after a match's last event the match that stands
  was output (the paper measures milliseconds at one event per millisecond).
- `dynamic` (figure 9): the paper's Q3, a linear AFA of eight arcs (a first tick, then
  seven upticks or downticks), whose random tick arc is replaced every `--periods` events
  by one that looks the other way (which leaves the chance of a match as it was), against
  the static AFA: as a dynamic pattern with the arcs built once (`kleene.afa.read_arc`; the
  paper's arc-events carry compiled functions), as one given the ARC line's text (read at
  each change), and as an operator restart (a new engine fed the events still in the
  window, the outputs of that replay dropped: they were reported before). All run in order
  (`max_delay=0`); each round runs the four in turn.
- `peers` (figure 8): the paper's Q1 (a drop, then k = 2 V-patterns) over a synthetic
  ticker (prices rising with chance p = 0.5 by a truncated normal step), in order, window
  2,000 events: `afa`, AFA+O, AFA+ignore, and the matchers the paper compares with,
  written for it (`benchmarks.matchers`): CAN, a two-state automaton embedding Q1, run by
  `afa` with anchors (AFA+ignore, as the paper runs it); IPM,
  the pattern as joins of the events with the arcs and with the partial matches fed back.
  Every matcher's matches (spans of events) are checked against `afa`'s.
- `ignorable` (figures 16, 17, and figure 10's output size): throughput and state against
  the share of ignorable events, in order for `afa` and `afa` with Appendix D's anchors
  (`anchors=True`, the paper's AFA+ignore), both punctuating as they go (`max_delay=0`),
  and the output size of `afa` with 10 % of the events late. As in the paper: Q1 with
  k = 1 and no drop over the synthetic ticker (p = 0.5), its arcs taking Stock ticks and
  an ignorable arc at q1 and q2 stepping over the Noise events that replace a share of
  them; each round runs the three in turn.

The other experiments' stream is the SASE+ stock ticker and their query the `disorder`
suite's (p2s3, W=500).
`--plot FILE` draws the experiment's figure.

>>> events = stock(200)
>>> [(e.attrs["symbol"], e.attrs["seq"]) for e in numbered(events)][:4]
[('MSFT', 0), ('MSFT', 1), ('IBM', 0), ('IBM', 1)]
>>> noisy = with_noise(events, 0.5)
>>> len(noisy), sum(e.type == "Noise" for e in noisy)
(200, 101)
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import kleene
from benchmarks import matchers
from benchmarks.disorder import disordered
from benchmarks.harness import Column, Result, best_of, count, engine_run, rounds
from benchmarks.nfa import query
from kleene.errors import KleeneError
from kleene.events import Event
from kleene.matches import Match, Retraction
from kleene.testing.workloads import StockStream

__all__ = ["arguments", "latency_run", "numbered", "run", "stock", "with_noise"]

EXPERIMENTS = ("disorder", "speculation", "dynamic", "ignorable", "peers")
COLUMNS = [
    Column("withdrawn", count("retractions")),
    Column("peak pmatches", count("peak_runs")),
]

#: The dynamic experiment's AFA: the paper's Q3, eight arcs in a line, each a tick that
#: rises ("u") or falls ("d") from the last price (`q0 -> q1` takes any first tick).
TICKS = "uduudud"


def ticks_afa(directions: str, window: int) -> str:
    """Q3 in the text form, its tick arcs `a1`..`a7` looking the ways `directions` says."""
    lines = [f"AFA q3 WITHIN {window}", "REGISTER (last = 0)", f"FINAL q{len(directions) + 1}"]
    lines.append("ARC a0: q0 -> q1 SET last = e.price")
    lines += [tick_arc(f"a{i}", i, way) for i, way in enumerate(directions, 1)]
    return "\n".join(lines)


def tick_arc(name: str, at: int, way: str) -> str:
    """The tick arc from state q`at`, rising ("u") or falling ("d")."""
    op = ">" if way == "u" else "<"
    return f"ARC {name}: q{at} -> q{at + 1} WHEN e.price {op} r.last SET last = e.price"


def stock(size: int, seed: int = 1, symbols: int = 2, p_up: float = 0.7) -> list[Event]:
    return list(StockStream(size=size, symbols=symbols, p_up=p_up, seed=seed).events())


def numbered(events: Sequence[Event], key: str = "symbol") -> list[Event]:
    """The events with a sequence number `seq` per symbol, in timestamp order (AFA+O)."""
    counts: dict[Any, int] = {}
    out = []
    for event in events:
        number = counts[event.attrs[key]] = counts.get(event.attrs[key], -1) + 1
        out.append(Event(event.type, event.ts, {**event.attrs, "seq": number}, id=event.id))
    return out


def with_noise(events: Sequence[Event], share: float, seed: int = 1) -> list[Event]:
    """The stream with a `share` of its events turned into `Noise` events, which the query
    (over `Stock`) skips: ignorable events."""
    rng = random.Random(seed)
    return [Event("Noise", e.ts, e.attrs, id=e.id) if rng.random() < share else e for e in events]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--experiment", choices=EXPERIMENTS, default="disorder")
    parser.add_argument("--events", type=int, default=10_000, help="stream size (10000)")
    parser.add_argument("--window", type=int, default=500, help="the query's partition window")
    parser.add_argument("--delay", type=int, default=20, help="the most an event lags (20)")
    for name, kind, default, what in (
        ("fractions", float, [0.0, 0.1, 0.2, 0.4], "disorder: shares of late events"),
        ("sigmas", float, [0, 2, 5, 10, 20, math.inf], "speculation: Cleanse factors σ"),
        ("periods", int, [10, 100, 1000], "dynamic: events between pattern changes"),
        ("shares", float, [0.0, 0.3, 0.6, 0.9], "ignorable: shares of ignorable events"),
        ("ignorable", float, [0.7], "speculation: shares of ignorable events"),
    ):
        shown = " ".join(f"{v:g}" for v in default)
        parser.add_argument(
            f"--{name}", type=kind, nargs="+", default=default, help=f"{what} ({shown})"
        )
    parser.add_argument("--plot", type=Path, help="also draw the experiment into this PNG")


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    experiment: Callable[[argparse.Namespace], tuple[list[Result], str | None]] = {
        "disorder": _disorder,
        "speculation": _speculation,
        "dynamic": _dynamic,
        "ignorable": _ignorable,
        "peers": _peers,
    }[args.experiment]
    results, baseline = experiment(args)
    if args.plot:
        plot(args.experiment, results, args.plot)
        print(f"benchmarks: drew {args.plot}", file=sys.stderr)
    columns = COLUMNS
    if args.experiment == "speculation":
        columns = [*COLUMNS, Column("latency (events)", count("latency"), ".1f")]
    return results, columns, baseline


def _measure(args: argparse.Namespace, measure: Callable[[], Result]) -> Result:
    result = best_of(args.repeat, measure)
    print(f"benchmarks: {result}", file=sys.stderr)
    return result


def _disorder(args: argparse.Namespace) -> tuple[list[Result], str | None]:
    events = numbered(stock(args.events))
    text = query("p2", "s3", args.window)
    results = []
    for fraction in args.fractions:
        moved = disordered(events, fraction, args.delay)
        setting = f"late={fraction:g}"
        exact = partial(engine_run, text, moved, "nfa", setting, "nfa", max_delay=args.delay)
        if fraction == 0:
            exact = partial(engine_run, text, events, "nfa", setting, "nfa")
        results.append(_measure(args, exact))
        variants: list[tuple[str, dict[str, Any]]] = [("afa", {}), ("afa+O", {"sequence": "seq"})]
        for label, options in variants:
            measure = partial(
                engine_run, text, moved, "afa", setting, label, max_delay=args.delay, **options
            )
            results.append(_measure(args, measure))
    return results, "nfa"


def latency_run(
    text: str, events: Sequence[Event], setting: str, label: str, **options: Any
) -> Result:
    """A run that times the engine and records, for each match that stands at the end, how
    many arrivals after its last event it was output (`counts["latency"]`, the mean)."""
    engine = kleene.Engine(text, "afa", **options)
    arrived: dict[Any, int] = {}
    emitted: list[tuple[int, list[Match]]] = []
    started = time.perf_counter()
    for position, event in enumerate(events):
        arrived[event.id] = position
        found = engine.send(event)
        if found:
            emitted.append((position, found))
    emitted.append((len(events), engine.close()))
    seconds = time.perf_counter() - started
    standing: dict[Any, list[tuple[int, Match]]] = {}
    for position, found in emitted:
        for output in found:
            if isinstance(output, Retraction):
                standing[output.key].pop()
            else:
                standing.setdefault(output.key, []).append((position, output))
    delays = [
        position - max(arrived[e.id] for e in match.events)
        for held in standing.values()
        for position, match in held
    ]
    counts = {
        **engine.metrics.as_dict(),
        "latency": sum(delays) / len(delays) if delays else 0.0,
    }
    outputs = sum(len(found) for _, found in emitted)
    return Result(setting, label, len(events), seconds, outputs, counts)


def _speculation(args: argparse.Namespace) -> tuple[list[Result], str | None]:
    text = query("p2", "s3", args.window)
    results = []
    for share in args.ignorable:
        events = numbered(with_noise(stock(args.events), share))
        moved = disordered(events, max(args.fractions), args.delay)
        prefix = f"I={share:g} " if len(args.ignorable) > 1 else ""
        for sigma in args.sigmas:
            measure = partial(
                latency_run,
                text,
                moved,
                f"{prefix}sigma={sigma:g}",
                "afa",
                max_delay=args.delay,
                speculation=sigma,
            )
            results.append(_measure(args, measure))
        measure = partial(
            latency_run, text, moved, f"{prefix}sequence", "afa+O", max_delay=args.delay,
            sequence="seq",
        )  # fmt: skip
        results.append(_measure(args, measure))
    return results, None


@dataclass
class _Restart:
    """The paper's operator restart: a new engine for the new pattern, fed the events still
    within the window from a buffer, so no match with them is lost; what that replay
    reports was reported before, and is dropped."""

    window: int
    engine: kleene.Engine
    buffer: list[Event]

    def change(self, afa: kleene.afa.Afa) -> None:
        latest = self.buffer[-1].t if self.buffer else 0
        self.buffer = [e for e in self.buffer if latest - e.t <= self.window]
        self.engine = kleene.Engine(afa, max_delay=0)
        self.engine.send_many(self.buffer)

    def send(self, event: Event) -> list[Match]:
        self.buffer.append(event)
        return self.engine.send(event)


def _dynamic(args: argparse.Namespace) -> tuple[list[Result], str | None]:
    events = stock(args.events, symbols=1, p_up=0.5)
    results = []
    for period in args.periods:
        setting = f"period={period}"
        runners = {
            label: partial(_changing, events, period, args.window, label)
            for label in ("static", "dynamic", "dynamic, ARC text", "restart")
        }
        best = rounds(runners, args.repeat)
        for result, _ in best.values():
            print(f"benchmarks: {result}", file=sys.stderr)
            results.append(replace(result, setting=setting))
    return results, "static"


def _changing(
    events: Sequence[Event], period: int, window: int, label: str
) -> tuple[Result, float]:
    """Run Q3 over the events, a random tick arc turned the other way every `period`
    events (the same changes for every label, drawn before the clock starts, as the arc
    a paper's arc-event carries is made by whoever sends it): "static" never changes it;
    "dynamic" removes the arc and adds the new one (an `Arc`); "dynamic, ARC text" adds
    the ARC line's text, read at the change; "restart" starts a new engine with the
    changed AFA."""
    afa = kleene.afa.read_afa(ticks_afa(TICKS, window))
    built = {
        (at, way): kleene.afa.read_arc(tick_arc(f"a{at}", at, way), afa)
        for at in range(1, len(TICKS) + 1)
        for way in "ud"
    }
    changes = {} if label == "static" else _changes(afa, built, len(events), period)
    engine = kleene.Engine(afa, max_delay=0)
    arcs = kleene.afa.arcs(engine) if label.startswith("dynamic") else None
    restart = _Restart(window, engine, []) if label == "restart" else None
    found = 0
    started = time.perf_counter()
    for position, event in enumerate(events):
        change = changes.get(position)
        if change is not None:
            old, arc, text, changed = change
            if arcs is not None:
                arcs.remove(old)
                arcs.add(arc if label == "dynamic" else text)
            elif restart is not None:
                restart.change(changed)
        found += len(restart.send(event) if restart is not None else engine.send(event))
    seconds = time.perf_counter() - started
    counts = (restart.engine if restart is not None else engine).metrics.as_dict()
    return Result("", label, len(events), seconds, found, counts), seconds


def _changes(
    afa: kleene.afa.Afa, built: dict[tuple[int, str], kleene.afa.Arc], size: int, period: int
) -> dict[int, tuple[str, kleene.afa.Arc, str, kleene.afa.Afa]]:
    """Before which events the pattern changes, and how: the arc that goes, the one that
    comes (as an `Arc` and as ARC text), and the AFA as it is then (for a restart)."""
    draw = random.Random(period)
    ways, names = list(TICKS), [f"a{i}" for i in range(1, len(TICKS) + 1)]
    changes = {}
    for number, position in enumerate(range(period, size, period), 1):
        at = draw.randrange(1, len(TICKS) + 1)
        way = ways[at - 1] = "d" if ways[at - 1] == "u" else "u"
        name = f"a{at}_{number}"
        arcs = [built[i, w] for i, w in enumerate(ways, 1)]
        changed = replace(afa, arcs=(afa.arcs[0], *arcs))
        changes[position] = (names[at - 1], replace(built[at, way], name=name),
                             tick_arc(name, at, way), changed)  # fmt: skip
        names[at - 1] = name
    return changes


def v_pattern(k: int, drop: float, window: int, ignorable: bool = False) -> str:
    """The paper's Q1 (Figure 3) in the text form: a drop of more than `drop`, then `k`
    V-patterns (as many upticks as downticks in each); r1 counts downticks less upticks in
    the current V, r2 the V-patterns done. With `ignorable`, its arcs take Stock ticks
    only, and an ignorable arc at q1 and at q2 steps over Noise events (Appendix D).

    >>> print(v_pattern(1, 0, 500, ignorable=True).splitlines()[-1])
    ARC i2: q2 -> q2 ON Noise BIND NONE
    """
    on = " ON Stock" if ignorable else ""
    return "\n".join(
        [
            f"AFA q1 WITHIN {window}",
            "REGISTER (r1 = 0, r2 = 0)",
            "FINAL q3",
            f"ARC a0: q0 -> q1{on} WHEN e.change < -{drop}",
            f"ARC a1: q1 -> q1{on} WHEN e.change < 0 SET r1 = r.r1 + 1",
            f"ARC a2: q1 -> q2{on} WHEN e.change < 0 SET r1 = r.r1 + 1",
            f"ARC a3: q2 -> q2{on} WHEN e.change > 0 AND r.r1 > 1 SET r1 = r.r1 - 1",
            f"ARC a4: q2 -> q1{on} WHEN e.change > 0 AND r.r1 = 1 AND r.r2 < {k - 1} "
            "SET r1 = 0, r2 = r.r2 + 1",
            f"ARC a5: q2 -> q3{on} WHEN e.change > 0 AND r.r1 = 1 AND r.r2 = {k - 1} "
            "SET r1 = 0, r2 = r.r2 + 1",
            *([f"ARC i{n}: q{n} -> q{n} ON Noise BIND NONE" for n in (1, 2)] if ignorable else []),
        ]
    )


def ticker(size: int, p_up: float = 0.5, seed: int = 1) -> list[Event]:
    """The paper's synthetic ticker: each tick rises with chance `p_up`, else falls, by a
    step drawn from a normal distribution (mean 0.70, deviation 0.30) truncated above 0;
    `change` is the step, `seq` the tick's number.

    >>> [round(e["change"], 2) for e in ticker(3)]
    [-1.09, 1.13, -0.37]
    """
    rng = random.Random(seed)
    price, made = 100.0, []
    for n in range(size):
        step = 0.0
        while step <= 0:
            step = rng.gauss(0.7, 0.3)
        change = step if rng.random() < p_up else -step
        price += change
        made.append(Event("Stock", n, {"price": price, "change": change, "seq": n}, id=n))
    return made


def _peers(args: argparse.Namespace) -> tuple[list[Result], str | None]:
    events = ticker(args.events)
    afa = kleene.afa.read_afa(v_pattern(2, 0.25, args.window))
    setting = f"Q1 k=2 W={args.window}"
    runners: dict[str, Callable[[], tuple[tuple[Result, set[tuple[Any, Any]]], float]]] = {
        "afa": partial(_spans, afa, events, setting, "afa"),
        "afa+O": partial(_spans, afa, events, setting, "afa+O", sequence="seq"),
        "afa+ignore": partial(_spans, afa, events, setting, "afa+ignore", anchors=True),
        # the paper's CAN "uses our AFA+ignore implementation"
        "CAN": partial(_spans, matchers.can(afa), events, setting, "CAN", anchors=True),
        "IPM": partial(_ipm, afa, events, setting),
    }
    best = rounds(runners, args.repeat)
    expected = best["afa"][0][1]
    results = []
    for label, ((result, spans), _) in best.items():
        if spans != expected:
            raise KleeneError(
                f"{label} finds other matches than afa: {len(spans)} spans, not {len(expected)}"
            )
        print(f"benchmarks: {result}", file=sys.stderr)
        results.append(result)
    return results, "afa"


def _spans(
    afa: kleene.afa.Afa, events: list[Event], setting: str, label: str, **options: Any
) -> tuple[tuple[Result, set[tuple[Any, Any]]], float]:
    """A run of the `afa` plan, in order: its result and the spans of its matches."""
    engine = kleene.Engine(afa, "afa", max_delay=0, **options)
    started = time.perf_counter()
    found = engine.send_many(events) + engine.close()
    seconds = time.perf_counter() - started
    spans = {(m.events[0].id, m.events[-1].id) for m in found}
    counts = engine.metrics.as_dict()
    return (Result(setting, label, len(events), seconds, len(spans), counts), spans), seconds


def _ipm(
    afa: kleene.afa.Afa, events: list[Event], setting: str
) -> tuple[tuple[Result, set[tuple[Any, Any]]], float]:
    matcher = matchers.Ipm(afa)
    started = time.perf_counter()
    found = [match for event in events for match in matcher.send(event)]
    seconds = time.perf_counter() - started
    spans = {(match[0], match[-1]) for match in found}
    return (Result(setting, "IPM", len(events), seconds, len(spans)), spans), seconds


def _ignorable(args: argparse.Namespace) -> tuple[list[Result], str | None]:
    plain = ticker(args.events)
    afa = kleene.afa.read_afa(v_pattern(1, 0, args.window, ignorable=True))
    results = []
    for share in args.shares:
        events = with_noise(plain, share)
        setting = f"ignorable={share:g}"
        # both punctuate as they go (max_delay=0), as the paper's runs do
        basic = partial(engine_run, afa, events, "afa", setting, "afa", max_delay=0)
        anchored = partial(
            engine_run, afa, events, "afa", setting, "afa+ignore", anchors=True, max_delay=0
        )
        moved = disordered(events, 0.1, args.delay)
        late = partial(
            engine_run, afa, moved, "afa", setting, "afa, 10% late", max_delay=args.delay
        )
        runners = {"afa": basic, "afa+ignore": anchored, "late": late}
        best = rounds({k: partial(_with_seconds, run) for k, run in runners.items()}, args.repeat)
        for result, _ in best.values():
            print(f"benchmarks: {result}", file=sys.stderr)
            results.append(result)
    return results, "afa"


def _with_seconds(run: Callable[[], Result]) -> tuple[Result, float]:
    result = run()
    return result, result.seconds


def plot(experiment: str, results: list[Result], path: Path) -> None:
    """The experiment's figure: throughput (and state, outputs or latency) against its
    variable, one line per plan."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: list[tuple[str, Callable[[Result], float]]] = [("events/s", lambda r: r.throughput)]
    if experiment == "speculation":
        panels = [("outputs", lambda r: r.matches), ("latency (events)", _latency)]
    elif experiment in ("disorder", "ignorable"):
        panels.append(("peak pmatches", lambda r: r.counts.get("peak_runs", 0)))
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    finite = [x for x in map(_x, (r.setting for r in results)) if math.isfinite(x)]
    infinity = 1.5 * max(finite) if finite and max(finite) > 0 else 1.0
    for column, (label, value) in enumerate(panels):
        axis = axes[0][column]
        for plan in dict.fromkeys(r.plan for r in results):
            mine = [r for r in results if r.plan == plan]
            points = sorted(
                (infinity if math.isinf(_x(r.setting)) else _x(r.setting), value(r))
                for r in mine
                if not math.isnan(_x(r.setting))
            )
            if points:
                axis.plot([p for p, _ in points], [v for _, v in points], marker="o", label=plan)
            elif mine:  # a row without the variable (AFA+O beside σ): a level line
                axis.axhline(value(mine[0]), linestyle="--", color="gray", label=plan)
        axis.set_ylabel(label)
        axis.set_xlabel(results[0].setting.split("=")[0] if results else "")
        if experiment == "dynamic":
            axis.set_yscale("log")
        elif label == "peak pmatches":  # log above 1, linear to 0: none kept is drawn as 0
            axis.set_yscale("symlog", linthresh=1)
        if experiment == "dynamic":
            axis.set_xscale("log")
    axes[0][0].legend(fontsize="small")
    figure.suptitle(
        f"afa: {experiment}"
        + (" (σ = inf drawn at the right)" if experiment == "speculation" else "")
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    plt.close(figure)


def _latency(result: Result) -> float:
    return float(result.counts.get("latency", 0.0))


def _x(setting: str) -> float:
    """A setting's variable ("late=0.1" -> 0.1; NaN when it has none)."""
    _, _, value = setting.rpartition("=")
    try:
        return float(value)
    except ValueError:
        return math.nan
