"""From query text to a compiled plan, pass by pass: the compile pipeline as data.

`PASSES` lists what `compile` does, in order:

1. **read**: text → AST, in the language its first keyword names (`LANGUAGES`: `PATTERN`
   is SASE+, `FROM` is LEAD), with syntax errors pointing at the text;
2. **validate**: do the names make sense together (a `PatternError` with a caret);
3. **analyse**: what every plan needs to know (`kleene.compiler.query.Query`);
4. **choose**: the plans that run the query, by name or, with "auto", in the registry's
   order of preference;
5. **instantiate**: the first of them that compiles the query within its limits.

The plans themselves live a layer up (`kleene.plans`): `compile` takes their registry.

>>> from kleene.plans import PLANS, PREFERENCE
>>> plan = compile("PATTERN SEQ(A a, B b) WITHIN 10", "auto", PLANS, PREFERENCE)
>>> plan.name, [name for name, _ in PASSES]
('window_join', ['read', 'validate', 'analyse', 'choose', 'instantiate'])
>>> compile("FROM A AS a MATCH a EMIT Event X()", "auto", PLANS, PREFERENCE).name
'petri'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kleene.compiler.analysis import analyze
from kleene.compiler.options import Options
from kleene.compiler.query import Query
from kleene.compiler.row_pattern import analyze_clause, check_clause
from kleene.compiler.rules import analyze_rule, check_rule
from kleene.compiler.validate import validate
from kleene.errors import KleeneError, PlanError
from kleene.language.lead import ast as L
from kleene.language.lead.reader import read_rule
from kleene.language.sase import ast as A
from kleene.language.sase.quantified import quantify
from kleene.language.sase.reader import read as read_pattern
from kleene.language.sql import ast as Q
from kleene.language.sql.reader import read as read_clause

__all__ = [
    "LANGUAGES",
    "PASSES",
    "Language",
    "PlanClass",
    "choose",
    "compile",
    "instantiate",
    "language_of",
    "parse",
    "register_language",
]


@dataclass(frozen=True)
class Language:
    """A query language: the keyword its text begins with (None: it is no text), its AST's
    root, and its passes (read, which rewrites what it reads into kleene's forms; validate;
    analyse)."""

    name: str
    keyword: str | None
    root: type
    read: Callable[[str], Any]
    validate: Callable[[Any], None]
    #: (the AST, the functions it may call, whether it was validated already) → analysis
    analyse: Callable[[Any, Mapping[str, Callable[..., Any]] | None, bool], Query]


def _read_pattern(text: str) -> A.Pattern:
    """SASE+ text → AST, bare attributes of Kleene variables read as the match-window paper
    reads them (`kleene.language.sase.quantified`)."""
    return quantify(read_pattern(text))


#: The languages, by the first keyword of their text; a plan package may add one
#: (`register_language`: an AFA written directly).
LANGUAGES: list[Language] = [
    Language("sase", "PATTERN", A.Pattern, _read_pattern, validate, analyze),
    Language("lead", "FROM", L.Rule, read_rule, check_rule, analyze_rule),
    Language("sql", "MATCH_RECOGNIZE", Q.MatchRecognize, read_clause, check_clause, analyze_clause),
]


def register_language(language: Language) -> None:
    """Add a language the pipeline reads (a plan package's own: an AFA written directly)."""
    LANGUAGES.append(language)


_FIRST_WORD = re.compile(r"\s*(?:(?:--|#)[^\n]*\n\s*|/\*.*?\*/\s*)*([A-Za-z_]+)", re.DOTALL)


def language_of(query: str | object) -> Language:
    """The language of query text (by its first keyword, after comments) or of an AST.

    >>> language_of("-- a rule\\nFROM A AS a MATCH a EMIT Event X()").name
    'lead'
    >>> language_of("PATTERN SEQ(A a)").name
    'sase'
    """
    if not isinstance(query, str):
        for language in LANGUAGES:
            if isinstance(query, language.root):
                return language
        kinds = ", ".join(f"a {x.root.__name__} ({x.name})" for x in LANGUAGES)
        raise KleeneError(
            f"a query is text, {kinds}, or a compiled plan; not {type(query).__name__} {query!r}"
        )
    found = _FIRST_WORD.match(query)
    word = found.group(1).upper() if found else ""
    for language in LANGUAGES:
        if language.keyword is not None and word == language.keyword:
            return language
    return LANGUAGES[0]  # SASE+ says what it expected, with line, column and caret


def parse(query: str | object) -> Any:
    """Read query text (or take an AST) and check that it makes sense: the `read` and
    `validate` passes. A `PatternSyntaxError` (line, column, caret) for text that does not
    read, a `PatternError` for one whose names make no sense."""
    language = language_of(query)
    tree = language.read(query) if isinstance(query, str) else query
    language.validate(tree)
    return tree


class PlanClass(Protocol):
    """What the pipeline needs of a registered plan: its name, the languages it runs, why
    it refuses a query, and its constructor (`kleene.plans.base.Plan`)."""

    name: str
    languages: frozenset[str]

    def refusal(self, analysis: Query, options: Options) -> str | None: ...

    def __call__(self, analysis: Query, options: Options) -> Any: ...


def choose(
    analysis: Query,
    plan: str,
    options: Options,
    plans: Mapping[str, PlanClass],
    preference: Sequence[str],
) -> list[PlanClass]:
    """The plans to try: the one named, or with "auto" those of `preference` that run the
    query's language and take the query (an error with each one's reason, when none does)."""
    if plan != "auto":
        if plan not in plans:
            known = ", ".join(["auto", *sorted(plans)])
            raise PlanError(f"unknown plan {plan!r}; the plans are: {known}")
        return [plans[plan]]
    runners = [plans[n] for n in preference if analysis.language in plans[n].languages]
    if not runners:
        raise PlanError(f"no plan in the registry runs {analysis.language!r} queries")
    refusals = [(cls, cls.refusal(analysis, options)) for cls in runners]
    chosen = [cls for cls, reason in refusals if reason is None]
    if chosen:
        return chosen
    reasons: dict[str, list[str]] = {}
    for cls, reason in refusals:
        reasons.setdefault(str(reason), []).append(cls.name)
    told = [f"{', '.join(names)}: {reason}" for reason, names in reasons.items()]
    raise PlanError("no plan can run this query; " + "; ".join(told))


def instantiate(candidates: list[PlanClass], analysis: Query, options: Options) -> Any:
    """The first candidate that compiles the query."""
    if len(candidates) == 1:
        return candidates[0](analysis, options)
    refused: list[str] = []
    for cls in candidates:
        try:
            return cls(analysis, options)
        except PlanError as error:
            refused.append(f"{cls.name}: {error}")
    raise PlanError("no plan can run this query; " + "; ".join(refused))


#: The passes of `compile`, in order, each named.
PASSES: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("read", lambda language, query: language.read(query) if isinstance(query, str) else query),
    ("validate", lambda language, tree: language.validate(tree)),
    ("analyse", lambda language, tree, functions: language.analyse(tree, functions, True)),
    ("choose", choose),
    ("instantiate", instantiate),
)


def compile(  # noqa: A001 - kleene.compile is the public API's name
    query: str | object,
    plan: str,
    plans: Mapping[str, PlanClass],
    preference: Sequence[str],
    **options: Any,
) -> Any:
    """A compiled plan of the query (text or AST) with the plan of that name from `plans`
    (or "auto": the first of `preference` that runs it), under `Options.build(**options)`."""
    settings = Options.build(**options)
    language = language_of(query)
    passes = dict(PASSES)
    tree = passes["read"](language, query)
    passes["validate"](language, tree)
    analysis = passes["analyse"](language, tree, settings.functions)
    candidates = passes["choose"](analysis, plan, settings, plans, preference)
    return passes["instantiate"](candidates, analysis, settings)
