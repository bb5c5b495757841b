"""``peercore adjudicate``: take the next debate, decide one, or give up a lease, from a terminal.

The rules are the store's and :mod:`peercore.assignment`'s, the ones the Adjudication page
follows (leases, overlap, who may decide what).
"""

from __future__ import annotations

import json
import sys

from peercore.assignment import decide, lease_seconds, next_item, release
from peercore.store import QUEUE_KINDS, Store

__all__ = []


def _command(args) -> int:
    store = Store(args.db, create=False)
    try:
        if not store.studies.exists(args.study):
            raise ValueError(f"--study: no study named {args.study!r} in {store.path}")
        if args.next:
            item = next_item(store, args.study, args.annotator, lease=lease_seconds(args.lease_seconds),
                             scenario=args.scenario, criterion=args.criterion)
            print(json.dumps(None if item is None else item.to_dict(), ensure_ascii=False))
            if item is None:
                print("nothing to take: every debate that needs people is decided by you, skipped by you, or held "
                      "by others (their leases run out unless they decide)", file=sys.stderr)
            return 0
        if args.release:
            print(json.dumps({"released": release(store, args.study, args.annotator)}))
            return 0
        raw_id, decision = args.decide
        try:
            debate_id = int(raw_id)
        except ValueError:
            raise ValueError(f"--decide: DEBATE_ID must be an integer, got {raw_id!r}") from None
        queued = store.debates.table(args.study)
        if debate_id not in set(queued.loc[queued["kind"].isin(QUEUE_KINDS), "id"]):
            raise ValueError(f"--decide: study {args.study!r} has no debate #{debate_id} (take one with --next)")
        new = decide(store, debate_id, args.annotator, decision, note=args.note)
        print(json.dumps({"debate_id": debate_id, "annotator": args.annotator.strip(), "decision": decision,
                          "stored": "new" if new else "replaced"}))
        return 0
    finally:
        store.close()
