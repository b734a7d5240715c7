"""Saved models of the run store and their recipes: where each lives, the weights kept along an unlearning run, the
claim on a model while it trains, loading one with a message naming the notebook that makes it, and the identity
of a model that every cached result is keyed by (:func:`model_identity`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import config, models
from ..config import Params
from .layout import run_it_first, store
from .locks import file_lock
from .names import FINETUNE, UNLEARNED_PREFIX, UNLEARNING
from .result_files import read_metrics, unlearning_runs


def model_dir(params: Params, name: str) -> Path:
    return store(params) / "models" / name


def history(params: Params, name: str) -> list[dict]:
    """The per-step training log saved beside a model (empty for a Hub model used as is)."""
    path = model_dir(params, name) / "history.json"
    return json.loads(path.read_text()) if path.exists() else []


def unlearned_name(run: str) -> str:
    return f"{UNLEARNED_PREFIX}{run}"


def trajectory_dir(params: Params, run: str) -> Path:
    """Where the weights kept along an unlearning run live (early stopping)."""
    return model_dir(params, f"{unlearned_name(run)}.trajectory")


def trajectory_steps(params: Params, run: str) -> list[tuple[int, Path]]:
    """The weights kept along an unlearning run: (step, folder), in order."""
    found = [(int(p.name.split("-")[1]), p) for p in trajectory_dir(params, run).glob("step-*")
             if models.is_saved_model(p)]
    return sorted(found)


def sparse_steps(params: Params, run: str, every: int | None) -> list[tuple[int, Path]]:
    """The kept steps of a run at a coarser grid: every ``every``-th step, each epoch's end and the last. A run
    that keeps every step (for early stopping) is read at the profile's ``unlearn_save_every`` where a trace
    needs no more (notebook 02's ROUGE trajectory, notebook 03's interference traces); ``every`` None keeps all."""
    kept = trajectory_steps(params, run)
    if not every or not kept:
        return kept
    return [(step, folder) for step, folder in kept
            if step % every == 0 or float(saved_recipe(folder)["epoch"]).is_integer() or step == kept[-1][0]]


@contextmanager
def exclusive(params: Params, name: str, active: bool = True) -> Iterator[None]:
    """Hold the claim on model ``name`` of the run store for the block: one process at a time (an advisory lock on
    ``runs/<profile>/seed-<s>/models/.<name>.lock``), so that two workers never train the same model; a second one waits, then
    finds the first one's result. The lock dies with its process, so a killed worker never blocks a rerun.
    ``active`` False holds nothing (the other processes of an ``accelerate launch``)."""
    if not active:
        yield
        return
    with file_lock(store(params) / "models" / f".{name}.lock"):
        yield


def is_saved(params: Params, name: str) -> bool:
    return models.is_saved_model(model_dir(params, name))


def _missing(params: Params, names: list[str]) -> FileNotFoundError:
    makers = dict.fromkeys(UNLEARNING if n.startswith(UNLEARNED_PREFIX) else FINETUNE for n in names)
    return FileNotFoundError(f"no saved model {', '.join(map(repr, names))} under {store(params) / 'models'}: "
                             + "; ".join(run_it_first(m, params) for m in makers))


def load_saved(params: Params, name: str, device: str | None = None, *, dtype: str | None) -> models.LoadedModel:
    """A model saved by an earlier notebook (``dtype`` as :func:`unlearnkit.models.load_model` takes it), with a
    message naming that notebook when it is missing."""
    folder = model_dir(params, name)
    if not models.is_saved_model(folder):
        raise _missing(params, [name])
    return models.load_model(folder, device=device, dtype=dtype, template=None)  # the template saved beside it


def locate(params: Params, name: str) -> Path | None:
    """The folder of a saved model by its name or, for an unlearning run's name (``npo``), the run's model."""
    for saved in (name, unlearned_name(name)):
        if is_saved(params, saved):
            return model_dir(params, saved)
    return None


def require_saved(params: Params, names: list[str]) -> dict[str, Path]:
    """``{name: folder}`` of models (or runs) that must all be saved; one message names every missing one and the
    notebooks that make them."""
    found = {name: locate(params, name) for name in dict.fromkeys(names)}
    missing = [name for name, folder in found.items() if folder is None]
    if missing:
        raise _missing(params, missing)
    return {name: folder for name, folder in found.items() if folder is not None}


def saved_recipe(folder: str | Path) -> dict[str, Any]:
    """What was recorded beside a saved model when it was saved (template, params_hash, run, step, ...)."""
    return json.loads((Path(folder) / "unlearnkit.json").read_text())


def model_identity(location: str | Path) -> str:
    """What a model's results depend on, as a short hash: for a saved model the hash of the recipe that made
    it (recorded as ``params_hash`` when it was saved; a kept checkpoint records its run's and its step), for a
    Hub name the name itself. A model mixed in memory is identified by :func:`mixed_identity`."""
    folder = Path(location)
    if models.is_saved_model(folder):
        recipe = saved_recipe(folder)
        if recipe.get("params_hash"):
            return str(recipe["params_hash"])
        # A folder saved by hand: what it says of itself, its configuration and its weights' content (two folders
        # with the same hand-written marker are two models; new weights in the same folder are a new model).
        return config.params_hash({"recipe": recipe, "config": (folder / "config.json").read_text(),
                                   "weights": models.content_digest(folder)})
    if folder.is_dir() and (folder / models.ADAPTER_CONFIG).exists():
        # a peft adapter: its own weights and configuration, and what its base is
        return config.params_hash({"adapter": models.content_digest(folder),
                                   "config": (folder / models.ADAPTER_CONFIG).read_text(),
                                   "base": model_identity(models.adapter_base(folder)), **models.stated(folder)})
    if folder.is_dir() and (folder / "config.json").exists():
        # a foreign folder (no unlearnkit.json): its content, never its name, so overwritten weights are re-scored; a
        # template stated for it (runner eval) is part of what it is
        return config.params_hash({"folder": models.content_digest(folder),
                                   "config": (folder / "config.json").read_text(), **models.stated(folder)})
    return config.params_hash({"hub": str(location), **models.stated(location)})


def mixed_identity(original: str, unlearned: str, a: float) -> str:
    """The identity of (1 - a) * original + a * unlearned (model mixing), from the two identities."""
    return config.params_hash({"mix": [original, unlearned, float(a)]})


def retain_model(params: Params, forget_split: str | None) -> str | None:
    """The retain model that notebook 01 used as the forget-quality reference (``retain90`` for forget10); before
    notebook 01 has run, the retain split of ``forget_split`` when given, else None."""
    try:
        reference = read_metrics(params, FINETUNE)["meta"].get("forget_quality_reference")
    except FileNotFoundError:
        reference = None
    if reference:
        return str(reference)
    if forget_split:
        from ..data.tofu import retain_split_for

        return retain_split_for(forget_split)
    return None


def saved_models(params: Params, include_base: bool = False, include_retain: bool = True, *,
                 forget_split: str | None) -> dict[str, str]:
    """The models a profile has saved, as {display name: saved model name}, in the order of the figures: base
    (when asked), target, the retain model (the reference: it never saw the forget set), then every unlearning
    run of notebook 02 whose model is saved (display name: the run). The target must exist."""
    found: dict[str, str] = {}
    if include_base and is_saved(params, "base"):
        found["base"] = "base"
    if not is_saved(params, "target"):
        raise _missing(params, ["target"])
    found["target"] = "target"
    reference = retain_model(params, forget_split) if include_retain else None
    if reference and is_saved(params, reference):
        found[reference] = reference
    for run in unlearning_runs(params):
        if is_saved(params, unlearned_name(run)):
            found[run] = unlearned_name(run)
    return found
