"""What metrics.json and per_item.json keep of notebook 05."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ... import paths
from ...metrics.scored import Scored
from .plan import KeywordQA
from .regime import RegimeModel
from .results import AtomCoverage

# --------------------------------------------------------------------------- metrics.json and per_item.json


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
