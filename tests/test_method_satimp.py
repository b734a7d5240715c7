"""SatImp (open-unlearning's ``satimp.py``): −(1/N)·Σ_t sg(p_t^β1·(1 − p_t)^β2)·CE_t over the answer tokens of the batch
pooled, + α·NLL(retain); its value by hand on a tiny model, the detached weight (the logits' gradient) and the
direction of one SGD step."""

from __future__ import annotations

import pytest
from conftest import LOSS_WEIGHTS
from devices import close
from method_checks import (
    assert_pooled_over_tokens,
    assert_sgd_step_lowers_forget_logprob,
    forget_term_logits_grad,
    tokens_by_hand,
    weighted_ce_logits_grad_by_hand,
)
from unlearnkit import unlearning as ul


@pytest.mark.parametrize("beta1, beta2", [(5.0, 1.0), (1.0, 2.0), (0.0, 0.0)])
def test_the_value_is_the_formula_pooled_over_the_batchs_tokens(memorised_model, method_batch, beta1, beta2):
    tokens = tokens_by_hand(memorised_model, method_batch["forget"])
    expected = -sum(p ** beta1 * (1 - p) ** beta2 * ce for _, _, p, ce in tokens) / len(tokens)
    loss_fn = ul.UnlearningLoss("satimp", satimp_beta1=beta1, satimp_beta2=beta2, retain_weight=0.5, **LOSS_WEIGHTS)
    loss, logs = loss_fn(memorised_model, method_batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert loss.item() == pytest.approx(expected + 0.5 * logs["retain_loss"], rel=1e-5)
    if beta1 == beta2 == 0.0:  # plain gradient ascent on the tokens pooled (open-unlearning's GA reduction), not per example
        assert_pooled_over_tokens(expected, tokens)


def test_the_weight_is_detached(memorised_model, method_batch):
    """d/dz of −(1/N)·Σ w_t·CE_t with w_t = p_t^5·(1 − p_t) constant is (w_t/N)·(onehot(y_t) − softmax(z_t)): no term
    from the weight."""
    sub = method_batch["forget"]
    loss_fn = ul.UnlearningLoss("satimp", **LOSS_WEIGHTS)  # β1 5, β2 1
    logits, grad = forget_term_logits_grad(loss_fn, memorised_model, sub)
    expected = weighted_ce_logits_grad_by_hand(logits, sub["labels"], lambda p: p ** 5 * (1 - p))
    assert close(grad.double(), expected, atol=1e-7)


def test_one_sgd_step_lowers_the_forget_probability(memorised_model, method_batch):
    loss_fn = ul.UnlearningLoss("satimp", retain_weight=0.0, **LOSS_WEIGHTS)
    assert_sgd_step_lowers_forget_logprob(memorised_model, loss_fn, method_batch, lr=5.0)
    defaults = ul.UnlearningLoss("satimp", **LOSS_WEIGHTS).params()
    assert (defaults["satimp_beta1"], defaults["satimp_beta2"]) == (5.0, 1.0) and "satimp" not in ul.REFERENCE_METHODS
    with pytest.raises(ValueError, match="satimp_beta2 must be >= 0"):
        ul.UnlearningLoss("satimp", satimp_beta2=-1, **LOSS_WEIGHTS)
