"""The models, each scored once and cached: which models are evaluated, each model's scores in every format
(side by side in worker processes) and the scores in the metrics.json layout."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ... import config, models, pipeline, runs, workers
from ...metrics import formats as scoring
from ...metrics.formats import FORMAT_SCORING_VERSION, FormatScores
from .readouts import SETS


def _required(params: config.Params, names: Sequence[str]) -> dict[str, str]:
    """``{name: folder or Hub name}`` of models that must all exist; ``base`` of a Hub-model profile is the Hub
    model itself (never saved)."""
    hub_base = params.model != pipeline.TINY
    found = runs.require_saved(params, [n for n in names if not (n == "base" and hub_base)])
    return {name: params.model if name == "base" and hub_base else str(found[name]) for name in dict.fromkeys(names)}


def evaluated_models(params: config.Params, names: Sequence[str] | None) -> dict[str, str]:
    """``{name: folder or Hub name}`` of the models to evaluate, in the order of the figures.

    ``names=None`` (``format_models: null``) means base, target, the retain model and every unlearning run
    (:func:`unlearnkit.runs.saved_models`; a Hub model is its own base); models that are not saved are left
    out with a message, except target and the retain model, without which nothing can be compared. Named
    models must all exist.
    """
    if names is not None:
        return _required(params, names)
    _required(params, ["target", runs.retain_model(params, params.forget_split)])
    saved = runs.saved_models(params, include_base=True, forget_split=params.forget_split)
    found = {name: str(runs.model_dir(params, folder)) for name, folder in saved.items()}
    if "base" not in found and params.model != pipeline.TINY:
        found = {"base": params.model, **found}  # a Hub model is used as it is: never saved
    left_out = [name for name in ("base", *runs.unlearning_runs(params)) if name not in found]
    if left_out:
        print(f"left out (not saved): {', '.join(left_out)}")
    return found


def evaluate_model(name: str, location: str, items_by_format, params: config.Params,
                   notebook: str = runs.FORMATS) -> FormatScores:
    """Every format's score of one model (``{format: {set: score}}``) and its per-item rows, cached in the run
    store (the folder of ``notebook``) by the model's identity, the items, the scoring settings and the scoring
    version."""

    def score() -> dict[str, Any]:
        local = Path(location).is_dir()  # a saved model knows its template; a Hub model takes the profile's
        loaded = models.load_model(location, dtype=params.dtype, device="auto",
                                   template=None if local else params.template)
        with models.cpu_threads(loaded.model):
            return scoring.evaluate_formats(loaded.model, loaded.tokenizer, loaded.template, items_by_format,
                                            batch_size=params.eval_batch_size, max_new_tokens=params.max_new_tokens,
                                            likelihood=params.format_likelihood)._asdict()

    depends_on = {"model": runs.model_identity(location), "items": items_by_format,
                  "settings": {k: params[k] for k in ("format_likelihood", "max_new_tokens", "dtype")}}
    stored = runs.cached_json(params, notebook, name, depends_on, score, FORMAT_SCORING_VERSION)
    return FormatScores(**stored)


class FormatEvaluation(NamedTuple):
    """Every model's scores in the metrics.json layout (``{model: {set: {format: score}}}``) and its per-item
    rows (``{model: {format: {set: [row, ...]}}}``)."""

    scores: dict[str, dict[str, dict[str, float]]]
    per_item: dict[str, Any]


def _timed_evaluation(name: str, location: str, items_by_format, params: config.Params) -> tuple[FormatScores, float]:
    started = time.time()
    return evaluate_model(name, location, items_by_format, params), time.time() - started


def evaluate_all(named_models: Mapping[str, str], items_by_format, params: config.Params) -> FormatEvaluation:
    """:func:`evaluate_model` for each model, side by side in up to ``jobs`` worker processes (None: one per core;
    each loads its model and writes its cache entry). Prints the seconds each model took."""
    scored = workers.side_by_side(_timed_evaluation, [(name, location, items_by_format, params)
                                                     for name, location in named_models.items()],
                                 params.jobs, desc="formats")
    scores, per_item = {}, {}
    for name, (result, seconds) in zip(named_models, scored):
        scores[name], per_item[name] = metrics_payload(result.scores), result.per_item
        print(f"{name:>14}: {seconds:5.1f} s")
    return FormatEvaluation(scores, per_item)


def metrics_payload(by_format: Mapping[str, Mapping[str, float | None]]) -> dict[str, dict[str, float]]:
    """``{format: {set: score}}`` -> ``{"forget": {format: score}, "retain": {format: score}}`` (a set without
    items, stored as None, is NaN)."""
    return {s: {fmt: float(np.nan if sets[s] is None else sets[s]) for fmt, sets in by_format.items() if s in sets}
            for s in SETS}
