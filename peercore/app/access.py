"""Who may do what in a team deployment, checked where each action happens (issue 20).

Roles (weakest first, each with everything of the one before it):

=========  ==================================================================================
viewer     read every page of the study
annotator  + adjudicate debates (make and edit their own decisions), answer label requests
editor     + create a study, import, export, configure reviewers, launch / cancel / resume
           runs that spend the server's API keys, edit the guidelines and the overlap
owner      + delete the study, grant roles
=========  ==================================================================================

A role is global or held in one study; a study role overrides a global one, and an
address beats its domain (:meth:`peercore.store.Store.access.role_of`). Roles live in the store,
seeded from the deployment's ``[peerboard.roles]`` configuration (:func:`seed_roles`):
the first owner comes from that configuration, never from whoever signs in first.

Who is asking is an :class:`Actor`. With login configured, a visitor who has not signed in
may do nothing, not even read. Without login (the default: one machine, "open to anyone
who can reach this port") the dashboard runs as it always has: :meth:`Actor.local_user` may do
everything.

Every action function here is the check (:func:`require`), the same store write the pages
make today, and one record in the audit log (:meth:`peercore.store.Store.access.record_action`),
the write and its record in one transaction. A refused action raises :class:`AccessDenied`
before anything is written: the store is left byte-identical and nothing is recorded.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peercore.assignment import DecisionRefused
from peercore.errors import AccessDenied
from peercore.io.importer import import_bundle as _import_bundle
from peercore.io.importer import import_path
from peercore.io.rules import quote
from peercore.runner import RunHandle, RunResult, start_run
from peercore.store.access import ROLE_NAMES, normalise_who

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["Role", "Action", "NEEDS", "Actor", "AccessDenied", "role_for", "allowed", "require", "seed_roles",
           "create_study", "import_file", "delete_study", "edit_guidelines", "set_overlap", "grant", "adjudicate",
           "undo_decision", "edit_decision", "launch_run", "cancel_run", "finish_run", "import_bundle",
           "configure_judges", "configure_reviewers"]


class Role(enum.IntEnum):
    """A role; compare with ``<`` / ``>=`` (each includes the ones below it)."""

    VIEWER = 1
    ANNOTATOR = 2
    EDITOR = 3
    OWNER = 4

    @property
    def label(self) -> str:
        """The role's name as stored and configured (``viewer`` ...)."""
        return self.name.lower()

    @classmethod
    def parse(cls, name: str) -> "Role":
        """The role named ``name`` (``viewer``, ``annotator``, ``editor``, ``owner``).

        Raises
        ------
        ValueError
            If ``name`` is not one of them (the value is quoted).
        """
        if not isinstance(name, str) or name.strip().lower() not in ROLE_NAMES:
            raise ValueError(f"role must be one of {ROLE_NAMES}, got {name!r}")
        return cls[name.strip().upper()]


class Action(str, enum.Enum):
    """Everything a page may do; the value is what the audit log records."""

    READ = "read"
    ADJUDICATE = "adjudicate"                  # make, edit or undo one's own decision
    ANSWER_LABEL_REQUEST = "answer_label_request"
    CREATE_STUDY = "create_study"
    IMPORT = "import"
    EXPORT = "export"
    CONFIGURE_REVIEWERS = "configure_reviewers"
    LAUNCH_RUN = "launch_run"
    CANCEL_RUN = "cancel_run"
    RESUME_RUN = "resume_run"
    EDIT_GUIDELINES = "edit_guidelines"
    SET_OVERLAP = "set_overlap"
    DELETE_STUDY = "delete_study"
    GRANT_ROLE = "grant_role"


#: The role each action needs (issue 20, "What to build", item 2).
NEEDS: dict[Action, Role] = {
    Action.READ: Role.VIEWER,
    Action.ADJUDICATE: Role.ANNOTATOR,
    Action.ANSWER_LABEL_REQUEST: Role.ANNOTATOR,
    Action.CREATE_STUDY: Role.EDITOR,
    Action.IMPORT: Role.EDITOR,
    Action.EXPORT: Role.EDITOR,
    Action.CONFIGURE_REVIEWERS: Role.EDITOR,
    Action.LAUNCH_RUN: Role.EDITOR,
    Action.CANCEL_RUN: Role.EDITOR,
    Action.RESUME_RUN: Role.EDITOR,
    Action.EDIT_GUIDELINES: Role.EDITOR,
    Action.SET_OVERLAP: Role.EDITOR,
    Action.DELETE_STUDY: Role.OWNER,
    Action.GRANT_ROLE: Role.OWNER,
}

