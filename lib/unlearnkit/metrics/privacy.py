"""open-unlearning's memorisation and privacy metrics (docs/metrics.md §9; the definitions are in the team's
docs/metrics.md §9): exact memorisation, extraction strength, the membership-inference scores LOSS, ZLib, MinK,
MinK++, GradNorm and Reference, their AUC of forget against holdout items, and privleak.

Notation: L = the scored answer positions (labels != -100: the answer tokens and EOS); L⁻ = L without its last
token; lp_t = log p(y_t | x, y_<t), teacher-forced. Every score is per item and "loss-like" (higher = less likely a
training member), so that :func:`attack_auc` labels forget items 0 and holdout items 1 as open-unlearning (OU,
locuslab/open-unlearning) does: an AUC near 1 means the forget items still look like members.

What OU does, read from its code (``src/evals/metrics/{memorization,privacy,utils}.py``, ``src/evals/metrics/mia``),
and how this module follows it:

* Which tokens. OU's ``tokenwise_logprobs`` / ``tokenwise_vocab_logprobs`` drop the last labelled token (EOS) of
  every item, so exact memorisation, extraction strength, MinK, MinK++ and GradNorm run over L⁻. LOSS (and so ZLib
  and Reference) use OU's ``evaluate_probability``, the mean NLL over all of L, EOS included. Same here.
* Extraction strength. OU's loop over k runs to n − 1 only, so an item with no matching suffix scores 1/n, not 0:
  ``no_match="ou"`` reproduces it, the default ``"zero"`` is the definition. OU also scores an item with empty L⁻
  0 (kept in the mean) where exact memorisation drops it (None); ``"ou"`` gives 0, ``"zero"`` NaN (dropped).
* MinK / MinK++ of an item with empty L⁻: OU scores 0 (and keeps it in the AUC); here NaN, dropped by
  :func:`attack_auc`. It only happens when ``max_length`` cuts an answer to its first token.
* ZLib. OU compresses the decoded labelled tokens (``tokenizer.decode(labels[labels != -100],
  skip_special_tokens=True)``: the answer as the tokenizer gives it back, EOS dropped), not the raw answer string;
  :func:`item_scores` passes that text.
* GradNorm. OU takes the p-norm (p = 2) of each parameter tensor's gradient of −mean_{t∈L⁻} lp_t and averages
  those norms over the tensors that got a gradient (``reduction="ou_mean"``); the definition is the 2-norm of the
  whole gradient vector (``"global"``, the default). OU backpropagates into ``.grad`` (it zeroes the model's
  gradients, a side effect its code warns about) and needs batch 1; here ``torch.autograd.grad`` leaves ``.grad``
  alone. Both run in eval mode (OU evaluates a model loaded with ``from_pretrained``, in eval mode).
* privleak = ((1 − AUC_model) − (1 − AUC_retain)) / ((1 − AUC_retain) + 1e-10) × 100 (OU's epsilon), MinK (k 0.4)
  AUCs, AUC_retain = 0.5 when no retain model's scores are given (OU's ``ref_value``). A full model has
  AUC_model ≈ 0.98, hence privleak ≈ −96.
* OU computes log-softmax in the model's dtype; here logits are upcast to float32 first, as everywhere in the
  workbook, and MinK++'s variance is computed centred (the same quantity, without OU's float32 cancellation).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..generation import left_pad
from ..models import PromptTemplate, encode_qa, in_eval_mode, pad_token_id
from ..stations import timed

#: The membership-inference attacks, by the names used as keys of :func:`item_scores` and :data:`AUC_KEYS`.
MIA_ATTACKS = ("loss", "zlib", "mink", "mink++", "gradnorm", "reference")
#: The key of each attack's AUC in :func:`privacy_summary` (JSON- and column-safe: no "+").
AUC_KEYS: dict[str, str] = {
    "loss": "mia_loss_auc",
    "zlib": "mia_zlib_auc",
    "mink": "mia_mink_auc",
    "mink++": "mia_minkpp_auc",
    "gradnorm": "mia_gradnorm_auc",
    "reference": "mia_reference_auc",
}
#: Extraction strength of an item with no matching suffix: 0 (the definition) or 1/n (OU's loop).
EXTRACTION_NO_MATCH = ("zero", "ou")
#: GradNorm: the 2-norm of the whole gradient (the definition) or OU's mean of the per-tensor 2-norms.
GRADNORM_REDUCTIONS = ("global", "ou_mean")
#: MinK and MinK++ keep this share of the lowest token scores (OU's TOFU configs).
MINK_K = 0.4
#: OU's floor on the variance of the next-token log-probability in MinK++.
MINKPP_MIN_VARIANCE = 1e-6
#: OU's epsilon in the denominator of privleak.
PRIVLEAK_EPS = 1e-10


# --------------------------------------------------------------------------- token statistics of a batch


def _positions(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                   torch.Tensor]:
    """Log-probs [B, T-1, V] (float32), targets [B, T-1] (labels shifted: logits at t predict labels at t+1), and the
    masks of L and of L⁻ (L without its last position) over those T-1 positions."""
    if logits.dim() != 3 or labels.shape != logits.shape[:2]:
        raise ValueError(f"logits must be [B, T, V] and labels [B, T]; got {tuple(logits.shape)} and "
                         f"{tuple(labels.shape)}")
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    targets = labels[:, 1:].to(logits.device)
    scored = targets != -100
    # the last scored position of each row: where the running count first reaches the row's total
    last = scored & (scored.long().cumsum(-1) == scored.long().sum(-1, keepdim=True))
    return logp, targets, scored, scored & ~last


def _target_logprobs(logp: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """lp_t of every position [B, T-1] (0 where the target is -100)."""
    return logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over ``mask`` per row; NaN for a row with an empty mask."""
    count = mask.sum(-1)
    total = torch.where(mask, values, torch.zeros_like(values)).sum(-1)
    return torch.where(count > 0, total / count.clamp(min=1), torch.full_like(total, float("nan")))


