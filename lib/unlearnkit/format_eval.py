"""Notebook 04's recipe: the format-transformed evaluation of Joshi et al., "Towards Robust Evaluation of
Unlearning via Data Transformations" (docs/metrics.md §6), run on every model of a profile.

Unlearning is trained and usually judged in the Q&A format. The same forget and retain facts are asked here
as MCQA, cloze, analogy, odd-one-out and comprehension items (:mod:`unlearnkit.data.formats`) and scored by
:mod:`unlearnkit.metrics.formats`, for the base, target, retain and unlearned models. The paper's finding is
that a method can look forgotten in Q&A while another format still shows the facts.

Which models (:func:`select_models`)
    ``format_models: null`` means base, target, the retain model (the forget-quality reference of notebook
    01) and every unlearning run of notebook 02 whose model is saved; a list names models (``target``,
    ``retain90``) or runs (``npo``, resolved to ``models/unlearned-npo``).

Option likelihood (:func:`score_option_likelihood`, ``format_likelihood``)
    docs/metrics.md's MCQA reads the letter a model writes after "Answer:". A tiny model trained from scratch on
    Q&A pairs has never seen lettered options, so it sits at chance on every lettered format whatever it
    knows. With ``format_likelihood`` the MCQA-style items are also scored the way small models are usually
    evaluated on multiple choice (lm-evaluation-harness without letters), as ``<format>_likelihood``:

    * mcqa, comprehension_mcqa: the question (after the context, for comprehension) in the model's Q&A
      template, then the answer's own words before the option (where the option is a value inside the answer,
      as in the synthetic corpus; nothing where options are whole answers, as in real TOFU), then each option;
      the prediction is the option of highest mean token log-probability;
    * analogy: ``"A1 : v1 :: A2 : v2 :: Aq :"`` followed by each option, same rule;
    * odd_one_out: each statement scored alone; the prediction is the outlier, the statement whose mean
      log-probability is farthest from the mean of the others. A model that knows every fact (the target) finds
      no outlier and sits near chance; one that knows only one set (the retain model) finds it.

The finding (:func:`forgetting_findings`), with ``margin = format_margin``
    * Q&A suggests forgetting when the unlearned model's TOFU forget ROUGE-L recall (notebook 02) is at most
      halfway from the target's down to the retain model's, and the target beats the retain model by more than
      the margin (otherwise the Q&A cannot tell).
    * A format can reveal kept knowledge only if it separates the target from the retain model on forget by
      more than the margin (formats where even the target is at chance say nothing).
    * Such a format keeps forget performance **well above** the retain model's when the unlearned model's
      forget score exceeds the retain model's by more than the margin and, for MCQA-style formats, exceeds
      chance by more than the margin too.
    * Odd-one-out is not a knowledge format: it is high when a model knows one set and not the other (the
      retain model), and at chance both when it knows every fact (the target) and when it knows none (a
      collapsed model). It is reported on its own: where the retain model scores more than the margin above
      chance and above the target, an unlearned model *separates* forget from retain facts when it, too,
      scores more than the margin above chance.
    * The paper's finding holds for a model when Q&A suggests forgetting and at least one format keeps forget
      performance well above the retain model's.
    * A format with fewer than ``format_min_items`` forget items is shown but never counts as evidence, either
      way: a margin of 0.1 is within the noise of a handful of items.
    * Comprehension formats put the facts in the context, so they never count as keeping knowledge: a model
      should do as well on forget as on retain there, and a forget/retain gap wider than the retain model's by
      more than the margin is reported as suppression.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import config, models, paths, pipeline, runs
from .data.formats import FORMATS, MCQA_STYLE_FORMATS
from .data.tofu import retain_split_for
from .metrics import formats as scoring

__all__ = [
    "NOTEBOOK",
    "LIKELIHOOD_SUFFIX",
    "SETS",
    "select_models",
    "retain_model_name",
    "score_option_likelihood",
    "evaluate_model",
    "evaluate_all",
    "metrics_payload",
    "chance_levels",
    "item_format",
    "too_few_items",
    "format_order",
    "qa_rouge",
    "scores_table",
    "informative_formats",
    "separating_formats",
    "forgetting_findings",
    "findings_table",
    "plot_format_scores",
    "plot_kept_share",
    "example_text",
    "disagreement_examples",
    "disagreement_rates",
]

NOTEBOOK = "04_format_eval"
LIKELIHOOD_SUFFIX = "_likelihood"
SETS = ("forget", "retain")
#: Formats high when a model knows one set and not the other: a separation, not knowledge (module docstring).
_SEPARATION = ("odd_one_out", "odd_one_out" + LIKELIHOOD_SUFFIX)
#: Formats that give the facts in the context: a forget/retain gap there is suppression, not knowledge.
_COMPREHENSION = ("comprehension_qa", "comprehension_mcqa", "comprehension_mcqa" + LIKELIHOOD_SUFFIX)


# =============================================================================================
# Models.
# =============================================================================================


def retain_model_name(profile: str, params: Mapping[str, Any]) -> str:
    """The retain model notebook 01 used as the forget-quality reference (``retain90`` for forget10)."""
    try:
        meta = runs.read_metrics(profile, "01_tofu_finetune")["meta"]
        if meta.get("forget_quality_reference"):
            return str(meta["forget_quality_reference"])
    except FileNotFoundError:
        pass
    return retain_split_for(params.get("forget_split", "forget10"))


def _location(profile: str, name: str, params: Mapping[str, Any]) -> str | None:
    """Where a named model is: its folder under runs/<profile>/models (an unlearning run's name is looked up as
    ``unlearned-<run>``), or, for ``base`` of a Hub model profile, the Hub name. None if it is nowhere."""
    for folder in (runs.model_dir(profile, name), runs.model_dir(profile, f"unlearned-{name}")):
        if models.is_saved_model(folder):
            return str(folder)
    if name == "base" and str(params.get("model", pipeline.TINY)) != pipeline.TINY:
        return str(params["model"])
    return None


def select_models(profile: str, params: Mapping[str, Any], names: Sequence[str] | None = None) -> dict[str, str]:
    """``{name: folder or Hub name}`` of the models to evaluate, in the order of the figures.

    ``names=None`` (``format_models: null``) means base, target, the retain model and every unlearning run of
    notebook 02; models that are not saved are left out with a message, except target and the retain model,
    without which nothing can be compared. Named models must all exist.
    """
    if names is None:
        wanted = ["base", "target", retain_model_name(profile, params), *runs.unlearning_runs(profile)]
        required = {"target", retain_model_name(profile, params)}
    else:
        wanted, required = list(names), set(names)
    found, missing = {}, []
    for name in dict.fromkeys(wanted):
        location = _location(profile, name, params)
        if location is None:
            missing.append(name)
        else:
            found[name] = location
    absent_required = [m for m in missing if m in required]
    if absent_required:
        raise FileNotFoundError(
            f"no saved model {', '.join(map(repr, absent_required))} under {paths.RUNS / profile / 'models'}: run "
            f"notebooks 01 and 02 with profile {profile!r} first (make notebook NB=01 PROFILE={profile})")
    if missing:
        print(f"left out (not saved): {', '.join(missing)}")
    return found


# =============================================================================================
# Option likelihood.
# =============================================================================================


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _answer_prefix(item: Mapping[str, Any]) -> str:
    """The answer's words before the correct option, when the option is a value inside the answer."""
    answer = _one_line(item["answer"])
    at = answer.rfind(item["correct_option"])
    return answer[:at] if at > 0 else ""


