"""Recipes that chain the stations for the notebooks, each step cached by a hash of its parameters.

corpus -> base model -> fine-tuned models (target on ``full``, retain models on ``retainXX``).
Models are saved under ``runs/<profile>/models/<name>/``; a later notebook, or a second ``make all``,
finds them there and reuses them when the parameters that made them are unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import config, models, paths, training
from .data.tofu import TofuSource, retain_split_for

TINY = "tiny"


# --------------------------------------------------------------------------- data


def corpus_params(params: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("data_source", "synthetic_authors", "synthetic_questions_per_author", "seed")
    if params.get("max_authors"):  # the subset depends on the forget split too
        keys += ("max_authors", "forget_split")
    return {k: params.get(k) for k in keys}


def corpus(params: Mapping[str, Any]) -> TofuSource:
    """The TOFU-shaped data of a profile: a synthetic corpus generated under ``data/`` (cached by its
    arguments), a local folder of TOFU JSON Lines, or the Hub data set by name.

    ``data_source`` may be ``synthetic``, a folder, a Hub name, or ``env:VAR`` to read the folder from an
    environment variable (``tofu-local`` uses ``env:UNLEARNKIT_TOFU_DIR`` with a folder beside the project as fallback).
    ``max_authors`` keeps that many authors in every author split (the forget set and the first others).
    """
    source = str(params.get("data_source", "synthetic"))
    if source == "synthetic":
        from .data.synthetic import generate_synthetic_tofu

        args = {"n_authors": int(params.get("synthetic_authors", 100)),
                "questions_per_author": int(params.get("synthetic_questions_per_author", 20)),
                "seed": int(params.get("seed", 0))}
        folder = paths.DATA / f"synthetic-{config.params_hash(args)}"
        if not (folder / "manifest.json").exists():
            tmp = folder.with_name(folder.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            generate_synthetic_tofu(tmp, **args)
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(tmp, folder)
        data = TofuSource(folder)
    else:
        data = TofuSource(paths.from_environment(source, "a folder of TOFU JSON Lines files"))
    max_authors = params.get("max_authors")
    if max_authors:
        data = data.restricted_to_authors(int(max_authors), params.get("forget_split", "forget10"))
    return data


def world_knowledge_rows(source: TofuSource) -> list[dict]:
    return source.load("world_facts_perturbed") + source.load("real_authors_perturbed")


def all_texts(source: TofuSource) -> list[str]:
    """Every string of the corpus: what a from-scratch tokenizer is trained on."""
    texts = []
    for split in source.available_splits():
        for row in source.load(split):
            for key, value in row.items():
                if isinstance(value, str) and key not in ("author", "attribute", "topic"):
                    texts.append(value)
                elif key == "perturbed_answer":
                    texts.extend(value)
    return texts


# --------------------------------------------------------------------------- models


def model_dir(profile: str, name: str) -> Path:
    return paths.RUNS / profile / "models" / name


def _cached(folder: Path, key: str) -> bool:
    if not models.is_saved_model(folder):
        return False
    return json.loads((folder / "unlearnkit.json").read_text()).get("params_hash") == key


def tiny_model_config(params: Mapping[str, Any]) -> dict[str, int]:
    return {
        "hidden_size": int(params.get("tiny_hidden_size", 128)),
        "num_hidden_layers": int(params.get("tiny_layers", 4)),
        "num_attention_heads": int(params.get("tiny_heads", 4)),
        "intermediate_size": int(params.get("tiny_intermediate_size", 384)),
    }


def _train_config(params: Mapping[str, Any], prefix: str, output_dir: Path, desc: str) -> training.TrainConfig:
    return training.TrainConfig(
        output_dir=output_dir,
        epochs=float(params[f"{prefix}_epochs"]),
        batch_size=int(params.get(f"{prefix}_batch_size", 32)),
        grad_accum=int(params.get(f"{prefix}_grad_accum", 1)),
        lr=float(params[f"{prefix}_lr"]),
        weight_decay=float(params.get(f"{prefix}_weight_decay", 0.0)),
        warmup=float(params.get(f"{prefix}_warmup", 0.05)),
        schedule=str(params.get(f"{prefix}_schedule", "linear")),
        seed=int(params.get("seed", 0)),
        checkpoint_every=int(params.get("checkpoint_every", 0)) or None,
        progress=bool(params.get("progress", True)),
        desc=desc,
    )


def _claim_run_folder(output_dir: Path, key: str, also_clear: tuple[Path, ...] = ()) -> None:
    """Mark output_dir as the run with parameters `key`, discarding what a different run left there.

    Resuming only makes sense for the same parameters, so checkpoints of another run (or of unknown
    origin, without a marker) are removed, together with folders that run wrote alongside them.
    """
    marker = output_dir / "params_hash"
    if not marker.exists() or marker.read_text() != key:
        for folder in (output_dir, *also_clear):
            shutil.rmtree(folder, ignore_errors=True)
    output_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text(key)


def _fit(model, tokenizer, template, rows: list[dict], cfg: training.TrainConfig, key: str) -> training.TrainResult:
    _claim_run_folder(Path(cfg.output_dir), key)
    examples = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    return training.train(model, examples, cfg, collate_fn=lambda b: models.collate(b, tokenizer.pad_token_id))


def _save(model, tokenizer, template, folder: Path, key: str, history: list[dict], extra: dict | None = None) -> None:
    models.save_model(model, tokenizer, folder, template, extra={"params_hash": key, **(extra or {})})
    (folder / "history.json").write_text(json.dumps(history))
    training.clear_checkpoints(folder.with_name(folder.name + ".train"))


def base_model(params: Mapping[str, Any], profile: str):
    """The model before fine-tuning: a Hub/local model as is, or (``model: tiny``) a tokenizer and a
    tiny Llama trained from scratch on the corpus' world knowledge (real authors, world facts)."""
    name = str(params.get("model", TINY))
    if name != TINY:
        return models.load_model(name, dtype=params.get("dtype"), template=params.get("template"))
    source = corpus(params)
    key_params = {"corpus": corpus_params(params), "tiny": tiny_model_config(params),
                  "vocab": params.get("tokenizer_vocab_size", 1024), "template": params.get("template", "phi"),
                  **{k: params.get(k) for k in params if str(k).startswith("base_")}}
    key = config.params_hash(key_params)
    folder = model_dir(profile, "base")
    if _cached(folder, key):
        return models.load_model(folder)
    template = models.get_template(params.get("template", "phi"))
    tokenizer = models.train_bpe_tokenizer(all_texts(source), vocab_size=int(params.get("tokenizer_vocab_size", 1024)))
    model = models.build_tiny_llama(tokenizer, tiny_model_config(params), seed=int(params.get("seed", 0)))
    cfg = _train_config(params, "base", folder.with_name("base.train"), "base model")
    result = _fit(model, tokenizer, template, world_knowledge_rows(source), cfg, key)
    _save(model, tokenizer, template, folder, key, result.history)
    return models.load_model(folder)


