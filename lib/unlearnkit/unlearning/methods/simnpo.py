"""SimNPO (Fan et al., "Simplicity prevails"): NPO without a reference model, on the length-normalised NLL,

    L_forget = −(2/β)·mean_i log σ(β·(NLL_i − δ)),   NLL_i = −(1/|y_i|)·log π_θ(y_i|x_i)

(NLL_i the mean token NLL of forget answer i over its scored tokens, answer and EOS), + α·NLL(retain). β =
``simnpo_beta`` (open-unlearning's 4.5), δ = ``simnpo_delta`` (0); open-unlearning runs it with forget weight
(``gamma``) 0.125 and α = 1 — the profile's ``simnpo`` run sets ``forget_weight: 0.125``. The paper writes the
margin as γ = β·δ. β is its own parameter, not ``beta``: it scales a per-token NLL where NPO's β scales a sequence
log-ratio, and the two defaults (4.5, 0.1) are far apart.

Reduction: per example, then the batch mean (open-unlearning: ``compute_batch_nll`` summed per sequence, divided
by that sequence's count of scored labels, then ``.mean()``: the same). The retain NLL is the workbook's
per-example mean (open-unlearning's ``outputs.loss`` pools the batch's tokens). Logs ``forget_nll``.

open-unlearning: ``src/trainer/unlearn/simnpo.py``; defaults ``configs/trainer/SimNPO.yaml``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import Method, declared, register
from ..shared import mean_nll, retain_nll


def simple_negative_preference(step) -> torch.Tensor:
    beta, delta = step.option("simnpo_beta"), step.option("simnpo_delta")
    nll = mean_nll(step.logits("forget"), step.batch["forget"]["labels"])
    step.logs["forget_nll"] = float(nll.detach().mean())
    return -(2.0 / beta) * F.logsigmoid(beta * (nll - delta)).mean()


SIMNPO = register(Method(
    name="simnpo",
    paper="Fan et al. 2024",
    summary="−(2/β)·log σ(β·(NLL(forget) − δ)) + α·NLL(retain)",
    forget=simple_negative_preference,
    retain=retain_nll,
    parameters=("simnpo_beta", "simnpo_delta", "retain_weight"),
    options=(declared("simnpo_beta"), declared("simnpo_delta")),
    source="src/trainer/unlearn/simnpo.py",
))
