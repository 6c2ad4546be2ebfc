"""The lazy-NFA experiments (Kolchinsky & Schuster, section 8): lazy chains and trees against
the eager NFA on a stock stream whose event types differ in frequency.

The paper types each stock event by its region and asks, for every pattern, that each pair
of events has correlated price histories (`corr(a.history, b.history) > T`). Here the type
is the symbol of a generated `StockStream` whose frequencies run from the rarest to the most
frequent by a set ratio, each event carrying its symbol's previous prices; a pattern's
variables take the types most frequent first, so an eager NFA starts a run at almost every
event while a lazy one waits for the rarest. The patterns (`PATTERNS`): SEQ3-5, AND2-3,
NSEQ3, NAND3 and NSEQ5 (the second event negated), ITER3 (`SEQ(a, b+, c)`), ITER3EQ (the
same with `b[i].price = b[i-1].price`, the paper's pattern (7), for the group-by attribute),
OR2SEQ2, OR4SEQ2 and OR2SEQ4.

The eager baseline is the `nfa` plan (SASE+'s NFA^b, which the paper's section 2.2 describes;
it also merges equivalent runs, so it is the stronger eager automaton). The counts the paper
plots: throughput, peak live partial matches (runs, instances), predicate evaluations per
event (`edge_evaluations`, `predicate_checks`) and memory operations per event (runs or
instances created, buffer writes, inserts and removals); with `memory`, the peak memory
the engine allocates (tracemalloc, in a run of its own, untimed).

The real data: the NASDAQ minute bars of the OpenCEP repository (`nasdaq` reads a file of
`SYMBOL,YYYYMMDDhhmm,open,peak,low,close,volume` lines), with the same patterns over its
symbols; there the pairs must have moved the same way in their minute (`MOVED`).

>>> source = stream(3, ratio=20, size=2000)
>>> text = query("SEQ3", source.names, 30)
>>> eager = measure(text, source, "nfa", "SEQ3")
>>> lazy = measure(text, source, "lazy_chain", "SEQ3", order=source.names)  # rarest first
>>> eager.matches == lazy.matches, lazy.counts["peak_runs"] < eager.counts["peak_runs"]
(True, True)
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from itertools import permutations
from pathlib import Path
from typing import Any

import kleene
from benchmarks.harness import Column, Result, best_of, count, engine_run
from benchmarks.settings import label, plans
from kleene.errors import EventError, KleeneError
from kleene.events import Event
from kleene.testing.workloads import StockStream

__all__ = [
    "CORRELATED",
    "MOVED",
    "PATTERNS",
    "arguments",
    "changing",
    "daily",
    "measure",
    "nasdaq",
    "plot",
    "query",
    "rarest_first",
    "run",
    "stream",
]

#: Each pattern: its operator and how many types it uses.
PATTERNS = {
    "SEQ3": 3,
    "SEQ4": 4,
    "SEQ5": 5,
    "AND2": 2,
    "AND3": 3,
    "NSEQ3": 3,
    "NAND3": 3,
    "NSEQ5": 5,
    "ITER3": 3,
    "ITER3EQ": 3,
    "OR2SEQ2": 4,
    "OR4SEQ2": 8,
    "OR2SEQ4": 8,
}
#: The correlation a pair needs (T): 0.5 leaves matches for five-event patterns on
#: generated random walks of eight prices, where 0.9 leaves none past three.
THRESHOLD = 0.5
#: What each pair of a pattern's events must satisfy: correlated price histories (the
#: paper's), or (the NASDAQ bars, which have no history) a move the same way in the minute.
CORRELATED = "corr({x}.history, {y}.history) > {t}"
MOVED = "({x}.close - {x}.open) * ({y}.close - {y}.open) > 0"


def stream(types: int, ratio: float, size: int, rotate: int = 0, seed: int = 1) -> StockStream:
    """A stream of `types` symbols as event types, rarest to most frequent by `ratio`, each
    event with its symbol's last eight prices."""
    return StockStream(
        size=size,
        symbols=types,
        ratio=ratio,
        types="symbol",
        history=8,
        rotate=rotate,
        seed=seed,
    )


