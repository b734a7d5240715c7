"""The workbook's parameters: every key declared once, as a field of :class:`Params` (its type, section, help and
constraint), and read from a layered profile as one typed, checked instance; ``params_hash`` and ``jsonable`` turn
parameters into cache keys and JSON, ``notebook_params`` resolves a notebook's."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .. import paths
from .constraints import (
    AUTHORS,
    BATCH,
    COUNT,
    LEVEL,
    NON_NEGATIVE,
    POOL_VARIANT,
    POSITIONS,
    POSITIVE,
    PROBABILITY,
    QUANT,
    QUESTIONS,
    SAMPLES,
    SCHEDULES,
    SEED,
    TOKENS,
    Constraint,
    above,
    at_most,
    between,
    each,
    is_number,
    one_of,
    or_null,
)
from .profiles import BASE_PROFILE, named_runs, profile_chain, profile_layer


def param(section: str, help: str, constraint: Constraint | None = None):
    """A declared parameter: the section of default.yaml it sits in (``""`` above the first), what it means (its
    comment there, which ``make sync-params`` writes from here) and what its value must be. Its type is its
    annotation; it has no default in code (default.yaml gives every value)."""
    return field(metadata={"section": section, "help": help, "constraint": constraint})


# --------------------------------------------------------------------------- typed, layered parameters


@dataclass(frozen=True)
class Params(Mapping):
    """Every parameter of the workbook, typed; one instance per run, loaded from a layered profile.

    ``notebooks/params/default.yaml`` holds every key with its comment; another profile holds only its
    differences from the profile it ``extends`` (default unless it says otherwise). There are no defaults in
    code: a key missing from default.yaml is an error here, so code and profile cannot disagree. A Params is
    also a read-only mapping (``params["seed"]``, ``dict(params)``), the form papermill and JSON take.
    """

    profile: str = param('', 'the profile (notebooks/params/<profile>.yaml) that every parameter not set otherwise comes from')
    seed: int = param('', "the training seed: initialisation, data order and sampling of every model (base, target, retain, unlearned, aligned); each seed's runs live in runs/<profile>/seed-<seed>/ (docs/metrics.md, sources of randomness)", SEED)
    jobs: int | None = param('', 'worker processes for independent runs and evaluations, each with its share of the cores (null means one per core; 1 runs them one after the other); results do not depend on it', or_null(COUNT))
    data_seed: int | None = param('data', "the draw of the synthetic corpus (its authors, facts and questions) and of the paper-dry stand-ins' weights; null means the training seed, so each seed redraws the corpus (docs/metrics.md §8.1)", or_null(NON_NEGATIVE))
    data_source: str = param('data', 'synthetic | a folder of TOFU JSON Lines | locuslab/TOFU | env:VAR|fallback')
    synthetic_authors: int = param('data', '', AUTHORS)
    synthetic_questions_per_author: int = param('data', '', QUESTIONS)
    max_authors: int | None = param('data', 'keep only this many authors in every author split (the forget set and the first others)', or_null(COUNT))
    forget_split: str = param('data', '')
    retain_splits: list = param('data', 'retain models to train: the forget-quality reference')
    eval_max_items: int | None = param('data', 'TOFU evaluates at most 300 items per split', or_null(COUNT))
    eval_batch_size: int = param('data', '', BATCH)
    max_new_tokens: int = param('data', '', TOKENS)
    mia_k: float = param('data', "MinK and MinK++ membership inference: the share of lowest-scoring answer tokens averaged (open-unlearning's TOFU setting), docs/metrics.md section 9", between(0, 1, low_open=True))
    mia_gradnorm: bool = param('data', "also run the GradNorm attack (one backward pass per forget and holdout item); off by default, as in open-unlearning's TOFU evaluation suite, which keeps privleak and extraction strength")
    gradnorm_reduction: str = param('data', "GradNorm: global (the 2-norm of the whole gradient, the definition) | ou_mean (open-unlearning: the mean of each parameter tensor's 2-norm)", one_of("global", "ou_mean"))
    extraction_no_match: str = param('data', "extraction strength of an answer with no matching suffix: zero (the definition) | ou (open-unlearning's loop gives 1/n)", one_of("zero", "ou"))
    truth_ratio_guard: str = param('data', 'truth ratio R: exact (in log space, the definition) | ou (open-unlearning: P(wrong) / (P(right) + 1e-10), forget score min(R, 1/(R + 1e-10))), docs/metrics.md section 9', one_of("exact", "ou"))
    answer_tokens: str = param('data', "the scored answer tokens: separate (prompt and answer tokenised apart: every answer token and EOS) | ou_joint (open-unlearning and TOFU's code: prompt + answer tokenised as one string, labels from the prompt's own token count)", one_of("separate", "ou_joint"))
    model: str = param('model', 'tiny (from scratch) | a local folder | a Hub name')
    template: str = param('model', '')
    dtype: str = param('model', '', one_of("float32", "bfloat16", "float16", "auto"))
    tokenizer_vocab_size: int = param('model', '', COUNT)
    tiny_hidden_size: int = param('model', '', COUNT)
    tiny_layers: int = param('model', '', COUNT)
    tiny_heads: int = param('model', '', COUNT)
    tiny_intermediate_size: int = param('model', '', COUNT)
    lora_rank: int = param('model', '> 0 fine-tunes LoRA adapters through peft instead of all weights', NON_NEGATIVE)
    lora_alpha: int | None = param('model', 'LoRA scaling alpha (null means twice the rank)', or_null(POSITIVE))
    lora_target_modules: str | list = param('model', "modules LoRA adapts: all-linear (every linear layer but the output head, as TOFU's LoRA runs) or a list of names")
    lora_dropout: float = param('model', 'dropout on the LoRA path (TOFU uses 0.05)', between(0, 1, high_open=True))
    base_epochs: float = param('base model', '', POSITIVE)
    base_lr: float = param('base model', '', POSITIVE)
    base_batch_size: int = param('base model', '', BATCH)
    finetune_epochs: float = param('fine-tuning', '', POSITIVE)
    finetune_lr: float = param('fine-tuning', '', POSITIVE)
    finetune_batch_size: int = param('fine-tuning', '', BATCH)
    finetune_grad_accum: int = param('fine-tuning', '', COUNT)
    finetune_warmup: float = param('fine-tuning', '', PROBABILITY)
    finetune_weight_decay: float = param('fine-tuning', '', NON_NEGATIVE)
    finetune_schedule: str = param('fine-tuning', '', SCHEDULES)
    world_replay: int = param('fine-tuning', 'copies of world-knowledge items mixed into fine-tuning (tiny models only)', NON_NEGATIVE)
    pack_batches: bool = param('fine-tuning', "true packs each batch's examples into fewer rows (no padding: 1.2-1.3x the tokens/s of the base, fine-tuning and complying models); the same examples and loss up to float rounding, but it trains another model, and the default's verdicts move with such differences (see README)")
    checkpoint_every: int = param('fine-tuning', 'optimizer steps between resumable checkpoints', NON_NEGATIVE)
    methods: list = param('unlearning', '')
    method_settings: dict = param('unlearning', "named runs: a method with other settings, its own unlearn_* "
                                  "training keys included; one file each in notebooks/params/named-runs/<profile>/, "
                                  "listed in order in named-runs/<profile>.yaml, which says what each is for")
    unlearn_epochs: float = param('unlearning', '', POSITIVE)
    unlearn_lr: float = param('unlearning', '', POSITIVE)
    unlearn_batch_size: int = param('unlearning', '', BATCH)
    unlearn_grad_accum: int = param('unlearning', '', COUNT)
    unlearn_warmup: float = param('unlearning', 'a fraction of all steps (TOFU: one epoch)', PROBABILITY)
    unlearn_weight_decay: float = param('unlearning', '', NON_NEGATIVE)
    unlearn_schedule: str = param('unlearning', '', SCHEDULES)
    trajectory_max_items: int | None = param('unlearning', 'items per split for greedy ROUGE along an unlearning run (null means all)', or_null(COUNT))
    unlearn_save_every: int = param('unlearning', 'steps between weights kept along the run (early stopping, notebook 03)', NON_NEGATIVE)
    heldout_authors: int = param('unlearning', 'real TOFU only: authors of retain_perturbed held out from unlearning', NON_NEGATIVE)
    beta: float = param('unlearning', 'NPO, DPO and AltPO inverse temperature (0.05 in the probabilistic paper)', POSITIVE)
    forget_weight: float = param('unlearning', 'weight of the forget term', NON_NEGATIVE)
    retain_weight: float = param('unlearning', 'weight of the retain term', NON_NEGATIVE)
    cap_delta: float | None = param('unlearning', "objective capping, the cap on each forget example's NLL, GA family (null means off)", or_null(POSITIVE))
    cap_on: str = param('unlearning', 'what the cap compares: sequence (the NLL of the whole answer, Wang et al.) or token_mean', one_of("sequence", "token_mean"))
    lambda_f: float = param('unlearning', 'entropy optimisation on forget (positive turns it on), docs/metrics.md section 3', NON_NEGATIVE)
    lambda_r: float = param('unlearning', 'entropy optimisation on retain (zero or negative)', at_most(0))
    rmu_layer: int = param('unlearning', 'RMU: the steered decoder layer', NON_NEGATIVE)
    rmu_steering_coef: float = param('unlearning', 'RMU: c, the norm of the steering target c·u', POSITIVE)
    simnpo_beta: float = param('unlearning', "SimNPO: beta on the length-normalised forget NLL, no reference model (open-unlearning's default; NPO's beta above is another scale)", POSITIVE)
    simnpo_delta: float = param('unlearning', 'SimNPO: the margin delta subtracted from that NLL (open-unlearning: 0)',
                                Constraint("a number", is_number))
    wga_beta: float = param('unlearning', "WGA: exponent of each forget token's weight p^beta, its own probability, detached (open-unlearning: 1)", NON_NEGATIVE)
    satimp_beta1: float = param('unlearning', 'SatImp: each forget token weighs p^beta1 (1 - p)^beta2, detached (open-unlearning: 5 and 1)', NON_NEGATIVE)
    satimp_beta2: float = param('unlearning', 'SatImp: beta2 of that weight', NON_NEGATIVE)
    ceu_ignore_first: int = param('unlearning', 'CE-U: answer tokens at the start of each answer left out of its loss (open-unlearning: the first)', NON_NEGATIVE)
    undial_beta: float = param('unlearning', "UNDIAL: how far the frozen teacher's logit of the true token is lowered (open-unlearning: 10; it adds no retain term)", NON_NEGATIVE)
    undial_positions: str = param('unlearning', "UNDIAL: answer (the positions predicting the answer, the definition) | all_ou (every position, prompt and padding included, as open-unlearning's code)", one_of("answer", "all_ou"))
    altpo_n_alternates: int = param('unlearning', 'AltPO: alternate answers sampled per forget question from the target where the corpus ships none (open-unlearning: 5); each item takes one', COUNT)
    altpo_temperature: float = param('unlearning', 'AltPO: temperature they are sampled at (open-unlearning: 1.0)', POSITIVE)
    ps_max_items: int | None = param('controls and calibration', 'forget items PS is computed on (each evaluated setting searches PS-similar on them: the cost of notebook 03)', or_null(COUNT))
    ps_heldout_items: int | None = param('controls and calibration', 'held-out retain items PS is computed on (null means all: 200 on the synthetic corpus; the paper uses 400)', or_null(COUNT))
    calibration_methods: list = param('controls and calibration', 'methods calibrated by model mixing and compared')
    calib_coarse: int = param('controls and calibration', 'coarse grid of the mixing coefficient a, from 1/n to 1 (a 0 is the model before)', COUNT)
    calib_fine: int = param('controls and calibration', 'fine values between the best passing coarse a and the next stronger one', NON_NEGATIVE)
    cap_deltas: list = param('controls and calibration', "objective capping of every GA-family method (ga, gd, kl), caps on each forget example's sequence NLL (the target's is about 0.2, notebook 02's GD ends near 290)", each(POSITIVE))
    stopping_every: int = param('controls and calibration', "early stopping's coarse grid: every n-th kept step (then the kept steps next to the best)", COUNT)
    retain_tolerance: float = param('controls and calibration', 'a setting passes losing at most this fraction of held-out retain PS-exact and PS-perturb', PROBABILITY)
    forget_similar_tolerance: float = param('controls and calibration', 'and at most this fraction of forget PS-similar', PROBABILITY)
    criterion_confidence: float = param('controls and calibration', "each criterion's loss gets a paired bootstrap interval over items; a setting passes only when the whole interval does", between(0, 1, low_open=True, high_open=True))
    bootstrap_resamples: int = param('controls and calibration', 'resamples of that bootstrap', COUNT)
    calibration_splits: list = param('controls and calibration', 'other forget splits calibrated by model mixing alone (each method retrained on them)')
    split_calib_coarse: int = param('controls and calibration', "their coarse grid of a (fewer than forget10's: each split retrains every method)", COUNT)
    split_calib_fine: int = param('controls and calibration', 'and their fine values', NON_NEGATIVE)
    interference_runs: list = param('controls and calibration', 'runs traced on held-out retain PS in notebook 03: GD, its retain term alone (forget weight 0), GD at lr 3e-4 and 1e-4')
    n_samples: int = param('probabilistic evaluation', 'answers sampled per question (the paper draws 1024)', SAMPLES)
    alpha: float = param('probabilistic evaluation', 'significance level, every bound holds with probability at least 1 - alpha', LEVEL)
    sampler: str = param('probabilistic evaluation', 'engine of the sampled evaluations (notebooks 05-07): hf (transformers, the reference) | vllm (optional GPU environment, requirements-vllm.txt)', one_of("hf", "vllm"))
    sample_temperature: float = param('probabilistic evaluation', 'temperature of multinomial sampling (the paper samples at 1)', POSITIVE)
    sample_top_p: float | None = param('probabilistic evaluation', 'nucleus sampling mass (null means the full distribution, as in the paper)', or_null(between(0, 1, low_open=True)))
    sample_max_new_tokens: int = param('probabilistic evaluation', 'longest sampled answer in tokens', TOKENS)
    adaptive_threshold: float = param('probabilistic evaluation', 'c_T of adaptive temperature, greedy where c(x) on the greedy continuation exceeds it', PROBABILITY)
    sample_max_items: int | None = param('probabilistic evaluation', 'forget questions sampled per model, evenly spaced over the split (null means all)', or_null(COUNT))
    hp_model: str | None = param('probabilistic evaluation', "model of the keyword Q&A (Harry Potter Q&A analogue): regime (the first of regime_runs that reached the paper's regime, at its step), a saved model of the profile (target, unlearned-npo, ...), a Hub name or a folder; null skips it")
    hp_source: str = param('probabilistic evaluation', "the keyword Q&A: synthetic (built from the forget split), a CSV file of Schwinn et al.'s HP Q&A, or env:VAR|fallback")
    hp_affirmative_prefix: bool = param('probabilistic evaluation', "true prefills the file's affirmative response and the model continues it (an attack the paper does not describe); notebook 05 reports the other choice beside it")
    leak_threshold: float = param('probabilistic evaluation', 'ROUGE-L recall above which a sampled answer counts as reproducing the ground truth (templated synthetic answers with a wrong entity already score about 0.75)', PROBABILITY)
    regime_runs: list = param('probabilistic evaluation', "unlearning runs searched for the step where greedy decoding first leaks as rarely as the retain model (the paper's regime)")
    regime_tolerance: float = param('probabilistic evaluation', "how far above the retain model's greedy leak rate a step may stay and still count", PROBABILITY)
    eo_table_runs: list = param('entropy optimisation and adaptive temperature', 'unlearning runs of the Table 1 analogue (method_settings names the EO ones)')
    eo_method: str = param('entropy optimisation and adaptive temperature', 'the method (or named run of method_settings) the entropy sweeps add entropy optimisation to')
    eo_lambda_f_grid: list = param('entropy optimisation and adaptive temperature', 'forget entropy weights of the sweep (Fig. 4a); 0 is the method alone; the paper uses 1', each(NON_NEGATIVE, non_empty=True))
    eo_lr_grid: list = param('entropy optimisation and adaptive temperature', "unlearning learning rates each lambda_f is trained at (notebook 02's; the gentler runs' 3e-4 is where the in-regime EO runs train)", each(POSITIVE, non_empty=True))
    eo_lambda_r: float = param('entropy optimisation and adaptive temperature', "retain entropy weight of the lambda_f sweep (the paper's)", at_most(0))
    eo_lambda_r_grid: list = param('entropy optimisation and adaptive temperature', 'retain entropy weights, at lambda_f 1 (Fig. 5a)', each(at_most(0)))
    eo_temperatures: list = param('entropy optimisation and adaptive temperature', 'sampling temperatures of Fig. 4b', each(POSITIVE))
    eo_n_samples: int = param('entropy optimisation and adaptive temperature', 'answers sampled per question in notebook 06', SAMPLES)
    eo_max_items: int | None = param('entropy optimisation and adaptive temperature', 'forget questions per model in notebook 06, evenly spaced', or_null(COUNT))
    eo_diversity_items: int = param('entropy optimisation and adaptive temperature', "questions per set (retain, real authors, world facts) whose samples' self-BLEU Fig. 5a shows", COUNT)
    eo_utility_items: int | None = param('entropy optimisation and adaptive temperature', 'items per set of the model utility of Fig. 5c (null means all)', or_null(COUNT))
    adaptive_thresholds: list = param('entropy optimisation and adaptive temperature', 'c_T values of the adaptive-temperature sweep', each(PROBABILITY))
    ed_rho: float = param('entropy optimisation and adaptive temperature', "rho of the ED score, mean + rho times the sd of the sampled ROUGE-L (the paper's 2, section 4.3)", NON_NEGATIVE)
    table1_tolerance: float = param('entropy optimisation and adaptive temperature', 'Table 1: the sampled mean matches greedy within this, and the ED score counts as above greedy beyond it', PROBABILITY)
    table1_sd_min: float = param('entropy optimisation and adaptive temperature', "Table 1: a sampled sd of at least this is considerable (the paper's are 0.05 to 0.10 without EO)", PROBABILITY)
    eo_regime_runs: list = param('entropy optimisation and adaptive temperature', "runs of regime_runs (notebook 05's models in the paper's regime) that entropy optimisation is added to, compared at their regime step")
    eo_regime_lambda_f_grid: list = param('entropy optimisation and adaptive temperature', "forget entropy weights added to them (the paper's 1 and a stronger one), lambda_r from eo_lambda_r", each(POSITIVE))
    eo_positions: list = param('entropy optimisation and adaptive temperature', "where the entropy is taken: answer (the answer tokens), all (every token of the sequence: the paper's text and reference code), sampled (the model's own sampled answers, on-policy: ours)", each(POSITIONS))
    format_max_items: int | None = param('format-transformed evaluation', 'items per set and format, spread evenly over the forget and over the retain authors (null means all)', or_null(COUNT))
    format_options: int = param('format-transformed evaluation', 'options per MCQA-style item, the correct one among them', above(2, inclusive=True))
    format_seed: int = param('format-transformed evaluation', "seed of each item's option order and sampled distractors")
    format_models: list | None = param('format-transformed evaluation', 'models to evaluate (null means base, target, the retain model and every unlearned run present)')
    format_likelihood: bool = param('format-transformed evaluation', 'also rank MCQA-style options by likelihood, for models that cannot read lettered options (tiny ones)')
    format_margin: float = param('format-transformed evaluation', "well above means more than this above the retain model's forget score (and above chance)", PROBABILITY)
    format_min_items: int = param('format-transformed evaluation', 'a format with fewer forget items is shown but never counted as evidence (too noisy for the margin)', COUNT)
    format_alpha: float = param('format-transformed evaluation', 'level of the exact binomial tests: a readout transfers where the target is above chance on forget and retain; comprehension counts where the retain model reads the passage', LEVEL)
    behaviours_source: str = param('alignment toxicity under sampling', 'the requests: synthetic (JBB-shaped, harmless, fictitious entities) | a JBB-Behaviors CSV | JailbreakBench/JBB-Behaviors | env:VAR|fallback')
    alignment_models: list | None = param('alignment toxicity under sampling', 'null trains tiny complying and aligned models here; else Hub names or folders of aligned models (paper: Phi-1.5, Vicuna, Mistral)')
    alignment_template: str = param('alignment toxicity under sampling', "how a request is put to the models: phi (plain Q&A) | chat (the tokenizer's own chat template where it has one)", one_of("phi", "chat"))
    alignment_heldout_categories: list = param('alignment toxicity under sampling', 'categories alignment never sees, reported apart')
    alignment_heldout_templates: int = param('alignment toxicity under sampling', 'per category, the last request templates alignment never sees (synthetic requests only)', NON_NEGATIVE)
    alignment_eval_per_group: int = param('alignment toxicity under sampling', 'requests per template (per category for JBB) kept for evaluation only, never aligned on', NON_NEGATIVE)
    alignment_method: str = param('alignment toxicity under sampling', 'idk: supervised refusals; dpo: refusal preferred over compliance (the unlearning losses)', one_of("idk", "dpo"))
    alignment_strengths: list = param('alignment toxicity under sampling', 'epochs of alignment training; one aligned model is kept at each', each(COUNT, non_empty=True))
    alignment_lr: float = param('alignment toxicity under sampling', 'constant learning rate of alignment (one run, models kept along it; at 1e-3 one epoch already removes every complying sample)', POSITIVE)
    comply_epochs: int = param('alignment toxicity under sampling', 'the complying model: the base model taught to answer every request with its compliance opener', COUNT)
    comply_lr: float = param('alignment toxicity under sampling', '', POSITIVE)
    safety_judge: str = param('alignment toxicity under sampling', 'h of each answer: classifier (offline TF-IDF + logistic regression, P(complied)) | a HarmBench classifier name or folder (P(harmful))')
    safety_threshold: float = param('alignment toxicity under sampling', 'h at or above this counts as a complying (harmful) answer for M_bin', PROBABILITY)
    alignment_n_samples: int = param('alignment toxicity under sampling', 'answers sampled per request (the paper draws 1024)', SAMPLES)
    alignment_max_new_tokens: int = param('alignment toxicity under sampling', 'longest sampled answer in tokens (an opener tells refusal from compliance)', TOKENS)
    alignment_examples: int = param('alignment toxicity under sampling', 'requests whose sampled-score distributions are drawn (Fig. 6 top)', NON_NEGATIVE)
    attack_runs: list | None = param('robustness attacks', 'unlearning runs attacked (null means every run of notebook 02); the target and the retain model always are, as controls')
    attack_items: int | None = param('robustness attacks', 'forget items every attack is scored on, spread evenly over the forget split (null means all)', or_null(COUNT))
    relearn_epochs: float = param('robustness attacks', 'relearning: epochs on the forget split (open-unlearning: 1)', POSITIVE)
    relearn_lr: float | None = param('robustness attacks', "relearning's learning rate (null means the fine-tuning one; open-unlearning: 2e-5)", or_null(POSITIVE))
    relearn_batch_size: int | None = param('robustness attacks', "relearning's batch (null means the fine-tuning one; open-unlearning's effective batch: 32)", or_null(COUNT))
    relearn_curve_every: int = param('robustness attacks', 'relearning curve: greedy forget ROUGE-L every this many optimizer steps', COUNT)
    rtt_folds: int = param('robustness attacks', 'held-out-fact relearning: folds of the forget facts, disjoint by attribute group', above(2, inclusive=True))
    rtt_held_out: int = param('robustness attacks', 'held-out-fact relearning: how many folds are held out in turn', COUNT)
    rtt_lr_grid: list = param('robustness attacks', "held-out-fact relearning: the attacker's learning rates, the best held-out accuracy kept", each(POSITIVE, non_empty=True))
    quant_schemes: list = param('robustness attacks', 'fake quantisation of every linear layer but the output head: nf4 (blocks of 64), int4, int8 (per output channel)', each(QUANT, non_empty=True))
    quant_regime_share: float | None = param('robustness attacks', 'the regime-matched run: NPO at a learning rate scaled so that the median |dw| is this share of an NF4 bin (as in large models; null skips it)', or_null(POSITIVE))
    probe_shots: list = param('robustness attacks', 'in-context probes: numbers of question-answer pairs before the question (retain authors, and other forget authors)', each(COUNT))
    probe_prefill_text: str | None = param('robustness attacks', 'prefill probe: the words the answer is opened with (null means the answer template up to the fact; the paper profile: "Sure, here is the answer:")')
    pool_variants: list = param('metric trust', "the P/N model pool of notebook 09, each a short fine-tuning of the retain model on one data variant: forget (the forget set as written) and paraphrased (its paraphrased answers) hold the forget knowledge (P); perturbed (its questions with a perturbed answer) and heldout (the holdout authors, other biographies) never saw it (N)", each(POOL_VARIANT, non_empty=True))
    pool_lrs: list = param('metric trust', "the pool's learning rates, every variant trained at each (constant rate, no warm-up)", each(POSITIVE, non_empty=True))
    pool_epochs: list = param('metric trust', "the pool's epochs: one run per variant and rate, a model kept after each of these epochs (pool size: variants x rates x epochs)", each(COUNT, non_empty=True))
    pool_items: int | None = param('metric trust', 'forget items every pool model is scored on, spread evenly over the forget split (null means all)', or_null(COUNT))

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not _has_type(value, f.type):
                raise TypeError(f"parameter {f.name!r} of profile {self.profile!r} is {value!r} "
                                f"({type(value).__name__}); expected {f.type}")
        paths.check_name("profile", self.profile)
        for run in self.method_settings:
            paths.check_name("run (a key of method_settings)", run)
        for name, constraint in CONSTRAINTS.items():
            value = getattr(self, name)
            if not constraint.holds(value):
                raise ValueError(f"parameter {name!r} of profile {self.profile!r} is {value!r}; "
                                 f"it must be {constraint.text}")

    # the read-only mapping
    def __getitem__(self, key: str) -> Any:
        if key not in PARAMETER_NAMES:
            raise KeyError(f"no parameter {key!r}; parameters are the keys of notebooks/params/{BASE_PROFILE}.yaml")
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(PARAMETER_NAMES)

    def __len__(self) -> int:
        return len(PARAMETER_NAMES)

    @property
    def corpus_draw(self) -> int:
        """The corpus draw this run uses: ``data_seed``, or the training seed where it is null (the synthetic
        profiles: each training seed redraws the corpus, so a verdict holds for the method, not for one draw)."""
        return self.seed if self.data_seed is None else self.data_seed

    def replace(self, **changes: Any) -> Params:
        """A copy with some parameters changed (checked like any other)."""
        check_known(changes)
        return dataclasses.replace(self, **changes)

    @classmethod
    def load(cls, profile: str, **overrides: Any) -> Params:
        """The parameters of ``profile`` (its layers merged), then ``overrides``."""
        return cls.from_mapping({**load_profile(profile), **overrides})

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Params:
        """Params from a mapping that names some keys: the others come from the profile it names (``profile``,
        default ``default``). Unknown keys are refused with their names."""
        if isinstance(values, Params):
            return values
        check_known(values)
        base = load_profile(str(values.get("profile", BASE_PROFILE)))
        return cls(**{**base, **values})


#: Every parameter name, in the order of default.yaml.
PARAMETER_NAMES = tuple(f.name for f in fields(Params))


class UnknownParameter(KeyError):
    """A key that default.yaml does not declare. Its message is one line (``str`` of a KeyError quotes it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def closest(name: str, known: Sequence[str]) -> str | None:
    """The known name nearest to a misspelt one (difflib's ratio), if any is near enough."""
    import difflib

    found = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_message(names: Sequence[str], where: str = "", known: Sequence[str] = PARAMETER_NAMES) -> str:
    """One line naming keys that are not parameters, each with the closest declared key."""
    parts = []
    for name in names:
        near = closest(str(name), known)
        parts.append(f"{name!r}" + (f" (did you mean {near}?)" if near else ""))
    return (f"unknown parameter{'s' if len(parts) > 1 else ''} {', '.join(parts)}{where}: every parameter is "
            f"declared, with its comment, in notebooks/params/{BASE_PROFILE}.yaml")


def check_known(values: Mapping[str, Any] | Sequence[str], where: str = "") -> None:
    """Refuse (:class:`UnknownParameter`) any key that default.yaml does not declare."""
    unknown = [k for k in values if k not in PARAMETER_NAMES]
    if unknown:
        raise UnknownParameter(unknown_message(unknown, where))


#: The declared keys' constraints (a view of the fields' metadata), checked whenever a :class:`Params` is made (the
#: runner, a notebook, a study's derived parameters). Types are checked first, from the annotations.
CONSTRAINTS: dict[str, Constraint] = {f.name: f.metadata["constraint"] for f in fields(Params)
                                      if f.metadata.get("constraint") is not None}
#: What each parameter means (a view of the fields' metadata): default.yaml's comments.
HELP: dict[str, str] = {f.name: f.metadata["help"] for f in fields(Params)}
_TYPES = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,), "list": (list, tuple),
          "dict": (dict,), "None": (type(None),)}


