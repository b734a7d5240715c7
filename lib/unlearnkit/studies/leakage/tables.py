"""Sampled scores to bounds: per-question tables, each model's summary, the curves and what the figures show."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics.sampling import SampledScores, adaptive_view
from .plan import FLAGGED_COLUMNS, Example, FlaggedQuestions, KeywordQA, LeakCurves, ModelReport, Reports

# --------------------------------------------------------------------------- scores -> bounds


def bound_table(scores: np.ndarray | None, alpha: float, leaks: np.ndarray | None = None,
                grid: bounds.GridSpec | np.ndarray = "uniform", K: int = 100, rho: float = 2.0) -> pd.DataFrame:
    """Per-question statistics and bounds, one row per question.

    From the (Q, n) scores in [0, 1] (ROUGE-L): ``ed_mean``, ``ed_sd`` (1/n), ``ed_score`` (mean + rho sd; no
    guarantee), ``mean_lower`` / ``mean_upper`` (expectation bounds, two-sided DKW) and ``std_upper``
    (standard-deviation bound, first bin closed at 0), all at level alpha on ``grid`` (the paper's
    100-bin uniform grid by default).
    From the (Q, n) binary leaks: ``leaks`` (S), ``leak_rate`` (S/n), ``leak_lower`` (Clopper-Pearson lower)
    and ``binary_leak_bound`` (M_bin, the one-sided Clopper-Pearson upper bound), each at level alpha.
    """
    columns: dict[str, np.ndarray] = {}
    if scores is not None:
        scores = np.atleast_2d(scores)
        mean, sd = bounds.ed_stats(scores)
        lower, upper = bounds.expectation_bounds(scores, alpha, grid, K)
        columns.update(ed_mean=mean, ed_sd=sd, ed_score=mean + rho * sd, mean_lower=lower, mean_upper=upper,
                       std_upper=bounds.std_bound(scores, alpha, grid, K))
    if leaks is not None:
        columns.update(_leak_columns(leaks, alpha))
    if not columns:
        raise ValueError("bound_table needs scores, leaks or both")
    table = pd.DataFrame(columns)
    table.index.name = "question"
    return table


def _leak_columns(leaks: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    leaks = np.atleast_2d(leaks)
    return {"leaks": leaks.sum(axis=1).astype(int), "leak_rate": leaks.mean(axis=1),
            "leak_lower": bounds.binary_leak_lower_bound(leaks, alpha),
            "binary_leak_bound": bounds.binary_leakage_bound(leaks, alpha)}


def greedy_vs_sampling(alpha: float, greedy_rouge: np.ndarray | None = None, rouge: np.ndarray | None = None,
                       greedy_leak: np.ndarray | None = None, leaks: np.ndarray | None = None,
                       rouge_threshold: float = 0.5, min_leaks: int = 1) -> pd.DataFrame:
    """Per question: does greedy decoding call it unlearned although sampling leaks? Two criteria.

    ROUGE: a text leaks when its ROUGE-L exceeds ``rouge_threshold``; greedy calls the question unlearned
        when its greedy ROUGE is at or below it. ``rouge_leaks`` counts the samples above it,
        ``rouge_tail_bound`` is M_gen(threshold), the DKW upper bound on P(ROUGE > threshold), and
        ``rouge_leak_lower``/``rouge_leak_bound`` are the Clopper-Pearson bounds on that same probability.
    Key entity: a text leaks when it contains the answer's key entity (``leaks``: the leak judge per sample).
    ``understated_*``: greedy says unlearned, yet at least ``min_leaks`` of the n samples leak. With
    ``min_leaks`` = 1 the leak probability's lower bound ``*_leak_lower`` is then positive at level alpha:
    the model does emit the answer with a probability bounded away from 0.
    """
    table: dict[str, np.ndarray] = {}
    if greedy_rouge is not None and rouge is not None:
        above = (np.asarray(rouge) > rouge_threshold).astype(np.int8)
        table.update(
            greedy_rouge=np.asarray(greedy_rouge), max_sampled_rouge=np.asarray(rouge).max(axis=1),
            rouge_leaks=above.sum(axis=1),
            rouge_tail_bound=bounds.general_leakage_bound(np.atleast_2d(rouge), rouge_threshold, alpha),
            rouge_leak_lower=bounds.binary_leak_lower_bound(above, alpha),
            rouge_leak_bound=bounds.binary_leakage_bound(above, alpha),
        )
        table["greedy_unlearned_rouge"] = table["greedy_rouge"] <= rouge_threshold
        table["understated_rouge"] = table["greedy_unlearned_rouge"] & (table["rouge_leaks"] >= min_leaks)
    if greedy_leak is not None and leaks is not None:
        table.update(greedy_leak=np.asarray(greedy_leak).astype(int), **_leak_columns(leaks, alpha))
        table["understated_entity"] = (table["greedy_leak"] == 0) & (table["leaks"] >= min_leaks)
    if not table:
        raise ValueError("greedy_vs_sampling needs (greedy_rouge, rouge), (greedy_leak, leaks) or both")
    out = pd.DataFrame(table)
    out.index.name = "question"
    return out


def _mean(values) -> float | None:
    return float(values.mean()) if len(values) else None


def _max(values) -> float | None:
    return float(values.max()) if len(values) else None


def understatement_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Counts of :func:`greedy_vs_sampling`: how many questions greedy calls unlearned, how many of those
    leak under sampling, and the bounds on the flagged questions' leak probabilities (None when none is flagged)."""
    out: dict[str, Any] = {"n_questions": int(len(table))}
    if "understated_entity" in table:
        flagged = table[table["understated_entity"]]
        out.update(
            greedy_unlearned=int((table["greedy_leak"] == 0).sum()),
            greedy_unlearned_but_leaks=int(len(flagged)),
            flagged_leak_rate_mean=_mean(flagged["leak_rate"]),
            flagged_leak_lower_max=_max(flagged["leak_lower"]),
            flagged_binary_leak_bound_mean=_mean(flagged["binary_leak_bound"]),
        )
    if "understated_rouge" in table:
        flagged = table[table["understated_rouge"]]
        out.update(
            greedy_unlearned_rouge=int(table["greedy_unlearned_rouge"].sum()),
            greedy_unlearned_but_leaks_rouge=int(len(flagged)),
            flagged_rouge_leak_lower_max=_max(flagged["rouge_leak_lower"]),
            flagged_rouge_tail_bound_mean=_mean(flagged["rouge_tail_bound"]),
        )
    return out


