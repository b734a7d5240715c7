"""Every control of every method: which control works, how smoothly, and Tables 2 and 3."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ... import models, pipeline, runs
from ...config import Params
from ...metrics.ps import (
    FORGET,
    HELDOUT,
    PSEvaluator,
    PSProfile,
    flatten,
    means,
)
from ...unlearning import CAPPABLE_METHODS, mix_models
from .controls import capped_run, capping_evaluator, early_stopping_evaluator
from .criteria import FAIL, PASS, TABLE_METRICS, UNCERTAIN, RetainFirst, Tolerances
from .search import Calibration, calibrate
from .sweeps import best_passing, with_epochs

# --------------------------------------------------------------------------- every control of every method


#: Why objective capping does not apply to a method (docs/metrics.md §5.2): the paper defines it on the
#: unbounded forget NLL that the GA family ascends.
NOT_CAPPED = {
    "npo": "NPO is not capped: its forget gradient is GA's weighted by a factor that vanishes as the model's "
           "likelihood falls below the reference's, so it already stops pushing an example smoothly",
    "idk": "IDK is not capped: it descends on 'I don't know' answers, there is no ascent on the forget NLL to cap",
    "dpo": "DPO is not capped: its forget term is a bounded preference loss, not the forget NLL",
    "rmu": "RMU is not capped: its forget term is a distance to a steering vector, not the forget NLL",
}
#: The controls in the order of Wang et al.'s Fig. 2, with their names.
CONTROL_NAMES = {"delta": "objective capping", "t": "early stopping", "a": "model mixing"}
#: A control *works* for a method when its best passing setting takes forget PS-exact at least this share of the
#: way from the model before unlearning to the uncontrolled run (issue #13's criterion).
WORKING_SHARE = 1 / 3


def calibration_from_sweep(table: pd.DataFrame, control: str) -> Calibration:
    """A full sweep (every setting of a grid, as in section 2) read as a calibration: its best passing setting."""
    best = best_passing(table, control)
    return Calibration(control=control, best=None if best is None else float(best[control]), profile=None,
                       table=table)


def _as_calibration(found: pd.DataFrame | Calibration, control: str) -> Calibration:
    return found if isinstance(found, Calibration) else calibration_from_sweep(found, control)


def stopping_grid(kept_steps: Sequence[float], every: int) -> list[float]:
    """The coarse grid of early stopping: t = 0 (the model before), every ``every``-th kept step and the last."""
    if every < 1:
        raise ValueError(f"the early-stopping grid takes every n-th step with n >= 1, got {every}")
    kept = sorted(float(t) for t in kept_steps)
    grid = {0.0, kept[-1]} | {t for t in kept if t > 0 and int(t) % every == 0}
    return sorted(t for t in grid if t == 0 or t in kept)


def calibrate_early_stopping(params: Params, run: str, evaluate: Callable[[Any], PSProfile], before: PSProfile,
                             tolerances: Tolerances, every: int, fine_points: int) -> Calibration:
    """Early stopping of one run calibrated coarse to fine over its kept steps: every ``every``-th step, then the
    kept steps between the best passing one and the next (:func:`calibrate` with the kept steps as allowed); its
    table carries each step's epoch. ``evaluate`` may be a judge of :func:`stopping_judge` (section 1: with risks)."""
    jobs = params.jobs
    control = early_stopping_evaluator(params, run, evaluate, before)
    result = calibrate(stopping_grid(control.allowed, every), control, fine_points, before, tolerances, control="t",
                       jobs=jobs)
    result.table = with_epochs(result.table, params, run)
    return result


def calibrate_capping(params: Params, run: str, evaluate: Callable[[Any], PSProfile],
                      before: PSProfile, tolerances: Tolerances, deltas: Sequence[float]) -> Calibration:
    """Objective capping of one run coarse to fine over the grid ``deltas`` (each δ is a training run): every other
    δ and the largest first, then the δ of the grid between the best passing one and the next."""
    jobs = params.jobs
    grid = sorted(float(d) for d in deltas)
    coarse = sorted(set(grid[::2]) | {grid[-1]})
    return calibrate(coarse, capping_evaluator(params, evaluate, run), len(grid), before, tolerances,
                     control="delta", allowed=grid, jobs=jobs)


@dataclass
class MethodControls:
    """The three controls of one unlearning run (``controls`` keyed ``delta``, ``t``, ``a``; no ``delta`` where
    capping does not apply, with the reason in ``not_capped``) and the run's uncontrolled profile (a = 1)."""

    run: str
    method: str
    controls: dict[str, Calibration]
    uncontrolled: PSProfile
    not_capped: str | None = None


