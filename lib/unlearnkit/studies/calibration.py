"""Wang et al., "Unlearning with Control" (docs/metrics.md §5): controls of an unlearning method, the pass
criteria, and calibration before comparison.

Methods run long enough unlearn *too much* ("excessive unlearning"). So each method is controlled by a scalar
that runs from "no unlearning" to "the full run":

- **objective capping** (OC), δ: the run redone with each example's forget NLL capped at δ (``cap_delta`` of
  :class:`unlearning.UnlearningLoss`; GA family only), trained through :func:`pipeline.unlearned_model`;
- **early stopping** (ES), t: the weights notebook 02 kept at step t of the run (:func:`runs.trajectory_steps`);
- **model mixing** (MM), a in [0, 1]: θ = (1 − a)·θ_original + a·θ_unlearned (:func:`unlearning.mix_models`).

Every setting is judged by its PS profile (:mod:`metrics.ps`) on the held-out retain set (never trained on
during unlearning) and the forget set. A setting **passes** when PS-exact and PS-perturb on held-out retain
lose at most ``Tolerances.retain`` (10 %) of their value before unlearning and PS-similar on forget at most
``Tolerances.forget_similar`` (50 %); among passing settings the best has the lowest PS-exact on forget.
:func:`calibrate` searches a coarse grid, then a fine grid next to the best coarse setting; each method is
calibrated by model mixing (:func:`calibrate_methods`) and the calibrated methods are compared (Table 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .. import config, models, pipeline, runs
from ..generation import greedy_answers
from ..metrics.ps import ALL_METRICS, FORGET, HELDOUT, PSEvaluator, PSProfile, flatten, merge_profiles
from ..unlearning import CAPPABLE_METHODS, mix_models

#: What calibration needs: the three pass criteria and the ranking (PS-exact on forget), plus PS-perturb on
#: forget for the comparison table.
CALIBRATION_METRICS: dict[str, tuple[str, ...]] = {HELDOUT: ("ps_exact", "ps_perturb"),
                                                   FORGET: ("ps_exact", "ps_perturb", "ps_similar")}
#: All three PS metrics on both sets: the calibrated comparison (Wang et al.'s Table 3).
TABLE_METRICS = ALL_METRICS

#: The pass criteria of docs/metrics.md §5: (split, metric) -> the field of :class:`Tolerances` that applies.
CRITERIA = (((HELDOUT, "ps_exact"), "retain"), ((HELDOUT, "ps_perturb"), "retain"),
            ((FORGET, "ps_similar"), "forget_similar"))
#: Slack on the pass boundary, so that "loses exactly 10 %" passes despite 0.9·x rounding above x − 0.1·x.
_BOUNDARY_SLACK = 1e-9
#: The methods whose uncontrolled run the verdicts test for excessive unlearning: GA and GD, whose forget term
#: (−NLL) has no bound.
EXCESSIVE_METHODS = ("ga", "gd")


# --------------------------------------------------------------------------- the pass criteria


@dataclass(frozen=True)
class Tolerances:
    """The fraction of its value before unlearning that a passing setting may lose: ``retain`` of PS-exact and
    PS-perturb on held-out retain (the paper: 0.10), ``forget_similar`` of PS-similar on forget (0.50)."""

    retain: float
    forget_similar: float

    def __post_init__(self):
        for name in ("retain", "forget_similar"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"the {name} tolerance is a fraction of the value before unlearning, in [0, 1]; "
                                 f"got {value}")


def relative_loss(before: float, after: float) -> float:
    """The fraction of ``before`` lost: (before − after) / before; 0 when there was nothing to lose."""
    return (before - after) / before if before > 0 else 0.0


def _holds(before: float, after: float, tolerance: float) -> bool:
    return after >= (1.0 - tolerance) * before - _BOUNDARY_SLACK


def criteria(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
             tolerances: Tolerances) -> dict[str, dict[str, float | bool]]:
    """Each pass criterion with the relative loss and whether it holds:
    ``{"heldout_retain_ps_exact": {"loss": 0.04, "tolerance": 0.1, "ok": True}, ...}``.

    A metric absent from both profiles (PS-perturb on rows without paraphrases) is not a criterion."""
    out: dict[str, dict[str, float | bool]] = {}
    for (split, metric), kind in CRITERIA:
        b, a = before.get(split, {}).get(metric), after.get(split, {}).get(metric)
        if b is None and a is None:
            continue
        if b is None or a is None:
            side = "before" if b is None else "after"
            raise KeyError(f"{split} {metric} is missing from the profile {side} unlearning")
        tolerance = getattr(tolerances, kind)
        out[f"{split}_{metric}"] = {"loss": relative_loss(b, a), "tolerance": tolerance,
                                    "ok": _holds(b, a, tolerance)}
    return out


def retain_holds(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
                 tolerances: Tolerances) -> bool:
    """The held-out retain half of :func:`passes` alone (PS-exact and PS-perturb within ``tolerances.retain``)."""
    return all(_holds(before[split][metric], after[split][metric], tolerances.retain)
               for (split, metric), kind in CRITERIA if kind == "retain" and metric in before.get(split, {}))


def passes(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
           tolerances: Tolerances) -> bool:
    """Whether ``after`` keeps PS-exact and PS-perturb on held-out retain within ``tolerances.retain`` of their
    value ``before`` unlearning and PS-similar on forget within ``tolerances.forget_similar``."""
    return all(c["ok"] for c in criteria(before, after, tolerances).values())


class RetainFirst:
    """A :class:`~unlearnkit.metrics.ps.PSEvaluator` that computes PS-similar on forget only for models that
    keep held-out retain within the tolerance (:func:`retain_holds`), and NaN otherwise: such a setting fails
    whatever its forget PS-similar, and that search (generation) is most of the cost of a profile."""

    def __init__(self, evaluate: PSEvaluator, before: PSProfile, tolerances: Tolerances):
        self.evaluate, self.before, self.tolerances = evaluate, before, tolerances

    def __call__(self, model, metrics: Mapping[str, Sequence[str]] | None = None) -> PSProfile:
        metrics = self.evaluate.metrics if metrics is None else metrics
        if "ps_similar" not in metrics.get(FORGET, ()):
            return self.evaluate(model, metrics)
        first = {split: tuple(m for m in wanted if (split, m) != (FORGET, "ps_similar"))
                 for split, wanted in metrics.items()}
        profile = self.evaluate.ps(model, first)
        if retain_holds(self.before, profile, self.tolerances):
            profile = merge_profiles(profile, self.evaluate.ps(model, {FORGET: ("ps_similar",)}))
        else:
            profile[FORGET]["ps_similar"] = math.nan
        if self.evaluate.with_risks:
            profile = merge_profiles(profile, self.evaluate.risks(model))
        return profile

    def complete(self, model, profile: PSProfile, metrics: Mapping[str, Sequence[str]] = TABLE_METRICS) -> PSProfile:
        return self.evaluate.complete(model, profile, metrics)


# --------------------------------------------------------------------------- a control as a function


def _key(value: float) -> float:
    return round(float(value), 10)  # 0.1 * 3 and 0.3 are one setting


class ControlEvaluator:
    """A memoised ``value -> PSProfile`` for one control: each setting is built and evaluated once, however
    many sweeps and calibrations ask for it. ``known`` seeds settings whose profile is already known (a = 0
    of model mixing and t = 0 of early stopping are the model before unlearning)."""

    def __init__(self, name: str, profile_of: Callable[[float], PSProfile],
                 known: Mapping[float, PSProfile] | None = None, allowed: Sequence[float] | None = None):
        self.name = name
        self._profile_of = profile_of
        self.results: dict[float, PSProfile] = {_key(v): p for v, p in (known or {}).items()}
        self.allowed = None if allowed is None else sorted(float(v) for v in allowed)

    def __call__(self, value: float) -> PSProfile:
        key = _key(value)
        if self.allowed is not None and key not in {_key(v) for v in self.allowed}:
            raise ValueError(f"{self.name} = {value} is not an available setting; available: {self.allowed}")
        if key not in self.results:
            self.results[key] = self._profile_of(float(value))
        return self.results[key]


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


def early_stopping_evaluator(profile: str, run: str, evaluate: Callable[[Any], PSProfile],
                             before: PSProfile | None = None) -> ControlEvaluator:
    """t -> the profile of the weights kept at step t of notebook 02's run ``run`` (t = 0: ``before``)."""
    kept = dict(runs.trajectory_steps(profile, run))
    if not kept:
        key = runs.notebook_key(runs.UNLEARNING)
        raise FileNotFoundError(f"no weights kept along unlearning run {run!r} of profile {profile!r}: run "
                                f"notebook {key} with unlearn_save_every > 0 (make notebook NB={key} PROFILE={profile})")

    def profile_of(step: float) -> PSProfile:
        return evaluate(models.load_model(kept[int(step)]).model)

    steps = ([0] if before is not None else []) + sorted(kept)
    return ControlEvaluator("t", profile_of, known={0: before} if before is not None else None, allowed=steps)