def _option_sequences(item: Mapping[str, Any], fmt: str, tokenizer, template: models.PromptTemplate
                      ) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, option ids) of every option of an item, as the module docstring describes."""
    if fmt == "odd_one_out":
        start = scoring.encode_text(tokenizer, "")  # BOS only: each statement on its own
        return [(start, _ids(tokenizer, option)) for option in item["options"]]
    if fmt == "analogy":
        chain = " :: ".join([f"{a} : {v}" for a, v in item["context_pairs"]] + [f"{item['author']} :"])
        prompt = scoring.encode_text(tokenizer, chain)
        return [(prompt, _ids(tokenizer, " " + option)) for option in item["options"]]
    question = item["question"] if fmt == "mcqa" else f"Context: {item['context']}\n{item['question']}"
    prefix = _answer_prefix(item)
    stripped = prefix.rstrip()
    # As in the cloze: the prefix's trailing space goes with the option, the way the answer was tokenised.
    prompt = models.encode_prompt(tokenizer, template, question) + (_ids(tokenizer, stripped) if stripped else [])
    return [(prompt, _ids(tokenizer, prefix[len(stripped):] + option)) for option in item["options"]]


@torch.no_grad()
def _mean_log_probs(model, tokenizer, pairs: Sequence[tuple[list[int], list[int]]], batch_size: int) -> np.ndarray:
    """Mean token log-probability of each continuation given its prompt."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = models.pad_token_id(tokenizer)
    examples = [{"input_ids": p + c, "labels": [-100] * len(p) + c} for p, c in pairs]
    out = np.empty(len(examples))
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]["input_ids"]))  # less padding
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = {k: v.to(device) for k, v in models.collate([examples[i] for i in idx], pad).items()}
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float()
        labels = batch["labels"][:, 1:]
        mask = labels != -100
        logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        out[idx] = ((logp * mask).sum(-1) / mask.sum(-1).clamp(min=1)).cpu().numpy()
    model.train(was_training)
    return out


