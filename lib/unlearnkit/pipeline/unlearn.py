"""Unlearning runs: the target of notebook 01 unlearned with one method (trained, or read from its cache), with the
weights kept along the run; the batches each method asks for; greedy ROUGE along a run."""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, models, runs, stations, training, unlearning, workers
from ..config import Params
from ..data.tofu import (
    TofuSource,
)
from ..generation import greedy_answers, sample_continuations
from ..metrics.tofu import rouge_l, tofu_eval_splits
from ..unlearning import (
    DISABLE_ADAPTERS,
    SAMPLED,
    UnlearningLoss,
    collate_pairs,
    encode_pairs,
    freeze_above_layer,
    frozen_reference,
    is_peft_model,
)
from .corpus import corpus, unlearning_retain_rows
from .settings import run_params, unlearning_settings
from .store import (
    TrainedModel,
    cached,
    cached_model,
    claim_run_folder,
    lora_key,
    save,
    train_config,
    trains,
    with_lora,
)


def unlearned_model(params: Params, run: str) -> TrainedModel:
    """Unlearn the target model of notebook 01 with one method; cached like every other step.

    Forget examples are paired with retain examples (held-out retain excluded); one epoch is one pass over
    the forget split. Besides resumable checkpoints, the weights are kept along the way (every
    ``unlearn_save_every`` steps and at each epoch's end) in the run's trajectory folder so that notebook 03
    can stop early at any of them; each kept step records the hash of its run and step as its identity.
    """
    params = run_params(params, run)
    settings = unlearning_settings(params, run)
    source = corpus(params)
    target_key = runs.model_identity(runs.model_dir(params, "target")) if runs.is_saved(params, "target") else None
    train_keys = {k: params[k] for k in params if k.startswith("unlearn_")}
    key = config.params_hash({"target": target_key, "settings": settings, **train_keys,
                              "forget_split": params.forget_split, "seed": params.seed, **lora_key(params)})
    name = runs.unlearned_name(run)
    folder = runs.model_dir(params, name)
    if cached(folder, key):
        return cached_model(folder, settings)
    with trains(params, name):
        if cached(folder, key):  # trained by another worker while this one waited
            return cached_model(folder, settings)
        return _unlearn(params, run, settings, key, source)


class OnPolicySamples:
    """An unlearning loss with the model's own answers in its batch: before each step it samples one answer to every
    forget question from the model being trained (temperature 1, at most ``max_new_tokens``) and adds the prompts
    followed by those answers as ``batch["forget_sampled"]`` (the answer tokens labelled, and EOS where the answer
    ended), which the entropy term's ``sampled`` placement reads (:data:`unlearning.ENTROPY_POSITIONS`). Each draw
    is seeded by the batch's own token ids and ``seed``, so a resumed run draws what it would have."""

    def __init__(self, loss, tokenizer, max_new_tokens: int, seed: int):
        self.loss, self.tokenizer, self.max_new_tokens, self.seed = loss, tokenizer, int(max_new_tokens), int(seed)

    def __call__(self, model, batch):
        forget = batch["forget"]
        prompts = [ids[(mask == 1) & (labels == -100)].tolist() for ids, mask, labels
                   in zip(forget["input_ids"], forget["attention_mask"], forget["labels"])]
        seed = (zlib.crc32(forget["input_ids"].cpu().numpy().tobytes()) + self.seed) % 2**31
        answers, confidences = sample_continuations(getattr(model, "module", model), self.tokenizer, prompts, n=1,
                                                    max_new_tokens=self.max_new_tokens, seed=seed, progress=False)
        eos = self.tokenizer.eos_token_id
        examples = []
        for prompt, [answer], [steps] in zip(prompts, answers, confidences):
            answer = answer + ([eos] if len(steps) > len(answer) else [])  # it ended: the EOS step was generated
            examples.append({"input_ids": prompt + answer, "labels": [-100] * len(prompt) + answer})
        sampled = models.collate(examples, models.pad_token_id(self.tokenizer))
        device = forget["input_ids"].device
        return self.loss(model, {**batch, SAMPLED: {k: v.to(device) for k, v in sampled.items()}})


def unlearned_models(params: Params, run_names: Sequence[str]) -> None:
    """Train (or find cached) the unlearning runs ``run_names`` side by side in up to ``jobs`` worker processes
    (None: one per core); the models are then in the run store (:func:`unlearned_model` loads one)."""
    jobs = params.jobs
    todo = list(dict.fromkeys(run_names))
    workers.side_by_side(_unlearned_folder, [(params, run) for run in todo], jobs, desc="unlearn")


