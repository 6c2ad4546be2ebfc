"""The automata of negative components, composed with the positive one (SASE+ section 4).

A pattern with negation is evaluated as its positive components' automaton, whose matches
are candidates, and one automaton per negative component `NOT(T r)`, whose matches eliminate
them: a single *begin* edge on T whose formula is r's conditions, the positive variables in
them being the candidate's events (the nested query's parameters). The finalizer runs it over
the events where the negation stands (which events, and when that is known, is
`reference`'s finalizer's rule: docs/semantics.md, section 6).

The formula is compiled like the positive edges' (`vector.py`), one function per condition.
Called once per candidate, it reads the values of the positive variables' terms out of the
match and returns the test of one event, which only reads that event:

>>> from kleene import parse
>>> from kleene.compiler.analysis import analyze
>>> negative = Negative(analyze(parse('''PATTERN SEQ(Shelf s, NOT(Register r), Exit e)
...     WHERE [tag] AND r.area = s.area''')), "r")
>>> print(negative.describe())
begin r -> F  if r.area = s.area
>>> print(negative.source.strip())
def condition0(M):
    h0 = _value(k1, M)
    def test(e):
        try:
            return ((a3 := e._k_area) is not None and (b4 := h0) is not None and a3 == b4)
        except (TypeError, ArithmeticError):
            return (_compare(k0, e._k_area, h0, k2)) is True
    return test
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kleene.compiler.analysis import Analysis, Condition, Negated
from kleene.compiler.evaluate import Env, evaluate
from kleene.compiler.functions import known_functions
from kleene.compiler.options import Options
from kleene.errors import EventError
from kleene.events import Event
from kleene.language import expr as E
from kleene.plans.common.arrivals import Stream
from kleene.plans.common.checks import Checks, as_events
from kleene.plans.common.finalize import Candidate, Finalizer
from kleene.plans.nfa.automaton import Automaton, Placement
from kleene.plans.nfa.vector import Context, VectorWriter

__all__ = ["Negative", "NegativeFinalizer"]

BoundEvents = Mapping[str, Sequence[Event]]
Test = Callable[[Event], bool]


@dataclass(frozen=True)
class _Raised:
    """A term of the match that raised when read ahead; reading it raises again."""

    error: EventError


def _value(node: E.Expr, bound: BoundEvents, i: int | None = None) -> Any:
    return evaluate(node, Env(bound, i, _FUNCTIONS))


def _ahead(node: E.Expr, bound: BoundEvents) -> Any:
    """A term's value read before the test needs it: an error is kept for when it does."""
    try:
        return _value(node, bound)
    except EventError as error:
        return _Raised(error)


def _raise(value: _Raised) -> Any:
    raise value.error


_FUNCTIONS = known_functions()
_NEGATION_HELPERS = {"_value": _value, "_ahead": _ahead, "_raise": _raise, "_Raised": _Raised}


class _Writer(VectorWriter):
    """Writes a negative component's conditions: the negated variable is the event tested
    (`e`), every other term is read from the match `M`, ahead of the test unless it depends
    on i."""

    def __init__(self, analysis: Analysis, negated: str) -> None:
        super().__init__(analysis, Automaton([], {}, analysis.variables))
        self.negated = negated
        self.ahead: list[str] = []  # the lines reading the match's terms
        self.read: dict[E.Expr, str] = {}  # each term read, by the name it is read into
        self.functions = []

    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Context) -> str:
        if node.var == self.negated:
            assert isinstance(node, E.Attr), "validation: a negated variable binds one event"
            return self.current(node.attr)
        if _uses_i(node):
            return f"_value({self.constant(node)}, M, i)"
        if node not in self.read:
            name = self.read[node] = f"h{len(self.read)}"
            reader = "_ahead" if isinstance(node, E.Aggregate) else "_value"
            self.ahead.append(f"    {name} = {reader}({self.constant(node)}, M)\n")
        name = self.read[node]
        if isinstance(node, E.Aggregate):  # may raise; only where the interpreter would
            return f"(_raise({name}) if type({name}) is _Raised else {name})"
        return name

    def write(self, condition: Condition) -> str:
        """The function for one condition; returns its name."""
        self.ahead = []
        self.read = {}
        name = f"condition{len(self.functions)}"
        ctx = Context(self.negated, "one", None, {}, {}, True)
        if condition.indexed is None:
            fast, safe = self.condition(Placement(condition, "one"), ctx)
            if fast == safe:
                body = f"        return {safe}\n"
            else:
                body = (
                    f"        try:\n            return {fast}\n"
                    f"        except (TypeError, ArithmeticError):\n            return {safe}\n"
                )
        else:  # every instance i of a condition over b[i]
            safe = f"({self.expr(condition.expr, ctx)}) is True"
            count = f"len(M[{condition.indexed!r}]) + 1"
            body = f"        return all({safe} for i in range({condition.first_i}, {count}))\n"
        self.functions.append(
            f"def {name}(M):\n{''.join(self.ahead)}    def test(e):\n{body}    return test\n"
        )
        return name


def _uses_i(node: E.Attr | E.Len | E.Aggregate) -> bool:
    if isinstance(node, E.Attr):
        return node.index is not None and node.index.base == "i"
    return isinstance(node, E.Aggregate) and node.upto is not None


class Negative:
    """The automaton of one negative component: which events could spoil a candidate."""

    def __init__(self, analysis: Analysis, name: str) -> None:
        self.negation: Negated = analysis.negations[name]
        writer = _Writer(analysis, name)
        names = [writer.write(condition) for condition in self.negation.conditions]
        self.source = "".join(writer.functions)
        namespace = writer.load(self.source, _NEGATION_HELPERS)
        #: each condition's variables (it applies to matches binding them all) and function
        self.conditions: list[tuple[frozenset[str], Callable[[BoundEvents], Test]]] = [
            (condition.variables, namespace[name])
            for condition, name in zip(self.negation.conditions, names, strict=True)
        ]

    def test(self, bound: BoundEvents) -> Test:
        """The test of an event of the negated type against the candidate `bound`."""
        tests = [write(bound) for variables, write in self.conditions if variables <= bound.keys()]
        if len(tests) == 1:
            return tests[0]
        return lambda event: all(test(event) for test in tests)

    def describe(self) -> str:
        variable = self.negation.variable
        formula = " and ".join(c.text for c in self.negation.conditions)
        return f"begin {variable.name} -> F" + (f"  if {formula}" if formula else "")


class NegativeFinalizer(Finalizer):
    """`reference`'s finalizer, the negative components' conditions compiled."""

    def __init__(
        self, analysis: Analysis, checks: Checks, window: float | None, options: Options
    ) -> None:
        super().__init__(analysis, checks, window, options)
        self.negatives = {name: Negative(analysis, name) for name in analysis.negations}

    def conditions(self, candidate: Candidate, negation: Negated, stream: Stream) -> Test:
        bound = candidate.events
        if bound is None:
            bound = as_events(candidate.binding, stream)
        return self.negatives[negation.variable.name].test(bound)
