"""Decoding: greedy answers, per-token confidences, and batched multinomial sampling of many answers
per question for the probabilistic evaluation of docs/metrics.md §3 (plus adaptive temperature scaling).

Sampling design (why it looks the way it does):

* **One prompt, many samples.** The n samples of a prompt share the prompt's key/value cache: the
  prompt (all but its last token) is run through the model once per chunk, and the resulting cache is
  expanded row-wise to every sample of that prompt, so the prompt is never recomputed n times.
  ``model.generate`` then decodes all rows together (it feeds the last prompt token and continues).
* **Chunks.** At most ``chunk_size`` sequences are decoded at once, so memory stays bounded for
  n = 1024. A chunk may hold the tail of one prompt's samples and the head of the next prompt's.
* **Reproducible, independent of chunking.** Every sample has its own pre-drawn stream of uniform
  numbers, from ``numpy.random.default_rng([seed, prompt index])``; a token is drawn by inverse-CDF
  sampling with that uniform. So sample j of prompt i depends only on (seed, i, j), not on the chunk
  size, the batch it shares or the other prompts. (Floating-point differences of the model between
  batch shapes could in principle flip a draw that falls within ~1e-6 of a CDF step; we never saw it.)
* **What is sampled.** The model's next-token softmax, optionally with temperature, top-k and top-p
  (in that order, as transformers applies them). Our sampler is a ``LogitsProcessor`` that leaves only
  the drawn token, and ``generate`` runs in greedy mode around it; repetition penalties and n-gram
  bans from a model's ``generation_config`` are switched off, so the distribution is the model's own.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from . import models, paths
from .models import PromptTemplate, encode_prompt, in_eval_mode, pad_token_id
from .stations import timed


def left_pad(sequences: Sequence[Sequence[int]], pad_token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, s in enumerate(sequences):
        if len(s):
            ids[i, width - len(s):] = torch.tensor(list(s))
            mask[i, width - len(s):] = 1
    return ids, mask


@timed("generation")
@torch.no_grad()
@in_eval_mode
def greedy_continuations(model, tokenizer, prompts_ids: Sequence[Sequence[int]], max_new_tokens: int = 64,
                         batch_size: int = 32) -> list[list[int]]:
    """Greedy continuation token ids of each prompt, without the EOS and what follows it."""
    device = next(model.parameters()).device
    eos = tokenizer.eos_token_id
    pad = pad_token_id(tokenizer)
    order = sorted(range(len(prompts_ids)), key=lambda i: len(prompts_ids[i]))  # less padding per batch
    out: list[list[int]] = [[] for _ in prompts_ids]
    own_loop = plain_config(model) and can_decode(model)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        if own_loop:
            rows, _ = decode(model, [prompts_ids[i] for i in idx], range(len(idx)), max_new_tokens, eos, pad,
                             _greedy_choice, confidences=False)
        else:  # the model's generation config asks for more than plain greedy decoding: generate() applies it
            ids, mask = left_pad([prompts_ids[i] for i in idx], pad)
            rows = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                                  max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                                  temperature=None, top_p=None, top_k=None)[:, ids.shape[1]:].tolist()
        for row, i in zip(rows, idx):
            out[i] = row[: row.index(eos)] if eos in row else row
    return out


def encode_prompts(tokenizer, template: PromptTemplate, questions: Sequence[str],
                   prefixes: Sequence[str] | None = None) -> list[list[int]]:
    """Token ids of each question's prompt; with ``prefixes``, each prefix follows as the start of the answer,
    tokenised on its own so that both backends (transformers, vLLM) see the very same ids."""
    prompts = [encode_prompt(tokenizer, template, q) for q in questions]
    if prefixes is not None:
        prompts = [p + tokenizer(pre, add_special_tokens=False)["input_ids"] for p, pre in zip(prompts, prefixes)]
    return prompts


def greedy_answers(model, tokenizer, template: PromptTemplate, questions: Sequence[str], max_new_tokens: int = 64,
                   batch_size: int = 32, prefixes: Sequence[str] | None = None) -> list[str]:
    """The model's greedy answer to each question, decoded and cut at EOS."""
    prompts = encode_prompts(tokenizer, template, questions, prefixes)
    conts = greedy_continuations(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
    return [tokenizer.decode(c, skip_special_tokens=True).strip() for c in conts]


# --------------------------------------------------------------------------- shared helpers

# generate() fills unset options from the model's generation_config; these would change the
# distribution we sample from or measure, so they are pinned to "off".
_PLAIN_DISTRIBUTION = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0}


