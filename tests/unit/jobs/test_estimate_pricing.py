"""Price table, estimates before a run, judge specs and the job CLI commands."""

from __future__ import annotations

import pytest

from peercore.cli import main
from peercore.jobs.base import Judge
from peercore.jobs.discussion import DebateJob
from peercore.jobs.estimate import estimate
from peercore.jobs.pricing import Price, PriceTable, load_prices
from peercore.jobs.review import ReviewJob
from peercore.jobs.specs import parse_judge_spec
from peercore.runner import RetryPolicy, estimate_tokens, run_job_sync
from runner.fakes import FakeBackend, make_study

PRICES = PriceTable({"fake": {"judge": Price(input=2.0, output=10.0)}})


# ---------------------------------------------------------------------- pricing


def test_bundled_prices_match_dated_snapshots_by_longest_prefix():
    prices = load_prices(bundled=True, path=None)
    assert prices.price("openai", "gpt-4o-2024-08-06") == prices.price("openai", "gpt-4o")
    assert prices.price("openai", "gpt-4o-mini-2024-07-18") == prices.price("openai", "gpt-4o-mini")
    assert prices.price("openai", "gpt-4o-mini") != prices.price("openai", "gpt-4o")
    assert prices.price("anthropic", "claude-3-5-haiku-20241022") is not None
    assert prices.cost("local", "anything-at-all", 10**6, 10**6) == 0.0
    assert prices.price("openai", "gpt-4ox") is None  # no '-' boundary: not a snapshot of gpt-4o
    assert prices.cost("openai-compatible", "llama3", 1, 1) is None


def test_price_cost_is_per_million_tokens():
    assert Price(2.5, 10.0).cost(1_000_000, 100_000) == pytest.approx(2.5 + 1.0)


def test_a_user_price_file_overrides_and_adds(tmp_path, monkeypatch):
    path = tmp_path / "prices.toml"
    path.write_text('[openai]\n"gpt-4o" = { input = 1.0, output = 1.0 }\n[openai-compatible]\n'
                    '"llama3" = { input = 0, output = 0 }\n')
    prices = load_prices(path)
    assert prices.price("openai", "gpt-4o") == Price(1.0, 1.0)
    assert prices.cost("openai-compatible", "llama3", 5, 5) == 0.0
    assert prices.price("anthropic", "claude-3-haiku") is not None  # bundled entries kept
    monkeypatch.setenv("PEERBOARD_PRICES", str(path))
    assert load_prices().price("openai", "gpt-4o") == Price(1.0, 1.0)


