"""Saving a model, atomically, with its recipe (``unlearnkit.json``) and the digest of its weights, and telling a
whole saved model (or any loadable one) from a folder that is not."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import paths
from .loading import quiet_transformers
from .sources import ADAPTER_CONFIG, missing_folder
from .templates import PromptTemplate
from .weights import weights_intact, write_digest


def save_model(model, tokenizer, folder: str | os.PathLike, template: PromptTemplate,
               extra: dict[str, Any] | None = None, files: dict[str, str] | None = None) -> Path:
    """Save atomically: a half-written model folder never replaces a good one. ``files`` are more text files
    (``history.json``) saved inside the same atomic step, so a model is never found without them."""
    recipe = json.dumps({"template": template.name, **(extra or {})}, indent=2)
    return _save_atomically(model, tokenizer, folder, {**(files or {}), "unlearnkit.json": recipe})


def save_plain_model(model, tokenizer, folder: str | os.PathLike) -> Path:
    """Save like a model published on the Hub: weights and tokenizer only, no ``unlearnkit.json``, so loading it
    takes the path of a Hub model (template from its family name or the profile). Atomic like :func:`save_model`."""
    return _save_atomically(model, tokenizer, folder, {})


def _save_atomically(model, tokenizer, folder: str | os.PathLike, files: dict[str, str]) -> Path:
    import shutil

    folder = Path(folder)
    if folder.is_symlink() or (folder.exists() and any(folder.iterdir()) and not (folder / "config.json").exists()):
        raise ValueError(f"{paths.shown(folder)} is a symlink or a folder that holds no saved model: it is never "
                         "removed to save a model there")
    # Hidden and per process: never taken for a saved model (step-* globs), never shared by two writers.
    tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    with quiet_transformers():
        model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    for name, text in files.items():
        (tmp / name).write_text(text)
    write_digest(tmp)
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)  # a rename keeps each file's size and modification time: the digest still holds
    return folder


def is_saved_model(folder: str | os.PathLike) -> bool:
    """A model folder the workbook saved, whole: its recipe, its config and weights that match their digest
    (:func:`weights_intact`), so a truncated weight file is retrained, never trusted."""
    folder = Path(folder)
    return (folder / "unlearnkit.json").exists() and (folder / "config.json").exists() and weights_intact(folder)


def is_loadable(location: str | os.PathLike) -> bool:
    """A model that can be loaded and scored: a folder the workbook saved (:func:`is_saved_model`), a folder saved
    elsewhere with its config and intact safetensors weights, or a Hub name (loaded from the Hub's cache)."""
    folder = paths.resolve(location)
    if not folder.is_dir():
        return not missing_folder(str(location), folder)
    return is_saved_model(folder) or (((folder / "config.json").exists() or (folder / ADAPTER_CONFIG).exists())
                                      and weights_intact(folder))
