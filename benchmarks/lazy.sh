#!/bin/sh
# The lazy-NFA experiments (docs/benchmarks-journal.md, "Lazy evaluation"), in the order listed there.
# PLOTS: where the PNG figures go (default docs/img).
# NASDAQ: a folder of OpenCEP NASDAQ_*.txt minute bars (optional; the last experiment).
set -e
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
PLOTS=${PLOTS:-docs/img}
# Figures 10 and 12: every pattern over a growing window, ratio 1:100
$python -m benchmarks lazy --patterns SEQ3 SEQ4 SEQ5 AND2 AND3 NSEQ3 NAND3 ITER3 OR2SEQ2 OR4SEQ2 OR2SEQ4 \
    --events 10000 --windows 20 40 80 --plot "$PLOTS/lazy_window.png"
# NSEQ5: post-processing against First-Chance negation
$python -m benchmarks lazy --patterns NSEQ5 --events 10000 --windows 20 40 80 \
    --plans nfa lazy_chain lazy_chain:negation=first_chance lazy_tree lazy_tree:negation=first_chance
# Figure 11: peak memory, and the chain's order estimated from the first 1,000 events
$python -m benchmarks lazy --patterns SEQ3 AND3 --events 10000 --windows 40 --memory \
    --plans nfa lazy_chain lazy_chain:estimate=1000 lazy_tree
# Section 4.5.3: the group-by attribute on and off (ITER3EQ, the paper's pattern (7))
$python -m benchmarks lazy --patterns ITER3EQ --events 10000 --windows 40 80 \
    --plans nfa lazy_chain lazy_chain:group=False lazy_tree
# Figure 17: the rarest-to-most-frequent ratio from 1:1 to 1:700
$python -m benchmarks lazy --experiment ratio --patterns SEQ3 AND3 --events 20000 --windows 40 \
    --ratios 1 3 10 33 100 300 700 --repeat 2 --plot "$PLOTS/lazy_ratio.png"
# Section 8.3: the rarest type changes every 100,000 events; every chain order against the tree
$python -m benchmarks lazy --experiment changing --patterns SEQ3 --events 300000 --rotate 100000 \
    --windows 40 --ratios 100 --plot "$PLOTS/lazy_changing.png"
# The real NASDAQ minute bars (near 1:1 between symbols, but for FREQUENCY_TAILORED)
if [ -n "$NASDAQ" ]; then
    $python -m benchmarks lazy --experiment nasdaq --data "$NASDAQ"/NASDAQ_MEDIUM.txt \
        "$NASDAQ"/NASDAQ_AAPL_AMZN_GOOG.txt "$NASDAQ"/NASDAQ_FREQUENCY_TAILORED.txt \
        --patterns SEQ3 AND3 NSEQ3 --windows 5 20 --repeat 2 --memory
    $python -m benchmarks lazy --experiment nasdaq --data "$NASDAQ"/NASDAQ_MEDIUM.txt \
        --patterns ITER3 --windows 5 10 --repeat 2 --memory
fi
# Daily bars of US stocks (the symbols chosen by how many days they trade)
if [ -n "$DAILY" ]; then
    $python -m benchmarks lazy --experiment daily --data "$DAILY" --patterns SEQ3 AND3 \
        --ratios 1 10 100 --windows 10 30 --repeat 3
fi
