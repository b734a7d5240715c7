"""Entropy optimisation and adaptive temperature (Scholten et al., "A Probabilistic Perspective on Unlearning and
Alignment for Large Language Models", section 5; docs/metrics.md section 3).

The paper's finding: adding λ_f · E_forget[entropy] (+ λ_r · E_retain[entropy], λ_r ≤ 0) to an unlearning loss
makes the model confident on forget questions, so its sampled answers collapse onto one (sd of the sampled
ROUGE-L near 0) with little loss of utility or of diversity elsewhere; and adaptive temperature (decode greedily
where the model is certain) then bounds what sampling can leak. This module trains and samples what the
notebook shows:

1. **Runs.** The Table 1 runs (``eo_table_runs``), the λ_f sweep of ``eo_method`` at each learning rate of
   ``eo_lr_grid`` (:func:`lambda_f_points`) and the λ_r sweep (:func:`lambda_r_points`). A sweep point that
   equals a run of the profile (``npo`` is λ_f = 0; ``npo_eo`` is λ_f = 1, λ_r = −0.25) reuses that run's model;
   the others are named runs of their own (:func:`sweep_run`), trained once and cached.
2. **Samples.** ``eo_n_samples`` answers to ``eo_max_items`` forget questions per model, scored as in
   notebook 05 (:func:`score_runs`, cached under ``runs/<profile>/seed-<s>/06_entropy_optimisation/cache``).
3. **Measures.** Model utility on ``eo_utility_items`` items per set (:func:`utility`); the mean next-token
   entropy on forget and retain answers along a run (:func:`entropy_along`); self-BLEU of samples on retain,
   real authors and world facts (:func:`diversity`); the same models at other temperatures
   (:func:`temperature_sweep`); the c_T sweep of adaptive temperature (:func:`adaptive_sweep`).
4. **Verdicts** computed from those numbers (:func:`eo_verdict`, :func:`adaptive_verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .. import bounds, config, models, pipeline, runs, stations, workers
from ..claims import NO_TEST, SCHOLTEN, Finding, Quantity, outcome_from_label
from ..config import Params
from ..metrics.sampling import SampledScores, adaptive_view, with_sampler
from ..metrics.tofu import evaluate_tofu, tofu_eval_splits
from ..unlearning import answer_positions, mean_entropy
from . import leakage

#: Bump when :func:`utility` or :func:`entropy_along` measure differently.
ENTROPY_VERSION = "1"

#: Table 1 of the paper (Phi-1.5, TOFU forget10) as it reports it: greedy ROUGE-L, the ED score (mean + ρ·sd of the
#: sampled ROUGE-L, ρ = 2; the column the paper heads "ED Score – Mean") and the sd. Its numbers fit greedy + 2·sd
#: (docs/metrics.md §3): the sampled mean is close to greedy and the spread lifts the ED score above it.
PAPER_TABLE1 = {"rmu": (0.70, 0.81, 0.10), "gd": (0.33, 0.42, 0.05), "ga": (0.32, 0.41, 0.05),
                "npo": (0.22, 0.34, 0.06), "npo_eo": (0.20, 0.20, 0.00)}

#: Evaluation sets (roles of :func:`unlearnkit.metrics.tofu.tofu_eval_splits`) whose samples' diversity Fig. 5a shows.
DIVERSITY_ROLES = ("retain", "real_authors", "world_facts")

#: What "EO collapses the forget distribution with little loss" means in the verdict: sampled sd at most
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


def sampling_settings(params: Mapping[str, Any], temperature: float | None = None) -> dict[str, Any]:
    """The sampling arguments of notebook 06: ``eo_n_samples`` answers at ``sample_temperature`` (or
    ``temperature``), the profile's top-p and answer length, and its ``sampler`` when it is not hf."""
    params = config.as_params(params)
    return with_sampler({"n": int(params.eo_n_samples),
                         "temperature": float(params.sample_temperature if temperature is None else temperature),
                         "top_p": params.sample_top_p, "max_new_tokens": int(params.sample_max_new_tokens),
                         "seed": int(params.seed)}, params.sampler)


