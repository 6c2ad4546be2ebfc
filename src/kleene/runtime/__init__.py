"""Running a compiled plan over events: partitions, time, metrics; several queries at once."""

from kleene.runtime import queries as _queries  # noqa: F401 - Engine of several queries

__all__: list[str] = []
