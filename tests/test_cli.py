"""The kleene command: match, explain, gen; messages and exit codes."""

import gzip
import json
import shutil
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import pytest

from kleene.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture
def stocks(tmp_path):
    path = tmp_path / "stocks.csv"
    assert (
        main(["gen", "stock", "--events", "3000", "--symbols", "4", "--seed", "7", "-o", str(path)])
        == 0
    )
    return path


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
    assert len(first["bindings"]["a"]) >= 3
    assert first["bindings"]["a"][0]["volume"] > 900
    assert first["bindings"]["b"][0]["volume"] < 100
    assert "3,000 events" in err and "partitions" in err
    peak = next(line for line in err.splitlines() if "peak_memory_kib" in line)
    assert int(peak.split()[-1].replace(",", "")) > 1024  # an interpreter holds a MiB at least


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
    assert json.loads(capsys.readouterr().out)["bindings"]["b"][0]["ts"] == 2


def test_match_skips_and_reports_bad_rows(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("type,ts\nA,1\nB,x\nB,3\n")
    assert main(["match", "PATTERN SEQ(A a, B b)", "-i", str(path)]) == 1
    assert "row 2, field 'ts'" in capsys.readouterr().err
    assert main(["match", "PATTERN SEQ(A a, B b)", "-i", str(path), "--on-error", "skip"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    assert "skipped 1 malformed row" in err


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


def test_bench_nfa_prints_a_table_of_the_fastest_runs(capsys):
    args = ["bench", "nfa", "--events", "600", "--predicates", "p2", "--strategies", "s3"]
    assert main([*args, "--windows", "50", "--breakdown", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| p2s3 W=50")]
    assert [row.split("|")[2].strip() for row in rows] == ["nfa (merge=False)", "nfa"]
    assert "matching" in out


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


def test_bench_window_prints_factors_over_the_plain_window(capsys):
    args = ["bench", "window", "--events", "300", "--ks", "2", "--kinds", "set"]
    assert main([*args, "--patterns", "1", "--prunings", "none", "fpc"]) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    first = rows[0]
    assert (first[1].strip(), first[2].strip(), first[-2].strip()) == (
        "Pset k=2 W=5 n=300",
        "none",
        "1.0x",
    )
    assert rows[0][4] == rows[1][4]  # the same matches
    assert int(rows[1][5].replace(",", "")) < int(rows[0][5].replace(",", ""))  # fewer calls


def test_bench_window_reads_the_real_hospital_logs(tmp_path, capsys):
    import gzip

    bpic = tmp_path / "bpic2011_hospital_events.csv.gz"
    with gzip.open(bpic, "wt") as handle:
        handle.write("case_id,activity_code,timestamp,number_of_executions\n")
        handle.write("1,370000,2005-01-03T00:00:00,1\n2,370000,2005-01-03T00:00:00,\n")
        handle.write("1,410100,2005-01-05T00:00:00,2\n")
    sepsis = tmp_path / "sepsis_events_tidy.csv"
    sepsis.write_text(
        "case_id,event_type,timestamp,value,unit,org_group,age,diagnose\n"
        "XJ,ER Registration,2013-11-07 08:18:29,,,A,90.0,C\n"
        "XJ,LacticAcid,2013-11-07 20:18:29,1.4,mmol/L,B,,\n"
        "YK,LacticAcid,2013-11-08 08:18:29,2.0,mmol/L,B,,\n"
    )
    from kleene.bench.window import hospital_log

    events = list(hospital_log(bpic, 10))
    assert [(e.type, e.ts, e.attrs["PID"]) for e in events] == [
        ("a370000", 0, "1"),
        ("a370000", 0, "2"),
        ("a410100", 2, "1"),
    ]
    events = list(hospital_log(sepsis, 2))
    assert [(e.type, e.ts, e.attrs["V"]) for e in events] == [
        ("ER Registration", 0.0, 0.0),
        ("LacticAcid", 0.5, 1.4),
    ]
    args = ["bench", "window", "--data", str(sepsis), "--events", "3", "--ks", "1"]
    assert main([*args, "--kinds", "seq", "--patterns", "1", "--prunings", "none", "f"]) == 0
    assert "| Pseq k=1 W=5 n=3 | f |" in capsys.readouterr().out
    assert main([*args[:3], str(tmp_path / "other.csv"), *args[4:]]) == 1
    assert "not a known hospital log" in capsys.readouterr().err


def test_bench_lazy_compares_the_eager_nfa_with_the_lazy_plans(tmp_path, capsys):
    plot = tmp_path / "window.png"
    args = ["bench", "lazy", "--patterns", "SEQ3", "--events", "1500", "--windows", "20", "40"]
    assert main([*args, "--plot", str(plot)]) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    assert [r[2].strip().split()[0] for r in rows] == ["nfa", "lazy_chain", "lazy_tree"] * 2
    assert rows[1][2].strip() == "lazy_chain order=IBM,MSFT,AAPL"  # the right order, rarest first
    assert len({r[4] for r in rows[:3]}) == 1  # the same matches
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_bench_lazy_changing_stream_runs_every_chain_order(capsys):
    args = ["bench", "lazy", "--experiment", "changing", "--events", "900", "--rotate", "300"]
    assert main(args) == 0
    plans = [line.split("|")[2].strip() for line in capsys.readouterr().out.splitlines()[2:]]
    assert plans[0] == "nfa" and plans[-1] == "lazy_tree"
    assert len([p for p in plans if p.startswith("lazy_chain order=")]) == 6


def test_bench_lazy_reads_nasdaq_minute_bars(tmp_path, capsys):
    """The OpenCEP NASDAQ format: SYMBOL,YYYYMMDDhhmm,open,peak,low,close,volume; the
    pattern's types are the file's symbols, rarest first for the chain."""
    lines = []
    for minute in range(60):
        for symbol, every in (("MSFT", 1), ("ORLY", 2), ("CBRL", 7)):
            if minute % every == 0:
                move = 1 if (minute // every) % 3 else -1
                stamp = f"20080201{9 + minute // 60:02d}{minute % 60:02d}"
                lines.append(f"{symbol},{stamp},10,11,9,{10 + move},100")
    bars = tmp_path / "NASDAQ_TEST.txt"
    bars.write_text("\n".join(lines) + "\n")
    args = ["bench", "lazy", "--experiment", "nasdaq", "--data", str(bars), "--windows", "10"]
    assert main([*args, "--patterns", "SEQ3", "SEQ4", "--memory"]) == 0
    captured = capsys.readouterr()
    rows = [line.split("|") for line in captured.out.splitlines()[2:]]
    assert [r[1].strip() for r in rows] == ["SEQ3 NASDAQ_TEST window=10"] * 3
    assert rows[1][2].strip() == "lazy_chain order=CBRL,ORLY,MSFT"
    assert len({r[4] for r in rows}) == 1 and int(rows[0][4]) > 0  # the same matches
    assert all(int(r[-2].replace(",", "")) > 0 for r in rows)  # peak memory, KiB
    assert "too few symbols for SEQ4" in captured.err
    bars.write_text("MSFT,200802010900,10,11,9,x,100\n")
    assert main(args) == 1
    assert "line 1, field 'close': not a number: 'x'" in capsys.readouterr().err


def test_bench_lazy_reads_daily_bars(tmp_path, capsys):
    """Daily bars (a gzipped CSV with a header): the symbols are chosen by how many days
    they trade, from the most to about 1/ratio of it; the window counts days."""
    lines = ["date,symbol,kind,open,high,low,close,volume"]
    for day in range(1, 61):
        for symbol, every in (("AAA", 1), ("BBB", 2), ("CCC", 3), ("DDD", 10), ("EEE", 30)):
            if day % every == 0:
                close = 10 + (1 if (day // every) % 3 else -1)
                when = date(2016, 1, 1) + timedelta(days=day)
                lines.append(f"{when},{symbol},stock,10,11,9,{close},5")
    bars = tmp_path / "daily.csv.gz"
    bars.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    args = ["bench", "lazy", "--experiment", "daily", "--data", str(bars), "--windows", "9"]
    assert main([*args, "--patterns", "SEQ3", "--ratios", "6"]) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    assert [r[1].strip() for r in rows] == ["SEQ3 ratio=1:10 window=9"] * 3  # the nearest it finds
    assert rows[1][2].strip() == "lazy_chain order=DDD,CCC,AAA"  # 6, 20, 60 days
    assert len({r[4] for r in rows}) == 1 and int(rows[0][4]) > 0
    assert main([*args, "--patterns", "OR4SEQ2"]) == 1
    assert "5 symbols; 8 are needed" in capsys.readouterr().err
    bars.write_bytes(gzip.compress(b"date,ticker,close\n2016-01-04,AAA,1\n"))
    assert main([*args, "--patterns", "SEQ3"]) == 1
    assert "not daily bars with columns" in capsys.readouterr().err
