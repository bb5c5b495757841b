"""The CLI and the dashboard rank the same judgments the same way (issue 8, "one application layer").

On main before this change ``peercore rank --study`` and the Leaderboard page used
different judgments (gold or not), alias rules (strict vs lenient), judge selectors and
Elo settings. Now both call :func:`peercore.app.leaderboard`; this test checks,
for every method and the selections {all judges, LLM reviewers, one judge, humans}, on
the bundled sample study and on the PRD data imported as a user would, that
``peercore rank --study ... --format json`` (its defaults: 100 bootstrap rounds, seed 0)
gives exactly the table the page shows with its defaults.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
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
    names = store.studies.table()["name"].tolist()  # sample, and the bundled prd-vicuna80 and topicalchat-usr
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
            assert shown[score].tolist() == [round(r["score"], digits) for r in rows], where
            intervals = ["" if r["ci_low"] is None else f"{r['ci_low']:.{digits}f} – {r['ci_high']:.{digits}f}"
                         for r in rows]
            assert shown["95% interval"].tolist() == intervals, where
            compared += 1
    assert compared >= 15


# ----------------------------------------------------------------- issue 11: the new options
#
# Each scenario sets the Leaderboard page's widgets and gives the CLI the same options; the
# page must show exactly `peercore rank --study ... --format json`'s rows.

def _baseline_model(study: str) -> str:
    return "gpt4" if study == "prd" else "local:qwen2.5-coder-1.5b"


SCENARIOS = {
    # name: (page method, widget settings, CLI arguments)
    "sandwich": ("Bradley-Terry", [("radio", "lb_intervals", "Sandwich (robust)")], ["--method", "bt", "--intervals",
                                                                                     "sandwich"]),
    "reweight + prior": ("Bradley-Terry", [("checkbox", "lb_reweight", True), ("checkbox", "lb_prior", True)],
                         ["--method", "bt", "--reweight", "--prior", "200"]),
    "style control": ("Bradley-Terry", [("multiselect", "lb_controls", ["Length", "Markdown (headers, lists, bold)"])],
                      ["--method", "bt", "--control", "length", "--control", "markdown"]),
    "min battles": ("Win rate", [("number_input", "lb_min_battles", 100)], ["--method", "winrate", "--min-battles",
                                                                            "100"]),
    "baseline": ("Versus a baseline", [("selectbox", "lb_baseline", None)], ["--method", "winrate", "--baseline", None]),
}


def _set(at, kind: str, key: str, value):
    widget = getattr(at, kind)(key=key)
    if kind == "checkbox":
        (widget.check() if value else widget.uncheck()).run()
    else:
        widget.set_value(value).run()


def _interval(low, high, digits):
    return "" if low is None else f"{low:.{digits}f} – {high:.{digits}f}"


@pytest.mark.slow
@pytest.mark.parametrize("study", ["sample", "prd"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_cli_rank_equals_the_leaderboard_page_with_issue_11_options(studies, study, scenario, tmp_path, monkeypatch,
                                                                     capsys):
    source, names = studies
    if study not in names:
        pytest.skip("the PRD data (../shared/data/prd_vicuna80) is not present")
    db = tmp_path / "parity.sqlite"
    shutil.copy(source, db)
    monkeypatch.setenv("PEERBOARD_DB", str(db))
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    method, widgets, cli_args = SCENARIOS[scenario]
    baseline = _baseline_model(study)
    cli_args = [baseline if a is None else a for a in cli_args]
    at = app_test()
    at.sidebar.selectbox(key="study").set_value(study).run()
    open_page(at, "leaderboard")
    at.button_group(key="lb_quick").set_value("All judges").run()
    at.selectbox(key="lb_method").set_value(method).run()
    for kind, key, value in widgets:
        _set(at, kind, key, baseline if value is None else value)
    assert problems(at) == [], scenario
    assert main(["rank", "--study", study, "--db", str(db), *cli_args, "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = payload["leaderboard"]
    if scenario == "baseline":
        shown = next(e.value for e in at.dataframe if "LC win rate %" in e.value.columns)
        assert shown["model"].tolist() == [r["model"] for r in rows]
        assert shown["win rate %"].tolist() == [round(r["win_rate"], 2) for r in rows]
        assert shown["LC win rate %"].tolist() == [round(r["lc_win_rate"], 2) for r in rows]  # both studies have answers
        assert shown["wins"].tolist() == [r["n_wins"] for r in rows]
        assert shown["draws"].tolist() == [r["n_draws"] for r in rows]
        assert payload["baseline"]["baseline"] == baseline
        return
    shown = next(e.value for e in at.dataframe if {"rank", "model", "95% interval", "battles"} <= set(e.value.columns))
    score = shown.columns[2]
    digits = 3 if score == "win rate" else 1
    assert shown["model"].tolist() == [r["model"] for r in rows], scenario
    assert shown["rank"].tolist() == [r["rank"] for r in rows], scenario
    assert shown[score].tolist() == [round(r["score"], digits) for r in rows], scenario
    assert shown["95% interval"].tolist() == [_interval(r["ci_low"], r["ci_high"], digits) for r in rows], scenario
    assert shown["preliminary"].tolist() == [r["preliminary"] for r in rows], scenario
    if "rank_worst" in rows[0]:
        assert shown["rank spread"].tolist() == [str(r["rank"]) if r["rank"] == r["rank_worst"]
                                                 else f"{r['rank']}–{r['rank_worst']}" for r in rows], scenario
    if "sandwich_low" in rows[0]:
        assert shown["robust interval"].tolist() == [_interval(r["sandwich_low"], r["sandwich_high"], digits)
                                                     for r in rows], scenario
    if scenario == "style control":
        assert set(payload["style"]) == {"length", "header", "list", "bold"}
        assert shown["plain"].tolist() == [round(r["plain_score"], 1) for r in rows]
        assert shown["plain rank"].tolist() == [r["plain_rank"] for r in rows]
        styles = next(e.value for e in at.dataframe if "Elo points per sd" in e.value.columns)
        assert styles["Elo points per sd"].tolist() == [round(payload["style"][f], 1) for f in styles["feature"]]
    if scenario == "min battles":
        assert all(r["preliminary"] == (r["battles"] < 100) for r in rows) and payload["options"]["min_battles"] == 100
    if scenario == "reweight + prior":
        assert payload["options"]["reweight"] is True and payload["options"]["prior"] == 200


@pytest.mark.slow
@pytest.mark.parametrize("study", ["sample", "prd"])
def test_cli_rank_by_category_equals_the_page(studies, study, tmp_path, monkeypatch, capsys):
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
    at.button_group(key="lb_quick").set_value("All judges").run()
    at.selectbox(key="lb_method").set_value("Bradley-Terry").run()
    at.session_state["lb_tab"] = "By category"
    at.run()
    assert problems(at) == []
    assert main(["rank", "--study", study, "--db", str(db), "--method", "bt", "--by", "category", "--format",
                 "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    shown = next(e.value for e in at.dataframe if "model" in e.value.columns
                 and any(c.startswith("score (") for c in e.value.columns)).set_index("model")
    counts = next(e.value for e in at.dataframe if {"category", "judgments"} <= set(e.value.columns))
    assert counts["category"].tolist() == list(payload["counts"])
    assert counts["judgments"].tolist() == [c["judgments"] for c in payload["counts"].values()]
    compared = 0
    for group, ranking in payload["groups"].items():
        if f"score ({group})" not in shown.columns:  # the page shows the first six groups by default
            continue
        for row in ranking["leaderboard"]:
            assert shown.loc[row["model"], f"score ({group})"] == pytest.approx(row["score"])
            assert shown.loc[row["model"], f"rank ({group})"] == row["rank"]
            compared += 1
    assert compared >= 3 * 2


# ------------------------------------------- issue 18: the Meta-evaluation, Bias and NLG pages
#
# Each page shows exactly what its command prints: `peercore agree --reference human:` (both reference
# modes) for every judge of the Meta-evaluation page's human table, `peercore bias` for every judge of
# the Bias page's tables, `peercore nlg evaluate` for the NLG assessment page's tables.


def _opened(studies, study: str, page: str, tmp_path, monkeypatch):
    source, names = studies
    if study not in names:
        pytest.skip("the PRD data (../shared/data/prd_vicuna80) is not present")
    db = tmp_path / "parity.sqlite"
    shutil.copy(source, db)
    monkeypatch.setenv("PEERBOARD_DB", str(db))
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    at = app_test()
    at.sidebar.selectbox(key="study").set_value(study).run()
    open_page(at, page)
    assert problems(at) == []
    return db, at


def _under(at, header: str, *columns: str) -> pd.DataFrame:
    """The first table with ``columns`` below the page's header ``header`` (and before the next header)."""
    current = None
    for node in at.main:
        if node.type == "header":
            current = node.value
        elif node.type == "dataframe" and current == header and set(columns) <= set(node.value.columns):
            return node.value
    raise AssertionError(f"no table with {columns} under {header!r}")