def query(
    name: str,
    names: Sequence[str],
    window: float,
    relation: str = CORRELATED,
    unit: str = "",
    threshold: float = THRESHOLD,
    price: str = "price",
) -> str:
    """Pattern `name` over the stream's symbols `names` (rarest first), most frequent first
    in the pattern, every pair of its events in `relation` (with `threshold` as T), WITHIN
    `window` `unit`; ITER3EQ's iterated events share the attribute `price`."""
    relation = relation.replace("{t}", f"{threshold:g}")
    types = list(reversed(names[: PATTERNS[name]]))
    letters = "abcdefgh"
    variables = [f"{t} {letters[k]}" for k, t in enumerate(types)]
    if name.startswith("OR"):
        count, size = int(name[2]), int(name[-1])
        groups = [variables[k * size : (k + 1) * size] for k in range(count)]
        body = ", ".join(f"SEQ({', '.join(g)})" for g in groups)
        pairs = [p for g in groups for p in _pairs([v.split()[1] for v in g])]
        return _text(f"OR({body})", pairs, window, relation, unit)
    operator = "AND" if "AND" in name else "SEQ"
    if name.startswith("N"):
        negated = letters[1]
        variables[1] = f"NOT({types[1]} {negated})"
        positive = [letters[k] for k in range(len(types)) if k != 1]
        pairs = [*_pairs(positive), (letters[0], negated)]
        return _text(f"{operator}({', '.join(variables)})", pairs, window, relation, unit)
    if name == "ITER3":
        variables[1] = f"{types[1]}+ b[]"
        pairs = [("a", "c"), ("a", "b[i]")]
        return _text(f"SEQ({', '.join(variables)})", pairs, window, relation, unit)
    if name == "ITER3EQ":  # the paper's pattern (7): the b events share one price
        variables[1] = f"{types[1]}+ b[]"
        text = _text(f"SEQ({', '.join(variables)})", [("a", "c")], window, relation, unit)
        structure, _, rest = text.partition(" WHERE ")
        return f"{structure} WHERE b[i].{price} = b[i-1].{price} AND {rest}"
    pairs = _pairs(letters[: len(types)])
    return _text(f"{operator}({', '.join(variables)})", pairs, window, relation, unit)


def _pairs(names: list[str] | str) -> list[tuple[str, str]]:
    return [(x, y) for k, x in enumerate(names) for y in names[k + 1 :]]


def _text(
    structure: str, pairs: list[tuple[str, str]], window: float, relation: str, unit: str
) -> str:
    where = " AND ".join(relation.format(x=x, y=y) for x, y in pairs)
    return f"PATTERN {structure} WHERE {where} WITHIN {window:g}{' ' + unit if unit else ''}"


def nasdaq(path: Path) -> list[Event]:
    """The events of an OpenCEP NASDAQ file: one `SYMBOL,YYYYMMDDhhmm,open,peak,low,close,
    volume` line each, typed by the symbol, timestamped by the minute (UTC). A malformed
    line is an `EventError` naming the file, the line and the field."""
    fields = ("open", "peak", "low", "close", "volume")
    events: list[Event] = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            values = line.strip().split(",")
            where = f"{path}, line {number}"
            if len(values) != 2 + len(fields):
                raise EventError(f"{where}: expected 7 comma-separated fields, not {len(values)}")
            symbol, stamp = values[0], values[1]
            try:
                ts = datetime.strptime(stamp, "%Y%m%d%H%M").replace(tzinfo=UTC)
            except ValueError:
                raise EventError(f"{where}, field 'ts': not YYYYMMDDhhmm: {stamp!r}") from None
            attrs: dict[str, Any] = {}
            for name, text in zip(fields, values[2:], strict=True):
                try:
                    attrs[name] = float(text)
                except ValueError:
                    raise EventError(f"{where}, field {name!r}: not a number: {text!r}") from None
            events.append(Event(symbol, ts, attrs, id=len(events)))
    return events


