"""What an engine counts while it runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

__all__ = ["Metrics"]


@dataclass
class Metrics:
    """Counts of one engine's work so far.

    - `events`: events sent;
    - `matches`: matches reported;
    - `retractions`: earlier matches withdrawn (only a speculative plan, `afa`, withdraws);
    - `timeouts`: partial matches reported as timed out (`timeouts=True`);
    - `partitions`: partition states created (1 when the pattern has no partition key);
    - `peak_runs`: the most partial matches (runs) alive at once, over all partitions, for
      plans that keep runs;
    - `peak_matches`: the most matches one event completed in its partition (or one
      partition reported as time passed), to set `max_matches_per_event` by;
    - `run_steps`: the runs alive after each event, summed (over `events`: the mean number of
      runs per event, the SASE+ paper's "runs per time step");
    - `late`: events dropped because they came later than `max_delay` allows (see
      `Engine`; with `on_late="collect"` they are also kept in `engine.late`);
    - `partials_dropped`: partial matches dropped, oldest first, because a partition or the
      engine held more than the guards allow (only with `on_limit="drop"`);
    - `cut_events`: events whose matches passed `max_matches_per_event` and were cut there
      (only with `on_limit="drop"`);
    - `plan`: the plan's own counters summed over partitions (for `nfa`: runs created and
      merged, edge evaluations, buffer writes, completions);
    - `missing_attributes`: the places in the query (`b.pric`) reading an attribute that none
      of the first events of its type carried (also logged as a warning; see
      `kleene.compiler.schema.AttributeWatch`).
    """

    events: int = 0
    matches: int = 0
    retractions: int = 0
    timeouts: int = 0
    partitions: int = 0
    peak_runs: int = 0
    peak_matches: int = 0
    run_steps: int = 0
    late: int = 0
    partials_dropped: int = 0
    cut_events: int = 0
    plan: dict[str, int] = field(default_factory=dict)
    missing_attributes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        """Every counter by name, the plan's included."""
        counts = asdict(self)
        counts.pop("missing_attributes")
        plan: Mapping[str, int] = counts.pop("plan")
        for name, value in plan.items():  # a plan may count what the engine counts too
            counts[name] = counts.get(name, 0) + value
        return counts
