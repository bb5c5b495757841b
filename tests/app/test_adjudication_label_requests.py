"""Label requests on the Adjudication page (issue 23, "Which comparisons to label next").

A label request (``peercore calibrate --request``: active inference, Zrnic & Candès 2024,
arXiv 2403.03208, eq. (3), the judge's uncertainty choosing the comparisons) is offered in the
queue like a debate: the two answers side by side, who asked and why, no transcript, the same
decision keys. Its decision is a vote ``adjudicator:<annotator>``, one more label of the judge's
PPI++ leaderboard (Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453, eq. (2)); the page says
how much the decided requests narrowed that leaderboard's interval.
"""

from __future__ import annotations

import re

import pytest

from app_studies import app_test, open_page, problems
from peercore.app.calibration import calibrated_leaderboard, label_requests, median_width, queue_label_requests
from peercore.app.study import Study
from peercore.store import Store
from peercore.ui import safe

JUDGE, REFERENCE, ANNOTATOR = "local:charlie", "human:,adjudicator:", "lab"


@pytest.fixture
def store(synthetic):
    s = Store(synthetic["db"])
    yield s
    s.close()


def _debates_decided(store: Store) -> None:
    """The annotator decides the synthetic study's four unresolved debates first, so the label requests are next."""
    for debate_id in store.debates.table("synthetic", status="unresolved", kind="debate")["id"]:
        store.debates.adjudicate(int(debate_id), ANNOTATOR, "tie")


def _width(store: Store) -> float:
    """Median width of the anchored 95% interval (PPI++ eq. (2)) of the judge with the labels there are now."""
    return median_width(calibrated_leaderboard(Study(store, "synthetic"), judge=JUDGE, reference=REFERENCE))


def _signed_in():
    at = open_page(app_test(), "adjudication")
    at.text_input(key="annotator").input(ANNOTATOR).run()
    assert problems(at) == []
    return at


def _section(at) -> tuple[str, list[str]]:
    expanders = [e for e in at.expander if e.label.startswith("Label requests:")]
    assert len(expanders) == 1, [e.label for e in at.expander]
    return expanders[0].label, [m.value for m in expanders[0].markdown]


def test_a_label_request_is_offered_decided_with_the_keys_and_narrows_the_interval(synthetic, store):
    requests = label_requests(Study(store, "synthetic"), judge=JUDGE, reference=REFERENCE, k=2, seed=1)
    table, _ = queue_label_requests(store, "synthetic", requests)
    _debates_decided(store)
    width_before = _width(store)
    at = _signed_in()

    request_ids = store.debates.table("synthetic", kind="label_request")["id"].astype(int).tolist()
    assert at.subheader[0].value.startswith(f"Label request #{request_ids[0]} ")
    shown = store.debates.table("synthetic", kind="label_request").iloc[0]
    line = (f"**Label request:** asked by {safe.md('peercore calibrate --request')} — "
            f"{safe.md(shown['metadata']['reason'])}")
    assert line in [m.value for m in at.markdown]
    # the two answers, and no agents: no transcript, no verdicts, no blind-mode button
    assert not any(m.value == "**What the agents said**" for m in at.markdown)
    assert all(b.key != "adj_show_agents" for b in at.button)
    assert not any(e.label == "The whole debate" for e in at.expander)
    answers = store.questions.answers("synthetic")
    texts = [t.value for t in at.text]
    for model in (shown["model_a"], shown["model_b"]):
        text = answers[(answers["question_id"] == shown["question_id"]) & (answers["model"] == model)]["answer"].iloc[0]
        assert text.strip() in [t.strip() for t in texts]

    label, lines = _section(at)
    assert label == "Label requests: 2 open · 0 decided"
    assert len(lines) == 1 and "nothing decided yet" in lines[0] and f"{width_before:.3f}" in lines[0]

    at.button(key="adj_one").click().run()  # the "1" key's button: Submission 1 is better
    assert problems(at) == []
    decided = store.debates.adjudications("synthetic")
    decided = decided[decided["kind"] == "label_request"]
    assert decided[["debate_id", "annotator", "decision"]].values.tolist() == [[request_ids[0], ANNOTATOR, "model_a"]]
    assert at.subheader[0].value.startswith(f"Label request #{request_ids[1]} ")  # the next one is offered

    width_after = _width(store)
    assert width_after != width_before
    label, lines = _section(at)
    assert label == "Label requests: 1 open · 1 decided"
    numbers = re.findall(r"\*\*(\d+\.\d{3})\*\*", lines[0])
    assert numbers == [f"{width_after:.3f}", f"{width_before:.3f}"]  # with the decision, without it
    change = (width_before - width_after) / width_before
    assert (f"narrower by {change:.1%}" if change > 0 else f"wider by {-change:.1%}") in lines[0]


def test_who_asked_and_why_render_as_text(synthetic, store):
    """The request line shows the stored requester and reason as typed (peercore.ui.safe), no link or markup."""
    store.debates.add_label_requests("synthetic", [{"question_id": "q01", "model_a": "alpha", "model_b": "bravo"}],
                                     requested_by="**eve** <b>x</b>", reason="see [here](http://evil.invalid) ![](http://t.invalid/a.png)")
    _debates_decided(store)
    at = _signed_in()
    assert at.subheader[0].value.startswith("Label request #")
    line = [m.value for m in at.markdown if m.value.startswith("**Label request:**")]
    assert line == [f"**Label request:** asked by {safe.md('**eve** <b>x</b>')} — "
                    f"{safe.md('see [here](http://evil.invalid) ![](http://t.invalid/a.png)')}"]
    # no judge in the metadata: counted, no widths
    label, lines = _section(at)
    assert label == "Label requests: 1 open · 0 decided"
    assert lines == ["Label requests without a judge and reference recorded: 1 requested · 1 open · 0 decided."]