def _pick(fmt: str, log_probs: np.ndarray) -> int:
    if fmt == "odd_one_out":
        total, n = log_probs.sum(), len(log_probs)
        distance = [abs(lp - (total - lp) / (n - 1)) for lp in log_probs]
        return int(np.argmax(distance))
    return int(np.argmax(log_probs))


def score_option_likelihood(model, tokenizer, template: models.PromptTemplate, fmt: str,
                            items: Sequence[Mapping[str, Any]], batch_size: int = 32) -> dict[str, Any]:
    """Accuracy of an MCQA-style format when options are ranked by likelihood (module docstring); per item the
    predicted letter, correctness and each option's mean token log-probability."""
    if fmt not in MCQA_STYLE_FORMATS:
        raise ValueError(f"option likelihood scores the MCQA-style formats {MCQA_STYLE_FORMATS}, not {fmt!r}")
    if not items:
        return {"accuracy": float("nan"), "predicted_letter": [], "correct": [], "option_log_probs": []}
    pairs, bounds = [], []
    for item in items:
        sequences = _option_sequences(item, fmt, tokenizer, template)
        bounds.append((len(pairs), len(pairs) + len(sequences)))
        pairs += sequences
    log_probs = _mean_log_probs(model, tokenizer, pairs, batch_size)
    predicted, correct, per_option = [], [], []
    for item, (lo, hi) in zip(items, bounds):
        choice = _pick(fmt, log_probs[lo:hi])
        predicted.append(item["letters"][choice])
        correct.append(choice == item["answer_index"])
        per_option.append(log_probs[lo:hi].tolist())
    return {"accuracy": float(np.mean(correct)), "predicted_letter": predicted, "correct": correct,
            "option_log_probs": per_option}


# =============================================================================================
# Evaluation, cached per model.
# =============================================================================================


def _per_item_row(item: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    # The same row shape as unlearnkit.metrics.formats.evaluate_formats, so disagreement_table joins both.
    keys = ("id", "set", "source_row", "author_index", "question")
    return {**{k: item.get(k) for k in keys}, **values}


def _evaluate_loaded(model, tokenizer, template, items_by_format, params: Mapping[str, Any]
                     ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[dict]]]]:
    batch_size = int(params.get("eval_batch_size", 32))
    scores, per_item = scoring.evaluate_formats(model, tokenizer, template, items_by_format, batch_size=batch_size,
                                                max_new_tokens=int(params.get("max_new_tokens", 64)))
    if params.get("format_likelihood"):
        for fmt in (f for f in MCQA_STYLE_FORMATS if f in items_by_format):
            name = fmt + LIKELIHOOD_SUFFIX
            for set_name, items in items_by_format[fmt].items():
                result = score_option_likelihood(model, tokenizer, template, fmt, items, batch_size)
                scores.setdefault(name, {})[set_name] = result["accuracy"]
                per_item.setdefault(name, {})[set_name] = [
                    _per_item_row(item, score=float(ok), correct=ok, prediction=letter,
                                  answer_letter=item["answer_letter"])
                    for item, ok, letter in zip(items, result["correct"], result["predicted_letter"])]
    return scores, per_item


#: The code a model's scores come from (held here, so that replacing a module attribute does not change it).
_SCORING_CODE = (scoring, _evaluate_loaded, _option_sequences, _mean_log_probs, _pick, score_option_likelihood,
                 _per_item_row)


def _cache_key(location: str, items_by_format, params: Mapping[str, Any]) -> str:
    """Everything a model's scores depend on: its weights (the params hash saved beside them, or the Hub name),
    the items, the scoring options and the scoring code itself (editing a scorer invalidates the cache; editing
    a figure does not)."""
    meta = Path(location) / "unlearnkit.json"
    identity = json.loads(meta.read_text()) if meta.exists() else {"hub": location}
    code = hashlib.sha256("".join(inspect.getsource(c) for c in _SCORING_CODE).encode()).hexdigest()
    return config.params_hash({"model": identity, "folder": Path(location).name, "items": items_by_format, "code": code,
                               **{k: params.get(k) for k in ("format_likelihood", "max_new_tokens", "dtype")}})


#: Models below this size are scored on one intra-op thread on a CPU (see :func:`_scoring_threads`).
ONE_THREAD_BELOW_PARAMETERS = 100_000_000


