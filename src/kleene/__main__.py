"""`python -m kleene`: the command line."""

from kleene.cli.main import console

console()
