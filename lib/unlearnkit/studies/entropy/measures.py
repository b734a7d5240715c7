"""What notebook 06 measures on each run: sampled scores, utility, entropy along a run, diversity, temperature, the
ED score; and the tables built from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ... import bounds, models, runs, stations, workers
from ...config import Params
from ...metrics import scored as sampled_scores
from ...metrics.entropy import answer_measures
from ...metrics.sampling import SampledScores, adaptive_view, sampling_settings
from ...metrics.tofu import evaluate_tofu, tofu_eval_splits
from .plan import DIVERSITY_ROLES, ENTROPY_VERSION, SweepPoint, model_folders

# --------------------------------------------------------------------------- measures


def utility(params: Params, run_names: Sequence[str], source) -> dict[str, float]:
    """TOFU model utility of each run's model on the first ``eo_utility_items`` items of retain, real authors and
    world facts (fewer than notebook 02's ``eval_max_items``, so that every sweep point gets one), cached; side by
    side in up to ``jobs`` worker processes."""
    jobs = params.jobs
    found = workers.side_by_side(_utility_of, [(params, run, source) for run in run_names], jobs,
                                desc="utility")
    return dict(zip(run_names, found))


def _utility_of(params: Params, run: str, source) -> float:
    return utility_of_folder(params, run, runs.model_dir(params, runs.unlearned_name(run)), source)


def utility_of_folder(params: Params, run: str, folder, source) -> float:
    """:func:`utility` of the model in ``folder`` (a saved model or a step kept along a run), cached under ``run``."""
    def measure() -> dict[str, Any]:
        model, tokenizer, template = models.load_model(folder, dtype="float32", template=None)
        with models.cpu_threads(model):
            results, _ = evaluate_tofu(model, tokenizer, template, source, params.forget_split,
                                       max_items=params.eo_utility_items, batch_size=params.eval_batch_size,
                                       max_new_tokens=params.max_new_tokens, splits=("retain", "real_authors", "world_facts"),
                                       truth_ratio_guard=params.truth_ratio_guard, answer_tokens=params.answer_tokens)
        return results["summary"]

    depends_on = {"model": runs.model_identity(folder), "items": params.eo_utility_items,
                  "forget_split": params.forget_split, "max_new_tokens": params.max_new_tokens,
                  **_ou_options(params)}
    return float(runs.cached_json(params, runs.ENTROPY, f"utility-{run}", depends_on, measure,
                                  ENTROPY_VERSION)["model_utility"])


def _ou_options(params: Params) -> dict[str, str]:
    """open-unlearning's scoring options where they differ from the workbook's defaults (a cache key names them only
    then, so the defaults' keys stay what they were)."""
    return {k: params[k] for k, default in (("truth_ratio_guard", "exact"), ("answer_tokens", "separate"))
            if params[k] != default}


def entropy_along(params: Params, run: str, forget: Sequence[Mapping[str, Any]],
                  retain: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Fig. 5b: the mean answer entropy and token confidence (:func:`unlearnkit.metrics.entropy.answer_measures`) on
    forget and on retain questions at step 0 (the target) and at every step kept along an unlearning run; columns
    forget, retain (entropy), forget_confidence, retain_confidence. Cached by the kept models' identities."""
    steps = [(0, runs.model_dir(params, "target")), *runs.trajectory_steps(params, run)]

    def measure() -> list[dict[str, Any]]:
        records = []
        for step, folder in tqdm(steps, desc=f"entropy along {run}", disable=not stations.show_progress()):
            model, tokenizer, template = models.load_model(folder, dtype="float32", template=None)
            with models.cpu_threads(model):
                found = {role: answer_measures(model, tokenizer, template, rows_, params.eval_batch_size)
                         for role, rows_ in (("forget", forget), ("retain", retain))}
                records.append({"step": step, "forget": found["forget"]["entropy"], "retain": found["retain"]["entropy"],
                                "forget_confidence": found["forget"]["confidence"],
                                "retain_confidence": found["retain"]["confidence"]})
        return records

    depends_on = {"steps": [runs.model_identity(f) for _, f in steps], "forget": [r["question"] for r in forget],
                  "retain": [r["question"] for r in retain], "measures": ["entropy", "confidence"]}
    records = runs.cached_json(params, runs.ENTROPY, f"entropy-{run}", depends_on, measure, ENTROPY_VERSION)
    return pd.DataFrame(records).set_index("step")


def entropy_along_runs(params: Params, run_names: Sequence[str], forget: Sequence[Mapping[str, Any]],
                       retain: Sequence[Mapping[str, Any]]) -> dict[str, pd.DataFrame]:
    """:func:`entropy_along` of each run, side by side in up to ``jobs`` worker processes."""
    jobs = params.jobs
    names = list(dict.fromkeys(run_names))
    found = workers.side_by_side(entropy_along, [(params, run, forget, retain)
                                                for run in names], jobs, desc="entropy along")
    return dict(zip(names, found))


def diversity_rows(params: Params, source, role: str) -> list[dict[str, Any]]:
    """The ``eo_diversity_items`` questions of one evaluation set (a role of :data:`DIVERSITY_ROLES`), evenly spaced."""
    return sampled_scores.evenly_spaced(source.load(tofu_eval_splits(params.forget_split)[role][1]),
                                        params.eo_diversity_items)


def diversity(params: Params, run_names: Sequence[str], source, c_t: float | None = None) -> pd.DataFrame:
    """Fig. 5a: mean self-BLEU of each run's samples on ``eo_diversity_items`` questions of retain, real authors
    and world facts (1 = all samples identical). Rows: runs; columns: sets. Every (set, run) side by side in up to
    ``jobs`` worker processes. With ``c_t`` (the profile's ``adaptive_threshold``): the same samples under adaptive temperature at that c_T
    (a question whose certainty exceeds it is answered greedily, all its answers one: self-BLEU 1;
    :func:`unlearnkit.metrics.sampling.adaptive_view`, equal to sampling with adaptive temperature), from the same
    cached samples."""
    settings = sampling_settings(params, "entropy")
    folders = model_folders(params, run_names)
    tasks = []
    for role in DIVERSITY_ROLES:
        rows = diversity_rows(params, source, role)
        tasks += [(run, folders[run], rows, settings, f".{role}") for run in run_names]
    scored = sampled_scores.score_many(params, tasks, runs.ENTROPY)

    def self_bleu(r: SampledScores) -> float:
        view = r if c_t is None else adaptive_view(r, c_t).scores
        return float(np.nanmean(view.self_bleu))

    return pd.DataFrame({role: {run: self_bleu(r) for run, r in found.results.items()}
                         for role, found in zip(DIVERSITY_ROLES, scored)})


def temperature_sweep(params: Params, run_names: Sequence[str], rows: Sequence[Mapping[str, Any]],
                      tag: str = "") -> dict[float, dict[str, SampledScores]]:
    """Fig. 4b: the same models sampled at each temperature of ``eo_temperatures`` -> {T: {run: scores}}; every
    (temperature, run) side by side in up to ``jobs`` worker processes. ``tag`` names the question set in the cache
    (``.retain``: the retain questions of :func:`diversity`, whose samples at the profile's temperature it reuses)."""
    folders = model_folders(params, run_names)
    temperatures = [float(t) for t in dict.fromkeys(params.eo_temperatures)]
    tasks = []
    for temperature in temperatures:
        settings = sampling_settings(params, "entropy", temperature)
        suffix = "" if temperature == float(params.sample_temperature) else f".T{temperature:g}"
        tasks += [(run, folders[run], rows, settings, tag + suffix) for run in run_names]
    scored = sampled_scores.score_many(params, tasks, runs.ENTROPY)
    return {temperature: found.results for temperature, found in zip(temperatures, scored)}


def temperature_table(sweep: Mapping[float, Mapping[str, SampledScores]]) -> pd.DataFrame:
    """Per run and temperature: :func:`sample_stats` of its samples."""
    records = [{"run": run, "temperature": temperature, **sample_stats(r)}
               for temperature, results in sweep.items() for run, r in results.items()]
    return pd.DataFrame(records).set_index(["run", "temperature"])


def ed_score(result: SampledScores, rho: float) -> float:
    """The paper's ED score on forget: per question the sampled ROUGE-L's mean + ρ·sd (sd normalised by 1/n,
    :func:`unlearnkit.bounds.ed_score`), averaged over questions (Scholten et al. §4.3; docs/metrics.md §3)."""
    return float(np.mean(bounds.ed_score(np.atleast_2d(result.rouge), rho)))


# --------------------------------------------------------------------------- tables


def sample_stats(result: SampledScores) -> dict[str, float]:
    """Greedy ROUGE-L, the ED mean and sd (1/n) of the sampled ROUGE-L, the leak rate, certainty and self-BLEU of
    the samples, each averaged over questions."""
    return {"greedy ROUGE-L": float(result.greedy_rouge.mean()),
            "ED mean": float(result.rouge.mean(axis=1).mean()), "ED sd": float(result.rouge.std(axis=1).mean()),
            "leak rate": float(result.leak.mean()), "certainty": float(result.certainty.mean()),
            "self-BLEU": float(np.nanmean(result.self_bleu))}


def model_row(result: SampledScores, alpha: float, rho: float) -> dict[str, float]:
    """Table 1's columns for one model: :func:`sample_stats`, the ED score with ``rho`` (:func:`ed_score`) and the
    bounds M_bin (leak judge), M_μ (upper expectation bound) and M_σ (std bound), each at level ``alpha`` per
    question and averaged over questions."""
    _, upper = bounds.expectation_bounds(result.rouge, alpha)
    return {**sample_stats(result), "ED score": ed_score(result, rho),
            "M_bin": float(bounds.binary_leakage_bound(result.leak, alpha).mean()),
            "M_mu": float(upper.mean()), "M_sigma": float(bounds.std_bound(result.rouge, alpha).mean())}


def sweep_table(points: Sequence[SweepPoint], results: Mapping[str, SampledScores],
                utilities: Mapping[str, float], alpha: float, rho: float) -> pd.DataFrame:
    """One row per sweep point: its setting, :func:`model_row` of its samples and its model utility."""
    records = [{"run": p.run, "lambda_f": p.lambda_f, "lambda_r": p.lambda_r, "lr": p.lr,
                **model_row(results[p.run], alpha, rho), "model utility": utilities.get(p.run)} for p in points]
    return pd.DataFrame(records).set_index("run")


def adaptive_sweep(results: Mapping[str, SampledScores], thresholds: Sequence[float], alpha: float) -> pd.DataFrame:
    """Per model and c_T: the share of questions decoded greedily, the leak rate and mean M_bin of the adaptive
    outputs (rebuilt from the same samples, :func:`unlearnkit.metrics.sampling.adaptive_view`), and the same at
    plain sampling (c_T = 1 never goes greedy) for comparison."""
    records = []
    for run, result in results.items():
        plain = float(bounds.binary_leakage_bound(result.leak, alpha).mean())
        for threshold in thresholds:
            view = adaptive_view(result, threshold)
            records.append({"run": run, "c_T": float(threshold), "greedy share": float(view.went_greedy.mean()),
                            "leak rate": float(view.scores.leak.mean()),
                            "M_bin": float(bounds.binary_leakage_bound(view.scores.leak, alpha).mean()),
                            "M_bin sampling": plain,
                            "ED sd": float(view.scores.rouge.std(axis=1).mean())})
    return pd.DataFrame(records).set_index(["run", "c_T"])
