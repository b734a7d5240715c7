"""Entropy optimisation where the paper's models are (the in-regime runs of notebook 05), utility of kept steps, and
adaptive temperature's verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ... import pipeline, workers
from ...config import Params
from ...metrics.sampling import SampledScores
from .measures import _utility_of_folder, model_row
from .plan import ROUGE_SLACK, SD_CUT, SD_NEAR_ZERO, UTILITY_KEPT, RegimePoint
from .verdicts import Verdict, _against_alone, _collapses

# --------------------------------------------------------------------------- EO where the paper's models are


def regime_eo_points(params: Params, regime: Mapping[str, tuple[str, int]]) -> tuple[Params, list[RegimePoint]]:
    """EO added where the paper's models are: each run of ``eo_regime_runs`` that notebook 05 put in the regime,
    alone (λ_f 0) and with each λ_f of ``eo_regime_lambda_f_grid`` (λ_r = ``eo_lambda_r``) at each entropy placement
    of ``eo_positions``, on the run's own schedule and learning rate, compared at its regime step (the EO runs keep
    their weights every that many steps). Returns the parameters that know the new runs, and the points."""
    steps = {run: step for run, step in regime.values()}
    points = []
    for base in params.eo_regime_runs:
        if base not in steps:
            continue
        step = steps[base]
        own = pipeline.own_settings(params, base,
                                    without=("lambda_f", "lambda_r", "entropy_positions", "unlearn_save_every"))
        method = pipeline.unlearning_settings(params, base)["method"]
        points.append(RegimePoint(base, base, method, 0.0, 0.0, "none", step))
        for lambda_f in params.eo_regime_lambda_f_grid:
            for positions in params.eo_positions:
                name = f"{base}_eo{lambda_f:g}_{positions}"
                params = pipeline.with_run(params, name, **{**own, "lambda_f": float(lambda_f),
                                                            "lambda_r": float(params.eo_lambda_r),
                                                            "entropy_positions": positions,
                                                            "unlearn_save_every": int(step)})
                points.append(RegimePoint(name, base, method, float(lambda_f), float(params.eo_lambda_r), positions,
                                          step))
    return params, points


#: The columns :func:`regime_eo_verdict` reads, which an empty :func:`regime_eo_table` still has.
EMPTY_COLUMNS = ("base", "lambda_f", "lambda_r", "positions", "ED sd", "ED score", "greedy ROUGE-L", "leak rate",
                 "certainty", "model utility")


def regime_eo_table(points: Sequence[RegimePoint], results: Mapping[str, SampledScores],
                    utilities: Mapping[str, float], alpha: float, rho: float) -> pd.DataFrame:
    """One row per point: its setting, the sampled sd, the ED score, the leak rate, the certainty c(x) on the
    model's own greedy answer, greedy ROUGE-L and utility."""
    records = [{"model": p.label, "base": p.base, "lambda_f": p.lambda_f, "lambda_r": p.lambda_r,
                "positions": p.positions, **model_row(results[p.label], alpha, rho), "model utility": utilities.get(p.label)} for p in points]
    if not records:  # no run of eo_regime_runs in notebook 05's regime on this seed: the table's columns, no rows
        return pd.DataFrame(columns=["model", *EMPTY_COLUMNS]).set_index("model")
    return pd.DataFrame(records).set_index("model")


#: Where the entropy is taken, as the verdict names each placement.
POSITION_NAMES = {"answer": "the answer tokens (the workbook's default)",
                  "all": "all tokens of the sequence (the paper's text and its reference code)",
                  "sampled": "the model's own sampled answers (on-policy, ours)"}
#: The placement the paper describes; the others are ours.
PAPER_POSITIONS = ("all",)