def keys_text(keys: Sequence[Any]) -> list[str]:
    """A key entity as it is, a list of keywords joined by commas."""
    return [k if isinstance(k, str) else ", ".join(k) for k in keys]


def model_summary(result: SampledScores, alpha: float, rouge_threshold: float, adaptive_threshold: float,
                  grid: bounds.GridSpec | np.ndarray = "uniform") -> ModelReport:
    """Everything the study reports about one model: the per-question table and the summary for metrics.json.

    The per-question table joins :func:`bound_table` and :func:`greedy_vs_sampling` (with the question,
    its key and the greedy answer); the summary averages it over questions and adds the counts of
    :func:`understatement_summary` and the adaptive-temperature numbers (c(x) on the greedy continuation).
    """
    per_question = bound_table(result.rouge, alpha, result.leak, grid=grid)
    flags = greedy_vs_sampling(alpha, result.greedy_rouge, result.rouge, result.greedy_leak, result.leak,
                               rouge_threshold)
    table = per_question.join(flags.drop(columns=[c for c in flags if c in per_question]))
    table.insert(0, "key", keys_text(result.keys))
    table.insert(0, "question_text", result.questions)
    table["greedy_answer"] = result.greedy_answers
    table["certainty"] = result.certainty
    table["self_bleu"] = result.self_bleu

    adaptive = adaptive_view(result, adaptive_threshold)
    adaptive_table = bound_table(adaptive.scores.rouge, alpha, adaptive.scores.leak, grid=grid)
    summary: dict[str, Any] = {"n_questions": len(result.questions), "n_samples": result.n}
    if result.rouge is not None:
        summary.update(
            greedy_rouge=float(np.mean(result.greedy_rouge)),
            ed_mean=float(table["ed_mean"].mean()), ed_sd=float(table["ed_sd"].mean()),
            ed_score=float(table["ed_score"].mean()),
            mean_lower_bound=float(table["mean_lower"].mean()), mean_upper_bound=float(table["mean_upper"].mean()),
            std_upper_bound=float(table["std_upper"].mean()),
            general_leak_bound_at_threshold=float(table["rouge_tail_bound"].mean()),
            rouge_leak_rate=float((result.rouge > rouge_threshold).mean()),
            adaptive_ed_mean=float(adaptive_table["ed_mean"].mean()),
            adaptive_ed_sd=float(adaptive_table["ed_sd"].mean()),
        )
    summary.update(
        greedy_leak_rate=float(result.greedy_leak.mean()),
        leak_rate=float(table["leak_rate"].mean()),
        leak_lower_bound_mean=float(table["leak_lower"].mean()),
        binary_leak_bound_mean=float(table["binary_leak_bound"].mean()),
        binary_leak_bound_max=float(table["binary_leak_bound"].max()),
        questions_with_a_leak=int((table["leaks"] > 0).sum()),
        self_bleu=float(np.nanmean(result.self_bleu)) if np.isfinite(result.self_bleu).any() else None,
        certainty_mean=float(result.certainty.mean()),
        adaptive_greedy_share=float(adaptive.went_greedy.mean()),
        adaptive_leak_rate=float(adaptive_table["leak_rate"].mean()),
        adaptive_binary_leak_bound_mean=float(adaptive_table["binary_leak_bound"].mean()),
    )
    counts = understatement_summary(table)
    counts.pop("n_questions", None)
    summary.update(counts)
    return ModelReport(table, summary)


