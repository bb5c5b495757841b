"""The whole dashboard on PostgreSQL (issue 13): ``PEERBOARD_DB=postgresql://user:password@host/db``.

Under streamlit.testing.v1.AppTest, on a fresh schema of the session's throwaway cluster
(tests/conftest.py ``pg_cluster``), with a password in the URL (the cluster trusts
127.0.0.1, so the password is accepted and ignored): the first run seeds the bundled
studies, every page of app.py's navigation runs, the leaderboard equals the one of a
SQLite file seeded the same way, the password is nowhere on screen, a decision taken on
Adjudication is in PostgreSQL for the next session, a server that is not there is said so
without the password, and reruns do not pile up connections.
"""

from __future__ import annotations

import gc
import re
import shutil
import threading

from urllib.parse import urlsplit

import pandas as pd
import pytest

from app_studies import PAGE_TITLES, REPO, app_test, open_page, problems
from peercore.app import Study
from peercore.store import Store

PASSWORD = "s3cret-pw"
APPLICATION = "peerboard-apptest-pg"  # marks this file's connections in pg_stat_activity

PAGES = PAGE_TITLES  # app.py's navigation, every page


def navigation() -> dict[str, str]:
    """The pages app.py's ``st.navigation`` lists (``st.Page("pages/<name>.py", title=...)``), in order."""
    source = (REPO / "app.py").read_text(encoding="utf-8")
    return dict(re.findall(r'st\.Page\("pages/(\w+)\.py", title="([^"]+)"', source))


BUNDLED = {"sample", "prd-vicuna80", "topicalchat-usr"}
SAMPLE_MODELS = ["local:qwen2.5-coder-1.5b", "local:smollm2-135m", "local:smollm2-135m@t1.0"]


def with_password(url: str, *, application: str = APPLICATION) -> str:
    """``postgresql://user@host...`` -> ``postgresql://user:PASSWORD@host...&application_name=...``."""
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{PASSWORD}@{host}&application_name={application}"


def rendered(at) -> str:
    """Everything the element tree holds: its repr and every element's protobuf (labels, help, values)."""
    parts = [repr(at._tree)]
    stack = [at._tree]
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        children = getattr(node, "children", None) or {}
        stack.extend(children.values())
    return "\n".join(parts)


def shown(text: str) -> str:
    """Markdown as read on screen: without backslash escapes, and a word shown as a code span (what
    :func:`peercore.ui.safe.md` does to a URL, so that no autolink is made) read as its text."""
    return text.replace("\\", "").replace("`", "")


def leaderboard(at) -> pd.DataFrame:
    found = [e.value for e in at.dataframe if {"rank", "model"} <= set(e.value.columns)]
    assert found, [list(e.value.columns) for e in at.dataframe]
    return found[0].reset_index(drop=True)


class Connections:
    """Counts the server connections of one ``application_name`` (pg_stat_activity), over a connection of its own.

    ``now()`` counts after a garbage collection; a background thread polls meanwhile and
    keeps the highest count seen (``peak``), i.e. what is open while the script runs.
    """

    def __init__(self, cluster_url: str, application: str) -> None:
        import psycopg

        self.application = application
        self._admin = psycopg.connect(cluster_url, autocommit=True)
        self._poller = psycopg.connect(cluster_url, autocommit=True)
        self._done = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _count(self, connection) -> int:
        return connection.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                                  (self.application,)).fetchone()[0]

    def _poll(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, self._count(self._poller))

    def now(self) -> int:
        gc.collect()
        return self._count(self._admin)

    def close(self) -> None:
        self._done.set()
        self._thread.join()
        self._poller.close()
        self._admin.close()


@pytest.fixture
def sample_only(tmp_path, monkeypatch):
    """$PEERBOARD_SAMPLE_DATA: the bundled sample's own files, without the PRD and TopicalChat bundles (faster)."""
    folder = tmp_path / "sample"
    folder.mkdir()
    for path in (REPO / "sample_data").iterdir():
        if path.is_file():
            shutil.copy(path, folder / path.name)
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", str(folder))
    return folder


# ------------------------------------------------------------------ every page, no password


def sidebar_database(at) -> tuple[str, str]:
    """The sidebar's database caption and its tooltip."""
    found = [(c.value, c.proto.help) for c in at.sidebar.caption if c.value.startswith("Database: ")]
    assert len(found) == 1, [c.value for c in at.sidebar.caption]
    return found[0]


def test_first_run_on_postgres_seeds_and_every_page_runs(pg_cluster, new_pg_url, tmp_path, monkeypatch):
    monkeypatch.delenv("PEERBOARD_SAMPLE_DATA", raising=False)  # the bundled studies, all of them
    url = with_password(new_pg_url())
    monkeypatch.setenv("PEERBOARD_DB", url)
    database = urlsplit(url).path.lstrip("/")  # the cluster's database ("peerboard")
    caption = f"Database: `{database} on 127.0.0.1`"
    redacted = f"postgresql://{urlsplit(url).username}:***@127.0.0.1:{urlsplit(url).port}/{database}?"
    at = app_test(page=None)  # the first run: seeds every bundled study, opens on Home
    assert problems(at) == []
    assert at.session_state["study"] == "sample"
    store = Store(url)
    try:
        assert set(store.studies.table()["name"]) == BUNDLED
        assert Study(store, "sample").counts()["judgments"] > 0
    finally:
        store.close()
    label, tooltip = sidebar_database(at)
    assert label == caption
    assert shown(tooltip).startswith(redacted), tooltip  # the full URL, its password masked
    assert list(navigation()) == list(PAGES), navigation()  # every page of the navigation, none left out
    for page, title in PAGES.items():
        open_page(at, page)
        assert problems(at) == [], page
        assert [t.value for t in at.title] == [title], page
        text = rendered(at)
        assert PASSWORD not in text, page
        assert redacted in shown(text), page  # the walk reads the tooltips too
        assert sidebar_database(at)[0] == caption, page
    on_postgres = leaderboard(open_page(at, "leaderboard"))

    # The same bundle seeded into a SQLite file, the same page: the same table.
    monkeypatch.setenv("PEERBOARD_DB", str(tmp_path / "same.sqlite"))
    on_sqlite = leaderboard(open_page(app_test(page=None), "leaderboard"))
    assert sorted(on_postgres["model"]) == SAMPLE_MODELS and (on_postgres["battles"] > 0).all()
    pd.testing.assert_frame_equal(on_postgres, on_sqlite)


