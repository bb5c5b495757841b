"""One annotator process for the lease tests: take the next debate, decide it, until nothing needs it.

Usage: ``python lease_worker.py DB STUDY ANNOTATOR --lease S [--hold-after K] [--seed N]``.

It goes through the application layer the CLI (``peercore adjudicate``) and the
Adjudication page use (:mod:`peercore.assignment`), and writes one line per event,
flushed at once, so a test that kills it knows what it had done:

    ready                                   (imported, store open)
    claim <debate_id> <unix time> <lease expiry, ISO>
    decided <debate_id> <decision>          (after the decision is committed)
    refused <debate_id>                     (the overlap was full; nothing stored)
    holding <debate_id>                     (--hold-after: it holds a lease and stops working)
    done <decisions>
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from peercore import assignment
from peercore.store import Store

DECISIONS = ("model_a", "model_b", "tie", "both_bad")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("study")
    parser.add_argument("annotator")
    parser.add_argument("--lease", type=float, required=True)
    parser.add_argument("--hold-after", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--think", type=float, default=0.002, help="at most this many seconds per decision")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    store = Store(args.db, create=False)
    overlap = store.studies.settings(args.study)["overlap"]
    decided = 0
    print("ready", flush=True)
    while True:
        item = assignment.next_item(store, args.study, args.annotator, lease=args.lease)
        if item is None:
            if store.debates.queue(args.study, annotator=args.annotator, overlap=overlap).empty:
                break  # nothing needs this annotator any more
            time.sleep(0.05)  # what is left is held by others: wait for them or for their leases to run out
            continue
        print(f"claim {item.debate_id} {time.time():.3f} {item.expires_at}", flush=True)
        if args.hold_after is not None and decided >= args.hold_after:
            print(f"holding {item.debate_id}", flush=True)
            time.sleep(3600)  # the test kills this process here, lease held
        time.sleep(rng.uniform(0, args.think))
        decision = rng.choice(DECISIONS)
        try:
            assignment.decide(store, item.debate_id, args.annotator, decision)
        except assignment.DecisionRefused:
            print(f"refused {item.debate_id}", flush=True)
            continue
        decided += 1
        print(f"decided {item.debate_id} {decision}", flush=True)
    print(f"done {decided}", flush=True)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