def _unlearned_folder(params: Params, run: str) -> str:
    unlearned_model(params, run)
    return str(runs.model_dir(params, runs.unlearned_name(run)))


def _unlearn(params: Params, run: str, settings: dict[str, Any], key: str,
             source: TofuSource) -> TrainedModel:
    name = runs.unlearned_name(run)
    folder = runs.model_dir(params, name)
    model, tokenizer, template = runs.load_saved(params, "target", dtype="float32")
    forget_rows = source.load(params.forget_split)
    retain_rows = unlearning_retain_rows(source, params)
    method = unlearning.method_spec(settings["method"])
    examples = unlearning_examples(params, run, settings, source, forget_rows, retain_rows,
                                   models.LoadedModel(model, tokenizer, template))
    model = with_lora(model, params)
    if method.layer_parameter is not None:  # its terms read that layer's output: nothing above it gets a gradient
        freeze_above_layer(model, _method_setting(settings, params, method.layer_parameter))
    ref = None
    if method.needs_reference:
        ref = DISABLE_ADAPTERS if is_peft_model(model) else frozen_reference(model)
    loss = UnlearningLoss(ref_model=ref, **settings)
    if settings.get("entropy_positions") == "sampled" and settings.get("lambda_f"):
        loss = OnPolicySamples(loss, tokenizer, params.sample_max_new_tokens, params.seed)

    cfg = train_config(params, "unlearn", folder.with_name(name + ".train"), f"unlearn {run}")
    trajectory = runs.trajectory_dir(params, run)
    steps_per_epoch = max(1, -(-len(examples) // (cfg.batch_size * cfg.grad_accum)))

    def keep_weights(step: int, logs: dict, current) -> None:
        if (params.unlearn_save_every and step % params.unlearn_save_every == 0) or step % steps_per_epoch == 0:
            models.save_model(models.merged_copy(current), tokenizer, trajectory / f"step-{step:05d}", template,
                              extra={"step": step, "epoch": step / steps_per_epoch, "run": run,
                                     "params_hash": config.params_hash({"run": key, "step": step})})

    claim_run_folder(Path(cfg.output_dir), key, also_clear=(trajectory,))
    result = training.train(model, examples, cfg, collate_fn=lambda b: collate_pairs(b, tokenizer.pad_token_id),
                            loss_fn=loss, on_step=keep_weights)
    if is_peft_model(model):
        model = model.merge_and_unload()
    save(model, tokenizer, template, folder, key, result.history, extra={"run": run, "settings": settings},
          micro_batch=result.micro_batch)
    return TrainedModel(model, tokenizer, template, result.history, settings)


def _method_setting(settings: Mapping[str, Any], params: Params, name: str) -> Any:
    """A method parameter of the run: its settings' value, else the profile's, else the loss's default."""
    if name in settings:
        return settings[name]
    return params[name] if name in config.PARAMETER_NAMES else unlearning.OPTIONS[name].default


def unlearning_examples(params: Params, run: str, settings: Mapping[str, Any], source: TofuSource,
                        forget_rows: list[dict], retain_rows: list[dict], target: models.LoadedModel) -> list[dict]:
    """The training examples of one unlearning run: each forget row paired with a retain row, with the batch parts its
    method asks for (``Method.batch_parts``, :data:`unlearning.BATCH_PARTS`): ``forget_idk``, the question with a
    refusal; ``forget_alt``, with one of its alternate answers (:func:`altpo_alternates`, from ``target``)."""
    parts = unlearning.method_spec(settings["method"]).batch_parts
    unknown = sorted(set(parts) - {"forget_idk", "forget_alt"})
    if unknown:
        raise ValueError(f"method {settings['method']!r} needs batch parts {unknown} that the pipeline cannot build")
    alternates = None
    if "forget_alt" in parts:
        cache = runs.model_dir(params, f"{runs.unlearned_name(run)}.alternates")
        alternates = altpo_alternates(params, settings, source, forget_rows, target, cache,
                                      runs.model_identity(runs.model_dir(params, "target")))
    return encode_pairs(target.tokenizer, target.template, forget_rows, retain_rows,
                        with_idk="forget_idk" in parts, seed=params.seed, alternates=alternates)


#: Bump when the sampled alternates of :func:`altpo_alternates` change for the same inputs (their prompt, filter).
ALTERNATES_VERSION = "1"


def altpo_alternates(params: Params, settings: Mapping[str, Any], source: TofuSource, forget_rows: list[dict],
                     target: models.LoadedModel, cache_dir: Path, target_identity: str) -> list[list[str]]:
    """The alternate answers (wrong but plausible) of each forget row, for AltPO's ``forget_alt``; the run takes one per
    row, by ``(seed, question)`` (:func:`unlearning.pick_alternate`).

    Where the corpus ships ``<forget split>_alternates`` (rows ``question``, ``answer``, ``alternate_answers``: the
    synthetic corpus, five per question) they are read from it, matched to the forget rows by question and answer.
    Otherwise (real TOFU) they are sampled from the target model as open-unlearning's AltPO does: the question and its
    true answer with the instruction of :func:`unlearning.alternate_prompt`, through the model's prompt template,
    ``altpo_n_alternates`` samples at temperature ``altpo_temperature``, at most ``max_new_tokens`` tokens each,
    seeded by ``seed``. Samples that are empty or repeat the true answer are dropped; a row left with none takes a
    refusal (:func:`unlearning.pick_idk_answer`; a warning counts them). The samples are cached in ``cache_dir`` under
    a hash of the target's identity, the rows and those settings, so a rerun does not sample again."""
    split = f"{params.forget_split}_alternates"
    if split in source.available_splits():
        given = {(r["question"], r["answer"]): list(r["alternate_answers"]) for r in source.load(split)}
        missing = [r["question"] for r in forget_rows if not given.get((r["question"], r["answer"]))]
        if missing:
            raise ValueError(f"split {split!r} has no alternate answers for {len(missing)} of the "
                             f"{len(forget_rows)} forget rows, e.g. {missing[0]!r}")
        return [given[r["question"], r["answer"]] for r in forget_rows]
    from ..generation import sample_answers

    n, temperature = int(settings["altpo_n_alternates"]), float(settings["altpo_temperature"])
    items = [(r["question"], r["answer"]) for r in forget_rows]
    recipe = {"target": target_identity, "items": items, "n": n, "temperature": temperature, "seed": params.seed,
              "max_new_tokens": params.max_new_tokens, "template": target.template.name,
              "prompt": unlearning.alternate_prompt("{question}", "{answer}"), "version": ALTERNATES_VERSION}
    path = Path(cache_dir) / f"alternates-{config.params_hash(recipe)}.json"
    with training.processes().main_process_first():  # the main process samples, the others read its file
        if not path.exists():
            prompts = [unlearning.alternate_prompt(q, a) for q, a in items]
            sampled = sample_answers(target.model, target.tokenizer, target.template, prompts, n=n,
                                     temperature=temperature, max_new_tokens=params.max_new_tokens, seed=params.seed,
                                     progress=stations.show_progress())
            rows = [{"question": q, "answer": a, "sampled": s,
                     "alternate_answers": [x for x in s if x.strip() and x.strip().lower() != a.strip().lower()]}
                    for (q, a), s in zip(items, sampled)]
            runs.atomic_write_text(path, json.dumps({"recipe": recipe, "rows": rows}))
            for stale in Path(cache_dir).glob("alternates-*.json"):
                if stale != path:
                    stale.unlink()
    rows = json.loads(path.read_text())["rows"]
    empty = sum(1 for r in rows if not r["alternate_answers"])
    if empty:
        import warnings

        warnings.warn(f"AltPO: {empty} of {len(rows)} forget questions got no usable alternate from the target "
                      f"model ({n} samples at temperature {temperature}); they take a refusal instead", stacklevel=2)
    return [r["alternate_answers"] or [unlearning.pick_idk_answer(r["question"], params.seed)] for r in rows]


def forget_rouge_along(params: Params, run: str, source: TofuSource,
                       splits: tuple[str, ...] = ("forget", "retain")) -> list[dict[str, float]]:
    """Greedy ROUGE-L recall on forget (and retain) along an unlearning run: at every ``unlearn_save_every``-th step
    of the profile (its shared value, not a run's denser one: runs that keep every step for early stopping would
    otherwise be decoded 35 times), at each epoch's end and at the last kept step. ``items``: how many of the first
    items of each split (``trajectory_max_items``, fewer than the final evaluation's ``eval_max_items``)."""
    files = tofu_eval_splits(run_params(params, run).forget_split)
    limit = params.trajectory_max_items or params.eval_max_items
    rows = {s: source.load(files[s][1], limit=limit) for s in splits}
    out = []
    for step, folder in runs.sparse_steps(params, run, params.unlearn_save_every):
        model, tokenizer, template = models.load_model(folder, dtype="float32", template=None)
        record = {"step": step, "epoch": runs.saved_recipe(folder)["epoch"], "items": len(rows[splits[0]])}
        for s in splits:
            answers = greedy_answers(model, tokenizer, template, [r["question"] for r in rows[s]],
                                     params.max_new_tokens, params.eval_batch_size)
            record[f"{s}_rouge"] = float(rouge_l([r["answer"] for r in rows[s]], answers).mean())
        out.append(record)
    return out
