"""The workbook's own decoding loop around the model's forward pass and its key/value cache, in place of
``generate``, and when a model can be decoded by it."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import numpy as np
import torch

from .processors import filtered_probabilities
from .shared import left_pad, max_token_probability

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
    return accepts_position_ids(model)


def accepts_position_ids(model) -> bool:
    params = inspect.signature(model.forward).parameters.values()
    return any(p.name == "position_ids" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


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
            confidence[rows, step] = max_token_probability(logits[running])
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


def greedy_choice(logits: torch.Tensor, step: int, rows: torch.Tensor) -> torch.Tensor:
    return logits.argmax(dim=-1)


class InverseCdfChoice:
    """``choose`` of :func:`decode` for sampling: each row's token by inverse-CDF sampling with its pre-drawn uniform
    of the step (the draw of :class:`_InverseCdfSampler`)."""

    def __init__(self, uniforms: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None):
        self.uniforms, self.temperature, self.top_k, self.top_p = uniforms, temperature, top_k, top_p

    def __call__(self, logits: torch.Tensor, step: int, rows: torch.Tensor) -> torch.Tensor:
        probs = filtered_probabilities(logits, self.temperature, self.top_k, self.top_p)
        cdf = probs.cumsum(dim=-1)
        target = (self.uniforms[rows, step] * cdf[:, -1]).unsqueeze(-1)
        return torch.searchsorted(cdf, target, right=True).clamp(max=cdf.shape[-1] - 1).squeeze(-1)