@pytest.mark.parametrize("text,match", [
    ('[openai]\n"m" = { input = -1, output = 1 }\n', r"openai\.m\.input must be a number >= 0.*-1"),
    ('[openai]\n"m" = { input = 1 }\n', r"openai\.m\.output .*None"),
    ("[openai\n", "not valid TOML"),
])
def test_bad_price_files_name_the_entry(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_prices(path)


# --------------------------------------------------------------------- estimate


def test_estimate_counts_the_calls_tokens_and_dollars_of_the_plan(store, study):
    job = ReviewJob(study, [FakeBackend()], max_tokens=300)
    est = estimate(job, store, prices=PRICES)
    assert (est.items, est.pending_items, est.calls_low, est.calls_high, est.cached_calls) == (18, 18, 18, 18, 0)
    job.prepare(store)
    prompt = sum(estimate_tokens(call.request) for item in job.prepare(store) for call in job.plan(item))
    assert est.prompt_tokens_low == est.prompt_tokens_high == prompt
    assert est.output_tokens_high == 18 * 300 and est.output_tokens_low == 18 * 200
    assert est.cost_usd_high == pytest.approx((prompt * 2.0 + 5400 * 10.0) / 1e6)
    assert est.cost_usd_low < est.cost_usd_high
    assert "18 of 18 items to do" in est.to_text()


def test_estimate_after_a_partial_run_counts_only_what_is_left(store, study):
    backend = FakeBackend(faults=[], fault_every=None)
    job = ReviewJob(study, [backend], questions=["q0"])
    run_job_sync(job, store, retry=RetryPolicy(base_s=0.001))
    est = estimate(ReviewJob(study, [backend]), store, prices=PRICES)
    assert est.pending_items == 18 and est.cached_calls == 6 and est.calls_high == 12
    est = estimate(job, store, prices=PRICES)
    assert est.pending_items == 0 and est.calls_high == 0 and est.cost_usd_high == 0.0


def test_estimate_says_which_price_is_unknown(store, study):
    est = estimate(ReviewJob(study, [FakeBackend(model="secret-model")]), store, prices=PRICES)
    assert est.cost_usd_low is None and est.unknown_prices == ("fake:secret-model",)
    assert "unknown" in est.to_text() and "fake:secret-model" in est.to_text()


def test_estimate_of_a_debate_is_a_range(store, study):
    agents = [Judge(FakeBackend(), name=n, temperature=t) for n, t in (("a", 0.0), ("b", 0.5), ("c", 1.0))]
    est = estimate(DebateJob(study, agents, max_rounds=3), store, prices=PRICES)
    assert est.items == 9 and est.calls_low == 9 * 3 and est.calls_high == 9 * 3 * 3


def test_estimate_spends_nothing(store, study):
    backend = FakeBackend()
    estimate(ReviewJob(study, [backend]), store, prices=PRICES)
    assert backend.requests == [] and len(store.runs.table(study)) == 0


# ------------------------------------------------------------------------- specs


def test_judge_specs_give_names_and_temperatures():
    judge = parse_judge_spec("warm=openai:gpt-4o-mini?temperature=0.7")
    assert (judge.label, judge.temperature, judge.backend.backend, judge.backend.model) == (
        "warm", 0.7, "openai", "gpt-4o-mini")
    plain = parse_judge_spec("anthropic:claude-3-5-haiku-20241022")
    assert plain.label == "anthropic:claude-3-5-haiku-20241022" and plain.temperature is None
    url = parse_judge_spec("compatible:llama3@http://127.0.0.1:9/v1")
    assert url.backend.model == "llama3" and url.backend.base_url == "http://127.0.0.1:9/v1"
    seeded = parse_judge_spec("warm2=local:qwen2.5-coder-1.5b?temperature=0.7&seed=20242")
    assert (seeded.label, seeded.temperature, seeded.seed) == ("warm2", 0.7, 20242)
    assert plain.seed is None


@pytest.mark.parametrize("spec,match", [
    ("gpt-4o", "spec must look like"),
    ("mystery:model", "'mystery'"),
    ("openai:gpt-4o?temp=1", r"unknown option\(s\) \['temp'\]"),
    ("openai:gpt-4o?temperature=hot", "must be a number, got 'hot'"),
    ("openai:gpt-4o?seed=1.5", "option seed .* must be an integer, got '1.5'"),
])
def test_bad_judge_specs_are_named(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_judge_spec(spec)


# ---------------------------------------------------------------------- commands


@pytest.fixture
def db(tmp_path, monkeypatch):
    from peercore.store import Store

    path = tmp_path / "cli.sqlite"
    store = Store(path)
    make_study(store)
    store.close()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-used")
    return str(path)


def test_dry_run_prints_the_estimate_and_sends_nothing(db, capsys):
    # port 9 (discard) on loopback: any request would fail loudly; a dry run makes none
    code = main(["review", "--study", "demo", "--db", db, "--reviewer", "openai:gpt-4o", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and "18 of 18 items to do" in out and "$" in out
    from peercore.store import Store

    assert len(Store(db).runs.table("demo")) == 0


def test_dry_run_json(db, capsys):
    import json

    code = main(["debate", "--study", "demo", "--db", db, "--agent", "a=openai:gpt-4o", "--agent",
                 "b=anthropic:claude-3-5-haiku", "--dry-run", "--json", "--max-rounds", "2"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["kind"] == "debate" and payload["calls_high"] == 2 * payload["calls_low"]


def test_debate_command_takes_the_templates(db, capsys):
    import json

    from peercore.store import Store

    agents = ["a=openai:gpt-4o", "b=openai:gpt-4o?temperature=0.7&seed=1", "c=openai:gpt-4o?temperature=0.7&seed=2"]
    args = ["debate", "--study", "demo", "--db", db, "--dry-run", "--json", "--max-rounds", "3", "--max-tokens", "80",
            "--initial-template", "scaleeval_compact_initial", "--discussion-template", "scaleeval_compact_discussion"]
    for spec in agents:
        args += ["--agent", spec]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    job = DebateJob("demo", [parse_judge_spec(a) for a in agents], max_rounds=3, max_tokens=80,
                    initial_template="scaleeval_compact_initial", discussion_template="scaleeval_compact_discussion")
    assert payload["run_id"] == job.run_id()
    assert payload["run_id"] != DebateJob("demo", [parse_judge_spec(a) for a in agents], max_rounds=3,
                                          max_tokens=80).run_id()
    assert len(Store(db).runs.table("demo")) == 0
    code = main(["debate", "--study", "demo", "--db", db, "--dry-run", "--agent", "a=openai:gpt-4o", "--agent",
                 "b=openai:gpt-4o", "--initial-template", "prd_review"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "kind 'debate_initial'" in err


def test_cli_errors_exit_2_with_one_line(db, capsys):
    code = main(["review", "--study", "demo", "--db", db, "--reviewer", "nonsense", "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "spec must look like" in err
    code = main(["discuss", "--study", "demo", "--db", db, "--reviewer", "openai:gpt-4o", "--dry-run"])
    assert code == 2 and "exactly 2 reviewers" in capsys.readouterr().err
    code = main(["review", "--study", "nope", "--db", db, "--reviewer", "openai:gpt-4o", "--dry-run"])
    assert code == 2 and "no study named 'nope'" in capsys.readouterr().err


def test_cli_missing_key_names_the_variable(db, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.chdir(tmp_path)  # no .streamlit/secrets.toml here
    code = main(["review", "--study", "demo", "--db", db, "--reviewer", "openai:gpt-4o"])
    assert code == 2 and "OPENAI_API_KEY" in capsys.readouterr().err


def test_cli_limit_option_is_parsed():
    from peercore.cli.runs import _limits

    limits = _limits(["openai:rpm=500,tpm=30000", "openai:gpt-4o:concurrency=2"])
    assert limits["openai"].requests_per_minute == 500 and limits["openai"].tokens_per_minute == 30000
    assert limits["openai:gpt-4o"].concurrency == 2
    with pytest.raises(ValueError, match="--limit"):
        _limits(["openai"])
    with pytest.raises(ValueError, match="options are rpm"):
        _limits(["openai:speed=3"])


def test_timeout_goes_only_to_backends_that_take_one():
    assert parse_judge_spec("openai:gpt-4o", timeout=2.5).backend.timeout == 2.5
    local = parse_judge_spec("local:qwen2.5-coder-1.5b", timeout=2.5)  # no timeout option; not loaded
    assert local.backend.backend == "local" and local.label == "local:qwen2.5-coder-1.5b"


# ------------------------------------------------------------------------ resume


@pytest.mark.parametrize("make", [
    lambda s, j: __import__("peercore.jobs.answers", fromlist=["x"]).AnswerJob(s, j, max_tokens=33),
    lambda s, j: ReviewJob(s, j, strategy="symmetric", comparisons=2, seed=4, method="samples", samples=3),
    lambda s, j: __import__("peercore.jobs.discussion", fromlist=["x"]).DiscussionJob(s, j[:2], turns=1),
    lambda s, j: DebateJob(s, j, criteria=["reasoning"], max_rounds=2, name="panel"),
    lambda s, j: DebateJob(s, [*j, parse_judge_spec("cold=openai:gpt-4o-mini?temperature=0.7&seed=5")],
                           initial_template="scaleeval_compact_initial",
                           discussion_template="scaleeval_compact_discussion"),
])
def test_a_stored_run_rebuilds_the_same_job(store, study, make):
    from peercore.jobs.resume import resume_job
    from peercore.runner import run_job_sync

    judges = [parse_judge_spec("warm=openai:gpt-4o-mini?temperature=0.7"),
              parse_judge_spec("compatible:llama3@http://127.0.0.1:9/v1"),
              parse_judge_spec("anthropic:claude-haiku-4-5")]
    job = make(study, judges)
    # register the run without calling anything: cancel before the first item
    import threading

    stop = threading.Event()
    stop.set()
    run_job_sync(job, store, cancel=stop)
    rebuilt = resume_job(store, job.run_id())
    assert type(rebuilt) is type(job) and rebuilt.config() == job.config()
    assert rebuilt.run_id() == job.run_id()
