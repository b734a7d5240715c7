"""The retain model of ``runner eval`` (``--reference``; :mod:`unlearnkit.ownmodel.suites` runs the evaluation):
given as weights, its scores are computed once per reference and reused by every later evaluation against it (its
own cache folder, keyed on the reference's content and the scoring settings); given as results (a retain model's
evaluation folder, ours or open-unlearning's, or its ``TOFU_EVAL.json``), its per-item forget scores stand in for the
weights, checked as data before use (:func:`check_results`).

open-unlearning's ``TOFU_EVAL.json`` layout (its ``Evaluator`` writes ``{metric: {"agg_value": x, "value_by_index":
{"0": {key: v}, ...}}}``, locuslab/open-unlearning src/evals/base.py) is read and written here, so that its
``retain_logs_path`` can read ours and our ``--reference`` theirs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import config, models, paths, runs

#: The names the model and its control carry in every table and in metrics.json.
MODEL, REFERENCE = "model", "reference"
#: The file a retain model's evaluation holds its per-item TOFU scores in (open-unlearning's name).
RESULTS_FILE = "TOFU_EVAL.json"
#: Bump when what the reference's cached TOFU scores hold changes.
REFERENCE_VERSION = "1"

#: open-unlearning's names of TOFU's per-split metrics (its TOFU_EVAL.json keys: configs/eval/tofu_metrics/), ours
#: beside each: (our split, our per-item key, OU's metric, OU's per-index key, our split-level metric).
OU_METRICS = (
    ("forget", "truth_ratio", "forget_truth_ratio", "score", "truth_ratio_score"),
    ("forget", "probability", "forget_Q_A_Prob", "prob", "probability"),
    ("forget", "rouge", "forget_Q_A_ROUGE", "rougeL_recall", "rouge"),
    ("retain", "truth_ratio", "retain_Truth_Ratio", "score", "truth_ratio_score"),
    ("retain", "probability", "retain_Q_A_Prob", "prob", "probability"),
    ("retain", "rouge", "retain_Q_A_ROUGE", "rougeL_recall", "rouge"),
    ("real_authors", "truth_ratio", "ra_Truth_Ratio", "score", "truth_ratio_score"),
    ("real_authors", "probability", "ra_Q_A_Prob_normalised", "prob", "probability"),
    ("real_authors", "rouge", "ra_Q_A_ROUGE", "rougeL_recall", "rouge"),
    ("world_facts", "truth_ratio", "wf_Truth_Ratio", "score", "truth_ratio_score"),
    ("world_facts", "probability", "wf_Q_A_Prob_normalised", "prob", "probability"),
    ("world_facts", "rouge", "wf_Q_A_ROUGE", "rougeL_recall", "rouge"),
)
#: TOFU's summary metrics open-unlearning names alike (an aggregate only).
OU_SUMMARY = ("forget_quality", "model_utility", "privleak", "extraction_strength")
#: open-unlearning's membership-inference AUCs (its ``mia_*`` metrics, an aggregate: the AUC) and ours: its
#: ``privleak`` reads the retain model's ``mia_min_k`` from ``retain_logs_path``.
OU_AUCS = {"mia_min_k": "mia_mink_auc", "mia_loss": "mia_loss_auc", "mia_zlib": "mia_zlib_auc",
           "mia_min_k_plus_plus": "mia_minkpp_auc", "mia_gradnorm": "mia_gradnorm_auc"}


def ou_eval(results: Mapping[str, Any], per_item: Mapping[str, Any]) -> dict[str, Any]:
    """One model's TOFU results in open-unlearning's TOFU_EVAL.json layout: what its ``retain_logs_path`` reads."""
    out: dict[str, Any] = {}
    for split, ours, theirs, key, aggregate in OU_METRICS:
        values = per_item.get(split, {}).get(ours)
        if values is None:
            continue
        agg = results.get(split, {}).get(aggregate)
        out[theirs] = {"agg_value": agg if isinstance(agg, (int, float)) else None,
                       "value_by_index": {str(i): {key: v} for i, v in enumerate(values)}}
    summary = results.get("summary", {})
    for theirs, ours in [*((n, n) for n in OU_SUMMARY), *OU_AUCS.items()]:
        if ours in summary:
            value = summary[ours]
            out[theirs] = {"agg_value": value if isinstance(value, (int, float)) else None}
    return dict(sorted(out.items()))


def _read_json(path: str | Path) -> dict[str, Any]:
    shown = paths.shown(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{shown}: not a readable JSON file ({str(exc)[:100]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("forget_truth_ratio"), dict):
        raise ValueError(f"{shown}: not a TOFU_EVAL.json (no forget_truth_ratio entry with value_by_index)")
    return data


def read_ou_eval(path: str | Path) -> dict[str, list[float]]:
    """A TOFU_EVAL.json (open-unlearning's or ours) read as data: ``{metric: per-index values in index order}`` for
    each metric with ``value_by_index``. Its layout, indices 0..n-1 and finite numbers are checked; anything else is a
    ValueError in one line naming the file."""
    shown, data = paths.shown(path), _read_json(path)
    out = {}
    for metric, entry in data.items():
        by_index = entry.get("value_by_index") if isinstance(entry, dict) else None
        if not isinstance(by_index, dict):
            continue
        if sorted(by_index) != sorted(str(i) for i in range(len(by_index))):
            raise ValueError(f"{shown}: {metric}'s value_by_index is not indexed 0..{len(by_index) - 1}")
        values = []
        for i in range(len(by_index)):
            item = by_index[str(i)]
            numbers = [v for v in item.values() if isinstance(v, (int, float)) and not isinstance(v, bool)] \
                if isinstance(item, dict) else []
            if len(numbers) != 1 or not np.isfinite(numbers[0]):
                raise ValueError(f"{shown}: {metric} item {i} holds no single finite number ({str(item)[:60]})")
            values.append(float(numbers[0]))
        out[metric] = values
    if "forget_truth_ratio" not in out:
        raise ValueError(f"{shown}: forget_truth_ratio has no value_by_index")
    return out


def ou_aggregates(path: str | Path) -> dict[str, float | None]:
    """Every metric's ``agg_value`` of a TOFU_EVAL.json: a finite number, or None where it is null or not one."""
    data = _read_json(path)
    out = {}
    for metric, entry in data.items():
        value = entry.get("agg_value") if isinstance(entry, dict) else None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
        out[metric] = float(value) if ok else None
    return out


# --------------------------------------------------------------------------- a reference given as results


def results_file(location: str | None) -> Path | None:
    """The TOFU_EVAL.json ``--reference`` names, if it names results: the file itself, or the one in a folder that
    holds no model (a retain model's evaluation folder, ours or open-unlearning's); None for a model."""
    if not location or "\n" in location:
        return None
    path = paths.resolve(location)
    try:
        if path.is_file() and path.suffix == ".json":
            return path
        if path.is_dir() and (path / RESULTS_FILE).is_file() and not (path / "config.json").exists() \
                and not (path / models.ADAPTER_CONFIG).exists():
            return path / RESULTS_FILE
    except OSError:  # a name the system cannot hold: not results (the model check names it)
        pass
    return None


def identity(location: str) -> str:
    """What the reference is: a model's identity (:func:`unlearnkit.runs.model_identity`), or for results the sha256
    of the file's bytes (its content, never its size or modification time)."""
    file = results_file(location)
    if file is None:
        return runs.model_identity(location)
    return config.params_hash({"results": hashlib.sha256(file.read_bytes()).hexdigest()})


def forget_items(params: config.Params, source) -> int:
    """How many forget items the tofu suite scores (the first ``eval_max_items`` of the forget split)."""
    rows = source.load(params.forget_split)
    return len(rows[: params.eval_max_items] if params.eval_max_items else rows)


def check_results(params: config.Params, location: str, source) -> None:
    """A reference given as results, checked as data before use, in one line (ValueError): its layout and finite
    numbers (:func:`read_ou_eval`), and each forget metric's per-index length against the forget items this
    evaluation scores (forget quality compares the two per item set)."""
    file = results_file(location)
    values = read_ou_eval(file)
    ou_aggregates(file)
    n = forget_items(params, source)
    for metric, items in values.items():
        if metric.startswith("forget_") and len(items) != n:
            raise ValueError(f"--reference {paths.shown(file)}: {metric} holds {len(items)} items and this evaluation "
                             f"scores {n} forget items (eval_max_items {params.eval_max_items}): pass a reference "
                             f"evaluated on the same items, or --set eval_max_items={len(items)} if the data has them")


def given_tofu(location: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The retain model's TOFU results from its TOFU_EVAL.json, as the tofu suite keeps a model's: each split's
    aggregates and the summary it holds, and the per-item values (forget quality reads the forget truth ratios)."""
    file = results_file(location)
    values, aggregates = read_ou_eval(file), ou_aggregates(file)
    results: dict[str, Any] = {}
    per_item: dict[str, Any] = {}
    for split, ours, theirs, _, aggregate in OU_METRICS:
        if theirs in aggregates:
            results.setdefault(split, {})[aggregate] = aggregates[theirs]
        if theirs in values:
            per_item.setdefault(split, {})[ours] = values[theirs]
    summary = {name: aggregates[name] for name in OU_SUMMARY if name in aggregates}
    summary.update({ours: aggregates[theirs] for theirs, ours in OU_AUCS.items() if theirs in aggregates})
    results["summary"] = summary
    return results, per_item


# --------------------------------------------------------------------------- a reference's scores, once


def reference_notebook(location: str) -> str:
    """The store-relative folder whose cache holds a reference's scores (``eval/reference-<identity>``): shared by
    every evaluation against it, so it is scored once."""
    return f"{runs.EVAL}/reference-{identity(location)}"


def data_identity(data: str) -> str:
    """What the evaluated data is: a local folder by its files' content, a Hub data set or ``profile`` by name (the
    profile's corpus is in the parameters)."""
    folder = paths.resolve(data)
    if not folder.is_dir():
        return data
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink()):
        digest.update(file.name.encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def tofu_scores(params: config.Params, model: str, reference: str | None, data: str, source,
                no_reference: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """TOFU's metrics of ``model`` with forget quality and privleak against the ``reference``: its scores computed
    once (cached in :func:`reference_notebook`'s folder) or read from its results; none: ``no_reference`` in forget
    quality's place. Returns ``({label: results}, {label: per-item})`` as :func:`unlearnkit.pipeline.evaluate_models`."""
    from .. import pipeline
    from ..metrics import privacy as privacy_metrics

    loaded = {MODEL: models.load_model(model, dtype=params.dtype, template=None)}  # the template it states
    if reference is None:
        results, per_item = pipeline.evaluate_models(loaded, params, source, privacy=True)
        results[MODEL].setdefault("summary", {})["forget_quality"] = no_reference
        return results, per_item
    if results_file(reference) is not None:
        ref_results, ref_items = given_tofu(reference)
    else:
        depends = {"reference": identity(reference), "data": data_identity(data), "params": config.params_hash(dict(params))}

        def score() -> dict[str, Any]:
            ref = {REFERENCE: models.load_model(reference, dtype=params.dtype, template=None)}
            found, items = pipeline.evaluate_models(ref, params, source, reference=REFERENCE, privacy=True)
            return {"results": found[REFERENCE], "per_item": items[REFERENCE]}

        cached = runs.cached_json(params, reference_notebook(reference), "tofu", depends, score, REFERENCE_VERSION)
        ref_results, ref_items = cached["results"], cached["per_item"]
    privacy = ref_items.get(pipeline.PRIVACY)
    results, per_item = pipeline.evaluate_models(loaded, params, source, reference_ratios=ref_items["forget"]["truth_ratio"],
                                                 privacy=privacy if privacy is not None else True)
    summary = results[MODEL].setdefault("summary", {})
    if privacy is None and pipeline.PRIVACY in per_item[MODEL]:  # given results: privleak against its MinK AUC
        retain_auc = ref_results.get("summary", {}).get(OU_AUCS["mia_min_k"])
        if retain_auc is None:
            summary["privleak"] = ("not computed: the reference's results hold no mia_min_k (the retain model's MinK "
                                   "AUC), which privleak is taken against")
        else:
            arrays = {part: {k: np.asarray(v, dtype=float) for k, v in per_item[MODEL][pipeline.PRIVACY][part].items()}
                      for part in ("forget", "holdout")}
            summary.update(privacy_metrics.privacy_summary(arrays["forget"], arrays["holdout"], retain_auc=retain_auc))
    return {MODEL: results[MODEL], REFERENCE: ref_results}, {MODEL: per_item[MODEL], REFERENCE: ref_items}
