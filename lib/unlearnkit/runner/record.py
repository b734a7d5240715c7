"""What an executed notebook keeps in its metadata: how long it took, what made it (provenance) and its recipe, by
which a rerun of the same seed knows it is done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import config, provenance


def run_recipe(notebook: Path, parameters: dict[str, Any]) -> dict[str, Any]:
    """What an executed notebook was made from: the commit and the injected parameters. A run whose recipe matches
    an executed copy's, on a clean checkout, need not run again (:func:`already_done`)."""
    return {"git_revision": provenance.git_revision(), "notebook": notebook.name,
            "parameters": config.params_hash(config.jsonable(parameters))}


def already_done(out: Path, recipe: dict[str, Any]) -> bool:
    """True when ``out`` is a finished run of ``recipe`` (its timing recorded, which happens after the last cell) on
    a committed revision: a modified working tree (``-dirty``) always runs again."""
    revision = recipe.get("git_revision")
    if not out.exists() or not revision or revision.endswith("-dirty"):
        return False
    try:
        record = json.loads(out.read_text()).get("metadata", {}).get("unlearnkit", {})
    except (OSError, ValueError):
        return False
    return bool(record.get("timing")) and record.get("recipe") == recipe


def record_timing(executed: Path, timing: dict, provenance: dict | None = None, recipe: dict | None = None) -> None:
    """Keep in the executed notebook's metadata how long it took and what made it (the report's provenance line,
    and the recipe by which a rerun of the same seed knows it is done: :func:`already_done`)."""
    from .. import runs

    nb = json.loads(executed.read_text())
    record = nb.setdefault("metadata", {}).setdefault("unlearnkit", {})
    record["timing"] = timing
    if provenance is not None:
        record["provenance"] = provenance
    if recipe is not None:
        record["recipe"] = recipe
    runs.atomic_write_text(executed, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
