"""The vLLM backend: greedy answers with their confidences and sampled answers from a ``vllm.LLM``, for
large-scale sampling on a GPU, with prompts and answers read as the transformers backend reads them."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .. import models, paths
from ..models import PromptTemplate
from ..stations import timed
from .greedy import encode_prompts
from .shared import check_sampling_args, cut_at_eos, special_ids

# --------------------------------------------------------------------------- vLLM backend
#
# vllm is optional and needs Linux with a CUDA GPU: it lives in the separate environment of
# requirements-vllm.txt (make setup-vllm). Nothing below runs in this project's CPU environment; the
# test that runs it (tests/test_sampler_seam.py) skips itself where vllm is not installed.

VLLM_MISSING = ("the vLLM sampler needs the optional package vllm, which is not installed: it runs on Linux with a "
                "CUDA GPU, in the separate environment of requirements-vllm.txt (make setup-vllm). The transformers "
                "sampler (sampler: hf) needs nothing more.")


def _vllm():
    try:
        import vllm
    except ImportError as err:
        raise ImportError(VLLM_MISSING) from err
    return vllm


class VllmModel(NamedTuple):
    """A model loaded by vLLM (:func:`load_vllm`): the ``vllm.LLM``, its tokenizer and the prompt template."""

    llm: Any
    tokenizer: Any
    template: PromptTemplate


def vllm_engine(name_or_path: str | os.PathLike, seed: int, dtype: str | None, **llm_kwargs):
    """A ``vllm.LLM`` on a model folder or Hub name; ``llm_kwargs`` (e.g. ``gpu_memory_utilization``) go to it.

    Its logprobs are asked for in vLLM's raw mode, before temperature, top-k and top-p: the certainty c(x)
    is defined on the plain softmax (:func:`greedy_with_confidences`)."""
    options = {"seed": seed, "dtype": dtype or "auto", "logprobs_mode": "raw_logprobs", **llm_kwargs}
    return _vllm().LLM(model=str(name_or_path), **options)


def load_vllm(name_or_path: str | os.PathLike, dtype: str | None, template: str | None, seed: int,
              **llm_kwargs) -> VllmModel:
    """(engine, tokenizer, template) of a model folder or Hub name, as :func:`unlearnkit.models.load_model`
    gives them for transformers: a relative path from the project root, the template recorded beside a saved
    model (or named by ``template``; ``"chat"``: the tokenizer's own), else the one of the model's family."""
    spec = str(name_or_path)
    local = paths.resolve(spec)
    source = str(local) if local.is_dir() else spec
    llm = vllm_engine(source, seed, dtype, **llm_kwargs)
    tokenizer = llm.get_tokenizer()
    return VllmModel(llm, tokenizer, _template_of(tokenizer, source, template))


def _template_of(tokenizer, source: str, name: str | None) -> PromptTemplate:
    # models.load_model's rule, restated: that function loads the transformers weights as well, which a vLLM
    # run must not pay for. Keep the two in step.
    meta = Path(source) / "unlearnkit.json"
    name = name or (json.loads(meta.read_text())["template"] if meta.exists() else None)
    if name == models.CHAT:
        return models.conversation_template(tokenizer, source)
    return models.get_template(name) if name else models.template_for(source)


def _as_llm(model, seed: int, llm_kwargs: dict):
    vllm = _vllm()
    if isinstance(model, vllm.LLM):
        return model
    if isinstance(model, (str, os.PathLike)):
        options = dict(llm_kwargs)
        return vllm_engine(model, seed, options.pop("dtype", None), **options)
    raise TypeError(f"vLLM decodes with a vllm.LLM or a model folder or Hub name, not a {type(model).__name__} "
                    "(a transformers model samples with the hf sampler)")


def _request_seed(seed: int, stream: int) -> int:
    """The vLLM seed of prompt ``stream``. vLLM seeds sample j of a request with (request seed + j), so the
    request seeds are drawn 62 bits wide from (seed, stream), as the transformers backend derives each prompt's
    stream: prompts never share a seed, and sample j of question i depends on (seed, i, j) only."""
    return int(np.random.default_rng([seed, stream]).integers(2 ** 62))


def _plain_sampling_params(vllm, **options):
    # The model's own distribution, as the transformers backend samples it: no penalties and no min-p.
    return vllm.SamplingParams(repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0, min_p=0.0,
                               **options)


def _vllm_generate(llm, prompts: Sequence[Sequence[int]], params, progress: bool) -> list:
    from ..stations import show_progress

    requests = [{"prompt_token_ids": list(p)} for p in prompts]
    return llm.generate(requests, params, use_tqdm=show_progress(progress))


def _decode_until_eos(tokenizer, token_ids: Sequence[int], eos: int) -> tuple[str, int]:
    """The text before EOS, decoded as the transformers backend decodes it, and the steps that count."""
    kept, steps = cut_at_eos(list(token_ids), eos)
    return tokenizer.decode(kept, skip_special_tokens=True).strip(), steps


@timed("generation")
def vllm_greedy_with_confidences(model, template: PromptTemplate, questions: Sequence[str], max_new_tokens: int,
                                 prefixes: Sequence[str] | None = None, progress: bool = True,
                                 **llm_kwargs) -> tuple[list[str], list[np.ndarray]]:
    """Greedy answer to each question with vLLM, and its per-step confidences as
    :func:`greedy_with_confidences` defines them: the probability of the most likely next token under the
    plain softmax (vLLM's top-1 logprob in raw mode), for the answer's tokens plus the EOS step.

    ``model``: a ``vllm.LLM`` or a model folder or Hub name; prompts as in :func:`encode_prompts`.
    """
    vllm = _vllm()
    llm = _as_llm(model, 0, llm_kwargs)
    tokenizer = llm.get_tokenizer()
    eos, _ = special_ids(tokenizer)
    prompts = encode_prompts(tokenizer, template, questions, prefixes)
    params = _plain_sampling_params(vllm, n=1, temperature=0.0, max_tokens=max_new_tokens, logprobs=1)
    answers, confidences = [], []
    for result in _vllm_generate(llm, prompts, params, progress):
        completion = result.outputs[0]
        text, steps = _decode_until_eos(tokenizer, completion.token_ids, eos)
        answers.append(text)
        confidences.append(_top_token_probabilities(completion.logprobs, steps))
    return answers, confidences


def _top_token_probabilities(logprobs, steps: int) -> np.ndarray:
    if logprobs is None or len(logprobs) < steps:
        given = 0 if logprobs is None else len(logprobs)
        raise RuntimeError(f"vLLM returned logprobs for {given} of {steps} generated steps: the certainty c(x) "
                           "cannot be measured")
    # With logprobs=1 a step lists the top token and the chosen one (the same under greedy decoding).
    return np.exp([max(entry.logprob for entry in step.values()) for step in logprobs[:steps]])


@timed("generation")
def vllm_sample_answers(model: str | os.PathLike | object, template: PromptTemplate, questions: Sequence[str], n: int,
                        temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None, *,
                        max_new_tokens: int, seed: int, prefixes: Sequence[str] | None = None,
                        progress: bool = True, **llm_kwargs) -> list[list[str]]:
    """n sampled answers per question with vLLM, for large-scale sampling on a GPU.

    ``model`` is a ``vllm.LLM`` to reuse, or a model folder or Hub name (a ``vllm.LLM`` is built with ``seed``
    and ``llm_kwargs``, see :func:`vllm_engine`). Prompts are tokenised exactly as in :func:`sample_answers`
    (:func:`encode_prompts`, BOS included; ``prefixes`` start the answers) and passed as token ids, so both
    backends see the same prompt. The samples follow the same distribution as ``sample_answers`` (temperature,
    then top-k, then top-p; no penalties) but are not the same draws: vLLM draws its own random numbers, seeded
    per question (:func:`_request_seed`); equal only on the same hardware and vLLM version. Answers are cut at
    EOS and decoded by the tokenizer as the transformers backend decodes them. They carry no confidences.
    """
    check_sampling_args(n, temperature, top_p, top_k, 1)
    vllm = _vllm()
    llm = _as_llm(model, seed, llm_kwargs)
    tokenizer = llm.get_tokenizer()
    eos, _ = special_ids(tokenizer)
    prompts = encode_prompts(tokenizer, template, questions, prefixes)
    params = [_plain_sampling_params(vllm, n=n, temperature=temperature, top_p=1.0 if top_p is None else top_p,
                                     top_k=0 if top_k is None else top_k, max_tokens=max_new_tokens,
                                     seed=_request_seed(seed, i))
              for i in range(len(prompts))]
    return [[_decode_until_eos(tokenizer, completion.token_ids, eos)[0] for completion in result.outputs]
            for result in _vllm_generate(llm, prompts, params, progress)]
