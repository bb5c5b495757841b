"""Token prices per backend and model, for run accounting and estimates.

The bundled table (``peercore/jobs/prices.toml``) holds list prices in US dollars per
million tokens; a user file (``--prices PATH`` or ``$PEERBOARD_PRICES``) in the same
format overrides entries. An unknown model has an unknown cost (None), never a guess.

Batch APIs (OpenAI Batch, Anthropic Message Batches) bill a fraction of the list price:
the table's ``[batch_rate]`` section gives it per backend (0.5 for both),
:meth:`PriceTable.at_batch_rate` gives the table a batch run is priced with.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Price", "PriceTable", "load_prices", "BUNDLED_PRICES", "ENV_PRICES"]

BUNDLED_PRICES = Path(__file__).with_name("prices.toml")
ENV_PRICES = "PEERBOARD_PRICES"


@dataclass(frozen=True)
class Price:
    """Dollars per million input (prompt) and output (completion) tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """``(prompt_tokens * input + completion_tokens * output) / 1e6`` dollars."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


@dataclass(frozen=True)
class PriceTable:
    """backend -> model (or ``"*"``) -> :class:`Price`.

    Lookup: exact model name; else the longest entry ``e`` with ``model`` starting with
    ``e + "-"`` (dated snapshots such as ``gpt-4o-2024-08-06``); else ``"*"``; else None.
    """

    prices: Mapping[str, Mapping[str, Price]] = field(default_factory=dict)
    meta: Mapping[str, object] = field(default_factory=dict)
    batch_rates: Mapping[str, float] = field(default_factory=dict)

    def price(self, backend: str, model: str) -> Price | None:
        """The price of ``backend:model``, or None when the table has no entry for it."""
        table = self.prices.get(backend, {})
        if model in table:
            return table[model]
        prefixes = [name for name in table if name != "*" and model.startswith(name + "-")]
        if prefixes:
            return table[max(prefixes, key=len)]
        return table.get("*")

    def cost(self, backend: str, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        """Dollars for one call, or None when the price is unknown."""
        price = self.price(backend, model)
        return None if price is None else price.cost(prompt_tokens, completion_tokens)

    def merged(self, other: "PriceTable") -> "PriceTable":
        """This table with ``other``'s entries added or replacing ours."""
        out = {backend: dict(models) for backend, models in self.prices.items()}
        for backend, models in other.prices.items():
            out.setdefault(backend, {}).update(models)
        return PriceTable(out, {**self.meta, **other.meta}, {**self.batch_rates, **other.batch_rates})

    def at_batch_rate(self) -> "PriceTable":
        """The table a batch run is priced with: each backend's prices times its batch rate.

        A backend without a ``[batch_rate]`` entry (no batch API known for it) has no
        price in the result, so its cost is unknown (None), never the list price.
        """
        out = {}
        for backend, models in self.prices.items():
            rate = self.batch_rates.get(backend)
            if rate is None:
                continue
            out[backend] = {name: Price(p.input * rate, p.output * rate) for name, p in models.items()}
        return PriceTable(out, {**self.meta, "tier": "batch"}, {})


def load_prices(path: str | os.PathLike[str] | None = None, *, bundled: bool = True) -> PriceTable:
    """Read a price table (TOML): the bundled one, overridden by ``path`` or ``$PEERBOARD_PRICES``.

    Parameters
    ----------
    path : a TOML file ``[backend] "model" = { input = $/1M, output = $/1M }``; default
        ``$PEERBOARD_PRICES`` when set.
    bundled : start from the bundled table (False: use only ``path``).

    Raises
    ------
    ValueError
        If the file is not valid TOML, or a price is missing, negative or not a number
        (the file, backend, model and value are named).
    """
    table = _read(BUNDLED_PRICES) if bundled else PriceTable()
    path = path if path is not None else os.environ.get(ENV_PRICES) or None
    if path is not None:
        table = table.merged(_read(Path(path)))
    return table


def _read(path: Path) -> PriceTable:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None
    meta = data.pop("meta", {})
    rates = data.pop("batch_rate", {})
    if not isinstance(rates, Mapping):
        raise ValueError(f"{path}: [batch_rate] must be a table of backend = fraction, got {rates!r}")
    for backend, rate in rates.items():
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"{path}: batch_rate.{backend} must be a number in [0, 1] (fraction of the list price), "
                             f"got {rate!r}")
    prices: dict[str, dict[str, Price]] = {}
    for backend, models in data.items():
        if not isinstance(models, Mapping):
            raise ValueError(f"{path}: [{backend}] must be a table of models, got {models!r}")
        prices[backend] = {}
        for model, entry in models.items():
            if not isinstance(entry, Mapping):
                raise ValueError(f"{path}: {backend}.{model} must be {{input = ..., output = ...}}, got {entry!r}")
            values = {}
            for side in ("input", "output"):
                value = entry.get(side)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                    raise ValueError(f"{path}: {backend}.{model}.{side} must be a number >= 0 ($ per 1M tokens), got {value!r}")
                values[side] = float(value)
            prices[backend][model] = Price(**values)
    return PriceTable(prices, meta, {k: float(v) for k, v in rates.items()})
