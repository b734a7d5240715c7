"""The models in the paper's regime: along each gentler unlearning run, the first kept step where greedy decoding
leaks no more than the retain model."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
from tqdm.auto import tqdm

from ... import models, pipeline, runs, stations, workers
from ...config import Params
from ...generation import greedy_answers
from ...metrics.judges import leak_judge
from ...metrics.sampling import leak_keys
from ...metrics.scored import Scored, retain_rows
from ...metrics.tofu import rouge_l

# --------------------------------------------------------------------------- models in the paper's regime

#: Bump when :func:`greedy_along` measures differently.
REGIME_VERSION = "1"


class RegimeModel(NamedTuple):
    """The step of one unlearning run where greedy decoding first says "unlearned" as often as the retain model
    does, and the run's path to it."""

    run: str
    step: int
    folder: Path
    greedy_leak_rate: float  # at the chosen step, on the sampled forget questions
    reference_rate: float  # the retain model's greedy leak rate on the same questions
    retain_rouge: float  # greedy ROUGE-L recall on retain questions at the chosen step: what utility is left
    reached: bool  # False: no kept step got down to the reference rate (the last step is taken)
    path: pd.DataFrame  # per kept step: greedy_leak_rate, forget_rouge, retain_rouge

    @property
    def label(self) -> str:
        return f"{self.run}@{self.step}"


def coarse_then_fine(count: int, rate: Callable[[int], float], threshold: float, stride: int = 5) -> list[int]:
    """The indices (of ``count`` kept steps) at which ``rate`` is measured to find the first at or below
    ``threshold``: every ``stride``-th and the last, then every one between the last coarse index above the
    threshold and the first coarse index at or below it. Returns the measured indices in order."""
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    coarse = sorted({*range(0, count, stride), count - 1})
    rates = {i: rate(i) for i in coarse}
    hit = next((j for j, i in enumerate(coarse) if rates[i] <= threshold + 1e-12), None)
    if hit:
        for i in range(coarse[hit - 1] + 1, coarse[hit]):
            rates[i] = rate(i)
    return sorted(rates)


def greedy_along(params: Params, run: str, rows: Sequence[Mapping[str, Any]],
                 retain: Sequence[Mapping[str, Any]], threshold: float | None = None,
                 stride: int = 5) -> pd.DataFrame:
    """Along the steps kept by an unlearning run: the greedy leak rate (key entity in the greedy answer) on the
    forget ``rows`` and greedy ROUGE-L recall on them and on ``retain``, cached by the kept models' identities.

    Without ``threshold`` every kept step is measured. With it, coarse then fine: every ``stride``-th kept step
    (and the last), then every step between the last coarse step above ``threshold`` and the first at or below
    it, which finds the first step at or below it at a fraction of the cost when the rate falls along the run
    (a dip below it between two coarse steps before that one goes unseen)."""
    steps = runs.trajectory_steps(params, run)
    if not steps:
        raise FileNotFoundError(f"no weights kept along the unlearning run {run!r} of profile {params.profile!r}, seed {params.seed}: "
                                f"{runs.trajectory_dir(params, run)} is empty (unlearn_save_every: 0?)")
    keys = leak_keys(rows)

    def at(step: int, folder: Path) -> dict[str, Any]:
        model, tokenizer, template = models.load_model(folder, dtype="float32", template=None)
        with models.cpu_threads(model):
            # as long as the sampled answers, so that the greedy pass of the sampling agrees with this one
            forget = greedy_answers(model, tokenizer, template, [r["question"] for r in rows],
                                    params.sample_max_new_tokens, params.eval_batch_size)
            kept = greedy_answers(model, tokenizer, template, [r["question"] for r in retain],
                                  params.sample_max_new_tokens, params.eval_batch_size)
        return {"step": step, "greedy_leak_rate": float(leak_judge([[a] for a in forget], keys).mean()),
                "forget_rouge": float(rouge_l([r["answer"] for r in rows], forget).mean()),
                "retain_rouge": float(rouge_l([r["answer"] for r in retain], kept).mean())}

    def measure() -> list[dict[str, Any]]:
        done: dict[int, dict[str, Any]] = {}
        with tqdm(desc=f"greedy along {run}", disable=not stations.show_progress()) as bar:
            def rate(i: int) -> float:
                done[i] = at(*steps[i])
                bar.update()
                return done[i]["greedy_leak_rate"]

            if threshold is None:
                for i in range(len(steps)):
                    rate(i)
            else:
                coarse_then_fine(len(steps), rate, threshold, stride)
        return [done[i] for i in sorted(done)]

    depends_on = {"steps": [runs.model_identity(folder) for _, folder in steps], "rows": [dict(r) for r in rows],
                  "retain": [dict(r) for r in retain], "max_new_tokens": params.sample_max_new_tokens,
                  "threshold": threshold, "stride": stride}
    records = runs.cached_json(params, runs.LEAKAGE, f"along-{run}", depends_on, measure, REGIME_VERSION)
    return pd.DataFrame(records).set_index("step")


