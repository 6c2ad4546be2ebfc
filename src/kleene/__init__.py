"""kleene: complex event processing for Python, on Apache Spark through PySpark.

The one door: `match` (and `match_iter`) finds a query's matches in events, a file reader,
a pandas DataFrame or an Arrow table; `match_recognize` runs SQL's MATCH_RECOGNIZE over a
DataFrame, an Arrow table or a file; `Engine` runs one over a stream; `compile` and
`parse` turn query text into a plan or a checked AST. Plan-specific names live in their
own namespaces: `kleene.lead` (LEAD rules), `kleene.afa` (AFAs written directly), and
`kleene.spark` (Spark DataFrames and streams).

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

from kleene import afa, lead
from kleene.compiler.functions import register_function, unregister_function
from kleene.compiler.options import Options
from kleene.compiler.pipeline import parse
from kleene.errors import (
    EventError,
    KleeneError,
    LimitError,
    PatternError,
    PatternSyntaxError,
    PlanError,
    StateError,
)
from kleene.events import Event, Watermark
from kleene.io import from_arrow, from_pandas, from_records, read_events, read_matches, to_pandas
from kleene.io.matching import match, match_iter
from kleene.io.recognize import match_recognize
from kleene.language.sql.reader import register_aggregate, unregister_aggregate
from kleene.matches import Match, Retraction, Timeout
from kleene.plans import compile
from kleene.plans.base import Plan
from kleene.runtime.engine import Engine

__version__ = "0.1.0"

__all__ = [
    "Engine",
    "Event",
    "EventError",
    "KleeneError",
    "LimitError",
    "Match",
    "Options",
    "PatternError",
    "PatternSyntaxError",
    "Plan",
    "PlanError",
    "Retraction",
    "StateError",
    "Timeout",
    "Watermark",
    "__version__",
    "afa",
    "compile",
    "from_arrow",
    "from_pandas",
    "from_records",
    "lead",
    "match",
    "match_iter",
    "match_recognize",
    "parse",
    "read_events",
    "read_matches",
    "register_aggregate",
    "register_function",
    "to_pandas",
    "unregister_aggregate",
    "unregister_function",
]
