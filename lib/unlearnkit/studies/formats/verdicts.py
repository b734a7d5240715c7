"""The verdicts: the finding for every unlearned model with the formats it rests on (:func:`judge`), in words and
as a table (printed by notebook 04), and what metrics.json records beside the scores: numbers and identifiers only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .finding import forgetting_findings, informative_formats, too_few_items
from .readouts import _COMPREHENSION, _SEPARATION, _of_scorers
from .tables import format_order
from .transfer import _graded


def unlearned_models(named_models: Sequence[str], retain_model: str) -> list[str]:
    """The evaluated models that unlearning made: all but base, target and the retain model."""
    return [m for m in named_models if m not in ("base", "target", retain_model)]


class FormatVerdicts(NamedTuple):
    """The finding for every unlearned model, with the formats it rests on."""

    informative: list[str]  # the formats that can show kept knowledge
    too_few: list[str]  # formats shown but not counted: fewer than format_min_items forget items
    findings: list[dict[str, Any]]  # one per unlearned model (forgetting_findings)
    min_items: int
    scorers: str | None = None  # PAPER_SCORERS, LIKELIHOOD_SCORERS or None (every readout)
    not_transferring: Sequence[str] = ()  # knowledge readouts left out: the target is not above chance in them
    unread: Sequence[str] = ()  # comprehension readouts left out: the retain model does not read the passage


def judge(scores, qa: Mapping[str, Mapping[str, float]], chance: Mapping[str, float | None],
          n_items: Mapping[str, Mapping[str, int]], unlearned: Sequence[str], retain_model: str, margin: float,
          min_items: int, transfers: Sequence[str] | None = None, read: Sequence[str] | None = None,
          scorers: str | None = None) -> FormatVerdicts:
    """The paper's finding for each unlearned model against the target and the retain model (``margin`` is
    ``format_margin``, ``min_items`` ``format_min_items``; ``transfers``, ``read`` and ``scorers`` as in
    :func:`forgetting_findings`)."""
    knowledge = [f for f in format_order(scores) if f not in _COMPREHENSION + _SEPARATION and _of_scorers(f, scorers)]
    comprehension = [f for f in _COMPREHENSION if f in format_order(scores) and _of_scorers(f, scorers)]
    return FormatVerdicts(
        informative=informative_formats(scores, chance, margin, "target", retain_model, n_items, min_items,
                                        transfers, scorers),
        too_few=[f for f in too_few_items(scores, n_items, min_items) if _of_scorers(f, scorers)],
        findings=forgetting_findings(scores, qa, chance, margin, unlearned, "target", retain_model, n_items,
                                     min_items, transfers, read, scorers),
        min_items=min_items, scorers=scorers,
        not_transferring=[] if transfers is None else [f for f in knowledge if not _graded(f) and f not in transfers],
        unread=[] if read is None else [f for f in comprehension if f not in read])


def verdicts_text(verdicts: FormatVerdicts) -> str:
    """The informative formats, those not counted, and each unlearned model's statement."""
    lines = [f"informative formats: {', '.join(verdicts.informative) or 'none'}",
             f"shown, not counted (fewer than {verdicts.min_items} forget items): "
             f"{', '.join(verdicts.too_few) or 'none'}"]
    if verdicts.not_transferring:
        lines.append("left out, the target is not above chance on forget and retain (no transfer): "
                     + ", ".join(verdicts.not_transferring))
    if verdicts.unread:
        lines.append("comprehension not counted, the retain model does not read the passage: "
                     + ", ".join(verdicts.unread))
    return "\n".join(lines + [""] + [finding["statement"] + "\n" for finding in verdicts.findings])


def findings_table(findings: Sequence[Mapping[str, Any]]):
    """One row per unlearned model: the Q&A verdict and the formats that keep forget performance."""
    import pandas as pd

    rows = [{"model": f["model"], "qa_forget_rouge": f.get("qa_rouge", np.nan), "qa_forgets": f["qa_forgets"],
             "formats_keeping_forget": ", ".join(k["format"] for k in f["kept"]) or "-",
             "separates_forget_from_retain": ", ".join(s["format"] for s in f["separation"] if s["separates"]) or "-",
             "suppression": ", ".join(s["format"] for s in f["suppression"]) or "-",
             "paper_finding": f["paper_finding"]} for f in findings]
    return pd.DataFrame(rows).set_index("model")


#: What each unlearned model's record says in words or as the paper's finding (:func:`forgetting_findings`): shown by
#: notebook 04, never stored (results hold numbers and identifiers only).
NOT_STORED = ("statement", "qa_reason", "paper_finding")


def stored(per_model: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each unlearned model's record as metrics.json keeps it: its numbers and the formats it names, no text."""
    return [{k: v for k, v in f.items() if k not in NOT_STORED} for f in per_model]


def results_meta(named_models: Mapping[str, str], retain_model: str, chance: Mapping[str, float | None],
                 n_items: Mapping[str, Mapping[str, int]], verdicts: FormatVerdicts,
                 qa: Mapping[str, Mapping[str, float]], transfer: Sequence[Mapping[str, Any]] | None = None,
                 reading: Mapping[str, Any] | None = None,
                 likelihood_verdicts: FormatVerdicts | None = None) -> dict[str, Any]:
    """What metrics.json records beside the scores: the models, the references and each unlearned model's numbers
    (``verdicts``, the paper's scorers; :func:`stored`), the transfer tests, the retain model's reading of the
    passages and the same numbers by the likelihood readouts."""
    meta = {"models": dict(named_models), "retain_model": retain_model, "chance": dict(chance),
            "n_items": dict(n_items), "informative_formats": verdicts.informative, "too_few_items": verdicts.too_few,
            "qa_rouge": dict(qa), "per_model": stored(verdicts.findings)}
    if verdicts.scorers is not None:
        meta.update(scorers=verdicts.scorers, not_transferring=verdicts.not_transferring, unread=verdicts.unread)
    if transfer is not None:
        meta["transfer"] = list(transfer)
    if reading is not None:
        meta["passage_reading"] = dict(reading)
    if likelihood_verdicts is not None:
        meta["likelihood"] = {"informative_formats": likelihood_verdicts.informative,
                              "not_transferring": likelihood_verdicts.not_transferring,
                              "unread": likelihood_verdicts.unread, "per_model": stored(likelihood_verdicts.findings)}
    return meta
