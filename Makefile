# Two commands: `make run` sets up and runs the main job on generated sample data;
# `make test` sets up and runs the whole suite (ruff, mypy, pytest).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := build/sample

.PHONY: run test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.run

run: $(VENV)/.run
	$(BIN)/kleene gen stock --events 20000 --symbols 10 --seed 7 --output $(SAMPLE)/stocks.csv
	$(BIN)/kleene match examples/rally_fizzles.sase --input $(SAMPLE)/stocks.csv \
		--output $(SAMPLE)/matches.jsonl --show 5 --stats

lint: $(VENV)/.test
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy

test: lint
	KLEENE_HYPOTHESIS=ci $(BIN)/pytest

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .hypothesis
