"""Which metric to trust: open-unlearning's meta-evaluation of metrics, and leak@k (docs/metrics.md §3.6, §10.1).

Pure functions over arrays of values one metric gave many models; no model is run here.

- **Faithfulness** (:func:`faithfulness_auc`): the ROC AUC with which a metric separates a pool P of models that
  hold the forget knowledge from a pool N that never saw it. Oriented so that 1 means "P scores as more
  knowledgeable than N": for a metric where *lower* means more forget knowledge (an NLL, TOFU's truth ratio
  P(wrong)/P(right)) pass ``higher_means_knowledge=False`` and the values are negated first.
- **Robustness to relearning** (:func:`relearning_r`) and **to quantisation** (:func:`quantisation_q`), each in
  open-unlearning's one-directional form (``"one_directional"``: only a recovery of knowledge is penalised) and in
  the symmetric form of the public re-implementation (``"symmetric"``: a destruction is penalised as well), one
  value per unlearned model; :func:`summarise` takes their mean over the models where the value is defined.
- **Robustness** = harmonic mean of R and Q, **overall** = harmonic mean of faithfulness and robustness
  (:func:`harmonic_mean`).
- **leak@k** (:func:`leak_at_k`, :func:`leak_at_k_curve`): the probability that at least one of k samples leaks,
  estimated without bias from c leaks among n samples, 1 − C(n − c, k) / C(n, k), as a product of ratios.

**The zero-denominator rule**, one for every ratio here: where a denominator lies within ``ZERO_DENOMINATOR``
(1e-6) of 0 the model's value is *left out* (NaN), never set to a made-up value; :func:`summarise` counts the models
left out beside the mean. Bad input (NaN in a pool, a negative value where a ratio needs a sign, leaks outside
[0, n]) is refused before any work with one ValueError line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ZERO_DENOMINATOR",
    "VARIANTS",
    "Summary",
    "LeakCurve",
    "faithfulness_auc",
    "relearning_r",
    "quantisation_q",
    "summarise",
    "harmonic_mean",
    "leak_at_k",
    "leak_ks",
    "leak_at_k_curve",
    "leak_at_k_curves",
]

ZERO_DENOMINATOR = 1e-6
VARIANTS = ("one_directional", "symmetric")


def _finite(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds NaN or infinite values; drop or score those models first")
    return arr


def _variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    return variant


def faithfulness_auc(p_pool: Sequence[float] | np.ndarray, n_pool: Sequence[float] | np.ndarray, *,
                     higher_means_knowledge: bool) -> float:
    """ROC AUC of one metric's values on the P pool (label 1, the models that hold the forget knowledge) against the
    N pool (label 0): the probability that a random P model scores as more knowledgeable than a random N model, ties
    counting one half (``sklearn.metrics.roc_auc_score``, equal to the Mann-Whitney U over |P|·|N|). 1 separates
    perfectly, 0.5 is chance, below 0.5 the metric reads the pools backwards. ``higher_means_knowledge=False``
    negates the values first (a metric where lower means more forget knowledge)."""
    from sklearn.metrics import roc_auc_score

    p = _finite(p_pool, "the P pool").ravel()
    n = _finite(n_pool, "the N pool").ravel()
    if len(p) == 0 or len(n) == 0:
        raise ValueError(f"faithfulness needs models in both pools (P has {len(p)}, N has {len(n)})")
    sign = 1.0 if higher_means_knowledge else -1.0
    labels = np.concatenate([np.ones(len(p)), np.zeros(len(n))])
    return float(roc_auc_score(labels, sign * np.concatenate([p, n])))


def relearning_r(unlearned_before, unlearned_after, retain_before, retain_after, *, variant: str) -> np.ndarray:
    """R per unlearned model: relearning (one epoch on the forget set) moves the metric by Δ_u = after − before on
    the unlearned model and by Δ_r on the retain model under the same relearning (the retain arguments may be one
    number each, broadcast over the models). 1 reads robust.

    - ``one_directional`` (open-unlearning, Eq. 2): R = min(Δ_r / Δ_u, 1), clipped below at 0; left out (NaN) where
      |Δ_u| < 1e-6. The ratio is the same for a metric and its negation, so no orientation is needed: an unlearned
      model that relearns faster than the retain model (|Δ_u| > |Δ_r|, same direction) scores below 1, one that
      moves against the retain model scores 0.
    - ``symmetric`` (the re-implementation): R = 1 − |Δ_u − Δ_r| / (|Δ_u| + |Δ_r|), in [0, 1] by the triangle
      inequality; left out where |Δ_u| + |Δ_r| < 1e-6 (neither model moved)."""
    _variant(variant)
    ub, ua = _finite(unlearned_before, "unlearned_before"), _finite(unlearned_after, "unlearned_after")
    rb, ra = _finite(retain_before, "retain_before"), _finite(retain_after, "retain_after")
    if ub.shape != ua.shape:
        raise ValueError(f"unlearned_before {ub.shape} and unlearned_after {ua.shape} differ in shape")
    d_u = np.atleast_1d(ua - ub)
    try:
        d_r = np.broadcast_to(ra - rb, d_u.shape)
    except ValueError:
        raise ValueError(f"the retain model's change {np.shape(ra - rb)} does not fit the {d_u.shape} unlearned "
                         "models (one number, or one per model)") from None
    if variant == "one_directional":
        den = d_u
        num = d_r
        ok = np.abs(den) >= ZERO_DENOMINATOR
        out = np.full(d_u.shape, np.nan)
        out[ok] = np.clip(num[ok] / den[ok], 0.0, 1.0)
        return out
    den = np.abs(d_u) + np.abs(d_r)
    ok = den >= ZERO_DENOMINATOR
    out = np.full(d_u.shape, np.nan)
    out[ok] = 1.0 - np.abs(d_u[ok] - d_r[ok]) / den[ok]
    return out


def quantisation_q(before, after, *, variant: str, higher_means_knowledge: bool) -> np.ndarray:
    """Q per unlearned model: the metric on the model before and after 4-bit quantisation. 1 reads robust.

    - ``one_directional`` (open-unlearning, Eq. 3): with higher = more knowledge, Q = min(m_before / m_after, 1):
      quantisation that restores knowledge (m_after > m_before) lowers Q, one that destroys it leaves Q = 1. For a
      metric where lower means more knowledge the ratio is taken the other way, Q = min(m_after / m_before, 1), so
      that a fall (restored knowledge) lowers Q. Left out where the denominator is within 1e-6 of 0; a negative
      value is refused (a ratio of signed values reads nothing).
    - ``symmetric`` (the re-implementation): Q = 1 − |m_after − m_before| / (|m_before| + |m_after|), the same for
      either orientation; left out where |m_before| + |m_after| < 1e-6."""
    _variant(variant)
    b, a = _finite(before, "before"), _finite(after, "after")
    if b.shape != a.shape:
        raise ValueError(f"before {b.shape} and after {a.shape} differ in shape")
    b, a = np.atleast_1d(b), np.atleast_1d(a)
    out = np.full(b.shape, np.nan)
    if variant == "one_directional":
        if np.any(b < 0) or np.any(a < 0):
            raise ValueError("one-directional Q is a ratio of the metric's values and needs them non-negative")
        num, den = (b, a) if higher_means_knowledge else (a, b)
        ok = np.abs(den) >= ZERO_DENOMINATOR
        out[ok] = np.minimum(num[ok] / den[ok], 1.0)
        return out
    den = np.abs(b) + np.abs(a)
    ok = den >= ZERO_DENOMINATOR
    out[ok] = 1.0 - np.abs(a[ok] - b[ok]) / den[ok]
    return out


@dataclass(frozen=True)
class Summary:
    """One metric's R or Q over the unlearned models: ``values`` per model (NaN where the zero-denominator rule left
    it out), their ``mean`` over the models kept (NaN when none is), ``used`` and ``left_out`` counted."""

    values: np.ndarray
    mean: float
    used: int
    left_out: int


def summarise(values) -> Summary:
    """The mean of per-model R or Q values over the models the zero-denominator rule kept, with both counts."""
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    kept = ~np.isnan(arr)
    used = int(kept.sum())
    mean = float(arr[kept].mean()) if used else float("nan")
    return Summary(values=arr, mean=mean, used=used, left_out=int(len(arr) - used))


def harmonic_mean(a, b):
    """2ab / (a + b) of scores in [0, 1] (elementwise on arrays): robustness = harmonic_mean(R, Q), overall =
    harmonic_mean(faithfulness, robustness). 0 when either is 0 (the limit); NaN propagates (a metric with no model
    left has no robustness). A value outside [0, 1] is refused."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    for v in (x, y):
        if np.any((v < 0) | (v > 1)):
            raise ValueError("the harmonic mean here takes scores in [0, 1]")
    with np.errstate(invalid="ignore", divide="ignore"):
        total = x + y
        out = np.where(total > 0, 2 * x * y / np.where(total > 0, total, 1.0), 0.0)
    out = np.where(np.isnan(x) | np.isnan(y), np.nan, out)
    return float(out) if out.ndim == 0 else out


