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
``Tolerances.forget_similar`` (50 %), each over the whole paired bootstrap interval of its loss (:func:`criteria`;
a setting whose verdict flips inside an interval is *uncertain*); among passing settings the best has the lowest
PS-exact on forget. :func:`calibrate` searches a coarse grid, then a fine grid next to the best coarse setting.
Each method is calibrated by model mixing (:func:`calibrate_methods`), and under all three controls
(:func:`control_methods`: which control *works*, :func:`controls_verdict`); the calibrated methods are compared
(Table 3, :func:`calibrated_comparison`), uncontrolled (Table 2, :func:`uncontrolled_table`) and on the other
forget splits (:func:`calibrate_splits`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from .. import config, models, pipeline, runs, workers
from ..claims import WANG, Finding, Quantity, names, outcome_from_label, outcome_of
from ..generation import greedy_answers
from ..metrics.ps import (
    ALL_METRICS,
    FORGET,
    HELDOUT,
    PSEvaluator,
    PSProfile,
    flatten,
    item_values,
    means,
    merge_profiles,
)
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
    PS-perturb on held-out retain (the paper: 0.10), ``forget_similar`` of PS-similar on forget (0.50).

    Each loss also gets a paired bootstrap interval over items (``confidence``, ``resamples``, ``seed``), so that a
    setting whose pass or fail flips inside its interval is called uncertain rather than passing (:func:`criteria`)."""

    retain: float
    forget_similar: float
    confidence: float = 0.95
    resamples: int = 1000
    seed: int = 0

    def __post_init__(self):
        for name in ("retain", "forget_similar"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"the {name} tolerance is a fraction of the value before unlearning, in [0, 1]; "
                                 f"got {value}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"the confidence of a loss interval is in (0, 1), got {self.confidence}")
        if self.resamples < 1:
            raise ValueError(f"a bootstrap needs at least one resample, got {self.resamples}")


def relative_loss(before: float, after: float) -> float:
    """The fraction of ``before`` lost: (before − after) / before; 0 when there was nothing to lose."""
    return (before - after) / before if before > 0 else 0.0


def _holds(before: float, after: float, tolerance: float) -> bool:
    return after >= (1.0 - tolerance) * before - _BOUNDARY_SLACK


def _percentile_interval(samples: tuple[np.ndarray, ...], statistic: Callable, tolerances: Tolerances,
                         paired: bool = False) -> tuple[float, float]:
    result = stats.bootstrap(samples, statistic, paired=paired, vectorized=True, method="percentile",
                             confidence_level=tolerances.confidence, n_resamples=tolerances.resamples,
                             random_state=np.random.default_rng(tolerances.seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def loss_interval(before_items: Sequence[float], after_items: Sequence[float], tolerances: Tolerances) -> tuple[float, float]:
    """A paired percentile-bootstrap interval (scipy.stats.bootstrap) of the relative loss (mean before − mean
    after) / mean before over the same items, at ``tolerances.confidence``: the items are resampled together, so
    the interval reflects which items were asked, not two independent draws. (0, 0) when nothing changed."""
    before_items, after_items = np.asarray(before_items, float), np.asarray(after_items, float)
    if before_items.shape != after_items.shape or before_items.ndim != 1 or len(before_items) == 0:
        raise ValueError(f"a paired interval needs the same items before and after, got {before_items.shape} and "
                         f"{after_items.shape}")
    if np.array_equal(before_items, after_items):
        return 0.0, 0.0

    def loss(b, a, axis=-1):
        mean_before = b.mean(axis=axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(mean_before > 0, (mean_before - a.mean(axis=axis)) / mean_before, 0.0)

    return _percentile_interval((before_items, after_items), loss, tolerances, paired=True)


#: What a criterion or a setting is called once its loss interval is known: it holds (or the setting passes) over
#: the whole interval, fails over the whole interval, or the tolerance falls inside it.
PASS, UNCERTAIN, FAIL = "pass", "uncertain", "fail"


def _status(loss: float, low: float, high: float, tolerance: float) -> str:
    if math.isnan(loss):
        return UNCERTAIN  # not computed (forget PS-similar where held-out retain already fails): not known to hold
    if math.isnan(low):  # means alone: the point estimate decides
        return PASS if loss <= tolerance + _BOUNDARY_SLACK else FAIL
    if high <= tolerance + _BOUNDARY_SLACK:
        return PASS
    return FAIL if low > tolerance + _BOUNDARY_SLACK else UNCERTAIN


def criteria(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
             tolerances: Tolerances) -> dict[str, dict[str, float | bool]]:
    """Each pass criterion with the relative loss and whether it holds:
    ``{"heldout_retain_ps_exact": {"loss": 0.04, "tolerance": 0.1, "ok": True, "low": 0.01, "high": 0.08,
    "status": "pass"}, ...}``. ``ok`` judges the means; ``low``/``high`` bound the loss by :func:`loss_interval`
    where both profiles hold the per-item values (NaN otherwise), and ``status`` is ``pass`` when the whole
    interval is within the tolerance, ``fail`` when none of it is, else ``uncertain``.

    A metric absent from both profiles (PS-perturb on rows without paraphrases) is not a criterion."""
    out: dict[str, dict[str, float | bool]] = {}
    for (split, metric), kind in CRITERIA:
        b, a = before.get(split, {}).get(metric), after.get(split, {}).get(metric)
        if b is None and a is None:
            continue
        if b is None or a is None:
            side = "before" if b is None else "after"
            raise KeyError(f"{split} {metric} is missing from the profile {side} unlearning")
        out[f"{split}_{metric}"] = _criterion(before, after, split, metric, getattr(tolerances, kind), tolerances)
    return out


def _criterion(before: PSProfile, after: PSProfile, split: str, metric: str, tolerance: float,
               tolerances: Tolerances) -> dict[str, Any]:
    b, a = before[split][metric], after[split][metric]
    loss = relative_loss(b, a)
    items_before, items_after = item_values(before, split, metric), item_values(after, split, metric)
    low = high = math.nan
    if items_before is not None and items_after is not None and len(items_before) == len(items_after):
        low, high = loss_interval(items_before, items_after, tolerances)
    return {"loss": loss, "tolerance": tolerance, "ok": _holds(b, a, tolerance), "low": low, "high": high,
            "status": _status(loss, low, high, tolerance)}


def certainly_fails(before: PSProfile, after: PSProfile, split: str, metric: str, tolerance: float,
                    tolerances: Tolerances) -> bool:
    """Whether one criterion fails over its whole loss interval (on the means where either profile has no items)."""
    return _criterion(before, after, split, metric, tolerance, tolerances)["status"] == FAIL


def setting_status(checks: Mapping[str, Mapping[str, Any]]) -> str:
    """A setting's verdict from its :func:`criteria`: ``fail`` when a criterion fails over its whole interval,
    ``pass`` when every criterion holds over its whole interval, ``uncertain`` otherwise."""
    statuses = [c["status"] for c in checks.values()]
    if FAIL in statuses:
        return FAIL
    return PASS if all(s == PASS for s in statuses) else UNCERTAIN


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
    """A :class:`~unlearnkit.metrics.ps.PSEvaluator` that computes what can still change a setting's verdict, held-out
    retain PS-exact first:

    - where held-out retain PS-exact already fails over its whole interval (:func:`certainly_fails`), the setting
      fails whatever else it scores: held-out PS-perturb and forget PS-similar are left NaN (forget PS-exact and
      PS-perturb, cheap and drawn in every figure, are still computed);
    - otherwise forget PS-similar is searched only where held-out retain holds on its means (:func:`retain_holds`),
      NaN elsewhere: that search (generation) is most of the cost of a profile.

    ``settle_early=False`` skips the first step (a trace drawn in full, such as section 1's, keeps held-out
    PS-perturb at every setting)."""

    def __init__(self, evaluate: PSEvaluator, before: PSProfile, tolerances: Tolerances, settle_early: bool = True):
        self.evaluate, self.before, self.tolerances = evaluate, before, tolerances
        self.settle_early = settle_early  # False: held-out PS-perturb at every setting (traces drawn in full)

    def __call__(self, model, metrics: Mapping[str, Sequence[str]] | None = None) -> PSProfile:
        metrics = self.evaluate.metrics if metrics is None else metrics
        if "ps_similar" not in metrics.get(FORGET, ()):
            return self.evaluate(model, metrics)
        profile: PSProfile = {}
        if self.settle_early and "ps_exact" in metrics.get(HELDOUT, ()):
            profile = self.evaluate.ps(model, {HELDOUT: ("ps_exact",)})
        fails = bool(profile) and certainly_fails(self.before, profile, HELDOUT, "ps_exact", self.tolerances.retain,
                                                  self.tolerances)
        # what is left to compute now: forget PS-exact and PS-perturb always, held-out PS-perturb unless it fails
        rest = {split: tuple(m for m in wanted if m not in profile.get(split, {}) and (split, m) != (FORGET, "ps_similar")
                             and not (fails and split == HELDOUT))
                for split, wanted in metrics.items()}
        profile = merge_profiles(profile, self.evaluate.ps(model, {k: v for k, v in rest.items() if v}))
        if fails:
            profile = merge_profiles(profile, {split: {m: math.nan for m in wanted if m not in profile.get(split, {})}
                                               for split, wanted in metrics.items()})
        elif retain_holds(self.before, profile, self.tolerances):
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
        return self.many([value])[0]

    def many(self, values: Iterable[float], jobs: int | None = 1) -> list[PSProfile]:
        """The profiles of ``values``; the settings not evaluated yet are built and evaluated side by side in up to
        ``jobs`` worker processes (:func:`unlearnkit.workers.side_by_side`; 1: here, in order)."""
        values = [float(v) for v in values]
        for value in values:
            if self.allowed is not None and _key(value) not in {_key(v) for v in self.allowed}:
                raise ValueError(f"{self.name} = {value} is not an available setting; available: {self.allowed}")
        todo = [v for v in dict.fromkeys(_key(v) for v in values) if v not in self.results]
        found = workers.side_by_side(self._profile_of, [(v,) for v in todo], jobs, desc=f"settings of {self.name}")
        self.results.update(zip(todo, found))
        return [self.results[_key(v)] for v in values]


def _profiles(evaluate: Callable[[float], PSProfile], values: Sequence[float], jobs: int | None) -> list[PSProfile]:
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


def early_stopping_evaluator(params: config.Params, run: str, evaluate: Callable[[Any], PSProfile],
                             before: PSProfile | None = None) -> ControlEvaluator:
    """t -> the profile of the weights kept at step t of notebook 02's run ``run`` (t = 0: ``before``)."""
    kept = dict(runs.trajectory_steps(params, run))
    if not kept:
        key = runs.notebook_key(runs.UNLEARNING)
        raise FileNotFoundError(f"no weights kept along unlearning run {run!r} of profile {params.profile!r}, seed "
                                f"{params.seed}: run notebook {key} with unlearn_save_every > 0 (make notebook NB={key} "
                                f"PROFILE={params.profile})")

    def profile_of(step: float) -> PSProfile:
        return evaluate(models.load_model(kept[int(step)]).model)

    steps = ([0] if before is not None else []) + sorted(kept)
    return ControlEvaluator("t", profile_of, known={0: before} if before is not None else None, allowed=steps)


class CappedRun(NamedTuple):
    """The parameters of one capped run (its entry added to ``method_settings``) and the run's name."""

    params: config.Params
    run: str


def capped_run(params: Mapping[str, Any], method: str, delta: float) -> CappedRun:
    """The parameters with one more entry in ``method_settings``, ``<run>_cap<δ>`` -> the settings of ``method``
    (a method or a named run of the GA family) with ``cap_delta: δ``, and that run's name:
    :func:`pipeline.unlearned_model` caches it under its own folder (``models/unlearned-gd_cap2``) and key, so each
    δ is trained once."""
    params = config.as_params(params)
    kind = pipeline.unlearning_settings(params, method)["method"]
    if kind not in CAPPABLE_METHODS:
        raise ValueError(f"objective capping applies to {', '.join(CAPPABLE_METHODS)}, not {method!r} ({kind})")
    if not (math.isfinite(delta) and delta > 0):
        raise ValueError(f"the cap δ must be a positive number, got {delta}")
    run = f"{method}_cap{float(delta):g}"
    return CappedRun(pipeline.derived_run(params, method, run, cap_delta=float(delta)), run)


def capping_evaluator(params: Mapping[str, Any], evaluate: Callable[[Any], PSProfile],
                      method: str) -> ControlEvaluator:
    """δ -> the profile of ``method`` rerun with each example's forget NLL capped at δ (``cap_on``: the sequence
    NLL by default; trained on first use, cached on disk after). The profile also records, under ``"training"``,
    the batch-mean forget NLL at the run's last step in the unit δ caps (``forget_nll``: the sequence NLL, or the
    mean token NLL with ``cap_on: token_mean``), uncapped as logged; capping should hold it near δ."""
    key = "forget_nll" if config.as_params(params).cap_on == "token_mean" else "forget_sequence_nll"

    def profile_of(delta: float) -> PSProfile:
        capped = capped_run(params, method, delta)
        trained = pipeline.unlearned_model(capped.params, capped.run)
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
    for name, c in checks.items():
        row.update({f"{name}_loss": c["loss"], f"{name}_loss_low": c["low"], f"{name}_loss_high": c["high"]})
    row["passes"] = all(c["ok"] for c in checks.values())
    row["status"] = setting_status(checks)
    return row


def sweep(values: Iterable[float], evaluate: Callable[[float], PSProfile], control: str | None,
          before: PSProfile, tolerances: Tolerances, jobs: int | None = 1) -> pd.DataFrame:
    """One row per setting: the control value, the flattened profile, each criterion's relative loss against
    ``before`` and ``passes``; the settings evaluated side by side in up to ``jobs`` worker processes."""
    control = control or getattr(evaluate, "name", "value")
    values = list(values)
    return pd.DataFrame([_row(control, v, profile, before, tolerances)
                         for v, profile in zip(values, _profiles(evaluate, values, jobs))])


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


def _with_epochs(table: pd.DataFrame, params: config.Params, run: str) -> pd.DataFrame:
    epochs = {0: 0.0, **{step: runs.saved_recipe(folder).get("epoch")
                         for step, folder in runs.trajectory_steps(params, run)}}
    table.insert(1, "epoch", [epochs.get(int(t)) for t in table["t"]])
    return table


def early_stopping_sweep(params: config.Params, run: str, evaluate: PSEvaluator, original, before: PSProfile,
                         tolerances: Tolerances, risks: bool = True, every: int | None = None,
                         jobs: int | None = 1) -> pd.DataFrame:
    """Profiles (and risks) at t = 0 (``original``, the model before, whose profile is ``before``) and at every
    step notebook 02 kept along ``run`` (or, with ``every``, at :func:`runs.sparse_steps`), with the epoch of each
    step; :func:`stopping_judge` says how each step is judged."""
    judge, before = stopping_judge(evaluate, original, before, tolerances, risks)
    control = early_stopping_evaluator(params, run, judge, before)
    steps = [0] + [step for step, _ in runs.sparse_steps(params, run, every)]
    return _with_epochs(sweep(steps, control, "t", before, tolerances, jobs), params, run)


def capping_sweep(params: Mapping[str, Any], deltas: Iterable[float], evaluate: Callable[[Any], PSProfile],
                  method: str, before: PSProfile, tolerances: Tolerances, jobs: int | None = 1) -> pd.DataFrame:
    """Profiles of ``method`` rerun with each cap δ in ``deltas`` (see :func:`capping_evaluator`), each run trained
    and evaluated side by side in up to ``jobs`` worker processes."""
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
              allowed: Sequence[float] | None = None, jobs: int | None = 1) -> Calibration:
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
    coarse = sorted({_key(v) for v in control_values_coarse}, reverse=stronger == "lower")  # weak -> strong
    if not coarse:
        raise ValueError("no coarse values to calibrate over")

    profiles: dict[float, PSProfile] = {}

    def evaluate_rows(values: Sequence[float], stage: str) -> list[dict[str, Any]]:
        rows = []
        for v, profile in zip(values, _profiles(evaluate, values, jobs)):
            profiles[_key(v)] = profile
            rows.append(_row(control, v, profile, before, tolerances, stage))
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
                     tolerances: Tolerances, complete: bool = True, jobs: int | None = 1) -> Calibration:
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


