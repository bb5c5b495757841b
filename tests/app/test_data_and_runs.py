"""Data (upload, errors against their row, import, export), first-run seeding, Reviewers & runs."""

from __future__ import annotations

import io
import sys
import time
import zipfile

import pytest

from app_studies import REPO, app_test, open_page, problems
from peercore.app import Study
from peercore.store import Store

sys.path.insert(0, str(REPO / "tests"))
from fakes.llm_server import FakeLLMServer  # noqa: E402

GOOD = (b"question_id,model_a,model_b,judge,winner\n"
        b"q00,alpha,bravo,human:zoe,model_a\n"
        b"q01,charlie,alpha,human:zoe,tie\n")
BAD = (b"question_id,model_a,model_b,judge,winner\n"
       b"q00,alpha,bravo,human:zoe,model_a\n"
       b"q01,alpha,bravo,human:zoe,modelB\n"
       b"q02,bravo,alpha,human:zoe,tie\n")


def counts(store: Store, study: str) -> dict[str, int]:
    """The study's counts as every page shows them (:meth:`peercore.app.Study.counts`)."""
    return Study(store, study).counts()


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


# --------------------------------------------------------------------------------- data


def test_a_bad_file_is_refused_with_its_offending_row(synthetic):
    at = open_page(app_test(), "data")
    at.file_uploader(key="data_upload_0").set_value(("bad.csv", BAD, "text/csv")).run()
    assert "line 3" in texts(at.error) and "modelB" in texts(at.error)
    context = next(e.value for e in at.dataframe if "content" in e.value.columns)
    marked = context[context[""] == "▶"]
    assert marked["line"].tolist() == [3] and "modelB" in marked["content"].iloc[0]
    assert all(b.key != "data_import" for b in at.button)  # nothing to import
    assert counts(Store(synthetic["db"]), "synthetic")["judgments"] == synthetic["judgments"]


def test_a_good_file_is_previewed_then_imported(synthetic):
    at = open_page(app_test(), "data")
    at.file_uploader(key="data_upload_0").set_value(("votes.csv", GOOD, "text/csv")).run()
    assert problems(at) == []
    assert [(m.label, m.value) for m in at.metric][:3] == [("Questions", "0"), ("Answers", "0"), ("Judgments", "2")]
    assert counts(Store(synthetic["db"]), "synthetic")["judgments"] == synthetic["judgments"]  # preview writes nothing
    at.button(key="data_import").click().run()
    assert problems(at) == []
    report = next(e.value for e in at.dataframe if "added" in e.value.columns).set_index("table")
    assert report.loc["judgments", "added"] == 2
    assert counts(Store(synthetic["db"]), "synthetic")["judgments"] == synthetic["judgments"] + 2
    history = next(e.value for e in at.dataframe if "sha256" in e.value.columns)
    assert history["source"].tolist() == ["votes.csv"]
    assert at.file_uploader[0].key == "data_upload_1"  # a fresh uploader


def test_import_into_a_new_study_creates_and_opens_it(synthetic):
    at = open_page(app_test(), "data")
    at.text_input(key="data_target").input("votes-only").run()
    at.file_uploader(key="data_upload_0").set_value(("votes.csv", GOOD, "text/csv")).run()
    at.button(key="data_import").click().run()
    assert problems(at) == []
    assert at.session_state["study"] == "votes-only"
    assert counts(Store(synthetic["db"]), "votes-only")["judgments"] == 2


def test_a_zipped_folder_is_imported_file_by_file(synthetic):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("study/questions.csv", "question_id,text\nz1,What is up?\n")
        archive.writestr("study/answers.csv", "question_id,model,answer\nz1,alpha,Up is up.\nz1,bravo,Sky.\n")
        archive.writestr("study/judgments.csv", "question_id,model_a,model_b,judge,winner\nz1,alpha,bravo,human:zoe,model_b\n")
    at = open_page(app_test(), "data")
    at.text_input(key="data_target").input("zipped").run()
    at.selectbox(key="data_format").set_value("folder").run()
    at.file_uploader(key="data_upload_0").set_value(("study.zip", buffer.getvalue(), "application/zip")).run()
    assert problems(at) == []
    at.button(key="data_import").click().run()
    summary = counts(Store(synthetic["db"]), "zipped")
    assert (summary["questions"], summary["answers"], summary["judgments"]) == (1, 2, 1)


def test_a_zip_that_escapes_its_folder_is_refused(synthetic):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../evil.csv", "x\n")
    at = open_page(app_test(), "data")
    at.file_uploader(key="data_upload_0").set_value(("evil.zip", buffer.getvalue(), "application/zip")).run()
    assert "would land outside the archive" in texts(at.error)