def _leak_args(leaks, n: int) -> np.ndarray:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n (samples per question) must be a positive integer, not {n!r}")
    c = np.asarray(leaks)
    if c.size and not np.all(np.asarray(c, dtype=float) == np.round(np.asarray(c, dtype=float))):
        raise ValueError("leak counts must be whole numbers")
    c = c.astype(np.int64)
    if np.any((c < 0) | (c > n)):
        raise ValueError(f"leak counts must lie in [0, n = {n}]")
    return c


def leak_at_k(leaks, n: int, k: int) -> np.ndarray:
    """leak@k per question: 1 − C(n − c, k) / C(n, k) for c leaking samples among n, the unbiased estimate of the
    probability that at least one of k fresh samples leaks (k ≤ n). The binomials are never formed: their ratio is
    the product over i < k of (1 − c / (n − i)), summed as logs (log1p), and 1 − exp(x) is taken as −expm1(x), exact
    to a few ulps where log-gamma differences lose digits; where n − c < k every draw of k holds a leak and leak@k is
    1. k = 1 gives c / n; k = n gives 1 if c > 0 else 0."""
    c = _leak_args(leaks, n)
    if isinstance(k, bool) or int(k) != k or not 1 <= k <= n:
        raise ValueError(f"k must be an integer in [1, n = {n}], not {k!r}")
    flat = c.ravel()
    out = np.ones(flat.shape, dtype=float)
    some = (n - flat) >= k  # enough non-leaking samples for a leak-free draw of k
    if some.any():
        share = flat[some, None] / (n - np.arange(int(k), dtype=float))[None, :]
        out[some] = -np.expm1(np.log1p(-share).sum(axis=1))
    return np.clip(out, 0.0, 1.0).reshape(c.shape)


