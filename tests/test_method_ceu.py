"""CE-U (open-unlearning's ``ceu.py``): the cross-entropy between the model and its own next-token distribution with the
true token removed, at the answer positions but each answer's first, pooled over the batch; no retain term, no
reference. Its value by hand on a tiny model, the logits' gradient p − q and the direction of one SGD step."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from unlearnkit import unlearning as ul

N = 4


@pytest.fixture(scope="module")
def batch(small_corpus, tiny_tokenizer):
    from unlearnkit import models

    forget, retain = small_corpus.load("forget10")[:N], small_corpus.load("retain90")[:N]
    examples = ul.encode_pairs(tiny_tokenizer, models.TEMPLATES["phi"], forget, retain, seed=0)
    return ul.collate_pairs(examples, tiny_tokenizer.pad_token_id)


@pytest.fixture(scope="module")
def memorised(tiny_tokenizer, batch):
    """A tiny model that has learnt the forget answers, as a target model has."""
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
    model.eval()
    return model


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
def test_the_value_is_the_formula(memorised, batch, ignore_first):
    sub = batch["forget"]
    with torch.no_grad():
        logits = memorised(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits
    expected, kept = _by_hand(logits, sub["labels"], ignore_first)
    loss, logs = ul.UnlearningLoss("ceu", ceu_ignore_first=ignore_first)(memorised, batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert loss.item() == pytest.approx(expected, rel=1e-5)  # no retain term
    assert "retain_loss" not in logs
    assert len(kept) == int((sub["labels"] != -100).sum()) - N * ignore_first


def test_open_unlearnings_form_no_retain_no_reference(memorised, batch):
    loss_fn = ul.UnlearningLoss("ceu")
    assert loss_fn.ceu_ignore_first == 1 and not loss_fn.has_retain_term and not loss_fn.needs_reference
    assert ul.METHOD_PARAMETERS["ceu"] == ("ceu_ignore_first",)
    with pytest.warns(UserWarning, match="ignores retain_weight"):
        ul.UnlearningLoss("ceu", retain_weight=2.0)
    # at a uniform model the target is uniform over the other V − 1 tokens: the loss is ln V
    vocab = memorised.config.vocab_size

    class Uniform(torch.nn.Module):
        def forward(self, input_ids, attention_mask, use_cache=False):
            return type("Out", (), {"logits": torch.zeros(*input_ids.shape, vocab, requires_grad=True)})()

    assert loss_fn(Uniform(), batch)[1]["forget_loss"] == pytest.approx(math.log(vocab), rel=1e-6)


def test_the_logits_gradient_is_p_minus_q(memorised, batch):
    """d/dz of CE(q, softmax(z)) with q detached is (softmax(z) − q) / N: the target distribution takes no gradient."""
    sub = batch["forget"]
    logits = memorised(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits.detach()
    logits.requires_grad_()

    class Frozen(torch.nn.Module):
        def forward(self, input_ids, attention_mask, use_cache=False):
            return type("Out", (), {"logits": logits})()

    loss_fn = ul.UnlearningLoss("ceu")
    loss_fn.spec.forget(ul.Step(loss_fn, Frozen(), {"forget": sub, "retain": sub}, None)).backward()
    probs = torch.softmax(logits.detach().double(), dim=-1)
    kept = _kept_positions(sub["labels"], 1)
    expected = torch.zeros_like(probs)
    for i, t in kept:
        p, y = probs[i, t - 1], int(sub["labels"][i, t])
        q = p.clone()
        q[y] = 0.0
        expected[i, t - 1] = (p - q / (1 - p[y])) / len(kept)
    assert torch.allclose(logits.grad.double(), expected, atol=1e-7)


def test_one_sgd_step_lowers_the_forget_probability(memorised, batch):
    model = copy.deepcopy(memorised)
    sub = batch["forget"]

    def logprob():
        with torch.no_grad():
            return ul.sequence_logprob(model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                                       sub["labels"]).mean().item()

    before = logprob()
    loss_fn = ul.UnlearningLoss("ceu")
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss, _ = loss_fn(model, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert logprob() < before - 1e-2