def calibrate_methods(params: Mapping[str, Any], methods: Sequence[str], original,
                      evaluate: PSEvaluator, before: PSProfile, tolerances: Tolerances, coarse_points: int,
                      fine_points: int, swept: Mapping[str, MixingControl] | None = None,
                      complete: bool = True, jobs: int | None = 1) -> dict[str, Calibration]:
    """Each unlearning run of ``methods`` calibrated by model mixing of ``original`` (the target) with its
    unlearned model (notebook 02's run, :func:`pipeline.unlearned_model`), see :func:`calibrate_mixing`.

    ``swept`` holds mixing controls that a sweep already evaluated (GD's, in Fig. 2), reused as they are; the
    others compute forget PS-similar only where held-out retain passes (:class:`RetainFirst`). Runs not trained yet
    are trained side by side, and each grid's settings evaluated side by side, in up to ``jobs`` worker processes."""
    swept = dict(swept or {})
    retain_first = RetainFirst(evaluate, before, tolerances)
    pipeline.unlearned_models(params, [m for m in methods if m not in swept], jobs)
    calibrations = {}
    for method in methods:
        mixing = swept.get(method) or mixing_evaluator(
            original, pipeline.unlearned_model(params, method).model, retain_first, before)
        calibrations[method] = calibrate_mixing(mixing, before, coarse_points, fine_points, tolerances, complete,
                                                jobs)
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


