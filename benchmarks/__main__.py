"""`python -m benchmarks NAME ...` (or `make bench`): run a benchmark suite and print its
report, a Markdown table stamped with the date, Python, the machine and the git commit, for
docs/benchmarks-journal.md. Progress goes to stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from benchmarks import (
    afa,
    disorder,
    events,
    flink,
    keys,
    lazy,
    lead,
    nfa,
    papers,
    peers,
    rules,
    spark,
    sql,
    stream,
    window,
)
from benchmarks.harness import report
from kleene.errors import KleeneError

SUITES: dict[str, ModuleType] = {
    "nfa": nfa,
    "lazy": lazy,
    "window": window,
    "disorder": disorder,
    "keys": keys,
    "afa": afa,
    "lead": lead,
    "flink": flink,
    "peers": peers,
    "papers": papers,
    "rules": rules,
    "events": events,
    "spark": spark,
    "sql": sql,
    "stream": stream,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    suites = parser.add_subparsers(dest="suite", required=True, metavar="NAME")
    for name, module in SUITES.items():
        doc = (module.__doc__ or name).strip()
        sub = suites.add_parser(name, help=doc.splitlines()[0], description=doc.split("\n\n")[0])
        module.arguments(sub)
        sub.add_argument(
            "--repeat", type=int, default=1, help="keep the fastest of N runs of each setting (1)"
        )
    args = parser.parse_args(argv)
    try:
        results, columns, baseline = SUITES[args.suite].run(args)
    except KleeneError as error:
        print(f"benchmarks: {error}", file=sys.stderr)
        return 1
    print(report(results, columns, baseline, ["benchmarks", *argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