def control_methods(params: Params, run_names: Sequence[str], evaluate: PSEvaluator,
                    before: PSProfile, tolerances: Tolerances, mixing: Mapping[str, Calibration],
                    cap_deltas: Sequence[float], stopping_every: int, fine_points: int,
                    known: Mapping[str, Mapping[str, pd.DataFrame | Calibration]] | None = None) -> dict[str, MethodControls]:
    """Every run of ``run_names`` under the three controls: capping over ``cap_deltas`` (GA family only),
    early stopping coarse to fine over its kept steps, and its model-mixing calibration from ``mixing``
    (:func:`calibrate_methods`). ``known`` holds sweeps or calibrations already made (GD's of sections 1-2);
    elsewhere forget PS-similar is only computed where held-out retain holds (:class:`RetainFirst`)."""
    retain_first = RetainFirst(evaluate, before, tolerances)
    out = {}
    for run in run_names:
        method = pipeline.unlearning_settings(params, run)["method"]
        done = dict((known or {}).get(run, {}))
        controls: dict[str, Calibration] = {}
        if method in CAPPABLE_METHODS:
            controls["delta"] = (_as_calibration(done["delta"], "delta") if "delta" in done else
                                 calibrate_capping(params, run, retain_first, before, tolerances, cap_deltas))
        controls["t"] = (_as_calibration(done["t"], "t") if "t" in done else
                         calibrate_early_stopping(params, run, retain_first, before, tolerances, stopping_every,
                                                  fine_points))
        controls["a"] = mixing[run]
        out[run] = MethodControls(run, method, controls, mixing[run].uncontrolled,
                                  None if "delta" in controls else NOT_CAPPED.get(method, f"{method} is not capped"))
    return out


def best_row(calibration: Calibration) -> pd.Series | None:
    return best_passing(calibration.table, calibration.control)


def working_share(calibration: Calibration, before: PSProfile, uncontrolled: PSProfile) -> float:
    """How far the control's best passing setting takes forget PS-exact from the model before unlearning (0) to
    the uncontrolled run (1); NaN when nothing passes or the uncontrolled run does not lower it."""
    best = best_row(calibration)
    start, end = before[FORGET]["ps_exact"], uncontrolled[FORGET]["ps_exact"]
    if best is None or not start > end:
        return math.nan
    return float((start - best[f"{FORGET}_ps_exact"]) / (start - end))


def largest_step(calibration: Calibration, before: PSProfile) -> float:
    """How coarsely a control moves the held-out memory: the largest change of held-out retain PS-exact between
    neighbouring evaluated settings, as a share of its value before unlearning (small is smooth)."""
    table = calibration.table.sort_values(calibration.control)
    values = table[f"{HELDOUT}_ps_exact"].to_numpy(dtype=float)
    if len(values) < 2 or before[HELDOUT]["ps_exact"] <= 0:
        return math.nan
    return float(np.max(np.abs(np.diff(values))) / before[HELDOUT]["ps_exact"])


def controls_summary(method_controls: Mapping[str, MethodControls], before: PSProfile) -> pd.DataFrame:
    """One row per run and control: the best passing setting, how many settings pass, are uncertain or fail, its
    forget PS-exact, the share of the way to the uncontrolled run, whether the control works (share ≥ 1/3), and the
    largest step of held-out retain PS-exact between neighbouring settings."""
    rows = []
    for run, mc in method_controls.items():
        for control, calibration in mc.controls.items():
            best = best_row(calibration)
            statuses = calibration.table["status"] if "status" in calibration.table else pd.Series(dtype=str)
            share = working_share(calibration, before, mc.uncontrolled)
            rows.append({"run": run, "control": CONTROL_NAMES[control], "best setting": None if best is None else
                         float(best[control]), "settings": len(calibration.table),
                         "pass": int((statuses == PASS).sum()), "uncertain": int((statuses == UNCERTAIN).sum()),
                         "fail": int((statuses == FAIL).sum()),
                         "forget PS-exact at best": math.nan if best is None else float(best[f"{FORGET}_ps_exact"]),
                         "uncontrolled forget PS-exact": mc.uncontrolled[FORGET]["ps_exact"],
                         "share of the way": share, "works": bool(share >= WORKING_SHARE),
                         "largest held-out step": largest_step(calibration, before)})
    return pd.DataFrame(rows)


def control_model(params: Params, run: str, control: str, value: float, original):
    """The model of one setting: the mix at a, the weights kept at step t, or the run capped at δ."""
    if control == "a":
        return mix_models(original, pipeline.unlearned_model(params, run).model, value)
    if control == "t":
        if value == 0:
            return original
        kept = dict(runs.trajectory_steps(params, run))[int(value)]
        return models.load_model(kept, dtype="float32", template=None).model
    if control == "delta":
        capped = capped_run(params, run, value)
        return pipeline.unlearned_model(capped.params, capped.run).model
    raise ValueError(f"unknown control {control!r}; use {', '.join(CONTROL_NAMES)}")


def best_control(mc: MethodControls) -> str | None:
    """The control whose best passing setting unlearns most (lowest forget PS-exact), model mixing on a tie; None
    when no control passes anywhere but at the model before."""
    found = {}
    for control, calibration in mc.controls.items():
        best = best_row(calibration)
        if best is not None and best[control] > 0:
            found[control] = (float(best[f"{FORGET}_ps_exact"]), control != "a")
    return min(found, key=found.get) if found else None