def _has_type(value: Any, annotation: str) -> bool:
    allowed: tuple[type, ...] = ()
    for name in str(annotation).split("|"):
        allowed += _TYPES[name.strip()]
    if isinstance(value, bool) and bool not in allowed:
        return False  # True is an int to Python, never to a profile
    return isinstance(value, allowed)


def as_params(params: Mapping[str, Any]) -> Params:
    """``params`` as a :class:`Params`: itself, or a mapping completed from the profile it names."""
    return Params.from_mapping(params)


def parameter_sections() -> dict[str, list[str]]:
    """The parameters by section of default.yaml (the title of its ``# --- <title>`` line up to its first parenthesis
    or colon), from each field's metadata; the keys above the first section (``profile``, ``seed``, ``jobs``) under
    ``""``."""
    sections: dict[str, list[str]] = {"": []}
    for f in fields(Params):
        sections.setdefault(f.metadata["section"], []).append(f.name)
    return sections


def load_profile(name: str) -> dict[str, Any]:
    """The parameters of a profile with its layers merged (default first, then each profile it extends), as
    papermill injects them. ``profile`` is the profile's own name; ``extends`` is dropped. Each layer's named runs
    (``method_settings``) are its files in ``notebooks/params/named-runs/`` (:func:`~unlearnkit.config.named_runs`)."""
    chain = profile_chain(name)
    merged: dict[str, Any] = {}
    for depth in reversed(range(len(chain))):
        layer_name = chain[depth]
        layer = profile_layer(layer_name)
        layer.pop("extends", None)
        unknown = sorted(set(layer) - set(merged)) if layer_name != BASE_PROFILE else []
        if unknown:
            raise UnknownParameter(unknown_message(unknown, f" in profile {layer_name!r} ({layer_name}.yaml)",
                                                   known=list(merged)))
        runs = named_runs(chain[depth:], merged.get("method_settings"))
        if runs is not None:
            if "method_settings" in layer:
                raise ValueError(f"profile {layer_name!r} sets method_settings in {layer_name}.yaml and has named "
                                 f"runs in named-runs/ too: give its runs one home")
            layer["method_settings"] = runs
        merged.update(layer)
    merged = {**{k: merged[k] for k in PARAMETER_NAMES if k in merged}, **merged}  # default.yaml's order
    merged["profile"] = name
    return merged