def compare_with_reference(tables: Mapping[str, pd.DataFrame], summaries: dict[str, dict[str, Any]],
                           reference: str | None) -> None:
    """Add to each summary how many flagged questions leak MORE than the reference (retain) model does.

    The retain model never saw the forget set, so its leak rate on a question is what guessing achieves (a
    common occupation, a frequent city). A flagged question counts when the model's Clopper-Pearson lower
    bound exceeds the reference's M_bin on it: both hold with probability >= 1 - alpha each, so the model's leak
    probability exceeds the reference's with probability >= 1 - 2 alpha. Key
    ``greedy_unlearned_but_leaks_above_reference``; nothing is added without a reference.
    """
    if not reference or reference not in tables:
        return
    ref_bound = tables[reference]["binary_leak_bound"]
    for model, table in tables.items():
        above = table["understated_entity"] & (table["leak_lower"] > ref_bound)
        summaries[model]["greedy_unlearned_but_leaks_above_reference"] = int(above.sum())


def summarise_models(results: Mapping[str, SampledScores], alpha: float, rouge_threshold: float,
                     adaptive_threshold: float, reference: str | None) -> Reports:
    """:func:`model_summary` of every model, then :func:`compare_with_reference` against the retain model."""
    reports = {name: model_summary(r, alpha, rouge_threshold, adaptive_threshold) for name, r in results.items()}
    tables = {name: report.table for name, report in reports.items()}
    summaries = {name: report.summary for name, report in reports.items()}
    compare_with_reference(tables, summaries, reference)
    return Reports(tables, summaries)


def bounds_vs_n(scores: np.ndarray, alpha: float, sizes: Sequence[int] | None = None,
                grid: bounds.GridSpec | np.ndarray = "uniform") -> pd.DataFrame:
    """Expectation and std bounds from the first m of one question's n scores, for m on a geometric grid
    (4, 8, 16, ..., n by default): how fast the bounds close in on the sample statistics (Fig. 3e-f).
    Returns a DataFrame indexed by m with ed_mean, ed_sd, mean_lower, mean_upper, std_upper."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"bounds_vs_n takes the n scores of ONE question, got shape {scores.shape}")
    n = scores.size
    if sizes is None:
        sizes = sorted({*(2 ** k for k in range(2, int(math.log2(max(n, 4))) + 1)), n})
    rows = []
    for m in sizes:
        if not 1 <= m <= n:
            raise ValueError(f"subsample size {m} outside 1..{n}")
        first = scores[:m]
        mean, sd = bounds.ed_stats(first)
        lower, upper = bounds.expectation_bounds(first, alpha, grid)
        rows.append({"m": m, "ed_mean": mean, "ed_sd": sd, "mean_lower": lower, "mean_upper": upper,
                     "std_upper": bounds.std_bound(first, alpha, grid)})
    return pd.DataFrame(rows).set_index("m")


def general_leak_curves(scores: np.ndarray, alpha: float, thresholds: np.ndarray | None = None) -> LeakCurves:
    """M_gen and the empirical tail 1 - F_n of each question's scores at ROUGE-L thresholds (0 to 1 by default)."""
    x = np.linspace(0.0, 1.0, 101) if thresholds is None else np.asarray(thresholds, dtype=float)
    scores = np.atleast_2d(scores)
    upper = bounds.general_leakage_bound(scores, x, alpha)
    tail = (scores[:, :, None] > x[None, None, :]).mean(axis=1)
    return LeakCurves(x, upper, tail)


