"""The afa operator's index (a SortedDict with an in-order run after it) against a plain
SortedDict, over random sequences of every operation the operator makes."""

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sortedcontainers import SortedDict

from kleene.plans.afa.index import Index

#: (operation, a time): set (append or land among), pop by key, drop the first, look up.
OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["set", "set", "set", "pop", "popfirst", "get"]), st.integers(0, 30)),
    max_size=120,
)


def same(index: Index, model: SortedDict) -> None:
    assert len(index) == len(model)
    assert index.items() == list(model.items())
    assert list(index.values()) == list(model.values())
    for position in range(-len(model), len(model)):
        assert index.peekitem(position) == model.peekitem(position)
    for t in range(-1, 32):
        for arrival in (-1, 0, 5, 10**9):
            probe = (t, arrival)
            assert index.bisect_left(probe) == model.bisect_left(probe)
            assert index.bisect_right(probe) == model.bisect_right(probe)
            assert index.get(probe) == model.get(probe)


@given(operations=OPERATIONS)
def test_the_index_behaves_as_a_sorted_dict(operations):
    index, model = Index(), SortedDict()
    for arrival, (operation, t) in enumerate(operations):
        if operation == "set":
            key = (t, arrival)
            index[key] = model[key] = f"e{arrival}"
        elif operation == "pop" and model:
            key = model.peekitem(t % len(model))[0]
            assert index.pop(key) == model.pop(key)
        elif operation == "popfirst" and model:
            assert index.popfirst() == model.popitem(0)
        same(index, model)
    same(pickle.loads(pickle.dumps(index)), model)


def test_an_in_order_stream_never_fills_the_tree():
    index = Index()
    for t in range(200):
        index[(t, t)] = t
        if t % 3 == 2:
            index.popfirst()
    assert not index.tree
    assert len(index) == 200 - 66
    assert index.peekitem(0) == ((66, 66), 66)


def test_empty_index_errors():
    index = Index()
    with pytest.raises(IndexError):
        index.popfirst()
    with pytest.raises(IndexError):
        index.peekitem(0)
    with pytest.raises(KeyError):
        index.pop((1, 0))
