"""A registered claim judged from its effect quantity: one seed's outcome among four, and the rule over seeds.

A claim of the quote registry (:mod:`unlearnkit.claims.registry`, ``docs/claims.yaml``) names one **effect quantity** on
the paper's own scale, the **side** on which the paper puts it (``above`` or ``below`` its **null**, the value of no
effect) and a **minimal effect**: the smallest distance from the null that counts, with its reason. On one seed
(docs/metrics.md §8.3):

- **consistent**: the effect lies at least the minimal effect from the null on the paper's side;
- **inconsistent**: at least the minimal effect from the null on the other side;
- **inconclusive**: within the minimal effect of the null;
- **not testable**: a precondition is unmet (no model in the regime, a run that never unlearned or collapsed); the
  reason is kept, and the seed is left out of n: it is never counted as a failure.

A claim about several units (methods, formats, models, questions) also reports each unit's effect and outcome and
the **pooled support**, units on the paper's side over units tested, never a silent "every".

Over seeds (:func:`verdict_of`): n counts the consistent, inconsistent and inconclusive seeds. The verdict is
**reproduced** when the one-sided 95 % Clopper-Pearson lower bound of the share of consistent seeds exceeds 1/2,
**contradicted** when that of the inconsistent seeds does, **inconclusive** otherwise, and **not testable here**
when n is 0. Five seeds that all agree are the fewest that clear the bound (0.05 ** (1/5) = 0.55 > 1/2 >
0.05 ** (1/4) = 0.47): a claim testable on four seeds or fewer cannot be reproduced by this rule, a limit of power,
not a failure. Beside the verdict, never overriding it: the effect's mean with a t-interval over the testable seeds
and the exact two-sided sign test of the effect against its null, and the **lean** they give (:func:`lean_of`):
*against* the paper when the t-interval lies wholly on the other side of no effect, or the sign test finds the seeds
on the other side with p < 0.05; *with* it symmetrically; *none* otherwise. The lean says where an inconclusive claim's
evidence points; it never changes a verdict.

Pure arithmetic on plain values (scipy.stats for the t quantile and the binomial test): no model, no run store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

# --------------------------------------------------------------------------- the rule's bound

#: The one-sided level of the rule's Clopper-Pearson bound (a 95 % lower bound), and the share it must exceed.
RULE_ALPHA, RULE_SHARE = 0.05, 0.5
#: The smallest number of seeds at which "holds on every seed" clears the rule: 0.05 ** (1 / 4) = 0.47 < 1/2 <
#: 0.05 ** (1 / 5) = 0.55. (A paired sign test needs 6 for a two-sided p below 0.05: 2 / 2 ** 6 = 0.031.)
SEEDS_FOR_A_VERDICT = 5


def clopper_pearson_lower(k: int, n: int, alpha: float) -> float:
    """The one-sided (1 - alpha) Clopper-Pearson lower bound of a binomial proportion k / n: 0 for k = 0, else the
    alpha quantile of Beta(k, n - k + 1)."""
    from scipy.stats import beta

    if not 0 <= k <= n or n <= 0:
        raise ValueError(f"k = {k} successes of n = {n} trials")
    return 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))



# --------------------------------------------------------------------------- one seed

CONSISTENT, INCONSISTENT, INCONCLUSIVE, NOT_TESTABLE = "consistent", "inconsistent", "inconclusive", "not testable"
OUTCOMES = (CONSISTENT, INCONSISTENT, INCONCLUSIVE, NOT_TESTABLE)
#: The outcomes that count in n.
COUNTED = (CONSISTENT, INCONSISTENT, INCONCLUSIVE)
SIDES = ("above", "below")


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and math.isfinite(x)


def signed_effect(effect: float, side: str, null: float) -> float:
    """The effect's distance from its null, positive on the paper's side."""
    if side not in SIDES:
        raise ValueError(f"side {side!r}: one of {', '.join(SIDES)}")
    gap = float(effect) - float(null)
    return gap if side == "above" else -gap


def outcome_of(effect: float | None, side: str, null: float, minimal: float) -> str:
    """One seed's (or one unit's) outcome: consistent, inconsistent or inconclusive by the minimal effect; an effect
    that is missing or not finite is not testable."""
    if minimal < 0 or not math.isfinite(minimal):
        raise ValueError(f"minimal effect {minimal!r}: a finite number >= 0")
    if not _finite(effect):
        return NOT_TESTABLE
    gap = signed_effect(float(effect), side, null)
    if gap >= minimal and (minimal > 0 or gap > 0):
        return CONSISTENT
    if gap <= -minimal and (minimal > 0 or gap < 0):
        return INCONSISTENT
    return INCONCLUSIVE


@dataclass(frozen=True)
class Unit:
    """One unit of a multi-unit claim on one seed (a method, a format, a model): its effect and outcome, or the
    reason it could not be tested, and the numbers the effect was computed from (``values``)."""

    name: str
    effect: float | None
    outcome: str
    reason: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SeedResult:
    """A claim on one seed: the effect quantity, the outcome, why it was not testable (else ""), its units (empty for
    a claim about one unit), and the numbers beside it (``values``: what the effect was computed from)."""

    seed: int
    effect: float | None
    outcome: str
    reason: str = ""
    units: tuple[Unit, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def support(self) -> tuple[int, int]:
        """Pooled support on this seed: units on the paper's side (consistent) of units tested."""
        tested = [u for u in self.units if u.outcome in COUNTED]
        return sum(u.outcome == CONSISTENT for u in tested), len(tested)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["units"] = [asdict(u) for u in self.units]
        out["support"] = list(self.support)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SeedResult:
        values = {k: v for k, v in data.items() if k != "support"}
        values["units"] = tuple(Unit(**u) for u in values.get("units", ()))
        return cls(**values)


