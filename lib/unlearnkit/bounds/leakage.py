"""Bounds on how often a model leaks: the Clopper-Pearson upper and lower bounds on a leak probability from binary
scores, and the one-sided DKW bound on every tail probability P(X > t) at once."""

from __future__ import annotations

import numpy as np
from scipy import stats

from .dkw import check_alpha, check_scores, dkw_epsilon, empirical_cdf, unwrap

# ----------------------------------------------------------------------------- leakage bounds


def binary_leakage_bound(x, alpha: float):
    """Upper confidence bound on the leak probability p = P(X = 1) from binary scores.

    M_bin = Beta quantile at 1 - alpha with shapes (S + 1, n - S), S = number of ones: the
    one-sided Clopper-Pearson upper bound, and 1 when S = n. Guarantee: P(p <= M_bin) >= 1 - alpha
    over the draw of the n samples.

    Alpha convention: this one-sided bound spends the full alpha on the upper side. A two-sided
    Clopper-Pearson routine (e.g. scipy.stats.binomtest(...).proportion_ci) gives the same upper
    end only when called with confidence level 1 - 2*alpha.

    x: (n,) or (prompts, n) of 0/1 values. Returns a float or an array (prompts,).
    """
    alpha = check_alpha(alpha)
    scores, was_1d = check_scores(x, binary=True)
    n = scores.shape[1]
    successes = scores.sum(axis=1)
    failures = n - successes
    # beta.ppf is undefined for a zero shape; with no failures the bound is trivially 1.
    safe_failures = np.where(failures > 0, failures, 1.0)
    bound = np.where(
        failures > 0, stats.beta.ppf(1.0 - alpha, successes + 1.0, safe_failures), 1.0
    )
    return unwrap(bound, was_1d)


def binary_leak_lower_bound(x, alpha: float):
    """Lower confidence bound on the leak probability p = P(X = 1) from binary scores.

    Beta quantile at alpha with shapes (S, n - S + 1): the one-sided Clopper-Pearson lower bound, and 0
    when S = 0. Guarantee: P(p >= lower) >= 1 - alpha. The counterpart of :func:`binary_leakage_bound`: an
    upper bound can only fail to certify that a model has forgotten, a positive lower bound shows it leaks.

    x: (n,) or (prompts, n) of 0/1 values. Returns a float or an array (prompts,).
    """
    alpha = check_alpha(alpha)
    scores, was_1d = check_scores(x, binary=True)
    n = scores.shape[1]
    successes = scores.sum(axis=1)
    # beta.ppf is undefined for a zero shape; with no success the bound is trivially 0.
    safe_successes = np.where(successes > 0, successes, 1.0)
    lower = np.where(successes > 0, stats.beta.ppf(alpha, safe_successes, n - successes + 1.0), 0.0)
    return unwrap(lower, was_1d)


def general_leakage_bound(x, thresholds, alpha: float):
    """Upper confidence bounds on the tail probabilities P(X > t), for all thresholds at once.

    M_gen(t) = min(1, 1 - F_n(t) + eps), eps = sqrt(ln(1/alpha) / (2n)) (one-sided DKW).
    Guarantee: with probability >= 1 - alpha over the draw of the n samples,
    P(X > t) <= M_gen(t) for every t simultaneously (the whole curve, not each point separately).

    x: (n,) or (prompts, n). thresholds: scalar or array of any shape (any finite reals).
    Returns an array of shape x.shape[:-1] + thresholds.shape (a float for 1-D x and scalar t).
    """
    alpha = check_alpha(alpha)
    scores, was_1d = check_scores(x)
    t = np.asarray(thresholds, dtype=float)
    if np.isnan(t).any():
        raise ValueError("thresholds contain NaN")
    eps = dkw_epsilon(scores.shape[1], alpha, two_sided=False)
    cdf = empirical_cdf(scores, t.reshape(-1))
    bound = np.minimum(1.0, 1.0 - cdf + eps).reshape(scores.shape[:1] + t.shape)
    if was_1d:
        bound = bound[0]
        return float(bound) if bound.ndim == 0 else bound
    return bound
