"""Item assignment for adjudication: leases, overlap, decisions stored once (issue 13).

Several annotators, in browsers or at a command line, adjudicate one study at once. An
annotator asks for the next debate and gets a **lease** on it: (debate, annotator,
expiry). While a lease is live, the debate counts as taken by that annotator:

- **Overlap 1**: a debate is offered to nobody else while someone holds it or has decided
  it, so no two annotators are ever offered the same debate.
- **Overlap N**: a debate is offered while ``decisions + live leases of others < N``, so
  at most N annotators hold or decide it; a decision beyond the N-th is refused, so
  exactly N distinct annotators decide each debate.
- **Overlap 0** (the default): every annotator decides every debate; a lease then only
  says who is working on what, and never keeps a debate from anyone else.

Leases expire (:data:`DEFAULT_LEASE_SECONDS`, or ``$PEERBOARD_LEASE_SECONDS``, or the
caller's ``lease_seconds``): a crashed annotator's debate goes back to the queue when its
lease runs out. Asking again before then renews the lease on the same debate (the page
asks on every render). An annotator holds at most one lease per study: taking a debate
gives up the one held before.

A decision is one row per (debate, annotator) (:meth:`peercore.store.Store.debates.adjudicate`):
deciding again replaces it and still counts once. The store accepts a decision only on a
debate the page could offer the annotator (:func:`offerable`), whoever asks (the page or
``peercore adjudicate --decide``): an unresolved debate whose decisions plus the live
leases of *other* annotators are fewer than the overlap (any, with overlap 0), or one
they decided already. Anything else is refused with :class:`DecisionRefused`, which says
why: an agreed debate (its consensus is its gold label), a debate others hold or decided
(a decision made after the annotator's lease ran out, or without taking it).

This module holds the rules and the application layer shared by the command line
(``peercore adjudicate``), the Adjudication page (:mod:`peercore.ui.adjudication`) and the
tests; :class:`peercore.store.Store` holds the SQL (``claim_debate``, ``leases``,
``release_leases``, ``adjudicate``).

Clocks: lease times are the database's UTC clock (:meth:`peercore.store.Store.clock`),
written as fixed-width ISO-8601 text that compares correctly as text. On PostgreSQL that
is the server's clock, so annotators on machines whose clocks disagree cannot take each
other's debates early; with SQLite every annotator's process runs on the one machine that
holds the file, and uses its clock.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from peercore.errors import PeercoreError

__all__ = [
    "DEFAULT_LEASE_SECONDS", "ENV_LEASE_SECONDS", "MAX_LEASE_SECONDS", "DecisionRefused", "Item",
    "lease_seconds", "stamp", "offerable", "identity", "refusal_message", "next_item", "decide", "release",
]

DEFAULT_LEASE_SECONDS = 600.0  # 10 minutes: long enough to read a debate, short enough to recover
MAX_LEASE_SECONDS = 86_400.0
ENV_LEASE_SECONDS = "PEERBOARD_LEASE_SECONDS"


class DecisionRefused(PeercoreError):
    """A decision was not stored: the debate is not one this annotator may decide now.

    The store refuses a decision the Adjudication page would never have offered
    (:meth:`peercore.store.Store.debates.adjudicate`, one rule for the page and ``peercore adjudicate``):

    - the debate is not waiting for people (``status`` ``agreed``: its agents settled it,
      and that consensus is its gold label; ``adjudicated``: imported with its label; or
      ``kind`` ``discussion``: a PRD discussion, never adjudicated);
    - with an overlap N, its decisions plus the live leases of other annotators fill N
      (``deciders`` + ``holders``), none of them this annotator's: a late decision after
      the annotator's lease ran out, or a decision on a debate others hold.

    Attributes
    ----------
    debate_id : int
    annotator : str
        Whose decision was refused.
    overlap : int
    deciders : list of str
        The annotators who decided the debate.
    holders : list of str
        Other annotators holding a live lease on it.
    status, kind : str
        The debate's status and kind.
    consensus : str or None
        The agents' consensus of an agreed (or imported adjudicated) debate.
    """

    def __init__(self, debate_id: int, annotator: str, *, overlap: int, deciders: list[str],
                 holders: list[str] = (), status: str = "unresolved", kind: str = "debate",
                 consensus: str | None = None) -> None:
        self.debate_id, self.annotator, self.overlap = int(debate_id), annotator, overlap
        self.deciders, self.holders = list(deciders), list(holders)
        self.status, self.kind, self.consensus = status, kind, consensus
        super().__init__(self.message())

    def message(self, *, name=str) -> str:
        """:func:`refusal_message` of this refusal; ``name`` renders each person's name (the page escapes them)."""
        return refusal_message(self.debate_id, name(self.annotator), overlap=self.overlap,
                               deciders=[name(d) for d in self.deciders], holders=[name(h) for h in self.holders],
                               status=self.status, kind=self.kind, consensus=self.consensus)


