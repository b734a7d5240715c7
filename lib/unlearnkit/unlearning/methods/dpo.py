"""DPO (Rafailov et al.; docs/metrics.md §4): −mean log σ(β·((log π_θ(w) − log π_ref(w)) − (log π_θ(l) − log π_ref(l)))),
w the refusal (``batch["forget_idk"]``), l the true forget answer, sequence log-probs, mean over examples;
+ NLL(retain) unless ``dpo_retain_term=False``. Logs ``dpo_margin``, the mean margin.

open-unlearning: ``src/trainer/unlearn/dpo.py`` with ``compute_dpo_loss`` of ``src/trainer/utils.py``, which scales the
same term by 2/β (−(2/β)·log σ(...)); the workbook keeps Rafailov et al.'s scale (AltPO, :mod:`.altpo`, takes OU's)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import Method, flag, register
from ..shared import log_ratio, retain_nll


def preference(step) -> torch.Tensor:
    margin = log_ratio(step, "forget_idk") - log_ratio(step, "forget")
    step.logs["dpo_margin"] = float(margin.detach().mean())
    return -F.logsigmoid(step.option("beta") * margin).mean()


DPO = register(Method(
    name="dpo",
    paper="Rafailov et al. 2023; TOFU",
    summary="−log σ(β·(ratio(refusal) − ratio(answer))) + α·NLL(retain)",
    forget=preference,
    retain=retain_nll,
    parameters=("ref_model", "beta", "retain_weight", "dpo_retain_term"),
    options=(flag("dpo_retain_term", True, "add the retain NLL to DPO"),),
    needs_reference=True,
    batch_parts=("forget_idk",),
    retain_switch="dpo_retain_term",
    forget_reads=("forget_idk", "forget"),
    forget_reference=("forget_idk", "forget"),
    source="src/trainer/unlearn/dpo.py",
))