class CappedRun(NamedTuple):
    """The parameters of one capped run (its entry added to ``method_settings``) and the run's name."""

    params: config.Params
    run: str


def capped_run(params: Mapping[str, Any], method: str, delta: float) -> CappedRun:
    """The parameters with one more entry in ``method_settings``, ``<method>_cap<δ>`` -> ``{method,
    cap_delta: δ}``, and that run's name: :func:`pipeline.unlearned_model` caches it under its own folder
    (``models/unlearned-gd_cap2``) and key, so each δ is trained once."""
    if method not in CAPPABLE_METHODS:
        raise ValueError(f"objective capping applies to {', '.join(CAPPABLE_METHODS)}, not {method!r}")
    if not (math.isfinite(delta) and delta > 0):
        raise ValueError(f"the cap δ must be a positive number, got {delta}")
    params = config.as_params(params)
    run = f"{method}_cap{float(delta):g}"
    settings = dict(params.method_settings)
    # The method's loss settings, not its training keys: weights kept at every step serve early stopping of the
    # uncontrolled run, and a capped run has no use for them.
    base = {k: v for k, v in settings.get(method, {}).items() if k not in pipeline.UNLEARN_TRAIN_KEYS}
    settings[run] = {**base, "method": method, "cap_delta": float(delta)}
    return CappedRun(params.replace(method_settings=settings), run)


