"""A control as a function of its setting: model mixing (a), early stopping (t), objective capping (δ), each giving
the PS profile of the model at that setting."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ... import models, pipeline, runs, workers
from ...config import Params
from ...metrics.ps import (
    PSEvaluator,
    PSProfile,
)
from ...unlearning import CAPPABLE_METHODS, mix_models
from .criteria import RetainFirst

# --------------------------------------------------------------------------- a control as a function


def setting_key(value: float) -> float:
    """A control value as the key of its setting (rounded, so that 0.1 * 3 and 0.3 are one setting)."""
    return round(float(value), 10)


class ControlEvaluator:
    """A memoised ``value -> PSProfile`` for one control: each setting is built and evaluated once, however
    many sweeps and calibrations ask for it. ``known`` seeds settings whose profile is already known (a = 0
    of model mixing and t = 0 of early stopping are the model before unlearning)."""

    def __init__(self, name: str, profile_of: Callable[[float], PSProfile],
                 known: Mapping[float, PSProfile] | None = None, allowed: Sequence[float] | None = None):
        self.name = name
        self._profile_of = profile_of
        self.results: dict[float, PSProfile] = {setting_key(v): p for v, p in (known or {}).items()}
        self.allowed = None if allowed is None else sorted(float(v) for v in allowed)

    def __call__(self, value: float) -> PSProfile:
        return self.many([value], 1)[0]

    def many(self, values: Iterable[float], jobs: int | None) -> list[PSProfile]:
        """The profiles of ``values``; the settings not evaluated yet are built and evaluated side by side in up to
        ``jobs`` worker processes (:func:`unlearnkit.workers.side_by_side`; 1: here, in order)."""
        values = [float(v) for v in values]
        for value in values:
            if self.allowed is not None and setting_key(value) not in {setting_key(v) for v in self.allowed}:
                raise ValueError(f"{self.name} = {value} is not an available setting; available: {self.allowed}")
        todo = [v for v in dict.fromkeys(setting_key(v) for v in values) if v not in self.results]
        found = workers.side_by_side(self._profile_of, [(v,) for v in todo], jobs, desc=f"settings of {self.name}")
        self.results.update(zip(todo, found))
        return [self.results[setting_key(v)] for v in values]


def profiles_at(evaluate: Callable[[float], PSProfile], values: Sequence[float], jobs: int | None) -> list[PSProfile]:
    """``evaluate`` at every value: side by side where it is a :class:`ControlEvaluator`, else one after the other."""
    if isinstance(evaluate, ControlEvaluator):
        return evaluate.many(values, jobs)
    return [evaluate(v) for v in values]


class MixingControl(ControlEvaluator):
    """a -> the profile of (1 − a)·θ_original + a·θ_unlearned, keeping both models and the PS evaluator so that
    :func:`calibrate_mixing` can report the full profile at the calibrated a and at a = 1."""

    def __init__(self, original, unlearned, evaluate: PSEvaluator | RetainFirst, before: PSProfile | None = None):
        super().__init__("a", lambda a: evaluate(mix_models(original, unlearned, a)),
                         known={0.0: before} if before is not None else None)
        self.original, self.unlearned, self.evaluate = original, unlearned, evaluate


def mixing_evaluator(original, unlearned, evaluate: PSEvaluator | RetainFirst,
                     before: PSProfile | None = None) -> MixingControl:
    """Model mixing of two models. a = 0 is the original model bit for bit, so ``before`` (its profile) is
    reused there."""
    return MixingControl(original, unlearned, evaluate, before)


def early_stopping_evaluator(params: Params, run: str, evaluate: Callable[[Any], PSProfile],
                             before: PSProfile | None = None) -> ControlEvaluator:
    """t -> the profile of the weights kept at step t of notebook 02's run ``run`` (t = 0: ``before``)."""
    kept = dict(runs.trajectory_steps(params, run))
    if not kept:
        key = runs.notebook_key(runs.UNLEARNING)
        raise FileNotFoundError(f"no weights kept along unlearning run {run!r} of profile {params.profile!r}, seed "
                                f"{params.seed}: run notebook {key} with unlearn_save_every > 0 (make notebook NB={key} "
                                f"PROFILE={params.profile})")

    def profile_of(step: float) -> PSProfile:
        return evaluate(models.load_model(kept[int(step)], dtype="float32", template=None).model)

    steps = ([0] if before is not None else []) + sorted(kept)
    return ControlEvaluator("t", profile_of, known={0: before} if before is not None else None, allowed=steps)


class CappedRun(NamedTuple):
    """The parameters of one capped run (its entry added to ``method_settings``) and the run's name."""

    params: Params
    run: str


def capped_run(params: Params, method: str, delta: float) -> CappedRun:
    """The parameters with one more entry in ``method_settings``, ``<run>_cap<δ>`` -> the settings of ``method``
    (a method or a named run of the GA family) with ``cap_delta: δ``, and that run's name:
    :func:`pipeline.unlearned_model` caches it under its own folder (``models/unlearned-gd_cap2``) and key, so each
    δ is trained once."""
    kind = pipeline.unlearning_settings(params, method)["method"]
    if kind not in CAPPABLE_METHODS:
        raise ValueError(f"objective capping applies to {', '.join(CAPPABLE_METHODS)}, not {method!r} ({kind})")
    if not (math.isfinite(delta) and delta > 0):
        raise ValueError(f"the cap δ must be a positive number, got {delta}")
    run = f"{method}_cap{float(delta):g}"
    return CappedRun(pipeline.derived_run(params, method, run, cap_delta=float(delta)), run)


def capping_evaluator(params: Params, evaluate: Callable[[Any], PSProfile],
                      method: str) -> ControlEvaluator:
    """δ -> the profile of ``method`` rerun with each example's forget NLL capped at δ (``cap_on``: the sequence
    NLL by default; trained on first use, cached on disk after). The profile also records, under ``"training"``,
    the batch-mean forget NLL at the run's last step in the unit δ caps (``forget_nll``: the sequence NLL, or the
    mean token NLL with ``cap_on: token_mean``), uncapped as logged; capping should hold it near δ."""
    key = "forget_nll" if params.cap_on == "token_mean" else "forget_sequence_nll"

    def profile_of(delta: float) -> PSProfile:
        capped = capped_run(params, method, delta)
        trained = pipeline.unlearned_model(capped.params, capped.run)
        logged = [h for h in trained.history if key in h]
        training = {"forget_nll": logged[-1][key]} if logged else {}
        return {**evaluate(trained.model), "training": training}

    return ControlEvaluator("delta", profile_of)
