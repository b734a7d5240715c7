"""The cached steps every notebook shares, each keyed by a hash of the parameters it depends on.

corpus -> base model -> fine-tuned models (target on ``full``, retain models on ``retainXX``) -> unlearned
models (one per unlearning run) -> their TOFU evaluation. Models are saved in the run store
(:mod:`unlearnkit.runs`, ``runs/<profile>/seed-<s>/models/<name>/``); a later notebook, or a second ``make all``, finds
them there and reuses them when the parameters that made them are unchanged.

Every step takes the run's :class:`~unlearnkit.config.Params` (a plain mapping is completed from the profile
it names), so no step has a default of its own that could disagree with ``default.yaml``.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
from tqdm.auto import tqdm

from . import config, models, paths, runs, training, unlearning
from .config import Params
from .data.synthetic import generate_synthetic_tofu
from .data.tofu import (
    FORGET_TO_RETAIN,
    LOCAL_ONLY_SPLITS,
    QUESTIONS_PER_AUTHOR,
    SPLITS,
    TofuDataError,
    TofuSource,
    holdout_split_for,
    retain_split_for,
)
from .generation import greedy_answers, sample_continuations
from .metrics import privacy as privacy_metrics
from .metrics.tofu import evaluate_tofu, forget_quality, rouge_l, tofu_eval_splits
from .unlearning import (
    COMMON_PARAMETERS,
    DISABLE_ADAPTERS,
    METHOD_PARAMETERS,
    METHODS,
    SAMPLED,
    UnlearningLoss,
    collate_pairs,
    encode_pairs,
    freeze_above_layer,
    frozen_reference,
    is_peft_model,
)

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


# --------------------------------------------------------------------------- data


def corpus_params(params: Mapping[str, Any]) -> dict[str, Any]:
    params = config.as_params(params)
    keys: tuple[str, ...] = ("data_source", "synthetic_authors", "synthetic_questions_per_author")
    if params.max_authors:  # the subset depends on the forget split too
        keys += ("max_authors", "forget_split")
    # "seed" in the key, as before the training seed had a key of its own: the corpus of data_seed 0 keeps its key
    return {**{k: params[k] for k in keys}, "seed": params.data_seed}


def corpus(params: Mapping[str, Any]) -> TofuSource:
    """The TOFU-shaped data of a profile: a synthetic corpus generated under ``data/`` (cached by its
    arguments), a local folder of TOFU JSON Lines, or the Hub data set by name.

    ``data_source`` may be ``synthetic``, a folder, a Hub name, or ``env:VAR|fallback`` to read the folder from
    an environment variable (``tofu-local`` uses ``env:UNLEARNKIT_TOFU_DIR`` with a folder beside the project as
    fallback). ``max_authors`` keeps that many authors in every author split (the forget set and the first others).

    A synthetic folder written by another generator version (e.g. one without the holdout files) is written anew;
    its folder name, the hash of the arguments, stays (the files it had keep their bytes across versions).
    """
    from .data.synthetic import GENERATOR_VERSION, generated_version

    params = config.as_params(params)
    # env:VAR|synthetic (paper-dry): the folder of the variable where it is set, else the synthetic corpus
    source_spec = paths.from_environment(params.data_source, "a folder of TOFU JSON Lines files")
    if source_spec == "synthetic":
        args = {"n_authors": params.synthetic_authors, "questions_per_author": params.synthetic_questions_per_author,
                "seed": params.data_seed}
        folder = paths.DATA / f"synthetic-{config.params_hash(args)}"
        with training.processes().main_process_first():
            if generated_version(folder) != GENERATOR_VERSION:
                with config.file_lock(folder.with_name(f".{folder.name}.lock")):  # workers generate it once
                    if generated_version(folder) != GENERATOR_VERSION:
                        tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
                        shutil.rmtree(tmp, ignore_errors=True)
                        generate_synthetic_tofu(tmp, **args)
                        shutil.rmtree(folder, ignore_errors=True)
                        os.replace(tmp, folder)
        data = TofuSource(folder)
    else:
        data = TofuSource(source_spec)
    if params.max_authors:
        data = data.restricted_to_authors(params.max_authors, params.forget_split)
    return data


def world_knowledge_rows(source: TofuSource) -> list[dict]:
    return source.load("world_facts_perturbed") + source.load("real_authors_perturbed")


#: The splits a from-scratch tokenizer is trained on: the authors outside every forget split (retain90, and the
#: retain sets drawn from them) and the world knowledge. Never a forget or a holdout author: a tokenizer that has
#: merged the forget authors' names into few tokens makes their answers look like training data to every model
#: trained with it, the retain model too (notebook 01 measured its MinK AUC of forget against holdout at 0.81, privleak
#: -62, when the tokenizer was trained on every split; docs/metrics.md §9), much as a pretrained tokenizer (Phi-1.5's)
#: never saw TOFU's authors.
TOKENIZER_SPLITS = ("retain90", "retain_perturbed", "retain_heldout", "world_facts", "world_facts_perturbed",
                    "real_authors", "real_authors_perturbed")
#: What names those texts in the base model's cache key (a change retrains every from-scratch model).
TOKENIZER_TEXTS = "retain90+world/1"


def all_texts(source: TofuSource) -> list[str]:
    """Every string a from-scratch tokenizer is trained on (:data:`TOKENIZER_SPLITS`, those the source has)."""
    texts = []
    available = set(source.available_splits())
    for split in TOKENIZER_SPLITS:
        if split not in available:
            continue
        for row in source.load(split):
            for key, value in row.items():
                if isinstance(value, str) and key not in ("author", "attribute", "topic"):
                    texts.append(value)
                elif key == "perturbed_answer" and not split.startswith("retain"):
                    texts.extend(value)  # an author's wrong answers may name a forget author: world knowledge only
    return texts


def heldout_retain_rows(source: TofuSource, params: Mapping[str, Any]) -> list[dict]:
    """A retain set the fine-tuned model knows but unlearning never trains on (Wang et al.'s calibration set).

    The synthetic corpus ships one (``retain_heldout``). For real TOFU, the last ``heldout_authors`` authors of
    ``retain_perturbed`` (TOFU's first 20 authors) are held out, so the set keeps its paraphrased questions.
    """
    if "retain_heldout" in source.available_splits():
        return source.load("retain_heldout")
    rows = source.load("retain_perturbed")
    return rows[-config.as_params(params).heldout_authors * QUESTIONS_PER_AUTHOR:]


def unlearning_retain_rows(source: TofuSource, params: Mapping[str, Any]) -> list[dict]:
    """The retain rows unlearning may train on: the matching retain split minus the held-out retain set."""
    params = config.as_params(params)
    # Question and answer together: a few questions recur across authors.
    held_out = {(r["question"], r["answer"]) for r in heldout_retain_rows(source, params)}
    return [r for r in source.load(retain_split_for(params.forget_split))
            if (r["question"], r["answer"]) not in held_out]


# --------------------------------------------------------------------------- models


def _cached(folder: Path, key: str) -> bool:
    return models.is_saved_model(folder) and runs.saved_recipe(folder).get("params_hash") == key


def _cached_model(folder: Path, settings: dict[str, Any] | None = None) -> TrainedModel:
    loaded = models.load_model(folder)
    return TrainedModel(*loaded, json.loads((folder / "history.json").read_text()), settings)


def tiny_model_config(params: Mapping[str, Any]) -> dict[str, int]:
    params = config.as_params(params)
    return {"hidden_size": params.tiny_hidden_size, "num_hidden_layers": params.tiny_layers,
            "num_attention_heads": params.tiny_heads, "intermediate_size": params.tiny_intermediate_size}


def _train_config(params: Params, prefix: str, output_dir: Path, desc: str) -> training.TrainConfig:
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
    if state.is_main_process:
        marker = output_dir / "params_hash"
        if not marker.exists() or marker.read_text() != key:
            for folder in (output_dir, *also_clear):
                shutil.rmtree(folder, ignore_errors=True)
        output_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(key)
    state.wait_for_everyone()


def _fit(model, tokenizer, template, rows: list[dict], cfg: training.TrainConfig, key: str,
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


def _save(model, tokenizer, template, folder: Path, key: str, history: list[dict], extra: dict | None = None) -> None:
    state = training.processes()
    if state.is_main_process:
        models.save_model(model, tokenizer, folder, template, extra={"params_hash": key, **(extra or {})},
                          files={"history.json": json.dumps(history)})
        training.clear_checkpoints(folder.with_name(folder.name + ".train"))
    state.wait_for_everyone()


@contextmanager
def _trains(params: Params, name: str) -> Iterator[None]:
    """Only one process at a time trains model ``name`` of the run store: a worker that asks for a model another one
    is training waits here, then finds it cached (:func:`runs.exclusive`). Under ``accelerate launch`` the main
    process holds the claim for all of its processes, which train together."""
    with runs.exclusive(params, name, active=training.processes().is_main_process):
        yield


def _with_lora(model, params: Params):
    if not params.lora_rank:
        return model
    return models.apply_lora(model, r=params.lora_rank, alpha=params.lora_alpha or 2 * params.lora_rank,
                             dropout=float(params.lora_dropout), target_modules=params.lora_target_modules)


def lora_key(params: Params) -> dict[str, Any]:
    """What a LoRA run's cache key adds; empty for full fine-tuning, so those keys stay what they were."""
    if not params.lora_rank:
        return {}
    return {"lora": {k: params[k] for k in ("lora_rank", "lora_alpha", "lora_target_modules", "lora_dropout")}}


def base_model(params: Mapping[str, Any]) -> models.LoadedModel:
    """The model before fine-tuning: a Hub/local model as is, or (``model: tiny``) a tokenizer and a
    tiny Llama trained from scratch on the corpus' world knowledge (real authors, world facts)."""
    params = config.as_params(params)
    if params.model != TINY:
        build_stand_ins(params)  # paper-dry: the stand-in of the paper's model, once
        return models.load_model(params.model, dtype=params.dtype, template=params.template)
    source = corpus(params)
    key_params = {"corpus": corpus_params(params), "tiny": tiny_model_config(params),
                  "vocab": params.tokenizer_vocab_size, "tokenizer_texts": TOKENIZER_TEXTS, "template": params.template,
                  **{k: params[k] for k in params if k.startswith("base_")}, **pack_key(params), **seed_key(params)}
    key = config.params_hash(key_params)
    folder = runs.model_dir(params, "base")
    with _trains(params, "base"):
        if not _cached(folder, key):
            template = models.get_template(params.template)
            tokenizer = models.train_bpe_tokenizer(all_texts(source), vocab_size=params.tokenizer_vocab_size)
            model = models.build_tiny_llama(tokenizer, tiny_model_config(params), seed=params.seed)
            cfg = _train_config(params, "base", folder.with_name("base.train"), "base model")
            result = _fit(model, tokenizer, template, world_knowledge_rows(source), cfg, key, params.pack_batches)
            _save(model, tokenizer, template, folder, key, result.history)
    return models.load_model(folder)


def finetuned_model(params: Mapping[str, Any], split: str, name: str | None = None) -> TrainedModel:
    """Fine-tune the base model on ``split`` (``full`` gives the target model, ``retainXX`` the retain
    model), cached under ``runs/<profile>/seed-<s>/models/<name>``.

    With a from-scratch base, ``world_replay`` copies of the world-knowledge items are mixed into the
    fine-tuning data: a tiny model would otherwise overwrite what it was taught, whereas the large
    pretrained models of the papers keep their knowledge through fine-tuning.
    """
    params = config.as_params(params)
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
    if _cached(folder, key):
        return _cached_model(folder)
    model, tokenizer, template = base_model(params)
    with _trains(params, name):
        if _cached(folder, key):  # trained by another worker while this one waited
            return _cached_model(folder)
        model = _with_lora(model, params)
        rows = source.load(split) + world_knowledge_rows(source) * replay
        cfg = _train_config(params, "finetune", folder.with_name(name + ".train"), f"fine-tune {name}")
        result = _fit(model, tokenizer, template, rows, cfg, key, params.pack_batches)
        if hasattr(model, "merge_and_unload"):
            model = model.merge_and_unload()
        _save(model, tokenizer, template, folder, key, result.history, extra={"split": split, "n_train": len(rows)})
    return TrainedModel(model, tokenizer, template, result.history)


def _finetuned_folder(params: Params, split: str, name: str) -> str:
    finetuned_model(params, split, name)
    return str(runs.model_dir(params, name))


def finetuned_models(params: Mapping[str, Any], splits: Mapping[str, str],
                     jobs: int | None = 1) -> dict[str, TrainedModel]:
    """:func:`finetuned_model` for each ``{name: split}``, side by side in up to ``jobs`` worker processes (None: one
    per core), the base model first, here, with all the cores; each then loaded from the run store."""
    params = config.as_params(params)
    base_model(params)
    models.side_by_side(_finetuned_folder, [(params, split, name) for name, split in splits.items()],
                        jobs, desc="fine-tune")
    return {name: finetuned_model(params, split, name) for name, split in splits.items()}


def history(params: Params, name: str) -> list[dict]:
    """The per-step training log saved beside a model (empty for a Hub model used as is)."""
    path = runs.model_dir(params, name) / "history.json"
    return json.loads(path.read_text()) if path.exists() else []


# --------------------------------------------------------------------------- stand-ins of the paper's models

#: Where the ``paper-dry`` profile's stand-ins are built: beside the generated corpora, never committed.
STAND_INS = "data/stand-ins"
#: Phi's tokenizer has one special token for beginning, end and unknown, and no padding token.
PHI_SPECIAL_TOKENS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}
#: One user turn in Mistral-Instruct's format, so the chat-template path (alignment_template: chat) is exercised.
MISTRAL_CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                         "[INST] {{ message['content'] }} [/INST]{% else %}{{ message['content'] }}{{ eos_token }}"
                         "{% endif %}{% endfor %}")


