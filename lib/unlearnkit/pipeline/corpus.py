"""The corpus a profile names, and the rows each step trains and scores on: the synthetic corpus (generated once,
cached by its arguments under ``data/``), a folder of TOFU JSON Lines, or the Hub data set; the texts of a from-scratch
tokenizer; the held-out retain set."""

from __future__ import annotations

import os
import shutil
from typing import Any

from .. import config, paths, runs, training
from ..config import Params
from ..data.synthetic import generate_synthetic_tofu
from ..data.tofu import (
    LOCAL_ONLY_SPLITS,
    QUESTIONS_PER_AUTHOR,
    SPLITS,
    TofuSource,
    retain_split_for,
)


def corpus_params(params: Params) -> dict[str, Any]:
    keys: tuple[str, ...] = ("data_source", "synthetic_authors", "synthetic_questions_per_author")
    if params.max_authors:  # the subset depends on the forget split too
        keys += ("max_authors", "forget_split")
    # "seed" in the key, as before the training seed had a key of its own: the corpus of draw 0 keeps its key, and the
    # resolved draw is hashed, so data_seed null on seed 0 is the same corpus as data_seed 0
    return {**{k: params[k] for k in keys}, "seed": params.corpus_draw}


def corpus(params: Params) -> TofuSource:
    """The TOFU-shaped data of a profile: a synthetic corpus generated under ``data/`` (cached by its
    arguments), a local folder of TOFU JSON Lines, or the Hub data set by name.

    ``data_source`` may be ``synthetic``, a folder, a Hub name, or ``env:VAR|fallback`` to read the folder from
    an environment variable (``tofu-local`` uses ``env:UNLEARNKIT_TOFU_DIR`` with a folder beside the project as
    fallback). ``max_authors`` keeps that many authors in every author split (the forget set and the first others).

    A synthetic folder written by another generator version (e.g. one without the holdout files) is written anew;
    its folder name, the hash of the arguments, stays (the files it had keep their bytes across versions).
    """
    from ..data.synthetic import GENERATOR_VERSION, generated_version

    # env:VAR|synthetic (paper-dry): the folder of the variable where it is set, else the synthetic corpus
    source_spec = paths.from_environment(params.data_source, "a folder of TOFU JSON Lines files")
    if source_spec == "synthetic":
        args = {"n_authors": params.synthetic_authors, "questions_per_author": params.synthetic_questions_per_author,
                "seed": params.corpus_draw}
        folder = paths.DATA / f"synthetic-{config.params_hash(args)}"
        with training.processes().main_process_first():
            if generated_version(folder) != GENERATOR_VERSION:
                with runs.file_lock(folder.with_name(f".{folder.name}.lock")):  # workers generate it once
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


def heldout_retain_rows(source: TofuSource, params: Params) -> list[dict]:
    """A retain set the fine-tuned model knows but unlearning never trains on (Wang et al.'s calibration set).

    The synthetic corpus ships one (``retain_heldout``). For real TOFU, the last ``heldout_authors`` authors of
    ``retain_perturbed`` (TOFU's first 20 authors) are held out, so the set keeps its paraphrased questions.
    """
    if "retain_heldout" in source.available_splits():
        return source.load("retain_heldout")
    rows = source.load("retain_perturbed")
    return rows[-params.heldout_authors * QUESTIONS_PER_AUTHOR:]


def unlearning_retain_rows(source: TofuSource, params: Params) -> list[dict]:
    """The retain rows unlearning may train on: the matching retain split minus the held-out retain set."""
    # Question and answer together: a few questions recur across authors.
    held_out = {(r["question"], r["answer"]) for r in heldout_retain_rows(source, params)}
    return [r for r in source.load(retain_split_for(params.forget_split))
            if (r["question"], r["answer"]) not in held_out]


def data_splits(params: Params) -> list[str]:
    """The splits the profile's data source has, known without reading or generating any data: every split for
    the synthetic corpus (it writes them all), TOFU's configs for a Hub name, the files of a local folder (a folder
    that does not exist is refused with its path)."""
    spec = paths.from_environment(params.data_source, "a folder of TOFU JSON Lines files")
    if spec == "synthetic":
        return [*SPLITS, *LOCAL_ONLY_SPLITS]
    return TofuSource(spec).available_splits()
