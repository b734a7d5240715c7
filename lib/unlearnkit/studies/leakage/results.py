"""The paper's bounds beside the corrected ones: the width of the expectation interval on each grid and the std bound
M_σ in both modes (:func:`bound_modes`), and the Monte Carlo coverage of the std bound where scores have an atom at
0 (:func:`atom_at_zero_coverage`).

The module keeps its name, outside the studies' scheme (docs/design.md, [9]): the bound-modes figure's recipe, kept
in each run store, names :class:`AtomCoverage` by its module and name (``unlearnkit.studies.leakage.results``, one of
:data:`unlearnkit.plots.recipes.PLOT_CLASSES`), and moved it could no longer be redrawn."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics.sampling import SampledScores

# --------------------------------------------------------------------------- the paper's bounds beside ours


def bound_modes(results: Mapping[str, SampledScores], alpha: float) -> pd.DataFrame:
    """Per model, averaged over its questions' sampled ROUGE-L: the width of the expectation interval on the
    paper library's grid (``mode="paper"``), on our uniform grid (K = 100) and on the exact sample grid, and the
    std bound M_σ in the paper mode and in the corrected mode. No row for a model without ROUGE scores."""
    records = []
    for name, result in results.items():
        if result.rouge is None:
            continue
        scores = np.atleast_2d(result.rouge)
        widths = {}
        for label, kwargs in (("paper", {"mode": "paper"}), ("uniform", {}), ("samples", {"grid": "samples"})):
            lower, upper = bounds.expectation_bounds(scores, alpha, **kwargs)
            widths[f"width_{label}"] = float(np.mean(upper - lower))
        records.append({"model": name, **widths,
                        "std_paper": float(np.nanmean(bounds.std_bound(scores, alpha, mode="paper"))),
                        "std_corrected": float(np.mean(bounds.std_bound(scores, alpha))),
                        "atom_at_zero_share": float(np.mean(scores == 0.0))})
    return pd.DataFrame(records).set_index("model")


class AtomCoverage(NamedTuple):
    true_sd: float
    paper: np.ndarray  # (trials,) the paper mode's std bound
    corrected: np.ndarray  # (trials,) the corrected mode's
    n: int
    alpha: float
    atom: float

    def coverage(self) -> dict[str, float]:
        return {"paper": float(np.mean(self.paper >= self.true_sd)),
                "corrected": float(np.mean(self.corrected >= self.true_sd))}


def atom_at_zero_coverage(alpha: float, n: int = 1024, trials: int = 200, atom: float = 0.5, *,
                          seed: int) -> AtomCoverage:
    """Monte Carlo coverage of the std bound for scores with an atom at 0 (as ROUGE-L = 0 answers make): 0 with
    probability ``atom``, else Beta(5, 2). The paper's form drops the atom's mass from the variance sum and falls
    below the true standard deviation; the corrected form keeps coverage >= 1 - alpha."""
    rng = np.random.default_rng(seed)
    draws = rng.beta(5, 2, (trials, n)) * (rng.random((trials, n)) >= atom)
    mean = (1 - atom) * 5 / 7
    second = (1 - atom) * (5 * 6) / (7 * 8)  # E[B^2] = a(a+1) / ((a+b)(a+b+1)) for Beta(5, 2)
    true_sd = math.sqrt(second - mean ** 2)
    return AtomCoverage(true_sd, bounds.std_bound(draws, alpha, mode="paper"), bounds.std_bound(draws, alpha), n,
                        alpha, atom)
