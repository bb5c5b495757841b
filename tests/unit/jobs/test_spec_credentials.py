"""A key written into a judge spec never reaches a judge name, a message or the database (issue 17, item 3).

An OpenAI-compatible server is named by URL (``compatible:<model>@<base_url>``) and its
URL becomes part of the judge's name. A key in that URL's path or fragment, or under a
query parameter whose name is percent-encoded or unknown, must be refused, and the
refusal must not repeat it. Checked through the entry points: ``parse_judge_spec`` (the
CLI's ``--judge`` and the dashboard's spec box), the backend's constructor (the
dashboard's form builds it directly) and ``peercore review`` itself.
"""

from __future__ import annotations

import pytest

from integration.helpers import make_review_study
from peercore.cli import main
from peercore.jobs.specs import parse_judge_spec
from peercore.reviewers import CompatibleBackend
from peercore.store import Store

SECRET = "sk-SECRET0a1b2c3d4e5f"
SERVER = "http://127.0.0.1:8080/v1"

REFUSED = {
    "key as a path segment": f"compatible:llama3@{SERVER}/{SECRET}",
    "key in a fragment": f"compatible:llama3@{SERVER}#key={SECRET}",
    "bare key in a fragment": f"compatible:llama3@{SERVER}#{SECRET}",
    "percent-encoded parameter name": f"compatible:llama3@{SERVER}?api%5Fkey={SECRET}",
    "percent-encoded name, other case": f"compatible:llama3@{SERVER}?API%5fKEY={SECRET}",
    "unknown parameter": f"compatible:llama3@{SERVER}?foo={SECRET}",
    "unknown parameter without a value": f"compatible:llama3@{SERVER}?{SECRET}",
    "key as a matrix parameter": f"compatible:llama3@{SERVER};token={SECRET}/chat",
    "long random token in the path": f"compatible:llama3@{SERVER}/Zk3q9XvB7mPw2LtY8cRn4HsJ6dQf1GaK",
    "user info": f"compatible:llama3@http://me:{SECRET}@127.0.0.1:8080/v1",
}

ACCEPTED = {
    f"compatible:llama3@{SERVER}": f"compatible:llama3@{SERVER}",
    "compatible:m@https://api-inference.huggingface.co/models/meta-llama/Meta-Llama-3-8B-Instruct/v1":
        "compatible:m@https://api-inference.huggingface.co/models/meta-llama/Meta-Llama-3-8B-Instruct/v1",
    "compatible:gpt@https://gateway.ai.cloudflare.com/v1/53c9f0a31af31361cd4841ca34d0fadf/gw/openai":
        "compatible:gpt@https://gateway.ai.cloudflare.com/v1/53c9f0a31af31361cd4841ca34d0fadf/gw/openai",
    f"compatible:llama3@{SERVER}?api_key_env=LLAMA_KEY&temperature=0": f"compatible:llama3@{SERVER}",
}


@pytest.mark.parametrize("spec", list(REFUSED.values()), ids=list(REFUSED))
def test_a_key_anywhere_in_a_spec_is_refused_without_repeating_it(spec):
    with pytest.raises(ValueError) as refused:
        parse_judge_spec(spec)
    message = str(refused.value)
    assert "SECRET" not in message and "Zk3q9XvB7mPw2LtY8cRn4HsJ6dQf1GaK" not in message, message
    assert "127.0.0.1" in message  # the message still says which spec


@pytest.mark.parametrize("spec, name", list(ACCEPTED.items()))
def test_ordinary_server_urls_are_accepted_and_named_by_them(spec, name):
    assert parse_judge_spec(spec).label == name


@pytest.mark.parametrize("url", [f"{SERVER}/{SECRET}", f"{SERVER}#key={SECRET}", f"http://u:{SECRET}@127.0.0.1/v1"])
def test_the_backend_itself_refuses_a_key_in_its_url(url):
    # The dashboard's reviewer form builds the backend from a URL field, not from a spec.
    with pytest.raises(ValueError) as refused:
        CompatibleBackend("llama3", base_url=url)
    assert "SECRET" not in str(refused.value), refused.value


@pytest.mark.parametrize("spec", [REFUSED["key as a path segment"], REFUSED["key in a fragment"],
                                  REFUSED["percent-encoded parameter name"], REFUSED["unknown parameter"]])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_peercore_review_refuses_the_spec_with_one_line_and_stores_nothing(spec, dry_run, tmp_path, capsys):
    db = tmp_path / "pb.sqlite"
    with Store(db) as store:
        make_review_study(store, "s", questions=2, models=2)
    argv = ["review", "--study", "s", "--reviewer", spec, "--db", str(db), "--no-progress"]
    status = main(argv + (["--dry-run"] if dry_run else []))
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert "SECRET" not in out + err, out + err
    assert len(err.strip().splitlines()) == 1, err
    with Store(db) as store:
        store.checkpoint()
    assert b"SECRET" not in db.read_bytes()
