"""Who is asking, and what the dashboard lets them see and do (issue 20): glue for the pages.

The rules are :mod:`peercore.app.access` (roles, the action table, the checked action
functions that write and record); this module only finds out who is asking and words the
answers on the screen.

- :func:`current_actor`: with Streamlit's login configured (an ``[auth]`` section in
  ``.streamlit/secrets.toml``), the signed-in address (:meth:`Actor.signed_in_as`) or a
  visitor who may do nothing (:meth:`Actor.visitor`); without login, the single-machine
  user who may do everything (:meth:`Actor.local_user`). The identity comes from
  :func:`peercore.ui.adjudication.user_info` (``st.user``; the tests replace it).
- :func:`seed_from_secrets`: the ``[peerboard.roles]`` table of the secrets, seeded into
  the store once per process, store and configuration.
- :func:`gate`: called by ``app.py`` before any study is read; it stops every page for a
  visitor who has not signed in, or who holds no role anywhere.
- :func:`can` (show or disable a control), :func:`permit` (the check before a read that
  needs a role, e.g. an export) and :func:`refusal` (an :class:`AccessDenied` on screen).

Hiding a control is a courtesy: every write goes through an action function that checks
again, so a crafted request changes nothing.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import streamlit as st

from peercore.app.access import Action, Actor, AccessDenied, allowed, require, seed_roles
from peercore.assignment import identity
from peercore.errors import JudgmentError
from peercore.ui import adjudication as adj
from peercore.ui import data, safe, state

__all__ = ["login_configured", "current_actor", "seed_from_secrets", "gate", "can", "permit", "refusal",
           "readable", "roles_config", "OPEN_PORT"]

#: The Studies page's caption when no sign-in is configured.
OPEN_PORT = "Open to anyone who can reach this port: no sign-in is configured (see docs/TEAM.md)."


def login_configured() -> bool:
    """Whether Streamlit's built-in login is configured (``st.user`` knows ``is_logged_in``)."""
    return identity(adj.user_info())[0] != "typed"


def current_actor() -> Actor:
    """Who is asking, from ``st.user`` (:func:`peercore.ui.adjudication.user_info`).

    Without login configured: :meth:`Actor.local_user`. Configured, nobody signed in:
    :meth:`Actor.visitor`. Signed in: the account's e-mail address; an account whose
    provider gives no address is signed in under its name, which no role can name (so it
    may do nothing).
    """
    info = adj.user_info()
    mode, name = identity(info)
    if mode == "typed":
        return Actor.local_user()
    if mode == "signed_out":
        return Actor.visitor()
    email = (info or {}).get("email")
    if isinstance(email, str) and email.strip():
        try:
            return Actor.signed_in_as(email)
        except ValueError:
            pass
    return Actor(name.strip().lower(), signed_in=True)


def roles_config() -> dict:
    """The ``[peerboard.roles]`` table of ``st.secrets`` as plain data; {} when there is none.

    Only that table is read: nothing else of the secrets (client secret, cookie secret,
    API keys) leaves ``st.secrets`` here.
    """
    try:
        section = st.secrets.get("peerboard")
    except Exception:  # no secrets.toml: st.secrets raises on access
        return {}
    if not isinstance(section, Mapping) or not isinstance(section.get("roles"), Mapping):
        return {}
    return {str(role): [str(p) for p in people] if isinstance(people, (list, tuple)) else people
            for role, people in section["roles"].items()}


@st.cache_resource(show_spinner=False, max_entries=32)
def _seeded(db: str, config: str, _store) -> str | None:
    """Seed ``config`` (JSON) into the store once per (database, configuration); the problem, or None."""
    try:
        seed_roles(_store, json.loads(config))
    except ValueError as error:
        return str(error)
    return None


