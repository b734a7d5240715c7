"""SatImp (Yang et al., "Exploring criteria of loss reweighting to enhance LLM unlearning"): gradient ascent on each
forget token weighted by saturation and importance, detached,

    L_forget = −(1/N)·Σ_{i,t} w_{i,t}·CE_{i,t},   w_{i,t} = sg(p_{i,t}^β1 · (1 − p_{i,t})^β2),

p_{i,t} = p_θ(y_{i,t} | x_i, y_{i,<t}), over the N answer tokens (answer and EOS) of the whole batch, + α·NLL(retain).
β1 = ``satimp_beta1`` (5), β2 = ``satimp_beta2`` (1); open-unlearning runs it with forget weight (``gamma``) 0.1 and
α = 1 — the profile's ``satimp`` run sets ``forget_weight: 0.1``.

Reduction: pooled over all answer tokens of the batch, as open-unlearning does, not the workbook's per-example mean.
Under ``accelerate launch`` the pool is the global batch. The retain NLL is the workbook's per-example mean.

open-unlearning: ``src/trainer/unlearn/satimp.py`` and ``compute_satimp_loss`` in ``src/trainer/utils.py``; defaults
``configs/trainer/SatImp.yaml`` (β1 5, β2 1, α 1, γ 0.1)."""

from __future__ import annotations

import torch

from ..registry import Method, declared, register
from ..shared import masked_pooled_mean, retain_nll, token_nll


def reweighted_ascent(step) -> torch.Tensor:
    ce, mask = token_nll(step.logits("forget"), step.batch["forget"]["labels"])
    p = torch.exp(-ce.detach())
    weight = p ** step.option("satimp_beta1") * (1 - p) ** step.option("satimp_beta2")
    return -masked_pooled_mean(weight * ce, mask)


SATIMP = register(Method(
    name="satimp",
    paper="Yang et al. 2025",
    summary="−mean_t sg(p_t^β1·(1 − p_t)^β2)·CE_t (tokens pooled) + α·NLL(retain)",
    forget=reweighted_ascent,
    retain=retain_nll,
    parameters=("satimp_beta1", "satimp_beta2", "retain_weight"),
    options=(declared("satimp_beta1"), declared("satimp_beta2")),
    source="src/trainer/unlearn/satimp.py",
))
