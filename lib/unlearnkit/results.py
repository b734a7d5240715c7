"""Each seed's results as committed data: the quantities the judge reads, without the models (docs/metrics.md §8.3).

``runs/`` does not survive a new machine, and a verdict over six seeds must not need six trainings to be re-judged.
So the run store's results of every seed of the default profile (each on the corpus draw its profile names) are
mirrored, as they are written, into the checkout::

    results/<profile>/seed-<s>/<notebook>/metrics.json      every notebook's metrics.json (00-08, 02 once per run)
    results/<profile>/seed-<s>/<notebook>/per_item.json     the per-question values, for the notebooks whose claims
                                                            are per question (:data:`PER_ITEM`)
    results/<profile>/seed-<s>/provenance.json              the code revision and packages that last changed them;
                                                            per notebook, the revision, launch time and CPU model
                                                            of the run that last changed its files

A mirrored file leaves out what differs between two runs of the same code on the same bits (the revision, the
package versions, seconds measured), so the profile's own seed, rerun by ``make all`` on an AVX2 machine, writes the
same bytes and leaves ``git status`` clean; ``provenance.json`` is rewritten only when a mirrored file changed. The
judge reads a seed from its run store where it has one, else from here (:class:`SeedResults`): ``runner aggregate``
re-judges the committed seeds on a fresh clone without training.

Every file the judge reads passes one check first (:func:`validated`): strict JSON (no ``NaN`` or ``Infinity``
token) that matches ``docs/metrics.schema.json`` (types, finite numbers, the ranges it states); a file that fails is a
:class:`CorruptResult` naming it and why, which costs the claims that read it on that seed, never the other seeds.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import paths, runs
from .config import Params

#: The mirror is the run store's (it writes it as the notebooks write their results); these names are its.
PER_ITEM, VOLATILE, PROVENANCE = runs.PER_ITEM, runs.VOLATILE, runs.PROVENANCE
publishes, mirror, mirror_store, committed_seeds = runs.publishes, runs.mirror, runs.mirror_store, runs.committed_seeds
seed_dir = runs.results_dir


class MissingResult(FileNotFoundError):
    """A seed lacks a notebook's result file: the notebook has not run for it (``notebook``, ``file``)."""

    def __init__(self, message: str, notebook: str, file: str):
        super().__init__(message)
        self.notebook, self.file = notebook, file


class CorruptResult(MissingResult):
    """A seed's result file that is there but unreadable: not JSON (a truncated write, an edit), or JSON that does not
    match docs/metrics.schema.json (a text where a mapping belongs, a NaN, a number outside its range). Judged as
    missing, with the file named and ``reason`` saying why, so one bad file never breaks the judging of the other
    seeds."""

    def __init__(self, message: str, notebook: str, file: str, reason: str = ""):
        super().__init__(message, notebook, file)
        self.reason = reason or message


def _not_json(token: str):
    raise ValueError(f"{token} is not a JSON number")


@functools.cache
def _validator(file: str):
    """The schema's validator of a result file: a metrics.json as the committed mirror holds it (the volatile meta keys
    are not required: a run store's copy has them, the mirror's not), a per_item.json by its ``per_item`` entry."""
    from jsonschema import Draft202012Validator

    schema = json.loads(paths.METRICS_SCHEMA.read_text(encoding="utf-8"))
    if file == "per_item.json":
        schema = {"$ref": "#/$defs/per_item", "$defs": schema["$defs"]}
    else:
        schema = copy.deepcopy(schema)
        meta = schema["$defs"]["meta"]
        meta["required"] = [key for key in meta["required"] if key not in VOLATILE]
    return Draft202012Validator(schema)


def schema_problem(payload: Any, file: str = "metrics.json") -> str | None:
    """Why ``payload`` does not match docs/metrics.schema.json as a ``file`` of a seed (None: it matches), in a few
    words: where (the keys down to the value) and what (the schema's words, the value cut short)."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(file).iter_errors(payload))
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "the top level"
    return f"{where[:120]}: {error.message[:160]}"


def validated(path: Path, notebook: str, file: str, seed: int) -> dict[str, Any]:
    """The one way the judge reads a result file: parsed as strict JSON, then checked against the schema. A
    :class:`CorruptResult` names the file and why it was refused."""
    shown, rerun = paths.shown(path), f"rerun {notebook} for seed {seed}"
    try:
        payload = json.loads(path.read_text(encoding="utf-8"), parse_constant=_not_json)
    except RecursionError:
        reason = "nested past the JSON parser's stack"
    except (ValueError, UnicodeDecodeError) as exc:  # a truncated or corrupt file, or a NaN token
        reason = f"not valid JSON ({exc})"
    else:
        reason = schema_problem(payload, file)
        if reason is None:
            return payload
        raise CorruptResult(f"{shown} does not match docs/metrics.schema.json ({reason}): {rerun}", notebook, file,
                            reason)
    raise CorruptResult(f"{shown} is {reason}: {rerun}", notebook, file, reason)


class SeedResults:
    """One seed's results as the judge reads them: from the seed's run store where it holds the notebook's file, else
    from the committed mirror. Only the judge reads through it; a notebook that computes never falls back on
    committed results (its inputs are its own seed's run)."""

    def __init__(self, profile: str, seed: int, params: Params | None = None):
        self.profile, self.seed = profile, int(seed)
        self.params = params if params is not None else Params.load(profile, seed=self.seed)
        mirrored = (runs.results_dir(profile, self.seed),) if publishes(self.params) else ()
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
            raise MissingResult(f"seed {self.seed} of profile {self.profile!r} has no {notebook}/{file} in {where}",
                                notebook, file)
        if path not in self._read:
            self._read[path] = validated(path, notebook, file, self.seed)  # refused: this seed's claims on it
        return self._read[path]

    def metrics(self, notebook: str) -> dict[str, Any]:
        return self.read(notebook, "metrics.json")

    def per_item(self, notebook: str) -> dict[str, Any]:
        return self.read(notebook, "per_item.json")

    def notebooks(self) -> list[str]:
        """The notebooks with results for this seed (02 once per unlearning run), in order."""
        names = {p.parent.name for folder in self._dirs for p in folder.glob("0*/metrics.json")}
        return sorted(n for n in names if n != runs.FINDINGS)

    def unlearning_runs(self, readable: bool = False) -> dict[str, dict[str, Any]]:
        """Every unlearning run's metrics.json, keyed by run name: one that is unreadable raises its
        :class:`CorruptResult`, or with ``readable`` is left out (a study that compares what it can read)."""
        prefix = f"{runs.UNLEARNING}_"
        out = {}
        for notebook in self.notebooks():
            if notebook.startswith(prefix):
                try:
                    out[notebook.removeprefix(prefix)] = self.metrics(notebook)
                except CorruptResult:
                    if not readable:
                        raise
        return out

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