#: Bump when the stand-ins are built differently for the same recipe: they are then rebuilt.
STAND_IN_VERSION = 5  # 5: stand-in tokenizers trained on TOKENIZER_SPLITS


class StandIn(NamedTuple):
    """A small randomly initialised model of one paper model's architecture and interface (tokenizer kind, chat
    template). Its folder is named like the paper model, so everything that reads a model's family from its name
    (prompt templates) treats it as it treats the real one."""

    architecture: str  # phi | llama | mistral
    phi_tokenizer: bool
    chat_template: str | None
    stands_for: str


STAND_IN_MODELS: dict[str, StandIn] = {
    "phi-1_5": StandIn("phi", True, None, "microsoft/phi-1_5, the model of TOFU and of the probabilistic paper"),
    "Llama2-7b-WhoIsHarryPotter": StandIn("llama", False, None, "microsoft/Llama2-7b-WhoIsHarryPotter (notebook 05)"),
    "vicuna-7b-v1.5": StandIn("llama", False, None, "lmsys/vicuna-7b-v1.5 (notebook 07, Vicuna's own template)"),
    "Mistral-7B-Instruct-v0.3": StandIn("mistral", False, MISTRAL_CHAT_TEMPLATE,
                                        "mistralai/Mistral-7B-Instruct-v0.3 (notebook 07, its chat template)"),
    "HarmBench-Llama-2-13b-cls": StandIn("llama", False, None, "cais/HarmBench-Llama-2-13b-cls (notebook 07's judge)"),
}