def _min_k(values: torch.Tensor, mask: torch.Tensor, k: float) -> torch.Tensor:
    """−mean of the ⌊k·n⌋ (at least 1) smallest ``values`` over ``mask`` (n = its size), per row; NaN when n = 0.
    The count is floor(n·k) in double precision, as Python's ``int(n * k)`` in OU."""
    if not 0 < k <= 1:
        raise ValueError(f"k must be in (0, 1], got {k}")
    n = mask.sum(-1)
    m = torch.floor(n.double() * k).long().clamp(min=1)
    ordered = torch.where(mask, values, torch.full_like(values, float("inf"))).sort(dim=-1).values
    chosen = torch.arange(values.shape[-1], device=values.device) < m.unsqueeze(-1)
    score = -torch.where(chosen, ordered, torch.zeros_like(ordered)).sum(-1) / m
    return torch.where(n > 0, score, torch.full_like(score, float("nan")))


def _extraction(matches: torch.Tensor, mask: torch.Tensor, no_match: str) -> torch.Tensor:
    """ES per row from the argmax matches over L⁻: (matched suffix length) / n."""
    if no_match not in EXTRACTION_NO_MATCH:
        raise ValueError(f"unknown no_match {no_match!r}; use one of {', '.join(EXTRACTION_NO_MATCH)}")
    n = mask.sum(-1)
    position = torch.arange(mask.shape[-1], device=mask.device).expand_as(mask)
    last_miss = torch.where(mask & ~matches, position, torch.full_like(position, -1)).max(-1).values
    suffix = (mask & (position > last_miss.unsqueeze(-1))).sum(-1)  # L⁻ positions after the last mismatch
    if no_match == "ou":  # OU's k stops at n - 1: at least one token counts as matched; empty L⁻ scores 0
        suffix = suffix.clamp(min=1)
        return torch.where(n > 0, suffix / n.clamp(min=1), torch.zeros(n.shape, device=n.device))
    return torch.where(n > 0, suffix / n.clamp(min=1), torch.full(n.shape, float("nan"), device=n.device))


