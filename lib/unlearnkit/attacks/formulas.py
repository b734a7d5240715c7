"""The two published forms each of open-unlearning's robustness scores, named (docs/metrics.md §10).

open-unlearning's meta-evaluation scores a metric by its robustness to relearning (R) and to 4-bit quantisation (Q),
but its code for them is not public; the one public reconstruction ships two different formulas for each. Both are
kept here under their own names and reported side by side:

- relearning, with Δ = a metric's value after relearning minus before, for the unlearned model (Δ_u) and for the
  retain model under the same relearning (Δ_r):
  ``r_one_sided`` = min(Δ_r / Δ_u, 1); ``r_symmetric`` = 1 − clip(|Δ_u − Δ_r| / (|Δ_u| + |Δ_r| + ε), 0, 1);
- quantisation, with m the metric before and after quantising the same model:
  ``q_one_sided`` = min(m_after / m_before, 1); ``q_symmetric`` = 1 − clip(|m_after − m_before| / (|m_before| +
  |m_after| + ε), 0, 1).

1 reads "robust" in every form. A zero denominator of a one-sided form gives NaN, never a made-up value.
"""

from __future__ import annotations

import math

EPS = 1e-8


def _clip(x: float) -> float:
    return min(max(x, 0.0), 1.0)


def r_one_sided(delta_unlearned: float, delta_retain: float) -> float:
    if delta_unlearned == 0:
        return math.nan
    return min(delta_retain / delta_unlearned, 1.0)


def r_symmetric(delta_unlearned: float, delta_retain: float, eps: float = EPS) -> float:
    return 1.0 - _clip(abs(delta_unlearned - delta_retain) / (abs(delta_unlearned) + abs(delta_retain) + eps))


def q_one_sided(before: float, after: float) -> float:
    if before == 0:
        return math.nan
    return min(after / before, 1.0)


def q_symmetric(before: float, after: float, eps: float = EPS) -> float:
    return 1.0 - _clip(abs(after - before) / (abs(before) + abs(after) + eps))


def steps_to(curve: list[tuple[int, float]], level: float) -> tuple[int | None, bool]:
    """The first step of a (step, value) curve at which the value reaches ``level`` (>=), and whether it got there:
    ``(None, False)`` when it never does within the curve (censored at the last step, and said so)."""
    for step, value in curve:
        if value >= level:
            return step, True
    return None, False
