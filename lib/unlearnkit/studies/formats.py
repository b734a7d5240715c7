"""Joshi et al., "Towards Robust Evaluation of Unlearning via Data Transformations" (docs/metrics.md §6): is a
fact forgotten, or only unsaid in the format unlearning was trained on?

Unlearning is trained and usually judged in the Q&A format. The same forget and retain facts are asked here as
MCQA, cloze, analogy, odd-one-out and comprehension items (:mod:`unlearnkit.data.formats`) and scored
(:mod:`unlearnkit.metrics.formats`, with the option-likelihood readout ``<format>_likelihood`` for models that
cannot read lettered options) for the base, target, retain and unlearned models. The paper's finding is that a
method can look forgotten in Q&A while another format still shows the facts.

The models (:func:`evaluated_models`)
    ``format_models: null`` means base, target, the retain model (the forget-quality reference of the
    fine-tuning notebook) and every unlearning run whose model is saved; a list names models (``target``,
    ``retain90``) or runs (``npo``, the saved ``unlearned-npo``).

The finding (:func:`forgetting_findings`), with ``margin = format_margin``
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
    * The paper's finding holds for a model when Q&A suggests forgetting and at least one format keeps forget
      performance well above the retain model's.
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
    is left out of the verdict, with its numbers (:func:`informative_formats` ``transfers``).

The paper's scorers and ours (:data:`PAPER_SCORERS`, :data:`LIKELIHOOD_SCORERS`)
    The verdict is computed twice: with the paper's own scorers (the lettered answer, the cloze, the
    comprehension answer), the headline, and with the option-likelihood readouts this workbook adds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from .. import config, models, pipeline, runs, workers
from ..claims import JOSHI, NO_TEST, Finding, Quantity, names, outcome_of
from ..data.formats import FORMATS, MCQA_STYLE_FORMATS, format_coverage
from ..data.tofu import TofuSource
from ..metrics import formats as scoring
from ..metrics.formats import FORMAT_SCORING_VERSION, LIKELIHOOD_SUFFIX, FormatScores

__all__ = [
    "SETS",
    "QA_ROWS",
    "FormatEvaluation",
    "FormatVerdicts",
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
    "transfer_text",
    "reading_text",
    "separating_formats",
    "forgetting_findings",
    "unlearned_models",
    "judge",
    "verdicts_text",
    "findings_table",
    "results_meta",
    "example_text",
    "example_model",
    "disagreement_examples",
    "disagreement_rates",
]

SETS = ("forget", "retain")
#: TOFU's own Q&A ROUGE-L, shown beside the formats.
QA_ROWS = "qa_rouge (TOFU)"
#: Formats high when a model knows one set and not the other: a separation, not knowledge (module docstring).
_SEPARATION = ("odd_one_out", "odd_one_out" + LIKELIHOOD_SUFFIX)
#: Formats that give the facts in the context: a forget/retain gap there is suppression, not knowledge.
_COMPREHENSION = ("comprehension_qa", "comprehension_mcqa", "comprehension_mcqa" + LIKELIHOOD_SUFFIX)
#: Which readouts a verdict rests on: Joshi et al.'s own scorers, or the option-likelihood readouts added here.
PAPER_SCORERS = "paper"
LIKELIHOOD_SCORERS = "likelihood"


def _of_scorers(fmt: str, scorers: str | None) -> bool:
    if scorers is None:
        return True
    if scorers not in (PAPER_SCORERS, LIKELIHOOD_SCORERS):
        raise ValueError(f"scorers must be {PAPER_SCORERS!r}, {LIKELIHOOD_SCORERS!r} or None, got {scorers!r}")
    return fmt.endswith(LIKELIHOOD_SUFFIX) == (scorers == LIKELIHOOD_SCORERS)


# =============================================================================================
# The items.
# =============================================================================================


class CoverageReport(NamedTuple):
    """How the real-TOFU heuristics cover the corpus: ``tables`` (cloze span rules, analogy relations) and a
    ``note`` with the shares."""

    tables: list[Any]
    note: str


def heuristic_coverage(source: TofuSource, forget_split: str) -> CoverageReport:
    """:func:`unlearnkit.data.formats.format_coverage` as tables; for the synthetic corpus no table, only the
    reason none is needed."""
    import pandas as pd

    if source.authors() is not None:
        return CoverageReport([], "synthetic corpus: every format is exact by construction (its records say what "
                                  "each answer states)")
    coverage = format_coverage(source, forget_split)
    tables = [pd.DataFrame(coverage["cloze"]).round(3).rename_axis("cloze span rule"),
              pd.DataFrame(coverage["relations"]).T.rename_axis("analogy relation")]
    return CoverageReport(tables, f"author names found {coverage['author_names']:.1%}; rows giving an analogy "
                                  f"triple {coverage['rows_with_triple']:.0%}; evaluation facts that became analogies "
                                  f"{coverage['analogy_fact_share']}")


# =============================================================================================
# The models, each scored once and cached.
# =============================================================================================


def _required(params: config.Params, names: Sequence[str]) -> dict[str, str]:
    """``{name: folder or Hub name}`` of models that must all exist; ``base`` of a Hub-model profile is the Hub
    model itself (never saved)."""
    hub_base = params.model != pipeline.TINY
    found = runs.require_saved(params, [n for n in names if not (n == "base" and hub_base)])
    return {name: params.model if name == "base" and hub_base else str(found[name]) for name in dict.fromkeys(names)}


def evaluated_models(params: Mapping[str, Any], names: Sequence[str] | None) -> dict[str, str]:
    """``{name: folder or Hub name}`` of the models to evaluate, in the order of the figures.

    ``names=None`` (``format_models: null``) means base, target, the retain model and every unlearning run
    (:func:`unlearnkit.runs.saved_models`; a Hub model is its own base); models that are not saved are left
    out with a message, except target and the retain model, without which nothing can be compared. Named
    models must all exist.
    """
    params = config.as_params(params)
    if names is not None:
        return _required(params, names)
    _required(params, ["target", runs.retain_model(params, params.forget_split)])
    saved = runs.saved_models(params, include_base=True, forget_split=params.forget_split)
    found = {name: str(runs.model_dir(params, folder)) for name, folder in saved.items()}
    if "base" not in found and params.model != pipeline.TINY:
        found = {"base": params.model, **found}  # a Hub model is used as it is: never saved
    left_out = [name for name in ("base", *runs.unlearning_runs(params)) if name not in found]
    if left_out:
        print(f"left out (not saved): {', '.join(left_out)}")
    return found


def evaluate_model(name: str, location: str, items_by_format, params: Mapping[str, Any],
                   notebook: str = runs.FORMATS) -> FormatScores:
    """Every format's score of one model (``{format: {set: score}}``) and its per-item rows, cached in the run
    store (the folder of ``notebook``) by the model's identity, the items, the scoring settings and the scoring
    version."""
    params = config.as_params(params)

    def score() -> dict[str, Any]:
        local = Path(location).is_dir()  # a saved model knows its template; a Hub model takes the profile's
        loaded = models.load_model(location, dtype=params.dtype, device="auto",
                                   template=None if local else params.template)
        with models.cpu_threads(loaded.model):
            return scoring.evaluate_formats(loaded.model, loaded.tokenizer, loaded.template, items_by_format,
                                            batch_size=params.eval_batch_size, max_new_tokens=params.max_new_tokens,
                                            likelihood=params.format_likelihood)._asdict()

    depends_on = {"model": runs.model_identity(location), "items": items_by_format,
                  "settings": {k: params[k] for k in ("format_likelihood", "max_new_tokens", "dtype")}}
    stored = runs.cached_json(params, notebook, name, depends_on, score, FORMAT_SCORING_VERSION)
    return FormatScores(**stored)


class FormatEvaluation(NamedTuple):
    """Every model's scores in the metrics.json layout (``{model: {set: {format: score}}}``) and its per-item
    rows (``{model: {format: {set: [row, ...]}}}``)."""

    scores: dict[str, dict[str, dict[str, float]]]
    per_item: dict[str, Any]


def _timed_evaluation(name: str, location: str, items_by_format, params: config.Params) -> tuple[FormatScores, float]:
    started = time.time()
    return evaluate_model(name, location, items_by_format, params), time.time() - started


def evaluate_all(named_models: Mapping[str, str], items_by_format, params: Mapping[str, Any]) -> FormatEvaluation:
    """:func:`evaluate_model` for each model, side by side in up to ``jobs`` worker processes (None: one per core;
    each loads its model and writes its cache entry). Prints the seconds each model took."""
    jobs = config.as_params(params).jobs
    params = config.as_params(params)
    scored = workers.side_by_side(_timed_evaluation, [(name, location, items_by_format, params)
                                                     for name, location in named_models.items()],
                                 jobs, desc="formats")
    scores, per_item = {}, {}
    for name, (result, seconds) in zip(named_models, scored):
        scores[name], per_item[name] = metrics_payload(result.scores), result.per_item
        print(f"{name:>14}: {seconds:5.1f} s")
    return FormatEvaluation(scores, per_item)


def metrics_payload(by_format: Mapping[str, Mapping[str, float | None]]) -> dict[str, dict[str, float]]:
    """``{format: {set: score}}`` -> ``{"forget": {format: score}, "retain": {format: score}}`` (a set without
    items, stored as None, is NaN)."""
    return {s: {fmt: float(np.nan if sets[s] is None else sets[s]) for fmt, sets in by_format.items() if s in sets}
            for s in SETS}


# =============================================================================================
# Tables.
# =============================================================================================


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


# =============================================================================================
# The finding.
# =============================================================================================


def forget_score(scores, model: str, fmt: str) -> float:
    """A model's forget score in one reported format; NaN where it has none."""
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
                        min_items: int = 0, transfers: Sequence[str] | None = None,
                        scorers: str | None = None) -> list[str]:
    """Knowledge formats (neither comprehension nor odd-one-out) with at least ``min_items`` forget items in
    which the target beats the retain model on forget by more than ``margin``: the only formats that can show
    whether an unlearned model kept the facts. With ``transfers`` (:func:`transferring_readouts`), only those
    readouts, and with ``scorers`` only the paper's or only the likelihood readouts."""
    few = set(too_few_items(scores, n_items, min_items))
    return [fmt for fmt in format_order(scores) if fmt not in _COMPREHENSION + _SEPARATION and fmt not in few
            and _transfers(fmt, transfers) and _of_scorers(fmt, scorers)
            and forget_score(scores, target, fmt) - forget_score(scores, retain_model, fmt) > margin]