def _minkpp_z(logp: torch.Tensor, lp: torch.Tensor) -> torch.Tensor:
    """z_t = (lp_t − μ_t) / σ_t with μ_t, σ_t² the mean and variance of log p_t(v) under p_t [B, T-1].

    σ_t² is computed centred, Σ_v p_t(v) (log p_t(v) − μ_t)², equal to OU's Σ_v p_t(v) (log p_t(v))² − μ_t² but
    without its cancellation in float32 (for a flat distribution the two terms nearly cancel, and OU's form moved
    MinK++ by 5e-5 between a padded and an unpadded forward of the same item)."""
    p = logp.exp()
    mu = (p * logp).sum(-1)
    variance = (p * (logp - mu.unsqueeze(-1)).square()).sum(-1)
    return (lp - mu) / variance.clamp(min=MINKPP_MIN_VARIANCE).sqrt()


def _batch_scores(logits: torch.Tensor, labels: torch.Tensor, k: float, no_match: str) -> dict[str, torch.Tensor]:
    """Every teacher-forced score of a batch from one log-softmax: loss, mink, mink++, exact_memorisation,
    extraction_strength, each [B]."""
    logp, targets, scored, scored_minus = _positions(logits, labels)
    lp = _target_logprobs(logp, targets)
    matches = logits[:, :-1].argmax(-1) == targets
    return {
        "loss": _masked_mean(-lp, scored),
        "mink": _min_k(lp, scored_minus, k),
        "mink++": _min_k(_minkpp_z(logp, lp), scored_minus, k),
        "exact_memorisation": _masked_mean(matches.float(), scored_minus),
        "extraction_strength": _extraction(matches, scored_minus, no_match),
    }


# --------------------------------------------------------------------------- pure, batched scores


