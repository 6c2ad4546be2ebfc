"""A reader of Arrow batches makes events only of the rows a query can take
(`kleene.io.prefilter`): the same matches and the same errors as reading every row."""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.errors import KleeneError
from kleene.io import Columns, from_arrow
from kleene.io.prefilter import row_filter
from kleene.testing.strategies import cases


def _outcome(query: Any, reader: kleene.io.EventReader, plan: str) -> Any:
    """The matches (their ids) or the error `kleene.match` ends with."""
    try:
        return [(m.pattern, m.ids()) for m in kleene.match(query, reader, plan)]
    except KleeneError as error:
        return type(error).__name__, str(error)


def _both(
    query: Any, data: Any, plan: str = "auto", **options: Any
) -> tuple[Any, Any, kleene.io.EventReader]:
    """The outcome read thinned, the outcome read whole, and the thinned reader."""
    thinned = from_arrow(data, **options)
    whole = from_arrow(data, **options)
    whole.arrow = False  # as a reader that cannot thin
    return _outcome(query, thinned, plan), _outcome(query, whole, plan), thinned


def _table(events: tuple[kleene.Event, ...]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"type": e.type, "ts": e.ts, "k": e.attrs["k"], "x": e.attrs.get("x")} for e in events],
        schema=pa.schema(
            [("type", pa.string()), ("ts", pa.int64()), ("k", pa.int64()), ("x", pa.int64())]
        ),
    )


_SKIPPING = ("skip_till_any_match", "skip_till_next_match")


_PLANS = [
    "auto",
    "reference",
    "nfa",
    "nfa_backtrack",
    "lazy_chain",
    "lazy_tree",
    "afa",
    "match_window",
    "window_join",
]


@given(
    case=cases(max_events=9, strategies=_SKIPPING),
    size=st.integers(1, 4),
    plan=st.sampled_from(_PLANS),
)
def test_a_thinned_read_finds_what_a_whole_read_finds(case: Any, size: int, plan: str) -> None:
    """Patterns that skip the events they cannot use (so a filter may leave rows out), on
    every plan that runs them."""
    table = _table(case.events)
    thinned, whole, _ = _both(case.pattern, table.to_batches(max_chunksize=size), plan)
    assert thinned == whole


@given(case=cases(max_events=9, extensions=True), size=st.integers(1, 4))
def test_a_thinned_read_finds_what_a_whole_read_finds_with_kleenes_extensions(
    case: Any, size: int
) -> None:
    """Contiguity, UNTIL and count windows read every row; the rest may be thinned."""
    table = _table(case.events)
    thinned, whole, _ = _both(case.pattern, table.to_batches(max_chunksize=size))
    assert thinned == whole


def test_not_next_reads_the_row_right_after_whatever_its_type() -> None:
    """Flink's notNext looks at the partition's next event: an X between a2 and c2 saves
    a2 b2, and a read that left the X out would let c2 spoil it."""
    table = pa.table({"type": list("ACBAXCB"), "ts": list(range(1, 8)), "k": [0] * 7, "x": [0] * 7})
    query = "PATTERN SEQ(A a, NOT NEXT(C c), B b) WHERE relaxed_contiguity"
    thinned, whole, _ = _both(query, table.to_batches(max_chunksize=3))
    assert thinned == whole
    assert [ids for _, ids in whole] == [{"a": (3,), "b": (6,)}]


_COLUMNS = {
    "i": st.one_of(st.integers(-3, 3), st.none(), st.sampled_from([2**53 + 1, -(2**62)])),
    "f": st.one_of(st.none(), st.sampled_from([0.5, -1.0, 2.0, math.nan, math.inf, 2.0**53])),
    "s": st.one_of(st.none(), st.sampled_from(["", "a", "b", "é"])),
    "b": st.one_of(st.none(), st.booleans()),
}
_TYPES = {"i": pa.int64(), "f": pa.float64(), "s": pa.string(), "b": pa.bool_()}
_literals = st.sampled_from(
    [
        "1",
        "-2",
        "0.5",
        "2.5",
        "9007199254740993",
        "9007199254740992.0",
        "'a'",
        "true",
        "null",
        "1e300",
    ]
)


