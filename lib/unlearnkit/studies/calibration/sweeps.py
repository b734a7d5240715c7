"""Sweeps of a control over a grid of settings, every setting evaluated and judged (side by side in worker processes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from ... import config, runs
from ...config import Params
from ...metrics.ps import (
    FORGET,
    HELDOUT,
    PSEvaluator,
    PSProfile,
    flatten,
    merge_profiles,
)
from .controls import capping_evaluator, early_stopping_evaluator, profiles_at
from .criteria import PASS, RetainFirst, Tolerances, criteria, setting_status

# --------------------------------------------------------------------------- sweeps


def judged_row(control: str, value: float, profile: PSProfile, before: PSProfile, tolerances: Tolerances,
               stage: str | None = None) -> dict[str, Any]:
    """One setting of a sweep judged: the control value (and ``stage``), the flattened profile, each criterion's
    relative loss with its interval, ``passes`` (on the means) and ``status`` (over the intervals)."""
    row: dict[str, Any] = {control: float(value)}
    if stage is not None:
        row["stage"] = stage
    row.update(flatten(profile))
    checks = criteria(before, profile, tolerances)
    for name, c in checks.items():
        row.update({f"{name}_loss": c["loss"], f"{name}_loss_low": c["low"], f"{name}_loss_high": c["high"]})
    row["passes"] = all(c["ok"] for c in checks.values())
    row["status"] = setting_status(checks)
    return row


def sweep(values: Iterable[float], evaluate: Callable[[float], PSProfile], control: str | None,
          before: PSProfile, tolerances: Tolerances, jobs: int | None) -> pd.DataFrame:
    """One row per setting: the control value, the flattened profile, each criterion's relative loss against
    ``before`` and ``passes``; the settings evaluated side by side in up to ``jobs`` worker processes."""
    control = control or getattr(evaluate, "name", "value")
    values = list(values)
    return pd.DataFrame([judged_row(control, v, profile, before, tolerances)
                         for v, profile in zip(values, profiles_at(evaluate, values, jobs))])


def stopping_judge(evaluate: PSEvaluator, original, before: PSProfile, tolerances: Tolerances,
                   risks: bool = True) -> tuple[RetainFirst, PSProfile]:
    """How the steps of a run are judged, and the profile before unlearning to judge them against: with the risks
    of each set (Fig. 1; ``risks=False`` leaves them out, also from ``before``), every held-out metric at every step
    (a trace is drawn in full), and forget PS-similar searched only where held-out retain holds on its means
    (:class:`RetainFirst`: elsewhere the step fails anyway)."""
    judge = evaluate.plus_risks() if risks else evaluate
    if risks:
        before = merge_profiles(before, judge.risks(original))
    return RetainFirst(judge, before, tolerances, settle_early=False), before


def with_epochs(table: pd.DataFrame, params: Params, run: str) -> pd.DataFrame:
    """``table``, a sweep over the steps ``t`` of ``run``, with the epoch of each step inserted beside it."""
    epochs = {0: 0.0, **{step: runs.saved_recipe(folder).get("epoch")
                         for step, folder in runs.trajectory_steps(params, run)}}
    table.insert(1, "epoch", [epochs.get(int(t)) for t in table["t"]])
    return table


def early_stopping_sweep(params: Params, run: str, evaluate: PSEvaluator, original, before: PSProfile,
                         tolerances: Tolerances, risks: bool = True, every: int | None = None) -> pd.DataFrame:
    """Profiles (and risks) at t = 0 (``original``, the model before, whose profile is ``before``) and at every
    step notebook 02 kept along ``run`` (or, with ``every``, at :func:`runs.sparse_steps`), with the epoch of each
    step; :func:`stopping_judge` says how each step is judged."""
    jobs = params.jobs
    judge, before = stopping_judge(evaluate, original, before, tolerances, risks)
    control = early_stopping_evaluator(params, run, judge, before)
    steps = [0] + [step for step, _ in runs.sparse_steps(params, run, every)]
    return with_epochs(sweep(steps, control, "t", before, tolerances, jobs), params, run)


def capping_sweep(params: Params, deltas: Iterable[float], evaluate: Callable[[Any], PSProfile],
                  method: str, before: PSProfile, tolerances: Tolerances) -> pd.DataFrame:
    """Profiles of ``method`` rerun with each cap δ in ``deltas`` (see :func:`capping_evaluator`), each run trained
    and evaluated side by side in up to ``jobs`` worker processes."""
    jobs = params.jobs
    return sweep(deltas, capping_evaluator(params, evaluate, method), "delta", before, tolerances, jobs)


def mixing_grid(n: int) -> list[float]:
    """The coarse grid of model mixing: a = 0 (the model before, free: its profile is known) and n evenly
    spaced values up to 1 (n = 10: 0.1, 0.2, ..., 1.0)."""
    if n < 1:
        raise ValueError(f"a coarse grid needs at least one value, got {n}")
    return [0.0] + [round(i / n, 10) for i in range(1, n + 1)]


def passing_rows(table: pd.DataFrame) -> pd.Series:
    """Which rows of a sweep pass: by their ``status`` (the whole loss interval within every tolerance; an
    uncertain setting does not pass), or by the means where a table has no status."""
    if "status" in table:
        return table["status"] == PASS
    return table["passes"].astype(bool)


def best_passing(table: pd.DataFrame, control: str) -> pd.Series | None:
    """The row of ``table`` (from :func:`sweep`) with the lowest PS-exact on forget among passing settings
    (:func:`passing_rows`), ties broken by the higher PS-exact on held-out retain, then the weaker setting; None
    when nothing passes."""
    passing = table[passing_rows(table)]
    if passing.empty:
        return None
    ranked = passing.sort_values([f"{FORGET}_ps_exact", f"{HELDOUT}_ps_exact", control],
                                 ascending=[True, False, True], kind="mergesort")
    return ranked.iloc[0]


def best_settings(sweeps: Mapping[str, pd.DataFrame]) -> dict[str, pd.Series | None]:
    """The best passing row of each sweep, ``sweeps`` keyed by its control (``delta``, ``t``, ``a``)."""
    return {control: best_passing(table, control) for control, table in sweeps.items()}


def best_setting_table(sweeps: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per control: its best passing setting and that setting's forget PS-exact (NaN where no setting passes)."""
    return pd.DataFrame({control: {"best setting": math.nan if best is None else float(best[control]),
                                   "forget PS-exact at best": math.nan if best is None else float(best[f"{FORGET}_ps_exact"])}
                         for control, best in best_settings(sweeps).items()}).T


def records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a sweep or calibration table as JSON-ready dicts (NaN as None)."""
    return config.jsonable(table.to_dict("records"))
