"""NFA^b structure: states, edges and where each condition is decided (SASE+ steps 1-4).

A state is what a run needs to know about its past to go on: the residual of the pattern,
which variables it has bound and how many events each holds, and which Kleene variables it has
closed. Counts are capped at the largest number any condition or quantifier distinguishes, so
a Kleene variable `a[]` of a plain pattern gives the paper's state pair `a[1]` (no event yet)
and `a[i]` (one or more). AND and OR need no separate automata: a residual of AND is the
product of its parts' states, one of OR commits to a branch.

Each edge takes the event into one variable:

- *begin*: the first event of a variable, where the run stands;
- *take*: one more event of the Kleene variable where the run stands (the looping edge);
- *proceed*: leave Kleene variables that hold enough events (closing them) and begin a later
  one; the paper's proceed edge taken only together with the next state's begin (step 6).

Ignore edges are not listed: their formula is the strategy's (step 3), and the plan applies
it. With `leaving` (Flink's relaxed contiguity and any-match edges, `kleene.plans.nfa.
leaving`), a state also lists its *exits*: the moves without an event that leave loops (and
optional elements) for a later state whose every place lets a run wait by relaxed
contiguity or skip till any match, each with the condition instances closing them decides.
Every condition instance is placed on the edge where it becomes decidable (step 2): the
instance `i` of a condition over `b[i]` on the take of the i-th event of b, a condition over
`b[b.len]` on the edge that closes b, a condition naming c on c's begin. The window (step 4)
is tested on every edge (step 5) by the plan.

>>> from kleene import parse
>>> from kleene.compiler.analysis import analyze
>>> automaton = build(analyze(parse('''PATTERN SEQ(Stock+ a[], Stock b)
...     WHERE a[i].price > a[i-1].price AND b.volume < a[a.len].volume''')))
>>> print(automaton.describe())
a[1]
  begin a -> a[i]
a[i]
  take a -> a[i]  if a[i].price > a[i-1].price
  proceed b -> F  if b.volume < a[a.len].volume
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from kleene.compiler.analysis import Analysis, Condition, Variable
from kleene.compiler.per_edge import Strategies
from kleene.compiler.residuals import (
    DONE,
    AnyOrder,
    Arithmetic,
    InOrder,
    OneOf,
    Residual,
    Var,
    residual,
)
from kleene.compiler.structure import positive
from kleene.errors import PlanError
from kleene.language import expr as E
from kleene.language.sase import ast as A

__all__ = ["LANDINGS", "Automaton", "Edge", "Exit", "Placement", "State", "build", "places"]

Counts = tuple[tuple[str, int], ...]  # bound variables (sorted) and their capped counts


@dataclass(frozen=True)
class Placement:
    """Where a condition is decided on an edge, and for which i.

    - "one": a condition without i, decided once;
    - "element": the instance i = the new length of the taken Kleene variable;
    - "all": every instance from `first_i` to the length of `over`, decided at once (the
      condition just became decidable, e.g. `b[i].x < c.x` on c's begin).

    `final` instances are decided when the run completes (closing what is still open).
    """

    condition: Condition
    kind: Literal["one", "element", "all"]
    over: str | None = None
    final: bool = False


@dataclass(frozen=True)
class Edge:
    kind: Literal["begin", "take", "proceed"]
    variable: str
    source: int
    target: int | None  # None: after this take the run can only complete
    closes: frozenset[str]
    completes: bool
    before: Counts  # counts where the edge starts
    after: Counts  # counts after the take
    instances: tuple[Placement, ...]
    stack: str  # the buffer stack the taken event goes to (its state's name for the variable)
    bound: tuple[str, ...]  # every variable a match completed here binds, in pattern order

    @property
    def direct(self) -> bool:
        """Is the take at the state the run stands in (not after proceeding)?"""
        return self.kind != "proceed"

    @property
    def formula(self) -> str:
        """The edge's conditions as text ("" when it has none)."""
        taken = [i.condition.text for i in self.instances if not i.final]
        final = [i.condition.text for i in self.instances if i.final]
        text = " and ".join(taken)
        if final:
            text += ("; " if text else "") + "to complete: " + " and ".join(final)
        return text


@dataclass(frozen=True)
class Exit:
    """A move without an event (Flink's proceed edge, followed by an ignore): the loops and
    optional elements it closes, the state it lands at and the condition instances closing
    them decides."""

    source: int
    target: int
    closes: frozenset[str]
    instances: tuple[Placement, ...]
    after: Counts  # counts at the target

    @property
    def formula(self) -> str:
        return " and ".join(i.condition.text for i in self.instances)


@dataclass
class State:
    id: int
    residual: Residual
    counts: Counts
    closed: frozenset[str]
    label: str = ""
    edges: tuple[Edge, ...] = ()
    exits: tuple[Exit, ...] = ()

    def bound(self, variables: Mapping[str, Variable]) -> tuple[str, ...]:
        """The variables a run here has bound (a closed Kleene variable with no event
        among them), in pattern order."""
        counted = dict(self.counts)
        return tuple(n for n in variables if n in counted)


@dataclass
class Automaton:
    states: list[State]
    caps: Mapping[str, int]
    variables: Mapping[str, Variable] = field(repr=False)

    @property
    def start(self) -> State:
        return self.states[0]

    def target(self, edge: Edge) -> str:
        """Where an edge leads: a state's label, F (the match completes), or both."""
        if edge.target is None:
            return "F"
        label = self.states[edge.target].label
        return f"{label} (or F)" if edge.completes else label

    def describe(self) -> str:
        """The states, each with its edges and their formulas, as text."""
        lines = []
        for state in self.states:
            lines.append(state.label)
            for edge in state.edges:
                formula = f"  if {edge.formula}" if edge.formula else ""
                lines.append(f"  {edge.kind} {edge.variable} -> {self.target(edge)}{formula}")
            for way in state.exits:
                formula = f"  if {way.formula}" if way.formula else ""
                left = ", ".join(sorted(way.closes))
                lines.append(f"  leave {left} -> {self.states[way.target].label}{formula}")
        return "\n".join(lines)

    def dot(self, strategy: str = "skip_till_any_match") -> str:
        """The automaton in Graphviz DOT: begin/take edges solid, proceed edges dashed, the
        strategy's ignore loops dotted (none under strict contiguity, none at the start)."""
        ignore = {
            "partition_contiguity": "ignore: other partition",
            "skip_till_next_match": "ignore: no take",
            "skip_till_any_match": "ignore",
        }.get(strategy)
        lines = ["digraph nfa {", "  rankdir=LR;", '  node [shape=circle, fontname="Helvetica"];']
        lines.append('  F [shape=doublecircle, label="F"];')
        for state in self.states:
            lines.append(f'  s{state.id} [label="{_escape(state.label)}"];')
            if ignore is not None and state.id != 0:
                lines.append(f'  s{state.id} -> s{state.id} [style=dotted, label="{ignore}"];')
        for state in self.states:
            for edge in state.edges:
                style = "dashed" if edge.kind == "proceed" else "solid"
                label = _escape(f"{edge.kind} {edge.variable}")
                if edge.formula:
                    label += "\\n" + _escape(edge.formula)
                targets = ["F"] if edge.target is None else [f"s{edge.target}"]
                if edge.completes and edge.target is not None:
                    targets.append("F")
                for target in targets:
                    lines.append(f'  s{state.id} -> {target} [style={style}, label="{label}"];')
            for way in state.exits:
                label = _escape(f"leave {', '.join(sorted(way.closes))}")
                if way.formula:
                    label += "\\n" + _escape(way.formula)
                lines.append(f'  s{state.id} -> s{way.target} [style=dashed, label="{label}"];')
        lines.append("}")
        return "\n".join(lines)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


#: The most states an automaton may have: an AND of n elements has 2^n, and a Kleene variable
#: whose count conditions track (`a[20000]`, `A{20000}`) has one per count.
MAX_STATES = 4096


def _too_many(analysis: Analysis, caps: Mapping[str, int]) -> str:
    """Why the automaton grows past `MAX_STATES`: a wide AND, a count tracked far (`caps`)."""
    widest = _widest_and(analysis.structure)
    causes = []
    if widest > 1:
        causes.append(
            f"an AND of {widest} elements tracks each combination of how far each has come: "
            f"2^{widest} or more"
        )
    if not causes or max(caps.values(), default=0) > MAX_STATES**0.5:
        causes.append("a Kleene variable's count is tracked up to a large number: {n} or a[n]")
    return (
        f"the nfa automaton of this pattern would have more than {MAX_STATES} states "
        f"({'; '.join(causes)}); plan='lazy_chain' runs wide ANDs under skip_till_any_match, "
        "and plan='reference' runs anything, slowly"
    )


def _widest_and(element: A.Element) -> int:
    if isinstance(element, A.EventVar | A.Negation):
        return 0
    own = len(element.items) if isinstance(element, A.And) else 0
    return max(own, *(_widest_and(item) for item in element.items))


#: Where a run may wait after leaving loops without an event (Flink's `followedBy` and
#: `followedByAny`).
LANDINGS = frozenset({"relaxed_contiguity", "skip_till_any_match"})


def places(
    shape: Arithmetic, r: Residual, counts: Mapping[str, int], closed: frozenset[str]
) -> list[tuple[str, bool]]:
    """The variables a run at (r, counts, closed) may bind next where it stands, each with
    whether it is inside that variable's loop: its direct takes, or (a loop that holds all
    it can) the variables it must proceed to."""
    takes = [t for t in shape.takes(r) if not (t[2] and t[0] in closed)]
    direct = [t for t in takes if t[2]] or takes
    return [
        (name, counts.get(name, 0) > 0 and name not in closed)
        for name in dict.fromkeys(t[0] for t in direct)
    ]


def build(analysis: Analysis, leaving: bool = False) -> Automaton:
    """The NFA^b of a pattern's positive structure; with `leaving`, each state's exits."""
    structure = positive(analysis.structure)
    assert structure is not None, "validation guarantees a positive event"
    variables = {n: v for n, v in analysis.variables.items() if not v.negated}
    conditions = tuple(c for c in analysis.conditions if c.negated is None)
    caps = _caps(variables, conditions)
    shape = Arithmetic(variables)

    def capped(r: Residual) -> Residual:
        if isinstance(r, Var):
            return Var(r.name, min(r.count, caps[r.name]))
        items = tuple(capped(item) for item in r.items)
        return (
            InOrder(items)
            if isinstance(r, InOrder)
            else AnyOrder(items)
            if isinstance(r, AnyOrder)
            else OneOf(items)
        )

    start = State(0, capped(residual(structure)), (), frozenset())
    states = [start]
    index: dict[tuple[Residual, Counts, frozenset[str]], int] = {
        (start.residual, start.counts, start.closed): 0
    }
    queue = deque([start])
    pending: list[tuple[State, list[dict[str, object]]]] = []

    def reach(r: Residual, counts: Counts, closed: frozenset[str]) -> int:
        key = (r, counts, closed)
        if key not in index:
            if len(states) >= MAX_STATES:
                raise PlanError(_too_many(analysis, caps))
            index[key] = len(states)
            states.append(State(len(states), r, counts, closed))
            queue.append(states[-1])
        return index[key]

    strategies = analysis.strategies
    while queue:
        state = queue.popleft()
        if leaving:
            state.exits = tuple(_exits(state, shape, capped, conditions, caps, strategies, reach))
        edges: list[dict[str, object]] = []
        for name, residual_after, direct, closes in shape.takes(state.residual):
            after = capped(residual_after)
            counts = dict(state.counts)
            for closing in closes:
                if variables[closing].kleene:  # an optional single one stays unbound
                    counts.setdefault(closing, 0)
            before_count = counts.get(name, 0)
            counts[name] = before_count + 1  # uncapped: `_placed` compares it with first_i
            closed = state.closed | closes
            new_counts = tuple(sorted((n, min(c, caps[n])) for n, c in counts.items()))
            target: int | None = None
            if any(True for _ in shape.takes(after)):
                target = reach(after, new_counts, closed)
            completes = shape.nullable(after)
            final_closed = closed | shape.open_vars(after) if completes else closed
            final_counts = dict(counts)
            for closing in final_closed:
                if variables[closing].kleene:
                    final_counts.setdefault(closing, 0)
            before = dict(state.counts)
            instances = _placed(conditions, caps, name, before, state.closed, counts, closed)
            if completes:
                instances += tuple(
                    Placement(i.condition, i.kind, i.over, final=True)
                    for i in _placed(
                        conditions, caps, None, counts, closed, final_counts, final_closed
                    )
                )
            kind = "proceed" if not direct else "begin" if before_count == 0 else "take"
            edges.append(
                {
                    "kind": kind,
                    "variable": name,
                    "source": state.id,
                    "target": target,
                    "closes": closes,
                    "completes": completes,
                    "before": state.counts,
                    "after": new_counts,
                    "instances": instances,
                    "stack": _element(variables[name], before_count, caps[name]),
                    "bound": tuple(n for n in variables if n in final_counts),  # pattern order
                }
            )
        pending.append((state, edges))
    for state, edges in pending:
        state.edges = tuple(Edge(**e) for e in edges)  # type: ignore[arg-type]
        state.label = _label(state, variables, caps)
    labels = [state.label for state in states]
    for state in states:  # one place, several pasts (what a run there has bound)
        if labels.count(state.label) > 1 and state.label != "F":
            state.label += f" ({', '.join(state.bound(variables)) or 'nothing'} bound)"
    return Automaton(states, caps, variables)


def _exits(
    state: State,
    shape: Arithmetic,
    capped: Callable[[Residual], Residual],
    conditions: tuple[Condition, ...],
    caps: Mapping[str, int],
    strategies: Strategies,
    reach: Callable[[Residual, Counts, frozenset[str]], int],
) -> Iterator[Exit]:
    """The state's exits: those landing where every place lets a run wait by relaxed
    contiguity or skip till any match (`LANDINGS`)."""
    before = dict(state.counts)
    for left, closes in shape.exits(state.residual):
        counts = dict(before)
        for closing in closes:
            if shape.variables[closing].kleene:
                counts.setdefault(closing, 0)
        closed = state.closed | closes
        after = capped(left)
        waits = places(shape, after, counts, closed)
        if not waits:
            continue
        if not all(
            (strategies.loop(name) if in_loop else strategies.entry(name)) in LANDINGS
            for name, in_loop in waits
        ):
            continue
        instances = _placed(conditions, caps, None, before, state.closed, counts, closed)
        new_counts = tuple(sorted(counts.items()))
        yield Exit(state.id, reach(after, new_counts, closed), closes, instances, new_counts)


def _caps(variables: Mapping[str, Variable], conditions: tuple[Condition, ...]) -> dict[str, int]:
    """For each variable, the count from which on more events change nothing the automaton
    decides: quantifier bounds, absolute indexes (of conditions and of UNTIL conditions), and
    one less than the first i of conditions over it (the take from that count on is an
    instance). A state's count equal to the cap means "at least the cap"."""
    caps = {}
    for name, variable in variables.items():
        cap = max(1, variable.min, variable.max or 0)
        for condition in conditions:
            if condition.indexed == name:
                cap = max(cap, condition.first_i - 1)
            cap = max(cap, condition.leading.get(name, 0))
        caps[name] = cap
    for variable in variables.values():
        for node in () if variable.until is None else E.walk(variable.until):
            if isinstance(node, E.Attr) and node.index is not None and node.index.base == "abs":
                caps[node.var] = max(caps[node.var], node.index.offset)
    return caps


def _decidable(
    condition: Condition, counts: Mapping[str, int], closed: frozenset[str] | set[str]
) -> bool:
    if not condition.variables <= counts.keys() or not condition.whole <= closed:
        return False
    return all(counts[n] >= k or n in closed for n, k in condition.leading.items())


def _placed(
    conditions: tuple[Condition, ...],
    caps: Mapping[str, int],
    taken: str | None,
    counts: Mapping[str, int],
    closed: frozenset[str],
    new_counts: Mapping[str, int],
    new_closed: frozenset[str],
) -> tuple[Placement, ...]:
    """The condition instances a move from (counts, closed) to (new_counts, new_closed) makes
    decidable, the move taking one event into `taken` (None: only closing). The taken
    variable's new count is uncapped (its old count plus one), so comparing it with first_i
    is exact; other counts at their cap mean "at least"."""
    placed = []
    for condition in conditions:
        if not _decidable(condition, new_counts, new_closed):
            continue
        was = _decidable(condition, counts, closed)
        over = condition.indexed
        if over is None:
            if not was:
                placed.append(Placement(condition, "one"))
        elif was:
            if over == taken and new_counts[over] >= condition.first_i:
                placed.append(Placement(condition, "element", over))
        else:
            count = new_counts[over]
            if over == taken and count == condition.first_i:
                placed.append(Placement(condition, "element", over))  # the new event alone
            elif count >= condition.first_i or (over != taken and count >= caps[over]):
                placed.append(Placement(condition, "all", over))  # else: surely none yet
    return tuple(placed)


def _element(variable: Variable, count: int, cap: int) -> str:
    """The name of the state a variable's next event is taken at: b, a[1], a[2], a[i]."""
    if not variable.kleene:
        return variable.name
    return f"{variable.name}[{count + 1 if count < cap else 'i'}]"


def _label(state: State, variables: Mapping[str, Variable], caps: Mapping[str, int]) -> str:
    counts = dict(state.counts)
    parts = []
    for edge in state.edges:
        if edge.direct:
            name = edge.variable
            parts.append(_element(variables[name], counts.get(name, 0), caps[name]))
    return " | ".join(dict.fromkeys(parts)) or "F"


assert InOrder(()) == DONE
