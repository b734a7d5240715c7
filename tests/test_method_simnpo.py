"""SimNPO (open-unlearning's ``simnpo.py``): −(2/β)·mean log σ(β·(NLL_i − δ)) on the length-normalised forget NLL, no
reference model, + α·NLL(retain); its value by hand on a tiny model and the direction of one SGD step."""

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
    """A tiny model that has learnt the forget answers (NLL well below ln V), as a target model has."""
    from unlearnkit import models

    torch.manual_seed(0)
    model = models.build_tiny_llama(tiny_tokenizer, {"hidden_size": 64, "num_hidden_layers": 2,
                                                     "num_attention_heads": 2, "intermediate_size": 128}, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sub = batch["forget"]
    for _ in range(40):
        logits = model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits
        loss = ul.mean_nll(logits, sub["labels"]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model


def _logits(model, sub):
    return model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits


def _per_example_nll_by_hand(logits, labels):
    """−(1/|y_i|)·Σ_t log p(y_t): a loop over the scored tokens, float64."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    out = []
    for i in range(labels.size(0)):
        terms = [-logp[i, t - 1, labels[i, t]].item() for t in range(1, labels.size(1)) if labels[i, t] != -100]
        out.append(sum(terms) / len(terms))
    return out


def test_the_value_is_the_formula(memorised, batch):
    beta, delta = 4.5, 0.5
    with torch.no_grad():
        nll = _per_example_nll_by_hand(_logits(memorised, batch["forget"]), batch["forget"]["labels"])
        nll_r = _per_example_nll_by_hand(_logits(memorised, batch["retain"]), batch["retain"]["labels"])
    log_sigmoid = [-math.log1p(math.exp(-beta * (x - delta))) for x in nll]
    expected = -(2 / beta) * sum(log_sigmoid) / N
    loss_fn = ul.UnlearningLoss("simnpo", simnpo_beta=beta, simnpo_delta=delta, forget_weight=0.125)
    loss, logs = loss_fn(memorised, batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert logs["forget_nll"] == pytest.approx(sum(nll) / N, rel=1e-5)
    assert logs["retain_loss"] == pytest.approx(sum(nll_r) / N, rel=1e-5)
    assert loss.item() == pytest.approx(0.125 * expected + sum(nll_r) / N, rel=1e-5)
    # δ = NLL_i makes each term (2/β)·ln 2: SimNPO's value where the margin is met
    at_margin = ul.UnlearningLoss("simnpo", simnpo_delta=nll[0])
    one = {k: {kk: v[:1] for kk, v in sub.items()} for k, sub in batch.items()}
    assert at_margin(memorised, one)[1]["forget_loss"] == pytest.approx(2 / 4.5 * math.log(2), rel=1e-5)


def test_open_unlearnings_defaults_and_no_reference(memorised, batch):
    loss_fn = ul.UnlearningLoss("simnpo")
    assert (loss_fn.simnpo_beta, loss_fn.simnpo_delta) == (4.5, 0.0)
    assert not loss_fn.needs_reference and "simnpo" not in ul.REFERENCE_METHODS
    assert loss_fn.params() == {"method": "simnpo", "forget_weight": 1.0, "lambda_f": 0.0, "lambda_r": 0.0,
                                "entropy_positions": "answer", "simnpo_beta": 4.5, "simnpo_delta": 0.0,
                                "retain_weight": 1.0}
    assert loss_fn(memorised, batch)[0].isfinite()  # no reference model asked for
    with pytest.warns(UserWarning, match="ignores beta"):  # SimNPO's β is its own parameter, not NPO's
        ul.UnlearningLoss("simnpo", beta=0.05)
    with pytest.raises(ValueError, match="simnpo_beta must be > 0"):
        ul.UnlearningLoss("simnpo", simnpo_beta=0.0)


def test_one_sgd_step_lowers_the_forget_probability(memorised, batch):
    model = copy.deepcopy(memorised)
    with torch.no_grad():
        before = ul.sequence_logprob(_logits(model, batch["forget"]), batch["forget"]["labels"]).mean().item()
    loss_fn = ul.UnlearningLoss("simnpo", retain_weight=0.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model.train()
    loss, _ = loss_fn(model, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    with torch.no_grad():
        after = ul.sequence_logprob(_logits(model, batch["forget"]), batch["forget"]["labels"]).mean().item()
        assert loss_fn(model, batch)[1]["forget_loss"] < loss.item()  # the objective went down
    assert after < before - 1e-2