@contextmanager
def _scoring_threads(model):
    """One torch thread for a small model on a CPU. Its matrices are too small for a second thread to pay, and
    when the cores are shared with another job the threads spin-wait for each other: on the default profile a
    model took ~185 s with two threads and ~40 s with one while one other notebook ran (the cloze alone 33 s vs
    2.5 s)."""
    small_cpu = next(model.parameters()).device.type == "cpu" and \
        sum(p.numel() for p in model.parameters()) < ONE_THREAD_BELOW_PARAMETERS
    before = torch.get_num_threads()
    if small_cpu:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def _quiet_loading():
    """No "Loading weights" bar per model: eleven of them would bury the notebook's output."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def evaluate_model(name: str, location: str, items_by_format, params: Mapping[str, Any], profile: str
                   ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[dict]]]]:
    """Every format's score of one model (``{format: {set: score}}``) and its per-item rows, cached under
    ``runs/<profile>/04_format_eval/cache/`` by :func:`_cache_key`."""
    cache = paths.run_dir(profile, NOTEBOOK) / "cache" / f"{name}-{_cache_key(location, items_by_format, params)}.json"
    if cache.exists():
        stored = json.loads(cache.read_text())
        return stored["scores"], stored["per_item"]
    local = Path(location).is_dir()  # a saved model knows its template; a Hub model takes the profile's
    with _quiet_loading():
        model, tokenizer, template = models.load_model(location, dtype=params.get("dtype"),
                                                       device="cuda" if torch.cuda.is_available() else None,
                                                       template=None if local else params.get("template"))
    with _scoring_threads(model):
        scores, per_item = _evaluate_loaded(model, tokenizer, template, items_by_format, params)
    config.atomic_write_text(cache, json.dumps({"scores": scores, "per_item": per_item}))
    for stale in cache.parent.glob(f"{name}-*.json"):  # one entry per model: older ones only fill the disk
        if stale != cache:
            stale.unlink()
    return scores, per_item


def evaluate_all(named_models: Mapping[str, str], items_by_format, params: Mapping[str, Any], profile: str
                 ) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, Any]]:
    """:func:`evaluate_model` for each model, one loaded at a time; returns the scores in the metrics.json
    layout (:func:`metrics_payload`) and the per-item rows by model. Prints the seconds each model took."""
    scores, per_item = {}, {}
    for name, location in named_models.items():
        started = time.time()
        by_format, per_item[name] = evaluate_model(name, location, items_by_format, params, profile)
        scores[name] = metrics_payload(by_format)
        print(f"{name:>14}: {time.time() - started:5.1f} s")
    return scores, per_item


def metrics_payload(by_format: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """``{format: {set: score}}`` -> ``{"forget": {format: score}, "retain": {format: score}}``."""
    return {s: {fmt: float(sets[s]) for fmt, sets in by_format.items() if s in sets} for s in SETS}


# =============================================================================================
# Tables.
# =============================================================================================


def chance_levels(items_by_format, likelihood: bool = True) -> dict[str, float | None]:
    """Chance score of each reported format: 1 / number of options for the MCQA-style formats (and their
    likelihood readouts), None where a score has no chance level (cloze, comprehension Q&A)."""
    chance: dict[str, float | None] = {}
    for fmt in items_by_format:
        items = [i for sets in items_by_format[fmt].values() for i in sets]
        if fmt in MCQA_STYLE_FORMATS:
            level = float(np.mean([1 / len(i["letters"]) for i in items])) if items else None
            chance[fmt] = level
            if likelihood:
                chance[fmt + LIKELIHOOD_SUFFIX] = level
        else:
            chance[fmt] = None
            if fmt == "cloze":
                chance["cloze_fill"] = None
    return chance


def format_order(scores: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[str]:
    """The reported formats in a fixed order: each format of docs/metrics.md followed by its extra readouts."""
    present = {fmt for model in scores.values() for sets in model.values() for fmt in sets}
    order = []
    for fmt in FORMATS:
        order += [f for f in (fmt, "cloze_fill" if fmt == "cloze" else None, fmt + LIKELIHOOD_SUFFIX)
                  if f in present]
    return order + sorted(present - set(order))


def qa_rouge(profile: str, names: Sequence[str]) -> dict[str, dict[str, float]]:
    """TOFU's Q&A ROUGE-L recall on forget and retain of each model: notebook 01 for base, target and retain
    models, notebook 02 for unlearning runs. Models with no such result are left out."""
    found = {}
    try:
        first = runs.read_metrics(profile, "01_tofu_finetune")
    except FileNotFoundError:
        first = {}
    unlearning = runs.unlearning_runs(profile)
    for name in names:
        source = first.get(name) if name in first else unlearning.get(name, {}).get(name)
        if source:
            found[name] = {s: float(source[s]["rouge"]) for s in SETS}
    return found


def scores_table(scores: Mapping[str, Mapping[str, Mapping[str, float]]],
                 qa: Mapping[str, Mapping[str, float]] | None = None):
    """One row per (format, set), one column per model; the first rows are TOFU's Q&A ROUGE-L when given."""
    import pandas as pd

    rows = []
    if qa:
        rows += [{"format": "qa_rouge (TOFU)", "set": s, **{m: qa.get(m, {}).get(s, np.nan) for m in scores}}
                 for s in SETS]
    for fmt in format_order(scores):
        for s in SETS:
            rows.append({"format": fmt, "set": s, **{m: scores[m][s].get(fmt, np.nan) for m in scores}})
    return pd.DataFrame(rows).set_index(["format", "set"])


