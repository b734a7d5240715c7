"""What notebook 06's metrics.json and per_item.json keep (numbers and identifiers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics import scored as sampled_scores
from ...metrics.sampling import SampledScores
from .plan import RegimePoint, SweepPoint

# --------------------------------------------------------------------------- metrics.json and per_item.json


def metrics_entries(table: pd.DataFrame, sweep: pd.DataFrame, *more: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``{model: {"forget": Table 1 row}}`` for metrics.json, sweep points included (with their setting)."""
    entries: dict[str, dict[str, Any]] = {}
    for frame in (table, sweep, *more):
        for run, row in frame.iterrows():
            values = {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()
                      if not isinstance(v, str)}
            entries.setdefault(str(run), {}).setdefault("forget", {}).update(values)
    return entries


def run_meta(all_runs: Sequence[str], settings: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
             scored: sampled_scores.Scored, lambda_f: Sequence[SweepPoint], lambda_r: Sequence[SweepPoint],
             regime_points: Sequence[RegimePoint] = (), tables: Mapping[str, pd.DataFrame] | None = None
             ) -> dict[str, Any]:
    """What metrics.json records beside the parameters, numbers and identifiers only: the runs, the sweeps'
    settings, sampling, the questions, the seconds spent, and ``tables`` (the temperature sweep, the diversity of the
    λ_r sweep) as records, for the claims judged over seeds."""
    return {"runs": list(all_runs), "sampling": dict(settings), "questions": [r["question"] for r in rows],
            "sampling_seconds": sum(scored.seconds.values()),
            "lambda_f_sweep": [p._asdict() for p in lambda_f], "lambda_r_sweep": [p._asdict() for p in lambda_r],
            "regime_eo": [{**p._asdict(), "label": p.label} for p in regime_points],
            "tables": {name: frame.reset_index().to_dict("records") for name, frame in (tables or {}).items()}}


def per_item(results: Mapping[str, SampledScores], alpha: float) -> dict[str, dict[str, list]]:
    """Per model, per forget question, what notebook 06 sampled and scored, for per_item.json like the other
    notebooks: greedy and sampled ROUGE-L (mean, sd with 1/n), the leak rate and its bound M_bin, the certainty c(x),
    self-BLEU, the greedy answer and the first samples."""
    out: dict[str, dict[str, list]] = {}
    for name, r in results.items():
        item = {"question": list(r.questions), "greedy_answer": list(r.greedy_answers),
                "samples": [list(s) for s in r.examples], "greedy_leak": r.greedy_leak.astype(int).tolist(),
                "leak_rate": r.leak.mean(axis=1).tolist(),
                "M_bin": np.atleast_1d(bounds.binary_leakage_bound(r.leak, alpha)).tolist(),
                "certainty": r.certainty.tolist(), "self_bleu": r.self_bleu.tolist()}
        if r.rouge is not None and r.greedy_rouge is not None:
            item.update(greedy_rouge=r.greedy_rouge.tolist(), rouge_mean=r.rouge.mean(axis=1).tolist(),
                        rouge_sd=r.rouge.std(axis=1).tolist())
        out[name] = item
    return out
