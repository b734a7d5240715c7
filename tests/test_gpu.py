"""A short CUDA smoke (issue #61): training, unlearning, sampling, scoring and LoRA on the tiny stand-in, on the GPU.

Marked ``gpu`` (``pytest -m gpu`` runs only these) and skipped, with the reason, on a machine without CUDA: the CPU
suite proves the numbers; this proves the same code runs on a GPU and gives the CPU's answers there up to rounding."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from conftest import LOSS_WEIGHTS, needs
from devices import close
from unlearnkit import generation, models, training
from unlearnkit import unlearning as ul
from unlearnkit.metrics.tofu import answer_nll

pytestmark = [pytest.mark.gpu,
              needs(torch.cuda.is_available(), "no CUDA device here: the gpu smoke runs where torch.cuda.is_available()",
                    "the CPU suite, tests/test_training.py::test_the_model_comes_back_on_the_device_it_was_given (a "
                    "patched cuda device) and tests/test_device_agnostic.py::test_the_helper_compares_on_one_device; "
                    "run green on one NVIDIA H200 on 2026-11-28 (benchmarks/gpu_check.sh)")]


def _train(model, examples, collate, tmp_path, **kw):
    cfg = training.TrainConfig(output_dir=tmp_path, max_steps=2, batch_size=4, lr=1e-3, progress=False)
    return training.train(model, examples, cfg, collate_fn=collate, **kw)


def test_training_on_cuda_keeps_the_model_where_it_was_given(small_corpus, tiny_tokenizer, tiny_model, template,
                                                             tmp_path):
    examples = [models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"])
                for r in small_corpus.load("full")[:8]]
    pad = tiny_tokenizer.pad_token_id
    on_gpu = copy.deepcopy(tiny_model).to("cuda")
    result = _train(on_gpu, examples, lambda b: models.collate(b, pad), tmp_path / "gpu")
    assert models.device_of(on_gpu).type == "cuda" and all(np.isfinite(h["loss"]) for h in result.history)
    on_cpu = copy.deepcopy(tiny_model)  # trained on the GPU by accelerate, handed back on the CPU
    again = _train(on_cpu, examples, lambda b: models.collate(b, pad), tmp_path / "cpu")
    assert models.device_of(on_cpu).type == "cpu"
    assert again.history[0]["loss"] == pytest.approx(result.history[0]["loss"], rel=1e-3)
    for a, b in zip(on_gpu.parameters(), on_cpu.parameters(), strict=True):
        assert close(a, b, atol=1e-3, rtol=1e-3)


def test_unlearning_on_cuda(small_corpus, tiny_tokenizer, tiny_model, template, tmp_path):
    forget, retain = small_corpus.load("forget10")[:8], small_corpus.load("retain90")[:8]
    examples = ul.encode_pairs(tiny_tokenizer, template, forget, retain, seed=0)
    model = copy.deepcopy(tiny_model).to("cuda")
    loss = ul.UnlearningLoss("npo", ref_model=ul.frozen_reference(model), **LOSS_WEIGHTS)
    result = _train(model, examples, lambda b: ul.collate_pairs(b, tiny_tokenizer.pad_token_id), tmp_path,
                    loss_fn=loss)
    assert result.steps == 2 and all(np.isfinite(h["loss"]) for h in result.history)


def test_sampling_and_scoring_on_cuda_agree_with_the_cpu(small_corpus, tiny_tokenizer, tiny_model, template):
    rows = small_corpus.load("forget10")[:3]
    questions, answers = [r["question"] for r in rows], [r["answer"] for r in rows]
    on_gpu = copy.deepcopy(tiny_model).to("cuda")
    sampled = generation.sample_answers(on_gpu, tiny_tokenizer, template, questions, 8, max_new_tokens=12, seed=0,
                                        return_confidences=True, progress=False)
    assert [len(a) for a in sampled.answers] == [8, 8, 8]
    greedy = generation.sample_answers(on_gpu, tiny_tokenizer, template, questions, 2, temperature=0.0,
                                       max_new_tokens=12, seed=0, progress=False)
    cpu_greedy = generation.sample_answers(tiny_model, tiny_tokenizer, template, questions, 2, temperature=0.0,
                                           max_new_tokens=12, seed=0, progress=False)
    assert greedy == cpu_greedy
    gpu_nll = answer_nll(on_gpu, tiny_tokenizer, template, questions, answers, answer_tokens="separate")
    cpu_nll = answer_nll(tiny_model, tiny_tokenizer, template, questions, answers, answer_tokens="separate")
    np.testing.assert_allclose(gpu_nll, cpu_nll, rtol=1e-4)


def test_lora_on_cuda(small_corpus, tiny_tokenizer, tiny_model, template, tmp_path):
    examples = [models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"])
                for r in small_corpus.load("full")[:8]]
    model = models.apply_lora(copy.deepcopy(tiny_model).to("cuda"), r=4, lora_alpha=8, target_modules="all-linear")
    _train(model, examples, lambda b: models.collate(b, tiny_tokenizer.pad_token_id), tmp_path)
    merged = models.merged_copy(model)
    assert models.device_of(merged).type == "cuda" and not hasattr(merged, "peft_config")
