"""The run store: what every notebook wrote under ``runs/<profile>/seed-<seed>/``, and the only package that knows
the notebooks' names (:mod:`.names`).

Layout of one profile's runs of one training seed (``seed``; the runs of another seed live beside them, so one seed
never overwrites another)::

    runs/<profile>/seed-<s>/<notebook>.ipynb           the executed notebooks (the runner writes them)
    runs/<profile>/seed-<s>/<notebook>/metrics.json    results {model: {split: {metric: value}}} and "meta"
    runs/<profile>/seed-<s>/<notebook>/per_item.json   per-item values beside them
    runs/<profile>/seed-<s>/<notebook>/cache/          cached per-model results (:func:`cached_json`)
    runs/<profile>/seed-<s>/models/<name>/             saved models: base, target, retainXX, unlearned-<run>, ...
    runs/<profile>/seed-<s>/figures/                   figures, where they do not go to figures/ (:func:`figures_dir`)
    runs/<profile>/findings.json                       the findings of every seed present, judged across them

Every function takes the run's :class:`~unlearnkit.config.Params`, whose ``profile`` and ``seed`` name the store.
Notebooks talk to each other only through these files, so any one of them can be rerun alone.

**One cache rule.** A cached result is keyed by a hash of everything it depends on: the identity of each
model involved (:func:`model_identity`: the hash of the recipe that made it, recorded when it was saved), the
items, the settings, and a version constant that a scorer bumps when its output changes. Never by file times,
never by hashing source code.

One module per job, every name re-exported here (``runs.write_metrics``, ``runs.LEAKAGE``): :mod:`.names` (the
notebooks), :mod:`.locks` (locks and atomic writes), :mod:`.layout` (where a seed's runs live), :mod:`.result_files`
(metrics.json and per_item.json), :mod:`.agreement` (:func:`check_agrees`), :mod:`.executed` (executed notebooks
and evaluations), :mod:`.saved` (saved models and recipes), :mod:`.cache` (:func:`cached_json`) and :mod:`.committed`
(the committed mirror of each seed's results).
"""

from .agreement import (
    RESULT_NEUTRAL,
    StoreDisagrees,
    check_agrees,
)
from .cache import (
    cached_json,
)
from .committed import (
    PER_ITEM,
    PROVENANCE,
    VOLATILE,
    committed_seeds,
    mirror,
    mirror_store,
    publishes,
    results_dir,
    writes_committed,
)
from .executed import (
    EVAL,
    EVAL_NOTEBOOK,
    evaluations,
    executed_notebook,
)
from .layout import (
    DATA_SEED_INFIX,
    FIGURE_PROFILE,
    FINDINGS_ACROSS_SEEDS,
    RUNNING_MARK,
    SEED_PREFIX,
    figures_dir,
    in_progress,
    is_reference_seed,
    profile_dir,
    reference_data_seed,
    reference_draw,
    reference_seed,
    run_it_first,
    seed_at_work,
    seeds,
    store,
)
from .locks import (
    atomic_write_bytes,
    atomic_write_text,
    file_lock,
)
from .names import (
    ALIGNMENT,
    CONTROLS,
    DATA_TOUR,
    ENTROPY,
    FINDINGS,
    FINETUNE,
    FORMATS,
    LEAKAGE,
    METRIC_TRUST,
    NOTEBOOK_SECTIONS,
    ROBUSTNESS,
    UNLEARNED_PREFIX,
    UNLEARNING,
    keys_read,
    notebook_key,
    unlearning_notebook,
)
from .result_files import (
    gpu_micro_batches,
    has_metrics,
    notebook_dir,
    read_metrics,
    read_per_item,
    unlearning_runs,
    write_metrics,
    write_per_item,
)
from .saved import (
    exclusive,
    history,
    is_saved,
    load_saved,
    locate,
    mixed_identity,
    model_dir,
    model_identity,
    require_saved,
    retain_model,
    saved_models,
    saved_recipe,
    sparse_steps,
    trajectory_dir,
    trajectory_steps,
    unlearned_name,
)

__all__ = [
    "RESULT_NEUTRAL", "StoreDisagrees", "check_agrees", "cached_json", "PER_ITEM", "PROVENANCE",
    "VOLATILE", "committed_seeds", "mirror", "mirror_store", "publishes", "results_dir",
    "writes_committed", "EVAL", "EVAL_NOTEBOOK", "evaluations", "executed_notebook", "DATA_SEED_INFIX",
    "FIGURE_PROFILE", "FINDINGS_ACROSS_SEEDS", "RUNNING_MARK", "SEED_PREFIX", "figures_dir",
    "in_progress", "is_reference_seed", "profile_dir", "reference_data_seed", "reference_draw",
    "reference_seed", "run_it_first", "seed_at_work", "seeds", "store", "atomic_write_bytes", "atomic_write_text",
    "file_lock", "ALIGNMENT", "CONTROLS", "DATA_TOUR", "ENTROPY", "FINDINGS", "FINETUNE", "FORMATS",
    "LEAKAGE", "METRIC_TRUST", "NOTEBOOK_SECTIONS", "ROBUSTNESS", "UNLEARNED_PREFIX", "UNLEARNING",
    "keys_read", "notebook_key", "unlearning_notebook", "gpu_micro_batches", "has_metrics",
    "notebook_dir", "read_metrics", "read_per_item", "unlearning_runs", "write_metrics", "write_per_item",
    "exclusive", "history", "is_saved", "load_saved", "locate", "mixed_identity", "model_dir",
    "model_identity", "require_saved", "retain_model", "saved_models", "saved_recipe", "sparse_steps",
    "trajectory_dir", "trajectory_steps", "unlearned_name",
]