def finetuned_model(params: Mapping[str, Any], profile: str, split: str, name: str | None = None):
    """Fine-tune the base model on ``split`` (``full`` gives the target model, ``retainXX`` the retain
    model), cached under ``runs/<profile>/models/<name>``; returns (model, tokenizer, template, history).

    With a from-scratch base, ``world_replay`` copies of the world-knowledge items are mixed into the
    fine-tuning data: a tiny model would otherwise overwrite what it was taught, whereas the large
    pretrained models of the papers keep their knowledge through fine-tuning.
    """
    name = name or ("target" if split == "full" else split)
    source = corpus(params)
    replay = int(params.get("world_replay", 0)) if params.get("model", TINY) == TINY else 0
    key_params = {"base": str(params.get("model", TINY)), "split": split, "replay": replay,
                  "max_authors": params.get("max_authors"), "forget_split": params.get("forget_split"),
                  **{k: params.get(k) for k in params if str(k).startswith(("finetune_", "base_", "tiny_"))},
                  "corpus": corpus_params(params), "lora_rank": params.get("lora_rank", 0)}
    key = config.params_hash(key_params)
    folder = model_dir(profile, name)
    if _cached(folder, key):
        model, tokenizer, template = models.load_model(folder)
        return model, tokenizer, template, json.loads((folder / "history.json").read_text())
    model, tokenizer, template = base_model(params, profile)
    if int(params.get("lora_rank", 0)):
        model = models.apply_lora(model, r=int(params["lora_rank"]), alpha=int(params.get("lora_alpha", 2 * int(params["lora_rank"]))))
    rows = source.load(split) + world_knowledge_rows(source) * replay
    cfg = _train_config(params, "finetune", folder.with_name(name + ".train"), f"fine-tune {name}")
    result = _fit(model, tokenizer, template, rows, cfg, key)
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    _save(model, tokenizer, template, folder, key, result.history, extra={"split": split, "n_train": len(rows)})
    return model, tokenizer, template, result.history