def _special_ids(tokenizer) -> tuple[int, int]:
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no EOS token: answers could not be cut")
    pad = pad_token_id(tokenizer)
    return eos, pad


def _cut_at_eos(row: list[int], eos: int) -> tuple[list[int], int]:
    """Tokens before the first EOS, and the number of generated steps that count: those tokens plus
    the step that produced EOS (the decision to stop is a generated step too)."""
    if eos in row:
        k = row.index(eos)
        return row[:k], k + 1
    return row, len(row)


def _progress_bar(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    from .stations import show_progress

    return tqdm(total=total, desc=desc, disable=not show_progress(enabled), leave=False)


def _check_sampling_args(n: int, temperature: float, top_p: float | None, top_k: int | None, chunk_size: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (samples per prompt) must be an integer >= 1, got {n!r}")
    if not (temperature >= 0):  # also rejects NaN
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
    if top_p is not None and not (0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")


def _max_token_probability(logits: torch.Tensor) -> torch.Tensor:
    """max_v softmax(logits)_v per row, without materialising the softmax: exp(max - logsumexp)."""
    logits = logits.float()
    return torch.exp(logits.max(dim=-1).values - torch.logsumexp(logits, dim=-1))


# --------------------------------------------------------------------------- logits processors


class _ConfidenceRecorder:
    """A LogitsProcessor that records, per step and row, the probability of the most likely token
    under the unmodified (temperature-1) distribution, and passes the logits on unchanged."""

    def __init__(self) -> None:
        self.steps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.steps.append(_max_token_probability(scores))  # stays on the device: no sync per step
        return scores

    def table(self, rows: int) -> np.ndarray:
        """(rows, generated steps) of confidences."""
        if not self.steps:
            return np.zeros((rows, 0))
        return torch.stack(self.steps, dim=1).cpu().double().numpy()


class _InverseCdfSampler(_ConfidenceRecorder):
    """Draws each row's next token by inverse-CDF sampling with that row's pre-drawn uniform for the
    current step, and returns logits that make the drawn token the only choice (so ``generate`` in
    greedy mode picks it). Also records confidences (see :class:`_ConfidenceRecorder`)."""

    def __init__(self, uniforms: torch.Tensor, prompt_width: int, temperature: float, top_k: int | None,
                 top_p: float | None) -> None:
        super().__init__()
        self.uniforms = uniforms  # (rows, max_new_tokens), on the model's device
        self.prompt_width = prompt_width
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        super().__call__(input_ids, scores)
        step = input_ids.shape[1] - self.prompt_width
        probs = _filtered_probabilities(scores.float(), self.temperature, self.top_k, self.top_p)
        cdf = probs.cumsum(dim=-1)
        # Scale the uniform by the row's total instead of renormalising: same draw, and a float32
        # total slightly below 1 can never push the target past the last token.
        target = (self.uniforms[:, step] * cdf[:, -1]).unsqueeze(-1)
        # right=True: the first token whose CDF exceeds the target; zero-probability tokens have a
        # CDF equal to their predecessor's and can therefore never be chosen.
        token = torch.searchsorted(cdf, target, right=True).clamp(max=cdf.shape[-1] - 1)
        only_drawn = torch.full_like(scores, float("-inf"))
        return only_drawn.scatter_(1, token, 0.0)


def _filtered_probabilities(logits: torch.Tensor, temperature: float, top_k: int | None,
                            top_p: float | None) -> torch.Tensor:
    """Softmax of logits / temperature, restricted to the top-k tokens and then to the top-p nucleus
    (the smallest set of most likely tokens whose mass reaches top_p); not renormalised."""
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p is not None and top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
        drop_sorted = mass_before >= top_p  # the most likely token always stays (mass_before = 0)
        drop = torch.zeros_like(drop_sorted).scatter_(1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
    return probs


# --------------------------------------------------------------------------- the decoding loop

#: A live row's share of a decoding batch below which finished rows are dropped from it (their key/value cache
#: included): copying the cache costs about as much as a few steps of the rows it removes.
COMPACT_BELOW = 0.75
#: Generation-config options that are off (or their neutral value) for plain decoding; a model whose configuration
#: sets anything else (a repetition penalty, banned n-grams, forced tokens...) decodes through ``generate``.
_NEUTRAL_GENERATION = {"repetition_penalty": (None, 1.0), "no_repeat_ngram_size": (None, 0),
                       "encoder_repetition_penalty": (None, 1.0), "bad_words_ids": (None,),
                       "suppress_tokens": (None,), "begin_suppress_tokens": (None,), "forced_bos_token_id": (None,),
                       "forced_eos_token_id": (None,), "sequence_bias": (None,), "min_length": (None, 0),
                       "min_new_tokens": (None, 0), "exponential_decay_length_penalty": (None,)}


def plain_config(model) -> bool:
    """Whether the model's generation config asks for nothing beyond plain decoding (see :data:`_NEUTRAL_GENERATION`),
    so that :func:`decode` gives what ``generate`` gives."""
    config = getattr(model, "generation_config", None)
    return config is None or all(getattr(config, k, None) in allowed for k, allowed in _NEUTRAL_GENERATION.items())


def can_decode(model) -> bool:
    """Whether :func:`decode` serves ``model``: its forward takes position ids (a transformers cache, which every
    causal LM of the library returns, can drop rows)."""
    return _accepts_position_ids(model)


@torch.no_grad()
def decode(model, prompts: Sequence[Sequence[int]], rows_of: Sequence[int], max_new_tokens: int, eos: int, pad: int,
           choose, share_prompt_cache: bool = True, confidences: bool = True) -> tuple[list[list[int]], np.ndarray]:
    """Decode ``max_new_tokens`` steps for every row r, which continues prompt ``prompts[rows_of[r]]``: the workbook's
    own loop around the model's forward pass and its key/value cache, in place of ``generate`` (whose per-step work,
    for the tiny models here, costs more than the forward pass itself).

    Each distinct prompt is run once and its cache copied to its rows (``share_prompt_cache=False`` repeats the prompt
    per row instead). At every step ``choose(logits, step, rows)`` picks the next token of the live ``rows`` (indices
    into all rows) from their float32 next-token logits; a row stops at EOS, and once the live rows are fewer than
    :data:`COMPACT_BELOW` of the batch the finished ones are dropped from it, cache and all. Returns each row's tokens
    (up to and including EOS) and an (rows, max_new_tokens) table of each step's confidence, the probability of the
    most likely next token under the plain softmax (0 after a row ended), as ``generate`` with
    :class:`_ConfidenceRecorder` records them (all 0 with ``confidences=False``, which skips computing them)."""
    device = next(model.parameters()).device
    n_rows = len(rows_of)
    expand = torch.tensor(list(rows_of), dtype=torch.long, device=device)
    ids, mask = left_pad(prompts, pad)
    ids, mask = ids.to(device), mask.to(device)
    if not share_prompt_cache:
        ids, mask = ids[expand], mask[expand]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
    logits, cache = out.logits[:, -1].float(), out.past_key_values
    if share_prompt_cache:
        cache.reorder_cache(expand)
        logits, mask, positions = logits[expand], mask[expand], positions[expand]
    next_position = positions[:, -1] + 1
    live = torch.arange(n_rows, device=device)  # the rows of the batch, by index into all rows
    tokens = torch.full((n_rows, max_new_tokens), pad, dtype=torch.long, device=device)
    confidence = torch.zeros((n_rows, max_new_tokens), dtype=torch.float32, device=device)
    running = torch.ones(n_rows, dtype=torch.bool, device=device)  # per batch row: not ended yet
    for step in range(max_new_tokens):
        rows = live[running]
        chosen = choose(logits[running], step, rows)
        tokens[rows, step] = chosen
        if confidences:
            confidence[rows, step] = _max_token_probability(logits[running])
        ended = chosen == eos
        if step + 1 == max_new_tokens:
            break
        following = torch.full_like(live, pad)
        following[running] = chosen
        running = running.clone()
        running[running.nonzero().squeeze(-1)[ended]] = False
        if not bool(running.any()):
            break
        if float(running.float().mean()) < COMPACT_BELOW:
            keep = running.nonzero().squeeze(-1)
            cache.reorder_cache(keep)
            live, mask, next_position, following = live[keep], mask[keep], next_position[keep], following[keep]
            running = torch.ones(len(keep), dtype=torch.bool, device=device)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
        out = model(input_ids=following[:, None], attention_mask=mask, position_ids=next_position[:, None],
                    past_key_values=cache, use_cache=True)
        logits, cache = out.logits[:, -1].float(), out.past_key_values
        next_position = next_position + 1
    rows_out = []
    for row in tokens.tolist():
        rows_out.append(row[: row.index(eos) + 1] if eos in row else row)
    return rows_out, confidence.cpu().double().numpy()


def _greedy_choice(logits: torch.Tensor, step: int, rows: torch.Tensor) -> torch.Tensor:
    return logits.argmax(dim=-1)


class _InverseCdfChoice:
    """``choose`` of :func:`decode` for sampling: each row's token by inverse-CDF sampling with its pre-drawn uniform
    of the step (the draw of :class:`_InverseCdfSampler`)."""

    def __init__(self, uniforms: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None):
        self.uniforms, self.temperature, self.top_k, self.top_p = uniforms, temperature, top_k, top_p

    def __call__(self, logits: torch.Tensor, step: int, rows: torch.Tensor) -> torch.Tensor:
        probs = _filtered_probabilities(logits, self.temperature, self.top_k, self.top_p)
        cdf = probs.cumsum(dim=-1)
        target = (self.uniforms[rows, step] * cdf[:, -1]).unsqueeze(-1)
        return torch.searchsorted(cdf, target, right=True).clamp(max=cdf.shape[-1] - 1).squeeze(-1)


# --------------------------------------------------------------------------- greedy with confidences


@timed("generation")
@torch.no_grad()
@in_eval_mode
def greedy_with_confidences(model, tokenizer, prompts_ids: Sequence[Sequence[int]], max_new_tokens: int = 64,
                            batch_size: int = 32) -> tuple[list[list[int]], list[np.ndarray]]:
    """Greedy continuation of each prompt (ids before EOS) and its per-step confidences.

    The confidence of a generated step is the probability of the most likely next token under the
    model's plain softmax (temperature 1), i.e. the probability of the token greedy decoding picks.
    The steps are the continuation's tokens plus the step that produced EOS, when EOS came; so
    ``len(confidences[i])`` is ``len(continuation[i]) + 1`` if the answer ended, else ``max_new_tokens``.
    Unlike :func:`greedy_continuations`, repetition penalties from the model's generation_config are off.
    """
    device = next(model.parameters()).device
    eos, pad = _special_ids(tokenizer)
    order = sorted(range(len(prompts_ids)), key=lambda i: len(prompts_ids[i]))
    continuations: list[list[int]] = [[] for _ in prompts_ids]
    confidences: list[np.ndarray] = [np.zeros(0) for _ in prompts_ids]
    own_loop = can_decode(model)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        if own_loop:
            rows, table = decode(model, [prompts_ids[i] for i in idx], range(len(idx)), max_new_tokens, eos, pad,
                                 _greedy_choice)
        else:
            ids, mask = left_pad([prompts_ids[i] for i in idx], pad)
            recorder = _ConfidenceRecorder()
            gen = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                                 max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                                 temperature=None, top_p=None, top_k=None, logits_processor=[recorder],
                                 **_PLAIN_DISTRIBUTION)
            rows, table = gen[:, ids.shape[1]:].tolist(), recorder.table(len(idx))
        for r, (row, i) in enumerate(zip(rows, idx)):
            continuations[i], steps = _cut_at_eos(row, eos)
            confidences[i] = table[r, :steps]
    return continuations, confidences


def token_confidences(model, tokenizer, template: PromptTemplate, questions: Sequence[str],
                      max_new_tokens: int = 64, batch_size: int = 32) -> list[np.ndarray]:
    """Per generated step of each question's greedy answer, the probability of the most likely next
    token (temperature 1). Steps: the answer tokens plus the EOS step; see :func:`greedy_with_confidences`."""
    prompts = [encode_prompt(tokenizer, template, q) for q in questions]
    return greedy_with_confidences(model, tokenizer, prompts, max_new_tokens, batch_size)[1]


def certainty(confidences: np.ndarray) -> float:
    """c(x) = mean over generated steps of the confidence; 1.0 for zero steps (nothing was uncertain)."""
    return float(np.mean(confidences)) if len(confidences) else 1.0


# --------------------------------------------------------------------------- sampling


class SampledAnswers(NamedTuple):
    """Samples with their confidences (``return_confidences=True``)."""

    answers: list[list[str]]  # [prompt][sample], decoded, cut at EOS
    token_confidences: list[list[np.ndarray]]  # [prompt][sample] -> (generated steps,)
    mean_confidence: np.ndarray  # (prompts, n): mean of each sample's token confidences


def _sample_uniforms(seed: int, stream: int, n: int, steps: int) -> np.ndarray:
    """The uniforms of all n samples of one prompt: row j drives sample j, whatever the chunking."""
    return np.random.default_rng([seed, stream]).random((n, steps))


@timed("generation")
@torch.no_grad()
@in_eval_mode
def sample_continuations(model, tokenizer, prompts_ids: Sequence[Sequence[int]], n: int, temperature: float = 1.0,
                         top_p: float | None = None, top_k: int | None = None, max_new_tokens: int = 64,
                         seed: int = 0, chunk_size: int = 256, streams: Sequence[int] | None = None,
                         share_prompt_cache: bool = True, progress: bool = True, decoder: str = "loop",
                         ) -> tuple[list[list[list[int]]], list[list[np.ndarray]]]:
    """n sampled continuations (token ids before EOS) of each prompt, and their per-step confidences.

    The token-level engine of :func:`sample_answers` (see there and the module docstring). ``decoder`` (one of
    :data:`DECODERS`) decodes with the workbook's own loop or with ``generate``: the same draws either way.
    ``streams[i]`` names prompt i's random stream (default: i), so a caller that samples a subset of
    its prompts can keep each prompt's samples the same. ``share_prompt_cache=False`` repeats the
    prompt for every sample instead of expanding its cache (same samples, slower; for models whose
    cache cannot be reordered).
    """
    _check_sampling_args(n, temperature, top_p, top_k, chunk_size)
    if temperature == 0:
        raise ValueError("temperature 0 is greedy decoding: use greedy_with_confidences (sample_answers does)")
    streams = list(range(len(prompts_ids))) if streams is None else list(streams)
    if len(streams) != len(prompts_ids):
        raise ValueError(f"{len(streams)} streams for {len(prompts_ids)} prompts")
    device = next(model.parameters()).device
    eos, pad = _special_ids(tokenizer)

    # Rows (prompt, sample) in prompt order, prompts sorted by length so a chunk pads little.
    order = sorted(range(len(prompts_ids)), key=lambda i: len(prompts_ids[i]))
    rows = [(p, j) for p in order for j in range(n)]
    continuations: list[list[list[int]]] = [[[] for _ in range(n)] for _ in prompts_ids]
    confidences: list[list[np.ndarray]] = [[np.zeros(0) for _ in range(n)] for _ in prompts_ids]
    uniforms: dict[int, np.ndarray] = {}
    bar = _progress_bar(len(prompts_ids), progress, "sampling")
    try:
        for start in range(0, len(rows), chunk_size):
            chunk = rows[start:start + chunk_size]
            group = list(dict.fromkeys(p for p, _ in chunk))  # distinct prompts, in order
            slot = {p: k for k, p in enumerate(group)}
            for p in list(uniforms):
                if p not in group:
                    del uniforms[p]  # a prompt's rows are contiguous: its stream is done
            for p in group:
                if p not in uniforms:
                    uniforms[p] = _sample_uniforms(seed, streams[p], n, max_new_tokens)
            chunk_uniforms = torch.tensor(np.stack([uniforms[p][j] for p, j in chunk]), dtype=torch.float32,
                                          device=device)
            generated, table = _decode_chunk(model, [prompts_ids[p] for p in group],
                                             [slot[p] for p, _ in chunk], chunk_uniforms, temperature,
                                             top_k, top_p, max_new_tokens, eos, pad, share_prompt_cache, decoder)
            for r, ((p, j), row) in enumerate(zip(chunk, generated)):
                continuations[p][j], steps = _cut_at_eos(row, eos)
                confidences[p][j] = table[r, :steps]
            bar.update(sum(1 for p, j in chunk if j == n - 1))
    finally:
        bar.close()
    return continuations, confidences


#: How sampling decodes: the workbook's own loop (:func:`decode`) or transformers' ``generate`` with the sampler as a
#: logits processor (the way it was done before; kept for models the loop cannot serve, and for the benchmark).
DECODERS = ("loop", "generate")


def _decode_chunk(model, group_prompts: list[Sequence[int]], row_prompt: list[int], uniforms: torch.Tensor,
                  temperature: float, top_k: int | None, top_p: float | None, max_new_tokens: int, eos: int,
                  pad: int, share_prompt_cache: bool, decoder: str = "loop") -> tuple[list[list[int]], np.ndarray]:
    """Decode one chunk: row r continues prompt ``group_prompts[row_prompt[r]]`` with ``uniforms[r]``."""
    if decoder not in DECODERS:
        raise ValueError(f"unknown decoder {decoder!r}; decoders: {', '.join(DECODERS)}")
    if decoder == "loop" and can_decode(model):
        return decode(model, group_prompts, row_prompt, max_new_tokens, eos, pad,
                      _InverseCdfChoice(uniforms, temperature, top_k, top_p), share_prompt_cache)
    device = uniforms.device
    ids, mask = left_pad(group_prompts, pad)
    ids, mask = ids.to(device), mask.to(device)
    expand = torch.tensor(row_prompt, dtype=torch.long, device=device)
    extra = {}
    if share_prompt_cache and ids.shape[1] >= 2 and _accepts_position_ids(model):
        # Run everything but the last prompt token once per distinct prompt, then copy each
        # prompt's cache to its rows; generate() sees the cache and only feeds the last token.
        # Position ids as generate() derives them from the mask, so the cache is what it would build.
        prefix_mask = mask[:, :-1]
        positions = (prefix_mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids[:, :-1], attention_mask=prefix_mask, position_ids=positions, use_cache=True)
        cache = out.past_key_values
        if hasattr(cache, "reorder_cache"):
            cache.reorder_cache(expand)
            extra["past_key_values"] = cache
    sampler = _InverseCdfSampler(uniforms, ids.shape[1], temperature, top_k, top_p)
    gen = model.generate(input_ids=ids[expand], attention_mask=mask[expand], do_sample=False,
                         max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                         temperature=None, top_p=None, top_k=None, logits_processor=[sampler],
                         **_PLAIN_DISTRIBUTION, **extra)
    return gen[:, ids.shape[1]:].tolist(), sampler.table(len(row_prompt))


def _accepts_position_ids(model) -> bool:
    params = inspect.signature(model.forward).parameters.values()
    return any(p.name == "position_ids" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def sample_answers(model, tokenizer, template: PromptTemplate, questions: Sequence[str], n: int,
                   temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None,
                   max_new_tokens: int = 64, seed: int = 0, chunk_size: int = 256,
                   return_confidences: bool = False, share_prompt_cache: bool = True, progress: bool = True,
                   streams: Sequence[int] | None = None) -> list[list[str]] | SampledAnswers:
    """n answers per question by multinomial sampling (docs/metrics.md §3), decoded and cut at EOS.

    temperature, top_k, top_p: applied in that order to the next-token distribution; temperature 0
        is greedy decoding (every sample is the greedy answer). top_k=1 is greedy too, via the sampler.
    chunk_size: at most this many sequences are decoded at once; the prompt's key/value cache is
        computed once per chunk and shared by the chunk's samples of that prompt.
    seed: sample j of question i depends only on (seed, i, j): the same seed gives the same samples
        whatever ``chunk_size`` (see the module docstring for the one floating-point caveat).
    return_confidences: also return, per sample, the confidence of each generated step (probability
        of the most likely token under the plain temperature-1 softmax, whatever temperature/top-k/top-p
        the sample was drawn with, measured along the sample's own tokens; steps = answer tokens plus
        the EOS step) and their mean per sample, as a :class:`SampledAnswers`.
    progress: a tqdm bar over prompts (off with env TQDM_DISABLE=1).
    Returns ``answers[question][sample]`` (a list of n strings per question), or a SampledAnswers.
    """
    prompts = [encode_prompt(tokenizer, template, q) for q in questions]
    _check_sampling_args(n, temperature, top_p, top_k, chunk_size)
    if temperature == 0:
        conts, confs = greedy_with_confidences(model, tokenizer, prompts, max_new_tokens)
        continuations = [[c] * n for c in conts]
        confidences = [[c] * n for c in confs]
    else:
        continuations, confidences = sample_continuations(
            model, tokenizer, prompts, n, temperature, top_p, top_k, max_new_tokens, seed, chunk_size,
            streams=streams, share_prompt_cache=share_prompt_cache, progress=progress)
    answers = [[tokenizer.decode(c, skip_special_tokens=True).strip() for c in per_prompt]
               for per_prompt in continuations]
    if not return_confidences:
        return answers
    mean = np.array([[certainty(c) for c in per_prompt] for per_prompt in confidences]).reshape(len(prompts), n)
    return SampledAnswers(answers, confidences, mean)


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
                            top_k: int | None = None, max_new_tokens: int = 64, seed: int = 0,
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
    _check_sampling_args(n, temperature, top_p, top_k, chunk_size)
    prompts = [encode_prompt(tokenizer, template, q) for q in questions]
    greedy_ids, greedy_confs = greedy_with_confidences(model, tokenizer, prompts, max_new_tokens, batch_size)
    greedy_texts = [tokenizer.decode(c, skip_special_tokens=True).strip() for c in greedy_ids]
    cert = np.array([certainty(c) for c in greedy_confs])
    went_greedy = cert > threshold
    answers = [[text] * n for text in greedy_texts]
    to_sample = [i for i in range(len(prompts)) if not went_greedy[i]]
    if to_sample:
        sampled = sample_answers(model, tokenizer, template, [questions[i] for i in to_sample], n, temperature,
                                 top_p, top_k, max_new_tokens, seed, chunk_size, share_prompt_cache=share_prompt_cache,
                                 progress=progress, streams=to_sample)
        for i, samples in zip(to_sample, sampled):
            answers[i] = samples
    return AdaptiveSamples(answers, cert, went_greedy, greedy_texts, float(threshold))


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


def vllm_engine(name_or_path: str | os.PathLike, seed: int = 0, dtype: str | None = None, **llm_kwargs):
    """A ``vllm.LLM`` on a model folder or Hub name; ``llm_kwargs`` (e.g. ``gpu_memory_utilization``) go to it.

    Its logprobs are asked for in vLLM's raw mode, before temperature, top-k and top-p: the certainty c(x)
    is defined on the plain softmax (:func:`greedy_with_confidences`)."""
    options = {"seed": seed, "dtype": dtype or "auto", "logprobs_mode": "raw_logprobs", **llm_kwargs}
    return _vllm().LLM(model=str(name_or_path), **options)


def load_vllm(name_or_path: str | os.PathLike, dtype: str | None = None, template: str | None = None,
              seed: int = 0, **llm_kwargs) -> VllmModel:
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
        return vllm_engine(model, seed, **llm_kwargs)
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
    from .stations import show_progress

    requests = [{"prompt_token_ids": list(p)} for p in prompts]
    return llm.generate(requests, params, use_tqdm=show_progress(progress))


def _decode_until_eos(tokenizer, token_ids: Sequence[int], eos: int) -> tuple[str, int]:
    """The text before EOS, decoded as the transformers backend decodes it, and the steps that count."""
    kept, steps = _cut_at_eos(list(token_ids), eos)
    return tokenizer.decode(kept, skip_special_tokens=True).strip(), steps


@timed("generation")
def vllm_greedy_with_confidences(model, template: PromptTemplate, questions: Sequence[str], max_new_tokens: int = 64,
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
    eos, _ = _special_ids(tokenizer)
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
                        temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None,
                        max_new_tokens: int = 64, seed: int = 0, prefixes: Sequence[str] | None = None,
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
    _check_sampling_args(n, temperature, top_p, top_k, 1)
    vllm = _vllm()
    llm = _as_llm(model, seed, llm_kwargs)
    tokenizer = llm.get_tokenizer()
    eos, _ = _special_ids(tokenizer)
    prompts = encode_prompts(tokenizer, template, questions, prefixes)
    params = [_plain_sampling_params(vllm, n=n, temperature=temperature, top_p=1.0 if top_p is None else top_p,
                                     top_k=0 if top_k is None else top_k, max_tokens=max_new_tokens,
                                     seed=_request_seed(seed, i))
              for i in range(len(prompts))]
    return [[_decode_until_eos(tokenizer, completion.token_ids, eos)[0] for completion in result.outputs]
            for result in _vllm_generate(llm, prompts, params, progress)]
