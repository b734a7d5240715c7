"""n sampled answers per question, scored (Scholten et al., "A Probabilistic Perspective on Unlearning and
Alignment"; docs/metrics.md section 3): the station between decoding and the bounds.

:func:`sample_and_score` decodes every question greedily once (that pass also gives the certainty c(x) of
adaptive temperature scaling, measured on the greedy continuation) and draws n answers by multinomial
sampling; it scores the greedy answer and every sample with ROUGE-L against the ground truth and with the
binary leak judge (does the text contain the answer's key entity?), and measures the samples' diversity
(self-BLEU). The result is a :class:`SampledScores`, the input of :mod:`unlearnkit.bounds`.

Adaptive temperature needs no second sampling run: a question decoded greedily gets the greedy answer n
times, and a sampled question gets exactly the samples :func:`sample_and_score` drew for it (same seed and
random stream, as :func:`unlearnkit.generation.adaptive_sample_answers` does), so :func:`adaptive_view`
rebuilds the adaptive result from the plain one.

The studies sample through :func:`sample_and_score_with`, the seam between engines (profile key ``sampler``):
``hf``, the default and the reference, is :func:`sample_and_score`; ``vllm`` draws the same quantities with vLLM
on a GPU (:mod:`unlearnkit.generation`'s vLLM backend) and scores them with the same code.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from .. import generation
from ..generation import certainty, encode_prompts, greedy_with_confidences, sample_continuations
from ..models import PromptTemplate, cpu_threads, load_model
from ..stations import timed
from .judges import key_entity, leak_judge, rouge_per_sample, self_bleu_per_prompt

__all__ = [
    "SAMPLING_VERSION",
    "SampledScores",
    "AdaptiveView",
    "sample_and_score",
    "SAMPLERS",
    "check_sampler",
    "with_sampler",
    "split_sampler",
    "sample_and_score_with",
    "model_for",
    "leak_keys",
    "prompt_ids",
    "adaptive_view",
]

#: Bump when :func:`sample_and_score` gives other scores for the same model, rows and settings: cached
#: results keyed with the old version are then sampled anew.
SAMPLING_VERSION = "1"


@dataclass
class SampledScores:
    """One model's greedy and sampled answers to a list of questions, scored.

    Arrays are (questions,) or (questions, n). ``rouge`` and ``greedy_rouge`` are None when the rows
    carry no ground-truth answer (the Harry Potter Q&A has keywords only).
    """

    questions: list[str]
    keys: list[Any]  # per question: the key entity (str) or a list of keywords, any of which leaks
    greedy_answers: list[str]
    greedy_leak: np.ndarray  # (Q,) 0/1: the greedy answer contains the key
    certainty: np.ndarray  # (Q,) c(x): mean top-token probability along the greedy continuation
    leak: np.ndarray  # (Q, n) 0/1 per sample
    self_bleu: np.ndarray  # (Q,) diversity of the n samples (1 = all identical)
    examples: list[list[str]]  # the first few samples per question, for display
    targets: list[str] | None = None
    greedy_rouge: np.ndarray | None = None  # (Q,)
    rouge: np.ndarray | None = None  # (Q, n)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0  # wall time of decoding and scoring

    @property
    def n(self) -> int:
        return int(self.leak.shape[1])

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, np.ndarray):
                out[key] = value.tolist()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SampledScores:
        data = dict(data)
        for key, dtype in (("greedy_leak", np.int8), ("leak", np.int8), ("certainty", float),
                           ("self_bleu", float), ("greedy_rouge", float), ("rouge", float)):
            if data.get(key) is not None:
                data[key] = np.asarray(data[key], dtype=dtype)
        return cls(**data)


def leak_keys(rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """What the leak judge looks for in each row's answers: the HP Q&A ``keywords`` (any of them leaks),
    else the key entity of the answer (the synthetic corpus' recorded ``value`` when present, else the
    heuristic of :func:`unlearnkit.metrics.judges.key_entity`, which drops what the question already says)."""
    return [list(row["keywords"]) if row.get("keywords")
            else key_entity(row.get("answer", ""), row.get("value"), row.get("question"))
            for row in rows]


def prompt_ids(tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]],
               use_prefix: bool) -> list[list[int]]:
    """Token ids of each prompt; with ``use_prefix`` the row's ``affirmative_response`` follows as the
    beginning of the answer. Its trailing space is dropped: a byte-level or sentencepiece tokenizer puts
    the space in front of the next word ("▁Hedwig"), so a dangling space token would push the model
    off its usual tokenisation of the very word we look for."""
    return encode_prompts(tokenizer, template, [row["question"] for row in rows],
                          _prefixes(rows) if use_prefix else None)


def _prefixes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(row.get("affirmative_response", "")).rstrip() for row in rows]


def sample_and_score(model, tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]], n: int,
                     temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None, *,
                     max_new_tokens: int, seed: int, chunk_size: int = 128, batch_size: int = 32,
                     use_prefix: bool = False, rouge_measure: str = "recall", with_self_bleu: bool = True,
                     keep_examples: int = 5, progress: bool = True) -> SampledScores:
    """Greedy answer, c(x) and n sampled answers per row, scored by ROUGE-L and the leak judge.

    rows: dicts with ``question``; ``answer`` (the ground truth, scored by ROUGE-L ``rouge_measure``;
        without it no ROUGE is computed); what the leak judge looks for (see :func:`leak_keys`);
        ``affirmative_response`` when ``use_prefix``. Only the generated continuation is judged, never a prefix.
    n, temperature, top_p, top_k, max_new_tokens, seed, chunk_size: as in
        :func:`unlearnkit.generation.sample_answers`; sample j of question i depends on (seed, i, j) only.
        temperature 0 repeats the greedy answer n times.
    Works for any Hugging Face causal LM (the model's device is used).
    """
    if not rows:
        raise ValueError("no rows to sample: the question list is empty")
    started = time.time()
    prompts = prompt_ids(tokenizer, template, rows, use_prefix)
    greedy_ids, greedy_confidences = greedy_with_confidences(model, tokenizer, prompts, max_new_tokens, batch_size)
    if temperature == 0:
        sampled_ids = [[ids] * n for ids in greedy_ids]
    else:
        sampled_ids, _ = sample_continuations(model, tokenizer, prompts, n, temperature, top_p, top_k,
                                              max_new_tokens=max_new_tokens, seed=seed, chunk_size=chunk_size,
                                              progress=progress, confidences=False)  # nobody reads them here
    greedy = [t.strip() for t in tokenizer.batch_decode(greedy_ids, skip_special_tokens=True)]
    flat = tokenizer.batch_decode([ids for per_q in sampled_ids for ids in per_q], skip_special_tokens=True)
    samples = [[t.strip() for t in flat[q * n:(q + 1) * n]] for q in range(len(rows))]
    settings = {"n": n, "temperature": temperature, "top_p": top_p, "top_k": top_k, "max_new_tokens": max_new_tokens,
                "seed": seed, "use_prefix": use_prefix, "rouge_measure": rouge_measure}
    result = _scored(rows, greedy, greedy_confidences, samples, settings, with_self_bleu, keep_examples)
    result.seconds = time.time() - started
    return result


def _scored(rows: Sequence[Mapping[str, Any]], greedy: list[str], greedy_confidences: Sequence[np.ndarray],
            samples: list[list[str]], settings: dict[str, Any], with_self_bleu: bool,
            keep_examples: int) -> SampledScores:
    """The scores of decoded answers, whichever engine drew them: one scorer for every sampler."""
    keys = leak_keys(rows)
    targets = [row["answer"] for row in rows] if all(row.get("answer") for row in rows) else None
    rouge_measure = settings["rouge_measure"]
    return SampledScores(
        questions=[row["question"] for row in rows],
        keys=keys,
        greedy_answers=greedy,
        greedy_leak=leak_judge([[g] for g in greedy], keys)[:, 0],
        certainty=np.array([certainty(c) for c in greedy_confidences]),
        leak=leak_judge(samples, keys),
        self_bleu=self_bleu_per_prompt(samples) if with_self_bleu else np.full(len(rows), np.nan),
        examples=[per_q[:keep_examples] for per_q in samples],
        targets=targets,
        greedy_rouge=rouge_per_sample(targets, [[g] for g in greedy], rouge_measure)[:, 0] if targets else None,
        rouge=rouge_per_sample(targets, samples, rouge_measure) if targets else None,
        settings=settings,
    )


# --------------------------------------------------------------------------- the sampler seam

#: The engines that can draw the answers (profile key ``sampler``): transformers, the reference, or vLLM.
SAMPLERS = ("hf", "vllm")


def check_sampler(sampler: str) -> str:
    """``sampler`` if it names an engine of :data:`SAMPLERS`, else a ValueError that lists them."""
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}: the sampler (profile key 'sampler') is one of "
                         f"{', '.join(repr(s) for s in SAMPLERS)}")
    return sampler


def with_sampler(settings: Mapping[str, Any], sampler: str) -> dict[str, Any]:
    """A study's sampling settings naming the engine, but only when it is not hf: the settings are part of the
    studies' cache keys and metrics.json, which stay byte for byte what they were before the seam for hf."""
    return dict(settings) if check_sampler(sampler) == "hf" else {**settings, "sampler": sampler}


#: Which profile keys give the number of samples and the answer length of each study that samples.
SAMPLE_KEYS = {"leakage": ("n_samples", "sample_max_new_tokens"),
               "entropy": ("eo_n_samples", "sample_max_new_tokens"),
               "alignment": ("alignment_n_samples", "alignment_max_new_tokens")}


def sampling_settings(params: Mapping[str, Any], study: str, temperature: float | None = None) -> dict[str, Any]:
    """The sampling arguments of a study (``leakage``: notebook 05, ``entropy``: 06, ``alignment``: 07) from its
    profile: its number of samples and answer length (:data:`SAMPLE_KEYS`), the profile's temperature (or
    ``temperature``), top-p and training seed, and its ``sampler`` when it is not hf (:func:`with_sampler`). The
    settings key the caches of the sampled scores."""
    if study not in SAMPLE_KEYS:
        raise ValueError(f"unknown sampling study {study!r}; one of {', '.join(SAMPLE_KEYS)}")
    n, length = SAMPLE_KEYS[study]
    return with_sampler({"n": int(params[n]),
                         "temperature": float(params["sample_temperature"] if temperature is None else temperature),
                         "top_p": params["sample_top_p"], "max_new_tokens": int(params[length]),
                         "seed": int(params["seed"])}, params["sampler"])


def split_sampler(settings: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The engine named in sampling settings (hf when they name none) and the other settings."""
    rest = dict(settings)
    return check_sampler(rest.pop("sampler", "hf")), rest


@timed("scoring")
def sample_and_score_with(sampler: str, model, tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]],
                          n: int, **settings: Any) -> SampledScores:
    """The one way the studies sample: :func:`sample_and_score`'s :class:`SampledScores`, drawn by ``sampler``.

    ``"hf"``: :func:`sample_and_score` itself on a transformers ``model`` and its ``tokenizer`` (the reference).
    ``"vllm"``: the same structure and the same scorer, with the greedy answers, their certainty c(x) (from
        vLLM's logprobs) and the n samples decoded by vLLM; ``model`` is a ``vllm.LLM`` (or a folder or Hub name,
        loaded once) and ``tokenizer`` is not used (the engine's own, from the same files, encodes the prompts).
        Same distribution, other draws than ``"hf"`` (see :func:`unlearnkit.generation.vllm_sample_answers`);
        ``settings["sampler"]`` records the engine.
    ``settings``: the keyword arguments of :func:`sample_and_score`. :func:`model_for` loads ``model`` and
    ``tokenizer`` as each sampler takes them.
    """
    if check_sampler(sampler) == "hf":
        return sample_and_score(model, tokenizer, template, rows, n, **settings)
    return _vllm_sample_and_score(model, template, rows, n, **settings)


def _vllm_sample_and_score(model, template: PromptTemplate, rows: Sequence[Mapping[str, Any]], n: int,
                           temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None, *,
                           max_new_tokens: int, seed: int, chunk_size: int = 128, batch_size: int = 32,
                           use_prefix: bool = False, rouge_measure: str = "recall", with_self_bleu: bool = True,
                           keep_examples: int = 5, progress: bool = True) -> SampledScores:
    # chunk_size and batch_size only bound the transformers backend's memory (its draws do not depend on
    # them); vLLM schedules its own batches.
    del chunk_size, batch_size
    if not rows:
        raise ValueError("no rows to sample: the question list is empty")
    started = time.time()
    llm = generation.vllm_engine(model, seed, None) if isinstance(model, (str, os.PathLike)) else model
    questions = [row["question"] for row in rows]
    prefixes = _prefixes(rows) if use_prefix else None
    greedy, greedy_confidences = generation.vllm_greedy_with_confidences(llm, template, questions, max_new_tokens,
                                                                         prefixes, progress=progress)
    if temperature == 0:
        samples = [[g] * n for g in greedy]
    else:
        samples = generation.vllm_sample_answers(llm, template, questions, n, temperature, top_p, top_k,
                                                 max_new_tokens=max_new_tokens, seed=seed, prefixes=prefixes,
                                                 progress=progress)
    settings = {"n": n, "temperature": temperature, "top_p": top_p, "top_k": top_k, "max_new_tokens": max_new_tokens,
                "seed": seed, "use_prefix": use_prefix, "rouge_measure": rouge_measure, "sampler": "vllm"}
    result = _scored(rows, greedy, greedy_confidences, samples, settings, with_self_bleu, keep_examples)
    result.seconds = time.time() - started
    return result


@contextmanager
def model_for(sampler: str, location, *, dtype: str | None, template: str | None,
              seed: int) -> Iterator[tuple[Any, Any, PromptTemplate]]:
    """(model, tokenizer, template) of the model at ``location`` (a folder or Hub name) as
    :func:`sample_and_score_with` takes them for ``sampler``, for the length of the ``with`` block.

    ``"hf"``: :func:`unlearnkit.models.load_model` on the GPU when there is one, under the CPU-thread policy of
    :func:`unlearnkit.models.cpu_threads`. ``"vllm"``: :func:`unlearnkit.generation.load_vllm` (vLLM seeded with
    ``seed``), without the transformers weights. ``dtype`` and ``template`` as in ``load_model``.
    """
    if check_sampler(sampler) == "hf":
        loaded = load_model(location, dtype=dtype, device="auto", template=template)
        with cpu_threads(loaded.model):
            yield loaded
    else:
        yield generation.load_vllm(location, dtype=dtype, template=template, seed=seed)


class AdaptiveView(NamedTuple):
    """The scores adaptive temperature scaling gives, and which questions it decoded greedily."""

    scores: SampledScores
    went_greedy: np.ndarray  # (Q,) bool: c(x) > threshold


def adaptive_view(result: SampledScores, threshold: float) -> AdaptiveView:
    """The scores adaptive temperature scaling would give (docs/metrics.md section 3), and which questions went greedy.

    A question with c(x) > threshold (c measured on the greedy continuation) is decoded greedily, so all
    its n scores are the greedy answer's; the others keep their samples. Equal to scoring the output of
    :func:`unlearnkit.generation.adaptive_sample_answers` with the same seed (tested).
    """
    greedy = result.certainty > threshold
    leak = np.where(greedy[:, None], result.greedy_leak[:, None], result.leak).astype(np.int8)
    rouge = None
    if result.rouge is not None:
        rouge = np.where(greedy[:, None], result.greedy_rouge[:, None], result.rouge)
    self_bleu = np.where(greedy, 1.0, result.self_bleu)
    view = replace(result, leak=leak, rouge=rouge, self_bleu=self_bleu,
                   settings={**result.settings, "adaptive_threshold": float(threshold)})
    return AdaptiveView(view, greedy)
