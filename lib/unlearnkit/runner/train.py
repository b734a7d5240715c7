"""``runner train``: one training step of the run store outside the notebooks (e.g. under ``accelerate launch``)."""

from __future__ import annotations

import argparse
import json

from .checks import checked_params, set_overrides
from .lines import Refused, project_relative

#: The training steps ``runner train`` runs, each the cached pipeline step of the notebooks (01: base and finetune,
#: 02: unlearn), so a model trained here under ``accelerate launch`` is the one the notebooks then find.
TRAIN_STEPS = ("base", "finetune", "unlearn")


def train_step(step: str, profile: str, overrides: dict, split: str = "full", run: str | None = None) -> dict:
    """Train (or find cached) one model of the run store and return what it ended with.

    Meant for ``accelerate launch -m unlearnkit.runner train ...`` on several GPUs (or ``--cpu`` processes): the
    pipeline step shards each batch over the processes and only the main process writes."""
    from .. import pipeline, runs

    params = checked_params(profile, overrides, [run] if step == "unlearn" and run else [])
    if step == "base":
        pipeline.base_model(params)
        name = "base"
    elif step == "finetune":
        name = "target" if split == "full" else split
        pipeline.finetuned_model(params, split, name)
    else:
        if not run:
            raise Refused("train --step unlearn needs --run (a method or a run of method_settings)")
        if not runs.is_saved(params, "target"):
            raise Refused(f"no target model in {runs.model_dir(params, 'target')}: train --step finetune first")
        pipeline.unlearned_model(params, run)
        name = runs.unlearned_name(run)
    logged = pipeline.history(params, name)
    return {"step": step, "model": project_relative(runs.model_dir(params, name)), "optimizer_steps": len(logged),
            "final_loss": logged[-1]["loss"] if logged else None}


def cmd_train(args: argparse.Namespace) -> int:
    overrides = set_overrides(args)  # an unknown key is refused when the profile is merged with them
    summary = train_step(args.step, args.profile, overrides, args.split, args.run)
    from ..training import processes

    if processes().is_main_process:
        print(json.dumps(summary), flush=True)
    return 0
