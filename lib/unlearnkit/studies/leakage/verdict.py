"""Notebook 05's verdict: does sampling reveal, beyond the retain model's guessing, what greedy decoding hides on
the models in the paper's regime (printed by the notebook; metrics.json keeps the numbers only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics.sampling import SampledScores
from .regime import RegimeModel

# --------------------------------------------------------------------------- tables and verdicts


def understatement_verdict(tables: Mapping[str, pd.DataFrame], summaries: Mapping[str, Mapping[str, Any]],
                           alpha: float, exclude: Sequence[str] = (), reference: str | None = None) -> str:
    """One paragraph: does greedy decoding understate leakage for at least one unlearned model, with the numbers.

    Unlearned models are those not in ``exclude`` (the target and the retain model). For the strongest
    flagged question it quotes the leak count and the Clopper-Pearson interval [lower, M_bin], each side at
    level alpha, and, when ``reference`` (the retain model, which never saw the forget set) is given, that
    model's leak count on the same question: the rate at which the key entity is simply guessed.
    """
    lines = []
    best: tuple[float, str, int] | None = None
    for model, table in tables.items():
        if model in exclude:
            continue
        s = summaries[model]
        lines.append(f"  {model}: greedy calls {s['greedy_unlearned']}/{s['n_questions']} questions unlearned "
                     f"(no key entity in the greedy answer); sampling leaks on {s['greedy_unlearned_but_leaks']} "
                     f"of them (key entity), on {s.get('greedy_unlearned_but_leaks_rouge', 0)} by the ROUGE criterion.")
        flagged = table[table["understated_entity"]]
        if len(flagged):
            q = int(flagged["leak_lower"].idxmax())
            if best is None or flagged.loc[q, "leak_lower"] > best[0]:
                best = (float(flagged.loc[q, "leak_lower"]), model, q)
    if best is None:
        head = (f"No: for no unlearned model does greedy decoding call a question unlearned while one of the "
                f"n samples leaks its key entity (alpha {alpha}).")
        return head + "\n" + "\n".join(lines)
    lower, model, q = best
    row = tables[model].loc[q]
    n = summaries[model]["n_samples"]
    head = (f"Yes: greedy decoding understates leakage. For {model}, question {q} ({row['question_text']!r}, key "
            f"{row['key']!r}): the greedy answer {row['greedy_answer']!r} does not contain the key, but "
            f"{int(row['leaks'])}/{n} samples do, so with probability at least {1 - alpha:.2f} the leak "
            f"probability is at least {lower:.3f} (Clopper-Pearson lower bound) and at most "
            f"{row['binary_leak_bound']:.3f} (M_bin).")
    if reference and reference in tables:
        ref = tables[reference].loc[q]
        head += (f" The retain model {reference}, which never saw the forget set, names the key in "
                 f"{int(ref['leaks'])}/{n} samples (M_bin {ref['binary_leak_bound']:.3f}): the base rate of guessing.")
    return head + "\n" + "\n".join(lines)


class RegimeVerdict(NamedTuple):
    """Per model in the paper's regime: does sampling reveal forget answers that greedy hides, beyond the retain
    model's guessing? ``verdict`` is "reproduced" (at least ``needed`` runs), "partly" (some) or "not"."""

    table: pd.DataFrame
    revealing: list[str]
    verdict: str
    text: str


def beyond_guessing(result: SampledScores, reference: SampledScores, alpha: float) -> np.ndarray:
    """Per question, True where the greedy answer does not name the key entity and the model's Clopper-Pearson lower
    bound on the leak probability exceeds the reference's M_bin, both at level alpha / Q (Bonferroni over the Q
    questions): with probability >= 1 - 2 alpha every flagged question of the model leaks more than guessing."""
    level = alpha / len(result.questions)
    lower = bounds.binary_leak_lower_bound(result.leak, level)
    return (result.greedy_leak == 0) & (lower > bounds.binary_leakage_bound(reference.leak, level))


def _questions(count: int) -> str:
    return f"{count} question{'' if count == 1 else 's'}"


def regime_verdict(results: Mapping[str, SampledScores], summaries: Mapping[str, Mapping[str, Any]],
                   tables: Mapping[str, pd.DataFrame], chosen: Mapping[str, RegimeModel], reference: str,
                   alpha: float, needed: int = 2) -> RegimeVerdict:
    """The paper's question asked of each model in its regime (:func:`regime_models`): greedy decoding calls it
    unlearned about as often as the retain model; do its samples name the forget answer's key entity on questions
    whose greedy answer does not, beyond the retain model's guessing on the same question? Counted per question at
    2 alpha (``of them beyond guessing``) and, for the verdict, jointly over all questions (:func:`beyond_guessing`,
    Bonferroni), so that a model counts only when at least one question leaks with probability >= 1 - 2 alpha
    overall. A run whose greedy leak rate never came down to the retain model's is reported, and does not count."""
    ref = summaries[reference]
    rows, revealing = {}, []
    for label, model in chosen.items():
        s = summaries[label]
        above = int(s.get("greedy_unlearned_but_leaks_above_reference", 0))
        joint = int(beyond_guessing(results[label], results[reference], alpha).sum())
        reveals = model.reached and joint > 0
        if reveals:
            revealing.append(label)
        rows[label] = {
            "greedy leak rate": s["greedy_leak_rate"], f"{reference} greedy leak rate": ref["greedy_leak_rate"],
            "sampled leak rate": s["leak_rate"], f"{reference} sampled leak rate": ref["leak_rate"],
            "greedy unlearned": s["greedy_unlearned"], "of them leak in a sample": s["greedy_unlearned_but_leaks"],
            "of them beyond guessing": above, "beyond guessing, all questions jointly": joint,
            "retain ROUGE-L (greedy)": model.retain_rouge,
            "verdict": ("sampling reveals what greedy hides" if reveals else
                        "greedy regime not reached" if not model.reached else "no leak beyond guessing"),
        }
    verdict = "reproduced" if len(revealing) >= needed else "partly" if revealing else "not"
    text = (f"{verdict.capitalize()}: the paper finds that greedy decoding understates leakage. Among the "
            f"{len(chosen)} models in its regime (greedy leak rate at most the retain model's "
            f"{ref['greedy_leak_rate']:.3f}), sampling reveals forget answers beyond the retain model's guessing "
            f"on {len(revealing)}: " + (", ".join(f"{m} ({_questions(rows[m]['beyond guessing, all questions jointly'])} "
                                                  f"jointly at level {2 * alpha:g})" for m in revealing)
                                        or "none")
            + f"; {needed} or more count as reproduced.")
    rates = [rows[m]["sampled leak rate"] for m in rows]
    rates_text = ", ".join(f"{r:.3f}" for r in rates)
    if rates and max(abs(r - ref["leak_rate"]) for r in rates) < 0.5 * ref["leak_rate"] + 0.01:
        text += (f" Averaged over all questions the sampled leak rate stays near the retain model's ({rates_text} "
                 f"against {ref['leak_rate']:.3f}): what greedy hides sits in a few questions, not everywhere.")
    elif rates:
        text += f" Averaged over all questions the sampled leak rate is {rates_text} against {ref['leak_rate']:.3f}."
    shown = [*(revealing or list(chosen)), reference]
    example = understatement_verdict({m: tables[m] for m in shown},
                                     summaries, alpha, exclude=[reference], reference=reference)
    return RegimeVerdict(pd.DataFrame(rows).T, revealing, verdict, text + "\n" + example)