def history(profile: str, name: str) -> list[dict]:
    """The per-step training log saved beside a model (empty for a Hub model used as is)."""
    path = model_dir(profile, name) / "history.json"
    return json.loads(path.read_text()) if path.exists() else []


# --------------------------------------------------------------------------- evaluation


def evaluate_models(named_models: Mapping[str, tuple], params: Mapping[str, Any], source: TofuSource,
                    reference: str | None = None, reference_ratios: list[float] | None = None
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """TOFU metrics of several models on the profile's forget split, retain, real authors and world facts.

    ``named_models`` maps a name to ``(model, tokenizer, template)``. ``reference`` names the retain
    model whose forget truth ratios every model's forget quality is tested against; it is evaluated first.
    ``reference_ratios`` gives those ratios directly instead (read from notebook 01's ``per_item.json``).
    """
    from tqdm.auto import tqdm

    from .metrics.tofu import evaluate_tofu, forget_quality

    order = ([reference] if reference else []) + [n for n in named_models if n != reference]
    results: dict[str, Any] = {}
    per_item: dict[str, Any] = {}
    for name in tqdm(order, desc="evaluate", disable=not training.show_progress()):
        model, tokenizer, template = named_models[name]
        results[name], per_item[name] = evaluate_tofu(
            model, tokenizer, template, source, forget_split=params.get("forget_split", "forget10"),
            max_items=params.get("eval_max_items"), batch_size=int(params.get("eval_batch_size", 32)),
            max_new_tokens=int(params.get("max_new_tokens", 64)))
    ref = per_item[reference]["forget"]["truth_ratio"] if reference else reference_ratios
    if ref is not None:
        for name in order:
            results[name].setdefault("summary", {})["forget_quality"] = forget_quality(
                per_item[name]["forget"]["truth_ratio"], ref)
    return {n: results[n] for n in named_models}, {n: per_item[n] for n in named_models}


def results_table(results: Mapping[str, Mapping[str, Mapping[str, float]]]):
    """A tidy DataFrame: one row per (model, split), a column per metric."""
    import pandas as pd

    rows = [{"model": m, "split": s, **{k: v for k, v in metrics.items()}}
            for m, splits in results.items() for s, metrics in splits.items() if s != "summary"]
    return pd.DataFrame(rows).set_index(["model", "split"])


def summary_table(results: Mapping[str, Mapping[str, Any]]):
    import pandas as pd

    return pd.DataFrame({m: r.get("summary", {}) for m, r in results.items()}).T


def answers_side_by_side(per_item: Mapping[str, Any], source: TofuSource, split_role: str, file: str,
                         n: int = 5, max_items: int | None = None):
    """Ground truth next to each model's greedy answer for the first ``n`` items of a split."""
    import pandas as pd

    rows = source.load(file, limit=max_items)[:n]
    table = {"question": [r["question"] for r in rows], "ground truth": [r["answer"] for r in rows]}
    for name, items in per_item.items():
        table[name] = items[split_role]["generated"][:n]
    return pd.DataFrame(table)


def read_per_item(profile: str, notebook: str) -> dict[str, Any]:
    path = paths.RUNS / profile / notebook / "per_item.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run notebook {notebook[:2]} with profile {profile!r} first")
    return json.loads(path.read_text())


def write_per_item(profile: str, notebook: str, per_item: Mapping[str, Any]) -> Path:
    """Per-item values (truth ratios, ROUGE, answers) beside metrics.json, for later notebooks."""
    path = paths.run_dir(profile, notebook) / "per_item.json"
    config.atomic_write_text(path, json.dumps(per_item))
    return path


# --------------------------------------------------------------------------- held-out retain


def heldout_retain_rows(source: TofuSource, params: Mapping[str, Any]) -> list[dict]:
    """A retain set the fine-tuned model knows but unlearning never trains on (Wang et al.'s calibration set).

    The synthetic corpus ships one (``retain_heldout``). For real TOFU, the last ``heldout_authors`` authors of
    ``retain_perturbed`` (TOFU's first 20 authors) are held out, so the set keeps its paraphrased questions.
    """
    if "retain_heldout" in source.available_splits():
        return source.load("retain_heldout")
    from .data.tofu import QUESTIONS_PER_AUTHOR

    rows = source.load("retain_perturbed")
    n = int(params.get("heldout_authors", 4)) * QUESTIONS_PER_AUTHOR
    return rows[-n:]