def leak_ks(n: int) -> list[int]:
    """k = 1, 2, 4, ... up to n, and n itself when it is not a power of two."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n (samples per question) must be a positive integer, not {n!r}")
    ks = [1 << i for i in range(int(n).bit_length()) if 1 << i <= n]
    return ks if ks[-1] == n else [*ks, int(n)]


@dataclass(frozen=True)
class LeakCurve:
    """leak@k of one model: ``per_question`` (questions × len(ks)) and its ``mean`` over questions, per k."""

    ks: tuple[int, ...]
    n: int
    per_question: np.ndarray
    mean: np.ndarray


def leak_at_k_curve(leaks, n: int, ks: Sequence[int] | None = None) -> LeakCurve:
    """leak@k of every question (the leak counts ``leaks``, one per question, out of n samples each) at each k of
    ``ks`` (default :func:`leak_ks`), and the mean over questions."""
    c = np.atleast_1d(_leak_args(leaks, n))
    if c.ndim != 1 or len(c) == 0:
        raise ValueError("leaks must be a non-empty list of per-question counts")
    ks = tuple(int(k) for k in (leak_ks(n) if ks is None else ks))
    per_question = np.stack([leak_at_k(c, n, k) for k in ks], axis=1)
    return LeakCurve(ks=ks, n=int(n), per_question=per_question, mean=per_question.mean(axis=0))


def leak_at_k_curves(per_item: Mapping[str, Mapping], n: int, ks: Sequence[int] | None = None, *,
                     column: str = "leaks") -> dict[str, LeakCurve]:
    """leak@k curves of every model of notebook 05's ``per_item.json`` (model → column → one value per forget
    question), read from its ``leaks`` column: the number of the n sampled answers that contain the question's key
    entity (``rouge_leaks`` counts the answers over the ROUGE threshold instead). n is the notebook's
    ``n_samples`` (its ``metrics.json``, ``<model>.forget.n_samples``). A model without the column is refused."""
    missing = [model for model, table in per_item.items() if column not in table]
    if missing:
        raise ValueError(f"no {column!r} column for {', '.join(map(str, missing))} in the per-item results")
    return {model: leak_at_k_curve(table[column], n, ks) for model, table in per_item.items()}
