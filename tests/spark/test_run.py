"""kleene run: files in, matches out, the same as kleene match on the same file."""

import gzip
import io
import json
import os
import re
import sys

import pytest

import kleene
import kleene.spark as kleene_spark
from kleene.cli import main

QUERY = (
    "PATTERN SEQ(Stock a, Stock+ b[], Stock c) WHERE skip_till_next_match { [symbol] and "
    "a.volume > 900 and b[i].price > b[i-1].price and c.price < b[b.len].price } WITHIN 30"
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    paths = {}
    for suffix in ("csv", "jsonl", "parquet"):
        paths[suffix] = folder / f"stocks.{suffix}"
        assert (
            main(
                [
                    "gen",
                    "stock",
                    "-n",
                    "1500",
                    "--symbols",
                    "5",
                    "--seed",
                    "2",
                    "-o",
                    str(paths[suffix]),
                ]
            )
            == 0
        )
    return paths


def local_keys(path):
    matches = kleene.match(QUERY, kleene.read_events(path))
    return {tuple((n, ids) for n, ids in m.ids().items()) for m in matches}


def spark_keys(rows):
    return {tuple((n, tuple(e["id"] for e in row[n])) for n in ("a", "b", "c")) for row in rows}


@pytest.mark.parametrize("source", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("target", ["parquet", "jsonl", "csv"])
def test_round_trip(spark, inputs, tmp_path, source, target, capsys):
    out = tmp_path / f"matches.{target}"
    assert (
        main(["run", QUERY, "-i", str(inputs[source]), "-o", str(out), "--master", "local[2]"]) == 0
    )
    err = capsys.readouterr().err
    assert "1,500 events read" in err and "grouped by symbol" in err
    if target == "parquet":
        rows = spark.read.parquet(str(out)).collect()
    elif target == "jsonl":
        rows = [
            json.loads(line)
            for part in sorted(out.glob("part-*"))
            for line in part.read_text().splitlines()
        ]
    else:
        frame = spark.read.option("header", True).csv(str(out))
        rows = [{n: json.loads(r[n]) for n in ("a", "b", "c")} for r in frame.collect()]
    assert spark_keys(rows) == local_keys(inputs[source])
    assert f" {kleene.compile(QUERY).output.counted(len(rows))} in " in err


def test_show_overwrite_and_errors(spark, inputs, tmp_path, capsys):
    out = tmp_path / "m.parquet"
    args = ["run", QUERY, "-i", str(inputs["parquet"]), "-o", str(out), "--show", "2"]
    assert main(args) == 0
    shown = capsys.readouterr().out.splitlines()
    assert len(shown) == 2 and shown[0].startswith("  1. ")
    assert main(args) == 1
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    capsys.readouterr()
    counted = ["run", QUERY, "-i", str(inputs["parquet"]), "-o", os.devnull]
    assert main(counted) == 0  # to time a run: counted, not written (it was refused)
    said = capsys.readouterr().err
    assert re.search(r"[1-9][\d,]* matches", said), said
    assert (
        main(
            [
                "run",
                "PATTERN SEQ(Stock a) WHERE a.sector = 'x'",
                "-i",
                str(inputs["csv"]),
                "-o",
                str(tmp_path / "x.parquet"),
            ]
        )
        == 1
    )
    assert "no column 'sector'" in capsys.readouterr().err
    assert main(["run", QUERY, "-i", str(inputs["csv"]), "-o", str(tmp_path / "x.txt")]) == 1
    assert "cannot tell what to write to" in capsys.readouterr().err


def test_gzip_and_standard_input(spark, inputs, tmp_path, monkeypatch, capsys):
    """kleene run reads what kleene match reads: a .gz file, and standard input (copied to a
    local file); a gzip file not named .gz is refused (Spark tells compression by name)."""
    packed = gzip.compress(inputs["csv"].read_bytes())
    named = tmp_path / "stocks.csv.gz"
    named.write_bytes(packed)
    out = tmp_path / "from_gz.jsonl.gz"
    assert main(["run", QUERY, "-i", str(named), "-o", str(out), "--master", "local[2]"]) == 0
    rows = [
        json.loads(line)
        for part in sorted(out.glob("part-*.gz"))
        for line in gzip.decompress(part.read_bytes()).decode().splitlines()
    ]
    assert spark_keys(rows) == local_keys(inputs["csv"])
    stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(packed)))
    monkeypatch.setattr(sys, "stdin", stdin)
    out = tmp_path / "from_stdin.parquet"
    args = ["run", QUERY, "-i", "-", "--format", "csv", "-o", str(out), "--master", "local[2]"]
    assert main(args) == 0
    assert spark_keys(spark.read.parquet(str(out)).collect()) == local_keys(inputs["csv"])
    unnamed = tmp_path / "stocks.csv"
    unnamed.write_bytes(packed)
    assert main(["run", QUERY, "-i", str(unnamed), "-o", str(tmp_path / "x.parquet")]) == 1
    assert "is gzip-compressed" in capsys.readouterr().err