# How a refusal names the action, in a study ({study}) and globally.
_WORDS = {
    Action.READ: ("Reading study {study}", "Reading"),
    Action.ADJUDICATE: ("Adjudicating in study {study}", "Adjudicating"),
    Action.ANSWER_LABEL_REQUEST: ("Answering label requests in study {study}", "Answering label requests"),
    Action.CREATE_STUDY: ("Creating a study", "Creating a study"),
    Action.IMPORT: ("Importing into study {study}", "Importing"),
    Action.EXPORT: ("Exporting study {study}", "Exporting"),
    Action.CONFIGURE_REVIEWERS: ("Configuring reviewers for study {study}", "Configuring reviewers"),
    Action.LAUNCH_RUN: ("Launching a run in study {study}", "Launching a run"),
    Action.CANCEL_RUN: ("Cancelling a run in study {study}", "Cancelling a run"),
    Action.RESUME_RUN: ("Resuming a run in study {study}", "Resuming a run"),
    Action.EDIT_GUIDELINES: ("Editing the guidelines of study {study}", "Editing guidelines"),
    Action.SET_OVERLAP: ("Changing the overlap of study {study}", "Changing the overlap"),
    Action.DELETE_STUDY: ("Deleting study {study}", "Deleting a study"),
    Action.GRANT_ROLE: ("Granting roles in study {study}", "Granting global roles"),
}

#: The name the audit log gives the single-machine user of a deployment without login.
LOCAL = "local"


@dataclass(frozen=True)
class Actor:
    """Who is asking.

    Attributes
    ----------
    who : the signed-in person's e-mail address (from the identity provider, never typed);
        '' for a visitor who has not signed in.
    signed_in : whether they signed in.
    local : the single-machine user of a deployment without login (:meth:`local_user`), who
        may do everything, as before roles existed.
    """

    who: str
    signed_in: bool
    local: bool = False

    @classmethod
    def local_user(cls) -> "Actor":
        """The user of a dashboard run without login (one machine): every action allowed."""
        return cls(LOCAL, signed_in=False, local=True)

    @classmethod
    def visitor(cls) -> "Actor":
        """Someone who has not signed in to a dashboard with login configured: nothing allowed."""
        return cls("", signed_in=False)

    @classmethod
    def signed_in_as(cls, email: str) -> "Actor":
        """A person signed in with ``email`` (lower-cased)."""
        return cls(normalise_who(email), signed_in=True)

    @property
    def name(self) -> str:
        """How the audit log names them."""
        return self.who if self.who else "(not signed in)"


def role_for(store: "Store", actor: Actor, study: str | None) -> Role | None:
    """``actor``'s role in ``study`` (globally, for None), or None when they have none. Reads only."""
    if actor.local:
        return Role.OWNER
    if not actor.signed_in or not actor.who:
        return None
    name = store.access.role_of(actor.who, study)
    return None if name is None else Role.parse(name)


def allowed(store: "Store", actor: Actor, action: Action, study: str | None = None) -> bool:
    """Whether ``actor`` may do ``action`` in ``study`` (for showing or hiding a control). Reads only."""
    held = role_for(store, actor, study)
    return held is not None and held >= NEEDS[Action(action)]


