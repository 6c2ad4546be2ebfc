#!/bin/sh
# The SASE+ experiments (docs/benchmarks.md, "The SASE+ NFA^b"), in the order listed there.
set -e
kleene bench nfa --events 20000 --windows 500
kleene bench nfa --events 20000 --strategies s3 --windows 500 1000 2000
kleene bench nfa --events 5000 --windows 500 --plans nfa:merge=False nfa_backtrack
kleene bench nfa --events 5000 --windows 500 --predicates p3 'p3*' \
    --plans nfa:merge=False,output=non_overlapping nfa_backtrack:output=non_overlapping
