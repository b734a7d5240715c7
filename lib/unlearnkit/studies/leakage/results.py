"""What metrics.json and per_item.json keep of notebook 05, and the paper's bounds beside the corrected ones."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ... import bounds, paths
from ...metrics.sampling import SampledScores
from ...metrics.scored import Scored
from .plan import KeywordQA
from .regime import RegimeModel

# --------------------------------------------------------------------------- results


def metrics_entries(summaries: Mapping[str, Mapping[str, Any]], hp: KeywordQA | None,
                    hp_model: str | None, hp_other: KeywordQA | None = None) -> dict[str, dict[str, Any]]:
    """``{model: {"forget": summary}}`` for metrics.json, and the keyword Q&A summary under ``hp_qa`` of
    ``hp_model`` (a Hub model that is not among the scored ones gets an entry of its own); ``hp_other``, the same
    questions with the other choice of the affirmative prefix, under ``hp_qa_prefixed`` or ``hp_qa_plain``."""
    entries: dict[str, dict[str, Any]] = {name: {"forget": dict(s)} for name, s in summaries.items()}
    if hp is not None:
        entries.setdefault(str(hp_model), {})["hp_qa"] = hp.summary
    if hp_other is not None:
        key = "hp_qa_prefixed" if hp_other.summary["use_prefix"] else "hp_qa_plain"
        entries.setdefault(str(hp_model), {})[key] = hp_other.summary
    return entries


def keyword_prefix_comparison(plain: KeywordQA, prefixed: KeywordQA) -> pd.DataFrame:
    """The keyword Q&A asked plainly (the paper's setting) and with the affirmative response prefilled (an attack
    the paper does not describe: the model only continues "Sure, ..."), side by side."""
    columns = ("greedy_leak_rate", "leak_rate", "questions_with_a_leak", "greedy_unlearned_but_leaks",
               "binary_leak_bound_mean", "share_binary_leak_bound_above_0.1")
    return pd.DataFrame({"asked plainly": {c: plain.summary[c] for c in columns},
                         "affirmative response prefilled": {c: prefixed.summary[c] for c in columns}})


def run_meta(named_models: Mapping[str, str | Path], reference: str | None, settings: Mapping[str, Any],
             rows: Sequence[Mapping[str, Any]], scored: Scored, chosen: Mapping[str, RegimeModel] | None = None,
             coverage: AtomCoverage | None = None) -> dict[str, Any]:
    """What metrics.json records beside the parameters, numbers and identifiers only: the models (a kept step by its
    folder under the run store), the retain model, the sampling settings, the questions, the seconds spent scoring,
    the models of the paper's regime, and the Monte Carlo coverage of the std bound (:func:`atom_at_zero_coverage`,
    for scholten.m_sigma_coverage)."""
    def shown(model: str | Path) -> str:
        if isinstance(model, Path) and model.resolve().is_relative_to(paths.RUNS):
            return str(model.resolve().relative_to(paths.RUNS))
        return str(model)

    meta = {"models": {name: shown(m) for name, m in named_models.items()},
            "reference": reference, "sampling": dict(settings), "questions": [r["question"] for r in rows],
            "sampling_seconds": sum(scored.seconds.values())}
    if chosen:
        meta["regime"] = {label: {"run": m.run, "step": m.step, "reached": m.reached,
                                  "greedy_leak_rate": m.greedy_leak_rate, "reference_rate": m.reference_rate,
                                  "retain_rouge": m.retain_rouge} for label, m in chosen.items()}
    if coverage is not None:
        meta["m_sigma_coverage"] = {**coverage.coverage(), "true_sd": coverage.true_sd, "n": coverage.n,
                                    "trials": len(coverage.paper), "alpha": coverage.alpha, "atom": coverage.atom}
    return meta


def per_item(tables: Mapping[str, pd.DataFrame]) -> dict[str, dict[str, list]]:
    """Per model, every per-question column but the texts, for per_item.json."""
    return {name: t.drop(columns=["question_text", "greedy_answer"]).to_dict(orient="list")
            for name, t in tables.items()}


# --------------------------------------------------------------------------- the paper's bounds beside ours


def bound_modes(results: Mapping[str, SampledScores], alpha: float) -> pd.DataFrame:
    """Per model, averaged over its questions' sampled ROUGE-L: the width of the expectation interval on the
    paper library's grid (``mode="paper"``), on our uniform grid (K = 100) and on the exact sample grid, and the
    std bound M_σ in the paper mode and in the corrected mode. No row for a model without ROUGE scores."""
    records = []
    for name, result in results.items():
        if result.rouge is None:
            continue
        scores = np.atleast_2d(result.rouge)
        widths = {}
        for label, kwargs in (("paper", {"mode": "paper"}), ("uniform", {}), ("samples", {"grid": "samples"})):
            lower, upper = bounds.expectation_bounds(scores, alpha, **kwargs)
            widths[f"width_{label}"] = float(np.mean(upper - lower))
        records.append({"model": name, **widths,
                        "std_paper": float(np.nanmean(bounds.std_bound(scores, alpha, mode="paper"))),
                        "std_corrected": float(np.mean(bounds.std_bound(scores, alpha))),
                        "atom_at_zero_share": float(np.mean(scores == 0.0))})
    return pd.DataFrame(records).set_index("model")


class AtomCoverage(NamedTuple):
    true_sd: float
    paper: np.ndarray  # (trials,) the paper mode's std bound
    corrected: np.ndarray  # (trials,) the corrected mode's
    n: int
    alpha: float
    atom: float

    def coverage(self) -> dict[str, float]:
        return {"paper": float(np.mean(self.paper >= self.true_sd)),
                "corrected": float(np.mean(self.corrected >= self.true_sd))}


def atom_at_zero_coverage(alpha: float, n: int = 1024, trials: int = 200, atom: float = 0.5, *,
                          seed: int) -> AtomCoverage:
    """Monte Carlo coverage of the std bound for scores with an atom at 0 (as ROUGE-L = 0 answers make): 0 with
    probability ``atom``, else Beta(5, 2). The paper's form drops the atom's mass from the variance sum and falls
    below the true standard deviation; the corrected form keeps coverage >= 1 - alpha."""
    rng = np.random.default_rng(seed)
    draws = rng.beta(5, 2, (trials, n)) * (rng.random((trials, n)) >= atom)
    mean = (1 - atom) * 5 / 7
    second = (1 - atom) * (5 * 6) / (7 * 8)  # E[B^2] = a(a+1) / ((a+b)(a+b+1)) for Beta(5, 2)
    true_sd = math.sqrt(second - mean ** 2)
    return AtomCoverage(true_sd, bounds.std_bound(draws, alpha, mode="paper"), bounds.std_bound(draws, alpha), n,
                        alpha, atom)