def stand_ins_named(params: Mapping[str, Any]) -> list[str]:
    """The stand-ins a profile names in ``model``, ``hp_model``, ``alignment_models`` and ``safety_judge``."""
    params = config.as_params(params)
    named = [params.model, params.hp_model, params.safety_judge, *(params.alignment_models or [])]
    prefix = STAND_INS + "/"
    found = [str(n)[len(prefix):] for n in named if n and str(n).startswith(prefix)]
    unknown = sorted(set(found) - set(STAND_IN_MODELS))
    if unknown:
        raise ValueError(f"no stand-in named {', '.join(unknown)}; stand-ins: {', '.join(STAND_IN_MODELS)}")
    return list(dict.fromkeys(found))


def _stand_in_texts(source: TofuSource) -> list[str]:
    from .data.behaviours import synthetic_behaviours
    from .metrics.safety import HARMBENCH_PROMPT

    requests = [text for row in synthetic_behaviours() for text in (row["goal"], row["target"])]
    # The classifier reads " Yes" or " No" as one token each after its prompt's last line: frequent enough here to
    # be merged before the vocabulary is full.
    last_line = HARMBENCH_PROMPT.rsplit("\n", 1)[-1]
    verdicts = [f"{last_line} {answer}" for answer in ("Yes", "No") for _ in range(500)]
    return all_texts(source) + requests + [HARMBENCH_PROMPT] + verdicts


