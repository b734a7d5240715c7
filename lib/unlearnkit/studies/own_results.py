"""What an evaluation of ``runner eval`` writes (:mod:`unlearnkit.studies.own_model` runs it): the tables the notebook
shows, metrics.json's entries and meta, and the per-item samples of ``--log-samples``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import config, paths, runs
from .own_model import MODEL, REFERENCE, Request, eval_folder


def attack_table(found: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per model: forget ROUGE-L before any attack and its change under each, beside the retain model's
    change where there is one (what relearning or quantisation teaches any model)."""
    rows = {}
    for label, result in found.items():
        before = result["before"]["rouge"]
        row = {"forget ROUGE-L": before, "Δ relearning": result["relearn"]["after"]["rouge"] - before}
        for scheme, after in result["quant"].items():
            row[f"Δ quantised {scheme}"] = after["rouge"] - before
        folds = result.get("rtt") or []
        row["Δ held-out facts (RTT)"] = float(np.mean([f["after"] - f["before"] for f in folds])) if folds else np.nan
        probes = [v["rouge"] for name, v in result["probes"].items() if name != "plain"]
        row["best input probe ROUGE-L"] = max(probes, default=np.nan)
        rows[label] = row
    table = pd.DataFrame(rows).T
    if REFERENCE in table.index and MODEL in table.index:
        table.loc["model over reference"] = table.loc[MODEL] - table.loc[REFERENCE]
    return table


def format_table(format_scores: Mapping[str, Mapping[str, Mapping[str, float]]]) -> pd.DataFrame:
    """The format scores (metrics.json's ``{model: {set: {format: score}}}``) as notebook 04's table: one row per
    (format, set), one column per model."""
    from .formats import scores_table

    return scores_table(format_scores)


def metrics_entries(tofu: Mapping[str, Any] | None = None, leak_summaries: Mapping[str, Any] | None = None,
                    format_scores: Mapping[str, Any] | None = None,
                    attacks: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """``{model: {part: values}}`` for metrics.json, in the notebooks' layout: TOFU's splits and summary as
    notebook 02 writes them, ``sampled`` as notebook 05's forget summary, ``formats`` as notebook 04's, and the
    attacks as notebook 08's (``relearned``, ``quantised <scheme>``)."""
    entries: dict[str, dict[str, Any]] = {}
    for label, result in (tofu or {}).items():
        entries.setdefault(label, {}).update(result)
    for label, summary in (leak_summaries or {}).items():
        entries.setdefault(label, {})["sampled"] = dict(summary)
    for label, scores in (format_scores or {}).items():
        entries.setdefault(label, {})["formats"] = dict(scores)
    for label, result in (attacks or {}).items():
        entries.setdefault(label, {}).update({"attacked forget": result["before"],
                                              "relearned": result["relearn"]["after"],
                                              **{f"quantised {s}": v for s, v in result["quant"].items()}})
    return entries


def log_samples(params: config.Params, request: Request, suite: str, per_item: Mapping[str, Any]) -> Path:
    """``--log-samples``: ``samples_<suite>.jsonl`` in the evaluation's folder, one JSON object per item and model:
    the model, the split (or format and set), the item's index and every per-item value the suite kept (the question,
    the answers generated, each score), as lm-eval's samples files hold them."""
    import json

    rows = []

    def walk(where: tuple[str, ...], node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        lists = {k: v for k, v in node.items() if isinstance(v, list)}
        lengths = {len(v) for v in lists.values()}
        if lists and len(lengths) == 1:
            for i in range(lengths.pop()):
                rows.append({"model": where[0], "split": "/".join(where[1:]), "index": i,
                             **{k: v[i] for k, v in lists.items()}})
        for key, value in node.items():
            if isinstance(value, Mapping):
                walk((*where, str(key)), value)

    for label, items in per_item.items():
        walk((label,), items)
    path = paths.writable(eval_folder(params, request) / f"samples_{suite}.jsonl", "a samples file")
    path.parent.mkdir(parents=True, exist_ok=True)
    paths.atomic_write_text(path, "".join(json.dumps(config.jsonable(r)) + "\n" for r in rows))
    return path


def run_meta(request: Request, seconds: Mapping[str, float], limit: int | None = None, device: str | None = None
             ) -> dict[str, Any]:
    """What metrics.json records beside the parameters: the request (the model by its identity), each suite's time,
    the quick-look and hardware flags (``--limit``, ``--device``) and the notes a reader needs (a limited run is not
    comparable with a whole one)."""
    notes = [f"not comparable: at most {limit} items per split and suite (--limit {limit})"] if limit else []
    return {"limit": limit, "device": device, "notes": notes, "evaluated": {"model": paths.shown(request.model) if Path(request.model).is_absolute() else request.model,
                          "model_identity": runs.model_identity(request.model), "template": request.template,
                          "data": request.data, "suites": list(request.suites),
                          "reference": (paths.shown(request.reference) if request.reference
                                        and Path(request.reference).is_absolute() else request.reference),
                          "reference_identity": runs.model_identity(request.reference) if request.reference else None},
            "suite_seconds": dict(seconds)}
