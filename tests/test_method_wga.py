"""WGA (open-unlearning's ``wga.py``): −(1/N)·Σ_t sg(p_t)^β·CE_t over the answer tokens of the batch pooled, + α·NLL(retain);
its value by hand on a tiny model, the detached weight (the logits' gradient) and the direction of one SGD step."""

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


@pytest.mark.parametrize("beta", [1.0, 2.0, 0.0])
def test_the_value_is_the_formula_pooled_over_the_batchs_tokens(memorised_model, method_batch, beta):
    tokens = tokens_by_hand(memorised_model, method_batch["forget"])
    expected = -sum(p ** beta * ce for _, _, p, ce in tokens) / len(tokens)
    loss, logs = ul.UnlearningLoss("wga", wga_beta=beta, retain_weight=0.5, **LOSS_WEIGHTS)(memorised_model, method_batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert loss.item() == pytest.approx(expected + 0.5 * logs["retain_loss"], rel=1e-5)
    if beta == 0.0:  # plain gradient ascent on the tokens pooled (open-unlearning's GA reduction), not per example
        assert_pooled_over_tokens(expected, tokens)


def test_the_weight_is_detached(memorised_model, method_batch):
    """d/dz of −(1/N)·Σ w_t·CE_t with w_t constant is (w_t/N)·(onehot(y_t) − softmax(z_t)): no term from the weight."""
    sub = method_batch["forget"]
    logits, grad = forget_term_logits_grad(ul.UnlearningLoss("wga", wga_beta=1.0, **LOSS_WEIGHTS), memorised_model, sub)
    expected = weighted_ce_logits_grad_by_hand(logits, sub["labels"], lambda p: p)  # w_t = p_t
    assert close(grad.double(), expected, atol=1e-7)


def test_one_sgd_step_lowers_the_forget_probability(memorised_model, method_batch):
    loss_fn = ul.UnlearningLoss("wga", retain_weight=0.0, **LOSS_WEIGHTS)
    assert_sgd_step_lowers_forget_logprob(memorised_model, loss_fn, method_batch, lr=0.5)
    assert ul.UnlearningLoss("wga", **LOSS_WEIGHTS).params()["wga_beta"] == 1.0 and "wga" not in ul.REFERENCE_METHODS
