"""Cached results of the run store: a computation's JSON result under its notebook's ``cache/``, keyed by a hash of
everything it depends on (the package's one cache rule)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .. import config
from ..config import Params
from .locks import atomic_write_text
from .result_files import notebook_dir


def cached_json(params: Params, notebook: str, name: str, depends_on: Mapping[str, Any],
                compute: Callable[[], Any], version: str, use_cache: bool = True) -> Any:
    """``compute()``'s JSON result, cached under ``runs/<profile>/seed-<s>/<notebook>/cache/<name>-<key>.json``.

    ``key`` hashes ``depends_on`` (model identities, items, settings) with ``version`` (bump it when the
    computation's output changes). One entry is kept per ``name``: a new key replaces the old file.
    """
    key = config.params_hash({"depends_on": depends_on, "version": version})
    folder = notebook_dir(params, notebook) / "cache"
    path = folder / f"{name}-{key}.json"
    if use_cache and path.exists():
        return json.loads(path.read_text())
    text = json.dumps(config.jsonable(compute()))
    atomic_write_text(path, text)
    for stale in folder.glob(f"{name}-*.json"):
        if stale != path and stale.name.removeprefix(f"{name}-").count("-") == 0:
            stale.unlink()
    return json.loads(text)  # the same plain values a later cache hit returns