def build_stand_ins(params: Mapping[str, Any]) -> dict[str, Path]:
    """Build (once per recipe) the stand-ins the profile names, under ``data/stand-ins/<paper model's name>``.

    Each is randomly initialised with the profile's ``tiny_*`` sizes and a byte-level BPE tokenizer trained on the
    profile's corpus and requests (Phi's or Meta's special tokens, Mistral's chat template): the paper's code path
    (a model read from a folder, its family's template, a chat template, a judge reading P(Yes)) runs on them,
    what they answer means nothing. Only the main process writes (``accelerate launch``)."""
    params = config.as_params(params)
    names = stand_ins_named(params)
    if not names:
        return {}
    source = corpus(params)
    # A stand-in stands for downloaded pretrained weights, data to the workbook: drawn from data_seed, the same for
    # every training seed (and "seed" in the recipe, as before data_seed existed, so a built stand-in stays valid).
    recipe = {"corpus": corpus_params(params), "sizes": tiny_model_config(params), "vocab": params.tokenizer_vocab_size,
              "seed": params.data_seed, "version": STAND_IN_VERSION}
    folders = {name: paths.resolve(f"{STAND_INS}/{name}") for name in names}
    hashes = {name: config.params_hash({**recipe, "name": name}) for name in names}
    state = training.processes()
    if state.is_main_process:
        todo = [n for n in names if _stand_in_recipe(folders[n]) != hashes[n]]
        texts = _stand_in_texts(source) if todo else []
        trained: dict[bool, Any] = {}  # one tokenizer per kind of special tokens, copied per stand-in
        for name in tqdm(todo, desc="stand-ins", disable=not config.show_progress()):
            spec = STAND_IN_MODELS[name]
            if spec.phi_tokenizer not in trained:
                trained[spec.phi_tokenizer] = models.train_bpe_tokenizer(
                    texts, vocab_size=params.tokenizer_vocab_size,
                    special_tokens=PHI_SPECIAL_TOKENS if spec.phi_tokenizer else None)
            tokenizer = copy.deepcopy(trained[spec.phi_tokenizer])  # a chat template must not reach the others
            if spec.chat_template:
                tokenizer.chat_template = spec.chat_template
            model = models.build_stand_in(spec.architecture, tokenizer, tiny_model_config(params), seed=params.data_seed)
            models.save_plain_model(model, tokenizer, folders[name])
            (folders[name] / "stand-in.json").write_text(json.dumps(
                {"stands_for": spec.stands_for, "params_hash": hashes[name]}))
    state.wait_for_everyone()
    return folders


def base_identity(params: Params) -> str:
    """What names the model fine-tuning starts from in a cache key: the profile's model entry, and for a stand-in
    also the recipe it was built with (a rebuilt stand-in is another model under the same name)."""
    if str(params.model).startswith(STAND_INS + "/"):
        build_stand_ins(params)  # a stand-in not yet built has no recipe to name
        return f"{params.model}@{_stand_in_recipe(paths.resolve(params.model))}"
    if params.model == TINY:  # a from-scratch base: named with the texts of its tokenizer
        return f"{TINY}@{TOKENIZER_TEXTS}"
    return params.model


def _stand_in_recipe(folder: Path) -> str | None:
    marker = folder / "stand-in.json"
    return json.loads(marker.read_text())["params_hash"] if marker.exists() else None


# --------------------------------------------------------------------------- unlearning

#: Keys of a profile that configure an unlearning run; ``method_settings[<run>]`` overrides them per run (and may
#: set the method-specific options of :class:`~unlearnkit.unlearning.UnlearningLoss` that the profile leaves out).
UNLEARN_LOSS_KEYS = ("beta", "forget_weight", "retain_weight", "cap_delta", "cap_on", "lambda_f", "lambda_r",
                     "rmu_layer", "rmu_steering_coef", "simnpo_beta", "simnpo_delta", "wga_beta", "satimp_beta1",
                     "satimp_beta2", "ceu_ignore_first", "undial_beta", "undial_positions", "altpo_n_alternates",
                     "altpo_temperature")


#: Training keys that ``method_settings[<run>]`` may override too: a run with a gentler learning rate, a longer
#: schedule or weights kept more densely is its own named run (``gd_mild: {method: gd, unlearn_lr: 3.0e-4}``).
UNLEARN_TRAIN_KEYS = ("unlearn_epochs", "unlearn_lr", "unlearn_batch_size", "unlearn_grad_accum", "unlearn_warmup",
                      "unlearn_weight_decay", "unlearn_schedule", "unlearn_save_every")
#: Data keys a run may override: the forget split it unlearns (Wang et al.'s forget01/05 calibrations,
#: ``ga_forget01: {method: ga, forget_split: forget01}``), its retain split following it.
RUN_DATA_KEYS = ("forget_split",)
#: Every key of ``method_settings[<run>]`` that reaches the run's parameters rather than its loss.
RUN_PARAM_KEYS = UNLEARN_TRAIN_KEYS + RUN_DATA_KEYS


def _run_overrides(params: Params, run: str) -> dict[str, Any]:
    overrides = dict(params.method_settings.get(run, {}))
    method = overrides.get("method", run)
    if method not in METHODS:
        known = sorted(set(METHODS) | set(params.method_settings))
        near = config.closest(str(run), known)
        raise ValueError(f"unknown unlearning run {run!r}{f' (did you mean {near}?)' if near else ''}: not a method "
                         f"and not in method_settings; known: {', '.join(known)}")
    # A misspelt key would otherwise be dropped without a word and the run trained with the profile's value.
    allowed = {"method", *UNLEARN_LOSS_KEYS, *RUN_PARAM_KEYS, *COMMON_PARAMETERS,
               *(p for names in METHOD_PARAMETERS.values() for p in names)} - {"ref_model"}
    unknown = sorted(set(overrides) - allowed)
    if unknown:
        raise ValueError(f"method_settings[{run!r}] has unknown key(s) {', '.join(unknown)}; allowed: {sorted(allowed)}")
    return overrides


#: The keys that name unlearning runs (a method, or a key of ``method_settings``).
RUN_LIST_KEYS = ("methods", "calibration_methods", "interference_runs", "regime_runs", "eo_table_runs", "eo_method",
                 "eo_regime_runs")
