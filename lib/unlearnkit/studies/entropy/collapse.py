"""Notebook 06's numbers: which points of entropy optimisation collapse the forget distribution against their run
alone, and Table 1 as the paper defines it, with the gaps its reading is about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ... import pipeline, runs
from ...config import Params
from ...metrics.sampling import SampledScores
from .measures import model_row
from .plan import PAPER_TABLE1, ROUGE_SLACK, SD_CUT, SD_NEAR_ZERO, UTILITY_KEPT, RegimePoint, kept_step

# --------------------------------------------------------------------------- EO against the run alone


def _collapses(row: pd.Series, alone: pd.Series) -> bool:
    sd_ok = row["ED sd"] <= SD_NEAR_ZERO or row["ED sd"] <= (1 - SD_CUT) * alone["ED sd"]
    utility_ok = (row["model utility"] or 0.0) >= UTILITY_KEPT * (alone["model utility"] or 0.0)
    unlearned = row["greedy ROUGE-L"] <= alone["greedy ROUGE-L"] + ROUGE_SLACK
    return bool(sd_ok and utility_ok and unlearned)


def collapses(frame: pd.DataFrame, by: str) -> pd.Series:
    """Per point with EO (λ_f > 0) of a sweep or of :func:`regime_eo_table`, against its run alone (λ_f = 0, the same
    ``by``: a learning rate, a base run): True where its sampled sd is at most SD_NEAR_ZERO or cut by SD_CUT, it keeps
    at least UTILITY_KEPT of the run alone's utility and its greedy ROUGE-L stays within ROUGE_SLACK of it (still
    unlearned). A group without its run alone is left out."""
    found = {}
    for _value, group in frame.groupby(by, sort=False):
        alone = group[group["lambda_f"] == 0]
        if len(alone):
            for point, row in group[group["lambda_f"] > 0].iterrows():
                found[point] = _collapses(row, alone.iloc[0])
    return pd.Series(found, dtype=bool, name="collapses")


# --------------------------------------------------------------------------- Table 1 as the paper defines it


class Table1Model(NamedTuple):
    """One model of the Table 1 analogue: its label, the paper's method it stands for, what kind of model it is
    (``regime``: the step of a gentle run where greedy decoding says unlearned, notebook 05; ``final``: notebook 02's
    final model, marked collapsed or not by :func:`collapsed` once scored; ``regime EO``) and its folder."""

    label: str
    method: str
    kind: str
    folder: Any


#: The kinds of Table 1 rows, as the table and the figure name them.
REGIME, FINAL, REGIME_EO = "in regime (05)", "final (02)", "EO, in regime"
#: A final run of notebook 02 is *collapsed* when its greedy ROUGE-L on forget is at most COLLAPSE_ROUGE and it kept
#: less than UTILITY_KEPT of the target's model utility, both measured in notebook 06 (the ``collapsed`` column).
COLLAPSE_ROUGE = 0.05


def collapsed(greedy_rouge: float, utility: float | None, target_utility: float | None) -> bool | None:
    """Whether a final run is collapsed: greedy ROUGE-L near 0 (at most COLLAPSE_ROUGE) *and* utility lost (below
    UTILITY_KEPT of the target's, on the same items); None when a utility is missing."""
    if utility is None or target_utility is None:
        return None
    return bool(greedy_rouge <= COLLAPSE_ROUGE and utility < UTILITY_KEPT * target_utility)


def table1_models(params: Params, regime: Mapping[str, tuple[str, int]],
                  eo: Sequence[RegimePoint] = ()) -> list[Table1Model]:
    """The models of Table 1: for each method of ``eo_table_runs`` (and RMU), the in-regime step of notebook 05
    where it has one, the collapsed run of notebook 02 beside it, and the EO points given (in the regime)."""
    out = []
    for label, (run, step) in regime.items():
        method = pipeline.unlearning_settings(params, run)["method"]
        out.append(Table1Model(label, method, REGIME, kept_step(params, run, step)))
    for run in params.eo_table_runs:
        settings = pipeline.unlearning_settings(params, run)
        method = settings["method"] + ("_eo" if settings.get("lambda_f") else "")
        out.append(Table1Model(run, method, FINAL, runs.model_dir(params, runs.unlearned_name(run))))
    for point in eo:
        out.append(Table1Model(point.label, f"{point.method}_eo", REGIME_EO, point.folder(params)))
    return out


def table1(models_: Sequence[Table1Model], results: Mapping[str, SampledScores], utilities: Mapping[str, float],
           alpha: float, rho: float, target_utility: float | None = None) -> pd.DataFrame:
    """The paper's Table 1 as it defines it: per model greedy ROUGE-L, the sampled ROUGE-L's mean and sd, the ED
    score (mean + ρ·sd), the bounds and utility, with the paper's greedy / ED score / sd for the method it stands for;
    ``collapsed`` for notebook 02's final runs (:func:`collapsed`, against ``target_utility``), empty for the others."""
    records = []
    for m in models_:
        result = results[m.label]
        row = {"model": m.label, "method": m.method, "kind": m.kind, **model_row(result, alpha, rho),
               "model utility": utilities.get(m.label)}
        row["collapsed"] = (collapsed(row["greedy ROUGE-L"], row["model utility"], target_utility)
                            if m.kind == FINAL else None)
        paper = PAPER_TABLE1.get(m.method)
        row.update({"paper greedy": paper[0] if paper else np.nan, "paper ED score": paper[1] if paper else np.nan,
                    "paper sd": paper[2] if paper else np.nan})
        records.append(row)
    return pd.DataFrame(records).set_index("model")


#: The paper's methods of Table 1 without EO, whose rows its claim is about.
TABLE1_METHODS = ("ga", "gd", "npo", "rmu")


def table1_gaps(table: pd.DataFrame) -> pd.DataFrame:
    """What Table 1's reading compares, per model of :func:`table1`: the sampled mean and the ED score each minus
    greedy ROUGE-L, and the sampled sd; ``counted`` marks the in-regime models of the paper's methods without EO
    (:data:`TABLE1_METHODS`), the rows its claim is about (the others are shown for comparison)."""
    greedy = table["greedy ROUGE-L"].astype(float)
    return pd.DataFrame({"kind": table["kind"], "ED mean - greedy": table["ED mean"].astype(float) - greedy,
                         "ED sd": table["ED sd"].astype(float),
                         "ED score - greedy": table["ED score"].astype(float) - greedy,
                         "counted": (table["kind"] == REGIME) & table["method"].isin(TABLE1_METHODS)})


def curve_pair(table: pd.DataFrame, results: Mapping[str, SampledScores]) -> dict[str, SampledScores] | None:
    """Fig. 3c's two models: of the models in the paper's regime, two with the same greedy leak rate whose sampled
    ROUGE-L differs the most on average; None when no two share a greedy leak rate."""
    regime = [m for m in table.index if table.loc[m, "kind"] == REGIME]
    best, gap = None, -1.0
    for i, a in enumerate(regime):
        for b in regime[i + 1:]:
            ra, rb = results[a], results[b]
            if abs(float(ra.greedy_leak.mean()) - float(rb.greedy_leak.mean())) > 1e-9:
                continue
            diff = abs(float(ra.rouge.mean()) - float(rb.rouge.mean()))
            if diff > gap:
                best, gap = (a, b), diff
    if best is None:
        return None
    return {f"{m}, greedy leak {results[m].greedy_leak.mean():.2f}": results[m] for m in best}