def test_export_offers_a_download(synthetic):
    at = open_page(app_test(), "data")
    judgments, audit = at.get("download_button")  # the study, and its audit log (issue 20)
    assert "judgments" in judgments.proto.label and "audit log" in audit.proto.label


def test_first_run_imports_the_sample_folder(db_file, tmp_path):
    from peercore.ui.data import ensure_sample_study

    folder = tmp_path / "sample_data"
    folder.mkdir()
    (folder / "judgments.csv").write_bytes(GOOD)
    (folder / "README.md").write_text("not data")
    store = Store(db_file)
    assert ensure_sample_study(store, tmp_path / "missing") is None
    assert ensure_sample_study(store, None) is None
    assert ensure_sample_study(store, folder) == "sample"
    assert counts(store, "sample")["judgments"] == 2
    assert ensure_sample_study(store, folder) is None  # a database with a study is left alone
    assert store.studies.table()["name"].tolist() == ["sample"]


def require_sample() -> None:
    if not any(p.suffix in (".csv", ".jsonl") for p in (REPO / "sample_data").glob("*")):
        pytest.skip("sample_data/ is not in the repository yet")


def test_the_app_opens_on_the_bundled_sample_study(db_file):
    require_sample()
    at = app_test()
    assert problems(at) == []
    assert at.session_state["study"] == "sample"
    metrics = {m.label: int(m.value.split(" ")[0].replace(",", "")) for m in at.metric}
    assert metrics["Judgments"] > 0 and metrics["Questions"] > 0
    assert "scripts/make_sample_study.py" in "\n".join(e.value.to_csv() for e in at.dataframe)  # its provenance


@pytest.mark.parametrize("page", ["leaderboard", "bias", "efficiency", "data", "reviewers", "debates",
                                  "adjudication", "meta_evaluation"])
def test_every_page_is_useful_on_the_bundled_sample(db_file, page):
    require_sample()
    at = open_page(app_test(), page)
    assert problems(at) == []
    assert at.session_state["study"] == "sample"


def test_the_sample_debates_can_be_adjudicated(db_file):
    require_sample()
    at = open_page(app_test(), "adjudication")
    at.text_input(key="annotator").input("sam").run()
    first = at.subheader[0].value
    at.button(key="adj_tie").click().run()
    assert problems(at) == []
    assert at.subheader[0].value != first
    assert len(Store(db_file).debates.adjudications("sample")) == 1


def test_agent_names_are_code_and_replies_keep_their_lines(db_file):
    """``qwen2.5-coder-1.5b@agent-t0.7a`` would render as an e-mail link; ``Verdict: 1`` / ``Reason:`` as one line."""
    require_sample()
    at = open_page(app_test(), "adjudication")
    at.text_input(key="annotator").input("sam").run()
    assert not [m.value for m in at.markdown if "@agent-t0" in m.value]  # blind mode (the default) hides the agents
    at.button(key="adj_show_agents").click().run()
    shown = [m.value for m in at.markdown]
    agents = [s for s in shown if "@agent-t0" in s]  # the final columns and the transcript
    assert agents and all(s.startswith("`local:qwen2.5-coder-1.5b@agent-t0") for s in agents), agents
    replies = [t.value for t in at.text if t.value.startswith("Verdict:")]  # plain text, not Markdown
    assert replies and all("\nReason:" in s for s in replies), replies


# ----------------------------------------------------------------------- reviewers & runs


def rerun_until(at, text: str, *, where: tuple[str, ...] = ("success",), seconds: float = 15.0) -> None:
    """Rerun the page (as its 1 s live fragment would) until a ``where`` element shows ``text``, or time runs out."""
    deadline = time.monotonic() + seconds
    while not any(text in element.value for kind in where for element in getattr(at, kind)):
        if time.monotonic() > deadline:
            return  # the caller's assertion reports what the page shows instead
        time.sleep(0.25)
        at.run()


def add_reviewer(at, url: str, name: str = "fake") -> None:
    at.selectbox(key="rv_provider").set_value("compatible")
    at.text_input(key="rv_model").input("fake-judge")
    at.text_input(key="rv_url").input(url)
    at.text_input(key="rv_name").input(name)
    at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()


