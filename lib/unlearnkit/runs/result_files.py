"""Each notebook's results in the store: ``metrics.json`` and ``per_item.json`` written (and mirrored) and read back,
checked against the run reading them, and the results of every unlearning run of a seed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import config, paths, provenance
from ..config import Params
from .agreement import check_agrees
from .committed import mirror
from .layout import run_it_first, store
from .locks import atomic_write_text
from .names import FINDINGS, UNLEARNING


def notebook_dir(params: Params, notebook: str) -> Path:
    d = store(params) / notebook
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_metrics(params: Params, notebook: str, results: Mapping[str, Any],
                  extra_meta: Mapping[str, Any] | None = None, folder: Path | None = None) -> None:
    """Write ``runs/<profile>/seed-<s>/<notebook>/metrics.json`` (nothing returned: a notebook cell that ends with it
    shows no stray path). ``folder``: an evaluation's own folder instead (``runner eval --output-path``), checked by
    :func:`unlearnkit.paths.writable`; never mirrored into ``results/``.

    ``results`` is ``{model: {split: {metric: value}}}``; a ``"meta"`` entry is added with the parameters,
    the git revision and the package versions, and ``gpu_micro_batches`` where a GPU chose a model's micro-batches
    (:func:`gpu_micro_batches`; never on a CPU, whose files keep their bytes).
    """
    if "meta" in results:
        raise ValueError("'meta' is reserved in metrics.json; rename that model")
    payload = dict(config.jsonable(results))
    payload["meta"] = config.jsonable({
        "notebook": notebook,
        "profile": params.profile,
        "seed": params.seed,
        "parameters": dict(params),
        "git_revision": provenance.git_revision(),
        "packages": provenance.package_versions(),
        **({"gpu_micro_batches": chosen} if (chosen := gpu_micro_batches(params)) else {}),
        **(extra_meta or {}),
    })
    if folder is not None:
        folder = paths.writable(folder, "an evaluation's folder")
        folder.mkdir(parents=True, exist_ok=True)
    path = (folder or notebook_dir(params, notebook)) / "metrics.json"
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=False) + "\n")
    if folder is None and notebook != FINDINGS:
        mirror(params, notebook, "metrics.json", payload)


def gpu_micro_batches(params: Params) -> dict[str, dict[str, Any]]:
    """The micro-batch split a GPU chose for each model of the seed's store, by model name: the ``micro_batch`` a
    saved model's unlearnkit.json holds only where ``training.choose_micro_batches`` replaced the configured split on a
    CUDA device (issue #61). Empty where none did (every CPU run); a recipe that does not read as JSON is passed over
    here (loading that model refuses it)."""
    chosen = {}
    for recipe in sorted((store(params) / "models").glob("*/unlearnkit.json")):
        try:
            record = json.loads(recipe.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("micro_batch"), dict):
            chosen[recipe.parent.name] = record["micro_batch"]
    return chosen


def _load_json(path: Path, notebook: str, params: Params) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{paths.shown(path)} is not valid JSON ({exc}): rerun {notebook} "
                         f"(runner {notebook[:2]} --profile {params.profile})") from None


def _read_result(params: Params, notebook: str, file: str) -> dict[str, Any]:
    path = store(params) / notebook / file
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: {run_it_first(notebook, params)}")
    payload = _load_json(path, notebook, params)
    metrics = path if file == "metrics.json" else path.with_name("metrics.json")
    if metrics.exists():
        check_agrees(params, notebook, metrics, payload if metrics == path else _load_json(metrics, notebook, params))
    return payload


def has_metrics(params: Params, notebook: str) -> bool:
    return (store(params) / notebook / "metrics.json").exists()


def read_metrics(params: Params, notebook: str) -> dict[str, Any]:
    """Results written by another notebook; a clear message says which notebook to run first."""
    return _read_result(params, notebook, "metrics.json")


def write_per_item(params: Params, notebook: str, per_item: Mapping[str, Any]) -> None:
    """Per-item values (truth ratios, ROUGE, answers) beside metrics.json, for later notebooks."""
    path = notebook_dir(params, notebook) / "per_item.json"
    atomic_write_text(path, json.dumps(config.jsonable(per_item)))
    mirror(params, notebook, "per_item.json", per_item)


def read_per_item(params: Params, notebook: str) -> dict[str, Any]:
    return _read_result(params, notebook, "per_item.json")


def unlearning_runs(params: Params) -> dict[str, dict[str, Any]]:
    """The metrics.json of every unlearning run of the profile's seed, keyed by run name."""
    found = {}
    for path in sorted(store(params).glob(f"{UNLEARNING}_*/metrics.json")):
        payload = _load_json(path, path.parent.name, params)
        check_agrees(params, path.parent.name, path, payload)
        found[path.parent.name.removeprefix(f"{UNLEARNING}_")] = payload
    return found
