"""The ground every bound stands on: the checks of alpha, scores and grids, the empirical distribution function
computed exactly without a Python loop, and the DKW band (:func:`dkw_epsilon`, :func:`sample_size`)."""

from __future__ import annotations

import math

import numpy as np

# ----------------------------------------------------------------------------- validation


def check_alpha(alpha: float) -> float:
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"alpha must be a number in (0, 0.5], got {alpha!r}") from None
    if not (0.0 < alpha <= 0.5):  # also rejects NaN
        raise ValueError(f"alpha must be in (0, 0.5], got {alpha}")
    return alpha


def check_scores(x, *, binary: bool = False) -> tuple[np.ndarray, bool]:
    """Validate scores and return them as a float 2-D array (prompts, n) plus 'was it 1-D'."""
    scores = np.asarray(x, dtype=float)
    if scores.ndim not in (1, 2):
        raise ValueError(
            f"scores must be a 1-D array (n,) or a 2-D array (prompts, n), got shape {scores.shape}"
        )
    was_1d = scores.ndim == 1
    scores = np.atleast_2d(scores)
    if scores.shape[-1] < 1:
        raise ValueError("scores are empty: need n >= 1 samples per prompt")
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    if ((scores < 0.0) | (scores > 1.0)).any():
        raise ValueError(
            f"scores must lie in [0, 1], got values in [{scores.min()}, {scores.max()}]"
        )
    if binary and not np.isin(scores, (0.0, 1.0)).all():
        raise ValueError("the binary leakage bounds need binary scores: every value must be 0 or 1")
    return scores, was_1d


def check_grid(grid) -> np.ndarray:
    tau = np.asarray(grid, dtype=float)
    if tau.ndim != 1 or tau.size < 2:
        raise ValueError("grid must be a 1-D array with at least two points (0 and 1)")
    if np.isnan(tau).any():
        raise ValueError("grid contains NaN")
    if tau[0] != 0.0 or tau[-1] != 1.0:
        raise ValueError(f"grid must start at 0 and end at 1, got {tau[0]} ... {tau[-1]}")
    if not (np.diff(tau) > 0).all():
        raise ValueError("grid must be strictly increasing")
    return tau


def check_bins(K: int) -> int:
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"K (number of grid bins) must be an integer >= 1, got {K!r}")
    return int(K)


def unwrap(values: np.ndarray, was_1d: bool):
    """Give back a Python float for one prompt, the array for many."""
    return float(values[0]) if was_1d else values


# ----------------------------------------------------------------------------- empirical CDF


def empirical_cdf(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """F_n(t) = (number of samples <= t) / n, row by row, exactly and without a Python loop.

    scores: (P, n). thresholds: (m,) shared by all rows, or (P, m) one set per row.
    Returns (P, m).

    Why not broadcast `scores[:, None, :] <= t[:, None]`: that needs P*m*n memory. Instead we
    put samples and thresholds in one row, sort it stably with the samples first (so a sample
    equal to a threshold counts as <= it), and read off how many samples precede each threshold.
    """
    n_prompts, n = scores.shape
    thresholds = np.broadcast_to(thresholds, (n_prompts, thresholds.shape[-1]))
    m = thresholds.shape[1]
    combined = np.concatenate([scores, thresholds], axis=1)
    is_sample = np.concatenate(
        [np.ones((n_prompts, n), dtype=np.int64), np.zeros((n_prompts, m), dtype=np.int64)], axis=1
    )
    order = np.argsort(combined, axis=1, kind="stable")
    samples_so_far = np.cumsum(np.take_along_axis(is_sample, order, axis=1), axis=1)
    # Position of threshold j (column n + j of `combined`) in the sorted row.
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(n + m)[None, :].repeat(n_prompts, axis=0), axis=1)
    count = np.take_along_axis(samples_so_far, position[:, n:], axis=1)
    return count / n


# ----------------------------------------------------------------------------- DKW helpers


def dkw_epsilon(n, alpha: float, two_sided: bool = False):
    """Half-width of the DKW confidence band for the CDF from n samples.

    one-sided: eps = sqrt(ln(1/alpha) / (2n)),  P(sup_t F_n(t) - F(t) > eps) <= alpha
    two-sided: eps = sqrt(ln(2/alpha) / (2n)),  P(sup_t |F_n(t) - F(t)| > eps) <= alpha

    So the band holds with probability >= 1 - alpha over the draw of the n samples.
    `n` may be an int or an array of ints (>= 1); returns a float or an array.
    """
    alpha = check_alpha(alpha)
    n_arr = np.asarray(n)
    if n_arr.dtype.kind not in "iu" and not (
        n_arr.dtype.kind == "f" and np.all(np.isfinite(n_arr)) and np.all(n_arr == np.round(n_arr))
    ):
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if np.any(n_arr < 1):
        raise ValueError(f"n must be >= 1 (number of samples), got {n!r}")
    numerator = math.log(2.0 / alpha) if two_sided else math.log(1.0 / alpha)
    eps = np.sqrt(numerator / (2.0 * n_arr.astype(float)))
    return float(eps) if eps.ndim == 0 else eps


def sample_size(eps: float, alpha: float, two_sided: bool = False) -> int:
    """Smallest n whose DKW band has half-width <= eps at level alpha.

    n = ceil(ln(1/alpha) / (2 eps^2)), or ln(2/alpha) if two_sided. With that n the band of
    `dkw_epsilon(n, alpha, two_sided)` holds with probability >= 1 - alpha and is at most eps wide
    on each side.
    """
    alpha = check_alpha(alpha)
    eps = float(eps)
    if not (0.0 < eps < 1.0):
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    numerator = math.log(2.0 / alpha) if two_sided else math.log(1.0 / alpha)
    exact = numerator / (2.0 * eps * eps)
    n = math.ceil(exact)
    # exact may be an integer plus rounding noise (e.g. 1024.0000000000002): don't round that up.
    if n > 1 and exact - (n - 1) <= 1e-9 * exact:
        n -= 1
    return max(n, 1)
