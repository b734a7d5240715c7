"""SimNPO (open-unlearning's ``simnpo.py``): −(2/β)·mean log σ(β·(NLL_i − δ)) on the length-normalised forget NLL, no
reference model, + α·NLL(retain); its value by hand on a tiny model and the direction of one SGD step."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from conftest import LOSS_WEIGHTS
from method_checks import N, ce_by_example, forget_logprob, sgd_step, tokens_by_hand
from unlearnkit import unlearning as ul


@pytest.fixture(scope="module")
def memorised_model(make_memorised_model):
    """A tiny model that has learnt the forget answers (NLL well below ln V), as a target model has."""
    return make_memorised_model(steps=40)


def _per_example_nll_by_hand(model, sub):
    """−(1/|y_i|)·Σ_t log p(y_t): a loop over the scored tokens, float64."""
    return [sum(ce) / len(ce) for ce in ce_by_example(tokens_by_hand(model, sub))]


def test_the_value_is_the_formula(memorised_model, method_batch):
    beta, delta = 4.5, 0.5
    nll = _per_example_nll_by_hand(memorised_model, method_batch["forget"])
    nll_r = _per_example_nll_by_hand(memorised_model, method_batch["retain"])
    log_sigmoid = [-math.log1p(math.exp(-beta * (x - delta))) for x in nll]
    expected = -(2 / beta) * sum(log_sigmoid) / N
    loss_fn = ul.UnlearningLoss("simnpo", simnpo_beta=beta, simnpo_delta=delta, forget_weight=0.125, lambda_f=0.0, lambda_r=0.0)
    loss, logs = loss_fn(memorised_model, method_batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert logs["forget_nll"] == pytest.approx(sum(nll) / N, rel=1e-5)
    assert logs["retain_loss"] == pytest.approx(sum(nll_r) / N, rel=1e-5)
    assert loss.item() == pytest.approx(0.125 * expected + sum(nll_r) / N, rel=1e-5)
    # δ = NLL_i makes each term (2/β)·ln 2: SimNPO's value where the margin is met
    at_margin = ul.UnlearningLoss("simnpo", simnpo_delta=nll[0], **LOSS_WEIGHTS)
    one = {k: {kk: v[:1] for kk, v in sub.items()} for k, sub in method_batch.items()}
    assert at_margin(memorised_model, one)[1]["forget_loss"] == pytest.approx(2 / 4.5 * math.log(2), rel=1e-5)


def test_open_unlearnings_defaults_and_no_reference(memorised_model, method_batch):
    loss_fn = ul.UnlearningLoss("simnpo", **LOSS_WEIGHTS)
    assert (loss_fn.simnpo_beta, loss_fn.simnpo_delta) == (4.5, 0.0)
    assert not loss_fn.needs_reference and "simnpo" not in ul.REFERENCE_METHODS
    assert loss_fn.params() == {"method": "simnpo", "forget_weight": 1.0, "lambda_f": 0.0, "lambda_r": 0.0,
                                "entropy_positions": "answer", "simnpo_beta": 4.5, "simnpo_delta": 0.0,
                                "retain_weight": 1.0}
    assert loss_fn(memorised_model, method_batch)[0].isfinite()  # no reference model asked for
    with pytest.warns(UserWarning, match="ignores beta"):  # SimNPO's β is its own parameter, not NPO's
        ul.UnlearningLoss("simnpo", beta=0.05, **LOSS_WEIGHTS)
    with pytest.raises(ValueError, match="simnpo_beta must be > 0"):
        ul.UnlearningLoss("simnpo", simnpo_beta=0.0, **LOSS_WEIGHTS)


def test_one_sgd_step_lowers_the_forget_probability(memorised_model, method_batch):
    model = copy.deepcopy(memorised_model)
    before = forget_logprob(model, method_batch["forget"])
    loss_fn = ul.UnlearningLoss("simnpo", retain_weight=0.0, **LOSS_WEIGHTS)
    model.train()
    loss = sgd_step(model, loss_fn, method_batch, lr=0.5)
    model.eval()
    after = forget_logprob(model, method_batch["forget"])
    with torch.no_grad():
        assert loss_fn(model, method_batch)[1]["forget_loss"] < loss.item()  # the objective went down
    assert after < before - 1e-2
