"""An unlearning run's settings: the profile's shared keys, then ``method_settings[<run>]``; the front door's checks
that need the data source and the runs (split names, run names)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import config, paths
from ..config import Params
from ..data.tofu import (
    FORGET_TO_RETAIN,
)
from ..runs import UNLEARNED_PREFIX
from ..unlearning import (
    COMMON_PARAMETERS,
    ENTROPY_POSITIONS,
    METHOD_PARAMETERS,
    METHODS,
    OPTIONS,
)
from .corpus import data_splits

#: Keys of a profile that configure an unlearning run, derived from the method registry: the profile keys that are
#: options of :class:`~unlearnkit.unlearning.UnlearningLoss` (a method's own or shared, or common to every method), in
#: default.yaml's order. ``method_settings[<run>]`` overrides them per run (and may set the options the profile
#: leaves out). A method added with a new option gets its key here by declaring it in default.yaml.
UNLEARN_LOSS_KEYS = tuple(k for k in config.PARAMETER_NAMES if k in OPTIONS or k in COMMON_PARAMETERS)


#: Training keys that ``method_settings[<run>]`` may override too: a run with a gentler learning rate, a longer
#: schedule or weights kept more densely is its own named run (``gd_mild: {method: gd, unlearn_lr: 3.0e-4}``).
UNLEARN_TRAIN_KEYS = ("unlearn_epochs", "unlearn_lr", "unlearn_batch_size", "unlearn_grad_accum", "unlearn_warmup",
                      "unlearn_weight_decay", "unlearn_schedule", "unlearn_save_every")
#: Data keys a run may override: the forget split it unlearns (Wang et al.'s forget01/05 calibrations,
#: ``ga_forget01: {method: ga, forget_split: forget01}``), its retain split following it.
RUN_DATA_KEYS = ("forget_split",)
#: Every key of ``method_settings[<run>]`` that reaches the run's parameters rather than its loss.
RUN_PARAM_KEYS = UNLEARN_TRAIN_KEYS + RUN_DATA_KEYS


def run_overrides(params: Params, run: str) -> dict[str, Any]:
    paths.check_name("unlearning run", run)
    overrides = dict(params.method_settings.get(run, {}))
    method = overrides.get("method", run)
    if method not in METHODS:
        known = sorted(set(METHODS) | set(params.method_settings))
        near = config.closest(str(run), known)
        raise ValueError(f"unknown unlearning run {run!r}{f' (did you mean {near}?)' if near else ''}: not a method "
                         f"and not in method_settings; known: {', '.join(known)}")
    # A misspelt key would otherwise be dropped without a word and the run trained with the profile's value.
    allowed = {"method", *UNLEARN_LOSS_KEYS, *RUN_PARAM_KEYS, *COMMON_PARAMETERS,
               *(p for names in METHOD_PARAMETERS.values() for p in names)} - {"ref_model"}
    unknown = sorted(set(overrides) - allowed)
    if unknown:
        raise ValueError(f"method_settings[{run!r}] has unknown key(s) {', '.join(unknown)}; allowed: {sorted(allowed)}")
    for key, value in overrides.items():  # each value held to its key's one rule: the profile key's, or the option's
        rule = _rule(key)
        if rule is not None and not rule.holds(value):
            raise ValueError(f"method_settings[{run!r}][{key!r}] is {value!r}; it must be {rule.text}")
    return overrides


def _rule(key: str) -> config.Constraint | None:
    """What a value of ``method_settings`` under ``key`` must be: the profile key's constraint where the key is a
    parameter (``unlearn_lr``, ``beta``), else the loss option's (``npo_retain_term``), else ``entropy_positions``'."""
    if key in config.CONSTRAINTS:
        return config.CONSTRAINTS[key]
    if key in OPTIONS:
        return OPTIONS[key].rule
    if key == "entropy_positions":
        return config.one_of(*ENTROPY_POSITIONS)
    return None


#: The keys that name unlearning runs (a method, or a key of ``method_settings``).
RUN_LIST_KEYS = ("methods", "calibration_methods", "interference_runs", "regime_runs", "eo_table_runs", "eo_method",
                 "eo_regime_runs", "attack_runs")
#: The keys that name splits of the data: forget splits, retain splits.
FORGET_SPLIT_KEYS, RETAIN_SPLIT_KEYS = ("forget_split", "calibration_splits"), ("retain_splits",)


def check_params(params: Params, extra_runs: Sequence[str] = ()) -> Params:
    """What a profile's values must be beyond their types and ranges (:data:`config.CONSTRAINTS`), checked before
    any work: split names that exist for the data source, and run names that are a method or a key of
    ``method_settings`` with valid settings (``extra_runs``: a run asked for by name, notebook 02's ``method``).
    A ValueError with one line names the key, the value and what it may be."""
    available = data_splits(params)
    for keys, kind, names in ((FORGET_SPLIT_KEYS, "forget", FORGET_TO_RETAIN),
                              (RETAIN_SPLIT_KEYS, "retain", FORGET_TO_RETAIN.values())):
        valid = [s for s in names if s in available]
        for key in keys:
            values = params[key] if isinstance(params[key], list) else [params[key]]
            for value in values:
                if value not in valid:
                    near = config.closest(str(value), valid)
                    raise ValueError(f"parameter {key!r}: {value!r} is not a {kind} split of data source "
                                     f"{params.data_source!r}{f' (did you mean {near}?)' if near else ''}; "
                                     f"{kind} splits: {', '.join(valid) or 'none'}")
    _check_case(params, extra_runs)
    for run in params.method_settings:  # every named run's settings, whether a list names it or not
        try:
            run_overrides(params, run)
        except ValueError as exc:
            raise ValueError(f"parameter 'method_settings': {exc}") from None
    for key in (*RUN_LIST_KEYS, "method"):
        values = extra_runs if key == "method" else params[key]
        for run in [values] if isinstance(values, str) else values or ():  # null: the notebook's own choice
            try:
                run_overrides(params, run)
            except ValueError as exc:
                raise ValueError(f"parameter {key!r}: {exc}") from None
    for name in params.format_models or ():  # a model of the store: base, target, a retain model or a run
        if name in ("base", "target") or name in FORGET_TO_RETAIN.values():
            continue
        try:
            run_overrides(params, name.removeprefix(UNLEARNED_PREFIX))
        except ValueError as exc:
            raise ValueError(f"parameter 'format_models': {name!r} is not base, target, a retain model "
                             f"({', '.join(sorted(set(FORGET_TO_RETAIN.values())))}) or an unlearning run ({exc})") \
                from None
    return params


def _check_case(params: Params, extra_runs: Sequence[str]) -> None:
    """No two run names of the profile (a method, a key of ``method_settings``, a name a list gives) that differ only
    in case: ``GA`` and ``ga`` would share their folders and files on a case-insensitive file system."""
    named = [*params.method_settings, *extra_runs]
    for key in RUN_LIST_KEYS:
        values = params[key]
        named += [values] if isinstance(values, str) else [v for v in values or () if isinstance(v, str)]
    seen: dict[str, str] = {}
    for name in dict.fromkeys(named):
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise ValueError(f"runs {other!r} and {name!r} differ only in case: they would share a folder on a "
                             "case-insensitive file system (macOS, Windows); rename one")


def run_params(params: Params, run: str) -> Params:
    """The parameters one unlearning run trains with: the profile's, with the ``unlearn_*`` keys and the forget
    split its ``method_settings`` entry overrides."""
    overrides = run_overrides(params, run)
    return params.replace(**{k: v for k, v in overrides.items() if k in RUN_PARAM_KEYS})


def with_run(params: Params, run: str, **settings: Any) -> Params:
    """The parameters with one more unlearning run, ``method_settings[run] = settings`` (the profile is not
    changed): how a study adds the runs it trains itself (a learning-rate grid, an entropy-weight sweep)."""
    return params.replace(method_settings={**params.method_settings, run: dict(settings)})


def own_settings(params: Mapping[str, Any], run: str, without: Iterable[str] = ()) -> dict[str, Any]:
    """``run``'s own settings as the profile writes them, ``method_settings[run]`` (``{"method": run}`` for a bare
    method), less the keys ``without`` (those a run derived from it sets itself): the one way a study reads a run's
    settings to derive another (:func:`derived_run`, the entropy sweeps), or the method of a stored run.
    ``params``: a :class:`Params`, or the parameters a run record stored."""
    settings = (params.get("method_settings") or {}).get(run, {"method": run})
    return {k: v for k, v in settings.items() if k not in without}


def derived_run(params: Params, run: str, name: str, **changes: Any) -> Params:
    """The parameters with one more run, ``name``: ``run``'s own settings and schedule with ``changes`` (a cap, a
    forget split), but not where ``run`` keeps its weights, which serves early stopping of ``run`` alone."""
    own = own_settings(params, run, without=("unlearn_save_every",))
    return with_run(params, name, **{**own, "method": unlearning_settings(params, run)["method"], **changes})


def unlearning_settings(params: Params, run: str) -> dict[str, Any]:
    """The loss settings of one unlearning run: the profile's shared keys, then ``method_settings[run]``.
    ``run`` is a method name (``npo``) or a named variant (``npo_eo``: NPO plus entropy optimisation)."""
    overrides = {k: v for k, v in run_overrides(params, run).items() if k not in RUN_PARAM_KEYS}
    method = overrides.pop("method", run)
    settings = {k: params[k] for k in UNLEARN_LOSS_KEYS if params[k] is not None}
    settings.update(overrides)
    if settings.get("cap_delta") is None:
        settings.pop("cap_on", None)  # what a cap compares means nothing without one (and keeps uncapped runs' keys)
    # Only what the method uses: the others would only be warned about.
    allowed = set(COMMON_PARAMETERS) | set(METHOD_PARAMETERS.get(method, ()))
    return {"method": method, **{k: v for k, v in settings.items() if k in allowed}}


def check_sources(params: Params) -> None:
    """What the notebooks will read, checked before any kernel starts (a ValueError in one line): the model
    (:func:`models.check_source`); for a local folder of TOFU JSON Lines, every split file it holds, read and
    validated (an empty or corrupt file is named with its line); for a Hub data set while offline, that it is in the
    local cache (:func:`data.tofu.check_hub_cached`)."""
    from .. import models
    from ..data.tofu import TofuDataError, TofuSource, check_hub_cached

    models.check_source(params.model, "model")
    spec = paths.from_environment(params.data_source, "a folder of TOFU JSON Lines files")
    if spec == "synthetic":
        return
    try:
        source = TofuSource(spec)
        if not source.is_local:
            check_hub_cached(source.spec)
            return
    except TofuDataError as exc:
        raise ValueError(f"data_source {params.data_source!r}: {exc}") from None
    for split in source.available_splits():
        try:
            source.load(split)
        except TofuDataError as exc:
            raise ValueError(f"data_source {params.data_source!r}: {exc}") from None
