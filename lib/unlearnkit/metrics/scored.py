"""Sampled scores of saved models, cached in the run store: a model of a run (or a step kept along an unlearning run)
sampled by the profile's sampler and scored (:func:`sample_and_score_with`), once per model identity, rows, settings
and :data:`SAMPLING_VERSION`; several models side by side in worker processes. What notebooks 05 and 06 both sample
with, and the question sets they share."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .. import config, models, runs, workers
from ..config import Params
from .sampling import SAMPLING_VERSION, SampledScores, model_for, sample_and_score_with, split_sampler
from .tofu import tofu_eval_splits

#: The notebook whose cache a score of :func:`score_model_folder` goes to when the caller names none.
DEFAULT_NOTEBOOK = runs.LEAKAGE


class Scored(NamedTuple):
    """Each model's :class:`SampledScores` and the wall time it took (a cached model: well under a second)."""

    results: dict[str, SampledScores]
    seconds: dict[str, float]


def evenly_spaced(rows: Sequence, max_items: int | None) -> list:
    """At most ``max_items`` rows spread evenly over the list: every author and attribute gets a share,
    where the first rows would cover only the first few authors."""
    if not max_items or max_items >= len(rows):
        return list(rows)
    picks = np.unique(np.linspace(0, len(rows) - 1, int(max_items)).round().astype(int))
    return [rows[i] for i in picks]


def retain_rows(source, params: Params, max_items: int | None) -> list[dict[str, Any]]:
    """At most ``max_items`` questions of the retain evaluation set of the profile's forget split, evenly spaced."""
    return evenly_spaced(source.load(tofu_eval_splits(params.forget_split)["retain"][1]), max_items)


def score_model_folder(params: Params, folder: str | Path, cache_name: str, rows: Sequence[Mapping[str, Any]],
                       settings: Mapping[str, Any], notebook: str = DEFAULT_NOTEBOOK, use_cache: bool = True,
                       **kwargs) -> SampledScores:
    """:func:`unlearnkit.metrics.sampling.sample_and_score_with` on the model saved in ``folder`` (a model of the
    run store or a step kept along an unlearning run), with the sampler the settings name (hf when they name
    none), through the cache of ``notebook``: keyed by the model's identity, the rows (questions, answers, keys,
    prefixes), the settings, ``kwargs`` (e.g. ``use_prefix``) and :data:`unlearnkit.metrics.sampling.SAMPLING_VERSION`.
    A second call with nothing changed reads the cache instead of sampling again; one entry is kept per
    ``cache_name``. With hf the model decodes on the GPU when there is one, else under the CPU-thread policy of
    :func:`unlearnkit.models.cpu_threads`."""
    folder = Path(folder)
    if not models.is_loadable(folder):  # a model of the store, a folder saved elsewhere (runner eval), a Hub name
        raise FileNotFoundError(f"no saved model in {folder}")
    depends_on = {"model": runs.model_identity(folder), "rows": [dict(r) for r in rows],
                  "settings": dict(settings), "kwargs": kwargs}
    sampler, options = split_sampler(settings)

    def sample() -> dict[str, Any]:
        with model_for(sampler, folder, dtype=None, template=None, seed=options["seed"]) as loaded:
            return sample_and_score_with(sampler, *loaded, rows, **options, **kwargs).to_json()

    cached = runs.cached_json(params, notebook, cache_name, depends_on, sample, SAMPLING_VERSION, use_cache)
    return SampledScores.from_json(cached)


def score_saved_model(params: Params, name: str, rows: Sequence[Mapping[str, Any]], settings: Mapping[str, Any],
                      use_cache: bool = True, cache_tag: str = "", notebook: str = DEFAULT_NOTEBOOK,
                      **kwargs) -> SampledScores:
    """:func:`score_model_folder` on a model saved under ``runs/<profile>/seed-<s>/models/<name>`` (a message names the
    notebook that makes it when it is missing). ``cache_tag`` (e.g. ``.hp``) keeps the cache of another
    question set of the same model apart, so neither evicts the other."""
    if not runs.is_saved(params, name):
        runs.require_saved(params, [name])
    return score_model_folder(params, runs.model_dir(params, name), f"{name}{cache_tag}", rows, settings,
                              notebook, use_cache, **kwargs)


def _score_one(params: Params, name: str, saved: str | Path, rows: Sequence[Mapping[str, Any]],
               settings: Mapping[str, Any], notebook: str, cache_tag: str) -> tuple[SampledScores, float]:
    started = time.time()
    if isinstance(saved, Path):
        result = score_model_folder(params, saved, f"{name}{cache_tag}", rows, settings, notebook)
    else:
        result = score_saved_model(params, saved, rows, settings, cache_tag=cache_tag, notebook=notebook)
    return result, time.time() - started


def score_models(params: Params, named_models: Mapping[str, str | Path], rows: Sequence[Mapping[str, Any]],
                 settings: Mapping[str, Any], notebook: str = DEFAULT_NOTEBOOK, cache_tag: str = "") -> Scored:
    """Each ``{display name: saved model name or folder}`` scored (:func:`score_saved_model`,
    :func:`score_model_folder`), with the seconds each took; side by side in up to ``jobs`` worker processes
    (None: one per core), each writing its model's cache entry."""
    if not named_models:  # nothing to score (a seed whose regime search kept no step): an empty result, not an error
        return Scored({}, {})
    return score_many(params, [(name, saved, rows, settings, cache_tag) for name, saved in named_models.items()],
                      notebook)[0]


def score_many(params: Params, tasks: Sequence[tuple[str, str | Path, Sequence[Mapping[str, Any]], Mapping[str, Any],
                                                   str]],
               notebook: str = DEFAULT_NOTEBOOK) -> list[Scored]:
    """Several :func:`score_models` in one go, so that all their models run side by side: ``tasks`` are
    ``(display name, saved model name or folder, rows, settings, cache tag)``; one :class:`Scored` per distinct
    (rows, settings, cache tag), in the order they first appear."""
    jobs = params.jobs
    done = workers.side_by_side(_score_one, [(params, name, saved, rows, settings, notebook, tag)
                                            for name, saved, rows, settings, tag in tasks], jobs, desc="sample")
    groups: dict[str, Scored] = {}
    for (name, _, rows, settings, tag), (result, spent) in zip(tasks, done):
        key = config.params_hash({"rows": [dict(r) for r in rows], "settings": dict(settings), "tag": tag})
        group = groups.setdefault(key, Scored({}, {}))
        group.results[name], group.seconds[name] = result, spent
    return list(groups.values())
