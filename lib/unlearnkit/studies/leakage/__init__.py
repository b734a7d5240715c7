"""Leakage under sampling (Scholten et al., "A Probabilistic Perspective on Unlearning and Alignment for Large
Language Models"; docs/metrics.md section 3): what greedy decoding misses, with high-probability bounds.

The method, for each model (the target, the retain model that never saw the forget set, and the models of the
paper's regime):

1. **Models in the regime.** Along each run of ``regime_runs``, the first kept step whose greedy answers name the
   forget key entity as rarely as the retain model's do (:func:`regime_models`, :func:`greedy_along`).
2. **Questions.** At most ``sample_max_items`` forget questions, evenly spaced over the split
   (:func:`forget_rows`).
3. **Samples.** One greedy answer and n multinomial samples per question, drawn by the profile's ``sampler``
   and scored by ROUGE-L and the binary leak judge (:func:`unlearnkit.metrics.sampling.sample_and_score_with`),
   cached per saved model or kept step (:func:`score_model_folder`).
4. **Bounds.** Per question: the ED mean and sd, the expectation and standard-deviation bounds, the binary
   leakage bound M_bin and beside it the Clopper-Pearson lower bound (:func:`bound_table`).
5. **Greedy against sampling.** The questions greedy decoding calls unlearned although sampling leaks
   (:func:`greedy_vs_sampling`), measured against the retain model's rate of lucky guesses
   (:func:`compare_with_reference`, and jointly over the questions by :func:`beyond_guessing`), condensed per
   model (:func:`model_summary`), and per model in the regime (:func:`regime_table`).
6. **Keyword Q&A** (Schwinn et al.'s Harry Potter questions, or their synthetic analogue): plainly or with the
   affirmative response as prefix, a keyword judge, M_bin per question (:func:`run_hp_qa`).

Adaptive temperature, Table 1 and entropy optimisation are in :mod:`unlearnkit.studies.entropy` (notebook 06).

Every bound holds with probability >= 1 - alpha over the draw of the n samples of ONE question. Averages of
per-question bounds over questions are reported as summaries, not as joint guarantees.

The modules, by the studies' one scheme (docs/design.md, [9]): :mod:`.plan` (the columns, reports and curves the
study hands around, the questions), :mod:`.tables` (what the notebook shows), :mod:`.records` (metrics.json and
per_item.json), and by the paper's concept :mod:`.regime`, :mod:`.guessing` and :mod:`.keyword`; :mod:`.results`
(the paper's bounds beside the corrected ones) keeps its old name, which the figure recipes in run stores name.
"""

from ... import runs  # the run store, as tests reach it
from ...metrics.scored import (  # the scoring of saved models, as notebook 05 calls it
    Scored,
    evenly_spaced,
    retain_rows,
    score_many,
    score_model_folder,
    score_models,
    score_saved_model,
)
from .guessing import beyond_guessing, regime_table
from .keyword import (
    REGIME,
    hp_leakage,
    hp_model_of,
    hp_rows,
    hp_table,
    keyword_questions_label,
    run_hp_qa,
    run_hp_qa_both,
    strongest_keyword_leaks,
)
from .plan import (
    COUNT_COLUMNS,
    FLAGGED_COLUMNS,
    KEYWORD_COLUMNS,
    LEAK_COLUMNS,
    Example,
    FlaggedQuestions,
    KeywordQA,
    LeakCurves,
    ModelReport,
    Reports,
    forget_rows,
)
from .records import metrics_entries, per_item, run_meta
from .regime import (
    REGIME_VERSION,
    RegimeModel,
    choose_regime_step,
    coarse_then_fine,
    greedy_along,
    regime_models,
    regime_overview,
    scoring_overview,
)
from .results import AtomCoverage, atom_at_zero_coverage, bound_modes
from .tables import (
    above_greedy_share,
    bound_table,
    bounds_vs_n,
    bounds_vs_n_curves,
    bounds_vs_n_overview,
    compare_with_reference,
    example_answers,
    flagged_questions,
    general_leak_curves,
    greedy_vs_sampling,
    keyword_prefix_comparison,
    model_summary,
    questions_by_spread,
    summarise_models,
    summary_frame,
    understatement_summary,
)

__all__ = [
    "AtomCoverage", "COUNT_COLUMNS", "Example", "FLAGGED_COLUMNS", "FlaggedQuestions", "KEYWORD_COLUMNS", "KeywordQA",
    "LEAK_COLUMNS", "LeakCurves", "ModelReport", "REGIME", "REGIME_VERSION", "RegimeModel", "Reports", "Scored",
    "above_greedy_share", "atom_at_zero_coverage", "beyond_guessing", "bound_modes", "bound_table", "bounds_vs_n",
    "bounds_vs_n_curves", "bounds_vs_n_overview", "choose_regime_step", "coarse_then_fine", "compare_with_reference",
    "evenly_spaced", "example_answers", "flagged_questions", "forget_rows", "general_leak_curves", "greedy_along",
    "greedy_vs_sampling", "hp_leakage", "hp_model_of", "hp_rows", "hp_table", "keyword_prefix_comparison",
    "keyword_questions_label", "metrics_entries", "model_summary", "per_item", "questions_by_spread", "regime_models",
    "regime_overview", "regime_table", "retain_rows", "run_hp_qa", "run_hp_qa_both", "run_meta", "runs", "score_many",
    "score_model_folder", "score_models", "score_saved_model", "scoring_overview", "strongest_keyword_leaks",
    "summarise_models", "summary_frame", "understatement_summary",
]
