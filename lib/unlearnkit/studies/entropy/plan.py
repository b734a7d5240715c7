"""Notebook 06's plan: the paper's constants, the questions and sampling settings, the unlearning runs it trains (the
λ_f and λ_r sweeps, the paper's point within them, EO on the runs notebook 05 put in the paper's regime), the kept
steps it reads, and all of it decided in one place from the profile (:func:`study_plan`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ... import pipeline, runs
from ...config import Params
from ...metrics import scored as sampled_scores

#: Bump when :func:`utility` or :func:`entropy_along` measure differently.
ENTROPY_VERSION = "1"

#: Table 1 of the paper (Phi-1.5, TOFU forget10) as it reports it: greedy ROUGE-L, the ED score (mean + ρ·sd of the
#: sampled ROUGE-L, ρ = 2; the column the paper heads "ED Score – Mean") and the sd. Its numbers fit greedy + 2·sd
#: (docs/metrics.md §3): the sampled mean is close to greedy and the spread lifts the ED score above it.
PAPER_TABLE1 = {"rmu": (0.70, 0.81, 0.10), "gd": (0.33, 0.42, 0.05), "ga": (0.32, 0.41, 0.05),
                "npo": (0.22, 0.34, 0.06), "npo_eo": (0.20, 0.20, 0.00)}

#: Evaluation sets (roles of :func:`unlearnkit.metrics.tofu.tofu_eval_splits`) whose samples' diversity Fig. 5a shows.
DIVERSITY_ROLES = ("retain", "real_authors", "world_facts")

#: What "EO collapses the forget distribution with little loss" means (:func:`collapses`): sampled sd at most
#: ``SD_NEAR_ZERO`` or cut by ``SD_CUT`` against the method alone, with at least ``UTILITY_KEPT`` of its utility, and
#: still unlearned: greedy ROUGE-L on forget at most ``ROUGE_SLACK`` above the method alone's (a model that stops
#: unlearning is confident too, on the very answer it should forget).
SD_NEAR_ZERO = 0.02
SD_CUT = 0.75
UTILITY_KEPT = 0.9
ROUGE_SLACK = 0.1


class SweepPoint(NamedTuple):
    """One unlearning run of a sweep: its name and the setting it stands for."""

    run: str
    method: str
    lambda_f: float
    lambda_r: float
    lr: float

    @property
    def label(self) -> str:
        return f"λf {self.lambda_f:g}, λr {self.lambda_r:g}, lr {self.lr:g}"


# --------------------------------------------------------------------------- questions and settings


def forget_rows(source, params: Params) -> list[dict[str, Any]]:
    """At most ``eo_max_items`` forget questions, evenly spaced over the split."""
    return sampled_scores.evenly_spaced(source.load(params.forget_split), params.eo_max_items)


# --------------------------------------------------------------------------- runs


def _training_keys(params: Params, run: str) -> dict[str, Any]:
    trained = pipeline.run_params(params, run)
    # Where weights are kept along the way does not change them: a run kept densely for early stopping still serves.
    return {k: trained[k] for k in pipeline.RUN_PARAM_KEYS if k != "unlearn_save_every"}


def sweep_run(params: Params, method: str, lambda_f: float, lambda_r: float,
              lr: float) -> tuple[Params, SweepPoint]:
    """The run that trains ``method`` with entropy weights (λ_f, λ_r) at learning rate ``lr``: a run of the profile
    with exactly these settings when there is one (its model is reused), else a new named run added to
    ``method_settings`` (``npo_f3_r0.25_lr0.0003``). ``method`` is a method or a named run of ``method_settings``
    whose settings the sweep starts from (the paper profile's ``npo_sp``: NPO with the paper's β). Returns the
    parameters that know the run, and the point."""
    if lambda_f < 0 or lambda_r > 0:
        # The run's name carries |λ_r|; the paper's signs (λ_f >= 0, λ_r <= 0) keep it unambiguous.
        raise ValueError(f"entropy optimisation takes lambda_f >= 0 and lambda_r <= 0 (docs/metrics.md §3); "
                         f"got lambda_f={lambda_f}, lambda_r={lambda_r}")
    base = pipeline.own_settings(params, method,
                                 without=("lambda_f", "lambda_r", "unlearn_lr", "unlearn_save_every"))
    settings: dict[str, Any] = {**base, "lambda_f": float(lambda_f), "lambda_r": float(lambda_r)}
    if float(lr) != float(params.unlearn_lr):
        settings["unlearn_lr"] = float(lr)
    name = f"{method}_f{lambda_f:g}_r{abs(lambda_r):g}_lr{lr:g}"
    candidate = pipeline.with_run(params, name, **settings)
    wanted = (pipeline.unlearning_settings(candidate, name), _training_keys(candidate, name))
    for run in dict.fromkeys([*params.methods, *params.method_settings]):
        try:
            same = (pipeline.unlearning_settings(params, run), _training_keys(params, run)) == wanted
        except ValueError:
            continue
        if same:
            return params, SweepPoint(run, base["method"], float(lambda_f), float(lambda_r), float(lr))
    return candidate, SweepPoint(name, base["method"], float(lambda_f), float(lambda_r), float(lr))


def lambda_f_points(params: Params) -> tuple[Params, list[SweepPoint]]:
    """Fig. 4a's grid: ``eo_method`` with each λ_f of ``eo_lambda_f_grid`` (λ_r = ``eo_lambda_r``; both 0 for
    λ_f = 0, the method alone) at each learning rate of ``eo_lr_grid``."""
    points = []
    for lr in params.eo_lr_grid:
        for lambda_f in params.eo_lambda_f_grid:
            lambda_r = params.eo_lambda_r if lambda_f else 0.0
            params, point = sweep_run(params, params.eo_method, lambda_f, lambda_r, lr)
            points.append(point)
    return params, points


#: The paper's forget entropy weight.
PAPER_LAMBDA_F = 1.0


def lambda_r_points(params: Params) -> tuple[Params, list[SweepPoint]]:
    """Fig. 5a's grid: ``eo_method`` with λ_f = 1 (the paper's) and each λ_r of ``eo_lambda_r_grid``, at the
    profile's learning rate."""
    points = []
    for lambda_r in params.eo_lambda_r_grid:
        params, point = sweep_run(params, params.eo_method, PAPER_LAMBDA_F, lambda_r, params.unlearn_lr)
        points.append(point)
    return params, points


