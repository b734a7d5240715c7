"""The keyword Q&A (Schwinn et al.'s Harry Potter questions, or their synthetic analogue): sampled answers judged by
keyword, with and without the affirmative prefix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import runs, workers
from ...config import Params
from ...data.hp_qa import SYNTHETIC, hp_qa_rows
from ...metrics.sampling import SampledScores, model_for, sample_and_score_with, split_sampler
from ...metrics.scored import evenly_spaced, score_model_folder, score_saved_model
from .plan import KEYWORD_COLUMNS, KeywordQA, ModelReport
from .tables import bound_table, keys_text

# --------------------------------------------------------------------------- keyword Q&A (Harry Potter)


def keyword_questions_label(hp_source: str) -> str:
    """What the keyword questions of ``hp_source`` are, for titles: the HP Q&A or its synthetic analogue."""
    return "keyword Q&A from the forget split (synthetic)" if hp_source == SYNTHETIC else "Harry Potter Q&A"


def hp_rows(hp_source: str, forget_rows: Sequence[Mapping[str, Any]] | None = None,
            max_questions: int | None = None) -> list[dict[str, Any]]:
    """The keyword Q&A of ``hp_source`` (question, affirmative_response, keywords): Schwinn et al.'s Harry Potter
    Q&A from a file, or ``synthetic``, the same shape built from ``forget_rows`` (see :mod:`unlearnkit.data.hp_qa`);
    at most ``max_questions`` of them, evenly spaced."""
    return evenly_spaced(hp_qa_rows(hp_source, forget_rows), max_questions)


def hp_table(result: SampledScores, alpha: float) -> ModelReport:
    """Per-question table and summary of a keyword Q&A run: the question, its keywords, the greedy answer,
    S, S/n, the Clopper-Pearson lower bound and M_bin, and whether greedy is clean while sampling leaks."""
    table = bound_table(None, alpha, result.leak)
    table.insert(0, "keywords", keys_text(result.keys))
    table.insert(0, "question_text", result.questions)
    table["greedy_answer"] = result.greedy_answers
    table["greedy_leak"] = result.greedy_leak.astype(int)
    table["understated_entity"] = (table["greedy_leak"] == 0) & (table["leaks"] > 0)
    safe = table["greedy_leak"] == 0
    summary = {
        "n_questions": len(result.questions), "n_samples": result.n,
        "use_prefix": bool(result.settings.get("use_prefix")),
        "greedy_leak_rate": float(result.greedy_leak.mean()), "leak_rate": float(table["leak_rate"].mean()),
        "questions_with_a_leak": int((table["leaks"] > 0).sum()),
        "leak_lower_bound_mean": float(table["leak_lower"].mean()),
        "binary_leak_bound_mean": float(table["binary_leak_bound"].mean()),
        "binary_leak_bound_max": float(table["binary_leak_bound"].max()),
        "binary_leak_bound_min": float(table["binary_leak_bound"].min()),
        # the paper's Fig. 3a statistic, over every question and over the questions greedy decoding calls unlearned
        # (the figure's: "while greedy decoding indicates successful unlearning")
        "share_binary_leak_bound_above_0.1": float((table["binary_leak_bound"] > 0.1).mean()),
        "greedy_safe_questions": int(safe.sum()),
        "share_binary_leak_bound_above_0.1_greedy_safe":
            float((table.loc[safe, "binary_leak_bound"] > 0.1).mean()) if safe.any() else None,
        "greedy_unlearned_but_leaks": int(table["understated_entity"].sum()),
        "self_bleu": float(np.nanmean(result.self_bleu)),
    }
    return ModelReport(table, summary)


def hp_leakage(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], alpha: float,
               use_prefix: bool = True, *, sampler: str, **sampling) -> KeywordQA:
    """The keyword Q&A path: question (then, with ``use_prefix``, the affirmative response as the start of the
    answer) -> n samples -> keyword leak judge (any keyword, whole words, case-insensitive, on the
    continuation only) -> binary leakage bound per question (:func:`hp_table`). Works for any Hugging Face
    causal LM; with ``sampler="vllm"``, ``model`` is a ``vllm.LLM`` (see
    :func:`unlearnkit.metrics.sampling.sample_and_score_with`)."""
    return _keyword_qa(sample_and_score_with(sampler, model, tokenizer, template, rows, use_prefix=use_prefix,
                                             **sampling), alpha)


def _keyword_qa(result: SampledScores, alpha: float) -> KeywordQA:
    report = hp_table(result, alpha)
    return KeywordQA(result, report.table, report.summary)


#: ``hp_model``'s value for the model of the paper's regime that notebook 05 chose (#56 item 5).
REGIME = "regime"


def hp_model_of(hp_model: str | None, chosen: Mapping[str, Any]) -> tuple[str | Path | None, str | None]:
    """What the keyword Q&A runs on and the name its results are recorded under: ``hp_model`` as the profile names
    it (a saved model, a Hub name, a folder), or for ``regime`` the first of ``chosen`` (notebook 05's regime models,
    in ``regime_runs`` order) that reached the paper's regime: its kept step's folder, recorded under its label. Fig.
    3a's model is one whose greedy answers say "unlearned"; a fully unlearned run is not. When no run reached the
    regime, the first one's step with the lowest greedy leak rate, recorded as not reached (the claim then says
    not testable)."""
    if hp_model != REGIME:
        return hp_model, hp_model
    if not chosen:
        return None, None
    label = next((label for label, m in chosen.items() if m.reached), next(iter(chosen)))
    return Path(chosen[label].folder), label


def run_hp_qa(hp_model: str | Path, params: Params, rows: Sequence[Mapping[str, Any]],
              settings: Mapping[str, Any], alpha: float, use_prefix: bool = True,
              label: str | None = None) -> KeywordQA:
    """:func:`hp_leakage` for the profile's ``hp_model``: a model saved under ``runs/<profile>/seed-<s>/models/``
    (``target`` among them) is scored through the cache of :func:`score_saved_model`, a step kept along an
    unlearning run (a :class:`~pathlib.Path`, from :func:`hp_model_of`) through that of :func:`score_model_folder`,
    under its ``label`` as notebook 05 caches every kept step;
    a Hub name or folder is loaded with the profile's ``dtype`` (its prompt template from its name: a Llama-2 model
    gets the Llama-2-chat template), on the GPU when there is one."""
    # one cache entry per choice of the prefix, so that asking both never evicts the other
    tag = ".hp.prefixed" if use_prefix else ".hp"
    if isinstance(hp_model, Path):
        name = label or f"{hp_model.parent.name}.{hp_model.name}"
        return _keyword_qa(score_model_folder(params, hp_model, f"{name}{tag}", rows, settings, use_prefix=use_prefix),
                           alpha)
    if runs.is_saved(params, hp_model):
        return _keyword_qa(score_saved_model(params, hp_model, rows, settings, cache_tag=tag,
                                             use_prefix=use_prefix), alpha)
    sampler, options = split_sampler(settings)
    with model_for(sampler, hp_model, dtype=params.dtype, template=None, seed=options["seed"]) as loaded:
        return hp_leakage(*loaded, rows, alpha, use_prefix=use_prefix, sampler=sampler, **options)


def run_hp_qa_both(hp_model: str | Path, params: Params, rows: Sequence[Mapping[str, Any]],
                   settings: Mapping[str, Any], alpha: float, use_prefix: bool = False,
                   label: str | None = None) -> tuple[KeywordQA, KeywordQA]:
    """:func:`run_hp_qa` with the profile's choice of the affirmative prefix (``use_prefix``) and with the other
    one, side by side in up to ``jobs`` worker processes: (the profile's choice, the other)."""
    jobs = params.jobs
    chosen, other = workers.side_by_side(run_hp_qa, [(hp_model, params, list(rows), dict(settings), alpha,
                                                     prefix, label) for prefix in (use_prefix, not use_prefix)],
                                        jobs, desc="keyword Q&A")
    return chosen, other


def strongest_keyword_leaks(table: pd.DataFrame, limit: int = 8) -> pd.DataFrame:
    """The keyword questions with the highest M_bin, as the notebook shows them."""
    return table[KEYWORD_COLUMNS].sort_values("binary_leak_bound", ascending=False).head(limit)
