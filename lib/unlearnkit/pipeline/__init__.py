"""The cached steps every notebook shares, each keyed by a hash of the parameters it depends on; one module per step.

corpus -> base model -> fine-tuned models (target on ``full``, retain models on ``retainXX``; the retain model's
P/N pool of notebook 09) -> unlearned models (one per unlearning run) -> their TOFU evaluation. Models are saved in the run store
(:mod:`unlearnkit.runs`, ``runs/<profile>/seed-<s>/models/<name>/``); a later notebook, or a second ``make all``, finds
them there and reuses them when the parameters that made them are unchanged.

Every step takes the run's :class:`~unlearnkit.config.Params` (made once, at the runner's or a notebook's entry
point), so no step has a default of its own that could disagree with ``default.yaml``.
"""

from .. import models, runs  # the modules the steps use, as tests reach them
from ..data.tofu import retain_split_for  # notebooks name the retain split through the pipeline
from ..runs import history  # the training log beside a saved model: the run store's
from ..unlearning import METHODS
from .align import (
    COMPLYING,
    aligned_models,
    aligned_name,
    complying_model,
)
from .corpus import (
    TOKENIZER_SPLITS,
    TOKENIZER_TEXTS,
    all_texts,
    corpus,
    corpus_params,
    data_splits,
    heldout_retain_rows,
    unlearning_retain_rows,
    world_knowledge_rows,
)
from .evaluate import (
    OU_COLUMNS,
    OU_OPTIONS,
    OU_SUMMARY,
    PRIVACY,
    PRIVACY_SKIPPED,
    answers_side_by_side,
    evaluate_models,
    evaluate_privacy,
    last_unlearning_run,
    matched_forgetting,
    matched_level,
    matched_text,
    ou_summary_table,
    privacy_of,
    privacy_rows,
    privacy_scores,
    results_table,
    scoring_options,
    summary_table,
    unlearning_comparison,
    unlearning_trajectories,
)
from .finetune import (
    base_model,
    finetuned_model,
    finetuned_models,
)
from .pool import (
    POOL_SIDES,
    PoolModel,
    holdout_halves,
    pool_models,
    pool_plan,
    pool_rows,
)
from .settings import (
    FORGET_SPLIT_KEYS,
    RETAIN_SPLIT_KEYS,
    RUN_DATA_KEYS,
    RUN_LIST_KEYS,
    RUN_PARAM_KEYS,
    UNLEARN_LOSS_KEYS,
    UNLEARN_TRAIN_KEYS,
    check_params,
    check_sources,
    derived_run,
    own_settings,
    run_overrides,
    run_params,
    unlearning_settings,
    with_run,
)
from .stand_ins import (
    MISTRAL_CHAT_TEMPLATE,
    PHI_SPECIAL_TOKENS,
    STAND_IN_MODELS,
    STAND_IN_VERSION,
    STAND_INS,
    StandIn,
    base_identity,
    build_stand_ins,
    stand_ins_named,
)
from .store import (
    BASE_SCHEDULE,
    TINY,
    TrainedModel,
    cached,
    claim_run_folder,
    fit,
    lora_key,
    pack_key,
    seed_key,
    tiny_model_config,
)
from .unlearn import (
    ALTERNATES_VERSION,
    OnPolicySamples,
    altpo_alternates,
    forget_rouge_along,
    unlearned_model,
    unlearned_models,
    unlearning_examples,
)

__all__ = [
    "models", "runs", "retain_split_for", "history", "METHODS", "COMPLYING", "aligned_models",
    "aligned_name", "complying_model", "TOKENIZER_SPLITS", "TOKENIZER_TEXTS", "all_texts", "corpus",
    "corpus_params", "data_splits", "heldout_retain_rows", "unlearning_retain_rows",
    "world_knowledge_rows", "OU_COLUMNS", "OU_OPTIONS", "OU_SUMMARY", "PRIVACY", "PRIVACY_SKIPPED",
    "answers_side_by_side", "evaluate_models", "evaluate_privacy", "last_unlearning_run",
    "matched_forgetting", "matched_level", "matched_text", "ou_summary_table", "privacy_of",
    "privacy_rows", "privacy_scores", "results_table", "scoring_options", "summary_table",
    "unlearning_comparison", "unlearning_trajectories", "base_model", "finetuned_model",
    "finetuned_models", "POOL_SIDES", "PoolModel", "holdout_halves", "pool_models", "pool_plan",
    "pool_rows", "FORGET_SPLIT_KEYS", "RETAIN_SPLIT_KEYS", "RUN_DATA_KEYS", "RUN_LIST_KEYS",
    "RUN_PARAM_KEYS", "UNLEARN_LOSS_KEYS", "UNLEARN_TRAIN_KEYS", "run_overrides", "check_params",
    "check_sources", "derived_run", "own_settings", "run_params", "unlearning_settings", "with_run",
    "MISTRAL_CHAT_TEMPLATE", "PHI_SPECIAL_TOKENS", "STAND_IN_MODELS", "STAND_IN_VERSION", "STAND_INS",
    "StandIn", "base_identity", "build_stand_ins", "stand_ins_named", "BASE_SCHEDULE", "TINY",
    "TrainedModel", "cached", "fit", "claim_run_folder", "lora_key", "pack_key", "seed_key",
    "tiny_model_config", "ALTERNATES_VERSION", "OnPolicySamples", "altpo_alternates",
    "forget_rouge_along", "unlearned_model", "unlearned_models", "unlearning_examples",
]