# What the adjudication queue offers: debates the agents left unresolved, and label
# requests (comparisons people are asked to label: issue 23's active inference, the rest
# of an escalation cascade). PRD discussions are never adjudicated.
QUEUE_KINDS = ("debate", "label_request")


@dataclass(frozen=True)
class Item:
    """A debate handed to an annotator, with the lease on it.

    ``decisions`` counts the decisions stored so far by anyone; ``expires_at`` is the
    lease's end (UTC, ISO-8601); ``renewed`` is True when the annotator already held it;
    ``kind`` is ``debate`` or ``label_request`` (a comparison people are asked to label, no
    transcript), whose ``metadata`` says who asked and why.
    """

    debate_id: int
    debate_key: str
    question_id: str
    model_a: str
    model_b: str
    criterion: str
    scenario: str
    n_rounds: int
    decisions: int
    expires_at: str
    renewed: bool
    kind: str = "debate"
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


# ------------------------------------------------------------------------- rules


def lease_seconds(value: float | str | None = None) -> float:
    """The lease length in seconds: ``value``, else ``$PEERBOARD_LEASE_SECONDS``, else 600.

    Raises
    ------
    ValueError
        If the value is not a number in (0, 86400]; the message names where it came from.
    """
    where = "lease_seconds"
    if value is None:
        value = os.environ.get(ENV_LEASE_SECONDS)
        where = ENV_LEASE_SECONDS
        if value is None or str(value).strip() == "":
            return DEFAULT_LEASE_SECONDS
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where} must be a number of seconds, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(seconds) or not 0 < seconds <= MAX_LEASE_SECONDS:
        raise ValueError(f"{where} must be more than 0 and at most {MAX_LEASE_SECONDS:g} seconds, got {value!r}")
    return seconds


def stamp(seconds: float) -> str:
    """A UTC time (seconds since the epoch) as fixed-width ISO-8601 text, e.g. ``2026-11-25T14:20:00.000+00:00``.

    The same format as every ``created_at`` in the store, so lease times compare correctly
    as text in SQL.
    """
    return datetime.fromtimestamp(float(seconds), timezone.utc).isoformat(timespec="milliseconds")


def offerable(*, decisions: int, leased_by_others: int, overlap: int, decided_by_me: bool) -> bool:
    """Whether a debate may be offered to an annotator.

    Not when they decided it already; with an overlap N > 0, only while
    ``decisions + leased_by_others < N`` (live leases of *other* annotators); with
    overlap 0 always. :meth:`peercore.store.Store.debates.claim` applies the same rule in SQL.
    """
    if decided_by_me:
        return False
    return overlap == 0 or decisions + leased_by_others < overlap


def identity(user: Mapping | None) -> tuple[str, str]:
    """Who is adjudicating, from what Streamlit's ``st.user`` holds (``st.user.to_dict()``).

    Returns
    -------
    (mode, name)
        ``("typed", "")`` when built-in login (``st.login``) is not configured (``user`` is
        None or has no ``is_logged_in``): the annotator types a name; ``("signed_out", "")``
        when it is configured and nobody is signed in; ``("signed_in", name)`` with the
        signed-in user's e-mail (unique per account), else their name, else the identity
        provider's subject id (an account with none of these counts as signed out).
    """
    if not user or "is_logged_in" not in user:
        return "typed", ""
    if not user.get("is_logged_in"):
        return "signed_out", ""
    for claim in ("email", "name", "preferred_username", "sub"):
        value = user.get(claim)
        if isinstance(value, str) and value.strip():
            return "signed_in", value.strip()
    return "signed_out", ""


