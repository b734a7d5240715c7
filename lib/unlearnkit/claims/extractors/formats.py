"""The claims notebook 04 answers: Joshi et al.'s format-transformed evaluation, each format's score read as the share
of the target's gain over the base model that an unlearned model keeps, R = (unlearned - base) / (target - base)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import runs
from ...results import SeedResults
from ..judge import Unit
from ..registry import Claim
from .base import NotTestable, before, extractor, finite, pooled, unit

#: The formats of the paper (MCQA, cloze, analogy, odd-one-out, comprehension in its two forms), by their scores.
FORMATS = ("mcqa", "cloze", "analogy", "odd_one_out", "comprehension_qa", "comprehension_mcqa")
#: A format is informative when the target beats the base model on the forget set by at least this.
INFORMATIVE = 0.1
#: A run looks unlearned in Q&A when it keeps at most this share of the target's Q&A gain (forget ROUGE-L).
UNLEARNED_IN_QA = 0.5
CONTROLS = ("base", "target", "meta")


def kept(unlearned: float, base: float, target: float) -> float:
    """R: the share of the target's gain over the base model that a model keeps."""
    return (unlearned - base) / (target - base)


def _read(seed: SeedResults) -> tuple[dict[str, Any], list[str], dict[str, float], dict[str, float]]:
    """Notebook 04's scores, its informative formats, and each run's R in Q&A (forget ROUGE-L of notebooks 01-02)."""
    formats = seed.metrics(runs.FORMATS)
    base, target = formats.get("base", {}).get("forget"), formats.get("target", {}).get("forget")
    if not base or not target:
        raise NotTestable("notebook 04 scored no base or target model")
    informative = [f for f in FORMATS if finite(target.get(f)) and finite(base.get(f))
                   and target[f] - base[f] >= INFORMATIVE]
    metrics, reference = before(seed)
    qa_base, qa_target = metrics["base"]["forget"]["rouge"], metrics["target"]["forget"]["rouge"]
    if not qa_target - qa_base > 0:
        raise NotTestable("the target answers Q&A no better than the base model")
    qa = {run: kept(m[run]["forget"]["rouge"], qa_base, qa_target) for run, m in seed.unlearning_runs().items()}
    runs_ = [r for r in formats if r not in CONTROLS and r != reference and r in qa]
    return formats, informative, qa, dict.fromkeys(runs_)


def _r(formats: Mapping[str, Any], run: str, f: str) -> float:
    return kept(formats[run]["forget"][f], formats["base"]["forget"][f], formats["target"]["forget"][f])


def _unlearned_in_qa(claim: Claim, runs_, qa: Mapping[str, float], effect) -> list[Unit]:
    """One unit per run that looks unlearned in Q&A, judged on ``effect(run)`` -> (effect, values); the others are
    not testable, with their R in Q&A."""
    units = []
    for run in runs_:
        if qa[run] > UNLEARNED_IN_QA:
            units.append(Unit(run, None, "not testable", f"not unlearned in Q&A (R {qa[run]:.2f})"))
            continue
        value, values = effect(run)
        units.append(unit(claim, run, value, values={"R in Q&A": qa[run], **values}))
    return units


@extractor("joshi.other_formats")
def other_formats(claim: Claim, seed: SeedResults):
    formats, informative, qa, runs_ = _read(seed)
    if not informative:
        raise NotTestable("no format is informative (the target beats the base model by 0.1 on none)")

    def mean_kept(run: str):
        by_format = {f: _r(formats, run, f) - qa[run] for f in informative}
        return float(np.mean(list(by_format.values()))), {f"R_{f} - R_QA": v for f, v in by_format.items()}

    units = _unlearned_in_qa(claim, runs_, qa, mean_kept)
    tested = [u for u in units if u.effect is not None]
    by_format = {f"mean R_{f} - R_QA": float(np.mean([u.values[f"R_{f} - R_QA"] for u in tested]))
                 for f in informative} if tested else {}
    return pooled(claim, seed, units, values={"informative formats": ", ".join(informative), **by_format})


@extractor("joshi.format_gap")
def format_gap(claim: Claim, seed: SeedResults):
    formats, informative, qa, runs_ = _read(seed)
    if len(informative) < 2:
        raise NotTestable(f"{len(informative)} informative format(s): two are needed")
    units = []
    for run in runs_:
        gaps = {f: 1 - _r(formats, run, f) for f in informative}
        units.append(unit(claim, run, max(gaps.values()) - min(gaps.values()),
                          values={f"gap {f}": g for f, g in gaps.items()}))
    return pooled(claim, seed, units, values={"informative formats": ", ".join(informative)})


@extractor("joshi.cloze_gap")
def cloze_gap(claim: Claim, seed: SeedResults):
    formats, informative, qa, runs_ = _read(seed)
    if "cloze" not in informative:
        raise NotTestable("cloze is not informative (the target beats the base model by less than 0.1)")
    units = _unlearned_in_qa(claim, runs_, qa, lambda run: (_r(formats, run, "cloze") - qa[run],
                                                             {"R cloze": _r(formats, run, "cloze")}))
    return pooled(claim, seed, units)


@extractor("joshi.comprehension_retain_decline")
def comprehension_decline(claim: Claim, seed: SeedResults):
    formats, _, _, runs_ = _read(seed)
    key = "comprehension_qa"
    target, base = formats["target"]["retain"].get(key), formats["base"]["retain"].get(key)
    if not (finite(target) and finite(base) and target > base):
        raise NotTestable("the target answers retain comprehension no better than the base model")
    units = [unit(claim, run, target - formats[run]["retain"][key], values={"retain comprehension": formats[run]["retain"][key]})
             for run in runs_ if finite(formats[run].get("retain", {}).get(key))]
    return pooled(claim, seed, units, values={"target's retain comprehension": target})


#: Fewest runs whose rankings can be compared.
MIN_RUNS = 5


@extractor("joshi.single_format_unreliable")
def single_format_unreliable(claim: Claim, seed: SeedResults):
    """Per informative format, Kendall's tau-b between the runs' ranking by R in Q&A and by R in that format (how
    much of the target's gain each run keeps); a low tau: which run "forgot more" in Q&A says little in the other."""
    from scipy.stats import kendalltau

    formats, informative, qa, runs_ = _read(seed)
    if not informative:
        raise NotTestable("no format is informative (the target beats the base model by 0.1 on none)")
    names = [r for r in runs_ if finite(qa[r])]
    if len(names) < MIN_RUNS:
        raise NotTestable(f"{len(names)} unlearning runs scored in notebook 04")
    units = []
    for f in informative:
        other = [_r(formats, run, f) for run in names]
        tau = float(kendalltau([qa[r] for r in names], other).statistic)
        if not finite(tau):
            units.append(Unit(f, None, "not testable", "every run scores the same in one of the two formats"))
            continue
        units.append(unit(claim, f, tau, values={"runs": len(names)}))
    return pooled(claim, seed, units, values={"informative formats": ", ".join(informative)})