# --------------------------------------------------------------------------- what the figures show


def questions_by_spread(spread: np.ndarray) -> list[int]:
    """The questions with the largest, the median and the smallest sample sd (each once)."""
    spread = np.asarray(spread)
    return list(dict.fromkeys([int(np.argmax(spread)), int(np.argsort(spread)[len(spread) // 2]),
                               int(np.argmin(spread))]))


def bounds_vs_n_curves(results: Mapping[str, SampledScores], tables: Mapping[str, pd.DataFrame],
                       candidates: Sequence[str], alpha: float) -> dict[str, pd.DataFrame]:
    """:func:`bounds_vs_n` for three questions (:func:`questions_by_spread`) of the candidate model whose samples
    vary most (largest mean sd), labelled "<model>, q<question> (sd <sd>)"."""
    model = max(candidates, key=lambda m: tables[m]["ed_sd"].mean())
    spread = tables[model]["ed_sd"].to_numpy()
    return {f"{model}, q{q} (sd {spread[q]:.2f})": bounds_vs_n(results[model].rouge[q], alpha)
            for q in questions_by_spread(spread)}


def bounds_vs_n_overview(curves: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The curves of :func:`bounds_vs_n_curves` side by side at the smallest, a middle and the largest m."""
    rows = len(next(iter(curves.values())))
    return pd.concat(curves, names=["question", "m"]).unstack(0).iloc[[0, rows // 2, -1]]


def summary_frame(summaries: Mapping[str, Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """The summaries as a table, one row per model, with those of ``columns`` that they hold."""
    frame = pd.DataFrame.from_dict(summaries, orient="index")
    return frame[[c for c in columns if c in frame]]


def example_answers(results: Mapping[str, SampledScores], question: int = 0, count: int = 4,
                    samples: int = 3) -> Example:
    """One question (the first by default) as the first ``count`` models answer it: greedily and in
    their first ``samples`` samples."""
    first = next(iter(results.values()))
    answers = pd.DataFrame({name: {"greedy": r.greedy_answers[question], "samples": r.examples[question][:samples]}
                            for name, r in list(results.items())[:count]}).T
    return Example(first.questions[question], keys_text(first.keys)[question], answers)


def flagged_questions(tables: Mapping[str, pd.DataFrame], summaries: Mapping[str, Mapping[str, Any]],
                      exclude: Sequence[str] = (), reference: str | None = None,
                      limit: int = 8) -> FlaggedQuestions | None:
    """The flagged questions (greedy unlearned, sampling leaks) of the unlearned model with the most of them,
    strongest lower bound first, with the retain model's leak count beside; None without an unlearned model.
    Unlearned models are those not in ``exclude`` (the target and the retain model)."""
    unlearned = [m for m in tables if m not in exclude]
    if not unlearned:
        return None
    worst = max(unlearned, key=lambda m: summaries[m]["greedy_unlearned_but_leaks"])
    flagged = tables[worst][tables[worst]["understated_entity"]]
    shown = flagged[FLAGGED_COLUMNS].copy()
    if reference in tables:
        shown[f"{reference} leaks"] = tables[reference].loc[flagged.index, "leaks"]
    return FlaggedQuestions(worst, len(flagged), shown.sort_values("leak_lower", ascending=False).head(limit))


def above_greedy_share(results: Mapping[str, SampledScores], exclude: Sequence[str] = ()) -> pd.Series:
    """Per model (those not in ``exclude``, with ROUGE-L scores): the share of questions on which some sampled answer
    scores a higher ROUGE-L than the greedy one."""
    return pd.Series({name: float((r.rouge.max(axis=1) > r.greedy_rouge + 1e-9).mean())
                      for name, r in results.items() if name not in exclude and r.rouge is not None}, dtype=float)


def keyword_prefix_comparison(plain: KeywordQA, prefixed: KeywordQA) -> pd.DataFrame:
    """The keyword Q&A asked plainly (the paper's setting) and with the affirmative response prefilled (an attack
    the paper does not describe: the model only continues "Sure, ..."), side by side."""
    columns = ("greedy_leak_rate", "leak_rate", "questions_with_a_leak", "greedy_unlearned_but_leaks",
               "binary_leak_bound_mean", "share_binary_leak_bound_above_0.1")
    return pd.DataFrame({"asked plainly": {c: plain.summary[c] for c in columns},
                         "affirmative response prefilled": {c: prefixed.summary[c] for c in columns}})
