"""The plumbing of every cached training step: its cache key parts, the claim on a model of the run store, a run
folder's checkpoints, the training configuration from the profile, saving with the history."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from .. import models, paths, runs, training
from ..config import Params

TINY = "tiny"
#: The base model's training beyond the profile's base_epochs, base_lr and base_batch_size.
BASE_SCHEDULE = {"grad_accum": 1, "weight_decay": 0.0, "warmup": 0.05, "schedule": "linear"}


class TrainedModel(NamedTuple):
    """A model a step trained (or read from its cache), with its training log; ``settings`` are an unlearning
    run's loss settings. ``trained.loaded`` is the (model, tokenizer, template) triple the scorers take."""

    model: Any
    tokenizer: Any
    template: models.PromptTemplate
    history: list[dict]
    settings: dict[str, Any] | None = None

    @property
    def loaded(self) -> models.LoadedModel:
        return models.LoadedModel(self.model, self.tokenizer, self.template)


def cached(folder: Path, key: str) -> bool:
    return models.is_saved_model(folder) and runs.saved_recipe(folder).get("params_hash") == key


def cached_model(folder: Path, settings: dict[str, Any] | None = None) -> TrainedModel:
    loaded = models.load_model(folder, dtype="float32", template=None)
    return TrainedModel(*loaded, json.loads((folder / "history.json").read_text()), settings)


def tiny_model_config(params: Params) -> dict[str, int]:
    return {"hidden_size": params.tiny_hidden_size, "num_hidden_layers": params.tiny_layers,
            "num_attention_heads": params.tiny_heads, "intermediate_size": params.tiny_intermediate_size}


def train_config(params: Params, prefix: str, output_dir: Path, desc: str) -> training.TrainConfig:
    schedule = BASE_SCHEDULE if prefix == "base" else {k: params[f"{prefix}_{k}"] for k in BASE_SCHEDULE}
    return training.TrainConfig(
        output_dir=output_dir, epochs=float(params[f"{prefix}_epochs"]), batch_size=params[f"{prefix}_batch_size"],
        lr=float(params[f"{prefix}_lr"]), grad_accum=schedule["grad_accum"],
        weight_decay=float(schedule["weight_decay"]), warmup=float(schedule["warmup"]),
        schedule=schedule["schedule"], seed=params.seed, checkpoint_every=params.checkpoint_every or None,
        desc=desc)


def claim_run_folder(output_dir: Path, key: str, also_clear: tuple[Path, ...] = ()) -> None:
    """Mark output_dir as the run with parameters `key`, discarding what a different run left there.

    Resuming only makes sense for the same parameters, so checkpoints of another run (or of unknown
    origin, without a marker) are removed, together with folders that run wrote alongside them.
    """
    state = training.processes()
    for folder in (output_dir, *also_clear):  # a received store may hold a symlink to anywhere: never cleared
        paths.confined(folder, paths.RUNS, "a run folder")
    if state.is_main_process:
        marker = output_dir / "params_hash"
        if not marker.exists() or marker.read_text() != key:
            for folder in (output_dir, *also_clear):
                shutil.rmtree(folder, ignore_errors=True)
        output_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(key)
    state.wait_for_everyone()


def fit(model, tokenizer, template, rows: list[dict], cfg: training.TrainConfig, key: str,
         packed: bool = False) -> training.TrainResult:
    """Train on Q&A rows, answer-only loss; ``packed`` (the profile's ``pack_batches``) packs each batch's examples
    into fewer rows (:func:`models.pack`) where the model computes them as it computes padded ones."""
    claim_run_folder(Path(cfg.output_dir), key)
    examples = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    pad = models.pad_token_id(tokenizer)
    batch_of = models.pack if packed and models.packs_sequences(model) else models.collate
    return training.train(model, examples, cfg, collate_fn=lambda b: batch_of(b, pad))


def pack_key(params: Params) -> dict[str, Any]:
    """What packed batches add to a training step's cache key: nothing when off, so those keys stay what they were
    (packing trains on the same examples, but rounds differently: another model)."""
    return {"pack_batches": True} if params.pack_batches else {}


def seed_key(params: Params) -> dict[str, Any]:
    """What the training seed adds to the base and fine-tuning steps' cache keys (unlearning's and alignment's name it
    already): nothing for seed 0, whose keys stay what they were before the seed had a store of its own."""
    return {"training_seed": params.seed} if params.seed else {}


def save(model, tokenizer, template, folder: Path, key: str, history: list[dict], extra: dict | None = None,
          micro_batch: dict | None = None) -> None:
    """Save a trained model with its history; ``micro_batch``, the split a GPU chose (``TrainResult.micro_batch``),
    joins its extra fields only where there was one (a CPU run's saved fields are what they were)."""
    state = training.processes()
    if state.is_main_process:
        extra = {"params_hash": key, **(extra or {}), **({"micro_batch": micro_batch} if micro_batch else {})}
        models.save_model(model, tokenizer, folder, template, extra=extra,
                          files={"history.json": json.dumps(history)})
        training.clear_checkpoints(folder.with_name(folder.name + ".train"))
    state.wait_for_everyone()


@contextmanager
def trains(params: Params, name: str) -> Iterator[None]:
    """Only one process at a time trains model ``name`` of the run store: a worker that asks for a model another one
    is training waits here, then finds it cached (:func:`runs.exclusive`). Under ``accelerate launch`` the main
    process holds the claim for all of its processes, which train together."""
    with runs.exclusive(params, name, active=training.processes().is_main_process):
        yield


def with_lora(model, params: Params):
    if not params.lora_rank:
        return model
    return models.apply_lora(model, r=params.lora_rank, lora_alpha=params.lora_alpha or 2 * params.lora_rank,
                             dropout=float(params.lora_dropout), target_modules=params.lora_target_modules)


def lora_key(params: Params) -> dict[str, Any]:
    """What a LoRA run's cache key adds; empty for full fine-tuning, so those keys stay what they were."""
    if not params.lora_rank:
        return {}
    return {"lora": {k: params[k] for k in ("lora_rank", "lora_alpha", "lora_target_modules", "lora_dropout")}}