def test_max_delay_on_a_disordered_file(spark, tmp_path, capsys):
    """kleene run and kleene match agree on a file whose rows are out of order, and both
    say how many late rows they dropped."""
    rows = ["type,ts,symbol", "A,1,x", "B,5,x", "A,2,x", "B,9,x", "A,3,x", "B,10,x"]
    path = tmp_path / "disordered.csv"
    path.write_text("\n".join(rows) + "\n")
    query = "PATTERN SEQ(A a, B b) WHERE [symbol]"
    assert main(["match", query, "-i", str(path), "--max-delay", "3"]) == 0
    captured = capsys.readouterr()
    local = [json.loads(line) for line in captured.out.splitlines()]
    assert "dropped 1 late events" in captured.err  # A at 3 after B at 9
    out = tmp_path / "m.jsonl"
    args = [
        "run",
        query,
        "-i",
        str(path),
        "-o",
        str(out),
        "--max-delay",
        "3",
        "--master",
        "local[2]",
    ]
    assert main(args) == 0
    assert "dropped 1 late rows" in capsys.readouterr().err
    found = [
        json.loads(line) for part in out.glob("part-*") for line in part.read_text().splitlines()
    ]
    pairs = {(m["a"][0]["ts"], m["b"][0]["ts"]) for m in local}
    assert pairs == {(a, b) for a in (1, 2) for b in (5, 9, 10)}
    assert {(m["a"][0]["ts"], m["b"][0]["ts"]) for m in found} == pairs


