"""The checkpoint folders a training run leaves in its output folder (``checkpoint-<step>``): which one a run resumes
from, and their removal. Only resuming reads one (:func:`latest_checkpoint`, newest first, stopping at the first it
can use); pruning and :func:`clear_checkpoints` remove folders by step and read nothing in them. A checkpoint is data
(it may have been received): its pickles are loaded by torch's weights-only loader or not at all."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

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
    safetensors weights), hold no accelerate custom-object pickle (loaded with weights_only=False: checkpoints
    written before the scheduler's state moved to trainer_state.json, or received with one) and only pickles torch's
    weights-only loader accepts (:func:`refused_pickle`)."""
    if not (checkpoint / "trainer_state.json").is_file() or not (checkpoint / "model.safetensors").is_file():
        return "incomplete (no trainer_state.json or model.safetensors)"
    custom = next(iter(sorted(checkpoint.glob("custom_checkpoint_*"))), None)
    if custom is not None:
        return f"{custom.name} is a custom-object pickle, which accelerate loads with weights_only=False"
    refused = refused_pickle(checkpoint)
    if refused is not None:
        return f"{refused} is not loadable weights-only"
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
