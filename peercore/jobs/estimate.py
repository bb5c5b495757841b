"""What a run will cost before it starts: calls, tokens and dollars (``--dry-run``).

The estimate plans every pending item's calls (:meth:`peercore.runner.Job.plan`) and
counts those not already in the cache (identical requests once). Prompt tokens are
``characters / 4`` (:func:`peercore.runner.estimate_tokens`); output tokens are given
as a *typical* figure and as the ``max_tokens`` bound. Calls that happen only in some
cases (later debate rounds) are counted in the upper figure only, so every number is a
range ``low .. high``:

- low: certain calls, typical output length;
- high: every possible call, output at ``max_tokens``.

A model missing from the price table makes the dollar figures unknown (None), and the
estimate names it. Jobs whose every backend runs on this machine cost nothing: their
cost reads "local, free". A question limit or a call budget that cut the job down is
said in :attr:`Estimate.note` (:mod:`peercore.jobs.budget`).

Items and calls are not the same: an item is one unit of work stored together (one
comparison by one reviewer; a discussion of one pair; a debate of one pair on one
criterion) and makes one or more calls (:data:`ITEM_CALLS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from peercore.jobs.pricing import PriceTable, load_prices
from peercore.runner import Job, estimate_tokens
from peercore.store import StoreError

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["Estimate", "estimate", "ITEM_CALLS", "items_and_calls"]

#: What one item of each job kind is, and the calls it makes.
ITEM_CALLS = {
    "review": "an item is one comparison of two answers by one reviewer: one call (K calls with samples)",
    "answers": "an item is one answer by one contestant: one call",
    "discussion": "an item is one pair discussed by the two reviewers with one of them leading: "
                  "two reviews plus one call per turn",
    "debate": "an item is one pair on one criterion debated by the panel: one call per agent per round; "
              "rounds after the first happen only while the agents disagree (the upper figure)",
}


def items_and_calls(kind: str) -> str:
    """The sentence that says what an item of ``kind`` is and how many calls it makes."""
    return ITEM_CALLS.get(kind, "an item is one unit of work; it makes one or more calls")

_BY_JUDGE = ["backend", "calls_low", "calls_high", "cached", "prompt_tokens_low", "prompt_tokens_high",
             "output_tokens_low", "output_tokens_high", "cost_usd_low", "cost_usd_high"]


@dataclass(frozen=True)
class Estimate:
    """The expected size of a run.

    Attributes
    ----------
    run_id, kind : the run this job would resume or start.
    items, pending_items : items in the job; items still to do.
    calls_low, calls_high : paid calls (certain ones; all possible ones).
    cached_calls : planned calls already in the cache (free).
    prompt_tokens_low/high, output_tokens_low/high : token ranges.
    cost_usd_low/high : dollar range, None when a price is unknown.
    unknown_prices : ``backend:model`` names missing from the price table.
    local : every backend runs on this machine (the cost is nothing).
    note : what a question limit or a call budget left out ('' when nothing).
    by_backend : the same figures per ``backend:model`` (DataFrame).
    """

    run_id: str
    kind: str
    items: int
    pending_items: int
    calls_low: int
    calls_high: int
    cached_calls: int
    prompt_tokens_low: int
    prompt_tokens_high: int
    output_tokens_low: int
    output_tokens_high: int
    cost_usd_low: float | None
    cost_usd_high: float | None
    unknown_prices: tuple[str, ...] = ()
    local: bool = False
    note: str = ""
    by_backend: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_BY_JUDGE), compare=False)

    def to_dict(self) -> dict:
        """JSON-able summary (the per-backend table as a list of records)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "by_backend"}
        out["unknown_prices"] = list(self.unknown_prices)
        out["by_backend"] = self.by_backend.to_dict(orient="records")
        return out

    def cost_text(self) -> str:
        """The cost in words: ``local, free``, a dollar range, or why it is unknown."""
        if self.local:
            return "local, free"
        if self.cost_usd_low is None:
            return f"unknown: no price for {', '.join(self.unknown_prices)}"
        low, high = f"${self.cost_usd_low:,.4f}", f"${self.cost_usd_high:,.4f}"
        return low if low == high else f"{low} .. {high}"

    def to_text(self) -> str:
        """The human summary printed by ``--dry-run``."""
        def rng(low, high, fmt="{:,}"):
            return fmt.format(low) if low == high else f"{fmt.format(low)} .. {fmt.format(high)}"

        lines = [
            f"run {self.run_id} ({self.kind}): {self.pending_items} of {self.items} items to do",
            f"  calls          {rng(self.calls_low, self.calls_high)} paid, {self.cached_calls:,} from the cache (free)",
            f"  prompt tokens  {rng(self.prompt_tokens_low, self.prompt_tokens_high)}  (characters / 4)",
            f"  output tokens  {rng(self.output_tokens_low, self.output_tokens_high)}  (typical .. max_tokens bound)",
        ]
        lines.append(f"  cost           {self.cost_text()}"
                     + (" (add it to a --prices file)" if self.cost_usd_low is None and not self.local else ""))
        lines.append(f"  ({items_and_calls(self.kind)})")
        if self.note:
            lines.insert(1, f"  {self.note}")
        if len(self.by_backend) > 1:
            table = self.by_backend[["calls_low", "calls_high", "cached", "cost_usd_low", "cost_usd_high"]]
            lines.append("")
            lines.append(table.to_string(float_format="{:,.4f}".format, na_rep="unknown"))
        return "\n".join(lines)


