# Two commands: `make run` sets up and runs the main job (Spark, local) on generated sample
# data; `make test` sets up and runs the whole suite (ruff, mypy, pytest). Both need Java 17.
# `make check` is the quick loop while working: ruff, mypy and every test that needs no Spark.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := build/sample

.PHONY: run test check lint bench clean java

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[spark]"
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.run

java:
	@command -v java >/dev/null 2>&1 || { \
		echo "kleene runs on Apache Spark, which needs Java 17, and no 'java' is on PATH."; \
		echo "Install it (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless) and retry."; \
		exit 1; }

run: java $(VENV)/.run
	$(BIN)/kleene gen stock --events 20000 --symbols 10 --seed 7 --output $(SAMPLE)/stocks.csv
	$(BIN)/kleene run examples/rally_fizzles.sase --input $(SAMPLE)/stocks.csv \
		--output $(SAMPLE)/matches.parquet --overwrite --show 5

lint: $(VENV)/.test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# every core: the Spark tests share one worker (one Spark session), the rest spread out
test: java lint
	KLEENE_HYPOTHESIS=ci $(BIN)/pytest -n auto --dist loadgroup

check: lint
	KLEENE_HYPOTHESIS=ci $(BIN)/pytest -m "not spark" -n auto

# `make bench BENCH="lazy --patterns SEQ3"` runs any suite; see benchmarks/README.md.
BENCH ?= nfa --events 20000 --predicates p2 --strategies s2 --windows 1000 --plans nfa --repeat 3
bench: $(VENV)/.test
	$(BIN)/python -m benchmarks $(BENCH)

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .hypothesis
