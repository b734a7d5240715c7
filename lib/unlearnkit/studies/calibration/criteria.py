"""The pass criteria of Wang et al.'s calibration (docs/metrics.md §5): PS losses against the model before unlearning, each
over its paired bootstrap interval; what passes, what is uncertain, the best passing setting."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ...config import Params
from ...metrics.ps import (
    ALL_METRICS,
    FORGET,
    HELDOUT,
    PSEvaluator,
    PSProfile,
    item_values,
    merge_profiles,
)

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

    @classmethod
    def of(cls, params: Params) -> Tolerances:
        """The profile's tolerances (``retain_tolerance``, ``forget_similar_tolerance``, ``criterion_confidence``,
        ``bootstrap_resamples``), the bootstrap seeded by the run's training seed."""
        return cls(retain=params.retain_tolerance, forget_similar=params.forget_similar_tolerance,
                   confidence=params.criterion_confidence, resamples=params.bootstrap_resamples, seed=params.seed)


def relative_loss(before: float, after: float) -> float:
    """The fraction of ``before`` lost: (before − after) / before; 0 when there was nothing to lose."""
    return (before - after) / before if before > 0 else 0.0


def _holds(before: float, after: float, tolerance: float) -> bool:
    return after >= (1.0 - tolerance) * before - _BOUNDARY_SLACK


def percentile_interval(samples: tuple[np.ndarray, ...], statistic: Callable, tolerances: Tolerances,
                        paired: bool = False) -> tuple[float, float]:
    """A percentile-bootstrap interval (scipy.stats.bootstrap) of ``statistic`` over ``samples`` (``paired``: resampled
    together) at the confidence, number of resamples and seed of ``tolerances``."""
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

    return percentile_interval((before_items, after_items), loss, tolerances, paired=True)


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