def _exprs() -> st.SearchStrategy[str]:
    attribute = st.sampled_from([f"a.{name}" for name in _COLUMNS] + ["a.ts", "a.gone"])
    operand = st.one_of(attribute, _literals)
    arithmetic = st.builds(
        lambda x, op, y: f"({x} {op} {y})", operand, st.sampled_from(["+", "-", "*", "/"]), operand
    )
    value = st.one_of(operand, arithmetic, attribute.map(lambda a: f"abs({a})"))
    compare = st.builds(
        lambda x, op, y: f"{x} {op} {y}",
        value,
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        value,
    )
    simple = st.builds(
        lambda x, op, y: f"{x} {op} {y}",
        attribute,
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        _literals,
    )
    combined = st.recursive(
        st.one_of(simple, compare),
        lambda inner: st.one_of(
            st.builds(
                lambda x, op, y: f"({x} {op} {y})", inner, st.sampled_from(["and", "or"]), inner
            ),
            inner.map(lambda x: f"not ({x})"),
        ),
        max_leaves=3,
    )
    return st.one_of(simple, combined)


@st.composite
def _rows(draw: st.DrawFn) -> pa.Table:
    size = draw(st.integers(1, 8))
    columns: dict[str, list[Any]] = {
        "type": [draw(st.sampled_from(["A", "B", "A", "B", "C"])) for _ in range(size)],
        "ts": list(range(size)),
    }
    for name, values in _COLUMNS.items():
        columns[name] = [draw(values) for _ in range(size)]
    schema = pa.schema([("type", pa.string()), ("ts", pa.int64()), *_TYPES.items()])
    return pa.Table.from_pydict(columns, schema=schema)


@given(condition=_exprs(), table=_rows(), size=st.integers(1, 8))
def test_a_property_leaves_out_only_rows_it_is_not_true_of(
    condition: str, table: pa.Table, size: int
) -> None:
    """Numbers of both kinds (an integer past 2**53 against a float), NaN, infinities, text,
    booleans, nulls, missing attributes and errors (a string against a number): the rows
    left out are never rows kleene would take, nor rows it would find an error in."""
    query = f"PATTERN SEQ(A a, B b) WHERE {condition} WITHIN 100"
    try:
        kleene.compile(query)
    except KleeneError:
        return
    thinned, whole, _ = _both(query, table.to_batches(max_chunksize=size))
    assert thinned == whole


_QUERY = "PATTERN SEQ(A a, B b) WHERE a.x > 5 AND b.x < 1 WITHIN 100"


def _stream(size: int) -> dict[str, list[Any]]:
    return {
        "type": ["A" if i % 2 else "B" for i in range(size)],
        "ts": list(range(size)),
        "x": [i % 10 for i in range(size)],
    }


def test_rows_no_variable_takes_are_left_out_and_counted_and_ids_stay_positions() -> None:
    thinned, whole, reader = _both(_QUERY, pa.table(_stream(1000)).to_batches(100))
    assert thinned == whole and len(whole) > 0
    assert reader.rows == 1000 and reader.left_out == 700  # 200 A rows and 100 B rows kept


@pytest.mark.parametrize("id_column", [None, "id"])
def test_a_time_going_back_after_a_thinned_batch_names_its_row(id_column: str | None) -> None:
    data = _stream(300)
    data["id"] = [f"e{i}" for i in range(300)]
    data["ts"][250] = 3  # the row after two thinned batches goes back
    for reader in (from_arrow(pa.table(data).to_batches(100), id=id_column, name="s"),):
        with pytest.raises(kleene.EventError) as raised:
            kleene.match(_QUERY, reader)
        assert "s, row 251" in str(raised.value) and "earlier" in str(raised.value)
        assert reader.left_out > 0


