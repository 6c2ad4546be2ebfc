"""`kleene explain`: a query in canonical form and what every plan derives from it.

>>> import kleene
>>> from kleene.cli.explain import explain
>>> print(explain(kleene.compile('''PATTERN SEQ(Shelf a, NOT(Register b), Exit c)
...     WHERE skip_till_next_match { [tag_id] and a.zone = 'A' } WITHIN 12 hours''',
...     plan="reference")))
PATTERN SEQ(Shelf a, NOT(Register b), Exit c)
WHERE skip_till_next_match { [tag_id] and a.zone = "A" }
WITHIN 12 hours
<BLANKLINE>
variables:
  a  Shelf     one event
  b  Register  negated: none after a and before c
  c  Exit      one event
strategy:       skip_till_next_match
window:         12 hours (43200 timestamp units)
                numeric timestamps count s (time_unit); epoch milliseconds need --ts-unit ms
properties:
  a: a.zone = "A"
relationships:  none
equivalence:    [tag_id]
partition by:   tag_id
order:          a < b, a < c, b < c
on a stream:    state per key of tag_id, keys in hash buckets
plan:           reference
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kleene
from kleene.cli.common import as_sql, plan_arguments, query_text, sql_argument
from kleene.cli.plan_options import plan_options
from kleene.compiler.analysis import Analysis, Variable
from kleene.compiler.growth import unbounded
from kleene.compiler.rules import RuleAnalysis
from kleene.errors import KleeneError
from kleene.language.lead.printer import rule_text
from kleene.language.sase import ast as A
from kleene.language.sase.printer import expr_text, to_text, within_text
from kleene.plans.base import Plan

__all__ = ["add", "explain"]


def add(commands: Any) -> None:
    """Add `kleene explain` to the subcommands."""
    explain = commands.add_parser(
        "explain",
        help="print a query in canonical form and what kleene derives from it",
        description="Print the canonical query, its variables, properties, relationships, "
        "partition key, ordering constraints, window and plan.",
    )
    explain.add_argument("query", help="a query file, or the query text itself")
    sql_argument(explain)
    plan_arguments(explain)
    explain.add_argument("--dot", metavar="FILE", help="write the plan's automaton as Graphviz DOT")
    explain.add_argument(
        "--png",
        metavar="FILE",
        help="draw the automaton as PNG (needs Graphviz's dot command; a LEAD rule's net also "
        "draws with matplotlib)",
    )
    explain.set_defaults(run=_explain)


def _explain(args: argparse.Namespace) -> int:
    text, _ = query_text(args.query)
    plan = kleene.compile(as_sql(text, args, args.query), args.plan, **plan_options(args.option))
    print(explain(plan))
    if args.dot or args.png:
        graph = plan.dot()
        if graph is None:
            raise KleeneError(f"plan {plan.name!r} has no automaton to draw; try --plan nfa")
        if args.dot:
            Path(args.dot).write_text(graph + "\n")
        if args.png:
            dot = shutil.which("dot")
            if dot is not None:
                subprocess.run([dot, "-Tpng", "-o", args.png], input=graph, text=True, check=True)
            elif not plan.draw(args.png):  # a plan that draws itself (with matplotlib)
                raise KleeneError(
                    "--png needs Graphviz's dot command (Debian: apt-get install graphviz); "
                    "--dot writes the graph for any Graphviz viewer"
                )
    return 0


def _describe(variable: Variable, before: list[str], after: list[str]) -> str:
    if variable.negated:
        left = f"after {', '.join(before)}" if before else "back through the window"
        right = f"before {', '.join(after)}" if after else "ahead through the window"
        return f"negated: none {left} and {right}"
    if not variable.kleene:
        return "one event, or none" if variable.optional else "one event"
    low, high = variable.min, variable.max
    text = f"Kleene: {low} to {'any number of' if high is None else high} events"
    if variable.optional and low > 0:
        text += ", or none"
    if variable.greedy:
        text += "; GREEDY"
    if variable.until is not None:
        text += f"; UNTIL {expr_text(variable.until)}"
    return text


def _strategies(analysis: Analysis) -> list[str]:
    """The strategy, or where a query mixes them, each entry's and loop's."""
    if analysis.strategy != "mixed":
        return [f"{'strategy:':<16}{analysis.strategy}"]
    table = analysis.strategies
    lines = [f"{'strategy:':<16}mixed; {table.default} where no clause says"]
    for name, variable in analysis.variables.items():
        if variable.negated:
            continue
        places = []
        if name in table.entries:
            places.append(f"entry {table.entry(name)}")
        if name in table.loops:
            places.append(f"loop {table.loop(name)}")
        if places:
            lines.append(f"  {name}: {', '.join(places)}")
    return lines


def explain(plan: Plan[Any]) -> str:
    """The canonical query, then its variables, conditions, partition key, order and window
    (for a LEAD rule: the rule, its streams, partitions and net; for an AFA written
    directly, the AFA)."""
    analysis = plan.analysis
    if isinstance(analysis, RuleAnalysis):
        return _explain_rule(plan, analysis)
    if not isinstance(analysis, Analysis):  # an AFA written directly, a MATCH_RECOGNIZE clause
        return "\n".join([analysis.text(), "", f"{'plan:':<16}{plan.name}", plan.describe() or ""])
    pattern = analysis.pattern
    lines = [to_text(pattern), "", "variables:"]
    width = max(len(name) for name in analysis.variables)
    type_width = max(len(_types(v)) for v in analysis.variables.values())
    for name, variable in analysis.variables.items():
        negation = analysis.negations.get(name)
        before = sorted(negation.before) if negation else []
        after = sorted(negation.after) if negation else []
        types = _types(variable)
        said = _describe(variable, before, after)
        if negation is not None and negation.next and negation.loop is not None:
            said = (
                f"negated: no event from the one after {negation.loop}'s least number of "
                "events to the one right after its last"
            )
        elif negation is not None and negation.next:
            said = f"negated: not the event right after {', '.join(before)}"
        elif negation is not None and negation.since is not None:
            said = (
                f"negated: absent from {negation.since}'s first event to the first of "
                f"{', '.join(after)} (nothing looked for if none binds one)"
            )
        lines.append(f"  {name:<{width}}  {types:<{type_width}}  {said}")
    lines.extend(_strategies(analysis))
    if pattern.within is None:
        growth = unbounded(analysis)
        lines.append(f"{'window:':<16}none" + ("" if growth is None else f" (warning: {growth})"))
    else:
        window = within_text(pattern.within)
        if plan.window is not None:
            window += f" ({plan.window:g} timestamp units)"
        growth = unbounded(analysis)
        lines.append(
            f"{'window:':<16}{window}" + ("" if growth is None else f" (warning: {growth})")
        )
        if pattern.within.unit is not None:
            unit = plan.options.time_unit
            lines.append(
                f"{'':<16}numeric timestamps count {unit} (time_unit); epoch milliseconds "
                "need --ts-unit ms"
            )
    properties: dict[str, list[str]] = {}
    relationships = []
    for condition in analysis.conditions:
        subject = condition.subject
        if subject is None:
            relationships.append(condition.text)
        else:
            properties.setdefault(subject, []).append(condition.text)
    lines.append("properties:" if properties else f"{'properties:':<16}none")
    for subject, texts in properties.items():
        lines.append(f"  {subject}: {' and '.join(texts)}")
    lines.append("relationships:" if relationships else f"{'relationships:':<16}none")
    lines.extend(f"  {text}" for text in relationships)
    if analysis.equivalences:
        lines.append(f"{'equivalence:':<16}[{', '.join(analysis.equivalences)}]")
    partition = analysis.partition
    lines.append(f"{'partition by:':<16}{partition.describe() if partition else 'nothing'}")
    if analysis.consume is not None:
        meaning = {
            "any": "a match discards every partial match",
            "partition": "a match discards its partition's partial matches",
            "events": "a match uses up its events: no later match holds one of them",
        }[analysis.consume]
        lines.append(f"{'consume by:':<16}{analysis.consume} ({meaning})")
    if analysis.freeze:
        held = "; ".join(
            f"an event of {name} holds back {', '.join(sorted(names))}"
            for name, names in analysis.freeze.items()
        )
        lines.append(f"{'freeze:':<16}{held} (until a match holds it or the window passes)")
    order = sorted((a, b) for b, earlier in analysis.before.items() for a in earlier)
    lines.append(f"{'order:':<16}{', '.join(f'{a} < {b}' for a, b in order) or 'none'}")
    streamed = "one group: without a key, one Spark task holds all the state"
    if partition is not None and plan.partition_key is not None:
        streamed = f"state per key of {partition.describe()}, keys in hash buckets"
    lines.append(f"{'on a stream:':<16}{streamed}")
    lines.append(f"{'plan:':<16}{plan.name}")
    described = plan.describe()
    if described:
        lines.append(described)
    return "\n".join(lines)


def _explain_rule(plan: Plan[Any], analysis: RuleAnalysis) -> str:
    """A LEAD rule in canonical form, then its streams, partitions and Petri net.

    >>> import kleene
    >>> print(explain(kleene.compile("FROM Order AS o, Pay AS p "
    ...     "MATCH o Followed By not p Within 1 hour PARTITION BY o.order EMIT Event Late(order)")))
    FROM Order AS o, Pay AS p
    MATCH o Followed By not p Within 1 hour
    PARTITION BY o.order
    EMIT Event Late(order)
    <BLANKLINE>
    streams:        o = Order, p = Pay
    partition by:   order (the rule runs once per value, under the default policy)
    plan:           petri
    net:
    EMIT
      FollowedBy
        Source o
        Negation 3600
          Source p
    """
    rule = analysis.rule
    streams = ", ".join(f"{s.alias} = {s.type}" for s in rule.streams)
    if rule.partition:
        names = ", ".join(a.attr for a in rule.partition)
        partition = f"{names} (the rule runs once per value, under the default policy)"
    else:
        partition = "nothing: one run of the rule over the whole stream"
    lines = [rule_text(rule), "", f"{'streams:':<16}{streams}"]
    lines.append(f"{'partition by:':<16}{partition}")
    lines += [f"{'plan:':<16}{plan.name}", "net:", plan.describe() or ""]
    return "\n".join(lines)


def _types(variable: Variable) -> str:
    return A.ANY if variable.types is None else "|".join(sorted(variable.types))