def run_meta(calibrations: Mapping[str, Calibration], before: PSProfile, sweeps: Mapping[str, pd.DataFrame],
             evaluate: PSEvaluator, elapsed_s: float, tolerances: Tolerances | None = None,
             tables: Mapping[str, pd.DataFrame] | None = None, verdict: Mapping[str, Any] | None = None,
             found: Sequence[Finding] = ()) -> dict[str, Any]:
    """What metrics.json keeps beside the Table 3 results: each method's calibration, GD's best passing setting
    under each control, the PS item counts and the time taken; with ``tables`` (Table 2, Table 3, the controls
    summary, the forget splits) their rows, the controls ``verdict`` and the findings (:func:`findings`)."""
    extra: dict[str, Any] = {"tables": {name: records(table) for name, table in (tables or {}).items()},
                             "findings": [f.as_dict() for f in found]}
    if verdict is not None:
        extra["controls_verdict"] = dict(verdict)
    if tolerances is not None:
        extra["intervals"] = {"confidence": tolerances.confidence, "resamples": tolerances.resamples,
                              "seed": tolerances.seed}
    return {**extra,
        "calibrated_a": {m: c.best for m, c in calibrations.items()},
        "coarse_a": {m: c.coarse_best for m, c in calibrations.items()},
        "found_passing": {m: found_unlearning(c) for m, c in calibrations.items()},
        "uncontrolled": {m: means(c.uncontrolled) for m, c in calibrations.items()},
        "uncontrolled_heldout_ps_exact_loss": {m: uncontrolled_loss(c, before) for m, c in calibrations.items()},
        "gd_best_passing": {k: None if row is None else float(row[k]) for k, row in best_settings(sweeps).items()},
        "ps_items": {HELDOUT: len(evaluate.heldout_rows), FORGET: len(evaluate.forget_rows)},
        "elapsed_s": round(elapsed_s, 1),
    }


