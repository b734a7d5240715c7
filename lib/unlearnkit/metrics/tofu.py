"""TOFU's metrics, exactly as ``docs/metrics.md`` §2: probability, ROUGE-L recall, truth ratio and its
scores, forget quality (KS test against the retain model) and model utility (harmonic mean of nine).
Everything is batched; per-item values are returned so later notebooks can test against them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..generation import greedy_answers, left_pad
from ..models import PromptTemplate, encode_qa, in_eval_mode, pad_token_id
from ..stations import timed

#: At most this many items per split, as TOFU evaluates.
TOFU_MAX_ITEMS = 300
UTILITY_SPLITS = ("retain", "real_authors", "world_facts")
UTILITY_METRICS = ("probability", "rouge", "truth_ratio_score")


#: The truth ratio's guards (the profile's ``truth_ratio_guard``): the exact ratio, or open-unlearning's, whose
#: denominator is the right answer's probability plus OU_GUARD (docs/metrics.md §9).
TRUTH_RATIO_GUARDS = ("exact", "ou")
OU_GUARD = 1e-10


@torch.no_grad()
def answer_nll(model, tokenizer, template: PromptTemplate, questions: Sequence[str], answers: Sequence[str],
               batch_size: int = 32, *, answer_tokens: str) -> np.ndarray:
    """Mean token cross-entropy of each answer (its tokens plus EOS) given its question; ``answer_tokens`` which
    tokens are the answer's (:func:`unlearnkit.models.encode_qa`).

    exp(-nll) is the length-normalised probability P̄(a|q), the geometric mean of the token probabilities.
    An empty question scores the answer alone, P̄(a).
    """
    if len(questions) != len(answers):
        raise ValueError(f"{len(questions)} questions but {len(answers)} answers")
    encoded = [encode_qa(tokenizer, template, q, a, tokens=answer_tokens) for q, a in zip(questions, answers)]
    pad = pad_token_id(tokenizer)
    return encoded_nll(model, encoded, pad, batch_size)


@timed("scoring")
@torch.no_grad()
@in_eval_mode
def encoded_nll(model, encoded: Sequence[Mapping[str, list[int]]], pad_token_id: int,
                batch_size: int = 32) -> np.ndarray:
    """Mean token cross-entropy over the labelled tokens (labels != -100) of each encoded example,
    batched by length so that padding stays small; the order of ``encoded`` is kept.

    Each batch is padded on the left, with position ids as if it were not, so the labelled tokens (an answer, at the
    end) of every row sit in the last columns: the output head and the softmax run on those columns alone
    (``logits_to_keep``), not on the prompts."""
    device = next(model.parameters()).device
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]["input_ids"]))
    nll = np.empty(len(encoded))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        ids, mask = left_pad([encoded[i]["input_ids"] for i in idx], pad_token_id)
        labels = torch.full_like(ids, -100)
        keep = 1
        for row, i in enumerate(idx):
            row_labels = encoded[i]["labels"]
            labels[row, ids.shape[1] - len(row_labels):] = torch.tensor(row_labels)
            scored = [t for t, label in enumerate(row_labels) if label != -100]
            if scored:  # the logits from the position before the first scored token to the end
                keep = max(keep, len(row_labels) - scored[0] + 1)
        keep = min(keep, ids.shape[1])  # a first token is never predicted: the whole row at most
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # as if unpadded
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                       logits_to_keep=keep).logits.float()
        targets = labels[:, ids.shape[1] - keep + 1:].to(device)
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        scored_mask = targets != -100
        token_nll = -logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1) * scored_mask
        nll[idx] = (token_nll.sum(-1) / scored_mask.sum(-1).clamp(min=1)).cpu().numpy()
    return nll


@timed("scoring")
def rouge_l(targets: Sequence[str], predictions: Sequence[str], measure: str = "recall") -> np.ndarray:
    """ROUGE-L of each prediction against its target with ``rouge_score`` (stemmer on), TOFU's
    choice of recall by default; ``measure="fmeasure"`` is the named option."""
    from rouge_score import rouge_scorer

    if measure not in ("recall", "precision", "fmeasure"):
        raise ValueError(f"unknown ROUGE measure {measure!r}")
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return np.array([getattr(scorer.score(t, p)["rougeL"], measure) for t, p in zip(targets, predictions)])


def truth_ratio(nll_true: np.ndarray, nll_wrong: np.ndarray, guard: str = "exact") -> np.ndarray:
    """R = (geometric mean over wrong answers of P̄(ã_j|q)) / P̄(â|q), per item.

    ``nll_true`` has shape (items,), ``nll_wrong`` (items, wrong answers); both are mean token NLLs. ``guard``
    ``"exact"`` takes the ratio in log space, exactly; ``"ou"`` divides by P̄(â|q) + 1e-10 as open-unlearning does,
    which caps R at about P̄(ã)/1e-10 where the right answer's probability falls below 1e-10 (a collapsed model:
    forget NLLs of 15-40 nats) and moves its forget quality by orders of magnitude (docs/metrics.md §9).
    """
    if guard not in TRUTH_RATIO_GUARDS:
        raise ValueError(f"unknown truth-ratio guard {guard!r}; use one of {', '.join(TRUTH_RATIO_GUARDS)}")
    nll_wrong = np.asarray(nll_wrong, dtype=float)
    nll_true = np.asarray(nll_true, dtype=float)
    if guard == "ou":
        return np.exp(-nll_wrong.mean(axis=1)) / (np.exp(-nll_true) + OU_GUARD)
    return np.exp(-nll_wrong.mean(axis=1) + nll_true)


def truth_ratio_score(ratios: np.ndarray, kind: str, guard: str = "exact") -> float:
    """Forget: mean of min(R, 1/R) (``guard="ou"``: min(R, 1/(R + 1e-10)), open-unlearning's). Retain and world
    knowledge: mean of max(0, 1 − R)."""
    r = np.asarray(ratios, dtype=float)
    if kind == "forget":
        return float(np.mean(np.minimum(r, 1.0 / (r + (OU_GUARD if guard == "ou" else 0.0)))))
    return float(np.mean(np.maximum(0.0, 1.0 - r)))


def forget_quality(ratios_model: Sequence[float], ratios_retain_model: Sequence[float]) -> float:
    """p-value of the two-sided two-sample KS test between the per-item truth ratios of the evaluated
    model and of the retain model, both on the forget split."""
    from scipy import stats  # here, not at import: scipy.stats takes half a second to load, in every process

    return float(stats.ks_2samp(np.asarray(ratios_model), np.asarray(ratios_retain_model)).pvalue)


def ks_statistic(ratios_model: Sequence[float], ratios_retain_model: Sequence[float]) -> float:
    """The two-sample KS statistic D behind forget quality: the largest gap between the two truth-ratio
    distributions' empirical CDFs (0: indistinguishable, 1: disjoint). Where forget quality, its p-value, spans tens
    of decades, D says how many items would have to move."""
    from scipy import stats

    return float(stats.ks_2samp(np.asarray(ratios_model), np.asarray(ratios_retain_model)).statistic)


def model_utility(split_metrics: Mapping[str, Mapping[str, float]]) -> float:
    """Harmonic mean of {probability, ROUGE, truth-ratio score} x {retain, real authors, world facts}."""
    values = []
    for split in UTILITY_SPLITS:
        if split not in split_metrics:
            raise KeyError(f"model utility needs the {split!r} split; have {', '.join(split_metrics)}")
        values += [float(split_metrics[split][m]) for m in UTILITY_METRICS]
    if min(values) <= 0:
        return 0.0
    from scipy import stats

    return float(stats.hmean(values))


def evaluate_split(model, tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]], kind: str,
                   max_items: int | None = TOFU_MAX_ITEMS, batch_size: int = 32, *,
                   max_new_tokens: int, rouge_measure: str = "recall", truth_ratio_guard: str,
                   answer_tokens: str) -> tuple[dict[str, float], dict[str, list]]:
    """TOFU metrics of one split.

    ``kind`` is ``"forget"`` or ``"retain"`` (rows with paraphrased and 5 perturbed answers) or
    ``"knowledge"`` (real authors / world facts: the answer against 3 perturbed answers). ``truth_ratio_guard``
    and ``answer_tokens``: open-unlearning's variants, as named options (:func:`truth_ratio`,
    :func:`unlearnkit.models.encode_qa`). Returns the split's metrics and the per-item values (truth ratios, ROUGE,
    probabilities, answers).
    """
    if kind not in ("forget", "retain", "knowledge"):
        raise ValueError(f"unknown split kind {kind!r}; use forget, retain or knowledge")
    rows = list(rows[:max_items] if max_items else rows)
    questions = [r["question"] for r in rows]
    answers = [r["answer"] for r in rows]
    n_wrong = len(rows[0]["perturbed_answer"])

    nll_answer = answer_nll(model, tokenizer, template, questions, answers, batch_size,
                            answer_tokens=answer_tokens)
    flat_wrong = [w for r in rows for w in r["perturbed_answer"]]
    nll_wrong = answer_nll(model, tokenizer, template, [q for q in questions for _ in range(n_wrong)], flat_wrong,
                           batch_size, answer_tokens=answer_tokens).reshape(len(rows), n_wrong)
    if kind == "knowledge":
        p_true, p_wrong = np.exp(-nll_answer), np.exp(-nll_wrong)
        probability = p_true / (p_true + p_wrong.sum(axis=1))
        ratios = truth_ratio(nll_answer, nll_wrong, truth_ratio_guard)
    else:
        probability = np.exp(-nll_answer)
        nll_para = answer_nll(model, tokenizer, template, questions, [r["paraphrased_answer"] for r in rows], batch_size,
                              answer_tokens=answer_tokens)
        ratios = truth_ratio(nll_para, nll_wrong, truth_ratio_guard)
    generated = greedy_answers(model, tokenizer, template, questions, max_new_tokens, batch_size)
    rouge = rouge_l(answers, generated, rouge_measure)
    metrics = {
        "probability": float(probability.mean()),
        "rouge": float(rouge.mean()),
        "truth_ratio": float(ratios.mean()),
        "truth_ratio_score": truth_ratio_score(ratios, "forget" if kind == "forget" else "retain", truth_ratio_guard),
        "n_items": len(rows),
    }
    per_item = {"truth_ratio": ratios.tolist(), "rouge": rouge.tolist(), "probability": probability.tolist(),
                "generated": generated}
    return metrics, per_item


#: TOFU's evaluation splits: role in the metrics -> (kind, file).
def tofu_eval_splits(forget_split: str) -> dict[str, tuple[str, str]]:
    return {
        "forget": ("forget", f"{forget_split}_perturbed"),
        "retain": ("retain", "retain_perturbed"),
        "real_authors": ("knowledge", "real_authors_perturbed"),
        "world_facts": ("knowledge", "world_facts_perturbed"),
    }


@timed("scoring")
def evaluate_tofu(model, tokenizer, template: PromptTemplate, source, forget_split: str,
                  retain_model_ratios: Sequence[float] | None = None, max_items: int | None = TOFU_MAX_ITEMS,
                  batch_size: int = 32, *, max_new_tokens: int,
                  splits: Sequence[str] | None = None, truth_ratio_guard: str,
                  answer_tokens: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """All TOFU metrics of one model: per split, plus ``model_utility`` and, when the retain model's
    forget truth ratios are given, ``forget_quality``. ``source`` is a :class:`~unlearnkit.data.tofu.TofuSource`;
    ``truth_ratio_guard`` and ``answer_tokens`` as in :func:`evaluate_split`."""
    results: dict[str, Any] = {}
    per_item: dict[str, Any] = {}
    for role, (kind, file) in tofu_eval_splits(forget_split).items():
        if splits is not None and role not in splits:
            continue
        results[role], per_item[role] = evaluate_split(model, tokenizer, template, source.load(file), kind,
                                                       max_items, batch_size, max_new_tokens=max_new_tokens,
                                                       truth_ratio_guard=truth_ratio_guard, answer_tokens=answer_tokens)
    summary: dict[str, float] = {}
    if all(s in results for s in UTILITY_SPLITS):
        summary["model_utility"] = model_utility(results)
    if retain_model_ratios is not None and "forget" in per_item:
        summary["forget_quality"] = forget_quality(per_item["forget"]["truth_ratio"], retain_model_ratios)
    if summary:
        results["summary"] = summary
    return results, per_item
