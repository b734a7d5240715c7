"""The P/N model pool of notebook 09 (open-unlearning's meta-evaluation of metrics, docs/metrics.md §10.1): models that
hold the forget knowledge (P) and models that never saw it (N), each a short continued fine-tuning of the seed's
retain model on one data variant, cached in the run store as every trained model is.

- ``forget`` (P): the forget split as written; ``paraphrased`` (P): the forget questions with their paraphrased
  answers (the same facts in other words).
- ``perturbed`` (N): the forget questions, each with one of its perturbed (wrong) answers, taken in turn;
  ``heldout`` (N): other biographies, half of the holdout split (every other item; the other half is what the
  membership-inference AUCs score the pool against, so no pool model has seen their reference set).

Each variant is trained at every rate of ``pool_lrs`` (constant, no warm-up, the relearning batch) for the largest
count of ``pool_epochs``, and the model is kept after each epoch the list names: with a constant rate the model after
epoch e of the longer run is the e-epoch run, so the pool costs variants x rates x max(epochs) epochs of training.
No new corpus file is drawn: every variant is a split the corpus already holds, so every corpus file keeps its bytes.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import config, models, runs, training
from ..config import Params
from ..data.tofu import holdout_split_for
from .corpus import corpus
from .finetune import finetuned_model
from .store import cached, seed_key, trains

#: Which side of the pool each data variant is on: P holds the forget knowledge, N never saw it.
POOL_SIDES = {"forget": "P", "paraphrased": "P", "perturbed": "N", "heldout": "N"}
#: Bump when what a pool model is trained on changes (its cache key holds it).
POOL_VERSION = 1


@dataclass(frozen=True)
class PoolModel:
    """One model of the pool: its name in the run store (``models/<name>``), data variant, side, rate and epochs."""

    name: str
    variant: str
    side: str
    lr: float
    epochs: int

    def as_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "side": self.side, "lr": self.lr, "epochs": self.epochs}


def pool_plan(params: Params) -> list[PoolModel]:
    """The pool the profile asks for, in order (variant, rate, epochs); refused in one line, before any training, when
    one side would be empty."""
    sides = {POOL_SIDES[v] for v in params.pool_variants}
    if sides != {"P", "N"}:
        missing = "P (forget, paraphrased)" if "P" not in sides else "N (perturbed, heldout)"
        raise ValueError(f"pool_variants {params.pool_variants} has no variant on side {missing}: faithfulness "
                         "needs models on both sides")
    return [PoolModel(f"pool-{v}-lr{lr:g}-ep{e}", v, POOL_SIDES[v], float(lr), int(e))
            for v in dict.fromkeys(params.pool_variants) for lr in dict.fromkeys(params.pool_lrs)
            for e in sorted(set(params.pool_epochs))]


def holdout_halves(params: Params, source=None) -> tuple[list[dict], list[dict]]:
    """The holdout split in two halves: (scored, trained). The even items are the membership-inference reference of
    every pool model, the odd ones the ``heldout`` variant's training set."""
    rows = (source or corpus(params)).load(holdout_split_for(params.forget_split))
    return rows[0::2], rows[1::2]


def pool_rows(params: Params, variant: str, source=None) -> list[dict[str, str]]:
    """The question-answer rows variant ``variant`` is trained on (module docstring)."""
    source = source or corpus(params)
    if variant not in POOL_SIDES:
        raise ValueError(f"unknown pool variant {variant!r}; use one of {', '.join(POOL_SIDES)}")
    if variant == "heldout":
        return [{"question": r["question"], "answer": r["answer"]} for r in holdout_halves(params, source)[1]]
    if variant == "forget":
        return [{"question": r["question"], "answer": r["answer"]} for r in source.load(params.forget_split)]
    rows = source.load(f"{params.forget_split}_perturbed")
    if variant == "paraphrased":
        return [{"question": r["question"], "answer": r["paraphrased_answer"]} for r in rows]
    return [{"question": r["question"], "answer": r["perturbed_answer"][i % len(r["perturbed_answer"])]}
            for i, r in enumerate(rows)]


def _schedule(params: Params) -> dict[str, Any]:
    return {"batch_size": params.relearn_batch_size or params.finetune_batch_size,
            "grad_accum": params.finetune_grad_accum, "weight_decay": float(params.finetune_weight_decay),
            "schedule": "constant", "warmup": 0.0}


def _key(params: Params, retain_identity: str, rows: Sequence[Mapping[str, str]], member: PoolModel) -> str:
    from ..attacks import rows_hash

    return config.params_hash({"retain": retain_identity, "variant": member.variant, "rows": rows_hash(rows),
                               "lr": member.lr, "epochs": member.epochs, "schedule": _schedule(params),
                               "version": POOL_VERSION, **seed_key(params)})


def pool_models(params: Params) -> dict[str, Path]:
    """Train (or find cached) every model of :func:`pool_plan`; ``{name: folder}`` in the plan's order. One run per
    variant and rate, from a copy of the retain model, the models of its epochs saved as each is reached."""
    plan = pool_plan(params)
    source = corpus(params)
    retain_name = runs.retain_model(params, params.forget_split)
    retain_folder = runs.model_dir(params, retain_name)
    retain = None if models.is_saved_model(retain_folder) else finetuned_model(params, retain_name)
    identity = runs.model_identity(retain_folder)  # notebook 01's retain model, loaded only if a run must train
    for variant in dict.fromkeys(m.variant for m in plan):
        rows = pool_rows(params, variant, source)
        for lr in dict.fromkeys(m.lr for m in plan if m.variant == variant):
            members = [m for m in plan if m.variant == variant and m.lr == lr]
            keys = {m.epochs: _key(params, identity, rows, m) for m in members}
            if all(cached(runs.model_dir(params, m.name), keys[m.epochs]) for m in members):
                continue
            retain = retain or finetuned_model(params, retain_name)
            with trains(params, f"pool-{variant}-lr{lr:g}"):
                _train_run(params, retain, rows, members, keys)
    return {m.name: runs.model_dir(params, m.name) for m in plan}


def _train_run(params: Params, retain, rows, members: Sequence[PoolModel], keys: Mapping[int, str]) -> None:
    model, tokenizer, template = copy.deepcopy(retain.model), retain.tokenizer, retain.template
    examples = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    pad = models.pad_token_id(tokenizer)
    keep = {m.epochs: m for m in members}
    history: list[dict] = []

    def on_step(step: int, record: Mapping[str, float], trained) -> None:
        history.append(dict(record))
        epoch = record["epoch"]
        if epoch == int(epoch) and int(epoch) in keep:
            member = keep[int(epoch)]
            models.save_model(trained, tokenizer, runs.model_dir(params, member.name), template,
                              extra={"params_hash": keys[member.epochs], "pool": member.as_dict(),
                                     "n_train": len(rows)},
                              files={"history.json": json.dumps(history)})

    schedule = _schedule(params)
    with tempfile.TemporaryDirectory(prefix="pool-") as folder:
        cfg = training.TrainConfig(output_dir=Path(folder), epochs=float(max(keep)), lr=members[0].lr,
                                   seed=params.seed, checkpoint_every=None, progress=False,
                                   desc=f"pool {members[0].variant}", **schedule)
        training.train(model, examples, cfg, collate_fn=lambda b: models.collate(b, pad), resume=False,
                       on_step=on_step)