def per_item_tables(sweeps: Mapping[str, pd.DataFrame], calibrations: Mapping[str, Calibration],
                    interference: Mapping[str, pd.DataFrame] | None = None,
                    method_controls: Mapping[str, Any] | None = None,
                    split_calibrations: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every sweep of GD, every calibration table, the interference runs, every control of every method and the
    mixing calibrations of the other forget splits, as records for per_item.json."""
    out = {"gd_early_stopping": records(sweeps["t"]), "gd_capping": records(sweeps["delta"]),
           "gd_mixing": records(sweeps["a"]), "calibration": {m: records(c.table) for m, c in calibrations.items()}}
    if interference is not None:
        out["interference"] = {run: records(table) for run, table in interference.items()}
    if method_controls is not None:
        out["controls"] = {run: {CONTROL_NAMES[c]: records(cal.table) for c, cal in mc.controls.items()}
                           for run, mc in method_controls.items()}
    if split_calibrations is not None:
        out["splits"] = {split: {run: records(c.table) for run, c in sc.calibrations.items()}
                         for split, sc in split_calibrations.items()}
    return out


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


def calibrate_early_stopping(params: config.Params, run: str, evaluate: Callable[[Any], PSProfile], before: PSProfile,
                             tolerances: Tolerances, every: int, fine_points: int, jobs: int | None = 1) -> Calibration:
    """Early stopping of one run calibrated coarse to fine over its kept steps: every ``every``-th step, then the
    kept steps between the best passing one and the next (:func:`calibrate` with the kept steps as allowed); its
    table carries each step's epoch. ``evaluate`` may be a judge of :func:`stopping_judge` (section 1: with risks)."""
    control = early_stopping_evaluator(params, run, evaluate, before)
    result = calibrate(stopping_grid(control.allowed, every), control, fine_points, before, tolerances, control="t",
                       jobs=jobs)
    result.table = _with_epochs(result.table, params, run)
    return result


def calibrate_capping(params: Mapping[str, Any], run: str, evaluate: Callable[[Any], PSProfile],
                      before: PSProfile, tolerances: Tolerances, deltas: Sequence[float],
                      jobs: int | None = 1) -> Calibration:
    """Objective capping of one run coarse to fine over the grid ``deltas`` (each δ is a training run): every other
    δ and the largest first, then the δ of the grid between the best passing one and the next."""
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


def control_methods(params: Mapping[str, Any], run_names: Sequence[str], evaluate: PSEvaluator,
                    before: PSProfile, tolerances: Tolerances, mixing: Mapping[str, Calibration],
                    cap_deltas: Sequence[float], stopping_every: int, fine_points: int,
                    known: Mapping[str, Mapping[str, pd.DataFrame | Calibration]] | None = None,
                    jobs: int | None = 1) -> dict[str, MethodControls]:
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
                                 calibrate_capping(params, run, retain_first, before, tolerances, cap_deltas,
                                                   jobs))
        controls["t"] = (_as_calibration(done["t"], "t") if "t" in done else
                         calibrate_early_stopping(config.as_params(params), run, retain_first, before, tolerances, stopping_every,
                                                  fine_points, jobs))
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


