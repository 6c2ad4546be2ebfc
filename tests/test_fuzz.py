"""Fuzzing: random queries from the grammars, mutated queries and mutated files.

Whatever goes in, only kleene's own errors come out (a `KleeneError`: a positioned
`PatternSyntaxError` or `PatternError`, a `PlanError`, an `EventError` naming the file), and
nothing hangs. The CI profile runs a small budget; KLEENE_HYPOTHESIS=thorough a large one.
"""

from __future__ import annotations

import gzip
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib.resources import files

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark

import kleene
from kleene.io.readers import csv_files

CASES = sorted(p for p in (files("kleene").parent.parent / "tests" / "cases").iterdir())

#: Each example must finish within this many seconds: a hang is a failure, not a stall.
LIMIT = 20


@contextmanager
def bounded(seconds: int = LIMIT) -> Iterator[None]:
    """Fail, instead of hanging, when the block runs longer than `seconds`."""

    def stop(signum: int, frame: object) -> None:
        raise AssertionError(f"no answer within {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def texts(grammar: str, names: list[str], numbers: list[str]) -> st.SearchStrategy[str]:
    """Texts the grammar derives (hypothesis.extra.lark), with spaces around keywords and
    names so the tokens stay apart, names and numbers drawn from small sets."""
    source = files(f"kleene.language.{grammar}").joinpath("grammar.lark")
    lark = Lark(source.read_text(encoding="utf-8"))
    explicit: dict[str, st.SearchStrategy[str]] = {}
    for terminal in lark.terminals:
        words = _keywords(terminal.pattern.value)
        if words:
            explicit[terminal.name] = st.sampled_from(words).map(lambda word: f" {word} ")
    explicit["NAME"] = st.sampled_from(names).map(lambda name: f" {name} ")
    for number in ("NUMBER", "INT"):
        explicit[number] = st.sampled_from(numbers).map(lambda n: f" {n} ")
    if "STRATEGY" in explicit or any(t.name == "STRATEGY" for t in lark.terminals):
        strategies = ["strict_contiguity", "skip_till_next_match", "skip_till_any_match"]
        explicit["STRATEGY"] = st.sampled_from(strategies).map(lambda s: f" {s} ")
    explicit["COMMENT"] = st.just(" -- a comment\n")
    return from_lark(lark, explicit=explicit)


def _keywords(pattern: str) -> list[str]:
    """The words a keyword terminal stands for: `and`, or the regex `(first|last)(?=...)`
    read as its alternatives ([] when the terminal is not made of words)."""
    body = re.sub(r"\(\?[=!][^)]*\)+$", "", pattern).replace("\\s+", " ")
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    words = body.split("|")
    return words if all(re.fullmatch(r"\w+( \w+)?", word) for word in words) else []


def compiled(text: str) -> tuple[kleene.Plan | None, kleene.KleeneError | None]:
    """The compiled query, or the kleene error it gets (any other error fails the test)."""
    try:
        return kleene.compile(text), None
    except kleene.KleeneError as error:
        return None, error


def assert_positioned(error: kleene.KleeneError | None) -> None:
    """A query's error says where: line, column and a caret under the place."""
    if isinstance(error, kleene.PatternSyntaxError | kleene.PatternError):
        assert re.match(r"line \d+, column \d+: ", str(error)), error
        assert "^" in str(error), error


SASE_NAMES = ["A", "B", "C", "a", "b", "c", "x", "i", "len", "sum", "abs", "s", "min"]
STREAM = [
    {"type": t, "ts": ts, "x": x}
    for ts, (t, x) in enumerate([("A", 1), ("B", 2), ("C", 3), ("B", 0), ("A", 5), ("C", 1)])
]

fuzz = settings(suppress_health_check=list(HealthCheck), deadline=None)
#: Deriving LEAD rules is slow in hypothesis.extra.lark: a fifth of the profile's budget.
fuzz_rules = settings(fuzz, max_examples=max(10, settings.default.max_examples // 5))


@fuzz
@given(texts("sase", SASE_NAMES, ["0", "1", "2.5", "10", "1e3"]))
def test_queries_the_grammar_derives_compile_and_run_or_say_why(text):
    with bounded():
        plan, error = compiled(text)
        if plan is not None:
            with suppress(kleene.KleeneError):  # a type clash in a condition, a guard
                list(kleene.match(plan, STREAM))
    assert_positioned(error)


LEAD_NAMES = ["S", "T", "a", "b", "x", "e", "count", "first", "last", "adj", "all", "any", "t"]


@fuzz_rules
@given(texts("lead", LEAD_NAMES, ["0", "1", "3", "10"]))
def test_rules_the_lead_grammar_derives_compile_or_say_why(text):
    with bounded():
        _, error = compiled(text)
    assert_positioned(error)


def mutated(text: str) -> st.SearchStrategy[str]:
    """`text` with a few characters deleted, inserted, doubled or swapped."""
    pieces = st.sampled_from([*"()[]{},.;*+-<>=!~|'\"`%\\ \n", "WITHIN", "SEQ(", "b[i]"])

    @st.composite
    def mutate(draw: st.DrawFn) -> str:
        result = text
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(result)))
            end = min(len(result), at + draw(st.integers(0, 6)))
            kind = draw(st.sampled_from(["delete", "insert", "double", "swap"]))
            if kind == "delete":
                result = result[:at] + result[end:]
            elif kind == "insert":
                result = result[:at] + draw(pieces) + result[at:]
            elif kind == "double":
                result = result[:end] + result[at:end] + result[end:]
            elif end - at >= 2:
                result = result[:at] + result[at + 1] + result[at] + result[at + 2 :]
        return result

    return mutate()


@fuzz
@given(st.sampled_from(CASES).flatmap(lambda case: mutated((case / "pattern").read_text())))
def test_mutated_queries_get_positioned_errors(text):
    with bounded():
        _, error = compiled(text)
    assert_positioned(error)


CSV = b"type,ts,sym,price\nA,1,IBM,10.5\nB,2,IBM,11\nA,3,SUN,9\nC,4,SUN,12.25\n"
JSONL = (
    b'{"type": "A", "ts": 1, "sym": "IBM", "price": 10.5}\n'
    b'{"type": "B", "ts": 2, "sym": "IBM", "price": 11}\n'
    b'{"type": "C", "ts": 4, "sym": "SUN", "price": 12.25}\n'
)


#: The bytes `damaged` writes: line breaks, quotes, commas, braces, letters, digits, and
#: bytes that are no text (NUL, and what UTF-8 never starts or ends a character with).
DAMAGE = (0, 0x0A, 0x22, 0x2C, 0x7B, 0x80, 0xC3, 0xFF, 0x41, 0x31)
#: Damage to a file's structure (text), and bytes that are not UTF-8, but no NUL.
TEXTUAL = (0x0A, 0x22, 0x2C, 0x7B, 0x7D, 0x3A, 0x20, 0x41, 0x31, 0x80, 0xC3, 0xFF)


@st.composite
def damaged(draw: st.DrawFn, data: bytes, alphabet: tuple[int, ...] = DAMAGE) -> bytes:
    """`data` with bytes flipped, inserted, deleted, or cut off."""
    result = bytearray(data)
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(result)))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        byte = draw(st.sampled_from(alphabet))
        if kind == "flip" and at < len(result):
            result[at] = byte
        elif kind == "insert":
            result.insert(at, byte)
        elif kind == "delete" and at < len(result):
            del result[at]
        elif kind == "cut":
            del result[at:]
    return bytes(result)


