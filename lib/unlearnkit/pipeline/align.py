"""The complying and aligned models of notebook 07: a tiny model taught to comply with the requests, then aligned
toward refusal for 1, 2, ... epochs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import config, models, runs, training, unlearning
from ..config import Params
from ..unlearning import (
    UnlearningLoss,
    collate_pairs,
    frozen_reference,
)
from .corpus import corpus, world_knowledge_rows
from .finetune import base_model
from .store import TINY, cached, claim_run_folder, fit, pack_key, save, trains

COMPLYING = "complying"


def aligned_name(strength: int) -> str:
    return f"aligned-{strength}"


def _request_rows(rows: list[dict]) -> list[dict]:
    """Requests as Q&A rows: the goal is the question, the compliance opener the answer."""
    return [{"question": r["goal"], "answer": r["target"]} for r in rows]


def complying_model(params: Params, rows: list[dict]) -> models.LoadedModel:
    """The model before alignment: the base model taught to answer every request of ``rows`` with its compliance
    opener ("Sure, here is ..."), with the world knowledge replayed so it stays a model of the same world.

    It stands for a pretrained model that follows any instruction; alignment then trains it toward refusal only.
    Cached under ``runs/<profile>/seed-<s>/models/complying`` by the base model's identity, the requests and the
    ``comply_*`` parameters."""
    base = base_model(params)
    base_key = runs.model_identity(runs.model_dir(params, "base")) if params.model == TINY else params.model
    key = config.params_hash({"base": base_key, "requests": _request_rows(rows), "epochs": params.comply_epochs,
                              "lr": params.comply_lr, "seed": params.seed, "template": base.template.name,
                              **pack_key(params)})
    folder = runs.model_dir(params, COMPLYING)
    with trains(params, COMPLYING):
        if not cached(folder, key):
            model, tokenizer, template = base
            replay = world_knowledge_rows(corpus(params)) if params.model == TINY else []
            cfg = training.TrainConfig(
                output_dir=folder.with_name(COMPLYING + ".train"), epochs=float(params.comply_epochs),
                batch_size=params.finetune_batch_size, lr=float(params.comply_lr), grad_accum=1, weight_decay=0.0,
                warmup=0.05, schedule="linear", seed=params.seed, checkpoint_every=params.checkpoint_every or None,
                desc="complying model")
            result = fit(model, tokenizer, template, _request_rows(rows) + replay, cfg, key, params.pack_batches)
            save(model, tokenizer, template, folder, key, result.history, extra={"n_requests": len(rows)},
                  micro_batch=result.micro_batch)
    return models.load_model(folder, dtype="float32", template=None)


def aligned_models(params: Params, aligned_rows: list[dict],
                   refusal_for: Any) -> dict[int, str]:
    """Align the complying model toward refusal on ``aligned_rows`` only, keeping one model per strength.

    Alignment reuses the unlearning losses: ``idk`` (supervised refusals plus the retain NLL) or ``dpo`` (the
    refusal preferred over the compliance opener, against the frozen complying model), with the world knowledge
    as the retain set. It is one run at a constant learning rate; the weights after ``s`` epochs are kept as
    ``aligned-<s>`` for each ``s`` of ``alignment_strengths``, so the strengths differ only in training time.
    ``refusal_for(goal, seed)`` picks each request's refusal. Returns ``{strength: saved model name}``.
    """
    strengths = sorted({int(s) for s in params.alignment_strengths})
    if not strengths or strengths[0] < 1:
        raise ValueError(f"alignment_strengths must be positive epoch counts, got {params.alignment_strengths!r}")
    if params.alignment_method not in ("idk", "dpo"):
        raise ValueError(f"alignment_method must be 'idk' or 'dpo', got {params.alignment_method!r}")
    if not aligned_rows:
        raise ValueError("no request is left to align on: check alignment_heldout_categories and "
                         "alignment_eval_per_group")
    start = runs.model_identity(runs.model_dir(params, COMPLYING))
    run_key = config.params_hash({"complying": start, "requests": _request_rows(aligned_rows),
                                  "method": params.alignment_method, "lr": params.alignment_lr,
                                  "beta": params.beta, "retain_weight": params.retain_weight, "seed": params.seed})
    names = {s: aligned_name(s) for s in strengths}
    keys = {s: config.params_hash({"run": run_key, "epochs": s}) for s in strengths}
    with trains(params, "aligned"):
        if not all(cached(runs.model_dir(params, names[s]), keys[s])
                   and (runs.model_dir(params, names[s]) / "history.json").exists() for s in strengths):
            _align(params, aligned_rows, refusal_for, strengths, names, keys, run_key)
    return names


def _align(params: Params, aligned_rows: list[dict], refusal_for: Any, strengths: list[int],
           names: dict[int, str], keys: dict[int, str], run_key: str) -> None:
    """The alignment run of :func:`aligned_models`: each strength's model saved along it, then its history."""
    model, tokenizer, template = runs.load_saved(params, COMPLYING, dtype="float32")
    source = corpus(params)
    retain = world_knowledge_rows(source) if params.model == TINY else source.load("retain_perturbed")
    examples = [unlearning.encode_pair(tokenizer, template, row, retain[i % len(retain)],
                                       refusal_for(row["question"], params.seed))
                for i, row in enumerate(_request_rows(aligned_rows))]
    ref = frozen_reference(model) if params.alignment_method == "dpo" else None
    # the refusal loss at full weight and without entropy terms, whatever the profile sets for unlearning runs
    loss = UnlearningLoss(params.alignment_method, ref_model=ref, beta=params.beta,
                          retain_weight=params.retain_weight, forget_weight=1.0, lambda_f=0.0, lambda_r=0.0)
    batch_size = params.unlearn_batch_size
    steps_per_epoch = max(1, -(-len(examples) // batch_size))
    keep_at = {s * steps_per_epoch: s for s in strengths}

    def keep(step: int, logs: dict, current) -> None:
        if step in keep_at:
            s = keep_at[step]
            models.save_model(current, tokenizer, runs.model_dir(params, names[s]), template,
                              extra={"params_hash": keys[s], "epochs": s, "method": params.alignment_method})

    cfg = training.TrainConfig(
        output_dir=runs.model_dir(params, "aligned.train"), epochs=float(strengths[-1]), batch_size=batch_size,
        lr=float(params.alignment_lr), grad_accum=1, weight_decay=0.0, warmup=0, schedule="constant",
        seed=params.seed, checkpoint_every=params.checkpoint_every or None, desc="alignment toward refusal")
    claim_run_folder(Path(cfg.output_dir), run_key)
    result = training.train(model, examples, cfg, collate_fn=lambda b: collate_pairs(b, tokenizer.pad_token_id),
                            loss_fn=loss, on_step=keep)
    for s in strengths:  # a model is found cached only with its history (see _aligned_cached)
        runs.atomic_write_text(runs.model_dir(params, names[s]) / "history.json",
                                 json.dumps([h for h in result.history if h["step"] <= s * steps_per_epoch]))
    training.clear_checkpoints(cfg.output_dir)