# ------------------------------------------------------------------ writes land in PostgreSQL


def queue_line(at) -> str:
    lines = [m.value for m in at.markdown if "left in your queue" in m.value]
    assert len(lines) == 1, [m.value for m in at.markdown]
    return lines[0]


def decisions_table(at) -> pd.DataFrame:
    found = [e.value for e in at.dataframe if {"debate", "annotator", "decision", "note"} <= set(e.value.columns)]
    assert found, [list(e.value.columns) for e in at.dataframe]
    return found[0]


def test_a_decision_on_adjudication_is_in_postgres_for_the_next_session(pg_cluster, new_pg_url, sample_only,
                                                                         monkeypatch):
    url = with_password(new_pg_url())
    monkeypatch.setenv("PEERBOARD_DB", url)
    earlier = open_page(app_test(page=None), "adjudication")  # fills the caches at the revision before the write
    earlier.text_input(key="annotator").input("bea").run()
    assert problems(earlier) == []
    assert "9 left in your queue" in queue_line(earlier)

    at = open_page(app_test(page=None), "adjudication")
    at.text_input(key="annotator").input("bea").run()
    debate = int(at.subheader[0].value.removeprefix("Debate #").split()[0])
    at.text_input(key="adj_note_0").input("checked on postgres")
    at.button(key="adj_one").click().run()
    assert problems(at) == []
    assert any(f"debate #{debate} → Submission 1" in s.value for s in at.success)

    store = Store(url)
    try:
        decided = store.debates.adjudications("sample")
    finally:
        store.close()
    assert len(decided) == 1
    row = decided.iloc[0]
    assert (int(row["debate_id"]), row["annotator"], row["verdict"], row["note"]) == (
        debate, "bea", "model_a", "checked on postgres")

    later = open_page(app_test(page=None), "adjudication")  # another browser, same process (and caches)
    later.text_input(key="annotator").input("bea").run()
    assert problems(later) == []
    assert "8 left in your queue" in queue_line(later)
    table = decisions_table(later)
    assert table[["debate", "annotator", "decision", "note"]].values.tolist() == [
        [debate, "bea", "Submission 1", "checked on postgres"]]
    earlier.run()  # the first session, rerun, reads the new revision too
    assert "8 left in your queue" in queue_line(earlier)


# ------------------------------------------------------------------ a server that is not there


def test_a_server_that_is_not_there_is_said_so_without_its_password(monkeypatch):
    monkeypatch.setenv("PEERBOARD_DB", f"postgresql://u:{PASSWORD}@127.0.0.1:1/x")
    at = app_test(page=None)
    assert [e.value for e in at.exception] == []
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1, errors
    assert errors[0].startswith("The database could not be opened: ")
    assert "postgresql://u:***@127.0.0.1:1/x" in errors[0]
    assert PASSWORD not in rendered(at)
    assert [t.value for t in at.title] == []  # stopped before any page


# ------------------------------------------------------------------ connections do not pile up


def test_reruns_and_sessions_do_not_pile_up_connections(pg_cluster, new_pg_url, sample_only, monkeypatch):
    application = f"{APPLICATION}-reruns"
    url = with_password(new_pg_url(), application=application)
    monkeypatch.setenv("PEERBOARD_DB", url)
    counter = Connections(pg_cluster.url, application)
    try:
        counts = {"before": counter.now()}
        at = app_test(page=None)  # seeds the sample
        counts["first run"] = counter.now()
        cycle = ["leaderboard", "adjudication", "studies", "bias", "home", "debates", "efficiency", "data"]
        for i in range(1, 31):
            if i % 3 == 0:
                at.run()
            else:
                open_page(at, cycle[i % len(cycle)])
            assert problems(at) == [], i
            if i % 10 == 0:
                counts[f"{i} reruns"] = counter.now()
        sessions = [open_page(app_test(page=None), page) for page in ("leaderboard", "adjudication", "home")]
        assert all(problems(s) == [] for s in sessions)
        counts["3 more sessions"] = counter.now()
        peak = counter.peak
    finally:
        counter.close()
    print(f"connections of {application}: {counts}, peak while running {peak}")
    assert peak >= 1, "the app's connections were never seen: the count measures nothing"
    assert counts["before"] == 0
    assert max(counts.values()) <= 2, counts  # no connection outlives its script run's thread (beyond a straggler)
    assert counts["30 reruns"] <= counts["10 reruns"] + 1, counts  # not growing with the reruns
