"""Examples and disagreements: one item of each format as the model sees it, and the facts on which the formats
disagree for a model, with TOFU's Q&A answer beside them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ... import config, runs
from ...data.formats import MCQA_STYLE_FORMATS
from ...metrics import formats as scoring


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


def example_model(per_model: Sequence[Mapping[str, Any]], unlearned: Sequence[str]) -> str:
    """The model whose disagreements to show: the first whose Q&A ROUGE-L is at or below the halfway threshold while
    some informative format keeps forget performance (:func:`model_records`), else the first unlearned model, else the
    target."""
    return next((f["model"] for f in per_model if f["qa_forgets"] and f["kept"]),
                unlearned[0] if unlearned else "target")


def _qa_rows(params: config.Params, model: str) -> list[float] | None:
    """Per-item TOFU Q&A ROUGE-L recall on forget (fine-tuning or unlearning notebook), in the rows order of the
    formats' source."""
    for notebook in (runs.FINETUNE, runs.unlearning_notebook(model)):
        try:
            stored = runs.read_per_item(params, notebook)
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


def disagreement_examples(per_item_of_model: Mapping[str, Any], formats: Sequence[str],
                          params: config.Params | None = None,
                          label: str | None = None, set_name: str = "forget", rouge_threshold: float = 0.5,
                          n: int = 8):
    """Facts of ``set_name`` on which the given formats disagree for one model (right in some, wrong in others),
    with TOFU's Q&A answer beside them (right when ROUGE-L recall at least ``rouge_threshold``) when ``params`` and the
    model's ``label`` find it. Cloze counts its greedy fill (``cloze_fill``)."""
    import pandas as pd

    chosen = _chosen_rows(per_item_of_model, formats, set_name)
    rows = scoring.disagreement_table(chosen, rouge_threshold=rouge_threshold)
    qa = _qa_rows(params, label) if params is not None and label else None
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
