"""Peer Rank reviewer weights (PRD section 3.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from peercore.errors import ConvergenceError
from peercore.judgments import judgments_from_frame
from peercore.ranking.peer_rank import fixed_point_weights, prd_weights, resolve_aliases
from peercore.ranking.winrate import win_rates


def _peer_reviews(seed=0, n_questions=30):
    """Three contestants reviewing each other; 'strong' is better and judges accurately."""
    rng = np.random.default_rng(seed)
    quality = {"strong": 1.0, "mid": 0.0, "weak": -1.0}
    accuracy = {"strong": 0.9, "mid": 0.7, "weak": 0.5}
    rows = []
    for q in range(n_questions):
        for judge in quality:
            for a in quality:
                for b in quality:
                    if a == b:
                        continue
                    truth = "model_a" if quality[a] > quality[b] else "model_b"
                    wrong = "model_b" if truth == "model_a" else "model_a"
                    verdict = truth if rng.random() < accuracy[judge] else wrong
                    rows.append({"question_id": q, "model_a": a, "model_b": b, "judge": judge, "winner": verdict})
    return judgments_from_frame(pd.DataFrame(rows))


def test_prd_iteration_by_hand():
    reviews = _peer_reviews()
    result = prd_weights(reviews, iterations=2)
    # iteration 1 by hand: win rates with equal weights, min-max, sum to one
    rates = win_rates(reviews)
    scaled = (rates - rates.min()) / (rates.max() - rates.min())
    first = scaled / scaled.sum()
    assert np.allclose(result.history.iloc[1].to_numpy(), first[list(result.history.columns)].to_numpy())
    second = win_rates(reviews, weights=first.to_dict())
    scaled = (second - second.min()) / (second.max() - second.min())
    assert np.allclose(result.weights.to_numpy(), (scaled / scaled.sum())[list(result.weights.index)].to_numpy())
    assert result.iterations == 2 and len(result.history) == 3
    assert result.weights["weak"] == 0.0 and result.weights["strong"] == result.weights.max()


def test_prd_supports_elo_and_bt():
    reviews = _peer_reviews()
    for method in ("elo", "bt"):
        result = prd_weights(reviews, method=method, elo_shuffles=10)
        assert result.weights.sum() == pytest.approx(1.0)
        assert result.weights.idxmax() == "strong"


@pytest.mark.parametrize("method", ["winrate", "bt", "elo"])
def test_fixed_point_is_a_fixed_point_and_keeps_everyone(method):
    reviews = _peer_reviews()
    result = fixed_point_weights(reviews, method=method, temperature=0.2, elo_shuffles=10)
    assert result.converged and result.change < 1e-9
    assert (result.weights > 0).all() and result.weights.sum() == pytest.approx(1.0)
    # one more application of the map does not move it
    again = fixed_point_weights(reviews, method=method, temperature=0.2, elo_shuffles=10, max_iter=result.iterations + 1)
    assert np.allclose(again.weights, result.weights, atol=1e-9)
    assert list(result.weights.sort_values().index) == ["weak", "mid", "strong"]


def test_temperature_orders_concentration():
    reviews = _peer_reviews()
    cold = fixed_point_weights(reviews, temperature=0.05).weights
    hot = fixed_point_weights(reviews, temperature=1.0).weights
    assert cold["strong"] > hot["strong"] and cold["weak"] < hot["weak"]


def test_non_convergence_raises_with_iteration_count():
    with pytest.raises(ConvergenceError, match="did not converge in 2 iterations"):
        fixed_point_weights(_peer_reviews(), max_iter=2)


def test_aliases():
    assert resolve_aliases(["openai:gpt-4o", "claude"], ["gpt-4o", "claude"]) == {"openai:gpt-4o": "gpt-4o", "claude": "claude"}
    assert resolve_aliases(["judge-1"], ["m"], {"judge-1": "m"}) == {"judge-1": "m"}
    with pytest.raises(ValueError, match=r"judge\(s\) \['human:alice'\] are not contestants"):
        resolve_aliases(["human:alice"], ["gpt-4o"])
    with pytest.raises(ValueError, match="names no contestant"):
        resolve_aliases(["x"], ["m"], {"x": "nope"})


def test_parameter_errors():
    reviews = _peer_reviews(n_questions=2)
    with pytest.raises(ValueError, match="method must be one of"):
        prd_weights(reviews, method="pagerank")
    with pytest.raises(ValueError, match="normalisation must be one of"):
        fixed_point_weights(reviews, normalisation="zscore")
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        fixed_point_weights(reviews, temperature=0)
    with pytest.raises(ValueError, match="iterations must be >= 1"):
        prd_weights(reviews, iterations=0)


def test_elo_weights_with_zero_shuffles_use_the_given_order_once():
    # PRD Appendix E with the battles in stored order (the CLI's --elo-shuffles 0):
    # iteration 1 by hand = min-max of one in-order Elo pass, then sum to one.
    from peercore.ranking.elo import elo_ratings

    reviews = _peer_reviews()
    result = prd_weights(reviews, method="elo", iterations=1, elo_shuffles=0)
    elo = elo_ratings(reviews, shuffles=0)
    scaled = (elo - elo.min()) / (elo.max() - elo.min())
    want = (scaled / scaled.sum())[list(result.weights.index)]
    assert np.allclose(result.weights.to_numpy(), want.to_numpy())
    assert np.allclose(result.scores.to_numpy(), elo_ratings(reviews, weights=result.weights.to_dict(),
                                                            weight_normalisation="mean")[list(result.scores.index)])
    fixed = fixed_point_weights(reviews, method="elo", elo_shuffles=0)
    assert fixed.converged


@pytest.mark.parametrize("bad", [-1, 2.5, True])
def test_elo_shuffles_must_be_a_non_negative_integer(bad):
    with pytest.raises(ValueError, match=rf"elo_shuffles must be an integer >= 0 \(0 = the given order, one pass\), got {bad!r}"):
        prd_weights(_peer_reviews(), method="elo", elo_shuffles=bad)
