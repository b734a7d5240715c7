"""The base model and the fine-tuned models (the target on ``full``, retain models on ``retainXX``): notebook 01's
steps."""

from __future__ import annotations

from collections.abc import Mapping

from .. import config, models, runs, workers
from ..config import Params
from .corpus import TOKENIZER_TEXTS, all_texts, corpus, corpus_params, world_knowledge_rows
from .stand_ins import base_identity, build_stand_ins
from .store import (
    TINY,
    TrainedModel,
    cached,
    cached_model,
    fit,
    lora_key,
    pack_key,
    save,
    seed_key,
    tiny_model_config,
    train_config,
    trains,
    with_lora,
)


def base_model(params: Params) -> models.LoadedModel:
    """The model before fine-tuning: a Hub/local model as is, or (``model: tiny``) a tokenizer and a
    tiny Llama trained from scratch on the corpus' world knowledge (real authors, world facts)."""
    if params.model != TINY:
        build_stand_ins(params)  # paper-dry: the stand-in of the paper's model, once
        return models.load_model(params.model, dtype=params.dtype, template=params.template)
    source = corpus(params)
    key_params = {"corpus": corpus_params(params), "tiny": tiny_model_config(params),
                  "vocab": params.tokenizer_vocab_size, "tokenizer_texts": TOKENIZER_TEXTS, "template": params.template,
                  **{k: params[k] for k in params if k.startswith("base_")}, **pack_key(params), **seed_key(params)}
    key = config.params_hash(key_params)
    folder = runs.model_dir(params, "base")
    with trains(params, "base"):
        if not cached(folder, key):
            template = models.get_template(params.template)
            tokenizer = models.train_bpe_tokenizer(all_texts(source), vocab_size=params.tokenizer_vocab_size)
            model = models.build_tiny_llama(tokenizer, tiny_model_config(params), seed=params.seed)
            cfg = train_config(params, "base", folder.with_name("base.train"), "base model")
            result = fit(model, tokenizer, template, world_knowledge_rows(source), cfg, key, params.pack_batches)
            save(model, tokenizer, template, folder, key, result.history, micro_batch=result.micro_batch)
    return models.load_model(folder, dtype="float32", template=None)


def finetuned_model(params: Params, split: str, name: str | None = None) -> TrainedModel:
    """Fine-tune the base model on ``split`` (``full`` gives the target model, ``retainXX`` the retain
    model), cached under ``runs/<profile>/seed-<s>/models/<name>``.

    With a from-scratch base, ``world_replay`` copies of the world-knowledge items are mixed into the
    fine-tuning data: a tiny model would otherwise overwrite what it was taught, whereas the large
    pretrained models of the papers keep their knowledge through fine-tuning.
    """
    name = name or ("target" if split == "full" else split)
    source = corpus(params)
    replay = params.world_replay if params.model == TINY else 0
    key_params = {"base": base_identity(params), "split": split, "replay": replay,
                  "max_authors": params.max_authors, "forget_split": params.forget_split,
                  **{k: params[k] for k in params if k.startswith(("finetune_", "base_", "tiny_"))},
                  "corpus": corpus_params(params), "lora_rank": params.lora_rank, **lora_key(params),
                  **pack_key(params), **seed_key(params)}
    key = config.params_hash(key_params)
    folder = runs.model_dir(params, name)
    if cached(folder, key):
        return cached_model(folder)
    model, tokenizer, template = base_model(params)
    with trains(params, name):
        if cached(folder, key):  # trained by another worker while this one waited
            return cached_model(folder)
        model = with_lora(model, params)
        rows = source.load(split) + world_knowledge_rows(source) * replay
        cfg = train_config(params, "finetune", folder.with_name(name + ".train"), f"fine-tune {name}")
        result = fit(model, tokenizer, template, rows, cfg, key, params.pack_batches)
        if hasattr(model, "merge_and_unload"):
            model = model.merge_and_unload()
        save(model, tokenizer, template, folder, key, result.history, extra={"split": split, "n_train": len(rows)},
              micro_batch=result.micro_batch)
    return TrainedModel(model, tokenizer, template, result.history)


def _finetuned_folder(params: Params, split: str, name: str) -> str:
    finetuned_model(params, split, name)
    return str(runs.model_dir(params, name))


def finetuned_models(params: Params, splits: Mapping[str, str]) -> dict[str, TrainedModel]:
    """:func:`finetuned_model` for each ``{name: split}``, side by side in up to ``jobs`` worker processes (None: one
    per core), the base model first, here, with all the cores; each then loaded from the run store."""
    jobs = params.jobs
    base_model(params)
    workers.side_by_side(_finetuned_folder, [(params, split, name) for name, split in splits.items()],
                        jobs, desc="fine-tune")
    return {name: finetuned_model(params, split, name) for name, split in splits.items()}