def paper_points(points: Sequence[SweepPoint], params: Params) -> tuple[SweepPoint, SweepPoint]:
    """Of the λ_f grid: the paper's setting (λ_f = 1 at the profile's learning rate) and the method alone beside it
    (λ_f = 0, same learning rate). A grid without them is refused with what it holds."""
    found = {(p.lambda_f, p.lr): p for p in points}
    wanted = [(PAPER_LAMBDA_F, float(params.unlearn_lr)), (0.0, float(params.unlearn_lr))]
    missing = [w for w in wanted if w not in found]
    if missing:
        raise ValueError(f"the λ_f grid needs λ_f {PAPER_LAMBDA_F:g} and 0 at the profile's unlearn_lr "
                         f"{params.unlearn_lr:g} (eo_lambda_f_grid, eo_lr_grid); it holds {sorted(found)}")
    return found[wanted[0]], found[wanted[1]]


def train(params: Params, run_names: Sequence[str]) -> None:
    """Each run unlearned (:func:`unlearnkit.pipeline.unlearned_models`, side by side in up to ``jobs`` worker
    processes): trained now unless it is saved with the same parameters (notebook 02's runs, or an earlier run of
    this notebook)."""
    pipeline.unlearned_models(params, run_names)


def model_folders(params: Params, run_names: Sequence[str]) -> dict[str, Any]:
    """``{run: folder}`` of trained runs, for :func:`unlearnkit.studies.sampled_scores.score_models`."""
    return {run: runs.model_dir(params, runs.unlearned_name(run)) for run in run_names}