def unlearning_retain_rows(source: TofuSource, params: Mapping[str, Any]) -> list[dict]:
    """The retain rows unlearning may train on: the matching retain split minus the held-out retain set."""
    forget_split = params.get("forget_split", "forget10")
    # Question and answer together: a few questions recur across authors.
    held_out = {(r["question"], r["answer"]) for r in heldout_retain_rows(source, params)}
    return [r for r in source.load(retain_split_for(forget_split)) if (r["question"], r["answer"]) not in held_out]


# --------------------------------------------------------------------------- unlearning (notebook 02)

#: Keys of a profile that configure an unlearning run; ``method_settings[<run>]`` overrides them per run.
UNLEARN_LOSS_KEYS = ("beta", "gamma", "alpha_r", "cap_delta", "lambda_f", "lambda_r", "entropy_positions",
                     "rmu_layer", "rmu_steering_coef", "rmu_seed", "rmu_answer_tokens_only", "npo_retain_term",
                     "dpo_retain_term")


def load_saved(profile: str, name: str, notebook_hint: str = "01"):
    """A model saved by an earlier notebook, with a message naming that notebook when it is missing."""
    folder = model_dir(profile, name)
    if not models.is_saved_model(folder):
        raise FileNotFoundError(f"no model {name!r} in {folder}: run notebook {notebook_hint} with profile "
                                f"{profile!r} first (make notebook NB={notebook_hint} PROFILE={profile})")
    return models.load_model(folder)


def unlearning_settings(params: Mapping[str, Any], run: str) -> dict[str, Any]:
    """The loss settings of one unlearning run: the profile's shared keys, then ``method_settings[run]``.
    ``run`` is a method name (``npo``) or a named variant (``npo_eo``: NPO plus entropy optimisation)."""
    from .unlearning import METHODS

    overrides = dict((params.get("method_settings") or {}).get(run, {}))
    method = overrides.pop("method", run)
    if method not in METHODS:
        known = sorted(set(METHODS) | set(params.get("method_settings") or {}))
        raise ValueError(f"unknown unlearning run {run!r}: not a method and not in method_settings; known: {known}")
    settings = {k: params[k] for k in UNLEARN_LOSS_KEYS if k in params and params[k] is not None}
    settings.update(overrides)
    # Only what the method uses: the others would only be warned about.
    from .unlearning import COMMON_PARAMETERS, METHOD_PARAMETERS

    allowed = set(COMMON_PARAMETERS) | set(METHOD_PARAMETERS.get(method, ()))
    return {"method": method, **{k: v for k, v in settings.items() if k in allowed}}


