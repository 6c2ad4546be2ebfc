"""The stock generator: deterministic, with the frequency ratio and up-probability asked for."""

from collections import Counter

import pytest

from kleene.testing.workloads import StockStream


def test_same_seed_same_stream_other_seed_other_stream():
    assert list(StockStream(size=300, seed=4).events()) == list(
        StockStream(size=300, seed=4).events()
    )
    assert list(StockStream(size=300, seed=4).events()) != list(
        StockStream(size=300, seed=5).events()
    )


def test_frequency_ratio_and_price_walk():
    stream = StockStream(size=60_000, symbols=3, ratio=50, p_up=0.7, seed=1)
    counts = Counter(e["symbol"] for e in stream.events())
    rarest, middle, most = (counts[n] for n in stream.names)
    assert 40 < most / rarest < 62
    assert rarest < middle < most
    ups = downs = 0
    last: dict = {}
    for event in stream.events():
        symbol = event["symbol"]
        if symbol in last:
            ups += event["price"] > last[symbol]
            downs += event["price"] < last[symbol]
        last[symbol] = event["price"]
    assert 0.68 < ups / 60_000 < 0.72
    assert 0.13 < downs / 60_000 < 0.17


def test_symbol_types_interval_and_history():
    events = list(StockStream(size=50, symbols=2, types="symbol", interval=0.5, history=3).events())
    assert {e.type for e in events} == {"IBM", "MSFT"}
    assert [e.ts for e in events[:3]] == [0, 0.5, 1.0]
    for event in events:
        assert len(event["history"]) <= 3
    ibm = [e for e in events if e["symbol"] == "IBM"]
    assert ibm[3]["history"] == [ibm[0]["price"], ibm[1]["price"], ibm[2]["price"]]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"ratio": 0.5}, "ratio"),
        ({"p_up": 2}, "probability"),
        ({"symbols": 0}, "symbols"),
        ({"types": "region"}, "types"),
    ],
)
def test_bad_settings(bad, message):
    with pytest.raises(ValueError, match=message):
        StockStream(**bad)