def test_keys_are_reported_set_or_not_but_never_shown(synthetic, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = open_page(app_test(), "reviewers")
    values = {m.label: m.value for m in at.metric}
    assert values["OPENAI_API_KEY"] == "set" and values["ANTHROPIC_API_KEY"] == "not set"
    assert "sk-test-secret-value" not in str(at._tree)
    assert all("sk-test-secret-value" not in str(value) for value in at.session_state.to_dict().values())


def test_estimate_then_launch_a_review_with_live_progress(synthetic_on_both):
    with FakeLLMServer() as server:
        at = open_page(app_test(), "reviewers")
        add_reviewer(at, server.openai_base_url)
        assert problems(at) == []
        at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
        at.selectbox(key="rv_strategy").set_value("random").run()
        at.number_input(key="rv_k").set_value(1).run()
        metrics = {m.label: m.value for m in at.metric}
        # The default method for an OpenAI-compatible server is the label-probability classifier, with the
        # verdict prompt as a fallback should the server return no log-probabilities: 9 to 18 calls.
        assert metrics["Items to do"] == "9 of 9" and metrics["Paid calls"] == "9 – 18"
        at.button(key="rv_launch").click().run()
        rerun_until(at, "Run finished")
        assert any("Run finished: 9 of 9" in s.value for s in at.success), texts(at.warning) + texts(at.error)
        assert "9/9 finished" in texts(at.code)
        judgments = Store(synthetic_on_both["db"]).verdicts.table("synthetic", judges=["fake"])
        assert len(judgments) == 9
        at.button(key="rv_clear").click().run()
        metrics = {m.label: m.value for m in at.metric}
        assert metrics["Items to do"] == "0 of 9"  # launching again resumes a finished run: nothing to do


def test_cancel_and_resume_an_interrupted_run(synthetic_on_both):
    with FakeLLMServer(latency_s=0.3) as server:
        at = open_page(app_test(), "reviewers")
        add_reviewer(at, server.openai_base_url)
        at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
        at.button(key="rv_launch").click().run()   # 18 ordered-pair reviews, 0.3 s each
        at.button(key="rv_cancel").click().run()
        rerun_until(at, "cancelled", where=("warning", "success", "info"))
        store = Store(synthetic_on_both["db"])
        stopped = store.runs.table("synthetic").query("status == 'cancelled'")
        assert len(stopped) == 1 and stopped["n_done"].iloc[0] < stopped["n_items"].iloc[0]
        at.button(key="rv_clear").click().run()
        assert at.selectbox(key="rv_resume_pick").value == stopped["id"].iloc[0]
        at.button(key="rv_resume").click().run()
        rerun_until(at, "Run finished", seconds=30)
        assert any("Run finished: 18 of 18" in s.value for s in at.success), texts(at.error) + texts(at.warning)
        run = store.runs.get(stopped["id"].iloc[0])
        assert run["status"] == "finished" and run["n_done"] == 18
        assert len(store.verdicts.table("synthetic", judges=["fake"])) == 18


def test_a_bad_reviewer_is_refused_with_a_reason(synthetic):
    at = open_page(app_test(), "reviewers")
    at.selectbox(key="rv_provider").set_value("compatible")
    at.text_input(key="rv_model").input("x")
    at.text_input(key="rv_url").input("not-a-url")
    at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()
    assert "base_url" in texts(at.error)
    assert at.session_state["reviewers"] == []


def test_a_debate_needs_two_agents(synthetic):
    with FakeLLMServer() as server:
        at = open_page(app_test(), "reviewers")
        add_reviewer(at, server.openai_base_url)
        at.segmented_control(key="rv_kind").set_value("debate").run()
        assert "at least 2 agents" in texts(at.error)
        add_reviewer(at, server.openai_base_url, name="fake-2")
        assert problems(at) == []
        assert any(m.label == "Paid calls" for m in at.metric)


def test_a_compact_debate_is_launched_from_the_page_and_resumes_with_its_templates(synthetic_on_both):
    def verdict_first(body, api):  # follows the compact layout: verdict on the first line
        return "Verdict: 1\nReason: Submission 1 answers the question."

    with FakeLLMServer(reply=verdict_first) as server:
        at = open_page(app_test(), "reviewers")
        add_reviewer(at, server.openai_base_url)
        add_reviewer(at, server.openai_base_url, name="fake-2")
        at.segmented_control(key="rv_kind").set_value("debate").run()
        at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
        at.radio(key="rv_layout").set_value("Compact (verdict first, small models)").run()
        assert problems(at) == []
        at.button(key="rv_launch").click().run()
        rerun_until(at, "Run finished", seconds=20)
        assert any("Run finished" in s.value for s in at.success), texts(at.error) + texts(at.warning)
        prompts = [m["content"] for r in server.request_log for m in r["body"]["messages"] if m["role"] == "user"]
        assert prompts and all("Verdict: 1 if Submission 1 is better" in p for p in prompts)
    store = Store(synthetic_on_both["db"])
    run = store.runs.table("synthetic").query("kind == 'debate'").iloc[0]
    config = store.runs.get(run["id"])["config"]["job"]
    assert (config["initial_template"], config["discussion_template"]) == ("scaleeval_compact_initial",
                                                                          "scaleeval_compact_discussion")
    debates = store.debates.table("synthetic", kind="debate")
    mine = debates[debates["metadata"].map(lambda m: m.get("run_id")) == run["id"]]
    assert len(mine) > 0 and set(mine["status"]) == {"agreed"}  # both agents read as "1" every time
    from peercore.ui import runs as ui_runs

    job, kind = ui_runs.job_from_run("synthetic", store.runs.get(run["id"]))  # what the Resume button rebuilds
    assert kind == "debate" and job.run_id() == run["id"]
    assert job.templates == ("scaleeval_compact_initial", "scaleeval_compact_discussion")


def test_launch_without_a_key_names_the_variable_and_starts_nothing(synthetic, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PEERBOARD_SECRETS", str(tmp_path / "no-secrets.toml"))  # no secrets file either
    monkeypatch.chdir(tmp_path)
    at = open_page(app_test(), "reviewers")
    at.selectbox(key="rv_provider").set_value("openai")
    at.text_input(key="rv_model").input("gpt-4o-mini")
    at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()
    at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
    assert any(m.label == "Cost" and m.value.startswith("$") for m in at.metric)  # priced before any key is needed
    runs_before = len(Store(synthetic["db"]).runs.table("synthetic"))
    at.button(key="rv_launch").click().run()
    assert "OPENAI_API_KEY" in texts(at.error)
    assert at.session_state["run_handle"] is None
    assert len(Store(synthetic["db"]).runs.table("synthetic")) == runs_before


def test_a_key_in_streamlit_secrets_counts_as_set_and_is_never_shown(synthetic, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = app_test()
    at.secrets["ANTHROPIC_API_KEY"] = "sk-ant-from-secrets"
    open_page(at, "reviewers")
    status = {m.label: m for m in at.metric}
    assert status["ANTHROPIC_API_KEY"].value == "set"
    assert "secrets.toml" in status["ANTHROPIC_API_KEY"].proto.help
    assert "sk-ant-from-secrets" not in str(at._tree)
    assert all("sk-ant-from-secrets" not in str(value) for value in at.session_state.to_dict().values())


def test_a_servers_key_comes_from_the_key_variable_field_never_the_url(synthetic, monkeypatch):
    # Issue 8: the Base URL field built `...v1?api_key=...`, which reached the database 14 times.
    import hashlib

    marker = "sk-dashboard-marker-0123456789"
    monkeypatch.setenv("FAKE_SERVER_KEY", marker)
    with FakeLLMServer() as server:
        at = open_page(app_test(), "reviewers")
        at.selectbox(key="rv_provider").set_value("compatible")
        at.text_input(key="rv_model").input("fake-judge")
        at.text_input(key="rv_url").input(f"{server.openai_base_url}?api_key={marker}")
        at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()
        refused = texts(at.error)
        assert "carries a credential" in refused and marker not in refused and "api_key=\\*\\*\\*" in refused
        assert at.session_state["reviewers"] == []  # refused: nothing added; now with the variable's name
        at.text_input(key="rv_key_env").input("FAKE_SERVER_KEY")
        add_reviewer(at, server.openai_base_url)
        assert at.session_state["reviewers"][0]["api_key_env"] == "FAKE_SERVER_KEY"
        at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
        at.selectbox(key="rv_strategy").set_value("random").run()
        at.number_input(key="rv_k").set_value(1).run()
        at.button(key="rv_launch").click().run()
        rerun_until(at, "Run finished")
        assert any("Run finished" in s.value for s in at.success), texts(at.error) + texts(at.warning)
        assert {e["key_sha256"] for e in server.request_log} == {hashlib.sha256(marker.encode()).hexdigest()}
    assert "paid calls:" in texts(at.caption)  # where every paid call ended
    for path in (synthetic["db"], synthetic["db"].with_name(synthetic["db"].name + "-wal")):
        if path.exists():
            assert marker.encode() not in path.read_bytes()


def test_meta_evaluation_names_the_human_reference_and_both_kappas(prd):
    # Issue 8: on PRD the reference read "the majority of 1 human annotator(s)" although most pairs have
    # three votes, and the page showed Cohen's kappa where the paper reports Fleiss' without saying which.
    at = app_test()
    at.sidebar.selectbox(key="study").set_value(prd["name"]).run()
    open_page(at, "meta_evaluation")
    assert problems(at) == []
    caption = texts(at.caption)
    assert "the majority of the human votes on each comparison" in caption and "votes per comparison" in caption
    tables = [e.value for e in at.dataframe if "Fleiss' kappa (PRD Table 3)" in e.value.columns]
    assert tables and "Cohen's kappa" in tables[0].columns
    gpt4 = tables[0].loc["gpt4"]
    assert gpt4["accuracy"] == pytest.approx(0.642, abs=1e-3)  # PRD Table 3: GPT-4 vs the human majority
    assert gpt4["Fleiss' kappa (PRD Table 3)"] == pytest.approx(0.406, abs=1e-3)
