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

>>> from kleene.bench.lazy import measure, query, stream
>>> events = stream(3, ratio=20, size=2000)
>>> text = query("SEQ3", events.names, 30)
>>> eager = measure(text, events, "nfa", "SEQ3")
>>> lazy = measure(text, events, "lazy_chain", "SEQ3", order=events.names)  # rarest first
>>> eager.matches == lazy.matches, lazy.peak_live < eager.peak_live
(True, True)
"""

from __future__ import annotations

import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import permutations
from pathlib import Path
from typing import Any

import kleene
from kleene.bench.workloads import StockStream
from kleene.errors import EventError
from kleene.events import Event

__all__ = [
    "CORRELATED",
    "MOVED",
    "PATTERNS",
    "Result",
    "changing",
    "daily",
    "measure",
    "nasdaq",
    "plot",
    "query",
    "rarest_first",
    "stream",
    "table",
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


@dataclass(frozen=True)
class Result:
    setting: str
    plan: str
    events: int
    seconds: float
    matches: int
    peak_live: int
    predicates: int
    memory_ops: int
    peak_bytes: int = 0  # measured only when asked (0: not measured)

    @property
    def throughput(self) -> float:
        return self.events / self.seconds if self.seconds else float("inf")


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
    best: Result | None = None
    for _ in range(repeat):
        engine = kleene.Engine(text, plan, **options)
        start = time.perf_counter()
        matches = len(engine.send_many(events)) + len(engine.close())
        seconds = time.perf_counter() - start
        counts = engine.metrics.plan
        label = plan + "".join(f" {k}={_shown(v)}" for k, v in options.items())
        result = Result(
            setting,
            label,
            len(events),
            seconds,
            matches,
            engine.metrics.peak_runs,
            counts.get("edge_evaluations", 0) + counts.get("predicate_checks", 0),
            sum(
                counts.get(k, 0)
                for k in (
                    "runs_created",
                    "buffer_writes",
                    "instances_created",
                    "buffer_inserts",
                    "buffer_removals",
                )
            ),
        )
        if best is None or result.seconds < best.seconds:
            best = result
    assert best is not None
    if memory:
        best = replace(best, peak_bytes=_peak_bytes(text, events, plan, options))
    return best


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


def _shown(value: Any) -> str:
    return ",".join(value) if isinstance(value, tuple | list) else str(value)


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


def table(results: list[Result], baseline: str = "nfa") -> str:
    """A Markdown table; each row's throughput and peak live partial matches as ratios to the
    baseline plan's in the same setting."""
    rows = [
        "| setting | plan | events/s | matches | peak live | predicates/event | memory ops/event "
        f"| speed vs {baseline} | {baseline}'s peak live / this |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    memory = any(r.peak_bytes for r in results)
    if memory:
        rows[0] += " peak memory (KiB) |"
        rows[1] += "---:|"
    base = {r.setting: r for r in results if r.plan == baseline}
    for r in results:
        eager = base.get(r.setting)
        speed = f"{r.throughput / eager.throughput:.1f}x" if eager else "-"
        fewer = f"{eager.peak_live / max(r.peak_live, 1):.1f}x" if eager else "-"
        rows.append(
            f"| {r.setting} | {r.plan} | {r.throughput:,.0f} | {r.matches:,} | "
            f"{r.peak_live:,} | {r.predicates / r.events:.2f} | {r.memory_ops / r.events:.2f} "
            f"| {speed} | {fewer} |" + (f" {r.peak_bytes / 1024:,.0f} |" if memory else "")
        )
    return "\n".join(rows)


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
            axes[1][column].plot(xs, [max(r.peak_live, 1) for _, r in points], marker="o")
        axes[0][column].set_title(name)
        for row, label in enumerate(("events/s", "peak live partial matches")):
            axes[row][column].set_yscale("log")
            axes[row][column].set_ylabel(label)
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
