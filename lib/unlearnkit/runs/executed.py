"""The executed notebooks of a run's store: where the runner writes each one, and the evaluations of one's own models
(runner eval) beside them."""

from __future__ import annotations

from pathlib import Path

from .. import paths
from ..config import Params
from .layout import store

#: Evaluations of one's own models (runner eval): ``<store>/eval/<model>-<id>/eval_model.ipynb`` and its results.
EVAL, EVAL_NOTEBOOK = "eval", "eval_model"


def evaluations(params: Params) -> list[Path]:
    """The executed evaluation notebooks of a run's store, by folder name; a folder whose name is not a name (a
    received store's) is left out."""
    return sorted(p for p in store(params).glob(f"{EVAL}/*/{EVAL_NOTEBOOK}.ipynb") if paths.NAME.fullmatch(p.parent.name))


def executed_notebook(params: Params, stem: str) -> Path:
    """Where the runner writes the executed copy of a notebook (``stem`` with its run suffix: 02_unlearning_npo)."""
    return store(params) / f"{stem}.ipynb"