def require(store: "Store", actor: Actor, action: Action | str, study: str | None = None) -> Role:
    """Check that ``actor`` may do ``action`` in ``study``; return their role. Reads only.

    Parameters
    ----------
    action : an :class:`Action` (or its value).
    study : the study acted on; None for a global action (creating a study, a global grant),
        which needs the role globally.

    Raises
    ------
    AccessDenied
        With one sentence naming the role the action needs and the one held (nothing is
        written, nothing is recorded).
    ValueError
        If ``action`` is not an :class:`Action`.
    """
    try:
        action = Action(action)
    except ValueError:
        raise ValueError(f"action must be one of {[a.value for a in Action]}, got {action!r}") from None
    needed = NEEDS[action]
    held = role_for(store, actor, study)
    if held is not None and held >= needed:
        return held
    in_study, globally = _WORDS[action]
    what = in_study.format(study=quote(study)) if study is not None else globally
    where = f" in study {quote(study)}" if study is not None else " globally"
    if not actor.signed_in and not actor.local:
        message = f"{what} needs the {needed.label} role; sign in first."
    elif held is None:
        message = f"{what} needs the {needed.label} role; {actor.who} has no role{where}."
    else:
        message = f"{what} needs the {needed.label} role; {actor.who} is {_a(held)}{where}."
    raise AccessDenied(message, who=actor.who or None, action=action.value, needed=needed.label,
                       held=None if held is None else held.label, study=study)


def _a(role: Role) -> str:
    return f"{'an' if role.label[0] in 'aeiou' else 'a'} {role.label}"


def seed_roles(store: "Store", config: Mapping) -> int:
    """Grant the global roles a deployment's configuration names; return how many changed.

    ``config`` is the ``[peerboard.roles]`` table of ``.streamlit/secrets.toml`` (or the
    whole secrets, holding it under ``peerboard.roles``): role -> list of e-mail
    addresses and ``@domain``\\ s, e.g. ``owner = ["ada@example.com"]``, ``viewer =
    ["@example.com"]``. Each named address or domain gets that role globally, granted by
    ``configuration``; a change is recorded in the audit log (actor ``configuration``),
    an unchanged role is not written again (so seeding on every start writes nothing).
    Roles granted in the dashboard to others are left as they are.

    Raises
    ------
    ValueError
        If a role name or an address is not valid, one address is listed under two
        roles, or the configuration names no owner (the first owner must come from it).
    """
    table = config
    if isinstance(config, Mapping) and "peerboard" in config:
        table = config["peerboard"].get("roles", {}) if isinstance(config["peerboard"], Mapping) else {}
    if not isinstance(table, Mapping):
        raise ValueError(f"[peerboard.roles] must map a role to a list of addresses, got {type(table).__name__}")
    wanted: dict[str, Role] = {}
    for name, people in table.items():
        role = Role.parse(str(name))
        if isinstance(people, str) or not isinstance(people, Sequence):
            raise ValueError(f"[peerboard.roles] {name} must be a list of addresses or '@domain's, got {people!r}")
        for person in people:
            who = normalise_who(person)
            if who in wanted and wanted[who] != role:
                raise ValueError(f"[peerboard.roles] names {who} as both {wanted[who].label} and {role.label}")
            wanted[who] = role
    if Role.OWNER not in wanted.values():
        raise ValueError("[peerboard.roles] names no owner; add e.g. owner = [\"you@example.com\"] "
                         "(the first owner comes from the configuration, never from whoever signs in first)")
    changed = 0
    with store.transaction():
        held = {row.who: row.role for row in store.access.roles().itertuples() if row.study is None}
        for who, role in sorted(wanted.items()):
            if held.get(who) == role.label:
                continue
            store.access.grant_role(who, role.label, granted_by="configuration")
            store.access.record_action("configuration", Action.GRANT_ROLE.value, details={
                "who": who, "role": role.label, "before": held.get(who), "scope": "global"})
            changed += 1
    return changed


# ------------------------------------------------------------------------ actions


def create_study(store: "Store", actor: Actor, name: str, *, description: str = "",
                 source: Mapping | None = None) -> int:
    """Create a study (needs the editor role globally); returns its id. The store's :meth:`create_study`."""
    require(store, actor, Action.CREATE_STUDY, None)
    with store.transaction():
        study_id = store.studies.create(name, description=description, source=source)
        store.access.record_action(actor.name, Action.CREATE_STUDY.value, study=name,
                                   details={"description": description})
    return study_id


