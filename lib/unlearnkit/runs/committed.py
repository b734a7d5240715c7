"""The committed mirror of each seed's results: what the judge reads of a seed without its models, written into
``results/<profile>/seed-<s>/`` where a run publishes, and the seeds committed there."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import config, paths, provenance
from ..config import Params
from .layout import FIGURE_PROFILE, SEED_PREFIX, is_reference_seed, reference_draw, store
from .locks import atomic_write_text
from .names import CONTROLS, ENTROPY, FINDINGS, FINETUNE, LEAKAGE, ROBUSTNESS

# results/<profile>/seed-<s>/: what the judge reads of a seed without its models (lib/unlearnkit/results.py reads it).

#: The notebooks whose per-item values a claim may read (truth ratios of 01, PS sweeps of 03, bounds of 05, sampled
#: spreads of 06, attacks of 08); notebook 04's per-format items (megabytes) stay in the run store.
PER_ITEM = (FINETUNE, CONTROLS, LEAKAGE, ENTROPY, ROBUSTNESS)
#: Meta keys that differ between two runs of the same code on the same bits, left out of the mirror.
VOLATILE = ("git_revision", "packages")
PROVENANCE = "provenance.json"


def _own_store() -> bool:
    """Whether the run store is the checkout's own ``runs/`` (or ``UNLEARNKIT_RESULTS`` names a mirror): only then are
    results mirrored into, and read back from, the committed folder. A store elsewhere (the tests' temporary folders)
    never mixes with the committed seeds."""
    return paths.RUNS == (paths.ROOT / "runs").resolve() or "UNLEARNKIT_RESULTS" in os.environ


def publishes(params: Params) -> bool:
    """Whether this run's results are mirrored into the checkout: a seed of the default profile on the corpus draw
    its profile names for it (``seed-<s>``, never ``seed-<s>-data-<d>``), run in the checkout's own ``runs/``. A
    store elsewhere (``UNLEARNKIT_RUNS``: the tests' temporary folders) mirrors nowhere unless ``UNLEARNKIT_RESULTS``
    names where."""
    return (_own_store() and params.profile == FIGURE_PROFILE
            and params.corpus_draw == reference_draw(params.profile, params.seed))


def writes_committed(params: Params) -> bool:
    """Whether a run of ``params`` writes files the checkout commits: the default profile's figures (its own seed),
    its mirrored results (any seed, in the checkout's own store) and, through notebook 10, docs/findings.json and
    the README. A run with ``--set`` values may not (the runner refuses it with a hint)."""
    return params.profile == FIGURE_PROFILE and (_own_store() or is_reference_seed(params))


def results_dir(profile: str, seed: int) -> Path:
    return paths.RESULTS / profile / f"{SEED_PREFIX}{seed}"


def _timed(key: Any) -> bool:
    """A key that names seconds a run took (``sampling_seconds``, ``elapsed_s``) or its timing record: never the
    same twice, so never mirrored (notebook 03's ``elapsed_s`` was, and a fresh clone's ``make all`` changed it)."""
    key = str(key)
    return key.endswith(("seconds", "_s")) or key == "timing"


def _reproducible(value: Any) -> Any:
    """``value`` without what times or places a run: the volatile meta keys, any key naming seconds
    (:func:`_timed`), and the checkout's own absolute paths (a model folder, the corpus), named as
    :func:`paths.shown` names them."""
    if isinstance(value, Mapping):
        return {k: _reproducible(v) for k, v in value.items() if k not in VOLATILE and not _timed(k)}
    if isinstance(value, list):
        return [_reproducible(v) for v in value]
    if isinstance(value, str) and value.startswith(os.sep) and len(value) < 4096:
        return paths.shown(value)
    return value


def mirror(params: Params, notebook: str, file: str, payload: Mapping[str, Any]) -> Path | None:
    """Mirror one result file of a run into ``results/`` where :func:`publishes` says so (else nothing): written only
    when its bytes change, and then the seed's provenance with it."""
    if not publishes(params) or (file == "per_item.json" and notebook not in PER_ITEM) or not notebook[:2].isdigit():
        return None  # results/ holds the numbered notebooks' results (the claims' seeds), never an evaluation's
    meta = dict(payload.get("meta", {})) if isinstance(payload, Mapping) else {}
    body = dict(_reproducible(config.jsonable(payload)))
    text = json.dumps(body, indent=1, sort_keys=False) + "\n"
    folder = results_dir(params.profile, params.seed)
    path = folder / notebook / file
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return path
    atomic_write_text(path, text)
    revision = meta.get("git_revision") or provenance.git_revision()
    record = _provenance(folder)
    record.update({"git_revision": revision, "packages": meta.get("packages") or provenance.package_versions()})
    record["notebooks"] = dict(sorted({**record.get("notebooks", {}), notebook: {
        "git_revision": revision, "launched": provenance.launched(), "cpu": provenance.cpu_model()}}.items()))
    atomic_write_text(folder / PROVENANCE, json.dumps(config.jsonable(record), indent=1) + "\n")
    return path


def _provenance(folder: Path) -> dict[str, Any]:
    """A seed's provenance.json as committed: ``git_revision`` and ``packages`` of the run that last changed any
    mirrored file, and under ``notebooks`` per notebook (its folder) the revision, launch time and CPU model of the
    run that last changed that notebook's mirrored files (the result files themselves stay free of times). Written
    only with a mirrored file's change, so a rerun that reproduces a notebook's bytes leaves its entry as it was."""
    try:
        record = json.loads((folder / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):
        return {}
    if not isinstance(record.get("notebooks"), dict):
        record.pop("notebooks", None)
    return record


def mirror_store(params: Params) -> list[Path]:
    """Mirror every result file of a run's store again (after a change to what the mirror keeps): what
    :func:`mirror` would have written as each notebook wrote it."""
    written = []
    for path in sorted(store(params).glob("0*/metrics.json")) + sorted(store(params).glob("0*/per_item.json")):
        if path.parent.name == FINDINGS:
            continue
        done = mirror(params, path.parent.name, path.name, json.loads(path.read_text(encoding="utf-8")))
        if done is not None:
            written.append(done)
    return written


def committed_seeds(profile: str) -> list[int]:
    """The seeds of ``profile`` whose results are committed (a folder ``results/<profile>/seed-<s>``)."""
    found = []
    if not _own_store():
        return found
    for folder in (paths.RESULTS / profile).glob(f"{SEED_PREFIX}*"):
        suffix = folder.name[len(SEED_PREFIX):]
        if folder.is_dir() and suffix.isdigit():
            found.append(int(suffix))
    return sorted(found)