def control_model(params: Mapping[str, Any], run: str, control: str, value: float, original):
    """The model of one setting: the mix at a, the weights kept at step t, or the run capped at δ."""
    if control == "a":
        return mix_models(original, pipeline.unlearned_model(params, run).model, value)
    if control == "t":
        if value == 0:
            return original
        return models.load_model(dict(runs.trajectory_steps(params, run))[int(value)]).model
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


def calibrated_comparison(params: Mapping[str, Any], method_controls: Mapping[str, MethodControls],
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


def uncontrolled_table(method_controls: Mapping[str, MethodControls], before: PSProfile) -> pd.DataFrame:
    """Wang et al.'s Table 2: every run uncontrolled (the full run, a = 1) beside the model before unlearning."""
    results = {"before": means(before), **{run: means(mc.uncontrolled) for run, mc in method_controls.items()}}
    return pd.DataFrame({run: flatten(p) for run, p in results.items()}).T


#: What ../shared/METRICS.md §5 gives of Wang et al.'s tables (Phi-1.5, forget10): the model before unlearning
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


def controls_verdict(summary: pd.DataFrame) -> dict[str, Any]:
    """Wang et al.'s finding, that every control calibrates excessive unlearning and model mixing most smoothly,
    judged from :func:`controls_summary`: per run, the controls that work; model mixing counts as smoothest for a
    run when its largest held-out step is no larger than any other control's. ``reproduced`` when every control
    works for every run, ``partly`` when some control works for some run, ``not`` when none does."""
    works = {run: {c: bool(w) for c, w in zip(part["control"], part["works"])} for run, part in summary.groupby("run", sort=False)}
    smoothest = {}
    for run, part in summary.groupby("run", sort=False):
        steps = dict(zip(part["control"], part["largest held-out step"]))
        mixing, others = steps.get(CONTROL_NAMES["a"]), [v for c, v in steps.items() if c != CONTROL_NAMES["a"]]
        smoothest[run] = bool(mixing is not None and mixing == mixing and all(mixing <= v for v in others if v == v))
    all_work = all(all(c.values()) for c in works.values())
    any_work = any(any(c.values()) for c in works.values())
    return {"finding": "every control calibrates excessive unlearning (its best passing setting takes forget PS-exact "
                       "at least a third of the way to the uncontrolled run), model mixing most smoothly",
            "works": works, "mixing_smoothest": smoothest,
            "verdict": "reproduced" if all_work and all(smoothest.values()) else "partly" if any_work else "not"}


def controls_text(verdict: Mapping[str, Any]) -> str:
    """The finding, what this run shows per run, and the verdict, in sentences."""
    lines = [f"Wang et al.: {verdict['finding']}."]
    for run, works in verdict["works"].items():
        working = [c for c, ok in works.items() if ok]
        failing = [c for c, ok in works.items() if not ok]
        smooth = "model mixing moves the held-out memory in the smallest steps" if verdict["mixing_smoothest"][run] \
            else "another control moves the held-out memory in smaller steps than mixing"
        lines.append(f"{run}: works: {', '.join(working) or 'none'}; does not: {', '.join(failing) or 'none'}; {smooth}.")
    lines.append(f"Verdict: {verdict['verdict']}.")
    return "\n".join(lines)


def findings(verdict: Mapping[str, Any], forget_split: str, splits: pd.DataFrame | None = None) -> list[Finding]:
    """Wang et al.'s two findings on this run, as data. (1) Every control calibrates excessive unlearning, model
    mixing most smoothly (from :func:`controls_verdict`): holds when every control works for every run and mixing is
    smoothest for each, partly when some control works for some run. (2) Model mixing calibrates every method on the
    1 %, 5 % and 10 % forget splits (from :func:`splits_table`): a split counts when mixing works for every method
    on it; holds for every split, partly for some, fails for none."""
    works, smooth = verdict["works"], verdict["mixing_smoothest"]
    pairs = [ok for controls in works.values() for ok in controls.values()]
    working = [f"{run}: {names(c for c, ok in controls.items() if ok)}" for run, controls in works.items()]
    quantities = (Quantity("share of (run, control) pairs where the control works",
                           sum(pairs) / len(pairs) if pairs else None, 1.0, ">=", "every control, every run"),
                  Quantity("share of runs where model mixing is smoothest",
                           sum(smooth.values()) / len(smooth) if smooth else None, 1.0, ">=", "every run"))
    parts = (("every control works for every run", bool(pairs) and all(pairs)),
             ("model mixing smoothest for every run", bool(smooth) and all(smooth.values())))
    text = (f"on {forget_split}, controls that work: {'; '.join(working)}; model mixing smoothest for "
            f"{names(run for run, ok in smooth.items() if ok)}")
    found = [Finding(runs.CONTROLS, WANG, verdict["finding"], text, outcome_from_label(verdict["verdict"]),
                     f"{runs.CONTROLS}_controls_per_method", "three controls", quantities, parts)]
    if splits is not None and len(splits):
        on_split = splits_verdict(splits)
        methods = {split: list(part["run"]) for split, part in splits.groupby("split", sort=False)}
        shares = {split: len(on_split[split]) / len(methods[split]) for split in methods}
        split_parts = tuple((f"model mixing works for every method on {split}", shares[split] >= 1.0)
                            for split in methods)
        quantities = tuple(Quantity(f"share of methods model mixing calibrates on {split}", share, 1.0, ">=",
                                    "every method") for split, share in shares.items())
        text = (f"model mixing works (of {names(dict.fromkeys(m for ms in methods.values() for m in ms))}) "
                + "; ".join(f"on {split} for {names(on_split[split])}" for split in methods)
                + f"; every method on {names(s for s in methods if shares[s] >= 1.0)}")
        found.append(Finding(runs.CONTROLS, WANG, "model mixing calibrates every method on the 1 %, 5 % and 10 % "
                             "forget splits", text, outcome_of(sum(ok for _, ok in split_parts), len(split_parts)),
                             f"{runs.CONTROLS}_splits", "mixing by split", quantities, split_parts))
    return found


def uncertain_text(tables: Mapping[str, pd.DataFrame]) -> str:
    """How many of the evaluated settings the bootstrap intervals leave uncertain, per sweep."""
    parts = []
    for name, table in tables.items():
        if "status" in table:
            counts = table["status"].value_counts()
            parts.append(f"{name}: {int(counts.get(PASS, 0))} pass, {int(counts.get(UNCERTAIN, 0))} uncertain, "
                         f"{int(counts.get(FAIL, 0))} fail")
    return "; ".join(parts)


# --------------------------------------------------------------------------- the 1 % and 5 % forget splits


def split_run(params: Mapping[str, Any], run: str, split: str) -> tuple[config.Params, str]:
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


def calibrate_splits(params: Mapping[str, Any], splits: Sequence[str], run_names: Sequence[str],
                     target: models.LoadedModel, forget_rows_of: Callable[[str], Sequence[Mapping[str, Any]]],
                     evaluate: PSEvaluator, tolerances: Tolerances, coarse_points: int, fine_points: int,
                     known: Mapping[str, SplitCalibration] | None = None,
                     jobs: int | None = 1) -> dict[str, SplitCalibration]:
    """Model mixing (alone) calibrated for each run on each forget split of ``splits`` (Wang et al.'s forget01 and
    forget05): each run is retrained on the split (:func:`split_run`), PS is computed on that split's forget rows
    (``forget_rows_of(split)``) and the same held-out retain rows as ``evaluate``. ``known`` holds splits done
    already (the profile's own forget split, from section 3). Every split's runs are trained side by side first,
    and each grid's settings evaluated side by side, in up to ``jobs`` worker processes."""
    out = dict(known or {})
    todo = [split for split in splits if split not in out]
    split_params, names = config.as_params(params), {}
    for split in todo:
        for run in run_names:
            split_params, names[split, run] = split_run(split_params, run, split)
    pipeline.unlearned_models(split_params, list(names.values()), jobs)
    for split in todo:
        split_evaluate = replace(evaluate, forget_rows=list(forget_rows_of(split)))
        before = split_evaluate(target.model, split_evaluate.metrics)
        found = calibrate_methods(split_params, [names[split, run] for run in run_names], target.model,
                                  split_evaluate, before, tolerances, coarse_points, fine_points, complete=False,
                                  jobs=jobs)
        out[split] = SplitCalibration(split, before, split_evaluate, {run: found[names[split, run]] for run in run_names})
    return {split: out[split] for split in splits if split in out}


def splits_verdict(table: pd.DataFrame) -> dict[str, list[str]]:
    """Per forget split, the runs for which model mixing works (its calibrated a takes forget PS-exact at least
    :data:`WORKING_SHARE` of the way to the uncontrolled run), from :func:`splits_table`."""
    return {split: [run for run, share in zip(part["run"], part["share of the way"]) if share >= WORKING_SHARE]
            for split, part in table.groupby("split", sort=False)}


def splits_text(table: pd.DataFrame) -> str:
    """Per forget split: how many items, for which runs model mixing works and how far it gets."""
    lines = []
    working = splits_verdict(table)
    for split, part in table.groupby("split", sort=False):
        shares = ", ".join(f"{run} {share:.0%}" for run, share in zip(part["run"], part["share of the way"]))
        runs_ = working[split]
        lines.append(f"{split} ({int(part['forget items'].iloc[0])} forget items): model mixing works for "
                     f"{', '.join(runs_) if runs_ else 'no method'} (share of the way: {shares}).")
    return "\n".join(lines)


def mean_interval(values: Sequence[float], tolerances: Tolerances) -> tuple[float, float]:
    """A percentile-bootstrap interval of a mean over items at ``tolerances.confidence``."""
    values = np.asarray(values, float)
    if len(values) < 2 or np.all(values == values[0]):
        return (float(values.mean()),) * 2 if len(values) else (math.nan, math.nan)
    return _percentile_interval((values,), np.mean, tolerances)


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


# --------------------------------------------------------------------------- what erodes the held-out memory


def interference_sweeps(params: Mapping[str, Any], run_names: Sequence[str], evaluate: PSEvaluator,
                        original, before: PSProfile, tolerances: Tolerances,
                        known: Mapping[str, pd.DataFrame] | None = None, jobs: int | None = 1) -> dict[str, pd.DataFrame]:
    """:func:`early_stopping_sweep` along each run of ``run_names`` (``interference_runs``: GD, GD with its forget
    weight at 0 so that only the retain term acts, GD at lower learning rates) at the profile's
    ``unlearn_save_every`` steps and epoch ends, each trained first if it is not saved; ``known`` holds sweeps
    already made (GD's of section 1). Forget PS-similar is searched where held-out retain holds, so each trace also
    says where early stopping of its run passes (:func:`stopping_by_run`). The runs are trained side by side, and
    each trace's steps evaluated side by side, in up to ``jobs`` worker processes."""
    tables = dict(known or {})
    pipeline.unlearned_models(params, [run for run in run_names if run not in tables], jobs)
    for run in run_names:
        if run not in tables:
            # the held-out memory is what these traces show, in full; forget PS-similar only where a step can pass,
            # so that each trace is also an early-stopping sweep of its run (stopping_by_run)
            tables[run] = early_stopping_sweep(config.as_params(params), run, evaluate, original, before, tolerances, risks=False,
                                               every=config.as_params(params).unlearn_save_every, jobs=jobs)
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


#: A run *unlearns* when its end has lost at least this share of forget PS-exact: below it, "a control works" is
#: vacuous (every setting of a run that barely moves passes, and is all the way there).
UNLEARNS_SHARE = 0.5


def unlearns(before: PSProfile, end: PSProfile) -> bool:
    """Whether a run's end lost at least :data:`UNLEARNS_SHARE` of forget PS-exact."""
    return bool(relative_loss(before[FORGET]["ps_exact"], end[FORGET]["ps_exact"]) >= UNLEARNS_SHARE)


def stopping_by_run(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any], before: PSProfile) -> pd.DataFrame:
    """Early stopping read off each interference trace: per run, its learning rate, the best passing step (the whole
    interval within every tolerance), forget PS-exact there and at the run's end, the share of the way and whether
    early stopping works for it; a run that barely unlearns "works" by this rule, so ``run unlearns`` says whether
    its end lost at least half of forget PS-exact (:func:`unlearns`)."""
    params = config.as_params(params)
    rows = {}
    for run, table in tables.items():
        table = table.sort_values("t")
        last = table.iloc[-1]
        end = {FORGET: {"ps_exact": float(last[f"{FORGET}_ps_exact"])}}
        stopping = calibration_from_sweep(table, "t")
        best = best_row(stopping)
        share = working_share(stopping, before, end)
        rows[run] = {"forget weight": pipeline.unlearning_settings(params, run).get("forget_weight", 1.0),
                     "lr": pipeline.run_params(params, run).unlearn_lr,
                     "best passing t": None if best is None else int(best["t"]),
                     "forget PS-exact at best": math.nan if best is None else float(best[f"{FORGET}_ps_exact"]),
                     "forget PS-exact at the end": end[FORGET]["ps_exact"], "share of the way": share,
                     "works": bool(share >= WORKING_SHARE),
                     "run unlearns": unlearns(before, end)}
    return pd.DataFrame(rows).T


