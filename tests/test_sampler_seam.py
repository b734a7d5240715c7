"""The sampler seam (unlearnkit.metrics.sampling.sample_and_score_with, profile key ``sampler``): hf is the
reference path unchanged, vllm gives the same SampledScores, the studies of notebooks 05-07 sample through it,
and a bad name is refused. vLLM itself runs only in the separate GPU environment (make setup-vllm)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import needs, skip_unless
from unlearnkit import config, generation, models, paths, runs
from unlearnkit.config import Params
from unlearnkit.generation import certainty, encode_prompts, greedy_with_confidences, sample_answers
from unlearnkit.metrics.judges import leak_judge, rouge_per_sample, self_bleu_per_prompt
from unlearnkit.metrics.sampling import (
    SAMPLE_KEYS,
    SampledScores,
    leak_keys,
    prompt_ids,
    sample_and_score,
    sample_and_score_with,
    sampling_settings,
    split_sampler,
    with_sampler,
)
from unlearnkit.studies import alignment, leakage

#: The run store of these tests (under a temporary runs/): the smoke profile's seed 0.
UNIT = config.Params.load("smoke")

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

MAX_NEW = 8


def _rows(corpus, count=3):
    return corpus.load("forget10")[:count]


def _without_time(result: SampledScores) -> dict:
    data = result.to_json()
    data.pop("seconds")
    return data


# --------------------------------------------------------------------------- (a) hf: the reference, unchanged


def test_the_hf_seam_draws_each_sample_as_a_lone_draw_of_its_question(tiny_model, tiny_tokenizer, template,
                                                                      small_corpus):
    """The hf seam is sample_and_score, and every sample it returns is the one drawn for that (question, sample)
    alone.

    Sample j of question i is driven by row j of ``default_rng([seed, i]).random((n, steps))``, filled row by row,
    so the first j + 1 rows of a draw of j + 1 samples are the same numbers. No public function draws row j alone,
    so the lone draw is ``sample_answers`` on question i only, with ``streams=[i]`` and ``n=j + 1``, keeping its
    last sample: one generate call per (question, sample), in a batch of another shape than the seam's chunks
    (chunk_size 5 makes those straddle questions). The greedy answer and c(x) are compared with the greedy pass of
    each question alone, and the scores with the judges applied to the lone draws.
    """
    rows, n, seed = _rows(small_corpus), 4, 7
    settings = {"max_new_tokens": MAX_NEW, "seed": seed, "chunk_size": 5, "keep_examples": n}
    result = sample_and_score_with("hf", tiny_model, tiny_tokenizer, template, rows, n, **settings)
    assert _without_time(result) == _without_time(sample_and_score(tiny_model, tiny_tokenizer, template, rows, n,
                                                                   **settings))
    lone = [[sample_answers(tiny_model, tiny_tokenizer, template, [row["question"]], j + 1, max_new_tokens=MAX_NEW,
                            seed=seed, streams=[i], progress=False)[0][j] for j in range(n)]
            for i, row in enumerate(rows)]
    assert result.examples == lone
    assert len({s for per_q in lone for s in per_q}) > 1  # real draws, not one repeated answer

    for i, row in enumerate(rows):
        prompt = prompt_ids(tiny_tokenizer, template, [row], use_prefix=False)
        ids, confidences = greedy_with_confidences(tiny_model, tiny_tokenizer, prompt, MAX_NEW)
        assert result.greedy_answers[i] == tiny_tokenizer.decode(ids[0], skip_special_tokens=True).strip()
        assert result.certainty[i] == pytest.approx(certainty(confidences[0]), abs=1e-6)
    answers = [row["answer"] for row in rows]
    assert (result.leak == leak_judge(lone, leak_keys(rows))).all()
    assert np.allclose(result.rouge, rouge_per_sample(answers, lone))
    assert np.allclose(result.self_bleu, self_bleu_per_prompt(lone))
    assert "sampler" not in result.settings  # an hf result is stored exactly as before the seam


# --------------------------------------------------------------------------- (b) a bad name


@pytest.mark.parametrize("name", ["vLLM", "transformers", "", None])
def test_an_unknown_sampler_is_refused_naming_the_allowed_ones(name, tiny_model, tiny_tokenizer, template,
                                                               small_corpus):
    allowed = re.escape("one of 'hf', 'vllm'")
    with pytest.raises(ValueError, match=allowed):
        sample_and_score_with(name, tiny_model, tiny_tokenizer, template, _rows(small_corpus, 1), 2)
    # a profile with a bad name is refused when its parameters are made, before any study reads them
    with pytest.raises(ValueError, match="'sampler'.*it must be one of hf, vllm"):
        Params.load("smoke").replace(sampler=str(name))
    # and the studies check what they are given too
    params = Params.load("smoke")
    object.__setattr__(params, "sampler", str(name))  # past the constraint, as a hand-made mapping would be
    for study in SAMPLE_KEYS:
        with pytest.raises(ValueError, match=allowed):
            sampling_settings(params, study)


def test_the_settings_name_the_sampler_only_when_it_is_not_hf():
    """The settings are part of the cache keys and metrics.json: for hf they stay those of before the seam."""
    hf, vllm = Params.load("smoke"), Params.load("smoke").replace(sampler="vllm")
    assert Params.load("default").sampler == "hf"
    for study in SAMPLE_KEYS:
        settings = lambda params, study=study: sampling_settings(params, study)  # noqa: E731
        assert "sampler" not in settings(hf)
        assert settings(vllm) == {**settings(hf), "sampler": "vllm"}
        assert split_sampler(settings(vllm)) == ("vllm", settings(hf))
        assert split_sampler(settings(hf)) == ("hf", settings(hf))
    # one function: each study's count and length keys, the rest shared
    assert sampling_settings(hf, "alignment")["n"] == hf.alignment_n_samples
    assert sampling_settings(hf, "entropy", 0.5)["temperature"] == 0.5
    with pytest.raises(ValueError, match="unknown sampling study"):
        sampling_settings(hf, "formats")
    assert with_sampler({"n": 2}, "hf") == {"n": 2}


# --------------------------------------------------------------------------- (c) the studies route to the seam


class _FakeVllmCalls:
    """Stands in for vLLM's engine, greedy pass and sampler (unlearnkit.generation): records how the seam calls
    them and answers fixed strings. Sample j of question i names the question's key entity when j is even."""

    def __init__(self, monkeypatch):
        self.engines, self.greedy, self.samples = [], [], []
        for where in (generation, generation.vllm_backend):  # the package face, and where load_vllm calls it
            monkeypatch.setattr(where, "vllm_engine", self._engine)
        monkeypatch.setattr(generation, "vllm_greedy_with_confidences", self._greedy)
        monkeypatch.setattr(generation, "vllm_sample_answers", self._sample)

    def _engine(self, source, seed=0, dtype=None, **llm_kwargs):
        self.engines.append({"source": source, "seed": seed, "dtype": dtype})
        from transformers import AutoTokenizer

        return types.SimpleNamespace(get_tokenizer=lambda: AutoTokenizer.from_pretrained(source))

    def _greedy(self, llm, template, questions, max_new_tokens, prefixes=None, progress=True):
        self.greedy.append({"llm": llm, "template": template, "questions": list(questions),
                            "max_new_tokens": max_new_tokens, "prefixes": prefixes})
        return [f"greedy {i}" for i in range(len(questions))], [np.array([0.5, 0.7]) for _ in questions]

    def _sample(self, llm, template, questions, n, temperature, top_p, top_k, max_new_tokens, seed, prefixes=None,
                progress=True):
        self.samples.append({"llm": llm, "template": template, "questions": list(questions), "n": n,
                             "temperature": temperature, "top_p": top_p, "top_k": top_k,
                             "max_new_tokens": max_new_tokens, "seed": seed, "prefixes": prefixes})
        return [[f"it is {self.keys[i]}" if j % 2 == 0 else "no idea" for j in range(n)]
                for i in range(len(questions))]