def forget_rows(source, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """At most ``eo_max_items`` forget questions, evenly spaced over the split."""
    params = config.as_params(params)
    return leakage.evenly_spaced(source.load(params.forget_split), params.eo_max_items)


# --------------------------------------------------------------------------- runs


def _training_keys(params: Params, run: str) -> dict[str, Any]:
    trained = pipeline.run_params(params, run)
    # Where weights are kept along the way does not change them: a run kept densely for early stopping still serves.
    return {k: trained[k] for k in pipeline.RUN_PARAM_KEYS if k != "unlearn_save_every"}


def sweep_run(params: Mapping[str, Any], method: str, lambda_f: float, lambda_r: float,
              lr: float) -> tuple[Params, SweepPoint]:
    """The run that trains ``method`` with entropy weights (λ_f, λ_r) at learning rate ``lr``: a run of the profile
    with exactly these settings when there is one (its model is reused), else a new named run added to
    ``method_settings`` (``npo_f3_r0.25_lr0.0003``). ``method`` is a method or a named run of ``method_settings``
    whose settings the sweep starts from (the paper profile's ``npo_sp``: NPO with the paper's β). Returns the
    parameters that know the run, and the point."""
    params = config.as_params(params)
    if lambda_f < 0 or lambda_r > 0:
        # The run's name carries |λ_r|; the paper's signs (λ_f >= 0, λ_r <= 0) keep it unambiguous.
        raise ValueError(f"entropy optimisation takes lambda_f >= 0 and lambda_r <= 0 (docs/metrics.md §3); "
                         f"got lambda_f={lambda_f}, lambda_r={lambda_r}")
    base = {k: v for k, v in params.method_settings.get(method, {"method": method}).items()
            if k not in ("lambda_f", "lambda_r", "unlearn_lr", "unlearn_save_every")}
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


def lambda_f_points(params: Mapping[str, Any]) -> tuple[Params, list[SweepPoint]]:
    """Fig. 4a's grid: ``eo_method`` with each λ_f of ``eo_lambda_f_grid`` (λ_r = ``eo_lambda_r``; both 0 for
    λ_f = 0, the method alone) at each learning rate of ``eo_lr_grid``."""
    params = config.as_params(params)
    points = []
    for lr in params.eo_lr_grid:
        for lambda_f in params.eo_lambda_f_grid:
            lambda_r = params.eo_lambda_r if lambda_f else 0.0
            params, point = sweep_run(params, params.eo_method, lambda_f, lambda_r, lr)
            points.append(point)
    return params, points


def lambda_r_points(params: Mapping[str, Any], lambda_f: float = 1.0) -> tuple[Params, list[SweepPoint]]:
    """Fig. 5a's grid: ``eo_method`` with λ_f = 1 (the paper's) and each λ_r of ``eo_lambda_r_grid``, at the
    profile's learning rate."""
    params = config.as_params(params)
    points = []
    for lambda_r in params.eo_lambda_r_grid:
        params, point = sweep_run(params, params.eo_method, lambda_f, lambda_r, params.unlearn_lr)
        points.append(point)
    return params, points


#: The paper's forget entropy weight.
PAPER_LAMBDA_F = 1.0


def paper_points(points: Sequence[SweepPoint], params: Mapping[str, Any]) -> tuple[SweepPoint, SweepPoint]:
    """Of the λ_f grid: the paper's setting (λ_f = 1 at the profile's learning rate) and the method alone beside it
    (λ_f = 0, same learning rate). A grid without them is refused with what it holds."""
    params = config.as_params(params)
    found = {(p.lambda_f, p.lr): p for p in points}
    wanted = [(PAPER_LAMBDA_F, float(params.unlearn_lr)), (0.0, float(params.unlearn_lr))]
    missing = [w for w in wanted if w not in found]
    if missing:
        raise ValueError(f"the λ_f grid needs λ_f {PAPER_LAMBDA_F:g} and 0 at the profile's unlearn_lr "
                         f"{params.unlearn_lr:g} (eo_lambda_f_grid, eo_lr_grid); it holds {sorted(found)}")
    return found[wanted[0]], found[wanted[1]]


def train(params: Mapping[str, Any], run_names: Sequence[str], jobs: int | None = 1) -> None:
    """Each run unlearned (:func:`unlearnkit.pipeline.unlearned_models`, side by side in up to ``jobs`` worker
    processes): trained now unless it is saved with the same parameters (notebook 02's runs, or an earlier run of
    this notebook)."""
    pipeline.unlearned_models(params, run_names, jobs)


def model_folders(params: Params, run_names: Sequence[str]) -> dict[str, Any]:
    """``{run: folder}`` of trained runs, for :func:`unlearnkit.studies.leakage.score_models`."""
    return {run: runs.model_dir(params, runs.unlearned_name(run)) for run in run_names}


def score_runs(params: Params, run_names: Sequence[str], rows: Sequence[Mapping[str, Any]],
               settings: Mapping[str, Any], cache_tag: str = "", jobs: int | None = 1) -> leakage.Scored:
    """Greedy answer, c(x) and n samples of each run's model on ``rows``, scored and cached by notebook 06, side by
    side in up to ``jobs`` worker processes."""
    return leakage.score_models(params, model_folders(params, run_names), rows, settings, runs.ENTROPY,
                                cache_tag, jobs)


# --------------------------------------------------------------------------- measures


def utility(params: Mapping[str, Any], run_names: Sequence[str], source,
            jobs: int | None = 1) -> dict[str, float]:
    """TOFU model utility of each run's model on the first ``eo_utility_items`` items of retain, real authors and
    world facts (fewer than notebook 02's ``eval_max_items``, so that every sweep point gets one), cached; side by
    side in up to ``jobs`` worker processes."""
    params = config.as_params(params)
    found = workers.side_by_side(_utility_of, [(params, run, source) for run in run_names], jobs,
                                desc="utility")
    return dict(zip(run_names, found))


def _utility_of(params: Params, run: str, source) -> float:
    return _utility_of_folder(params, run, runs.model_dir(params, runs.unlearned_name(run)), source)


def _utility_of_folder(params: Params, run: str, folder, source) -> float:
    def measure() -> dict[str, Any]:
        model, tokenizer, template = models.load_model(folder)
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


@torch.no_grad()
def answer_entropy(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], batch_size: int = 32) -> float:
    """Mean over ``rows`` of the mean next-token entropy at the positions that predict the ground-truth answer
    (teacher-forced): the quantity ℓ that entropy optimisation minimises on forget and maximises on retain."""
    model.eval()
    encoded = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    values = []
    for start in range(0, len(encoded), batch_size):
        batch = models.collate(encoded[start:start + batch_size], tokenizer.pad_token_id)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        values.append(mean_entropy(logits, answer_positions(batch["labels"])))
    return float(torch.cat(values).mean())


