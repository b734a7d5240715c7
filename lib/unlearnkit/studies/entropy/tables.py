"""What notebook 06 shows beside its figures and tables: the run that leaks most, the models of the Fig. 3c–d
analogue and the general leakage bound of the curve models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ... import bounds
from ...metrics.sampling import SampledScores
from .collapse import REGIME, curve_pair

# --------------------------------------------------------------------------- texts and tables


def most_leaking(table: pd.DataFrame, exclude: Sequence[str] = ()) -> str:
    """The Table 1 run whose samples name the key entity most often (the one adaptive temperature can hurt)."""
    return str(table.drop(index=[r for r in exclude if r in table.index])["leak rate"].idxmax())


def fig3_models(table: pd.DataFrame, results: Mapping[str, SampledScores], alone_run: str,
                eo_run: str) -> tuple[dict[str, SampledScores], dict[str, float] | None]:
    """The two models of the Fig. 3c–d analogue: two in-regime models with the same greedy leak rate
    (:func:`curve_pair`) where there are such (then None beside them), else the paper's own pair (the method alone
    and with EO, notebook 02's learning rate) beside each in-regime model's greedy leak rate, which notebook 06
    states, since the figure then shows models outside the regime."""
    pair = curve_pair(table, results)
    if pair is not None:
        return pair, None
    rates = {m: float(results[m].greedy_leak.mean()) for m in table.index if table.loc[m, "kind"] == REGIME}
    return {f"{alone_run} (alone)": results[alone_run], f"{eo_run} (EO)": results[eo_run]}, rates


def curve_bounds(curve_models: Mapping[str, SampledScores], alpha: float, threshold: float) -> pd.DataFrame:
    """Per curve model: the mean general leakage bound M_gen at ``threshold`` over its questions (its floor, the DKW ε
    of its number of samples, is reached where no sample scores above ``threshold``) and its mean sampled sd."""
    return pd.DataFrame({name: {"M_gen": float(bounds.general_leakage_bound(np.atleast_2d(result.rouge), threshold,
                                                                            alpha).mean()),
                                "ED sd": float(result.rouge.std(axis=1).mean())}
                         for name, result in curve_models.items()}).T.rename_axis("model")