def exact_memorisation(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """EM per item [B]: the share of L⁻ positions where the argmax next token is the label (OU's
    ``exact_memorization``); NaN for an item with empty L⁻.

    ``logits`` [B, T, V] and ``labels`` [B, T] as in Hugging Face: the logits at t predict ``labels[:, t + 1]``."""
    _, targets, _, scored_minus = _positions(logits, labels)
    matches = logits[:, :-1].argmax(-1) == targets
    return _masked_mean(matches.float(), scored_minus)


def extraction_strength(logits: torch.Tensor, labels: torch.Tensor, no_match: str = "zero") -> torch.Tensor:
    """ES per item [B] = 1 − k*/n, n = |L⁻|, k* the smallest k whose suffix of argmax predictions over L⁻ equals the
    labels (k* = n when not even the last token matches: ES 0).

    ``no_match="ou"`` reproduces OU's loop, which stops at k = n − 1: 1/n for an item with no matching suffix, and 0
    for an item with empty L⁻ (NaN with ``"zero"``)."""
    _, targets, _, scored_minus = _positions(logits, labels)
    matches = logits[:, :-1].argmax(-1) == targets
    return _extraction(matches, scored_minus, no_match)


def loss_score(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """LOSS per item [B]: the mean NLL over L (EOS included), as OU's ``evaluate_probability``; NaN for empty L."""
    logp, targets, scored, _ = _positions(logits, labels)
    return _masked_mean(-_target_logprobs(logp, targets), scored)


def mink_score(logits: torch.Tensor, labels: torch.Tensor, k: float = MINK_K) -> torch.Tensor:
    """MinK per item [B]: −mean of the ⌊k·|L⁻|⌋ (at least 1) smallest lp_t over L⁻; NaN for empty L⁻ (OU: 0)."""
    logp, targets, _, scored_minus = _positions(logits, labels)
    return _min_k(_target_logprobs(logp, targets), scored_minus, k)


def minkpp_score(logits: torch.Tensor, labels: torch.Tensor, k: float = MINK_K) -> torch.Tensor:
    """MinK++ per item [B]: MinK over z_t = (lp_t − μ_t)/σ_t, μ_t = Σ_v p_t(v) log p_t(v),
    σ_t² = Σ_v p_t(v) (log p_t(v))² − μ_t² clamped at 1e-6; NaN for empty L⁻ (OU: 0)."""
    logp, targets, _, scored_minus = _positions(logits, labels)
    return _min_k(_minkpp_z(logp, _target_logprobs(logp, targets)), scored_minus, k)


def zlib_score(loss: np.ndarray | torch.Tensor, texts: Sequence[str]) -> np.ndarray:
    """ZLib per item: LOSS / len(zlib.compress(text.encode("utf-8"))). OU's text is the decoded labelled tokens
    without special tokens (the answer, no EOS): :func:`item_scores` passes that."""
    if isinstance(loss, torch.Tensor):
        loss = loss.detach().cpu().numpy()
    loss = np.asarray(loss, dtype=float)
    if len(loss) != len(texts):
        raise ValueError(f"{len(loss)} losses but {len(texts)} texts")
    compressed = np.array([len(zlib.compress(text.encode("utf-8"))) for text in texts], dtype=float)
    return loss / compressed


@in_eval_mode
def gradnorm_score(model, encoded: Mapping[str, list[int]], reduction: str = "global") -> float:
    """GradNorm of one encoded item (``input_ids``, ``labels`` as :func:`~unlearnkit.models.encode_qa` gives):
    the 2-norm of the gradient of −mean_{t∈L⁻} lp_t over every floating-point parameter of the model, batch 1.

    Every parameter, whatever its ``requires_grad``: a score must not depend on how the model reached the scorer.
    RMU trains one layer and leaves the others frozen, so the model scored straight after training and the same model
    loaded from the run store (every parameter trainable again) used to get different scores. The flags are set for
    the one gradient and restored.

    ``reduction="global"``: the norm of the whole gradient vector; ``"ou_mean"``: OU's mean over parameter tensors of
    each tensor's 2-norm (tensors the loss does not reach left out, as OU's ``grad is not None``). The gradient is
    taken with ``torch.autograd.grad``: the model's ``.grad`` is not touched, and its train/eval mode is restored.
    NaN for an item with empty L⁻."""
    if reduction not in GRADNORM_REDUCTIONS:
        raise ValueError(f"unknown reduction {reduction!r}; use one of {', '.join(GRADNORM_REDUCTIONS)}")
    labels = list(encoded["labels"])
    scored = [t for t, label in enumerate(labels) if label != -100]
    if len(scored) < 2:  # L⁻ is empty
        return float("nan")
    params = [p for p in model.parameters() if p.is_floating_point()]
    if not params:
        raise ValueError("the model has no floating-point parameter: GradNorm has nothing to differentiate")
    device = params[0].device
    ids = torch.tensor([encoded["input_ids"]], device=device)
    label_tensor = torch.tensor([labels], device=device)
    keep = min(len(labels) - scored[0] + 1, len(labels))  # the logits from the position before the first scored token
    frozen = [p for p in params if not p.requires_grad]
    try:
        for p in frozen:
            p.requires_grad_(True)
        with torch.enable_grad():
            logits = model(input_ids=ids, logits_to_keep=keep).logits
            logp, targets, _, scored_minus = _positions(logits, label_tensor[:, len(labels) - keep:])
            loss = -_masked_mean(_target_logprobs(logp, targets), scored_minus)[0]
            grads = torch.autograd.grad(loss, params, allow_unused=True)
    finally:
        for p in frozen:
            p.requires_grad_(False)
    norms = torch.stack([g.detach().float().norm(p=2) for g in grads if g is not None])
    if reduction == "ou_mean":
        return float(norms.mean())
    return float(norms.square().sum().sqrt())


def attack_auc(forget_scores: np.ndarray | Sequence[float], holdout_scores: np.ndarray | Sequence[float]) -> float:
    """ROC AUC of loss-like scores with forget items labelled 0 and holdout items 1 (OU's ``mia_auc``): 1 when every
    forget item scores below every holdout item (the forget set still looks learnt), 0.5 when indistinguishable.
    NaN scores are dropped; NaN when either side is then empty."""
    from sklearn.metrics import roc_auc_score

    forget = np.asarray(forget_scores, dtype=float)
    holdout = np.asarray(holdout_scores, dtype=float)
    forget, holdout = forget[~np.isnan(forget)], holdout[~np.isnan(holdout)]
    if len(forget) == 0 or len(holdout) == 0:
        return float("nan")
    labels = np.concatenate([np.zeros(len(forget)), np.ones(len(holdout))])
    return float(roc_auc_score(labels, np.concatenate([forget, holdout])))


def privleak(auc_model: float, auc_retain: float = 0.5) -> float:
    """((1 − AUC_model) − (1 − AUC_retain)) / ((1 − AUC_retain) + 1e-10) × 100, OU's form (AUCs in the convention of
    :func:`attack_auc`; OU turns them into MUSE's 1 − AUC). 0 is ideal; strongly negative is under-unlearned (a full
    model, AUC ≈ 0.98 against 0.5, gives about −96), positive over-unlearned."""
    score, reference = 1.0 - float(auc_model), 1.0 - float(auc_retain)
    return (score - reference) / (reference + PRIVLEAK_EPS) * 100.0


# --------------------------------------------------------------------------- one model's scores and the summary


def _decoded_answer(tokenizer, labels: Sequence[int]) -> str:
    """OU's ZLib text: the labelled tokens decoded without special tokens."""
    return tokenizer.decode([t for t in labels if t != -100], skip_special_tokens=True)


@timed("scoring")
def item_scores(model, tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]], *, k: float = MINK_K,
                batch_size: int = 32, gradnorm: bool = True, gradnorm_reduction: str, extraction_no_match: str,
                max_length: int | None = None, answer_tokens: str) -> dict[str, np.ndarray]:
    """Per-item scores of ``rows`` (dicts with ``question`` and ``answer``), one array per key in the order of the
    rows: ``loss``, ``zlib``, ``mink``, ``mink++``, ``gradnorm`` (absent when ``gradnorm`` is False),
    ``exact_memorisation``, ``extraction_strength``.

    One teacher-forced forward per batch, batched by length and padded on the left with position ids as if unpadded
    (as :func:`~unlearnkit.metrics.tofu.encoded_nll`), the output head run only on the answer columns; GradNorm one
    item at a time (batch 1, as OU). The model runs on its own device, in eval mode. ``answer_tokens`` which tokens
    are the answer's (:func:`~unlearnkit.models.encode_qa`: open-unlearning's cut is ``ou_joint``)."""
    if extraction_no_match not in EXTRACTION_NO_MATCH:
        raise ValueError(f"unknown no_match {extraction_no_match!r}; use one of {', '.join(EXTRACTION_NO_MATCH)}")
    if gradnorm and gradnorm_reduction not in GRADNORM_REDUCTIONS:
        raise ValueError(f"unknown reduction {gradnorm_reduction!r}; use one of {', '.join(GRADNORM_REDUCTIONS)}")
    encoded = [encode_qa(tokenizer, template, r["question"], r["answer"], max_length, tokens=answer_tokens)
               for r in rows]
    scores = _forward_scores(model, encoded, pad_token_id(tokenizer), batch_size, k, extraction_no_match)
    out = {"loss": scores["loss"],
           "zlib": zlib_score(scores["loss"], [_decoded_answer(tokenizer, e["labels"]) for e in encoded]),
           "mink": scores["mink"], "mink++": scores["mink++"]}
    if gradnorm:
        out["gradnorm"] = np.array([gradnorm_score(model, e, gradnorm_reduction) for e in encoded], dtype=float)
    out["exact_memorisation"] = scores["exact_memorisation"]
    out["extraction_strength"] = scores["extraction_strength"]
    return out


