"""Unlearning losses (docs/metrics.md §3–§5) on a tiny Llama: closed forms at θ = π_ref, the direction of one
optimiser step, objective capping, model mixing, the LoRA reference and the error messages."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from conftest import LOSS_WEIGHTS
from devices import close, numpy, same
from unlearnkit import models, training
from unlearnkit import unlearning as ul

N_PAIRS = 4


@pytest.fixture(scope="module")
def rows(small_corpus):
    return small_corpus.load("forget10")[:N_PAIRS], small_corpus.load("retain90")[:N_PAIRS]


@pytest.fixture()
def batch(rows, tiny_tokenizer, template):
    forget, retain = rows
    examples = ul.encode_pairs(tiny_tokenizer, template, forget, retain, with_idk=True, seed=0)
    return ul.collate_pairs(examples, tiny_tokenizer.pad_token_id)


def _loss(method, model, batch, **kw):
    return ul.UnlearningLoss(method, **{**LOSS_WEIGHTS, **kw})(model, batch)


def _step(model, loss_fn, batch, lr=1e-3, steps=1):
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        loss, _ = loss_fn(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


@torch.no_grad()
def _nll(model, sub):
    return ul.mean_nll(model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                       sub["labels"]).mean().item()


@torch.no_grad()
def _logprob(model, sub):
    return ul.sequence_logprob(model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                               sub["labels"]).mean().item()


# --------------------------------------------------------------------------- batch layout and helpers


def test_batch_layout_and_refusals(batch, rows, tiny_tokenizer, template):
    assert set(batch) == {"forget", "retain", "forget_idk"}
    for sub in batch.values():
        assert set(sub) == {"input_ids", "attention_mask", "labels"}
        assert sub["input_ids"].shape == sub["labels"].shape == sub["attention_mask"].shape
        assert sub["input_ids"].shape[0] == N_PAIRS
        assert (sub["labels"][sub["attention_mask"] == 0] == -100).all()  # padding never scored
    # the refusal row asks the same question as the forget row: identical prompt tokens
    forget, idk = batch["forget"], batch["forget_idk"]
    n_prompt = int((forget["labels"][0] == -100).logical_and(forget["attention_mask"][0] == 1).sum())
    assert same(forget["input_ids"][0, :n_prompt], idk["input_ids"][0, :n_prompt])
    answer = tiny_tokenizer.decode(idk["labels"][0][idk["labels"][0] != -100][:-1])
    assert answer == ul.pick_idk_answer(rows[0][0]["question"], seed=0) and answer in ul.IDK_ANSWERS
    # seeded, keyed by item, and varied across items
    assert ul.pick_idk_answer("q", 3) == ul.pick_idk_answer("q", 3)
    assert len({ul.pick_idk_answer(i, 0) for i in range(200)}) >= 15
    assert len(ul.IDK_ANSWERS) >= 20 and len(set(ul.IDK_ANSWERS)) == len(ul.IDK_ANSWERS)
    plain = ul.collate_pairs([ul.encode_pair(tiny_tokenizer, template, rows[0][0], rows[1][0])], 0)
    assert set(plain) == {"forget", "retain"}


def test_per_example_helpers_match_answer_nll(tiny_model, tiny_tokenizer, template, rows):
    from unlearnkit.metrics.tofu import answer_nll

    forget = rows[0]
    sub = models.collate([models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"]) for r in forget],
                         tiny_tokenizer.pad_token_id)
    with torch.no_grad():
        logits = tiny_model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits
    nll = ul.mean_nll(logits, sub["labels"])
    n_scored = (sub["labels"][:, 1:] != -100).sum(-1)
    expected = answer_nll(tiny_model, tiny_tokenizer, template, [r["question"] for r in forget],
                          [r["answer"] for r in forget], answer_tokens="separate")
    assert nll.shape == (N_PAIRS,)
    assert numpy(nll) == pytest.approx(expected, rel=1e-5)
    assert ul.sequence_logprob(logits, sub["labels"]) == pytest.approx(-nll * n_scored, rel=1e-5)
    # at a uniform distribution the entropy of every position is ln(vocab)
    flat = torch.zeros(2, 5, 7)
    assert ul.mean_entropy(flat, torch.ones(2, 5, dtype=torch.bool)) == pytest.approx([math.log(7)] * 2)


# --------------------------------------------------------------------------- closed forms at θ = π_ref


def test_closed_forms_at_the_reference(tiny_model, batch):
    ref = ul.frozen_reference(tiny_model)
    assert not ref.training and not any(p.requires_grad for p in ref.parameters())
    beta = 0.1
    _, logs = _loss("npo", tiny_model, batch, ref_model=ref, beta=beta)
    assert logs["forget_loss"] == pytest.approx(2 / beta * math.log(2), rel=1e-5)
    assert logs["npo_log_ratio"] == pytest.approx(0.0, abs=1e-4)
    _, logs = _loss("kl", tiny_model, batch, ref_model=ref)
    assert logs["retain_loss"] == pytest.approx(0.0, abs=1e-6)
    _, logs = _loss("dpo", tiny_model, batch, ref_model=ref, beta=beta)
    assert logs["forget_loss"] == pytest.approx(math.log(2), rel=1e-5)
    assert logs["dpo_margin"] == pytest.approx(0.0, abs=1e-4)
    _, logs = _loss("rmu", tiny_model, batch, ref_model=ref)
    assert logs["retain_loss"] == pytest.approx(0.0, abs=1e-10)
    assert logs["forget_loss"] > 0


def test_totals_combine_the_terms(tiny_model, batch):
    ref = ul.frozen_reference(tiny_model)
    nll_f, nll_r = _nll(tiny_model, batch["forget"]), _nll(tiny_model, batch["retain"])
    loss, logs = _loss("ga", tiny_model, batch)
    assert loss.item() == pytest.approx(-nll_f, rel=1e-5) and "retain_loss" not in logs
    loss, logs = _loss("gd", tiny_model, batch, forget_weight=0.5, retain_weight=2.0)
    assert loss.item() == pytest.approx(-0.5 * nll_f + 2.0 * nll_r, rel=1e-5)
    assert logs["retain_loss"] == pytest.approx(nll_r, rel=1e-5)
    loss, logs = _loss("idk", tiny_model, batch)
    assert loss.item() == pytest.approx(_nll(tiny_model, batch["forget_idk"]) + nll_r, rel=1e-5)
    loss, logs = _loss("npo", tiny_model, batch, ref_model=ref, npo_retain_term=False)
    assert "retain_loss" not in logs and loss.item() == pytest.approx(logs["forget_loss"], rel=1e-6)
    loss, logs = _loss("dpo", tiny_model, batch, ref_model=ref, retain_weight=0.5)
    assert loss.item() == pytest.approx(math.log(2) + 0.5 * nll_r, rel=1e-5)
    loss, logs = _loss("gd", tiny_model, batch, lambda_f=1.0, lambda_r=-0.25)
    assert loss.item() == pytest.approx(-nll_f + nll_r + logs["forget_entropy"] - 0.25 * logs["retain_entropy"],
                                        rel=1e-5)
    # "all" positions differ from answer positions (the prompt counts too)
    _, logs_all = _loss("gd", tiny_model, batch, lambda_f=1.0, entropy_positions="all")
    assert logs_all["forget_entropy"] != pytest.approx(logs["forget_entropy"], rel=1e-6)


# --------------------------------------------------------------------------- one step in the stated direction


@pytest.mark.parametrize("method", ["ga", "gd"])
def test_gradient_ascent_raises_forget_nll(method, tiny_model, batch):
    before = _nll(tiny_model, batch["forget"])
    _step(tiny_model, ul.UnlearningLoss(method, **LOSS_WEIGHTS), batch)
    assert _nll(tiny_model, batch["forget"]) > before + 1e-3


def test_kl_step_raises_forget_nll_and_keeps_retain_close(tiny_model, batch):
    ref = ul.frozen_reference(tiny_model)
    before = _nll(tiny_model, batch["forget"])
    loss_fn = ul.UnlearningLoss("kl", ref_model=ref, **LOSS_WEIGHTS)
    _step(tiny_model, loss_fn, batch)
    assert _nll(tiny_model, batch["forget"]) > before + 1e-3
    _, logs = loss_fn(tiny_model, batch)
    assert logs["retain_loss"] > 0  # moved away from π_ref, so the KL is now positive


def test_idk_raises_the_refusal_probability(tiny_model, batch):
    before = _nll(tiny_model, batch["forget_idk"])
    _step(tiny_model, ul.UnlearningLoss("idk", **LOSS_WEIGHTS), batch)
    assert _nll(tiny_model, batch["forget_idk"]) < before - 1e-3


def test_npo_lowers_forget_logprob(tiny_model, batch):
    ref = ul.frozen_reference(tiny_model)
    before = _logprob(tiny_model, batch["forget"])
    _step(tiny_model, ul.UnlearningLoss("npo", ref_model=ref, npo_retain_term=False, **LOSS_WEIGHTS), batch)
    assert _logprob(tiny_model, batch["forget"]) < before - 1e-2


def test_dpo_raises_the_margin(tiny_model, batch):
    ref = ul.frozen_reference(tiny_model)
    loss_fn = ul.UnlearningLoss("dpo", ref_model=ref, dpo_retain_term=False, **LOSS_WEIGHTS)
    _step(tiny_model, loss_fn, batch)
    _, logs = loss_fn(tiny_model, batch)
    assert logs["dpo_margin"] > 1e-2 and logs["forget_loss"] < math.log(2)


def test_rmu_steers_forget_hidden_states(tiny_model, batch):
    ref = ul.frozen_reference(tiny_model)
    loss_fn = ul.UnlearningLoss("rmu", ref_model=ref, rmu_steering_coef=2.0, **LOSS_WEIGHTS)
    assert ul.resolve_layer(tiny_model, loss_fn.rmu_layer) == 1  # 7 clamped to the last of 2 layers

    def distance_to_target():
        captured = {}
        handle = tiny_model.model.layers[1].register_forward_hook(lambda m, i, o: captured.setdefault("h", o))
        with torch.no_grad():
            tiny_model(input_ids=batch["forget"]["input_ids"], attention_mask=batch["forget"]["attention_mask"])
        handle.remove()
        h = captured["h"][0] if isinstance(captured["h"], tuple) else captured["h"]
        target = 2.0 * loss_fn.steering_direction(h.size(-1), h.device)
        mask = batch["forget"]["attention_mask"].bool()
        return (h - target).pow(2).mean(-1)[mask].mean().item()

    before = distance_to_target()
    assert loss_fn(tiny_model, batch)[1]["forget_loss"] == pytest.approx(before, rel=1e-5)
    _step(tiny_model, loss_fn, batch, lr=1e-3, steps=3)  # larger steps overshoot on this tiny model
    assert distance_to_target() < 0.9 * before
    u = loss_fn.steering_direction(64, "cpu")
    assert u.norm().item() == pytest.approx(1.0) and same(u, ul.UnlearningLoss(
        "rmu", ref_model=ref, **LOSS_WEIGHTS).steering_direction(64, "cpu"))


def test_rmu_trainable_parameters(tiny_model):
    params = ul.rmu_trainable_parameters(tiny_model, layer=7)  # clamped to 1: layers 0 and 1
    assert len(params) == sum(1 for _ in tiny_model.model.layers.parameters())
    down = ul.rmu_trainable_parameters(tiny_model, layer=1, span=0, name_contains="mlp.down_proj")
    assert [p is tiny_model.model.layers[1].mlp.down_proj.weight for p in down] == [True]
    n = ul.restrict_trainable(tiny_model, down)
    assert n == down[0].numel() and sum(p.requires_grad for p in tiny_model.parameters()) == 1


def test_entropy_term_alone_lowers_forget_entropy(tiny_model, batch):
    # forget_weight 0: only the entropy term acts
    loss_fn = ul.UnlearningLoss("ga", forget_weight=0.0, lambda_f=1.0, lambda_r=0.0)
    before = loss_fn(tiny_model, batch)[1]["forget_entropy"]
    _step(tiny_model, loss_fn, batch, lr=1e-2, steps=3)
    assert loss_fn(tiny_model, batch)[1]["forget_entropy"] < before - 0.05


# --------------------------------------------------------------------------- objective capping


def test_capping_stops_ascent(tiny_model, batch):
    nll = _nll(tiny_model, batch["forget"])  # ~ ln(vocab) at init, far above 1
    loss, logs = _loss("ga", tiny_model, batch, cap_delta=1.0, cap_on="token_mean")
    assert loss.item() == pytest.approx(-1.0) and logs["capped_fraction"] == 1.0
    tiny_model.zero_grad()
    loss.backward()
    assert all(p.grad is None or not p.grad.any() for p in tiny_model.parameters())

    tiny_model.zero_grad()
    capped, _ = _loss("ga", tiny_model, batch, cap_delta=nll + 100, cap_on="token_mean")
    plain, _ = _loss("ga", tiny_model, batch)
    assert capped.item() == plain.item()
    capped.backward()
    grad_capped = [p.grad.clone() for p in tiny_model.parameters()]
    tiny_model.zero_grad()
    plain.backward()
    assert all(same(a, p.grad) for a, p in zip(grad_capped, tiny_model.parameters()))


def test_capping_is_per_example(tiny_model, batch):
    with torch.no_grad():
        sub = batch["forget"]
        per_item = ul.mean_nll(tiny_model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                               sub["labels"])
    delta = float(per_item.median())
    loss, _ = _loss("gd", tiny_model, batch, cap_delta=delta, retain_weight=0.0, cap_on="token_mean")
    assert loss.item() == pytest.approx(-per_item.clamp(max=delta).mean().item(), rel=1e-5)


def _per_example_grads(model, loss_fn, batch, n):
    """The gradient of the loss with respect to each forget example's logits: zero exactly where the example
    contributes a constant."""
    sub = batch["forget"]
    logits = model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits.detach().requires_grad_()
    nll = ul.mean_nll(logits, sub["labels"])
    lengths = ul.answer_positions(sub["labels"]).sum(-1)
    term = ul.sequence_capped_nll(nll, lengths, loss_fn.cap_delta) if loss_fn.cap_on == "sequence" else \
        ul.capped_nll(nll, loss_fn.cap_delta)
    (-term.mean()).backward()
    return [logits.grad[i].abs().sum().item() for i in range(n)], (nll * lengths).detach()


def test_sequence_cap_stops_the_gradient_of_exactly_the_examples_above_delta(tiny_model, batch):
    """Wang et al. cap the sequence NLL -log p(y|x): with δ between the examples' sequence NLLs, the examples at or
    above δ get no gradient at all and the others keep the plain GA gradient."""
    sub = batch["forget"]
    with torch.no_grad():
        logits = tiny_model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits
        lengths = ul.answer_positions(sub["labels"]).sum(-1)
        sequence = ul.mean_nll(logits, sub["labels"]) * lengths
    n = len(sequence)
    delta = float(sequence.sort().values[n // 2])  # the median example sits exactly at δ: capped
    loss_fn = ul.UnlearningLoss("ga", cap_delta=delta, **LOSS_WEIGHTS)
    grads, seq = _per_example_grads(tiny_model, loss_fn, batch, n)
    above = seq >= delta
    assert 0 < int(above.sum()) < n
    assert all((g == 0.0) == bool(a) for g, a in zip(grads, above))
    # the loss itself: capped examples contribute δ / T, the others their mean token NLL
    loss, logs = loss_fn(tiny_model, batch)
    expected = torch.where(seq < delta, seq, torch.full_like(seq, delta)) / lengths
    assert loss.item() == pytest.approx(-expected.mean().item(), rel=1e-5)
    assert logs["capped_fraction"] == pytest.approx(float(above.float().mean()))
    assert logs["forget_sequence_nll"] == pytest.approx(float(seq.mean()), rel=1e-5)
    # the same δ on the mean token NLL caps no example here (every mean is far below the sequence sums)
    token_grads, _ = _per_example_grads(tiny_model, ul.UnlearningLoss("ga", cap_delta=delta, cap_on="token_mean", **LOSS_WEIGHTS),
                                        batch, n)
    assert all(g > 0 for g in token_grads)


def test_a_sequence_cap_no_example_reaches_leaves_ga_unchanged(tiny_model, batch):
    plain, _ = _loss("gd", tiny_model, batch)
    capped, logs = _loss("gd", tiny_model, batch, cap_delta=1e9)
    assert capped.item() == pytest.approx(plain.item(), rel=1e-6) and logs["capped_fraction"] == 0.0
    with pytest.raises(ValueError, match="cap_on"):
        ul.UnlearningLoss("ga", cap_delta=1.0, cap_on="tokens", **LOSS_WEIGHTS)


# --------------------------------------------------------------------------- model mixing


def test_mixing_endpoints_are_exact_and_midpoint_is_the_mean(tiny_model):
    original = tiny_model
    unlearned = copy.deepcopy(original)
    with torch.no_grad():
        for p in unlearned.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    orig_sd, unl_sd = original.state_dict(), unlearned.state_dict()
    for a, expected in ((0.0, orig_sd), (1.0, unl_sd)):
        mixed = ul.mix_models(original, unlearned, a).state_dict()
        assert all(same(mixed[k], expected[k]) for k in expected)
    mid = ul.mix_weights(orig_sd, unl_sd, 0.5)
    assert all(close(mid[k], (orig_sd[k] + unl_sd[k]) / 2, atol=1e-7) for k in orig_sd)
    # inputs untouched; integer tensors come from the unlearned side
    assert all(same(original.state_dict()[k], orig_sd[k]) for k in orig_sd)
    ints = ul.mix_weights({"w": torch.zeros(2), "n": torch.tensor([1])}, {"w": torch.ones(2), "n": torch.tensor([5])},
                          0.25)
    assert same(ints["n"], torch.tensor([5])) and close(ints["w"], torch.full((2,), 0.25))
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            ul.mix_weights(orig_sd, unl_sd, bad)
    with pytest.raises(ValueError, match="differ in keys"):
        ul.mix_weights({"w": torch.zeros(1)}, {"v": torch.zeros(1)}, 0.5)


# --------------------------------------------------------------------------- LoRA reference


def test_lora_reference_is_the_base_model(tiny_model, batch):
    base = copy.deepcopy(tiny_model)
    lora = models.apply_lora(tiny_model, r=4, lora_alpha=8)
    beta = 0.1
    for ref in (ul.DISABLE_ADAPTERS, None):
        _, logs = _loss("npo", lora, batch, ref_model=ref, beta=beta)  # B = 0 at init: θ = π_ref
        assert logs["forget_loss"] == pytest.approx(2 / beta * math.log(2), rel=1e-5)
    with torch.no_grad():  # make the adapters matter
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn_like(p) * 0.5)
    loss_fn = ul.UnlearningLoss("npo", ref_model=ul.DISABLE_ADAPTERS, beta=beta, **LOSS_WEIGHTS)
    sub = batch["forget"]
    ref_logits, _ = loss_fn.reference_outputs(lora, sub)
    with torch.no_grad():
        base_logits = base(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits
        lora_logits = lora(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits
    assert close(ref_logits, base_logits, atol=1e-5)
    assert not close(lora_logits, base_logits, atol=1e-3)
    lora.train()
    assert loss_fn(lora, batch)[1]["forget_loss"] != pytest.approx(2 / beta * math.log(2), rel=1e-3)
    assert lora.training  # the reference pass restores the training mode
    with pytest.raises(ValueError, match="disable_adapters"):
        ul.frozen_reference(lora)


# --------------------------------------------------------------------------- with the training loop


def test_unlearning_runs_in_the_training_loop(tiny_model, rows, tiny_tokenizer, template, tmp_path):
    forget, retain = rows
    examples = ul.encode_pairs(tiny_tokenizer, template, forget, retain, with_idk=False, seed=0)
    loss_fn = ul.UnlearningLoss("npo", ref_model=ul.frozen_reference(tiny_model), lambda_f=1.0, forget_weight=1.0, lambda_r=0.0)
    cfg = training.TrainConfig(output_dir=tmp_path, max_steps=2, batch_size=2, lr=1e-3, progress=False)
    result = training.train(tiny_model, examples, cfg, lambda b: ul.collate_pairs(b, tiny_tokenizer.pad_token_id),
                            loss_fn)
    assert result.steps == 2
    assert {"loss", "forget_loss", "retain_loss", "forget_entropy"} <= set(result.history[-1])


# --------------------------------------------------------------------------- errors


def test_errors_are_clear(tiny_model, batch):
    with pytest.raises(ValueError, match="valid methods: ga, gd, kl, idk, dpo, npo, rmu"):
        ul.UnlearningLoss("gradient_ascent", **LOSS_WEIGHTS)
    for method in ul.REFERENCE_METHODS:
        with pytest.raises(ValueError, match="needs a reference model"):
            ul.UnlearningLoss(method, **LOSS_WEIGHTS)(tiny_model, batch)
    with pytest.raises(ValueError, match="needs a PEFT"):
        ul.UnlearningLoss("npo", ref_model=ul.DISABLE_ADAPTERS, **LOSS_WEIGHTS)(tiny_model, batch)
    with pytest.raises(ValueError, match="ref_model must be"):
        ul.UnlearningLoss("npo", ref_model="frozen", **LOSS_WEIGHTS)
    no_idk = {k: v for k, v in batch.items() if k != "forget_idk"}
    with pytest.raises(ValueError, match="with_idk=True"):
        ul.UnlearningLoss("idk", **LOSS_WEIGHTS)(tiny_model, no_idk)
    with pytest.warns(UserWarning, match="ignores beta"):
        ul.UnlearningLoss("gd", beta=0.05, **LOSS_WEIGHTS)
    with pytest.warns(UserWarning, match="ignores cap_delta"):
        ul.UnlearningLoss("npo", ref_model="disable_adapters", cap_delta=2.0, **LOSS_WEIGHTS)
    assert ul.UnlearningLoss("npo", ref_model="disable_adapters", **LOSS_WEIGHTS).params()["beta"] == 0.1


# --------------------------------------------------------------------------- entropy on the model's own samples


def test_the_sampled_placement_takes_the_entropy_on_the_models_own_answers(tiny_model, batch, tiny_tokenizer):
    from unlearnkit import pipeline

    plain = ul.UnlearningLoss("ga", forget_weight=0.0, lambda_f=1.0, entropy_positions="sampled", lambda_r=0.0)
    with pytest.raises(ValueError, match="forget_sampled"):
        plain(tiny_model, batch)  # without the samples it refuses rather than fall back
    seen = {}

    def inner(model, b):
        seen["batch"] = b
        return plain(model, b)

    wrapped = pipeline.OnPolicySamples(inner, tiny_tokenizer, max_new_tokens=6, seed=0)
    loss, logs = wrapped(tiny_model, batch)
    sampled, forget = seen["batch"][ul.SAMPLED], batch["forget"]
    for i in range(len(forget["input_ids"])):
        prompt = forget["input_ids"][i][(forget["attention_mask"][i] == 1) & (forget["labels"][i] == -100)]
        ids = sampled["input_ids"][i][sampled["attention_mask"][i] == 1]
        labels = sampled["labels"][i][sampled["attention_mask"][i] == 1]
        assert same(ids[:len(prompt)], prompt)  # each forget prompt, then the model's own answer
        assert (labels[:len(prompt)] == -100).all() and 0 < (labels != -100).sum() <= 7  # at most 6 tokens + EOS
    with torch.no_grad():
        logits = tiny_model(input_ids=sampled["input_ids"], attention_mask=sampled["attention_mask"]).logits
    expected = ul.mean_entropy(logits, ul.answer_positions(sampled["labels"])).mean().item()
    assert logs["forget_entropy"] == pytest.approx(expected, rel=1e-5) and loss.item() == pytest.approx(expected, rel=1e-5)
    # the draw is seeded by the batch: the same batch draws the same answers (a resumed run draws what it would have)
    wrapped(tiny_model, batch)
    assert same(seen["batch"][ul.SAMPLED]["input_ids"], sampled["input_ids"])
    # and one step lowers the entropy on those answers
    before = expected
    _step(tiny_model, wrapped, batch, lr=1e-2)
    with torch.no_grad():
        logits = tiny_model(input_ids=sampled["input_ids"], attention_mask=sampled["attention_mask"]).logits
    assert ul.mean_entropy(logits, ul.answer_positions(sampled["labels"])).mean().item() < before
