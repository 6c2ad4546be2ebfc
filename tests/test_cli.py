"""The kleene command: match, explain, gen; messages and exit codes."""

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kleene
from kleene.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_gen_writes_every_format(tmp_path, capsys):
    for name in ("s.csv", "s.jsonl", "s.parquet"):
        assert main(["gen", "stock", "-n", "10", "-o", str(tmp_path / name)]) == 0
    assert "wrote 10 events" in capsys.readouterr().err
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert json.loads(lines[0]).keys() == {"type", "ts", "symbol", "price", "volume"}


def test_gen_refuses_lists_in_csv_and_bad_settings(tmp_path, capsys):
    assert main(["gen", "stock", "-n", "10", "--history", "2", "-o", str(tmp_path / "s.csv")]) == 1
    assert "CSV cannot hold lists (column history)" in capsys.readouterr().err
    assert main(["gen", "stock", "--ratio", "0.5", "-o", str(tmp_path / "s.csv")]) == 1
    assert "ratio" in capsys.readouterr().err


def test_match_writes_json_lines(stocks, capsys):
    query = EXAMPLES / "rally_fizzles.sase"
    assert main(["match", str(query), "--input", str(stocks), "--stats"]) == 0
    out, err = capsys.readouterr()
    matches = [json.loads(line) for line in out.splitlines()]
    assert matches
    first = matches[0]
    assert first["pattern"] == "rally_fizzles"
    assert len(first["a"]) >= 3
    assert first["a"][0]["volume"] > 900
    assert first["b"][0]["volume"] < 100
    assert "3,000 events" in err and "partitions" in err
    peak = next(line for line in err.splitlines() if "peak_memory_kib" in line)
    assert int(peak.split()[-1].replace(",", "")) > 1024  # an interpreter holds a MiB at least
    counters = [line for line in err.splitlines() if line.startswith("  ")]
    assert len({len(line) for line in counters}) == 1, "the counters' columns line up"


def test_match_output_file_limit_and_show(stocks, tmp_path, capsys):
    out_path = tmp_path / "m" / "matches.jsonl"
    query = "PATTERN SEQ(Stock a, Stock b) WHERE [symbol] and b.price > a.price + 1 WITHIN 20"
    assert (
        main(
            ["match", query, "-i", str(stocks), "-o", str(out_path), "--limit", "4", "--show", "2"]
        )
        == 0
    )
    assert len(out_path.read_text().splitlines()) == 4
    shown = capsys.readouterr().out.splitlines()
    assert len(shown) == 2 and shown[0].startswith("  1. ")
    # each event with the attributes the query reads: `a=[3 symbol='IBM' price=101.5] …`
    assert re.search(r"a=\[\d+ symbol='\w+' price=[\d.]+\] b=\[\d+ symbol=", shown[0])


def test_match_reads_column_mappings(tmp_path, capsys):
    path = tmp_path / "log.jsonl"
    path.write_text('{"when": 1, "kind": "A"}\n{"when": 2, "kind": "B"}\n')
    args = [
        "match",
        "PATTERN SEQ(A a, B b)",
        "-i",
        str(path),
        "--type-column",
        "kind",
        "--ts-column",
        "when",
    ]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["b"][0]["ts"] == 2