def daily(path: Path, types: int, ratio: float) -> tuple[list[Event], list[str]]:
    """Daily bars (a CSV, gzipped or not, with columns date, symbol, open, high, low, close,
    volume, in time order, as ../shared/data/stocks_daily_us has them) of `types` symbols,
    typed by symbol, and those symbols rarest first: the symbol listed on the most days and
    others whose day counts fall geometrically to about 1/`ratio` of its (a symbol traded on
    fewer days is a rarer type; only symbols a pattern can name). The other symbols' bars
    are left out."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    columns = ["date", "symbol", "open", "high", "low", "close", "volume"]
    try:
        table = pacsv.read_csv(
            path,
            convert_options=pacsv.ConvertOptions(
                include_columns=columns, column_types={"date": pa.date32()}
            ),
        )
    except (pa.ArrowInvalid, KeyError) as error:
        raise EventError(f"{path}: not daily bars with columns {columns}: {error}") from None
    found = table["symbol"].value_counts()
    days = {
        symbol: count
        for symbol, count in zip(
            found.field(0).to_pylist(), found.field(1).to_pylist(), strict=True
        )
        if _nameable(symbol)
    }
    if len(days) < types:
        raise EventError(f"{path} has {len(days)} symbols; {types} are needed")
    most = max(days.values())
    chosen: list[str] = []
    for k in range(types):
        target = most / ratio ** (k / max(types - 1, 1))
        chosen.append(
            min(
                (s for s in days if s not in chosen),
                key=lambda s: (abs(days[s] - target), s),
            )
        )
    rows = table.filter(pc.is_in(table["symbol"], value_set=pa.array(chosen))).to_pylist()
    events: list[Event] = []
    for row in rows:
        day = row.pop("date")
        ts = datetime(day.year, day.month, day.day, tzinfo=UTC)
        events.append(Event(row.pop("symbol"), ts, row, id=len(events)))
    return events, sorted(chosen, key=lambda s: (days[s], s))


def _nameable(symbol: str) -> bool:
    """Can a pattern name the symbol as an event type (`BRK-B` or `AND` cannot)?"""
    if not symbol.replace("_", "").isalnum() or not symbol.isascii() or symbol[0].isdigit():
        return False
    try:
        kleene.parse(f"PATTERN SEQ({symbol} x)")
    except kleene.KleeneError:
        return False
    return True


def rarest_first(events: Sequence[Event]) -> list[str]:
    """The event types, rarest first (ties by name)."""
    counts = Counter(e.type for e in events)
    return sorted(counts, key=lambda t: (counts[t], t))


def measure(
    text: str,
    source: StockStream | Sequence[Event],
    plan: str,
    setting: str,
    repeat: int = 1,
    memory: bool = False,
    **options: Any,
) -> Result:
    """Run one query with one plan over the stream; time only the engine, keep the fastest of
    `repeat` runs; with `memory`, one more run measures the engine's peak allocations."""
    events = list(source.events()) if isinstance(source, StockStream) else list(source)
    measured = partial(engine_run, text, events, plan, setting, label(plan, options), **options)
    best = best_of(repeat, measured)
    if not memory:
        return best
    peak = {**best.counts, "peak_bytes": _peak_bytes(text, events, plan, options)}
    return Result(best.setting, best.plan, best.events, best.seconds, best.matches, peak)


