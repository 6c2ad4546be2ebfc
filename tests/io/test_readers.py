"""Reading events from files, pandas and Arrow; malformed rows named by file, row, field."""

import gzip
import io
import json
import subprocess
import sys
from datetime import UTC, date, datetime

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.io import readers, write_columns
from kleene.io.readers import csv_files
from kleene.testing.workloads import StockStream


@pytest.fixture
def stocks(tmp_path):
    """The same generated stream in every format."""
    stream = StockStream(size=500, symbols=4, seed=3)
    paths = {}
    for suffix in ("csv", "jsonl", "parquet"):
        paths[suffix] = tmp_path / f"stocks.{suffix}"
        write_columns(stream.batches(), paths[suffix])
    return list(stream.events()), paths


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_every_format_reads_back_the_generated_events(stocks, suffix):
    expected, paths = stocks
    assert list(kleene.read_events(paths[suffix])) == expected


def test_pandas_and_arrow(stocks):
    expected, paths = stocks
    table = pq.read_table(paths["parquet"])
    assert list(kleene.from_arrow(table)) == expected
    assert list(kleene.from_arrow(table.to_batches()[0])) == expected
    assert list(kleene.from_arrow(table.to_reader(max_chunksize=77))) == expected
    assert list(kleene.from_pandas(table.to_pandas())) == expected


def test_column_mapping(tmp_path):
    path = tmp_path / "ticks.csv"
    path.write_text(
        "when,sym,px,key\n2024-05-01T10:00:00,IBM,1.5,k1\n2024-05-01T10:00:05+02:00,IBM,2,k2\n"
    )
    found = list(
        kleene.read_events(path, ts="when", event_type="Tick", id="key", tz="Europe/Paris")
    )
    assert [e.type for e in found] == ["Tick", "Tick"]
    assert [e.id for e in found] == ["k1", "k2"]
    assert found[0].ts == datetime(2024, 5, 1, 8, tzinfo=UTC)
    assert found[0].attrs == {"sym": "IBM", "px": 1.5}
    assert found[1].attrs["px"] == 2.0


def test_numeric_ids_and_date_timestamps(tmp_path):
    path = tmp_path / "days.parquet"
    pq.write_table(
        pa.table({"type": ["C", "P"], "ts": [date(2011, 1, 5), date(2011, 1, 6)], "id": [10, 11]}),
        path,
    )
    found = list(kleene.read_events(path, id="id"))
    assert [e.id for e in found] == [10, 11]
    assert found[1].ts == datetime(2011, 1, 6, tzinfo=UTC)


def test_nanosecond_and_naive_arrow_timestamps():
    table = pa.table(
        {
            "type": ["A", "B"],
            "ts": pa.array([1_000_000_000, 2_000_000_000], pa.timestamp("ns", tz="UTC")),
            "local": pa.array([1, 2], pa.timestamp("s")),
        }
    )
    first, _ = kleene.from_arrow(table)
    assert type(first.ts) is datetime
    assert first.ts == datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    naive = list(kleene.from_arrow(table.rename_columns(["type", "x", "ts"])))
    assert naive[1].ts == datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC)


BAD_CSV = """type,ts,id,price
A,1,a1,10
B,2,b1,11.5
A,3,a2
,4,x1,3
C,soon,c1,1
A,6,a3,12
"""


def test_malformed_csv_rows_raise_naming_file_row_and_field(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV)
    with pytest.raises(kleene.EventError) as info:
        list(kleene.read_events(path, id="id"))
    assert (info.value.source, info.value.row, info.value.field) == (str(path), 3, None)
    assert "expected 4 fields, found 3" in str(info.value)


def test_malformed_rows_are_skipped_and_counted(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV)
    reader = kleene.read_events(path, id="id", on_error="skip")
    assert [e.id for e in reader] == ["a1", "b1", "a3"]
    assert reader.skipped == 3
    assert [(e.row, e.field) for e in reader.errors] == [(3, None), (4, "type"), (5, "ts")]
    assert reader.report().startswith("skipped 3 malformed rows; first:")


