"""Notebook 06's verdicts: entropy optimisation's collapse on the λ_f grid, and Table 1 as the paper defines it."""

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

# --------------------------------------------------------------------------- verdicts


class Verdict(NamedTuple):
    label: str  # reproduced / elsewhere / not
    text: str
    parts: tuple[tuple[str, bool], ...] = ()  # each case judged (a model, a point of the grid) and whether it holds


def _collapses(row: pd.Series, alone: pd.Series) -> bool:
    sd_ok = row["ED sd"] <= SD_NEAR_ZERO or row["ED sd"] <= (1 - SD_CUT) * alone["ED sd"]
    utility_ok = (row["model utility"] or 0.0) >= UTILITY_KEPT * (alone["model utility"] or 0.0)
    unlearned = row["greedy ROUGE-L"] <= alone["greedy ROUGE-L"] + ROUGE_SLACK
    return bool(sd_ok and utility_ok and unlearned)


def _against_alone(frame: pd.DataFrame, by: str):
    """Per group of ``frame`` by ``by`` (a learning rate, a base run): the group's value, its run alone (λ_f = 0) and
    its points with EO; a group without the run alone is left out."""
    for value, group in frame.groupby(by, sort=False):
        alone = group[group["lambda_f"] == 0]
        if len(alone):
            yield value, alone.iloc[0], group[group["lambda_f"] > 0]


def eo_verdict(sweep: pd.DataFrame, paper_lambda_f: float, paper_lr: float) -> Verdict:
    """Does entropy optimisation collapse the forget distribution with little loss of utility? A point counts when
    its sampled sd is at most SD_NEAR_ZERO or below (1 − SD_CUT) of the method alone at the same learning rate,
    and it keeps at least UTILITY_KEPT of that model's utility. "reproduced": at the paper's λ_f and the
    profile's learning rate; "elsewhere": only at other points of the grid (named); "not": at none."""
    lines, hits = [], []
    for lr, alone, points in _against_alone(sweep, "lr"):
        for run, row in points.iterrows():
            ok = _collapses(row, alone)
            if ok:
                hits.append((row["lambda_f"], lr, run))
            lines.append(f"  lr {lr:g}, λf {row['lambda_f']:g}: sampled sd {row['ED sd']:.3f} (alone "
                         f"{alone['ED sd']:.3f}), utility {row['model utility']:.3f} (alone "
                         f"{alone['model utility']:.3f}), greedy ROUGE-L {row['greedy ROUGE-L']:.2f}"
                         f"{' <- collapses' if ok else ''}")
    at_paper = [h for h in hits if h[0] == paper_lambda_f and h[1] == paper_lr]
    if at_paper:
        label = "reproduced"
        head = (f"Reproduced: at the paper's λf = {paper_lambda_f:g} (lr {paper_lr:g}) entropy optimisation "
                f"collapses the forget distribution with utility kept.")
    elif hits:
        label = "elsewhere"
        head = (f"Not at the paper's λf = {paper_lambda_f:g} (lr {paper_lr:g}); the collapse appears at "
                + ", ".join(f"λf {lf:g} / lr {lr:g}" for lf, lr, _ in hits) + ".")
    else:
        label = "not"
        head = ("Not reproduced: at no point of the grid does entropy optimisation bring the sampled sd near 0 "
                "while keeping the utility of the method alone.")
    head += (f" (A point counts when its sd is at most {SD_NEAR_ZERO} or {SD_CUT:.0%} below the method alone's, it "
             f"keeps {UTILITY_KEPT:.0%} of that model's utility and its greedy ROUGE-L stays within {ROUGE_SLACK} of "
             "it: still unlearned.)")
    return Verdict(label, head + "\n" + "\n".join(lines))


# --------------------------------------------------------------------------- Table 1 as the paper defines it


def regime_of_leakage(params: Params) -> dict[str, tuple[str, int]]:
    """The models of the paper's regime that notebook 05 found: ``{label: (run, step)}``, e.g.
    ``{"npo_mild@18": ("npo_mild", 18)}``, from its metrics.json (run notebook 05 first). A run whose greedy leak
    rate never came down to the retain model's (``reached`` false: notebook 05 took its lowest step instead) is not in
    the regime, and is left out."""
    meta = runs.read_metrics(params, runs.LEAKAGE)["meta"]
    return {label: (str(m["run"]), int(m["step"])) for label, m in (meta.get("regime") or {}).items()
            if m.get("reached", True)}


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


