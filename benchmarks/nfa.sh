#!/bin/sh
# The SASE+ experiments (docs/benchmarks-journal.md, "The SASE+ NFA^b"), in the order listed there.
set -e
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
# Expt 1 and 5 (basic vs merging, W = 500) with Table 2's matching / construction split
$python -m benchmarks nfa --events 20000 --windows 500 --breakdown
# Expt 2: the partition window, basic vs merging, all matches built
$python -m benchmarks nfa --events 20000 --strategies s3 --windows 500 1000 2000
# Expt 6: the same with match construction off (matching alone)
$python -m benchmarks nfa --events 20000 --strategies s3 --windows 500 1000 2000 \
    --plans nfa:merge=False,construct=False nfa:construct=False
# Expt 3: all matches, basic vs backtrack
$python -m benchmarks nfa --events 5000 --windows 500 --plans nfa:merge=False nfa_backtrack
# Expt 4: non-overlapping matches, basic vs backtrack, p3 and the harder p3*
$python -m benchmarks nfa --events 5000 --windows 500 --predicates p3 'p3*' \
    --plans nfa:merge=False,output=non_overlapping nfa_backtrack:output=non_overlapping
# The speed goals: p2s2, and p1/p3 with s3 at W = 1000
$python -m benchmarks nfa --events 50000 --predicates p2 --strategies s2 --windows 1000 --plans nfa --repeat 3
$python -m benchmarks nfa --events 20000 --predicates p1 p3 --strategies s3 --windows 1000 --plans nfa --repeat 3
