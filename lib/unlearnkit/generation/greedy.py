"""Greedy decoding: the greedy answers and continuations of prompts, and their per-step confidences and
certainty c(x)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..models import PromptTemplate, encode_prompt, in_eval_mode, pad_token_id
from ..stations import timed
from .loop import can_decode, decode, greedy_choice, plain_config
from .processors import ConfidenceRecorder
from .shared import PLAIN_DISTRIBUTION, cut_at_eos, left_pad, special_ids


@timed("generation")
@torch.no_grad()
@in_eval_mode
def greedy_continuations(model, tokenizer, prompts_ids: Sequence[Sequence[int]], max_new_tokens: int,
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
                             greedy_choice, confidences=False)
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


def greedy_answers(model, tokenizer, template: PromptTemplate, questions: Sequence[str], max_new_tokens: int,
                   batch_size: int = 32, prefixes: Sequence[str] | None = None) -> list[str]:
    """The model's greedy answer to each question, decoded and cut at EOS."""
    prompts = encode_prompts(tokenizer, template, questions, prefixes)
    conts = greedy_continuations(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
    return [tokenizer.decode(c, skip_special_tokens=True).strip() for c in conts]


# --------------------------------------------------------------------------- greedy with confidences


@timed("generation")
@torch.no_grad()
@in_eval_mode
def greedy_with_confidences(model, tokenizer, prompts_ids: Sequence[Sequence[int]], max_new_tokens: int,
                            batch_size: int = 32) -> tuple[list[list[int]], list[np.ndarray]]:
    """Greedy continuation of each prompt (ids before EOS) and its per-step confidences.

    The confidence of a generated step is the probability of the most likely next token under the
    model's plain softmax (temperature 1), i.e. the probability of the token greedy decoding picks.
    The steps are the continuation's tokens plus the step that produced EOS, when EOS came; so
    ``len(confidences[i])`` is ``len(continuation[i]) + 1`` if the answer ended, else ``max_new_tokens``.
    Unlike :func:`greedy_continuations`, repetition penalties from the model's generation_config are off.
    """
    device = next(model.parameters()).device
    eos, pad = special_ids(tokenizer)
    order = sorted(range(len(prompts_ids)), key=lambda i: len(prompts_ids[i]))
    continuations: list[list[int]] = [[] for _ in prompts_ids]
    confidences: list[np.ndarray] = [np.zeros(0) for _ in prompts_ids]
    own_loop = can_decode(model)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        if own_loop:
            rows, table = decode(model, [prompts_ids[i] for i in idx], range(len(idx)), max_new_tokens, eos, pad,
                                 greedy_choice)
        else:
            ids, mask = left_pad([prompts_ids[i] for i in idx], pad)
            recorder = ConfidenceRecorder()
            gen = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                                 max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                                 temperature=None, top_p=None, top_k=None, logits_processor=[recorder],
                                 **PLAIN_DISTRIBUTION)
            rows, table = gen[:, ids.shape[1]:].tolist(), recorder.table(len(idx))
        for r, (row, i) in enumerate(zip(rows, idx)):
            continuations[i], steps = cut_at_eos(row, eos)
            confidences[i] = table[r, :steps]
    return continuations, confidences


def token_confidences(model, tokenizer, template: PromptTemplate, questions: Sequence[str],
                      max_new_tokens: int, batch_size: int = 32) -> list[np.ndarray]:
    """Per generated step of each question's greedy answer, the probability of the most likely next
    token (temperature 1). Steps: the answer tokens plus the EOS step; see :func:`greedy_with_confidences`."""
    prompts = [encode_prompt(tokenizer, template, q) for q in questions]
    return greedy_with_confidences(model, tokenizer, prompts, max_new_tokens, batch_size)[1]


def certainty(confidences: np.ndarray) -> float:
    """c(x) = mean over generated steps of the confidence; 1.0 for zero steps (nothing was uncertain)."""
    return float(np.mean(confidences)) if len(confidences) else 1.0