@torch.no_grad()
@in_eval_mode
def _forward_scores(model, encoded: Sequence[Mapping[str, list[int]]], pad_id: int, batch_size: int, k: float,
                    no_match: str) -> dict[str, np.ndarray]:
    """The teacher-forced scores of :func:`_batch_scores` for every encoded item, in their order."""
    device = next(model.parameters()).device
    keys = ("loss", "mink", "mink++", "exact_memorisation", "extraction_strength")
    out = {key: np.full(len(encoded), np.nan) for key in keys}
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]["input_ids"]))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        ids, mask = left_pad([encoded[i]["input_ids"] for i in idx], pad_id)
        width = ids.shape[1]
        labels = torch.full_like(ids, -100)
        keep = 1
        for row, i in enumerate(idx):
            row_labels = encoded[i]["labels"]
            labels[row, width - len(row_labels):] = torch.tensor(row_labels)
            scored = [t for t, label in enumerate(row_labels) if label != -100]
            if scored:
                keep = max(keep, len(row_labels) - scored[0] + 1)
        keep = min(keep, width)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                       logits_to_keep=keep).logits
        batch = _batch_scores(logits, labels[:, width - keep:].to(device), k, no_match)
        for key in keys:
            out[key][idx] = batch[key].double().cpu().numpy()
    return out


