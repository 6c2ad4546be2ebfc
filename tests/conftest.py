"""Test settings: hypothesis profiles (KLEENE_HYPOTHESIS=ci|dev|thorough)."""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# CI explores the same examples every run (a red CI then means a change broke something);
# dev and thorough draw new ones each time
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("KLEENE_HYPOTHESIS", "dev"))


def pytest_collection_modifyitems(items):
    """Every test under tests/spark runs Spark: mark it `spark` (`pytest -m "not spark"`
    runs the rest, `make check`), and keep them on one worker of `pytest -n` (one Spark
    session: `--dist loadgroup`)."""
    for item in items:
        if "tests/spark/" in item.path.as_posix():
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture
def stocks(tmp_path):
    """3,000 stock ticks over 4 symbols as CSV (`kleene gen stock`, seed 7)."""
    from kleene.cli import main

    path = tmp_path / "stocks.csv"
    command = ["gen", "stock", "--events", "3000", "--symbols", "4", "--seed", "7"]
    assert main([*command, "-o", str(path)]) == 0
    return path
