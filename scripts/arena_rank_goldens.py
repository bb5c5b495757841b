"""Record LMArena's ``arena-rank`` outputs on fixed data, as golden values for PeerBoard's parity tests.

arena-rank needs JAX, which PeerBoard does not depend on, so it runs here once, in a
virtualenv of its own, and the tests compare with what this script wrote:

    python3 -m venv /work/arena-venv
    /work/arena-venv/bin/pip install arena-rank==0.1.1 jax
    /work/arena-venv/bin/python scripts/arena_rank_goldens.py \\
        --alpacaeval tests/data/alpacaeval/weighted_alpaca_eval_gpt4_turbo.csv.gz \\
        --out tests/golden/data/arena_rank_0.1.1.json

The output holds the data itself (so the tests do not depend on numpy's random streams)
and, per case, arena-rank's ratings, coefficients and interval bounds, with the exact
calls that made them. Two data sets:

* ``synthetic``: 10 models, 3,000 battles between unevenly sampled pairs (so LMArena's
  reweighting matters), 10% ties, answers with model-dependent length and Markdown
  counts, and verdicts that prefer longer and bolder answers (the raw features are the
  (a - b)/(a + b) ratios of :mod:`peercore.ranking.style`, rounded to 1e-4). Stored in
  the output compactly: model codes and verdicts as strings of one character per battle.
* ``alpacaeval``: 13 AlpacaEval 2 models of tests/data/alpacaeval (:data:`ALPACAEVAL_MODELS`) against their
  baseline, hard verdicts (``preference`` > 1.5: the model wins), the length ratio as the
  one feature. Not stored (the tests rebuild it with :func:`alpacaeval` from the committed
  file); its row count and a SHA-256 of the battles are.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

STYLE = ("length", "header", "list", "bold")


def synthetic(seed: int = 20251123) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_models, n_battles = 10, 3000
    strength = rng.normal(0.0, 0.8, n_models)
    verbosity = rng.normal(0.0, 0.5, n_models)         # log-length offset per model
    markdown = rng.uniform(0.2, 3.0, n_models)           # Poisson rate of Markdown elements per model
    pair_weight = rng.pareto(1.2, (n_models, n_models)) + 0.05
    pairs = [(i, j) for i in range(n_models) for j in range(n_models) if i != j]
    probs = np.array([pair_weight[i, j] for i, j in pairs])
    chosen = rng.choice(len(pairs), size=n_battles, p=probs / probs.sum())
    a = np.array([pairs[k][0] for k in chosen])
    b = np.array([pairs[k][1] for k in chosen])

    def answer(models):
        length = np.round(np.exp(6.5 + verbosity[models] + rng.normal(0, 0.4, len(models))))
        counts = [rng.poisson(markdown[models] * scale) for scale in (0.5, 2.0, 1.0)]
        return np.column_stack([length] + counts)

    style_a, style_b = answer(a), answer(b)
    total = style_a + style_b
    ratio = np.where(total == 0, 0.0, (style_a - style_b) / np.where(total == 0, 1.0, total))
    ratio = np.round(ratio, 4)
    logit = strength[a] - strength[b] + 1.2 * ratio[:, 0] + 0.4 * ratio[:, 3]
    tie = rng.random(n_battles) < 0.10
    a_wins = rng.random(n_battles) < 1.0 / (1.0 + np.exp(-logit))
    names = np.array([f"model-{k}" for k in range(n_models)])
    frame = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                          "winner": np.where(tie, "tie", np.where(a_wins, "model_a", "model_b"))})
    for k, name in enumerate(STYLE):
        frame[name] = ratio[:, k]
    return frame


def encode(frame: pd.DataFrame) -> dict:
    """The synthetic battles as compact JSON (one character per battle for models and verdicts)."""
    models = sorted(set(frame["model_a"]) | set(frame["model_b"]))
    code = {m: str(k) for k, m in enumerate(models)}
    return {"models": models, "a": "".join(frame["model_a"].map(code)), "b": "".join(frame["model_b"].map(code)),
            "winner": "".join(frame["winner"].map({"model_a": "a", "model_b": "b", "tie": "t"})),
            "features": {f: frame[f].tolist() for f in STYLE if f in frame.columns}}


def decode(data: dict) -> pd.DataFrame:
    """Inverse of :func:`encode`."""
    models = data["models"]
    frame = pd.DataFrame({"model_a": [models[int(c)] for c in data["a"]], "model_b": [models[int(c)] for c in data["b"]],
                          "winner": [{"a": "model_a", "b": "model_b", "t": "tie"}[c] for c in data["winner"]]})
    for name, values in data["features"].items():
        frame[name] = values
    return frame


def fingerprint(frame: pd.DataFrame) -> str:
    import hashlib

    return hashlib.sha256(frame.to_csv(index=False, float_format="%.6f").encode()).hexdigest()


#: The 13 AlpacaEval 2 models the parity goldens were recorded on (the file holds more since issue 22).
ALPACAEVAL_MODELS = ("alpaca-7b", "alpaca-7b_concise", "claude-2.1", "claude-2.1_concise", "falcon-7b-instruct",
                     "FuseChat-Llama-3.2-3B-Instruct", "gemma-7b-it", "gpt-3.5-turbo-1106", "gpt-3.5-turbo-1106_concise",
                     "gpt-3.5-turbo-1106_verbose", "OpenHermes-2.5-Mistral-7B", "Qwen-14B-Chat", "vicuna-13b")


def alpacaeval(path: Path, models=ALPACAEVAL_MODELS) -> pd.DataFrame:
    """The battles of ``models`` (in the file's column order) from a trimmed annotations file (.csv or .csv.gz)."""
    wide = pd.read_csv(path, dtype={"question_id": str})
    rows = []
    for column in [c for c in wide.columns if c.startswith("preference:") and c.split(":", 1)[1] in models]:
        model = column.split(":", 1)[1]
        part = wide[wide[column].notna()]
        preference = part[column].astype(float)
        la, lb = part["length_1"].astype(float), part[f"length:{model}"].astype(float)
        rows.append(pd.DataFrame({
            "model_a": "gpt4_1106_preview", "model_b": model,
            "winner": np.where(preference < 1.5, "model_a", np.where(preference > 1.5, "model_b", "tie")),
            "length": np.round(np.where(la + lb == 0, 0.0, (la - lb) / (la + lb)), 6),
        }))
    return pd.concat(rows, ignore_index=True)


PLAIN_BOOTSTRAP = 200
CONTEXTUAL_BOOTSTRAP = 100


def plain_cases(frame: pd.DataFrame, *, bootstrap: bool) -> dict:
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.utils.data_utils import PairDataset

    out = {}
    for name, reweighted in (("bt_sandwich", False), ("bt_reweighted_sandwich", True)):
        dataset = PairDataset.from_pandas(frame, reweighted=reweighted)
        model = BradleyTerry(n_competitors=len(dataset.competitors))
        result = model.compute_ratings_and_cis(dataset, ci_method="sandwich")
        out[name] = {
            "call": f"BradleyTerry(n_competitors).compute_ratings_and_cis(PairDataset.from_pandas(df, "
                    f"reweighted={reweighted}), ci_method='sandwich')",
            "reweighted": reweighted, "ci_method": "sandwich", **_result(result),
        }
    if bootstrap:
        dataset = PairDataset.from_pandas(frame)
        model = BradleyTerry(n_competitors=len(dataset.competitors))
        result = _bootstrap(model, dataset, rounds=PLAIN_BOOTSTRAP, contextual=False)
        out["bt_bootstrap"] = {
            "call": f"BradleyTerry(n_competitors).compute_ratings_and_cis(PairDataset.from_pandas(df), "
                    f"ci_method='bootstrap', num_bootstrap={PLAIN_BOOTSTRAP}, seed=0), its bootstrap branch run "
                    "in-process (see _bootstrap)",
            "reweighted": False, "ci_method": "bootstrap", "rounds": PLAIN_BOOTSTRAP, **_result(result),
        }
    return out


def _bootstrap(model, dataset, *, rounds: int, contextual: bool, seed: int = 0) -> dict:
    """arena-rank's ``ci_method="bootstrap"`` branch, with the same draws, run sequentially in this process.

    Its own process pool deadlocks when forked after JAX has started (and recompiles in
    every spawned worker); the fits and the quantiles are the package's own functions.
    """
    import jax
    import jax.numpy as jnp

    model.fit(dataset)
    scale = lambda x: x * model.alpha + model.init_rating  # noqa: E731
    if contextual:
        from arena_rank.models.contextual_bradley_terry import fit_single_bootstrap_sample

        keys = jax.random.split(jax.random.PRNGKey(seed), rounds)
        fits = [fit_single_bootstrap_sample(keys[i], model, dataset) for i in range(rounds)]
    else:
        from arena_rank.models.bradley_terry import fit_single_bootstrap_sample

        total = jnp.sum(dataset.counts)
        counts = jax.random.multinomial(key=jax.random.PRNGKey(seed), n=int(total), p=dataset.counts / total,
                                        shape=(rounds, dataset.counts.shape[0]), dtype=model.dtype)
        fits = [fit_single_bootstrap_sample(counts[i], model, dataset) for i in range(rounds)]
    samples = scale(jnp.stack([f["ratings"] for f in fits]))
    out = {"competitors": dataset.competitors, "ratings": scale(model.params["ratings"]),
           "rating_lower": jnp.quantile(samples, 0.025, axis=0), "rating_upper": jnp.quantile(samples, 0.975, axis=0)}
    if contextual:
        out["coeffs"] = model.params["coeffs"]
    return out


def contextual_cases(frame: pd.DataFrame, features: list[str], *, bootstrap: bool) -> dict:
    from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
    from arena_rank.utils.data_utils import ContextualPairDataset

    out = {}
    for reg in (1.0, 1e-3):
        for reweighted in (True, False):
            dataset = ContextualPairDataset.from_pandas(frame, feature_cols=features, reweighted=reweighted)
            model = ContextualBradleyTerry(n_competitors=len(dataset.competitors), n_features=len(features), reg=reg)
            result = model.compute_ratings_and_cis(dataset, ci_method="sandwich")
            out[f"reg={reg:g},reweighted={reweighted}"] = {
                "call": f"ContextualBradleyTerry(n_competitors, n_features={len(features)}, reg={reg!r})"
                        f".compute_ratings_and_cis(ContextualPairDataset.from_pandas(df, feature_cols={features!r}, "
                        f"reweighted={reweighted}), ci_method='sandwich')",
                "reg": reg, "reweighted": reweighted, "ci_method": "sandwich", **_result(result),
            }
    if bootstrap:
        dataset = ContextualPairDataset.from_pandas(frame, feature_cols=features, reweighted=False)
        model = ContextualBradleyTerry(n_competitors=len(dataset.competitors), n_features=len(features), reg=1e-3)
        result = _bootstrap(model, dataset, rounds=CONTEXTUAL_BOOTSTRAP, contextual=True)
        out["reg=0.001,reweighted=False,bootstrap"] = {
            "call": f"ContextualBradleyTerry(n_competitors, n_features={len(features)}, reg=0.001)"
                    f".compute_ratings_and_cis(ContextualPairDataset.from_pandas(df, feature_cols={features!r}, "
                    f"reweighted=False), ci_method='bootstrap', num_bootstrap={CONTEXTUAL_BOOTSTRAP}, seed=0), its "
                    "bootstrap branch run in-process (see _bootstrap)",
            "reg": 1e-3, "reweighted": False, "ci_method": "bootstrap", "rounds": CONTEXTUAL_BOOTSTRAP,
            **_result(result),
        }
    return out


def _result(result: dict) -> dict:
    names = [str(c) for c in result["competitors"]]
    out = {"ratings": dict(zip(names, np.asarray(result["ratings"], dtype=float).tolist())),
           "lower": dict(zip(names, np.asarray(result["rating_lower"], dtype=float).tolist())),
           "upper": dict(zip(names, np.asarray(result["rating_upper"], dtype=float).tolist()))}
    if "coeffs" in result:
        out["coeffs"] = np.asarray(result["coeffs"], dtype=float).tolist()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpacaeval", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import arena_rank  # noqa: F401
    import jax
    from importlib.metadata import version

    started = time.time()
    data = {"synthetic": synthetic(), "alpacaeval": alpacaeval(args.alpacaeval)}
    payload = {
        "provenance": {
            "script": "scripts/arena_rank_goldens.py",
            "command": "/work/arena-venv/bin/python scripts/arena_rank_goldens.py --alpacaeval "
                       "tests/data/alpacaeval/weighted_alpaca_eval_gpt4_turbo.csv.gz --out "
                       "tests/golden/data/arena_rank_0.1.1.json",
            "arena-rank": version("arena-rank"), "jax": jax.__version__, "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "data": {},
        "cases": {},
    }
    for name, frame in data.items():
        features = [c for c in STYLE if c in frame.columns]
        if name == "synthetic":
            payload["data"][name] = encode(frame)
            assert decode(payload["data"][name]).equals(frame)
        else:
            payload["data"][name] = {"rebuild": "alpacaeval(tests/data/alpacaeval/weighted_alpaca_eval_gpt4_turbo.csv.gz)",
                                     "rows": len(frame), "sha256": fingerprint(frame)}
        cases = plain_cases(frame, bootstrap=name == "synthetic")
        cases.update({f"contextual[{','.join(fs)}],{k}": v
                      for fs in ([features[0]], features) if fs
                      for k, v in contextual_cases(frame, fs, bootstrap=(fs == features and name == "synthetic")).items()})
        payload["cases"][name] = cases
    payload["provenance"]["seconds"] = round(time.time() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, allow_nan=False, separators=(",", ":")) + "\n")
    print(f"wrote {args.out} ({sum(len(c) for c in payload['cases'].values())} cases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