# =============================================================================================
# The finding.
# =============================================================================================


def _forget(scores, model: str, fmt: str) -> float:
    value = scores.get(model, {}).get("forget", {}).get(fmt)
    return float("nan") if value is None else float(value)


def item_format(fmt: str) -> str:
    """The format whose items a reported score is computed on (``cloze_fill`` and ``<format>_likelihood``
    are other readouts of the same items)."""
    fmt = fmt.removesuffix(LIKELIHOOD_SUFFIX)
    return "cloze" if fmt == "cloze_fill" else fmt


def too_few_items(scores, n_items: Mapping[str, Mapping[str, int]] | None, min_items: int) -> list[str]:
    """Reported formats with fewer than ``min_items`` forget items: a margin of 0.1 is within the noise of a
    handful of items (with 10 items the standard error of an accuracy near 0.3 is 0.15), so they are shown but
    never taken as evidence. Real TOFU's analogies are few, since they need a relation that recurs across authors."""
    if not n_items or not min_items:
        return []
    return [fmt for fmt in format_order(scores)
            if n_items.get(item_format(fmt), {}).get("forget", min_items) < min_items]


def informative_formats(scores, chance: Mapping[str, float | None], margin: float, target: str = "target",
                        retain_model: str = "retain90", n_items: Mapping[str, Mapping[str, int]] | None = None,
                        min_items: int = 0) -> list[str]:
    """Knowledge formats (neither comprehension nor odd-one-out) with at least ``min_items`` forget items in
    which the target beats the retain model on forget by more than ``margin``: the only formats that can show
    whether an unlearned model kept the facts."""
    few = set(too_few_items(scores, n_items, min_items))
    return [fmt for fmt in format_order(scores) if fmt not in _COMPREHENSION + _SEPARATION and fmt not in few
            and _forget(scores, target, fmt) - _forget(scores, retain_model, fmt) > margin]


def separating_formats(scores, chance: Mapping[str, float | None], margin: float, target: str = "target",
                       retain_model: str = "retain90", n_items: Mapping[str, Mapping[str, int]] | None = None,
                       min_items: int = 0) -> list[str]:
    """Odd-one-out formats in which the retain model tells forget from retain facts apart (more than ``margin``
    above chance and above the target): only there does an unlearned model's separation mean something."""
    few = set(too_few_items(scores, n_items, min_items))
    found = []
    for fmt in format_order(scores):
        t, r = _forget(scores, target, fmt), _forget(scores, retain_model, fmt)
        if fmt in _SEPARATION and fmt not in few and r - t > margin and r > (chance.get(fmt) or 0.0) + margin:
            found.append(fmt)
    return found


def _qa_verdict(qa: Mapping[str, Mapping[str, float]], model: str, target: str, retain_model: str,
                margin: float) -> dict[str, Any]:
    if not all(m in qa for m in (model, target, retain_model)):
        return {"qa_forgets": None, "qa_reason": "no TOFU Q&A ROUGE for this model, the target or the retain model"}
    u, t, r = qa[model]["forget"], qa[target]["forget"], qa[retain_model]["forget"]
    threshold = r + 0.5 * (t - r)
    verdict = {"qa_rouge": u, "qa_target": t, "qa_retain_model": r, "qa_threshold": threshold}
    if t - r <= margin:
        return {**verdict, "qa_forgets": None,
                "qa_reason": f"the target's forget ROUGE ({t:.2f}) is not above the retain model's ({r:.2f}) by "
                             f"more than {margin:.2f}"}
    return {**verdict, "qa_forgets": u <= threshold, "qa_reason": ""}


def _kept_formats(scores, model: str, formats: Sequence[str], chance, margin: float, target: str,
                  retain_model: str) -> list[dict[str, Any]]:
    kept = []
    for fmt in formats:
        u, t, r = (_forget(scores, m, fmt) for m in (model, target, retain_model))
        level = chance.get(fmt)
        if u - r > margin and (level is None or u > level + margin):
            kept.append({"format": fmt, "score": u, "retain_model": r, "target": t, "chance": level,
                         "kept_share": (u - r) / (t - r)})
    return kept


