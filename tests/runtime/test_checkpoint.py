"""An engine's checkpoint: everything the stream changed, resumed by a new engine, in this
process or another (every plan's resumed engine reports as the uninterrupted one: the
conformance suite's `checkpoints` check)."""

import ast
import subprocess
import sys

import pytest

import kleene
from kleene.errors import StateError

QUERY = "PATTERN SEQ(A a, B b) WHERE [k] AND a.x < b.x WITHIN 10"
STREAM = [
    {"type": "A", "ts": 1, "k": 1, "x": 1},
    {"type": "A", "ts": 3, "k": 2, "x": 5},
    {"type": "B", "ts": 2, "k": 1, "x": 2},  # late by 1: the reorder buffer holds it
    {"type": "B", "ts": 6, "k": 2, "x": 9},
    {"type": "B", "ts": 30, "k": 1, "x": 9},
]


def test_a_checkpoint_resumes_in_a_fresh_process(tmp_path):
    whole = kleene.Engine(QUERY, max_delay=2)
    expected = [m.ids() for m in whole.send_many(STREAM) + whole.close()]
    first = kleene.Engine(QUERY, max_delay=2)
    early = first.send_many(STREAM[:3])
    saved = tmp_path / "engine.checkpoint"
    saved.write_bytes(first.checkpoint())
    script = (
        "import sys, kleene\n"
        f"engine = kleene.Engine({QUERY!r}, max_delay=2)\n"
        f"engine.resume(open({str(saved)!r}, 'rb').read())\n"
        f"found = engine.send_many({STREAM[3:]!r}) + engine.close()\n"
        "print([m.ids() for m in found])\n"
        "print(engine.metrics.events, engine.metrics.matches)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    ids, counts = done.stdout.splitlines()
    assert [m.ids() for m in early] + ast.literal_eval(ids) == expected
    assert counts == f"{whole.metrics.events} {whole.metrics.matches}"


def test_a_checkpoint_resumes_only_where_it_was_made():
    engine = kleene.Engine(QUERY, max_delay=2)
    engine.send_many(STREAM[:2])
    saved = engine.checkpoint()
    with pytest.raises(StateError, match="other settings"):
        kleene.Engine(QUERY, max_delay=3).resume(saved)
    with pytest.raises(StateError, match="another query"):
        kleene.Engine(QUERY.replace("10", "11"), max_delay=2).resume(saved)
    busy = kleene.Engine(QUERY, max_delay=2)
    busy.send(STREAM[0])
    with pytest.raises(kleene.KleeneError, match="before it receives events"):
        busy.resume(saved)
    plan = kleene.compile(QUERY)
    with pytest.raises(StateError, match="a plan's state, not an engine's checkpoint"):
        kleene.Engine(QUERY, max_delay=2).resume(plan.dump_state(plan.new_state()))
