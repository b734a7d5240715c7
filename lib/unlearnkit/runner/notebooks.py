"""The workbook's source notebooks: which there are, the one a key names, and keeping them clean (no outputs,
parameters cells in step with default.yaml: ``check-clean``, ``strip``, ``sync-params``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import config, paths
from ..parameters_cell import default_yaml_text, parameters_in_sync, sync_parameters
from .lines import Refused


def source_notebooks() -> list[Path]:
    return sorted(p for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def all_source_notebooks() -> list[Path]:
    """The numbered notebooks and the evaluation of one's own model (runner eval): what check-clean, strip and
    sync-params keep in order."""
    return [*source_notebooks(), eval_notebook()]


def find_notebook(key: str) -> Path:
    matches = [p for p in source_notebooks() if p.stem == key or p.stem.startswith(f"{key}_")]
    if len(matches) != 1:
        known = ", ".join(p.stem for p in source_notebooks())
        raise Refused(f"no single notebook matches {key!r}; notebooks: {known}")
    return matches[0]


def eval_notebook() -> Path:
    """The evaluation of a model of one's own (runner eval): outside 00-10, so never part of ``runner all``."""
    from .. import runs

    return paths.NOTEBOOKS / f"{runs.EVAL_NOTEBOOK}.ipynb"


def notebook_outputs(path: Path) -> bool:
    nb = json.loads(path.read_text())
    return any(c.get("outputs") or c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code")


def strip(path: Path) -> None:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def cmd_check_clean(args: argparse.Namespace) -> int:
    dirty = [p.name for p in all_source_notebooks() if notebook_outputs(p)]
    stale = [p.name for p in all_source_notebooks() if not parameters_in_sync(p)]
    default = paths.PARAMS / f"{config.BASE_PROFILE}.yaml"
    if default.read_text() != default_yaml_text():
        stale.insert(0, default.name)
    if dirty:
        print("notebooks committed with outputs (run 'make strip-notebooks'):", ", ".join(dirty))
    if stale:
        print("out of step with the parameters' help in config.Params (run 'make sync-params'):", ", ".join(stale))
    return 1 if dirty or stale else 0


def cmd_strip(args: argparse.Namespace) -> int:
    for p in all_source_notebooks():
        strip(p)
    return 0


def cmd_sync_params(args: argparse.Namespace) -> int:
    default = paths.PARAMS / f"{config.BASE_PROFILE}.yaml"
    if default.read_text() != default_yaml_text():
        default.write_text(default_yaml_text())
    for p in [find_notebook(k) for k in args.only] or all_source_notebooks():
        sync_parameters(p)
    return 0
