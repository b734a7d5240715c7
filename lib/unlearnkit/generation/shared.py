"""What every decoder shares: a batch of prompts left-padded, the special ids, the cut at EOS, the sampling
arguments' check, the progress bar and the probability of the most likely token."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..models import pad_token_id


def left_pad(sequences: Sequence[Sequence[int]], pad_token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, s in enumerate(sequences):
        if len(s):
            ids[i, width - len(s):] = torch.tensor(list(s))
            mask[i, width - len(s):] = 1
    return ids, mask


# --------------------------------------------------------------------------- shared helpers

# generate() fills unset options from the model's generation_config; these would change the
# distribution we sample from or measure, so they are pinned to "off".
PLAIN_DISTRIBUTION = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0}


def special_ids(tokenizer) -> tuple[int, int]:
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no EOS token: answers could not be cut")
    pad = pad_token_id(tokenizer)
    return eos, pad


def cut_at_eos(row: list[int], eos: int) -> tuple[list[int], int]:
    """Tokens before the first EOS, and the number of generated steps that count: those tokens plus
    the step that produced EOS (the decision to stop is a generated step too)."""
    if eos in row:
        k = row.index(eos)
        return row[:k], k + 1
    return row, len(row)


def progress_bar(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    from ..stations import show_progress

    return tqdm(total=total, desc=desc, disable=not show_progress(enabled), leave=False)


def check_sampling_args(n: int, temperature: float, top_p: float | None, top_k: int | None,
                         chunk_size: int | None) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (samples per prompt) must be an integer >= 1, got {n!r}")
    if not (temperature >= 0):  # also rejects NaN
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
    if top_p is not None and not (0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer))
                                   or chunk_size < 1):
        raise ValueError(f"chunk_size must be an integer >= 1 (or None: chosen for the device), got {chunk_size!r}")


def max_token_probability(logits: torch.Tensor) -> torch.Tensor:
    """max_v softmax(logits)_v per row, without materialising the softmax: exp(max - logsumexp)."""
    logits = logits.float()
    return torch.exp(logits.max(dim=-1).values - torch.logsumexp(logits, dim=-1))
