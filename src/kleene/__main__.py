"""`python -m kleene`: the command line."""

import sys

from kleene.cli import main

sys.exit(main())
