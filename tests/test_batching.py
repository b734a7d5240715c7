"""Less work per token, same numbers: packed training batches give the padded batches' loss and gradients; scoring
computes the output head only where it is read (the last position, the answer's positions) and gets what the whole
padded forward pass gets."""

from __future__ import annotations

import pytest
import torch
from devices import assert_close
from unlearnkit import models, training
from unlearnkit.metrics.formats import next_token_logits
from unlearnkit.metrics.tofu import encoded_nll

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

QUESTIONS = ["Where was Kofi Mensah born?", "What genre?", "Who are the parents of the author Kofi Mensah?",
             "Any award?", "When was the author born, and where?"]
ANSWERS = ["In Accra.", "Crime fiction, mostly short novels.", "A baker and a nurse.", "No.", "In 1961, in Kumasi."]


def _examples(tokenizer, template):
    return [models.encode_qa(tokenizer, template, q, a) for q, a in zip(QUESTIONS, ANSWERS)]


def test_a_packed_batch_holds_every_example_whole_with_fewer_positions(tiny_tokenizer, template):
    examples = _examples(tiny_tokenizer, template)
    lengths = [len(e["input_ids"]) for e in examples]
    assert len(set(lengths)) > 1
    packed = models.pack(examples, tiny_tokenizer.pad_token_id, row_tokens=sum(lengths))
    padded = models.collate(examples, tiny_tokenizer.pad_token_id)
    assert packed["input_ids"].shape == (1, sum(lengths)) and padded["input_ids"].numel() > sum(lengths)
    two_rows = models.pack(examples, tiny_tokenizer.pad_token_id, row_tokens=sum(lengths) // 2 + max(lengths))
    assert two_rows["input_ids"].shape[0] == 2
    assert int((packed["labels"] != -100).sum()) == int((padded["labels"][:, 1:] != -100).sum())
    # every example appears whole, its positions counting from 0
    found = []
    for ids, positions in zip(packed["input_ids"].tolist(), packed["position_ids"].tolist()):
        starts = [i for i, p in enumerate(positions) if p == 0] + [len(positions)]
        found += [ids[a:b] for a, b in zip(starts, starts[1:])]
    assert all(e["input_ids"] in found for e in examples)


def test_packed_training_gives_the_padded_loss_and_gradients(tiny_model, tiny_tokenizer, template):
    assert models.packs_sequences(tiny_model)
    examples = _examples(tiny_tokenizer, template)
    losses, grads = [], []
    for batch in (models.collate(examples, tiny_tokenizer.pad_token_id),
                  models.pack(examples, tiny_tokenizer.pad_token_id, row_tokens=100)):
        tiny_model.zero_grad()
        loss = training.causal_lm_loss(tiny_model, batch)
        loss.backward()
        losses.append(float(loss.detach()))
        grads.append(torch.cat([p.grad.flatten() for p in tiny_model.parameters()]))
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    assert_close(grads[1], grads[0], rtol=1e-4, atol=1e-6)


class _IgnoresPositions(torch.nn.Module):
    """A model whose forward drops the position ids: packed examples would see each other."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.config = inner, inner.config

    def forward(self, input_ids, attention_mask=None, position_ids=None, **kw):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, use_cache=True)


def test_a_model_that_would_mix_packed_examples_is_trained_on_padded_batches(tiny_model):
    assert not models.packs_sequences(_IgnoresPositions(tiny_model))


def test_next_token_logits_are_the_last_positions_of_the_whole_forward_pass(tiny_model, tiny_tokenizer, template):
    sequences = [models.encode_prompt(tiny_tokenizer, template, q) for q in QUESTIONS]
    got = next_token_logits(tiny_model, sequences, tiny_tokenizer.pad_token_id, batch_size=2)
    picked = next_token_logits(tiny_model, sequences, tiny_tokenizer.pad_token_id, batch_size=3, columns=[5, 9])
    with torch.no_grad():
        for seq, row, pair in zip(sequences, got, picked):
            alone = tiny_model(input_ids=torch.tensor([seq])).logits[0, -1]
            assert_close(row, alone, rtol=1e-4, atol=1e-5)
            assert_close(pair, alone[[5, 9]], rtol=1e-4, atol=1e-5)


def test_answer_nll_on_the_answer_positions_alone_is_the_whole_passes(tiny_model, tiny_tokenizer, template):
    examples = _examples(tiny_tokenizer, template)
    got = encoded_nll(tiny_model, examples, tiny_tokenizer.pad_token_id, batch_size=2)
    with torch.no_grad():
        for example, value in zip(examples, got):
            ids, labels = torch.tensor([example["input_ids"]]), torch.tensor([example["labels"]])
            assert value == pytest.approx(float(tiny_model(input_ids=ids, labels=labels).loss), rel=1e-4)


def test_packing_is_the_profiles_choice_and_part_of_a_models_recipe(tiny_model, tiny_tokenizer, template, tmp_path,
                                                                    monkeypatch):
    from unlearnkit import config, pipeline

    params = config.Params.load("smoke")
    assert params.pack_batches is False and pipeline.pack_key(params) == {}  # default keys stay what they were
    assert pipeline.pack_key(params.replace(pack_batches=True)) == {"pack_batches": True}
    batches = {}

    def first_batch(model, examples, cfg, collate_fn, **kw):
        batches[cfg.output_dir.name] = collate_fn(examples[:3])

    monkeypatch.setattr(training, "train", first_batch)
    rows = [{"question": q, "answer": a} for q, a in zip(QUESTIONS, ANSWERS)]
    for packed in (False, True):
        cfg = training.TrainConfig(output_dir=tmp_path / ("packed" if packed else "padded"), max_steps=1)
        pipeline.fit(tiny_model, tiny_tokenizer, template, rows, cfg, key="k", packed=packed)
    assert "position_ids" in batches["packed"] and "attention_mask" not in batches["packed"]
    assert "attention_mask" in batches["padded"] and "position_ids" not in batches["padded"]
