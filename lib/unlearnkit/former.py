"""The former findings, retired by the one judging system (:mod:`unlearnkit.claims`: registry, extractors, judge,
summary, render) and kept only while the studies of notebooks 03-08 still store them: issue #56 item 7 removes them.

Claims tested on a run, as data: the one type from a study to the report (Finding), and the one rule that judges a
finding over training seeds (Verdict).

A study tests a paper's claim on one trained run (one training seed) and returns :class:`Finding`s: the claim, the
deciding quantities (:class:`Quantity`: the value, the threshold the claim sets and the direction in which it holds),
the parts of the claim with whether each holds, and this seed's **outcome**: ``holds``, ``partly`` or ``fails``
(``fact`` for a description, ``no test`` where the run could not test the claim). A finding has a stable ``key``, so
the same finding of several seeds can be put together.

At this scale one trained model is noise, so no verdict rests on one seed. :func:`judge_over_seeds` applies the rule
(docs/metrics.md, "verdicts over training seeds"): of the n seeds on which a finding was tested, k hold and f fail;
the verdict is **reproduced** exactly when the one-sided 95 % Clopper-Pearson lower bound of k/n exceeds 1/2 (5 of 5
seeds, 6 of 6; 5 of 6 does not), **not reproduced** exactly when the same bound of f/n exceeds 1/2, otherwise
**partly**. Below 5 seeds no verdict can be confident, and the text says so ("one seed: holds"). Each deciding quantity is averaged
over the seeds with a percentile bootstrap interval (:func:`bootstrap_interval`, on a seeded numpy Generator).

Pure arithmetic on plain values: no model, no run store.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .claims.judge import RULE_ALPHA, RULE_SHARE, SEEDS_FOR_A_VERDICT, clopper_pearson_lower

# --------------------------------------------------------------------------- the papers

TOFU = "TOFU (Maini et al., 2024)"
WANG = "Unlearning with control (Wang et al., 2024)"
JOSHI = "Format-transformed evaluation (Joshi et al., 2024)"
SCHOLTEN = "A probabilistic perspective (Scholten et al., 2025)"
OPEN_UNLEARNING = "open-unlearning (Dorna et al., 2025)"
#: The attacks of notebook 08: relearning and quantisation (Zhang et al.; open-unlearning's R and Q), held-out facts
#: (Deeb & Roger), input probes.
ATTACKS = "Does the forgetting hold? (Zhang et al., 2025; Deeb & Roger, 2024)"

# --------------------------------------------------------------------------- one seed's outcome

HOLDS, PARTLY_HOLDS, FAILS, FACT, NO_TEST = "holds", "partly", "fails", "fact", "no test"
OUTCOMES = (HOLDS, PARTLY_HOLDS, FAILS, FACT, NO_TEST)
#: The outcomes of a tested finding (the others are not counted over seeds).
TESTED = (HOLDS, PARTLY_HOLDS, FAILS)

#: The directions in which a quantity can satisfy its threshold, each with its test.
DIRECTIONS = {">=": lambda v, t: v >= t, ">": lambda v, t: v > t, "<=": lambda v, t: v <= t, "<": lambda v, t: v < t}


@dataclass(frozen=True)
class Quantity:
    """One deciding quantity of a finding on one seed: its ``value``, the ``threshold`` the claim sets (None: shown,
    not judged) and the ``direction`` in which the claim holds (``value >= threshold``, ...). ``label`` says what
    the threshold is in words ("0.9 x the target's utility"); ``fmt`` how the numbers print."""

    name: str
    value: float | None
    threshold: float | None = None
    direction: str = ">="
    label: str = ""
    fmt: str = ".3g"

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction {self.direction!r}: one of {', '.join(DIRECTIONS)}")

    @property
    def judged(self) -> bool:
        return self.threshold is not None and _finite(self.value) and _finite(self.threshold)

    @property
    def holds(self) -> bool | None:
        """Whether the value lies on the claim's side of the threshold (None when nothing is judged)."""
        if not self.judged:
            return None
        return bool(DIRECTIONS[self.direction](float(self.value), float(self.threshold)))

    @property
    def margin(self) -> float | None:
        """How far the value lies on the claim's side of the threshold (negative: on the other side)."""
        if not self.judged:
            return None
        gap = float(self.value) - float(self.threshold)
        return gap if self.direction in (">=", ">") else -gap

    def text(self) -> str:
        value = _fmt(self.value, self.fmt)
        if self.threshold is None:
            return f"{self.name} {value}"
        bar = f"{self.direction} {_fmt(self.threshold, self.fmt)}" + (f" ({self.label})" if self.label else "")
        verdict = "" if self.holds is None else (": yes" if self.holds else ": no")
        return f"{self.name} {value} (needs {bar}{verdict})"


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _fmt(x: Any, fmt: str) -> str:
    return format(float(x), fmt) if _finite(x) else "n/a"


