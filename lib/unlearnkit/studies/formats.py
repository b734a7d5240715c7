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
      more than the margin is reported as suppression.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .. import config, models, pipeline, runs
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


def _required(profile: str, params: config.Params, names: Sequence[str]) -> dict[str, str]:
    """``{name: folder or Hub name}`` of models that must all exist; ``base`` of a Hub-model profile is the Hub
    model itself (never saved)."""
    hub_base = params.model != pipeline.TINY
    found = runs.require_saved(profile, [n for n in names if not (n == "base" and hub_base)])
    return {name: params.model if name == "base" and hub_base else str(found[name]) for name in dict.fromkeys(names)}


def evaluated_models(profile: str, params: Mapping[str, Any], names: Sequence[str] | None) -> dict[str, str]:
    """``{name: folder or Hub name}`` of the models to evaluate, in the order of the figures.

    ``names=None`` (``format_models: null``) means base, target, the retain model and every unlearning run
    (:func:`unlearnkit.runs.saved_models`; a Hub model is its own base); models that are not saved are left
    out with a message, except target and the retain model, without which nothing can be compared. Named
    models must all exist.
    """
    params = config.as_params(params)
    if names is not None:
        return _required(profile, params, names)
    _required(profile, params, ["target", runs.retain_model(profile, params.forget_split)])
    saved = runs.saved_models(profile, include_base=True, forget_split=params.forget_split)
    found = {name: str(runs.model_dir(profile, folder)) for name, folder in saved.items()}
    if "base" not in found and params.model != pipeline.TINY:
        found = {"base": params.model, **found}  # a Hub model is used as it is: never saved
    left_out = [name for name in ("base", *runs.unlearning_runs(profile)) if name not in found]
    if left_out:
        print(f"left out (not saved): {', '.join(left_out)}")
    return found


def evaluate_model(name: str, location: str, items_by_format, params: Mapping[str, Any],
                   profile: str) -> FormatScores:
    """Every format's score of one model (``{format: {set: score}}``) and its per-item rows, cached in the run
    store by the model's identity, the items, the scoring settings and the scoring version."""
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
    stored = runs.cached_json(profile, runs.FORMATS, name, depends_on, score, FORMAT_SCORING_VERSION)
    return FormatScores(**stored)


class FormatEvaluation(NamedTuple):
    """Every model's scores in the metrics.json layout (``{model: {set: {format: score}}}``) and its per-item
    rows (``{model: {format: {set: [row, ...]}}}``)."""

    scores: dict[str, dict[str, dict[str, float]]]
    per_item: dict[str, Any]


def evaluate_all(named_models: Mapping[str, str], items_by_format, params: Mapping[str, Any],
                 profile: str) -> FormatEvaluation:
    """:func:`evaluate_model` for each model, one loaded at a time. Prints the seconds each model took."""
    scores, per_item = {}, {}
    for name, location in named_models.items():
        started = time.time()
        result = evaluate_model(name, location, items_by_format, params, profile)
        scores[name], per_item[name] = metrics_payload(result.scores), result.per_item
        print(f"{name:>14}: {time.time() - started:5.1f} s")
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
    """TOFU's Q&A ROUGE-L recall on forget and retain of each model: the fine-tuning notebook's for base, target
    and retain models, each unlearning run's own. Models with no such result are left out."""
    found = {}
    try:
        finetuning = runs.read_metrics(profile, runs.FINETUNE)
    except FileNotFoundError:
        finetuning = {}
    unlearning = runs.unlearning_runs(profile)
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
                        min_items: int = 0) -> list[str]:
    """Knowledge formats (neither comprehension nor odd-one-out) with at least ``min_items`` forget items in
    which the target beats the retain model on forget by more than ``margin``: the only formats that can show
    whether an unlearned model kept the facts."""
    few = set(too_few_items(scores, n_items, min_items))
    return [fmt for fmt in format_order(scores) if fmt not in _COMPREHENSION + _SEPARATION and fmt not in few
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


def unlearned_models(named_models: Sequence[str], retain_model: str) -> list[str]:
    """The evaluated models that unlearning made: all but base, target and the retain model."""
    return [m for m in named_models if m not in ("base", "target", retain_model)]


class FormatVerdicts(NamedTuple):
    """The finding for every unlearned model, with the formats it rests on."""

    informative: list[str]  # the formats that can show kept knowledge
    too_few: list[str]  # formats shown but not counted: fewer than format_min_items forget items
    findings: list[dict[str, Any]]  # one per unlearned model (forgetting_findings)
    min_items: int


def judge(scores, qa: Mapping[str, Mapping[str, float]], chance: Mapping[str, float | None],
          n_items: Mapping[str, Mapping[str, int]], unlearned: Sequence[str], retain_model: str, margin: float,
          min_items: int) -> FormatVerdicts:
    """The paper's finding for each unlearned model against the target and the retain model (``margin`` is
    ``format_margin``, ``min_items`` ``format_min_items``)."""
    return FormatVerdicts(
        informative=informative_formats(scores, chance, margin, "target", retain_model, n_items, min_items),
        too_few=too_few_items(scores, n_items, min_items),
        findings=forgetting_findings(scores, qa, chance, margin, unlearned, "target", retain_model, n_items,
                                     min_items),
        min_items=min_items)


def verdicts_text(verdicts: FormatVerdicts) -> str:
    """The informative formats, those not counted, and each unlearned model's statement."""
    lines = [f"informative formats: {', '.join(verdicts.informative) or 'none'}",
             f"shown, not counted (fewer than {verdicts.min_items} forget items): "
             f"{', '.join(verdicts.too_few) or 'none'}", ""]
    return "\n".join(lines + [finding["statement"] + "\n" for finding in verdicts.findings])


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
                 qa: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """What metrics.json records beside the scores: the models, the references and the finding."""
    return {"models": dict(named_models), "retain_model": retain_model, "chance": dict(chance),
            "n_items": dict(n_items), "informative_formats": verdicts.informative, "too_few_items": verdicts.too_few,
            "qa_rouge": dict(qa), "findings": verdicts.findings}


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


def _qa_rows(profile: str, model: str) -> list[float] | None:
    """Per-item TOFU Q&A ROUGE-L recall on forget (fine-tuning or unlearning notebook), in the rows order of the
    formats' source."""
    for notebook in (runs.FINETUNE, runs.unlearning_notebook(model)):
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
