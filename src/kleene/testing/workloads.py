"""Event generators in the style of the papers' experiments.

`HospitalStream` is a treatment log like the match-window paper's Onco data: patients'
events (an activity type, a value) over days. `GameStream` is the LEAD paper's Example 1:
game installations, then the players' accesses, shares and artifacts bought. `StockStream`
is the SASE+ and AFA papers' stock ticker: symbols whose frequencies run from the rarest to
the most frequent by a set ratio (the lazy-NFA paper's knob), a price random walk per symbol
that goes up with probability `p_up`, down or stays with (1 - p_up) / 2 each, and a uniform
volume. Deterministic for a seed.

>>> from kleene.testing.workloads import StockStream
>>> stream = StockStream(size=4, symbols=2, seed=1)
>>> [(e.type, e.ts, e.attrs["symbol"]) for e in stream.events()]
[('Stock', 0, 'MSFT'), ('Stock', 1, 'MSFT'), ('Stock', 2, 'IBM'), ('Stock', 3, 'IBM')]
>>> list(stream.events()) == list(StockStream(size=4, symbols=2, seed=1).events())
True
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kleene.events import Event

__all__ = ["TICKERS", "GameStream", "HospitalStream", "StockStream"]

TICKERS = (
    "IBM", "MSFT", "AAPL", "GOOG", "ORCL", "INTC", "CSCO", "AMZN", "NVDA", "ADBE",
    "QCOM", "TXN", "AMD", "SAP", "SONY", "NOK", "ERIC", "ASML", "TSM", "BABA",
)  # fmt: skip


@dataclass(frozen=True)
class StockStream:
    """A generated stock ticker stream; see the module docstring.

    - `size`, `symbols`: how many events, over how many symbols;
    - `ratio`: how many times more frequent the most frequent symbol is than the rarest (1:
      uniform); the frequencies in between grow geometrically;
    - `p_up`: probability that a symbol's next price is higher;
    - `types`: "constant" gives every event the type `Stock` (the SASE+ setting); "symbol"
      makes the symbol the event type (the lazy-NFA setting, where types differ in
      frequency);
    - `interval`: timestamp step between events (timestamps start at 0);
    - `history`: how many previous prices each event carries as a list (0: none), for
      correlation predicates like the lazy-NFA paper's;
    - `rotate`: every `rotate` events the frequencies move on by one symbol, so the rarest
      symbol changes (the lazy-NFA paper's dynamic stream, section 8.3; 0: never);
    - `batch`: rows per generated batch.
    """

    size: int = 10_000
    symbols: int = 10
    ratio: float = 1.0
    p_up: float = 0.5
    seed: int = 0
    types: str = "constant"
    interval: int | float = 1
    history: int = 0
    rotate: int = 0
    batch: int = 65_536

    def __post_init__(self) -> None:
        if self.size < 0 or self.symbols < 1:
            raise ValueError("size must be >= 0 and symbols >= 1")
        if self.ratio < 1:
            raise ValueError("ratio is most frequent / rarest, so at least 1")
        if not 0 <= self.p_up <= 1:
            raise ValueError("p_up is a probability, between 0 and 1")
        if self.types not in ("constant", "symbol"):
            raise ValueError("types is 'constant' or 'symbol'")
        if self.rotate < 0:
            raise ValueError("rotate is a number of events, 0 for never")

    @property
    def names(self) -> list[str]:
        """The symbols, rarest first."""
        return [TICKERS[k] if k < len(TICKERS) else f"S{k:03d}" for k in range(self.symbols)]

    @property
    def weights(self) -> list[float]:
        """Relative frequencies, rarest (1) to most frequent (`ratio`)."""
        if self.symbols == 1:
            return [1.0]
        return [self.ratio ** (k / (self.symbols - 1)) for k in range(self.symbols)]

    def batches(self) -> Iterator[dict[str, list[Any]]]:
        """Columns type, ts, symbol, price, volume (and history), a batch at a time."""
        rng = random.Random(self.seed)
        names, weights = self.names, self.weights
        prices = {name: rng.randint(50, 150) for name in names}
        pasts: dict[str, list[int]] = {name: [] for name in names}
        down = self.p_up + (1 - self.p_up) / 2
        done = 0
        while done < self.size:
            size = min(self.batch, self.size - done)
            if self.rotate:
                size = min(size, self.rotate - done % self.rotate)
                turn = (done // self.rotate) % self.symbols
                weights = self.weights[turn:] + self.weights[:turn]
            symbols = rng.choices(names, weights, k=size)
            columns: dict[str, list[Any]] = {
                "type": symbols if self.types == "symbol" else ["Stock"] * size,
                "ts": [(done + k) * self.interval for k in range(size)],
                "symbol": symbols,
                "price": [],
                "volume": [rng.randint(1, 1000) for _ in range(size)],
            }
            if self.history:
                columns["history"] = []
            for symbol in symbols:
                draw = rng.random()
                price = prices[symbol]
                price = (
                    price + 1 if draw < self.p_up else max(1, price - 1) if draw < down else price
                )
                prices[symbol] = price
                columns["price"].append(price)
                if self.history:
                    past = pasts[symbol]
                    columns["history"].append(list(past))
                    past.append(price)
                    del past[: -self.history]
            done += size
            yield columns

    def events(self) -> Iterator[Event]:
        """The stream as events (ids count from 0)."""
        position = 0
        for columns in self.batches():
            names = [n for n in columns if n not in ("type", "ts")]
            for kind, ts, *values in zip(
                columns["type"], columns["ts"], *(columns[n] for n in names), strict=True
            ):
                yield Event(kind, ts, dict(zip(names, values, strict=True)), position)
                position += 1


@dataclass(frozen=True)
class HospitalStream:
    """A generated hospital log: `size` events over `patients` patients, `per_day` events a
    day (timestamps count days from 0), each of one of `activities` activity types (`L00`,
    `L01`, ...; type 0 the most frequent, frequencies falling as 1/rank) with a value `V`
    and the patient id `PID`. Deterministic for a seed.

    >>> [(e.type, e.ts, e.attrs["PID"]) for e in HospitalStream(size=3, seed=2).events()]
    [('L00', 0, 27), ('L07', 0, 11), ('L00', 0, 21)]
    """

    size: int = 10_000
    patients: int = 30
    activities: int = 20
    per_day: int = 100
    seed: int = 0

    @property
    def names(self) -> list[str]:
        """The activity types, most frequent first."""
        return [f"L{k:02d}" for k in range(self.activities)]

    def events(self) -> Iterator[Event]:
        rng = random.Random(self.seed)
        names = self.names
        weights = [1 / (k + 1) for k in range(self.activities)]
        for position in range(self.size):
            attrs = {"PID": rng.randrange(self.patients), "V": rng.randint(1, 100)}
            kind = rng.choices(names, weights)[0]
            yield Event(kind, position // self.per_day, attrs, position)


@dataclass(frozen=True)
class GameStream:
    """The LEAD paper's mobile-game streams (Example 1): `users` players each install one of
    `games` games at a time spread over `days`, then access it, share it and buy artifacts
    over the next few days, as often as their engagement (drawn per player) makes them;
    about `size` events in all, sorted by time (seconds). Types `Installations`,
    `Accesses`, `Shares`, `ArtifactsBought`; attributes `uid` and `gid`. Deterministic for a
    seed.

    >>> [(e.type, e.ts) for e in GameStream(size=6, users=2, seed=3).events()]
    [('Installations', 2485716), ('Installations', 2540068), ('ArtifactsBought', 2802344)]
    """

    size: int = 100_000
    users: int = 1_000
    games: int = 1
    days: int = 30
    seed: int = 0

    def events(self) -> Iterator[Event]:
        rng = random.Random(self.seed)
        day = 86_400
        rows: list[tuple[int, int, str, int, int]] = []
        per_user = max(1, self.size // self.users - 1)
        actions = ["Accesses"] * 7 + ["ArtifactsBought"] * 2 + ["Shares"]
        for uid in range(self.users):
            gid = rng.randrange(self.games)
            t = rng.randrange(self.days * day)
            rows.append((t, len(rows), "Installations", uid, gid))
            engagement = rng.choice([0.1, 0.3, 1.0, 2.6])  # mean 1: a share of per_user
            span = rng.choice([1, 2, 4, 6]) * day  # how long they keep playing
            for _ in range(max(0, round(per_user * engagement))):
                rows.append((t + rng.randrange(span), len(rows), rng.choice(actions), uid, gid))
        rows.sort()
        for position, (t, _, kind, uid, gid) in enumerate(rows):
            yield Event(kind, t, {"uid": uid, "gid": gid}, position)
