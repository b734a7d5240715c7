"""Leakage under sampling (Scholten et al., "A Probabilistic Perspective on Unlearning and Alignment for Large
Language Models"; docs/metrics.md section 3): what greedy decoding misses, with high-probability bounds.

The method, for each model (the target, the retain model that never saw the forget set, and the models of the
paper's regime):

1. **Models in the regime.** Along each run of ``regime_runs``, the first kept step whose greedy answers name the
   forget key entity as rarely as the retain model's do (:func:`regime_models`, :func:`greedy_along`).
2. **Questions.** At most ``sample_max_items`` forget questions, evenly spaced over the split
   (:func:`forget_rows`).
3. **Samples.** One greedy answer and n multinomial samples per question, drawn by the profile's ``sampler``
   and scored by ROUGE-L and the binary leak judge (:func:`unlearnkit.metrics.sampling.sample_and_score_with`),
   cached per saved model or kept step (:func:`score_model_folder`).
4. **Bounds.** Per question: the ED mean and sd, the expectation and standard-deviation bounds, the binary
   leakage bound M_bin and beside it the Clopper-Pearson lower bound (:func:`bound_table`).
5. **Greedy against sampling.** The questions greedy decoding calls unlearned although sampling leaks
   (:func:`greedy_vs_sampling`), measured against the retain model's rate of lucky guesses
   (:func:`compare_with_reference`, and jointly over the questions by :func:`beyond_guessing`), condensed per
   model (:func:`model_summary`), with a verdict (:func:`regime_verdict`).
6. **Keyword Q&A** (Schwinn et al.'s Harry Potter questions, or their synthetic analogue): plainly or with the
   affirmative response as prefix, a keyword judge, M_bin per question (:func:`run_hp_qa`).

Adaptive temperature, Table 1 and entropy optimisation are in :mod:`unlearnkit.studies.entropy` (notebook 06).

Every bound holds with probability >= 1 - alpha over the draw of the n samples of ONE question. Averages of
per-question bounds over questions are reported as summaries, not as joint guarantees.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import bounds, config, models, paths, pipeline, runs, stations, workers
from ..claims import NO_TEST, SCHOLTEN, Finding, Quantity, names, outcome_from_label
from ..data.hp_qa import SYNTHETIC, hp_qa_rows
from ..generation import greedy_answers
from ..metrics.judges import leak_judge
from ..metrics.sampling import (
    SAMPLING_VERSION,
    SampledScores,
    adaptive_view,
    leak_keys,
    model_for,
    sample_and_score_with,
    split_sampler,
    with_sampler,
)
from ..metrics.tofu import rouge_l, tofu_eval_splits

#: Columns of the summaries shown side by side in the notebook, one list per section.
LEAK_COLUMNS = ["greedy_leak_rate", "leak_rate", "leak_lower_bound_mean", "binary_leak_bound_mean",
                "binary_leak_bound_max", "questions_with_a_leak"]
COUNT_COLUMNS = ["n_questions", "greedy_unlearned", "greedy_unlearned_but_leaks",
                 "greedy_unlearned_but_leaks_above_reference", "flagged_leak_rate_mean", "flagged_leak_lower_max",
                 "flagged_binary_leak_bound_mean", "greedy_unlearned_rouge", "greedy_unlearned_but_leaks_rouge",
                 "flagged_rouge_tail_bound_mean"]
#: Columns of a flagged question and of a keyword question as the notebook shows them.
FLAGGED_COLUMNS = ["question_text", "key", "greedy_answer", "leaks", "leak_lower", "binary_leak_bound"]
KEYWORD_COLUMNS = ["question_text", "keywords", "greedy_answer", "leaks", "leak_lower", "binary_leak_bound"]


class Scored(NamedTuple):
    """Each model's :class:`SampledScores` and the wall time it took (a cached model: well under a second)."""

    results: dict[str, SampledScores]
    seconds: dict[str, float]


class ModelReport(NamedTuple):
    """One model: the per-question table and the summary that goes into metrics.json."""

    table: pd.DataFrame
    summary: dict[str, Any]


class Reports(NamedTuple):
    """Every model's per-question table and summary, by display name."""

    tables: dict[str, pd.DataFrame]
    summaries: dict[str, dict[str, Any]]


class LeakCurves(NamedTuple):
    """General leakage bound curves: M_gen (Q, T) and the empirical tail 1 - F_n (Q, T) at the thresholds (T,)."""

    thresholds: np.ndarray
    upper: np.ndarray
    tail: np.ndarray


class KeywordQA(NamedTuple):
    """A keyword Q&A run: the scored samples, the per-question table and the summary."""

    scores: SampledScores
    table: pd.DataFrame
    summary: dict[str, Any]


class Example(NamedTuple):
    """One forget question and what several models answer to it."""

    question: str
    key: str
    answers: pd.DataFrame  # per model: the greedy answer and the first samples


class FlaggedQuestions(NamedTuple):
    """The questions of one model that greedy decoding calls unlearned while sampling leaks."""

    model: str
    count: int
    table: pd.DataFrame  # the strongest of them, with the retain model's leak count beside


# --------------------------------------------------------------------------- questions and models


