"""kleene: complex event processing for Python, on Apache Spark through PySpark.

>>> import kleene
>>> events = [{"type": t, "ts": ts, "price": p} for t, ts, p in
...           [("A", 1, 10), ("A", 2, 12), ("B", 3, 11), ("B", 4, 13), ("C", 5, 20)]]
>>> for m in kleene.match("PATTERN SEQ(A a, B b, C c) WHERE b.price > a.price WITHIN 1 hour",
...                       events):
...     print(m.ids())
{'a': (0,), 'b': (2,), 'c': (4,)}
{'a': (0,), 'b': (3,), 'c': (4,)}
{'a': (1,), 'b': (3,), 'c': (4,)}
"""

from kleene import lead
from kleene.compiler.functions import register_function, unregister_function
from kleene.compiler.options import Options
from kleene.errors import (
    EventError,
    KleeneError,
    LimitError,
    PatternError,
    PatternSyntaxError,
    PlanError,
)
from kleene.events import Event, Watermark
from kleene.io import from_arrow, from_pandas, read_events, to_pandas
from kleene.language.sase import builder
from kleene.language.sase.ast import Pattern
from kleene.matches import Match, Retraction, Timeout
from kleene.plans import compile, parse
from kleene.plans.afa import Afa, read_afa
from kleene.plans.afa import Builder as AfaBuilder
from kleene.plans.base import Plan
from kleene.runtime.engine import Engine, match, match_iter

__version__ = "0.1.0"

__all__ = [
    "Afa",
    "AfaBuilder",
    "Engine",
    "Event",
    "EventError",
    "KleeneError",
    "LimitError",
    "Match",
    "Options",
    "Pattern",
    "PatternError",
    "PatternSyntaxError",
    "Plan",
    "PlanError",
    "Retraction",
    "Timeout",
    "Watermark",
    "__version__",
    "builder",
    "compile",
    "from_arrow",
    "from_pandas",
    "lead",
    "match",
    "match_iter",
    "parse",
    "read_afa",
    "read_events",
    "register_function",
    "to_pandas",
    "unregister_function",
]
