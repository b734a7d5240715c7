"""Joshi et al., "Towards Robust Evaluation of Unlearning via Data Transformations" (docs/metrics.md §6): is a
fact forgotten, or only unsaid in the format unlearning was trained on?

Unlearning is trained and usually judged in the Q&A format. The same forget and retain facts are asked here as
MCQA, cloze, analogy, odd-one-out and comprehension items (:mod:`unlearnkit.data.formats`) and scored
(:mod:`unlearnkit.metrics.formats`, with the option-likelihood readout ``<format>_likelihood`` for models that
cannot read lettered options) for the base, target, retain and unlearned models. The paper's claim is that a
method can look forgotten in Q&A while another format still shows the facts.

The models (:func:`evaluated_models`)
    ``format_models: null`` means base, target, the retain model (the forget-quality reference of the
    fine-tuning notebook) and every unlearning run whose model is saved; a list names models (``target``,
    ``retain90``) or runs (``npo``, the saved ``unlearned-npo``).

The numbers per unlearned model (:func:`model_records`), with ``margin = format_margin``
    * Q&A suggests forgetting when the unlearned model's TOFU forget ROUGE-L recall is at most halfway from
      the target's down to the retain model's, and the target beats the retain model by more than the margin
      (otherwise the Q&A cannot tell).
    * A format can reveal kept knowledge only if it separates the target from the retain model on forget by
      more than the margin (formats where even the target is at chance say nothing): the *informative* formats.
    * Such a format keeps forget performance **well above** the retain model's when the unlearned model's
      forget score exceeds the retain model's by more than the margin and, for MCQA-style formats, exceeds
      chance by more than the margin too.
    * Odd-one-out is not a knowledge format: it is high when a model knows one set and not the other (the
      retain model), and at chance both when it knows every fact (the target) and when it knows none (a
      collapsed model). It is reported on its own: where the retain model scores more than the margin above
      chance and above the target, an unlearned model *separates* forget from retain facts when it, too,
      scores more than the margin above chance.
    * The paper's claim is about a model for which Q&A suggests forgetting and at least one format keeps forget
      performance well above the retain model's; the registered claims (:mod:`unlearnkit.claims`) judge it.
    * A format with fewer than ``format_min_items`` forget items is shown but never counts as evidence, either
      way: a margin of 0.1 is within the noise of a handful of items.
    * Comprehension formats put the facts in the context, so they never count as keeping knowledge: a model
      should do as well on forget as on retain there, and a forget/retain gap wider than the retain model's by
      more than the margin is reported as suppression, but only in a comprehension readout the retain model
      reads (:func:`passage_reading`: its forget and retain scores each inside the other's confidence interval,
      and above chance by the binomial test where there is a chance level). A retain model that does better on
      the authors it knows is answering from memory, not from the passage, and a gap there says nothing.

Transfer (:func:`transfer_tests`, before unlearning)
    The fictitious authors are learned only as Q&A, so a format can show anything only if the skill of reading it
    carries over to facts seen only as Q&A. For each readout with a yes/no score per item, base, target and retain
    model are tested against chance on forget and on retain by an exact one-sided binomial test (readouts with no
    chance level, the cloze fill, against the base model's rate: a model that never saw the authors). A readout
    *transfers* when the target is above its reference with p < ``format_alpha`` on both sets; one that does not
    is left out of the records, with its numbers (:func:`informative_formats` ``transfers``).

The paper's scorers and ours (:data:`PAPER_SCORERS`, :data:`LIKELIHOOD_SCORERS`)
    The records are computed twice: with the paper's own scorers (the lettered answer, the cloze, the
    comprehension answer), the headline, and with the option-likelihood readouts this workbook adds.

The modules, one job each, by the studies' one scheme (docs/design.md, [9]): :mod:`.measures` (the models, each
scored in every format and cached), :mod:`.tables` (what the notebook shows), :mod:`.records` (what metrics.json keeps),
and by the paper's concept :mod:`.readouts` (the sets, the scorers, the non-knowledge formats), :mod:`.items` (the
heuristics' coverage), :mod:`.transfer` (transfer and reading), :mod:`.suppression` (the definitions above: the
informative formats, and which formats keep, separate or suppress forget performance) and :mod:`.examples`
(examples and disagreements).
"""

from __future__ import annotations

from .examples import disagreement_examples, disagreement_rates, example_model, example_text
from .items import CoverageReport, heuristic_coverage
from .measures import (
    FormatEvaluation,
    evaluate_all,
    evaluate_model,
    evaluated_models,
    metrics_payload,
)
from .readouts import LIKELIHOOD_SCORERS, PAPER_SCORERS, QA_ROWS, SETS, item_format
from .records import (
    FormatRecords,
    format_records,
    per_model_table,
    results_meta,
    unlearned_models,
)
from .suppression import (
    forget_score,
    informative_formats,
    model_records,
    separating_formats,
    too_few_items,
)
from .tables import chance_levels, format_order, qa_rouge, scores_table
from .transfer import (
    passage_reading,
    score_interval,
    transfer_table,
    transfer_tests,
    transferring_readouts,
)

__all__ = [
    "SETS",
    "QA_ROWS",
    "FormatEvaluation",
    "FormatRecords",
    "CoverageReport",
    "PAPER_SCORERS",
    "LIKELIHOOD_SCORERS",
    "heuristic_coverage",
    "evaluated_models",
    "evaluate_model",
    "evaluate_all",
    "metrics_payload",
    "chance_levels",
    "format_order",
    "qa_rouge",
    "scores_table",
    "forget_score",
    "item_format",
    "too_few_items",
    "informative_formats",
    "score_interval",
    "transfer_tests",
    "transfer_table",
    "transferring_readouts",
    "passage_reading",
    "separating_formats",
    "model_records",
    "unlearned_models",
    "format_records",
    "per_model_table",
    "results_meta",
    "example_text",
    "example_model",
    "disagreement_examples",
    "disagreement_rates",
]
