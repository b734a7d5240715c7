"""The expectation-deviation (ED) score of the n samples: mean + rho * sd, a development metric without a guarantee
(:func:`ed_stats` gives the mean and sd apart)."""

from __future__ import annotations

import math

from .dkw import check_scores, unwrap

# ----------------------------------------------------------------------------- ED score


def ed_stats(x):
    """Sample mean and standard deviation (with 1/n, i.e. ddof=0) of the scores, per prompt.

    Descriptive statistics of the n samples: no guarantee about the model's distribution.
    x: (n,) or (prompts, n). Returns (mean, sd): floats or arrays (prompts,).
    """
    scores, was_1d = check_scores(x)
    return unwrap(scores.mean(axis=1), was_1d), unwrap(scores.std(axis=1, ddof=0), was_1d)


def ed_score(x, rho: float = 2.0):
    """Expectation-deviation score ED = mean + rho * sd over the n scores (sd with 1/n).

    A development metric: it carries no probabilistic guarantee and involves no alpha. Use
    `ed_stats` for the mean and sd separately.
    x: (n,) or (prompts, n). Returns a float or an array (prompts,).
    """
    rho = float(rho)
    if not math.isfinite(rho):
        raise ValueError(f"rho must be a finite number, got {rho}")
    mean, sd = ed_stats(x)
    return mean + rho * sd