def test_a_bad_row_in_a_batch_is_named_though_no_variable_takes_it() -> None:
    data = _stream(300)
    data["type"][150] = ""  # a B row the filter would leave out
    with pytest.raises(kleene.EventError, match=r"row 151.*type is missing"):
        kleene.match(_QUERY, from_arrow(pa.table(data).to_batches(100)))


def test_a_matching_query_on_parquet_does_not_import_pandas(tmp_path: Any) -> None:
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table(_stream(1000)), path)
    code = (
        "import sys, kleene\n"
        f"r = kleene.read_events({str(path)!r})\n"
        f"print(len(kleene.match({_QUERY!r}, r)), r.left_out > 0, 'pandas' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    _, whole, _ = _both(_QUERY, pa.table(_stream(1000)))
    assert done.stdout.split() == [str(len(whole)), "True", "False"]


_OPS = {
    "=": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}


@pytest.mark.parametrize("op", list(_OPS))
@pytest.mark.parametrize(
    ("column", "literal", "values", "exact"),
    [
        ("i", "0.5", [-1, 0, 1, 2, None], True),
        ("i", "-0.5", [-1, 0, 1, None], True),
        ("i", "2.0", [1, 2, 3], True),
        ("i", "9007199254740992.0", [2**53 - 1, 2**53, 2**53 + 1], True),
        ("i", "1e300", [0, 2**62], False),  # beyond any integer's reach: not translated
        ("f", "1", [0.5, 1.0, 1.5, math.nan, -math.inf, None], True),
        ("f", "9007199254740993", [2.0**53, 2.0**53 + 2, math.nan], False),  # no double holds it
    ],
)
def test_numbers_of_both_kinds_are_compared_as_python_compares_them(
    op: str, column: str, literal: str, values: list[Any], exact: bool
) -> None:
    """An integer column against a float, and a float column against an integer: the rows
    kept are those the comparison is true of (Arrow alone would round integers past 2**53);
    a comparison not translated keeps every row of the variable's types."""
    plan = kleene.compile(f"PATTERN SEQ(A a, B b) WHERE a.{column} {op} {literal} WITHIN 9")
    keep = row_filter(plan.analysis.filters, Columns())
    assert keep is not None
    kind = pa.int64() if column == "i" else pa.float64()
    batch = pa.record_batch(
        {"type": ["A"] * len(values), "ts": list(range(len(values))), column: values},
        schema=pa.schema([("type", pa.string()), ("ts", pa.int64()), (column, kind)]),
    )
    mask = keep(batch)
    kept = mask.to_pylist() if mask is not None else [True] * len(values)
    number = int(literal) if literal.lstrip("-").isdigit() else float(literal)
    truth = [v is not None and _OPS[op](v, number) for v in values]
    assert kept == (truth if exact else [True] * len(values))


def test_a_value_python_cannot_hold_is_named_though_no_variable_takes_its_row() -> None:
    data = _stream(300)
    when = pa.array([0] * 150 + [300_000_000_000_000_000] + [0] * 149, pa.int64())
    table = pa.table(data).append_column("when", when.cast(pa.timestamp("us")))
    with pytest.raises(kleene.EventError, match=r"row 151, field 'when'.*outside the years"):
        kleene.match(_QUERY, from_arrow(table.to_batches(100)))


@pytest.mark.parametrize("id_column", [None, "id"])
def test_an_error_in_a_condition_names_its_row_inside_a_thinned_batch(
    id_column: str | None,
) -> None:
    """The event at fault is the 47th kept in its batch: its row is found from its reading
    position, with the file's ids too (the engine's arrival number, mapped back)."""
    data = _stream(300)
    data["id"] = [f"e{i}" for i in range(300)]
    table = pa.table(data).append_column("y", pa.array([None] * 257 + ["x"] + [None] * 42))
    query = "PATTERN SEQ(A a, B b) WHERE a.x > 5 AND b.x < 1 AND a.y + 1 > 0 WITHIN 100"
    reader = from_arrow(table.to_batches(100), id=id_column, name="s")
    with pytest.raises(kleene.EventError, match=r"^s, row 258: cannot compute a.y \+ 1"):
        kleene.match(query, reader)
    assert reader.left_out > 0


@given(
    case=cases(max_events=9, strategies=_SKIPPING),
    halves=st.booleans(),
    plan=st.sampled_from(_PLANS),
)
def test_a_thinned_csv_read_finds_what_a_whole_read_finds(
    case: Any, halves: bool, plan: str
) -> None:
    """CSV timestamps are text to the reader; the kept rows' are read as every row's are
    (`1` an int, `1.5` a float), so the matches and their values are the same."""
    lines = ["type,ts,k,x"]
    for event in case.events:
        ts = event.ts / 2 if halves else event.ts
        lines.append(f"{event.type},{ts:g},{event.attrs['k']},{event.attrs.get('x', '')}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "e.csv"
        path.write_text("\n".join(lines) + "\n")
        found = []
        for thin in (True, False):
            reader = kleene.read_events(path)
            reader.arrow = thin
            try:
                matches = kleene.match(case.pattern, reader, plan)
                found.append([(m.ids(), [e.ts for e in m.events]) for m in matches])
            except KleeneError as error:
                found.append(str(error))
    assert found[0] == found[1]


def test_a_csv_file_is_thinned_and_its_bad_rows_named(tmp_path: Any) -> None:
    rows = [f"{'AB'[i % 2]},{i},{i % 10}" for i in range(300)]
    path = tmp_path / "e.csv"
    path.write_text("type,ts,x\n" + "\n".join(rows) + "\n")
    query = "PATTERN SEQ(A a, B b) WHERE a.x > 5 AND b.x < 2 WITHIN 100"
    reader = kleene.read_events(path)
    whole = kleene.read_events(path)
    whole.arrow = False
    assert kleene.match(query, reader) == kleene.match(query, whole) != []
    assert reader.left_out == 209  # 60 A rows and 30 B rows kept, and the last row
    rows[151] = "B,151,ten"  # a row the filter would leave out
    path.write_text("type,ts,x\n" + "\n".join(rows) + "\n")
    with pytest.raises(kleene.EventError, match=r"row 152, field 'x'"):
        kleene.match(query, kleene.read_events(path, column_types={"x": "int"}))


def _not_utf8(cells: list[bytes]) -> pa.Array:
    """A string array holding the bytes as they are (a damaged file's text)."""
    ends = [0]
    for cell in cells:
        ends.append(ends[-1] + len(cell))
    offsets = pa.py_buffer(b"".join(end.to_bytes(4, "little") for end in ends))
    return pa.Array.from_buffers(
        pa.string(), len(cells), [None, offsets, pa.py_buffer(b"".join(cells))]
    )


@pytest.mark.parametrize("thin", [True, False])
def test_text_that_is_not_utf8_is_named_though_no_variable_takes_its_row(thin: bool) -> None:
    """It came out of pyarrow as a UnicodeDecodeError, then as an ArrowInvalid naming no row
    (test_fuzz found it); a thinned batch would have dropped the row silently."""
    data = _stream(300)
    names = [b"ok"] * 300
    names[151] = b"\x80"  # a B row the filter would leave out
    table = pa.table(data).append_column("name", _not_utf8(names))
    reader = from_arrow(table.to_batches(100), name="s")
    reader.arrow = thin
    with pytest.raises(kleene.EventError, match=r"^s, row 152, field 'name': not UTF-8"):
        kleene.match(_QUERY, reader)
    skipping = from_arrow(table.to_batches(100), name="s", on_error="skip")
    skipping.arrow = thin
    kleene.match(_QUERY, skipping)
    assert skipping.skipped == 1