def calibrated_comparison(params: Params, method_controls: Mapping[str, MethodControls],
                          evaluate: PSEvaluator, before: PSProfile, original) -> pd.DataFrame:
    """Wang et al.'s Table 3 twice over: each run calibrated by model mixing alone, and by its best control
    (:func:`best_control`), with the full PS profile of both sets; the model before unlearning first."""
    rows = [{"run": "before", "calibrated by": "", "control": "", "setting": math.nan, **flatten(means(before))}]
    for run, mc in method_controls.items():
        mixing = mc.controls["a"]
        if mixing.reported is not None:
            rows.append({"run": run, "calibrated by": "model mixing", "control": "a", "setting": mixing.best,
                         **flatten(means(mixing.reported))})
        chosen = best_control(mc)
        if chosen is None:
            continue
        value = float(best_row(mc.controls[chosen])[chosen])
        if chosen == "a" and mixing.reported is not None:
            reported = mixing.reported
        else:
            reported = evaluate(control_model(params, run, chosen, value, original), TABLE_METRICS)
        rows.append({"run": run, "calibrated by": f"best control ({CONTROL_NAMES[chosen]})", "control": chosen,
                     "setting": value, **flatten(means(reported))})
    return pd.DataFrame(rows)


def comparison_profiles(comparison: pd.DataFrame) -> dict[str, PSProfile]:
    """The rows of :func:`calibrated_comparison` as PS profiles named ``before``, ``gd (model mixing)``,
    ``gd (early stopping)``, ...: what metrics.json and the bar grid take."""
    out: dict[str, PSProfile] = {}
    for _, row in comparison.iterrows():
        by = row["calibrated by"]
        name = row["run"] if not by else f"{row['run']} ({CONTROL_NAMES[row['control']]})"
        if by.startswith("best control") and name in out:
            continue  # model mixing was the best control: the same model
        profile: PSProfile = {}
        for split in (HELDOUT, FORGET):
            profile[split] = {m: float(row[f"{split}_{m}"]) for m in ("ps_exact", "ps_perturb", "ps_similar")
                              if f"{split}_{m}" in row and row[f"{split}_{m}"] == row[f"{split}_{m}"]}
        out[name] = profile
    return out


def table3_title(comparison: pd.DataFrame) -> str:
    """The title of the Table 3 figure, true to its bars: which runs' best control is another than model mixing (a
    bar of its own), or that model mixing was every method's best control (one bar per method)."""
    best = comparison[comparison["calibrated by"].str.startswith("best control")]
    other = {row["run"]: CONTROL_NAMES[row["control"]] for _, row in best.iterrows() if row["control"] != "a"}
    if not other:
        return "Calibrated by model mixing, which was every method's best control"
    return ("Calibrated by model mixing, and by the best control where it is another: "
            + ", ".join(f"{run} ({name})" for run, name in other.items()))


def uncontrolled_table(method_controls: Mapping[str, MethodControls], before: PSProfile) -> pd.DataFrame:
    """Wang et al.'s Table 2: every run uncontrolled (the full run, a = 1) beside the model before unlearning."""
    results = {"before": means(before), **{run: means(mc.uncontrolled) for run, mc in method_controls.items()}}
    return pd.DataFrame({run: flatten(p) for run, p in results.items()}).T


#: What docs/metrics.md §5 gives of Wang et al.'s tables (Phi-1.5, forget10): the model before unlearning
#: and GD calibrated by model mixing.
PAPER_VALUES = {("before", "heldout_retain_ps_exact"): 0.668, ("before", "forget_ps_exact"): 0.649,
                ("before", "heldout_retain_ps_perturb"): 0.325, ("before", "forget_ps_perturb"): 0.298,
                ("before", "heldout_retain_ps_similar"): 0.918, ("before", "forget_ps_similar"): 0.949,
                ("gd · model mixing", "forget_ps_exact"): 0.413}


def paper_beside_ours(comparison: pd.DataFrame) -> pd.DataFrame:
    """The paper's reported values (:data:`PAPER_VALUES`) beside this run's, one row per value."""
    rows = []
    for (model, column), paper in PAPER_VALUES.items():
        run, _, by = model.partition(" · ")
        match = comparison[(comparison["run"] == run) & ((comparison["calibrated by"] == by) if by else True)]
        ours = float(match[column].iloc[0]) if len(match) and column in match else math.nan
        rows.append({"model": model, "metric": column, "paper (Phi-1.5)": paper, "this run": ours})
    return pd.DataFrame(rows)


def status_counts(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per sweep, how many of the evaluated settings pass, are uncertain or fail (the bootstrap intervals decide)."""
    rows = {}
    for name, table in tables.items():
        if "status" in table:
            counts = table["status"].value_counts()
            rows[name] = {"pass": int(counts.get(PASS, 0)), "uncertain": int(counts.get(UNCERTAIN, 0)),
                          "fail": int(counts.get(FAIL, 0))}
    return pd.DataFrame(rows).T