def seed_result(seed: int, effect: float | None, side: str, null: float, minimal: float,
                units: Sequence[Unit] = (), reason: str = "", values: Mapping[str, Any] | None = None,
                outcome: str | None = None) -> SeedResult:
    """A seed's result from its effect; ``reason`` (a precondition unmet) makes it not testable whatever the
    effect. ``outcome`` overrides the reading of the effect where the claim's own rule decides without one (every
    unit on the paper's side for want of a single number: a run that never keeps utility is no effective
    unlearning, whatever its forget quality)."""
    if reason:
        return SeedResult(seed, effect if _finite(effect) else None, NOT_TESTABLE, reason, tuple(units), values or {})
    if outcome is not None:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome {outcome!r}: one of {', '.join(OUTCOMES)}")
        return SeedResult(seed, float(effect) if _finite(effect) else None, outcome, "", tuple(units), values or {})
    outcome = outcome_of(effect, side, null, minimal)
    why = "" if outcome != NOT_TESTABLE else "the effect could not be computed"
    return SeedResult(seed, float(effect) if _finite(effect) else None, outcome, why, tuple(units), values or {})


def unit(name: str, effect: float | None, side: str, null: float, minimal: float, reason: str = "",
         values: Mapping[str, Any] | None = None) -> Unit:
    """One unit judged like a seed (:func:`outcome_of`), not testable with ``reason``."""
    if reason:
        return Unit(name, effect if _finite(effect) else None, NOT_TESTABLE, reason, values or {})
    return Unit(name, float(effect) if _finite(effect) else None, outcome_of(effect, side, null, minimal), "",
                values or {})


# --------------------------------------------------------------------------- over seeds

REPRODUCED, CONTRADICTED, INCONCLUSIVE_VERDICT, NOT_TESTABLE_HERE = (
    "reproduced", "contradicted", "inconclusive", "not testable here")
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE_VERDICT, NOT_TESTABLE_HERE)
#: The t-interval's confidence.
T_CONFIDENCE = 0.95


