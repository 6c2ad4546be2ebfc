"""What an engine counts while it runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["Metrics"]


@dataclass
class Metrics:
    """Counts of one engine's work so far.

    - `events`: events sent;
    - `matches`: matches reported;
    - `partitions`: partition states created (1 when the pattern has no partition key).
    """

    events: int = 0
    matches: int = 0
    partitions: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)
