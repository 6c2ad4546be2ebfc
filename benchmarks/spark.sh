#!/usr/bin/env bash
# The Spark pipeline benchmarks of docs/benchmarks-journal.md (about 35 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
python=.venv/bin/python
$python -m benchmarks spark --events 1000000 --keys 1000 --cores 1 2
$python -m benchmarks spark --events 10000000 --keys 1000 --cores 1 2 --queries keyed
$python -m benchmarks spark --events 10000000 --keys 1000 --cores 1 2 --queries unkeyed --skip-in-process
$python -m benchmarks spark --events 1000000 10000000 --keys 1 --cores 1 --queries keyed --skip-in-process