def test_a_cell_that_does_not_fit_its_column_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_files, "_CSV_BLOCK", 64)
    rows = "".join(f"A,{n},{n}\n" for n in range(1, 20)) + "A,20,2.5\nA,21,lots\nA,22,7\n"
    path = tmp_path / "late.csv"
    path.write_text("type,ts,price\n" + rows)
    with pytest.raises(kleene.EventError) as info:
        list(kleene.read_events(path))
    assert (info.value.row, info.value.field) == (21, "price")
    assert "'lots' is not a number" in str(info.value)
    reader = kleene.read_events(path, on_error="skip")
    prices = [e["price"] for e in reader]
    assert prices[-3:] == [19, 2.5, 7]
    assert reader.skipped == 1
    typed = kleene.read_events(path, column_types={"price": "string"})
    assert [e["price"] for e in typed][-2:] == ["lots", "7"]


def test_reading_is_lazy(tmp_path):
    path = tmp_path / "tail.jsonl"
    path.write_text(json.dumps({"type": "A", "ts": 1}) + "\n" + "not json\n")
    events = iter(kleene.read_events(path))
    assert next(events).type == "A"
    with pytest.raises(kleene.EventError, match="row 2: not JSON"):
        next(events)


def test_jsonl_rows_must_be_objects(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"type": "A", "ts": 1}\n\n[1, 2]\n{"type": "A", "ts": 3, "tags": ["x"]}\n')
    reader = kleene.read_events(path, on_error="skip")
    assert [e.attrs for e in reader] == [{}, {"tags": ["x"]}]
    assert str(reader.errors[0]) == f"{path}, row 2: a line must hold a JSON object"


def test_a_byte_order_mark_does_not_cost_the_first_jsonl_row(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"type": "A", "ts": 1}\n{"type": "B", "ts": 2}\n')
    assert [e.type for e in kleene.read_events(path)] == ["A", "B"]


def test_folders_read_their_files_in_name_order(tmp_path):
    for name, ts in (("b.jsonl", 2), ("a.jsonl", 1)):
        (tmp_path / name).write_text(json.dumps({"type": "A", "ts": ts}) + "\n")
    assert [e.ts for e in kleene.read_events(tmp_path)] == [1, 2]
    assert [e.id for e in kleene.read_events(tmp_path)] == [0, 1]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("events.txt", "cannot tell the format"),
        ("missing.csv", "no such file"),
    ],
)
def test_unreadable_inputs(tmp_path, name, message):
    if name.endswith(".txt"):
        (tmp_path / name).write_text("x")
    with pytest.raises(kleene.EventError, match=message):
        kleene.read_events(tmp_path / name)


