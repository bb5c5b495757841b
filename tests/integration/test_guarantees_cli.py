"""``peercore audit | judges | escalate`` as users reach them (issue 24).

Synthetic study: tests/integration/guarantees_study.py, imported with ``peercore import``
from a CSV. Sources: Huang, Shen, Wei & Broderick, "Dropping Just a Handful of
Preferences Can Change Top Large Language Model Rankings" (ICLR 2026, arXiv 2508.11847)
for the audit; AlpacaEval's annotator leaderboard and PRD (Li, Patel & Du 2023) Table 3
for the evaluator leaderboard; Jung, Brahman & Choi, "Trust or Escalate" (ICLR 2025,
arXiv 2407.18370) for the escalation plan.
"""

from __future__ import annotations

import itertools
import json

import pandas as pd
import pytest

from peercore.app.guarantees import EVALUATOR_COLUMNS
from peercore.cli import main
from integration.guarantees_study import imported, run, synthetic_rows, write_csv

PAIR_KEYS = {"higher", "lower", "drop", "share", "pair_share", "verified", "votes"}
VOTE_KEYS = {"question_id", "turn", "model_a", "model_b", "judge", "vote", "row"}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return synthetic_rows()


@pytest.fixture(scope="module")
def csv(tmp_path_factory, frame):
    return write_csv(tmp_path_factory.mktemp("audit") / "votes.csv", frame)


@pytest.fixture(scope="module")
def db(tmp_path_factory, frame) -> str:
    return imported(tmp_path_factory.mktemp("guarantees"), frame)


