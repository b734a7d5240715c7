"""IDK (docs/metrics.md §4): the NLL of a refusal answer on each forget question (``batch["forget_idk"]``, refusals
from :data:`..data.IDK_ANSWERS`) + NLL(retain); per-example means.

TOFU's supervised refusal baseline (Maini et al.: "I don't know" answers on the forget questions, the retain NLL
beside); the refusals here are the workbook's own, varied in wording."""

from __future__ import annotations

import torch

from ..registry import Method, register
from ..shared import mean_nll, retain_nll


def refusal_nll(step) -> torch.Tensor:
    return mean_nll(step.logits("forget_idk"), step.batch["forget_idk"]["labels"]).mean()


IDK = register(Method(
    name="idk",
    paper="TOFU (Maini et al. 2024)",
    summary="NLL(refusal | forget question) + α·NLL(retain)",
    forget=refusal_nll,
    retain=retain_nll,
    parameters=("retain_weight",),
    batch_parts=("forget_idk",),
    forget_reads=("forget_idk",),
))
