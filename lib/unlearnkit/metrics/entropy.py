"""The entropy of a model's answers, teacher-forced: the quantity entropy optimisation (Scholten et al.) minimises on
forget and maximises on retain (docs/metrics.md §3.4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from .. import models


@torch.no_grad()
def answer_entropy(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], batch_size: int = 32) -> float:
    """Mean over ``rows`` of the mean next-token entropy at the positions that predict the ground-truth answer
    (teacher-forced): the quantity ℓ that entropy optimisation minimises on forget and maximises on retain."""
    model.eval()
    encoded = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    values = []
    for start in range(0, len(encoded), batch_size):
        batch = models.collate(encoded[start:start + batch_size], tokenizer.pad_token_id)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        values.append(models.mean_entropy(logits, models.answer_positions(batch["labels"])))
    return float(torch.cat(values).mean())
