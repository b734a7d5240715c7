"""Loading a model: (model, tokenizer, template) from a local folder or a Hub name, without a progress bar."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import torch

from .. import paths
from .running import to_available_device
from .sources import (
    ADAPTER_CONFIG,
    adapter_base,
    missing_folder,
    source_of,
    stated_revision,
    stated_template,
)
from .templates import CHAT, PromptTemplate, conversation_template, get_template, template_for


class LoadedModel(NamedTuple):
    """A model with what it takes to prompt it: ``loaded.model``, ``loaded.tokenizer``, ``loaded.template``."""

    model: Any
    tokenizer: Any
    template: PromptTemplate


def _dtype(name: str | None):
    if name in (None, "auto"):
        return "auto" if name == "auto" else torch.float32
    try:
        return getattr(torch, name)
    except AttributeError:
        raise ValueError(f"unknown dtype {name!r}; use float32, bfloat16 or float16") from None


def load_model(name_or_path: str | os.PathLike, dtype: str | None, device: str | None = None, *,
               template: str | None) -> LoadedModel:
    """Load (model, tokenizer, template) from a local folder or a Hub name, without a progress bar.

    A relative path is taken from the project root. ``dtype`` names a torch dtype (``float32``, ``bfloat16``),
    ``"auto"`` the checkpoint's own; None is float32. ``device`` None keeps the model on the CPU; ``"auto"``
    puts it on the GPU when there is one. With ``HF_HUB_OFFLINE=1`` a Hub name that is not in the local
    cache fails fast with the library's own message. ``template`` names a prompt template; ``"chat"`` takes the
    tokenizer's own chat template where it has one (see :func:`conversation_template`); None takes the one saved
    beside the model, else the one its name states, else its family's.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = str(name_or_path)
    local = paths.resolve(spec)
    source = source_of(spec)
    if missing_folder(spec, local):
        raise FileNotFoundError(f"model folder {local} does not exist (and {spec!r} is not a Hub name)")
    adapter = local.is_dir() and (local / ADAPTER_CONFIG).exists()  # transformers applies it to its base (peft)
    has_tokenizer = not adapter or any((local / f).exists() for f in ("tokenizer.json", "tokenizer_config.json"))
    revision = {"revision": stated_revision(spec)} if stated_revision(spec) else {}
    tokenizer = AutoTokenizer.from_pretrained(source if has_tokenizer else source_of(adapter_base(local)), **revision)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if local.is_dir() and not any(local.glob("*.safetensors")) and any(local.glob("*.bin")):
        raise ValueError(f"model folder {paths.shown(local)} holds pickled weights (*.bin) only, which the workbook never "
                         "unpickles: save it with safetensors (model.save_pretrained(folder), the default)")
    with quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(source, dtype=_dtype(dtype), use_safetensors=True, **revision)
    if device == "auto":
        to_available_device(model)
    elif device:
        model.to(device)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    meta = Path(source) / "unlearnkit.json"
    name = template or (json.loads(meta.read_text())["template"] if meta.exists() else None) or stated_template(source)
    if name == CHAT:
        tmpl = conversation_template(tokenizer, source)
    else:
        tmpl = get_template(name) if name else template_for(source)  # a Hub model: its family's template
    return LoadedModel(model, tokenizer, tmpl)


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """No "Loading weights" or "Writing model shards" bar per model: a notebook that loads or saves eleven
    models would drown in them."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
