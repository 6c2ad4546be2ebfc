"""Many rules over one stream: one engine running N rules of the peers' kind at once
against N separate runs (`kleene.match` a rule at a time), in-process, on the same list
of dicts, and reading the same Parquet file; and on Spark, one `detect` job of every rule
(reading the file once) against a job a rule.

The rules are the peers' five shapes (P0-P4, `benchmarks.peers`) over triples of the
symbols S0..S9, drawn with a fixed seed, all under skip-till-any-match within 9 ticks.
Each side converts the input itself: the separate runs each read (or convert) it whole,
leaving out the rows their rule cannot take (a file's as it is read, in Arrow); the one
engine makes each tick an event once and sends it only to the rules naming its symbol. The matches
are counted on both sides and must agree, rule by rule.

>>> results, _, _ = run(argparse.Namespace(events=2000, rules=6, repeat=1,
...                                         inputs=["dicts", "parquet"]))
>>> [(r.setting, r.plan, r.matches == results[0].matches) for r in results]
... # doctest: +NORMALIZE_WHITESPACE
[('dicts, 2,000 ticks, 6 rules', 'separate runs', True),
 ('dicts, 2,000 ticks, 6 rules', 'one engine', True),
 ('parquet, 2,000 ticks, 6 rules', 'separate runs', True),
 ('parquet, 2,000 ticks, 6 rules', 'one engine', True)]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kleene
from benchmarks.harness import Column, Result, bytecodes, per_event, rounds
from benchmarks.peers import PATTERNS, SYMBOLS, tick_rows
from kleene.errors import KleeneError
from kleene.io import write_columns

__all__ = ["arguments", "rules", "run"]


def rules(count: int, seed: int = 7) -> dict[str, str]:
    """`count` rules: the peers' shapes in turn, each over three symbols drawn at random."""
    draw = random.Random(seed)
    shapes = list(PATTERNS.values())
    made = {}
    for number in range(count):
        text = shapes[number % len(shapes)]
        for old, new in zip(("S0", "S1", "S2"), draw.sample(SYMBOLS, 3), strict=True):
            text = text.replace(f"{old} ", f"@{new} ")
        made[f"r{number}"] = text.replace("@", "")
    return made


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=100_000, help="ticks (100000)")
    parser.add_argument("--rules", type=int, default=100, help="rules (100)")
    parser.add_argument(
        "--inputs",
        nargs="+",
        choices=["dicts", "parquet", "spark"],
        default=["dicts", "parquet"],
        help="what each side reads: a list of dicts in memory, or a Parquet file it reads "
        "itself (kleene.read_events), or the Parquet file on Spark (kleene.spark.detect: "
        "one job of every rule, reading it once, against a job a rule; wall seconds) "
        "(dicts parquet)",
    )
    parser.add_argument(
        "--spark-rules", type=int, help="how many of the rules the Spark side runs (all)"
    )
    parser.add_argument(
        "--bytecodes",
        action="store_true",
        help="count each side's bytecode instructions an event (one traced run, in-process "
        "inputs only) instead of timing it",
    )


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str | None]:
    rows = tick_rows(args.events)
    ticks = [{"type": SYMBOLS[s], "ts": ts, "price": p, "volume": v} for s, p, v, ts in rows]
    queries = rules(args.rules)
    if getattr(args, "bytecodes", False) and "spark" in args.inputs:
        raise KleeneError("--bytecodes counts the in-process runs: leave spark out of --inputs")
    compiled = {name: kleene.compile(text, name=name) for name, text in queries.items()}
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "ticks.parquet"
        write_columns([{key: [t[key] for t in ticks] for key in ticks[0]}], path)
        sources: dict[str, Callable[[], Any]] = {
            "dicts": lambda: ticks,
            "parquet": lambda: kleene.read_events(path),
        }
        for kind in args.inputs:
            if kind == "spark":
                results += _on_spark(queries, path, args)
            else:
                setting = f"{kind}, {args.events:,} ticks, {args.rules} rules"
                results += _compare(compiled, sources[kind], setting, args)
    if getattr(args, "bytecodes", False):  # (the traced runs' times say nothing)
        return results, [Column("bytecodes/event", per_event("bytecodes"), ",.1f")], None
    return results, [Column("s", lambda r, _: r.seconds, ".2f")], APART


