#!/bin/sh
# The AFA paper's experiments (docs/benchmarks-journal.md, "The afa plan"), in the order listed there.
# PLOTS: where the PNG figures go (default docs/img).
set -e
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
PLOTS=${PLOTS:-docs/img}
# The speed goals: afa in order against nfa, and against itself with 10% of events late
$python -m benchmarks disorder --plans nfa afa --events 10000 --repeat 3
# Exact mode on every plan (the lazy plans run skip-till-any-match only: a second query)
$python -m benchmarks disorder --events 5000 --plans nfa nfa_backtrack match_window reference afa \
    --fractions 0.1 --repeat 3
$python -m benchmarks disorder --events 5000 --plans nfa lazy_chain lazy_tree --fractions 0.1 --repeat 3 \
    --query "PATTERN SEQ(Stock a, Stock b, Stock c) WHERE [symbol] AND b.price > a.price + 1 AND c.price < b.price - 1 WITHIN 20"
# afa against nfa in order on the SASE+ Kleene queries, punctuating and not
$python -m benchmarks nfa --plans nfa afa:max_delay=0 afa --events 10000 --repeat 3
# Figures 12, 13: throughput and state against the share of late events; AFA+O beside
$python -m benchmarks afa --experiment disorder --events 10000 --repeat 3 --plot "$PLOTS/afa_disorder.png"
# Figures 10, 11: output size and latency against the Cleanse factor σ
$python -m benchmarks afa --experiment speculation --events 10000 --plot "$PLOTS/afa_speculation.png"
# Figure 9: Q3 with a tick arc turned every N events, against the static pattern and a restart
$python -m benchmarks afa --experiment dynamic --events 10000 --periods 10 100 1000 --repeat 5 \
    --plot "$PLOTS/afa_dynamic.png"
# Figures 16, 17: throughput and state against the share of ignorable events
$python -m benchmarks afa --experiment ignorable --events 10000 --repeat 3 --plot "$PLOTS/afa_ignorable.png"
# Figure 8: the AFA, AFA+O, and the matchers the paper compares with (CAN, IPM), in order
$python -m benchmarks afa --experiment peers --events 20000 --window 2000 --repeat 3
