"""Coarse-to-fine calibration of a control: a coarse grid, then the settings between the best passing one and the
next, with the calibrated model's full PS profile."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ... import pipeline
from ...config import Params
from ...metrics.ps import (
    HELDOUT,
    PSEvaluator,
    PSProfile,
)
from ...unlearning import mix_models
from .controls import MixingControl, mixing_evaluator, profiles_at, setting_key
from .criteria import RetainFirst, Tolerances, relative_loss
from .sweeps import best_passing, judged_row, mixing_grid

# --------------------------------------------------------------------------- coarse-to-fine calibration


@dataclass
class Calibration:
    """The result of :func:`calibrate`: ``best`` is the calibrated control value (None when no setting passes)
    with its ``profile``; ``table`` holds every evaluated setting, coarse and fine; ``region`` the interval
    that was refined (None when there was none)."""

    control: str
    best: float | None
    profile: PSProfile | None
    table: pd.DataFrame = field(repr=False)
    region: tuple[float, float] | None = None
    coarse_best: float | None = None
    #: Set by :func:`calibrate_mixing`: the PS profile at ``best`` and that of the uncontrolled run (a = 1), with
    #: every metric on both sets unless it was asked not to complete them (the other forget splits).
    reported: PSProfile | None = None
    uncontrolled: PSProfile | None = None

    @property
    def found(self) -> bool:
        return self.best is not None


def _fine_values(lo: float, hi: float, n: int, allowed: Sequence[float] | None) -> list[float]:
    """n values strictly inside (lo, hi), evenly spaced; for a discrete control, the available values
    inside it nearest to those."""
    inside = list(np.linspace(lo, hi, n + 2)[1:-1])
    if allowed is None:
        return [float(v) for v in inside]
    low, high = min(lo, hi), max(lo, hi)
    candidates = [v for v in allowed if low < v < high]
    picked = {min(candidates, key=lambda c: (abs(c - v), c)) for v in inside} if candidates else set()
    return sorted(picked, reverse=hi < lo)


def calibrate(control_values_coarse: Sequence[float], evaluate: Callable[[float], PSProfile], fine_points: int,
              before: PSProfile, tolerances: Tolerances, control: str | None = None, stronger: str = "higher",
              allowed: Sequence[float] | None = None, *, jobs: int | None) -> Calibration:
    """Coarse-to-fine calibration of one scalar control (docs/metrics.md §5.3).

    1. Evaluate every coarse value; among those that pass (:func:`passes` against ``before``) take the one
       with the lowest PS-exact on forget.
    2. Evaluate ``fine_points`` values strictly between it and its neighbour on the coarse grid towards
       stronger unlearning (``stronger="higher"``: larger values unlearn more, as a, t and δ do). When the
       best coarse value is the strongest of the grid there is no such region and nothing is refined;
       when no coarse value passes, neither (put a setting known to pass, a = 0, in the coarse grid).
    3. Return the best passing setting of all, with the full table (``stage`` coarse / fine).

    ``evaluate(value) -> PSProfile`` may be a :class:`ControlEvaluator`; its ``allowed`` values (early
    stopping's kept steps) are used for the fine grid unless ``allowed`` is given, and the values of each grid
    are evaluated side by side in up to ``jobs`` worker processes.
    """
    if stronger not in ("higher", "lower"):
        raise ValueError(f"stronger must be 'higher' or 'lower', got {stronger!r}")
    if fine_points < 0:
        raise ValueError(f"fine_points must be >= 0, got {fine_points}")
    control = control or getattr(evaluate, "name", "value")
    allowed = allowed if allowed is not None else getattr(evaluate, "allowed", None)
    coarse = sorted({setting_key(v) for v in control_values_coarse}, reverse=stronger == "lower")  # weak -> strong
    if not coarse:
        raise ValueError("no coarse values to calibrate over")

    profiles: dict[float, PSProfile] = {}

    def evaluate_rows(values: Sequence[float], stage: str) -> list[dict[str, Any]]:
        rows = []
        for v, profile in zip(values, profiles_at(evaluate, values, jobs)):
            profiles[setting_key(v)] = profile
            rows.append(judged_row(control, v, profile, before, tolerances, stage))
        return rows

    rows = evaluate_rows(coarse, "coarse")
    coarse_best = best_passing(pd.DataFrame(rows), control)
    region = None
    if coarse_best is not None:
        position = coarse.index(setting_key(coarse_best[control]))
        if position + 1 < len(coarse):
            region = (coarse[position], coarse[position + 1])
            seen = {setting_key(r[control]) for r in rows}
            fine = [v for v in _fine_values(*region, fine_points, allowed) if setting_key(v) not in seen]
            rows += evaluate_rows(fine, "fine")
    table = pd.DataFrame(rows)
    best = best_passing(table, control)
    best_value = None if best is None else float(best[control])
    return Calibration(control=control, best=best_value, profile=None if best is None else profiles[setting_key(best_value)],
                       table=table, region=region,
                       coarse_best=None if coarse_best is None else float(coarse_best[control]))


def calibrate_mixing(mixing: MixingControl, before: PSProfile, coarse_points: int, fine_points: int,
                     tolerances: Tolerances, complete: bool = True, *, jobs: int | None) -> Calibration:
    """Calibrate model mixing of one unlearned model (the paper's recommended control): :func:`calibrate` over
    :func:`mixing_grid`, then the full profile (:data:`TABLE_METRICS`) at the calibrated a and at a = 1, the
    uncontrolled run (``complete=False`` keeps the profiles the calibration computed: the other forget splits
    report forget PS-exact alone, and held-out PS-similar is a search over every held-out answer). Settings
    ``mixing`` already evaluated (in a sweep) are not evaluated again."""
    result = calibrate(mixing_grid(coarse_points), mixing, fine_points, before, tolerances, control="a", jobs=jobs)
    result.uncontrolled = mixing(1.0)
    if complete:
        result.uncontrolled = mixing.evaluate.complete(mixing.unlearned, result.uncontrolled)
    if result.found:
        result.reported = result.profile
        if complete:
            result.reported = mixing.evaluate.complete(mix_models(mixing.original, mixing.unlearned, result.best),
                                                       result.profile)
    return result


def calibrate_methods(params: Params, methods: Sequence[str], original,
                      evaluate: PSEvaluator, before: PSProfile, tolerances: Tolerances, coarse_points: int,
                      fine_points: int, swept: Mapping[str, MixingControl] | None = None,
                      complete: bool = True) -> dict[str, Calibration]:
    """Each unlearning run of ``methods`` calibrated by model mixing of ``original`` (the target) with its
    unlearned model (notebook 02's run, :func:`pipeline.unlearned_model`), see :func:`calibrate_mixing`.

    ``swept`` holds mixing controls that a sweep already evaluated (GD's, in Fig. 2), reused as they are; the
    others compute forget PS-similar only where held-out retain passes (:class:`RetainFirst`). Runs not trained yet
    are trained side by side, and each grid's settings evaluated side by side, in up to ``jobs`` worker processes."""
    jobs = params.jobs
    swept = dict(swept or {})
    retain_first = RetainFirst(evaluate, before, tolerances)
    pipeline.unlearned_models(params, [m for m in methods if m not in swept])
    calibrations = {}
    for method in methods:
        mixing = swept.get(method) or mixing_evaluator(
            original, pipeline.unlearned_model(params, method).model, retain_first, before)
        calibrations[method] = calibrate_mixing(mixing, before, coarse_points, fine_points, tolerances, complete,
                                                jobs=jobs)
    return calibrations


def found_unlearning(calibration: Calibration) -> bool:
    """Whether calibration found a passing setting that unlearns at all (a > 0; a = 0 is the model before)."""
    return calibration.found and calibration.best > 0


def uncontrolled_loss(calibration: Calibration, before: PSProfile) -> float:
    """The fraction of held-out retain PS-exact the uncontrolled run (a = 1) loses."""
    return relative_loss(before[HELDOUT]["ps_exact"], calibration.uncontrolled[HELDOUT]["ps_exact"])


def calibration_summary(calibrations: Mapping[str, Calibration], before: PSProfile) -> pd.DataFrame:
    """One row per method: the calibrated and coarse a, how many settings were evaluated, and the uncontrolled
    run's loss of held-out retain PS-exact."""
    return pd.DataFrame({m: {"calibrated a": c.best, "coarse a": c.coarse_best, "settings evaluated": len(c.table),
                             "uncontrolled retain PS-exact loss": uncontrolled_loss(c, before)}
                         for m, c in calibrations.items()}).T