def _rounded(value, digits: int = 3):
    return None if value is None else float(np.round(value, digits))


def _cells(column) -> list:
    return [None if pd.isna(v) else float(v) for v in column]


@pytest.mark.slow
@pytest.mark.parametrize("study", ["sample", "prd"])
@pytest.mark.parametrize("mode", ["majority", "votes"])
def test_cli_agree_equals_the_meta_evaluation_page(studies, study, mode, tmp_path, monkeypatch, capsys):
    db, at = _opened(studies, study, "meta_evaluation", tmp_path, monkeypatch)
    at.radio(key="meta_reference_mode").set_value(mode).run()
    assert problems(at) == []
    shown = _under(at, "Against human annotations", "matched", "accuracy")
    assert len(shown) >= 2, shown
    for judge, row in shown.iterrows():
        found = {}
        for ties in ("include", "exclude"):
            assert main(["agree", "--study", study, "--db", str(db), "--judge", judge, "--reference", "human:",
                         "--reference-mode", mode, "--ties", ties, "--format", "json"]) == 0, judge
            found[ties] = json.loads(capsys.readouterr().out)
        cli, without = found["include"], found["exclude"]
        where = f"{study} / {mode} / {judge}"
        assert row["matched"] == cli["n"], where
        assert _cells([row["accuracy"], row["Cohen's kappa"], row["Fleiss' kappa (PRD Table 3)"]]) == \
            [_rounded(cli["agreement"]), _rounded(cli["cohen_kappa"]), _rounded(cli["fleiss_kappa"])], where
        assert row["unparsed (counted as misses)"] == cli["unparsed"], where
        assert row["matched w/o ties"] == without["n"], where
        assert _cells([row["accuracy w/o ties"], row["Cohen's kappa w/o ties"]]) == \
            [_rounded(without["agreement"]), _rounded(without["cohen_kappa"])], where