# =============================================================================================
# Transfer and reading: can the models read a format at all?
# =============================================================================================


def _transfers(readout: str, transfers: Sequence[str] | None) -> bool:
    """Whether a readout is among ``transfers`` (None: no test made); the cloze's span probability goes with its
    greedy fill, the right/wrong readout of the same items."""
    if transfers is None:
        return True
    return readout in transfers or (readout == "cloze" and "cloze_fill" in transfers)


def _per_item_rows(per_item_of_model: Mapping[str, Any], readout: str, set_name: str) -> list[Mapping[str, Any]]:
    key = readout if readout in per_item_of_model else item_format(readout)  # cloze_fill: the cloze's rows
    return list(per_item_of_model.get(key, {}).get(set_name, []))


def _graded(readout: str) -> bool:
    """Readouts scored on a scale per item (span probability, ROUGE), not right/wrong."""
    return readout in ("cloze", "comprehension_qa")


def score_interval(per_item_of_model: Mapping[str, Any], readout: str, set_name: str,
                   confidence: float = 0.95) -> dict[str, float]:
    """A readout's score on one set with its ``confidence`` interval: exact (Clopper-Pearson) for right/wrong
    readouts, Student's t of the mean for graded ones. ``n`` items, ``k`` right (right/wrong readouts)."""
    rows = _per_item_rows(per_item_of_model, readout, set_name)
    if not rows:
        return {"n": 0, "k": None, "score": float("nan"), "low": float("nan"), "high": float("nan")}
    if _graded(readout):
        values = np.array([float(r["score"]) for r in rows])
        mean = float(values.mean())
        half = (float(stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
                if len(values) > 1 else float("inf"))
        return {"n": len(values), "k": None, "score": mean, "low": mean - half, "high": mean + half}
    k = sum(bool(r["correct"]) for r in rows)
    ci = stats.binomtest(k, len(rows)).proportion_ci(confidence, method="exact")
    return {"n": len(rows), "k": k, "score": k / len(rows), "low": float(ci.low), "high": float(ci.high)}


def _p_above(found: Mapping[str, Any], reference: float) -> float:
    """Exact one-sided binomial p-value of ``found`` (k right of n) against the rate ``reference``."""
    return float(stats.binomtest(found["k"], found["n"], reference, alternative="greater").pvalue)


#: The smallest reference rate of a test against the base model (a base that fills no blank would make any
#: success "impossible under the null", p = 0).
_MIN_REFERENCE = 0.01


def transfer_tests(per_item: Mapping[str, Mapping[str, Any]], chance: Mapping[str, float | None],
                   models_tested: Sequence[str], alpha: float, base: str = "base") -> list[dict[str, Any]]:
    """For each right/wrong readout, model and set: the score and an exact one-sided binomial test that it is
    above the readout's chance level (readouts with none, the cloze fill: above the ``base`` model's rate on the
    same set, at least 0.01). Graded readouts (span probability, ROUGE) are left out: ``cloze_fill`` tests the
    cloze. Each row carries the score's exact 95 % interval (``low``, ``high``); ``above`` means p < ``alpha``."""
    rows = []
    for readout in chance:
        if _graded(readout):
            continue
        for set_name in SETS:
            reference, against = chance.get(readout), "chance"
            if reference is None:
                if base not in per_item:
                    continue
                reference, against = max(score_interval(per_item[base], readout, set_name)["score"],
                                         _MIN_REFERENCE), base
            for model in models_tested:
                if model not in per_item:
                    continue
                found = score_interval(per_item[model], readout, set_name)
                if not found["n"]:
                    continue
                p = _p_above(found, reference)
                rows.append({"readout": readout, "set": set_name, "model": model, "n": found["n"], "k": found["k"],
                             "score": found["score"], "low": found["low"], "high": found["high"],
                             "reference": reference, "against": against, "p_value": p, "above": p < alpha})
    return rows


def transfer_table(tests: Sequence[Mapping[str, Any]]):
    """:func:`transfer_tests` as a table: one row per (readout, set), per model its score and p-value."""
    import pandas as pd

    if not tests:
        return pd.DataFrame()
    frame = pd.DataFrame(tests)
    wide = frame.pivot_table(index=["readout", "set", "n", "reference"], columns="model",
                             values=["score", "p_value"], sort=False)
    return wide.swaplevel(axis=1).sort_index(axis=1, level=0, sort_remaining=False)


def transferring_readouts(tests: Sequence[Mapping[str, Any]], model: str = "target") -> list[str]:
    """Readouts in which ``model`` is above its reference on every set tested (forget and retain)."""
    by_readout: dict[str, list[bool]] = {}
    for row in tests:
        if row["model"] == model:
            by_readout.setdefault(row["readout"], []).append(row["above"])
    return [r for r, above in by_readout.items() if len(above) == len(SETS) and all(above)]


def transfer_text(tests: Sequence[Mapping[str, Any]], alpha: float, model: str = "target") -> str:
    """In words: the readouts in which ``model`` is above its reference on forget and retain, and those where it is
    not, with the scores and p-values."""
    transfers = transferring_readouts(tests, model)
    lines = [f"{model} above chance (binomial test, p < {alpha:g}) on forget and retain, so these readouts transfer "
             f"to facts seen only as Q&A: {', '.join(transfers) or 'none'}"]
    for readout in dict.fromkeys(t["readout"] for t in tests if t["model"] == model):
        if readout in transfers:
            continue
        parts = [f"{t['set']} {t['score']:.2f} (n {t['n']}, p {t['p_value']:.2g})" for t in tests
                 if t["model"] == model and t["readout"] == readout]
        reference = next(t for t in tests if t["readout"] == readout)
        against = (f"chance {reference['reference']:.2f}" if reference["against"] == "chance"
                   else f"the {reference['against']} model's rate")
        lines.append(f"  does not transfer: {readout}: " + ", ".join(parts) + f" against {against}")
    return "\n".join(lines)


def reading_text(reading: Mapping[str, Mapping[str, Any]], model: str) -> str:
    """In words: in which comprehension readouts ``model`` (the retain model) reads the passage, with the numbers."""
    lines = []
    for readout, found in reading.items():
        f, r = found["forget"], found["retain"]
        numbers = (f"forget {f['score']:.2f} [{f['low']:.2f}, {f['high']:.2f}], retain {r['score']:.2f} "
                   f"[{r['low']:.2f}, {r['high']:.2f}]")
        if found["reads"]:
            verdict = "reads the passage: a forget/retain gap of an unlearned model here counts as suppression"
        elif not found["agree"]:
            verdict = ("does better on the set it knows, so it answers from memory, not from the passage: "
                       "not counted")
        else:
            verdict = "is not above chance on either set: it reads nothing, not counted"
        lines.append(f"{model} {readout}: {numbers}; {verdict}")
    return "\n".join(lines) or "no comprehension readout scored"


def passage_reading(per_item_of_model: Mapping[str, Any], chance: Mapping[str, float | None], alpha: float,
                    confidence: float = 0.95) -> dict[str, dict[str, Any]]:
    """For each comprehension readout of a model (the retain model): does it read the passage? Its forget and
    retain scores must each lie inside the other's ``confidence`` interval (the facts are in the context, so
    knowing one set's authors must not matter) and, where the readout has a chance level, be above it at
    ``alpha`` on both sets (exact binomial test; one-sided t-test of the mean ROUGE for comprehension Q&A): a model
    at chance on both sets reads nothing, though its two scores agree."""
    found = {}
    for readout in _COMPREHENSION:
        forget, retain = (score_interval(per_item_of_model, readout, s, confidence) for s in SETS)
        if not forget["n"] or not retain["n"]:
            continue
        agree = retain["low"] <= forget["score"] <= retain["high"] and forget["low"] <= retain["score"] <= forget["high"]
        level = chance.get(readout)
        if level is None:
            above = True
        elif _graded(readout):  # one-sided t-test of the mean score against the chance level
            above = all(float(stats.ttest_1samp([float(r["score"]) for r in _per_item_rows(per_item_of_model,
                                                 readout, s)], level, alternative="greater").pvalue) < alpha
                        for s in SETS)
        else:
            above = all(_p_above(x, level) < alpha for x in (forget, retain))
        found[readout] = {"reads": bool(agree and above), "agree": bool(agree), "above_chance": bool(above),
                          "forget": forget, "retain": retain}
    return found


def separating_formats(scores, chance: Mapping[str, float | None], margin: float, target: str = "target",
                       retain_model: str = "retain90", n_items: Mapping[str, Mapping[str, int]] | None = None,
                       min_items: int = 0) -> list[str]:
    """Odd-one-out formats in which the retain model tells forget from retain facts apart (more than ``margin``
    above chance and above the target): only there does an unlearned model's separation mean something."""
    few = set(too_few_items(scores, n_items, min_items))
    found = []
    for fmt in format_order(scores):
        t, r = forget_score(scores, target, fmt), forget_score(scores, retain_model, fmt)
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
    for fmt in (_COMPREHENSION if read is None else [f for f in _COMPREHENSION if f in read]):
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
                        min_items: int = 0, transfers: Sequence[str] | None = None,
                        read: Sequence[str] | None = None, scorers: str | None = None) -> list[dict[str, Any]]:
    """For each unlearned model, whether Q&A suggests forgetting while some format keeps forget performance
    well above the retain model's (definitions in the module docstring), with the numbers and a ``statement``.
    Formats with fewer than ``min_items`` forget items (``n_items`` as from ``formats.count_items``) are left out,
    as are readouts not in ``transfers`` (when given) and not of ``scorers``; suppression is looked for only in the
    comprehension readouts in ``read`` (when given: those the retain model reads, :func:`passage_reading`)."""
    if target not in scores or retain_model not in scores:
        raise ValueError(f"the finding compares against {target!r} and {retain_model!r}; evaluate both "
                         f"(format_models: null does)")
    formats = informative_formats(scores, chance, margin, target, retain_model, n_items, min_items, transfers,
                                  scorers)
    separating = [f for f in separating_formats(scores, chance, margin, target, retain_model, n_items, min_items)
                  if _of_scorers(f, scorers)]
    read = None if read is None else [f for f in read if _of_scorers(f, scorers)]
    findings = []
    for model in unlearned:
        finding: dict[str, Any] = {"model": model, **_qa_verdict(qa, model, target, retain_model, margin)}
        finding["kept"] = _kept_formats(scores, model, formats, chance, margin, target, retain_model)
        finding["separation"] = _separation(scores, model, separating, chance, margin, target, retain_model)
        finding["suppression"] = _suppression(scores, model, retain_model, margin, read)
        finding["paper_finding"] = bool(finding["qa_forgets"]) and bool(finding["kept"])
        finding["informative_formats"] = list(formats)
        finding["statement"] = _statement(finding, margin, formats)
        findings.append(finding)
    return findings


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


