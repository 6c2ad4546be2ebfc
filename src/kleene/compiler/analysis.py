"""What every plan needs to know about a pattern, derived once.

- the variables, positive and negated, in pattern order;
- the WHERE clause as conditions (its top-level conjuncts): which variables each mentions,
  whether it is a *property* (about one event of one variable) or a *relationship*, and when
  it can be decided while a match is being built;
- the equivalence tests (`[attr]`);
- the *partition key*: attributes the equality closure of the conditions forces every event
  of a match (and every event that could spoil it through a negation) to share;
- the ordering constraints SEQ imposes, and for each negation the variables before and after;
- the window and the event selection strategy;
- the structural facts of `structure.py`: the DNF (each branch's variables and its own SEQ
  order), the mandatory variables, the fewest events of a match, the variables that can
  bind its first event, and the sets of an SES pattern.

>>> from kleene import parse
>>> from kleene.compiler.analysis import analyze
>>> info = analyze(parse('''PATTERN SEQ(Shelf a, NOT(Register r), Exit c)
...     WHERE [tag] and a.zone = 'A' and c.ts - a.ts > 5 WITHIN 12 hours'''))
>>> [c.text for c in info.properties["a"]], [c.text for c in info.relationships]
(['a.zone = "A"'], ['c.ts - a.ts > 5'])
>>> info.partition.describe(), sorted(info.negations["r"].before), info.negations["r"].after
('tag', ['a'], frozenset({'c'}))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kleene.compiler import structure as S
from kleene.compiler.functions import call_error, known_functions
from kleene.compiler.per_edge import Strategies, resolve
from kleene.compiler.query import EventFilter, Output, Partition, Query, Read, match_fields
from kleene.compiler.validate import validate
from kleene.errors import PatternError
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.sase.printer import expr_text, to_text
from kleene.language.text import error_at

__all__ = [
    "EXTENSIONS",
    "Analysis",
    "Condition",
    "Negated",
    "Variable",
    "analyze",
]

#: What kleene adds to SASE+ for Flink and CORE users that a plan must know to run a pattern
#: using it (`Analysis.extensions`, `Plan.extensions`), each with its words for a refusal.
EXTENSIONS = {
    "relaxed_contiguity": "relaxed contiguity",
    "per_edge": "per-edge strategies",
    "optional": "optional elements (T? v)",
    "greedy": "GREEDY loops",
    "until": "UNTIL loops",
    "until_reading": "UNTIL conditions reading the loop's earlier events or earlier variables",
    "count_window": "count windows (WITHIN n EVENTS)",
    "timeouts": "timed-out partial matches (timeouts=True)",
    "not_next": "NOT NEXT (Flink's notNext)",
    "not_followed": "NOT FOLLOWED (Flink's notFollowedBy)",
    "consume": "CONSUME BY (CORE's consumption policies)",
    "freeze": "FREEZE (OpenCEP's freeze)",
}


@dataclass(frozen=True)
class Variable:
    """A pattern variable: its name, the event types it takes (None: any), its quantifier;
    whether it may bind nothing (`optional`: `T? v`, `T{2,4}? v[]`), its loop's GREEDY and
    UNTIL condition (`kleene.language.ast.EventVar`)."""

    name: str
    types: frozenset[str] | None
    quantifier: A.Quantifier | None
    negated: bool
    optional: bool = False
    greedy: bool = False
    until: E.Expr | None = None

    def takes(self, event_type: str) -> bool:
        """Whether an event of this type can bind the variable."""
        return self.types is None or event_type in self.types

    @property
    def kleene(self) -> bool:
        return self.quantifier is not None

    @property
    def min(self) -> int:
        """The fewest events the variable binds when it binds any (an optional one may bind
        none: `empty_ok`)."""
        return 1 if self.quantifier is None else self.quantifier.min

    @property
    def empty_ok(self) -> bool:
        """May a match bind no event to it (`T*`, `T? v`, `T{n,m}? v[]`)?"""
        return self.optional or self.min == 0

    @property
    def until_reads_earlier(self) -> bool:
        """Does the UNTIL condition read more than the event at hand: the loop's events
        before it, or variables bound before the loop (Flink's iterative `until`)?"""
        return self.until is not None and any(
            isinstance(node, E.Len | E.Aggregate)
            or (isinstance(node, E.Attr) and (node.var != self.name or node.index is not None))
            for node in E.walk(self.until)
        )

    @property
    def max(self) -> int | None:
        return 1 if self.quantifier is None else self.quantifier.max


Bound = Mapping[str, tuple[Any, ...]]  # variable -> what it has bound so far (events or positions)


@dataclass(frozen=True)
class Condition:
    """One top-level conjunct of the WHERE clause, and when it can be decided.

    A condition that mentions `b[i]` (or `b[..i-k]`) is a family of instances, one for each i
    from `first_i` to b.len. An instance is *decidable* once every variable it mentions is
    bound, the elements it indexes exist, and every Kleene variable it needs whole (`b[]`,
    `b.len`, `b[b.len]`) is closed. A condition mentioning a variable the match does not bind
    (one of another OR branch) does not apply to that match.
    """

    expr: E.Expr
    text: str
    variables: frozenset[str]
    negated: str | None
    indexed: str | None
    first_i: int
    whole: frozenset[str]
    leading: Mapping[str, int]

    @property
    def property_of(self) -> str | None:
        """The variable this condition is a property of (one event of it), if it is one."""
        names = self.variables | ({self.negated} if self.negated else set())
        if len(names) != 1 or self.whole or self.leading or self.first_i != 1:
            return None
        (name,) = names
        return name if self.indexed in (None, name) else None

    @property
    def subject(self) -> str | None:
        """The one event this condition is about, if it is about one: `b` (every event of b,
        a property), `b[1]` or `b[b.len]` (one element); None when it relates several."""
        name = self.property_of
        if name is not None:
            return name
        names = self.variables | ({self.negated} if self.negated else set())
        if len(names) != 1 or self.indexed is not None:
            return None
        (name,) = names
        refs = [n for n in E.walk(self.expr) if isinstance(n, E.Len | E.Aggregate | E.Attr)]
        indexes = {n.index for n in refs if isinstance(n, E.Attr)}
        if len(indexes) != 1 or len(refs) != sum(isinstance(n, E.Attr) for n in refs):
            return None
        (index,) = indexes
        if index is None:
            return None
        if index.base == "abs":
            return f"{name}[{index.offset}]"
        offset = f"-{-index.offset}" if index.offset else ""
        return f"{name}[{name}.len{offset}]"

    def instances(self, bound: Bound, closed: frozenset[str] | set[str]) -> list[int | None]:
        """The instances (values of i, or [None]) decidable given what is bound and closed."""
        for name in self.variables:
            if name not in bound:
                return []
        for name in self.whole:
            if name not in closed:
                return []
        for name, count in self.leading.items():
            if len(bound[name]) < count and name not in closed:
                return []
        if self.indexed is None:
            return [None]
        return list(range(self.first_i, len(bound[self.indexed]) + 1))


@dataclass(frozen=True)
class Negated:
    """A negated variable and the positive variables SEQ orders before and after it.

    A negation inside an OR branch applies only to matches of that branch: `branches` holds,
    for each OR around it, the variables only the branch it stands in declares; a match took
    that branch when it binds one of them.
    """

    variable: Variable
    before: frozenset[str]
    after: frozenset[str]
    conditions: tuple[Condition, ...]
    branches: tuple[frozenset[str], ...] = ()
    #: `NOT NEXT(T v)`: only the event right after the last one bound before it is looked at.
    next: bool = False
    #: `NOT FOLLOWED(T v)`: the variable right before it, from whose first event on it looks.
    since: str | None = None
    #: `NOT NEXT(T v)` right after a Kleene variable: that loop, from whose least number of
    #: events on every event is looked at (Flink tests notNext at each event a run in the
    #: loop may leave it at).
    loop: str | None = None

    def applies(self, bound: Mapping[str, object]) -> bool:
        """Does the negation concern a match binding these variables?"""
        return all(any(name in bound for name in branch) for branch in self.branches)


@dataclass(frozen=True)
class Analysis(Query):
    """Everything derived from a pattern that plans share; see the module docstring."""

    language: ClassVar[str] = "sase"

    pattern: A.Pattern
    structure: A.Element
    variables: Mapping[str, Variable]
    conditions: tuple[Condition, ...]
    equivalences: tuple[str, ...]
    negations: Mapping[str, Negated]
    before: Mapping[str, frozenset[str]]
    partition: Partition | None
    #: The event selection strategy every run follows, or "mixed" when clauses give parts of
    #: the pattern different ones (`strategies` says which).
    strategy: str
    strategies: Strategies
    #: The positive pattern in DNF: one branch per way through its ORs.
    dnf: tuple[S.Branch, ...]
    #: The variables every match binds to at least one event (`structure.mandatory`).
    mandatory: frozenset[str]
    #: The fewest events a match binds.
    least: int
    #: The variables that can bind a match's earliest event, in pattern order.
    first: tuple[str, ...]
    #: The sets B1..Bk of an SES pattern (None: the pattern is not one).
    ses: tuple[tuple[str, ...], ...] | None
    functions: Mapping[str, Callable[..., Any]] = field(repr=False)

    @property
    def positive(self) -> tuple[Variable, ...]:
        return tuple(v for v in self.variables.values() if not v.negated)

    @property
    def extensions(self) -> frozenset[str]:
        """What the pattern uses of `EXTENSIONS`."""
        found = set()
        if "relaxed_contiguity" in self.strategies.used:
            found.add("relaxed_contiguity")
        if self.strategy == "mixed":
            found.add("per_edge")
        for variable in self.positive:
            if variable.optional:
                found.add("optional")
            if variable.greedy:
                found.add("greedy")
            if variable.until is not None:
                found.add("until")
            if variable.until_reads_earlier:
                found.add("until_reading")
        within = self.pattern.within
        if within is not None and within.events is not None:
            found.add("count_window")
        if any(negation.next for negation in self.negations.values()):
            found.add("not_next")
        if any(negation.since for negation in self.negations.values()):
            found.add("not_followed")
        if self.consume is not None:
            found.add("consume")
        if self.freeze:
            found.add("freeze")
        return frozenset(found)

    @property
    def skips(self) -> bool:
        """Does an AFTER MATCH SKIP rule out some matches (any clause but NO SKIP)?"""
        clause = self.pattern.after_match
        return clause is not None and clause.skip != "no_skip"

    @property
    def freeze(self) -> dict[str, frozenset[str]]:
        """FREEZE: each variable it names, with the positive variables its events hold back
        (those of the SEQ's elements up to its own; empty: no FREEZE clause)."""
        clause = self.pattern.freeze
        if clause is None:
            return {}
        held: dict[str, frozenset[str]] = {}
        before: set[str] = set()
        for item in A.seq_items(self.pattern.structure):
            before.update(v.name for v in A.event_vars(item) if not self.variables[v.name].negated)
            if isinstance(item, A.EventVar) and item.name in clause.variables:
                held[item.name] = frozenset(before)
        return held

    @property
    def consume(self) -> str | None:
        """CONSUME BY's policy ("any", "events", or "partition" when the pattern has a
        partition key), None for NONE or no clause."""
        clause = self.pattern.consume
        if clause is None or clause.policy == "none":
            return None
        if clause.policy == "events":
            return "events"
        return "partition" if clause.policy == "partition" and self.partition else "any"

    @property
    def properties(self) -> dict[str, tuple[Condition, ...]]:
        """Each variable's properties: conditions on one of its events alone."""
        return {
            name: tuple(c for c in self.conditions if c.property_of == name)
            for name in self.variables
        }

    @property
    def relationships(self) -> tuple[Condition, ...]:
        """The conditions that relate several events."""
        return tuple(c for c in self.conditions if c.property_of is None)

    @property
    def prefilter_safe(self) -> bool:
        """May events no variable can take be dropped before matching?

        Not where a run follows strict or partition contiguity, where an irrelevant event
        still breaks it, nor with UNTIL, which any event of the partition can stop, nor with
        a count window, which counts every event, nor with NOT NEXT, which looks at the
        partition's next event whatever its type, nor with GREEDY, whose loop holds a run
        that left it at the first event after its last take whatever its type.
        """
        barred = {"until", "count_window", "not_next", "greedy"}
        return self.skipping and not self.extensions & barred

    @property
    def skipping(self) -> bool:
        """Does every run skip the events it cannot use (no strict or partition
        contiguity)?"""
        skipping = {"skip_till_next_match", "skip_till_any_match", "relaxed_contiguity"}
        return self.strategies.used <= skipping

    @property
    def tree(self) -> A.Pattern:
        return self.pattern

    def text(self) -> str:
        return to_text(self.pattern)

    @property
    def within(self) -> A.Within | None:
        return self.pattern.within

    @property
    def strict(self) -> bool:
        return "strict_contiguity" in self.strategies.used

    @property
    def filters(self) -> tuple[EventFilter, ...] | None:
        """Each variable's types and properties, negated ones included (their events spoil
        matches); None where leaving an event out may change a match (`prefilter_safe`)."""
        if not self.prefilter_safe:
            return None
        properties = self.properties
        return tuple(
            EventFilter(v.types, tuple(c.expr for c in properties[v.name]))
            for v in self.variables.values()
        )

    @property
    def named_types(self) -> frozenset[str] | None:
        variables = self.variables.values()
        if any(v.types is None for v in variables):
            return None
        return frozenset(t for v in variables for t in v.types or ())

    @property
    def reads(self) -> tuple[Read, ...]:
        where = self.pattern.where
        found: list[Read] = []
        if where is None:
            return ()
        variables = self.variables
        for node in E.walk(where):
            if isinstance(node, E.Attr):
                types = variables[node.var].types if node.var in variables else None
                found.append(Read(node.attr, f"{node.var}.{node.attr}", types))
            elif isinstance(node, E.Aggregate) and node.attr is not None:
                types = variables[node.var].types if node.var in variables else None
                found.append(Read(node.attr, f"{node.func}({node.var}[].{node.attr})", types))
            elif isinstance(node, E.Equivalence):
                found.extend(Read(attr, f"[{attr}]", None) for attr in node.attrs)
        return tuple(found)

    @property
    def real_time(self) -> bool:
        within = self.pattern.within
        return within is not None and within.unit is not None

    def output(self, timeouts: bool = False, retractions: bool = False) -> Output:
        names = tuple(v.name for v in self.positive)
        fields = match_fields(names, self.pattern.returns, timeouts)
        return Output("matches", fields, timeouts, retractions)


def _loop_before(name: str | None, variables: Mapping[str, Variable]) -> str | None:
    """`name`, if it is a Kleene variable."""
    return name if name is not None and variables[name].kleene else None


def analyze(
    pattern: A.Pattern,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    validated: bool = False,
) -> Analysis:
    """Validate `pattern` (unless it is `validated` already) and derive its `Analysis`.

    `functions` adds callables to the built-in and registered ones; a call of an unknown
    function is a `PatternError`.
    """
    if not validated:
        validate(pattern)
    table = known_functions(functions)
    variables = _variables(pattern.structure)
    _check_functions(pattern, table)
    conditions: list[Condition] = []
    equivalences: list[str] = []
    for conjunct in E.conjuncts(pattern.where):
        if isinstance(conjunct, E.Equivalence):
            equivalences.extend(a for a in conjunct.attrs if a not in equivalences)
        else:
            conditions.append(_condition(conjunct, variables))
    before = _order(pattern.structure)
    branches = _branches(pattern.structure)
    negations = {
        name: Negated(
            variable,
            frozenset(v for v in before[name] if not variables[v].negated),
            frozenset(v for v in variables if not variables[v].negated and name in before[v]),
            tuple(c for c in conditions if c.negated == name),
            branches.get(name, ()),
            name in A.next_negations(pattern.structure),
            A.followed_negations(pattern.structure).get(name),
            _loop_before(A.followed_negations(pattern.structure, next_=True).get(name), variables),
        )
        for name, variable in variables.items()
        if variable.negated
    }
    strategies = resolve(pattern)
    return Analysis(
        pattern=pattern,
        structure=pattern.structure,
        variables=variables,
        conditions=tuple(conditions),
        equivalences=tuple(equivalences),
        negations=negations,
        before=before,
        partition=_partition(pattern, variables, conditions, equivalences),
        strategy=strategies.uniform or "mixed",
        strategies=strategies,
        functions=table,
        dnf=S.dnf(pattern.structure),
        mandatory=S.mandatory(pattern.structure),
        least=S.least(pattern.structure),
        first=S.first(pattern.structure),
        ses=S.ses_sets(pattern.structure),
    )


def _variables(structure: A.Element) -> dict[str, Variable]:
    found: dict[str, Variable] = {}

    def visit(element: A.Element, negated: bool) -> None:
        if isinstance(element, A.EventVar):
            found.setdefault(
                element.name,
                Variable(
                    element.name,
                    None if element.types is None else frozenset(element.types),
                    element.quantifier,
                    negated,
                    element.optional,
                    element.greedy,
                    element.until,
                ),
            )
        elif isinstance(element, A.Negation):
            visit(element.event, True)
        else:
            for item in element.items:
                visit(item, negated)

    visit(structure, False)
    return found


def _check_functions(pattern: A.Pattern, table: Mapping[str, Any]) -> None:
    roots = [v.until for v in A.event_vars(pattern.structure) if v.until is not None]
    if pattern.where is not None:
        roots.append(pattern.where)
    for node in (node for root in roots for node in E.walk(root)):
        wrong = call_error(node) if isinstance(node, E.Call) else None
        if wrong is not None:
            raise error_at(wrong, pattern.text, node.span)
        if isinstance(node, E.Call) and node.name.lower() not in table:
            names = ", ".join(sorted(table))
            span = node.span
            message = (
                f"unknown function {node.name}; register it with kleene.register_function "
                f"or pass functions={{...}} (known: {names})"
            )
            if span is None or not pattern.text:
                raise PatternError(message, "", 0, 0)
            raise PatternError(message, pattern.text, span.line, span.column, len(node.name))


def _condition(expr: E.Expr, variables: Mapping[str, Variable]) -> Condition:
    mentioned: set[str] = set()
    negated: str | None = None
    indexed: str | None = None
    first_i = 1
    whole: set[str] = set()
    leading: dict[str, int] = {}
    for node in E.walk(expr):
        if not isinstance(node, E.Attr | E.Len | E.Aggregate):
            continue
        name = node.var
        if variables[name].negated:
            negated = name
        else:
            mentioned.add(name)
        if isinstance(node, E.Len) or (isinstance(node, E.Aggregate) and node.upto is None):
            whole.add(name)
        elif isinstance(node, E.Aggregate):
            indexed = name
            first_i = max(first_i, 1 + (node.upto or 0))
        elif node.index is not None:
            if node.index.base == "i":
                indexed = name
                first_i = max(first_i, 1 - node.index.offset)
            elif node.index.base == "last":
                whole.add(name)
            else:
                leading[name] = max(leading.get(name, 0), node.index.offset)
    return Condition(
        expr=expr,
        text=expr_text(expr),
        variables=frozenset(mentioned),
        negated=negated,
        indexed=indexed,
        first_i=first_i,
        whole=frozenset(whole),
        leading=leading,
    )


def _branches(structure: A.Element) -> dict[str, tuple[frozenset[str], ...]]:
    """For each negated variable, the variables of its own in each OR branch around it."""
    found: dict[str, tuple[frozenset[str], ...]] = {}

    def positives(element: A.Element) -> set[str]:
        return {v.name for v in A.event_vars(element)} - negated(element)

    def negated(element: A.Element) -> set[str]:
        if isinstance(element, A.Negation):
            return {element.event.name}
        if isinstance(element, A.EventVar):
            return set()
        return set().union(*(negated(item) for item in element.items))

    def visit(element: A.Element, guards: tuple[frozenset[str], ...]) -> None:
        if isinstance(element, A.Negation):
            found[element.event.name] = guards
        elif not isinstance(element, A.EventVar):
            for item in element.items:
                inner = guards
                if isinstance(element, A.Or):
                    others = set().union(*(positives(o) for o in element.items if o is not item))
                    inner = (*guards, frozenset(positives(item) - others))
                visit(item, inner)

    visit(structure, ())
    return found


def _order(structure: A.Element) -> dict[str, frozenset[str]]:
    """For each variable, the variables SEQ places before it."""
    before: dict[str, set[str]] = {}

    def names(element: A.Element) -> set[str]:
        return {v.name for v in A.event_vars(element)}

    def visit(element: A.Element, earlier: set[str]) -> None:
        if isinstance(element, A.EventVar | A.Negation):
            var = element if isinstance(element, A.EventVar) else element.event
            before.setdefault(var.name, set()).update(earlier)
            return
        seen = set(earlier)
        for item in element.items:
            visit(item, seen if isinstance(element, A.Seq) else earlier)
            if isinstance(element, A.Seq):
                seen = seen | names(item)

    visit(structure, set())
    return {name: frozenset(found) for name, found in before.items()}


# ---- the partition key -----------------------------------------------------------------


def _partition(
    pattern: A.Pattern,
    variables: Mapping[str, Variable],
    conditions: list[Condition],
    equivalences: list[str],
) -> Partition | None:
    """The attributes all events of a match, and every event that could spoil it, share.

    An equivalence test `[x]` gives one directly. Equalities between variables give one when
    they chain every positive variable together through variables each match binds (a chain
    through an optional or OR-branch variable can break), and every negated variable is
    equated to the chain by a condition of its own.
    """
    positives = [n for n, v in variables.items() if not v.negated]
    mandatory = S.mandatory(pattern.structure)
    candidates: list[dict[str, str]] = [dict.fromkeys(variables, attr) for attr in equivalences]
    if set(positives) <= mandatory:
        candidates.extend(_equality_classes(variables, conditions, positives))
    usable: list[dict[str, str]] = []
    for members in candidates:
        per_type: dict[str, str] = {}
        # a variable of any type needs one attribute for every type: the class's only one
        anywhere = any(variables[name].types is None for name in members)
        if (
            all(
                per_type.setdefault(event_type, attr) == attr
                for name, attr in members.items()
                for event_type in variables[name].types or ()
            )
            and not (anywhere and len(set(members.values())) > 1)
            and members not in usable
        ):
            usable.append(members)
    if not usable:
        return None
    classes = tuple(tuple((name, m[name]) for name in variables) for m in usable)
    types = sorted({t for v in variables.values() for t in v.types or ()})
    by_type = {
        event_type: tuple(
            next(attr for name, attr in m.items() if variables[name].takes(event_type))
            for m in usable
        )
        for event_type in types
    }
    names = [set(m.values()) for m in usable]
    default = tuple(n.pop() for n in names) if all(len(n) == 1 for n in names) else None
    return Partition(classes, by_type, default)


def _equality_classes(
    variables: Mapping[str, Variable], conditions: list[Condition], positives: list[str]
) -> list[dict[str, str]]:
    """Classes of `v.x = w.y` equalities covering every variable (see `_partition`)."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(term: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(term, term)
        while parent[term] != term:
            parent[term] = parent[parent[term]]
            term = parent[term]
        return term

    uniform: set[tuple[str, str]] = set()  # Kleene terms whose elements all share the value
    pairs: list[tuple[E.Attr, E.Attr]] = []
    links: list[tuple[str, str, E.Attr]] = []  # negated variable, its attribute, the other side
    for condition in conditions:
        expr = condition.expr
        if not (isinstance(expr, E.Compare) and expr.op == "="):
            continue
        left, right = expr.left, expr.right
        if not (isinstance(left, E.Attr) and isinstance(right, E.Attr)):
            continue
        if condition.negated is not None:
            mine, other = (left, right) if left.var == condition.negated else (right, left)
            if other.var != condition.negated:
                links.append((mine.var, mine.attr, other))
            continue
        if left.var == right.var:
            chain = {left.index, right.index} == {E.Index("i"), E.Index("i", -1)}
            if chain and left.attr == right.attr:
                uniform.add((left.var, left.attr))
            continue
        for node in (left, right):
            if node.index == E.Index("i"):
                uniform.add((node.var, node.attr))
        pairs.append((left, right))

    def term(node: E.Attr) -> tuple[str, str] | None:
        """The node as a class member: every event of its variable, or None."""
        key = (node.var, node.attr)
        if not variables[node.var].kleene:
            return key
        return key if key in uniform else None

    for left, right in pairs:
        a, b = term(left), term(right)
        if a is not None and b is not None:
            parent[find(a)] = find(b)
    classes: dict[tuple[str, str], dict[str, str]] = {}
    conflicted: set[tuple[str, str]] = set()
    for member in parent:
        root = find(member)
        per_var = classes.setdefault(root, {})
        if per_var.setdefault(member[0], member[1]) != member[1]:
            conflicted.add(root)
    result = []
    for root, per_var in classes.items():
        if root in conflicted or set(per_var) != set(positives):
            continue
        complete = dict(per_var)
        for name, variable in variables.items():
            if not variable.negated:
                continue
            found = [
                attr
                for negated, attr, other in links
                if negated == name and (t := term(other)) is not None and find(t) == root
            ]
            if not found:
                break
            complete[name] = found[0]
        else:
            result.append(complete)
    return result
