"""The `kleene` command: match patterns in files, explain queries, generate data.

    kleene run QUERY --input PATH --output PATH [--master URL] [--conf KEY=VALUE] ...
    kleene stream QUERY --input DIR --checkpoint DIR --output DIR [--watermark "1 minute"] ...
    kleene match QUERY --input FILE [--output FILE] [--plan NAME] [--stats] ...
    kleene replay FILE --to DIR [--rate N] [--batch M]
    kleene explain QUERY
    kleene gen stock --output FILE [--events N] [--symbols K] [--ratio R] ...
    kleene bench SUITE [ARGS ...]     (from a source checkout: benchmarks/README.md)

QUERY is a query file or the query text itself. Matches go out as JSON lines; messages and
the summary go to stderr. Exit status: 0 done, 1 a query or data error (the message says
where), 2 a usage error, 130 interrupted. One module per subcommand, each with an `add`
that declares its arguments and the function that runs it.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import kleene
from kleene.cli import bench, explain, gen, match, replay, run, stream
from kleene.cli.common import logging_to_stderr
from kleene.errors import KleeneError

__all__ = ["console", "leave", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = parser().parse_args(argv)
    try:
        with logging_to_stderr(getattr(args, "quiet", False), getattr(args, "verbose", False)):
            result: int = args.run(args)
        return result
    except KleeneError as error:
        print(f"kleene: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        print("kleene: interrupted", file=sys.stderr)
        return 130


def console() -> NoReturn:
    """The entry point of the `kleene` command and of `python -m kleene`: `main`, then
    `leave` with its status (argparse's exits, `--help` and usage errors, included)."""
    try:
        status = main()
    except SystemExit as exiting:
        if isinstance(exiting.code, str):
            print(exiting.code, file=sys.stderr)
        status = exiting.code if isinstance(exiting.code, int) else int(exiting.code is not None)
    leave(status)


def leave(status: int) -> NoReturn:
    """End the process with `status` once exit handlers ran and what was written is out,
    without the interpreter's teardown. A pyarrow thread still reading ahead from a Python
    file (standard input, a gzip stream) takes the interpreter's lock to let go of it; met
    while the interpreter finalizes, that ends the thread inside C++ code that may not
    unwind, and the process aborts ("terminate called without an active exception") after
    every match was written. Nothing is left that the teardown would do: files are closed
    where they were opened and the JVM of a Spark run leaves when its pipe closes."""
    atexit._run_exitfuncs()
    for written in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the reader went away, or it closed
            written.flush()
    os._exit(status)


def parser() -> argparse.ArgumentParser:
    """The command line's parser, every subcommand added."""
    top = argparse.ArgumentParser(
        prog="kleene",
        description="Complex event processing: find SASE+ patterns in event streams.",
    )
    top.add_argument("--version", action="version", version=f"kleene {kleene.__version__}")
    commands = top.add_subparsers(title="commands", required=True, metavar="COMMAND")
    for command in (run, stream, match, explain, replay, gen, bench):
        command.add(commands)
    return top


def _silence_stdout() -> None:
    """After the reader of our output went away (`| head`), drop what is left quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
