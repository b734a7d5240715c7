"""CE-U, cross-entropy unlearning (Yang et al., arXiv:2503.01224): at each forget answer position the model is trained
toward its own next-token distribution with the true token removed,

    L_forget = (1/N)·Σ_{i,t} CE(q_{i,t}, p_θ(· | x_i, y_{i,<t})),   q_{i,t} = softmax(sg(z_{i,t}) with z_{i,t}[y_{i,t}] = −∞),

z the logits, CE(q, p) = −Σ_v q_v log p_v; its gradient on the logits is p − q, which lowers p(y_{i,t}) and moves
that mass over the other tokens in proportion to what the model already gives them. The first ``ceu_ignore_first``
answer tokens of each answer are left out (open-unlearning: the first, after the paper's footnote on its training
settings), so N counts the remaining answer positions (EOS included) of the whole batch. No retain term and no
reference model (open-unlearning's CEU trainer has neither).

Reduction: pooled over those positions of the whole batch, as open-unlearning (``F.cross_entropy`` over the valid
positions, mean), not the workbook's per-example mean.

open-unlearning: ``src/trainer/unlearn/ceu.py`` (``cross_entropy_unlearning_loss``, ``compute_batch_ceu``)."""

from __future__ import annotations

import torch

from ..registry import Method, declared, register
from ..shared import masked_pooled_mean


def ceu_positions(labels: torch.Tensor, ignore_first: int) -> torch.Tensor:
    """The targets [batch, len-1] of CE-U's positions: the shifted labels with each answer's first ``ignore_first``
    scored tokens set to -100 (ignored)."""
    scored = labels != -100
    first = scored & (scored.cumsum(-1) <= ignore_first)
    return labels.masked_fill(first, -100)[:, 1:]


def cross_entropy_unlearning(step) -> torch.Tensor:
    targets = ceu_positions(step.batch["forget"]["labels"], step.option("ceu_ignore_first"))
    mask = targets != -100
    logits = step.logits("forget")[:, :-1][mask].float()  # [N, vocab], the kept positions only
    true = targets[mask].unsqueeze(-1)
    suppressed = logits.detach().scatter(-1, true, float("-inf"))
    q = torch.softmax(suppressed, dim=-1)
    ce = -(q * torch.log_softmax(logits, dim=-1)).sum(-1)
    return masked_pooled_mean(ce, torch.ones_like(ce, dtype=torch.bool))


CEU = register(Method(
    name="ceu",
    paper="Yang et al. 2025",
    summary="CE(softmax(sg(z) without the true token), p_θ) at the answer positions (tokens pooled); no retain term",
    forget=cross_entropy_unlearning,
    parameters=("ceu_ignore_first",),
    options=(declared("ceu_ignore_first"),),
    source="src/trainer/unlearn/ceu.py",
))