class Table1Check(NamedTuple):
    holds: bool  # every part of the reading
    spread: bool  # its consequence for sampling: a considerable spread lifts the ED score above greedy (EO: gone)
    text: str


def table1_check(row: pd.Series, tolerance: float, sd_min: float) -> Table1Check:
    """The paper's Table 1 reading for one model: without EO, the sampled mean matches greedy (within
    ``tolerance``), the sd is considerable (at least ``sd_min``) and so the ED score exceeds greedy (by more than
    ``tolerance``); with EO, the sd is gone (at most SD_NEAR_ZERO) and the ED score equals greedy (within
    ``tolerance``). ``spread`` is the part about sampling alone (sd and ED score), ``holds`` the whole reading."""
    greedy, mean, sd, ed = (float(row[k]) for k in ("greedy ROUGE-L", "ED mean", "ED sd", "ED score"))
    if str(row["method"]).endswith("_eo"):
        holds = sd <= SD_NEAR_ZERO and abs(ed - greedy) <= tolerance
        parts = [f"sd {sd:.3f} {'<=' if sd <= SD_NEAR_ZERO else '>'} {SD_NEAR_ZERO}",
                 f"ED {ed:.2f} {'=' if abs(ed - greedy) <= tolerance else '!='} greedy {greedy:.2f}"]
        return Table1Check(holds, holds, ", ".join(parts))
    matches, considerable, above = abs(mean - greedy) <= tolerance, sd >= sd_min, ed > greedy + tolerance
    parts = [f"mean {mean:.2f} {'≈' if matches else '≠'} greedy {greedy:.2f}",
             f"sd {sd:.3f} {'considerable' if considerable else 'small'}",
             f"ED {ed:.2f} {'above' if above else 'not above'} greedy"]
    return Table1Check(matches and considerable and above, considerable and above, ", ".join(parts))


#: The paper's methods of Table 1 without EO, whose rows its claim is about.
TABLE1_METHODS = ("ga", "gd", "npo", "rmu")


def table1_verdict(table: pd.DataFrame, tolerance: float, sd_min: float) -> Verdict:
    """Table 1's finding on the models in the paper's regime (notebook 02's final runs and the EO rows are shown,
    never counted):
    for GA, GD, NPO and RMU the sampled mean is close to greedy, the spread considerable and the ED score above
    greedy. "reproduced": the whole reading holds for every such method with an in-regime model; "partly": for
    some, or only its part about sampling (a considerable spread lifting the ED score above greedy) holds; "not":
    neither holds for any."""
    lines, held, spread, tested, gaps = [], [], [], [], []
    for model, row in table.iterrows():
        check = table1_check(row, tolerance, sd_min)
        counted = row["kind"] == REGIME and row["method"] in TABLE1_METHODS
        lines.append(f"  {model} [{row['kind']}]: {check.text}{' -> holds' if check.holds else ''}"
                     f"{'' if counted else ' (not counted)'}")
        if counted:
            tested.append(str(model))
            gaps.append(float(row["ED mean"]) - float(row["greedy ROUGE-L"]))
            held += [str(model)] if check.holds else []
            spread += [str(model)] if check.spread else []
    label = ("reproduced" if tested and len(held) == len(tested) else "partly" if held or spread else "not")
    head = (f"The paper's Table 1 reading (mean within {tolerance} of greedy, sd at least {sd_min}, ED score = mean "
            f"+ ρ·sd more than {tolerance} above greedy) holds in full for {len(held)} of {len(tested)} in-regime "
            f"models" + (f" ({', '.join(held)})" if held else "") + f"; its part about sampling (a considerable "
            f"spread lifting the ED score above greedy) for {len(spread)} of {len(tested)}"
            + (f"; the sampled mean minus greedy ranges from {min(gaps):+.2f} to {max(gaps):+.2f}" if gaps else "")
            + ".")
    return Verdict(label, head + "\n" + "\n".join(lines), tuple((m, m in held) for m in tested))


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
