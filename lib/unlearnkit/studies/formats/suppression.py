"""The numbers Joshi et al.'s claim is read from: the informative formats (those that separate the target from the
retain model on forget), TOFU's Q&A ROUGE-L against its halfway threshold, and for each unlearned model the formats
that keep forget performance, separate forget from retain facts, or show suppression (definitions in the package
docstring). Numbers and the formats they name only: the notebook reads them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .readouts import COMPREHENSION_FORMATS, SEPARATION_FORMATS, item_format, of_scorers
from .tables import format_order
from .transfer import is_transferring


def forget_score(scores, model: str, fmt: str) -> float:
    """A model's forget score in one reported format; NaN where it has none."""
    value = scores.get(model, {}).get("forget", {}).get(fmt)
    return float("nan") if value is None else float(value)


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
                        min_items: int = 0, transfers: Sequence[str] | None = None,
                        scorers: str | None = None) -> list[str]:
    """Knowledge formats (neither comprehension nor odd-one-out) with at least ``min_items`` forget items in
    which the target beats the retain model on forget by more than ``margin``: the only formats that can show
    whether an unlearned model kept the facts. With ``transfers`` (:func:`transferring_readouts`), only those
    readouts, and with ``scorers`` only the paper's or only the likelihood readouts."""
    few = set(too_few_items(scores, n_items, min_items))
    return [fmt for fmt in format_order(scores)
            if fmt not in COMPREHENSION_FORMATS + SEPARATION_FORMATS and fmt not in few
            and is_transferring(fmt, transfers) and of_scorers(fmt, scorers)
            and forget_score(scores, target, fmt) - forget_score(scores, retain_model, fmt) > margin]


def separating_formats(scores, chance: Mapping[str, float | None], margin: float, target: str = "target",
                       retain_model: str = "retain90", n_items: Mapping[str, Mapping[str, int]] | None = None,
                       min_items: int = 0) -> list[str]:
    """Odd-one-out formats in which the retain model tells forget from retain facts apart (more than ``margin``
    above chance and above the target): only there does an unlearned model's separation mean something."""
    few = set(too_few_items(scores, n_items, min_items))
    found = []
    for fmt in format_order(scores):
        t, r = forget_score(scores, target, fmt), forget_score(scores, retain_model, fmt)
        if fmt in SEPARATION_FORMATS and fmt not in few and r - t > margin and r > (chance.get(fmt) or 0.0) + margin:
            found.append(fmt)
    return found


def _qa_numbers(qa: Mapping[str, Mapping[str, float]], model: str, target: str, retain_model: str,
                margin: float) -> dict[str, Any]:
    """TOFU's Q&A forget ROUGE-L of the model, the target and the retain model, the halfway threshold and whether the
    model is at or below it (None when a ROUGE is missing or the target is not above the retain model by ``margin``)."""
    if not all(m in qa for m in (model, target, retain_model)):
        return {"qa_forgets": None}
    u, t, r = qa[model]["forget"], qa[target]["forget"], qa[retain_model]["forget"]
    threshold = r + 0.5 * (t - r)
    numbers = {"qa_rouge": u, "qa_target": t, "qa_retain_model": r, "qa_threshold": threshold}
    return {**numbers, "qa_forgets": None if t - r <= margin else u <= threshold}


def _kept_formats(scores, model: str, formats: Sequence[str], chance, margin: float, target: str,
                  retain_model: str) -> list[dict[str, Any]]:
    kept = []
    for fmt in formats:
        u, t, r = (forget_score(scores, m, fmt) for m in (model, target, retain_model))
        level = chance.get(fmt)
        if u - r > margin and (level is None or u > level + margin):
            kept.append({"format": fmt, "score": u, "retain_model": r, "target": t, "chance": level,
                         "kept_share": (u - r) / (t - r)})
    return kept


def _separation(scores, model: str, formats: Sequence[str], chance, margin: float, target: str,
                retain_model: str) -> list[dict[str, Any]]:
    out = []
    for fmt in formats:
        u, t, r = (forget_score(scores, m, fmt) for m in (model, target, retain_model))
        level = chance.get(fmt) or 0.0
        out.append({"format": fmt, "score": u, "retain_model": r, "target": t, "chance": level,
                    "separates": u > level + margin})
    return out


def _retain_minus_forget(scores, model: str, fmt: str) -> float:
    sets = scores.get(model, {})
    return float(sets.get("retain", {}).get(fmt, np.nan)) - float(sets.get("forget", {}).get(fmt, np.nan))


def _suppression(scores, model: str, retain_model: str, margin: float,
                 read: Sequence[str] | None = None) -> list[dict[str, Any]]:
    found = []
    for fmt in (COMPREHENSION_FORMATS if read is None else [f for f in COMPREHENSION_FORMATS if f in read]):
        g, g_ref = _retain_minus_forget(scores, model, fmt), _retain_minus_forget(scores, retain_model, fmt)
        if g - g_ref > margin:
            found.append({"format": fmt, "gap": g, "retain_model_gap": g_ref})
    return found


def model_records(scores, qa: Mapping[str, Mapping[str, float]], chance: Mapping[str, float | None],
                  margin: float, unlearned: Sequence[str], target: str = "target",
                  retain_model: str = "retain90", n_items: Mapping[str, Mapping[str, int]] | None = None,
                  min_items: int = 0, transfers: Sequence[str] | None = None,
                  read: Sequence[str] | None = None, scorers: str | None = None) -> list[dict[str, Any]]:
    """For each unlearned model, its numbers (definitions in the package docstring): TOFU's Q&A forget ROUGE-L against
    the halfway threshold (``qa_forgets``), the informative formats that keep forget performance well above the
    retain model's (``kept``), odd-one-out's separation and the suppression in comprehension.
    Formats with fewer than ``min_items`` forget items (``n_items`` as from ``formats.count_items``) are left out,
    as are readouts not in ``transfers`` (when given) and not of ``scorers``; suppression is looked for only in the
    comprehension readouts in ``read`` (when given: those the retain model reads, :func:`passage_reading`)."""
    if target not in scores or retain_model not in scores:
        raise ValueError(f"the records compare against {target!r} and {retain_model!r}; evaluate both "
                         f"(format_models: null does)")
    formats = informative_formats(scores, chance, margin, target, retain_model, n_items, min_items, transfers,
                                  scorers)
    separating = [f for f in separating_formats(scores, chance, margin, target, retain_model, n_items, min_items)
                  if of_scorers(f, scorers)]
    read = None if read is None else [f for f in read if of_scorers(f, scorers)]
    records = []
    for model in unlearned:
        record: dict[str, Any] = {"model": model, **_qa_numbers(qa, model, target, retain_model, margin)}
        record["kept"] = _kept_formats(scores, model, formats, chance, margin, target, retain_model)
        record["separation"] = _separation(scores, model, separating, chance, margin, target, retain_model)
        record["suppression"] = _suppression(scores, model, retain_model, margin, read)
        record["informative_formats"] = list(formats)
        records.append(record)
    return records
