"""Issue 24's guarantees in a real browser at 1366x768, on the bundled PRD Vicuna80 study (a first run seeds it).

* Meta-evaluation: the evaluator leaderboard (:func:`peercore.app.guarantees.evaluator_leaderboard`,
  ``peercore judges``; PRD Table 3's agreement with the human majority) and the escalation plan
  (:func:`peercore.app.guarantees.escalation_plan`, Trust or Escalate, Jung et al. ICLR 2025: the page's
  default cascade, the first two LLM judges, target 0.8, risk 0.1, reference ``human:``) are drawn with the
  numbers the application functions give, and no error.
* Leaderboard (Bradley-Terry, ``?study=prd-vicuna80&method=bt``): the robustness audit (Huang et al., ICLR
  2026; :func:`peercore.app.guarantees.audit_leaderboard`, as ``peercore audit --study --method bt`` with its
  defaults and the page's default judges, the LLM reviewers) marks the fragile models
  (:func:`peercore.app.guarantees.fragile_marks`) in the table, and the list of votes that swap each fragile
  pair is one click away.

The expected numbers are computed from the database the server seeded, read with the application functions.
"""

from __future__ import annotations

import json
import math

import pytest

from e2e_support import ERRORS, open_page, settle
from peercore.app.guarantees import escalation_plan, evaluator_leaderboard, fragile_marks, fragile_pairs
from peercore.app.study import Study
from peercore.cli import main
from peercore.store import Store
from peercore.ui.guarantees import NO_THRESHOLD

PRD = "prd-vicuna80"
LAPTOP = {"width": 1366, "height": 768}

# Every grid on the page: its header labels and rows, from the grid's accessible table.
GRIDS = """() => [...document.querySelectorAll('[data-testid=stDataFrame]')].map((grid) => {
    const table = grid.querySelector('table');
    if (!table) return {headers: [], rows: []};
    const headers = [...table.querySelectorAll('thead th')].map(c => c.textContent.trim());
    const rows = [...table.querySelectorAll('tbody tr')].map(r => [...r.querySelectorAll('td')].map(
        c => c.textContent.trim()));
    return {headers, rows};
})"""


def _grid(page, header: str) -> list[dict[str, str]]:
    """The rows of the grid whose header has ``header``, as {header label: cell text}.

    Waits (in the browser, on the condition itself) until such a grid has rows: a grid is
    drawn after the script ends.
    """
    try:
        page.wait_for_function(f"(header) => ({GRIDS})().some(g => g.headers.includes(header) && g.rows.length)",
                               arg=header, timeout=120_000)
    except Exception:  # noqa: BLE001 - say which grids there were
        raise AssertionError(f"no grid with a {header!r} column: {[g['headers'] for g in page.evaluate(GRIDS)]}")
    for grid in page.evaluate(GRIDS):
        if header in grid["headers"] and grid["rows"]:
            headers = grid["headers"][-len(grid["rows"][0]):]  # a leading header of row markers dropped
            return [dict(zip(headers, row)) for row in grid["rows"]]
    raise AssertionError(header)


