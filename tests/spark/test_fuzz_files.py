"""Damaged files through the three commands: `kleene match`, `kleene run` and `kleene
stream` give one verdict on one file (the same matches, or each an error naming the file),
and none shows a traceback.

The damage is to the files' structure (line breaks, quotes, commas, braces, text) and
bytes that are not UTF-8, made before gzip compresses them. A NUL or text after a JSON
object on its line, and a damaged gzip header, still get different verdicts from Spark's
readers, which read past them (docs/spark.md says so)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from kleene.cli import main
from tests.test_fuzz import CSV, DAMAGE, JSONL, QUERY, TEXTUAL, damaged, parquet_bytes

#: Each example starts Spark jobs: a tenth of the profile's budget.
spark_fuzz = settings(
    suppress_health_check=list(HealthCheck),
    deadline=None,
    max_examples=max(4, settings.default.max_examples // 10),
)


def _verdict(code: int, err: str, out: Path | None, names: str = "events.") -> tuple[str, object]:
    """A command's verdict: the matches as (variable, (type, ts) ...) sets, or "error"
    (after checking the error is one `kleene:` line naming the file, or `names`)."""
    assert "Traceback" not in err, err
    if code != 0:
        last = err.strip().splitlines()[-1]
        assert last.startswith("kleene: ") and names in last, last
        return ("error", None)
    rows = []
    if out is not None:
        files = sorted(out.glob("part-*")) if out.is_dir() else [out]
        rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    found = sorted(
        tuple((v, tuple((e["type"], e["ts"]) for e in row[v])) for v in ("a", "b", "c"))
        for row in rows
    )
    return ("matches", found)


def _read_past(data: bytes) -> bool:
    """Does a line hold text after a JSON object, which Spark reads past (docs/spark.md)?"""
    decoder = json.JSONDecoder()
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            _, end = decoder.raw_decode(line.lstrip())
        except ValueError:
            continue
        if line.lstrip()[end:].strip():
            return True
    return False


def _quoted_then_text(data: bytes) -> bool:
    """Does a CSV line hold text after a quoted cell's closing quote (`"a"b`), which the
    readers read apart (docs/spark.md)?"""
    for line in data.decode("utf-8", "replace").splitlines():
        for cell in re.finditer(r'(?:^|,)("(?:[^"]|"")*+"?[^,]*|[^",][^,]*)', line):
            text = cell.group(1)
            closed = text.count('"') % 2 == 0  # (an open one is an error, in every reader)
            if text.startswith('"') and closed and not re.fullmatch(r'"(?:[^"]|"")*"', text):
                return True
    return False


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet", "csv.gz", "jsonl.gz"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_kleene_run_gives_kleene_matchs_verdict_on_damaged_files(
    spark, suffix, on_error, tmp_path_factory, capsys
):
    plain = {"csv": CSV, "jsonl": JSONL}.get(suffix.removesuffix(".gz"))
    original = plain or parquet_bytes(tmp_path_factory)
    folder = tmp_path_factory.mktemp("damaged")
    count = iter(range(10**6))

    @spark_fuzz
    @given(damaged(original, TEXTUAL if plain else DAMAGE))
    def check(data: bytes) -> None:
        assume(not (suffix.startswith("jsonl") and _read_past(data)))
        assume(not (suffix.startswith("csv") and _quoted_then_text(data)))
        case = folder / str(next(count))
        case.mkdir()
        path = case / f"events.{suffix}"
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        options = ["-i", str(path), "--on-error", on_error]
        local = case / "local.jsonl"
        capsys.readouterr()
        code = main(["match", QUERY, *options, "-o", str(local)])
        err = capsys.readouterr().err
        if "send events in timestamp order" in err:  # kleene run sorts its input
            # (skipped under --on-error skip, the row left the first output behind)
            again = ["-o", str(local), "--overwrite", "--max-delay", "1000000000"]
            code = main(["match", QUERY, *options, *again])
            err = capsys.readouterr().err
        expected = _verdict(code, err, local)
        remote = case / "spark.jsonl"
        code = main(["run", QUERY, *options, "-o", str(remote), "--master", "local[1]"])
        got = _verdict(code, capsys.readouterr().err, remote)
        assert got == expected, f"{data!r}: kleene run {got}, kleene match {expected}"

    check()


#: A stream starts and stops a streaming query each example: a fiftieth of the budget.
stream_fuzz = settings(spark_fuzz, max_examples=max(2, settings.default.max_examples // 50))


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "csv.gz"])
def test_kleene_stream_gives_kleene_matchs_verdict_on_damaged_files(
    spark, suffix, tmp_path_factory, capsys
):
    """The same verdict as `kleene match`: an error naming the file, or matches, of which
    the stream may still hold back those within the watermark of the input's end (it
    stops with --available-now before time passes them)."""
    original = {"csv": CSV, "jsonl": JSONL}[suffix.removesuffix(".gz")]
    folder = tmp_path_factory.mktemp("streamed")
    count = iter(range(10**6))

    @stream_fuzz
    @given(damaged(original, TEXTUAL))
    def check(data: bytes) -> None:
        assume(not (suffix.startswith("jsonl") and _read_past(data)))
        assume(not (suffix.startswith("csv") and _quoted_then_text(data)))
        case = folder / str(next(count))
        (case / "in").mkdir(parents=True)
        path = case / "in" / f"events.{suffix}"
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        local = case / "local.jsonl"
        capsys.readouterr()
        code = main(["match", QUERY, "-i", str(path), "-o", str(local)])
        expected = _verdict(code, capsys.readouterr().err, local)
        arguments = ["stream", QUERY, "-i", str(case / "in"), "--checkpoint", str(case / "ck")]
        out = case / "out"
        options = ["--available-now", "--output-format", "json", "--watermark", "0 seconds"]
        code = main([*arguments, "-o", str(out), *options, "--master", "local[1]"])
        err = capsys.readouterr().err  # (an error names the file, or the input folder)
        if expected == ("matches", []) and "holds only empty files yet" in err:
            return  # a stream learns its columns from the files there: it asks for --schema
        verdict, found = _verdict(code, err, out if out.exists() else None, f"{case}/in")
        assert verdict == expected[0], f"{data!r}: kleene stream {verdict}, kleene match {expected}"
        if verdict == "matches":
            assert set(found) <= set(expected[1]), f"{data!r}: {found} beyond {expected[1]}"

    check()