def test_empty_inputs(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("type,ts\n")
    assert list(kleene.read_events(tmp_path / "empty.csv")) == []
    assert list(kleene.read_events(tmp_path / "header.csv")) == []
    assert list(kleene.from_pandas(pd.DataFrame({"type": [], "ts": []}))) == []
    assert kleene.match("PATTERN SEQ(A a)", []) == []


def test_epoch_numbers_with_a_unit_become_datetimes(tmp_path):
    path = tmp_path / "epoch.csv"
    path.write_text("type,ts\nA,1700000000123\nB,1700000001000\n")
    first, second = kleene.read_events(path, ts_unit="ms")
    assert first.ts == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert second.t - first.t == pytest.approx(0.877)
    nanos = pa.table({"type": ["A"], "ts": [1_700_000_000_123_456_789]})
    (event,) = kleene.from_arrow(nanos, ts_unit="ns")
    assert event.ts == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    with pytest.raises(kleene.EventError, match="ts_unit is one of"):
        kleene.from_arrow(nanos, ts_unit="min")
    with pytest.raises(kleene.EventError, match="unknown time zone"):
        kleene.from_arrow(nanos, tz="Mars/Olympus")


def test_csv_null_tokens_are_text_in_text_columns_and_null_in_number_columns(tmp_path):
    """`NA` was null everywhere, so `[sym]` dropped those events, and the same rows as JSON
    lines gave another answer."""
    path = tmp_path / "na.csv"
    path.write_text("type,ts,sym,price\nA,1,NA,10\nB,2,NA,NA\nB,3,IBM,12\n")
    events = list(kleene.read_events(path))
    assert [e.attrs for e in events] == [
        {"sym": "NA", "price": 10},
        {"sym": "NA"},  # a null cell leaves the attribute out
        {"sym": "IBM", "price": 12},
    ]
    rows = tmp_path / "na.jsonl"
    rows.write_text(
        '{"type": "A", "ts": 1, "sym": "NA", "price": 10}\n'
        '{"type": "B", "ts": 2, "sym": "NA", "price": null}\n'
        '{"type": "B", "ts": 3, "sym": "IBM", "price": 12}\n'
    )
    query = "PATTERN SEQ(A a, B b) WHERE [sym]"
    by_csv = kleene.match(query, kleene.read_events(path))
    assert [m.ids() for m in by_csv] == [
        m.ids() for m in kleene.match(query, kleene.read_events(rows))
    ]
    assert len(by_csv) == 1


def test_stray_text_in_a_number_column_is_named_not_turned_into_text(tmp_path):
    """One stray cell used to make the whole column text, and `<` then compared "10" < "9"."""
    lines = ["type,ts,price"] + [f"A,{n},{n + 5}" for n in range(1, 40)] + ["A,40,n/a?"]
    path = tmp_path / "stray.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(kleene.EventError, match=r"row 40, field 'price': 'n/a\?' is not a number"):
        list(kleene.read_events(path))
    reader = kleene.read_events(path, on_error="skip")
    assert [e["price"] for e in reader][-1] == 44
    assert len(reader.errors) == 1


@pytest.mark.parametrize(
    ("texts", "kind"), [(0, "int"), (1, "int"), (2, "int"), (3, "str"), (20, "str"), (38, "str")]
)
def test_a_column_is_numbers_when_all_but_one_cell_in_20_are(tmp_path, caplog, texts, kind):
    """The 95 % rule at its edge (38 numbers and 2 words of 40 cells: numbers, the words
    named; 37 and 3: text), and the warning about text that is half numbers or more (20 of
    40 warns, 2 of 40 does not): a text column stops reading its cells as numbers once the
    answer cannot change, which these edges check."""
    cells = [str(n) for n in range(40 - texts)] + ["word"] * texts
    path = tmp_path / "edge.csv"
    path.write_text("type,ts,v\n" + "".join(f"A,{n},{c}\n" for n, c in enumerate(cells)))
    reader = kleene.read_events(path, on_error="skip")
    with caplog.at_level("WARNING", logger="kleene"):
        values = [e.get("v") for e in reader]
    if kind == "int":
        assert values[: 40 - texts] == list(range(40 - texts)) and len(values) == 40 - texts
        assert [error.row for error in reader.errors] == list(range(41 - texts, 41))
    else:
        assert values == cells and not reader.errors
    assert ("is read as text" in caplog.text) == (kind == "str" and texts <= 20)


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_reading_a_file_does_not_import_pandas(tmp_path, suffix):
    """pyarrow imports pandas the first time it makes an array from Python values: 0.4 s
    and 40 MB of a small `kleene match`. Reading a file (for CSV: null tokens in a number
    column, text columns) makes none."""
    path = tmp_path / f"small.{suffix}"
    rows = [("A", 1, 10, "IBM"), ("B", 2, None, "SUN"), ("B", 3, 12, "IBM")]
    if suffix == "csv":
        path.write_text("type,ts,price,sym,note\nA,1,10,IBM,x\nB,2,NA,SUN,\nB,3,12,IBM,y\n")
    elif suffix == "jsonl":
        keys = ("type", "ts", "price", "sym")
        path.write_text("".join(json.dumps(dict(zip(keys, r, strict=True))) + "\n" for r in rows))
    else:
        columns = {"type": ["A", "B", "B"], "ts": [1, 2, 3], "price": [10, None, 12]}
        pq.write_table(pa.table({**columns, "sym": ["IBM", "SUN", "IBM"]}), path)
    script = (
        "import sys, kleene\n"
        f"events = list(kleene.read_events({str(path)!r}))\n"
        "assert [e.get('price') for e in events] == [10, None, 12], events\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_duplicate_csv_columns_are_an_error(tmp_path):
    path = tmp_path / "twice.csv"
    path.write_text("type,ts,price,ts\nA,1,10,2\n")
    with pytest.raises(kleene.EventError, match="the header names 'ts' more than once"):
        list(kleene.read_events(path))


def test_duplicate_parquet_and_arrow_columns_are_an_error(tmp_path):
    """Two columns x would be one attribute of two values (0 matches, silently, before)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = [pa.array(["A", "B"]), pa.array([1, 2]), pa.array([1, 2]), pa.array([9, 9])]
    table = pa.Table.from_arrays(columns, names=["type", "ts", "x", "x"])
    path = tmp_path / "twice.parquet"
    pq.write_table(table, path)
    with pytest.raises(kleene.EventError, match="its columns name 'x' more than once") as caught:
        list(kleene.read_events(path))
    assert caught.value.source == str(path)
    with pytest.raises(kleene.EventError, match="its columns name 'x' more than once"):
        kleene.match("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5", table)


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_gzip_is_read_by_its_extension_or_its_first_bytes(stocks, tmp_path, suffix):
    expected, paths = stocks
    packed = gzip.compress(paths[suffix].read_bytes())
    named = tmp_path / f"named.{suffix}.gz"
    named.write_bytes(packed)
    unnamed = tmp_path / "unnamed.data"
    unnamed.write_bytes(packed)
    assert list(kleene.read_events(named)) == expected
    assert list(kleene.read_events(unnamed, suffix)) == expected
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / f"part.{suffix}.gz").write_bytes(packed)
    assert list(kleene.read_events(folder)) == expected


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_standard_input_is_read_with_a_format(stocks, monkeypatch, suffix, packed):
    expected, paths = stocks
    data = paths[suffix].read_bytes()
    stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(data) if packed else data)))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert list(kleene.read_events("-", suffix)) == expected
    with pytest.raises(kleene.EventError, match=r"standard input \(-\) has no extension"):
        kleene.read_events("-")


def test_text_that_is_not_utf8_is_a_named_error(tmp_path):
    lines = tmp_path / "e.jsonl"
    lines.write_bytes(b'{"type": "A", "ts": 1}\n{"type": "A", "ts": 2, "x": "\xff"}\n')
    with pytest.raises(kleene.EventError, match=r"e.jsonl, row 2: not UTF-8 text"):
        list(kleene.read_events(lines))
    reader = kleene.read_events(lines, on_error="skip")
    assert [e.ts for e in reader] == [1] and reader.skipped == 1
    table = tmp_path / "e.csv"
    table.write_bytes(b"type,ts,x\nA,1,a\nA,2,\xff\n")
    with pytest.raises(kleene.EventError, match=r"e.csv, row 2, field 'x': not UTF-8 text"):
        list(kleene.read_events(table))
    reader = kleene.read_events(table, on_error="skip")
    assert [e.ts for e in reader] == [1] and reader.skipped == 1
    (tmp_path / "h.csv").write_bytes(b"type,ts,\xff\nA,1,a\n")
    with pytest.raises(kleene.EventError, match=r"h.csv, row 0: the header is not UTF-8"):
        list(kleene.read_events(tmp_path / "h.csv"))


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_csv_row_of_too_many_fields_that_is_not_utf8_is_named(tmp_path, monkeypatch, on_error):
    """pyarrow hands such a row to no handler (it fails to decode it first), so it cannot be
    skipped: the error names the row and says why, and pyarrow's failure is not printed as
    "Exception ignored"."""
    table = tmp_path / "e.csv"
    table.write_bytes(b"ts,type,x\n1,A,1\n2,B\x80,2,9\n3,C,3\n")
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with pytest.raises(kleene.EventError, match=r"e.csv, row 2: cannot read the CSV") as info:
        list(kleene.read_events(table, on_error=on_error))
    assert "not UTF-8 text either, which even --on-error skip cannot pass over" in str(info.value)
    assert unraisable == []
    table.write_bytes(b"ts,type,x\n1,A,1\n2,B,2,9\n3,C,3\n")  # UTF-8: skipped and counted
    reader = kleene.read_events(table, on_error="skip")
    assert [e.type for e in reader] == ["A", "C"] and reader.skipped == 1


def test_a_csv_field_longer_than_a_block_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_files, "_CSV_BLOCK", 1 << 10)  # 1 KiB blocks, as 4 MiB ones
    long = "y" * 5000  # ... meet a field of 20 MiB
    path = tmp_path / "long.csv"
    path.write_text(
        "type,ts,x\n" + "".join(f"A,{i},{long if i == 40 else 'n'}\n" for i in range(60))
    )
    events = list(kleene.read_events(path))
    assert [e.ts for e in events] == list(range(60))
    assert events[40]["x"] == long and events[59]["x"] == "n"
    monkeypatch.setattr(csv_files, "_CSV_LARGEST_BLOCK", 1 << 10)
    with pytest.raises(kleene.EventError, match=r"long.csv, row \d+: a field is longer than"):
        list(kleene.read_events(path))


def test_a_damaged_parquet_file_is_named(tmp_path):
    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"type": ["A"] * 100, "ts": list(range(100))}), path)
    data = path.read_bytes()
    path.write_bytes(data[:40] + bytes(60) + data[100:])  # a page header overwritten
    with pytest.raises(kleene.EventError, match=r"damaged.parquet: the Parquet file is damaged"):
        list(kleene.read_events(path))


def test_a_parquet_time_past_year_9999_is_a_named_error(tmp_path):
    path = tmp_path / "far.parquet"
    micros = [1_000_000, 2 * 253_402_300_800_000_000, 3_000_000]
    pq.write_table(pa.table({"type": ["A"] * 3, "ts": pa.array(micros, pa.timestamp("us"))}), path)
    with pytest.raises(
        kleene.EventError, match=r"far.parquet, row 2, field 'ts': the time .* 9999"
    ):
        list(kleene.read_events(path))
    reader = kleene.read_events(path, on_error="skip")
    assert [e.ts.second for e in reader] == [1, 3] and reader.skipped == 1


def test_a_file_that_is_not_parquet_is_named(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(kleene.EventError, match=r"broken.parquet: not a Parquet file"):
        list(kleene.read_events(path))


def test_a_parquet_file_whose_arrow_schema_pyarrow_cannot_take_is_named(tmp_path):
    """One byte of the Arrow schema a Parquet footer keeps, changed (test_fuzz's thorough
    profile found it): `ts` becomes an integer of fewer than 8 bits, and pyarrow raised
    ArrowNotImplementedError out of the reader."""
    path = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"type": ["A"], "ts": [1], "price": [1.0]}), path)
    data = path.read_bytes()
    assert data.count(b"dHMAAAgAD") == 1  # "ts" and its type, in base64
    path.write_bytes(data.replace(b"dHMAAAgAD", b"dHMAAAAAD"))
    said = r"odd.parquet: the Parquet file is damaged: Integers with less than 8 bits"
    with pytest.raises(kleene.EventError, match=said):
        list(kleene.read_events(path))


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_parquet_file_whose_column_name_is_not_utf8_is_named(tmp_path, on_error):
    """pyarrow raised UnicodeDecodeError out of the reader, naming no file (found by
    test_fuzz's thorough profile)."""
    path = tmp_path / "names.parquet"
    pq.write_table(pa.table({"type": ["A", "B"], "ts": [1, 2], "price": [1.0, 2.0]}), path)
    path.write_bytes(path.read_bytes().replace(b"price", b"\x80rice"))
    said = r"names.parquet: the Parquet file is damaged: a column name is not UTF-8 text"
    with pytest.raises(kleene.EventError, match=said):
        list(kleene.read_events(path, on_error=on_error))


def test_an_event_type_that_is_not_text_is_an_error(tmp_path):
    """A JSON number as the type was silently made text: 5 and "5" became one type."""
    path = tmp_path / "types.jsonl"
    path.write_text('{"type": 5, "ts": 1}\n{"type": "B", "ts": 2}\n')
    with pytest.raises(kleene.EventError, match=r"row 1, field 'type': the event type must be"):
        list(kleene.read_events(path))
    reader = kleene.read_events(path, on_error="skip")
    assert [e.type for e in reader] == ["B"] and reader.skipped == 1


def test_a_text_column_of_mostly_numbers_is_said_to_compare_as_text(tmp_path, caplog):
    path = tmp_path / "prices.csv"
    path.write_text("type,ts,price,sym\nA,1,10,IBM\nA,2,x,SUN\nB,3,9,IBM\n")
    with caplog.at_level("WARNING", logger="kleene"):
        events = list(kleene.read_events(path))
    assert [e["price"] for e in events] == ["10", "x", "9"]
    assert "column 'price' is read as text: 2 of its first 3 cells are numbers, but not 'x'" in (
        caplog.text
    )
    assert "'sym'" not in caplog.text
    typed = kleene.read_events(path, column_types={"price": "float"})
    with pytest.raises(kleene.EventError, match=r"row 2, field 'price': 'x' is not a number"):
        list(typed)


def test_kleene_match_over_a_reader_names_the_file_row_of_an_engine_error(tmp_path):
    """The engine finds a time going back; the error names the file and row it came from
    (the fuzz tests found it named only the arrival number)."""
    path = tmp_path / "back.jsonl"
    path.write_text('{"type": "A", "ts": 5}\n\n{"type": "B", "ts": 4}\n')
    with pytest.raises(kleene.EventError, match=r"back.jsonl, row 2, field 'ts': event 1 has"):
        kleene.match("PATTERN SEQ(A a, B b) WITHIN 10", kleene.read_events(path))
    engine = kleene.Engine("PATTERN SEQ(A a, B b) WITHIN 10")
    with pytest.raises(kleene.EventError, match=r"back.jsonl, row 2, field 'ts'"):
        engine.send_many(kleene.read_events(path))


_GOOD_CELLS = {
    "type": st.sampled_from(["A", "B"]),
    "ts": st.one_of(
        st.integers(-(2**40), 2**40),
        st.floats(-1e9, 1e9),
        st.datetimes(timezones=st.sampled_from([UTC, None])),
    ),
    "id": st.integers(0, 3),
    "x": st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=2)),
}
_BAD_CELLS = {
    "type": st.sampled_from(["", None, 5, ["A"]]),
    "ts": st.one_of(
        st.sampled_from([None, True, 2**64, -(2**70), " 12 ", "2026-01-02T03:04:05", "x"]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.dates(),
    ),
    "id": st.none(),
    "x": st.just(None),
}


@st.composite
def _batch(draw):
    """A batch of rows, some with bad cells, under one choice of column roles."""
    columns = readers.Columns(
        id=draw(st.sampled_from([None, "id"])),
        event_type=draw(st.sampled_from([None, "C"])),
        ts_unit=draw(st.sampled_from([None, None, "s", "ns"])),
    )
    size = draw(st.integers(0, 8))
    rows = []
    for _ in range(size):
        bad = (
            draw(st.sets(st.sampled_from(sorted(_GOOD_CELLS)), max_size=2))
            if draw(st.booleans())
            else set()
        )
        rows.append({n: draw((_BAD_CELLS if n in bad else _GOOD_CELLS)[n]) for n in _GOOD_CELLS})
    return columns, rows


def _read(columns, rows, by_row):
    names = list(_GOOD_CELLS)

    def batches(reader):
        made = readers.rows.Rows(reader)
        if by_row:
            yield (e for i, row in enumerate(rows, 1) if (e := made.event(row, "t", i)))
        else:
            cells = [[row[n] for row in rows] for n in names]
            yield made.batch(names, cells, range(1, len(rows) + 1), "t", None)

    reader = readers.EventReader("t", batches, columns, on_error="skip")
    events = list(reader)
    places = [reader.place(i) for i in range(len(events) + 1)]
    return events, [e.id for e in events], reader.skipped, list(map(str, reader.errors)), places


@given(_batch())
def test_a_batch_reads_as_its_rows_read_one_at_a_time(batch):
    """A batch checked a column at a time (every row well formed) gives what the rows give
    one at a time: the same events, ids, skipped rows, errors and places."""
    columns, rows = batch
    assert _read(columns, rows, by_row=False) == _read(columns, rows, by_row=True)


@pytest.mark.parametrize(
    ("ts", "unit", "message"),
    [
        (2**64, None, "is out of range"),
        (10**12, "s", "outside the years 1 to 9999"),
    ],
)
def test_a_time_out_of_range_is_named_or_skipped(tmp_path, ts, unit, message):
    """A timestamp the engine cannot take is the row's error (it used to escape the reader
    unnamed, or as a bare OverflowError with `ts_unit`), and skipping skips only that row."""
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps({"type": "A", "ts": t}) + "\n" for t in (1, ts, 2)))
    with pytest.raises(kleene.EventError, match=message) as raised:
        list(kleene.read_events(path, ts_unit=unit))
    assert (raised.value.source, raised.value.row, raised.value.field) == (str(path), 2, "ts")
    reader = kleene.read_events(path, ts_unit=unit, on_error="skip")
    assert [event.id for event in reader] == [0, 1]
    assert reader.skipped == 1


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_a_damaged_gzip_file_is_a_named_error(stocks, tmp_path, suffix):
    """A truncated gzip file names the file and how far it was read, whether its reader
    streams it (CSV, JSON lines) or reads it whole (Parquet)."""
    _, paths = stocks
    packed = gzip.compress(paths[suffix].read_bytes())
    cut = tmp_path / f"cut.{suffix}.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    with pytest.raises(kleene.EventError, match=r"the gzip file is damaged after [\d,]+ bytes"):
        list(kleene.read_events(cut))
    with pytest.raises(kleene.EventError, match="damaged") as caught:
        list(kleene.read_events(cut, on_error="skip"))
    assert caught.value.source == str(cut)


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_an_unclosed_quote_is_an_error_at_its_cell(tmp_path, on_error):
    """The rest of the file would be one cell (2 events read of 4, silently, before)."""
    path = tmp_path / "quote.csv"
    path.write_text('type,ts,x\nA,1,1\nB,2,"2\nA,3,0\nB,4,5\n')
    with pytest.raises(kleene.EventError, match="a quote opened in this cell is not closed") as e:
        list(kleene.read_events(path, on_error=on_error))
    assert (e.value.row, e.value.field) == (2, "x")
    path.write_text('type,ts,x\nA,1,"1"\nB,2,"two, three"\n')  # closed quotes are cells
    assert [e.attrs["x"] for e in kleene.read_events(path)] == ["1", "two, three"]


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_missing_role_column_is_the_inputs_fault_not_each_rows(tmp_path, on_error):
    """A header without the type column made every row an error, each skipped under
    --on-error skip: 0 events and no word of why, where `kleene run` refused the file."""
    path = tmp_path / "events.csv"
    path.write_text("kind,ts,x\nA,1,1\nB,2,2\n")
    with pytest.raises(kleene.EventError) as raised:
        list(kleene.read_events(path, on_error=on_error))
    assert str(raised.value) == (
        f"{path}, field 'type': no column 'type' (the event type); it has kind, ts, x"
    )
    parquet = tmp_path / "events.parquet"
    pq.write_table(pa.table({"type": ["A"], "time": [1]}), parquet)
    with pytest.raises(kleene.EventError, match="no column 'ts' \\(the timestamp\\)"):
        list(kleene.read_events(parquet, on_error=on_error))
    with pytest.raises(kleene.EventError, match="no column 'seq' \\(the id\\)"):
        list(kleene.read_events(path, type="kind", id="seq", on_error=on_error))


