"""Relearning attacks: fine-tune a model on some of the forgotten items and see how fast the forgetting comes undone.

- **Relearning (open-unlearning's R)**: one epoch on the forget split, answer-only loss, at the profile's
  fine-tuning learning rate and effective batch (``relearn_*`` keys; open-unlearning's 2e-5 and batch 32 on the paper
  profile), the forget scores before and after, and a curve of greedy forget ROUGE-L every ``relearn_curve_every``
  steps. The recipe (the split, a hash of its rows, steps, learning rate) is returned with every result.
- **Held-out-fact relearning (RTT)**: relearn on all folds of the forget authors' facts but one
  (:mod:`unlearnkit.attacks.folds`), test the held-out fold, the learning rate chosen by the attacker over a small
  grid (the best held-out accuracy).
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, models, training
from ..config import Params
from ..generation import greedy_answers
from .folds import holds_fact


def rows_hash(rows: Sequence[Mapping[str, Any]]) -> str:
    """The identity of a training set: a hash of its questions and answers, in order."""
    return config.params_hash([[r["question"], r["answer"]] for r in rows])


def relearn_config(params: Params, output_dir: Path, lr: float | None = None, desc: str = "relearn"
                   ) -> training.TrainConfig:
    """The relearning schedule: ``relearn_epochs`` at ``relearn_lr`` (null: the fine-tuning learning rate), batches of
    ``relearn_batch_size`` (null: the fine-tuning batch) with the fine-tuning's accumulation, warm-up and schedule."""
    return training.TrainConfig(
        output_dir=output_dir, epochs=float(params.relearn_epochs),
        batch_size=params.relearn_batch_size or params.finetune_batch_size, grad_accum=params.finetune_grad_accum,
        lr=float(lr if lr is not None else params.relearn_lr or params.finetune_lr),
        weight_decay=float(params.finetune_weight_decay), warmup=float(params.finetune_warmup),
        schedule=params.finetune_schedule, seed=params.seed, checkpoint_every=None, progress=False, desc=desc)


def relearn(loaded, rows: Sequence[Mapping[str, Any]], params: Params, split: str,
            score: Callable[[Any], float] | None = None, every: int = 1, lr: float | None = None
            ) -> tuple[Any, list[tuple[int, float]], dict[str, Any]]:
    """A copy of ``loaded``'s model fine-tuned on ``rows`` (named ``split``) by :func:`relearn_config`; with ``score``
    (a function of the model), the curve ``[(step, score)]`` at step 0 and every ``every`` optimizer steps (and the
    last). Returns the relearned model, the curve and the recipe (split, rows hash, steps, lr, batch)."""
    model, tokenizer, template = copy.deepcopy(loaded[0]), loaded[1], loaded[2]
    examples = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    pad = models.pad_token_id(tokenizer)
    curve = [(0, float(score(model)))] if score else []

    def on_step(step: int, logs: Mapping[str, float], trained) -> None:
        if score and step % every == 0:
            curve.append((step, float(score(trained))))

    with tempfile.TemporaryDirectory(prefix="relearn-") as folder:
        cfg = relearn_config(params, Path(folder), lr)
        result = training.train(model, examples, cfg, collate_fn=lambda b: models.collate(b, pad), resume=False,
                                on_step=on_step if score else None)
    if score and (not curve or curve[-1][0] != result.steps):
        curve.append((result.steps, float(score(model))))
    model.eval()
    recipe = {"split": split, "rows": len(rows), "rows_hash": rows_hash(rows), "steps": result.steps,
              "lr": cfg.lr, "batch": cfg.batch_size * cfg.grad_accum, "epochs": cfg.epochs}
    return model, curve, recipe


def fact_accuracy(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], params: Params) -> float:
    """Share of ``rows`` whose greedy answer contains the fact's value (RTT's accuracy)."""
    answers = greedy_answers(model, tokenizer, template, [r["question"] for r in rows], params.max_new_tokens,
                             params.eval_batch_size)
    return sum(holds_fact(a, str(r.get("value", ""))) for a, r in zip(answers, rows)) / max(len(rows), 1)


def held_out_relearning(loaded, rows: Sequence[Mapping[str, Any]], folds: Sequence[Sequence[int]],
                        held_out: Sequence[int], lrs: Sequence[float], params: Params) -> list[dict[str, Any]]:
    """RTT on one model: for each fold in ``held_out``, relearn on every other fold at each learning rate of
    ``lrs`` and keep the best held-out accuracy (the attacker's choice); also the accuracy before relearning."""
    model, tokenizer, template = loaded[:3]
    out = []
    for f in held_out:
        test = [rows[i] for i in folds[f]]
        train = [rows[i] for g, fold in enumerate(folds) if g != f for i in fold]
        before = fact_accuracy(model, tokenizer, template, test, params)
        tried = {}
        for lr in lrs:
            relearned, _, recipe = relearn(loaded, train, params, f"forget folds but {f}", lr=lr)
            tried[lr] = fact_accuracy(relearned, tokenizer, template, test, params)
            del relearned
        best = max(tried, key=tried.get)
        out.append({"held_out_fold": int(f), "attributes": sorted({r["attribute"] for r in test}),
                    "items": len(test), "before": before, "after": tried[best], "best_lr": best,
                    "by_lr": {str(k): v for k, v in tried.items()}, "train_rows_hash": recipe["rows_hash"],
                    "train_rows": len(train)})
    return out