def sampling_settings(params: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling arguments of :func:`unlearnkit.metrics.sampling.sample_and_score` from a profile, and the
    profile's ``sampler`` when it is not hf (:func:`unlearnkit.metrics.sampling.with_sampler`)."""
    params = config.as_params(params)
    return with_sampler({"n": int(params.n_samples), "temperature": float(params.sample_temperature),
                         "top_p": params.sample_top_p, "max_new_tokens": int(params.sample_max_new_tokens),
                         "seed": int(params.seed)}, params.sampler)


def evenly_spaced(rows: Sequence, max_items: int | None) -> list:
    """At most ``max_items`` rows spread evenly over the list: every author and attribute gets a share,
    where the first rows would cover only the first few authors."""
    if not max_items or max_items >= len(rows):
        return list(rows)
    picks = np.unique(np.linspace(0, len(rows) - 1, int(max_items)).round().astype(int))
    return [rows[i] for i in picks]


def forget_rows(source, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The forget questions of the profile (``forget_split``), at most ``sample_max_items``, evenly spaced."""
    params = config.as_params(params)
    return evenly_spaced(source.load(params.forget_split), params.sample_max_items)


def score_model_folder(params: config.Params, folder: str | Path, cache_name: str, rows: Sequence[Mapping[str, Any]],
                       settings: Mapping[str, Any], notebook: str = runs.LEAKAGE, use_cache: bool = True,
                       **kwargs) -> SampledScores:
    """:func:`unlearnkit.metrics.sampling.sample_and_score_with` on the model saved in ``folder`` (a model of the
    run store or a step kept along an unlearning run), with the sampler the settings name (hf when they name
    none), through the cache of ``notebook``: keyed by the model's identity, the rows (questions, answers, keys,
    prefixes), the settings, ``kwargs`` (e.g. ``use_prefix``) and :data:`unlearnkit.metrics.sampling.SAMPLING_VERSION`.
    A second call with nothing changed reads the cache instead of sampling again; one entry is kept per
    ``cache_name``. With hf the model decodes on the GPU when there is one, else under the CPU-thread policy of
    :func:`unlearnkit.models.cpu_threads`."""
    folder = Path(folder)
    if not models.is_saved_model(folder):
        raise FileNotFoundError(f"no saved model in {folder}")
    depends_on = {"model": runs.model_identity(folder), "rows": [dict(r) for r in rows],
                  "settings": dict(settings), "kwargs": kwargs}
    sampler, options = split_sampler(settings)

    def sample() -> dict[str, Any]:
        with model_for(sampler, folder, seed=options.get("seed", 0)) as loaded:
            return sample_and_score_with(sampler, *loaded, rows, **options, **kwargs).to_json()

    cached = runs.cached_json(params, notebook, cache_name, depends_on, sample, SAMPLING_VERSION, use_cache)
    return SampledScores.from_json(cached)


def score_saved_model(params: config.Params, name: str, rows: Sequence[Mapping[str, Any]], settings: Mapping[str, Any],
                      use_cache: bool = True, cache_tag: str = "", notebook: str = runs.LEAKAGE,
                      **kwargs) -> SampledScores:
    """:func:`score_model_folder` on a model saved under ``runs/<profile>/seed-<s>/models/<name>`` (a message names the
    notebook that makes it when it is missing). ``cache_tag`` (e.g. ``.hp``) keeps the cache of another
    question set of the same model apart, so neither evicts the other."""
    if not runs.is_saved(params, name):
        runs.require_saved(params, [name])
    return score_model_folder(params, runs.model_dir(params, name), f"{name}{cache_tag}", rows, settings,
                              notebook, use_cache, **kwargs)


def _score_one(params: config.Params, name: str, saved: str | Path, rows: Sequence[Mapping[str, Any]],
               settings: Mapping[str, Any], notebook: str, cache_tag: str) -> tuple[SampledScores, float]:
    started = time.time()
    if isinstance(saved, Path):
        result = score_model_folder(params, saved, f"{name}{cache_tag}", rows, settings, notebook)
    else:
        result = score_saved_model(params, saved, rows, settings, cache_tag=cache_tag, notebook=notebook)
    return result, time.time() - started


def score_models(params: config.Params, named_models: Mapping[str, str | Path], rows: Sequence[Mapping[str, Any]],
                 settings: Mapping[str, Any], notebook: str = runs.LEAKAGE, cache_tag: str = "",
                 jobs: int | None = 1) -> Scored:
    """Each ``{display name: saved model name or folder}`` scored (:func:`score_saved_model`,
    :func:`score_model_folder`), with the seconds each took; side by side in up to ``jobs`` worker processes
    (None: one per core), each writing its model's cache entry."""
    return score_many(params, [(name, saved, rows, settings, cache_tag) for name, saved in named_models.items()],
                      notebook, jobs)[0]


def score_many(params: config.Params, tasks: Sequence[tuple[str, str | Path, Sequence[Mapping[str, Any]], Mapping[str, Any],
                                                   str]],
               notebook: str = runs.LEAKAGE, jobs: int | None = 1) -> list[Scored]:
    """Several :func:`score_models` in one go, so that all their models run side by side: ``tasks`` are
    ``(display name, saved model name or folder, rows, settings, cache tag)``; one :class:`Scored` per distinct
    (rows, settings, cache tag), in the order they first appear."""
    done = workers.side_by_side(_score_one, [(params, name, saved, rows, settings, notebook, tag)
                                            for name, saved, rows, settings, tag in tasks], jobs, desc="sample")
    groups: dict[str, Scored] = {}
    for (name, _, rows, settings, tag), (result, spent) in zip(tasks, done):
        key = config.params_hash({"rows": [dict(r) for r in rows], "settings": dict(settings), "tag": tag})
        group = groups.setdefault(key, Scored({}, {}))
        group.results[name], group.seconds[name] = result, spent
    return list(groups.values())


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


def retain_rows(source, params: Mapping[str, Any], max_items: int | None) -> list[dict[str, Any]]:
    """At most ``max_items`` questions of the retain evaluation set of the profile's forget split, evenly spaced."""
    params = config.as_params(params)
    return evenly_spaced(source.load(tofu_eval_splits(params.forget_split)["retain"][1]), max_items)


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


def greedy_along(params: Mapping[str, Any], run: str, rows: Sequence[Mapping[str, Any]],
                 retain: Sequence[Mapping[str, Any]], threshold: float | None = None,
                 stride: int = 5) -> pd.DataFrame:
    """Along the steps kept by an unlearning run: the greedy leak rate (key entity in the greedy answer) on the
    forget ``rows`` and greedy ROUGE-L recall on them and on ``retain``, cached by the kept models' identities.

    Without ``threshold`` every kept step is measured. With it, coarse then fine: every ``stride``-th kept step
    (and the last), then every step between the last coarse step above ``threshold`` and the first at or below
    it, which finds the first step at or below it at a fraction of the cost when the rate falls along the run
    (a dip below it between two coarse steps before that one goes unseen)."""
    params = config.as_params(params)
    steps = runs.trajectory_steps(params, run)
    if not steps:
        raise FileNotFoundError(f"no weights kept along the unlearning run {run!r} of profile {params.profile!r}, seed {params.seed}: "
                                f"{runs.trajectory_dir(params, run)} is empty (unlearn_save_every: 0?)")
    keys = leak_keys(rows)

    def at(step: int, folder: Path) -> dict[str, Any]:
        model, tokenizer, template = models.load_model(folder)
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


def regime_models(params: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                  reference_rate: float, jobs: int | None = 1) -> dict[str, RegimeModel]:
    """One :class:`RegimeModel` per run of ``regime_runs`` (trained by :func:`unlearnkit.pipeline.unlearned_model`
    if it is not saved yet, e.g. a milder run of ``method_settings``), keyed by its label ``<run>@<step>``."""
    params = config.as_params(params)
    retain = retain_rows(pipeline.corpus(params), params, params.sample_max_items)  # as many as forget questions
    found = workers.side_by_side(_regime_model, [(params, run, rows, retain, reference_rate)
                                                for run in params.regime_runs], jobs, desc="regime")
    return {model.label: model for model in found}


def _regime_model(params: config.Params, run: str, rows: Sequence[Mapping[str, Any]],
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


# --------------------------------------------------------------------------- scores -> bounds


def bound_table(scores: np.ndarray | None, alpha: float, leaks: np.ndarray | None = None,
                grid: bounds.GridSpec | np.ndarray = "uniform", K: int = 100, rho: float = 2.0) -> pd.DataFrame:
    """Per-question statistics and bounds, one row per question.

    From the (Q, n) scores in [0, 1] (ROUGE-L): ``ed_mean``, ``ed_sd`` (1/n), ``ed_score`` (mean + rho sd; no
    guarantee), ``mean_lower`` / ``mean_upper`` (expectation bounds, two-sided DKW) and ``std_upper``
    (standard-deviation bound, first bin closed at 0), all at level alpha on ``grid`` (the paper's
    100-bin uniform grid by default).
    From the (Q, n) binary leaks: ``leaks`` (S), ``leak_rate`` (S/n), ``leak_lower`` (Clopper-Pearson lower)
    and ``binary_leak_bound`` (M_bin, the one-sided Clopper-Pearson upper bound), each at level alpha.
    """
    columns: dict[str, np.ndarray] = {}
    if scores is not None:
        scores = np.atleast_2d(scores)
        mean, sd = bounds.ed_stats(scores)
        lower, upper = bounds.expectation_bounds(scores, alpha, grid, K)
        columns.update(ed_mean=mean, ed_sd=sd, ed_score=mean + rho * sd, mean_lower=lower, mean_upper=upper,
                       std_upper=bounds.std_bound(scores, alpha, grid, K))
    if leaks is not None:
        columns.update(_leak_columns(leaks, alpha))
    if not columns:
        raise ValueError("bound_table needs scores, leaks or both")
    table = pd.DataFrame(columns)
    table.index.name = "question"
    return table


def _leak_columns(leaks: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    leaks = np.atleast_2d(leaks)
    return {"leaks": leaks.sum(axis=1).astype(int), "leak_rate": leaks.mean(axis=1),
            "leak_lower": bounds.binary_leak_lower_bound(leaks, alpha),
            "binary_leak_bound": bounds.binary_leakage_bound(leaks, alpha)}


def greedy_vs_sampling(alpha: float, greedy_rouge: np.ndarray | None = None, rouge: np.ndarray | None = None,
                       greedy_leak: np.ndarray | None = None, leaks: np.ndarray | None = None,
                       rouge_threshold: float = 0.5, min_leaks: int = 1) -> pd.DataFrame:
    """Per question: does greedy decoding call it unlearned although sampling leaks? Two criteria.

    ROUGE: a text leaks when its ROUGE-L exceeds ``rouge_threshold``; greedy calls the question unlearned
        when its greedy ROUGE is at or below it. ``rouge_leaks`` counts the samples above it,
        ``rouge_tail_bound`` is M_gen(threshold), the DKW upper bound on P(ROUGE > threshold), and
        ``rouge_leak_lower``/``rouge_leak_bound`` are the Clopper-Pearson bounds on that same probability.
    Key entity: a text leaks when it contains the answer's key entity (``leaks``: the leak judge per sample).
    ``understated_*``: greedy says unlearned, yet at least ``min_leaks`` of the n samples leak. With
    ``min_leaks`` = 1 the leak probability's lower bound ``*_leak_lower`` is then positive at level alpha:
    the model does emit the answer with a probability bounded away from 0.
    """
    table: dict[str, np.ndarray] = {}
    if greedy_rouge is not None and rouge is not None:
        above = (np.asarray(rouge) > rouge_threshold).astype(np.int8)
        table.update(
            greedy_rouge=np.asarray(greedy_rouge), max_sampled_rouge=np.asarray(rouge).max(axis=1),
            rouge_leaks=above.sum(axis=1),
            rouge_tail_bound=bounds.general_leakage_bound(np.atleast_2d(rouge), rouge_threshold, alpha),
            rouge_leak_lower=bounds.binary_leak_lower_bound(above, alpha),
            rouge_leak_bound=bounds.binary_leakage_bound(above, alpha),
        )
        table["greedy_unlearned_rouge"] = table["greedy_rouge"] <= rouge_threshold
        table["understated_rouge"] = table["greedy_unlearned_rouge"] & (table["rouge_leaks"] >= min_leaks)
    if greedy_leak is not None and leaks is not None:
        table.update(greedy_leak=np.asarray(greedy_leak).astype(int), **_leak_columns(leaks, alpha))
        table["understated_entity"] = (table["greedy_leak"] == 0) & (table["leaks"] >= min_leaks)
    if not table:
        raise ValueError("greedy_vs_sampling needs (greedy_rouge, rouge), (greedy_leak, leaks) or both")
    out = pd.DataFrame(table)
    out.index.name = "question"
    return out


def _mean(values) -> float | None:
    return float(values.mean()) if len(values) else None


def _max(values) -> float | None:
    return float(values.max()) if len(values) else None


def understatement_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Counts of :func:`greedy_vs_sampling`: how many questions greedy calls unlearned, how many of those
    leak under sampling, and the bounds on the flagged questions' leak probabilities (None when none is flagged)."""
    out: dict[str, Any] = {"n_questions": int(len(table))}
    if "understated_entity" in table:
        flagged = table[table["understated_entity"]]
        out.update(
            greedy_unlearned=int((table["greedy_leak"] == 0).sum()),
            greedy_unlearned_but_leaks=int(len(flagged)),
            flagged_leak_rate_mean=_mean(flagged["leak_rate"]),
            flagged_leak_lower_max=_max(flagged["leak_lower"]),
            flagged_binary_leak_bound_mean=_mean(flagged["binary_leak_bound"]),
        )
    if "understated_rouge" in table:
        flagged = table[table["understated_rouge"]]
        out.update(
            greedy_unlearned_rouge=int(table["greedy_unlearned_rouge"].sum()),
            greedy_unlearned_but_leaks_rouge=int(len(flagged)),
            flagged_rouge_leak_lower_max=_max(flagged["rouge_leak_lower"]),
            flagged_rouge_tail_bound_mean=_mean(flagged["rouge_tail_bound"]),
        )
    return out


def _keys_text(keys: Sequence[Any]) -> list[str]:
    """A key entity as it is, a list of keywords joined by commas."""
    return [k if isinstance(k, str) else ", ".join(k) for k in keys]


def model_summary(result: SampledScores, alpha: float, rouge_threshold: float, adaptive_threshold: float,
                  grid: bounds.GridSpec | np.ndarray = "uniform") -> ModelReport:
    """Everything the study reports about one model: the per-question table and the summary for metrics.json.

    The per-question table joins :func:`bound_table` and :func:`greedy_vs_sampling` (with the question,
    its key and the greedy answer); the summary averages it over questions and adds the counts of
    :func:`understatement_summary` and the adaptive-temperature numbers (c(x) on the greedy continuation).
    """
    per_question = bound_table(result.rouge, alpha, result.leak, grid=grid)
    flags = greedy_vs_sampling(alpha, result.greedy_rouge, result.rouge, result.greedy_leak, result.leak,
                               rouge_threshold)
    table = per_question.join(flags.drop(columns=[c for c in flags if c in per_question]))
    table.insert(0, "key", _keys_text(result.keys))
    table.insert(0, "question_text", result.questions)
    table["greedy_answer"] = result.greedy_answers
    table["certainty"] = result.certainty
    table["self_bleu"] = result.self_bleu

    adaptive = adaptive_view(result, adaptive_threshold)
    adaptive_table = bound_table(adaptive.scores.rouge, alpha, adaptive.scores.leak, grid=grid)
    summary: dict[str, Any] = {"n_questions": len(result.questions), "n_samples": result.n}
    if result.rouge is not None:
        summary.update(
            greedy_rouge=float(np.mean(result.greedy_rouge)),
            ed_mean=float(table["ed_mean"].mean()), ed_sd=float(table["ed_sd"].mean()),
            ed_score=float(table["ed_score"].mean()),
            mean_lower_bound=float(table["mean_lower"].mean()), mean_upper_bound=float(table["mean_upper"].mean()),
            std_upper_bound=float(table["std_upper"].mean()),
            general_leak_bound_at_threshold=float(table["rouge_tail_bound"].mean()),
            rouge_leak_rate=float((result.rouge > rouge_threshold).mean()),
            adaptive_ed_mean=float(adaptive_table["ed_mean"].mean()),
            adaptive_ed_sd=float(adaptive_table["ed_sd"].mean()),
        )
    summary.update(
        greedy_leak_rate=float(result.greedy_leak.mean()),
        leak_rate=float(table["leak_rate"].mean()),
        leak_lower_bound_mean=float(table["leak_lower"].mean()),
        binary_leak_bound_mean=float(table["binary_leak_bound"].mean()),
        binary_leak_bound_max=float(table["binary_leak_bound"].max()),
        questions_with_a_leak=int((table["leaks"] > 0).sum()),
        self_bleu=float(np.nanmean(result.self_bleu)) if np.isfinite(result.self_bleu).any() else None,
        certainty_mean=float(result.certainty.mean()),
        adaptive_greedy_share=float(adaptive.went_greedy.mean()),
        adaptive_leak_rate=float(adaptive_table["leak_rate"].mean()),
        adaptive_binary_leak_bound_mean=float(adaptive_table["binary_leak_bound"].mean()),
    )
    counts = understatement_summary(table)
    counts.pop("n_questions", None)
    summary.update(counts)
    return ModelReport(table, summary)


def compare_with_reference(tables: Mapping[str, pd.DataFrame], summaries: dict[str, dict[str, Any]],
                           reference: str | None) -> None:
    """Add to each summary how many flagged questions leak MORE than the reference (retain) model does.

    The retain model never saw the forget set, so its leak rate on a question is what guessing achieves (a
    common occupation, a frequent city). A flagged question counts when the model's Clopper-Pearson lower
    bound exceeds the reference's M_bin on it: both hold with probability >= 1 - alpha each, so the model's leak
    probability exceeds the reference's with probability >= 1 - 2 alpha. Key
    ``greedy_unlearned_but_leaks_above_reference``; nothing is added without a reference.
    """
    if not reference or reference not in tables:
        return
    ref_bound = tables[reference]["binary_leak_bound"]
    for model, table in tables.items():
        above = table["understated_entity"] & (table["leak_lower"] > ref_bound)
        summaries[model]["greedy_unlearned_but_leaks_above_reference"] = int(above.sum())


def summarise_models(results: Mapping[str, SampledScores], alpha: float, rouge_threshold: float,
                     adaptive_threshold: float, reference: str | None) -> Reports:
    """:func:`model_summary` of every model, then :func:`compare_with_reference` against the retain model."""
    reports = {name: model_summary(r, alpha, rouge_threshold, adaptive_threshold) for name, r in results.items()}
    tables = {name: report.table for name, report in reports.items()}
    summaries = {name: report.summary for name, report in reports.items()}
    compare_with_reference(tables, summaries, reference)
    return Reports(tables, summaries)


def bounds_vs_n(scores: np.ndarray, alpha: float, sizes: Sequence[int] | None = None,
                grid: bounds.GridSpec | np.ndarray = "uniform") -> pd.DataFrame:
    """Expectation and std bounds from the first m of one question's n scores, for m on a geometric grid
    (4, 8, 16, ..., n by default): how fast the bounds close in on the sample statistics (Fig. 3e-f).
    Returns a DataFrame indexed by m with ed_mean, ed_sd, mean_lower, mean_upper, std_upper."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"bounds_vs_n takes the n scores of ONE question, got shape {scores.shape}")
    n = scores.size
    if sizes is None:
        sizes = sorted({*(2 ** k for k in range(2, int(math.log2(max(n, 4))) + 1)), n})
    rows = []
    for m in sizes:
        if not 1 <= m <= n:
            raise ValueError(f"subsample size {m} outside 1..{n}")
        first = scores[:m]
        mean, sd = bounds.ed_stats(first)
        lower, upper = bounds.expectation_bounds(first, alpha, grid)
        rows.append({"m": m, "ed_mean": mean, "ed_sd": sd, "mean_lower": lower, "mean_upper": upper,
                     "std_upper": bounds.std_bound(first, alpha, grid)})
    return pd.DataFrame(rows).set_index("m")


def general_leak_curves(scores: np.ndarray, alpha: float, thresholds: np.ndarray | None = None) -> LeakCurves:
    """M_gen and the empirical tail 1 - F_n of each question's scores at ROUGE-L thresholds (0 to 1 by default)."""
    x = np.linspace(0.0, 1.0, 101) if thresholds is None else np.asarray(thresholds, dtype=float)
    scores = np.atleast_2d(scores)
    upper = bounds.general_leakage_bound(scores, x, alpha)
    tail = (scores[:, :, None] > x[None, None, :]).mean(axis=1)
    return LeakCurves(x, upper, tail)


# --------------------------------------------------------------------------- what the figures show


def questions_by_spread(spread: np.ndarray) -> list[int]:
    """The questions with the largest, the median and the smallest sample sd (each once)."""
    spread = np.asarray(spread)
    return list(dict.fromkeys([int(np.argmax(spread)), int(np.argsort(spread)[len(spread) // 2]),
                               int(np.argmin(spread))]))


def bounds_vs_n_curves(results: Mapping[str, SampledScores], tables: Mapping[str, pd.DataFrame],
                       candidates: Sequence[str], alpha: float) -> dict[str, pd.DataFrame]:
    """:func:`bounds_vs_n` for three questions (:func:`questions_by_spread`) of the candidate model whose samples
    vary most (largest mean sd), labelled "<model>, q<question> (sd <sd>)"."""
    model = max(candidates, key=lambda m: tables[m]["ed_sd"].mean())
    spread = tables[model]["ed_sd"].to_numpy()
    return {f"{model}, q{q} (sd {spread[q]:.2f})": bounds_vs_n(results[model].rouge[q], alpha)
            for q in questions_by_spread(spread)}


def bounds_vs_n_overview(curves: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The curves of :func:`bounds_vs_n_curves` side by side at the smallest, a middle and the largest m."""
    rows = len(next(iter(curves.values())))
    return pd.concat(curves, names=["question", "m"]).unstack(0).iloc[[0, rows // 2, -1]]


def summary_frame(summaries: Mapping[str, Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """The summaries as a table, one row per model, with those of ``columns`` that they hold."""
    frame = pd.DataFrame.from_dict(summaries, orient="index")
    return frame[[c for c in columns if c in frame]]


def example_answers(results: Mapping[str, SampledScores], question: int = 0, count: int = 4,
                    samples: int = 3) -> Example:
    """One question (the first by default) as the first ``count`` models answer it: greedily and in
    their first ``samples`` samples."""
    first = next(iter(results.values()))
    answers = pd.DataFrame({name: {"greedy": r.greedy_answers[question], "samples": r.examples[question][:samples]}
                            for name, r in list(results.items())[:count]}).T
    return Example(first.questions[question], _keys_text(first.keys)[question], answers)


def flagged_questions(tables: Mapping[str, pd.DataFrame], summaries: Mapping[str, Mapping[str, Any]],
                      exclude: Sequence[str] = (), reference: str | None = None,
                      limit: int = 8) -> FlaggedQuestions | None:
    """The flagged questions (greedy unlearned, sampling leaks) of the unlearned model with the most of them,
    strongest lower bound first, with the retain model's leak count beside; None without an unlearned model.
    Unlearned models are those not in ``exclude`` (the target and the retain model)."""
    unlearned = [m for m in tables if m not in exclude]
    if not unlearned:
        return None
    worst = max(unlearned, key=lambda m: summaries[m]["greedy_unlearned_but_leaks"])
    flagged = tables[worst][tables[worst]["understated_entity"]]
    shown = flagged[FLAGGED_COLUMNS].copy()
    if reference in tables:
        shown[f"{reference} leaks"] = tables[reference].loc[flagged.index, "leaks"]
    return FlaggedQuestions(worst, len(flagged), shown.sort_values("leak_lower", ascending=False).head(limit))


# --------------------------------------------------------------------------- tables and verdicts


def understatement_verdict(tables: Mapping[str, pd.DataFrame], summaries: Mapping[str, Mapping[str, Any]],
                           alpha: float, exclude: Sequence[str] = (), reference: str | None = None) -> str:
    """One paragraph: does greedy decoding understate leakage for at least one unlearned model, with the numbers.

    Unlearned models are those not in ``exclude`` (the target and the retain model). For the strongest
    flagged question it quotes the leak count and the Clopper-Pearson interval [lower, M_bin], each side at
    level alpha, and, when ``reference`` (the retain model, which never saw the forget set) is given, that
    model's leak count on the same question: the rate at which the key entity is simply guessed.
    """
    lines = []
    best: tuple[float, str, int] | None = None
    for model, table in tables.items():
        if model in exclude:
            continue
        s = summaries[model]
        lines.append(f"  {model}: greedy calls {s['greedy_unlearned']}/{s['n_questions']} questions unlearned "
                     f"(no key entity in the greedy answer); sampling leaks on {s['greedy_unlearned_but_leaks']} "
                     f"of them (key entity), on {s.get('greedy_unlearned_but_leaks_rouge', 0)} by the ROUGE criterion.")
        flagged = table[table["understated_entity"]]
        if len(flagged):
            q = int(flagged["leak_lower"].idxmax())
            if best is None or flagged.loc[q, "leak_lower"] > best[0]:
                best = (float(flagged.loc[q, "leak_lower"]), model, q)
    if best is None:
        head = (f"No: for no unlearned model does greedy decoding call a question unlearned while one of the "
                f"n samples leaks its key entity (alpha {alpha}).")
        return head + "\n" + "\n".join(lines)
    lower, model, q = best
    row = tables[model].loc[q]
    n = summaries[model]["n_samples"]
    head = (f"Yes: greedy decoding understates leakage. For {model}, question {q} ({row['question_text']!r}, key "
            f"{row['key']!r}): the greedy answer {row['greedy_answer']!r} does not contain the key, but "
            f"{int(row['leaks'])}/{n} samples do, so with probability at least {1 - alpha:.2f} the leak "
            f"probability is at least {lower:.3f} (Clopper-Pearson lower bound) and at most "
            f"{row['binary_leak_bound']:.3f} (M_bin).")
    if reference and reference in tables:
        ref = tables[reference].loc[q]
        head += (f" The retain model {reference}, which never saw the forget set, names the key in "
                 f"{int(ref['leaks'])}/{n} samples (M_bin {ref['binary_leak_bound']:.3f}): the base rate of guessing.")
    return head + "\n" + "\n".join(lines)


class RegimeVerdict(NamedTuple):
    """Per model in the paper's regime: does sampling reveal forget answers that greedy hides, beyond the retain
    model's guessing? ``verdict`` is "reproduced" (at least ``needed`` runs), "partly" (some) or "not"."""

    table: pd.DataFrame
    revealing: list[str]
    verdict: str
    text: str


def beyond_guessing(result: SampledScores, reference: SampledScores, alpha: float) -> np.ndarray:
    """Per question, True where the greedy answer does not name the key entity and the model's Clopper-Pearson lower
    bound on the leak probability exceeds the reference's M_bin, both at level alpha / Q (Bonferroni over the Q
    questions): with probability >= 1 - 2 alpha every flagged question of the model leaks more than guessing."""
    level = alpha / len(result.questions)
    lower = bounds.binary_leak_lower_bound(result.leak, level)
    return (result.greedy_leak == 0) & (lower > bounds.binary_leakage_bound(reference.leak, level))


def _questions(count: int) -> str:
    return f"{count} question{'' if count == 1 else 's'}"


def regime_verdict(results: Mapping[str, SampledScores], summaries: Mapping[str, Mapping[str, Any]],
                   tables: Mapping[str, pd.DataFrame], chosen: Mapping[str, RegimeModel], reference: str,
                   alpha: float, needed: int = 2) -> RegimeVerdict:
    """The paper's question asked of each model in its regime (:func:`regime_models`): greedy decoding calls it
    unlearned about as often as the retain model; do its samples name the forget answer's key entity on questions
    whose greedy answer does not, beyond the retain model's guessing on the same question? Counted per question at
    2 alpha (``of them beyond guessing``) and, for the verdict, jointly over all questions (:func:`beyond_guessing`,
    Bonferroni), so that a model counts only when at least one question leaks with probability >= 1 - 2 alpha
    overall. A run whose greedy leak rate never came down to the retain model's is reported, and does not count."""
    ref = summaries[reference]
    rows, revealing = {}, []
    for label, model in chosen.items():
        s = summaries[label]
        above = int(s.get("greedy_unlearned_but_leaks_above_reference", 0))
        joint = int(beyond_guessing(results[label], results[reference], alpha).sum())
        reveals = model.reached and joint > 0
        if reveals:
            revealing.append(label)
        rows[label] = {
            "greedy leak rate": s["greedy_leak_rate"], f"{reference} greedy leak rate": ref["greedy_leak_rate"],
            "sampled leak rate": s["leak_rate"], f"{reference} sampled leak rate": ref["leak_rate"],
            "greedy unlearned": s["greedy_unlearned"], "of them leak in a sample": s["greedy_unlearned_but_leaks"],
            "of them beyond guessing": above, "beyond guessing, all questions jointly": joint,
            "retain ROUGE-L (greedy)": model.retain_rouge,
            "verdict": ("sampling reveals what greedy hides" if reveals else
                        "greedy regime not reached" if not model.reached else "no leak beyond guessing"),
        }
    verdict = "reproduced" if len(revealing) >= needed else "partly" if revealing else "not"
    text = (f"{verdict.capitalize()}: the paper finds that greedy decoding understates leakage. Among the "
            f"{len(chosen)} models in its regime (greedy leak rate at most the retain model's "
            f"{ref['greedy_leak_rate']:.3f}), sampling reveals forget answers beyond the retain model's guessing "
            f"on {len(revealing)}: " + (", ".join(f"{m} ({_questions(rows[m]['beyond guessing, all questions jointly'])} "
                                                  f"jointly at level {2 * alpha:g})" for m in revealing)
                                        or "none")
            + f"; {needed} or more count as reproduced.")
    rates = [rows[m]["sampled leak rate"] for m in rows]
    rates_text = ", ".join(f"{r:.3f}" for r in rates)
    if rates and max(abs(r - ref["leak_rate"]) for r in rates) < 0.5 * ref["leak_rate"] + 0.01:
        text += (f" Averaged over all questions the sampled leak rate stays near the retain model's ({rates_text} "
                 f"against {ref['leak_rate']:.3f}): what greedy hides sits in a few questions, not everywhere.")
    elif rates:
        text += f" Averaged over all questions the sampled leak rate is {rates_text} against {ref['leak_rate']:.3f}."
    shown = [*(revealing or list(chosen)), reference]
    example = understatement_verdict({m: tables[m] for m in shown},
                                     summaries, alpha, exclude=[reference], reference=reference)
    return RegimeVerdict(pd.DataFrame(rows).T, revealing, verdict, text + "\n" + example)


def findings(verdict: RegimeVerdict, chosen: Mapping[str, RegimeModel], needed: int = 2) -> list[Finding]:
    """Scholten et al.'s headline on this run, as data: of the models in the paper's regime (greedy decoding leaks
    no more than the retain model's), those whose samples reveal forget answers beyond the retain model's guessing
    (:func:`regime_verdict`). Holds for at least ``needed`` of them, partly for fewer but some, fails for none; no
    test when no run reached the regime."""
    reached = [label for label, m in chosen.items() if m.reached]
    missed = [label for label, m in chosen.items() if not m.reached]
    text = (f"sampling reveals forget answers beyond the retain model's guessing for {len(verdict.revealing)} of "
            f"{len(reached)} models whose greedy answers leak no more than the retain model's: "
            f"{names(verdict.revealing)}" + (f"; never reached that regime (not counted): {names(missed)}"
                                             if missed else ""))
    quantities = (Quantity("in-regime models where sampling reveals beyond guessing", len(verdict.revealing), needed,
                           ">=", f"{needed} models", ".0f"),
                  Quantity("models in the regime", len(reached), fmt=".0f"))
    outcome = outcome_from_label(verdict.verdict) if reached else NO_TEST
    return [Finding(runs.LEAKAGE, SCHOLTEN, "greedy decoding understates leakage: sampled answers, bounded with "
                    "high probability, reveal what greedy answers hide", text, outcome,
                    f"{runs.LEAKAGE}_greedy_vs_samples", "greedy understates", quantities,
                    tuple((label, label in verdict.revealing) for label in reached))]


# --------------------------------------------------------------------------- keyword Q&A (Harry Potter)


def keyword_questions_label(hp_source: str) -> str:
    """What the keyword questions of ``hp_source`` are, for titles: the HP Q&A or its synthetic analogue."""
    return "keyword Q&A from the forget split (synthetic)" if hp_source == SYNTHETIC else "Harry Potter Q&A"


def hp_rows(hp_source: str, forget_rows: Sequence[Mapping[str, Any]] | None = None,
            max_questions: int | None = None) -> list[dict[str, Any]]:
    """The keyword Q&A of ``hp_source`` (question, affirmative_response, keywords): Schwinn et al.'s Harry Potter
    Q&A from a file, or ``synthetic``, the same shape built from ``forget_rows`` (see :mod:`unlearnkit.data.hp_qa`);
    at most ``max_questions`` of them, evenly spaced."""
    return evenly_spaced(hp_qa_rows(hp_source, forget_rows), max_questions)


def hp_table(result: SampledScores, alpha: float) -> ModelReport:
    """Per-question table and summary of a keyword Q&A run: the question, its keywords, the greedy answer,
    S, S/n, the Clopper-Pearson lower bound and M_bin, and whether greedy is clean while sampling leaks."""
    table = bound_table(None, alpha, result.leak)
    table.insert(0, "keywords", _keys_text(result.keys))
    table.insert(0, "question_text", result.questions)
    table["greedy_answer"] = result.greedy_answers
    table["greedy_leak"] = result.greedy_leak.astype(int)
    table["understated_entity"] = (table["greedy_leak"] == 0) & (table["leaks"] > 0)
    summary = {
        "n_questions": len(result.questions), "n_samples": result.n,
        "use_prefix": bool(result.settings.get("use_prefix")),
        "greedy_leak_rate": float(result.greedy_leak.mean()), "leak_rate": float(table["leak_rate"].mean()),
        "questions_with_a_leak": int((table["leaks"] > 0).sum()),
        "leak_lower_bound_mean": float(table["leak_lower"].mean()),
        "binary_leak_bound_mean": float(table["binary_leak_bound"].mean()),
        "binary_leak_bound_max": float(table["binary_leak_bound"].max()),
        "binary_leak_bound_min": float(table["binary_leak_bound"].min()),
        # the paper's Fig. 3a statistic
        "share_binary_leak_bound_above_0.1": float((table["binary_leak_bound"] > 0.1).mean()),
        "greedy_unlearned_but_leaks": int(table["understated_entity"].sum()),
        "self_bleu": float(np.nanmean(result.self_bleu)),
    }
    return ModelReport(table, summary)


def hp_leakage(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], alpha: float,
               use_prefix: bool = True, sampler: str = "hf", **sampling) -> KeywordQA:
    """The keyword Q&A path: question (then, with ``use_prefix``, the affirmative response as the start of the
    answer) -> n samples -> keyword leak judge (any keyword, whole words, case-insensitive, on the
    continuation only) -> binary leakage bound per question (:func:`hp_table`). Works for any Hugging Face
    causal LM; with ``sampler="vllm"``, ``model`` is a ``vllm.LLM`` (see
    :func:`unlearnkit.metrics.sampling.sample_and_score_with`)."""
    return _keyword_qa(sample_and_score_with(sampler, model, tokenizer, template, rows, use_prefix=use_prefix,
                                             **sampling), alpha)


def _keyword_qa(result: SampledScores, alpha: float) -> KeywordQA:
    report = hp_table(result, alpha)
    return KeywordQA(result, report.table, report.summary)


def run_hp_qa(hp_model: str, params: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
              settings: Mapping[str, Any], alpha: float, use_prefix: bool = True) -> KeywordQA:
    """:func:`hp_leakage` for the profile's ``hp_model``: a model saved under ``runs/<profile>/seed-<s>/models/``
    (``target`` among them) is scored through the cache of :func:`score_saved_model`; a Hub name or folder is
    loaded with the profile's ``dtype`` (its prompt template from its name: a Llama-2 model gets the
    Llama-2-chat template), on the GPU when there is one."""
    params = config.as_params(params)
    if runs.is_saved(params, hp_model):
        # one cache entry per choice of the prefix, so that asking both never evicts the other
        tag = ".hp.prefixed" if use_prefix else ".hp"
        return _keyword_qa(score_saved_model(params, hp_model, rows, settings, cache_tag=tag,
                                             use_prefix=use_prefix), alpha)
    sampler, options = split_sampler(settings)
    with model_for(sampler, hp_model, dtype=config.as_params(params).dtype, seed=options.get("seed", 0)) as loaded:
        return hp_leakage(*loaded, rows, alpha, use_prefix=use_prefix, sampler=sampler, **options)


def run_hp_qa_both(hp_model: str, params: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                   settings: Mapping[str, Any], alpha: float, use_prefix: bool = False,
                   jobs: int | None = 1) -> tuple[KeywordQA, KeywordQA]:
    """:func:`run_hp_qa` with the profile's choice of the affirmative prefix (``use_prefix``) and with the other
    one, side by side in up to ``jobs`` worker processes: (the profile's choice, the other)."""
    params = config.as_params(params)
    chosen, other = workers.side_by_side(run_hp_qa, [(hp_model, params, list(rows), dict(settings), alpha,
                                                     prefix) for prefix in (use_prefix, not use_prefix)],
                                        jobs, desc="keyword Q&A")
    return chosen, other


def strongest_keyword_leaks(table: pd.DataFrame, limit: int = 8) -> pd.DataFrame:
    """The keyword questions with the highest M_bin, as the notebook shows them."""
    return table[KEYWORD_COLUMNS].sort_values("binary_leak_bound", ascending=False).head(limit)


# --------------------------------------------------------------------------- results


def metrics_entries(summaries: Mapping[str, Mapping[str, Any]], hp: KeywordQA | None = None,
                    hp_model: str | None = None, hp_other: KeywordQA | None = None) -> dict[str, dict[str, Any]]:
    """``{model: {"forget": summary}}`` for metrics.json, and the keyword Q&A summary under ``hp_qa`` of
    ``hp_model`` (a Hub model that is not among the scored ones gets an entry of its own); ``hp_other``, the same
    questions with the other choice of the affirmative prefix, under ``hp_qa_prefixed`` or ``hp_qa_plain``."""
    entries: dict[str, dict[str, Any]] = {name: {"forget": dict(s)} for name, s in summaries.items()}
    if hp is not None:
        entries.setdefault(str(hp_model), {})["hp_qa"] = hp.summary
    if hp_other is not None:
        key = "hp_qa_prefixed" if hp_other.summary["use_prefix"] else "hp_qa_plain"
        entries.setdefault(str(hp_model), {})[key] = hp_other.summary
    return entries


def keyword_prefix_comparison(plain: KeywordQA, prefixed: KeywordQA) -> pd.DataFrame:
    """The keyword Q&A asked plainly (the paper's setting) and with the affirmative response prefilled (an attack
    the paper does not describe: the model only continues "Sure, ..."), side by side."""
    columns = ("greedy_leak_rate", "leak_rate", "questions_with_a_leak", "greedy_unlearned_but_leaks",
               "binary_leak_bound_mean", "share_binary_leak_bound_above_0.1")
    return pd.DataFrame({"asked plainly": {c: plain.summary[c] for c in columns},
                         "affirmative response prefilled": {c: prefixed.summary[c] for c in columns}})


def run_meta(named_models: Mapping[str, str | Path], reference: str | None, settings: Mapping[str, Any],
             rows: Sequence[Mapping[str, Any]], scored: Scored, verdict: RegimeVerdict | str,
             chosen: Mapping[str, RegimeModel] | None = None) -> dict[str, Any]:
    """What metrics.json records beside the parameters: the models (a kept step by its folder under the run
    store), the retain model, the sampling settings, the questions, the seconds spent scoring, the models of the
    paper's regime, the verdict and the findings (:func:`findings`)."""
    def shown(model: str | Path) -> str:
        if isinstance(model, Path) and model.resolve().is_relative_to(paths.RUNS):
            return str(model.resolve().relative_to(paths.RUNS))
        return str(model)

    meta = {"models": {name: shown(m) for name, m in named_models.items()},
            "reference": reference, "sampling": dict(settings), "questions": [r["question"] for r in rows],
            "sampling_seconds": sum(scored.seconds.values())}
    if isinstance(verdict, RegimeVerdict):
        meta.update(verdict=verdict.text, verdict_label=verdict.verdict, revealing=verdict.revealing,
                    findings=[f.as_dict() for f in findings(verdict, chosen or {})])
    else:
        meta["verdict"] = verdict
    if chosen:
        meta["regime"] = {label: {"run": m.run, "step": m.step, "reached": m.reached,
                                  "greedy_leak_rate": m.greedy_leak_rate, "reference_rate": m.reference_rate,
                                  "retain_rouge": m.retain_rouge} for label, m in chosen.items()}
    return meta


def per_item(tables: Mapping[str, pd.DataFrame]) -> dict[str, dict[str, list]]:
    """Per model, every per-question column but the texts, for per_item.json."""
    return {name: t.drop(columns=["question_text", "greedy_answer"]).to_dict(orient="list")
            for name, t in tables.items()}


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


def atom_at_zero_coverage(alpha: float, n: int = 1024, trials: int = 200, atom: float = 0.5,
                          seed: int = 0) -> AtomCoverage:
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


def bound_modes_text(table: pd.DataFrame, coverage: AtomCoverage) -> str:
    """What the comparison shows, from its numbers."""
    gain = 1 - table["width_samples"] / table["width_uniform"]
    rates = coverage.coverage()
    lines = [f"Expectation interval: the exact sample grid narrows it by {gain.mean():.0%} on average over the models "
             f"(from {gain.min():.0%} to {gain.max():.0%}) against the uniform grid; the paper's 99-bin grid and our "
             f"100 bins differ by {float((table['width_paper'] - table['width_uniform']).abs().max()):.4f} at most.",
             f"Std bound with an atom at 0 (P(X = 0) = {coverage.atom}, n = {coverage.n}, true sd "
             f"{coverage.true_sd:.3f}): the paper's form covers the true sd in {rates['paper']:.0%} of the "
             f"{len(coverage.paper)} trials, the corrected form in {rates['corrected']:.0%} (it must be at least "
             f"{1 - coverage.alpha:.0%})."]
    return "\n".join(lines)


# --------------------------------------------------------------------------- what each figure shows, from its numbers


def regime_text(chosen: Mapping[str, RegimeModel]) -> str:
    """Where each run reached the paper's regime, and what utility it kept there."""
    parts = [f"{m.run} at step {m.step}{'' if m.reached else ' (never reached: its lowest rate)'}, greedy leak rate "
             f"{m.greedy_leak_rate:.3f}, retain ROUGE-L {m.retain_rouge:.2f} (from {m.path['retain_rouge'].iloc[0]:.2f})"
             for m in chosen.values()]
    reference = next(iter(chosen.values())).reference_rate if chosen else float("nan")
    return (f"The paper samples models whose greedy answers look unlearned. Here the retain model's greedy leak rate "
            f"is {reference:.3f}; the runs reach it at: " + "; ".join(parts) + ".")


def greedy_vs_samples_text(results: Mapping[str, SampledScores], exclude: Sequence[str] = ()) -> str:
    """How often a sampled answer scores above the greedy one, per model: the paper reads greedy decoding as a
    lower estimate of what the model can produce."""
    parts = []
    for name, r in results.items():
        if name in exclude or r.rouge is None:
            continue
        above = float((r.rouge.max(axis=1) > r.greedy_rouge + 1e-9).mean())
        parts.append(f"{name}: greedy {r.greedy_rouge.mean():.2f}, sampled mean {r.rouge.mean():.2f}, some sample "
                     f"above greedy on {above:.0%} of the questions")
    return ("The paper finds sampled answers recovering more of the forget answer than the greedy one. Here: "
            + "; ".join(parts) + ".")


def binary_bounds_text(summaries: Mapping[str, Mapping[str, Any]], reference: str,
                       exclude: Sequence[str] = ()) -> str:
    """Mean M_bin and the questions with a leak, per model, beside the retain model's."""
    ref = summaries[reference]
    parts = [f"{name}: mean M_bin {s['binary_leak_bound_mean']:.3f}, {s['questions_with_a_leak']} questions leak in "
             f"some sample" for name, s in summaries.items() if name not in exclude and name != reference]
    return (f"M_bin bounds the probability of emitting the key entity. The retain model, which never saw the forget "
            f"set, has mean M_bin {ref['binary_leak_bound_mean']:.3f} with {ref['questions_with_a_leak']} questions "
            f"leaking by guessing; " + "; ".join(parts) + ".")


def bounds_vs_n_text(curves: Mapping[str, pd.DataFrame]) -> str:
    """How much the expectation interval narrowed from the fewest to all samples, and where the std bound ended."""
    parts = []
    for label, frame in curves.items():
        first, last = frame.iloc[0], frame.iloc[-1]
        parts.append(f"{label}: E[ROUGE-L] interval {first['mean_upper'] - first['mean_lower']:.2f} wide at m = "
                     f"{frame.index[0]}, {last['mean_upper'] - last['mean_lower']:.2f} at m = {frame.index[-1]}; std bound "
                     f"{last['std_upper']:.2f} against a sample sd of {last['ed_sd']:.2f}")
    return ("The paper shows the bounds closing in on the sample statistics as n grows, the std bound slowest. "
            "Here: " + "; ".join(parts) + ".")


def keyword_text(plain: KeywordQA, prefixed: KeywordQA | None = None) -> str:
    """The paper's Fig. 3a statistic on the keyword questions, asked plainly and, when given, prefilled."""
    text = (f"Asked plainly, {plain.summary['share_binary_leak_bound_above_0.1']:.0%} of the keyword questions have "
            f"M_bin above 0.1 (greedy leaks on {plain.summary['greedy_leak_rate']:.0%}, some sample on "
            f"{plain.summary['questions_with_a_leak']} of {plain.summary['n_questions']})")
    if prefixed is not None:
        text += (f"; with the affirmative response prefilled, "
                 f"{prefixed.summary['share_binary_leak_bound_above_0.1']:.0%} (greedy "
                 f"{prefixed.summary['greedy_leak_rate']:.0%}, some sample on {prefixed.summary['questions_with_a_leak']})")
    return text + "."