def _separation(scores, model: str, formats: Sequence[str], chance, margin: float, target: str,
                retain_model: str) -> list[dict[str, Any]]:
    out = []
    for fmt in formats:
        u, t, r = (_forget(scores, m, fmt) for m in (model, target, retain_model))
        level = chance.get(fmt) or 0.0
        out.append({"format": fmt, "score": u, "retain_model": r, "target": t, "chance": level,
                    "separates": u > level + margin})
    return out


def _retain_minus_forget(scores, model: str, fmt: str) -> float:
    sets = scores.get(model, {})
    return float(sets.get("retain", {}).get(fmt, np.nan)) - float(sets.get("forget", {}).get(fmt, np.nan))


def _suppression(scores, model: str, retain_model: str, margin: float) -> list[dict[str, Any]]:
    found = []
    for fmt in _COMPREHENSION:
        g, g_ref = _retain_minus_forget(scores, model, fmt), _retain_minus_forget(scores, retain_model, fmt)
        if g - g_ref > margin:
            found.append({"format": fmt, "gap": g, "retain_model_gap": g_ref})
    return found


def _statement(f: Mapping[str, Any], margin: float, formats: Sequence[str]) -> str:
    name = f["model"]
    if f["qa_forgets"] is None:
        qa = f"Q&A cannot tell: {f['qa_reason']}."
    else:
        numbers = (f"TOFU forget ROUGE-L {f['qa_rouge']:.2f}; target {f['qa_target']:.2f}, retain model "
                   f"{f['qa_retain_model']:.2f}, forgetting at or below {f['qa_threshold']:.2f}")
        qa = f"Q&A {'suggests' if f['qa_forgets'] else 'does not suggest'} forgetting ({numbers})."
    if not formats:
        body = "No format separates the target from the retain model on forget, so none can show kept knowledge."
    elif f["kept"]:
        parts = []
        for k in f["kept"]:
            chance = f", chance {k['chance']:.2f}" if k["chance"] is not None else ""
            parts.append(f"{k['format']} {k['score']:.2f} vs retain model {k['retain_model']:.2f} "
                         f"(target {k['target']:.2f}{chance}; {k['kept_share']:.0%} of the way from the retain model to the "
                         "target)")
        body = (f"{len(f['kept'])} of {len(formats)} informative formats keep forget performance well above the "
                f"retain model's (by more than {margin:.2f}): " + "; ".join(parts) + ".")
    else:
        body = (f"No informative format ({', '.join(formats)}) keeps forget performance more than {margin:.2f} "
                "above the retain model's.")
    if f["paper_finding"]:
        verdict = "=> the paper's finding: forgotten in Q&A, still known in another format."
    elif f["qa_forgets"] and not f["kept"] and formats:
        verdict = "=> consistent with forgetting in every format measured."
    elif f["qa_forgets"] is False:
        verdict = "=> not unlearned in Q&A in the first place."
    else:
        verdict = "=> undetermined."
    separation = "".join(
        f" {s['format']} {s['score']:.2f} (retain model {s['retain_model']:.2f}, target {s['target']:.2f}, chance "
        f"{s['chance']:.2f}): " + ("tells forget from retain facts apart, as the retain model does." if s["separates"]
                                   else "does not tell forget from retain facts apart (neither does the target, "
                                        "which knows both, nor a model that lost both).")
        for s in f["separation"])
    suppression = "".join(f" Suppression in {s['format']}: forget/retain gap {s['gap']:.2f} vs the retain model's "
                          f"{s['retain_model_gap']:.2f}, with the facts in the context." for s in f["suppression"])
    return f"{name}: {qa} {body} {verdict}{separation}{suppression}"


def forgetting_findings(scores, qa: Mapping[str, Mapping[str, float]], chance: Mapping[str, float | None],
                        margin: float, unlearned: Sequence[str], target: str = "target",
                        retain_model: str = "retain90", n_items: Mapping[str, Mapping[str, int]] | None = None,
                        min_items: int = 0) -> list[dict[str, Any]]:
    """For each unlearned model, whether Q&A suggests forgetting while some format keeps forget performance
    well above the retain model's (definitions in the module docstring), with the numbers and a ``statement``.
    Formats with fewer than ``min_items`` forget items (``n_items`` as from ``formats.count_items``) are left out."""
    if target not in scores or retain_model not in scores:
        raise ValueError(f"the finding compares against {target!r} and {retain_model!r}; evaluate both "
                         f"(format_models: null does)")
    formats = informative_formats(scores, chance, margin, target, retain_model, n_items, min_items)
    separating = separating_formats(scores, chance, margin, target, retain_model, n_items, min_items)
    findings = []
    for model in unlearned:
        finding: dict[str, Any] = {"model": model, **_qa_verdict(qa, model, target, retain_model, margin)}
        finding["kept"] = _kept_formats(scores, model, formats, chance, margin, target, retain_model)
        finding["separation"] = _separation(scores, model, separating, chance, margin, target, retain_model)
        finding["suppression"] = _suppression(scores, model, retain_model, margin)
        finding["paper_finding"] = bool(finding["qa_forgets"]) and bool(finding["kept"])
        finding["informative_formats"] = list(formats)
        finding["statement"] = _statement(finding, margin, formats)
        findings.append(finding)
    return findings


