"""The one frozen options object every plan receives.

>>> from kleene.compiler.options import Options
>>> Options.build(output="non_overlapping", time_unit="ms").window_length(2, "s")
2000.0
>>> Options.build(colour="red")
Traceback (most recent call last):
...
kleene.errors.PlanError: unknown option 'colour'; the options are: anchors, arc_lifetimes, ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal

from kleene.errors import PlanError
from kleene.language.text import UNITS

__all__ = ["NEGATIONS", "ON_LIMIT", "OUTPUTS", "SELECTIONS", "Options"]

OUTPUTS = ("all", "non_overlapping")
SELECTIONS = ("all", "earliest", "maximal", "earliest_maximal")
NEGATIONS = ("post", "first_chance")
ON_LIMIT = ("raise", "drop")


@dataclass(frozen=True)
class Options:
    """How a compiled plan behaves; plans pick what concerns them.

    - `output`: "all" matches (default) or "non_overlapping" (SASE+ section 2: per partition,
      a match is reported only if it starts after the previous reported one ended).
    - `selection`: among the matches that start at one event, "all" (default), the
      "earliest" ones (each variable's events start as early as in any of them), the
      "maximal" ones (no variable's events can take one more event and still match), or
      "earliest_maximal" (both; the match-window paper's section 3). Not with
      non-overlapping output.
    - `time_unit`: what one unit of a numeric timestamp is ("s" by default; "ms", "us", ...);
      WITHIN amounts with units are converted to it. Datetime timestamps are measured in
      seconds, so they need "s".
    - `functions`: extra functions predicates may call, by name.
    - `name`: the pattern's name in matches.
    - `merge`: the `nfa` plan merges equivalent runs (True); False measures what that saves.
    - `construct`: the `nfa` plan reads each match from its buffer (True); False skips that
      and returns no matches, so a benchmark can time the pattern matching alone (SASE+
      Expt 6). The metrics still count the runs reaching the final state (`final_takes`).
    - `inner`: the plan `match_window` calls on each candidate window ("auto" by default).
    - `pruning`: what `match_window` prunes with, as letters: f (filtering), p
      (partitioning), c (necessary match conditions); "fpc" by default, "" for none.
    - `order`: the lazy plans' evaluation order, rarest first: variable names or event
      types (`["C", "B", "A"]`, or `"C,B,A"`); unlisted ones follow in pattern order.
    - `frequencies`: instead of `order`, each type's (or variable's) rate (`{"A": 100,
      "C": 1}`, or `"A:100,C:1"`); the lazy plans take the rarest first.
    - `estimate`: `lazy_chain` counts each partition's first N events and then takes the
      variables rarest first by those counts (0, the default: keep the order given).
    - `group`: the lazy plans make an iterated variable's subsets only within one value of
      an attribute its events must share (`b[i].x = b[i-1].x`), its buffer hashed by that
      value (True, the default; section 4.5.3's group-by-attribute optimization).
    - `negation`: how the lazy plans check negations: "post" (default; once a match is
      complete) or "first_chance" (as soon as a partial match binds what decides one).
    - `sequence`: the `afa` plan's AFA+O: the attribute holding each event's sequence
      number, one more per event in timestamp order (per partition when the query has a
      partition key). Matches then never span a missing number, so none is withdrawn.
    - `anchors`: the `afa` plan keeps a run of ignorable steps as one anchor in an interval
      index (Appendix D, the paper's AFA+ignore): less state, at some cost in speed (False).
    - `arc_lifetimes`: the `afa` plan on an AFA written directly, whose arcs change while
      the stream runs (`kleene.afa.arcs`): an arc fires for the events after the latest
      one received ("default", the paper's default operation mode) or for the lifetime it
      is given ("explicit").
    - `timeouts`: also report the partial matches whose time window closes before they
      complete, as `Timeout` values among the matches (Flink CEP's timed-out partial
      matches; docs/semantics.md, section 12). False by default.
    - The guards, on by default at sizes a laptop survives (None: no limit):
      `max_partial_matches` (1,000,000) bounds the partial matches held in all partitions,
      `max_partial_matches_per_key` (100,000) those of one partition, and
      `max_matches_per_event` (100,000) the matches one event completes. `on_limit` says
      what passing one does: "raise" a `LimitError` naming what grows and the fix (the
      default), or "drop": drop the oldest partial matches of the partition (counted in the
      metrics as `partials_dropped`) or the matches past the limit (`matches_dropped`), and
      go on.
    """

    output: Literal["all", "non_overlapping"] = "all"
    selection: Literal["all", "earliest", "maximal", "earliest_maximal"] = "all"
    time_unit: str = "s"
    functions: Mapping[str, Callable[..., Any]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    name: str = "pattern"
    merge: bool = True
    construct: bool = True
    inner: str = "auto"
    pruning: str = "fpc"
    order: tuple[str, ...] = ()
    frequencies: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    estimate: int = 0
    group: bool = True
    negation: Literal["post", "first_chance"] = "post"
    sequence: str | None = None
    anchors: bool = False
    arc_lifetimes: Literal["default", "explicit"] = "default"
    max_partial_matches: int | None = 1_000_000
    max_partial_matches_per_key: int | None = 100_000
    max_matches_per_event: int | None = 100_000
    on_limit: Literal["raise", "drop"] = "raise"
    timeouts: bool = False

    @classmethod
    def build(cls, **options: Any) -> Options:
        """Options from keyword arguments, rejecting unknown names and bad values."""
        known = {f.name for f in fields(cls)}
        for name in options:
            if name not in known:
                raise PlanError(
                    f"unknown option {name!r}; the options are: {', '.join(sorted(known))}"
                )
        for item in fields(cls):
            value = options.get(item.name)
            if isinstance(item.default, bool) and value is not None and not isinstance(value, bool):
                raise PlanError(f"{item.name} must be True or False, not {value!r}")
        if options.get("output", "all") not in OUTPUTS:
            raise PlanError(
                f"output must be one of {', '.join(OUTPUTS)}, not {options['output']!r}"
            )
        selection = options.get("selection", "all")
        if selection not in SELECTIONS:
            raise PlanError(f"selection must be one of {', '.join(SELECTIONS)}, not {selection!r}")
        if selection != "all" and options.get("output", "all") != "all":
            raise PlanError("a selection chooses among all matches; drop output='non_overlapping'")
        if options.get("negation", "post") not in NEGATIONS:
            raise PlanError(
                f"negation must be one of {', '.join(NEGATIONS)}, not {options['negation']!r}"
            )
        unit = options.get("time_unit", "s")
        if not isinstance(unit, str) or unit.lower() not in UNITS:
            raise PlanError(f"unknown time_unit {unit!r}; use one of {', '.join(sorted(UNITS))}")
        options["time_unit"] = UNITS[unit.lower()][0]
        if "order" in options:
            if isinstance(options["order"], str):
                raise PlanError(f"order is a list of variables or types, not {options['order']!r}")
            options["order"] = tuple(options["order"])
        if "frequencies" in options:
            options["frequencies"] = MappingProxyType(dict(options["frequencies"]))
        if "estimate" in options:
            options["estimate"] = _count("estimate", options["estimate"])
        sequence = options.get("sequence")
        if sequence is not None and not (isinstance(sequence, str) and sequence):
            raise PlanError(f"sequence names the attribute of sequence numbers, not {sequence!r}")
        for name in ("max_partial_matches", "max_partial_matches_per_key", "max_matches_per_event"):
            limit = options.get(name)
            if limit is not None and (
                not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
            ):
                raise PlanError(
                    f"{name} is a number (1 or more) or None for no limit, not {limit!r}"
                )
        if options.get("arc_lifetimes", "default") not in ("default", "explicit"):
            raise PlanError(
                f"arc_lifetimes is 'default' or 'explicit', not {options['arc_lifetimes']!r}"
            )
        if options.get("on_limit", "raise") not in ON_LIMIT:
            raise PlanError(f"on_limit is 'raise' or 'drop', not {options['on_limit']!r}")
        if "functions" in options:
            options["functions"] = MappingProxyType(dict(options["functions"]))
        return cls(**options)

    def window_length(self, amount: float, unit: str | None) -> float:
        """A WITHIN amount in timestamp units (a bare amount is already in them)."""
        if unit is None:
            return amount
        return amount * UNITS[unit][1] / UNITS[self.time_unit][1]


def _count(name: str, value: Any) -> int:
    """A number of events (0 or more)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise PlanError(f"{name} must be a number of events (0 or more), not {value!r}")
    return value
