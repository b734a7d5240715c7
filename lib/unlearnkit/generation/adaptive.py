"""Adaptive temperature scaling (docs/metrics.md §3): greedy where the model is certain, else sampled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..models import PromptTemplate, encode_prompt
from .greedy import certainty, greedy_with_confidences
from .sampling import sample_answers
from .shared import check_sampling_args

# --------------------------------------------------------------------------- adaptive temperature


@dataclass
class AdaptiveSamples:
    """Result of :func:`adaptive_sample_answers`."""

    answers: list[list[str]]  # [question][sample]
    certainty: np.ndarray  # (questions,): c(x) on the greedy continuation
    greedy: np.ndarray  # (questions,) bool: c(x) > threshold, all n samples are the greedy answer
    greedy_answers: list[str]
    threshold: float


def adaptive_sample_answers(model, tokenizer, template: PromptTemplate, questions: Sequence[str], n: int,
                            threshold: float = 0.9, temperature: float = 1.0, top_p: float | None = None,
                            top_k: int | None = None, *, max_new_tokens: int, seed: int,
                            chunk_size: int = 256, batch_size: int = 32, share_prompt_cache: bool = True,
                            progress: bool = True) -> AdaptiveSamples:
    """Adaptive temperature scaling (docs/metrics.md §3): greedy where the model is certain, else sampled.

    The certainty c(x) of a question is the mean over generated steps of the probability of the most
    likely next token (temperature 1), measured on the question's GREEDY continuation: one extra
    greedy pass per question, before any sampling (the paper leaves the continuation open; this is our
    choice). If c(x) > threshold (paper: c_T = 0.9) the question is decoded greedily, i.e. temperature 0
    and all n samples are the greedy answer; otherwise n answers are sampled as in :func:`sample_answers`
    at the configured temperature/top-k/top-p. A sampled question keeps the samples it would get from
    ``sample_answers`` on the full question list (same seed): its random stream is its index.
    """
    check_sampling_args(n, temperature, top_p, top_k, chunk_size)
    prompts = [encode_prompt(tokenizer, template, q) for q in questions]
    greedy_ids, greedy_confs = greedy_with_confidences(model, tokenizer, prompts, max_new_tokens, batch_size)
    greedy_texts = [tokenizer.decode(c, skip_special_tokens=True).strip() for c in greedy_ids]
    cert = np.array([certainty(c) for c in greedy_confs])
    went_greedy = cert > threshold
    answers = [[text] * n for text in greedy_texts]
    to_sample = [i for i in range(len(prompts)) if not went_greedy[i]]
    if to_sample:
        sampled = sample_answers(model, tokenizer, template, [questions[i] for i in to_sample], n, temperature,
                                 top_p, top_k, max_new_tokens=max_new_tokens, seed=seed, chunk_size=chunk_size,
                                 share_prompt_cache=share_prompt_cache, progress=progress, streams=to_sample)
        for i, samples in zip(to_sample, sampled):
            answers[i] = samples
    return AdaptiveSamples(answers, cert, went_greedy, greedy_texts, float(threshold))
