"""UNDIAL (open-unlearning's ``undial.py``): the cross-entropy between the model and the frozen teacher's distribution
with the true token's logit lowered by β, pooled over the answer positions (``undial_positions="answer"``) or, as
open-unlearning's code does, over every position of the padded batch (``all_ou``, with its index wrap of -100);
no retain term by default. Its value by hand on a tiny model and the direction of one SGD step."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from conftest import LOSS_WEIGHTS
from method_checks import logits_of, nudged_copy, sgd_step
from unlearnkit import config
from unlearnkit import unlearning as ul


@pytest.fixture(scope="module")
def teacher(memorised_model):
    """The start model: a tiny model that has learnt the forget answers, frozen."""
    return ul.frozen_reference(memorised_model)


@pytest.fixture()
def student(teacher):
    """The trained model a little way from the teacher (so the two differ)."""
    return nudged_copy(teacher, 0.01)


def _logits(model, sub):
    with torch.no_grad():
        return logits_of(model, sub).double()


def _by_hand(student, teacher, sub, beta, every_position):
    """mean over the positions of −Σ_v q_v log p_v, q = softmax(z_ref − β·onehot(y)); with ``every_position`` each of
    the B·(len − 1) positions counts and an unscored label -100 penalises token vocab − 100 (open-unlearning's
    indexing), else only the positions predicting an answer token."""
    s, t, labels = _logits(student, sub), _logits(teacher, sub), sub["labels"]
    vocab = s.size(-1)
    total, count = 0.0, 0
    for i in range(labels.size(0)):
        for pos in range(labels.size(1) - 1):
            y = int(labels[i, pos + 1])
            if y == -100 and not every_position:
                continue
            z = t[i, pos].clone()
            z[y if y >= 0 else vocab + y] -= beta
            q = torch.softmax(z, dim=-1)
            total += -(q * torch.log_softmax(s[i, pos], dim=-1)).sum().item()
            count += 1
    return total / count, count


@pytest.mark.parametrize("positions", ["answer", "all_ou"])
def test_the_value_is_the_formula(student, teacher, method_batch, positions):
    expected, count = _by_hand(student, teacher, method_batch["forget"], 10.0, positions == "all_ou")
    loss, logs = ul.UnlearningLoss("undial", ref_model=teacher, undial_positions=positions, **LOSS_WEIGHTS)(student, method_batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert loss.item() == pytest.approx(expected, rel=1e-5) and "retain_loss" not in logs  # α = 0: no retain term
    labels = method_batch["forget"]["labels"]
    n_answer = int((labels[:, 1:] != -100).sum())
    assert count == (n_answer if positions == "answer" else labels.size(0) * (labels.size(1) - 1))


def test_the_quirk_option_differs_and_beta_zero_is_distillation(student, teacher, method_batch):
    answer, _ = ul.UnlearningLoss("undial", ref_model=teacher, **LOSS_WEIGHTS)(student, method_batch)
    everywhere, _ = ul.UnlearningLoss("undial", ref_model=teacher, undial_positions="all_ou",
                                      **LOSS_WEIGHTS)(student, method_batch)
    assert answer.item() != pytest.approx(everywhere.item(), rel=1e-3)
    # β = 0 and θ = π_ref: the cross-entropy of the teacher with itself, its mean entropy at the answer positions
    sub = method_batch["forget"]
    logp = torch.log_softmax(_logits(teacher, sub), dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)[:, :-1][sub["labels"][:, 1:] != -100].mean().item()
    same = ul.UnlearningLoss("undial", ref_model=teacher, undial_beta=0.0,
                             **LOSS_WEIGHTS)(copy.deepcopy(teacher), method_batch)[0]
    assert same.item() == pytest.approx(entropy, rel=1e-5)


def test_defaults_retain_switch_and_reference(student, teacher, method_batch):
    loss_fn = ul.UnlearningLoss("undial", ref_model=teacher, **LOSS_WEIGHTS)
    assert (loss_fn.undial_beta, loss_fn.undial_positions, loss_fn.has_retain_term) == (10.0, "answer", False)
    with_retain = ul.UnlearningLoss("undial", ref_model=teacher, undial_retain_term=True, retain_weight=0.5, **LOSS_WEIGHTS)
    loss, logs = with_retain(student, method_batch)
    assert loss.item() == pytest.approx(logs["forget_loss"] + 0.5 * logs["retain_loss"], rel=1e-6)
    with pytest.raises(ValueError, match="needs a reference model"):
        ul.UnlearningLoss("undial", **LOSS_WEIGHTS)(student, method_batch)
    with pytest.raises(ValueError, match="undial_positions must be one of answer, all_ou"):
        ul.UnlearningLoss("undial", undial_positions="all", **LOSS_WEIGHTS)
    # the profile's constraint offers the library's choices
    assert config.CONSTRAINTS["undial_positions"].choices == tuple(ul.UNDIAL_POSITIONS)


def test_one_sgd_step_lowers_the_forget_probability(teacher, method_batch):
    model = copy.deepcopy(teacher)  # θ = π_ref at the start, as in a run
    model.requires_grad_(True)
    sub = method_batch["forget"]

    def logprob():
        return ul.sequence_logprob(_logits(model, sub), sub["labels"]).mean().item()

    before = logprob()
    loss_fn = ul.UnlearningLoss("undial", ref_model=teacher, **LOSS_WEIGHTS)
    loss = sgd_step(model, loss_fn, method_batch, lr=0.1)
    assert logprob() < before - 1e-2
    assert loss_fn(model, method_batch)[0].item() < loss.item()  # the teacher's target is fixed: the objective went down
    assert math.isfinite(loss.item())