def _close(text: str, value: float) -> bool:
    """Whether a cell shows ``value`` to its decimals ("0.812" for 0.8123; "" or "—" for a missing value)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return text in ("", "—", "None", "nan")
    if not math.isfinite(value):  # an infinite threshold: no verdict kept, said in words
        return text == NO_THRESHOLD
    shown = text.replace(",", "").rstrip("%")
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    return abs(float(shown) - value) <= 0.5 * 10 ** -decimals + 1e-9


def _expected(db) -> dict:
    store = Store(db, create=False)
    try:
        study = Study(store, PRD)
        board = evaluator_leaderboard(study)
        judges = study.judges()
        llms = sorted(judges.loc[judges["kind"] == "llm", "name"].astype(str))
        humans = sorted(judges.loc[judges["kind"] == "human", "name"].astype(str))
        reference = "human:" if len(humans) > 1 else humans[0]
        plan = escalation_plan(study, cascade=llms[:2], reference=reference, target_agreement=0.8, risk=0.1)
    finally:
        store.close()
    return {"board": board, "plan": plan, "llms": llms}


def _audit(db, llms: list[str], capsys) -> list[dict]:
    """``peercore audit --study prd-vicuna80 --method bt --judge J ... --format json`` with the Leaderboard's default
    judges (the LLM reviewers; PRD's human votes are a judge one picks): the pairs the Leaderboard marks."""
    capsys.readouterr()
    judges = [arg for judge in llms for arg in ("--judge", judge)]
    assert main(["audit", "--study", PRD, "--db", str(db), "--method", "bt", *judges, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["pairs"]


def test_meta_evaluation_shows_the_evaluator_leaderboard_and_the_plan_and_the_leaderboard_its_audit(
        chromium, shared_sample_server, screenshots, capsys):
    server = shared_sample_server
    context = chromium.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        page.set_default_timeout(120_000)
        open_page(page, server, f"leaderboard?study={PRD}&method=bt", "Leaderboard")  # a first run seeds PRD
        expected = _expected(server.db)

        # ---- Leaderboard: the fragile marks and the votes that swap each fragile pair
        pairs = _audit(server.db, expected["llms"], capsys)
        marks = fragile_marks(pairs)
        rows = _grid(page, "Bradley-Terry (Elo scale)")  # the Bradley-Terry table
        assert page.locator(ERRORS).count() == 0
        fragile = fragile_pairs(pairs)
        assert fragile, "PRD's LLM-judged Bradley-Terry ranking has a fragile pair (vicuna-13b / gpt35, under 1%)"
        shown = {row["model"]: row.get("fragile", "") for row in rows}
        assert {m: t for m, t in shown.items() if t} == {m: t for m, t in marks.items() if t}, (shown, marks)
        page.get_by_text(f"Fragile: {len(fragile)} adjacent pair(s) swap").first.click()  # the list, one click away
        votes = _grid(page, "pair")
        listed = [(f"{pair['higher']} above {pair['lower']}", str(v["question_id"]), v["model_a"], v["model_b"],
                   v["judge"]) for pair in fragile for v in pair["votes"]]
        drawn = [(r["pair"], r["question_id"], r["model_a"], r["model_b"], r["judge"]) for r in votes]
        assert drawn and drawn == listed[:len(drawn)]  # the grid draws the rows in view: the list's first ones
        page.screenshot(path=str(screenshots / "guarantees-leaderboard.png"))

        # ---- Meta-evaluation: the evaluator leaderboard and the escalation plan, with the app's numbers
        page.locator("[data-testid=stSidebarNav] a", has_text="Meta-evaluation").first.click()
        page.get_by_role("heading", name="Meta-evaluation", level=1).wait_for()
        settle(page)
        page.get_by_role("heading", name="Judges as evaluators").wait_for()
        board = expected["board"].table.set_index("judge")
        evaluators = _grid(page, "Agreement with humans")
        assert sorted(row["Judge"] for row in evaluators) == sorted(board.index)
        for row in evaluators:
            assert _close(row["Agreement with humans"], board.loc[row["Judge"], "human_agreement"]), row
            assert row["Verdicts"].replace(",", "") == str(int(board.loc[row["Judge"], "verdicts"])), row

        page.get_by_role("heading", name="Escalation to humans with a promised agreement").wait_for()
        plan = expected["plan"]
        page.get_by_text(f"On {plan.n_calibration:,} human-labelled comparisons").first.wait_for()
        stages = _grid(page, "Confidence threshold")
        assert [row["Stage"] for row in stages] == [str(s["stage"]) for s in plan.stages]
        for row, stage in zip(stages, plan.stages):
            assert _close(row["Confidence threshold"], stage["threshold"]), (row, stage)
            assert _close(row["Kept here"], stage["kept_share"]), (row, stage)
        assert any(_close(row["Confidence threshold"], s["threshold"]) and row["Confidence threshold"][:1].isdigit()
                   for row, s in zip(stages, plan.stages)) or all(  # numbers, not blanks, unless no stage keeps any
            not math.isfinite(s["threshold"]) for s in plan.stages if s["threshold"] == s["threshold"])
        assert page.locator(ERRORS).count() == 0
        page.screenshot(path=str(screenshots / "guarantees-meta-evaluation.png"))
    finally:
        context.close()


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
