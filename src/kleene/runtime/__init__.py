"""Running a compiled plan over events: partitions, time, metrics."""