#: The two sides' names: the baseline, and the one engine (or job).
APART, TOGETHER = "separate runs", "one engine"


def _on_spark(queries: dict[str, str], path: Path, args: argparse.Namespace) -> list[Result]:
    """The rules on Spark (`local[2]`): one `detect` job of them all, reading the file
    once, against one job a rule; wall seconds, each side's rows counted rule by rule and
    checked against in-process."""
    from pyspark.sql import functions as F

    from kleene.spark import detect, spark_session

    chosen = dict(list(queries.items())[: args.spark_rules or len(queries)])
    setting = f"spark, {args.events:,} ticks, {len(chosen)} rules"
    spark = spark_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("OFF")
    frame = spark.read.parquet(str(path))
    events = kleene.read_events(path)
    expected = {name: len(each) for name, each in kleene.match(chosen, events).items()}
    detect(frame, next(iter(chosen.values()))).count()  # the workers started, kleene shipped

    def separate() -> tuple[dict[str, int], float]:
        started = time.perf_counter()
        counts = {name: detect(frame, query).count() for name, query in chosen.items()}
        return counts, time.perf_counter() - started

    def together() -> tuple[dict[str, int], float]:
        started = time.perf_counter()
        rows = detect(frame, chosen).groupBy("query").agg(F.count(F.lit(1)).alias("n"))
        counts = dict.fromkeys(chosen, 0) | {r["query"]: r["n"] for r in rows.collect()}
        return counts, time.perf_counter() - started

    best = rounds({APART: separate, TOGETHER: together}, args.repeat)
    for name, (counts, _) in best.items():
        if counts != expected:
            differ = sorted(n for n in chosen if counts.get(n) != expected[n])
            raise KleeneError(f"{name}: the rules' counts differ from in-process: {differ[:5]}")
    return [
        Result(setting, name, args.events, seconds, sum(counts.values()))
        for name, (counts, seconds) in best.items()
    ]


def _compare(
    compiled: dict[str, kleene.Plan[Any]],
    source: Callable[[], Any],
    setting: str,
    args: argparse.Namespace,
) -> list[Result]:
    """The rules run one by one and in one engine over what `source` gives, in turns (CPU
    seconds of this process)."""

    def separate() -> tuple[dict[str, int], float]:
        started = time.process_time()
        counts = {name: len(kleene.match(plan, source())) for name, plan in compiled.items()}
        return counts, time.process_time() - started

    def together() -> tuple[dict[str, int], float]:
        started = time.process_time()
        found = kleene.match(dict(compiled), source())
        return {name: len(each) for name, each in found.items()}, time.process_time() - started

    if getattr(args, "bytecodes", False):
        traced = {name: bytecodes(side) for name, side in ((APART, separate), (TOGETHER, together))}
        if traced[APART][0][0] != traced[TOGETHER][0][0]:
            raise KleeneError("the rules' counts differ between the two sides")
        return [
            Result(setting, name, args.events, seconds, sum(counts.values()), {"bytecodes": n})
            for name, ((counts, seconds), counted) in traced.items()
            for n in [sum(counted.values())]
        ]
    best = rounds({APART: separate, TOGETHER: together}, args.repeat)
    if best[APART][0] != best[TOGETHER][0]:
        differ = sorted(n for n in compiled if best[APART][0][n] != best[TOGETHER][0][n])
        raise KleeneError(f"the rules' counts differ between the two sides: {differ[:5]}")
    return [
        Result(setting, name, args.events, seconds, sum(counts.values()))
        for name, (counts, seconds) in best.items()
    ]
