"""The calibrated comparison's records: what metrics.json and per_item.json keep of notebook 03."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...metrics.ps import (
    FORGET,
    HELDOUT,
    PSEvaluator,
    PSProfile,
    means,
)
from .criteria import Tolerances
from .methods import CONTROL_NAMES
from .search import Calibration, found_unlearning, uncontrolled_loss
from .sweeps import best_settings, records

# --------------------------------------------------------------------------- the comparison and its records


def run_meta(calibrations: Mapping[str, Calibration], before: PSProfile, sweeps: Mapping[str, pd.DataFrame],
             evaluate: PSEvaluator, elapsed_s: float, tolerances: Tolerances | None = None,
             tables: Mapping[str, pd.DataFrame] | None = None) -> dict[str, Any]:
    """What metrics.json keeps beside the Table 3 results, numbers and identifiers only: each method's calibration,
    GD's best passing setting under each control, the PS item counts and the time taken; with ``tables`` (Table 2,
    Table 3, the controls summary, the forget splits) their rows."""
    extra: dict[str, Any] = {"tables": {name: records(table) for name, table in (tables or {}).items()}}
    if tolerances is not None:
        extra["intervals"] = {"confidence": tolerances.confidence, "resamples": tolerances.resamples,
                              "seed": tolerances.seed}
    return {**extra,
        "calibrated_a": {m: c.best for m, c in calibrations.items()},
        "coarse_a": {m: c.coarse_best for m, c in calibrations.items()},
        "found_passing": {m: found_unlearning(c) for m, c in calibrations.items()},
        "uncontrolled": {m: means(c.uncontrolled) for m, c in calibrations.items()},
        "uncontrolled_heldout_ps_exact_loss": {m: uncontrolled_loss(c, before) for m, c in calibrations.items()},
        "gd_best_passing": {k: None if row is None else float(row[k]) for k, row in best_settings(sweeps).items()},
        "ps_items": {HELDOUT: len(evaluate.heldout_rows), FORGET: len(evaluate.forget_rows)},
        "elapsed_s": round(elapsed_s, 1),
    }


def per_item_tables(sweeps: Mapping[str, pd.DataFrame], calibrations: Mapping[str, Calibration],
                    interference: Mapping[str, pd.DataFrame] | None = None,
                    method_controls: Mapping[str, Any] | None = None,
                    split_calibrations: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every sweep of GD, every calibration table, the interference runs, every control of every method and the
    mixing calibrations of the other forget splits, as records for per_item.json."""
    out = {"gd_early_stopping": records(sweeps["t"]), "gd_capping": records(sweeps["delta"]),
           "gd_mixing": records(sweeps["a"]), "calibration": {m: records(c.table) for m, c in calibrations.items()}}
    if interference is not None:
        out["interference"] = {run: records(table) for run, table in interference.items()}
    if method_controls is not None:
        out["controls"] = {run: {CONTROL_NAMES[c]: records(cal.table) for c, cal in mc.controls.items()}
                           for run, mc in method_controls.items()}
    if split_calibrations is not None:
        out["splits"] = {split: {run: records(c.table) for run, c in sc.calibrations.items()}
                         for split, sc in split_calibrations.items()}
    return out