def _peak_bytes(text: str, events: list[Event], plan: str, options: dict[str, Any]) -> int:
    """The most memory the engine held at once over the run (its matches dropped as they
    come, as a consumer would), by tracemalloc."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        engine = kleene.Engine(text, plan, **options)
        for start in range(0, len(events), 256):
            engine.send_many(events[start : start + 256])
        engine.close()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


#: Counters that are memory operations: runs or partial matches created, buffer writes,
#: inserts and removals.
MEMORY_OPS = (
    "runs_created",
    "buffer_writes",
    "instances_created",
    "buffer_inserts",
    "buffer_removals",
)


def _fewer(result: Result, baseline: Result | None) -> float | None:
    """The baseline's peak live partial matches over this row's; empty when this row keeps
    none alive (no ratio: both figures are in the "peak live" column, and no floor is put
    under the divisor).

    >>> base = Result("s", "nfa", 10, 1.0, 0, {"peak_runs": 40})
    >>> _fewer(Result("s", "lazy_tree", 10, 1.0, 0, {"peak_runs": 8}), base)
    5.0
    >>> _fewer(Result("s", "lazy_chain", 10, 1.0, 0, {"peak_runs": 0}), base)
    """
    if baseline is None or not result.counts["peak_runs"]:
        return None
    return float(baseline.counts["peak_runs"] / result.counts["peak_runs"])


def computations(result: Result) -> float:
    """The predicate evaluations a run made (the paper's computations)."""
    counts = result.counts
    return float(counts.get("edge_evaluations", 0) + counts.get("predicate_checks", 0))


def memory_operations(result: Result) -> float:
    """The memory operations a run made: instances and runs created, events buffered and
    removed."""
    return float(sum(result.counts.get(k, 0) for k in MEMORY_OPS))


def _per_match(value: Callable[[Result], float]) -> Callable[[Result, Result | None], float | None]:
    """A column value: `value` per match (figures 15 and 16); empty without matches."""
    return lambda r, _: value(r) / r.matches if r.matches else None


COLUMNS = [
    Column("peak live", count("peak_runs")),
    Column("predicates/event", lambda r, _: computations(r) / r.events, ".2f"),
    Column("memory ops/event", lambda r, _: memory_operations(r) / r.events, ".2f"),
    Column("predicates/match", _per_match(computations), ".1f"),
    Column("memory ops/match", _per_match(memory_operations), ".1f"),
    Column("baseline's peak live / this", _fewer, ".1f"),
]


def changing(
    pattern: str,
    types: int,
    ratio: float,
    size: int,
    rotate: int,
    window: float,
    threshold: float = THRESHOLD,
) -> tuple[str, StockStream, list[tuple[str, dict[str, Any]]]]:
    """Section 8.3: a stream whose rarest type changes every `rotate` events, the pattern,
    and the settings to compare: the eager NFA, a chain in every order, the tree."""
    source = stream(types, ratio, size, rotate)
    text = query(pattern, source.names, window, threshold=threshold)
    names = source.names[: PATTERNS[pattern]]
    settings: list[tuple[str, dict[str, Any]]] = [("nfa", {})]
    settings += [("lazy_chain", {"order": order}) for order in permutations(names)]
    settings.append(("lazy_tree", {}))
    return text, source, settings


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--experiment",
        choices=["window", "ratio", "changing", "nasdaq", "daily"],
        default="window",
        help="window: a growing WITHIN; ratio: rarest-to-most-frequent; changing: the rarest "
        "type changes every --rotate events (chains in every order vs the tree); nasdaq: the "
        "real minute bars of --data (OpenCEP's NASDAQ_*.txt), --windows in minutes; daily: "
        "--data daily bars (date, symbol, open, high, low, close, volume), --windows in days",
    )
    parser.add_argument("--patterns", nargs="+", default=["SEQ3"], help="pattern names (SEQ3)")
    parser.add_argument("--events", type=int, default=20_000, help="stream size (20000)")
    parser.add_argument("--windows", type=float, nargs="+", default=[40.0], help="WITHIN (40)")
    parser.add_argument(
        "--ratios", type=float, nargs="+", default=[100.0], help="rarest-to-most-frequent (100)"
    )
    parser.add_argument("--rotate", type=int, default=5_000, help="changing: events per phase")
    parser.add_argument(
        "--threshold", type=float, default=THRESHOLD, help="the correlation T each pair needs"
    )
    parser.add_argument(
        "--plans",
        nargs="+",
        default=["nfa", "lazy_chain", "lazy_tree"],
        help="NAME or NAME:option=value (nfa lazy_chain lazy_tree); the first is the baseline; "
        "lazy_chain gets the right order (rarest first) unless it estimates one",
    )
    parser.add_argument("--plot", type=Path, help="also draw the results into this PNG")
    parser.add_argument(
        "--memory", action="store_true", help="also measure peak memory (one more run each)"
    )
    parser.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=[],
        help="nasdaq: OpenCEP NASDAQ_*.txt files; daily: a daily-bars CSV",
    )


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    unknown = [p for p in args.patterns if p not in PATTERNS]
    if unknown:
        raise KleeneError(f"unknown patterns {unknown}; known: {', '.join(PATTERNS)}")
    results: list[Result] = []

    def measured(text: str, source: Any, name: str, options: dict[str, Any], setting: str) -> None:
        results.append(measure(text, source, name, setting, args.repeat, args.memory, **options))
        print(f"benchmarks: {results[-1]}", file=sys.stderr)

    def every_plan(text: str, source: Any, setting: str, right: tuple[str, ...]) -> None:
        """Run each --plans entry; lazy_chain gets the right order unless it estimates one."""
        for name, options in plans(args.plans):
            told = name == "lazy_chain" and "estimate" not in options
            measured(text, source, name, {"order": right, **options} if told else options, setting)

    if args.experiment == "changing":
        for pattern in args.patterns:
            text, source, settings = changing(
                pattern,
                PATTERNS[pattern],
                args.ratios[0],
                args.events,
                args.rotate,
                args.windows[0],
                args.threshold,
            )
            setting = f"{pattern} ratio=1:{args.ratios[0]:g} rotate={args.rotate}"
            for name, options in settings:
                measured(text, source, name, options, setting)
    elif args.experiment == "nasdaq":
        if not args.data:
            raise KleeneError("the nasdaq experiment reads --data FILE ...")
        for path in args.data:
            events = nasdaq(path)
            names = rarest_first(events)
            for pattern in args.patterns:
                if PATTERNS[pattern] > len(names):
                    too_few = f"{path.name} has too few symbols for {pattern}"
                    print(f"benchmarks: {too_few}", file=sys.stderr)
                    continue
                for window in args.windows:
                    text = query(pattern, names, window, MOVED, "minutes", price="close")
                    setting = f"{pattern} {path.stem} window={window:g}"
                    every_plan(text, events, setting, tuple(names[: PATTERNS[pattern]]))
    elif args.experiment == "daily":
        if not args.data:
            raise KleeneError("the daily experiment reads --data FILE.csv[.gz]")
        for pattern in args.patterns:
            for ratio in args.ratios:
                events, names = daily(args.data[0], PATTERNS[pattern], ratio)
                counts = Counter(e.type for e in events)
                shown = counts[names[-1]] / counts[names[0]]
                for window in args.windows:
                    text = query(pattern, names, window, MOVED, "days", price="close")
                    setting = f"{pattern} ratio=1:{shown:.0f} window={window:g}"
                    every_plan(text, events, setting, tuple(names))
    else:
        for pattern in args.patterns:
            for ratio in args.ratios:
                source = stream(PATTERNS[pattern], ratio, args.events)
                for window in args.windows:
                    text = query(pattern, source.names, window, threshold=args.threshold)
                    setting = f"{pattern} ratio=1:{ratio:g} window={window:g}"
                    every_plan(text, source, setting, tuple(source.names[: PATTERNS[pattern]]))
    if args.plot:
        x = {"ratio": "ratio", "changing": "plan"}.get(args.experiment, "window")
        plot(results, x, args.plot)
        print(f"benchmarks: drew {args.plot}", file=sys.stderr)
    columns = COLUMNS
    if args.memory:
        peak = Column("peak memory (KiB)", lambda r, _: r.counts["peak_bytes"] / 1024)
        columns = [*COLUMNS, peak]
    return results, columns, results[0].plan if results else None


