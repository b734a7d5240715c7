"""Notebook 05's plan: the columns, reports and curves its study hands around, and the forget questions it samples."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ...config import Params
from ...metrics.sampling import SampledScores
from ...metrics.scored import evenly_spaced

#: Columns of the summaries shown side by side in the notebook, one list per section.
LEAK_COLUMNS = ["greedy_leak_rate", "leak_rate", "leak_lower_bound_mean", "binary_leak_bound_mean",
                "binary_leak_bound_max", "questions_with_a_leak"]
COUNT_COLUMNS = ["n_questions", "greedy_unlearned", "greedy_unlearned_but_leaks",
                 "greedy_unlearned_but_leaks_above_reference", "flagged_leak_rate_mean", "flagged_leak_lower_max",
                 "flagged_binary_leak_bound_mean", "greedy_unlearned_rouge", "greedy_unlearned_but_leaks_rouge",
                 "flagged_rouge_tail_bound_mean"]
#: Columns of a flagged question and of a keyword question as the notebook shows them.
FLAGGED_COLUMNS = ["question_text", "key", "greedy_answer", "leaks", "leak_lower", "binary_leak_bound"]
KEYWORD_COLUMNS = ["question_text", "keywords", "greedy_answer", "leaks", "leak_lower", "binary_leak_bound"]


class ModelReport(NamedTuple):
    """One model: the per-question table and the summary that goes into metrics.json."""

    table: pd.DataFrame
    summary: dict[str, Any]


class Reports(NamedTuple):
    """Every model's per-question table and summary, by display name."""

    tables: dict[str, pd.DataFrame]
    summaries: dict[str, dict[str, Any]]


class LeakCurves(NamedTuple):
    """General leakage bound curves: M_gen (Q, T) and the empirical tail 1 - F_n (Q, T) at the thresholds (T,)."""

    thresholds: np.ndarray
    upper: np.ndarray
    tail: np.ndarray


class KeywordQA(NamedTuple):
    """A keyword Q&A run: the scored samples, the per-question table and the summary."""

    scores: SampledScores
    table: pd.DataFrame
    summary: dict[str, Any]


class Example(NamedTuple):
    """One forget question and what several models answer to it."""

    question: str
    key: str
    answers: pd.DataFrame  # per model: the greedy answer and the first samples


class FlaggedQuestions(NamedTuple):
    """The questions of one model that greedy decoding calls unlearned while sampling leaks."""

    model: str
    count: int
    table: pd.DataFrame  # the strongest of them, with the retain model's leak count beside


# --------------------------------------------------------------------------- questions and models


def forget_rows(source, params: Params) -> list[dict[str, Any]]:
    """The forget questions of the profile (``forget_split``), at most ``sample_max_items``, evenly spaced."""
    return evenly_spaced(source.load(params.forget_split), params.sample_max_items)