def stopping_by_run_text(table: pd.DataFrame) -> str:
    """Where early stopping works along the interference runs, with the numbers."""
    lines = []
    for run, row in table.iterrows():
        if row["best passing t"] is None:
            lines.append(f"{run} (lr {row['lr']:g}): early stopping finds no passing step.")
            continue
        vacuous = row["works"] and not row["run unlearns"]
        lines.append(f"{run} (lr {row['lr']:g}, forget weight {row['forget weight']:g}): early stopping at t = "
                     f"{row['best passing t']} takes forget PS-exact to {row['forget PS-exact at best']:.2f} "
                     f"against {row['forget PS-exact at the end']:.2f} at the run's end, {row['share of the way']:.0%} "
                     f"of the way: {'works' if row['works'] else 'does not work'}"
                     + (", but only because the run itself barely unlearns." if vacuous else "."))
    return "\n".join(lines)


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


def answers_at_steps(params: config.Params, run: str, steps: Sequence[int], sets: Mapping[str, Sequence[Mapping[str, Any]]],
                     original: models.LoadedModel, max_new_tokens: int, batch_size: int) -> pd.DataFrame:
    """Greedy answers to the rows of each named set (column ``set``) at some kept steps of ``run`` (step 0 is
    ``original``, the model before unlearning): coherent early, collapsed late under excessive unlearning
    (Wang et al.'s Table 1)."""
    kept = dict(runs.trajectory_steps(params, run))
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
