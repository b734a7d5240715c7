"""Tables: the chance level of each format, the formats in their reported order, TOFU's Q&A ROUGE-L beside them,
and every model's scores as one table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ... import config, runs
from ...data.formats import FORMATS, MCQA_STYLE_FORMATS
from ...metrics import formats as scoring
from ...metrics.formats import LIKELIHOOD_SUFFIX
from .readouts import QA_ROWS, SETS


def chance_levels(items_by_format, likelihood: bool = True) -> dict[str, float | None]:
    """Chance score of each reported format: 1 / number of options for the MCQA-style formats (and their
    likelihood readouts); for comprehension Q&A the score of answering with a sentence of the passage picked at
    random (the mean ROUGE of each of the passage's answers against the true one: what copying without reading the
    question gets); None where a score has no chance level (cloze)."""
    chance: dict[str, float | None] = {}
    for fmt in items_by_format:
        items = [i for sets in items_by_format[fmt].values() for i in sets]
        if fmt in MCQA_STYLE_FORMATS:
            level = float(np.mean([1 / len(i["letters"]) for i in items])) if items else None
            chance[fmt] = level
            if likelihood:
                chance[fmt + LIKELIHOOD_SUFFIX] = level
        elif fmt == "comprehension_qa" and items and all("context_answers" in i for i in items):
            chance[fmt] = float(np.mean([scoring.rouge_f_mean([i["answer"]] * len(i["context_answers"]),
                                                              i["context_answers"]).mean() for i in items]))
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


def qa_rouge(params: config.Params, names: Sequence[str]) -> dict[str, dict[str, float]]:
    """TOFU's Q&A ROUGE-L recall on forget and retain of each model: the fine-tuning notebook's for base, target
    and retain models, each unlearning run's own. Models with no such result are left out."""
    found = {}
    try:
        finetuning = runs.read_metrics(params, runs.FINETUNE)
    except FileNotFoundError:
        finetuning = {}
    unlearning = runs.unlearning_runs(params)
    for name in names:
        source = finetuning.get(name) if name in finetuning else unlearning.get(name, {}).get(name)
        if source:
            found[name] = {s: float(source[s]["rouge"]) for s in SETS}
    return found


def scores_table(scores: Mapping[str, Mapping[str, Mapping[str, float]]],
                 qa: Mapping[str, Mapping[str, float]] | None = None):
    """One row per (format, set), one column per model; the first rows are TOFU's Q&A ROUGE-L when given."""
    import pandas as pd

    rows = []
    if qa:
        rows += [{"format": QA_ROWS, "set": s, **{m: qa.get(m, {}).get(s, np.nan) for m in scores}}
                 for s in SETS]
    for fmt in format_order(scores):
        for s in SETS:
            rows.append({"format": fmt, "set": s, **{m: scores[m][s].get(fmt, np.nan) for m in scores}})
    return pd.DataFrame(rows).set_index(["format", "set"])