def capping_evaluator(params: Mapping[str, Any], profile: str, evaluate: Callable[[Any], PSProfile],
                      method: str) -> ControlEvaluator:
    """δ -> the profile of ``method`` rerun with each example's forget NLL capped at δ (``cap_on``: the sequence
    NLL by default; trained on first use, cached on disk after). The profile also records, under ``"training"``,
    the batch-mean forget NLL at the run's last step in the unit δ caps (``forget_nll``: the sequence NLL, or the
    mean token NLL with ``cap_on: token_mean``), uncapped as logged; capping should hold it near δ."""
    key = "forget_nll" if config.as_params(params).cap_on == "token_mean" else "forget_sequence_nll"

    def profile_of(delta: float) -> PSProfile:
        capped = capped_run(params, method, delta)
        trained = pipeline.unlearned_model(capped.params, profile, capped.run)
        logged = [h for h in trained.history if key in h]
        training = {"forget_nll": logged[-1][key]} if logged else {}
        return {**evaluate(trained.model), "training": training}

    return ControlEvaluator("delta", profile_of)


# --------------------------------------------------------------------------- sweeps


def _row(control: str, value: float, profile: PSProfile, before: PSProfile, tolerances: Tolerances,
         stage: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {control: float(value)}
    if stage is not None:
        row["stage"] = stage
    row.update(flatten(profile))
    checks = criteria(before, profile, tolerances)
    row.update({f"{name}_loss": c["loss"] for name, c in checks.items()})
    row["passes"] = all(c["ok"] for c in checks.values())
    return row


def sweep(values: Iterable[float], evaluate: Callable[[float], PSProfile], control: str | None,
          before: PSProfile, tolerances: Tolerances) -> pd.DataFrame:
    """One row per setting: the control value, the flattened profile, each criterion's relative loss against
    ``before`` and ``passes``."""
    control = control or getattr(evaluate, "name", "value")
    return pd.DataFrame([_row(control, v, evaluate(v), before, tolerances) for v in values])


def early_stopping_sweep(profile: str, run: str, evaluate: PSEvaluator, original, before: PSProfile,
                         tolerances: Tolerances) -> pd.DataFrame:
    """Profiles and risks (Fig. 1) at t = 0 (``original``, the model before, whose profile is ``before``) and at
    every step notebook 02 kept along ``run``, with the epoch of each step."""
    with_risks = evaluate.plus_risks()
    before = merge_profiles(before, with_risks.risks(original))
    control = early_stopping_evaluator(profile, run, with_risks, before)
    table = sweep(control.allowed, control, "t", before, tolerances)
    epochs = {0: 0.0, **{step: runs.saved_recipe(folder).get("epoch")
                         for step, folder in runs.trajectory_steps(profile, run)}}
    table.insert(1, "epoch", [epochs.get(int(t)) for t in table["t"]])
    return table


def capping_sweep(params: Mapping[str, Any], profile: str, deltas: Iterable[float], evaluate: Callable[[Any], PSProfile],
                  method: str, before: PSProfile, tolerances: Tolerances) -> pd.DataFrame:
    """Profiles of ``method`` rerun with each cap δ in ``deltas`` (see :func:`capping_evaluator`)."""
    return sweep(deltas, capping_evaluator(params, profile, evaluate, method), "delta", before, tolerances)


def mixing_grid(n: int) -> list[float]:
    """The coarse grid of model mixing: a = 0 (the model before, free: its profile is known) and n evenly
    spaced values up to 1 (n = 10: 0.1, 0.2, ..., 1.0)."""
    if n < 1:
        raise ValueError(f"a coarse grid needs at least one value, got {n}")
    return [0.0] + [round(i / n, 10) for i in range(1, n + 1)]


def best_passing(table: pd.DataFrame, control: str) -> pd.Series | None:
    """The row of ``table`` (from :func:`sweep`) with the lowest PS-exact on forget among passing settings,
    ties broken by the higher PS-exact on held-out retain, then the weaker setting; None when nothing passes."""
    passing = table[table["passes"]]
    if passing.empty:
        return None
    ranked = passing.sort_values([f"{FORGET}_ps_exact", f"{HELDOUT}_ps_exact", control],
                                 ascending=[True, False, True], kind="mergesort")
    return ranked.iloc[0]


def best_settings(sweeps: Mapping[str, pd.DataFrame]) -> dict[str, pd.Series | None]:
    """The best passing row of each sweep, ``sweeps`` keyed by its control (``delta``, ``t``, ``a``)."""
    return {control: best_passing(table, control) for control, table in sweeps.items()}


def best_setting_lines(sweeps: Mapping[str, pd.DataFrame]) -> list[str]:
    """One sentence per control: its best passing setting and that setting's forget PS-exact."""
    return [f"{control}: " + ("no setting passes" if best is None else
                              f"best passing {control} = {best[control]:g}, forget PS-exact "
                              f"{best[f'{FORGET}_ps_exact']:.3f}")
            for control, best in best_settings(sweeps).items()]


def records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a sweep or calibration table as JSON-ready dicts (NaN as None)."""
    return config.jsonable(table.to_dict("records"))


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
    #: Set by :func:`calibrate_mixing`: the full PS profile at ``best`` (all metrics on both sets) and the
    #: profile of the uncontrolled run (a = 1).
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
              allowed: Sequence[float] | None = None) -> Calibration:
    """Coarse-to-fine calibration of one scalar control (docs/metrics.md §5.3).

    1. Evaluate every coarse value; among those that pass (:func:`passes` against ``before``) take the one
       with the lowest PS-exact on forget.
    2. Evaluate ``fine_points`` values strictly between it and its neighbour on the coarse grid towards
       stronger unlearning (``stronger="higher"``: larger values unlearn more, as a, t and δ do). When the
       best coarse value is the strongest of the grid there is no such region and nothing is refined;
       when no coarse value passes, neither (put a setting known to pass, a = 0, in the coarse grid).
    3. Return the best passing setting of all, with the full table (``stage`` coarse / fine).

    ``evaluate(value) -> PSProfile`` may be a :class:`ControlEvaluator`; its ``allowed`` values (early
    stopping's kept steps) are used for the fine grid unless ``allowed`` is given.
    """
    if stronger not in ("higher", "lower"):
        raise ValueError(f"stronger must be 'higher' or 'lower', got {stronger!r}")
    if fine_points < 0:
        raise ValueError(f"fine_points must be >= 0, got {fine_points}")
    control = control or getattr(evaluate, "name", "value")
    allowed = allowed if allowed is not None else getattr(evaluate, "allowed", None)
    coarse = sorted({_key(v) for v in control_values_coarse}, reverse=stronger == "lower")  # weak -> strong
    if not coarse:
        raise ValueError("no coarse values to calibrate over")

    profiles: dict[float, PSProfile] = {}

    def evaluate_rows(values: Iterable[float], stage: str) -> list[dict[str, Any]]:
        rows = []
        for v in values:
            profiles[_key(v)] = evaluate(v)
            rows.append(_row(control, v, profiles[_key(v)], before, tolerances, stage))
        return rows

    rows = evaluate_rows(coarse, "coarse")
    coarse_best = best_passing(pd.DataFrame(rows), control)
    region = None
    if coarse_best is not None:
        position = coarse.index(_key(coarse_best[control]))
        if position + 1 < len(coarse):
            region = (coarse[position], coarse[position + 1])
            seen = {_key(r[control]) for r in rows}
            fine = [v for v in _fine_values(*region, fine_points, allowed) if _key(v) not in seen]
            rows += evaluate_rows(fine, "fine")
    table = pd.DataFrame(rows)
    best = best_passing(table, control)
    best_value = None if best is None else float(best[control])
    return Calibration(control=control, best=best_value, profile=None if best is None else profiles[_key(best_value)],
                       table=table, region=region,
                       coarse_best=None if coarse_best is None else float(coarse_best[control]))


def calibrate_mixing(mixing: MixingControl, before: PSProfile, coarse_points: int, fine_points: int,
                     tolerances: Tolerances) -> Calibration:
    """Calibrate model mixing of one unlearned model (the paper's recommended control): :func:`calibrate` over
    :func:`mixing_grid`, then the full profile (:data:`TABLE_METRICS`) at the calibrated a and at a = 1, the
    uncontrolled run. Settings ``mixing`` already evaluated (in a sweep) are not evaluated again."""
    result = calibrate(mixing_grid(coarse_points), mixing, fine_points, before, tolerances, control="a")
    result.uncontrolled = mixing.evaluate.complete(mixing.unlearned, mixing(1.0))
    if result.found:
        result.reported = mixing.evaluate.complete(mix_models(mixing.original, mixing.unlearned, result.best),
                                                   result.profile)
    return result


def calibrate_methods(params: Mapping[str, Any], profile: str, methods: Sequence[str], original,
                      evaluate: PSEvaluator, before: PSProfile, tolerances: Tolerances, coarse_points: int,
                      fine_points: int, swept: Mapping[str, MixingControl] | None = None) -> dict[str, Calibration]:
    """Each unlearning run of ``methods`` calibrated by model mixing of ``original`` (the target) with its
    unlearned model (notebook 02's run, :func:`pipeline.unlearned_model`), see :func:`calibrate_mixing`.

    ``swept`` holds mixing controls that a sweep already evaluated (GD's, in Fig. 2), reused as they are; the
    others compute forget PS-similar only where held-out retain passes (:class:`RetainFirst`)."""
    swept = dict(swept or {})
    retain_first = RetainFirst(evaluate, before, tolerances)
    calibrations = {}
    for method in methods:
        mixing = swept.get(method) or mixing_evaluator(
            original, pipeline.unlearned_model(params, profile, method).model, retain_first, before)
        calibrations[method] = calibrate_mixing(mixing, before, coarse_points, fine_points, tolerances)
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


def verdicts(calibrations: Mapping[str, Calibration], before: PSProfile, tolerances: Tolerances) -> list[str]:
    """The findings in sentences, from the numbers: whether GA and GD uncontrolled unlearn excessively, and
    what mixing found for each method."""
    lines = []
    for method in EXCESSIVE_METHODS:
        if method in calibrations:
            loss = uncontrolled_loss(calibrations[method], before)
            excessive = loss > tolerances.retain
            lines.append(f"Uncontrolled {method.upper()} loses {loss:.0%} of held-out retain PS-exact: "
                         f"{'more' if excessive else 'no more'} than {tolerances.retain:.0%}"
                         f"{', excessive unlearning' if excessive else ''}.")
    for method, calibration in calibrations.items():
        if found_unlearning(calibration):
            lines.append(f"{method}: mixing found a passing setting, a = {calibration.best:.3f}.")
        else:
            lines.append(f"{method}: mixing found no passing setting with a > 0; the calibrated model is the "
                         f"target itself.")
    return lines


# --------------------------------------------------------------------------- the comparison and its records


def table3_results(before: PSProfile, calibrations: Mapping[str, Calibration]) -> dict[str, PSProfile]:
    """The model before unlearning and each method at its calibrated a (those with a passing setting)."""
    return {"before": before, **{m: c.reported for m, c in calibrations.items() if c.reported is not None}}


def table3(before: PSProfile, calibrations: Mapping[str, Calibration]) -> pd.DataFrame:
    """Wang et al.'s Table 3: one row per model of :func:`table3_results`, its a and its PS metrics."""
    results = table3_results(before, calibrations)
    table = pd.DataFrame({m: flatten(p) for m, p in results.items()}).T
    table.insert(0, "a", [None] + [calibrations[m].best for m in list(results)[1:]])
    return table


def run_meta(calibrations: Mapping[str, Calibration], before: PSProfile, sweeps: Mapping[str, pd.DataFrame],
             evaluate: PSEvaluator, elapsed_s: float) -> dict[str, Any]:
    """What metrics.json keeps beside the Table 3 results: each method's calibration, GD's best passing setting
    under each control, the PS item counts and the time taken."""
    return {
        "calibrated_a": {m: c.best for m, c in calibrations.items()},
        "coarse_a": {m: c.coarse_best for m, c in calibrations.items()},
        "found_passing": {m: found_unlearning(c) for m, c in calibrations.items()},
        "uncontrolled": {m: c.uncontrolled for m, c in calibrations.items()},
        "uncontrolled_heldout_ps_exact_loss": {m: uncontrolled_loss(c, before) for m, c in calibrations.items()},
        "gd_best_passing": {k: None if row is None else float(row[k]) for k, row in best_settings(sweeps).items()},
        "ps_items": {HELDOUT: len(evaluate.heldout_rows), FORGET: len(evaluate.forget_rows)},
        "elapsed_s": round(elapsed_s, 1),
    }


def per_item_tables(sweeps: Mapping[str, pd.DataFrame], calibrations: Mapping[str, Calibration],
                    interference: Mapping[str, pd.DataFrame] | None = None) -> dict[str, Any]:
    """Every sweep of GD, every calibration table and the interference runs, as records for per_item.json."""
    out = {"gd_early_stopping": records(sweeps["t"]), "gd_capping": records(sweeps["delta"]),
           "gd_mixing": records(sweeps["a"]), "calibration": {m: records(c.table) for m, c in calibrations.items()}}
    if interference is not None:
        out["interference"] = {run: records(table) for run, table in interference.items()}
    return out


# --------------------------------------------------------------------------- what erodes the held-out memory


def interference_sweeps(params: Mapping[str, Any], profile: str, run_names: Sequence[str], evaluate: PSEvaluator,
                        original, before: PSProfile, tolerances: Tolerances,
                        known: Mapping[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """:func:`early_stopping_sweep` along each run of ``run_names`` (``interference_runs``: GD, GD with its forget
    weight at 0 so that only the retain term acts, GD at lower learning rates), each trained first if it is not
    saved; ``known`` holds sweeps already made (GD's of section 1)."""
    tables = dict(known or {})
    for run in run_names:
        if run not in tables:
            pipeline.unlearned_model(params, profile, run)
            tables[run] = early_stopping_sweep(profile, run, evaluate, original, before, tolerances)
    return {run: tables[run] for run in run_names}


def interference_summary(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any]) -> pd.DataFrame:
    """Per run, at its last kept step: its forget weight and learning rate, and the share of held-out retain
    PS-exact and PS-perturb lost, and forget PS-exact."""
    params = config.as_params(params)
    rows = {}
    for run, table in tables.items():
        last = table.iloc[-1]
        rows[run] = {"forget weight": pipeline.unlearning_settings(params, run).get("forget_weight", 1.0),
                     "lr": pipeline.run_params(params, run).unlearn_lr, "step": int(last["t"]),
                     "held-out PS-exact lost": float(last[f"{HELDOUT}_ps_exact_loss"]),
                     "held-out PS-perturb lost": float(last[f"{HELDOUT}_ps_perturb_loss"]),
                     "forget PS-exact": float(last[f"{FORGET}_ps_exact"])}
    return pd.DataFrame(rows).T


def interference_text(summary: pd.DataFrame, full: str = "gd") -> str:
    """How much of the full run's held-out loss the retain term alone (forget weight 0) causes, and what the
    learning rate changes, from :func:`interference_summary`."""
    if full not in summary.index:
        return ""
    base = summary.loc[full]
    lines = [f"{full} (forget weight {base['forget weight']:g}, lr {base['lr']:g}) ends losing "
             f"{base['held-out PS-exact lost']:.0%} of held-out PS-exact and {base['held-out PS-perturb lost']:.0%} of "
             f"PS-perturb, forget PS-exact {base['forget PS-exact']:.2f}."]
    for run, row in summary.drop(index=full).iterrows():
        if row["forget weight"] == 0:
            share = (row["held-out PS-exact lost"] / base["held-out PS-exact lost"]
                     if base["held-out PS-exact lost"] > 0 else float("nan"))
            lines.append(f"{run} (retain term only, lr {row['lr']:g}): loses {row['held-out PS-exact lost']:.0%} of "
                         f"held-out PS-exact and {row['held-out PS-perturb lost']:.0%} of PS-perturb, so the retain "
                         f"term alone accounts for {share:.0%} of the full run's PS-exact loss and the forget term "
                         f"for the rest.")
        else:
            lines.append(f"{run} (lr {row['lr']:g}): loses {row['held-out PS-exact lost']:.0%} of held-out PS-exact and "
                         f"{row['held-out PS-perturb lost']:.0%} of PS-perturb, forget PS-exact "
                         f"{row['forget PS-exact']:.2f}.")
    return "\n".join(lines)


# --------------------------------------------------------------------------- answers along a run (Table 1)


def answer_steps(early_stopping: pd.DataFrame) -> list[int]:
    """Three steps of an early-stopping sweep to read answers at: the model before (0), the best passing step
    t > 0 (else the first kept step) and the end of the run."""
    best = best_passing(early_stopping[early_stopping["t"] > 0], "t")
    early = int(best["t"]) if best is not None else int(early_stopping["t"].iloc[1])
    return [0, early, int(early_stopping["t"].iloc[-1])]


def answers_at_steps(profile: str, run: str, steps: Sequence[int], sets: Mapping[str, Sequence[Mapping[str, Any]]],
                     original: models.LoadedModel, max_new_tokens: int, batch_size: int) -> pd.DataFrame:
    """Greedy answers to the rows of each named set (column ``set``) at some kept steps of ``run`` (step 0 is
    ``original``, the model before unlearning): coherent early, collapsed late under excessive unlearning
    (Wang et al.'s Table 1)."""
    kept = dict(runs.trajectory_steps(profile, run))
    rows = [row for group in sets.values() for row in group]
    questions = [r["question"] for r in rows]
    table = {"set": [name for name, group in sets.items() for _ in group], "question": questions,
             "ground truth": [r["answer"] for r in rows]}
    for step in steps:
        if step == 0:
            loaded = original
        elif step in kept:
            loaded = models.load_model(kept[step])
        else:
            raise ValueError(f"step {step} was not kept along {run!r}; kept: {sorted(kept)}")
        table[f"step {step}"] = greedy_answers(loaded.model, loaded.tokenizer, loaded.template, questions,
                                               max_new_tokens, batch_size)
    return pd.DataFrame(table)
