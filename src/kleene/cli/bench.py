"""`kleene bench SUITE [ARGS...]`: run a benchmark suite of a source checkout (the same as
`python -m benchmarks SUITE ...` there; benchmarks/README.md lists the suites). The
benchmarks are not installed with the package: they read the papers' workloads and write
their reports for docs/benchmarks-journal.md."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

from kleene.errors import KleeneError

__all__ = ["add", "checkout"]


def add(commands: Any) -> None:
    """Add `kleene bench` to the subcommands."""
    bench = commands.add_parser(
        "bench",
        help="run a benchmark suite (from a source checkout): nfa, lazy, lead, afa, ...",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    bench.add_argument(
        "suite", help="the suite's name; `kleene bench SUITE --help` for its arguments"
    )
    bench.add_argument("arguments", nargs=argparse.REMAINDER, help="the suite's arguments")
    bench.set_defaults(run=_bench)


def checkout() -> Path | None:
    """The source checkout this kleene runs from, if it has the benchmarks."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "benchmarks" / "__main__.py").is_file() else None


def _bench(args: argparse.Namespace) -> int:
    """`python -m benchmarks SUITE ...` in the checkout, by this Python (the package's own
    path is left alone: the benchmarks run as the checkout's)."""
    root = checkout()
    if root is None:
        raise KleeneError(
            "kleene bench runs from a source checkout of kleene (the benchmarks are not "
            "installed with the package): git clone it and run `make bench` there"
        )
    command = [sys.executable, "-m", "benchmarks", args.suite, *args.arguments]
    return subprocess.run(command, cwd=root, check=False).returncode
