"""NPO (Zhang et al.; docs/metrics.md §4): −(2/β)·mean log σ(−β·(log π_θ(y|x) − log π_ref(y|x))), sequence log-probs
of the true forget answers, mean over examples; + NLL(retain) unless ``npo_retain_term=False``. β = 0.1 is
open-unlearning's default, 0.05 the probabilistic paper's. Logs ``npo_log_ratio``, the mean log-ratio.

open-unlearning: ``src/trainer/unlearn/npo.py`` (``compute_dpo_loss`` with no winner)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import Method, flag, register
from ..shared import log_ratio, retain_nll


def negative_preference(step) -> torch.Tensor:
    beta = step.option("beta")
    ratio = log_ratio(step, "forget")
    step.logs["npo_log_ratio"] = float(ratio.detach().mean())
    return -(2.0 / beta) * F.logsigmoid(-beta * ratio).mean()


NPO = register(Method(
    name="npo",
    paper="Zhang et al. 2024",
    summary="−(2/β)·log σ(−β·ratio(answer)) + α·NLL(retain)",
    forget=negative_preference,
    retain=retain_nll,
    parameters=("ref_model", "beta", "retain_weight", "npo_retain_term"),
    options=(flag("npo_retain_term", True, "add the retain NLL to NPO"),),
    needs_reference=True,
    retain_switch="npo_retain_term",
    forget_reference=("forget",),
    source="src/trainer/unlearn/npo.py",
))
