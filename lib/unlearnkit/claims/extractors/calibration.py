"""The claims notebook 03 answers: Wang et al.'s excessive unlearning, its controls and its calibrated comparisons,
on the paper's own scale (PS scores relative to the original, i.e. fine-tuned, model; its 10 % tolerance)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ... import runs
from ...results import SeedResults
from ..judge import CONSISTENT, INCONSISTENT, Unit
from ..registry import Claim
from .base import NotTestable, extractor, finite, pooled, result, unit

#: Wang's GA-based methods (the paper's Table 2 and 3).
GA_BASED = ("ga", "gd", "kl")
#: Wang's tolerance: a control "unlearns" when it lowers forget PS-exact by at least this share of the original's.
TOLERANCE = 0.1
#: The setting each control's sweep is indexed by (model mixing a, objective capping delta, early stopping t).
SETTING_KEYS = ("a", "delta", "t")
MIXING = "model mixing"


def _controls(seed: SeedResults) -> dict[str, Any]:
    return seed.metrics(runs.CONTROLS)


def _original(metrics: Mapping[str, Any]) -> tuple[float, float]:
    """The original (target) model's retain and forget PS-exact."""
    b = metrics["before"]
    return float(b["heldout_retain"]["ps_exact"]), float(b["forget"]["ps_exact"])


@extractor("wang.excessive_ga")
def excessive(claim: Claim, seed: SeedResults):
    metrics = _controls(seed)
    retain0, _ = _original(metrics)
    if not retain0 > 0:
        raise NotTestable("the target's retain PS-exact is 0")
    uncontrolled = metrics["meta"].get("uncontrolled", {})
    units = []
    for run in GA_BASED:
        if run not in uncontrolled:
            units.append(Unit(run, None, "not testable", f"{run} was not run uncontrolled"))
            continue
        ps = uncontrolled[run]["heldout_retain"]["ps_exact"]
        units.append(unit(claim, run, 1 - ps / retain0, values={"retain PS-exact": ps, "target's": retain0}))
    return pooled(claim, seed, units)


def _over_unlearns(metrics: Mapping[str, Any], run: str, retain0: float) -> bool | None:
    u = metrics["meta"].get("uncontrolled", {}).get(run)
    return None if u is None else bool(1 - u["heldout_retain"]["ps_exact"] / retain0 > TOLERANCE)


@extractor("wang.controls_regulate")
def controls_regulate(claim: Claim, seed: SeedResults):
    metrics = _controls(seed)
    retain0, forget0 = _original(metrics)
    if not (retain0 > 0 and forget0 > 0):
        raise NotTestable("the target's PS-exact is 0")
    units = []
    for row in metrics["meta"]["tables"]["controls"]:
        name = f"{row['run']} / {row['control']}"
        over = _over_unlearns(metrics, row["run"], retain0)
        if over is None:
            continue
        if not over:
            units.append(Unit(name, None, "not testable", "the uncontrolled run does not over-unlearn"))
            continue
        at_best = row.get("forget PS-exact at best")
        if not row.get("pass") or not finite(at_best):
            units.append(Unit(name, None, INCONSISTENT, "", {"note": "no setting within the criterion"}))
            continue
        removed = (forget0 - at_best) / forget0
        units.append(Unit(name, removed, CONSISTENT if removed >= TOLERANCE else INCONSISTENT, "",
                          {"forget PS-exact at the best setting": at_best, "best setting": row.get("best setting")}))
    return pooled(claim, seed, units, values={"target's forget PS-exact": forget0})


def _setting(point: Mapping[str, Any]) -> float:
    for key in SETTING_KEYS:
        if key in point and finite(point[key]):
            return float(point[key])
    raise KeyError(f"a sweep point without a setting ({', '.join(SETTING_KEYS)})")


def largest_jump(points: Sequence[Mapping[str, Any]], key: str = "heldout_retain_ps_exact") -> float | None:
    """The largest change of ``key`` between two adjacent settings of a control's sweep (None below two)."""
    ordered = sorted((p for p in points if finite(p.get(key))), key=_setting)
    if len(ordered) < 2:
        return None
    values = np.asarray([p[key] for p in ordered], dtype=float)
    return float(np.abs(np.diff(values)).max())


@extractor("wang.mm_smoother")
def mixing_smoother(claim: Claim, seed: SeedResults):
    per_item = seed.per_item(runs.CONTROLS)
    units = []
    for run, controls in per_item.get("controls", {}).items():
        mixing = per_item.get("calibration", {}).get(run) or controls.get(MIXING)
        jumps = {c: largest_jump(points) for c, points in controls.items() if c != MIXING}
        jumps = {c: j for c, j in jumps.items() if j is not None}
        mix = largest_jump(mixing) if mixing else None
        if mix is None or not jumps:
            units.append(Unit(run, None, "not testable", "model mixing and another control did not both sweep it"))
            continue
        best = min(jumps, key=jumps.get)
        units.append(unit(claim, run, jumps[best] - mix, values={"model mixing's largest step": mix,
                                                                  f"{best}'s largest step": jumps[best]}))
    return pooled(claim, seed, units)


