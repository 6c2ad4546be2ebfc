"""The AFA text form (grammar: `afa.lark`), read into an `Afa` whose fences and transfers
are compiled to Python like the conditions of queries (`kleene.compiler.codegen`).

>>> afa = read_afa('''
... AFA rise WITHIN 10
... REGISTER (n = 0, low = null)
... FINAL done
... ARC first: start -> up WHEN e.price > 0 SET n = 1, low = e.price
... ARC more: up -> up WHEN e.price > r.low SET n = r.n + 1
... ARC enough: up -> done WHEN e.price > r.low AND r.n >= 2
... ''')
>>> print(afa.describe())
AFA rise  register (n=0, low=None)  start start  final done  within 10
  first  start -> up  WHEN e.price > 0 SET n = 1, low = e.price
  more  up -> up  WHEN e.price > r.low SET n = r.n + 1
  enough  up -> done  WHEN e.price > r.low and r.n >= 2
>>> read_afa("AFA x FINAL q ARC a: p -> q WHEN r.size > 1")
Traceback (most recent call last):
...
kleene.errors.PatternError: line 1, column 34: the register has no field size; its fields: none
  1 | AFA x FINAL q ARC a: p -> q WHEN r.size > 1
    |                                  ^^^^^^
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib.resources import files
from typing import Any, NoReturn

from lark import Lark, Token, UnexpectedInput
from lark.exceptions import VisitError

from kleene.compiler.codegen import Writer
from kleene.compiler.evaluate import Env, evaluate
from kleene.compiler.functions import known_functions
from kleene.compiler.options import Options
from kleene.events import attribute_slot
from kleene.language import expr as E
from kleene.language.sase import ast as A
from kleene.language.sase.printer import expr_text
from kleene.language.sase.reader import KEYWORDS, ToPattern
from kleene.language.text import check_nesting, syntax_error
from kleene.plans.afa.model import Afa, Arc, Deadline, Fire, never

__all__ = ["read_afa", "read_arc"]


@cache
def _parser() -> Lark:
    own = files("kleene.plans.afa").joinpath("afa.lark").read_text(encoding="utf-8")
    sase = files("kleene.language.sase").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(own + "\n" + sase, parser="lalr", start=["afa", "arc"], propagate_positions=True)


#: The words a misspelling in the text form may be close to: the AFA's own and the query
#: language's.
_KEYWORDS = (
    *KEYWORDS,
    *("AFA", "REGISTER", "START", "FINAL", "ARC", "EPSILON", "ON", "WHEN", "SET", "BIND"),
    *("TIMEOUT", "AFTER"),
)


def read_afa(
    text: str,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    time_unit: str = "s",
) -> Afa:
    """An AFA from its text form; errors point at the text with a caret. `functions` are
    the callables its expressions may use besides the built-in ones; `time_unit` is what a
    numeric timestamp measures, for WITHIN with a unit."""
    check_nesting(text)
    try:
        tree = _parser().parse(text, start="afa")
    except UnexpectedInput as error:
        raise syntax_error(text, error, _parser(), _KEYWORDS) from None
    callables = known_functions(functions)
    try:
        afa: Afa = _ToAfa(text, callables, Options.build(time_unit=time_unit)).transform(tree)
    except VisitError as error:
        raise error.orig_exc from None
    return afa


def read_arc(
    text: str,
    afa: Afa,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    time_unit: str = "s",
) -> Arc:
    """One arc in the text form (`ARC label: source -> target WHEN ... SET ...`), over the
    register of `afa`: an arc to add while the stream runs.

    >>> afa = read_afa("AFA x REGISTER (n = 0) FINAL q ARC a: p -> q")
    >>> arc = read_arc("ARC b: p -> p WHEN e.price > 10 SET n = r.n + 1", afa)
    >>> arc.name, arc.source, arc.target, arc.text
    ('b', 'p', 'p', 'WHEN e.price > 10 SET n = r.n + 1')
    """
    check_nesting(text)
    try:
        tree = _parser().parse(text, start="arc")
    except UnexpectedInput as error:
        raise syntax_error(text, error, _parser(), _KEYWORDS) from None
    reader = _ToAfa(text, known_functions(functions), Options.build(time_unit=time_unit))
    try:
        return reader.build_arc(afa.fields, reader.transform(tree))
    except VisitError as error:
        raise error.orig_exc from None


class _ToAfa(ToPattern):
    """The tree of an AFA's text, as an `Afa` (expressions as `ToPattern` reads queries')."""

    def __init__(self, text: str, functions: Mapping[str, Callable[..., Any]], options: Options):
        super().__init__(text)
        self.functions = functions
        self.options = options

    def afa(self, children: list[Any]) -> Afa:
        name, *parts = children
        window = None
        fields: list[tuple[Token, E.Expr]] = []
        start: str | None = None
        finals: list[Token] = []
        arcs: list[tuple[Any, ...]] = []
        for part in parts:
            if isinstance(part, A.Within):
                if part.amount is None or part.events is not None:
                    assert part.span is not None, "the parser gives every node its place"
                    self._fail(
                        "an AFA's WITHIN is a time; count windows are for queries", part.span
                    )
                window = self.options.window_length(part.amount, part.unit)
            elif isinstance(part, tuple) and part[0] == "register":
                fields = part[1]
            elif isinstance(part, tuple) and part[0] == "start":
                start = part[1]
            elif isinstance(part, tuple) and part[0] == "final":
                finals = part[1]
            else:
                arcs.append(part)
        names = tuple(str(n) for n, _ in fields)
        for position, (token, _) in enumerate(fields):
            if str(token) in names[:position]:
                self._fail(f"the register names field {token} twice", token)
        initial = tuple(self._constant(expr) for _, expr in fields)
        states: dict[str, None] = {}
        if start is not None:
            states[start] = None
        built = []
        for part in arcs:
            states.setdefault(str(part[2]), None)
            states.setdefault(str(part[3]), None)
            built.append(self.build_arc(names, part))
        for final in finals:
            if str(final) not in states:
                self._fail(f"final state {final} has no arc into or out of it", final)
        return Afa(
            str(name),
            tuple(states),
            tuple(built),
            start if start is not None else next(iter(states)),
            frozenset(map(str, finals)),
            names,
            initial,
            window,
        )

    def build_arc(self, names: tuple[str, ...], part: tuple[Any, ...]) -> Arc:
        """One arc, read by `arc` or `timeout_arc`, over the register fields `names`."""
        kind, label, source, target, fence, transfer, bind, types = part
        if kind == "timeout":
            when = self._deadline(names, fence)
            text = f"AFTER {expr_text(fence)}"
            return Arc(str(label), str(source), str(target), never, False, None, text, when)
        epsilon = kind is not None
        fire = self._fire(names, fence, transfer, epsilon, types)
        text = " ".join(
            part
            for part in (
                f"ON {', '.join(sorted(types))}" if types is not None else "",
                f"WHEN {expr_text(fence)}" if fence is not None else "",
                "SET " + ", ".join(f"{f} = {expr_text(e)}" for f, e in transfer)
                if transfer
                else "",
            )
            if part
        )
        variable = None if epsilon else bind
        ignorable = (
            source == target and not epsilon and fence is None and not transfer and bind is None
        )
        return Arc(
            str(label),
            str(source),
            str(target),
            fire,
            epsilon,
            variable,
            text,
            types=types,
            ignorable=ignorable,
        )

    def register(self, children: list[tuple[Token, E.Expr]]) -> tuple[str, Any]:
        return ("register", children)

    def register_field(self, children: list[Any]) -> tuple[Token, E.Expr]:
        return (children[0], self._expr(children[1]))

    def start_state(self, children: list[Token]) -> tuple[str, str]:
        return ("start", str(children[0]))

    def final_states(self, children: list[Token]) -> tuple[str, list[Token]]:
        return ("final", children)

    def arc(self, children: list[Any]) -> tuple[Any, ...]:
        kind = None
        if isinstance(children[0], Token) and children[0].type == "EPSILON":
            kind, children = children[0], children[1:]
        label, source, target, *rest = children
        fence = next((c[1] for c in rest if c[0] == "fence"), None)
        on: list[Token] | None = next((c[1] for c in rest if c[0] == "on"), None)
        transfer: list[tuple[Token, E.Expr]] = next((c[1] for c in rest if c[0] == "transfer"), [])
        bind_token = next((c[1] for c in rest if c[0] == "bind"), None)
        bind: str | None = "events"
        if bind_token is not None:
            bind = None if str(bind_token).upper() == "NONE" else str(bind_token)
        if kind is not None and bind_token is not None:
            self._fail("an ε-arc consumes no event, so it binds none", bind_token)
        if kind is not None and on is not None:
            self._fail("an ε-arc consumes no event, so it takes no type", on[0])
        types = None if on is None else frozenset(map(str, on))
        return (kind, label, source, target, fence, transfer, bind, types)

    def timeout_arc(self, children: list[Any]) -> tuple[Any, ...]:
        label, source, target, deadline = children
        return ("timeout", label, source, target, self._expr(deadline), [], None, None)

    def fence(self, children: list[Any]) -> tuple[str, E.Expr]:
        return ("fence", self._expr(children[0]))

    def transfer(self, children: list[tuple[Token, E.Expr]]) -> tuple[str, Any]:
        return ("transfer", children)

    def assignment(self, children: list[Any]) -> tuple[Token, E.Expr]:
        return (children[0], self._expr(children[1]))

    def on_types(self, children: list[Token]) -> tuple[str, list[Token]]:
        return ("on", children)

    def bind(self, children: list[Token]) -> tuple[str, Token]:
        return ("bind", children[0])

    # -- compiling functions ---------------------------------------------------------------

    def _constant(self, expr: E.Expr) -> Any:
        """A register field's initial value: an expression of constants."""
        for node in E.walk(expr):
            if isinstance(node, E.Attr | E.Len | E.Aggregate):
                assert node.span is not None, "parsed nodes have spans"
                self._fail("an initial register value is a constant", node.span)
        return evaluate(expr, Env({}, None, self.functions))

    def _fire(
        self,
        fields: tuple[str, ...],
        fence: E.Expr | None,
        transfer: list[tuple[Token, E.Expr]],
        epsilon: bool,
        types: frozenset[str] | None,
    ) -> Fire:
        writer = _ArcWriter(self.functions, fields, epsilon, self._fail)
        set_fields = {}
        for token, expr in transfer:
            if str(token) not in fields:
                self._fail(
                    f"the register has no field {token}; its fields: {', '.join(fields) or 'none'}",
                    token,
                )
            set_fields[str(token)] = expr
        source = ""
        if fence is not None:
            fast, safe = writer.forms(fence, None)
            source += writer.function("fence", "e, r", fast, safe)
        values = [
            writer.expr(set_fields[f], None) if f in set_fields else f"r[{i}]"
            for i, f in enumerate(fields)
        ]
        result = f"({', '.join(values)},)" if values else "()"
        if not set_fields:
            result = "r"
        test = "    if not fence(e, r):\n        return None\n" if fence is not None else ""
        if types is not None:
            test = "    if e.type not in types:\n        return None\n" + test
        source += f"def fire(e, r):\n{test}    return {result}\n"
        fire: Fire = writer.load(source, {"types": types})["fire"]
        return fire

    def _deadline(self, fields: tuple[str, ...], expr: E.Expr) -> Deadline:
        """A timeout arc's deadline, an expression over the register (null: never)."""
        writer = _ArcWriter(self.functions, fields, True, self._fail)
        source = f"def deadline(r):\n    return {writer.expr(expr, None)}\n"
        deadline: Deadline = writer.load(source)["deadline"]
        return deadline