#: The keys that name splits of the data: forget splits, retain splits.
FORGET_SPLIT_KEYS, RETAIN_SPLIT_KEYS = ("forget_split", "calibration_splits"), ("retain_splits",)


def data_splits(params: Mapping[str, Any]) -> list[str]:
    """The splits the profile's data source has, known without reading or generating any data: every split for
    the synthetic corpus (it writes them all), TOFU's configs for a Hub name, the files of a local folder (a folder
    that does not exist is refused with its path)."""
    params = config.as_params(params)
    spec = paths.from_environment(params.data_source, "a folder of TOFU JSON Lines files")
    if spec == "synthetic":
        return [*SPLITS, *LOCAL_ONLY_SPLITS]
    return TofuSource(spec).available_splits()


def check_params(params: Mapping[str, Any], extra_runs: Sequence[str] = ()) -> Params:
    """What a profile's values must be beyond their types and ranges (:data:`config.CONSTRAINTS`), checked before
    any work: split names that exist for the data source, and run names that are a method or a key of
    ``method_settings`` with valid settings (``extra_runs``: a run asked for by name, notebook 02's ``method``).
    A ValueError with one line names the key, the value and what it may be."""
    params = config.as_params(params)
    available = data_splits(params)
    for keys, kind, names in ((FORGET_SPLIT_KEYS, "forget", FORGET_TO_RETAIN),
                              (RETAIN_SPLIT_KEYS, "retain", FORGET_TO_RETAIN.values())):
        valid = [s for s in names if s in available]
        for key in keys:
            values = params[key] if isinstance(params[key], list) else [params[key]]
            for value in values:
                if value not in valid:
                    near = config.closest(str(value), valid)
                    raise ValueError(f"parameter {key!r}: {value!r} is not a {kind} split of data source "
                                     f"{params.data_source!r}{f' (did you mean {near}?)' if near else ''}; "
                                     f"{kind} splits: {', '.join(valid) or 'none'}")
    for key in (*RUN_LIST_KEYS, "method"):
        values = extra_runs if key == "method" else params[key]
        for run in [values] if isinstance(values, str) else values:
            try:
                _run_overrides(params, run)
            except ValueError as exc:
                raise ValueError(f"parameter {key!r}: {exc}") from None
    return params


def run_params(params: Mapping[str, Any], run: str) -> Params:
    """The parameters one unlearning run trains with: the profile's, with the ``unlearn_*`` keys and the forget
    split its ``method_settings`` entry overrides."""
    params = config.as_params(params)
    overrides = _run_overrides(params, run)
    return params.replace(**{k: v for k, v in overrides.items() if k in RUN_PARAM_KEYS})


def with_run(params: Mapping[str, Any], run: str, **settings: Any) -> Params:
    """The parameters with one more unlearning run, ``method_settings[run] = settings`` (the profile is not
    changed): how a study adds the runs it trains itself (a learning-rate grid, an entropy-weight sweep)."""
    params = config.as_params(params)
    return params.replace(method_settings={**params.method_settings, run: dict(settings)})


def derived_run(params: Mapping[str, Any], run: str, name: str, **changes: Any) -> Params:
    """The parameters with one more run, ``name``: ``run``'s own settings and schedule with ``changes`` (a cap, a
    forget split), but not where ``run`` keeps its weights, which serves early stopping of ``run`` alone."""
    params = config.as_params(params)
    own = {k: v for k, v in params.method_settings.get(run, {}).items() if k != "unlearn_save_every"}
    return with_run(params, name, **{**own, "method": unlearning_settings(params, run)["method"], **changes})


def unlearning_settings(params: Mapping[str, Any], run: str) -> dict[str, Any]:
    """The loss settings of one unlearning run: the profile's shared keys, then ``method_settings[run]``.
    ``run`` is a method name (``npo``) or a named variant (``npo_eo``: NPO plus entropy optimisation)."""
    params = config.as_params(params)
    overrides = {k: v for k, v in _run_overrides(params, run).items() if k not in RUN_PARAM_KEYS}
    method = overrides.pop("method", run)
    settings = {k: params[k] for k in UNLEARN_LOSS_KEYS if params[k] is not None}
    settings.update(overrides)
    if settings.get("cap_delta") is None:
        settings.pop("cap_on", None)  # what a cap compares means nothing without one (and keeps uncapped runs' keys)
    # Only what the method uses: the others would only be warned about.
    allowed = set(COMMON_PARAMETERS) | set(METHOD_PARAMETERS.get(method, ()))
    return {"method": method, **{k: v for k, v in settings.items() if k in allowed}}


def unlearned_model(params: Mapping[str, Any], run: str) -> TrainedModel:
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
    if _cached(folder, key):
        return _cached_model(folder, settings)
    with _trains(params, name):
        if _cached(folder, key):  # trained by another worker while this one waited
            return _cached_model(folder, settings)
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


def unlearned_models(params: Mapping[str, Any], run_names: Sequence[str], jobs: int | None = 1) -> None:
    """Train (or find cached) the unlearning runs ``run_names`` side by side in up to ``jobs`` worker processes
    (None: one per core); the models are then in the run store (:func:`unlearned_model` loads one)."""
    params = config.as_params(params)
    todo = list(dict.fromkeys(run_names))
    models.side_by_side(_unlearned_folder, [(params, run) for run in todo], jobs, desc="unlearn")


def _unlearned_folder(params: Params, run: str) -> str:
    unlearned_model(params, run)
    return str(runs.model_dir(params, runs.unlearned_name(run)))


