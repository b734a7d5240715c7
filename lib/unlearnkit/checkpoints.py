"""The checkpoint folders a training run leaves in its output folder (``checkpoint-<step>``): which one a run resumes
from, and their removal. Only resuming reads one (:func:`latest_checkpoint`, newest first, stopping at the first it
can use); pruning and :func:`clear_checkpoints` remove folders by step and read nothing in them. A checkpoint is data
(it may have been received): its pickles are loaded by torch's weights-only loader or not at all, and its
``trainer_state.json`` is used only once its shape is checked (:func:`trainer_state`)."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from pathlib import Path
from typing import Any

#: where :func:`latest_checkpoint` says which checkpoints it passed over (the training loop's own logger)
log = logging.getLogger("unlearnkit.training")


def step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.split("-", 1)[1])


def all_checkpoints(output_dir: Path) -> list[Path]:
    """Every checkpoint folder in ``output_dir`` (``checkpoint-<step>``), oldest first, whatever it holds: what
    pruning and :func:`clear_checkpoints` remove. Nothing in them is read; whether one can be resumed from is
    :func:`why_not_resumable`'s question, asked by :func:`latest_checkpoint` alone."""
    found = [p for p in output_dir.glob("checkpoint-*") if p.name.split("-", 1)[1].isdigit()]
    return sorted(found, key=step_of)


#: The pickled files of a checkpoint accelerate loads (the optimizer's and scheduler's states, the RNG states).
CHECKPOINT_PICKLES = ("*.bin", "*.pt", "*.pth", "*.pkl")


def why_not_resumable(checkpoint: Path) -> str | None:
    """Why this loop cannot resume from ``checkpoint`` (None: it can): it must be complete (trainer state and
    safetensors weights), its trainer state the loop's (:func:`trainer_state`), hold no accelerate custom-object pickle (loaded with weights_only=False: checkpoints
    written before the scheduler's state moved to trainer_state.json, or received with one) and only pickles torch's
    weights-only loader accepts (:func:`refused_pickle`)."""
    if not (checkpoint / "trainer_state.json").is_file() or not (checkpoint / "model.safetensors").is_file():
        return "incomplete (no trainer_state.json or model.safetensors)"
    try:
        trainer_state(checkpoint)
    except ValueError as exc:
        return f"trainer_state.json {exc}"
    custom = next(iter(sorted(checkpoint.glob("custom_checkpoint_*"))), None)
    if custom is not None:
        return f"{custom.name} is a custom-object pickle, which accelerate loads with weights_only=False"
    refused = refused_pickle(checkpoint)
    if refused is not None:
        return f"{refused} is not loadable weights-only"
    return None


def trainer_state(checkpoint: Path) -> dict[str, Any]:
    """The loop's state in ``checkpoint/trainer_state.json``, checked before anything uses it: a mapping whose
    ``step`` is the folder's own, whose ``history`` is a list of step records (mappings) and whose ``scheduler``,
    if any, is a LambdaLR state (:func:`scheduler_problem`). A ValueError says in a few words what is wrong (a
    received or hand-edited file; the loop's own always passes)."""
    try:
        state = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
    except RecursionError:
        raise ValueError("is nested past the JSON parser's stack") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"is not JSON ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(state, dict):
        raise ValueError(f"is a {type(state).__name__}, not a mapping")
    step = state.get("step")
    if type(step) is not int or step != step_of(checkpoint):
        raise ValueError(f"names step {repr(step)[:40]}, not the folder's {step_of(checkpoint)}")
    history = state.get("history")
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise ValueError("has no history as a list of step records")
    why = scheduler_problem(state.get("scheduler"))
    if why:
        raise ValueError(f"scheduler: {why}")
    return state


def _kind(value: Any) -> str:
    """A JSON value's kind as a LambdaLR state holds it: bool, int, number (int or float), list, null, other."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "other"
    return "list" if isinstance(value, list) else "other"


def scheduler_problem(state: Any) -> str | None:
    """Why ``state`` is not a state of the loop's scheduler (a LambdaLR: ``load_state_dict`` sets every key as an
    attribute of the scheduler and of its lambdas), None if it is one or absent (a checkpoint written before the
    scheduler's state was kept there): only the keys a fresh LambdaLR's state holds, each of its kind (a learning
    rate list of finite numbers, a count an integer, a flag a boolean), the lambdas' states all null."""
    if state is None:
        return None
    if not isinstance(state, dict):
        return f"a {type(state).__name__}, not a mapping"
    import torch

    template = torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)]),
                                                 lambda step: 1.0).state_dict()
    for key, value in state.items():
        if key not in template:
            return f"unknown key {str(key)[:40]!r}"
        want, got = _kind(template[key]), _kind(value)
        if key == "lr_lambdas":
            if got != "list" or any(v is not None for v in value):
                return "lr_lambdas must be a list of nulls"
        elif want == "list":
            if got != "list" or not value or any(_kind(v) not in ("int", "number") for v in value):
                return f"{key} must be a list of finite numbers"
        elif got != want and not (want == "number" and got == "int"):
            return f"{key} must be {'a boolean' if want == 'bool' else 'an integer' if want == 'int' else 'a number'}"
    return None


def refused_pickle(checkpoint: Path) -> str | None:
    """The first pickled file of ``checkpoint`` torch's weights-only loader refuses (None: it accepts every one:
    tensors and plain values; memory-mapped, so the tensors are not read into memory): accelerate loads them that way
    and a received one it refuses would stop training with a traceback. Nothing is unpickled beyond what that loader
    allows."""
    from accelerate.utils.other import load  # weights-only, with the numpy types accelerate allows

    for pattern in CHECKPOINT_PICKLES:
        for file in sorted(checkpoint.glob(pattern)):
            try:
                load(file, map_location="cpu", weights_only=True, mmap=True)
            except Exception:  # refused (UnpicklingError), or not a file torch wrote
                return file.name
    return None


def latest_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """The newest checkpoint this loop can resume from (:func:`why_not_resumable`), None if there is none: checkpoints are
    tried newest first and the search stops at the first that passes, so older ones are never read; each one passed
    over on the way is one warning line naming it and why."""
    for checkpoint in reversed(all_checkpoints(Path(output_dir))):
        why = why_not_resumable(checkpoint)
        if why is None:
            return checkpoint
        log.warning("checkpoint %s passed over: %s", checkpoint.name, why)
    return None


def clear_checkpoints(output_dir: str | os.PathLike) -> None:
    """Remove every checkpoint once a run has produced its final model: resumable or not (one passed over at resume
    goes too), and the hidden folders of a save that was cut short. Nothing in them is read."""
    output_dir = Path(output_dir)
    for ckpt in [*all_checkpoints(output_dir), *output_dir.glob(".checkpoint-*.tmp")]:
        shutil.rmtree(ckpt, ignore_errors=True)
