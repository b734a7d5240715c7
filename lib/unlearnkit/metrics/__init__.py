"""Scores: TOFU metrics (:mod:`.tofu`), parameterisation strength (:mod:`.ps`), and in their own modules the
format scores (:mod:`.formats`), n samples per prompt scored (:mod:`.sampling`) and the sample judges
(:mod:`.judges`)."""

from .ps import PSEvaluator, PSProfile, evaluate_ps, ps_profile, ps_scores, search_shortest_prefix  # noqa: F401
from .tofu import (  # noqa: F401
    answer_nll,
    evaluate_split,
    evaluate_tofu,
    forget_quality,
    model_utility,
    rouge_l,
    truth_ratio,
    truth_ratio_score,
)