def score_runs(params: Params, run_names: Sequence[str], rows: Sequence[Mapping[str, Any]],
               settings: Mapping[str, Any], cache_tag: str = "") -> sampled_scores.Scored:
    """Greedy answer, c(x) and n samples of each run's model on ``rows``, scored and cached by notebook 06, side by
    side in up to ``jobs`` worker processes."""
    return sampled_scores.score_models(params, model_folders(params, run_names), rows, settings, runs.ENTROPY,
                                cache_tag)


def kept_step(params: Params, run: str, step: int):
    """The folder of the weights an unlearning run kept at ``step``."""
    kept = dict(runs.trajectory_steps(params, run))
    if step not in kept:
        raise FileNotFoundError(f"run {run!r} of profile {params.profile!r}, seed {params.seed} kept no weights at step {step} (kept: "
                                f"{sorted(kept)[:5]}...): its unlearn_save_every does not divide {step}")
    return kept[step]


class RegimePoint(NamedTuple):
    """One EO run added to an in-regime run: the base run (``npo_mild``), its method, λ_f, λ_r, where the entropy
    is taken (``answer``, ``all``, ``sampled``) and the step compared (the base run's regime step); λ_f = 0 is the
    base run alone."""

    run: str
    base: str
    method: str
    lambda_f: float
    lambda_r: float
    positions: str
    step: int

    @property
    def label(self) -> str:
        return f"{self.run}@{self.step}"

    def folder(self, params: Params):
        return kept_step(params, self.run, self.step)


# --------------------------------------------------------------------------- EO where the paper's models are


def regime_of_leakage(params: Params) -> dict[str, tuple[str, int]]:
    """The models of the paper's regime that notebook 05 found: ``{label: (run, step)}``, e.g.
    ``{"npo_mild@18": ("npo_mild", 18)}``, from its metrics.json (run notebook 05 first). A run whose greedy leak
    rate never came down to the retain model's (``reached`` false: notebook 05 took its lowest step instead) is not in
    the regime, and is left out."""
    meta = runs.read_metrics(params, runs.LEAKAGE)["meta"]
    return {label: (str(m["run"]), int(m["step"])) for label, m in (meta.get("regime") or {}).items()
            if m.get("reached", True)}


def regime_eo_points(params: Params, regime: Mapping[str, tuple[str, int]]) -> tuple[Params, list[RegimePoint]]:
    """EO added where the paper's models are: each run of ``eo_regime_runs`` that notebook 05 put in the regime,
    alone (λ_f 0) and with each λ_f of ``eo_regime_lambda_f_grid`` (λ_r = ``eo_lambda_r``) at each entropy placement
    of ``eo_positions``, on the run's own schedule and learning rate, compared at its regime step (the EO runs keep
    their weights every that many steps). Returns the parameters that know the new runs, and the points."""
    steps = {run: step for run, step in regime.values()}
    points = []
    for base in params.eo_regime_runs:
        if base not in steps:
            continue
        step = steps[base]
        own = pipeline.own_settings(params, base,
                                    without=("lambda_f", "lambda_r", "entropy_positions", "unlearn_save_every"))
        method = pipeline.unlearning_settings(params, base)["method"]
        points.append(RegimePoint(base, base, method, 0.0, 0.0, "none", step))
        for lambda_f in params.eo_regime_lambda_f_grid:
            for positions in params.eo_positions:
                name = f"{base}_eo{lambda_f:g}_{positions}"
                params = pipeline.with_run(params, name, **{**own, "lambda_f": float(lambda_f),
                                                            "lambda_r": float(params.eo_lambda_r),
                                                            "entropy_positions": positions,
                                                            "unlearn_save_every": int(step)})
                points.append(RegimePoint(name, base, method, float(lambda_f), float(params.eo_lambda_r), positions,
                                          step))
    return params, points



# --------------------------------------------------------------------------- the plan


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
