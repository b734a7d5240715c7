"""The workbook's parameters: layered profiles read as one typed, checked :class:`Params`.

A profile is one YAML file in ``notebooks/params/``; every notebook takes the same keys, so one file configures the
whole workbook. Parameters only: the run store is :mod:`unlearnkit.runs`, station timing :mod:`unlearnkit.stations`,
provenance :mod:`unlearnkit.provenance`; ``params_hash`` and ``jsonable`` turn parameters into cache keys and JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from . import paths

BASE_PROFILE = "default"


# --------------------------------------------------------------------------- typed, layered parameters


@dataclass(frozen=True)
class Params(Mapping):
    """Every parameter of the workbook, typed; one instance per run, loaded from a layered profile.

    ``notebooks/params/default.yaml`` holds every key with its comment; another profile holds only its
    differences from the profile it ``extends`` (default unless it says otherwise). There are no defaults in
    code: a key missing from default.yaml is an error here, so code and profile cannot disagree. A Params is
    also a read-only mapping (``params["seed"]``, ``dict(params)``), the form papermill and JSON take.
    """

    profile: str
    seed: int
    jobs: int | None
    # data
    data_seed: int
    data_source: str
    synthetic_authors: int
    synthetic_questions_per_author: int
    max_authors: int | None
    forget_split: str
    retain_splits: list
    eval_max_items: int | None
    eval_batch_size: int
    max_new_tokens: int
    mia_k: float
    mia_gradnorm: bool
    gradnorm_reduction: str
    extraction_no_match: str
    truth_ratio_guard: str
    answer_tokens: str
    # model
    model: str
    template: str
    dtype: str
    tokenizer_vocab_size: int
    tiny_hidden_size: int
    tiny_layers: int
    tiny_heads: int
    tiny_intermediate_size: int
    lora_rank: int
    lora_alpha: int | None
    lora_target_modules: str | list
    lora_dropout: float
    # base model
    base_epochs: float
    base_lr: float
    base_batch_size: int
    # fine-tuning
    finetune_epochs: float
    finetune_lr: float
    finetune_batch_size: int
    finetune_grad_accum: int
    finetune_warmup: float
    finetune_weight_decay: float
    finetune_schedule: str
    world_replay: int
    pack_batches: bool
    checkpoint_every: int
    # unlearning
    methods: list
    method_settings: dict
    unlearn_epochs: float
    unlearn_lr: float
    unlearn_batch_size: int
    unlearn_grad_accum: int
    unlearn_warmup: float
    unlearn_weight_decay: float
    unlearn_schedule: str
    trajectory_max_items: int | None
    unlearn_save_every: int
    heldout_authors: int
    beta: float
    forget_weight: float
    retain_weight: float
    cap_delta: float | None
    cap_on: str
    lambda_f: float
    lambda_r: float
    rmu_layer: int
    rmu_steering_coef: float
    simnpo_beta: float
    simnpo_delta: float
    wga_beta: float
    satimp_beta1: float
    satimp_beta2: float
    ceu_ignore_first: int
    undial_beta: float
    undial_positions: str
    altpo_n_alternates: int
    altpo_temperature: float
    # controls and calibration
    ps_max_items: int | None
    ps_heldout_items: int | None
    calibration_methods: list
    calib_coarse: int
    calib_fine: int
    cap_deltas: list
    stopping_every: int
    retain_tolerance: float
    forget_similar_tolerance: float
    criterion_confidence: float
    bootstrap_resamples: int
    calibration_splits: list
    split_calib_coarse: int
    split_calib_fine: int
    interference_runs: list
    # probabilistic evaluation
    n_samples: int
    alpha: float
    sampler: str
    sample_temperature: float
    sample_top_p: float | None
    sample_max_new_tokens: int
    adaptive_threshold: float
    sample_max_items: int | None
    hp_model: str | None
    hp_source: str
    hp_affirmative_prefix: bool
    leak_threshold: float
    regime_runs: list
    regime_tolerance: float
    eo_table_runs: list
    eo_method: str
    eo_lambda_f_grid: list
    eo_lr_grid: list
    eo_lambda_r: float
    eo_lambda_r_grid: list
    eo_temperatures: list
    eo_n_samples: int
    eo_max_items: int | None
    eo_diversity_items: int
    eo_utility_items: int | None
    adaptive_thresholds: list
    ed_rho: float
    table1_tolerance: float
    table1_sd_min: float
    eo_regime_runs: list
    eo_regime_lambda_f_grid: list
    eo_positions: list
    # format-transformed evaluation
    format_max_items: int | None
    format_options: int
    format_seed: int
    format_models: list | None
    format_likelihood: bool
    format_margin: float
    format_min_items: int
    format_alpha: float
    # alignment toxicity under sampling
    behaviours_source: str
    alignment_models: list | None
    alignment_template: str
    alignment_heldout_categories: list
    alignment_heldout_templates: int
    alignment_eval_per_group: int
    alignment_method: str
    alignment_strengths: list
    alignment_lr: float
    comply_epochs: int
    comply_lr: float
    safety_judge: str
    safety_threshold: float
    alignment_n_samples: int
    alignment_max_new_tokens: int
    alignment_examples: int

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not _has_type(value, f.type):
                raise TypeError(f"parameter {f.name!r} of profile {self.profile!r} is {value!r} "
                                f"({type(value).__name__}); expected {f.type}")
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

    def replace(self, **changes: Any) -> Params:
        """A copy with some parameters changed (checked like any other)."""
        check_known(changes)
        return dataclasses.replace(self, **changes)

    @classmethod
    def load(cls, profile: str = "default", **overrides: Any) -> Params:
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


# --------------------------------------------------------------------------- what a declared value may be


@dataclass(frozen=True)
class Constraint:
    """What a parameter's value must be, where a wrong value would give a wrong result rather than an error:
    ``text`` for the message (\"in (0, 0.5]\"), ``test`` on the value."""

    text: str
    test: Callable[[Any], bool]
    choices: tuple[str, ...] = ()  # the allowed values of an enumeration, which the library's own lists must match

    def holds(self, value: Any) -> bool:
        try:
            return bool(self.test(value))
        except TypeError:
            return False


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # NaN is no number


def _in(low: float, high: float, low_open: bool = False, high_open: bool = False) -> Constraint:
    def test(v: Any) -> bool:
        return _number(v) and (low < v if low_open else low <= v) and (v < high if high_open else v <= high)

    return Constraint(f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}", test)


def _above(low: float, inclusive: bool = False) -> Constraint:
    return Constraint(f"{'>=' if inclusive else '>'} {low:g}",
                      lambda v: _number(v) and (v >= low if inclusive else v > low))


def _at_most(high: float) -> Constraint:
    return Constraint(f"<= {high:g}", lambda v: _number(v) and v <= high)


def _one_of(*choices: str) -> Constraint:
    return Constraint(f"one of {', '.join(choices)}", lambda v: v in choices, tuple(choices))


def _or_null(c: Constraint) -> Constraint:
    return Constraint(f"null or {c.text}", lambda v: v is None or c.holds(v))


def _each(c: Constraint, non_empty: bool = False) -> Constraint:
    return Constraint(f"a{' non-empty' if non_empty else ''} list of values {c.text}",
                      lambda v: (bool(v) or not non_empty) and all(c.holds(x) for x in v))


_COUNT, _NON_NEGATIVE, _POSITIVE = _above(1, inclusive=True), _above(0, inclusive=True), _above(0)
_PROBABILITY, _LEVEL = _in(0, 1), _in(0, 0.5, low_open=True)
_SCHEDULES = _one_of("linear", "cosine", "constant")
_POSITIONS = _one_of("answer", "all", "sampled")

#: The declared keys' constraints, checked whenever a :class:`Params` is made (the runner, a notebook, a study's
#: derived parameters). Types are checked first, from the annotations.
CONSTRAINTS: dict[str, Constraint] = {
    "jobs": _or_null(_COUNT),
    "synthetic_authors": _COUNT, "synthetic_questions_per_author": _COUNT, "max_authors": _or_null(_COUNT),
    "eval_max_items": _or_null(_COUNT), "eval_batch_size": _COUNT, "max_new_tokens": _COUNT,
    "mia_k": _in(0, 1, low_open=True), "gradnorm_reduction": _one_of("global", "ou_mean"),
    "extraction_no_match": _one_of("zero", "ou"), "truth_ratio_guard": _one_of("exact", "ou"),
    "answer_tokens": _one_of("separate", "ou_joint"),
    "dtype": _one_of("float32", "bfloat16", "float16", "auto"), "tokenizer_vocab_size": _COUNT,
    "tiny_hidden_size": _COUNT, "tiny_layers": _COUNT, "tiny_heads": _COUNT, "tiny_intermediate_size": _COUNT,
    "lora_rank": _NON_NEGATIVE, "lora_alpha": _or_null(_POSITIVE), "lora_dropout": _in(0, 1, high_open=True),
    "base_epochs": _POSITIVE, "base_lr": _POSITIVE, "base_batch_size": _COUNT,
    "finetune_epochs": _POSITIVE, "finetune_lr": _POSITIVE, "finetune_batch_size": _COUNT,
    "finetune_grad_accum": _COUNT, "finetune_warmup": _PROBABILITY, "finetune_weight_decay": _NON_NEGATIVE,
    "finetune_schedule": _SCHEDULES, "world_replay": _NON_NEGATIVE, "checkpoint_every": _NON_NEGATIVE,
    "unlearn_epochs": _POSITIVE, "unlearn_lr": _POSITIVE, "unlearn_batch_size": _COUNT, "unlearn_grad_accum": _COUNT,
    "unlearn_warmup": _PROBABILITY, "unlearn_weight_decay": _NON_NEGATIVE, "unlearn_schedule": _SCHEDULES,
    "trajectory_max_items": _or_null(_COUNT), "unlearn_save_every": _NON_NEGATIVE, "heldout_authors": _NON_NEGATIVE,
    "beta": _POSITIVE, "forget_weight": _NON_NEGATIVE, "retain_weight": _NON_NEGATIVE,
    "cap_delta": _or_null(_POSITIVE), "cap_on": _one_of("sequence", "token_mean"),
    "lambda_f": _NON_NEGATIVE, "lambda_r": _at_most(0), "rmu_layer": _NON_NEGATIVE, "rmu_steering_coef": _POSITIVE,
    "simnpo_beta": _POSITIVE, "wga_beta": _NON_NEGATIVE, "satimp_beta1": _NON_NEGATIVE, "satimp_beta2": _NON_NEGATIVE,
    "ceu_ignore_first": _NON_NEGATIVE, "undial_beta": _NON_NEGATIVE, "undial_positions": _one_of("answer", "all_ou"),
    "altpo_n_alternates": _COUNT, "altpo_temperature": _POSITIVE,
    "ps_max_items": _or_null(_COUNT), "ps_heldout_items": _or_null(_COUNT),
    "calib_coarse": _COUNT, "calib_fine": _NON_NEGATIVE, "cap_deltas": _each(_POSITIVE), "stopping_every": _COUNT,
    "retain_tolerance": _PROBABILITY, "forget_similar_tolerance": _PROBABILITY,
    "criterion_confidence": _in(0, 1, low_open=True, high_open=True), "bootstrap_resamples": _COUNT,
    "split_calib_coarse": _COUNT, "split_calib_fine": _NON_NEGATIVE,
    "n_samples": _COUNT, "alpha": _LEVEL, "sampler": _one_of("hf", "vllm"), "sample_temperature": _POSITIVE,
    "sample_top_p": _or_null(_in(0, 1, low_open=True)), "sample_max_new_tokens": _COUNT,
    "adaptive_threshold": _PROBABILITY, "sample_max_items": _or_null(_COUNT), "leak_threshold": _PROBABILITY,
    "regime_tolerance": _PROBABILITY, "eo_lambda_f_grid": _each(_NON_NEGATIVE, non_empty=True),
    "eo_lr_grid": _each(_POSITIVE, non_empty=True), "eo_lambda_r": _at_most(0), "eo_lambda_r_grid": _each(_at_most(0)),
    "eo_temperatures": _each(_POSITIVE), "eo_n_samples": _COUNT, "eo_max_items": _or_null(_COUNT),
    "eo_diversity_items": _COUNT, "eo_utility_items": _or_null(_COUNT), "adaptive_thresholds": _each(_PROBABILITY),
    "ed_rho": _NON_NEGATIVE, "table1_tolerance": _PROBABILITY, "table1_sd_min": _PROBABILITY,
    "eo_regime_lambda_f_grid": _each(_POSITIVE), "eo_positions": _each(_POSITIONS),
    "format_max_items": _or_null(_COUNT), "format_options": _above(2, inclusive=True), "format_margin": _PROBABILITY,
    "format_min_items": _COUNT, "format_alpha": _LEVEL,
    "alignment_template": _one_of("phi", "chat"), "alignment_heldout_templates": _NON_NEGATIVE,
    "alignment_eval_per_group": _NON_NEGATIVE, "alignment_method": _one_of("idk", "dpo"),
    "alignment_strengths": _each(_COUNT, non_empty=True), "alignment_lr": _POSITIVE, "comply_epochs": _COUNT,
    "comply_lr": _POSITIVE, "safety_threshold": _PROBABILITY, "alignment_n_samples": _COUNT,
    "alignment_max_new_tokens": _COUNT, "alignment_examples": _NON_NEGATIVE,
}
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
    """default.yaml's keys by section, as its ``# --- <title>`` lines group them (the title up to its first
    parenthesis or colon); the keys above the first section (``profile``, ``seed``, ``jobs``) under ``""``."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in (paths.PARAMS / f"{BASE_PROFILE}.yaml").read_text().splitlines():
        if line.startswith("# ---"):
            current = line[5:].split("(")[0].split(":")[0].strip()
            sections[current] = []
        elif line and not line.startswith("#"):
            sections[current].append(line.split(":", 1)[0].strip())
    return sections


def profile_names() -> list[str]:
    return sorted(p.stem for p in paths.PARAMS.glob("*.yaml"))


def profile_layer(name: str) -> dict[str, Any]:
    """One profile file as written: its own keys only (``extends`` included)."""
    path = paths.PARAMS / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"unknown profile {name!r}; known profiles: {', '.join(profile_names())}")
    with open(path) as f:
        layer = yaml.safe_load(f) or {}
    if not isinstance(layer, dict):
        raise ValueError(f"{path}: a profile is a mapping of parameter names to values")
    return layer


def profile_base(name: str) -> str | None:
    """The profile ``name`` extends: its ``extends`` key, else default (None for default itself)."""
    if name == BASE_PROFILE:
        return None
    return str(profile_layer(name).get("extends", BASE_PROFILE))


def load_profile(name: str) -> dict[str, Any]:
    """The parameters of a profile with its layers merged (default first, then each profile it extends), as
    papermill injects them. ``profile`` is the profile's own name; ``extends`` is dropped."""
    chain: list[str] = []
    current: str | None = name
    while current is not None:
        if current in chain:
            raise ValueError(f"profile {name!r}: 'extends' loops through {' -> '.join(chain + [current])}")
        chain.append(current)
        current = profile_base(current)
    merged: dict[str, Any] = {}
    for layer_name in reversed(chain):
        layer = profile_layer(layer_name)
        layer.pop("extends", None)
        unknown = sorted(set(layer) - set(merged)) if layer_name != BASE_PROFILE else []
        if unknown:
            raise UnknownParameter(unknown_message(unknown, f" in profile {layer_name!r} ({layer_name}.yaml)",
                                                   known=list(merged)))
        merged.update(layer)
    merged["profile"] = name
    return merged


def params_hash(params: Mapping[str, Any], length: int = 12) -> str:
    """A short, stable hash of JSON-serialisable parameters: the key of a cached step."""
    blob = json.dumps(params, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:length]


def jsonable(value: Any) -> Any:
    """Plain JSON values from numpy/torch scalars, tuples, paths and NaN (as None)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and value != value:
        return None  # NaN is not JSON
    return value


def notebook_params(namespace: Mapping[str, Any]) -> Params:
    """The parameters of a notebook run, from its namespace after the parameters cell.

    ``profile`` names the profile, whose layers give every parameter. A parameter defined in the namespace
    (declared in the parameters cell, injected by the runner or papermill) overrides the profile's value
    when it differs from the default profile's: the parameters cell holds the default values, so a notebook
    opened in Jupyter with ``profile`` changed takes that profile's values except for what was edited.
    """
    profile = str(namespace.get("profile", BASE_PROFILE))
    defaults = load_profile(BASE_PROFILE)
    overrides = {k: namespace[k] for k in PARAMETER_NAMES
                 if k != "profile" and k in namespace and namespace[k] != defaults[k]}
    return Params.load(profile, **overrides)
