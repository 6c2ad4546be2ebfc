"""SQL's MATCH_RECOGNIZE: `kleene.match_recognize` in-process (from a pandas DataFrame,
conversion included), against pandas-match-recognize, the one Python peer, run in its own
Python (`--peer-python`, a virtualenv with `pip install pandas-match-recognize`) on the same
rows, and `kleene.spark.match_recognize` on Spark `local[2]` (`--spark`).

The rows are a random walk of integer prices per symbol (`--symbols`, one tick of each in
turn), and the queries the shapes the documentation of Oracle, Trino and Flink SQL shows: a
V (a fall, then a rise), a W, and a run of rises. Each side's rows must equal kleene's, or
the run stops; rates are rows of input per second of CPU (in-process) or of wall clock
(Spark, whose work is in other processes).

>>> results, _, _ = run(argparse.Namespace(rows=2000, symbols=4, queries=["v", "rises"],
...     peer_python=None, spark=False, repeat=1))
>>> [(r.setting, r.plan, r.matches > 0) for r in results]  # doctest: +NORMALIZE_WHITESPACE
[('v, 2,000 rows', 'kleene', True), ('rises, 2,000 rows', 'kleene', True)]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import kleene
from benchmarks.harness import Column, Result, rounds
from kleene.errors import KleeneError

__all__ = ["QUERIES", "arguments", "prices", "run"]

#: The clauses, by name (PARTITION BY sym ORDER BY t over columns sym, t, price).
QUERIES = {
    "v": """PARTITION BY sym ORDER BY t
        MEASURES FIRST(price) AS top, LAST(DOWN.price) AS bottom, LAST(UP.price) AS back,
            count(*) AS n
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (STRT DOWN+ UP+)
        DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)""",
    "w": """PARTITION BY sym ORDER BY t
        MEASURES FIRST(price) AS top, LAST(price) AS back, count(*) AS n
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (STRT DOWN+ UP+ DOWN+ UP+)
        DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)""",
    "rises": """PARTITION BY sym ORDER BY t
        MEASURES FIRST(price) AS low, LAST(price) AS high, count(*) AS n
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (STRT UP{3,})
        DEFINE UP AS price > PREV(price)""",
}

# pandas-match-recognize in its own Python: reads the rows, runs each clause, prints the
# CPU seconds and the rows it found
_PEER = """
import json, sys, time
import pandas
from pandas_match_recognize import match_recognize
frame = pandas.read_csv(sys.argv[1])
clause = open(sys.argv[2]).read()
started = time.process_time()
found = match_recognize(f"SELECT * FROM frame MATCH_RECOGNIZE ({clause})", frame)
seconds = time.process_time() - started
rows = [list(map(lambda v: v.item() if hasattr(v, "item") else v, r)) for r in
        found.itertuples(index=False)]
print(json.dumps({"seconds": seconds, "columns": list(found.columns), "rows": rows}))
"""


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=100_000, help="rows (100000)")
    parser.add_argument("--symbols", type=int, default=10, help="partitions (10)")
    parser.add_argument(
        "--queries", nargs="+", choices=sorted(QUERIES), default=sorted(QUERIES), help="(all)"
    )
    parser.add_argument(
        "--peer-python", help="a Python with pandas-match-recognize installed, to run it too"
    )
    parser.add_argument("--spark", action="store_true", help="also kleene on Spark local[2]")


def prices(rows: int, symbols: int, seed: int = 7) -> Any:
    """A pandas DataFrame of `rows` ticks: sym, t, price (a random walk per symbol)."""
    import pandas

    draw = random.Random(seed)
    level = [100] * symbols
    sym, t, price = [], [], []
    for at in range(rows):
        s = at % symbols
        level[s] = max(1, level[s] + draw.choice((-2, -1, -1, 1, 1, 2)))
        sym.append(f"S{s}")
        t.append(at)
        price.append(level[s])
    return pandas.DataFrame({"sym": sym, "t": t, "price": price})


def run(args: argparse.Namespace) -> tuple[list[Result], list[Column], str]:
    frame = prices(args.rows, args.symbols)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as work:
        data = Path(work) / "prices.parquet"
        frame.to_parquet(data, index=False)
        text = Path(work) / "prices.csv"  # the peer's Python need not have pyarrow
        frame.to_csv(text, index=False)
        for name in args.queries:
            clause = QUERIES[name]
            setting = f"{name}, {args.rows:,} rows"

            def kleene_side(clause: str = clause) -> tuple[Any, float]:
                started = time.process_time()
                found = kleene.match_recognize(frame, clause)
                return found, time.process_time() - started

            runners: dict[str, Callable[[], tuple[Any, float]]] = {"kleene": kleene_side}
            if args.peer_python:
                query = Path(work) / f"{name}.sql"
                query.write_text(clause)
                runners["pandas-match-recognize"] = partial(_peer, args.peer_python, text, query)
            best = rounds(runners, args.repeat)
            mine = _rows(best["kleene"][0])
            for side, (found, seconds) in best.items():
                if _rows(found) != mine:
                    raise KleeneError(f"{side} finds other rows than kleene on {name}")
                results.append(Result(setting, side, args.rows, seconds, len(mine)))
            if args.spark:
                results.append(_spark(data, clause, setting, args.rows, mine))
    return results, [Column("CPU s", lambda r, _: r.seconds, ".2f")], "kleene"


def _rows(found: Any) -> list[tuple[Any, ...]]:
    """A result's rows, comparable across sides: sorted tuples of plain values."""
    if isinstance(found, dict):
        return sorted(tuple(row) for row in found["rows"])
    return sorted(tuple(v.item() if hasattr(v, "item") else v for v in row)
                  for row in found.itertuples(index=False))  # fmt: skip


def _peer(python: str, data: Path, query: Path) -> tuple[dict[str, Any], float]:
    done = subprocess.run(
        [python, "-c", _PEER, str(data), str(query)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise KleeneError(f"pandas-match-recognize failed: {done.stderr.strip()[-500:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found, float(found["seconds"])


def _spark(data: Path, clause: str, setting: str, rows: int, mine: list[tuple[Any, ...]]) -> Result:
    """kleene on Spark local[2]: the wall-clock time of reading the file and collecting the
    rows (the session started before)."""
    from kleene.spark import match_recognize, spark_session

    spark = spark_session("local[2]")
    started = time.perf_counter()
    found = match_recognize(spark.read.parquet(str(data)), clause).toPandas()
    seconds = time.perf_counter() - started
    if _rows(found) != mine:
        raise KleeneError("Spark finds other rows than kleene in-process")
    return Result(setting, "kleene on Spark local[2] (wall s)", rows, seconds, len(mine))
