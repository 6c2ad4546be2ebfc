"""Where LEAD and SASE+ mean the same, the petri plan and the SASE+ plans agree (hypothesis on
random streams): a sequence under `all` is skip-till-any-match, and under `every` it is
skip-till-any-match with non-overlapping output."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import kleene
from kleene.events import Event
from kleene.testing.strategies import streams

NAMES = ("a", "b", "c")


@st.composite
def sequences(draw: st.DrawFn) -> tuple[list[str], list[int | None]]:
    """Two or three element types (repeats allowed), each with an optional `x > n` filter."""
    size = draw(st.integers(2, 3))
    types = [draw(st.sampled_from("ABC")) for _ in range(size)]
    filters = [draw(st.sampled_from([None, None, 0, 1, 2])) for _ in range(size)]
    return types, filters


def _numbered(stream: tuple[Event, ...]) -> list[Event]:
    return [Event(e.type, e.ts, {**e.attrs, "n": e.id}, e.id) for e in stream]


def _lead(
    policy: str,
    types: list[str],
    filters: list[int | None],
    within: int | None,
    grouped: bool = False,
) -> str:
    names = NAMES[: len(types)]
    streams_ = ", ".join(f"{t} AS {n}" for t, n in zip(types, names, strict=True))
    elements = [
        n if f is None else f"{n}.filter({n}.x > {f})" for n, f in zip(names, filters, strict=True)
    ]
    if within is not None:  # last - first <= W is last - first < W + 1 (integer times)
        elements[-1] = f"{elements[-1]} Within {within + 1} s From a"
    args = ", ".join(f"{n}.n AS {n}" for n in names)
    return f"FROM {streams_} MATCH {policy}({' Followed By '.join(elements)}) EMIT Event M({args})"


def _sase(types: list[str], filters: list[int | None], within: int | None) -> str:
    names = NAMES[: len(types)]
    variables = ", ".join(f"{t} {n}" for t, n in zip(types, names, strict=True))
    conditions = " AND ".join(
        f"{n}.x > {f}" for n, f in zip(names, filters, strict=True) if f is not None
    )
    where = (
        f" WHERE skip_till_any_match {{ {conditions} }}"
        if conditions
        else (" WHERE skip_till_any_match")
    )
    window = "" if within is None else f" WITHIN {within}"
    return f"PATTERN SEQ({variables}){where}{window}"


def _ids(match: kleene.Match) -> tuple[Any, ...]:
    return tuple(match.ids()[n][0] for n in NAMES if n in match.ids())


@given(stream=streams(max_size=8), shape=sequences(), within=st.sampled_from([None, 1, 2, 4]))
def test_all_is_skip_till_any_match(
    stream: tuple[Event, ...], shape: tuple[list[str], list[int | None]], within: int | None
) -> None:
    types, filters = shape
    events = _numbered(stream)
    emitted = kleene.lead.run(_lead("all", types, filters, within), events)
    matches = kleene.match(_sase(types, filters, within), events, plan="reference")
    assert sorted(tuple(e.attrs.values()) for e in emitted) == sorted(map(_ids, matches))
    grouped = kleene.lead.run(_lead("all", types, filters, within, grouped=True), events)
    assert sorted(tuple(e.attrs.values()) for e in grouped) == sorted(map(_ids, matches))
    # each is emitted when its last event arrives
    last = {e.id: e.ts for e in events}
    assert all(e.ts == last[e.attrs[NAMES[len(types) - 1]]] for e in emitted)


@given(stream=streams(max_size=8), shape=sequences())
def test_every_is_non_overlapping_output(
    stream: tuple[Event, ...], shape: tuple[list[str], list[int | None]]
) -> None:
    types, filters = shape
    events = _numbered(stream)
    emitted = kleene.lead.run(_lead("every", types, filters, None), events)
    matches = kleene.match(
        _sase(types, filters, None), events, plan="nfa", output="non_overlapping"
    )
    assert [tuple(e.attrs.values()) for e in emitted] == [_ids(m) for m in matches]
