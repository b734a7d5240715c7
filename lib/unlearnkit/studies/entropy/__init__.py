"""Entropy optimisation and adaptive temperature (Scholten et al., "A Probabilistic Perspective on Unlearning and
Alignment for Large Language Models", section 5; docs/metrics.md section 3).

The paper's claim: adding λ_f · E_forget[entropy] (+ λ_r · E_retain[entropy], λ_r ≤ 0) to an unlearning loss
makes the model confident on forget questions, so its sampled answers collapse onto one (sd of the sampled
ROUGE-L near 0) with little loss of utility or of diversity elsewhere; and adaptive temperature (decode greedily
where the model is certain) then bounds what sampling can leak. This module trains and samples what the
notebook shows:

1. **Runs** (:func:`study_plan`). The Table 1 runs (``eo_table_runs``), the λ_f sweep of ``eo_method`` at each learning rate of
   ``eo_lr_grid`` (:func:`lambda_f_points`) and the λ_r sweep (:func:`lambda_r_points`). A sweep point that
   equals a run of the profile (``npo`` is λ_f = 0; ``npo_eo`` is λ_f = 1, λ_r = −0.25) reuses that run's model;
   the others are named runs of their own (:func:`sweep_run`), trained once and cached.
2. **Samples.** ``eo_n_samples`` answers to ``eo_max_items`` forget questions per model, scored as in
   notebook 05 (:func:`score_runs`, cached under ``runs/<profile>/seed-<s>/06_entropy_optimisation/cache``).
3. **Measures.** Model utility on ``eo_utility_items`` items per set (:func:`utility`); the mean next-token
   entropy on forget and retain answers along a run (:func:`entropy_along`); self-BLEU of samples on retain,
   real authors and world facts (:func:`diversity`); the same models at other temperatures
   (:func:`temperature_sweep`); the c_T sweep of adaptive temperature (:func:`adaptive_sweep`).
4. **Against the run alone**: which EO points collapse the forget distribution (:func:`collapses`), and Table 1's
   gaps (:func:`table1_gaps`).

The modules, by the studies' one scheme (docs/design.md, [9]): :mod:`.plan` (the runs, settings and questions),
:mod:`.measures`, :mod:`.tables` (what the notebook shows beside its figures), :mod:`.records` (metrics.json and
per_item.json), and by the paper's concept :mod:`.collapse` (EO against the run alone, Table 1) and :mod:`.regime`
(EO where the paper's models are).
"""

from ... import runs  # the run store, as tests reach it
from .collapse import (
    COLLAPSE_ROUGE,
    FINAL,
    REGIME,
    REGIME_EO,
    TABLE1_METHODS,
    Table1Model,
    collapsed,
    collapses,
    curve_pair,
    table1,
    table1_gaps,
    table1_models,
)
from .measures import (
    adaptive_sweep,
    diversity,
    diversity_rows,
    ed_score,
    entropy_along,
    entropy_along_runs,
    model_row,
    sample_stats,
    sweep_table,
    temperature_sweep,
    temperature_table,
    utility,
)
from .plan import (
    DIVERSITY_ROLES,
    ENTROPY_VERSION,
    PAPER_LAMBDA_F,
    PAPER_TABLE1,
    ROUGE_SLACK,
    SD_CUT,
    SD_NEAR_ZERO,
    UTILITY_KEPT,
    RegimePoint,
    StudyPlan,
    SweepPoint,
    forget_rows,
    kept_step,
    lambda_f_points,
    lambda_r_points,
    model_folders,
    paper_points,
    regime_eo_points,
    regime_of_leakage,
    score_runs,
    study_plan,
    sweep_run,
    train,
)
from .records import metrics_entries, per_item, run_meta
from .regime import folder_utility, regime_eo_table
from .tables import curve_bounds, fig3_models, most_leaking

__all__ = [
    "COLLAPSE_ROUGE", "DIVERSITY_ROLES", "ENTROPY_VERSION", "FINAL", "PAPER_LAMBDA_F", "PAPER_TABLE1", "REGIME",
    "REGIME_EO", "ROUGE_SLACK", "RegimePoint", "SD_CUT", "SD_NEAR_ZERO", "StudyPlan", "SweepPoint", "TABLE1_METHODS",
    "Table1Model", "UTILITY_KEPT", "adaptive_sweep", "collapsed", "collapses", "curve_bounds", "curve_pair",
    "diversity", "diversity_rows", "ed_score", "entropy_along", "entropy_along_runs", "fig3_models", "folder_utility",
    "forget_rows", "kept_step", "lambda_f_points", "lambda_r_points", "metrics_entries", "model_folders", "model_row",
    "most_leaking", "paper_points", "per_item", "regime_eo_points", "regime_eo_table", "regime_of_leakage",
    "run_meta", "runs", "sample_stats", "score_runs", "study_plan", "sweep_run", "sweep_table", "table1",
    "table1_gaps", "table1_models", "temperature_sweep", "temperature_table", "train", "utility",
]
