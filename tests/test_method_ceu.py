"""CE-U (open-unlearning's ``ceu.py``): the cross-entropy between the model and its own next-token distribution with the
true token removed, at the answer positions but each answer's first, pooled over the batch; no retain term, no
reference. Its value by hand on a tiny model, the logits' gradient p − q and the direction of one SGD step."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import LOSS_WEIGHTS
from devices import close
from method_checks import N, assert_sgd_step_lowers_forget_logprob, forget_term_logits_grad, logits_of
from unlearnkit import unlearning as ul


def _kept_positions(labels, ignore_first):
    """(i, t) of every scored token y_{i,t} but each answer's first ``ignore_first``, by a loop."""
    out = []
    for i in range(labels.size(0)):
        scored = [t for t in range(labels.size(1)) if labels[i, t] != -100]
        out += [(i, t) for t in scored[ignore_first:]]
    return out


def _by_hand(logits, labels, ignore_first):
    """mean over the kept positions of −Σ_{v≠y} q_v log p_v, q_v = p_v / (1 − p_y): the model's own distribution
    without the true token, renormalised."""
    probs = torch.softmax(logits.double(), dim=-1)
    total, kept = 0.0, _kept_positions(labels, ignore_first)
    for i, t in kept:
        p, y = probs[i, t - 1], int(labels[i, t])
        q = p.clone()
        q[y] = 0.0
        q = q / (1 - p[y])
        total += -(q * p.log()).sum().item()
    return total / len(kept), kept


@pytest.mark.parametrize("ignore_first", [1, 0, 3])
def test_the_value_is_the_formula(memorised_model, method_batch, ignore_first):
    sub = method_batch["forget"]
    with torch.no_grad():
        logits = logits_of(memorised_model, sub)
    expected, kept = _by_hand(logits, sub["labels"], ignore_first)
    loss, logs = ul.UnlearningLoss("ceu", ceu_ignore_first=ignore_first, **LOSS_WEIGHTS)(memorised_model, method_batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert loss.item() == pytest.approx(expected, rel=1e-5)  # no retain term
    assert "retain_loss" not in logs
    assert len(kept) == int((sub["labels"] != -100).sum()) - N * ignore_first


def test_open_unlearnings_form_no_retain_no_reference(memorised_model, method_batch):
    loss_fn = ul.UnlearningLoss("ceu", **LOSS_WEIGHTS)
    assert loss_fn.ceu_ignore_first == 1 and not loss_fn.has_retain_term and not loss_fn.needs_reference
    assert ul.METHOD_PARAMETERS["ceu"] == ("ceu_ignore_first",)
    with pytest.warns(UserWarning, match="ignores retain_weight"):
        ul.UnlearningLoss("ceu", retain_weight=2.0, **LOSS_WEIGHTS)
    # at a uniform model the target is uniform over the other V − 1 tokens: the loss is ln V
    vocab = memorised_model.config.vocab_size

    class Uniform(torch.nn.Module):
        def forward(self, input_ids, attention_mask, use_cache=False):
            return type("Out", (), {"logits": torch.zeros(*input_ids.shape, vocab, requires_grad=True)})()

    assert loss_fn(Uniform(), method_batch)[1]["forget_loss"] == pytest.approx(math.log(vocab), rel=1e-6)


def test_the_logits_gradient_is_p_minus_q(memorised_model, method_batch):
    """d/dz of CE(q, softmax(z)) with q detached is (softmax(z) − q) / N: the target distribution takes no gradient."""
    sub = method_batch["forget"]
    logits, grad = forget_term_logits_grad(ul.UnlearningLoss("ceu", **LOSS_WEIGHTS), memorised_model, sub)
    probs = torch.softmax(logits.double(), dim=-1)
    kept = _kept_positions(sub["labels"], 1)
    expected = torch.zeros_like(probs)
    for i, t in kept:
        p, y = probs[i, t - 1], int(sub["labels"][i, t])
        q = p.clone()
        q[y] = 0.0
        expected[i, t - 1] = (p - q / (1 - p[y])) / len(kept)
    assert close(grad.double(), expected, atol=1e-7)


def test_one_sgd_step_lowers_the_forget_probability(memorised_model, method_batch):
    loss_fn = ul.UnlearningLoss("ceu", **LOSS_WEIGHTS)
    assert_sgd_step_lowers_forget_logprob(memorised_model, loss_fn, method_batch, lr=0.5)