class _ArcWriter(Writer):
    """Reads `e.attr` from the event and `r.field` from the register tuple."""

    def __init__(
        self,
        functions: Mapping[str, Callable[..., Any]],
        fields: tuple[str, ...],
        epsilon: bool,
        fail: Callable[[str, Any], NoReturn],
    ) -> None:
        super().__init__(functions)
        self.fields = fields
        self.epsilon = epsilon
        self.fail = fail

    def term(self, node: E.Attr | E.Len | E.Aggregate, ctx: Any) -> str:
        if not isinstance(node, E.Attr) or node.index is not None:
            self.fail("an arc's functions read e.attribute and r.field only", node.span)
        if node.var == "r":
            if node.attr not in self.fields:
                known = ", ".join(self.fields) or "none"
                self.fail(f"the register has no field {node.attr}; its fields: {known}", node.span)
            return f"r[{self.fields.index(node.attr)}]"
        if node.var != "e":
            self.fail(
                f"an arc's functions see the event e and the register r, not {node.var}",
                node.span,
            )
        if self.epsilon:
            self.fail(
                "an ε-arc consumes no event: its functions see only the register r", node.span
            )
        if node.attr in ("ts", "type", "id"):
            return f"_attr(e, {node.attr!r})"
        return f"e.{attribute_slot(node.attr)}"