def plot(results: list[Result], x: str, path: Path) -> None:
    """Throughput and peak live partial matches against `x` ("window" or "ratio", read from
    settings such as "SEQ3 window=20"), one panel per pattern, log scale (the paper's
    figures 10, 12 and 17). With x "plan": bars per plan (figure 18's comparison)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if x == "plan":
        figure, axis = plt.subplots(figsize=(8, 4))
        axis.barh([r.plan for r in results], [r.throughput for r in results])
        axis.set_xlabel("events/s")
        axis.set_title(results[0].setting if results else "")
        figure.tight_layout()
        _save(figure, path)
        return
    patterns = sorted({r.setting.split()[0] for r in results})
    figure, axes = plt.subplots(2, len(patterns), figsize=(4 * len(patterns), 7), squeeze=False)
    for column, name in enumerate(patterns):
        mine = [r for r in results if r.setting.split()[0] == name]
        for plan in dict.fromkeys(r.plan for r in mine):
            points = sorted((_value(r.setting, x), r) for r in mine if r.plan == plan)
            xs = [p for p, _ in points]
            axes[0][column].plot(xs, [r.throughput for _, r in points], marker="o", label=plan)
            axes[1][column].plot(xs, [r.counts["peak_runs"] for _, r in points], marker="o")
        axes[0][column].set_title(name)
        axes[0][column].set_yscale("log")
        # log above 1, linear to 0: a plan that keeps none alive is drawn at 0, not at 1
        axes[1][column].set_yscale("symlog", linthresh=1)
        for row, axis_label in enumerate(("events/s", "peak live partial matches")):
            axes[row][column].set_ylabel(axis_label)
            axes[row][column].set_xlabel(x)
            if x == "ratio":
                axes[row][column].set_xscale("log")
    axes[0][0].legend(fontsize="small")
    figure.tight_layout()
    _save(figure, path)


def _save(figure: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    plt.close(figure)


def _value(setting: str, key: str) -> float:
    for part in setting.split():
        name, _, value = part.partition("=")
        if name == key:
            return float(value.removeprefix("1:"))
    raise ValueError(f"setting {setting!r} has no {key}")
