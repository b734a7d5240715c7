"""What notebook 06 trains and compares, decided in one place from the profile: the λ_f and λ_r sweeps, the EO runs
where the paper's models are (notebook 05's regime), the paper's setting and the method alone beside it."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import Params
from .collapse import regime_of_leakage
from .plan import RegimePoint, SweepPoint, lambda_f_points, lambda_r_points, paper_points
from .regime import regime_eo_points


@dataclass(frozen=True)
class StudyPlan:
    """The runs of notebook 06. ``params`` knows every run the sweeps add (its ``method_settings`` holds them)."""

    params: Params
    #: notebook 05's models in the paper's regime: {label: (run, step)}
    regime: dict[str, tuple[str, int]]
    lambda_f_points: list[SweepPoint]
    lambda_r_points: list[SweepPoint]
    regime_points: list[RegimePoint]
    #: the paper's setting within the λ_f grid (λ_f 1 at the profile's learning rate) and the method alone beside it
    paper_point: SweepPoint
    alone_point: SweepPoint
    #: runs compared at their last step: the Table 1 runs and both sweeps
    final_runs: list[str]
    #: every run the notebook trains: those and the in-regime EO runs
    all_runs: list[str]


def study_plan(params: Params) -> StudyPlan:
    """The plan of notebook 06 for ``params``: ``eo_table_runs``, the sweeps of ``eo_method`` and the EO runs of
    ``eo_regime_runs``."""
    regime = regime_of_leakage(params)
    params, f_points = lambda_f_points(params)
    params, r_points = lambda_r_points(params)
    params, in_regime = regime_eo_points(params, regime)
    paper_point, alone_point = paper_points(f_points, params)
    final_runs = list(dict.fromkeys([*params.eo_table_runs, *(p.run for p in f_points), *(p.run for p in r_points)]))
    all_runs = list(dict.fromkeys([*final_runs, *(p.run for p in in_regime)]))
    return StudyPlan(params, regime, f_points, r_points, in_regime, paper_point, alone_point, final_runs, all_runs)
