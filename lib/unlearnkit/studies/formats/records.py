"""What notebook 04 reads and metrics.json records beside the scores, numbers and identifiers only: each unlearned
model's record with the formats it rests on (:func:`format_records`) and a table of them (:func:`per_model_table`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .readouts import COMPREHENSION_FORMATS, SEPARATION_FORMATS, of_scorers
from .suppression import informative_formats, model_records, too_few_items
from .tables import format_order
from .transfer import is_graded


def unlearned_models(named_models: Sequence[str], retain_model: str) -> list[str]:
    """The evaluated models that unlearning made: all but base, target and the retain model."""
    return [m for m in named_models if m not in ("base", "target", retain_model)]


class FormatRecords(NamedTuple):
    """Every unlearned model's record, with the formats it rests on."""

    informative: list[str]  # the formats that can show kept knowledge
    too_few: list[str]  # formats shown but not counted: fewer than format_min_items forget items
    per_model: list[dict[str, Any]]  # one per unlearned model (model_records)
    min_items: int
    scorers: str | None = None  # PAPER_SCORERS, LIKELIHOOD_SCORERS or None (every readout)
    not_transferring: Sequence[str] = ()  # knowledge readouts left out: the target is not above chance in them
    unread: Sequence[str] = ()  # comprehension readouts left out: the retain model does not read the passage


def format_records(scores, qa: Mapping[str, Mapping[str, float]], chance: Mapping[str, float | None],
                   n_items: Mapping[str, Mapping[str, int]], unlearned: Sequence[str], retain_model: str,
                   margin: float, min_items: int, transfers: Sequence[str] | None = None,
                   read: Sequence[str] | None = None, scorers: str | None = None) -> FormatRecords:
    """Each unlearned model's record against the target and the retain model (``margin`` is ``format_margin``,
    ``min_items`` ``format_min_items``; ``transfers``, ``read`` and ``scorers`` as in :func:`model_records`)."""
    knowledge = [f for f in format_order(scores)
                 if f not in COMPREHENSION_FORMATS + SEPARATION_FORMATS and of_scorers(f, scorers)]
    comprehension = [f for f in COMPREHENSION_FORMATS if f in format_order(scores) and of_scorers(f, scorers)]
    return FormatRecords(
        informative=informative_formats(scores, chance, margin, "target", retain_model, n_items, min_items,
                                        transfers, scorers),
        too_few=[f for f in too_few_items(scores, n_items, min_items) if of_scorers(f, scorers)],
        per_model=model_records(scores, qa, chance, margin, unlearned, "target", retain_model, n_items,
                                min_items, transfers, read, scorers),
        min_items=min_items, scorers=scorers,
        not_transferring=[] if transfers is None else [f for f in knowledge if not is_graded(f) and f not in transfers],
        unread=[] if read is None else [f for f in comprehension if f not in read])


def per_model_table(per_model: Sequence[Mapping[str, Any]]):
    """One row per unlearned model: TOFU's Q&A forget ROUGE-L and whether it is at or below the halfway threshold,
    and the formats that keep forget performance, separate forget from retain facts, or show suppression."""
    import pandas as pd

    rows = [{"model": f["model"], "qa_forget_rouge": f.get("qa_rouge", np.nan), "qa_forgets": f["qa_forgets"],
             "formats_keeping_forget": ", ".join(k["format"] for k in f["kept"]) or "-",
             "separates_forget_from_retain": ", ".join(s["format"] for s in f["separation"] if s["separates"]) or "-",
             "suppression": ", ".join(s["format"] for s in f["suppression"]) or "-"} for f in per_model]
    return pd.DataFrame(rows).set_index("model")


def results_meta(named_models: Mapping[str, str], retain_model: str, chance: Mapping[str, float | None],
                 n_items: Mapping[str, Mapping[str, int]], records: FormatRecords,
                 qa: Mapping[str, Mapping[str, float]], transfer: Sequence[Mapping[str, Any]] | None = None,
                 reading: Mapping[str, Any] | None = None,
                 likelihood: FormatRecords | None = None) -> dict[str, Any]:
    """What metrics.json records beside the scores: the models, the references and each unlearned model's numbers
    (``records``, the paper's scorers), the transfer tests, the retain model's reading of the
    passages and the same numbers by the likelihood readouts."""
    meta = {"models": dict(named_models), "retain_model": retain_model, "chance": dict(chance),
            "n_items": dict(n_items), "informative_formats": records.informative, "too_few_items": records.too_few,
            "qa_rouge": dict(qa), "per_model": [dict(f) for f in records.per_model]}
    if records.scorers is not None:
        meta.update(scorers=records.scorers, not_transferring=records.not_transferring, unread=records.unread)
    if transfer is not None:
        meta["transfer"] = list(transfer)
    if reading is not None:
        meta["passage_reading"] = dict(reading)
    if likelihood is not None:
        meta["likelihood"] = {"informative_formats": likelihood.informative,
                              "not_transferring": likelihood.not_transferring,
                              "unread": likelihood.unread, "per_model": [dict(f) for f in likelihood.per_model]}
    return meta