def _nanmean(values: np.ndarray | Sequence[float]) -> float:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else float("nan")


def privacy_summary(forget: Mapping[str, np.ndarray], holdout: Mapping[str, np.ndarray],
                    reference_forget: Mapping[str, np.ndarray] | None = None,
                    reference_holdout: Mapping[str, np.ndarray] | None = None, retain_auc: float | None = None,
                    privleak_attack: str = "mink") -> dict[str, float]:
    """The memorisation and privacy metrics of one model from its :func:`item_scores` on the forget and holdout
    items.

    * ``exact_memorisation``, ``extraction_strength``: means over the forget items (NaN dropped);
    * ``AUC_KEYS[attack]`` for every attack scored on both sides (:func:`attack_auc`); ``reference`` only when the
      reference model's (the retain model's) item scores are given: its score is LOSS_model − LOSS_reference;
    * ``privleak`` from the ``privleak_attack`` AUC (MinK, OU's choice) against ``retain_auc``, the retain model's
      AUC of the same attack (its own ``privacy_summary``), 0.5 when None as OU; ``privleak_retain_auc`` records the
      value used."""
    if privleak_attack not in MIA_ATTACKS:
        raise ValueError(f"unknown attack {privleak_attack!r}; use one of {', '.join(MIA_ATTACKS)}")
    summary: dict[str, float] = {
        "exact_memorisation": _nanmean(forget["exact_memorisation"]),
        "extraction_strength": _nanmean(forget["extraction_strength"]),
    }
    for attack in MIA_ATTACKS:
        if attack in forget and attack in holdout:
            summary[AUC_KEYS[attack]] = attack_auc(forget[attack], holdout[attack])
    if (reference_forget is None) != (reference_holdout is None):
        raise ValueError("the reference attack needs the reference model's scores on both forget and holdout items")
    if reference_forget is not None and reference_holdout is not None:
        summary[AUC_KEYS["reference"]] = attack_auc(
            np.asarray(forget["loss"], dtype=float) - np.asarray(reference_forget["loss"], dtype=float),
            np.asarray(holdout["loss"], dtype=float) - np.asarray(reference_holdout["loss"], dtype=float))
    auc_model = summary.get(AUC_KEYS[privleak_attack], float("nan"))
    auc_retain = 0.5 if retain_auc is None else float(retain_auc)
    summary["privleak"] = privleak(auc_model, auc_retain) if not math.isnan(auc_model) else float("nan")
    summary["privleak_retain_auc"] = auc_retain
    return summary
