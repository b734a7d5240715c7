"""WGA, weighted gradient ascent (Wang et al., "Rethinking LLM unlearning objectives"): gradient ascent on each forget
token weighted by its own probability, detached,

    L_forget = −(1/N)·Σ_{i,t} w_{i,t}·CE_{i,t},   w_{i,t} = sg(p_θ(y_{i,t} | x_i, y_{i,<t}))^β,

CE_{i,t} = −log p_θ(y_{i,t} | ...), over the N answer tokens (answer and EOS) of the whole batch, + α·NLL(retain).
β = ``wga_beta`` (open-unlearning's 1; β = 0 is plain token-pooled GA). Tokens the model has already unlearned
(p → 0) stop pushing, so the ascent does not run away.

Reduction: pooled over all answer tokens of the batch, as open-unlearning does (``[labels != -100].mean()``), not
the workbook's per-example mean: a long answer weighs more. Under ``accelerate launch`` the pool is the global batch.
The retain NLL is the workbook's per-example mean (open-unlearning's ``outputs.loss`` pools the batch's tokens).

open-unlearning: ``src/trainer/unlearn/wga.py`` and ``compute_wga_loss`` in ``src/trainer/utils.py``; defaults
``configs/trainer/WGA.yaml`` (β 1, α 1, γ 1)."""

from __future__ import annotations

import torch

from ..registry import Method, declared, register
from ..shared import masked_pooled_mean, retain_nll, token_nll


def weighted_ascent(step) -> torch.Tensor:
    ce, mask = token_nll(step.logits("forget"), step.batch["forget"]["labels"])
    weight = torch.exp(-ce.detach()) ** step.option("wga_beta")
    return -masked_pooled_mean(weight * ce, mask)


WGA = register(Method(
    name="wga",
    paper="Wang et al. 2025",
    summary="−mean_t sg(p_t)^β·CE_t (tokens pooled) + α·NLL(retain)",
    forget=weighted_ascent,
    retain=retain_nll,
    parameters=("wga_beta", "retain_weight"),
    options=(declared("wga_beta"),),
    source="src/trainer/unlearn/wga.py",
))
