"""Model mixing calibrated on the 1 % and 5 % forget splits (Wang et al.'s forget01 and forget05)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ... import models, pipeline
from ...config import Params
from ...metrics.ps import (
    FORGET,
    PSEvaluator,
    PSProfile,
    item_values,
)
from .criteria import Tolerances, percentile_interval
from .methods import working_share
from .search import Calibration, calibrate_methods

# --------------------------------------------------------------------------- the 1 % and 5 % forget splits


def split_run(params: Params, run: str, split: str) -> tuple[Params, str]:
    """``run`` unlearning ``split`` instead of the profile's forget split: a named run ``<run>_<split>`` with the
    run's settings and schedule (but where it keeps weights: only model mixing is calibrated on other splits), and
    the parameters that know it."""
    name = f"{run}_{split}"
    return pipeline.derived_run(params, run, name, forget_split=split), name


@dataclass
class SplitCalibration:
    """Model mixing calibrated for each run on one forget split: the target's profile on it (``before``), the
    evaluator of that split, and each run's calibration keyed by the profile's run name."""

    split: str
    before: PSProfile
    evaluate: PSEvaluator
    calibrations: dict[str, Calibration]


def calibrate_splits(params: Params, splits: Sequence[str], run_names: Sequence[str],
                     target: models.LoadedModel, forget_rows_of: Callable[[str], Sequence[Mapping[str, Any]]],
                     evaluate: PSEvaluator, tolerances: Tolerances, coarse_points: int, fine_points: int,
                     known: Mapping[str, SplitCalibration] | None = None) -> dict[str, SplitCalibration]:
    """Model mixing (alone) calibrated for each run on each forget split of ``splits`` (Wang et al.'s forget01 and
    forget05): each run is retrained on the split (:func:`split_run`), PS is computed on that split's forget rows
    (``forget_rows_of(split)``) and the same held-out retain rows as ``evaluate``. ``known`` holds splits done
    already (the profile's own forget split, from section 3). Every split's runs are trained side by side first,
    and each grid's settings evaluated side by side, in up to ``jobs`` worker processes."""
    out = dict(known or {})
    todo = [split for split in splits if split not in out]
    split_params, names = params, {}
    for split in todo:
        for run in run_names:
            split_params, names[split, run] = split_run(split_params, run, split)
    pipeline.unlearned_models(split_params, list(names.values()))
    for split in todo:
        split_evaluate = replace(evaluate, forget_rows=list(forget_rows_of(split)))
        before = split_evaluate(target.model, split_evaluate.metrics)
        found = calibrate_methods(split_params, [names[split, run] for run in run_names], target.model,
                                  split_evaluate, before, tolerances, coarse_points, fine_points, complete=False)
        out[split] = SplitCalibration(split, before, split_evaluate, {run: found[names[split, run]] for run in run_names})
    return {split: out[split] for split in splits if split in out}


def mean_interval(values: Sequence[float], tolerances: Tolerances) -> tuple[float, float]:
    """A percentile-bootstrap interval of a mean over items at ``tolerances.confidence``."""
    values = np.asarray(values, float)
    if len(values) < 2 or np.all(values == values[0]):
        return (float(values.mean()),) * 2 if len(values) else (math.nan, math.nan)
    return percentile_interval((values,), np.mean, tolerances)


def splits_table(split_calibrations: Mapping[str, SplitCalibration], tolerances: Tolerances) -> pd.DataFrame:
    """One row per split and run: the forget items, the calibrated a, forget PS-exact before, at the calibrated a
    (with its bootstrap interval over items) and uncontrolled, and the share of the way (model mixing only)."""
    rows = []
    for split, sc in split_calibrations.items():
        for run, calibration in sc.calibrations.items():
            profile = calibration.reported
            values = None if profile is None else item_values(profile, FORGET, "ps_exact")
            low, high = mean_interval(values, tolerances) if values is not None else (math.nan, math.nan)
            rows.append({"split": split, "run": run, "forget items": len(sc.evaluate.forget_rows),
                         "calibrated a": calibration.best,
                         "forget PS-exact before": sc.before[FORGET]["ps_exact"],
                         "forget PS-exact calibrated": math.nan if profile is None else profile[FORGET]["ps_exact"],
                         "interval low": low, "interval high": high,
                         "forget PS-exact uncontrolled": calibration.uncontrolled[FORGET]["ps_exact"],
                         "share of the way": working_share(calibration, sc.before, calibration.uncontrolled)})
    return pd.DataFrame(rows)