def findings_table(findings: Sequence[Mapping[str, Any]]):
    """One row per unlearned model: the Q&A verdict and the formats that keep forget performance."""
    import pandas as pd

    rows = [{"model": f["model"], "qa_forget_rouge": f.get("qa_rouge", np.nan), "qa_forgets": f["qa_forgets"],
             "formats_keeping_forget": ", ".join(k["format"] for k in f["kept"]) or "-",
             "separates_forget_from_retain": ", ".join(s["format"] for s in f["separation"] if s["separates"]) or "-",
             "suppression": ", ".join(s["format"] for s in f["suppression"]) or "-",
             "paper_finding": f["paper_finding"]} for f in findings]
    return pd.DataFrame(rows).set_index("model")


# =============================================================================================
# Figures.
# =============================================================================================


def plot_format_scores(scores, chance: Mapping[str, float | None], formats: Sequence[str] | None = None,
                       retain_model: str | None = None, ncols: int = 4):
    """One panel per format: forget (filled) and retain (light) score of each model, chance dashed and the
    retain model's forget score dotted."""
    import matplotlib.pyplot as plt

    formats = list(formats or format_order(scores))
    names = list(scores)
    nrows = math.ceil(len(formats) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.1 * nrows), squeeze=False, sharey=True)
    x = np.arange(len(names))
    for ax, fmt in zip(axes.flat, formats):
        forget = [scores[m]["forget"].get(fmt, np.nan) for m in names]
        retain = [scores[m]["retain"].get(fmt, np.nan) for m in names]
        ax.bar(x - 0.2, forget, 0.4, color="C0", label="forget")
        ax.bar(x + 0.2, retain, 0.4, color="C0", alpha=0.35, label="retain")
        if chance.get(fmt) is not None:
            ax.axhline(chance[fmt], color="grey", ls="--", lw=1, label="chance")
        if retain_model in scores:
            ax.axhline(scores[retain_model]["forget"].get(fmt, np.nan), color="C3", ls=":", lw=1.2,
                       label=f"{retain_model}, forget")
        ax.set_title(fmt.replace(LIKELIHOOD_SUFFIX, " (likelihood)"), fontsize="medium")
        ax.set_xticks(x, names, rotation=60, ha="right", fontsize="small")
        ax.set_ylim(0, 1.05)
    for ax in list(axes.flat)[len(formats):]:
        ax.set_axis_off()
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), bbox_to_anchor=(0.5, 1.02), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def plot_kept_share(scores, qa: Mapping[str, Mapping[str, float]], formats: Sequence[str], models_shown: Sequence[str],
                    target: str = "target", retain_model: str = "retain90", margin: float = 0.1):
    """Heatmap of the share of the target's forget lead over the retain model that each model keeps:
    (model − retain model) / (target − retain model), per informative format and for TOFU's Q&A ROUGE-L.
    1 is as knowing as the target, 0 as the retain model; each cell is annotated with the raw forget score.
    A column where the target and the retain model differ by at most ``margin`` has no share (left blank)."""
    import matplotlib.pyplot as plt

    columns = (["qa_rouge (TOFU)"] if qa else []) + list(formats)

    def forget(model: str, column: str) -> float:
        if column == "qa_rouge (TOFU)":
            return qa.get(model, {}).get("forget", np.nan)
        return _forget(scores, model, column)

    raw = np.array([[forget(m, c) for c in columns] for m in models_shown], dtype=float)
    t = np.array([forget(target, c) for c in columns], dtype=float)
    r = np.array([forget(retain_model, c) for c in columns], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(np.abs(t - r) > margin, (raw - r) / (t - r), np.nan)
    fig, ax = plt.subplots(figsize=(1.25 * len(columns) + 2.5, 0.45 * len(models_shown) + 1.8))
    image = ax.imshow(np.clip(share, -0.25, 1.25), cmap="RdYlBu_r", vmin=-0.25, vmax=1.25, aspect="auto")
    for i in range(len(models_shown)):
        for j in range(len(columns)):
            if np.isfinite(raw[i, j]):
                # white on the dark ends of the colour map, black elsewhere, so every number stays legible
                red, green, blue, _ = image.cmap(image.norm(np.clip(share[i, j], -0.25, 1.25)))
                dark = np.isfinite(share[i, j]) and 0.299 * red + 0.587 * green + 0.114 * blue < 0.45
                ax.text(j, i, f"{raw[i, j]:.2f}", ha="center", va="center", fontsize="small",
                        color="white" if dark else "black")
    ax.set_xticks(range(len(columns)), [c.replace(LIKELIHOOD_SUFFIX, "\n(likelihood)") for c in columns],
                  rotation=45, ha="right", fontsize="small")
    ax.set_yticks(range(len(models_shown)), models_shown)
    ax.grid(False)
    fig.colorbar(image, ax=ax, label=f"share of the target's forget lead over {retain_model} kept")
    ax.set_title("Forget performance by format (annotated: forget score)")
    fig.tight_layout()
    return fig


# =============================================================================================
# Examples and disagreements.
# =============================================================================================


def example_text(items_by_format, set_name: str = "forget", index: int = 0) -> str:
    """One item of each format, as the model sees it, with what counts as right."""
    blocks = []
    for fmt, sets in items_by_format.items():
        if not sets.get(set_name):
            continue
        item = sets[set_name][min(index, len(sets[set_name]) - 1)]
        if fmt in MCQA_STYLE_FORMATS:
            expected = f"{item['answer_letter']} ({item['correct_option']})"
        elif fmt == "cloze":
            expected = f"{item['target']!r}  [span rule: {item['span_rule']}]"
        else:
            expected = item["answer"]
        blocks.append(f"=== {fmt} ({item['id']})\n{item['prompt']}\n--> {expected}")
    return "\n\n".join(blocks)


def _qa_rows(profile: str, model: str) -> list[float] | None:
    """Per-item TOFU Q&A ROUGE-L recall on forget (notebook 01 or 02), in the rows order of the formats' source."""
    for notebook in ("01_tofu_finetune", f"02_unlearning_{model}"):
        try:
            stored = runs.read_per_item(profile, notebook)
        except FileNotFoundError:
            continue
        if model in stored:
            return stored[model]["forget"]["rouge"]
    return None


def _chosen_rows(per_item_of_model: Mapping[str, Any], formats: Sequence[str], set_name: str) -> dict[str, Any]:
    """The per-item rows of ``formats`` on one set. ``cloze`` and ``cloze_fill`` are one set of rows (their
    ``correct`` is the greedy fill's), so either name selects them once."""
    keys = dict.fromkeys("cloze" if fmt == "cloze_fill" else fmt for fmt in formats)
    return {fmt: {set_name: per_item_of_model[fmt][set_name]} for fmt in keys
            if set_name in per_item_of_model.get(fmt, {})}


def disagreement_examples(per_item_of_model: Mapping[str, Any], formats: Sequence[str], profile: str | None = None,
                          model: str | None = None, set_name: str = "forget", rouge_threshold: float = 0.5,
                          n: int = 8):
    """Facts of ``set_name`` on which the given formats disagree for one model (right in some, wrong in others),
    with TOFU's Q&A verdict beside them (ROUGE-L recall at least ``rouge_threshold``) when ``profile`` and
    ``model`` find it. Cloze counts its greedy fill (``cloze_fill``)."""
    import pandas as pd

    chosen = _chosen_rows(per_item_of_model, formats, set_name)
    rows = scoring.disagreement_table(chosen, rouge_threshold=rouge_threshold)
    qa = _qa_rows(profile, model) if profile and model else None
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    if qa is not None:
        table.insert(4, "qa", [qa[r] >= rouge_threshold if r < len(qa) else None for r in table["source_row"]])
    return table.drop(columns=["set", "author_index"]).set_index("source_row").head(n)


def disagreement_rates(per_item: Mapping[str, Mapping[str, Any]], formats: Sequence[str], set_name: str = "forget"):
    """Per model, the share of facts (asked in at least two of ``formats``) on which those formats disagree."""
    import pandas as pd

    rates = {}
    for model, by_format in per_item.items():
        chosen = _chosen_rows(by_format, formats, set_name)
        every = scoring.disagreement_table(chosen, only_disagreements=False)
        asked = [row for row in every if sum(f in row for f in chosen) >= 2]
        split = scoring.disagreement_table(chosen)
        rates[model] = len(split) / len(asked) if asked else np.nan
    return pd.Series(rates, name=f"share of {set_name} facts the formats disagree on")