def unlearned_model(params: Mapping[str, Any], profile: str, run: str):
    """Unlearn the target model of notebook 01 with one method; cached like every other step.

    Forget examples are paired with retain examples (held-out retain excluded); one epoch is one pass over
    the forget split. Besides resumable checkpoints, the weights are kept along the way (every
    ``unlearn_save_every`` steps and at each epoch's end) under ``models/unlearned-<run>.trajectory/`` so that
    notebook 03 can stop early at any of them. Returns (model, tokenizer, template, history, settings).
    """
    from .unlearning import UnlearningLoss, collate_pairs, encode_pairs, frozen_reference, is_peft_model

    settings = unlearning_settings(params, run)
    source = corpus(params)
    target_folder = model_dir(profile, "target")
    target_key = json.loads((target_folder / "unlearnkit.json").read_text()).get("params_hash") \
        if models.is_saved_model(target_folder) else None
    train_keys = {k: params.get(k) for k in params if str(k).startswith("unlearn_")}
    key = config.params_hash({"target": target_key, "settings": settings, **train_keys,
                              "forget_split": params.get("forget_split"), "seed": params.get("seed")})
    name = f"unlearned-{run}"
    folder = model_dir(profile, name)
    if _cached(folder, key):
        model, tokenizer, template = models.load_model(folder)
        return model, tokenizer, template, json.loads((folder / "history.json").read_text()), settings

    model, tokenizer, template = load_saved(profile, "target")
    forget_rows = source.load(params.get("forget_split", "forget10"))
    retain_rows = unlearning_retain_rows(source, params)
    method = settings["method"]
    examples = encode_pairs(tokenizer, template, forget_rows, retain_rows, with_idk=method in ("idk", "dpo"),
                            seed=int(params.get("seed", 0)))
    if int(params.get("lora_rank", 0)):
        model = models.apply_lora(model, r=int(params["lora_rank"]), alpha=int(params.get("lora_alpha", 2 * int(params["lora_rank"]))))
    needs_ref = method in ("kl", "dpo", "npo", "rmu")
    ref = None
    if needs_ref:
        ref = "disable_adapters" if is_peft_model(model) else frozen_reference(model)
    loss = UnlearningLoss(ref_model=ref, **settings)

    cfg = _train_config(params, "unlearn", folder.with_name(name + ".train"), f"unlearn {run}")
    trajectory = folder.with_name(name + ".trajectory")
    steps_per_epoch = max(1, -(-len(examples) // (cfg.batch_size * cfg.grad_accum)))
    save_every = int(params.get("unlearn_save_every", 0) or 0)

    def keep_weights(step: int, logs: dict, current) -> None:
        if (save_every and step % save_every == 0) or step % steps_per_epoch == 0:
            snapshot = current.merge_and_unload() if is_peft_model(current) else current
            models.save_model(snapshot, tokenizer, trajectory / f"step-{step:05d}", template,
                              extra={"step": step, "epoch": step / steps_per_epoch, "run": run})

    _claim_run_folder(Path(cfg.output_dir), key, also_clear=(trajectory,))
    result = training.train(model, examples, cfg, collate_fn=lambda b: collate_pairs(b, tokenizer.pad_token_id),
                            loss_fn=loss, on_step=keep_weights)
    if is_peft_model(model):
        model = model.merge_and_unload()
    _save(model, tokenizer, template, folder, key, result.history, extra={"run": run, "settings": settings})
    return model, tokenizer, template, result.history, settings


def trajectory_steps(profile: str, run: str) -> list[tuple[int, Path]]:
    """The weights kept along an unlearning run: (step, folder), in order."""
    folder = model_dir(profile, f"unlearned-{run}.trajectory")
    found = [(int(p.name.split("-")[1]), p) for p in folder.glob("step-*") if models.is_saved_model(p)]
    return sorted(found)


def forget_rouge_along(profile: str, run: str, params: Mapping[str, Any], source: TofuSource,
                       splits: tuple[str, ...] = ("forget", "retain")) -> list[dict[str, float]]:
    """Greedy ROUGE-L recall on forget (and retain) at every kept step of an unlearning run."""
    from .generation import greedy_answers
    from .metrics.tofu import rouge_l, tofu_eval_splits

    files = tofu_eval_splits(params.get("forget_split", "forget10"))
    limit = params.get("trajectory_eval_items") or params.get("eval_max_items")
    rows = {s: source.load(files[s][1], limit=limit) for s in splits}
    out = []
    for step, folder in trajectory_steps(profile, run):
        model, tokenizer, template = models.load_model(folder)
        record = {"step": step, "epoch": json.loads((folder / "unlearnkit.json").read_text())["epoch"]}
        for s in splits:
            answers = greedy_answers(model, tokenizer, template, [r["question"] for r in rows[s]],
                                     int(params.get("max_new_tokens", 64)), int(params.get("eval_batch_size", 32)))
            record[f"{s}_rouge"] = float(rouge_l([r["answer"] for r in rows[s]], answers).mean())
        out.append(record)
    return out


def unlearning_runs(profile: str) -> dict[str, dict[str, Any]]:
    """The metrics.json of every unlearning run of a profile, keyed by run name."""
    runs = {}
    for path in sorted((paths.RUNS / profile).glob("02_unlearning_*/metrics.json")):
        runs[path.parent.name.removeprefix("02_unlearning_")] = json.loads(path.read_text())
    return runs


def unlearning_comparison(profile: str):
    """One row per unlearning run (plus the target and retain models of notebook 01): forget quality, model
    utility, forget ROUGE, forget probability and truth ratio."""
    import pandas as pd

    rows = []
    first = config.read_metrics(profile, "01_tofu_finetune")
    reference = first["meta"].get("forget_quality_reference")
    for name in ("target", reference):
        if name in first:
            rows.append(_comparison_row(name, first[name], "notebook 01"))
    for run, metrics in unlearning_runs(profile).items():
        if run in metrics:
            rows.append(_comparison_row(run, metrics[run], metrics["meta"]["parameters"].get("method", run)))
    return pd.DataFrame(rows).set_index("model")


def _comparison_row(name: str, m: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {"model": name, "kind": kind, "forget_quality": m["summary"].get("forget_quality"),
            "model_utility": m["summary"].get("model_utility"), "forget_rouge": m["forget"]["rouge"],
            "forget_probability": m["forget"]["probability"], "forget_truth_ratio": m["forget"]["truth_ratio"],
            "retain_rouge": m["retain"]["rouge"]}