def test_empty_lines_before_the_header_are_passed_over(tmp_path):
    """As Spark and pyarrow pass over empty lines: the header was read as empty, and the
    file as no events at all, without a word."""
    path = tmp_path / "events.csv"
    path.write_text('\n\r\ntype,ts,x\nA,1,1\n\nB,2,"2\n')
    with pytest.raises(kleene.EventError) as raised:
        list(kleene.read_events(path))
    assert str(raised.value).startswith(f"{path}, row 2, field 'x': a quote opened")
    assert str(kleene.io.readers.csv_files.unclosed_quote(path)) == str(raised.value)
    path.write_text("\n\ntype,ts\nA,1\nB,2\n")
    assert [e.type for e in kleene.read_events(path)] == ["A", "B"]


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_quote_left_open_is_an_error_in_the_header_and_where_it_ran_on(tmp_path, on_error):
    """A quote left open ran on to the end of the file: in a row, the row then had too few
    fields and was skipped under --on-error skip (and the rest of the file with it, as one
    skipped row); in the header, Python's reader closed it at the line's end."""
    path = tmp_path / "events.csv"
    path.write_text('type,ts,x\nA,1,1\n",2,2\nB,3,3\n')
    with pytest.raises(kleene.EventError, match="row 2: a quote opened in this cell is not"):
        list(kleene.read_events(path, on_error=on_error))
    path.write_text('type,ts,"x\nA,1,1\n')
    with pytest.raises(kleene.EventError, match="row 0: a quote opened in this cell is not"):
        list(kleene.read_events(path, on_error=on_error))