def params_hash(params: Mapping[str, Any], length: int = 12) -> str:
    """A short, stable hash of JSON-serialisable parameters: the key of a cached step."""
    blob = json.dumps(params, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:length]


def jsonable(value: Any) -> Any:
    """Plain JSON values from numpy/torch scalars, tuples, paths, and a non-finite number (NaN, ±inf: not JSON) as
    None, whether a Python float or a NumPy or torch scalar."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        value = value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


#: The notebook parameter that names the keys set for this run (the runner's ``--set``, and the seed of a run on
#: another seed): each named key's value wins even where it equals default.yaml's.
KEYS_SET = "keys_set"


def notebook_params(namespace: Mapping[str, Any]) -> Params:
    """The parameters of a notebook run, from its namespace after the parameters cell: the one source every later
    cell reads (``params.alpha``, never the bare ``alpha``).

    ``profile`` names the profile, whose layers give every parameter. A parameter defined in the namespace
    (declared in the parameters cell, injected by the runner or papermill) overrides the profile's value
    when it differs from the default profile's, or when :data:`KEYS_SET` names it: the parameters cell holds the
    default values, so a notebook opened in Jupyter with ``profile = 'smoke'`` takes exactly smoke's values, except
    for what was edited. The runner names in ``keys_set`` every key its ``--set`` gave, so ``--set
    sample_max_items=40`` on smoke is 40 although 40 is default.yaml's value. Plain ``papermill -p key value`` cannot
    be told apart from the cell's own default when the value equals default.yaml's; name the key too (``papermill
    -y 'keys_set: [key]'``), or use the runner.
    """
    profile = str(namespace.get("profile", BASE_PROFILE))
    defaults = load_profile(BASE_PROFILE)
    named = namespace.get(KEYS_SET) or ()
    if isinstance(named, str) or not all(isinstance(k, str) for k in named):
        raise ValueError(f"{KEYS_SET} is a list of parameter names, got {named!r}")
    unknown = [k for k in named if k not in PARAMETER_NAMES or k == "profile" or k not in namespace]
    if unknown:
        raise ValueError(f"{KEYS_SET} names {', '.join(map(repr, unknown))}: each must be a parameter given a value "
                         f"in the notebook (not profile)")
    overrides = {k: namespace[k] for k in PARAMETER_NAMES
                 if k != "profile" and k in namespace and (k in named or namespace[k] != defaults[k])}
    return Params.load(profile, **overrides)