def entropy_along(params: Mapping[str, Any], run: str, forget: Sequence[Mapping[str, Any]],
                  retain: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Fig. 5b: the mean answer entropy on forget and on retain questions at step 0 (the target) and at every step
    kept along an unlearning run. Cached by the kept models' identities."""
    params = config.as_params(params)
    steps = [(0, runs.model_dir(params, "target")), *runs.trajectory_steps(params, run)]

    def measure() -> list[dict[str, Any]]:
        records = []
        for step, folder in tqdm(steps, desc=f"entropy along {run}", disable=not stations.show_progress()):
            model, tokenizer, template = models.load_model(folder)
            with models.cpu_threads(model):
                records.append({"step": step,
                                "forget": answer_entropy(model, tokenizer, template, forget, params.eval_batch_size),
                                "retain": answer_entropy(model, tokenizer, template, retain, params.eval_batch_size)})
        return records

    depends_on = {"steps": [runs.model_identity(f) for _, f in steps], "forget": [r["question"] for r in forget],
                  "retain": [r["question"] for r in retain]}
    records = runs.cached_json(params, runs.ENTROPY, f"entropy-{run}", depends_on, measure, ENTROPY_VERSION)
    return pd.DataFrame(records).set_index("step")


def entropy_along_runs(params: Mapping[str, Any], run_names: Sequence[str], forget: Sequence[Mapping[str, Any]],
                       retain: Sequence[Mapping[str, Any]], jobs: int | None = 1) -> dict[str, pd.DataFrame]:
    """:func:`entropy_along` of each run, side by side in up to ``jobs`` worker processes."""
    names = list(dict.fromkeys(run_names))
    found = workers.side_by_side(entropy_along, [(config.as_params(params), run, forget, retain)
                                                for run in names], jobs, desc="entropy along")
    return dict(zip(names, found))


def diversity(params: Mapping[str, Any], run_names: Sequence[str], source,
              jobs: int | None = 1) -> pd.DataFrame:
    """Fig. 5a: mean self-BLEU of each run's samples on ``eo_diversity_items`` questions of retain, real authors
    and world facts (1 = all samples identical). Rows: runs; columns: sets. Every (set, run) side by side in up to
    ``jobs`` worker processes."""
    params = config.as_params(params)
    settings = sampling_settings(params)
    files = tofu_eval_splits(params.forget_split)
    folders = model_folders(params, run_names)
    tasks = []
    for role in DIVERSITY_ROLES:
        rows = leakage.evenly_spaced(source.load(files[role][1]), params.eo_diversity_items)
        tasks += [(run, folders[run], rows, settings, f".{role}") for run in run_names]
    scored = leakage.score_many(params, tasks, runs.ENTROPY, jobs)
    return pd.DataFrame({role: {run: float(np.nanmean(r.self_bleu)) for run, r in found.results.items()}
                         for role, found in zip(DIVERSITY_ROLES, scored)})


def temperature_sweep(params: Mapping[str, Any], run_names: Sequence[str], rows: Sequence[Mapping[str, Any]],
                      jobs: int | None = 1) -> dict[float, dict[str, SampledScores]]:
    """Fig. 4b: the same models sampled at each temperature of ``eo_temperatures`` -> {T: {run: scores}}; every
    (temperature, run) side by side in up to ``jobs`` worker processes."""
    params = config.as_params(params)
    folders = model_folders(params, run_names)
    temperatures = [float(t) for t in dict.fromkeys(params.eo_temperatures)]
    tasks = []
    for temperature in temperatures:
        settings = sampling_settings(params, temperature)
        tag = "" if temperature == float(params.sample_temperature) else f".T{temperature:g}"
        tasks += [(run, folders[run], rows, settings, tag) for run in run_names]
    scored = leakage.score_many(params, tasks, runs.ENTROPY, jobs)
    return {temperature: found.results for temperature, found in zip(temperatures, scored)}


def temperature_table(sweep: Mapping[float, Mapping[str, SampledScores]]) -> pd.DataFrame:
    """Per run and temperature: :func:`sample_stats` of its samples."""
    records = [{"run": run, "temperature": temperature, **sample_stats(r)}
               for temperature, results in sweep.items() for run, r in results.items()]
    return pd.DataFrame(records).set_index(["run", "temperature"])


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


# --------------------------------------------------------------------------- verdicts


class Verdict(NamedTuple):
    label: str  # reproduced / elsewhere / not
    text: str
    quantities: tuple[Quantity, ...] = ()  # the deciding quantities, as the finding stores them
    parts: tuple[tuple[str, bool], ...] = ()  # each case judged (a model, a point of the grid) and whether it holds


def _collapses(row: pd.Series, alone: pd.Series) -> bool:
    sd_ok = row["ED sd"] <= SD_NEAR_ZERO or row["ED sd"] <= (1 - SD_CUT) * alone["ED sd"]
    utility_ok = (row["model utility"] or 0.0) >= UTILITY_KEPT * (alone["model utility"] or 0.0)
    unlearned = row["greedy ROUGE-L"] <= alone["greedy ROUGE-L"] + ROUGE_SLACK
    return bool(sd_ok and utility_ok and unlearned)


def _against_alone(frame: pd.DataFrame, by: str):
    """Per group of ``frame`` by ``by`` (a learning rate, a base run): the group's value, its run alone (λ_f = 0) and
    its points with EO; a group without the run alone is left out."""
    for value, group in frame.groupby(by, sort=False):
        alone = group[group["lambda_f"] == 0]
        if len(alone):
            yield value, alone.iloc[0], group[group["lambda_f"] > 0]


def eo_verdict(sweep: pd.DataFrame, paper_lambda_f: float, paper_lr: float) -> Verdict:
    """Does entropy optimisation collapse the forget distribution with little loss of utility? A point counts when
    its sampled sd is at most SD_NEAR_ZERO or below (1 − SD_CUT) of the method alone at the same learning rate,
    and it keeps at least UTILITY_KEPT of that model's utility. "reproduced": at the paper's λ_f and the
    profile's learning rate; "elsewhere": only at other points of the grid (named); "not": at none."""
    lines, hits = [], []
    for lr, alone, points in _against_alone(sweep, "lr"):
        for run, row in points.iterrows():
            ok = _collapses(row, alone)
            if ok:
                hits.append((row["lambda_f"], lr, run))
            lines.append(f"  lr {lr:g}, λf {row['lambda_f']:g}: sampled sd {row['ED sd']:.3f} (alone "
                         f"{alone['ED sd']:.3f}), utility {row['model utility']:.3f} (alone "
                         f"{alone['model utility']:.3f}), greedy ROUGE-L {row['greedy ROUGE-L']:.2f}"
                         f"{' <- collapses' if ok else ''}")
    at_paper = [h for h in hits if h[0] == paper_lambda_f and h[1] == paper_lr]
    if at_paper:
        label = "reproduced"
        head = (f"Reproduced: at the paper's λf = {paper_lambda_f:g} (lr {paper_lr:g}) entropy optimisation "
                f"collapses the forget distribution with utility kept.")
    elif hits:
        label = "elsewhere"
        head = (f"Not at the paper's λf = {paper_lambda_f:g} (lr {paper_lr:g}); the collapse appears at "
                + ", ".join(f"λf {lf:g} / lr {lr:g}" for lf, lr, _ in hits) + ".")
    else:
        label = "not"
        head = ("Not reproduced: at no point of the grid does entropy optimisation bring the sampled sd near 0 "
                "while keeping the utility of the method alone.")
    head += (f" (A point counts when its sd is at most {SD_NEAR_ZERO} or {SD_CUT:.0%} below the method alone's, it "
             f"keeps {UTILITY_KEPT:.0%} of that model's utility and its greedy ROUGE-L stays within {ROUGE_SLACK} of "
             "it: still unlearned.)")
    return Verdict(label, head + "\n" + "\n".join(lines))


# --------------------------------------------------------------------------- Table 1 as the paper defines it


def ed_score(result: SampledScores, rho: float) -> float:
    """The paper's ED score on forget: per question the sampled ROUGE-L's mean + ρ·sd (sd normalised by 1/n,
    :func:`unlearnkit.bounds.ed_score`), averaged over questions (Scholten et al. §4.3; docs/metrics.md §3)."""
    return float(np.mean(bounds.ed_score(np.atleast_2d(result.rouge), rho)))


def regime_of_leakage(params: Params) -> dict[str, tuple[str, int]]:
    """The models of the paper's regime that notebook 05 found: ``{label: (run, step)}``, e.g.
    ``{"npo_mild@18": ("npo_mild", 18)}``, from its metrics.json (run notebook 05 first). A run whose greedy leak
    rate never came down to the retain model's (``reached`` false: notebook 05 took its lowest step instead) is not in
    the regime, and is left out."""
    meta = runs.read_metrics(params, runs.LEAKAGE)["meta"]
    return {label: (str(m["run"]), int(m["step"])) for label, m in (meta.get("regime") or {}).items()
            if m.get("reached", True)}


def kept_step(params: Params, run: str, step: int):
    """The folder of the weights an unlearning run kept at ``step``."""
    kept = dict(runs.trajectory_steps(params, run))
    if step not in kept:
        raise FileNotFoundError(f"run {run!r} of profile {params.profile!r}, seed {params.seed} kept no weights at step {step} (kept: "
                                f"{sorted(kept)[:5]}...): its unlearn_save_every does not divide {step}")
    return kept[step]


class Table1Model(NamedTuple):
    """One model of the Table 1 analogue: its label, the paper's method it stands for, what kind of model it is
    (``regime``: the step of a gentle run where greedy decoding says unlearned, notebook 05; ``collapsed``:
    notebook 02's final model; ``regime EO``) and its folder."""

    label: str
    method: str
    kind: str
    folder: Any


#: The kinds of Table 1 rows, as the table and the figure name them.
REGIME, COLLAPSED, REGIME_EO = "in regime (05)", "collapsed (02)", "EO, in regime"


def table1_models(params: Mapping[str, Any], regime: Mapping[str, tuple[str, int]],
                  eo: Sequence[RegimePoint] = ()) -> list[Table1Model]:
    """The models of Table 1: for each method of ``eo_table_runs`` (and RMU), the in-regime step of notebook 05
    where it has one, the collapsed run of notebook 02 beside it, and the EO points given (in the regime)."""
    params = config.as_params(params)
    out = []
    for label, (run, step) in regime.items():
        method = pipeline.unlearning_settings(params, run)["method"]
        out.append(Table1Model(label, method, REGIME, kept_step(params, run, step)))
    for run in params.eo_table_runs:
        settings = pipeline.unlearning_settings(params, run)
        method = settings["method"] + ("_eo" if settings.get("lambda_f") else "")
        out.append(Table1Model(run, method, COLLAPSED, runs.model_dir(params, runs.unlearned_name(run))))
    for point in eo:
        out.append(Table1Model(point.label, f"{point.method}_eo", REGIME_EO, point.folder(params)))
    return out


def table1(models_: Sequence[Table1Model], results: Mapping[str, SampledScores], utilities: Mapping[str, float],
           alpha: float, rho: float) -> pd.DataFrame:
    """The paper's Table 1 as it defines it: per model greedy ROUGE-L, the sampled ROUGE-L's mean and sd, the ED
    score (mean + ρ·sd), the bounds and utility, with the paper's greedy / ED score / sd for the method it stands for."""
    records = []
    for m in models_:
        result = results[m.label]
        row = {"model": m.label, "method": m.method, "kind": m.kind, **model_row(result, alpha, rho),
               "model utility": utilities.get(m.label)}
        paper = PAPER_TABLE1.get(m.method)
        row.update({"paper greedy": paper[0] if paper else np.nan, "paper ED score": paper[1] if paper else np.nan,
                    "paper sd": paper[2] if paper else np.nan})
        records.append(row)
    return pd.DataFrame(records).set_index("model")


class Table1Check(NamedTuple):
    holds: bool  # every part of the reading
    spread: bool  # its consequence for sampling: a considerable spread lifts the ED score above greedy (EO: gone)
    text: str


def table1_check(row: pd.Series, tolerance: float, sd_min: float) -> Table1Check:
    """The paper's Table 1 reading for one model: without EO, the sampled mean matches greedy (within
    ``tolerance``), the sd is considerable (at least ``sd_min``) and so the ED score exceeds greedy (by more than
    ``tolerance``); with EO, the sd is gone (at most SD_NEAR_ZERO) and the ED score equals greedy (within
    ``tolerance``). ``spread`` is the part about sampling alone (sd and ED score), ``holds`` the whole reading."""
    greedy, mean, sd, ed = (float(row[k]) for k in ("greedy ROUGE-L", "ED mean", "ED sd", "ED score"))
    if str(row["method"]).endswith("_eo"):
        holds = sd <= SD_NEAR_ZERO and abs(ed - greedy) <= tolerance
        parts = [f"sd {sd:.3f} {'<=' if sd <= SD_NEAR_ZERO else '>'} {SD_NEAR_ZERO}",
                 f"ED {ed:.2f} {'=' if abs(ed - greedy) <= tolerance else '!='} greedy {greedy:.2f}"]
        return Table1Check(holds, holds, ", ".join(parts))
    matches, considerable, above = abs(mean - greedy) <= tolerance, sd >= sd_min, ed > greedy + tolerance
    parts = [f"mean {mean:.2f} {'≈' if matches else '≠'} greedy {greedy:.2f}",
             f"sd {sd:.3f} {'considerable' if considerable else 'small'}",
             f"ED {ed:.2f} {'above' if above else 'not above'} greedy"]
    return Table1Check(matches and considerable and above, considerable and above, ", ".join(parts))


#: The paper's methods of Table 1 without EO, whose rows its claim is about.
TABLE1_METHODS = ("ga", "gd", "npo", "rmu")


def table1_verdict(table: pd.DataFrame, tolerance: float, sd_min: float) -> Verdict:
    """Table 1's finding on the models in the paper's regime (the collapsed and EO rows are shown, never counted):
    for GA, GD, NPO and RMU the sampled mean is close to greedy, the spread considerable and the ED score above
    greedy. "reproduced": the whole reading holds for every such method with an in-regime model; "partly": for
    some, or only its part about sampling (a considerable spread lifting the ED score above greedy) holds; "not":
    neither holds for any."""
    lines, held, spread, tested, gaps = [], [], [], [], []
    for model, row in table.iterrows():
        check = table1_check(row, tolerance, sd_min)
        counted = row["kind"] == REGIME and row["method"] in TABLE1_METHODS
        lines.append(f"  {model} [{row['kind']}]: {check.text}{' -> holds' if check.holds else ''}"
                     f"{'' if counted else ' (not counted)'}")
        if counted:
            tested.append(str(model))
            gaps.append(float(row["ED mean"]) - float(row["greedy ROUGE-L"]))
            held += [str(model)] if check.holds else []
            spread += [str(model)] if check.spread else []
    label = ("reproduced" if tested and len(held) == len(tested) else "partly" if held or spread else "not")
    share = (lambda xs: len(xs) / len(tested)) if tested else (lambda xs: None)  # noqa: E731
    quantities = (Quantity("share of in-regime models where the whole reading holds", share(held), 1.0, ">=",
                           "every in-regime model of GA, GD, NPO, RMU"),
                  Quantity("share of in-regime models where its part about sampling holds", share(spread), 1.0, ">=",
                           "every such model"),
                  Quantity("in-regime models", len(tested), fmt=".0f"),
                  Quantity("largest |sampled mean - greedy|", max(map(abs, gaps)) if gaps else None, tolerance,
                           "<=", "table1_tolerance"))
    head = (f"The paper's Table 1 reading (mean within {tolerance} of greedy, sd at least {sd_min}, ED score = mean "
            f"+ ρ·sd more than {tolerance} above greedy) holds in full for {len(held)} of {len(tested)} in-regime "
            f"models" + (f" ({', '.join(held)})" if held else "") + f"; its part about sampling (a considerable "
            f"spread lifting the ED score above greedy) for {len(spread)} of {len(tested)}"
            + (f"; the sampled mean minus greedy ranges from {min(gaps):+.2f} to {max(gaps):+.2f}" if gaps else "")
            + ".")
    return Verdict(label, head + "\n" + "\n".join(lines), quantities, tuple((m, m in held) for m in tested))


def curve_pair(table: pd.DataFrame, results: Mapping[str, SampledScores]) -> dict[str, SampledScores] | None:
    """Fig. 3c's two models: of the models in the paper's regime, two with the same greedy leak rate whose sampled
    ROUGE-L differs the most on average; None when no two share a greedy leak rate."""
    regime = [m for m in table.index if table.loc[m, "kind"] == REGIME]
    best, gap = None, -1.0
    for i, a in enumerate(regime):
        for b in regime[i + 1:]:
            ra, rb = results[a], results[b]
            if abs(float(ra.greedy_leak.mean()) - float(rb.greedy_leak.mean())) > 1e-9:
                continue
            diff = abs(float(ra.rouge.mean()) - float(rb.rouge.mean()))
            if diff > gap:
                best, gap = (a, b), diff
    if best is None:
        return None
    return {f"{m}, greedy leak {results[m].greedy_leak.mean():.2f}": results[m] for m in best}


# --------------------------------------------------------------------------- EO where the paper's models are


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


def regime_eo_points(params: Mapping[str, Any], regime: Mapping[str, tuple[str, int]]) -> tuple[Params, list[RegimePoint]]:
    """EO added where the paper's models are: each run of ``eo_regime_runs`` that notebook 05 put in the regime,
    alone (λ_f 0) and with each λ_f of ``eo_regime_lambda_f_grid`` (λ_r = ``eo_lambda_r``) at each entropy placement
    of ``eo_positions``, on the run's own schedule and learning rate, compared at its regime step (the EO runs keep
    their weights every that many steps). Returns the parameters that know the new runs, and the points."""
    params = config.as_params(params)
    steps = {run: step for run, step in regime.values()}
    points = []
    for base in params.eo_regime_runs:
        if base not in steps:
            continue
        step = steps[base]
        own = {k: v for k, v in params.method_settings.get(base, {"method": base}).items()
               if k not in ("lambda_f", "lambda_r", "entropy_positions", "unlearn_save_every")}
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


def regime_eo_table(points: Sequence[RegimePoint], results: Mapping[str, SampledScores],
                    utilities: Mapping[str, float], alpha: float, rho: float) -> pd.DataFrame:
    """One row per point: its setting, the sampled sd, the ED score, the leak rate, the certainty c(x) on the
    model's own greedy answer, greedy ROUGE-L and utility."""
    records = [{"model": p.label, "base": p.base, "lambda_f": p.lambda_f, "lambda_r": p.lambda_r,
                "positions": p.positions, **model_row(results[p.label], alpha, rho), "model utility": utilities.get(p.label)} for p in points]
    return pd.DataFrame(records).set_index("model")


#: Where the entropy is taken, as the verdict names each placement.
POSITION_NAMES = {"answer": "the answer tokens (the workbook's default)",
                  "all": "all tokens of the sequence (the paper's text and its reference code)",
                  "sampled": "the model's own sampled answers (on-policy, ours)"}
#: The placement the paper describes; the others are ours.
PAPER_POSITIONS = ("all",)


def regime_eo_verdict(table: pd.DataFrame) -> Verdict:
    """Which placement of the entropy, if any, reproduces "sd -> 0 with utility kept" on in-regime runs: a point
    counts as for :func:`eo_verdict` (sd at most SD_NEAR_ZERO or cut by SD_CUT against the run alone, utility at
    least UTILITY_KEPT of it, greedy ROUGE-L within ROUGE_SLACK of it). "reproduced": some point with the entropy
    where the paper takes it (all tokens, :data:`PAPER_POSITIONS`) counts; "partly": only a placement of ours
    (answer tokens, the model's own samples); "not": none."""
    lines, hits = [], []
    for _base, alone, points in _against_alone(table, "base"):
        lines.append(f"  {alone.name} (alone): sd {alone['ED sd']:.3f}, ED {alone['ED score']:.2f}, greedy "
                     f"{alone['greedy ROUGE-L']:.2f}, leak rate {alone['leak rate']:.3f}, certainty "
                     f"{alone['certainty']:.3f}, utility {alone['model utility']:.3f}")
        for model, row in points.iterrows():
            ok = _collapses(row, alone)
            if ok:
                hits.append((row["positions"], row["lambda_f"], str(model)))
            lines.append(f"  {model} ({row['positions']}, λf {row['lambda_f']:g}): sd {row['ED sd']:.3f}, ED "
                         f"{row['ED score']:.2f}, greedy {row['greedy ROUGE-L']:.2f}, leak rate {row['leak rate']:.3f}, "
                         f"certainty {row['certainty']:.3f}, utility {row['model utility']:.3f}"
                         f"{' <- sd -> 0 with utility kept' if ok else ''}")
    paper_placements = {h[0] for h in hits} & set(PAPER_POSITIONS)
    if paper_placements:
        label = "reproduced"
    elif hits:
        label = "partly"
    else:
        label = "not"
    placements = sorted({h[0] for h in hits})
    summary = []
    for placement, group in table[table["lambda_f"] > 0].groupby("positions", sort=False):
        summary.append(f"{placement}: sd {group['ED sd'].min():.3f}-{group['ED sd'].max():.3f}, greedy ROUGE-L "
                       f"{group['greedy ROUGE-L'].min():.2f}-{group['greedy ROUGE-L'].max():.2f}, certainty "
                       f"{group['certainty'].min():.3f}-{group['certainty'].max():.3f}")
    alone_rows = table[table["lambda_f"] == 0]
    if len(alone_rows) and summary:
        a = alone_rows.iloc[0]
        summary.insert(0, f"{a.name} alone: sd {a['ED sd']:.3f}, greedy ROUGE-L {a['greedy ROUGE-L']:.2f}, certainty "
                          f"{a['certainty']:.3f}")
    head = ("On the runs in the paper's regime, sd -> 0 with utility kept " +
            (f"with the entropy on {'; on '.join(POSITION_NAMES[p] for p in placements)}: "
             + ", ".join(f"{m}" for _, _, m in hits) if hits else "at no point of the grid and no placement")
            + f". (A point counts when its sd is at most {SD_NEAR_ZERO} or {SD_CUT:.0%} below the run alone's, it "
            f"keeps {UTILITY_KEPT:.0%} of that model's utility and its greedy ROUGE-L stays within {ROUGE_SLACK} of it.)")
    if summary:
        head += " " + "; ".join(summary) + "."
    with_eo = table[table["lambda_f"] > 0]
    quantities = (Quantity("points with the entropy where the paper takes it (all tokens) where sd -> 0 with utility "
                           "kept", sum(1 for h in hits if h[0] in PAPER_POSITIONS), 1, ">=", "one point", ".0f"),
                  Quantity("points of any placement where sd -> 0 with utility kept", len(hits), fmt=".0f"),
                  Quantity("lowest sampled sd with EO", float(with_eo["ED sd"].min()) if len(with_eo) else None,
                           SD_NEAR_ZERO, "<=", "sd near 0"))
    return Verdict(label, head + "\n" + "\n".join(lines), quantities,
                   tuple((str(m), any(h[2] == str(m) for h in hits)) for m in with_eo.index))


def folder_utility(params: Mapping[str, Any], named_folders: Mapping[str, Any], source,
                   jobs: int | None = 1) -> dict[str, float]:
    """:func:`utility` of models given by folder (a step kept along a run), keyed by their labels."""
    params = config.as_params(params)
    names = list(named_folders)
    found = workers.side_by_side(_utility_of_folder, [(params, name, named_folders[name], source)
                                                     for name in names], jobs, desc="utility")
    return dict(zip(names, found))


#: The least change of the mean M_bin that the adaptive-temperature verdict reads as an effect.
MIN_M_BIN_CHANGE = 0.01


def adaptive_verdict(sweep: pd.DataFrame, threshold: float, leaking: str, eo_run: str) -> Verdict:
    """What adaptive temperature at ``threshold`` does to M_bin: for a model that still leaks (``leaking``) going
    greedy where it is certain makes its leak certain too, so M_bin can rise; for an EO model (``eo_run``) it
    removes the sampling noise around a non-leaking answer, so M_bin falls. The label says whether both hold."""
    def at(run: str) -> pd.Series:
        return sweep.loc[(run, float(threshold))]

    leak_row, eo_row = at(leaking), at(eo_run)
    # A model that never goes greedy at c_T is untouched, and a change below MIN_M_BIN_CHANGE is noise of the
    # samples' draw: neither is evidence either way.
    leak_up = leak_row["greedy share"] > 0 and leak_row["M_bin"] >= leak_row["M_bin sampling"] + MIN_M_BIN_CHANGE
    eo_down = eo_row["greedy share"] > 0 and eo_row["M_bin"] <= eo_row["M_bin sampling"] - MIN_M_BIN_CHANGE
    label = "reproduced" if leak_up and eo_down else "partly" if (leak_up or eo_down) else "not"
    quantities = (Quantity("M_bin change of the most-leaking collapsed model",
                           float(leak_row["M_bin"] - leak_row["M_bin sampling"]), MIN_M_BIN_CHANGE, ">=",
                           "a rise of at least MIN_M_BIN_CHANGE"),
                  Quantity("M_bin change of the EO model", float(eo_row["M_bin"] - eo_row["M_bin sampling"]),
                           -MIN_M_BIN_CHANGE, "<=", "a fall of at least MIN_M_BIN_CHANGE"),
                  Quantity("share of questions the most-leaking model decodes greedily", float(leak_row["greedy share"])),
                  Quantity("share of questions the EO model decodes greedily", float(eo_row["greedy share"])))
    parts = ((f"raises M_bin where greedy leaks ({leaking})", bool(leak_up)),
             (f"lowers M_bin for the confident EO model ({eo_run})", bool(eo_down)))
    text = (f"{label.capitalize()}: at c_T = {threshold:g}, {leaking} decodes {leak_row['greedy share']:.0%} of the "
            f"questions greedily and its mean M_bin goes from {leak_row['M_bin sampling']:.3f} (sampling) to "
            f"{leak_row['M_bin']:.3f}; {eo_run} decodes {eo_row['greedy share']:.0%} greedily, M_bin "
            f"{eo_row['M_bin sampling']:.3f} -> {eo_row['M_bin']:.3f} (a change counts from {MIN_M_BIN_CHANGE}). The "
            "paper expects adaptive temperature to help a confident (EO) model and to make a confidently leaking model "
            "leak for certain.")
    return Verdict(label, text, quantities, parts)


def metrics_entries(table: pd.DataFrame, sweep: pd.DataFrame, *more: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``{model: {"forget": Table 1 row}}`` for metrics.json, sweep points included (with their setting)."""
    entries: dict[str, dict[str, Any]] = {}
    for frame in (table, sweep, *more):
        for run, row in frame.iterrows():
            values = {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()
                      if not isinstance(v, str)}
            entries.setdefault(str(run), {}).setdefault("forget", {}).update(values)
    return entries


# --------------------------------------------------------------------------- texts and results


def most_leaking(table: pd.DataFrame, exclude: Sequence[str] = ()) -> str:
    """The Table 1 run whose samples name the key entity most often (the one adaptive temperature can hurt)."""
    return str(table.drop(index=[r for r in exclude if r in table.index])["leak rate"].idxmax())


def curves_text(curve_models: Mapping[str, SampledScores], alpha: float, threshold: float) -> str:
    """The mean general leakage bound at ``threshold`` of each curve model, and its sampled sd."""
    parts = []
    for name, result in curve_models.items():
        at = float(bounds.general_leakage_bound(np.atleast_2d(result.rouge), threshold, alpha).mean())
        parts.append(f"{name}: mean M_gen({threshold:g}) {at:.3f}, sampled sd {result.rouge.std(axis=1).mean():.3f}")
    return "; ".join(parts)


def entropy_text(along: Mapping[str, pd.DataFrame]) -> str:
    """Forget and retain entropy at the start and the end of each run."""
    return "\n".join(f"{run}: forget entropy {f['forget'].iloc[0]:.3f} -> {f['forget'].iloc[-1]:.3f} "
                     f"(peak {f['forget'].max():.3f}), retain {f['retain'].iloc[0]:.3f} -> {f['retain'].iloc[-1]:.3f}"
                     for run, f in along.items())


def eo_why(sweep: pd.DataFrame, along: Mapping[str, pd.DataFrame], eo_run: str, alone_run: str) -> str:
    """What entropy optimisation did change, from the numbers: the teacher-forced forget entropy at the end of the run,
    the certainty c(x) of the greedy continuation and the self-BLEU of the samples, against the method alone; and
    how the sampled spread followed."""
    eo, alone = sweep.loc[eo_run], sweep.loc[alone_run]
    end = {run: float(frame["forget"].iloc[-1]) for run, frame in along.items()}
    lines = [f"What EO changes ({eo_run} against {alone_run}): forget entropy on the true answers at the end of "
             f"unlearning {end.get(eo_run, float('nan')):.3f} against {end.get(alone_run, float('nan')):.3f}; "
             f"certainty c(x) on its own greedy answer {eo['certainty']:.3f} against {alone['certainty']:.3f}; "
             f"self-BLEU of the forget samples {eo['self-BLEU']:.3f} against {alone['self-BLEU']:.3f}; sampled sd "
             f"{eo['ED sd']:.3f} against {alone['ED sd']:.3f}."]
    top = sweep.loc[sweep["lambda_f"].idxmax()]
    lines.append(f"At the largest λf ({top['lambda_f']:g}, lr {top['lr']:g}): certainty {top['certainty']:.3f}, "
                 f"self-BLEU {top['self-BLEU']:.3f}, sd {top['ED sd']:.3f}, greedy ROUGE-L {top['greedy ROUGE-L']:.2f}, "
                 f"utility {top['model utility']:.3f}.")
    return " ".join(lines)


def findings(table1_found: Verdict, regime_eo: Verdict, adaptive: Verdict, diversity: pd.DataFrame | None = None,
             lambda_r: Sequence[float] = ()) -> list[Finding]:
    """The notebook's findings on this run, as data: the claim, this run's numbers, the deciding quantities and the
    outcome; each names its figure."""
    tested = any(q.name == "in-regime models" and q.value for q in table1_found.quantities)

    def finding(claim: str, text: str, verdict: Verdict, figure: str, short: str, outcome: str | None = None):
        return Finding(runs.ENTROPY, SCHOLTEN, claim, text, outcome or outcome_from_label(verdict.label),
                       f"{runs.ENTROPY}_{figure}", short, verdict.quantities, verdict.parts)

    found = [
        finding("Table 1: for GA, GD, NPO and RMU the sampled mean matches greedy, but the spread is considerable, so "
                "the ED score (mean + 2 sd) exceeds what greedy decoding reports; with EO the spread is gone",
                _first_sentence(table1_found.text) + " " + _counted_lines(table1_found.text), table1_found,
                "table1", "Table 1", None if tested else NO_TEST),
        finding("NPO + EO on models in the paper's regime: the sampled sd falls to 0 with utility kept",
                _first_sentence(regime_eo.text), regime_eo, "regime_eo", "EO in regime",
                None if regime_eo.parts else NO_TEST),
        finding("adaptive temperature lowers M_bin for a confident (EO) model, raises it where greedy leaks",
                adaptive.text.split(": ", 1)[1].split(" The paper")[0], adaptive, "adaptive", "adaptive T"),
    ]
    if diversity is not None and len(lambda_r) >= 2 and "retain" in diversity:
        order = np.argsort(-np.asarray(lambda_r, dtype=float))  # from λ_r 0 down to the most negative
        retain = diversity["retain"].to_numpy()[order]
        falling = bool(np.all(np.diff(retain) <= 0.01)) and retain[-1] < retain[0]
        quantities = (Quantity("retain self-BLEU change from λr 0 to the most negative λr",
                               float(retain[-1] - retain[0]), 0.0, "<", "a fall"),)
        text = "retain self-BLEU " + " -> ".join(f"{b:.3f} (λr {lr_:g})"
                                                 for b, lr_ in zip(retain, np.asarray(lambda_r)[order]))
        found.append(finding("λ_r < 0 keeps the samples diverse outside the forget set", text,
                             Verdict("reproduced" if falling else "not", text, quantities,
                                     (("retain self-BLEU falls as λr goes below 0", falling),)),
                             "diversity", "λ_r diversity"))
    return found


def _first_sentence(text: str) -> str:
    """A verdict's first line without its parenthesis on what counts."""
    line = text.split("\n", 1)[0]
    if " (A point counts" in line:
        before, after = line.split(" (A point counts", 1)
        line = before + (after.split(".)", 1)[1] if ".)" in after else "")
    return line


def _counted_lines(text: str) -> str:
    """The per-model lines of a Table 1 verdict that it counts, joined."""
    lines = [line.strip() for line in text.splitlines()[1:] if "(not counted)" not in line]
    return "; ".join(lines)


def run_meta(all_runs: Sequence[str], settings: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
             scored: leakage.Scored, found: Sequence[Finding], lambda_f: Sequence[SweepPoint],
             lambda_r: Sequence[SweepPoint], regime_points: Sequence[RegimePoint] = (),
             lambda_f_verdict: str = "") -> dict[str, Any]:
    """What metrics.json records beside the parameters: the runs, the sweeps' settings, sampling, the questions,
    the seconds spent, the findings, and the verdict of the λ_f grid at notebook 02's learning rate."""
    return {"runs": list(all_runs), "sampling": dict(settings), "questions": [r["question"] for r in rows],
            "sampling_seconds": sum(scored.seconds.values()),
            "lambda_f_sweep": [p._asdict() for p in lambda_f], "lambda_r_sweep": [p._asdict() for p in lambda_r],
            "regime_eo": [{**p._asdict(), "label": p.label} for p in regime_points],
            "lambda_f_verdict": lambda_f_verdict, "findings": [f.as_dict() for f in found]}


def temperature_text(table: pd.DataFrame) -> str:
    """The sampled spread and leak rate at the lowest and highest temperature, per model."""
    parts = []
    for run, group in table.groupby(level="run", sort=False):
        low, high = group.iloc[0], group.iloc[-1]
        t_low, t_high = group.index.get_level_values("temperature")[[0, -1]]
        parts.append(f"{run}: sd {low['ED sd']:.3f} at T = {t_low:g}, {high['ED sd']:.3f} at T = {t_high:g}; leak "
                     f"rate {low['leak rate']:.3f} -> {high['leak rate']:.3f}")
    return ("The paper: a lower temperature narrows every model's samples, EO narrows them at temperature 1. "
            "Here: " + "; ".join(parts) + ".")


def diversity_text(table: pd.DataFrame, lambda_r: Sequence[float]) -> str:
    """Self-BLEU per set at each λ_r."""
    parts = [f"{column.replace('_', ' ')}: " + ", ".join(f"{v:.3f}" for v in table[column]) for column in table.columns]
    return (f"Self-BLEU at λr {', '.join(f'{x:g}' for x in lambda_r)} (lower is more diverse): " + "; ".join(parts)
            + ".")


def ed_utility_text(points: pd.DataFrame) -> str:
    """The sweep point with the lowest ED score among those keeping the most utility, against the method alone."""
    score = points["ED score"]
    alone = points[points["lambda_f"] == 0]
    kept = points[points["model utility"] >= UTILITY_KEPT * alone["model utility"].min()] if len(alone) else points
    best = (score[kept.index]).idxmin()
    parts = [f"the method alone: ED score {score[r]:.2f} at utility {points.loc[r, 'model utility']:.3f} (lr "
             f"{points.loc[r, 'lr']:g})" for r in alone.index]
    return (f"The paper finds EO lowering the ED score at little cost in utility. Here, of the points keeping "
            f"{UTILITY_KEPT:.0%} of the method alone's utility, the lowest ED score is {score[best]:.2f} ({best}, utility "
            f"{points.loc[best, 'model utility']:.3f}); " + "; ".join(parts) + ".")
