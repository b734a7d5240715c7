"""One training loop, on ``accelerate``, for fine-tuning and for unlearning.

What it does that a bare loop does not: answer-only loss (the labels carry -100 on prompts), AdamW
with a warm-up schedule, gradient accumulation, a progress bar, checkpoints written atomically every N
steps, resume after an interruption from the newest complete checkpoint, and seeding so that a resumed
run ends with the same weights as an uninterrupted one. Multi-GPU comes from ``accelerate launch``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Sampler

from .checkpoints import (  # callers say training.: the checkpoints are part of this module's __all__
    all_checkpoints,
    clear_checkpoints,
    latest_checkpoint,
    step_of,
    trainer_state,
)
from .models.running import card_bytes
from .stations import show_progress, timed

__all__ = [
    "CARD_HEADROOM", "MODEL_INPUTS", "EpochShuffleSampler", "LossFn", "StepCallback", "TrainConfig", "TrainResult",
    "causal_lm_loss", "choose_micro_batches", "gpu_micro_batches", "make_schedule", "micro_batch_weight",
    "per_process_batches", "pooled_mean", "processes", "restore_schedule", "step_weights", "tokens_per_example",
    "train",
    # the checkpoints' names, which callers reach as training.<name>
    "all_checkpoints", "clear_checkpoints", "latest_checkpoint", "step_of", "trainer_state",
]

LossFn = Callable[[torch.nn.Module, dict[str, Any]], "torch.Tensor | tuple[torch.Tensor, dict[str, float]]"]
StepCallback = Callable[[int, dict[str, float], torch.nn.Module], None]


@dataclass
class TrainConfig:
    output_dir: str | os.PathLike
    epochs: float = 1.0
    max_steps: int | None = None  # optimizer steps; overrides epochs when set
    batch_size: int = 16
    grad_accum: int = 1
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup: float = 0.0  # a fraction of all steps if < 1, else a number of steps
    schedule: str = "linear"  # linear | cosine | constant (after warm-up)
    max_grad_norm: float | None = 1.0
    seed: int = 0
    checkpoint_every: int | None = None  # optimizer steps between resumable checkpoints
    keep_checkpoints: int = 1  # resumable checkpoints kept (the newest ones)
    progress: bool = True
    desc: str = "train"
    # "auto": on a CUDA device the split of the global batch batch_size x grad_accum into micro-batches is the one
    # gpu_micro_batches chooses for the card (recorded as TrainResult.micro_batch); "given": as configured, on any
    # device (gpu_scale's 4 x 8 measurement). On a CPU both train batch_size x grad_accum as given.
    micro_batches: str = "auto"


@dataclass
class TrainResult:
    steps: int
    history: list[dict[str, float]] = field(default_factory=list)
    resumed_from: int | None = None
    #: The split a GPU chose (:func:`choose_micro_batches`), None where the configured one was trained (a CPU).
    micro_batch: dict[str, Any] | None = None


class EpochShuffleSampler(Sampler[int]):
    """A permutation per epoch drawn from ``seed + epoch``: the order of any epoch can be replayed
    on resume without replaying the ones before it."""

    def __init__(self, n: int, seed: int, shuffle: bool = True):
        self.n, self.seed, self.shuffle, self.epoch = n, seed, shuffle, 0

    def __iter__(self):
        if not self.shuffle:
            return iter(range(self.n))
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.n, generator=g).tolist())

    def __len__(self) -> int:
        return self.n


def processes():
    """accelerate's state of the processes of this run: one in a notebook, several under ``accelerate launch``.

    Created with the CPU flag that ``accelerate launch --cpu`` (or ``ACCELERATE_USE_CPU=1``) sets: a state first made
    without it on a machine without GPUs would take the launched processes for independent single ones."""
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


def pooled_mean(total: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """``total / count`` for a loss pooled over the tokens of a batch, the same under ``accelerate launch``.

    There each process holds a shard of the batch and DDP averages the gradients over the processes; the local
    total is then divided by the count of the whole global batch, times the number of processes (which DDP's
    average divides out again), so the update is the one a single process makes on the global batch rather than an
    average of per-shard means."""
    n_processes = processes().num_processes
    if n_processes == 1:
        return total / count.clamp(min=1)
    from accelerate.utils import reduce

    return total / reduce(count.detach().float(), reduction="sum").clamp(min=1) * n_processes


def per_process_batches(batch_size: int, grad_accum: int, n_processes: int) -> tuple[int, int]:
    """(batch, accumulation) of each of ``n_processes`` so that one optimizer step still sees ``batch_size ×
    grad_accum`` examples, the same ones as a single process (the data loader deals process i every n-th batch).

    The batch is divided where it can be: each round of micro-batches of the processes is then exactly one
    micro-batch of the single process, and token-pooled losses (:func:`pooled_mean`) give the same update. Else the
    accumulation is divided, and a pooled loss is pooled over ``n_processes`` micro-batches where one process pools
    each on its own (equal when they hold equal numbers of tokens)."""
    if n_processes == 1:
        return batch_size, grad_accum
    if batch_size % n_processes == 0:
        return batch_size // n_processes, grad_accum
    if grad_accum % n_processes == 0:
        return batch_size, grad_accum // n_processes
    raise ValueError(f"a global batch of {batch_size} x {grad_accum} accumulation steps cannot be shared by "
                     f"{n_processes} processes: make the batch size or the accumulation a multiple of {n_processes}")


#: Share of a card's total memory the micro-batch rule plans for (the rest: the CUDA context, the allocator's slack).
CARD_HEADROOM = 0.8


def gpu_micro_batches(global_batch: int, card_bytes: int, n_parameters: int, *, hidden_size: int, num_layers: int,
                      vocab_size: int, tokens_per_example: int) -> tuple[int, int]:
    """(micro-batch, accumulation) for a global batch of ``global_batch`` examples on a GPU of ``card_bytes`` total
    memory: the largest divisor of the global batch whose estimated peak fits :data:`CARD_HEADROOM` of the card.

    A pure function of the card and the model's size, never of the memory free at the moment, so the same card and
    model always get the same split (issue #61). The estimate is an upper bound: 16 bytes a parameter (weights,
    gradients and AdamW's two moments in float32) and, per example and token, the activations a transformer layer
    keeps for its backward pass (Korthikanti et al. 2022: 34 x hidden bytes in 16-bit, doubled for float32) and
    three float32 copies of the logits (logits, softmax, their gradient). Where not even one example fits, the split
    is 1 x ``global_batch``."""
    for name, value in (("global_batch", global_batch), ("card_bytes", card_bytes), ("n_parameters", n_parameters),
                        ("hidden_size", hidden_size), ("num_layers", num_layers), ("vocab_size", vocab_size),
                        ("tokens_per_example", tokens_per_example)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    static = 16 * n_parameters
    per_example = tokens_per_example * (68 * hidden_size * num_layers + 12 * vocab_size)
    fits = max(1, int((CARD_HEADROOM * card_bytes - static) // per_example))
    batch = max(d for d in range(1, global_batch + 1) if global_batch % d == 0 and d <= fits)
    return batch, global_batch // batch


def tokens_per_example(examples: Sequence[Any]) -> int:
    """The most token ids one example holds, over all its sequences (an unlearning pair's forget, retain and other
    parts together): what the micro-batch rule plans a row of activations for. A property of the data alone."""
    def count(e: Any) -> int:
        if isinstance(e, Mapping):
            if "input_ids" in e:
                return len(e["input_ids"])
            return sum(count(v) for v in e.values())
        return 0

    return max(1, max(count(e) for e in examples))


def choose_micro_batches(model, examples: Sequence[Any], batch_size: int, grad_accum: int, device: torch.device,
                         how: str = "auto") -> tuple[int, int, dict[str, Any] | None]:
    """(micro-batch, accumulation, record) of one process's global batch ``batch_size x grad_accum`` on ``device``.

    On a CUDA device with ``how="auto"`` the split is :func:`gpu_micro_batches`'s for the card's total memory, the
    model's size (its trainable and frozen parameters, hidden size, layers, vocabulary) and the longest example, and
    the record says so (the card, the rule's inputs, the split it replaced); anywhere else the split is the
    configured one and the record None, so a CPU run trains, logs and saves exactly what it did before."""
    if how not in ("auto", "given"):
        raise ValueError(f"micro_batches must be 'auto' or 'given', got {how!r}")
    if how == "given" or device.type != "cuda":
        return batch_size, grad_accum, None
    cfg = getattr(model, "config", None)
    sizes = {"hidden_size": getattr(cfg, "hidden_size", None), "num_layers": getattr(cfg, "num_hidden_layers", None),
             "vocab_size": getattr(cfg, "vocab_size", None)}
    if any(not isinstance(v, int) for v in sizes.values()):  # not a transformers model: nothing to size it by
        return batch_size, grad_accum, None
    card = card_bytes(device)
    n_parameters = sum(p.numel() for p in model.parameters())
    per_example = tokens_per_example(examples)
    batch, accum = gpu_micro_batches(batch_size * grad_accum, card, n_parameters, tokens_per_example=per_example,
                                     **sizes)
    record = {"batch_size": batch, "grad_accum": accum, "configured": [batch_size, grad_accum],
              "chosen_by": "training.gpu_micro_batches", "card_bytes": card, "n_parameters": n_parameters,
              "tokens_per_example": per_example}
    return batch, accum, record


def micro_batch_weight(batch: Mapping[str, Any]) -> torch.Tensor | int:
    """What one micro-batch weighs in its optimizer step's accumulated gradient: its labelled (scored) tokens where
    the batch has labels at its top (the loss is a mean over those tokens, :func:`causal_lm_loss`), else its examples
    (an unlearning pair batch, whose terms are means over sequences, or over each part's tokens)."""
    labels = batch.get("labels")
    if isinstance(labels, torch.Tensor):
        return (labels[:, 1:] != -100).sum()

    def rows(value: Any) -> int | None:
        if isinstance(value, torch.Tensor):
            return int(value.shape[0])
        if isinstance(value, Mapping):
            return next((n for n in map(rows, value.values()) if n is not None), None)
        return None

    n = rows(batch)
    if n is None:
        raise ValueError("a micro-batch with no tensor to weigh it by")
    return n


def step_weights(counts: Sequence[torch.Tensor | int], device: torch.device) -> list[torch.Tensor]:
    """Each micro-batch's share of its optimizer step (summing to 1 over the step, over all processes under
    ``accelerate launch``), kept on the device: the gradient of ``sum(w_i * loss_i)`` is the one the step's whole
    batch would give as one micro-batch, so 4 x 8 and 32 x 1 make the same update up to rounding."""
    counts = torch.stack([torch.as_tensor(c, device=device).float() for c in counts])
    if processes().num_processes > 1:
        from accelerate.utils import reduce

        counts = reduce(counts, reduction="sum")
    return list(counts / counts.sum().clamp(min=1))


#: What a batch may hand the model besides its labels: padded batches have an attention mask, packed ones position ids.
MODEL_INPUTS = ("input_ids", "attention_mask", "position_ids")


def causal_lm_loss(model, batch) -> torch.Tensor:
    """Mean token cross-entropy over the labelled (answer) tokens of the batch (of the global batch under
    ``accelerate launch``: :func:`pooled_mean`); the batch padded (``models.collate``) or packed (``models.pack``)."""
    # no key/value cache in training (transformers would build one, and would not read packed position ids beside it)
    inputs = {**{k: batch[k] for k in MODEL_INPUTS if k in batch}, "use_cache": False}
    if processes().num_processes == 1:
        return model(**inputs, labels=batch["labels"]).loss
    logits = model(**inputs).logits[:, :-1]
    labels = batch["labels"][:, 1:]
    total = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1),
                                              ignore_index=-100, reduction="sum")
    return pooled_mean(total, (labels != -100).sum())


def make_schedule(optimizer, schedule: str, warmup_steps: int, total_steps: int):
    def factor(step: int) -> float:
        if warmup_steps and step < warmup_steps:
            return (step + 1) / warmup_steps
        if schedule == "constant":
            return 1.0
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        progress = min(max(progress, 0.0), 1.0)
        if schedule == "linear":
            return 1.0 - progress
        if schedule == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * progress))
        raise ValueError(f"unknown schedule {schedule!r}; use linear, cosine or constant")

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def restore_schedule(scheduler, state: Mapping[str, Any] | None, step: int) -> None:
    """Put ``scheduler`` where a run that took ``step`` optimizer steps left it: from its state in trainer_state.json,
    or, for a checkpoint written before that was kept there, by stepping a fresh one (a LambdaLR's rate is a function
    of the step alone)."""
    if state is not None:
        scheduler.load_state_dict(dict(state))
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "lr_scheduler.step() before optimizer.step()": by design here
        for _ in range(step):
            scheduler.step()


