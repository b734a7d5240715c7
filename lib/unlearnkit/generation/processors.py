"""The logits processors ``generate`` runs with: one that records each step's confidence, and the inverse-CDF
sampler that draws each row's token with its pre-drawn uniform."""

from __future__ import annotations

import numpy as np
import torch

from .shared import max_token_probability

# --------------------------------------------------------------------------- logits processors


class ConfidenceRecorder:
    """A LogitsProcessor that records, per step and row, the probability of the most likely token
    under the unmodified (temperature-1) distribution, and passes the logits on unchanged."""

    def __init__(self) -> None:
        self.steps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.steps.append(max_token_probability(scores))  # stays on the device: no sync per step
        return scores

    def table(self, rows: int) -> np.ndarray:
        """(rows, generated steps) of confidences."""
        if not self.steps:
            return np.zeros((rows, 0))
        return torch.stack(self.steps, dim=1).cpu().double().numpy()


class InverseCdfSampler(ConfidenceRecorder):
    """Draws each row's next token by inverse-CDF sampling with that row's pre-drawn uniform for the
    current step, and returns logits that make the drawn token the only choice (so ``generate`` in
    greedy mode picks it). Also records confidences (see :class:`ConfidenceRecorder`), unless ``record`` is off."""

    def __init__(self, uniforms: torch.Tensor, prompt_width: int, temperature: float, top_k: int | None,
                 top_p: float | None, record: bool = True) -> None:
        super().__init__()
        self.record = record
        self.uniforms = uniforms  # (rows, max_new_tokens), on the model's device
        self.prompt_width = prompt_width
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.record:
            super().__call__(input_ids, scores)
        step = input_ids.shape[1] - self.prompt_width
        probs = filtered_probabilities(scores.float(), self.temperature, self.top_k, self.top_p)
        cdf = probs.cumsum(dim=-1)
        # Scale the uniform by the row's total instead of renormalising: same draw, and a float32
        # total slightly below 1 can never push the target past the last token.
        target = (self.uniforms[:, step] * cdf[:, -1]).unsqueeze(-1)
        # right=True: the first token whose CDF exceeds the target; zero-probability tokens have a
        # CDF equal to their predecessor's and can therefore never be chosen.
        token = torch.searchsorted(cdf, target, right=True).clamp(max=cdf.shape[-1] - 1)
        only_drawn = torch.full_like(scores, float("-inf"))
        return only_drawn.scatter_(1, token, 0.0)


def filtered_probabilities(logits: torch.Tensor, temperature: float, top_k: int | None,
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
