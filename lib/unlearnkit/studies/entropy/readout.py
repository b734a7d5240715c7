"""What notebook 06 says: the texts under its figures, and what metrics.json keeps (numbers and identifiers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics import scored as sampled_scores
from ...metrics.sampling import SampledScores
from .collapse import REGIME, curve_pair
from .plan import UTILITY_KEPT, RegimePoint, SweepPoint

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


def curves_text(curve_models: Mapping[str, SampledScores], alpha: float, threshold: float) -> str:
    """The mean general leakage bound at ``threshold`` of each curve model and its sampled sd; a value at the DKW
    floor ε (no sample above the threshold on any question) is named as the floor, not read as a measured leak."""
    parts = []
    for name, result in curve_models.items():
        at = float(bounds.general_leakage_bound(np.atleast_2d(result.rouge), threshold, alpha).mean())
        floor = float(bounds.dkw_epsilon(result.rouge.shape[-1], alpha))
        where = (f" (the DKW floor ε for {result.rouge.shape[-1]} samples: no sample above {threshold:g})"
                 if abs(at - floor) < 5e-4 else "")
        parts.append(f"{name}: mean M_gen({threshold:g}) {at:.3f}{where}, sampled sd "
                     f"{result.rouge.std(axis=1).mean():.3f}")
    return "; ".join(parts)


def entropy_text(along: Mapping[str, pd.DataFrame]) -> str:
    """Forget and retain entropy at the start and the end of each run."""
    return "\n".join(f"{run}: forget entropy {f['forget'].iloc[0]:.3f} -> {f['forget'].iloc[-1]:.3f} "
                     f"(peak {f['forget'].max():.3f}), retain {f['retain'].iloc[0]:.3f} -> {f['retain'].iloc[-1]:.3f}"
                     for run, f in along.items())


def eo_why(sweep: pd.DataFrame, along: Mapping[str, pd.DataFrame], eo_run: str, alone_run: str) -> str:
    """What entropy optimisation did change, from the numbers: the teacher-forced forget entropy at the end of the run,
    the certainty c(x) of the greedy continuation and the self-BLEU of the samples, against the method alone; and
    how the sampled spread followed."""
    eo, alone = sweep.loc[eo_run], sweep.loc[alone_run]
    end = {run: float(frame["forget"].iloc[-1]) for run, frame in along.items()}
    lines = [f"What EO changes ({eo_run} against {alone_run}): forget entropy on the true answers at the end of "
             f"unlearning {end.get(eo_run, float('nan')):.3f} against {end.get(alone_run, float('nan')):.3f}; "
             f"certainty c(x) on its own greedy answer {eo['certainty']:.3f} against {alone['certainty']:.3f}; "
             f"self-BLEU of the forget samples {eo['self-BLEU']:.3f} against {alone['self-BLEU']:.3f}; sampled sd "
             f"{eo['ED sd']:.3f} against {alone['ED sd']:.3f}."]
    top = sweep.loc[sweep["lambda_f"].idxmax()]
    lines.append(f"At the largest λf ({top['lambda_f']:g}, lr {top['lr']:g}): certainty {top['certainty']:.3f}, "
                 f"self-BLEU {top['self-BLEU']:.3f}, sd {top['ED sd']:.3f}, greedy ROUGE-L {top['greedy ROUGE-L']:.2f}, "
                 f"utility {top['model utility']:.3f}.")
    return " ".join(lines)


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


def temperature_text(table: pd.DataFrame) -> str:
    """The sampled spread and leak rate at the lowest and highest temperature, per model."""
    parts = []
    for run, group in table.groupby(level="run", sort=False):
        low, high = group.iloc[0], group.iloc[-1]
        t_low, t_high = group.index.get_level_values("temperature")[[0, -1]]
        parts.append(f"{run}: sd {low['ED sd']:.3f} at T = {t_low:g}, {high['ED sd']:.3f} at T = {t_high:g}; leak "
                     f"rate {low['leak rate']:.3f} -> {high['leak rate']:.3f}")
    return ("The paper: a lower temperature narrows every model's samples, EO narrows them at temperature 1. "
            "Here: " + "; ".join(parts) + ".")


def diversity_text(table: pd.DataFrame, lambda_r: Sequence[float]) -> str:
    """Self-BLEU per set at each λ_r."""
    parts = [f"{column.replace('_', ' ')}: " + ", ".join(f"{v:.3f}" for v in table[column]) for column in table.columns]
    return (f"Self-BLEU at λr {', '.join(f'{x:g}' for x in lambda_r)} (lower is more diverse): " + "; ".join(parts)
            + ".")


def ed_utility_text(points: pd.DataFrame) -> str:
    """The sweep point with the lowest ED score among those keeping the most utility, against the method alone."""
    score = points["ED score"]
    alone = points[points["lambda_f"] == 0]
    kept = points[points["model utility"] >= UTILITY_KEPT * alone["model utility"].min()] if len(alone) else points
    best = (score[kept.index]).idxmin()
    parts = [f"the method alone: ED score {score[r]:.2f} at utility {points.loc[r, 'model utility']:.3f} (lr "
             f"{points.loc[r, 'lr']:g})" for r in alone.index]
    return (f"The paper finds EO lowering the ED score at little cost in utility. Here, of the points keeping "
            f"{UTILITY_KEPT:.0%} of the method alone's utility, the lowest ED score is {score[best]:.2f} ({best}, utility "
            f"{points.loc[best, 'model utility']:.3f}); " + "; ".join(parts) + ".")
