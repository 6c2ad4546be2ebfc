"""One local SparkSession for the whole test run (2 cores, 2 shuffle partitions, UI off)."""

import pytest

from kleene.spark import spark_session


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
