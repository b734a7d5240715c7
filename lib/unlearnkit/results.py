"""Each seed's results as committed data: the quantities the judge reads, without the models (docs/metrics.md §8.3).

``runs/`` does not survive a new machine, and a verdict over six seeds must not need six trainings to be re-judged.
So the run store's results of every seed of the default profile (each on the corpus draw its profile names) are
mirrored, as they are written, into the checkout::

    results/<profile>/seed-<s>/<notebook>/metrics.json      every notebook's metrics.json (00-08, 02 once per run)
    results/<profile>/seed-<s>/<notebook>/per_item.json     the per-question values, for the notebooks whose claims
                                                            are per question (:data:`PER_ITEM`)
    results/<profile>/seed-<s>/provenance.json              the code revision and packages that last changed them

A mirrored file leaves out what differs between two runs of the same code on the same bits (the revision, the
package versions, seconds measured), so the profile's own seed, rerun by ``make all`` on an AVX2 machine, writes the
same bytes and leaves ``git status`` clean; ``provenance.json`` is rewritten only when a mirrored file changed. The
judge reads a seed from its run store where it has one, else from here (:class:`SeedResults`): ``runner aggregate``
re-judges the committed seeds on a fresh clone without training.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from . import config, paths, provenance, runs
from .config import Params

#: The notebooks whose per-item values a claim may read (truth ratios of 01, PS sweeps of 03, bounds of 05, sampled
#: spreads of 06, attacks of 08); notebook 04's per-format items (megabytes) stay in the run store.
PER_ITEM = (runs.FINETUNE, runs.CONTROLS, runs.LEAKAGE, runs.ENTROPY, runs.ROBUSTNESS)
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
    return (_own_store() and params.profile == runs.FIGURE_PROFILE
            and params.corpus_draw == runs.reference_draw(params.profile, params.seed))


def seed_dir(profile: str, seed: int) -> Path:
    return paths.RESULTS / profile / f"{runs.SEED_PREFIX}{seed}"


def _reproducible(value: Any) -> Any:
    """``value`` without the keys that time or place a run: the volatile meta keys and any key naming seconds."""
    if isinstance(value, Mapping):
        return {k: _reproducible(v) for k, v in value.items()
                if k not in VOLATILE and not str(k).endswith("seconds") and k != "timing"}
    if isinstance(value, list):
        return [_reproducible(v) for v in value]
    return value


def mirror(params: Params, notebook: str, file: str, payload: Mapping[str, Any]) -> Path | None:
    """Mirror one result file of a run into ``results/`` where :func:`publishes` says so (else nothing): written only
    when its bytes change, and then the seed's provenance with it."""
    if not publishes(params) or (file == "per_item.json" and notebook not in PER_ITEM):
        return None
    meta = dict(payload.get("meta", {})) if isinstance(payload, Mapping) else {}
    body = dict(_reproducible(config.jsonable(payload)))
    text = json.dumps(body, indent=1, sort_keys=False) + "\n"
    folder = seed_dir(params.profile, params.seed)
    path = folder / notebook / file
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return path
    runs.atomic_write_text(path, text)
    record = {"git_revision": meta.get("git_revision") or provenance.git_revision(),
              "packages": meta.get("packages") or provenance.package_versions()}
    runs.atomic_write_text(folder / PROVENANCE, json.dumps(config.jsonable(record), indent=1) + "\n")
    return path


def committed_seeds(profile: str) -> list[int]:
    """The seeds of ``profile`` whose results are committed (a folder ``results/<profile>/seed-<s>``)."""
    found = []
    if not _own_store():
        return found
    for folder in (paths.RESULTS / profile).glob(f"{runs.SEED_PREFIX}*"):
        suffix = folder.name[len(runs.SEED_PREFIX):]
        if folder.is_dir() and suffix.isdigit():
            found.append(int(suffix))
    return sorted(found)


class SeedResults:
    """One seed's results as the judge reads them: from the seed's run store where it holds the notebook's file, else
    from the committed mirror. Only the judge reads through it; a notebook that computes never falls back on
    committed results (its inputs are its own seed's run)."""

    def __init__(self, profile: str, seed: int, params: Params | None = None):
        self.profile, self.seed = profile, int(seed)
        self.params = params if params is not None else Params.load(profile, seed=self.seed)
        mirrored = (seed_dir(profile, self.seed),) if publishes(self.params) else ()
        self._dirs = (runs.store(self.params), *mirrored)
        self._read: dict[Path, dict[str, Any]] = {}

    def _path(self, notebook: str, file: str) -> Path | None:
        for folder in self._dirs:
            path = folder / notebook / file
            if path.exists():
                return path
        return None

    def has(self, notebook: str, file: str = "metrics.json") -> bool:
        return self._path(notebook, file) is not None

    def read(self, notebook: str, file: str = "metrics.json") -> dict[str, Any]:
        path = self._path(notebook, file)
        if path is None:
            where = " nor in ".join(paths.shown(d) for d in self._dirs)
            raise FileNotFoundError(f"seed {self.seed} of profile {self.profile!r} has no {notebook}/{file} in {where}")
        if path not in self._read:
            self._read[path] = json.loads(path.read_text(encoding="utf-8"))
        return self._read[path]

    def metrics(self, notebook: str) -> dict[str, Any]:
        return self.read(notebook, "metrics.json")

    def per_item(self, notebook: str) -> dict[str, Any]:
        return self.read(notebook, "per_item.json")

    def notebooks(self) -> list[str]:
        """The notebooks with results for this seed (02 once per unlearning run), in order."""
        names = {p.parent.name for folder in self._dirs for p in folder.glob("0*/metrics.json")}
        return sorted(n for n in names if n != runs.FINDINGS)

    def unlearning_runs(self) -> dict[str, dict[str, Any]]:
        """Every unlearning run's metrics.json, keyed by run name."""
        prefix = f"{runs.UNLEARNING}_"
        return {n.removeprefix(prefix): self.metrics(n) for n in self.notebooks() if n.startswith(prefix)}

    def __iter__(self) -> Iterator[str]:
        return iter(self.notebooks())


def of(params: Params) -> SeedResults:
    """The results of the run ``params`` names (its own store; the committed mirror where it publishes there)."""
    return SeedResults(params.profile, params.seed, params)


def seeds(profile: str) -> list[int]:
    """Every seed the judge can read for ``profile``: those with a run store or committed results, less those a
    runner is still running (they count once they finish)."""
    found = sorted(set(runs.seeds(profile)) | set(committed_seeds(profile)))
    return [s for s in found if not runs.in_progress(profile, s)]
