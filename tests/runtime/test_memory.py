"""State follows live keys and windows: under ever-new partition keys (one per order, per RFID
tag, per session) every plan holds flat memory, the engine dropping the states the plan
calls idle and keeping only the keys of those it calls finished.

Memory is counted in the interpreter's allocated blocks (`sys.getallocatedblocks`) after a
collection, between the 20,000th and the 200,000th event: no tracing, so the run is as fast
as the engine."""

import gc
import sys

import pytest

import kleene
from kleene.plans import PLANS

EVENTS = 200_000
#: A pattern every plan of SASE+ patterns runs, partitioned by k.
PATTERN = "PATTERN SEQ(A a, NOT(B b), C c) WHERE [k] WITHIN 5"
#: An order without payment: once per order (no frame), or once per order and hour.
RULE = "FROM A AS a, B AS b MATCH a Followed By not b Within 5 s PARTITION BY a.k EMIT Event U(a.k)"
FRAMED = RULE.replace("PARTITION BY a.k", "PARTITION BY a.k, 10 s")


def _stream(start: int, stop: int):
    """Each key k its own three events in a row, A (k), B (every other k), C (k): keys never
    come back."""
    for i in range(start, stop):
        k, place = divmod(i, 3)
        kind = "B" if place == 1 and k % 2 else "A" if place == 0 else "C"
        yield kleene.Event(kind, i, {"k": k}, id=i)


def _grown(engine: kleene.Engine) -> int:
    """The blocks the engine's state grew by from the 20,000th to the last event."""
    engine.send_many(_stream(0, EVENTS // 10))
    gc.collect()
    before = sys.getallocatedblocks()
    engine.send_many(_stream(EVENTS // 10, EVENTS))
    gc.collect()
    return sys.getallocatedblocks() - before


@pytest.mark.parametrize(
    ("plan", "query"),
    [(name, PATTERN) for name in sorted(PLANS) if "sase" in PLANS[name].languages]
    + [("petri", FRAMED)],
)
def test_state_stays_flat_under_ever_new_keys(plan: str, query: str) -> None:
    ordered = PLANS[plan].ordered
    engine = kleene.Engine(query, plan, **({} if ordered else {"max_delay": 0}))
    grown = _grown(engine)
    assert grown < 2_000, f"{grown:,} blocks more after {EVENTS:,} events"
    assert engine.partitions < 100
    assert engine.metrics.matches > EVENTS // 12  # a match per other key, output as they come


def test_a_rule_that_runs_once_per_partition_keeps_only_the_keys() -> None:
    """Without a frame a rule runs once per partition, so a partition whose run ended must
    be remembered (its key's later events change nothing): the engine keeps the key alone,
    about a block a key, and no marking."""
    engine = kleene.Engine(RULE)
    grown = _grown(engine)
    retired = EVENTS * 9 // 10 // 3
    assert engine.partitions < 10
    assert engine.finished > EVENTS // 3 - 10
    assert grown < 2 * retired, f"{grown / retired:.1f} blocks a retired key"
