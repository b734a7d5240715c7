"""Batched multinomial sampling of many answers per question, for the probabilistic evaluation of
docs/metrics.md §3.

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

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from ..models import PromptTemplate, card_bytes, encode_prompt, in_eval_mode
from ..stations import timed
from .greedy import certainty, greedy_with_confidences
from .loop import InverseCdfChoice, accepts_position_ids, can_decode, decode
from .processors import InverseCdfSampler
from .shared import (
    PLAIN_DISTRIBUTION,
    check_sampling_args,
    cut_at_eos,
    left_pad,
    progress_bar,
    special_ids,
)

# --------------------------------------------------------------------------- sampling


class SampledAnswers(NamedTuple):
    """Samples with their confidences (``return_confidences=True``)."""

    answers: list[list[str]]  # [prompt][sample], decoded, cut at EOS
    token_confidences: list[list[np.ndarray]]  # [prompt][sample] -> (generated steps,)
    mean_confidence: np.ndarray  # (prompts, n): mean of each sample's token confidences


#: The chunk where none is named, on a CPU (and on any device the GPU rule cannot size).
CPU_CHUNK = 256
#: Share of a card's total memory the chunk rule plans for (the rest: the CUDA context, the allocator's slack).
CHUNK_HEADROOM = 0.5
#: The largest chunk the rule chooses: beyond it a step's kernels are already large.
MAX_GPU_CHUNK = 4096


def gpu_chunk_size(card_bytes: int, n_parameters: int, *, num_layers: int, kv_width: int, vocab_size: int,
                   max_tokens: int, dtype_bytes: int, rows: int) -> int:
    """How many sequences :func:`sample_continuations` decodes at once on a GPU of ``card_bytes`` total memory: the
    largest power of two (at most :data:`MAX_GPU_CHUNK`, and no more than the ``rows`` to draw) whose key/value cache
    (2 x layers x ``kv_width`` values per token, ``max_tokens`` tokens, in the model's dtype) and three float32 rows
    of logits per sequence fit :data:`CHUNK_HEADROOM` of the card beside the weights.

    A pure function of the card, the model and the request, never of the memory free at the moment: the same card
    and model draw in the same chunks. The draws do not depend on the chunk (the module docstring's one caveat)."""
    for name, value in (("card_bytes", card_bytes), ("n_parameters", n_parameters), ("num_layers", num_layers),
                        ("kv_width", kv_width), ("vocab_size", vocab_size), ("max_tokens", max_tokens),
                        ("dtype_bytes", dtype_bytes), ("rows", rows)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    per_row = 2 * num_layers * kv_width * max_tokens * dtype_bytes + 3 * 4 * vocab_size
    fits = max(1, int((CHUNK_HEADROOM * card_bytes - n_parameters * dtype_bytes) // per_row))
    chunk = 1 << (min(fits, MAX_GPU_CHUNK).bit_length() - 1)
    return max(1, min(chunk, rows))


def chunk_for(model, chunk_size: int | None, rows: int, max_tokens: int) -> int:
    """The chunk to decode in: ``chunk_size`` where the caller names one; else :func:`gpu_chunk_size`'s on a CUDA
    model (the card's total memory, the model's sizes and dtype), :data:`CPU_CHUNK` anywhere else."""
    if chunk_size is not None:
        return int(chunk_size)
    param = next(model.parameters())
    cfg = getattr(model, "config", None)
    layers, hidden = getattr(cfg, "num_hidden_layers", None), getattr(cfg, "hidden_size", None)
    vocab, heads = getattr(cfg, "vocab_size", None), getattr(cfg, "num_attention_heads", None)
    if param.device.type != "cuda" or not all(isinstance(v, int) for v in (layers, hidden, vocab, heads)):
        return CPU_CHUNK
    head_dim = getattr(cfg, "head_dim", None) or hidden // heads
    kv_width = (getattr(cfg, "num_key_value_heads", None) or heads) * head_dim
    return gpu_chunk_size(card_bytes(param.device), sum(p.numel() for p in model.parameters()), num_layers=layers,
                          kv_width=kv_width, vocab_size=vocab, max_tokens=max_tokens,
                          dtype_bytes=param.element_size(), rows=rows)


def _sample_uniforms(seed: int, stream: int, n: int, steps: int) -> np.ndarray:
    """The uniforms of all n samples of one prompt: row j drives sample j, whatever the chunking."""
    return np.random.default_rng([seed, stream]).random((n, steps))


@timed("generation")
@torch.no_grad()
@in_eval_mode
def sample_continuations(model, tokenizer, prompts_ids: Sequence[Sequence[int]], n: int, temperature: float = 1.0,
                         top_p: float | None = None, top_k: int | None = None, *, max_new_tokens: int,
                         seed: int, chunk_size: int | None = None, streams: Sequence[int] | None = None,
                         share_prompt_cache: bool = True, progress: bool = True, decoder: str = "loop",
                         confidences: bool = True,
                         ) -> tuple[list[list[list[int]]], list[list[np.ndarray]] | None]:
    """n sampled continuations (token ids before EOS) of each prompt, and their per-step confidences (None with
    ``confidences=False``, which skips computing them: the same draws, and on a GPU a third of the time).

    The token-level engine of :func:`sample_answers` (see there and the module docstring). ``decoder`` (one of
    :data:`DECODERS`) decodes with the workbook's own loop or with ``generate``: the same draws either way.
    ``streams[i]`` names prompt i's random stream (default: i), so a caller that samples a subset of
    its prompts can keep each prompt's samples the same. ``share_prompt_cache=False`` repeats the
    prompt for every sample instead of expanding its cache (same samples, slower; for models whose
    cache cannot be reordered).
    """
    check_sampling_args(n, temperature, top_p, top_k, chunk_size)
    if temperature == 0:
        raise ValueError("temperature 0 is greedy decoding: use greedy_with_confidences (sample_answers does)")
    streams = list(range(len(prompts_ids))) if streams is None else list(streams)
    if len(streams) != len(prompts_ids):
        raise ValueError(f"{len(streams)} streams for {len(prompts_ids)} prompts")
    device = next(model.parameters()).device
    eos, pad = special_ids(tokenizer)
    chunk_size = chunk_for(model, chunk_size, n * len(prompts_ids),
                           max((len(p) for p in prompts_ids), default=0) + max_new_tokens)

    # Rows (prompt, sample) in prompt order, prompts sorted by length so a chunk pads little.
    order = sorted(range(len(prompts_ids)), key=lambda i: len(prompts_ids[i]))
    rows = [(p, j) for p in order for j in range(n)]
    continuations: list[list[list[int]]] = [[[] for _ in range(n)] for _ in prompts_ids]
    table_of: list[list[np.ndarray]] = [[np.zeros(0) for _ in range(n)] for _ in prompts_ids]
    uniforms: dict[int, np.ndarray] = {}
    bar = progress_bar(len(prompts_ids), progress, "sampling")
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
                                             top_k, top_p, max_new_tokens, eos, pad, share_prompt_cache, decoder,
                                             confidences)
            for r, ((p, j), row) in enumerate(zip(chunk, generated)):
                continuations[p][j], steps = cut_at_eos(row, eos)
                table_of[p][j] = table[r, :steps]
            bar.update(sum(1 for p, j in chunk if j == n - 1))
    finally:
        bar.close()
    return continuations, (table_of if confidences else None)


#: How sampling decodes: the workbook's own loop (:func:`decode`) or transformers' ``generate`` with the sampler as a
#: logits processor (the way it was done before; kept for models the loop cannot serve, and for the benchmark).
DECODERS = ("loop", "generate")


def _decode_chunk(model, group_prompts: list[Sequence[int]], row_prompt: list[int], uniforms: torch.Tensor,
                  temperature: float, top_k: int | None, top_p: float | None, max_new_tokens: int, eos: int,
                  pad: int, share_prompt_cache: bool, decoder: str = "loop", confidences: bool = True,
                  ) -> tuple[list[list[int]], np.ndarray]:
    """Decode one chunk: row r continues prompt ``group_prompts[row_prompt[r]]`` with ``uniforms[r]``; the table of
    confidences is moved to the host once, at the end (all 0, or no steps, with ``confidences=False``)."""
    if decoder not in DECODERS:
        raise ValueError(f"unknown decoder {decoder!r}; decoders: {', '.join(DECODERS)}")
    if decoder == "loop" and can_decode(model):
        return decode(model, group_prompts, row_prompt, max_new_tokens, eos, pad,
                      InverseCdfChoice(uniforms, temperature, top_k, top_p), share_prompt_cache, confidences)
    device = uniforms.device
    ids, mask = left_pad(group_prompts, pad)
    ids, mask = ids.to(device), mask.to(device)
    expand = torch.tensor(row_prompt, dtype=torch.long, device=device)
    extra = {}
    if share_prompt_cache and ids.shape[1] >= 2 and accepts_position_ids(model):
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
    sampler = InverseCdfSampler(uniforms, ids.shape[1], temperature, top_k, top_p, record=confidences)
    gen = model.generate(input_ids=ids[expand], attention_mask=mask[expand], do_sample=False,
                         max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                         temperature=None, top_p=None, top_k=None, logits_processor=[sampler],
                         **PLAIN_DISTRIBUTION, **extra)
    return gen[:, ids.shape[1]:].tolist(), sampler.table(len(row_prompt))


def sample_answers(model, tokenizer, template: PromptTemplate, questions: Sequence[str], n: int,
                   temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None, *,
                   max_new_tokens: int, seed: int, chunk_size: int | None = None,
                   return_confidences: bool = False, share_prompt_cache: bool = True, progress: bool = True,
                   streams: Sequence[int] | None = None) -> list[list[str]] | SampledAnswers:
    """n answers per question by multinomial sampling (docs/metrics.md §3), decoded and cut at EOS.

    temperature, top_k, top_p: applied in that order to the next-token distribution; temperature 0
        is greedy decoding (every sample is the greedy answer). top_k=1 is greedy too, via the sampler.
    chunk_size: at most this many sequences are decoded at once; the prompt's key/value cache is
        computed once per chunk and shared by the chunk's samples of that prompt. None: 256 on a CPU,
        :func:`gpu_chunk_size`'s on a GPU (:func:`chunk_for`).
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
    check_sampling_args(n, temperature, top_p, top_k, chunk_size)
    if temperature == 0:
        conts, confs = greedy_with_confidences(model, tokenizer, prompts, max_new_tokens)
        continuations = [[c] * n for c in conts]
        confidences = [[c] * n for c in confs]
    else:
        continuations, confidences = sample_continuations(
            model, tokenizer, prompts, n, temperature, top_p, top_k, max_new_tokens=max_new_tokens, seed=seed,
            chunk_size=chunk_size, streams=streams, share_prompt_cache=share_prompt_cache, progress=progress,
            confidences=return_confidences)
    answers = [[tokenizer.decode(c, skip_special_tokens=True).strip() for c in per_prompt]
               for per_prompt in continuations]
    if not return_confidences:
        return answers
    mean = np.array([[certainty(c) for c in per_prompt] for per_prompt in confidences]).reshape(len(prompts), n)
    return SampledAnswers(answers, confidences, mean)