def choose_regime_step(path: pd.DataFrame, reference_rate: float, tolerance: float = 0.0) -> tuple[int, bool]:
    """The first kept step whose greedy leak rate is at most the reference's (+ ``tolerance``), and True; else the
    step with the lowest rate (the latest of ties) and False."""
    hit = path.index[path["greedy_leak_rate"] <= reference_rate + tolerance + 1e-12]
    if len(hit):
        return int(hit[0]), True
    lowest = path["greedy_leak_rate"].min()
    return int(path.index[path["greedy_leak_rate"] == lowest][-1]), False


def regime_models(params: Params, rows: Sequence[Mapping[str, Any]],
                  reference_rate: float) -> dict[str, RegimeModel]:
    """One :class:`RegimeModel` per run of ``regime_runs`` (trained by :func:`unlearnkit.pipeline.unlearned_model`
    if it is not saved yet, e.g. a milder run of ``method_settings``), keyed by its label ``<run>@<step>``."""
    jobs = params.jobs
    retain = retain_rows(pipeline.corpus(params), params, params.sample_max_items)  # as many as forget questions
    found = workers.side_by_side(_regime_model, [(params, run, rows, retain, reference_rate)
                                                for run in params.regime_runs], jobs, desc="regime")
    return {model.label: model for model in found}


def _regime_model(params: Params, run: str, rows: Sequence[Mapping[str, Any]],
                  retain: Sequence[Mapping[str, Any]], reference_rate: float) -> RegimeModel:
    """One run of :func:`regime_models`: trained if need be, then its path of greedy leak rates and its step."""
    pipeline.unlearned_model(params, run)
    path = greedy_along(params, run, rows, retain, threshold=reference_rate + params.regime_tolerance)
    step, reached = choose_regime_step(path, reference_rate, params.regime_tolerance)
    folder = dict(runs.trajectory_steps(params, run))[step]
    return RegimeModel(run, step, folder, float(path.loc[step, "greedy_leak_rate"]), float(reference_rate),
                       float(path.loc[step, "retain_rouge"]), reached, path)


def regime_overview(chosen: Mapping[str, RegimeModel]) -> pd.DataFrame:
    """The chosen step of each run, its greedy leak rate against the retain model's, and the utility left."""
    return pd.DataFrame({label: {"run": m.run, "step": m.step, "greedy leak rate": m.greedy_leak_rate,
                                 "retain model's greedy leak rate": m.reference_rate,
                                 "forget ROUGE-L (greedy)": float(m.path.loc[m.step, "forget_rouge"]),
                                 "retain ROUGE-L (greedy)": m.retain_rouge,
                                 "retain ROUGE-L before unlearning": float(m.path["retain_rouge"].iloc[0]),
                                 "reached": m.reached}
                         for label, m in chosen.items()}).T


def scoring_overview(scored: Scored) -> pd.DataFrame:
    """Per model: seconds, greedy and mean sampled ROUGE-L, greedy and sampled leak rate."""
    return pd.DataFrame({name: {"seconds": scored.seconds[name], "greedy ROUGE-L": r.greedy_rouge.mean(),
                                "sampled ROUGE-L": r.rouge.mean(), "greedy leak rate": r.greedy_leak.mean(),
                                "sampled leak rate": r.leak.mean()}
                         for name, r in scored.results.items()}).T