def _status(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        return exc.code


def _json(capsys, *args):
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def _rank(capsys, *args) -> dict[str, float]:
    payload = _json(capsys, "rank", *args, "--bootstrap", "0", "--format", "json")
    return {row["model"]: row["score"] for row in payload["leaderboard"]}


# -------------------------------------------------------------------------------- audit


@pytest.mark.parametrize("method", ["bt", "winrate"])
def test_audit_json_shape_and_first_pair_is_ranks_1_and_2(csv, capsys, method):
    """Issue 24 section 2's JSON: ``pairs`` of ``higher, lower, drop, share, pair_share, verified, votes``, first
    pair = ranks 1 and 2 of ``peercore rank`` (Huang et al. section 3: adjacent pairs by point estimate);
    ``share`` = drop / all votes (the paper's measure)."""
    payload = _json(capsys, "audit", str(csv), "--method", method, "--format", "json")
    ranked = _rank(capsys, str(csv), "--method", method)
    order = sorted(ranked, key=ranked.get, reverse=True)
    assert [set(p) for p in payload["pairs"]] == [PAIR_KEYS] * 3
    assert [(p["higher"], p["lower"]) for p in payload["pairs"]] == list(zip(order, order[1:]))
    for pair in payload["pairs"]:
        assert pair["drop"] == len(pair["votes"])
        assert pair["share"] == pytest.approx(pair["drop"] / payload["n_votes"])
        assert all(set(v) == VOTE_KEYS for v in pair["votes"])


@pytest.mark.parametrize("method, options", [
    ("bt", ()), ("winrate", ()), ("winrate", ("--judge", "human:", "--each-vote")), ("bt", ("--judge", "gpt",)),
])
def test_verified_pairs_swap_when_their_votes_are_removed_and_rank_reruns(csv, frame, tmp_path, capsys, method,
                                                                          options):
    """Issue 24 acceptance: every pair reported ``verified`` swaps when its listed votes are removed from the file
    and ``peercore rank`` is run again (Huang et al. section 3: drop the AMIP-ordered votes and refit; for win
    rates PRD eq. 1's exact minimum)."""
    payload = _json(capsys, "audit", str(csv), "--method", method, *options, "--format", "json")
    verified = [p for p in payload["pairs"] if p["verified"]]
    assert verified, "the synthetic study should give at least one verified pair"
    for pair in verified:
        rows = {v["row"] for v in pair["votes"]}
        for vote in pair["votes"]:  # the row named is the vote named
            record = frame.iloc[vote["row"]]
            assert (record["question_id"], record["model_a"], record["model_b"], record["judge"]) == \
                (vote["question_id"], vote["model_a"], vote["model_b"], vote["judge"])
        reduced = write_csv(tmp_path / f"without_{pair['higher']}_{pair['lower']}.csv",
                            frame.drop(index=sorted(rows)))
        scores = _rank(capsys, str(reduced), "--method", method, *options)
        assert scores[pair["lower"]] > scores[pair["higher"]]
        if method == "winrate" and pair["drop"] > 1:  # the exact minimum: one vote fewer does not swap them
            last = pair["votes"][-1]["row"]
            kept_last = write_csv(tmp_path / "one_fewer.csv", frame.drop(index=sorted(rows - {last})))
            before = _rank(capsys, str(kept_last), "--method", method, *options)
            assert before[pair["lower"]] <= before[pair["higher"]]


def test_audit_of_a_stored_study_names_stored_votes(db, capsys):
    """``--study``: the same pairs as the file (Huang et al. section 3), each vote named by question, turn, pair,
    judge and vote number (issue 24 section 2)."""
    payload = _json(capsys, "audit", "--study", "s", "--db", db, "--method", "winrate", "--format", "json")
    assert len(payload["pairs"]) == 3 and all(p["drop"] >= 1 for p in payload["pairs"])


def test_audit_bad_options_exit_2(csv, capsys):
    """Bad input: one line naming the option, exit 2 (an unknown judge; a prior is a Bradley-Terry option,
    Huang et al.'s refit is peercore rank's fit)."""
    assert _status(["audit", str(csv), "--judge", "nobody"]) == 2
    assert "--judge" in capsys.readouterr().err
    assert _status(["audit", str(csv), "--method", "winrate", "--prior", "200"]) == 2
    assert "prior" in capsys.readouterr().err
    assert _status(["audit", str(csv), "--cap", "0"]) == 2
    assert "--cap" in capsys.readouterr().err


def test_audit_as_a_process(csv):
    """``python -m peercore audit FILE`` (Huang et al. section 3): the table names each adjacent pair."""
    result = run("audit", csv, "--method", "winrate")
    assert result.returncode == 0, result.stderr
    assert "votes" in result.stdout and " > " in result.stdout


# ------------------------------------------------------------------------------- judges


def test_judges_json_has_every_column(db, capsys):
    """Issue 24 section 3: AlpacaEval's annotator columns (Dubois et al. 2023, AlpacaEval's annotator leaderboard)
    and more, one row per LLM judge, human agreement as PRD Table 3 (Li, Patel & Du 2023, section 4.1)."""
    payload = _json(capsys, "judges", "--study", "s", "--db", db, "--format", "json")
    assert sorted(r["judge"] for r in payload["judges"]) == ["gpt", "prob"]
    assert all(list(r) == EVALUATOR_COLUMNS for r in payload["judges"])


@pytest.mark.parametrize("ties, column", [("include", "human_agreement"), ("exclude", "human_agreement_without_ties")])
def test_judges_human_agreement_is_peercore_agree(db, capsys, ties, column):
    """The human-agreement column is the Meta-evaluation's own number (PRD Table 3's accuracy against the human
    majority): ``peercore agree --judge J --reference human:`` with and without ties."""
    rows = {r["judge"]: r for r in _json(capsys, "judges", "--study", "s", "--db", db, "--format", "json")["judges"]}
    for judge in ("gpt", "prob"):
        want = _json(capsys, "agree", "--study", "s", "--db", db, "--judge", judge, "--reference", "human:",
                     "--ties", ties, "--format", "json")
        assert rows[judge][column] == pytest.approx(want["agreement"], abs=1e-12)
        assert rows[judge]["human_n" if ties == "include" else "human_n_without_ties"] == want["n"]
        assert rows[judge][f"{column}_low"] < want["agreement"] < rows[judge][f"{column}_high"]


def test_judges_p_first_is_a_hand_count(db, frame, capsys):
    """P(prefers first) (AlpacaEval; Liusie et al. 2024 section 6, eq. 8, on decisive verdicts): the share of the
    judge's verdicts for the answer shown first, counted by hand on the CSV (the order is known for pairs a judge saw
    both ways round, here every pair: the CSV's orders are random)."""
    rows = {r["judge"]: r for r in _json(capsys, "judges", "--study", "s", "--db", db, "--format", "json")["judges"]}
    gpt = frame[frame["judge"] == "gpt"]
    assert rows["gpt"]["p_first"] == pytest.approx((gpt["winner"] == "model_a").mean(), abs=1e-12)


def test_judges_as_a_process(db):
    """``python -m peercore judges`` (issue 24 section 3; human agreement as PRD Table 3, section 4.1)."""
    result = run("judges", "--study", "s", "--db", db)
    assert result.returncode == 0, result.stderr
    assert "human_agreement" in result.stdout and "prob" in result.stdout


@pytest.fixture(scope="module")
def prd(prd_folder, tmp_path_factory):
    """PRD Vicuna80 imported as a user imports it (skipped cleanly when ../shared/data is absent)."""
    from peercore.io.importer import import_path
    from peercore.store import Store

    db = str(tmp_path_factory.mktemp("prd") / "prd.sqlite")
    import_path(prd_folder, store=Store(db), study="prd")
    return db, json.loads((prd_folder / "expected_results.json").read_text())


@pytest.mark.golden
@pytest.mark.slow
def test_judges_on_prd_equals_table_3(prd, capsys):
    """Issue 24 acceptance: on PRD Vicuna80 the human-agreement column (human majority, ties included) equals
    PRD's Table 3 (Li, Patel & Du 2023, section 4.1: each reviewer's accuracy against the doubled human majority),
    as tests/golden/test_prd_vicuna80.py asserts it from expected_results.json."""
    db, expected = prd
    expected = expected["agreement_vs_human_majority"]
    names = {"gpt4": "gpt-4", "gpt35": "gpt-3.5", "bard": "bard", "claude": "claude", "vicuna-13b": "vicuna"}
    rows = {r["judge"]: r for r in _json(capsys, "judges", "--study", "prd", "--db", db, "--format", "json")["judges"]}
    for judge, name in names.items():
        assert rows[judge]["human_n"] == expected[name]["n"] == 1600
        assert rows[judge]["human_agreement"] == pytest.approx(expected[name]["accuracy"], abs=1e-4)
        assert rows[judge]["fleiss_kappa"] == pytest.approx(expected[name]["fleiss_kappa"], abs=1e-4)


@pytest.mark.golden
@pytest.mark.slow
def test_judges_p_longer_on_prd_is_a_hand_count(prd, capsys):
    """P(prefers longer) (Zheng et al. 2023 section 3.3; AlpacaEval's "Proba. prefer longer"): the share of a
    reviewer's decisive PRD verdicts that go to the longer of the two stored answers, counted by hand with pandas."""
    from peercore.app.study import Study
    from peercore.store import Store

    db, _ = prd
    rows = {r["judge"]: r for r in _json(capsys, "judges", "--study", "prd", "--db", db, "--format", "json")["judges"]}
    study = Study(Store(db, create=False), "prd")
    answers = study.answers()
    length = {(str(q), m): len(a) for q, m, a in zip(answers["question_id"], answers["model"], answers["answer"])}
    verdicts = study.judgments()
    gpt4 = verdicts[(verdicts["judge"] == "gpt4") & verdicts["winner"].isin(["model_a", "model_b"])]
    la = [length.get((str(q), m)) for q, m in zip(gpt4["question_id"], gpt4["model_a"])]
    lb = [length.get((str(q), m)) for q, m in zip(gpt4["question_id"], gpt4["model_b"])]
    longer_won = [(w == "model_a") == (x > y) for w, x, y in zip(gpt4["winner"], la, lb) if x != y]
    assert rows["gpt4"]["p_longer"] == pytest.approx(sum(longer_won) / len(longer_won), abs=1e-12)


# ----------------------------------------------------------------------------- escalate


def _plan(capsys, db, *extra):
    return _json(capsys, "escalate", "--study", "s", "--db", db, "--reference", "human:", "--target-agreement",
                 "0.85", "--risk", "0.1", "--dry-run", "--format", "json", *extra)


def test_escalate_dry_run_plan(db, capsys):
    """Trust or Escalate section 2.1 (eqs. 2-4) and 2.3: per stage a threshold, the share kept, the agreement on
    the kept calibration comparisons with its Clopper-Pearson bound at risk / stages, and the guarantee. A kept
    stage's bound is at most alpha = 1 - target, so its calibration agreement is at least the target."""
    plan = _plan(capsys, db, "--cascade", "prob", "--cascade", "gpt")
    assert [s["stage"] for s in plan["stages"]] == ["prob", "gpt", "humans"]
    assert plan["dry_run"] is True and plan["n_calibration"] == 300
    prob = plan["stages"][0]
    assert prob["threshold"] is not None and 0 < prob["kept_share"] < 1  # confident verdicts kept, the rest escalated
    assert prob["upper_bound_disagreement"] <= 0.15 + 1e-12
    assert prob["agreement"] >= 0.85 and prob["guarantee"] == pytest.approx(0.85)
    assert prob["level"] == pytest.approx(1 - 0.1 / 2)


def test_escalate_reference_list_is_the_union_of_its_judges(db, capsys):
    """The calibration labels (Trust or Escalate section 2.1: the human majority) of ``--reference
    human:alice,human:bob`` are those of ``human:``; a list naming nobody is 'no human labels'."""
    by_prefix = _plan(capsys, db, "--cascade", "prob")
    by_list = _json(capsys, "escalate", "--study", "s", "--db", db, "--reference", "human:alice, human:bob",
                    "--target-agreement", "0.85", "--risk", "0.1", "--dry-run", "--format", "json", "--cascade", "prob")
    assert by_list["n_calibration"] == by_prefix["n_calibration"] == 300
    assert by_list["stages"] == by_prefix["stages"]
    assert main(["escalate", "--study", "s", "--db", db, "--reference", "nobody,adjudicator:", "--cascade", "prob",
                 "--target-agreement", "0.85", "--risk", "0.1", "--dry-run"]) == 2
    assert "no human labels" in capsys.readouterr().err


def test_escalate_threshold_is_a_hand_calibration(db, frame, capsys):
    """Trust or Escalate section 2.1 by hand: on the labelled comparisons, the confidence max(p_a, 1 - p_a) and
    agreement with the human vote, walked down the grid with the Clopper-Pearson bound (peercore.selective.calibrate
    on arrays built from the CSV) give the plan's threshold and kept share."""
    from peercore.selective import calibrate

    prob = frame[frame["judge"] == "prob"].reset_index(drop=True)
    human = frame[frame["judge"].str.startswith("human:")].set_index(["question_id", "model_a", "model_b"])["winner"]
    key = list(zip(prob["question_id"], prob["model_a"], prob["model_b"]))
    labelled = [k in human.index for k in key]
    part = prob[labelled]
    confidence = part["p_a"].astype(float).map(lambda p: max(p, 1 - p)).to_numpy()
    agrees = (part["winner"].to_numpy() == human.loc[[k for k, l in zip(key, labelled) if l]].to_numpy()).astype(float)
    want = calibrate(confidence, agrees, alpha=0.15, delta=0.1)
    stage = _plan(capsys, db, "--cascade", "prob")["stages"][0]
    assert stage["threshold"] == pytest.approx(want.threshold)
    assert stage["kept_share"] == pytest.approx(want.kept_share)
    assert stage["agreement"] == pytest.approx(want.agreement)


@pytest.mark.parametrize("args, option", [
    (["--cascade", "nobody", "--target-agreement", "0.85", "--risk", "0.1"], "--cascade"),
    (["--cascade", "gpt", "--target-agreement", "1.5", "--risk", "0.1"], "--target-agreement"),
    (["--cascade", "gpt", "--target-agreement", "0.85", "--risk", "0"], "--risk"),
])
def test_escalate_bad_options_exit_2(db, capsys, args, option):
    """alpha and delta of Trust or Escalate eq. 1 lie in (0, 1); a stage is one judge of the study."""
    assert _status(["escalate", "--study", "s", "--db", db, "--reference", "human:", "--dry-run", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err


def test_escalate_without_human_labels(tmp_path, capsys):
    """Calibration needs human-labelled comparisons (Trust or Escalate section 2.1): a study without them gets one
    line, exit 2."""
    db = imported(tmp_path, synthetic_rows(humans=False))
    argv = ["escalate", "--study", "s", "--db", db, "--cascade", "gpt", "--reference", "human:",
            "--target-agreement", "0.85", "--risk", "0.1", "--dry-run"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no human labels" in err


def test_escalate_as_a_process(db):
    """``python -m peercore escalate ... --dry-run`` (Trust or Escalate section 2.3's cascade plan, eqs. 2-4)."""
    result = run("escalate", "--study", "s", "--db", db, "--cascade", "prob", "--cascade", "gpt", "--reference",
                 "human:", "--target-agreement", "0.85", "--risk", "0.1", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "humans" in result.stdout and "threshold" in result.stdout


def test_judges_stability_is_a_hand_count(tmp_path, capsys):
    """Stability over K samples (issue 24 section 3; the product's majority rule, PRD section 4: the sign of the summed
    votes): ``gpt`` votes a second time on the first 20 comparisons, agreeing with itself on 15 of them. Per
    comparison with two votes, a repeat gives 2 votes equal to the majority and a split gives 0 (its majority is a
    tie), so stability = 2 x 15 / (2 x 20) = 0.75."""
    frame = synthetic_rows()
    first = frame[frame["judge"] == "gpt"].head(20)
    again = first.copy()
    flip = {"model_a": "model_b", "model_b": "model_a"}
    again.iloc[15:, again.columns.get_loc("winner")] = again["winner"].iloc[15:].map(flip).to_numpy()
    db = imported(tmp_path, pd.concat([frame, again], ignore_index=True))
    capsys.readouterr()  # the import's report
    rows = {r["judge"]: r for r in _json(capsys, "judges", "--study", "s", "--db", db, "--format", "json")["judges"]}
    assert rows["gpt"]["stability"] == pytest.approx(0.75)
    assert rows["prob"]["stability"] is None  # one vote per comparison: nothing to be stable over


def _win_rates(rows: pd.DataFrame) -> dict[str, float]:
    """PRD eq. 1 by hand: points over battles, a tie half a point to each (the brute force's oracle)."""
    points, battles = {}, {}
    for a, b, winner in zip(rows["model_a"], rows["model_b"], rows["winner"]):
        s = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[winner]
        for model, score in ((a, s), (b, 1.0 - s)):
            points[model] = points.get(model, 0.0) + score
            battles[model] = battles.get(model, 0) + 1
    return {m: points[m] / battles[m] for m in battles}


def test_audit_win_rate_count_is_the_brute_force_minimum(tmp_path, capsys):
    """Huang et al. section 3's question answered exactly for win rates (PRD eq. 1): on a 14-vote file, the
    ``drop`` of each adjacent pair equals the fewest votes whose removal ranks the lower model strictly above the
    higher one (both keeping a battle), found by trying every subset of votes in increasing size."""
    votes = [("x", "y", "model_a"), ("x", "y", "model_a"), ("y", "x", "tie"), ("x", "z", "model_a"),
             ("z", "x", "model_b"), ("x", "z", "model_b"), ("y", "z", "model_a"), ("z", "y", "model_b"),
             ("y", "z", "tie"), ("z", "y", "model_a"), ("x", "y", "model_b"), ("x", "z", "tie"),
             ("y", "z", "model_a"), ("z", "x", "model_b")]
    frame = pd.DataFrame([{"question_id": f"q{k}", "model_a": a, "model_b": b, "judge": "j", "winner": w}
                          for k, (a, b, w) in enumerate(votes)])
    path = write_csv(tmp_path / "tiny.csv", frame)
    payload = _json(capsys, "audit", str(path), "--method", "winrate", "--format", "json")
    for pair in payload["pairs"]:
        high, low = pair["higher"], pair["lower"]
        fewest = None
        for size in range(1, len(frame)):
            for removed in itertools.combinations(range(len(frame)), size):
                left = frame.drop(index=list(removed))
                rates = _win_rates(left)
                if high in rates and low in rates and rates[low] > rates[high]:
                    fewest = size
                    break
            if fewest is not None:
                break
        assert pair["drop"] == fewest, (high, low)
