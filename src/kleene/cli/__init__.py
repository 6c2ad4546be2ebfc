"""The `kleene` command (`main.py`), one module per subcommand: `run.py`, `match.py`,
`explain.py`, `gen.py`; `common.py` holds what they share, `options.py` reads plan options."""

from kleene.cli.main import console, main

__all__ = ["console", "main"]