@dataclass(frozen=True)
class Finding:
    """A paper's claim tested on one run: which notebook and paper, the claim, this run's numbers in words
    (``text``), the outcome, the figure that shows it, a short name, the deciding quantities and the parts of the
    claim (name, holds). ``key`` names the finding across seeds (default: notebook and short name)."""

    notebook: str
    paper: str
    claim: str
    text: str
    outcome: str
    figure: str = ""
    short: str = ""
    quantities: tuple[Quantity, ...] = ()
    parts: tuple[tuple[str, bool], ...] = ()
    seed: int | None = None
    key: str = ""

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome {self.outcome!r}: one of {', '.join(OUTCOMES)}")
        object.__setattr__(self, "quantities", tuple(self.quantities))
        object.__setattr__(self, "parts", tuple((str(n), bool(h)) for n, h in self.parts))
        if not self.key:
            object.__setattr__(self, "key", f"{self.notebook}/{self.short or self.claim}")

    @property
    def tested(self) -> bool:
        return self.outcome in TESTED

    @property
    def reading(self) -> str:
        """``text`` as a reader should see it out of context: a "partly" always says which parts hold and which
        fail (added from ``parts`` when the text does not already say it)."""
        if self.outcome != PARTLY_HOLDS or not self.parts or "holds:" in self.text:
            return self.text
        held = [name for name, ok in self.parts if ok]
        failed = [name for name, ok in self.parts if not ok]
        return f"{self.text}; holds: {', '.join(held) or 'none'}; fails: {', '.join(failed) or 'none'}"

    def with_seed(self, seed: int) -> Finding:
        return Finding(**{**self._fields(), "seed": int(seed)})

    def _fields(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["parts"] = [list(p) for p in self.parts]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        values = dict(data)
        values["quantities"] = tuple(Quantity(**q) for q in values.get("quantities", ()))
        values["parts"] = tuple(tuple(p) for p in values.get("parts", ()))
        return cls(**values)


def outcome_of(held: int, tested: int) -> str:
    """The outcome of a claim made of ``tested`` cases (models, runs, parts) of which ``held`` hold: holds for all,
    partly for some, fails for none; no test when nothing could be tested."""
    if tested <= 0:
        return NO_TEST
    return HOLDS if held >= tested else PARTLY_HOLDS if held > 0 else FAILS


def outcome_of_parts(parts: Sequence[tuple[str, bool]]) -> str:
    return outcome_of(sum(bool(h) for _, h in parts), len(parts))


#: A study's own verdict words, as an outcome of one seed.
_STUDY_WORDS = {"reproduced": HOLDS, "holds": HOLDS, "partly": PARTLY_HOLDS, "not": FAILS, "not reproduced": FAILS,
                "fails": FAILS, "elsewhere": FAILS, "fact": FACT, "no test": NO_TEST}


def outcome_from_label(label: str) -> str:
    """A study's verdict label (``reproduced``, ``partly``, ``not``) as the outcome of its seed."""
    try:
        return _STUDY_WORDS[str(label).lower()]
    except KeyError:
        raise ValueError(f"unknown verdict label {label!r}") from None


def names(items: Iterable[str]) -> str:
    items = list(items)
    return ", ".join(items) if items else "none"


# --------------------------------------------------------------------------- the rule across seeds

REPRODUCED, PARTLY, NOT = "reproduced", "partly", "not reproduced"
VERDICTS = (REPRODUCED, PARTLY, NOT, FACT, NO_TEST)
#: The percentile bootstrap over seeds: resamples, confidence, and the seed of its numpy Generator.
BOOTSTRAP_RESAMPLES, BOOTSTRAP_CONFIDENCE, BOOTSTRAP_SEED = 2000, 0.95, 0


def bootstrap_interval(values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                       confidence: float = BOOTSTRAP_CONFIDENCE,
                       bootstrap_seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` (one per seed): ``resamples`` resamples of the
    seeds with replacement drawn by ``np.random.default_rng(bootstrap_seed)`` (the draws scipy.stats.bootstrap makes
    with the same Generator), the (1 - confidence) / 2 and (1 + confidence) / 2 percentiles of their means. One
    value, or all equal: their mean twice. The interval always holds the mean of ``values`` as np.mean computes it:
    equal values' mean can round 1e-16 off the value itself, and an error bar drawn from mean to bound must not point
    backwards. ``bootstrap_seed`` is the rule's own (:data:`BOOTSTRAP_SEED`), not a training seed."""
    x = np.asarray([v for v in values if _finite(v)], dtype=float)
    if len(x) == 0:
        return (math.nan, math.nan)
    mean = float(x.mean())
    if len(x) == 1 or np.all(x == x[0]):
        return (mean, mean)
    rng = np.random.default_rng(bootstrap_seed)
    means = x[rng.integers(0, len(x), (resamples, len(x)))].mean(axis=1)
    low, high = np.percentile(means, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return (min(float(low), mean), max(float(high), mean))


def verdict_of(k_holds: int, k_fails: int, n: int) -> str:
    """The rule: reproduced when the one-sided 95 % Clopper-Pearson lower bound of the share of seeds on which the
    finding holds exceeds 1/2, not reproduced when that of the share on which it fails does, partly otherwise."""
    if n <= 0:
        return NO_TEST
    if clopper_pearson_lower(k_holds, n, RULE_ALPHA) > RULE_SHARE:
        return REPRODUCED
    if clopper_pearson_lower(k_fails, n, RULE_ALPHA) > RULE_SHARE:
        return NOT
    return PARTLY


_COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def seeds_words(outcomes: Sequence[str]) -> str:
    """What the seeds say, in words: "one seed: holds", "holds on 5 of 6 seeds (fails on 1)", ... with, below
    :data:`SEEDS_FOR_A_VERDICT` seeds, that no verdict can be confident yet."""
    n = len(outcomes)
    if n == 0:
        return "tested on no seed"
    if n == 1:
        return f"one seed: {outcomes[0]} (no verdict is confident below {SEEDS_FOR_A_VERDICT} seeds)"
    k = sum(o == HOLDS for o in outcomes)
    others = [f"{o} on {sum(x == o for x in outcomes)}" for o in (PARTLY_HOLDS, FAILS) if o in outcomes]
    text = f"holds on {k} of {n} seeds" + (f" ({', '.join(others)})" if others else "")
    if n < SEEDS_FOR_A_VERDICT:
        text += f"; {_COUNT_WORDS.get(n, n)} seeds: no verdict is confident below {SEEDS_FOR_A_VERDICT}"
    return text


@dataclass(frozen=True)
class Spread:
    """A deciding quantity over seeds: its mean with a bootstrap interval, and its margin (how far on the claim's side
    of its threshold; negative on the other side) with one, where it has a threshold."""

    name: str
    direction: str
    mean: float | None
    low: float | None
    high: float | None
    threshold_mean: float | None = None
    margin_mean: float | None = None
    margin_low: float | None = None
    margin_high: float | None = None
    seeds: int = 0
    #: Whether the quantity spans orders of magnitude (printed as 1.0e-05: a p-value): its margins are read in log10.
    log_scale: bool = False


@dataclass(frozen=True)
class Verdict:
    """One finding judged over training seeds: the claim and where it is shown, each seed's outcome and deciding
    values (``per_seed``), the counts (k holds, f fails of n tested), the rule's bounds, each quantity's spread, the
    verdict and its words."""

    key: str
    notebook: str
    paper: str
    claim: str
    figure: str
    short: str
    verdict: str
    text: str
    per_seed: tuple[dict[str, Any], ...]
    n: int
    k: int
    fails: int
    holds_lower: float
    fails_lower: float
    spreads: tuple[Spread, ...] = ()
    flags: tuple[str, ...] = field(default=())

    @property
    def seeds(self) -> list[int]:
        return [int(s["seed"]) for s in self.per_seed]

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["per_seed"] = [dict(s) for s in self.per_seed]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        values = dict(data)
        values["per_seed"] = tuple(values.get("per_seed", ()))
        values["spreads"] = tuple(Spread(**s) for s in values.get("spreads", ()))
        values["flags"] = tuple(values.get("flags", ()))
        return cls(**values)


def _per_seed_record(f: Finding) -> dict[str, Any]:
    return {"seed": f.seed, "outcome": f.outcome, "text": f.reading,
            "values": {q.name: q.value for q in f.quantities},
            "thresholds": {q.name: q.threshold for q in f.quantities if q.threshold is not None},
            "parts": {name: holds for name, holds in f.parts}}


def _spreads(found: Sequence[Finding]) -> tuple[Spread, ...]:
    named: dict[str, list[Quantity]] = {}
    for f in found:
        for q in f.quantities:
            named.setdefault(q.name, []).append(q)
    out = []
    for name, qs in named.items():
        values = [q.value for q in qs if _finite(q.value)]
        if not values:
            continue
        low, high = bootstrap_interval(values)
        margins = [q.margin for q in qs if q.margin is not None]
        thresholds = [float(q.threshold) for q in qs if q.judged]
        m_low, m_high = bootstrap_interval(margins) if margins else (None, None)
        out.append(Spread(name, qs[0].direction, float(np.mean(values)), low, high,
                          float(np.mean(thresholds)) if thresholds else None,
                          float(np.mean(margins)) if margins else None, m_low, m_high, len(values),
                          qs[0].fmt.endswith("e")))
    return tuple(out)


def judge_over_seeds(found: Sequence[Finding], committed: Verdict | None = None) -> Verdict:
    """One finding (the same ``key``) of several seeds judged by the rule (:func:`verdict_of`); ``found`` holds one
    Finding per seed, each with its ``seed``. ``committed``, the same finding of the committed seed study: a finding
    whose margin on these seeds lies inside that study's spread of margins is flagged (it sits on the line)."""
    if not found:
        raise ValueError("no finding to judge")
    keys = {f.key for f in found}
    if len(keys) > 1:
        raise ValueError(f"findings of different keys judged together: {sorted(keys)}")
    found = sorted(found, key=lambda f: (f.seed is None, f.seed or 0))
    last = found[-1]
    tested = [f for f in found if f.tested]
    outcomes = [f.outcome for f in tested]
    n, k, fails = len(tested), outcomes.count(HOLDS), outcomes.count(FAILS)
    if all(f.outcome == FACT for f in found):
        verdict, words = FACT, ""
    elif not tested:
        verdict, words = NO_TEST, "tested on no seed"
    else:
        verdict, words = verdict_of(k, fails, n), seeds_words(outcomes)
    spreads = _spreads(tested or found)
    flags = _on_the_line(spreads, committed) if committed is not None else ()
    return Verdict(last.key, last.notebook, last.paper, last.claim, last.figure, last.short, verdict, words,
                   tuple(_per_seed_record(f) for f in found), n, k, fails,
                   clopper_pearson_lower(k, n, RULE_ALPHA) if n else 0.0,
                   clopper_pearson_lower(fails, n, RULE_ALPHA) if n else 0.0,
                   spreads, flags)


def _on_the_line(spreads: Sequence[Spread], committed: Verdict) -> tuple[str, ...]:
    """The quantities whose mean margin here is smaller than the spread of margins over the committed seeds (at
    least two): on those, a reseed may move the finding across its threshold."""
    out = []
    for s in spreads:
        margins = []
        for record in committed.per_seed:
            value, threshold = record.get("values", {}).get(s.name), record.get("thresholds", {}).get(s.name)
            if _finite(value) and _finite(threshold):
                gap = float(value) - float(threshold)
                margins.append(gap if s.direction in (">=", ">") else -gap)
        if len(margins) >= 2 and s.margin_mean is not None and abs(s.margin_mean) < max(margins) - min(margins):
            out.append(f"{s.name}: margin {s.margin_mean:+.3g} inside the committed seeds' spread "
                       f"{min(margins):+.3g} to {max(margins):+.3g}")
    return tuple(out)


def judge_all(per_seed: Mapping[int, Sequence[Finding]],
              committed: Mapping[str, Verdict] | None = None) -> list[Verdict]:
    """Every finding over the seeds on which it was found (``{seed: that seed's findings}``), in the order the
    findings first appear (seeds in order)."""
    grouped: dict[str, list[Finding]] = {}
    for seed in sorted(per_seed):
        for f in per_seed[seed]:
            grouped.setdefault(f.key, []).append(f if f.seed == seed else f.with_seed(seed))
    return [judge_over_seeds(found, (committed or {}).get(key)) for key, found in grouped.items()]


def counts(verdicts: Sequence[Verdict]) -> dict[str, int]:
    return {v: sum(x.verdict == v for x in verdicts) for v in VERDICTS if any(x.verdict == v for x in verdicts)}