def estimate(job: Job, store: "Store", *, prices: PriceTable | None = None, run_id: str | None = None) -> Estimate:
    """Estimate the calls, tokens and dollars of running (or resuming) ``job``; spends nothing.

    Parameters
    ----------
    job : the job.
    store : where its inputs, its run (if already started) and the cache are.
    prices : price table (default :func:`peercore.jobs.pricing.load_prices`).
    run_id : the run to resume (default the job's deterministic id).

    Returns
    -------
    Estimate
    """
    prices = prices or load_prices()
    items = job.prepare(store)
    run_id = run_id or job.run_id()
    try:
        store.runs.get(run_id)
        wanted = set(items)
        pending = [k for k in store.runs.pending_items(run_id) if k in wanted]
    except StoreError:
        pending = list(items)
    seen: set[str] = set()
    cached = 0
    per: dict[str, dict] = {}
    unknown: set[str] = set()
    for item in pending:
        for call in job.plan(item):
            backend, request = call.backend, call.request
            key = backend.cache_key(request)
            if key in seen:
                continue
            seen.add(key)
            if store.runs.cached_call(key) is not None:
                cached += 1
                continue
            name = f"{backend.backend}:{backend.model}"
            row = per.setdefault(name, dict.fromkeys(_BY_JUDGE[1:], 0) | {"backend": name})
            prompt = estimate_tokens(request)
            high_out = request.max_tokens
            typical = min(call.typical_output_tokens or high_out, high_out)
            price = prices.price(backend.backend, backend.model)
            if price is None:
                unknown.add(name)
            row["calls_high"] += 1
            row["prompt_tokens_high"] += prompt
            row["output_tokens_high"] += high_out
            row["cached"] += 0
            if price is not None:
                row["cost_usd_high"] += price.cost(prompt, high_out)
            if not call.optional:
                row["calls_low"] += 1
                row["prompt_tokens_low"] += prompt
                row["output_tokens_low"] += typical
                if price is not None:
                    row["cost_usd_low"] += price.cost(prompt, typical)
    table = pd.DataFrame(list(per.values()), columns=_BY_JUDGE)
    for name in unknown:
        table.loc[table["backend"] == name, ["cost_usd_low", "cost_usd_high"]] = None
    table = table.set_index("backend")

    def total(column: str) -> int:
        return int(table[column].sum()) if len(table) else 0

    cost_low = cost_high = None
    if not unknown:
        cost_low = float(table["cost_usd_low"].sum()) if len(table) else 0.0
        cost_high = float(table["cost_usd_high"].sum()) if len(table) else 0.0
    return Estimate(
        run_id=run_id, kind=job.kind, items=len(items), pending_items=len(pending),
        calls_low=total("calls_low"), calls_high=total("calls_high"), cached_calls=cached,
        prompt_tokens_low=total("prompt_tokens_low"), prompt_tokens_high=total("prompt_tokens_high"),
        output_tokens_low=total("output_tokens_low"), output_tokens_high=total("output_tokens_high"),
        cost_usd_low=cost_low, cost_usd_high=cost_high, unknown_prices=tuple(sorted(unknown)), by_backend=table,
        local=bool(job.backends()) and all(b.backend == "local" for b in job.backends()),
        note=job.plan_note() if hasattr(job, "plan_note") else "",
    )
