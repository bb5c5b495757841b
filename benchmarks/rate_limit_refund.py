"""Why the runner's tokens-per-minute bucket refunds over-estimates (peercore.runner._TokenBucket).

A call is charged before it is made with ``prompt + max_tokens`` tokens (its reply's
length is not known yet) and corrected with the usage it reports. aiolimiter's leaky
bucket has no refund: without it a TPM limit runs at ``used / estimated`` of its rate.
This measures calls per minute under one limit, with and without the refund, in
virtual time (an event loop whose clock jumps to the next timer: no waiting, exact).

Setup: 30,000 tokens/minute (OpenAI's tier-1 gpt-4o), a bucket of 1 s, 8 calls at once,
each call a 500-token prompt with ``max_tokens`` 512 (the review default) and a reply of
50, 150 or 300 tokens (a verdict line, a short and a long rationale), 10 virtual minutes.

Run: ``.venv/bin/python benchmarks/rate_limit_refund.py``; writes
``benchmarks/results/rate_limit_refund.md``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from virtual_time import in_virtual_time  # noqa: E402

from peercore.runner import _TokenBucket  # noqa: E402

TPM, PROMPT, MAX_TOKENS, CONCURRENCY, MINUTES = 30_000, 500, 512, 8, 10
OUT = Path(__file__).parent / "results" / "rate_limit_refund.md"


def calls_per_minute(reply_tokens: int, *, refund: bool) -> float:
    clock = [0.0]
    done = [0]

    async def worker(bucket: _TokenBucket) -> None:
        estimate = PROMPT + MAX_TOKENS
        while clock[0] < 60 * MINUTES:
            await bucket.take(estimate)
            await asyncio.sleep(0.5)  # the call
            if refund:
                bucket.adjust(PROMPT + reply_tokens - estimate)
            done[0] += 1

    async def main() -> None:
        bucket = _TokenBucket(TPM, burst_s=1.0, minimum=0.0)
        await asyncio.gather(*(worker(bucket) for _ in range(CONCURRENCY)))

    in_virtual_time(main, clock)
    return done[0] / MINUTES


def main() -> None:
    rows = ["| reply tokens | calls/min with refund | without | without / with | ideal TPM / used |",
            "|---:|---:|---:|---:|---:|"]
    for reply in (50, 150, 300):
        with_refund, without = calls_per_minute(reply, refund=True), calls_per_minute(reply, refund=False)
        rows.append(f"| {reply} | {with_refund:.1f} | {without:.1f} | {without / with_refund:.2f} | "
                    f"{TPM / (PROMPT + reply):.1f} |")
    text = (f"# Tokens-per-minute limit: refunds of over-estimates\n\n{TPM:,} tokens/minute, bucket 1 s, "
            f"{CONCURRENCY} calls at once, prompt {PROMPT} + max_tokens {MAX_TOKENS} charged up front, "
            f"{MINUTES} virtual minutes (`benchmarks/rate_limit_refund.py`).\n\n" + "\n".join(rows) + "\n")
    OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