def import_file(store: "Store", actor: Actor, path: str | Path, *, study: str, format: str = "auto",
                order: str | None = None, description: str = "", source: Mapping | None = None):
    """Import ``path`` into ``study`` (:func:`peercore.io.importer.import_path`, as the Data page does).

    Needs the editor role in the study; a study that does not exist yet is created, which
    needs the editor role globally. The import, the study's creation and the audit record
    (file name, format, counts) land in one transaction.

    Returns
    -------
    peercore.io.importer.ImportReport
    """
    def write(exists: bool):
        if not exists:
            store.studies.create(study, description=description, source=source)
        return import_path(path, store=store, study=study, format=format, order=order)

    return _checked_import(store, actor, study=study, file_name=path, format=format, write=write)


def import_bundle(store: "Store", actor: Actor, bundle, *, study: str, file_name: str, format: str = "auto",
                  order: str | None = None):
    """Write a parsed bundle into ``study`` (:func:`peercore.io.importer.import_bundle`, the Data page's import).

    The rule of :func:`import_file` (editor in the study; a new study needs the editor role
    globally), for a file the page has already read and shown: the import and its audit
    record (``file_name``, format, counts) land in one transaction.

    Returns
    -------
    peercore.io.importer.ImportReport
    """
    return _checked_import(store, actor, study=study, file_name=file_name, format=format,
                           write=lambda exists: _import_bundle(bundle, store=store, study=study, order=order))


def _checked_import(store: "Store", actor: Actor, *, study: str, file_name, format: str, write):
    """The import rule: editor in the study (a new study: editor globally); ``write(exists)``
    and its audit record (file name, format, counts) in one transaction."""
    exists = store.studies.exists(study)
    require(store, actor, Action.IMPORT if exists else Action.CREATE_STUDY, study if exists else None)
    with store.transaction():
        report = write(exists)
        store.access.record_action(actor.name, Action.IMPORT.value, study=study, details={
            "file": Path(str(file_name)).name, "format": format, "created_study": not exists,
            "report": _jsonable(report)})
    return report


def configure_judges(store: "Store", actor: Actor, study: str, judges: Sequence[Mapping]) -> int:
    """Set each judge's kind and the contestant it is (needs editor: it configures the study's reviewers).

    ``judges``: records with ``name``, ``kind`` and ``model_alias`` (empty: not a
    contestant), as the Studies page's judge table edits them. Only the judges whose kind
    or alias changes are written, each with one audit record (``configure_judge``: before
    and after); returns how many changed.
    """
    require(store, actor, Action.CONFIGURE_REVIEWERS, study)
    changed = 0
    with store.transaction():
        stored = {row.name: (row.kind, row.model_alias if isinstance(row.model_alias, str) else None)
                  for row in store.judges.table(study).itertuples()}
        for judge in judges:
            name = judge["name"]
            after = (judge.get("kind") or "other", judge.get("model_alias") or None)
            if stored.get(name) == after:
                continue
            store.judges.set(study, name, kind=after[0], model_alias=after[1])
            before = stored.get(name)
            store.access.record_action(actor.name, "configure_judge", study=study, details={
                "judge": name, "before": None if before is None else {"kind": before[0], "model_alias": before[1]},
                "after": {"kind": after[0], "model_alias": after[1]}})
            changed += 1
    return changed


def configure_reviewers(store: "Store", actor: Actor, study: str, reviewers: Sequence[Mapping]) -> list[dict]:
    """Keep ``reviewers`` as the study's configured reviewers (needs editor); returns them as stored.

    The Reviewers & runs page's list, whole (adding, editing and removing one are each a new
    list): :meth:`peercore.store.Store.studies.update_settings`, which scrubs values under
    secret-looking keys and refuses a value shaped like an API key, and one audit record
    (``configure_reviewers``: the list before and after, as stored), in one transaction. An
    unchanged list writes nothing.

    Raises
    ------
    AccessDenied
        Without the editor role in ``study`` (nothing written, nothing recorded).
    ValueError
        If a value is shaped like an API key or the list is not JSON (nothing written).
    """
    require(store, actor, Action.CONFIGURE_REVIEWERS, study)
    wanted = [dict(reviewer) for reviewer in reviewers]
    with store.transaction():
        before = store.studies.settings(study)["reviewers"]
        if wanted == before:
            return before
        store.studies.update_settings(study, reviewers=wanted)
        after = store.studies.settings(study)["reviewers"]
        store.access.record_action(actor.name, Action.CONFIGURE_REVIEWERS.value, study=study,
                                   details={"before": before, "after": after})
    return after