class _DropTiedWeightsNote(logging.Filter):
    """accelerate's note that a checkpoint drops the second name of a shared tensor: the tiny Llama ties its input and
    output embeddings by design (``tie_word_embeddings``), and loading the checkpoint ties them again, so the note
    (ten lines of notebook 01, and its report page) says nothing a reader can act on. Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Removed shared tensor" not in str(record.msg)


@contextlib.contextmanager
def _tied_weights_quiet():
    logger, note = logging.getLogger("accelerate.utils.other"), _DropTiedWeightsNote()
    logger.addFilter(note)
    try:
        yield
    finally:
        logger.removeFilter(note)


@timed("training")
def train(model, examples: Sequence[Any], config: TrainConfig, collate_fn: Callable[[list[Any]], dict[str, Any]],
          loss_fn: LossFn = causal_lm_loss, resume: bool = True,
          on_step: StepCallback | None = None) -> TrainResult:
    """Train ``model`` in place on ``examples`` and return the per-step history.

    ``loss_fn(model, batch)`` returns the loss, or ``(loss, logs)`` with extra floats to record per step
    (unlearning logs its forget and retain losses this way). ``on_step(step, logs, model)`` runs after
    each optimizer step (unlearning saves its trajectory there) on the main process only. With ``resume`` the run
    continues from the newest complete checkpoint in ``output_dir``.

    ``config.batch_size × config.grad_accum`` is the global batch of an optimizer step however many processes
    ``accelerate launch`` starts: :func:`per_process_batches` shares it out, so a model trained on several GPUs is
    the one its profile (and its cache key) describes. The logged losses are means over the processes.

    On a CUDA device each process's global batch is split into micro-batches by :func:`choose_micro_batches` (the
    card's total memory and the model's size; ``config.micro_batches="given"`` keeps the configured split), recorded
    in ``TrainResult.micro_batch`` and trainer_state.json; a CPU trains the configured split and records none.
    Wherever a step has more than one micro-batch, each is weighted by its labelled tokens (:func:`step_weights`),
    so the update does not depend on the split up to rounding, and a resume on another split skips the same
    examples. With one micro-batch a step is trained, logged and saved exactly as before.

    The model comes back on the device it was given (accelerate trains it on the GPU where there is one): a caller,
    a test among them, that put it on the CPU feeds it CPU tensors afterwards; one that wants it on the GPU puts it
    there first (``models.load_model(..., device="auto")``).
    """
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from tqdm.auto import tqdm

    if len(examples) == 0:
        raise ValueError("no training examples")
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    set_seed(config.seed)
    batch_size, grad_accum = per_process_batches(config.batch_size, config.grad_accum, processes().num_processes)
    # Accumulation is weighted here (step_weights), not divided by accelerate: one accelerator for every split.
    accelerator = Accelerator()
    batch_size, grad_accum, chosen = choose_micro_batches(model, examples, batch_size, grad_accum, accelerator.device,
                                                          config.micro_batches)

    sampler = EpochShuffleSampler(len(examples), config.seed)
    loader = DataLoader(list(examples), batch_size=batch_size, sampler=sampler, collate_fn=collate_fn)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.ndim < 2 or "norm" in name.lower() else decay).append(p)
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
    )
    given = next((p.device for p in model.parameters()), None)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    steps_per_epoch = max(1, math.ceil(len(loader) / grad_accum))
    total_steps = config.max_steps or max(1, math.ceil(steps_per_epoch * config.epochs))
    warmup_steps = int(config.warmup if config.warmup >= 1 else round(config.warmup * total_steps))
    scheduler = make_schedule(optimizer, config.schedule, warmup_steps, total_steps)
    # The scheduler is not registered with accelerate, whose custom-object checkpoint is a pickle loaded with
    # weights_only=False: its state lives in trainer_state.json, and a checkpoint folder is never unpickled beyond
    # accelerate's weights_only loads (optimizer, RNG states) and the model's safetensors.

    step, history, resumed_from = 0, [], None
    ckpt = latest_checkpoint(out) if resume else None
    if ckpt is not None:
        accelerator.load_state(str(ckpt))
        state = trainer_state(ckpt)  # checked by latest_checkpoint: a malformed one was passed over
        step, history, resumed_from = state["step"], state["history"], state["step"]
        restore_schedule(scheduler, state.get("scheduler"), step)

    def save_checkpoint() -> None:
        if not accelerator.is_main_process:
            return
        final = out / f"checkpoint-{step}"
        tmp = out / f".checkpoint-{step}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        with _tied_weights_quiet():
            accelerator.save_state(str(tmp))
        state = {"step": step, "history": history, "scheduler": scheduler.state_dict(),
                 "config": _jsonable_config(config)}
        if chosen is not None:  # only where a GPU chose the split: a CPU run's state keeps its keys
            state["micro_batch"] = chosen
        (tmp / "trainer_state.json").write_text(json.dumps(state))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)  # a checkpoint directory exists only once it is complete
        # The newest keep_checkpoints up to this step stay; nothing in them is read. One newer than this step is
        # one the resume passed over (or another run's): it goes too, so it never counts among those kept.
        found = all_checkpoints(out)
        kept = [c for c in found if step_of(c) <= step][-max(1, config.keep_checkpoints):]
        for old in found:
            if old not in kept:
                shutil.rmtree(old, ignore_errors=True)

    bar = tqdm(total=total_steps, initial=step, desc=config.desc, disable=not show_progress(config.progress)
               or not accelerator.is_local_main_process)
    model.train()
    while step < total_steps:
        epoch, done_in_epoch = divmod(step, steps_per_epoch)
        sampler.epoch = epoch
        batches = iter(accelerator.skip_first_batches(loader, done_in_epoch * grad_accum) if done_in_epoch
                       else loader)
        while group := list(itertools.islice(batches, grad_accum)):
            # grad_accum 1 trains each batch unweighted, as it always has (its bits kept); else every micro-batch
            # counts by its tokens, weights and losses staying on the device until the optimizer step
            weights = None if grad_accum == 1 else step_weights([micro_batch_weight(b) for b in group],
                                                                accelerator.device)
            micro_losses: list[torch.Tensor] = []
            micro_logs: dict[str, list[Any]] = {}
            for i, batch in enumerate(group):
                last = i == len(group) - 1
                with contextlib.nullcontext() if last else accelerator.no_sync(model):
                    result = loss_fn(model, batch)
                    loss, logs = result if isinstance(result, tuple) else (result, {})
                    accelerator.backward(loss if weights is None else loss * weights[i])
                micro_losses.append(loss.detach().float())
                for k, v in logs.items():
                    micro_logs.setdefault(k, []).append(v.detach() if isinstance(v, torch.Tensor) else v)
            if config.max_grad_norm:
                accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            step += 1
            record = {"step": step, "epoch": step / steps_per_epoch, "loss": _step_mean(micro_losses, weights),
                      "lr": scheduler.get_last_lr()[0]}
            record.update({k: _step_mean(v, weights) for k, v in micro_logs.items()})
            if accelerator.num_processes > 1:
                logged = [k for k in record if k not in ("step", "epoch", "lr")]
                means = accelerator.reduce(torch.tensor([record[k] for k in logged], dtype=torch.float64,
                                                        device=accelerator.device), "mean")
                record.update(zip(logged, means.tolist(), strict=True))
            history.append(record)
            bar.update(1)
            bar.set_postfix(loss=f"{record['loss']:.4f}")
            if on_step is not None and accelerator.is_main_process:
                on_step(step, record, accelerator.unwrap_model(model))
            if config.checkpoint_every and step % config.checkpoint_every == 0 and step < total_steps:
                save_checkpoint()
            if step >= total_steps:
                break
    bar.close()
    model.eval()
    if given is not None:
        accelerator.unwrap_model(model).to(given)
    if accelerator.is_main_process:
        (out / "history.json").write_text(json.dumps(history))
    accelerator.wait_for_everyone()
    return TrainResult(steps=step, history=history, resumed_from=resumed_from, micro_batch=chosen)


def _step_mean(values: Sequence[Any], weights: Sequence[torch.Tensor] | None) -> float:
    """The logged value of one optimizer step: the plain mean of its micro-batches' floats, read once (with no
    weights: grad_accum 1, the sum and order it always had), else their weighted sum, the step's objective."""
    if weights is None:
        floats = [float(v) for v in values]
        return sum(floats) / len(floats)
    stacked = torch.stack([torch.as_tensor(v, device=weights[0].device).float() for v in values])
    return float((stacked * torch.stack(weights)).sum())


def _jsonable_config(config: TrainConfig) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()}
