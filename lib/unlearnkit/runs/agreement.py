"""Agreement checks: a result file of the store is read only by a run whose values of the keys its notebook reads are
the ones it was written with (:func:`check_agrees`); otherwise :class:`StoreDisagrees` names the file and the rerun."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import config, paths
from ..config import Params
from .layout import is_reference_seed
from .names import NOTEBOOK_SECTIONS, UNLEARNING, keys_read, notebook_key


class StoreDisagrees(ValueError):
    """A result file of the store written with other values of the keys its notebook reads than the run reading it
    has (a profile edited since, a run folder received from elsewhere): refused in one line naming the file."""


#: Keys whose value never changes a result (the worker count), so a result written with another value still agrees.
RESULT_NEUTRAL = frozenset({"jobs"})


def check_agrees(params: Params, notebook: str, path: Path, payload: Mapping[str, Any]) -> None:
    """Refuse (:class:`StoreDisagrees`, one line naming ``path``) a result written with another value of a key
    ``notebook`` reads (:func:`keys_read`) than ``params`` has. A key either side lacks (one added to the workbook
    since) is passed over, and so are :data:`RESULT_NEUTRAL` keys; of a mapping (``method_settings``, which a study
    extends with its own runs) only the entries both sides name are compared."""
    meta = payload.get("meta") if isinstance(payload, Mapping) else None
    written = meta.get("parameters") if isinstance(meta, Mapping) else None
    if not isinstance(written, Mapping):
        return
    stem = UNLEARNING if notebook.startswith(UNLEARNING) else notebook
    for key in sorted(keys_read(stem) - RESULT_NEUTRAL - {"profile"}) if stem in NOTEBOOK_SECTIONS else ():
        if key not in written or key not in params:
            continue
        before, now = written[key], config.jsonable(params[key])
        if isinstance(before, Mapping) and isinstance(now, Mapping):
            differing = [k for k in sorted(set(before) & set(now)) if before[k] != now[k]]
            if not differing:
                continue
            key, before, now = f"{key}.{differing[0]}", before[differing[0]], now[differing[0]]
        elif before == now:
            continue
        raise StoreDisagrees(
            f"{paths.shown(path)} was written with {key}={_short(before)}, but this run has {_short(now)}: "
            f"rerun notebook {notebook_key(notebook)} (python -m unlearnkit.runner {notebook_key(notebook)} "
            f"--profile {params.profile}{'' if is_reference_seed(params) else f' --set seed={params.seed}'})")


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