def delete_study(store: "Store", actor: Actor, study: str) -> None:
    """Delete ``study`` with everything in it (needs owner); the record of what it held outlives it."""
    require(store, actor, Action.DELETE_STUDY, study)
    with store.transaction():
        counts = store.studies.record_counts(study)
        store.studies.delete(study)
        store.access.record_action(actor.name, Action.DELETE_STUDY.value, study=study, details={"held": counts})


def edit_guidelines(store: "Store", actor: Actor, study: str, rubric: str) -> None:
    """Replace the study's adjudication guidelines (needs editor); the record keeps the text before and after."""
    require(store, actor, Action.EDIT_GUIDELINES, study)
    with store.transaction():
        before = store.studies.settings(study)["rubric"]
        store.studies.update_settings(study, rubric=rubric)
        store.access.record_action(actor.name, Action.EDIT_GUIDELINES.value, study=study,
                                   details={"before": before, "after": rubric})


def set_overlap(store: "Store", actor: Actor, study: str, overlap: int) -> None:
    """Set how many annotators each debate needs (needs editor); recorded with the value before."""
    require(store, actor, Action.SET_OVERLAP, study)
    with store.transaction():
        before = store.studies.settings(study)["overlap"]
        store.studies.update_settings(study, overlap=overlap)
        store.access.record_action(actor.name, Action.SET_OVERLAP.value, study=study,
                                   details={"before": before, "after": store.studies.settings(study)["overlap"]})


def grant(store: "Store", actor: Actor, who: str, role: Role | str, *, study: str | None = None) -> None:
    """Give ``who`` (an address or ``@domain``) ``role`` in ``study`` (globally for None).

    Needs the owner role where the role is granted (a global role: globally).
    """
    role = role if isinstance(role, Role) else Role.parse(role)
    require(store, actor, Action.GRANT_ROLE, study)
    who = normalise_who(who)
    with store.transaction():
        before = next((r.role for r in store.access.roles(study).itertuples() if r.who == who and r.study == study),
                      None)
        store.access.grant_role(who, role.label, study=study, granted_by=actor.name)
        store.access.record_action(actor.name, Action.GRANT_ROLE.value, study=study, details={
            "who": who, "role": role.label, "before": before, "scope": "study" if study is not None else "global"})


def adjudicate(store: "Store", actor: Actor, debate_id: int, verdict: str, *, note: str = "",
               token: str | None = None, blind: bool | None = None) -> bool:
    """Record the actor's decision on a debate under their own name (needs annotator in its study).

    :meth:`peercore.store.Store.debates.adjudicate`, as the Adjudication page calls it, with the
    annotator being the signed-in address (nobody decides under another's name). A new
    decision is recorded as ``adjudicate``, a changed one as ``edit_decision``. A
    :class:`peercore.assignment.DecisionRefused` (overlap filled) is raised as before and
    recorded nowhere (the store ends the annotator's lease, as it always did).
    """
    study = store.debates.study_of(debate_id)
    require(store, actor, Action.ADJUDICATE, study)
    refused = None
    with store.transaction():
        try:
            new = store.debates.adjudicate(int(debate_id), actor.name, verdict, note=note, token=token, blind=blind)
        except DecisionRefused as exc:
            refused = exc
        else:
            store.access.record_action(actor.name, "adjudicate" if new else "edit_decision", study=study,
                                       details={"debate_id": int(debate_id), "verdict": verdict, "note": note})
    if refused is not None:
        raise refused
    return new


