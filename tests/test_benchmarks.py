"""The benchmark suites (`python -m benchmarks`): each runs and prints its stamped table."""

import gzip
from dataclasses import replace
from datetime import date, timedelta

import pytest
from benchmarks.__main__ import main
from benchmarks.harness import Result, stamp, table
from benchmarks.spark import COLUMNS as SPARK_COLUMNS


def rows(out):
    """The table's rows, split into cells (the stamp, the command and the head skipped)."""
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    return [line.split("|") for line in lines[1:]]


def test_the_report_is_stamped_with_python_machine_and_commit(capsys):
    assert main(["nfa", "--events", "200", "--predicates", "p1", "--strategies", "s2"]) == 0
    first, command = capsys.readouterr().out.splitlines()[:2]
    assert first == stamp()
    assert "Python 3." in first and "CPUs" in first and "kleene commit " in first
    assert command == "`python -m benchmarks nfa --events 200 --predicates p1 --strategies s2`"


def test_spark_table_gives_start_up_cpu_worker_memory_overhead_and_warm_rate():
    first = {"startup_s": 9.0, "worker_peak_mib": 120, "warm_events_s": 3000}
    first |= {"cpu_us_event": 6.0, "warm_cpu_us_event": 4.5}
    results = [
        Result("keyed", "in-process", 1000, 2.0, 3, {"cpu_us_event": 2.0}),
        Result("keyed", "spark local[2]", 1000, 0.5, 3, first),
        Result("keyed", "spark local[1]", 1000, 2.5, 3, {"startup_s": 8.0, "worker_peak_mib": 90}),
    ]
    lines = table(results, SPARK_COLUMNS, "in-process").splitlines()
    assert lines[0] == (
        "| setting | plan | events/s | matches | start-up s | CPU µs/event | CPU vs in-process "
        "| warm CPU µs/event | worker peak MiB | µs/event | overhead µs/event | warm events/s "
        "| warm vs in-process | vs in-process |"
    )
    assert lines[2] == (
        "| keyed | in-process | 500 | 3 |  | 2.00 | 1.00 |  |  | 2000.00 |  |  |  | 1.00x |"
    )
    assert lines[3] == (
        "| keyed | spark local[2] | 2,000 | 3 | 9.0 | 6.00 | 3.00 | 4.50 | 120 | 500.00 "
        "| -1500.00 | 3,000 | 6.00 | 4.00x |"
    )
    assert lines[4] == (
        "| keyed | spark local[1] | 400 | 3 | 8.0 |  |  |  | 90 | 2500.00 | +500.00 |  |  | 0.80x |"
    )


@pytest.mark.spark
def test_spark_suite_end_to_end(tmp_path, capsys):
    args = ["spark", "--events", "3000", "--keys", "5", "--cores", "1", "--queries", "keyed"]
    assert main([*args, "--work", str(tmp_path)]) == 0
    in_process, spark = rows(capsys.readouterr().out)
    assert in_process[2].strip() == "in-process"
    assert spark[2].strip().startswith("spark local[1] (by symbol)")
    assert in_process[4] == spark[4]  # the same matches


@pytest.mark.spark
def test_rules_on_spark_in_one_job_and_a_job_a_rule(capsys):
    """The rules suite's Spark arm: every rule's count in one job equals a job a rule's
    and in-process (the suite raises otherwise)."""
    assert main(["rules", "--events", "2000", "--rules", "4", "--inputs", "spark"]) == 0
    apart, together = rows(capsys.readouterr().out)
    assert apart[1].strip() == together[1].strip() == "spark, 2,000 ticks, 4 rules"
    assert (apart[2].strip(), together[2].strip()) == ("separate runs", "one engine")
    assert apart[4] == together[4]