def regime_eo_verdict(table: pd.DataFrame, runs_in_regime: Sequence[str] = ()) -> Verdict:
    """Which placement of the entropy, if any, reproduces "sd -> 0 with utility kept" on in-regime runs: a point
    counts as for :func:`eo_verdict` (sd at most SD_NEAR_ZERO or cut by SD_CUT against the run alone, utility at
    least UTILITY_KEPT of it, greedy ROUGE-L within ROUGE_SLACK of it). "reproduced": some point with the entropy
    where the paper takes it (all tokens, :data:`PAPER_POSITIONS`) counts; "partly": only a placement of ours
    (answer tokens, the model's own samples); "not": none. With no point at all (none of ``runs_in_regime``, the
    profile's ``eo_regime_runs``, reached the regime on this seed) there is nothing to add EO to: no parts, so the
    finding is not tested on this seed rather than failed."""
    if table.empty:
        named = f" ({', '.join(runs_in_regime)})" if runs_in_regime else ""
        text = (f"No run of eo_regime_runs{named} is in the paper's regime on this seed (notebook 05), so there is "
                "no in-regime run to add EO to: not tested on this seed.")
        return Verdict("not", text, ())
    lines, hits = [], []
    for _base, alone, points in _against_alone(table, "base"):
        lines.append(f"  {alone.name} (alone): sd {alone['ED sd']:.3f}, ED {alone['ED score']:.2f}, greedy "
                     f"{alone['greedy ROUGE-L']:.2f}, leak rate {alone['leak rate']:.3f}, certainty "
                     f"{alone['certainty']:.3f}, utility {alone['model utility']:.3f}")
        for model, row in points.iterrows():
            ok = _collapses(row, alone)
            if ok:
                hits.append((row["positions"], row["lambda_f"], str(model)))
            lines.append(f"  {model} ({row['positions']}, λf {row['lambda_f']:g}): sd {row['ED sd']:.3f}, ED "
                         f"{row['ED score']:.2f}, greedy {row['greedy ROUGE-L']:.2f}, leak rate {row['leak rate']:.3f}, "
                         f"certainty {row['certainty']:.3f}, utility {row['model utility']:.3f}"
                         f"{' <- sd -> 0 with utility kept' if ok else ''}")
    paper_placements = {h[0] for h in hits} & set(PAPER_POSITIONS)
    if paper_placements:
        label = "reproduced"
    elif hits:
        label = "partly"
    else:
        label = "not"
    placements = sorted({h[0] for h in hits})
    summary = []
    for placement, group in table[table["lambda_f"] > 0].groupby("positions", sort=False):
        summary.append(f"{placement}: sd {group['ED sd'].min():.3f}-{group['ED sd'].max():.3f}, greedy ROUGE-L "
                       f"{group['greedy ROUGE-L'].min():.2f}-{group['greedy ROUGE-L'].max():.2f}, certainty "
                       f"{group['certainty'].min():.3f}-{group['certainty'].max():.3f}")
    alone_rows = table[table["lambda_f"] == 0]
    if len(alone_rows) and summary:
        a = alone_rows.iloc[0]
        summary.insert(0, f"{a.name} alone: sd {a['ED sd']:.3f}, greedy ROUGE-L {a['greedy ROUGE-L']:.2f}, certainty "
                          f"{a['certainty']:.3f}")
    head = ("On the runs in the paper's regime, sd -> 0 with utility kept " +
            (f"with the entropy on {'; on '.join(POSITION_NAMES[p] for p in placements)}: "
             + ", ".join(f"{m}" for _, _, m in hits) if hits else "at no point of the grid and no placement")
            + f". (A point counts when its sd is at most {SD_NEAR_ZERO} or {SD_CUT:.0%} below the run alone's, it "
            f"keeps {UTILITY_KEPT:.0%} of that model's utility and its greedy ROUGE-L stays within {ROUGE_SLACK} of it.)")
    if summary:
        head += " " + "; ".join(summary) + "."
    with_eo = table[table["lambda_f"] > 0]
    return Verdict(label, head + "\n" + "\n".join(lines),
                   tuple((str(m), any(h[2] == str(m) for h in hits)) for m in with_eo.index))


def folder_utility(params: Params, named_folders: Mapping[str, Any], source) -> dict[str, float]:
    """:func:`utility` of models given by folder (a step kept along a run), keyed by their labels."""
    jobs = params.jobs
    names = list(named_folders)
    found = workers.side_by_side(_utility_of_folder, [(params, name, named_folders[name], source)
                                                     for name in names], jobs, desc="utility")
    return dict(zip(names, found))


#: The least change of the mean M_bin that the adaptive-temperature verdict reads as an effect.
MIN_M_BIN_CHANGE = 0.01


def adaptive_verdict(sweep: pd.DataFrame, threshold: float, leaking: str, eo_run: str) -> Verdict:
    """What adaptive temperature at ``threshold`` does to M_bin: for a model that still leaks (``leaking``) going
    greedy where it is certain makes its leak certain too, so M_bin can rise; for an EO model (``eo_run``) it
    removes the sampling noise around a non-leaking answer, so M_bin falls. The label says whether both hold."""
    def at(run: str) -> pd.Series:
        return sweep.loc[(run, float(threshold))]

    leak_row, eo_row = at(leaking), at(eo_run)
    # A model that never goes greedy at c_T is untouched, and a change below MIN_M_BIN_CHANGE is noise of the
    # samples' draw: neither is evidence either way.
    leak_up = leak_row["greedy share"] > 0 and leak_row["M_bin"] >= leak_row["M_bin sampling"] + MIN_M_BIN_CHANGE
    eo_down = eo_row["greedy share"] > 0 and eo_row["M_bin"] <= eo_row["M_bin sampling"] - MIN_M_BIN_CHANGE
    label = "reproduced" if leak_up and eo_down else "partly" if (leak_up or eo_down) else "not"
    parts = ((f"raises M_bin where greedy leaks ({leaking})", bool(leak_up)),
             (f"lowers M_bin for the confident EO model ({eo_run})", bool(eo_down)))
    text = (f"{label.capitalize()}: at c_T = {threshold:g}, {leaking} decodes {leak_row['greedy share']:.0%} of the "
            f"questions greedily and its mean M_bin goes from {leak_row['M_bin sampling']:.3f} (sampling) to "
            f"{leak_row['M_bin']:.3f}; {eo_run} decodes {eo_row['greedy share']:.0%} greedily, M_bin "
            f"{eo_row['M_bin sampling']:.3f} -> {eo_row['M_bin']:.3f} (a change counts from {MIN_M_BIN_CHANGE}). The "
            "paper expects adaptive temperature to help a confident (EO) model and to make a confidently leaking model "
            "leak for certain.")
    return Verdict(label, text, parts)


def metrics_entries(table: pd.DataFrame, sweep: pd.DataFrame, *more: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``{model: {"forget": Table 1 row}}`` for metrics.json, sweep points included (with their setting)."""
    entries: dict[str, dict[str, Any]] = {}
    for frame in (table, sweep, *more):
        for run, row in frame.iterrows():
            values = {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()
                      if not isinstance(v, str)}
            entries.setdefault(str(run), {}).setdefault("forget", {}).update(values)
    return entries
