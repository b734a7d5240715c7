"""WGA (open-unlearning's ``wga.py``): −(1/N)·Σ_t sg(p_t)^β·CE_t over the answer tokens of the batch pooled, + α·NLL(retain);
its value by hand on a tiny model, the detached weight (the logits' gradient) and the direction of one SGD step."""

from __future__ import annotations

import copy

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
    """A tiny model that has learnt the forget answers (token probabilities far above 1/V), as a target model has."""
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


def _tokens_by_hand(logits, labels):
    """[(i, t, p, CE)] for every scored token: a loop, float64."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    return [(i, t, logp[i, t - 1, labels[i, t]].exp().item(), -logp[i, t - 1, labels[i, t]].item())
            for i in range(labels.size(0)) for t in range(1, labels.size(1)) if labels[i, t] != -100]


@pytest.mark.parametrize("beta", [1.0, 2.0, 0.0])
def test_the_value_is_the_formula_pooled_over_the_batchs_tokens(memorised, batch, beta):
    sub = batch["forget"]
    with torch.no_grad():
        tokens = _tokens_by_hand(memorised(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                                 sub["labels"])
    expected = -sum(p ** beta * ce for _, _, p, ce in tokens) / len(tokens)
    loss, logs = ul.UnlearningLoss("wga", wga_beta=beta, retain_weight=0.5)(memorised, batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    assert loss.item() == pytest.approx(expected + 0.5 * logs["retain_loss"], rel=1e-5)
    if beta == 0.0:  # plain gradient ascent on the tokens pooled (open-unlearning's GA reduction), not per example
        per_example = [sum(ce for i, _, _, ce in tokens if i == k) / sum(1 for i, *_ in tokens if i == k)
                       for k in range(N)]
        assert expected == pytest.approx(-sum(ce for *_, ce in tokens) / len(tokens))
        assert expected != pytest.approx(-sum(per_example) / N, rel=1e-4)  # answers differ in length


def test_the_weight_is_detached(memorised, batch):
    """d/dz of −(1/N)·Σ w_t·CE_t with w_t constant is (w_t/N)·(onehot(y_t) − softmax(z_t)): no term from the weight."""
    sub = batch["forget"]
    logits = memorised(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits.detach()
    logits.requires_grad_()

    class Frozen(torch.nn.Module):
        def forward(self, input_ids, attention_mask, use_cache=False):
            return type("Out", (), {"logits": logits})()

    loss_fn = ul.UnlearningLoss("wga", wga_beta=1.0)
    only_forget = {"forget": sub, "retain": sub}
    loss_fn.spec.forget(ul.Step(loss_fn, Frozen(), only_forget, None)).backward()
    probs = torch.softmax(logits.detach().double(), dim=-1)
    labels = sub["labels"]
    expected = torch.zeros_like(probs)
    n = int((labels[:, 1:] != -100).sum())
    for i in range(labels.size(0)):
        for t in range(1, labels.size(1)):
            if labels[i, t] != -100:
                y = labels[i, t]
                onehot = torch.zeros(probs.size(-1), dtype=probs.dtype)
                onehot[y] = 1.0
                expected[i, t - 1] = probs[i, t - 1, y] / n * (onehot - probs[i, t - 1])
    assert torch.allclose(logits.grad.double(), expected, atol=1e-7)


def test_one_sgd_step_lowers_the_forget_probability(memorised, batch):
    model = copy.deepcopy(memorised)
    sub = batch["forget"]

    def logprob():
        with torch.no_grad():
            return ul.sequence_logprob(model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                                       sub["labels"]).mean().item()

    before = logprob()
    loss_fn = ul.UnlearningLoss("wga", retain_weight=0.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss, _ = loss_fn(model, batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert logprob() < before - 1e-2
    assert ul.UnlearningLoss("wga").params()["wga_beta"] == 1.0 and "wga" not in ul.REFERENCE_METHODS