def verdict_of(outcomes: Sequence[str]) -> str:
    """The rule over seeds, on the seeds' outcomes (not-testable ones are left out of n)."""
    counted = [o for o in outcomes if o in COUNTED]
    n = len(counted)
    if n == 0:
        return NOT_TESTABLE_HERE
    if clopper_pearson_lower(counted.count(CONSISTENT), n, RULE_ALPHA) > RULE_SHARE:
        return REPRODUCED
    if clopper_pearson_lower(counted.count(INCONSISTENT), n, RULE_ALPHA) > RULE_SHARE:
        return CONTRADICTED
    return INCONCLUSIVE_VERDICT


def t_interval(values: Sequence[float], confidence: float = T_CONFIDENCE) -> tuple[float, float, float]:
    """The mean of ``values`` (one per seed) with its Student-t interval, mean ± t(1 - (1 - confidence)/2, n - 1)
    · sd / sqrt(n): (nan, nan, nan) for none, (v, nan, nan) for one value (no spread to estimate)."""
    from scipy.stats import t

    x = np.asarray([v for v in values if _finite(v)], dtype=float)
    if len(x) == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if len(x) == 1:
        return (mean, math.nan, math.nan)
    half = float(t.ppf(1 - (1 - confidence) / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return (mean, mean - half, mean + half)


def sign_test(effects: Sequence[float], side: str, null: float) -> tuple[int, int, float]:
    """The exact two-sided sign test of the effects against their null (ties dropped): (seeds on the paper's side,
    seeds off the null, p). With no seed off the null, p is 1."""
    from scipy.stats import binomtest

    gaps = [signed_effect(e, side, null) for e in effects if _finite(e)]
    k, n = sum(g > 0 for g in gaps), sum(g != 0 for g in gaps)
    return (k, n, float(binomtest(k, n, 0.5).pvalue) if n else 1.0)


#: The lean (docs/metrics.md §8.3): where the seeds' effects point, beside the verdict.
WITH, AGAINST, NO_LEAN = "with", "against", "none"
LEANS = (WITH, AGAINST, NO_LEAN)
#: The sign test's level for a lean (two-sided, exact: six seeds all on one side give p = 1/32).
LEAN_P = 0.05


def lean_of(low: float | None, high: float | None, sign_k: int, sign_n: int, sign_p: float, side: str,
            null: float) -> str:
    """The lean of a claim over its testable seeds: *against* when the t-interval [low, high] lies wholly on the
    other side of no effect (``null``), or the exact sign test finds the seeds on the other side with p < 0.05
    (``sign_k`` of ``sign_n`` seeds off the null on the paper's side); *with* symmetrically; *none* otherwise (and
    where the two readings point opposite ways)."""
    gaps = (sorted(signed_effect(x, side, null) for x in (low, high)) if _finite(low) and _finite(high)
            else None)
    signed = sign_n > 0 and sign_p < LEAN_P
    toward = (gaps is not None and gaps[0] > 0) or (signed and 2 * sign_k > sign_n)
    away = (gaps is not None and gaps[1] < 0) or (signed and 2 * sign_k < sign_n)
    return WITH if toward and not away else AGAINST if away and not toward else NO_LEAN


def lean_words(lean: str, low: float | None, high: float | None, sign_k: int, sign_n: int, sign_p: float,
               side: str, null: float) -> str:
    """The lean in words, with what gives it: "leans against the paper: the 95 % t-interval lies wholly below no
    effect 0; 0 of 6 seeds on the paper's side (sign test p = 0.031)"."""
    if lean not in LEANS:
        raise ValueError(f"lean {lean!r}: one of {', '.join(LEANS)}")
    seeds = f"{sign_k} of {sign_n} seeds on the paper's side (sign test p = {sign_p:.2g})" if sign_n else \
        "no seed off no effect"
    if lean == NO_LEAN:
        return f"no lean: {seeds}"
    other = {"above": "below", "below": "above"}[side]
    where = side if lean == WITH else other
    reasons = []
    if _finite(low) and _finite(high):
        gaps = sorted(signed_effect(x, side, null) for x in (low, high))
        if (lean == WITH and gaps[0] > 0) or (lean == AGAINST and gaps[1] < 0):
            reasons.append(f"the 95 % t-interval lies wholly {where} no effect {null:g}")
    reasons.append(seeds)
    return f"leans {lean} the paper: " + "; ".join(reasons)


def seeds_words(results: Sequence[SeedResult]) -> str:
    """What the seeds say: "consistent on 5 of 6 testable seeds (inconclusive on 1); not testable on seed 3 (...)",
    with the power limit where fewer than five seeds are testable."""
    counted = [r for r in results if r.outcome in COUNTED]
    untested = [r for r in results if r.outcome == NOT_TESTABLE]
    n = len(counted)
    if n == 0:
        text = "testable on no seed"
    else:
        k = sum(r.outcome == CONSISTENT for r in counted)
        rest = [f"{o} on {sum(r.outcome == o for r in counted)}" for o in (INCONSISTENT, INCONCLUSIVE)
                if any(r.outcome == o for r in counted)]
        text = f"consistent on {k} of {n} testable seed{'s' if n != 1 else ''}" + (f" ({', '.join(rest)})" if rest else "")
    if untested:
        reasons = sorted({r.reason for r in untested})
        text += (f"; not testable on seed{'s' if len(untested) > 1 else ''} "
                 f"{', '.join(str(r.seed) for r in untested)} ({'; '.join(reasons)})")
    if 0 < n < SEEDS_FOR_A_VERDICT:
        text += (f"; with {n} testable seed{'s' if n != 1 else ''} this rule cannot reproduce it "
                 f"(at least {SEEDS_FOR_A_VERDICT} are needed: a limit of power, not a failure)")
    return text


@dataclass(frozen=True)
class ClaimVerdict:
    """A registered claim judged over seeds: its id, each seed's result, the counts, the verdict by the rule, and
    beside it the effect's mean with its t-interval, the sign test and the pooled support over every seed's units."""

    claim: str
    verdict: str
    text: str
    per_seed: tuple[SeedResult, ...]
    n: int
    consistent: int
    inconsistent: int
    inconclusive: int
    not_testable: tuple[int, ...]
    consistent_lower: float
    inconsistent_lower: float
    mean: float | None
    low: float | None
    high: float | None
    sign_k: int
    sign_n: int
    sign_p: float
    support: tuple[int, int] = (0, 0)
    #: Where the seeds point (:func:`lean_of`), and why in words (:func:`lean_words`).
    lean: str = NO_LEAN
    lean_text: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["per_seed"] = [r.as_dict() for r in self.per_seed]
        out["not_testable"] = list(self.not_testable)
        out["support"] = list(self.support)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClaimVerdict:
        values = dict(data)
        values["per_seed"] = tuple(SeedResult.from_dict(r) for r in values.get("per_seed", ()))
        values["not_testable"] = tuple(values.get("not_testable", ()))
        values["support"] = tuple(values.get("support", (0, 0)))
        return cls(**values)


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float where it is a finite number, else None (what the summary stores for a missing effect)."""
    return float(x) if _finite(x) else None


def judge(claim: str, results: Sequence[SeedResult], side: str, null: float) -> ClaimVerdict:
    """One claim over the seeds of ``results`` (one per seed) by the rule, with the effect's t-interval and sign test
    over the testable seeds, the pooled support of their units and the lean."""
    results = tuple(sorted(results, key=lambda r: r.seed))
    if len({r.seed for r in results}) != len(results):
        raise ValueError(f"claim {claim!r}: two results of one seed")
    counted = [r for r in results if r.outcome in COUNTED]
    effects = [r.effect for r in counted if _finite(r.effect)]
    mean, low, high = t_interval(effects)
    k, n_sign, p = sign_test(effects, side, null)
    n = len(counted)
    tally = {o: sum(r.outcome == o for r in counted) for o in COUNTED}
    pooled = [r.support for r in counted]
    lean = lean_of(finite_or_none(low), finite_or_none(high), k, n_sign, p, side, null)
    return ClaimVerdict(
        claim, verdict_of([r.outcome for r in results]), seeds_words(results), results, n, tally[CONSISTENT],
        tally[INCONSISTENT], tally[INCONCLUSIVE], tuple(r.seed for r in results if r.outcome == NOT_TESTABLE),
        clopper_pearson_lower(tally[CONSISTENT], n, RULE_ALPHA) if n else 0.0,
        clopper_pearson_lower(tally[INCONSISTENT], n, RULE_ALPHA) if n else 0.0,
        finite_or_none(mean), finite_or_none(low), finite_or_none(high), k, n_sign, p,
        (sum(s[0] for s in pooled), sum(s[1] for s in pooled)), lean,
        lean_words(lean, finite_or_none(low), finite_or_none(high), k, n_sign, p, side, null))


# --------------------------------------------------------------------------- power (#58 item 4)

#: The probability a set of new seeds must have of deciding a claim (reproduced or contradicted) for the row not to
#: say "cannot be decided"; and the most seeds the search for how many would decide it looks at.
POWER_TARGET, POWER_MAX_SEEDS = 0.8, 60
#: Bootstrap resamples of the exploratory seeds for the interval of the per-seed probabilities, and its seed (the
#: summary is rebuilt byte for byte).
POWER_RESAMPLES, POWER_SEED = 2000, 0


def smallest_decisive(n: int) -> int | None:
    """The fewest seeds of ``n`` counted that clear the rule's bound (one-sided 95 % Clopper-Pearson lower bound above
    1/2): 5 of 5, 6 of 6, 6 of 7, ...; None for n < 5."""
    for k in range(n + 1):
        if clopper_pearson_lower(k, n, RULE_ALPHA) > RULE_SHARE:
            return k
    return None


def _thresholds(most: int) -> list[int | None]:
    return [None] + [smallest_decisive(n) for n in range(1, most + 1)]


def decide_probabilities(shares: Mapping[str, float], seeds: int, thresholds: Sequence[int | None] | None = None
                         ) -> tuple[float, float]:
    """The probability that ``seeds`` new seeds reproduce, and that they contradict, a claim whose per-seed outcome
    is consistent, inconsistent, inconclusive or not testable with the probabilities ``shares`` (independent seeds):
    the number not testable is binomial, and of the n counted, the consistent (or inconsistent) ones are binomial
    with the share among counted outcomes; the verdict by :func:`verdict_of`'s bound. The two events exclude each
    other (both counts cannot pass half of n)."""
    from scipy.stats import binom

    thresholds = _thresholds(seeds) if thresholds is None else thresholds
    p_t = float(shares.get(NOT_TESTABLE, 0.0))
    p_c, p_i = float(shares.get(CONSISTENT, 0.0)), float(shares.get(INCONSISTENT, 0.0))
    reproduce = contradict = 0.0
    for n in range(seeds + 1):  # n seeds counted, seeds - n not testable
        need = thresholds[n] if n < len(thresholds) else smallest_decisive(n)
        if need is None or p_t >= 1.0:
            continue
        weight = float(binom.pmf(seeds - n, seeds, p_t))
        reproduce += weight * float(binom.sf(need - 1, n, p_c / (1 - p_t)))
        contradict += weight * float(binom.sf(need - 1, n, p_i / (1 - p_t)))
    return reproduce, contradict


def outcome_shares(outcomes: Sequence[str]) -> dict[str, float]:
    """The share of each of the four outcomes among ``outcomes`` (one per seed)."""
    if not outcomes:
        raise ValueError("no seed to estimate the outcome probabilities from")
    return {o: sum(x == o for x in outcomes) / len(outcomes) for o in OUTCOMES}


def seeds_to_decide(shares: Mapping[str, float], target: float = POWER_TARGET, most: int = POWER_MAX_SEEDS
                    ) -> int | None:
    """The fewest new seeds that reproduce or contradict the claim with probability at least ``target``, None when
    no number up to ``most`` does (a per-seed consistent or inconsistent share at or below 1/2 never does)."""
    counted = 1.0 - float(shares.get(NOT_TESTABLE, 0.0))
    if counted <= 0 or max(float(shares.get(CONSISTENT, 0.0)), float(shares.get(INCONSISTENT, 0.0))) <= counted / 2:
        return None  # the bound passes 1/2 only where the share among counted seeds does
    thresholds = _thresholds(most)
    for seeds in range(SEEDS_FOR_A_VERDICT, most + 1):
        if max(decide_probabilities(shares, seeds, thresholds)) >= target:
            return seeds
    return None


@dataclass(frozen=True)
class Power:
    """What the exploratory seeds say of a confirmatory set of ``seeds`` seeds: each outcome's per-seed probability
    (the exploratory share) with its bootstrap interval over those seeds, the probabilities that the new seeds
    reproduce and contradict the claim (with the interval of the larger), whether that reaches
    :data:`POWER_TARGET`, and how many seeds would (None: more than :data:`POWER_MAX_SEEDS`, or none)."""

    seeds: int
    from_seeds: tuple[int, ...]
    shares: Mapping[str, float]
    share_intervals: Mapping[str, tuple[float, float]]
    reproduce: float
    contradict: float
    decide_interval: tuple[float, float]
    decidable: bool
    seeds_needed: int | None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["from_seeds"] = list(self.from_seeds)
        out["share_intervals"] = {k: list(v) for k, v in self.share_intervals.items()}
        out["decide_interval"] = list(self.decide_interval)
        return out

    def words(self) -> str:
        """"reproduces on 6 new seeds with probability 0.74" or "cannot be decided on 6 seeds (P = 0.31); it would
        need 11"."""
        best = max(self.reproduce, self.contradict)
        verb = "reproduces" if self.reproduce >= self.contradict else "is contradicted"
        if self.decidable:
            return f"{verb} on {self.seeds} new seeds with probability {best:.2f}"
        needs = (f"it would need {self.seeds_needed}" if self.seeds_needed is not None
                 else f"no number of seeds up to {POWER_MAX_SEEDS} would decide it at {POWER_TARGET:.0%}")
        return f"cannot be decided on {self.seeds} seeds (P = {best:.2f}); {needs}"


def power(per_seed: Sequence[SeedResult], seeds: int = 6, resamples: int = POWER_RESAMPLES) -> Power:
    """The power of ``seeds`` new seeds for a claim, from its per-seed results on the exploratory seeds: the outcome
    shares as per-seed probabilities, their percentile bootstrap interval (the seeds resampled with replacement,
    :data:`POWER_SEED`), and the probability of each verdict by :func:`decide_probabilities`."""
    outcomes = [r.outcome for r in sorted(per_seed, key=lambda r: r.seed)]
    shares = outcome_shares(outcomes)
    thresholds = _thresholds(seeds)
    reproduce, contradict = decide_probabilities(shares, seeds, thresholds)
    rng = np.random.default_rng(POWER_SEED)
    drawn = rng.integers(0, len(outcomes), size=(resamples, len(outcomes)))
    coded = np.asarray([OUTCOMES.index(o) for o in outcomes])[drawn]
    share_draws = {o: (coded == i).mean(axis=1) for i, o in enumerate(OUTCOMES)}
    cache: dict[tuple[int, ...], float] = {}
    decide = []
    for row in np.sort(coded, axis=1):
        key = tuple(int(x) for x in np.bincount(row, minlength=len(OUTCOMES)))
        if key not in cache:
            drawn_shares = {o: key[i] / len(outcomes) for i, o in enumerate(OUTCOMES)}
            cache[key] = max(decide_probabilities(drawn_shares, seeds, thresholds))
        decide.append(cache[key])
    interval = {o: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))) for o, v in share_draws.items()}
    best = max(reproduce, contradict)
    return Power(seeds, tuple(r.seed for r in per_seed), shares, interval, reproduce, contradict,
                 (float(np.percentile(decide, 2.5)), float(np.percentile(decide, 97.5))), best >= POWER_TARGET,
                 seeds if best >= POWER_TARGET else seeds_to_decide(shares))
