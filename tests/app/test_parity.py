"""The CLI and the dashboard rank the same judgments the same way (issue 8, "one application layer").

On main before this change ``peercore rank --study`` and the Leaderboard page used
different judgments (gold or not), alias rules (strict vs lenient), judge selectors and
Elo settings. Now both call :meth:`peercore.study.Study.leaderboard`; this test checks,
for every method and the selections {all judges, LLM reviewers, one judge, humans}, on
the bundled sample study and on the PRD data imported as a user would, that
``peercore rank --study ... --format json`` (its defaults: 100 bootstrap rounds, seed 0)
gives exactly the table the page shows with its defaults.
"""

from __future__ import annotations

import json
import shutil

import pytest

from app_studies import REPO, app_test, open_page, problems, shared_data_dir
from peercore.cli import main
from peercore.io.importer import import_path
from peercore.store import Store
from peercore.ui.data import ensure_sample_study

# page label (and options) -> CLI arguments
METHODS = {
    "Win rate": ["--method", "winrate"],
    "Elo": ["--method", "elo"],
    "Bradley-Terry": ["--method", "bt"],
    "Peer Rank weighted": ["--method", "winrate", "--peer-weights", "prd"],
    "PoE": ["--method", "poe-gaussian"],
}
SELECTIONS = ("All judges", "LLM reviewers", "one judge", "Humans")


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """The sample study (as the app seeds it) and the PRD folder imported with `peercore import`."""
    path = tmp_path_factory.mktemp("parity") / "parity.sqlite"
    store = Store(path)
    ensure_sample_study(store, REPO / "sample_data")
    names = ["sample"]
    folder = shared_data_dir() / "prd_vicuna80"
    if folder.is_dir():
        import_path(folder, store=store, study="prd")
        names.append("prd")
    store.close()
    return path, names


def _cli(db, study: str, method: str, selection: str, judge: str | None, capsys) -> dict | None:
    args = ["rank", "--study", study, "--db", str(db), *METHODS[method], "--format", "json"]
    args += {"All judges": [], "LLM reviewers": ["--kind", "llm"], "Humans": ["--kind", "human"],
             "one judge": ["--judge", judge or ""]}[selection]
    code = main(args)
    out = capsys.readouterr()
    return json.loads(out.out) if code == 0 else None


def _page(at, method: str, selection: str, judge: str | None):
    at.selectbox(key="lb_method").set_value(method).run()
    if selection == "one judge":
        at.multiselect(key="lb_judges").set_value([judge]).run()
    else:
        at.button_group(key="lb_quick").set_value(selection).run()
    tables = [e.value for e in at.dataframe if {"rank", "model", "95% interval", "battles"} <= set(e.value.columns)]
    return tables[0] if tables else None


@pytest.mark.slow
@pytest.mark.parametrize("study", ["sample", "prd"])
def test_cli_rank_equals_the_leaderboard_page(studies, study, tmp_path, monkeypatch, capsys):
    source, names = studies
    if study not in names:
        pytest.skip("the PRD data (../shared/data/prd_vicuna80) is not present")
    db = tmp_path / "parity.sqlite"
    shutil.copy(source, db)
    monkeypatch.setenv("PEERBOARD_DB", str(db))
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    at = app_test()
    at.sidebar.selectbox(key="study").set_value(study).run()
    open_page(at, "leaderboard")
    judge = "gpt4" if study == "prd" else "local:qwen2.5-coder-1.5b"
    compared = 0
    for method in METHODS:
        for selection in SELECTIONS:
            cli = _cli(db, study, method, selection, judge, capsys)
            shown = _page(at, method, selection, judge)
            where = f"{study} / {method} / {selection}"
            if cli is None:  # e.g. Peer Rank with humans only: both refuse
                assert shown is None and any("Cannot rank" in e.value for e in at.error), where
                continue
            assert problems(at) == [], where
            assert shown is not None, where
            score = [c for c in shown.columns if c not in ("rank", "model", "95% interval", "battles", "preliminary")][0]
            digits = 3 if score == "win rate" or "PoE" in score else 1
            rows = cli["leaderboard"]
            assert shown["model"].tolist() == [r["model"] for r in rows], where
            assert shown["rank"].tolist() == [r["rank"] for r in rows], where
            assert shown["battles"].tolist() == [r["battles"] for r in rows], where
            assert shown["preliminary"].tolist() == [r["preliminary"] for r in rows], where
            assert shown[score].tolist() == [round(r["score"], digits + 1) for r in rows], where
            intervals = ["" if r["ci_low"] is None else f"{r['ci_low']:.{digits}f} – {r['ci_high']:.{digits}f}"
                         for r in rows]
            assert shown["95% interval"].tolist() == intervals, where
            compared += 1
    assert compared >= 15