def refusal_message(debate_id: int, annotator: str, *, overlap: int, deciders: list[str], holders: list[str] = (),
                    status: str = "unresolved", kind: str = "debate", consensus: str | None = None) -> str:
    """What an annotator reads when the store refuses their decision (see :class:`DecisionRefused`)."""
    debate = f"debate #{int(debate_id)}"
    not_stored = f"{annotator}'s decision was not stored"
    if kind not in QUEUE_KINDS:
        return (f"{debate} is a {kind}, not a debate: only debates whose agents disagreed and label requests are "
                f"adjudicated; {not_stored}.")
    if status == "agreed":
        return (f"{debate} is not waiting for people: its agents agreed ({consensus}), and that consensus is its "
                f"gold label; {not_stored}. Only unresolved debates are adjudicated (ask for the next one).")
    if status != "unresolved":
        label = f" ({consensus})" if consensus else ""
        return (f"{debate} is not waiting for people: it was imported already {status}{label}; {not_stored}. "
                "Only unresolved debates are adjudicated (ask for the next one).")
    who = ", ".join(deciders) if deciders else "others"
    if len(deciders) >= overlap:
        return (f"{debate} already has the {overlap} decision(s) it needs (by {who}); "
                f"{not_stored}: the debate was no longer held for them (their lease had run "
                "out, or they never took it) and others decided it. Ask for the next debate.")
    decided = f" and decided by {who}" if deciders else ""
    return (f"{debate} is held by {', '.join(holders)}{decided}, which fills the {overlap} decision(s) it needs; "
            f"{not_stored}: a debate is decided by those who hold it, and it comes back to the queue if they leave "
            "without deciding (their lease runs out). Ask for the next debate.")


# ------------------------------------------------------------- application layer


def next_item(store, study: str, annotator: str, *, lease: float | None = None, scenario: str | None = None,
              criterion: str | None = None, now: float | None = None) -> Item | None:
    """Take (or renew) a lease on the next debate ``annotator`` should decide; None when nothing is offerable.

    Parameters
    ----------
    store : :class:`peercore.store.Store`
    study, annotator : names (the annotator's surrounding spaces are dropped).
    lease : lease length in seconds (default :func:`lease_seconds`).
    scenario, criterion : only debates of this scenario / criterion (None: any).
    now : the clock, seconds since the epoch (default: the database's, ``store.clock()``; tests pass their own).

    Returns
    -------
    Item or None
        None means no debate can be offered now: the annotator decided or skipped every one
        that needs people, or the rest is held by others (see :meth:`Store.debates.leases`).
    """
    row = store.debates.claim(study, _name(annotator), lease_seconds=lease_seconds(lease), scenario=scenario,
                              criterion=criterion, now=None if now is None else float(now))
    return None if row is None else Item(**row)


def decide(store, debate_id: int, annotator: str, decision: str, *, note: str = "", token: str | None = None,
           blind: bool | None = None, now: float | None = None) -> bool:
    """Store ``annotator``'s decision on a debate and give up their lease on it.

    Returns True for a new decision, False when it replaced their earlier one (it still
    counts once toward the overlap).

    The debate must be one the page could offer the annotator (:func:`offerable`): an
    unresolved debate that, with an overlap N, has fewer than N decisions plus live leases
    of *other* annotators; or one they decided already (the new decision replaces theirs).
    The annotator's own live lease keeps their place, so the holder's decision is never
    refused for another's.

    Raises
    ------
    DecisionRefused
        If the debate is not waiting for people (agreed, imported adjudicated, a PRD
        discussion), or its overlap is filled by others' decisions and leases (their
        lease had run out and others took or decided it, or they never took it).
    ValueError
        If ``decision`` is not one of ``model_a``, ``model_b``, ``tie``, ``both_bad``.
    """
    return store.debates.adjudicate(int(debate_id), _name(annotator), decision, note=note, token=token, blind=blind,
                                    now=None if now is None else float(now))


def release(store, study: str, annotator: str) -> int:
    """Give up every lease ``annotator`` holds in ``study`` (e.g. when leaving); returns how many."""
    return store.debates.release_leases(study, _name(annotator))


def _name(annotator: str) -> str:
    if not isinstance(annotator, str) or not annotator.strip():
        raise ValueError(f"annotator name is empty (got {annotator!r})")
    return annotator.strip()