def test_match_skips_and_reports_bad_rows(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("type,ts\nA,1\nB,x\nB,3\n")
    assert main(["match", "PATTERN SEQ(A a, B b)", "-i", str(path)]) == 1
    assert "row 2, field 'ts'" in capsys.readouterr().err
    assert main(["match", "PATTERN SEQ(A a, B b)", "-i", str(path), "--on-error", "skip"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    assert "skipped 1 malformed row" in err


def test_the_summary_shows_after_a_logging_configuration_disabled_kleenes_logger(tmp_path, capsys):
    """`logging.config` disables every logger it does not name (a test run that configured
    it once left every later command's summary unprinted)."""
    import logging
    import logging.config

    path = tmp_path / "events.csv"
    path.write_text("type,ts\nA,1\nB,2\n")
    logging.config.dictConfig({"version": 1})
    try:
        assert logging.getLogger("kleene").disabled
        assert main(["match", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", str(path)]) == 0
        assert "kleene: 2 events, 1 match" in capsys.readouterr().err
        assert logging.getLogger("kleene").disabled  # left as it was
    finally:
        logging.getLogger("kleene").disabled = False


@pytest.mark.parametrize("text", ["", "type,ts\n"], ids=["no bytes", "a header alone"])
def test_match_says_when_the_input_is_empty(tmp_path, capsys, text):
    path = tmp_path / "empty.csv"
    path.write_text(text)
    assert main(["match", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", str(path)]) == 0
    assert "0 events read (the input is empty), 0 matches" in capsys.readouterr().err


@pytest.mark.parametrize("skip", [[], ["--on-error", "skip"]], ids=["stop", "skip"])
def test_match_names_a_damaged_gzip_file(tmp_path, capsys, skip):
    rows = "type,ts\n" + "".join(f"A,{t}\nB,{t}\n" for t in range(3000))
    packed = gzip.compress(rows.encode())
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(packed[: len(packed) // 2])
    assert main(["match", "PATTERN SEQ(A a, B b) WITHIN 1", "-i", str(path), *skip]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kleene: {path}: the gzip file is damaged after ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["match", "missing.sase", "-i", "x.csv"], "no such query file: missing.sase"),
        (["match", "PATTERN SEQ(A a", "-i", "x.csv"], "line 1, column 16: unexpected end of query"),
        (["match", "PATTERN SEQ(A a)", "-i", "nowhere.csv"], "no such file or folder"),
        (["match", "PATTERN SEQ(A a)", "-i", "x.csv", "--plan", "fast"], "unknown plan 'fast'"),
        (["explain", "PATTERN SEQ(A a) WHERE b.x > 1"], "unknown variable b"),
    ],
)
def test_errors_exit_with_1_and_a_message(args, message, capsys):
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("kleene: ")
    assert message in err


def test_explain(capsys):
    assert main(["explain", str(EXAMPLES / "rally_fizzles.sase")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PATTERN SEQ(Stock+ a[], Stock b)")
    assert "partition by:   symbol" in out
    assert "a[1]: a[1].volume > 900" in out


def test_explain_says_what_not_next_and_consume_by_mean(capsys):
    query = "PATTERN SEQ(A a, NOT NEXT(C c), B b) WHERE [k] CONSUME BY PARTITION"
    assert main(["explain", query]) == 0
    out = capsys.readouterr().out
    assert "c  C  negated: not the event right after a" in out
    assert "consume by:     partition (a match discards its partition's partial matches)" in out
    query = "PATTERN SEQ(A+ a[], NOT FOLLOWED(C c), B b) CONSUME BY EVENTS"
    assert main(["explain", query]) == 0
    out = capsys.readouterr().out
    assert "c  C  negated: absent from a's first event to the first of b" in out
    assert "consume by:     events (a match uses up its events" in out
    query = "PATTERN SEQ(A a, B+ b[], NOT NEXT(C n), D d) WHERE relaxed_contiguity"
    assert main(["explain", query]) == 0
    out = capsys.readouterr().out
    assert "negated: no event from the one after b's least number of events" in out


def test_explain_says_what_freeze_holds_back(capsys):
    query = "PATTERN SEQ(A a, AND(B b, D d), C c) WITHIN 10 FREEZE c, a"
    assert main(["explain", query]) == 0
    out = capsys.readouterr().out
    assert "freeze:         an event of a holds back a; an event of c holds back a, b, c, d" in out
    assert "FREEZE c, a" in out


def test_usage_errors_exit_with_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["match"])
    assert info.value.code == 2
    assert "required" in capsys.readouterr().err


def test_module_entry_point_and_help():
    result = subprocess.run(
        [sys.executable, "-m", "kleene", "match", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert "--on-error {raise,skip}" in result.stdout
    version = subprocess.run(
        [sys.executable, "-m", "kleene", "--version"], capture_output=True, text=True, check=False
    )
    assert version.stdout.startswith("kleene ")


def test_module_entry_point_keeps_the_exit_status_of_usage_errors():
    result = subprocess.run(
        [sys.executable, "-m", "kleene", "match"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "required" in result.stderr


#: A pyarrow CSV reader left reading a slow Python file in its own thread, then `leave`.
_READ_AHEAD_AT_EXIT = """
import atexit
import io
import time

import pyarrow.csv as pacsv

from kleene.cli.main import leave


class Slow(io.RawIOBase):
    parts = [b"a,b\\n1,2\\n"] + [b"3,4\\n"] * 3

    def readable(self):
        return True

    def readinto(self, buffer):
        time.sleep(0.3)
        part = self.parts.pop(0) if self.parts else b""
        buffer[: len(part)] = part
        return len(part)


reader = pacsv.open_csv(Slow(), read_options=pacsv.ReadOptions(use_threads=False, block_size=4))
print(reader.read_next_batch().num_rows, "row")  # buffered: `leave` must write it out
atexit.register(print, "exit handlers ran")
leave(3)
"""


def test_leaving_while_a_pyarrow_thread_reads_a_python_file_does_not_abort():
    """The interpreter's teardown would meet pyarrow's read-ahead thread wanting the
    interpreter's lock and abort the process (exit -6) after its output was written."""
    result = subprocess.run(
        [sys.executable, "-c", _READ_AHEAD_AT_EXIT], capture_output=True, text=True, check=False
    )
    assert result.returncode == 3, result.stderr
    assert result.stdout.splitlines() == ["1 row", "exit handlers ran"]


def test_every_example_query_parses():
    queries = sorted(EXAMPLES.glob("*.sase"))
    assert queries
    for query in queries:
        assert main(["explain", str(query)]) == 0


NFA_QUERY = (
    "PATTERN SEQ(Stock+ a[], Stock b) WHERE skip_till_next_match { [symbol] "
    "AND a[i].price > a[i-1].price AND b.volume < 150 } WITHIN 100"
)


def test_explain_writes_the_automaton_as_dot(tmp_path, capsys):
    target = tmp_path / "nfa.dot"
    assert main(["explain", NFA_QUERY, "--plan", "nfa", "--dot", str(target)]) == 0
    assert "take a -> a[i]" in capsys.readouterr().out
    graph = target.read_text()
    assert graph.startswith("digraph")
    assert "a[i].price > a[i-1].price" in graph and "b.volume < 150" in graph


def test_explain_draws_png_or_says_what_it_needs(tmp_path, capsys):
    target = tmp_path / "nfa.png"
    code = main(["explain", NFA_QUERY, "--plan", "nfa", "--png", str(target)])
    if shutil.which("dot") is None:
        assert code == 1 and "apt-get install graphviz" in capsys.readouterr().err
    else:
        assert code == 0 and target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_explain_dot_needs_an_automaton(tmp_path, capsys):
    target = tmp_path / "ref.dot"
    assert main(["explain", NFA_QUERY, "--plan", "reference", "--dot", str(target)]) == 1
    assert "no automaton to draw" in capsys.readouterr().err
    assert not target.exists()


def test_plan_options_on_the_command_line(tmp_path, capsys):
    query = "PATTERN SEQ(AND(C c, P p), B b) WHERE [k] WITHIN 5"
    args = ["explain", query, "--plan", "match_window", "--option", "inner=nfa"]
    assert main([*args, "--option", "pruning=fp"]) == 0
    out = capsys.readouterr().out
    assert "inner plan:     nfa" in out
    assert "pruning:        f (filtering), p (partitioning)\n" in out
    assert main([*args, "--option", "merge=maybe"]) == 1
    assert "merge must be True or False, not 'maybe'" in capsys.readouterr().err
    assert main(["explain", query, "--option", "pruning"]) == 1
    assert "expected NAME=VALUE, not 'pruning'" in capsys.readouterr().err
    path = tmp_path / "e.csv"
    path.write_text("type,ts,k\nC,1,1\nP,2,1\nB,3,1\n")
    assert main(["match", query, "-i", str(path), "--plan", "nfa", "--option", "merge=False"]) == 0
    assert '"c": [{"id": 0' in capsys.readouterr().out


def test_match_puts_events_back_in_order_with_max_delay(tmp_path, capsys):
    path = tmp_path / "late.csv"
    path.write_text("type,ts\nA,1\nB,5\nA,2\nB,9\nA,3\n")
    query = "PATTERN SEQ(A a, B b)"
    assert main(["match", query, "-i", str(path)]) == 1
    assert "or give max_delay (--max-delay)" in capsys.readouterr().err
    assert main(["match", query, "-i", str(path), "--max-delay", "3"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 4  # a at 1 and 2, b at 5 and 9; A at 3 is late
    assert "dropped 1 late events" in captured.err
    assert main(["match", query, "-i", str(path), "--max-delay", "10 s"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 6  # sorted: A1 A2 A3 B5 B9
    assert main(["match", query, "-i", str(path), "--max-delay", "3", "--on-late", "raise"]) == 1
    assert "row 5, field 'ts': event 4 has ts 3, more than max_delay=3" in capsys.readouterr().err


def test_on_error_skip_also_skips_rows_that_go_back_in_time(tmp_path, capsys):
    path = tmp_path / "back.csv"
    path.write_text("type,ts\nA,1\nB,5\nA,2\nB,9\n")
    assert main(["match", "PATTERN SEQ(A a, B b)", "-i", str(path), "--on-error", "skip"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2  # A at 2 is skipped: a1 with b5 and b9
    assert "skipped 1 malformed row; first: " in captured.err
    assert "back.csv, row 3, field 'ts': event 2 has ts 2, earlier than" in captured.err


def test_engine_errors_name_the_file_and_row_with_an_id_column(tmp_path, capsys):
    """With an id column, an event's id says nothing of where it was read, so a time going
    back or of another kind named the arrival number ("row 4") and no file: in a folder,
    not the row of any file. Now the arrival number finds the file and row."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "part-0.csv").write_text("seq,type,ts\n10,A,1\n11,B,5\n")
    (folder / "part-1.csv").write_text("seq,type,ts\n12,A,2\n13,B,9\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    arguments = ["match", query, "-i", str(folder), "--id-column", "seq"]
    assert main(arguments) == 1
    said = "part-1.csv, row 1, field 'ts': event 12 has ts 2, earlier than"
    assert said in capsys.readouterr().err.splitlines()[-1]
    assert main([*arguments, "--on-error", "skip"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["b"][0]["id"] for line in captured.out.splitlines()] == [
        11,
        13,
    ]
    assert said in captured.err
    (folder / "part-1.csv").write_text("seq,type,ts\n12,A,6\n13,B,1970-01-01T00:00:09\n")
    assert main(arguments) == 1
    said = "part-1.csv, row 2, field 'ts': timestamps mix numbers and datetimes"
    assert said in capsys.readouterr().err.splitlines()[-1]
    # an error in a condition: the engine names the event just sent by its arrival number
    (folder / "part-0.csv").write_text("seq,type,ts,x\n10,A,1,1\n11,B,5,2\n")
    (folder / "part-1.csv").write_text("seq,type,ts,x\n12,A,6,3\n13,B,9,nine\n")
    condition = "PATTERN SEQ(A a, B b) WHERE b.x + 1 > a.x WITHIN 10"
    assert main(["match", condition, *arguments[2:]]) == 1  # part-1's x is text
    said = "part-1.csv, row 2: cannot compute b.x + 1 with 'nine' (str), 1 (int)"
    assert said in capsys.readouterr().err.splitlines()[-1]


def test_engine_errors_name_the_file_and_row_and_skip_covers_them(tmp_path, capsys):
    """A row whose values clash in a condition names its file and row, even after skipped
    rows (the arrival count drifts from the file's row), and --on-error skip skips it."""
    path = tmp_path / "clash.csv"
    path.write_text("type,ts,x\nA,1,1\nA,oops,2\nB,2,5\nB,3,five\nB,4,7\n")
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    options = ["--column-type", "x=string"]
    assert main(["match", query, "-i", str(path), "--on-error", "skip", *options]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["end_ts"] for line in captured.out.splitlines()] == [2, 3, 4]
    path.write_text("type,ts,x\nA,1,1\nA,oops,2\nB,2,5\nB,3,five\nB,4,7\n")
    numeric = "PATTERN SEQ(A a, B b) WHERE a.x + 1 < b.x WITHIN 10"
    assert main(["match", numeric, "-i", str(path), "--on-error", "skip", *options]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "skipped 4 malformed rows; first: " in captured.err
    # the row the engine found at fault, after a skipped row: the file's, not the arrival's
    reader = kleene.read_events(path, on_error="skip", column_types={"x": "string"})
    engine = kleene.Engine(numeric)
    located = []
    for event in reader:
        try:
            engine.send(event)
        except kleene.EventError as error:
            located.append(str(reader.locate(error)))
    assert located == [
        f"{path}, row {row}: cannot compute a.x + 1 with '1' (str), 1 (int)" for row in (3, 4, 5)
    ]
    assert main(["match", numeric, "-i", str(path), "--column-type", "x=string"]) == 1
    assert "row 2, field 'ts'" in capsys.readouterr().err


def test_decimal_and_binary_attributes_reach_the_output(tmp_path, capsys):
    """They crashed kleene match's JSON writer after matching succeeded."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "type": ["A", "B"],
            "ts": [1, 2],
            "price": pa.array([decimal.Decimal("2.50"), decimal.Decimal("3")], pa.decimal128(5, 2)),
            "raw": [b"\x00\xff", b"ok"],
        }
    )
    path = tmp_path / "typed.parquet"
    pq.write_table(table, path)
    assert main(["match", "PATTERN SEQ(A a, B b)", "-i", str(path)]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["a"][0]["price"] == 2.5 and found["b"][0]["price"] == 3
    assert found["a"][0]["raw"] == "AP8="


def test_match_with_the_afa_plan_takes_any_order_and_writes_a_changelog(tmp_path, capsys):
    path = tmp_path / "late.csv"
    path.write_text("type,ts\nA,1\nB,5\nC,3\n")
    query = "PATTERN SEQ(A a, B b) WHERE strict_contiguity WITHIN 10"
    assert main(["match", query, "-i", str(path), "--plan", "afa"]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line.get("retraction", False) for line in lines] == [False, True]
    assert "2 lines: 1 match, 1 withdrawn" in captured.err and "0 net" in captured.err
    # a malformed row skipped; the rows out of order are still taken, not skipped as late
    path.write_text("type,ts\nA,1\nB,xx\nB,5\nA,3\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    assert main(["match", query, "-i", str(path), "--plan", "afa", "--on-error", "skip"]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    withdrawn = sum(line.get("retraction", False) for line in lines)
    assert len(lines) - 2 * withdrawn == 2  # net: a1 b5 and a3 b5
    assert "skipped 1 malformed row" in captured.err and "late events" not in captured.err


def test_match_runs_an_afa_written_directly(tmp_path, capsys):
    """A query file in the AFA text form runs on the afa plan; kleene run refuses it."""
    afa = tmp_path / "rise.afa"
    afa.write_text(
        "AFA rise WITHIN 10\n"
        "REGISTER (n = 0)\n"
        "FINAL done\n"
        "ARC first: start -> up WHEN e.x > 0 SET n = 1\n"
        "ARC more: up -> up WHEN e.x > 0 SET n = r.n + 1\n"
        "ARC end: up -> done WHEN e.x < 0 AND r.n >= 2\n"
    )
    path = tmp_path / "ticks.csv"
    path.write_text("type,ts,x\nT,1,1\nT,2,2\nT,4,-1\nT,3,3\n")  # the 3 arrives last
    assert main(["match", str(afa), "-i", str(path)]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert lines[0]["pattern"] == "rise" and lines[0]["register"] == {"n": 2}
    assert [line.get("retraction", False) for line in lines] == [False, True, False, False]
    assert "plan afa" in captured.err
    assert main(["match", str(afa), "-i", str(path), "--non-overlapping"]) == 1
    assert "reports all its matches" in capsys.readouterr().err
    assert main(["run", str(afa), "-i", str(path), "-o", str(tmp_path / "o.jsonl")]) == 1
    assert "an AFA written directly runs with kleene match" in capsys.readouterr().err


def _ids(row, variables=("a", "b")):
    """Each variable's event ids in an output row (`Output.row`, every format's)."""
    return tuple((name, tuple(e["id"] for e in row[name])) for name in variables)


def test_match_writes_the_format_its_output_names(stocks, tmp_path, capsys):
    """JSON lines, CSV and Parquet (and gzipped JSON lines and CSV) hold the same matches;
    CSV and Parquet hold the rows kleene run writes (variables as lists of events)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    query = "PATTERN SEQ(Stock a, Stock b) WHERE [symbol] and b.price > a.price + 1 WITHIN 20"
    outputs = {name: tmp_path / name for name in ("m.jsonl", "m.csv", "m.parquet", "m.jsonl.gz")}
    outputs["m.csv.gz"] = tmp_path / "m.csv.gz"
    for path in outputs.values():
        assert main(["match", query, "-i", str(stocks), "-o", str(path)]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in outputs["m.jsonl"].read_text().splitlines()]
    expected = [_ids(m) for m in lines]
    assert expected
    packed = gzip.decompress(outputs["m.jsonl.gz"].read_bytes()).decode().splitlines()
    assert [_ids(json.loads(line)) for line in packed] == expected
    rows = pq.read_table(outputs["m.parquet"]).to_pylist()
    assert [_ids(r) for r in rows] == expected
    assert rows[0]["start_ts"] == lines[0]["start_ts"] and rows[0]["a"][0]["symbol"]
    for name in ("m.csv", "m.csv.gz"):
        table = pacsv.read_csv(outputs[name]).to_pylist()
        assert [_ids({n: json.loads(r[n]) for n in ("a", "b")}) for r in table] == expected
    assert not list(tmp_path.glob(".*partial"))


def test_match_refuses_an_unknown_output_and_leaves_no_partial_file(tmp_path, capsys):
    events = tmp_path / "e.csv"
    # matches are written a chunk at a time; the last row, past the first chunk, goes back
    rows = [f"A,{t}" for t in range(1, 6000)] + ["A,1"]
    events.write_text("type,ts\n" + "\n".join(rows) + "\n")
    query = "PATTERN SEQ(A a, A b) WITHIN 1"
    assert main(["match", query, "-i", str(events), "-o", str(tmp_path / "m.txt")]) == 1
    assert "cannot tell what to write to" in capsys.readouterr().err
    target = tmp_path / "m.jsonl"
    assert main(["match", query, "-i", str(events), "-o", str(target)]) == 1
    assert "earlier than an event before it" in capsys.readouterr().err
    assert not target.exists() and not list(tmp_path.glob(".*partial"))


def test_match_reads_gzipped_standard_input():
    csv_text = "type,ts,price\nA,1,10\nA,2,12\nB,3,11\n"
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    result = subprocess.run(
        [sys.executable, "-m", "kleene", "match", query, "-i", "-", "--format", "csv"],
        input=gzip.compress(csv_text.encode()),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    found = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [_ids(m) for m in found] == [
        (("a", (0,)), ("b", (2,))),
        (("a", (1,)), ("b", (2,))),
    ]


RULE = (
    "FROM Order AS o, Payment AS p MATCH o Followed By not p Within 10 s "
    "PARTITION BY o.order EMIT Event Unpaid(o.order)"
)


def test_match_runs_a_lead_rule(tmp_path, capsys):
    source = tmp_path / "orders.jsonl"
    rows = [("Order", 0, 1), ("Order", 1, 2), ("Payment", 5, 1)]
    source.write_text(
        "".join(json.dumps({"type": t, "ts": ts, "order": o}) + "\n" for t, ts, o in rows)
    )
    assert main(["match", RULE, "-i", str(source), "--show", "3"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {"type": "Unpaid", "ts": 11, "order": 2}
    ]
    assert "1 emitted event," in captured.err and "Unpaid {'order': 2}" in captured.err
    target = tmp_path / "unpaid.parquet"
    assert main(["match", RULE, "-i", str(source), "-o", str(target)]) == 0
    import pyarrow.parquet as pq

    assert pq.read_table(target).to_pylist() == [{"type": "Unpaid", "ts": 11, "order": 2}]


def test_explain_draws_a_rules_net(tmp_path, capsys):
    dot, png = tmp_path / "net.dot", tmp_path / "net.png"
    assert main(["explain", RULE, "--dot", str(dot), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "plan:           petri" in out and "Negation 10" in out
    assert dot.read_text().startswith("digraph petri")
    assert '"s_Payment" -> t' in dot.read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_runs_a_suite_of_the_checkout(capfd):
    arguments = ["--events", "300", "--keys", "5", "--window", "5", "--game-events", "400"]
    assert main(["bench", "lead", *arguments, "--users", "20"]) == 0
    out = capfd.readouterr().out
    assert "`python -m benchmarks lead --events 300" in out and "| Figure 2 n=" in out


def test_quiet_keeps_warnings_and_drops_the_summary(tmp_path, capsys):
    source = tmp_path / "ticks.jsonl"
    rows = [{"type": "AB"[i % 2], "ts": i, "price": i} for i in range(300)]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    query = "PATTERN SEQ(A a, B b) WHERE b.pric > a.price WITHIN 1"
    assert main(["match", query, "-i", str(source)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("kleene: the query reads b.pric, but none of the first 100 B")
    assert err[-1].startswith("kleene: 300 events, 0 matches")
    assert main(["match", query, "-i", str(source), "--quiet"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "b.pric" in err[0]  # the warning stays, the summary goes
    target = tmp_path / "gen.csv"
    assert main(["gen", "stock", "-n", "10", "-o", str(target), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_progress_has_a_total_when_the_input_says_it(tmp_path, capsys):
    source = tmp_path / "e.csv"
    source.write_text("type,ts\n" + "".join(f"A,{i}\n" for i in range(50)))
    assert (
        main(["match", "PATTERN SEQ(A a, A b) WITHIN 1", "-i", str(source), "--progress", "on"])
        == 0
    )
    assert "/50.0 [" in capsys.readouterr().err  # tqdm shows the total (and an ETA)


def test_match_writes_timed_out_partial_matches_to_their_own_file(tmp_path, capsys):
    path = tmp_path / "orders.csv"
    path.write_text("type,ts,order\nOrder,0,1\nOrder,5,2\nPayment,8,2\nOrder,30,3\n")
    query = "PATTERN SEQ(Order o, Payment p) WHERE relaxed_contiguity { [order] } WITHIN 10"
    matches, late = tmp_path / "m.jsonl", tmp_path / "late.parquet"
    args = ["match", query, "-i", str(path), "-o", str(matches), "--timeouts", str(late)]
    assert main(args) == 0
    assert "1 match, 2 timed-out partial matches" in capsys.readouterr().err
    assert [json.loads(line)["o"][0]["order"] for line in matches.open()] == [2]
    import pyarrow.parquet as pq

    rows = pq.read_table(late).to_pylist()
    assert [(r["kind"], r["deadline"], r["o"][0]["order"]) for r in rows] == [
        ("timeout", 10, 1),
        ("timeout", 40, 3),
    ]
    assert main([*args[:-2], "--timeouts", "late.txt"]) == 1
    assert "late.txt" in capsys.readouterr().err
    assert main([*args[:-2], "--timeouts", str(late), "--plan", "lazy_chain"]) == 1
    assert "does not run timed-out partial matches" in capsys.readouterr().err


def test_match_leaves_out_rows_no_variable_takes_and_says_how_many(tmp_path, capsys):
    """A Parquet folder read with an id column: rows no variable can take are left out as
    they are read (the same matches as from JSON lines, which is read whole), the report
    says how many, and a time going back after them still names its file and row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "logs"
    folder.mkdir()
    rows = [{"seq": 100 + i, "type": "AB"[i % 2], "ts": i, "x": i % 10} for i in range(400)]
    for part in range(2):
        pq.write_table(
            pa.Table.from_pylist(rows[part * 200 : part * 200 + 200]),
            folder / f"part-{part}.parquet",
        )
    (tmp_path / "all.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    query = "PATTERN SEQ(A a, B b) WHERE a.x > 5 AND b.x < 2 WITHIN 3"
    found = {}
    for source in (folder, tmp_path / "all.jsonl"):
        assert main(["match", query, "-i", str(source), "--id-column", "seq"]) == 0
        out, err = capsys.readouterr()
        found[source] = [json.loads(line) for line in out.splitlines()]
    assert found[folder] == found[tmp_path / "all.jsonl"] and found[folder]
    assert "400 events," in err  # JSON lines: read whole
    assert main(["match", query, "-i", str(folder), "--id-column", "seq"]) == 0
    # 80 A rows and 40 B rows are kept, and each file's last row (its latest time)
    assert "400 events (278 no variable can take, left out)" in capsys.readouterr().err
    rows[250]["ts"] = 7  # in the second file, after rows left out
    pq.write_table(pa.Table.from_pylist(rows[200:]), folder / "part-1.parquet")
    assert main(["match", query, "-i", str(folder), "--id-column", "seq"]) == 1
    said = "part-1.parquet, row 51, field 'ts': event 350 has ts 7, earlier than"
    assert said in capsys.readouterr().err.splitlines()[-1]


def test_match_writes_to_the_null_device_and_shows_numbers_as_written(tmp_path, capsys):
    """`-o /dev/null` times a run (it was refused for want of an extension), and --show
    prints a float to 12 significant digits, not the 0.30000000000000004 a sum holds."""
    path = tmp_path / "ticks.csv"
    path.write_text("type,ts,price\nA,0,0.1\nB,1,2\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 5 RETURN a.price + 0.2 AS p, b.price AS q"
    assert main(["match", query, "-i", str(path), "-o", os.devnull, "--show", "1"]) == 0
    out, err = capsys.readouterr()
    assert "1 match," in err
    assert "p=0.3 q=2" in out


def test_match_counts_in_words_and_shows_each_event_by_the_id_its_record_has(tmp_path, capsys):
    """ "1 match", not "1 matches"; and --show names an event as the output's record does:
    by its id column's value (a column named id takes the id's place, docs/output.md),
    not by the arrival number the event got for want of --id-column."""
    path = tmp_path / "e.csv"
    path.write_text("type,ts,id,price\nA,1,a1,10\nB,2,b1,11\n")
    out = tmp_path / "m.jsonl"
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    assert main(["match", query, "-i", str(path), "-o", str(out), "--show", "1"]) == 0
    shown, err = capsys.readouterr()
    assert "2 events, 1 match," in err
    assert "a=[a1] b=[b1]" in shown
    record = json.loads(out.read_text())
    assert [record["a"][0]["id"], record["b"][0]["id"]] == ["a1", "b1"]


def test_a_query_longer_than_a_file_name_is_read_as_a_query(tmp_path, capsys):
    """A query's text past the file system's 255 bytes a name may hold is no file name: it
    was an OSError traceback ('File name too long') where kleene asked if it named a
    folder of queries."""
    path = tmp_path / "e.csv"
    path.write_text("type,ts,price\nA,1,10\nB,2,11\n")
    where = " AND ".join(f"b.price > a.price - {n}" for n in range(30))
    query = f"PATTERN SEQ(A a, B b) WHERE {where} WITHIN 5"
    assert len(query) > 255
    assert main(["match", query, "-i", str(path)]) == 0
    assert "2 events, 1 match," in capsys.readouterr().err


def test_match_replaces_an_output_only_when_told_as_run_does(tmp_path, capsys):
    """One rule for every command: an existing output (or --timeouts file) is refused
    before anything is read, unless --overwrite."""
    events = tmp_path / "e.csv"
    events.write_text("type,ts\nA,1\nB,2\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    target = tmp_path / "m.jsonl"
    target.write_text("an earlier run's\n")
    assert main(["match", query, "-i", str(events), "-o", str(target)]) == 1
    assert f"{target} exists; pass --overwrite to replace it" in capsys.readouterr().err
    assert target.read_text() == "an earlier run's\n"
    assert main(["match", query, "-i", str(events), "-o", str(target), "--overwrite"]) == 0
    assert json.loads(target.read_text())["a"][0]["ts"] == 1
    late = tmp_path / "late.jsonl"
    late.write_text("")
    new = tmp_path / "n.jsonl"
    assert main(["match", query, "-i", str(events), "-o", str(new), "--timeouts", str(late)]) == 1
    assert f"{late} exists" in capsys.readouterr().err and not new.exists()


def test_stream_refuses_keep_open_without_available_now_before_spark(tmp_path, capsys):
    args = ["stream", "PATTERN SEQ(A a, B b) WITHIN 5", "-i", str(tmp_path), "--checkpoint"]
    args += [str(tmp_path / "ck"), "-o", str(tmp_path / "out"), "--keep-open"]
    assert main(args) == 1
    assert "--keep-open goes with --available-now" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()


def test_match_runs_several_query_files_at_once(tmp_path, capsys):
    """Each output carries its query's name (the file's); a rule's emitted events feed the
    query reading them; every format holds every query's columns."""
    (tmp_path / "rise.sase").write_text("PATTERN SEQ(A a, B b) WHERE [k] and b.x > a.x WITHIN 10")
    (tmp_path / "alarm.lead").write_text(
        "FROM A AS a, B AS b MATCH every(a Followed By b) PARTITION BY a.k "
        "EMIT Event Alarm(a.k AS k)"
    )
    (tmp_path / "twice.sase").write_text("PATTERN SEQ(Alarm p, Alarm q) WHERE [k] WITHIN 100")
    data = tmp_path / "ab.csv"
    data.write_text("type,ts,k,x\nA,1,1,1\nB,2,1,5\nA,3,1,9\nB,4,1,2\n")
    queries = [str(tmp_path / name) for name in ("rise.sase", "alarm.lead", "twice.sase")]
    assert main(["match", *queries, "-i", str(data)]) == 0
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["query"] for r in records] == ["rise", "alarm", "rise", "alarm", "twice"]
    assert records[-1]["p"][0]["id"] == "alarm#0"
    assert "5 outputs of 3 queries (rise 2, alarm 2, twice 1)" in err
    for name in ("out.csv", "out.parquet"):
        assert main(["match", *queries, "-i", str(data), "-o", str(tmp_path / name)]) == 0
    import pandas as pd

    for frame in (pd.read_csv(tmp_path / "out.csv"), pd.read_parquet(tmp_path / "out.parquet")):
        assert list(frame["query"]) == ["rise", "alarm", "rise", "alarm", "twice"]
        assert {"a", "b", "type", "ts", "k", "p", "q"} <= set(frame.columns)
        assert list(frame["type"].dropna()) == ["Alarm", "Alarm"]
    assert main(["match", str(tmp_path), "-i", str(data), "-o", str(tmp_path / "all.jsonl")]) == 0
    records = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert sorted({r["query"] for r in records}) == ["alarm", "rise", "twice"]  # the folder's
    capsys.readouterr()
    assert main(["match", str(tmp_path / "out.csv"), "-i", str(data)]) == 1  # not a query
    assert main(["match", str(tmp_path / "none"), "-i", str(data)]) == 1
    (tmp_path / "none").mkdir()
    assert main(["match", str(tmp_path / "none"), "-i", str(data)]) == 1
    assert "holds no query file" in capsys.readouterr().err
    assert main(["match", queries[0], queries[0], "-i", str(data)]) == 1
    assert "two query files are named 'rise'" in capsys.readouterr().err
    assert main(["match", *queries, "-i", str(data), "--timeouts", str(tmp_path / "t.jsonl")]) == 1
    assert "--timeouts takes one query" in capsys.readouterr().err


def test_no_matches_still_write_every_field(tmp_path):
    """An empty result is a file with the output's whole schema, not a lone column."""
    data = tmp_path / "one.csv"
    data.write_text("type,ts,k,x\nA,1,1,1\n")
    query = "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 10 RETURN a.x AS x, a.ts - a.ts > 1 AS late"
    for name in ("none.csv", "none.parquet"):
        assert main(["match", query, "-i", str(data), "-o", str(tmp_path / name)]) == 0
    assert (tmp_path / "none.csv").read_text().splitlines() == [
        '"match_id","pattern","start_ts","end_ts","key","a","b","x","late"'
    ]
    import pyarrow.parquet as pq

    schema = pq.read_schema(tmp_path / "none.parquet")
    assert schema.names == [
        "match_id",
        "pattern",
        "start_ts",
        "end_ts",
        "key",
        "a",
        "b",
        "x",
        "late",
    ]
    assert str(schema.field("late").type) == "bool"  # a condition is one, whatever the input


def test_a_broken_query_among_several_files_is_named(tmp_path, capsys):
    """`kleene match` (as `kleene run` and `kleene stream`) over a folder of query files: a
    query that does not parse is named by its file, with the line, column and caret."""
    (tmp_path / "ok.sase").write_text("PATTERN SEQ(A a, B b) WITHIN 5")
    (tmp_path / "broken.sase").write_text("PATTERN SEQ(A a, B b) WHERE a.x > WITHIN 5")
    data = tmp_path / "ab.csv"
    data.write_text("type,ts,x\nA,1,1\nB,2,2\n")
    assert main(["match", str(tmp_path), "-i", str(data)]) == 1
    err = capsys.readouterr().err
    assert "query 'broken', line 1, column 42" in err and "^" in err