def test_the_votes_reference_counts_every_vote_where_the_majority_counts_one_per_comparison(studies, tmp_path,
                                                                                             monkeypatch):
    """PRD has three human votes on most comparisons: per vote, n is larger than per majority."""
    _, at = _opened(studies, "prd", "meta_evaluation", tmp_path, monkeypatch)
    majority = _under(at, "Against human annotations", "matched", "accuracy")["matched"]
    at.radio(key="meta_reference_mode").set_value("votes").run()
    votes = _under(at, "Against human annotations", "matched", "accuracy")["matched"]
    assert (votes.reindex(majority.index) > majority).all(), pd.concat([majority, votes], axis=1)


@pytest.mark.slow
@pytest.mark.parametrize("study", ["sample", "prd"])
def test_cli_bias_equals_the_bias_page(studies, study, tmp_path, monkeypatch, capsys):
    db, at = _opened(studies, study, "bias", tmp_path, monkeypatch)
    assert main(["bias", "--study", study, "--db", str(db), "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    at.multiselect(key="bias_judges").set_value(list(at.multiselect(key="bias_judges").options)).run()
    assert problems(at) == []
    position = _under(at, "Position bias", "P(first)", "why no statistic")
    assert sorted(position.index) == sorted(cli), "the page and the CLI report other judges"
    for judge, row in position.iterrows():
        want = cli[judge]
        assert (row["verdicts"], row["decisive"]) == (want["n"], want["n_decisive"]), judge
        assert _cells([row["P(first)"], row["P(first) over all, ties included (eq. 8)"], row["ties"]]) == \
            [_rounded(want["p_first"]), _rounded(want["p_first_all"]), _rounded(want["tie_rate"])], judge
        interval = None if want["ci_low"] is None else f"{want['ci_low']:.3f} – {want['ci_high']:.3f}"  # None: "—"
        assert (row["95% interval"] if pd.notna(row["95% interval"]) else None) == interval, judge
        if not want["flagged"] and row["why no statistic"]:
            assert want["reasons"] == row["why no statistic"], judge
    swap = _under(at, "Swap consistency", "pairs in both orders", "consistent")
    for judge, row in swap.iterrows():
        assert row["pairs in both orders"] == cli[judge]["n_pairs"], judge
        assert _cells([row["consistent"]]) == [_rounded(cli[judge]["swap_consistency"])], judge
    health = _under(at, "Judge health", "judge", "carries information").set_index("judge")
    for judge, row in health.iterrows():
        assert row["carries information"] == ("no: " + cli[judge]["reasons"] if cli[judge]["flagged"] else "yes"), judge
        assert _cells([row["unparsed"], row["identical verdicts"]]) == \
            [_rounded(cli[judge]["invalid_share"]), _rounded(cli[judge]["identical_share"])], judge
    assert len(health) >= 1


@pytest.mark.slow
def test_cli_nlg_evaluate_equals_the_nlg_page(studies, tmp_path, monkeypatch, capsys):
    from peercore.nlg.report import paper_table

    db, at = _opened(studies, "topicalchat-usr", "nlg", tmp_path, monkeypatch)
    attribute = at.selectbox(key="nlg_attribute").value
    judge, criterion = at.selectbox(key="nlg_judge").value.split("\x1f")
    score_judge = at.selectbox(key="nlg_score_judge").value
    assert main(["nlg", "evaluate", "--study", "topicalchat-usr", "--db", str(db), "--attribute", attribute,
                 "--judge", judge, "--criterion", criterion, "--score-judge", score_judge, "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Contexts"], metrics["Comparisons"], metrics["Absolute scores"]) == \
        (f"{cli['contexts']:,}", f"{cli['comparisons']:,}", f"{cli['scores']:,}")
    assert metrics["P(first)"] == f"{cli['position_bias']['p_first']:.2f}"
    shown = next(e.value for e in at.dataframe if "Spearman" in e.value.columns)
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), paper_table(pd.DataFrame(cli["table"])),
                                  check_dtype=False)
    for name in ("accuracy", "systems"):
        want = pd.DataFrame(cli[name]).round(3)
        (table,) = [e.value for e in at.dataframe if list(e.value.columns) == list(want.columns)]
        pd.testing.assert_frame_equal(table.reset_index(drop=True), want, check_dtype=False)
    systems = pd.DataFrame(cli["systems"])
    assert len(shown) >= 3 and len(systems) >= 3