def test_kleene_run_with_the_afa_plan(spark, tmp_path, capsys):
    """kleene run --plan afa on a file whose rows are out of order: Spark sorts them, the
    afa plan finds kleene match --plan afa's net matches."""
    rows = ["type,ts,symbol", "A,1,x", "B,5,x", "A,2,x", "B,9,x", "C,6,x"]
    path = tmp_path / "disordered.csv"
    path.write_text("\n".join(rows) + "\n")
    query = "PATTERN SEQ(A a, NOT(C c), B b) WHERE [symbol] WITHIN 10"
    assert main(["match", query, "-i", str(path), "--plan", "afa"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sum(bool(line.get("retraction")) for line in lines) == 2  # the late C at 6
    held: list = []
    for line in lines:
        pair = (line["a"][0]["ts"], line["b"][0]["ts"])
        if line.get("retraction"):
            held.remove(pair)
        else:
            held.append(pair)
    assert sorted(held) == [(1, 5), (2, 5)]  # C at 6 spoils the pairs with B at 9
    out = tmp_path / "m.jsonl"
    args = ["run", query, "-i", str(path), "-o", str(out), "--plan", "afa", "--master", "local[2]"]
    assert main(args) == 0
    assert "plan afa" in capsys.readouterr().err
    found = [
        json.loads(line) for part in out.glob("part-*") for line in part.read_text().splitlines()
    ]
    assert sorted((m["a"][0]["ts"], m["b"][0]["ts"]) for m in found) == [(1, 5), (2, 5)]


def test_a_worker_error_is_one_line(spark, tmp_path, capsys):
    """A row without a timestamp fails in a Python worker; the user reads kleene's line,
    naming the file and row, not Spark's Java and Python traces (those come with --verbose)."""
    events = tmp_path / "events.csv"
    events.write_text("ts,type,k\n2024-01-01 00:00:00,A,k1\n,B,k1\n2024-01-01 00:00:09,B,k1\n")
    query = "PATTERN SEQ(A a, B b) WHERE [k] WITHIN 1 min"
    arguments = ["run", query, "-i", str(events), "--master", "local[2]"]
    assert main([*arguments, "-o", str(tmp_path / "out.parquet")]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"kleene: {events}, row 2, field 'ts': the timestamp is missing "
        "(--on-error skip drops such rows)"
    )
    with pytest.raises(Exception, match="the timestamp is missing"):
        main([*arguments, "-o", str(tmp_path / "again.parquet"), "--verbose"])


def test_a_nan_timestamp_gets_the_verdict_kleene_match_gives(spark, tmp_path, capsys):
    """Spark reads `NaN` as a number: the job's time range leaves it to the worker, which
    names the row as `kleene match` does (and drops it under --on-error skip)."""
    events = tmp_path / "nan.csv"
    events.write_text("type,ts,x\nA,1,1\nB,NaN,2\nA,3,0\nB,4,5\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    verdict = f"kleene: {events}, row 2, field 'ts': 'NaN' is neither a number nor an ISO 8601 time"
    assert main(["match", query, "-i", str(events)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == verdict
    arguments = ["run", query, "-i", str(events), "--master", "local[2]", "--overwrite"]
    assert main([*arguments, "-o", str(tmp_path / "out.parquet")]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(verdict)
    out = tmp_path / "skipped.jsonl"
    assert main([*arguments, "-o", str(out), "--on-error", "skip"]) == 0
    found = [line for part in out.glob("part-*") for line in part.read_text().splitlines()]
    assert len(found) == 2  # a1 b4 and a3 b4


def test_a_value_clash_in_a_worker_names_the_row(spark, tmp_path, capsys):
    """A condition that cannot compute on a row's values fails in a worker, which knows no
    file row: kleene finds the row in-process and names it."""
    events = tmp_path / "clash.csv"
    events.write_text("type,ts,x\nA,1,a\nA,2,b\nB,3,c\nB,4,d\n")
    query = "PATTERN SEQ(A a, B b) WHERE a.x + 1 < b.x WITHIN 10"
    arguments = ["run", query, "-i", str(events), "--master", "local[1]"]
    assert main([*arguments, "-o", str(tmp_path / "out.parquet")]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"kleene: {events}, row 3: cannot compute a.x + 1 with 'a' (str), 1 (int)"
    )


def test_kleene_run_with_a_lead_rule(spark, tmp_path, capsys):
    rule = (
        "FROM Order AS o, Payment AS p MATCH o Followed By not p Within 10 s "
        "PARTITION BY o.order EMIT Event Unpaid(o.order)"
    )
    source = tmp_path / "orders.jsonl"
    rows = [("Order", 0, 1), ("Order", 1, 2), ("Payment", 5, 1)]
    source.write_text(
        "".join(json.dumps({"type": t, "ts": ts, "order": o}) + "\n" for t, ts, o in rows)
    )
    out = tmp_path / "unpaid.jsonl"
    args = ["run", rule, "-i", str(source), "-o", str(out), "--master", "local[2]", "--show", "2"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "1 emitted event in " in captured.err and "Unpaid {'order': 2}" in captured.out
    written = [json.loads(line) for part in sorted(out.glob("part-*")) for line in part.open()]
    assert written == [{"type": "Unpaid", "ts": 11, "key": {"order": "2"}, "order": 2}]


def test_kleene_run_refuses_epoch_milliseconds_in_a_window_of_minutes(spark, tmp_path, capsys):
    source = tmp_path / "ticks.jsonl"
    rows = [{"type": "A", "ts": 1_700_000_000_000 + i * 60_000} for i in range(3)]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    query = "PATTERN SEQ(A a, A b) WITHIN 10 min"
    out = tmp_path / "out.jsonl"
    assert main(["run", query, "-i", str(source), "-o", str(out), "--master", "local[2]"]) == 1
    err = capsys.readouterr().err
    assert "looks like epoch milliseconds" in err and "--ts-unit ms" in err
    args = ["run", query, "-i", str(source), "-o", str(out), "--ts-unit", "ms", "--overwrite"]
    assert main(args) == 0


def test_kleene_run_prints_kleene_lines_not_sparks(tmp_path):
    """Spark's start-up lines (its log4j profile, its default log level, native-library
    warnings) stay out of a run's output: only errors from Spark's log."""
    import subprocess

    source = tmp_path / "orders.jsonl"
    source.write_text(json.dumps({"type": "Order", "ts": 0, "order": 1}) + "\n")
    rule = "FROM Order AS o MATCH o PARTITION BY o.order EMIT Event Seen(o.order)"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kleene",
            "run",
            rule,
            "-i",
            str(source),
            "-o",
            str(tmp_path / "o.jsonl"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "1 emitted event in " in done.stderr
    for noise in ("log4j", "Setting default log level", "NativeCodeLoader", " WARN "):
        assert noise not in done.stderr
    # nor the JVM's notice of the module Spark 4 adds, which no flag silences
    others = [line for line in done.stderr.splitlines() if not line.startswith("kleene: ")]
    assert others == []


def test_kleene_run_checks_the_columns_before_spark_starts(tmp_path, capsys, monkeypatch):
    """The same error as kleene match, before any Spark session: starting one fails here."""
    import kleene.spark

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(kleene.spark, "spark_session", no_spark)
    source = tmp_path / "e.csv"
    source.write_text("type,ts,price\nA,1,10\nB,2,11\n")
    query = "PATTERN SEQ(A a, B b) WHERE b.pric > a.price WITHIN 10"
    assert main(["run", query, "-i", str(source), "-o", str(tmp_path / "o.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "no column 'pric'; the columns are type, ts, price" in err


def test_kleene_run_reads_iso_text_timestamps_as_kleene_match_does(spark, tmp_path, capsys):
    source = tmp_path / "iso.jsonl"
    rows = [
        {"type": "A", "ts": "2026-01-01T00:00:00Z", "x": 1},
        {"type": "B", "ts": "2026-01-01T00:00:05Z", "x": 2},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    query = "PATTERN SEQ(A a, B b) WITHIN 1 min"
    assert len(kleene.match(query, kleene.read_events(source))) == 1
    out = tmp_path / "out.jsonl"
    assert main(["run", query, "-i", str(source), "-o", str(out), "--master", "local[2]"]) == 0
    assert "1 match in " in capsys.readouterr().err


def test_kleene_run_reads_csv_as_strictly_as_kleene_match(spark, tmp_path, capsys):
    """Spark's permissive CSV reader kept a row with an extra field (and
    found a match kleene match does not); now it is an error, or dropped under skip."""
    source = tmp_path / "extra.csv"
    source.write_text("type,ts,x\nA,1,1\nB,2,2,extra\nB,3,3\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    out = tmp_path / "out.jsonl"
    assert main(["run", query, "-i", str(source), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "a row does not have the header's fields: B,2,2,extra" in err
    assert "Traceback" not in err
    local = kleene.match(query, kleene.read_events(source, on_error="skip"))
    args = ["run", query, "-i", str(source), "-o", str(out), "--on-error", "skip", "--overwrite"]
    assert main(args) == 0
    assert f" {kleene.compile(query).output.counted(len(local))} in " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # one bad value makes Spark read the column of numbers as text
        ("type,ts,x\nA,1,1\nB,zz,2\nB,3,3\n", "row 2, field 'ts': 'zz' is neither a number"),
        (
            "type,ts,x\nA,2024-01-01T00:00:01,1\nB,2024-01-01T00:00:02,2\nB,nope,3\n",
            "row 3, field 'ts': 'nope' is neither a number",
        ),
        ("type,ts,x\nA,1,1\nB,2024-01-01T00:00:02,2\n", "row 2, field 'ts': timestamps mix"),
    ],
)
def test_kleene_run_names_a_timestamp_that_is_not_one(spark, tmp_path, capsys, text, said):
    """A `ts` value that is neither a number nor an ISO 8601 time failed the job with
    Spark's cast error and trace, naming a good value; now kleene names the file, field and
    value (and the row, found in-process), or skips and counts the row as kleene match
    does, with the same matches."""
    source = tmp_path / "times.csv"
    source.write_text(text)
    query = "PATTERN SEQ(A a, B b) WITHIN 10"
    out = tmp_path / "out.jsonl"
    assert main(["run", query, "-i", str(source), "-o", str(out), "--master", "local[2]"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"kleene: {source}, {said}")
    assert "Traceback" not in err
    assert "CAST_INVALID_INPUT" not in err
    if "mix" in said:
        return
    local = kleene.match(query, kleene.read_events(source, on_error="skip"))
    args = ["run", query, "-i", str(source), "-o", str(out), "--on-error", "skip"]
    assert main([*args, "--master", "local[2]", "--overwrite"]) == 0
    err = capsys.readouterr().err
    assert f" {kleene.compile(query).output.counted(len(local))} in " in err
    assert "skipped 1 row without timestamp or type, or with a timestamp that is not one" in err


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_kleene_run_refuses_an_unclosed_quote_as_kleene_match_does(
    spark, tmp_path, capsys, on_error
):
    """Spark read a CSV line whose quote never closes as if it closed at the line's end
    (4 events and 3 matches, where `kleene match` refuses the file): now `kleene run`
    gives `kleene match`'s verdict, whatever --on-error says."""
    events = tmp_path / "open.csv"
    events.write_text('type,ts,x\nA,1,1\nB,2,"2\nA,3,0\nB,4,5\n')
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5"
    verdict = f"kleene: {events}, row 2, field 'x': a quote opened in this cell is not closed"
    assert main(["match", query, "-i", str(events), "--on-error", on_error]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(verdict)
    arguments = ["run", query, "-i", str(events), "--master", "local[1]", "--on-error", on_error]
    assert main([*arguments, "-o", str(tmp_path / "out.jsonl")]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(verdict)


def test_kleene_run_reads_quotes_inside_quotes_as_kleene_match_does(spark, tmp_path, capsys):
    """A quote inside a quoted cell is written twice; Spark's own default took a backslash
    for it, and read `"a""b"` as that whole text, quotes and all."""
    events = tmp_path / "quotes.csv"
    events.write_text('type,ts,x\nA,1,"say ""hi"", then go"\nB,2,"a""b"\n')
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    out = tmp_path / "out.jsonl"
    assert main(["run", query, "-i", str(events), "-o", str(out), "--master", "local[1]"]) == 0
    [row] = [
        json.loads(line) for part in out.glob("part-*") for line in part.read_text().splitlines()
    ]
    [local] = kleene.match(query, kleene.read_events(events))
    assert row["a"][0]["x"] == local.bindings["a"][0]["x"] == 'say "hi", then go'
    assert row["b"][0]["x"] == local.bindings["b"][0]["x"] == 'a"b'


@pytest.mark.parametrize("slices", [None, "1"])
def test_a_column_with_a_dot_in_its_name_reaches_the_workers(spark, tmp_path, capsys, slices):
    """Spark read `10.5` in a column's name as a struct's field and failed the job (so
    any such header, `px.usd`, failed kleene run); such columns now travel to the workers
    under another name, keyed or in time slices, and come out under their own."""
    events = tmp_path / "dotted.csv"
    events.write_text("type,ts,.k,px.usd\nA,1,x,1.5\nB,2,x,2.5\nA,3,y,0.5\nB,4,y,3.5\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 5"
    out = tmp_path / "out.jsonl"
    extra = [] if slices is None else ["--slices", slices]
    assert (
        main(["run", query, "-i", str(events), "-o", str(out), "--master", "local[1]", *extra]) == 0
    )
    rows = [
        json.loads(line) for part in out.glob("part-*") for line in part.read_text().splitlines()
    ]
    found = sorted((r["a"][0]["px.usd"], r["a"][0][".k"], r["b"][0]["px.usd"]) for r in rows)
    local = kleene.match(query, kleene.read_events(events))
    expected = sorted(
        (m.bindings["a"][0]["px.usd"], m.bindings["a"][0][".k"], m.bindings["b"][0]["px.usd"])
        for m in local
    )
    assert found == expected == [(0.5, "y", 3.5), (1.5, "x", 2.5), (1.5, "x", 3.5)]


def test_an_attribute_no_json_line_holds_is_absent_as_for_kleene_match(spark, tmp_path, capsys):
    """JSON lines have no schema: Spark's refusal of a query reading an attribute no line
    holds gave another verdict than kleene match (whose events lack it)."""
    events = tmp_path / "events.jsonl"
    lines = [{"type": "A", "ts": 1, "p": 1}, {"type": "B", "ts": 2}, {"type": "B", "ts": 3}]
    events.write_text("".join(json.dumps(line) + "\n" for line in lines))
    query = "PATTERN SEQ(A a, B b) WHERE b.q > a.p OR a.p > 0 WITHIN 5"
    local = kleene.match(query, kleene.read_events(events))
    out = tmp_path / "out.jsonl"
    assert main(["run", query, "-i", str(events), "-o", str(out), "--master", "local[1]"]) == 0
    rows = [
        json.loads(line) for part in out.glob("part-*") for line in part.read_text().splitlines()
    ]
    assert len(rows) == len(local) == 2
    assert "no line holds 'q': no event has it" in capsys.readouterr().err


def test_kleene_run_writes_timed_out_partial_matches_to_their_own_output(spark, tmp_path, capsys):
    """As `kleene match --timeouts FILE`: the partial matches whose window closed first go
    to their own output, the matches to theirs (one Spark job, read once)."""
    path = tmp_path / "orders.csv"
    path.write_text("type,ts,order\nOrder,0,1\nOrder,5,2\nPayment,8,2\nOrder,30,3\n")
    query = "PATTERN SEQ(Order o, Payment p) WHERE relaxed_contiguity { [order] } WITHIN 10"
    matches, late = tmp_path / "m.jsonl", tmp_path / "late.parquet"
    args = ["run", query, "-i", str(path), "-o", str(matches), "--master", "local[1]"]
    assert main([*args, "--timeouts", str(late)]) == 0
    assert "1 match, 2 timed-out partial matches" in capsys.readouterr().err
    rows = [json.loads(line) for part in matches.glob("part-*") for line in part.open()]
    assert [r["o"][0]["order"] for r in rows] == [2]
    assert "kind" not in rows[0]
    found = spark.read.parquet(str(late)).collect()
    assert sorted((r["kind"], r["o"][0]["order"]) for r in found) == [
        ("timeout", 1),
        ("timeout", 3),
    ]
    local = kleene.match(query, kleene.read_events(path), timeouts=True)
    assert len([m for m in local if isinstance(m, kleene.Timeout)]) == len(found)
    assert main([*args[:-2], "-o", str(tmp_path / "n.jsonl"), "--timeouts", "late.txt"]) == 1
    assert "late.txt" in capsys.readouterr().err


def test_kleene_run_runs_several_query_files_in_one_job(
    spark, inputs, tmp_path, capsys, monkeypatch
):
    """Several query files (or a folder of them) in one Spark job, each output row named by
    its query's file, each query's rows those kleene match finds; a rule reading another's
    emitted events, a SQL statement beside others and --timeouts are refused before Spark
    starts."""
    folder = tmp_path / "queries"
    folder.mkdir()
    (folder / "rally.sase").write_text(QUERY)
    (folder / "loud.lead").write_text(
        "FROM Stock AS s MATCH every(s.filter(s.volume > 995)) PARTITION BY s.symbol "
        "EMIT Event Loud(s.price AS price)"
    )
    out = tmp_path / "all.jsonl"
    args = ["run", str(folder), "-i", str(inputs["parquet"]), "-o", str(out), "--show", "3"]
    assert main(args) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for part in sorted(out.glob("part-*")) for line in part.open()]
    assert {row["query"] for row in rows} == {"rally", "loud"}
    rally = [row for row in rows if row["query"] == "rally"]
    assert spark_keys(rally) == local_keys(inputs["parquet"])
    loud = kleene.match((folder / "loud.lead").read_text(), kleene.read_events(inputs["parquet"]))
    assert sorted(r["ts"] for r in rows if r["query"] == "loud") == sorted(e.ts for e in loud)
    assert f"{len(rows):,} outputs of 2 queries" in captured.err
    shown = captured.out.splitlines()
    assert len(shown) == 3 and all(re.match(r" +\d\. (rally|loud): ", line) for line in shown)

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(kleene_spark, "spark_session", no_spark)
    (folder / "twice.sase").write_text("PATTERN SEQ(Loud a, Loud b) WITHIN 50")
    again = ["run", str(folder), "-i", str(inputs["parquet"]), "-o", str(tmp_path / "x.jsonl")]
    assert main(again) == 1
    assert "'twice' reads the events 'loud' emits" in capsys.readouterr().err
    (folder / "twice.sase").unlink()
    assert main([*again, "--timeouts", str(tmp_path / "t.jsonl")]) == 1
    assert "--timeouts takes one query" in capsys.readouterr().err
