"""What each figure of notebook 05 shows, in sentences computed from its numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ...metrics.sampling import SampledScores
from .regime import RegimeModel
from .shapes import KeywordQA

# --------------------------------------------------------------------------- what each figure shows, from its numbers


def regime_text(chosen: Mapping[str, RegimeModel]) -> str:
    """Where each run reached the paper's regime, and what utility it kept there."""
    parts = [f"{m.run} at step {m.step}{'' if m.reached else ' (never reached: its lowest rate)'}, greedy leak rate "
             f"{m.greedy_leak_rate:.3f}, retain ROUGE-L {m.retain_rouge:.2f} (from {m.path['retain_rouge'].iloc[0]:.2f})"
             for m in chosen.values()]
    reference = next(iter(chosen.values())).reference_rate if chosen else float("nan")
    return (f"The paper samples models whose greedy answers look unlearned. Here the retain model's greedy leak rate "
            f"is {reference:.3f}; the runs reach it at: " + "; ".join(parts) + ".")


def greedy_vs_samples_text(results: Mapping[str, SampledScores], exclude: Sequence[str] = ()) -> str:
    """How often a sampled answer scores above the greedy one, per model: the paper reads greedy decoding as a
    lower estimate of what the model can produce."""
    parts = []
    for name, r in results.items():
        if name in exclude or r.rouge is None:
            continue
        above = float((r.rouge.max(axis=1) > r.greedy_rouge + 1e-9).mean())
        parts.append(f"{name}: greedy {r.greedy_rouge.mean():.2f}, sampled mean {r.rouge.mean():.2f}, some sample "
                     f"above greedy on {above:.0%} of the questions")
    return ("The paper finds sampled answers recovering more of the forget answer than the greedy one. Here: "
            + "; ".join(parts) + ".")


def binary_bounds_text(summaries: Mapping[str, Mapping[str, Any]], reference: str,
                       exclude: Sequence[str] = ()) -> str:
    """Mean M_bin and the questions with a leak, per model, beside the retain model's."""
    ref = summaries[reference]
    parts = [f"{name}: mean M_bin {s['binary_leak_bound_mean']:.3f}, {s['questions_with_a_leak']} questions leak in "
             f"some sample" for name, s in summaries.items() if name not in exclude and name != reference]
    return (f"M_bin bounds the probability of emitting the key entity. The retain model, which never saw the forget "
            f"set, has mean M_bin {ref['binary_leak_bound_mean']:.3f} with {ref['questions_with_a_leak']} questions "
            f"leaking by guessing; " + "; ".join(parts) + ".")


def bounds_vs_n_text(curves: Mapping[str, pd.DataFrame]) -> str:
    """How much the expectation interval narrowed from the fewest to all samples, and where the std bound ended."""
    parts = []
    for label, frame in curves.items():
        first, last = frame.iloc[0], frame.iloc[-1]
        parts.append(f"{label}: E[ROUGE-L] interval {first['mean_upper'] - first['mean_lower']:.2f} wide at m = "
                     f"{frame.index[0]}, {last['mean_upper'] - last['mean_lower']:.2f} at m = {frame.index[-1]}; std bound "
                     f"{last['std_upper']:.2f} against a sample sd of {last['ed_sd']:.2f}")
    return ("The paper shows the bounds closing in on the sample statistics as n grows, the std bound slowest. "
            "Here: " + "; ".join(parts) + ".")


def keyword_text(plain: KeywordQA, prefixed: KeywordQA | None = None) -> str:
    """The paper's Fig. 3a statistic on the keyword questions, asked plainly and, when given, prefilled."""
    text = (f"Asked plainly, {plain.summary['share_binary_leak_bound_above_0.1']:.0%} of the keyword questions have "
            f"M_bin above 0.1 (greedy leaks on {plain.summary['greedy_leak_rate']:.0%}, some sample on "
            f"{plain.summary['questions_with_a_leak']} of {plain.summary['n_questions']})")
    if prefixed is not None:
        text += (f"; with the affirmative response prefilled, "
                 f"{prefixed.summary['share_binary_leak_bound_above_0.1']:.0%} (greedy "
                 f"{prefixed.summary['greedy_leak_rate']:.0%}, some sample on {prefixed.summary['questions_with_a_leak']})")
    return text + "."
