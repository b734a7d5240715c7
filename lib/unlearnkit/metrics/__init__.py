"""Scores: TOFU metrics (:mod:`.tofu`), parameterisation strength (:mod:`.ps`), and in their own modules the
format scores (:mod:`.formats`), n samples per prompt scored (:mod:`.sampling`), the sample judges
(:mod:`.judges`) and which metric to trust (:mod:`.meta_eval`: faithfulness AUC, R, Q, leak@k)."""

from .meta_eval import (
    faithfulness_auc,
    harmonic_mean,
    leak_at_k,
    leak_at_k_curve,
    leak_at_k_curves,
    quantisation_q,
    relearning_r,
    summarise,
)
from .ps import PSEvaluator, PSProfile, evaluate_ps, ps_profile, ps_scores, search_shortest_prefix
from .tofu import (
    answer_nll,
    evaluate_split,
    evaluate_tofu,
    forget_quality,
    model_utility,
    rouge_l,
    truth_ratio,
    truth_ratio_score,
)

__all__ = [
    "faithfulness_auc", "harmonic_mean", "leak_at_k", "leak_at_k_curve", "leak_at_k_curves",
    "quantisation_q", "relearning_r", "summarise", "PSEvaluator", "PSProfile", "evaluate_ps",
    "ps_profile", "ps_scores", "search_shortest_prefix", "answer_nll", "evaluate_split", "evaluate_tofu",
    "forget_quality", "model_utility", "rouge_l", "truth_ratio", "truth_ratio_score",
]