def test_bench_nfa_prints_a_table_of_the_fastest_runs(capsys):
    args = ["nfa", "--events", "600", "--predicates", "p2", "--strategies", "s3"]
    assert main([*args, "--windows", "50", "--breakdown", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    found = [row for row in rows(out) if row[1].strip() == "p2s3 W=50"]
    assert [row[2].strip() for row in found] == ["nfa merge=False", "nfa"]
    assert "| matching | vs nfa merge=False |" in out


def test_bench_window_prints_factors_over_the_plain_window(capsys):
    args = ["window", "--events", "300", "--ks", "2", "--kinds", "set"]
    assert main([*args, "--patterns", "1", "--prunings", "none", "fpc"]) == 0
    plain, pruned = rows(capsys.readouterr().out)
    assert (plain[1].strip(), plain[2].strip(), plain[-2].strip()) == (
        "Pset k=2 W=5 n=300",
        "none",
        "1.00x",
    )
    assert plain[4] == pruned[4]  # the same matches
    assert int(pruned[5].replace(",", "")) < int(plain[5].replace(",", ""))  # fewer calls


def test_bench_window_counts_bytecodes_an_event_in_all_and_in_the_send_loop(capsys):
    args = ["window", "--events", "300", "--ks", "2", "--kinds", "seq", "--patterns", "1"]
    assert main([*args, "--prunings", "fpc", "alone", "--bytecodes"]) == 0
    out = capsys.readouterr().out
    assert "bytecodes/event | send loop/event |" in out and "vs " not in out  # no time ratio
    for row in rows(out):
        spent, loop = (float(cell.replace(",", "")) for cell in row[-3:-1])
        assert 0 < loop < spent, row


def test_bench_rules_counts_each_sides_bytecodes_an_event(capsys):
    args = ["rules", "--events", "300", "--rules", "4", "--inputs", "dicts", "--bytecodes"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "bytecodes/event |" in out and "vs " not in out  # no time ratio
    apart, together = (float(row[-2].replace(",", "")) for row in rows(out))
    assert 0 < together < apart


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
    from benchmarks.window import hospital_log

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
    args = ["window", "--data", str(sepsis), "--events", "3", "--ks", "1"]
    assert main([*args, "--kinds", "seq", "--patterns", "1", "--prunings", "none", "f"]) == 0
    assert "| Pseq k=1 W=5 n=3 | f |" in capsys.readouterr().out
    assert main([*args[:2], str(tmp_path / "other.csv"), *args[3:]]) == 1
    assert "not a known hospital log" in capsys.readouterr().err


def test_bench_lazy_compares_the_eager_nfa_with_the_lazy_plans(tmp_path, capsys):
    plot = tmp_path / "window.png"
    args = ["lazy", "--patterns", "SEQ3", "--events", "1500", "--windows", "20", "40"]
    assert main([*args, "--plot", str(plot)]) == 0
    found = rows(capsys.readouterr().out)
    assert [r[2].strip().split()[0] for r in found] == ["nfa", "lazy_chain", "lazy_tree"] * 2
    assert found[1][2].strip() == "lazy_chain order=IBM,MSFT,AAPL"  # the right order
    assert len({r[4] for r in found[:3]}) == 1  # the same matches
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_bench_lazy_changing_stream_runs_every_chain_order(capsys):
    args = ["lazy", "--experiment", "changing", "--events", "900", "--rotate", "300"]
    assert main(args) == 0
    plans = [row[2].strip() for row in rows(capsys.readouterr().out)]
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
    args = ["lazy", "--experiment", "nasdaq", "--data", str(bars), "--windows", "10"]
    assert main([*args, "--patterns", "SEQ3", "SEQ4", "--memory"]) == 0
    captured = capsys.readouterr()
    found = rows(captured.out)
    assert [r[1].strip() for r in found] == ["SEQ3 NASDAQ_TEST window=10"] * 3
    assert found[1][2].strip() == "lazy_chain order=CBRL,ORLY,MSFT"
    assert len({r[4] for r in found}) == 1 and int(found[0][4]) > 0  # the same matches
    assert all(int(r[-3].replace(",", "")) > 0 for r in found)  # peak memory, KiB
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
    args = ["lazy", "--experiment", "daily", "--data", str(bars), "--windows", "9"]
    assert main([*args, "--patterns", "SEQ3", "--ratios", "6"]) == 0
    found = rows(capsys.readouterr().out)
    assert [r[1].strip() for r in found] == ["SEQ3 ratio=1:10 window=9"] * 3  # the nearest
    assert found[1][2].strip() == "lazy_chain order=DDD,CCC,AAA"  # 6, 20, 60 days
    assert len({r[4] for r in found}) == 1 and int(found[0][4]) > 0
    assert main([*args, "--patterns", "OR4SEQ2"]) == 1
    assert "5 symbols; 8 are needed" in capsys.readouterr().err
    bars.write_bytes(gzip.compress(b"date,ticker,close\n2016-01-04,AAA,1\n"))
    assert main([*args, "--patterns", "SEQ3"]) == 1
    assert "not daily bars with columns" in capsys.readouterr().err


def test_papers_page_sets_each_claim_beside_kleenes_figure_with_both_numbers():
    from benchmarks.papers import CLAIMS, page

    dynamic = next(c for c in CLAIMS if c.figure == "Fig. 9")
    results = [
        Result("period=10", "static", 1000, 0.004, 5),
        Result("period=10", "dynamic", 1000, 0.005, 5),
        Result("period=100", "static", 1000, 0.004, 5),
        Result("period=100", "dynamic", 1000, 0.0041, 5),
    ]
    text, verdict = dynamic.finding(results)
    assert text.startswith("period=10: 0.80x (200,000 against 250,000)")
    assert verdict == "partly"  # 0.80x at d = 10 misses the paper's 0.9, d = 100 meets it
    flat = next(c for c in CLAIMS if c.figure == "Fig. 8")
    grows = [
        Result(f"n={n}", plan, n, n / rate, 1)
        for n, plan, rate in [
            (300, "none", 100),
            (300, "fpc", 1000),
            (3000, "none", 50),
            (3000, "fpc", 2000),
        ]
    ]
    assert flat.finding(grows)[1] is False  # 10x, then 40x: not flat
    lazy = next(c for c in CLAIMS if c.figure == "peak instances")
    counted = [
        Result("SEQ3", "nfa", 10, 1.0, 0, {"peak_runs": 40}),
        Result("SEQ3", "lazy_tree", 10, 1.0, 0, {"peak_runs": 4}),
        Result("AND3", "nfa", 10, 1.0, 0, {"peak_runs": 40}),
        Result("AND3", "lazy_tree", 10, 1.0, 0, {"peak_runs": 0}),
    ]
    text, verdict = lazy.finding(counted)
    assert (
        text == "SEQ3: 10.00x (40.00 against 4.00 partial matches at the peak); "
        "AND3: 40.00 against none partial matches at the peak"
    )
    assert verdict is True
    written = page([(dynamic, ("period=10: 0.80x (200,000 against 250,000)", False))], "papers")
    assert "## AFA: Chandramouli" in written and "| Fig. 9 |" in written
    assert "not reproduced" in written and dynamic.why in written
    assert "`python -m benchmarks afa --experiment dynamic" in written


def test_the_sase_claims_judge_bands_output_cost_and_merged_share():
    from benchmarks.papers import CLAIMS

    claims = {c.figure: c for c in CLAIMS if c.paper == "sase"}
    nfa, back = "nfa merge=False output=non_overlapping", "nfa_backtrack output=non_overlapping"
    banded = [
        Result(f"{query} W=500", plan, 1000, seconds, 1)
        for query, nfa_seconds, back_seconds in [("p3s3", 1.0, 1.5), ("p3*s3", 1.0, 9.0)]
        for plan, seconds in [(nfa, nfa_seconds), (back, back_seconds)]
    ]
    text, verdict = claims["Expt. 4"].finding(banded)
    assert text.startswith("p3s3 W=500: 1.50x (1,000 against 667)")
    assert verdict is True  # a near tie on p3, 9x on p3*s3
    far = [replace(r, seconds=40.0) if r.plan == back else r for r in banded]
    assert claims["Expt. 4"].finding(far)[1] is False  # 40x is outside both bands

    def built(query: str, window: int, seconds: float, matched: int) -> Result:
        return Result(f"{query} W={window}", "nfa", 1000, seconds, 1, {"matched_events": matched})

    linear = [built("p1s3", 500, 1.0, 1000), built("p1s3", 2000, 4.0, 4000)]
    text, verdict = claims["Fig. 8(c)"].finding(linear)
    assert text.startswith("p1s3: 1000000 ns a matched event at W=500")
    assert verdict is True
    worse = [built("p1s3", 500, 1.0, 1000), built("p1s3", 2000, 8.0, 4000)]
    assert claims["Fig. 8(c)"].finding(worse)[1] is False  # twice the cost a unit of output

    def steps(query: str, plan: str, window: int, per_event: float) -> Result:
        return Result(f"{query} W={window}", plan, 100, 1.0, 0, {"run_steps": per_event * 100})

    merged, apart = "nfa construct=False", "nfa merge=False construct=False"
    shares = {"p1s3": 2.0, "p2s3": 2.0, "p3s3": 20.0}
    rows = [steps(q, merged, 2000, n) for q, n in shares.items()]
    rows += [steps(q, apart, 2000, 34.0) for q in shares] + [steps("p1s3", apart, 500, 9.0)]
    text, verdict = claims["Table 3"].finding(rows)
    assert "p3s3 W=2000: 41% of the run steps saved (20.00 against 34.00" in text
    assert verdict is True and "W=500" not in text  # read at the widest window only
    rows[2] = steps("p3s3", merged, 2000, 1.0)  # p3 sharing most is not the paper's order
    assert claims["Table 3"].finding(rows)[1] is False


def test_the_afa_papers_ignorable_run_finds_one_set_of_matches_with_and_without_anchors(capsys):
    """Figure 16's run: Q1 with ignorable arcs over a ticker nine tenths Noise; the basic
    AFA and AFA+ignore find the same matches, and AFA+ignore holds fewer pmatches."""
    args = ["afa", "--experiment", "ignorable", "--events", "2000", "--shares", "0.9"]
    assert main(args) == 0
    found = {r[2].strip(): r for r in rows(capsys.readouterr().out)}
    assert list(found) == ["afa", "afa+ignore", "afa, 10% late"]
    assert found["afa"][4] == found["afa+ignore"][4] and int(found["afa"][4]) > 0
    peak = {plan: int(found[plan][6].replace(",", "")) for plan in ("afa", "afa+ignore")}
    assert peak["afa+ignore"] < peak["afa"]


def test_the_afa_papers_peers_find_the_afas_matches(capsys):
    """Figure 8's matchers written for the comparison (CAN, IPM), AFA+O and AFA+ignore
    find the matches the AFA finds (the suite raises otherwise), and the claim reads each
    against the AFA, and the CAN against AFA+ignore, which runs it."""
    from benchmarks.papers import CLAIMS

    args = ["afa", "--experiment", "peers", "--events", "3000", "--window", "300"]
    assert main(args) == 0
    found = rows(capsys.readouterr().out)
    assert [r[2].strip() for r in found] == ["afa", "afa+O", "afa+ignore", "CAN", "IPM"]
    assert len({r[4] for r in found}) == 1 and int(found[0][4].replace(",", "")) > 0
    peers = next(c for c in CLAIMS if c.figure == "Fig. 8" and c.paper == "afa")
    results = [
        Result("Q1", plan, 1000, seconds, 5)
        for plan, seconds in [
            ("afa", 1.0),
            ("afa+O", 0.9),
            ("afa+ignore", 1.1),
            ("CAN", 1.3),
            ("IPM", 5.0),
        ]
    ]
    text, verdict = peers.finding(results)
    assert text == (
        "Q1, against afa: afa+O 1.11x (1,111 against 1,000); afa+ignore 0.91x (909 against "
        "1,000); IPM 0.20x (200 against 1,000); CAN against afa+ignore: 0.85x (769 against 909)"
    )
    assert verdict is True
    faster = [replace(r, seconds=0.5) if r.plan == "IPM" else r for r in results]
    assert peers.finding(faster)[1] == "partly"  # an IPM faster than the AFA
