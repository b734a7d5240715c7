"""What notebook 06 shows beside its figures, and what metrics.json keeps (numbers and identifiers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics import scored as sampled_scores
from ...metrics.sampling import SampledScores
from .collapse import REGIME, curve_pair
from .plan import RegimePoint, SweepPoint

# --------------------------------------------------------------------------- texts and results


def most_leaking(table: pd.DataFrame, exclude: Sequence[str] = ()) -> str:
    """The Table 1 run whose samples name the key entity most often (the one adaptive temperature can hurt)."""
    return str(table.drop(index=[r for r in exclude if r in table.index])["leak rate"].idxmax())


def fig3_models(table: pd.DataFrame, results: Mapping[str, SampledScores], alone_run: str,
                eo_run: str) -> tuple[dict[str, SampledScores], str]:
    """The two models of the Fig. 3c–d analogue and a sentence saying which they are: two in-regime models with the
    same greedy leak rate (:func:`curve_pair`) where there are such, else, said out loud with the in-regime models'
    greedy leak rates, the paper's own pair (the method alone and with EO, notebook 02's learning rate)."""
    pair = curve_pair(table, results)
    if pair is not None:
        return pair, ("Two models in the paper's regime with the same greedy leak rate, the pair whose sampled "
                      "ROUGE-L differs most.")
    rates = ", ".join(f"{m} {results[m].greedy_leak.mean():.2f}" for m in table.index if table.loc[m, "kind"] == REGIME)
    note = (f"No two models in the paper's regime share a greedy leak rate ({rates or 'none in the regime'}), so "
            f"this figure shows the paper's own pair instead: {alone_run} alone against {eo_run} with EO, at notebook "
            "02's learning rate (not in the regime).")
    return {f"{alone_run} (alone)": results[alone_run], f"{eo_run} (EO)": results[eo_run]}, note


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


def curve_bounds(curve_models: Mapping[str, SampledScores], alpha: float, threshold: float) -> pd.DataFrame:
    """Per curve model: the mean general leakage bound M_gen at ``threshold`` over its questions (its floor, the DKW ε
    of its number of samples, is reached where no sample scores above ``threshold``) and its mean sampled sd."""
    return pd.DataFrame({name: {"M_gen": float(bounds.general_leakage_bound(np.atleast_2d(result.rouge), threshold,
                                                                            alpha).mean()),
                                "ED sd": float(result.rouge.std(axis=1).mean())}
                         for name, result in curve_models.items()}).T.rename_axis("model")

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
