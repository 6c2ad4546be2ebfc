"""Does a pattern make sense? Names resolve, Kleene references fit, negations can be decided.

Every check raises `PatternError` pointing at the offending text (or, for a pattern built in
Python, naming it). `parse` (which is `kleene.parse`) reads query text and validates it;
`kleene.compile` validates what it compiles.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import NoReturn

from kleene.compiler.per_edge import resolve
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.sase.printer import expr_text
from kleene.language.sase.quantified import quantify
from kleene.language.sase.reader import read
from kleene.language.text import error_at

__all__ = ["guarantees_event", "nullable", "parse", "validate"]


def parse(text: str) -> A.Pattern:
    """Read a SASE+ query and check that it makes sense.

    Raises `PatternSyntaxError` (with line, column and a caret) when the text does not follow
    the grammar, and `PatternError` when it does but does not make sense.
    """
    pattern = quantify(read(text))
    validate(pattern)
    return pattern


#: How deep a pattern's structure or a condition may nest (generated code nests with it,
#: and CPython's parser stops at 200 parentheses).
MAX_DEPTH = 32


def _children(node: object) -> list[object]:
    """The AST nodes directly under `node`."""
    if isinstance(node, A.Seq | A.And | A.Or | E.BoolOp):
        return list(node.items)
    if isinstance(node, A.Negation):
        return [node.event]
    if isinstance(node, E.Unary):
        return [node.operand]
    if isinstance(node, E.Binary | E.Compare):
        return [node.left, node.right]
    if isinstance(node, E.Call):
        return list(node.args)
    return []


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = {"pattern", "where", "within", "seq", "and", "or", "not", "true", "false", "null", "i"}

Path = tuple[tuple[A.Element, int], ...]  # (ancestor, index of the child on the way down)


def nullable(element: A.Element) -> bool:
    """Can this element match without binding any event?"""
    if isinstance(element, A.EventVar):
        return element.optional or (element.quantifier is not None and element.quantifier.min == 0)
    if isinstance(element, A.Negation):
        return True
    if isinstance(element, A.Or):
        return any(nullable(item) for item in element.items)
    return all(nullable(item) for item in element.items)


def guarantees_event(element: A.Element) -> bool:
    """Does every match of this element bind at least one event?"""
    if isinstance(element, A.EventVar):
        return not nullable(element)
    if isinstance(element, A.Negation):
        return False
    if isinstance(element, A.Or):
        return all(guarantees_event(item) for item in element.items)
    return any(guarantees_event(item) for item in element.items)


def validate(pattern: A.Pattern) -> None:
    """Raise `PatternError` if the pattern does not make sense."""
    _Validator(pattern).run()


class _Validator:
    def __init__(self, pattern: A.Pattern) -> None:
        self.pattern = pattern
        self.text = pattern.text or ""
        self.declared: dict[str, A.EventVar] = {}
        self.negated: set[str] = set()

    def depth(self) -> None:
        """The structure and every condition nest at most `MAX_DEPTH` levels (checked
        without recursion, before anything recursive runs)."""
        roots: list[object] = [self.pattern.structure]
        if self.pattern.where is not None:
            roots.append(self.pattern.where)
        for root in roots:
            todo: list[tuple[object, int]] = [(root, 1)]
            while todo:
                node, level = todo.pop()
                if level > MAX_DEPTH:
                    self.fail(
                        f"this nests more than {MAX_DEPTH} levels deep; kleene takes at most "
                        f"{MAX_DEPTH} (write a long list flat: a or b or c ...)",
                        node,
                    )
                todo.extend((child, level + 1) for child in _children(node))

    def fail(self, message: str, node: object | None = None) -> NoReturn:
        raise error_at(message, self.text, getattr(node, "span", None))

    def run(self) -> None:
        pattern = self.pattern
        self.depth()
        self.declarations()
        self.structure(pattern.structure, None)
        self.negation_windows(pattern.within is None or pattern.within.amount is None)
        self.strategy()
        self.loops()
        self.window()
        self.after_match()
        self.consume()
        self.freeze()
        self.predicates()
        self.returns()

    # -- structure -----------------------------------------------------------------------

    def occurrences(
        self, element: A.Element, path: Path = ()
    ) -> Iterator[tuple[A.EventVar, bool, Path]]:
        if isinstance(element, A.EventVar):
            yield element, False, path
        elif isinstance(element, A.Negation):
            yield element.event, True, path
        else:
            for index, item in enumerate(element.items):
                yield from self.occurrences(item, (*path, (element, index)))

    def declarations(self) -> None:
        seen: dict[str, tuple[A.EventVar, bool, Path]] = {}
        for event, negated, path in self.occurrences(self.pattern.structure):
            name = event.name
            if not _IDENTIFIER.match(name) or name.lower() in _RESERVED:
                self.fail(f"{name!r} cannot name a variable; pick another name", event)
            if event.types is not None and (not event.types or any(not t for t in event.types)):
                self.fail(f"variable {name} needs an event type", event)
            if name in seen:
                first, first_negated, first_path = seen[name]
                same = (first, first_negated) == (event, negated)
                if not (same and _exclusive(first_path, path)):
                    self.fail(
                        f"variable {name} is declared twice; names must be unique (only "
                        "separate OR branches may reuse a name, with the same declaration)",
                        event,
                    )
                continue
            seen[name] = (event, negated, path)
            self.declared[name] = event
            if negated:
                self.negated.add(name)

    def structure(self, element: A.Element, parent: A.Element | None) -> None:
        if isinstance(element, A.EventVar):
            return
        if isinstance(element, A.Negation):
            if not isinstance(parent, A.Seq | A.And):
                self.fail(
                    f"NOT({element.event.name}) must stand inside SEQ(...) or AND(...), "
                    "next to the events it is absent between",
                    element,
                )
            if element.event.kleene:
                self.fail("a negation takes a single event, not a Kleene variable", element)
            if element.event.optional:
                self.fail("a negated event is absent already; drop the ?", element)
            return
        keyword = {A.Seq: "SEQ", A.And: "AND", A.Or: "OR"}[type(element)]
        if not element.items:
            self.fail(f"{keyword}() needs at least one element", element)
        if all(isinstance(item, A.Negation) for item in element.items):
            self.fail(f"{keyword}(...) needs at least one event that is not negated", element)
        for item in element.items:
            self.structure(item, element)
            if isinstance(element, A.Or) and nullable(item):
                self.fail("an OR branch must match at least one event", item)
        if isinstance(element, A.Or):
            self.own_variables(element)

    def own_variables(self, element: A.Or) -> None:
        """An OR branch holding a negation needs a variable no other branch declares, or no
        one could tell whether a match took it (and so whether the negation applies)."""
        for item in element.items:
            names = {v.name for v in A.event_vars(item)}
            has_negation = any(isinstance(n, A.Negation) for n in _nodes(item))
            others = set().union(
                *({v.name for v in A.event_vars(o)} for o in element.items if o is not item)
            )
            if has_negation and not (names - others - self.negated):
                self.fail(
                    "this OR branch holds a negation, so it needs a variable of its own "
                    "(one no other branch declares) to tell its matches apart",
                    item,
                )

    def negation_windows(self, windowless: bool) -> None:
        """A negation with no event on one side needs a time window to reach; NOT NEXT
        needs an event before it (and no window)."""
        for event, negated, path in self.occurrences(self.pattern.structure):
            if not negated:
                continue
            before = after = False
            for ancestor, index in path:
                if isinstance(ancestor, A.Seq):
                    before |= any(guarantees_event(x) for x in ancestor.items[:index])
                    after |= any(guarantees_event(x) for x in ancestor.items[index + 1 :])
            parent, index = path[-1]
            assert isinstance(parent, A.Seq | A.And | A.Or)
            node = parent.items[index]
            if isinstance(node, A.Negation) and node.next:
                if not isinstance(parent, A.Seq) or not before:
                    self.fail(
                        f"NOT NEXT({event.name}) is about the event right after the one "
                        "before it: it needs an event that is not optional before it in a "
                        "SEQ(...)",
                        node,
                    )
                continue  # the next event decides it, whatever the window
            if isinstance(node, A.Negation) and node.followed:
                previous = parent.items[index - 1] if index > 0 else None
                if (
                    not isinstance(parent, A.Seq)
                    or not isinstance(previous, A.EventVar)
                    or not guarantees_event(previous)
                ):
                    self.fail(
                        f"NOT FOLLOWED({event.name}) looks from the first event of the "
                        "variable right before it: it needs a variable that is not optional "
                        "right before it in a SEQ(...)",
                        node,
                    )
                if index == len(parent.items) - 1:
                    self.fail(
                        f"NOT FOLLOWED({event.name}) looks up to the first event after it, "
                        "as Flink's notFollowedBy: it needs an element after it in its SEQ(...)",
                        node,
                    )
                continue  # with nothing bound after it, nothing is looked for
            if windowless and not (before and after):
                side = "ahead" if before else "back"
                self.fail(
                    f"NOT({event.name}) needs WITHIN a time: with no event on its "
                    f"{'right' if before else 'left'} side, only a time window says how far "
                    f"{side} the absence must hold",
                    node,
                )

    # -- clauses -------------------------------------------------------------------------

    def strategy(self) -> None:
        for clause in self.pattern.strategies:
            if clause.name not in A.STRATEGIES:
                self.fail(
                    f"unknown event selection strategy {clause.name!r}; use one of "
                    + ", ".join(A.STRATEGIES),
                    clause,
                )
            for name in clause.variables or ():
                if name not in self.declared:
                    self.fail(self.unknown(name), clause)
        resolve(self.pattern)

    def loops(self) -> None:
        """GREEDY and UNTIL shape a Kleene variable's loop; an UNTIL condition reads the
        event at hand, named by the variable (`UNTIL (v.price > 3)`), the loop's events
        before it (`v[i-1].price`, `sum(v[..i-1].price)`: Flink's iterative `until`) and
        the variables bound before the loop."""
        for event, _, path in self.occurrences(self.pattern.structure):
            if (event.greedy or event.until is not None) and not event.kleene:
                self.fail(f"GREEDY and UNTIL shape a loop; {event.name} binds one event", event)
            if event.until is None:
                continue
            self.condition(event.until)
            earlier = {  # (a negated variable binds nothing, at any depth)
                name
                for ancestor, index in path
                if isinstance(ancestor, A.Seq)
                for item in ancestor.items[:index]
                for name in A.positive_names(item)
            }
            for node in E.walk(event.until):
                if isinstance(node, E.Equivalence):
                    self.fail("an equivalence test is about a whole match, not an UNTIL", node)
                problem = _until_reading(node, event.name, earlier)
                if problem is not None:
                    self.fail(problem, node)

    def window(self) -> None:
        within = self.pattern.within
        if within is None:
            return
        if within.amount is None and within.events is None:
            self.fail("a window needs a time or a count of events", within)
        if within.amount is not None and not within.amount > 0:
            self.fail("a window must be longer than 0", within)
        if within.events is not None and not (
            isinstance(within.events, int) and within.events >= 1
        ):
            self.fail("a count window is a whole number of events, at least 1", within)
        if within.exclusive and within.amount is None:
            self.fail("EXCLUSIVE is for time windows", within)

    def after_match(self) -> None:
        clause = self.pattern.after_match
        if clause is None:
            return
        if clause.skip not in A.SKIPS:
            self.fail(f"unknown AFTER MATCH strategy {clause.skip!r}; use one of {A.SKIPS}")
        name = clause.variable
        if (name is None) != (clause.skip not in ("to_first", "to_last")):
            self.fail("SKIP TO FIRST and SKIP TO LAST name a variable; the others none", clause)
        if name is None:
            return
        if name not in self.declared:
            self.fail(self.unknown(name), clause)
        if name in self.negated:
            self.fail(
                f"{name} is negated: a match binds no event to it, so there is nothing to skip "
                "to; name a variable the match binds",
                clause,
            )

    def consume(self) -> None:
        """CONSUME BY discards partial matches as a match is reported: every match must be
        decided when it completes, and no AFTER MATCH SKIP chooses among them too."""
        clause = self.pattern.consume
        if clause is None or clause.policy == "none":
            return
        if clause.policy not in A.CONSUMPTIONS:
            self.fail(f"unknown CONSUME BY policy {clause.policy!r}; use one of {A.CONSUMPTIONS}")
        skip = self.pattern.after_match
        if skip is not None and skip.skip != "no_skip":
            self.fail("CONSUME BY and AFTER MATCH SKIP both rule matches out; keep one", clause)
        self.decided_at_completion("CONSUME BY", clause)

    def decided_at_completion(self, what: str, clause: A.Consume | A.Freeze) -> None:
        """A clause that acts as matches are reported needs each match decided when it
        completes: no negation without an event after it (which waits for later events)."""
        for event, negated, path in self.occurrences(self.pattern.structure):
            after = any(
                guarantees_event(x)
                for ancestor, index in path
                if isinstance(ancestor, A.Seq)
                for x in ancestor.items[index + 1 :]
            )
            if negated and not after:
                self.fail(
                    f"{what} needs every match decided when it completes, and the "
                    f"negation of {event.name} has no event after it, so it waits for later "
                    f"events; put an event after it, or drop {what}",
                    clause,
                )

    def freeze(self) -> None:
        """FREEZE (OpenCEP's freeze) holds back the variables up to each one it names in the
        pattern's SEQ, over skip-till-any-match, and releases an event as a match holding it
        is reported: each named variable is an element of the top-level SEQ (or the whole
        pattern), and nothing else rules matches out as they are reported."""
        clause = self.pattern.freeze
        if clause is None:
            return
        elements = A.elements_of_seq(self.pattern.structure)
        for name in clause.variables:
            if name not in self.declared:
                self.fail(self.unknown(name), clause)
            if name in self.negated:
                self.fail(
                    f"FREEZE names {name}, which is negated: a match binds no event to it",
                    clause,
                )
            if name not in elements:
                self.fail(
                    f"FREEZE names {name}, which is not an element of the pattern's SEQ: "
                    "it holds back the variables before it there",
                    clause,
                )
        if len(set(clause.variables)) != len(clause.variables):
            self.fail("FREEZE names a variable twice", clause)
        for strategy in self.pattern.strategies:
            if strategy.name != "skip_till_any_match":
                self.fail(
                    f"FREEZE holds back partial matches under skip_till_any_match (OpenCEP's "
                    f"MATCH_ANY); {strategy.name} chooses among them otherwise: drop one "
                    "of the two",
                    strategy,
                )
        consume = self.pattern.consume
        if consume is not None and consume.policy != "none":
            self.fail("FREEZE and CONSUME BY both hold matches back; keep one", clause)
        skip = self.pattern.after_match
        if skip is not None and skip.skip != "no_skip":
            self.fail("FREEZE and AFTER MATCH SKIP both rule matches out; keep one", clause)
        self.decided_at_completion("FREEZE", clause)

    def unknown(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self.declared), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        declared = ", ".join(self.declared)
        return f"unknown variable {name}{hint}; the pattern declares {declared}"

    # -- predicates ----------------------------------------------------------------------

    def predicates(self) -> None:
        where = self.pattern.where
        if where is None:
            return
        for conjunct in E.conjuncts(where):
            self.condition(conjunct)
            indexed: list[tuple[str, E.Expr]] = []
            negated: list[tuple[str, E.Expr]] = []
            for node in E.walk(conjunct):
                if isinstance(node, E.Equivalence) and node is not conjunct:
                    self.fail(
                        f"{expr_text(node)} tests the whole match; it must stand on its own, "
                        "joined to the other conditions by 'and'",
                        node,
                    )
                var = self.reference(node)
                if var is None:
                    continue
                if var in self.negated:
                    negated.append((var, node))
                if _uses_i(node):
                    indexed.append((var, node))
            if len({v for v, _ in indexed}) > 1:
                first = indexed[0][0]
                var, node = next((v, n) for v, n in indexed if v != first)
                self.fail(
                    f"i already ranges over {first}[] in this condition; one condition can "
                    f"iterate over one Kleene variable (split it, or use {var}[{var}.len])",
                    node,
                )
            if len({v for v, _ in negated}) > 1:
                first = negated[0][0]
                var, node = next((v, n) for v, n in negated if v != first)
                self.fail(
                    f"this condition mentions two negated variables, {first} and {var}; "
                    "each condition may constrain one absent event",
                    node,
                )

    def returns(self) -> None:
        """RETURN values: of the match's events, so of positive variables, with no `i` (a
        Kleene variable's events are read by position, `b[1]`, `b[b.len]`, or aggregated)
        and no equivalence test."""
        for returned in self.pattern.returns:
            if returned.name in self.declared or returned.name in RESERVED:
                self.fail(
                    f"RETURN names a value {returned.name!r}, which a match's row already has "
                    "(a variable, or one of " + ", ".join(sorted(RESERVED)) + "); name it "
                    "otherwise (AS)",
                    returned,
                )
            for node in E.walk(returned.expr):
                if isinstance(node, E.Equivalence):
                    self.fail(f"{expr_text(node)} is a condition; RETURN reports values", node)
                var = self.reference(node)
                if var is None:
                    continue
                if var in self.negated:
                    self.fail(f"{var} is negated: a match has no {var} event to report", node)
                if _uses_i(node):
                    self.fail(
                        f"RETURN has no i to range over {var}[]; report {var}[1], "
                        f"{var}[{var}.len] or an aggregate such as max({var}[].x)",
                        node,
                    )

    def reference(self, node: E.Expr) -> str | None:
        """Check a node that names a variable; return the variable's name."""
        if not isinstance(node, E.Attr | E.Len | E.Aggregate):
            return None
        var = node.var
        if var not in self.declared:
            self.fail(self.unknown(var), node)
        kleene = self.declared[var].kleene
        if isinstance(node, E.Attr) and node.index is None and kleene:
            self.fail(
                f"{var} is a Kleene variable; say which of its events: {var}[i].{node.attr} "
                f"(each), {var}[1].{node.attr} (first), {var}[{var}.len].{node.attr} (last), or "
                f"an aggregate such as avg({var}[].{node.attr})",
                node,
            )
        if not kleene and not (isinstance(node, E.Attr) and node.index is None):
            what = {E.Attr: "indexing", E.Len: ".len", E.Aggregate: "an aggregate"}[type(node)]
            self.fail(
                f"{what} needs a Kleene variable, and {var} binds a single event "
                f"(declare it as T+ {var}[] to bind several)",
                node,
            )
        return var

    def condition(self, expr: E.Expr) -> None:
        """Check that an expression can be true or false."""
        if isinstance(expr, E.BoolOp):
            for item in expr.items:
                self.condition(item)
        elif isinstance(expr, E.Unary) and expr.op == "not":
            self.condition(expr.operand)
        elif isinstance(expr, E.Constant) and not isinstance(expr.value, bool | None):
            kind = "string" if isinstance(expr.value, str) else "number"
            self.fail(f"{expr_text(expr)} is a {kind}, not a condition", expr)
        elif isinstance(expr, E.Binary | E.Len | E.Aggregate | E.Unary):
            self.fail(
                f"{expr_text(expr)} is a number, not a condition; compare it with something",
                expr,
            )


#: The fields of a match's row (`Match.to_row`, Spark's matches) a RETURN name cannot take.
RESERVED = frozenset({"pattern", "start_ts", "end_ts", "key", "match_id", "register", "retraction"})


def _until_reading(node: E.Expr, name: str, earlier: set[str]) -> str | None:
    """What an UNTIL condition of loop `name` cannot read in `node` (None: it may): the
    events the loop has not taken yet, or a variable not bound before the loop."""
    if not isinstance(node, E.Attr | E.Len | E.Aggregate):
        return None
    reads = (
        f"UNTIL reads the event at hand ({name}.x), the loop's events before it "
        f"({name}[i-1].x, sum({name}[..i-1].x)) and the variables bound before the loop"
    )
    if node.var != name:
        if node.var not in earlier:
            return f"{reads}; {node.var} is not bound before {name}"
        aggregate_upto = isinstance(node, E.Aggregate) and node.upto is not None
        indexed = isinstance(node, E.Attr) and node.index is not None and node.index.base == "i"
        if aggregate_upto or indexed:
            return f"{reads}; {expr_text(node)} iterates over {node.var}, which is not the loop"
        return None
    if isinstance(node, E.Len):
        return f"{reads}; {name}.len is not known while the loop runs: count({name}[..i-1])"
    if isinstance(node, E.Aggregate):
        if node.upto is None:
            return f"{reads}; {expr_text(node)} is over events not taken yet: {name}[..i-1]"
        return None
    index = node.index
    if index is None or index.base == "abs" or (index.base == "i" and index.offset <= 0):
        return None
    return f"{reads}; {expr_text(node)} is not taken yet"


def _nodes(element: A.Element) -> Iterator[A.Element]:
    yield element
    if isinstance(element, A.Seq | A.And | A.Or):
        for item in element.items:
            yield from _nodes(item)


def _uses_i(node: E.Expr) -> bool:
    if isinstance(node, E.Attr):
        return node.index is not None and node.index.base == "i"
    return isinstance(node, E.Aggregate) and node.upto is not None


def _exclusive(first: Path, second: Path) -> bool:
    """Do two places in the structure lie in different branches of one OR?"""
    for (node_a, index_a), (node_b, index_b) in zip(first, second, strict=False):
        if node_a is not node_b:
            return False
        if index_a != index_b:
            return isinstance(node_a, A.Or)
    return False
