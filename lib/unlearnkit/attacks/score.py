"""What an attack is judged by: a model's forget scores on a fixed subset of the forget items.

Forget ROUGE-L (greedy), the answer's probability and truth ratio (TOFU, :mod:`unlearnkit.metrics.tofu`; also in
open-unlearning's form 1 / (1 + R), the item mean, for the meta-evaluation of notebook 09), extraction
strength and the MinK membership-inference AUC of forget against holdout (open-unlearning,
:mod:`unlearnkit.metrics.privacy`), computed as notebooks 01 and 02 compute them, on ``attack_items`` items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..config import Params
from ..generation import greedy_answers
from ..metrics import privacy as privacy_metrics
from ..metrics import tofu

#: The forget scores every attack reports, in the order tables show them.
SCORES = ("rouge", "probability", "truth_ratio", "truth_ratio_ou", "extraction_strength", "mink_auc")
#: Higher means more of the forget set is back, for each score (truth ratio: lower means the right answer is
#: preferred, so recovered knowledge lowers it; its open-unlearning form p_c / (p_c + p_w) = 1 / (1 + R) rises; MinK
#: AUC: forget items look more like training members).
RECOVERS_UP = {"rouge": True, "probability": True, "truth_ratio": False, "truth_ratio_ou": True,
               "extraction_strength": True, "mink_auc": True}


def attack_rows(rows: Sequence[Mapping[str, Any]], n: int | None) -> list[dict[str, Any]]:
    """``n`` rows spread evenly over ``rows`` (all when ``n`` is None or larger): a fixed subset every attack scores."""
    rows = [dict(r) for r in rows]
    if not n or n >= len(rows):
        return rows
    return [rows[i] for i in np.linspace(0, len(rows) - 1, n).round().astype(int)]


def forget_scores(loaded, rows: Sequence[Mapping[str, Any]], holdout: Sequence[Mapping[str, Any]],
                  params: Params) -> dict[str, float]:
    """The forget scores (:data:`SCORES`) of one model on ``rows`` (forget items with paraphrased and perturbed
    answers) against ``holdout`` (authors no model trained on) for the MinK AUC."""
    model, tokenizer, template = loaded[:3]
    metrics, per_item = tofu.evaluate_split(model, tokenizer, template, list(rows), "forget", None, params.eval_batch_size,
                                     max_new_tokens=params.max_new_tokens, truth_ratio_guard=params.truth_ratio_guard,
                                     answer_tokens=params.answer_tokens)
    settings = {"k": params.mia_k, "batch_size": params.eval_batch_size, "gradnorm": False,
                "gradnorm_reduction": params.gradnorm_reduction, "extraction_no_match": params.extraction_no_match,
                "answer_tokens": params.answer_tokens}
    forget = privacy_metrics.item_scores(model, tokenizer, template, rows, **settings)
    held = privacy_metrics.item_scores(model, tokenizer, template, holdout, **settings)
    ratios = np.asarray(per_item["truth_ratio"], dtype=float)
    return {"rouge": metrics["rouge"], "probability": metrics["probability"], "truth_ratio": metrics["truth_ratio"],
            "truth_ratio_ou": float(np.mean(1.0 / (1.0 + ratios))),
            "extraction_strength": float(np.mean(forget["extraction_strength"])),
            "mink_auc": float(privacy_metrics.attack_auc(forget["mink"], held["mink"]))}


def greedy_rouge(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], params: Params) -> float:
    """Mean greedy ROUGE-L recall on ``rows``: the cheap score a relearning curve is drawn with."""
    answers = greedy_answers(model, tokenizer, template, [r["question"] for r in rows], params.max_new_tokens,
                             params.eval_batch_size)
    return float(tofu.rouge_l([r["answer"] for r in rows], answers).mean())
