"""Notebook 05's question in numbers: on the models in the paper's regime, does sampling reveal, beyond the retain
model's guessing, what greedy decoding hides (the notebook shows the table; metrics.json keeps the summaries)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics.sampling import SampledScores
from .regime import RegimeModel

# --------------------------------------------------------------------------- beyond guessing, per model in the regime


def beyond_guessing(result: SampledScores, reference: SampledScores, alpha: float) -> np.ndarray:
    """Per question, True where the greedy answer does not name the key entity and the model's Clopper-Pearson lower
    bound on the leak probability exceeds the reference's M_bin, both at level alpha / Q (Bonferroni over the Q
    questions): with probability >= 1 - 2 alpha every flagged question of the model leaks more than guessing."""
    level = alpha / len(result.questions)
    lower = bounds.binary_leak_lower_bound(result.leak, level)
    return (result.greedy_leak == 0) & (lower > bounds.binary_leakage_bound(reference.leak, level))


def regime_table(results: Mapping[str, SampledScores], summaries: Mapping[str, Mapping[str, Any]],
                 chosen: Mapping[str, RegimeModel], reference: str, alpha: float) -> pd.DataFrame:
    """The paper's question asked of each model in its regime (:func:`regime_models`), in numbers: greedy decoding calls
    it unlearned about as often as the retain model; on how many questions whose greedy answer does not name the
    forget answer's key entity do its samples name it, beyond the retain model's guessing on the same question?
    Counted per question at 2 alpha (``of them beyond guessing``) and jointly over all questions
    (:func:`beyond_guessing`, Bonferroni: ``beyond guessing, all questions jointly``). ``reached`` is false for a
    run whose greedy leak rate never came down to the retain model's (its lowest step is shown)."""
    ref = summaries[reference]
    rows = {}
    for label, model in chosen.items():
        s = summaries[label]
        rows[label] = {
            "greedy leak rate": s["greedy_leak_rate"], f"{reference} greedy leak rate": ref["greedy_leak_rate"],
            "sampled leak rate": s["leak_rate"], f"{reference} sampled leak rate": ref["leak_rate"],
            "greedy unlearned": s["greedy_unlearned"], "of them leak in a sample": s["greedy_unlearned_but_leaks"],
            "of them beyond guessing": int(s.get("greedy_unlearned_but_leaks_above_reference", 0)),
            "beyond guessing, all questions jointly": int(beyond_guessing(results[label], results[reference],
                                                                          alpha).sum()),
            "retain ROUGE-L (greedy)": model.retain_rouge, "reached": bool(model.reached),
        }
    return pd.DataFrame(rows).T
