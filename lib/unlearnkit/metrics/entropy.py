"""The entropy of a model's answers, teacher-forced: the quantity entropy optimisation (Scholten et al.) minimises on
forget and maximises on retain (docs/metrics.md §3.4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from .. import models


@torch.no_grad()
def answer_measures(model, tokenizer, template, rows: Sequence[Mapping[str, Any]],
                    batch_size: int = 32) -> dict[str, float]:
    """Mean over ``rows`` of two teacher-forced measures at the positions that predict the ground-truth answer, from
    one forward pass: ``entropy``, the mean next-token entropy (the quantity ℓ that entropy optimisation minimises
    on forget and maximises on retain), and ``confidence``, the mean probability of the most likely next token (the
    confidence of token predictions of Scholten et al.'s Fig. 5b)."""
    model.eval()
    encoded = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    entropies, confidences = [], []
    for start in range(0, len(encoded), batch_size):
        batch = models.collate(encoded[start:start + batch_size], tokenizer.pad_token_id)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        positions = models.answer_positions(batch["labels"])
        entropies.append(models.mean_entropy(logits, positions))
        top = torch.softmax(logits.float(), dim=-1).amax(-1)
        mask = positions.to(top.dtype)
        confidences.append((top * mask).sum(-1) / mask.sum(-1).clamp(min=1))
    return {"entropy": float(torch.cat(entropies).mean()), "confidence": float(torch.cat(confidences).mean())}


def answer_entropy(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], batch_size: int = 32) -> float:
    """Mean over ``rows`` of the mean next-token entropy at the positions that predict the ground-truth answer
    (teacher-forced): the quantity ℓ that entropy optimisation minimises on forget and maximises on retain."""
    return answer_measures(model, tokenizer, template, rows, batch_size)["entropy"]
