"""UNDIAL (open-unlearning's ``undial.py``): the cross-entropy between the model and the frozen teacher's distribution
with the true token's logit lowered by β, pooled over the answer positions (``undial_positions="answer"``) or, as
open-unlearning's code does, over every position of the padded batch (``all_ou``, with its index wrap of -100);
no retain term by default. Its value by hand on a tiny model and the direction of one SGD step."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from unlearnkit import config
from unlearnkit import unlearning as ul

N = 4


@pytest.fixture(scope="module")
def batch(small_corpus, tiny_tokenizer):
    from unlearnkit import models

    forget, retain = small_corpus.load("forget10")[:N], small_corpus.load("retain90")[:N]
    examples = ul.encode_pairs(tiny_tokenizer, models.TEMPLATES["phi"], forget, retain, seed=0)
    return ul.collate_pairs(examples, tiny_tokenizer.pad_token_id)


@pytest.fixture(scope="module")
def teacher(tiny_tokenizer, batch):
    """The start model: a tiny model that has learnt the forget answers, frozen."""
    from unlearnkit import models

    torch.manual_seed(0)
    model = models.build_tiny_llama(tiny_tokenizer, {"hidden_size": 64, "num_hidden_layers": 2,
                                                     "num_attention_heads": 2, "intermediate_size": 128}, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sub = batch["forget"]
    for _ in range(25):
        loss = ul.mean_nll(model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                           sub["labels"]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return ul.frozen_reference(model)


@pytest.fixture()
def student(teacher):
    """The trained model a little way from the teacher (so the two differ)."""
    model = copy.deepcopy(teacher)
    model.requires_grad_(True)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.01)
    return model


def _logits(model, sub):
    with torch.no_grad():
        return model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits.double()


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
def test_the_value_is_the_formula(student, teacher, batch, positions):
    expected, count = _by_hand(student, teacher, batch["forget"], 10.0, positions == "all_ou")
    loss, logs = ul.UnlearningLoss("undial", ref_model=teacher, undial_positions=positions)(student, batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert loss.item() == pytest.approx(expected, rel=1e-5) and "retain_loss" not in logs  # α = 0: no retain term
    labels = batch["forget"]["labels"]
    n_answer = int((labels[:, 1:] != -100).sum())
    assert count == (n_answer if positions == "answer" else labels.size(0) * (labels.size(1) - 1))


def test_the_quirk_option_differs_and_beta_zero_is_distillation(student, teacher, batch):
    answer, _ = ul.UnlearningLoss("undial", ref_model=teacher)(student, batch)
    everywhere, _ = ul.UnlearningLoss("undial", ref_model=teacher, undial_positions="all_ou")(student, batch)
    assert answer.item() != pytest.approx(everywhere.item(), rel=1e-3)
    # β = 0 and θ = π_ref: the cross-entropy of the teacher with itself, its mean entropy at the answer positions
    sub = batch["forget"]
    logp = torch.log_softmax(_logits(teacher, sub), dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)[:, :-1][sub["labels"][:, 1:] != -100].mean().item()
    same = ul.UnlearningLoss("undial", ref_model=teacher, undial_beta=0.0)(copy.deepcopy(teacher), batch)[0]
    assert same.item() == pytest.approx(entropy, rel=1e-5)


def test_defaults_retain_switch_and_reference(student, teacher, batch):
    loss_fn = ul.UnlearningLoss("undial", ref_model=teacher)
    assert (loss_fn.undial_beta, loss_fn.undial_positions, loss_fn.has_retain_term) == (10.0, "answer", False)
    with_retain = ul.UnlearningLoss("undial", ref_model=teacher, undial_retain_term=True, retain_weight=0.5)
    loss, logs = with_retain(student, batch)
    assert loss.item() == pytest.approx(logs["forget_loss"] + 0.5 * logs["retain_loss"], rel=1e-6)
    with pytest.raises(ValueError, match="needs a reference model"):
        ul.UnlearningLoss("undial")(student, batch)
    with pytest.raises(ValueError, match="undial_positions must be one of answer, all_ou"):
        ul.UnlearningLoss("undial", undial_positions="all")
    # the profile's constraint offers the library's choices
    assert config.CONSTRAINTS["undial_positions"].choices == tuple(ul.UNDIAL_POSITIONS)


def test_one_sgd_step_lowers_the_forget_probability(teacher, batch):
    model = copy.deepcopy(teacher)  # θ = π_ref at the start, as in a run
    model.requires_grad_(True)
    sub = batch["forget"]

    def logprob():
        return ul.sequence_logprob(_logits(model, sub), sub["labels"]).mean().item()

    before = logprob()
    loss_fn = ul.UnlearningLoss("undial", ref_model=teacher)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss, _ = loss_fn(model, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert logprob() < before - 1e-2
    assert loss_fn(model, batch)[0].item() < loss.item()  # the teacher's target is fixed: the objective went down
    assert math.isfinite(loss.item())
