"""What every extractor shares: the registry of extractors, building a seed's result from an effect and its units,
and the readings of a seed every claim needs (its stored parameters, notebook 01's models, the setup gate)."""


from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ... import pipeline, results, runs
from ...results import SeedResults
from .. import judge, registry
from ..judge import CONSISTENT, COUNTED, SeedResult, Unit
from ..registry import Claim

Extractor = Callable[[Claim, SeedResults], SeedResult]
EXTRACTORS: dict[str, Extractor] = {}


def extractor(*ids: str) -> Callable[[Extractor], Extractor]:
    """Register a function as the extractor of the claims ``ids``."""
    def register(fn: Extractor) -> Extractor:
        for claim_id in ids:
            if claim_id in EXTRACTORS:
                raise ValueError(f"two extractors for claim {claim_id!r}")
            EXTRACTORS[claim_id] = fn
        return fn
    return register


class NotTestable(Exception):
    """A precondition of the claim is unmet on this seed; the message says which, in a few words."""


# --------------------------------------------------------------------------- building a seed's result


def finite(x: Any) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and math.isfinite(x)


def result(claim: Claim, seed: SeedResults, effect: float | None, units: Sequence[Unit] = (), reason: str = "",
           values: Mapping[str, Any] | None = None, outcome: str | None = None) -> SeedResult:
    return judge.seed_result(seed.seed, effect, claim.side, claim.null, claim.minimal_effect, units, reason,
                             values, outcome)


def unit(claim: Claim, name: str, effect: float | None, reason: str = "",
         values: Mapping[str, Any] | None = None) -> Unit:
    """One unit judged by the claim's own no-effect value and minimal effect."""
    return judge.unit(name, effect, claim.side, claim.null, claim.minimal_effect, reason, values)


def pooled(claim: Claim, seed: SeedResults, units: Sequence[Unit], values: Mapping[str, Any] | None = None) -> SeedResult:
    """A multi-unit claim's seed result: the mean of its units' effects (``pool: mean``) or the share of its tested
    units on the paper's side (``pool: share``); not testable when no unit is."""
    tested = [u for u in units if u.outcome in COUNTED]
    if not tested:
        reasons = sorted({u.reason for u in units if u.reason}) or ["no unit to test"]
        return result(claim, seed, None, units, "no unit testable: " + "; ".join(reasons), values)
    if claim.pool == "share":
        effect = sum(u.outcome == CONSISTENT for u in tested) / len(tested)
        return result(claim, seed, effect, units, values=values)
    effects = [u.effect for u in tested if finite(u.effect)]
    if effects:
        return result(claim, seed, float(np.mean(effects)), units, values=values)
    # every tested unit was decided by the claim's own rule without a number (a run that never keeps utility)
    outcomes = {u.outcome for u in tested}
    outcome = outcomes.pop() if len(outcomes) == 1 else judge.INCONCLUSIVE
    return result(claim, seed, None, units, values=values, outcome=outcome)


# --------------------------------------------------------------------------- shared readings of a seed


def parameters(seed: SeedResults) -> dict[str, Any]:
    """The parameters the seed's notebook 01 ran with (as stored; the profile may have changed since)."""
    return seed.metrics(runs.FINETUNE)["meta"]["parameters"]


def method_of(run: str, params: Mapping[str, Any]) -> str:
    """The unlearning method of a run of notebook 02 (or of a label ``run@step``), by the stored method_settings."""
    name = run.split("@", 1)[0]
    return str(pipeline.own_settings(params, name).get("method", name))


def before(seed: SeedResults) -> tuple[dict[str, Any], str | None]:
    """Notebook 01's metrics and the name of its retain model (the forget-quality reference)."""
    metrics = seed.metrics(runs.FINETUNE)
    return metrics, metrics["meta"].get("forget_quality_reference")


#: The setup check every unlearning claim is gated on (its thresholds: TOFU's level and the former bar).
TARGET_ROUGE_MIN, FORGET_QUALITY_LEVEL = 0.9, 0.05


def target_gate(seed: SeedResults) -> str:
    """Why the seed's target is not in TOFU's starting regime, or "": it reproduces its forget answers (ROUGE-L
    recall >= 0.9), forget quality tells it from the retain model (< 0.05), and the retain model answers less."""
    metrics, reference = before(seed)
    if not reference or reference not in metrics:
        return "no retain model"
    target = metrics["target"]
    rouge, quality = target["forget"]["rouge"], target["summary"].get("forget_quality", math.nan)
    if rouge < TARGET_ROUGE_MIN:
        return f"the target's forget ROUGE-L {rouge:.2f} is under {TARGET_ROUGE_MIN}"
    if not quality < FORGET_QUALITY_LEVEL:
        return f"the target's forget quality {quality:.2g} is not under {FORGET_QUALITY_LEVEL}"
    if metrics[reference]["forget"]["rouge"] >= rouge:
        return "the retain model answers the forget set as well as the target"
    return ""


# --------------------------------------------------------------------------- one seed, every seed


#: The claims not about an unlearned model, so not gated on the target's regime (the aligned models of notebook 07
#: come from their own complying model).
UNGATED = ("scholten.sampling_toxicity_exceeds_greedy", "scholten.greedy_underestimates_toxicity")


def effect_on_seed(claim: Claim, seed: SeedResults) -> SeedResult:
    """The claim's effect on one seed (not testable, with the reason, where a precondition is unmet or the notebook
    it reads has not run for the seed). Every claim about unlearning is gated on the setup check: a seed whose target
    is not in TOFU's starting regime tests none of them."""
    try:
        if claim.kind != registry.SETUP_CHECK and claim.id not in UNGATED:
            why = target_gate(seed)
            if why:
                return result(claim, seed, None, reason=f"setup: {why}")
        return EXTRACTORS[claim.id](claim, seed)
    except NotTestable as e:
        return result(claim, seed, None, reason=str(e))
    except results.CorruptResult as e:
        return result(claim, seed, None, reason=f"unreadable {e.notebook}/{e.file}: {e.reason}")
    except results.MissingResult as e:
        return result(claim, seed, None, reason=f"not run: {e.notebook}/{e.file}")


# --------------------------------------------------------------------------- membership inference against the retain model

#: A membership-inference attack tells a run's forget set from the holdout when its AUC differs from the retain
#: model's by more than this (the retain model never saw either set: its AUC is the null).
MIA_MARGIN = 0.1


def mia_gaps(run_summary: Mapping[str, Any], retain_summary: Mapping[str, Any]) -> dict[str, float]:
    """Every membership-inference attack scored on both a run and the retain model, with the run's AUC minus the
    retain model's (positive: the run's forget items look more like training members than under the retain model,
    i.e. still under-unlearned; negative: less, over-unlearned: their loss is above the unseen holdout's)."""
    out = {}
    for key, auc in run_summary.items():
        if key.startswith("mia_") and key.endswith("_auc") and key in retain_summary:
            if auc is not None and math.isfinite(auc):
                out[key.removeprefix("mia_").removesuffix("_auc")] = auc - retain_summary[key]
    return out
