"""`kleene gen`: generate event data (a stock ticker stream)."""

from __future__ import annotations

import argparse
from typing import Any

import kleene.io
from kleene.cli.common import log, quiet_argument
from kleene.errors import KleeneError

__all__ = ["add"]


def add(commands: Any) -> None:
    """Add `kleene gen` to the subcommands."""
    gen = commands.add_parser("gen", help="generate event data", description="Generate event data.")
    kinds = gen.add_subparsers(title="generators", required=True, metavar="KIND")
    stock = kinds.add_parser(
        "stock",
        help="a stock ticker stream (SASE+ / AFA style)",
        description="A stock ticker stream: symbols with frequencies from rarest to most "
        "frequent by --ratio, a price random walk going up with probability --p-up, a "
        "uniform volume in 1..1000. Deterministic for a seed. Columns: type, ts, symbol, "
        "price, volume (and history).",
    )
    stock.add_argument(
        "--output", "-o", required=True, help="file to write (.csv, .jsonl, .parquet)"
    )
    stock.add_argument("--events", "-n", type=int, default=10_000, help="how many events (10000)")
    stock.add_argument("--symbols", type=int, default=10, help="how many symbols (10)")
    stock.add_argument(
        "--ratio", type=float, default=1.0, help="most frequent / rarest symbol frequency (1)"
    )
    stock.add_argument("--p-up", type=float, default=0.5, help="probability a price rises (0.5)")
    stock.add_argument("--seed", type=int, default=0, help="random seed (0)")
    stock.add_argument(
        "--types",
        choices=["constant", "symbol"],
        default="constant",
        help="event type: 'Stock' for all (constant) or the symbol (symbol)",
    )
    stock.add_argument("--interval", type=float, default=1.0, help="timestamp step (1)")
    stock.add_argument("--history", type=int, default=0, help="previous prices per event (0)")
    stock.add_argument(
        "--rotate",
        type=int,
        default=0,
        help="every N events the frequencies move on by one symbol, so the rarest changes (0)",
    )
    quiet_argument(stock)
    stock.set_defaults(run=_gen_stock)


def _gen_stock(args: argparse.Namespace) -> int:
    from kleene.testing.workloads import StockStream

    interval: int | float = int(args.interval) if args.interval.is_integer() else args.interval
    try:
        stream = StockStream(
            size=args.events,
            symbols=args.symbols,
            ratio=args.ratio,
            p_up=args.p_up,
            seed=args.seed,
            types=args.types,
            interval=interval,
            history=args.history,
            rotate=args.rotate,
        )
    except ValueError as error:
        raise KleeneError(str(error)) from None
    rows = kleene.io.write_columns(stream.batches(), args.output)
    log.info(f"wrote {rows:,} events to {args.output}")
    return 0
