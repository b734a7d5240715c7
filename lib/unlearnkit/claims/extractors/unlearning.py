"""The claims notebooks 01 and 02 answer: TOFU's setup and baselines, each newer method's own claim at matched
forgetting, and open-unlearning's membership inference against greedy ROUGE."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ... import runs
from ...metrics.tofu import ks_statistic
from ...pipeline.evaluate import matched_level
from ...results import MissingResult, SeedResults
from ..judge import CONSISTENT, INCONSISTENT, Unit
from ..registry import Claim
from .base import (
    FORGET_QUALITY_LEVEL,
    MIA_MARGIN,
    NotTestable,
    before,
    extractor,
    finite,
    mia_gaps,
    pooled,
    result,
    target_gate,
    unit,
)

#: A scored step keeps model utility at this share of the target's (TOFU's "keeps utility", the former bar).
UTILITY_KEPT = 0.9
#: A run under this share of the target's utility has collapsed.
COLLAPSED = 0.5
#: TOFU's baselines: gradient ascent, gradient difference, KL minimisation and preference optimisation (IDK).
BASELINES = ("ga", "gd", "kl", "idk")
#: p-values are read in decades; one of exactly 0 (underflow) is read at this floor.
P_FLOOR = 1e-300


def _target_utility(seed: SeedResults) -> float:
    return float(before(seed)[0]["target"]["summary"]["model_utility"])


def _run(seed: SeedResults, run: str) -> dict[str, Any]:
    found = seed.unlearning_runs()
    if run not in found:
        raise NotTestable(f"{run} did not run")
    return found[run]


def _target_point(seed: SeedResults) -> dict[str, Any]:
    """Step 0 of every unlearning run: the target as notebook 01 scored it (its KS statistic D against the retain
    model from 01's stored truth ratios, None where they are not stored)."""
    metrics, reference = before(seed)
    target = metrics["target"]
    point = {"step": 0, "forget_rouge": target["forget"]["rouge"], "model_utility": target["summary"].get("model_utility"),
             "forget_quality": target["summary"].get("forget_quality"), "ks_statistic": None}
    try:
        ratios = seed.per_item(runs.FINETUNE)
        point["ks_statistic"] = ks_statistic(ratios["target"]["forget"]["truth_ratio"],
                                             ratios[reference]["forget"]["truth_ratio"])
    except (MissingResult, KeyError, TypeError, ValueError):
        pass
    return point


def _scored_points(seed: SeedResults, run: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every step of ``run`` scored on both forget ROUGE-L and the compared quantities, in step order: the target
    (step 0), the step notebook 02 scored at matched forgetting (the first grid step whose trajectory ROUGE-L reached
    the level) and the final step; and the run's ``matched`` record."""
    found = _run(seed, run)
    matched = found["meta"].get("matched")
    if matched is None:
        raise NotTestable(f"{run} has no scores at matched forgetting (notebook 02 ran before it stored them)")
    points = [_target_point(seed)]
    if matched.get("reached"):
        points.append({"step": matched["step"], **{k: matched.get(k) for k in _MATCHED_FIELDS}})
    final_step = (matched.get("final") or {}).get("step")
    if final_step is not None and all(p["step"] != final_step for p in points):
        summary = found[run]["summary"]
        points.append({"step": final_step, "forget_rouge": found[run]["forget"]["rouge"],
                       "model_utility": summary.get("model_utility"), "forget_quality": summary.get("forget_quality"),
                       "ks_statistic": matched["final"].get("ks_statistic")})
    return sorted(points, key=lambda p: p["step"]), matched


#: What a scored step holds beside its step: forget ROUGE-L and the quantities a matched comparison reads.
_MATCHED_FIELDS = ("forget_rouge", "model_utility", "forget_quality", "ks_statistic")


def _between(a: Any, b: Any, weight: float) -> float | None:
    return a + weight * (b - a) if finite(a) and finite(b) else None


def _matched(seed: SeedResults, run: str) -> dict[str, Any]:
    """``run`` read at exactly the matched forget ROUGE-L level (#56 item 4): forget ROUGE-L and each compared
    quantity interpolated linearly between the two scored steps that bracket the level (the last scored step above
    it and the first at or below), forget quality in decades. Notebook 02 scores the compared quantities only at the
    target (step 0), at its matched step and at the final step, so the bracket is usually step 0 to the matched step;
    the first scored step below the level alone overshot it by up to 0.45 ROUGE-L, unequally between the compared
    runs. A run with no scored step at or below the level is not testable, with its lowest scored ROUGE-L."""
    points, matched = _scored_points(seed, run)
    level = matched.get("level")
    if not finite(level):
        raise NotTestable(f"{run}: {matched.get('reason') or 'no matched level'}")
    for a, b in zip(points, points[1:]):
        if finite(a["forget_rouge"]) and finite(b["forget_rouge"]) and a["forget_rouge"] > level >= b["forget_rouge"]:
            weight = (a["forget_rouge"] - level) / (a["forget_rouge"] - b["forget_rouge"])
            out = {"level": level, "bracket": (a["step"], b["step"]), "weight": weight,
                   **{k: _between(a[k], b[k], weight) for k in ("forget_rouge", "model_utility", "ks_statistic")}}
            decades = [math.log10(max(p["forget_quality"], P_FLOOR)) if finite(p["forget_quality"]) else None
                       for p in (a, b)]
            out["log10_forget_quality"] = _between(*decades, weight)
            return out
    scored = [p for p in points if finite(p["forget_rouge"])]
    lowest = min(scored, key=lambda p: p["forget_rouge"]) if scored else None
    raise NotTestable(f"{run}: {matched.get('reason') or 'no scored step reaches the matched level'}"
                      if lowest is None or lowest["step"] == 0 else
                      f"{run}: no scored step at or below the matched forget ROUGE-L {level:.3f} (lowest "
                      f"{lowest['forget_rouge']:.3f} at step {lowest['step']})")


def _bracket(m: Mapping[str, Any]) -> str:
    return f"steps {m['bracket'][0]}-{m['bracket'][1]}, weight {m['weight']:.2f}"


@extractor("setup.target_in_regime")
def target_in_regime(claim: Claim, seed: SeedResults):
    metrics, reference = before(seed)
    if not reference or reference not in metrics:
        raise NotTestable("no retain model")
    target = metrics["target"]
    values = {"target forget ROUGE-L": target["forget"]["rouge"],
              "target forget quality": target["summary"].get("forget_quality"),
              "retain model forget ROUGE-L": metrics[reference]["forget"]["rouge"],
              "target model utility": target["summary"].get("model_utility")}
    why = target_gate(seed)
    if why:
        values["why not"] = why
    return result(claim, seed, target["forget"]["rouge"], values=values, outcome=INCONSISTENT if why else CONSISTENT)


@extractor("ou.privleak_retain_near_zero")
def privleak(claim: Claim, seed: SeedResults):
    metrics, reference = before(seed)
    target = metrics["target"]["summary"]
    retain = metrics.get(reference, {}).get("summary", {}) if reference else {}
    if "privleak" not in target or "privleak" not in retain:
        raise NotTestable(metrics["target"].get("privacy_skipped") or "no privacy metrics")
    values = {"target privleak": target["privleak"], "retain model privleak": retain["privleak"]}
    return result(claim, seed, target["privleak"] - abs(retain["privleak"]), values=values)


def _scored_steps(metrics: Mapping[str, Any], run: str) -> list[dict[str, Any]]:
    """The steps of a run notebook 02 scored fully: the final one, and the one at matched forgetting."""
    summary = metrics[run]["summary"]
    steps = [{"step": "final", "forget quality": summary.get("forget_quality"),
              "model utility": summary.get("model_utility")}]
    matched = metrics["meta"].get("matched") or {}
    if matched.get("reached"):
        steps.append({"step": f"matched (step {matched['step']})", "forget quality": matched.get("forget_quality"),
                      "model utility": matched.get("model_utility")})
    return steps


def _effective_unlearning(claim: Claim, seed: SeedResults, run: str, target_utility: float) -> Unit:
    """One run read by TOFU's measure of effective unlearning: log10 of its best forget quality over 0.05 among the
    scored steps that keep 90 % of the target's utility; a run that keeps it at no scored step is no effective
    unlearning (on TOFU's side, with no number)."""
    found = seed.unlearning_runs()
    if run not in found:
        return Unit(run, None, "not testable", f"{run} did not run")
    steps = _scored_steps(found[run], run)
    values = {f"{k} ({s['step']})": s[k] for s in steps for k in ("forget quality", "model utility")}
    kept = [s for s in steps if finite(s["model utility"]) and s["model utility"] >= UTILITY_KEPT * target_utility]
    if not kept:
        values["note"] = f"keeps {UTILITY_KEPT:.0%} of the target's utility at no scored step"
        return Unit(run, None, CONSISTENT, "", values)
    best = max(kept, key=lambda s: s["forget quality"] if finite(s["forget quality"]) else -1.0)
    quality = best["forget quality"]
    if not finite(quality):
        return Unit(run, None, "not testable", "no forget quality", values)
    return unit(claim, run, math.log10(max(quality, P_FLOOR) / FORGET_QUALITY_LEVEL), values=values)


@extractor("tofu.baselines_fail")
def baselines_fail(claim: Claim, seed: SeedResults):
    target_utility = _target_utility(seed)
    return pooled(claim, seed, [_effective_unlearning(claim, seed, run, target_utility) for run in BASELINES])


@extractor("dpo.idk_tofu")
def dpo_like_tofu(claim: Claim, seed: SeedResults):
    one = _effective_unlearning(claim, seed, "dpo", _target_utility(seed))
    if one.outcome == "not testable":
        raise NotTestable(one.reason)
    return result(claim, seed, one.effect, (one,), values=one.values,
                  outcome=one.outcome if one.effect is None else None)


def _utility_at_matched(claim: Claim, seed: SeedResults, first: str, second: str):
    a, b = _matched(seed, first), _matched(seed, second)
    if not (finite(a["model_utility"]) and finite(b["model_utility"])):
        raise NotTestable("model utility not scored on both sides of the matched level")
    values = {f"{first} model utility at matched": a["model_utility"], f"{second} model utility at matched":
              b["model_utility"], f"{first} interpolated": _bracket(a), f"{second} interpolated": _bracket(b),
              "matched level": a["level"]}
    return result(claim, seed, a["model_utility"] - b["model_utility"], values=values)


@extractor("npo.better_tradeoff_than_ga")
def npo_over_ga(claim: Claim, seed: SeedResults):
    return _utility_at_matched(claim, seed, "npo", "ga")


@extractor("undial.claim")
def undial_over_ga(claim: Claim, seed: SeedResults):
    return _utility_at_matched(claim, seed, "undial", "ga")


@extractor("altpo.claim")
def altpo_over_npo(claim: Claim, seed: SeedResults):
    return _utility_at_matched(claim, seed, "altpo", "npo")


def _ks_at_matched(seed: SeedResults, run: str) -> dict[str, Any]:
    m = _matched(seed, run)
    if not finite(m["ks_statistic"]):
        raise NotTestable(f"{run}: no KS statistic on both sides of the matched level (notebook 01's truth ratios "
                          "not stored)")
    return m


@extractor("simnpo.beats_npo")
def simnpo_over_npo(claim: Claim, seed: SeedResults):
    target_utility = _target_utility(seed)
    a, b = _ks_at_matched(seed, "simnpo"), _ks_at_matched(seed, "npo")
    for run, m in (("simnpo", a), ("npo", b)):
        if not m["model_utility"] >= COLLAPSED * target_utility:
            raise NotTestable(f"{run} has collapsed at matched forgetting (utility {m['model_utility']:.2f})")
    values = {"npo KS D at matched": b["ks_statistic"], "simnpo KS D at matched": a["ks_statistic"],
              "simnpo interpolated": _bracket(a), "npo interpolated": _bracket(b)}
    if finite(a["log10_forget_quality"]) and finite(b["log10_forget_quality"]):
        values["log10 forget quality simnpo - npo"] = a["log10_forget_quality"] - b["log10_forget_quality"]
    return result(claim, seed, b["ks_statistic"] - a["ks_statistic"], values=values)


@extractor("ceu.claim")
def ceu_best(claim: Claim, seed: SeedResults):
    ceu = _ks_at_matched(seed, "ceu")
    others = []
    for run in seed.unlearning_runs():
        if run == "ceu":
            continue
        try:
            matched = _ks_at_matched(seed, run)
        except NotTestable:
            continue
        others.append(unit(claim, run, matched["ks_statistic"] - ceu["ks_statistic"],
                           values={"KS D at matched": matched["ks_statistic"], "interpolated": _bracket(matched)}))
    if not others:
        raise NotTestable("no other run reached the matched level")
    best = min(others, key=lambda u: u.values["KS D at matched"])
    return result(claim, seed, best.effect, others, values={"ceu KS D at matched": ceu["ks_statistic"],
                                                            "ceu interpolated": _bracket(ceu),
                                                            "best other": best.name})


@extractor("rmu.keeps_utility")
def rmu(claim: Claim, seed: SeedResults):
    metrics, reference = before(seed)
    run = _run(seed, "rmu")["rmu"]
    target_rouge, retain_rouge = metrics["target"]["forget"]["rouge"], metrics[reference]["forget"]["rouge"]
    drop = (target_rouge - run["forget"]["rouge"]) / (target_rouge - retain_rouge)
    kept = run["summary"]["model_utility"] / _target_utility(seed)
    values = {"forget ROUGE-L drop, share of the target-to-retain gap": drop,
              "model utility, share of the target's": kept}
    return result(claim, seed, min(drop - 0.5, kept - UTILITY_KEPT), values=values)


@extractor("npo_eo.keeps_utility")
def npo_eo(claim: Claim, seed: SeedResults):
    eo, alone = _run(seed, "npo_eo")["npo_eo"], _run(seed, "npo")["npo"]
    values = {"npo_eo model utility": eo["summary"]["model_utility"], "npo model utility":
              alone["summary"]["model_utility"]}
    return result(claim, seed, eo["summary"]["model_utility"] - alone["summary"]["model_utility"], values=values)


#: The one attack the claim reads: MUSE's PrivLeak (and open-unlearning's privleak) is built on Min-K% Prob, so the
#: claim takes it alone rather than the strongest of several attacks (a maximum over attacks is biased upwards).
PRIVLEAK_ATTACK = "mink"


@extractor("ou.mia_beyond_rouge")
def mia_beyond_rouge(claim: Claim, seed: SeedResults):
    metrics, reference = before(seed)
    retain = metrics[reference].get("summary", {})
    if not any(k.startswith("mia_") for k in retain):
        raise NotTestable(metrics["target"].get("privacy_skipped") or "no privacy metrics for the retain model")
    level = matched_level(metrics, reference)
    units = []
    for run, found in seed.unlearning_runs().items():
        result_ = found[run]
        if result_["forget"]["rouge"] > level:
            continue
        gaps = mia_gaps(result_.get("summary", {}), retain)
        if PRIVLEAK_ATTACK not in gaps:
            units.append(Unit(run, None, "not testable", f"no {PRIVLEAK_ATTACK} attack scored"))
            continue
        signed = gaps[PRIVLEAK_ATTACK]
        units.append(Unit(run, abs(signed), CONSISTENT if abs(signed) > MIA_MARGIN else INCONSISTENT, "",
                          {"forget ROUGE-L": result_["forget"]["rouge"], "attack": PRIVLEAK_ATTACK,
                           "AUC - retain AUC": signed,
                           "direction": "under-unlearned" if signed > 0 else "over-unlearned"}))
    if sum(u.outcome != "not testable" for u in units) < 3:
        raise NotTestable(f"{len(units)} runs look unlearned by ROUGE (forget ROUGE-L <= {level:.3f}); 3 are needed")
    return pooled(claim, seed, units, values={"ROUGE level": level})
