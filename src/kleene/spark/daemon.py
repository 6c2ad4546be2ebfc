"""The daemon a local session's Python workers fork from (`spark.python.daemon.module`),
with kleene's worker code imported before it forks: each worker then starts with it
loaded, where otherwise every worker imports it for its first kleene task (about half a
CPU-second each). Spark's own daemon (`pyspark.daemon`) does the rest.

Set only for a local master (`kleene.spark.spark_session`), whose workers run the driver's
own interpreter and find the driver's kleene; a worker still puts the job's shipped kleene
first on its path (`kleene.spark.shipping`), which this one then is. If the import fails
here, the workers import it as they do without this daemon.
"""

from __future__ import annotations

from contextlib import suppress

from pyspark.daemon import manager

with suppress(ImportError):  # else the workers import it themselves, and say what lacks
    import kleene.spark.worker  # noqa: F401 - loaded once, inherited by every fork

if __name__ == "__main__":
    manager()