def _unlearn(params: Params, run: str, settings: dict[str, Any], key: str,
             source: TofuSource) -> TrainedModel:
    name = runs.unlearned_name(run)
    folder = runs.model_dir(params, name)
    model, tokenizer, template = runs.load_saved(params, "target")
    forget_rows = source.load(params.forget_split)
    retain_rows = unlearning_retain_rows(source, params)
    method = unlearning.method_spec(settings["method"])
    examples = unlearning_examples(params, run, settings, source, forget_rows, retain_rows,
                                   models.LoadedModel(model, tokenizer, template))
    model = _with_lora(model, params)
    if method.layer_parameter is not None:  # its terms read that layer's output: nothing above it gets a gradient
        freeze_above_layer(model, _method_setting(settings, params, method.layer_parameter))
    ref = None
    if method.needs_reference:
        ref = DISABLE_ADAPTERS if is_peft_model(model) else frozen_reference(model)
    loss = UnlearningLoss(ref_model=ref, **settings)
    if settings.get("entropy_positions") == "sampled" and settings.get("lambda_f"):
        loss = OnPolicySamples(loss, tokenizer, params.sample_max_new_tokens, params.seed)

    cfg = _train_config(params, "unlearn", folder.with_name(name + ".train"), f"unlearn {run}")
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
    _save(model, tokenizer, template, folder, key, result.history, extra={"run": run, "settings": settings})
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
    from .generation import sample_answers

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
                                     progress=config.show_progress())
            rows = [{"question": q, "answer": a, "sampled": s,
                     "alternate_answers": [x for x in s if x.strip() and x.strip().lower() != a.strip().lower()]}
                    for (q, a), s in zip(items, sampled)]
            config.atomic_write_text(path, json.dumps({"recipe": recipe, "rows": rows}))
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


def forget_rouge_along(params: Mapping[str, Any], run: str, source: TofuSource,
                       splits: tuple[str, ...] = ("forget", "retain")) -> list[dict[str, float]]:
    """Greedy ROUGE-L recall on forget (and retain) along an unlearning run: at every ``unlearn_save_every``-th step
    of the profile (its shared value, not a run's denser one: runs that keep every step for early stopping would
    otherwise be decoded 35 times), at each epoch's end and at the last kept step."""
    params = config.as_params(params)
    files = tofu_eval_splits(run_params(params, run).forget_split)
    limit = params.trajectory_max_items or params.eval_max_items
    rows = {s: source.load(files[s][1], limit=limit) for s in splits}
    out = []
    for step, folder in runs.sparse_steps(params, run, params.unlearn_save_every):
        model, tokenizer, template = models.load_model(folder)
        record = {"step": step, "epoch": runs.saved_recipe(folder)["epoch"]}
        for s in splits:
            answers = greedy_answers(model, tokenizer, template, [r["question"] for r in rows[s]],
                                     params.max_new_tokens, params.eval_batch_size)
            record[f"{s}_rouge"] = float(rouge_l([r["answer"] for r in rows[s]], answers).mean())
        out.append(record)
    return out


# --------------------------------------------------------------------------- evaluation


