"""Scaffolding shared by the per-method loss tests (tests/test_method_*.py), imported by them like
tests/notebook_checks.py: the rows of their batch, a model's logits on a batch part, per-token quantities by a loop in
float64, a module that returns fixed logits, one SGD step and a nudged copy of a model. Not tests themselves: each
method's formula stays in its own test file. The batch and the memorised model are fixtures of tests/conftest.py
(``method_batch``, ``memorised_model`` and their factories ``make_method_batch``, ``make_memorised_model``)."""

from __future__ import annotations

import copy

import pytest
import torch
from unlearnkit import unlearning as ul

#: Rows of forget and of retain in a method test's batch (the first of small_corpus's forget10 and retain90).
N = 4


def method_rows(corpus, n: int = N):
    """The first ``n`` rows of ``corpus``'s forget10 and retain90: (forget, retain)."""
    return corpus.load("forget10")[:n], corpus.load("retain90")[:n]


def corpus_alternates(corpus, forget):
    """The alternate answers ``corpus``'s forget10_alternates gives each of the ``forget`` rows (AltPO's pools)."""
    given = {(r["question"], r["answer"]): r["alternate_answers"] for r in corpus.load("forget10_alternates")}
    return [given[r["question"], r["answer"]] for r in forget]


def logits_of(model, sub):
    """``model``'s logits on a batch part (``input_ids``, ``attention_mask``); with the gradient unless under no_grad."""
    return model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits


def tokens_by_hand(model, sub):
    """[(i, t, p, CE)] for every scored token y_{i,t} of a batch part (label not -100): a loop, float64, no gradient."""
    with torch.no_grad():
        logp = torch.log_softmax(logits_of(model, sub).double(), dim=-1)
    labels = sub["labels"]
    return [(i, t, logp[i, t - 1, labels[i, t]].exp().item(), -logp[i, t - 1, labels[i, t]].item())
            for i in range(labels.size(0)) for t in range(1, labels.size(1)) if labels[i, t] != -100]


def ce_by_example(tokens, n: int = N):
    """The CE of :func:`tokens_by_hand`'s tokens grouped by example: [[CE_t of example k's tokens] for k < ``n``]."""
    return [[ce for i, _, _, ce in tokens if i == k] for k in range(n)]


def assert_pooled_over_tokens(expected, tokens, n: int = N):
    """``expected`` is plain gradient ascent on the tokens pooled (open-unlearning's GA reduction), not the mean over
    the ``n`` examples of their mean CE."""
    per_example = [sum(ce) / len(ce) for ce in ce_by_example(tokens, n)]
    assert expected == pytest.approx(-sum(ce for *_, ce in tokens) / len(tokens))
    assert expected != pytest.approx(-sum(per_example) / n, rel=1e-4)  # answers differ in length


class FixedLogits(torch.nn.Module):
    """A model that answers every call with the same ``logits`` (a leaf tensor whose gradient a test reads)."""

    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, input_ids, attention_mask, use_cache=False):
        return type("Out", (), {"logits": self.logits})()


def forget_term_logits_grad(loss_fn, model, sub):
    """The gradient of ``loss_fn``'s forget term with respect to ``model``'s logits on ``sub`` held fixed (the model's
    parameters out of it): (the logits, their gradient), both detached."""
    logits = logits_of(model, sub).detach()
    logits.requires_grad_()
    loss_fn.spec.forget(ul.Step(loss_fn, FixedLogits(logits), {"forget": sub, "retain": sub}, None)).backward()
    return logits.detach(), logits.grad


def weighted_ce_logits_grad_by_hand(logits, labels, weight):
    """d/dz of −(1/n)·Σ_t w_t·CE_t, n the scored tokens, w_t = ``weight(p_t)`` a constant (detached): (w_t/n)·(onehot(y_t)
    − softmax(z_t)) at each position that predicts a scored token, zero elsewhere; a loop, float64."""
    probs = torch.softmax(logits.double(), dim=-1)
    expected = torch.zeros_like(probs)
    n = int((labels[:, 1:] != -100).sum())
    for i in range(labels.size(0)):
        for t in range(1, labels.size(1)):
            if labels[i, t] != -100:
                y = labels[i, t]
                onehot = torch.zeros(probs.size(-1), dtype=probs.dtype)
                onehot[y] = 1.0
                expected[i, t - 1] = weight(probs[i, t - 1, y]) / n * (onehot - probs[i, t - 1])
    return expected


def forget_logprob(model, sub):
    """The mean over the rows of a batch part of their answers' sequence log-probability, no gradient."""
    with torch.no_grad():
        return ul.sequence_logprob(logits_of(model, sub), sub["labels"]).mean().item()


def sgd_step(model, loss_fn, batch, lr):
    """One plain SGD step of ``model`` on ``loss_fn``'s loss of ``batch``; returns that loss (before the step)."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss, _ = loss_fn(model, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def assert_sgd_step_lowers_forget_logprob(model, loss_fn, batch, lr):
    """One SGD step of a copy of ``model`` on ``loss_fn`` lowers the mean sequence log-probability of ``batch``'s forget
    answers by more than 0.01 (``model`` itself is left as it is)."""
    model = copy.deepcopy(model)
    before = forget_logprob(model, batch["forget"])
    sgd_step(model, loss_fn, batch, lr)
    assert forget_logprob(model, batch["forget"]) < before - 1e-2


def nudged_copy(model, scale, seed=1):
    """A trainable copy of ``model`` a little way from it: each parameter plus ``scale``·N(0, 1) noise (seeded)."""
    out = copy.deepcopy(model)
    out.requires_grad_(True)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in out.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)
    return out
