"""KL (docs/metrics.md §4): GA on forget + KL(π_ref ‖ π_θ) on retain inputs, per token over the full next-token
distributions at the answer positions, averaged per example then over the batch. Objective capping applies to its
forget term.

open-unlearning: ``grad_diff.py`` with ``retain_loss_type: KL`` (``compute_kl_divergence`` in ``src/trainer/utils.py``
sums the KL over every position, prompt and padding included, divided by batch × length; here only the answer
positions count)."""

from __future__ import annotations

import torch

from ..registry import Method, register
from ..shared import ascent, mean_kl


def retain_kl(step) -> torch.Tensor:
    labels = step.batch["retain"]["labels"]
    return mean_kl(step.reference("retain")[0], step.logits("retain"), labels).mean()


KL = register(Method(
    name="kl",
    paper="TOFU (Maini et al. 2024)",
    summary="−NLL(forget) + α·KL(π_ref ‖ π_θ)(retain)",
    forget=ascent,
    retain=retain_kl,
    parameters=("ref_model", "retain_weight", "cap_delta", "cap_on"),
    needs_reference=True,
    cappable=True,
    retain_reference=("retain",),
    source="src/trainer/unlearn/grad_diff.py (retain_loss_type KL)",
))