def results_meta(named_models: Mapping[str, str], retain_model: str, chance: Mapping[str, float | None],
                 n_items: Mapping[str, Mapping[str, int]], verdicts: FormatVerdicts,
                 qa: Mapping[str, Mapping[str, float]], transfer: Sequence[Mapping[str, Any]] | None = None,
                 reading: Mapping[str, Any] | None = None,
                 likelihood_verdicts: FormatVerdicts | None = None) -> dict[str, Any]:
    """What metrics.json records beside the scores: the models, the references and the finding (``verdicts``,
    the paper's scorers), the transfer tests, the retain model's reading of the passages and the finding by the
    likelihood readouts."""
    meta = {"models": dict(named_models), "retain_model": retain_model, "chance": dict(chance),
            "n_items": dict(n_items), "informative_formats": verdicts.informative, "too_few_items": verdicts.too_few,
            "qa_rouge": dict(qa), "per_model": verdicts.findings,
            "findings": [f.as_dict() for f in findings(verdicts)]}
    if verdicts.scorers is not None:
        meta.update(scorers=verdicts.scorers, not_transferring=verdicts.not_transferring, unread=verdicts.unread)
    if transfer is not None:
        meta["transfer"] = list(transfer)
    if reading is not None:
        meta["passage_reading"] = dict(reading)
    if likelihood_verdicts is not None:
        meta["likelihood"] = {"informative_formats": likelihood_verdicts.informative,
                              "not_transferring": likelihood_verdicts.not_transferring,
                              "unread": likelihood_verdicts.unread, "per_model": likelihood_verdicts.findings}
    return meta