def evaluate_models(named_models: Mapping[str, tuple], params: Mapping[str, Any], source: TofuSource,
                    reference: str | None = None, reference_ratios: list[float] | None = None,
                    privacy: bool | Mapping[str, Any] = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """TOFU metrics of several models on the profile's forget split, retain, real authors and world facts.

    ``named_models`` maps a name to a loaded model (``(model, tokenizer, template)``). ``reference`` names the
    retain model whose forget truth ratios every model's forget quality is tested against; it is evaluated
    first. ``reference_ratios`` gives those ratios directly instead (read from notebook 01's ``per_item.json``).
    ``privacy`` adds open-unlearning's memorisation and privacy metrics to each summary (:func:`evaluate_privacy`):
    True scores the ``reference`` model among them, a mapping gives the retain model's stored per-item scores.
    """
    params = config.as_params(params)
    order = ([reference] if reference else []) + [n for n in named_models if n != reference]
    results: dict[str, Any] = {}
    per_item: dict[str, Any] = {}
    for name in tqdm(order, desc="evaluate", disable=not config.show_progress()):
        model, tokenizer, template = named_models[name][:3]
        results[name], per_item[name] = evaluate_tofu(
            model, tokenizer, template, source, forget_split=params.forget_split, max_items=params.eval_max_items,
            batch_size=params.eval_batch_size, max_new_tokens=params.max_new_tokens,
            truth_ratio_guard=params.truth_ratio_guard, answer_tokens=params.answer_tokens)
    ref = per_item[reference]["forget"]["truth_ratio"] if reference else reference_ratios
    if ref is not None:
        for name in order:
            results[name].setdefault("summary", {})["forget_quality"] = forget_quality(
                per_item[name]["forget"]["truth_ratio"], ref)
    if privacy is not False:
        reference_items = privacy if isinstance(privacy, Mapping) else None
        summaries, items, skipped = evaluate_privacy({n: named_models[n] for n in order}, params, source,
                                                     reference, reference_items)
        for name in order:
            if skipped:
                results[name][PRIVACY_SKIPPED] = skipped
            else:
                results[name].setdefault("summary", {}).update(summaries[name])
                per_item[name][PRIVACY] = items[name]
    return {n: results[n] for n in named_models}, {n: per_item[n] for n in named_models}


#: The scoring options where the workbook and open-unlearning differ (docs/metrics.md §9), with OU's choice of each.
OU_OPTIONS = {"truth_ratio_guard": "ou", "answer_tokens": "ou_joint", "extraction_no_match": "ou",
              "gradnorm_reduction": "ou_mean"}


def scoring_options(params: Mapping[str, Any]) -> dict[str, str]:
    """The run's value of each scoring option where the workbook and open-unlearning differ, with OU's in brackets:
    what a figure that sits beside an OU table names (``{"truth_ratio_guard": "exact [ou]", ...}``)."""
    params = config.as_params(params)
    return {key: f"{params[key]} [{ou}]" if params[key] != ou else f"{ou} (as OU)" for key, ou in OU_OPTIONS.items()}


#: Where the memorisation and privacy metrics' per-item scores of a model go in ``per_item.json``, and the key
#: of a model's results that says why they were not measured (no holdout split in the data).
PRIVACY, PRIVACY_SKIPPED = "privacy", "privacy_skipped"


def privacy_rows(params: Mapping[str, Any], source: TofuSource) -> tuple[list[dict], list[dict]]:
    """The forget split's Q&A and its matched holdout split (authors no model trained on), at most
    ``eval_max_items`` each, as open-unlearning's membership-inference metrics read them (docs/metrics.md §9).
    Raises :class:`TofuDataError` naming what to download when the data has no holdout split."""
    params = config.as_params(params)
    holdout = holdout_split_for(params.forget_split)
    return (source.load(params.forget_split, limit=params.eval_max_items),
            source.load(holdout, limit=params.eval_max_items))


def privacy_scores(loaded: tuple, params: Mapping[str, Any], rows: tuple[list[dict], list[dict]]
                   ) -> dict[str, dict[str, list[float]]]:
    """Per-item memorisation and membership-inference scores of one model on forget and holdout rows."""
    params = config.as_params(params)
    model, tokenizer, template = loaded[:3]
    settings = {"k": params.mia_k, "batch_size": params.eval_batch_size, "gradnorm": params.mia_gradnorm,
                "gradnorm_reduction": params.gradnorm_reduction, "extraction_no_match": params.extraction_no_match,
                "answer_tokens": params.answer_tokens}
    return {part: {key: [float(v) for v in values] for key, values in
                   privacy_metrics.item_scores(model, tokenizer, template, part_rows, **settings).items()}
            for part, part_rows in zip(("forget", "holdout"), rows)}


def privacy_of(items: Mapping[str, Mapping[str, Sequence[float]]],
               reference_items: Mapping[str, Mapping[str, Sequence[float]]] | None = None) -> dict[str, float]:
    """open-unlearning's summary of one model from per-item scores: exact memorisation and extraction strength on
    forget, every attack's AUC of forget against holdout and privleak. ``reference_items`` are the retain model's
    scores: the Reference attack subtracts its losses, and privleak is taken against its MinK AUC (against 0.5,
    open-unlearning's value without a retain model, when it is not given)."""
    import numpy as np

    as_arrays = lambda part: {k: np.asarray(v, dtype=float) for k, v in part.items()}  # noqa: E731
    forget, holdout = as_arrays(items["forget"]), as_arrays(items["holdout"])
    if reference_items is None:
        return privacy_metrics.privacy_summary(forget, holdout)
    ref_forget, ref_holdout = as_arrays(reference_items["forget"]), as_arrays(reference_items["holdout"])
    retain_auc = privacy_metrics.attack_auc(ref_forget["mink"], ref_holdout["mink"])
    return privacy_metrics.privacy_summary(forget, holdout, ref_forget, ref_holdout, retain_auc=retain_auc)


def evaluate_privacy(named_models: Mapping[str, tuple], params: Mapping[str, Any], source: TofuSource,
                     reference: str | None = None, reference_items: Mapping[str, Any] | None = None
                     ) -> tuple[dict[str, dict[str, float]], dict[str, Any], str | None]:
    """open-unlearning's memorisation and privacy metrics of several models (docs/metrics.md §9): summaries,
    per-item scores and, when the data has no holdout split, the reason they were skipped (printed, never faked).

    ``reference`` names the retain model among ``named_models`` (notebook 01), ``reference_items`` gives its stored
    per-item scores instead (notebook 02). The retain model itself is scored against AUC 0.5, as open-unlearning
    scores a model without a reference; every other model against the retain model's AUC."""
    try:
        rows = privacy_rows(params, source)
    except TofuDataError as error:
        reason = f"privacy metrics skipped: {error}"
        print(reason)
        return {}, {}, reason
    items = {name: privacy_scores(loaded, params, rows)
             for name, loaded in tqdm(named_models.items(), desc="privacy", disable=not config.show_progress())}
    if reference is not None:
        reference_items = items[reference]
    summaries = {name: privacy_of(items[name], None if name == reference else reference_items) for name in items}
    return summaries, items, None


def results_table(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> pd.DataFrame:
    """A tidy DataFrame: one row per (model, split), a column per metric."""
    rows = [{"model": m, "split": s, **dict(metrics)} for m, splits in results.items()
            for s, metrics in splits.items() if s != "summary" and isinstance(metrics, Mapping)]
    return pd.DataFrame(rows).set_index(["model", "split"])


def summary_table(results: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame({m: r.get("summary", {}) for m, r in results.items()}).T


def answers_side_by_side(per_item: Mapping[str, Any], source: TofuSource, split_role: str, file: str,
                         n: int = 5, max_items: int | None = None) -> pd.DataFrame:
    """Ground truth next to each model's greedy answer for the first ``n`` items of a split."""
    rows = source.load(file, limit=max_items)[:n]
    table = {"question": [r["question"] for r in rows], "ground truth": [r["answer"] for r in rows]}
    for name, items in per_item.items():
        table[name] = items[split_role]["generated"][:n]
    return pd.DataFrame(table)


def unlearning_comparison(params: Params) -> pd.DataFrame:
    """One row per unlearning run (plus the target and retain models of notebook 01): forget quality, model
    utility, forget ROUGE, forget probability and truth ratio, and open-unlearning's privleak, extraction strength,
    exact memorisation and membership-inference AUCs where they were measured: open-unlearning's TOFU summary."""
    rows = []
    first = runs.read_metrics(params, runs.FINETUNE)
    reference = first["meta"].get("forget_quality_reference")
    for name in ("target", reference):
        if name in first:
            rows.append(_comparison_row(name, first[name], "notebook 01"))
    for run, metrics in runs.unlearning_runs(params).items():
        if run in metrics:
            rows.append(_comparison_row(run, metrics[run], metrics["meta"].get("settings", {}).get("method", run)))
    return pd.DataFrame(rows).set_index("model")


#: open-unlearning's memorisation and privacy columns of the comparison (docs/metrics.md §9), where measured.
OU_COLUMNS = ("privleak", "extraction_strength", "exact_memorisation", "mia_loss_auc", "mia_zlib_auc", "mia_mink_auc",
              "mia_minkpp_auc", "mia_gradnorm_auc", "mia_reference_auc")


#: The columns of open-unlearning's TOFU summary, in its order (configs/eval/tofu.yaml), then the MIA AUCs.
OU_SUMMARY = ("forget_quality", "model_utility", "forget_probability", "forget_rouge", "forget_truth_ratio",
              *OU_COLUMNS)


def ou_summary_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """open-unlearning's TOFU summary of every model of :func:`unlearning_comparison` (the columns it has)."""
    return comparison[[c for c in OU_SUMMARY if c in comparison.columns]]


def _comparison_row(name: str, m: Mapping[str, Any], kind: str) -> dict[str, Any]:
    row = {"model": name, "kind": kind, "forget_quality": m["summary"].get("forget_quality"),
           "model_utility": m["summary"].get("model_utility"), "forget_rouge": m["forget"]["rouge"],
           "forget_probability": m["forget"]["probability"], "forget_truth_ratio": m["forget"]["truth_ratio"],
           "retain_rouge": m["retain"]["rouge"]}
    row.update({column: m["summary"][column] for column in OU_COLUMNS if column in m["summary"]})
    return row


# --------------------------------------------------------------------------- alignment (notebook 07)

#: Names of the tiny models of the alignment study in the run store.
COMPLYING = "complying"


def aligned_name(strength: int) -> str:
    return f"aligned-{strength}"


def _request_rows(rows: list[dict]) -> list[dict]:
    """Requests as Q&A rows: the goal is the question, the compliance opener the answer."""
    return [{"question": r["goal"], "answer": r["target"]} for r in rows]


def complying_model(params: Mapping[str, Any], rows: list[dict]) -> models.LoadedModel:
    """The model before alignment: the base model taught to answer every request of ``rows`` with its compliance
    opener ("Sure, here is ..."), with the world knowledge replayed so it stays a model of the same world.

    It stands for a pretrained model that follows any instruction; alignment then trains it toward refusal only.
    Cached under ``runs/<profile>/seed-<s>/models/complying`` by the base model's identity, the requests and the
    ``comply_*`` parameters."""
    params = config.as_params(params)
    base = base_model(params)
    base_key = runs.model_identity(runs.model_dir(params, "base")) if params.model == TINY else params.model
    key = config.params_hash({"base": base_key, "requests": _request_rows(rows), "epochs": params.comply_epochs,
                              "lr": params.comply_lr, "seed": params.seed, "template": base.template.name,
                              **pack_key(params)})
    folder = runs.model_dir(params, COMPLYING)
    with _trains(params, COMPLYING):
        if not _cached(folder, key):
            model, tokenizer, template = base
            replay = world_knowledge_rows(corpus(params)) if params.model == TINY else []
            cfg = training.TrainConfig(
                output_dir=folder.with_name(COMPLYING + ".train"), epochs=float(params.comply_epochs),
                batch_size=params.finetune_batch_size, lr=float(params.comply_lr), grad_accum=1, weight_decay=0.0,
                warmup=0.05, schedule="linear", seed=params.seed, checkpoint_every=params.checkpoint_every or None,
                desc="complying model")
            result = _fit(model, tokenizer, template, _request_rows(rows) + replay, cfg, key, params.pack_batches)
            _save(model, tokenizer, template, folder, key, result.history, extra={"n_requests": len(rows)})
    return models.load_model(folder)


def aligned_models(params: Mapping[str, Any], aligned_rows: list[dict],
                   refusal_for: Any) -> dict[int, str]:
    """Align the complying model toward refusal on ``aligned_rows`` only, keeping one model per strength.

    Alignment reuses the unlearning losses: ``idk`` (supervised refusals plus the retain NLL) or ``dpo`` (the
    refusal preferred over the compliance opener, against the frozen complying model), with the world knowledge
    as the retain set. It is one run at a constant learning rate; the weights after ``s`` epochs are kept as
    ``aligned-<s>`` for each ``s`` of ``alignment_strengths``, so the strengths differ only in training time.
    ``refusal_for(goal, seed)`` picks each request's refusal. Returns ``{strength: saved model name}``.
    """
    params = config.as_params(params)
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
    with _trains(params, "aligned"):
        if not all(_cached(runs.model_dir(params, names[s]), keys[s])
                   and (runs.model_dir(params, names[s]) / "history.json").exists() for s in strengths):
            _align(params, aligned_rows, refusal_for, strengths, names, keys, run_key)
    return names


def _align(params: Params, aligned_rows: list[dict], refusal_for: Any, strengths: list[int],
           names: dict[int, str], keys: dict[int, str], run_key: str) -> None:
    """The alignment run of :func:`aligned_models`: each strength's model saved along it, then its history."""
    model, tokenizer, template = runs.load_saved(params, COMPLYING)
    source = corpus(params)
    retain = world_knowledge_rows(source) if params.model == TINY else source.load("retain_perturbed")
    examples = [unlearning.encode_pair(tokenizer, template, row, retain[i % len(retain)],
                                       refusal_for(row["question"], params.seed))
                for i, row in enumerate(_request_rows(aligned_rows))]
    ref = frozen_reference(model) if params.alignment_method == "dpo" else None
    loss = UnlearningLoss(params.alignment_method, ref_model=ref, beta=params.beta,
                          retain_weight=params.retain_weight)
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
        config.atomic_write_text(runs.model_dir(params, names[s]) / "history.json",
                                 json.dumps([h for h in result.history if h["step"] <= s * steps_per_epoch]))
    training.clear_checkpoints(cfg.output_dir)
