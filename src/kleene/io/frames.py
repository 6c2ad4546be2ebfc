"""Matches as a pandas DataFrame: one row a match, a column per variable field, or one row an
event of a match with `explode=True`. The events a LEAD rule emits become one row each.

>>> import kleene
>>> events = [{"type": t, "ts": ts, "price": p} for t, ts, p in
...           [("A", 1, 10), ("B", 2, 11), ("B", 3, 12), ("C", 4, 9)]]
>>> found = kleene.match("PATTERN SEQ(A a, B+ b[], C c) WHERE skip_till_next_match "
...                      "{ c.price < a.price } WITHIN 10", events)
>>> frame = kleene.to_pandas(found)
>>> frame[["start_ts", "end_ts", "a.price", "b.price", "c.price"]]
   start_ts  end_ts  a.price   b.price  c.price
0         1       4       10  [11, 12]        9
>>> kleene.to_pandas(found, explode=True)[["match", "variable", "position", "id", "price"]]
   match variable  position  id  price
0      0        a         0   0     10
1      0        b         0   1     11
2      0        b         1   2     12
3      0        c         0   3      9
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from kleene.errors import KleeneError
from kleene.events import Event, attributes
from kleene.matches import Match, Retraction, Timeout

__all__ = ["rows_frame", "to_pandas"]


def to_pandas(found: Iterable[Match | Event | Mapping[str, Any]], *, explode: bool = False) -> Any:
    """A pandas DataFrame of matches (or of a LEAD rule's emitted events, or of a
    MATCH_RECOGNIZE clause's rows: one row each, as they are).

    A flattened view of the rows every surface writes (docs/output.md). One row a match:
    `match_id`, `pattern`, `start_ts`, `end_ts`, the query's RETURN values (one column
    each), then for each variable `v` the columns `v.id`, `v.type`, `v.ts` and
    `v.<attribute>` for every attribute its events carry: a value for a variable that binds
    one event in every match, a list (in order) for a Kleene variable. With
    `explode=True`, one row an event of a match: `match` (the match's row number),
    `match_id`, `pattern`, `start_ts`, `end_ts`, `variable`, `position` (within the
    variable), `id`, `type`, `ts` and the event's attributes. A retraction (plan `afa`)
    has `retraction` True; with timed-out partial matches among the matches
    (`timeouts=True`), `kind` says "match" or "timeout" and `deadline` when a timeout's
    window closed. A match does not know how its query split the stream, so `key` is not
    here (`plan.output.row(match)` has it). Emitted events are one row each: `type`, `ts`
    and their attributes."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with kleene[spark]
        raise KleeneError("to_pandas needs pandas: pip install pandas") from None
    items = list(found)
    if items and all(isinstance(item, Mapping) for item in items):
        return rows_frame([item for item in items if isinstance(item, Mapping)])
    if any(isinstance(item, Event) for item in items):
        emitted: list[Event] = items  # type: ignore[assignment]
        return pd.DataFrame([{"type": e.type, "ts": e.ts, **attributes(e)} for e in emitted])
    matches: list[Match] = items  # type: ignore[assignment]
    retractions = any(isinstance(m, Retraction) for m in matches)
    timeouts = any(isinstance(m, Timeout) for m in matches)

    def marks(m: Match) -> dict[str, Any]:
        """A retraction's and a timeout's own columns."""
        found: dict[str, Any] = {}
        if retractions:
            found["retraction"] = isinstance(m, Retraction)
        if timeouts:
            found["kind"] = "timeout" if isinstance(m, Timeout) else "match"
            found["deadline"] = m.deadline if isinstance(m, Timeout) else None
        return found

    if explode:
        rows = []
        for number, m in enumerate(matches):
            head = {
                "match": number,
                "match_id": m.match_id,
                "pattern": m.pattern,
                "start_ts": m.start_ts,
                "end_ts": m.end_ts,
                **marks(m),
            }
            for name, events in m.bindings.items():
                for position, e in enumerate(events):
                    rows.append(
                        {**head, "variable": name, "position": position, "id": e.id,
                         "type": e.type, "ts": e.ts, **attributes(e)}
                    )  # fmt: skip
        return pd.DataFrame(rows)
    many = {name for m in matches for name, events in m.bindings.items() if len(events) != 1}
    fields: dict[str, list[str]] = {}
    for m in matches:
        for name, events in m.bindings.items():
            known = fields.setdefault(name, ["id", "type", "ts"])
            for e in events:
                known.extend(a for a in e.attrs if a not in known)
    rows = []
    for m in matches:
        row: dict[str, Any] = {
            "match_id": m.match_id,
            "pattern": m.pattern,
            "start_ts": m.start_ts,
            "end_ts": m.end_ts,
        }
        row.update(marks(m))
        row.update(m.values or {})
        for name, names in fields.items():
            events = m.bindings.get(name, ())
            for field in names:
                values = [_field(e, field) for e in events]
                row[f"{name}.{field}"] = values if name in many else (values[0] if values else None)
        rows.append(row)
    return pd.DataFrame(rows)


def rows_frame(rows: Sequence[Mapping[str, Any]], columns: list[str] | None = None) -> Any:
    """A pandas DataFrame of rows (dicts), with the columns given (else the rows' own, in
    order), typed as the values are: a column of whole numbers (or truth values) with
    nulls is a nullable Int64 (or boolean) column, not floats (or objects) as pandas would
    make it; a null in a float column is NaN, pandas' own null.

    >>> rows_frame([{"n": 1, "b": True}, {"n": None, "b": None}]).dtypes.tolist()
    [Int64Dtype(), BooleanDtype]
    """
    import pandas as pd

    frame = pd.DataFrame.from_records(rows, columns=columns)
    for name in frame.columns:
        values = [row.get(name) for row in rows]
        if None not in values:
            continue
        present = [v for v in values if v is not None]
        if present and all(type(v) is bool for v in present):
            frame[name] = pd.array(values, dtype="boolean")
        elif present and all(type(v) is int for v in present):
            frame[name] = pd.array(values, dtype="Int64")
    return frame


def columns_frame(columns: Mapping[str, Any], names: list[str]) -> Any:
    """A pandas DataFrame of Arrow columns, typed as `rows_frame` types the same values
    given as rows: a column of whole numbers (or truth values) with nulls is nullable Int64
    (or boolean), a column of nulls only holds None.

    >>> import pyarrow as pa
    >>> frame = columns_frame({"n": pa.array([1, None]), "x": pa.array([0.5, None]),
    ...                        "z": pa.nulls(2, pa.int64())}, ["n", "x", "z"])
    >>> frame.dtypes.tolist(), frame["z"].tolist()
    ([Int64Dtype(), dtype('float64'), dtype('O')], [None, None])
    """
    import pandas as pd
    import pyarrow as pa

    data: dict[str, Any] = {}
    for name in names:
        column = columns[name]
        if not len(column):
            return rows_frame([], names)
        if column.null_count == len(column):
            data[name] = pd.Series([None] * len(column), dtype=object)
        elif column.null_count and pa.types.is_integer(column.type):
            data[name] = pd.array(column.to_pylist(), dtype="Int64")
        elif column.null_count and pa.types.is_boolean(column.type):
            data[name] = pd.array(column.to_pylist(), dtype="boolean")
        else:
            data[name] = column.to_pandas()
    return pd.DataFrame(data, columns=names)


def _field(event: Event, name: str) -> Any:
    """A field of the event as its row holds it (`event_record`: id, type, ts, then its
    attributes, an attribute of one of those names in that place)."""
    if name in _ROLES and name not in event.attrs:
        return _ROLES[name](event)
    return event.get(name)


_ROLES: dict[str, Callable[[Event], Any]] = {
    "id": attrgetter("id"),
    "type": attrgetter("type"),
    "ts": attrgetter("ts"),
}


def read_matches(path: str | Path) -> Any:
    """The matches kleene wrote to `path`, as a pandas DataFrame: a file (Parquet, JSON lines
    or CSV, by its extension) or a folder Spark wrote. Of a folder only what Spark committed
    is read, as Spark readers read it: the files its file sink's log (`_spark_metadata`)
    lists (a stream's output), the `batch=N` folders marked `_SUCCESS` (a stream's output
    with late events apart), or the part files of a folder marked `_SUCCESS` (a batch
    job's). So a part file a killed run left behind is never read, and a folder no run
    finished is an error, not an empty result."""
    import pandas as pd

    where = Path(path)
    if where.is_file():
        return _read_part(where)
    if not where.is_dir():
        raise KleeneError(f"{where}: no such file or folder")
    parts = _committed(where)
    frames = [frame for frame in map(_read_part, parts) if len(frame.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _committed(folder: Path) -> list[Path]:
    """The part files Spark committed to a folder (see `read_matches`)."""
    log = folder / "_spark_metadata"
    if log.is_dir():
        return _logged(log)
    batches = sorted(
        (b for b in folder.glob("batch=*") if b.is_dir()),
        key=lambda b: int(b.name.removeprefix("batch=")),
    )
    if batches:
        return [p for b in batches if (b / "_SUCCESS").exists() for p in _parts(b)]
    if not (folder / "_SUCCESS").exists():
        raise KleeneError(
            f"{folder}: no run finished writing this folder (no _SUCCESS mark and no "
            "_spark_metadata log): its files may be partial"
        )
    return _parts(folder)


def _parts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.startswith("part-"))


def _logged(log: Path) -> list[Path]:
    """The files a file sink's log holds: the latest compacted batch's list, then each
    later batch's additions and deletions."""
    import json
    from urllib.parse import unquote, urlparse

    batches: dict[int, Path] = {}
    compact = -1
    for entry in log.iterdir():
        digits, _, kind = entry.name.partition(".")
        if digits.isdigit() and kind in ("", "compact"):
            batches[int(digits)] = entry
            if kind == "compact":
                compact = max(compact, int(digits))
    files: dict[str, None] = {}
    for number in sorted(n for n in batches if n >= compact):
        lines = batches[number].read_text().splitlines()
        for row, line in enumerate(lines[1:], 2):  # after the version line
            if not line:
                continue
            try:
                record = json.loads(line)
                record["path"]
            except (ValueError, TypeError, KeyError):
                raise KleeneError(
                    f"{batches[number]}, line {row}: not an entry of Spark's file sink log "
                    f"({line[:80]!r})"
                ) from None
            if record.get("action") == "delete":
                files.pop(record["path"], None)
            else:
                files[record["path"]] = None
    found = []
    for uri in files:
        parsed = urlparse(uri)
        found.append(Path(unquote(parsed.path)) if parsed.scheme in ("", "file") else Path(uri))
    return found


def _read_part(path: Path) -> Any:
    """One file of matches, by its extension; one that is missing or damaged is an error
    naming it."""
    try:
        return _read_file(path)
    except (OSError, ValueError) as error:
        raise KleeneError(f"{path}: cannot read it as matches ({error})") from None


def _read_file(path: Path) -> Any:
    import pandas as pd

    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pandas()
    if name.endswith((".json", ".jsonl")):
        return pd.read_json(path, lines=True)
    if name.endswith(".csv"):
        return pd.read_csv(path)
    raise KleeneError(f"{path}: not a Parquet, JSON lines or CSV file of matches")
