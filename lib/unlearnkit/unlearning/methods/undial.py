"""UNDIAL, unlearning by self-distillation with adjusted logits (Dong et al.): the trained model is distilled toward
the frozen start model (the teacher, π_ref) with the true token's logit lowered by β,

    L_forget = (1/N)·Σ_{i,t} CE(softmax(z^ref_{i,t} − β·onehot(y_{i,t})), p_θ(· | x_i, y_{i,<t})),

z^ref the teacher's logits, CE(q, p) = −Σ_v q_v log p_v. β = ``undial_beta`` (open-unlearning's 10). No retain term
by default (open-unlearning runs it with α = 0); ``undial_retain_term=True`` adds α·NLL(retain).

Positions (``undial_positions``, :data:`UNDIAL_POSITIONS`): ``answer`` (default, the definition): the N positions
predicting an answer token (answer and EOS) of the whole batch, pooled; ``all_ou``, open-unlearning's code as it
runs: the mean over every position of the padded batch, prompt and padding included, B·(len − 1) of them. Its
one-hot is built by indexing with the shifted labels, where -100 (prompt, padding) wraps to token id vocab − 100,
so at those positions the teacher's logit of that token is the one lowered; ``all_ou`` reproduces that too.

Reduction: pooled over the positions of the whole batch, as open-unlearning (``loss.mean()``), not the workbook's
per-example mean.

open-unlearning: ``src/trainer/unlearn/undial.py`` and ``compute_undial_loss`` in ``src/trainer/utils.py``; defaults
``configs/trainer/UNDIAL.yaml`` (β 10, α 0, γ 1, lr 1e-4, 10 epochs: the default profile trains it on the shared
schedule, the paper profile's ``undial`` run at lr 1e-4)."""

from __future__ import annotations

import torch

from ..registry import Method, declared, flag, register
from ..shared import masked_pooled_mean, retain_nll

#: Where UNDIAL's cross-entropy is averaged: the answer positions, or every position as open-unlearning's code does.
UNDIAL_POSITIONS = ("answer", "all_ou")
#: The token id a label of -100 indexes in open-unlearning's one-hot, counted from the end of the vocabulary.
IGNORE_INDEX = -100


def adjusted_targets(ref_logits: torch.Tensor, targets: torch.Tensor, beta: float) -> torch.Tensor:
    """softmax(z^ref − β·onehot(y)) per position; ``targets`` are token ids (negative ones index from the end, as in
    open-unlearning's advanced indexing)."""
    vocab = ref_logits.size(-1)
    index = torch.where(targets < 0, targets + vocab, targets).unsqueeze(-1)
    lowered = ref_logits.float().scatter_add(-1, index, torch.full_like(index, -float(beta), dtype=torch.float32))
    return torch.softmax(lowered, dim=-1)


def distill(step) -> torch.Tensor:
    labels = step.batch["forget"]["labels"]
    beta = step.option("undial_beta")
    targets = labels[:, 1:]
    logits = step.logits("forget")[:, :-1]
    ref_logits = step.reference("forget")[0][:, :-1]
    if step.option("undial_positions") == "answer":
        mask = targets != IGNORE_INDEX  # the positions predicting an answer token (answer_positions)
        logits, ref_logits, targets = logits[mask], ref_logits[mask], targets[mask]
    q = adjusted_targets(ref_logits, targets, beta)
    ce = -(q * torch.log_softmax(logits.float(), dim=-1)).sum(-1)
    return masked_pooled_mean(ce, torch.ones_like(ce, dtype=torch.bool))


UNDIAL = register(Method(
    name="undial",
    paper="Dong et al. 2024",
    summary="CE(softmax(z_ref − β·onehot(y)), p_θ) at the answer positions (tokens pooled); no retain term by default",
    forget=distill,
    retain=retain_nll,
    parameters=("ref_model", "undial_beta", "undial_positions", "retain_weight", "undial_retain_term"),
    options=(declared("undial_beta"), declared("undial_positions", UNDIAL_POSITIONS),
             flag("undial_retain_term", False, "add the retain NLL to UNDIAL (open-unlearning: α = 0)")),
    needs_reference=True,
    retain_switch="undial_retain_term",
    forget_reference=("forget",),
    source="src/trainer/unlearn/undial.py",
))