def _saved_target(tiny_model, tiny_tokenizer, template, tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    return models.save_model(tiny_model, tiny_tokenizer, runs.model_dir(UNIT, "target"), template)


def test_notebook_05_and_06_sample_with_vllm_when_the_settings_say_so(tiny_model, tiny_tokenizer, template,
                                                                      small_corpus, tmp_path, monkeypatch):
    folder = _saved_target(tiny_model, tiny_tokenizer, template, tmp_path, monkeypatch)
    rows, n = _rows(small_corpus), 4
    hf_settings = {"n": n, "temperature": 1.0, "top_p": None, "max_new_tokens": MAX_NEW, "seed": 3}
    reference = leakage.score_saved_model(UNIT, "target", rows, hf_settings)
    cache = runs.notebook_dir(UNIT, runs.LEAKAGE) / "cache"
    hf_entry = {p.name for p in cache.glob("target-*.json")}

    fake = _FakeVllmCalls(monkeypatch)
    fake.keys = leak_keys(rows)
    # what notebook 06 hands to leakage.score_models, with a profile that says vllm
    settings = {**hf_settings, "sampler": "vllm"}
    scored = leakage.score_models(UNIT, {"the target": "target"}, rows, settings, notebook=runs.LEAKAGE)
    result = scored.results["the target"]

    assert fake.engines == [{"source": str(folder), "seed": 3, "dtype": None}]
    (greedy,), (sampled,) = fake.greedy, fake.samples
    assert greedy["questions"] == sampled["questions"] == [r["question"] for r in rows]
    assert greedy["template"] == sampled["template"] == template  # read from the saved model's unlearnkit.json
    assert greedy["max_new_tokens"] == MAX_NEW and greedy["prefixes"] is None
    assert {k: sampled[k] for k in ("n", "temperature", "top_p", "top_k", "max_new_tokens", "seed")} == {
        "n": n, "temperature": 1.0, "top_p": None, "top_k": None, "max_new_tokens": MAX_NEW, "seed": 3}
    # the same structure as hf's, scored by the same judges
    assert isinstance(result, SampledScores)
    for name in ("leak", "rouge", "greedy_leak", "greedy_rouge", "certainty", "self_bleu"):
        assert getattr(result, name).shape == getattr(reference, name).shape, name
    assert result.leak.tolist() == [[1, 0, 1, 0]] * len(rows)
    assert np.allclose(result.certainty, 0.6) and result.greedy_answers == ["greedy 0", "greedy 1", "greedy 2"]
    assert result.settings["sampler"] == "vllm"
    # its own cache entry: the hf key is not reused for vLLM samples
    assert {p.name for p in cache.glob("target-*.json")}.isdisjoint(hf_entry)


def test_the_keyword_qa_passes_its_prefixes_to_vllm(tiny_model, tiny_tokenizer, template, small_corpus, tmp_path,
                                                    monkeypatch):
    folder = _saved_target(tiny_model, tiny_tokenizer, template, tmp_path, monkeypatch)
    questions = leakage.hp_rows("synthetic", small_corpus.load("forget10"), 2)
    fake = _FakeVllmCalls(monkeypatch)
    fake.keys = ["nothing"] * len(questions)
    settings = {"n": 2, "max_new_tokens": MAX_NEW, "seed": 0, "sampler": "vllm"}
    saved = leakage.run_hp_qa("target", UNIT, questions, settings, 0.01, use_prefix=True)
    # a model outside the run store (here a folder relative to the project root) loads with the profile's dtype
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    models.save_model(tiny_model, tiny_tokenizer, tmp_path / "elsewhere" / "tiny", template)
    params = Params.load("smoke").replace(dtype="bfloat16")
    plain = leakage.run_hp_qa("elsewhere/tiny", params, questions, settings, 0.01, use_prefix=False)
    prefixes = [q["affirmative_response"].rstrip() for q in questions]
    assert [call["prefixes"] for call in fake.samples] == [prefixes, None]
    assert [call["prefixes"] for call in fake.greedy] == [prefixes, None]
    assert fake.engines == [{"source": str(folder), "seed": 0, "dtype": None},
                            {"source": str(tmp_path / "elsewhere" / "tiny"), "seed": 0, "dtype": "bfloat16"}]
    assert saved.summary["use_prefix"] is True and plain.summary["use_prefix"] is False
    assert saved.scores.leak.shape == plain.scores.leak.shape == (2, 2)


def test_notebook_07_samples_with_vllm_when_the_profile_says_so(tiny_model, tiny_tokenizer, template, small_corpus,
                                                                tmp_path, monkeypatch):
    folder = _saved_target(tiny_model, tiny_tokenizer, template, tmp_path, monkeypatch)
    goals = [r["question"] for r in _rows(small_corpus, 2)]
    params = Params.load("smoke").replace(alignment_n_samples=3, alignment_max_new_tokens=MAX_NEW,
                                          alignment_template="phi")
    reference = alignment.sample_model(str(folder), goals, params)
    cache = runs.notebook_dir(UNIT, runs.ALIGNMENT) / "cache"
    hf_entry = {p.name for p in cache.glob("samples-*.json")}
    fake = _FakeVllmCalls(monkeypatch)
    fake.keys = ["a goal"] * len(goals)
    sampled = alignment.sample_model(str(folder), goals, params.replace(sampler="vllm"))

    (call,) = fake.samples
    assert call["questions"] == goals and call["template"] == models.TEMPLATES["phi"]
    assert (call["n"], call["temperature"], call["top_p"], call["max_new_tokens"], call["seed"]) == (
        3, params.sample_temperature, params.sample_top_p, MAX_NEW, params.seed)
    assert sampled["samples"] == [["it is a goal", "no idea", "it is a goal"]] * 2
    assert sampled["greedy"] == ["greedy 0", "greedy 1"] and sampled["certainty"] == pytest.approx([0.6, 0.6])
    assert sorted(sampled) == sorted(reference) and sampled["template"] == reference["template"] == "phi"
    assert np.array(sampled["samples"]).shape == np.array(reference["samples"]).shape == (2, 3)
    assert {p.name for p in cache.glob("samples-*.json")}.isdisjoint(hf_entry)  # not the hf entry's key


# --------------------------------------------------------------------------- vLLM's side, through a stand-in


@dataclass
class _Logprob:
    logprob: float


def _favour_eos(model, bias: float):
    """Raise the EOS logit by ``bias``: an untrained tiny model never ends an answer, and the EOS step is part of
    c(x). The same hook on both backends' models gives both the same distribution."""
    eos = model.config.eos_token_id

    def hook(module, inputs, logits):
        logits = logits.clone()
        logits[..., eos] += bias
        return logits

    model.get_output_embeddings().register_forward_hook(hook)


class _StandInLLM:
    """The part of vLLM's offline API that unlearnkit.generation uses, as vLLM documents it, over the transformers
    model saved in ``model``: token ids end with EOS when the answer stopped there; logprobs (raw mode) list per
    step the top token and the chosen one; sample j of a request is seeded with the request's seed + j. Its
    decoding is a plain loop of its own (full forward pass per token), not the library's."""

    eos_bias = 0.0  # see _favour_eos

    def __init__(self, model, **options):
        self.options = options
        self.model, self.tokenizer, _ = models.load_model(model, dtype="float32", template=None)
        _favour_eos(self.model, self.eos_bias)
        self.seeds: list[int] = []

    def get_tokenizer(self):
        return self.tokenizer

    def generate(self, requests, params, use_tqdm=True):
        params = params if isinstance(params, list) else [params] * len(requests)
        return [types.SimpleNamespace(outputs=[self._complete(r["prompt_token_ids"], p, j) for j in range(p.n)])
                for r, p in zip(requests, params)]

    @torch.no_grad()
    def _complete(self, prompt, params, j):
        assert (params.top_k, params.top_p, params.repetition_penalty) == (0, 1.0, 1.0), "plain distribution only"
        generator = None
        if params.temperature > 0:
            self.seeds.append(params.seed + j)
            generator = torch.Generator().manual_seed(params.seed + j)
        ids, logprobs = list(prompt), []
        for _ in range(params.max_tokens):
            logp = torch.log_softmax(self.model(torch.tensor([ids])).logits[0, -1].float(), -1)
            top = int(logp.argmax())
            token = top if generator is None else int(torch.multinomial(torch.softmax(logp / params.temperature, -1),
                                                                        1, generator=generator))
            ids.append(token)
            logprobs.append({top: _Logprob(float(logp[top])), token: _Logprob(float(logp[token]))})
            if token == self.tokenizer.eos_token_id:
                break
        return types.SimpleNamespace(token_ids=ids[len(prompt):], logprobs=logprobs if params.logprobs else None)


@pytest.fixture()
def stand_in_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM = _StandInLLM
    defaults = {"n": 1, "temperature": 1.0, "top_p": 1.0, "top_k": 0, "repetition_penalty": 1.0, "seed": None,
                "logprobs": None}  # vLLM's own
    module.SamplingParams = lambda **options: types.SimpleNamespace(**{**defaults, **options})
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_vllm_answers_and_certainty_are_read_as_the_transformers_backend_measures_them(
        tiny_model, tiny_tokenizer, template, small_corpus, tmp_path, monkeypatch, stand_in_vllm):
    """Through a stand-in engine: the greedy answers and c(x) read from token ids and logprobs (EOS step
    included) equal the transformers backend's, the prompts (with prefixes) are the same token ids, and each
    question samples with a seed of its own."""
    folder = _saved_target(tiny_model, tiny_tokenizer, template, tmp_path, monkeypatch)
    rows = leakage.hp_rows("synthetic", _rows(small_corpus, 12), 12)[:5]
    # a bias that makes the untrained model end some answers at once, one later and some never (found by trying
    # biases on the test tokenizer: it moves with the tokenizer's texts)
    monkeypatch.setattr(_StandInLLM, "eos_bias", 0.9)
    _favour_eos(tiny_model, 0.9)
    steps = [len(c) for c in greedy_with_confidences(tiny_model, tiny_tokenizer,
                                                     prompt_ids(tiny_tokenizer, template, rows, True), MAX_NEW)[1]]
    assert 1 in steps and MAX_NEW in steps and any(1 < k < MAX_NEW for k in steps)  # EOS first, later, never
    engine = generation.load_vllm(folder, seed=1, dtype=None, template=None)
    assert engine.llm.options == {"seed": 1, "dtype": "auto", "logprobs_mode": "raw_logprobs"}
    assert engine.template == template

    n = 3
    result = sample_and_score_with("vllm", *engine, rows, n, max_new_tokens=MAX_NEW, seed=5, use_prefix=True,
                                   keep_examples=n)
    reference = sample_and_score(tiny_model, tiny_tokenizer, template, rows, n, max_new_tokens=MAX_NEW, seed=5,
                                 use_prefix=True)
    assert result.greedy_answers == reference.greedy_answers
    assert np.allclose(result.certainty, reference.certainty, atol=1e-5)
    assert np.array_equal(result.greedy_leak, reference.greedy_leak)
    assert result.leak.shape == reference.leak.shape and result.rouge is None is reference.rouge
    questions = [r["question"] for r in rows]
    prefixes = [r["affirmative_response"].rstrip() for r in rows]
    assert (encode_prompts(tiny_tokenizer, template, questions, prefixes)
            == prompt_ids(tiny_tokenizer, template, rows, use_prefix=True))
    seeds = engine.llm.seeds
    assert len(seeds) == len(rows) * n and len(set(seeds)) == len(seeds)
    assert all(s == seeds[0] + j for s, j in zip(seeds[:n], range(n)))
    assert not any("</s>" in s for per_q in result.examples for s in per_q)
    again = sample_and_score_with("vllm", *engine, rows, n, max_new_tokens=MAX_NEW, seed=5, use_prefix=True,
                                  keep_examples=n)
    assert again.examples == result.examples  # the same seed draws the same samples


def test_the_vllm_path_takes_no_transformers_model(tiny_model, tiny_tokenizer, template, small_corpus,
                                                   stand_in_vllm):
    with pytest.raises(TypeError, match="hf sampler"):
        sample_and_score_with("vllm", tiny_model, tiny_tokenizer, template, _rows(small_corpus, 1), 2,
                              max_new_tokens=MAX_NEW, seed=0)


# --------------------------------------------------------------------------- (d) the real vLLM, on a GPU

requires_vllm = needs(importlib.util.find_spec("vllm") is not None,
                      "vllm is not installed (it needs a CUDA machine: make setup-vllm)",
                      "tests/test_sampler_seam.py::test_vllm_answers_and_certainty_are_read_as_the_transformers_backend_measures_them "
                      "(a stand-in of vLLM's interface)")


@requires_vllm
def test_vllm_samples_the_tiny_model_as_transformers_does(tiny_model, tiny_tokenizer, template, small_corpus,
                                                          tmp_path):
    """Runs vLLM itself. Greedy decoding and c(x) agree with the transformers backend on a float32 tiny model (a
    tie within the kernels' rounding would show here first); top-k 1 samples the greedy answer; a seed repeats its
    samples."""
    skip_unless(torch.cuda.is_available(), "vllm is installed but there is no CUDA GPU",
                "tests/test_sampler_seam.py::test_vllm_answers_and_certainty_are_read_as_the_transformers_backend_measures_them")
    folder = models.save_model(tiny_model, tiny_tokenizer, tmp_path / "tiny", template)
    rows, n = _rows(small_corpus), 8
    engine = generation.load_vllm(folder, dtype="float32", template=None, seed=0, gpu_memory_utilization=0.3,
                                  enforce_eager=True)
    result = sample_and_score_with("vllm", *engine, rows, n, max_new_tokens=MAX_NEW, seed=3, keep_examples=n)
    reference = sample_and_score(tiny_model, tiny_tokenizer, template, rows, n, max_new_tokens=MAX_NEW, seed=3)
    for name in ("leak", "rouge", "greedy_leak", "greedy_rouge", "certainty", "self_bleu"):
        assert getattr(result, name).shape == getattr(reference, name).shape, name
    assert result.greedy_answers == reference.greedy_answers
    assert np.allclose(result.certainty, reference.certainty, atol=1e-4)
    assert len({s for per_q in result.examples for s in per_q}) > 1
    top1 = sample_and_score_with("vllm", *engine, rows, n, top_k=1, max_new_tokens=MAX_NEW, seed=3)
    assert all(e == [g] * min(n, 5) for e, g in zip(top1.examples, top1.greedy_answers))
    again = sample_and_score_with("vllm", *engine, rows, n, max_new_tokens=MAX_NEW, seed=3, keep_examples=n)
    assert again.examples == result.examples
    assert json.loads(json.dumps(result.to_json()))["settings"]["sampler"] == "vllm"


# --------------------------------------------------------------------------- the separate environment


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if requirement:
            name, _, version = requirement.partition("==")
            pins[name.lower()] = version
    return pins


def test_the_vllm_requirements_are_the_workbooks_but_torch_and_transformers():
    ours, theirs = _pins(paths.ROOT / "requirements.txt"), _pins(paths.ROOT / "requirements-vllm.txt")
    left_to_vllm = {"torch", "transformers", "tokenizers"}
    assert theirs.pop("vllm") == "0.33.*"
    assert theirs == {name: version for name, version in ours.items() if name not in left_to_vllm}