def undo_decision(store: "Store", actor: Actor, debate_id: int, *, token: str | None = None) -> bool:
    """Remove the actor's own decision on a debate (needs annotator); True if there was one to remove."""
    study = store.debates.study_of(debate_id)
    require(store, actor, Action.ADJUDICATE, study)
    with store.transaction():
        removed = store.debates.undo_adjudication(int(debate_id), actor.name, token=token)
        if removed:
            store.access.record_action(actor.name, "undo_decision", study=study, details={"debate_id": int(debate_id)})
    return removed


def edit_decision(store: "Store", actor: Actor, debate_id: int, decision: str, *, reason: str,
                  note: str | None = None) -> bool:
    """Change one of the actor's own decisions, any of them, with a reason (needs annotator in its study).

    :meth:`peercore.store.Store.debates.edit_adjudication`: the decision row is updated in place (the
    gold set, alpha and agreement use it at once) and the change is appended to the
    decision history (before, after, reason); the audit log records ``edit_decision`` with
    the same facts, in the same transaction. An unchanged decision writes nothing and
    returns False.

    Raises
    ------
    AccessDenied
        Without the annotator role in the debate's study (nothing written).
    ValueError
        If ``reason`` is empty or ``decision`` is not a decision.
    peercore.store.StoreError
        If the actor has no decision on the debate.
    """
    study = store.debates.study_of(debate_id)
    require(store, actor, Action.ADJUDICATE, study)
    with store.transaction():
        before = store.debates.adjudications(study)
        mine = before[(before["debate_id"] == int(debate_id)) & (before["annotator"] == actor.name)]
        changed = store.debates.edit_adjudication(int(debate_id), actor.name, decision, reason=reason,
                                                  changed_by=actor.name, note=note)
        if changed:
            store.access.record_action(actor.name, "edit_decision", study=study, details={
                "debate_id": int(debate_id), "before": mine["decision"].iloc[0], "verdict": decision,
                "reason": reason.strip()})
    return changed


def launch_run(store: "Store", actor: Actor, job, *, estimated_cost_usd: float | None, run_id: str | None = None,
               start: Callable[..., RunHandle] | None = None, **start_options: Any) -> RunHandle:
    """Start (``run_id`` None) or resume a run that spends the deployment's keys (needs editor in ``job.study``).

    :func:`peercore.runner.start_run`, as the Reviewers page calls it (``start_options``:
    ``on_progress``, ``prices`` ...). The record (``launch_run`` or ``resume_run``) holds
    the run's id, kind and the estimated cost the page showed; :func:`finish_run` records
    the final cost. ``start`` replaces :func:`~peercore.runner.start_run` (tests).
    """
    action = Action.LAUNCH_RUN if run_id is None else Action.RESUME_RUN
    study = job.study
    require(store, actor, action, study)
    handle = (start or start_run)(job, store, run_id=run_id, **start_options)
    store.access.record_action(actor.name, action.value, study=study, details={
        "run_id": handle.run_id, "kind": type(job).__name__,
        "estimated_cost_usd": None if estimated_cost_usd is None else float(estimated_cost_usd)})
    return handle


def cancel_run(store: "Store", actor: Actor, handle: RunHandle, *, study: str) -> None:
    """Ask a live run to stop (needs editor in ``study``); recorded as ``cancel_run``."""
    require(store, actor, Action.CANCEL_RUN, study)
    handle.cancel()
    store.access.record_action(actor.name, Action.CANCEL_RUN.value, study=study, details={"run_id": handle.run_id})


def finish_run(store: "Store", actor: Actor, result: RunResult, *, study: str) -> int:
    """Record how a run the actor launched ended, with its final cost; returns the record's id.

    Not a permission check (the launch was checked): the page calls it once when the run
    ends. ``cost_usd`` is None when a model's price is unknown.
    """
    return store.access.record_action(actor.name, "finish_run", study=study, details={
        "run_id": result.run_id, "status": result.status, "done": result.done, "total": result.total,
        "failed": result.failed, "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
        "final_cost_usd": None if result.cost_usd is None else float(result.cost_usd)})


def _jsonable(report) -> dict:
    """An import report as plain data for the audit record."""
    if dataclasses.is_dataclass(report):
        return {f.name: _plain(getattr(report, f.name)) for f in dataclasses.fields(report)}
    return {"report": str(report)}


def _plain(value):
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)