def calibrated_ratios(metrics: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """Per (split, run): forget PS-exact of the model mixing calibrated, as a share of the original model's on that
    split (notebook 03's table of splits)."""
    out = {}
    for row in metrics["meta"]["tables"].get("splits", []):
        before, calibrated = row.get("forget PS-exact before"), row.get("forget PS-exact calibrated")
        if finite(before) and before > 0 and finite(calibrated):
            out[(row["split"], row["run"])] = float(calibrated) / float(before)
    return out


@extractor("wang.ga_short_at_large_splits")
def short_at_large_splits(claim: Claim, seed: SeedResults):
    ratios = calibrated_ratios(_controls(seed))
    splits = sorted({s for s, _ in ratios})
    if "forget01" not in splits or len(splits) < 2:
        raise NotTestable(f"model mixing calibrated on {', '.join(splits) or 'no split'}: forget01 and a larger split "
                          "are needed")
    units = []
    for run in GA_BASED:
        small = ratios.get(("forget01", run))
        large = [ratios[(s, run)] for s in splits if s != "forget01" and (s, run) in ratios]
        if small is None or not large:
            units.append(Unit(run, None, "not testable", f"{run} not calibrated on forget01 and a larger split"))
            continue
        units.append(unit(claim, run, float(np.mean(large)) - small,
                          values={f"{s} calibrated / original": ratios.get((s, run)) for s in splits}))
    return pooled(claim, seed, units)


def _pair_by_split(claim: Claim, seed: SeedResults, better: str, others: Sequence[str]):
    ratios = calibrated_ratios(_controls(seed))
    units = []
    for split in sorted({s for s, _ in ratios}):
        rest = [ratios[(split, o)] for o in others if (split, o) in ratios]
        if (split, better) not in ratios or not rest:
            units.append(Unit(split, None, "not testable", f"{better} or {' and '.join(others)} not calibrated"))
            continue
        units.append(unit(claim, split, min(rest) - ratios[(split, better)],
                          values={f"{r} calibrated / original": ratios.get((split, r)) for r in (better, *others)}))
    return pooled(claim, seed, units)


@extractor("wang.gd_best")
def gd_best(claim: Claim, seed: SeedResults):
    return _pair_by_split(claim, seed, "gd", ("ga", "kl"))


@extractor("wang.gd_beats_po")
def gd_beats_po(claim: Claim, seed: SeedResults):
    return _pair_by_split(claim, seed, "gd", ("idk",))


def _sweep_points(per_item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    points = [p for sweep in per_item.get("calibration", {}).values() for p in sweep]
    points += [p for controls in per_item.get("controls", {}).values() for sweep in controls.values() for p in sweep]
    points += [p for by_run in per_item.get("splits", {}).values() for sweep in by_run.values() for p in sweep]
    return [p for p in points if finite(p.get("heldout_retain_ps_exact")) and finite(p.get("heldout_retain_ps_perturb"))]


@extractor("wang.ps_exact_perturb_correlate")
def ps_correlate(claim: Claim, seed: SeedResults):
    retain0, _ = _original(_controls(seed))
    points = _sweep_points(seed.per_item(runs.CONTROLS))
    exact = np.asarray([p["heldout_retain_ps_exact"] for p in points], dtype=float)
    perturb = np.asarray([p["heldout_retain_ps_perturb"] for p in points], dtype=float)
    if len(points) < 3 or exact.std() == 0 or perturb.std() == 0:
        raise NotTestable("fewer than three controlled models with varying PS scores")
    span = float(exact.max() - exact.min())
    if not span >= 0.5 * retain0:
        raise NotTestable(f"the sweeps span {span:.2f} of retain PS-exact, under half the target's {retain0:.2f}")
    from scipy.stats import pearsonr, spearmanr

    rho = float(spearmanr(exact, perturb).statistic)
    return result(claim, seed, rho, values={"controlled models": len(points), "retain PS-exact span": span,
                                            "Pearson r (former quantity)": float(pearsonr(exact, perturb).statistic)})


def _split_size(split: str) -> int:
    """The share of the authors a TOFU split forgets, in percent (forget10 -> 10)."""
    digits = "".join(ch for ch in split if ch.isdigit())
    return int(digits) if digits else 0


@extractor("wang.calibrated_erase_poorly")
def calibrated_erase_poorly(claim: Claim, seed: SeedResults):
    """Table 3's reading: calibrated by model mixing, each GA-based method keeps most of the forget set's PS-exact
    on the largest split notebook 03 calibrated (the paper's 10 %, where it calls their efficacy short)."""
    ratios = calibrated_ratios(_controls(seed))
    splits = sorted({s for s, _ in ratios}, key=_split_size)
    if not splits:
        raise NotTestable("model mixing calibrated no split")
    split = splits[-1]
    units = [unit(claim, run, ratios[(split, run)], values={"split": split})
             if (split, run) in ratios else Unit(run, None, "not testable", f"{run} not calibrated on {split}")
             for run in GA_BASED]
    return pooled(claim, seed, units, values={"split": split})
