"""Entropy optimisation where the paper's models are (the in-regime runs of notebook 05, planned by
:func:`.plan.regime_eo_points`): their table and the utility of kept steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ... import workers
from ...config import Params
from ...metrics.sampling import SampledScores
from .measures import model_row, utility_of_folder
from .plan import RegimePoint

# --------------------------------------------------------------------------- EO where the paper's models are

#: The columns :func:`collapses` reads, which an empty :func:`regime_eo_table` still has.
EMPTY_COLUMNS = ("base", "lambda_f", "lambda_r", "positions", "ED sd", "ED score", "greedy ROUGE-L", "leak rate",
                 "certainty", "model utility")


def regime_eo_table(points: Sequence[RegimePoint], results: Mapping[str, SampledScores],
                    utilities: Mapping[str, float], alpha: float, rho: float) -> pd.DataFrame:
    """One row per point: its setting, the sampled sd, the ED score, the leak rate, the certainty c(x) on the
    model's own greedy answer, greedy ROUGE-L and utility."""
    records = [{"model": p.label, "base": p.base, "lambda_f": p.lambda_f, "lambda_r": p.lambda_r,
                "positions": p.positions, **model_row(results[p.label], alpha, rho), "model utility": utilities.get(p.label)} for p in points]
    if not records:  # no run of eo_regime_runs in notebook 05's regime on this seed: the table's columns, no rows
        return pd.DataFrame(columns=["model", *EMPTY_COLUMNS]).set_index("model")
    return pd.DataFrame(records).set_index("model")


def folder_utility(params: Params, named_folders: Mapping[str, Any], source) -> dict[str, float]:
    """:func:`utility` of models given by folder (a step kept along a run), keyed by their labels."""
    jobs = params.jobs
    names = list(named_folders)
    found = workers.side_by_side(utility_of_folder, [(params, name, named_folders[name], source)
                                                    for name in names], jobs, desc="utility")
    return dict(zip(names, found))