def findings(verdicts: FormatVerdicts) -> list[Finding]:
    """Joshi et al.'s finding on this run, as data: of the models that look unlearned in Q&A, those for which
    another (informative) format still recalls the forget facts. Holds when it does for every such model, partly for
    some, fails for none; no test when no model looks unlearned in Q&A."""
    tested = [f for f in verdicts.findings if f["qa_forgets"]]
    held = [f["model"] for f in tested if f["paper_finding"]]
    not_forgetting = [f["model"] for f in verdicts.findings if not f["qa_forgets"]]
    left_out = (f"; left out, the target cannot read them (no transfer from Q&A): {names(verdicts.not_transferring)}"
                if verdicts.not_transferring else "")
    scorers = " (the paper's scorers)" if verdicts.scorers == PAPER_SCORERS else ""
    text = (f"of {len(tested)} models that look unlearned in Q&A, another format still recalls the facts for "
            f"{names(held)}; informative formats{scorers}: {names(verdicts.informative)}{left_out}; not unlearned in "
            f"Q&A (no test): {names(not_forgetting)}")
    share = len(held) / len(tested) if tested else None
    quantities = (Quantity("share of Q&A-unlearned models recalled in another format", share, 1.0, ">=",
                           "every such model"),
                  Quantity("models that look unlearned in Q&A", len(tested), fmt=".0f"),
                  Quantity("informative formats", len(verdicts.informative), fmt=".0f"))
    outcome = outcome_of(len(held), len(tested)) if verdicts.informative else NO_TEST
    return [Finding(runs.FORMATS, JOSHI, "a model that looks unlearned in Q&A still answers the same facts in "
                    "another format", text, outcome, f"{runs.FORMATS}_kept", "other formats", quantities,
                    tuple((f["model"], bool(f["paper_finding"])) for f in tested))]


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


def example_model(findings: Sequence[Mapping[str, Any]], unlearned: Sequence[str]) -> str:
    """The model whose disagreements to show: the first where the paper's finding holds, else the first
    unlearned model, else the target."""
    return next((f["model"] for f in findings if f["paper_finding"]), unlearned[0] if unlearned else "target")


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
                          model: str | None = None, set_name: str = "forget", rouge_threshold: float = 0.5,
                          n: int = 8):
    """Facts of ``set_name`` on which the given formats disagree for one model (right in some, wrong in others),
    with TOFU's Q&A verdict beside them (ROUGE-L recall at least ``rouge_threshold``) when ``params`` and
    ``model`` find it. Cloze counts its greedy fill (``cloze_fill``)."""
    import pandas as pd

    chosen = _chosen_rows(per_item_of_model, formats, set_name)
    rows = scoring.disagreement_table(chosen, rouge_threshold=rouge_threshold)
    qa = _qa_rows(params, model) if params is not None and model else None
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
