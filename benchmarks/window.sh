#!/bin/sh
# The match-window experiments (docs/benchmarks-journal.md, "Match windows"), in the order listed there.
# DATA, SEPSIS: the folders of the BPIC 2011 and sepsis hospital logs (default:
# ../shared/data/..., used when present).
set -e
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
DATA=${DATA:-../shared/data/medical_bpic2011_hospital_gyn_oncology}
SEPSIS=${SEPSIS:-../shared/data/medical_sepsis_4tu}
# Figures 6a-b: Pseq and Pset, k = 1..10, on a generated hospital log
$python -m benchmarks window --events 1000 --ks 1 2 3 4 5 6 7 8 9 10 --patterns 2
# the same on the real BPIC 2011 log, when present
if [ -f "$DATA/bpic2011_hospital_events.csv.gz" ]; then
    $python -m benchmarks window --data "$DATA/bpic2011_hospital_events.csv.gz" --events 1000 \
        --ks 1 2 4 6 8 10 --patterns 2
fi
if [ -f "$SEPSIS/sepsis_events_tidy.csv" ]; then
    $python -m benchmarks window --data "$SEPSIS/sepsis_events_tidy.csv" --events 1000 \
        --ks 1 2 4 6 8 10 --patterns 2
fi
# Figures 6c-d: on a stock stream (types are symbols; no partition attribute)
$python -m benchmarks window --stream stock --events 1000 --ks 1 2 4 6 8 10 --windows 20 --patterns 2 \
    --prunings none f fc alone
# Figure 6e: a varying WITHIN
$python -m benchmarks window --events 1000 --kinds set --ks 3 --windows 2 5 10 --patterns 2
# Figure 8: a varying stream size (the factor should stay flat)
$python -m benchmarks window --events 300 1000 3000 --kinds seq --ks 3 --patterns 2