def seed_from_secrets(store) -> str | None:
    """Grant the roles ``[peerboard.roles]`` names (:func:`peercore.app.access.seed_roles`), once.

    Cached per process, database and configuration: a changed ``secrets.toml`` seeds again,
    an unchanged one writes nothing more. Returns the configuration's problem (an
    unknown role, no owner ...) as a sentence, or None (also when there is no table).
    """
    config = roles_config()
    if not config:
        return None
    return _seeded(data.db_path(), json.dumps(config, sort_keys=True), store)


def readable(store, actor: Actor, names: Iterable[str]) -> list[str]:
    """The studies of ``names`` that ``actor`` may read, in their order."""
    names = list(names)
    if actor.local:
        return names
    return [name for name in names if allowed(store, actor, Action.READ, name)]


def gate(store) -> Actor:
    """Who is asking; stops the page before any study is read when they may read nothing.

    With login configured: a visitor who has not signed in sees what PeerBoard is and a
    "Sign in" button; someone signed in who holds no role anywhere is told to ask an
    owner. Roles from ``[peerboard.roles]`` are seeded first (:func:`seed_from_secrets`);
    a configuration that cannot be applied is shown as an error (the roles already in the
    store still hold).
    """
    problem = seed_from_secrets(store)
    actor = current_actor()
    st.session_state[data.READABLE] = None
    if actor.local:
        return actor
    if problem:
        st.error(f"The roles in `[peerboard.roles]` (.streamlit/secrets.toml) could not be applied: "
                 f"{safe.md(problem)}", icon=":material/manage_accounts:")
    st.session_state[data.READABLE] = []  # until the checks below pass: no study
    if not actor.signed_in:
        _only(_sign_in_page)
    names = readable(store, actor, store.studies.table()["name"])
    if not names and not allowed(store, actor, Action.READ, None):  # no role anywhere
        _only(_no_role_page)
    st.session_state[data.READABLE] = names
    return actor


def _only(page) -> None:
    """Show ``page`` as the dashboard's only page, whatever page was asked for, and stop.

    Through ``st.navigation`` (hidden): a run that stopped before ``app.py``'s navigation
    would otherwise leave Streamlit in its old ``pages/`` folder mode, where asking for
    ``/leaderboard`` runs ``pages/leaderboard.py`` without ``app.py`` (and without this gate).
    """
    st.navigation([st.Page(page, title="PeerBoard", default=True)], position="hidden").run()
    st.stop()


def _sign_in_page() -> None:
    """What a visitor who has not signed in sees: what PeerBoard is, and the sign-in."""
    st.title("PeerBoard")
    st.markdown("PeerBoard ranks language models from judges' verdicts, measures the judges' biases and "
                "agreement with people, and collects human adjudications. This dashboard is shared by a "
                "team: sign in to see its studies.")
    st.button("Sign in", key="access_login", type="primary", icon=":material/login:", on_click=st.login)


def _no_role_page() -> None:
    """What someone signed in with no role anywhere sees."""
    actor = current_actor()
    st.title("PeerBoard")
    st.warning(f"You are signed in as {safe.code(actor.who)}, but you have no role in this dashboard: "
               "ask an owner to grant you one.", icon=":material/lock:")
    st.button("Sign out", key="access_logout", icon=":material/logout:", on_click=st.logout)


def can(action: Action | str, study: str | None = None) -> bool:
    """Whether the current actor may do ``action`` in ``study`` (to show or disable a control). Reads only."""
    return allowed(data.store(), current_actor(), Action(action), study)


def permit(action: Action | str, study: str | None = None) -> bool:
    """Check ``action`` for the current actor (:func:`peercore.app.access.require`); a refusal is shown, False."""
    try:
        require(data.store(), current_actor(), action, study)
    except AccessDenied as exc:
        refusal(exc)
        return False
    return True


def refusal(exc: AccessDenied, container=None) -> None:
    """Show a refused action (its sentence names the role needed and the one held) as an error."""
    (container or st).error(f"Not allowed: {safe.md(str(exc))}", icon=":material/block:")


def refusal_text(exc: AccessDenied) -> str:
    """The refusal as Markdown for a message kept in session state (shown on the next run)."""
    return f"Not allowed: {safe.md(str(exc))}"
