"""Wang et al., "Unlearning with Control" (docs/metrics.md §5): controls of an unlearning method, the pass
criteria, and calibration before comparison.

Methods run long enough unlearn *too much* ("excessive unlearning"). So each method is controlled by a scalar
that runs from "no unlearning" to "the full run":

- **objective capping** (OC), δ: the run redone with each example's forget NLL capped at δ (``cap_delta`` of
  :class:`unlearning.UnlearningLoss`; GA family only), trained through :func:`pipeline.unlearned_model`;
- **early stopping** (ES), t: the weights notebook 02 kept at step t of the run (:func:`runs.trajectory_steps`);
- **model mixing** (MM), a in [0, 1]: θ = (1 − a)·θ_original + a·θ_unlearned (:func:`unlearning.mix_models`).

Every setting is judged by its PS profile (:mod:`metrics.ps`) on the held-out retain set (never trained on
during unlearning) and the forget set. A setting **passes** when PS-exact and PS-perturb on held-out retain
lose at most ``Tolerances.retain`` (10 %) of their value before unlearning and PS-similar on forget at most
``Tolerances.forget_similar`` (50 %), each over the whole paired bootstrap interval of its loss (:func:`criteria`;
a setting whose verdict flips inside an interval is *uncertain*); among passing settings the best has the lowest
PS-exact on forget. :func:`calibrate` searches a coarse grid, then a fine grid next to the best coarse setting.
Each method is calibrated by model mixing (:func:`calibrate_methods`), and under all three controls
(:func:`control_methods`: which control *works*, :func:`controls_summary`); the calibrated methods are compared
(Table 3, :func:`calibrated_comparison`), uncontrolled (Table 2, :func:`uncontrolled_table`) and on the other
forget splits (:func:`calibrate_splits`).

The modules, by the studies' one scheme (docs/design.md, [9]): :mod:`.records` (metrics.json and per_item.json),
and by the paper's concept :mod:`.controls`, :mod:`.criteria`, :mod:`.sweeps`, :mod:`.search`, :mod:`.methods`
(every control of every method, Tables 2 and 3), :mod:`.splits` and :mod:`.interference`.
"""

from ... import models, runs  # the modules the study uses, as tests reach them
from .controls import (
    CappedRun,
    ControlEvaluator,
    MixingControl,
    capped_run,
    capping_evaluator,
    early_stopping_evaluator,
    mixing_evaluator,
)
from .criteria import (
    CALIBRATION_METRICS,
    CRITERIA,
    FAIL,
    PASS,
    TABLE_METRICS,
    UNCERTAIN,
    RetainFirst,
    Tolerances,
    certainly_fails,
    criteria,
    loss_interval,
    passes,
    relative_loss,
    retain_holds,
    setting_status,
)
from .interference import (
    UNLEARNS_SHARE,
    answer_steps,
    answers_at_steps,
    interference_summary,
    interference_sweeps,
    stopping_by_run,
    unlearns,
)
from .methods import (
    CONTROL_NAMES,
    NOT_CAPPED,
    PAPER_VALUES,
    WORKING_SHARE,
    MethodControls,
    best_control,
    best_row,
    calibrate_capping,
    calibrate_early_stopping,
    calibrated_comparison,
    calibration_from_sweep,
    comparison_profiles,
    control_methods,
    control_model,
    controls_summary,
    largest_step,
    paper_beside_ours,
    status_counts,
    stopping_grid,
    table3_title,
    uncontrolled_table,
    working_share,
)
from .records import (
    per_item_tables,
    run_meta,
)
from .search import (
    Calibration,
    calibrate,
    calibrate_methods,
    calibrate_mixing,
    calibration_summary,
    found_unlearning,
    uncontrolled_loss,
)
from .splits import (
    SplitCalibration,
    calibrate_splits,
    mean_interval,
    split_run,
    splits_table,
)
from .sweeps import (
    best_passing,
    best_setting_table,
    best_settings,
    capping_sweep,
    early_stopping_sweep,
    mixing_grid,
    passing_rows,
    records,
    stopping_judge,
    sweep,
)

__all__ = [
    "models", "runs", "CappedRun", "ControlEvaluator", "MixingControl", "capped_run", "capping_evaluator",
    "early_stopping_evaluator", "mixing_evaluator", "CALIBRATION_METRICS", "CRITERIA", "FAIL", "PASS",
    "TABLE_METRICS", "UNCERTAIN", "RetainFirst", "Tolerances", "certainly_fails", "criteria", "loss_interval",
    "passes", "relative_loss", "retain_holds", "setting_status", "UNLEARNS_SHARE", "answer_steps", "answers_at_steps",
    "interference_summary", "interference_sweeps", "stopping_by_run", "unlearns", "CONTROL_NAMES", "NOT_CAPPED",
    "PAPER_VALUES", "WORKING_SHARE", "MethodControls", "best_control", "best_row", "calibrate_capping",
    "calibrate_early_stopping", "calibrated_comparison", "calibration_from_sweep", "comparison_profiles",
    "control_methods", "control_model", "controls_summary", "largest_step", "paper_beside_ours", "status_counts",
    "stopping_grid", "table3_title", "uncontrolled_table", "working_share", "per_item_tables", "run_meta",
    "Calibration", "calibrate", "calibrate_methods", "calibrate_mixing", "calibration_summary", "found_unlearning",
    "uncontrolled_loss", "SplitCalibration", "calibrate_splits", "mean_interval", "split_run", "splits_table",
    "best_passing", "best_setting_table", "best_settings", "capping_sweep", "early_stopping_sweep", "mixing_grid",
    "passing_rows", "records", "stopping_judge", "sweep",
]
