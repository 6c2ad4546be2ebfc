"""One local SparkSession for the whole test run (2 cores, 2 shuffle partitions, UI off)."""

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (pip install kleene[spark])")

from kleene.spark import spark_session  # imported only once pyspark is known to be there


@pytest.fixture(scope="session")
def spark():
    session = spark_session(
        "local[2]",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        },
        app_name="kleene-tests",
    )
    yield session
    session.stop()