QUERY = "PATTERN SEQ(A a, B+ b[], C c) WHERE [sym] AND b[i].price > a.price WITHIN 10"


def parquet_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("parquet") / "events.parquet"
    table = pa.table({"type": ["A", "B", "C"], "ts": [1, 2, 4], "price": [1.0, 2.0, 3.0]})
    pq.write_table(table, path)
    return path.read_bytes()


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet", "csv.gz", "jsonl.gz"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_damaged_files_give_named_errors_or_counted_skips(
    suffix, on_error, tmp_path_factory, monkeypatch
):
    monkeypatch.setattr(csv_files, "_CSV_BLOCK", 1 << 6)  # tiny blocks: straddling fields too
    plain = {"csv": CSV, "jsonl": JSONL}.get(suffix.removesuffix(".gz"))
    original = plain or parquet_bytes(tmp_path_factory)
    if suffix.endswith(".gz"):  # damage to the compressed bytes: truncated, corrupt blocks
        original = gzip.compress(original)
    folder = tmp_path_factory.mktemp("damaged")

    @fuzz
    @given(damaged(original))
    def check(data: bytes) -> None:
        path = folder / f"events.{suffix}"
        path.write_bytes(data)
        error = None
        with bounded():
            try:
                list(kleene.match(QUERY, kleene.read_events(path, on_error=on_error)))
            except kleene.KleeneError as raised:  # e.g. a column the query reads is missing
                error = raised
        if isinstance(error, kleene.EventError):
            assert error.source is not None and "events." in error.source, error

    check()
