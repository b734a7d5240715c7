"""Transfer and reading: can the models read a format at all? Each readout's score with its interval, the
binomial tests against chance (or the base model) that say whether a readout transfers to facts seen only as Q&A,
and whether the retain model reads the passage of a comprehension readout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from .readouts import COMPREHENSION_FORMATS, SETS, item_format


def is_transferring(readout: str, transfers: Sequence[str] | None) -> bool:
    """Whether a readout is among ``transfers`` (None: no test made); the cloze's span probability goes with its
    greedy fill, the right/wrong readout of the same items."""
    if transfers is None:
        return True
    return readout in transfers or (readout == "cloze" and "cloze_fill" in transfers)


def _per_item_rows(per_item_of_model: Mapping[str, Any], readout: str, set_name: str) -> list[Mapping[str, Any]]:
    key = readout if readout in per_item_of_model else item_format(readout)  # cloze_fill: the cloze's rows
    return list(per_item_of_model.get(key, {}).get(set_name, []))


def is_graded(readout: str) -> bool:
    """Readouts scored on a scale per item (span probability, ROUGE), not right/wrong."""
    return readout in ("cloze", "comprehension_qa")


def score_interval(per_item_of_model: Mapping[str, Any], readout: str, set_name: str,
                   confidence: float = 0.95) -> dict[str, float]:
    """A readout's score on one set with its ``confidence`` interval: exact (Clopper-Pearson) for right/wrong
    readouts, Student's t of the mean for graded ones. ``n`` items, ``k`` right (right/wrong readouts)."""
    rows = _per_item_rows(per_item_of_model, readout, set_name)
    if not rows:
        return {"n": 0, "k": None, "score": float("nan"), "low": float("nan"), "high": float("nan")}
    if is_graded(readout):
        values = np.array([float(r["score"]) for r in rows])
        mean = float(values.mean())
        half = (float(stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
                if len(values) > 1 else float("inf"))
        return {"n": len(values), "k": None, "score": mean, "low": mean - half, "high": mean + half}
    k = sum(bool(r["correct"]) for r in rows)
    ci = stats.binomtest(k, len(rows)).proportion_ci(confidence, method="exact")
    return {"n": len(rows), "k": k, "score": k / len(rows), "low": float(ci.low), "high": float(ci.high)}


def _p_above(found: Mapping[str, Any], reference: float) -> float:
    """Exact one-sided binomial p-value of ``found`` (k right of n) against the rate ``reference``."""
    return float(stats.binomtest(found["k"], found["n"], reference, alternative="greater").pvalue)


#: The smallest reference rate of a test against the base model (a base that fills no blank would make any
#: success "impossible under the null", p = 0).
_MIN_REFERENCE = 0.01


def transfer_tests(per_item: Mapping[str, Mapping[str, Any]], chance: Mapping[str, float | None],
                   models_tested: Sequence[str], alpha: float, base: str = "base") -> list[dict[str, Any]]:
    """For each right/wrong readout, model and set: the score and an exact one-sided binomial test that it is
    above the readout's chance level (readouts with none, the cloze fill: above the ``base`` model's rate on the
    same set, at least 0.01). Graded readouts (span probability, ROUGE) are left out: ``cloze_fill`` tests the
    cloze. Each row carries the score's exact 95 % interval (``low``, ``high``); ``above`` means p < ``alpha``."""
    rows = []
    for readout in chance:
        if is_graded(readout):
            continue
        for set_name in SETS:
            reference, against = chance.get(readout), "chance"
            if reference is None:
                if base not in per_item:
                    continue
                reference, against = max(score_interval(per_item[base], readout, set_name)["score"],
                                         _MIN_REFERENCE), base
            for model in models_tested:
                if model not in per_item:
                    continue
                found = score_interval(per_item[model], readout, set_name)
                if not found["n"]:
                    continue
                p = _p_above(found, reference)
                rows.append({"readout": readout, "set": set_name, "model": model, "n": found["n"], "k": found["k"],
                             "score": found["score"], "low": found["low"], "high": found["high"],
                             "reference": reference, "against": against, "p_value": p, "above": p < alpha})
    return rows


def transfer_table(tests: Sequence[Mapping[str, Any]]):
    """:func:`transfer_tests` as a table: one row per (readout, set), per model its score and p-value."""
    import pandas as pd

    if not tests:
        return pd.DataFrame()
    frame = pd.DataFrame(tests)
    wide = frame.pivot_table(index=["readout", "set", "n", "reference"], columns="model",
                             values=["score", "p_value"], sort=False)
    return wide.swaplevel(axis=1).sort_index(axis=1, level=0, sort_remaining=False)


def transferring_readouts(tests: Sequence[Mapping[str, Any]], label: str = "target") -> list[str]:
    """Readouts in which the model ``label`` is above its reference on every set tested (forget and retain)."""
    by_readout: dict[str, list[bool]] = {}
    for row in tests:
        if row["model"] == label:
            by_readout.setdefault(row["readout"], []).append(row["above"])
    return [r for r, above in by_readout.items() if len(above) == len(SETS) and all(above)]


def passage_reading(per_item_of_model: Mapping[str, Any], chance: Mapping[str, float | None], alpha: float,
                    confidence: float = 0.95) -> dict[str, dict[str, Any]]:
    """For each comprehension readout of a model (the retain model): does it read the passage? Its forget and
    retain scores must each lie inside the other's ``confidence`` interval (the facts are in the context, so
    knowing one set's authors must not matter) and, where the readout has a chance level, be above it at
    ``alpha`` on both sets (exact binomial test; one-sided t-test of the mean ROUGE for comprehension Q&A): a model
    at chance on both sets reads nothing, though its two scores agree."""
    found = {}
    for readout in COMPREHENSION_FORMATS:
        forget, retain = (score_interval(per_item_of_model, readout, s, confidence) for s in SETS)
        if not forget["n"] or not retain["n"]:
            continue
        agree = retain["low"] <= forget["score"] <= retain["high"] and forget["low"] <= retain["score"] <= forget["high"]
        level = chance.get(readout)
        if level is None:
            above = True
        elif is_graded(readout):  # one-sided t-test of the mean score against the chance level
            above = all(float(stats.ttest_1samp([float(r["score"]) for r in _per_item_rows(per_item_of_model,
                                                 readout, s)], level, alternative="greater").pvalue) < alpha
                        for s in SETS)
        else:
            above = all(_p_above(x, level) < alpha for x in (forget, retain))
        found[readout] = {"reads": bool(agree and above), "agree": bool(agree), "above_chance": bool(above),
                          "forget": forget, "retain": retain}
    return found
