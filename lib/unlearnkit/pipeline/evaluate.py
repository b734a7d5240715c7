"""TOFU's metrics and open-unlearning's memorisation and privacy metrics of several models, and the tables notebooks
01 and 02 show."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from .. import runs, stations
from ..config import Params
from ..data.tofu import (
    TofuDataError,
    TofuSource,
    holdout_split_for,
)
from ..metrics import privacy as privacy_metrics
from ..metrics.tofu import evaluate_tofu, forget_quality, ks_statistic


def evaluate_models(named_models: Mapping[str, tuple], params: Params, source: TofuSource,
                    reference: str | None = None, reference_ratios: list[float] | None = None,
                    privacy: bool | Mapping[str, Any] = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """TOFU metrics of several models on the profile's forget split, retain, real authors and world facts.

    ``named_models`` maps a name to a loaded model (``(model, tokenizer, template)``). ``reference`` names the
    retain model whose forget truth ratios every model's forget quality is tested against; it is evaluated
    first. ``reference_ratios`` gives those ratios directly instead (read from notebook 01's ``per_item.json``).
    ``privacy`` adds open-unlearning's memorisation and privacy metrics to each summary (:func:`evaluate_privacy`):
    True scores the ``reference`` model among them, a mapping gives the retain model's stored per-item scores.
    """
    order = ([reference] if reference else []) + [n for n in named_models if n != reference]
    results: dict[str, Any] = {}
    per_item: dict[str, Any] = {}
    for name in tqdm(order, desc="evaluate", disable=not stations.show_progress()):
        model, tokenizer, template = named_models[name][:3]
        with stations.step(f"TOFU metrics of {name}"):
            results[name], per_item[name] = evaluate_tofu(
                model, tokenizer, template, source, forget_split=params.forget_split, max_items=params.eval_max_items,
                batch_size=params.eval_batch_size, max_new_tokens=params.max_new_tokens,
                truth_ratio_guard=params.truth_ratio_guard, answer_tokens=params.answer_tokens)
    ref = per_item[reference]["forget"]["truth_ratio"] if reference else reference_ratios
    if ref is not None:
        for name in order:
            results[name].setdefault("summary", {})["forget_quality"] = forget_quality(
                per_item[name]["forget"]["truth_ratio"], ref)
    if privacy is not False:
        reference_items = privacy if isinstance(privacy, Mapping) else None
        with stations.step("privacy metrics"):
            summaries, items, skipped = evaluate_privacy({n: named_models[n] for n in order}, params, source,
                                                         reference, reference_items)
        for name in order:
            if skipped:
                results[name][PRIVACY_SKIPPED] = skipped
            else:
                results[name].setdefault("summary", {}).update(summaries[name])
                per_item[name][PRIVACY] = items[name]
    return {n: results[n] for n in named_models}, {n: per_item[n] for n in named_models}


#: The scoring options where the workbook and open-unlearning differ (docs/metrics.md §9), with OU's choice of each.
OU_OPTIONS = {"truth_ratio_guard": "ou", "answer_tokens": "ou_joint", "extraction_no_match": "ou",
              "gradnorm_reduction": "ou_mean"}


def scoring_options(params: Params) -> dict[str, str]:
    """The run's value of each scoring option where the workbook and open-unlearning differ, with OU's in brackets:
    what a figure that sits beside an OU table names (``{"truth_ratio_guard": "exact [ou]", ...}``)."""
    return {key: f"{params[key]} [{ou}]" if params[key] != ou else f"{ou} (as OU)" for key, ou in OU_OPTIONS.items()}


#: Where the memorisation and privacy metrics' per-item scores of a model go in ``per_item.json``, and the key
#: of a model's results that says why they were not measured (no holdout split in the data).
PRIVACY, PRIVACY_SKIPPED = "privacy", "privacy_skipped"


def privacy_rows(params: Params, source: TofuSource) -> tuple[list[dict], list[dict]]:
    """The forget split's Q&A and its matched holdout split (authors no model trained on), at most
    ``eval_max_items`` each, as open-unlearning's membership-inference metrics read them (docs/metrics.md §9).
    Raises :class:`TofuDataError` naming what to download when the data has no holdout split."""
    holdout = holdout_split_for(params.forget_split)
    return (source.load(params.forget_split, limit=params.eval_max_items),
            source.load(holdout, limit=params.eval_max_items))


def privacy_scores(loaded: tuple, params: Params, rows: tuple[list[dict], list[dict]]
                   ) -> dict[str, dict[str, list[float]]]:
    """Per-item memorisation and membership-inference scores of one model on forget and holdout rows."""
    model, tokenizer, template = loaded[:3]
    settings = {"k": params.mia_k, "batch_size": params.eval_batch_size, "gradnorm": params.mia_gradnorm,
                "gradnorm_reduction": params.gradnorm_reduction, "extraction_no_match": params.extraction_no_match,
                "answer_tokens": params.answer_tokens}
    return {part: {key: [float(v) for v in values] for key, values in
                   privacy_metrics.item_scores(model, tokenizer, template, part_rows, **settings).items()}
            for part, part_rows in zip(("forget", "holdout"), rows)}


def privacy_of(items: Mapping[str, Mapping[str, Sequence[float]]],
               reference_items: Mapping[str, Mapping[str, Sequence[float]]] | None = None) -> dict[str, float]:
    """open-unlearning's summary of one model from per-item scores: exact memorisation and extraction strength on
    forget, every attack's AUC of forget against holdout and privleak. ``reference_items`` are the retain model's
    scores: the Reference attack subtracts its losses, and privleak is taken against its MinK AUC (against 0.5,
    open-unlearning's value without a retain model, when it is not given)."""
    import numpy as np

    as_arrays = lambda part: {k: np.asarray(v, dtype=float) for k, v in part.items()}  # noqa: E731
    forget, holdout = as_arrays(items["forget"]), as_arrays(items["holdout"])
    if reference_items is None:
        return privacy_metrics.privacy_summary(forget, holdout)
    ref_forget, ref_holdout = as_arrays(reference_items["forget"]), as_arrays(reference_items["holdout"])
    retain_auc = privacy_metrics.attack_auc(ref_forget["mink"], ref_holdout["mink"])
    return privacy_metrics.privacy_summary(forget, holdout, ref_forget, ref_holdout, retain_auc=retain_auc)


def evaluate_privacy(named_models: Mapping[str, tuple], params: Params, source: TofuSource,
                     reference: str | None = None, reference_items: Mapping[str, Any] | None = None
                     ) -> tuple[dict[str, dict[str, float]], dict[str, Any], str | None]:
    """open-unlearning's memorisation and privacy metrics of several models (docs/metrics.md §9): summaries,
    per-item scores and, when the data has no holdout split, the reason they were skipped (printed, never faked).

    ``reference`` names the retain model among ``named_models`` (notebook 01), ``reference_items`` gives its stored
    per-item scores instead (notebook 02). The retain model itself is scored against AUC 0.5, as open-unlearning
    scores a model without a reference; every other model against the retain model's AUC."""
    try:
        rows = privacy_rows(params, source)
    except TofuDataError as error:
        reason = f"privacy metrics skipped: {error}"
        print(reason)
        return {}, {}, reason
    items = {name: privacy_scores(loaded, params, rows)
             for name, loaded in tqdm(named_models.items(), desc="privacy", disable=not stations.show_progress())}
    if reference is not None:
        reference_items = items[reference]
    summaries = {name: privacy_of(items[name], None if name == reference else reference_items) for name in items}
    return summaries, items, None


def results_table(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> pd.DataFrame:
    """A tidy DataFrame: one row per (model, split), a column per metric."""
    rows = [{"model": m, "split": s, **dict(metrics)} for m, splits in results.items()
            for s, metrics in splits.items() if s != "summary" and isinstance(metrics, Mapping)]
    return pd.DataFrame(rows).set_index(["model", "split"])


def summary_table(results: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame({m: r.get("summary", {}) for m, r in results.items()}).T


def answers_side_by_side(per_item: Mapping[str, Any], source: TofuSource, split_role: str, file: str,
                         n: int = 5, max_items: int | None = None) -> pd.DataFrame:
    """Ground truth next to each model's greedy answer for the first ``n`` items of a split."""
    rows = source.load(file, limit=max_items)[:n]
    table = {"question": [r["question"] for r in rows], "ground truth": [r["answer"] for r in rows]}
    for name, items in per_item.items():
        table[name] = items[split_role]["generated"][:n]
    return pd.DataFrame(table)


def unlearning_comparison(params: Params) -> pd.DataFrame:
    """One row per unlearning run (plus the target and retain models of notebook 01): forget quality, model
    utility, forget ROUGE, forget probability and truth ratio, and open-unlearning's privleak, extraction strength,
    exact memorisation and membership-inference AUCs where they were measured: open-unlearning's TOFU summary."""
    rows = []
    first = runs.read_metrics(params, runs.FINETUNE)
    reference = first["meta"].get("forget_quality_reference")
    for name in ("target", reference):
        if name in first:
            rows.append(_comparison_row(name, first[name], "notebook 01"))
    for run, metrics in runs.unlearning_runs(params).items():
        if run in metrics:
            rows.append(_comparison_row(run, metrics[run], metrics["meta"].get("settings", {}).get("method", run)))
    return pd.DataFrame(rows).set_index("model")


def last_unlearning_run(params: Params) -> str:
    """The profile's last unlearning run (``methods``): the runner runs its notebook-02 page after every other run
    has finished, so that page, and only it, compares them all (the others would show whichever runs happened to
    finish first)."""
    if not params.methods:
        raise ValueError(f"profile {params.profile!r} lists no unlearning methods")
    return params.methods[-1]


def unlearning_trajectories(params: Params) -> dict[str, list]:
    """``{run: trajectory}`` of every unlearning run stored so far: forget ROUGE-L at each kept step
    (:func:`forget_rouge_along`, kept in the run's ``per_item.json``); empty for a run stored without one."""
    return {run: runs.read_per_item(params, runs.unlearning_notebook(run)).get("trajectory", [])
            for run in runs.unlearning_runs(params)}


#: open-unlearning's memorisation and privacy columns of the comparison (docs/metrics.md §9), where measured.
OU_COLUMNS = ("privleak", "extraction_strength", "exact_memorisation", "mia_loss_auc", "mia_zlib_auc", "mia_mink_auc",
              "mia_minkpp_auc", "mia_gradnorm_auc", "mia_reference_auc")


#: The columns of open-unlearning's TOFU summary, in its order (configs/eval/tofu.yaml), then the MIA AUCs.
OU_SUMMARY = ("forget_quality", "model_utility", "forget_probability", "forget_rouge", "forget_truth_ratio",
              *OU_COLUMNS)


def ou_summary_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """open-unlearning's TOFU summary of every model of :func:`unlearning_comparison` (the columns it has)."""
    return comparison[[c for c in OU_SUMMARY if c in comparison.columns]]


def _comparison_row(name: str, m: Mapping[str, Any], kind: str) -> dict[str, Any]:
    row = {"model": name, "kind": kind, "forget_quality": m["summary"].get("forget_quality"),
           "model_utility": m["summary"].get("model_utility"), "forget_rouge": m["forget"]["rouge"],
           "forget_probability": m["forget"]["probability"], "forget_truth_ratio": m["forget"]["truth_ratio"],
           "retain_rouge": m["retain"]["rouge"]}
    row.update({column: m["summary"][column] for column in OU_COLUMNS if column in m["summary"]})
    return row


# --------------------------------------------------------------------------- matched forgetting (notebook 02)

#: Where the matched level lies between the target's forget ROUGE-L and the retain model's (halfway).
MATCHED_SHARE = 0.5


def matched_level(before: Mapping[str, Any], reference: str | None) -> float | None:
    """The forget ROUGE-L at which runs are compared at matched forgetting: halfway from notebook 01's target to its
    retain model (None without a retain model)."""
    if not reference or reference not in before:
        return None
    target, retain = before["target"]["forget"]["rouge"], before[reference]["forget"]["rouge"]
    return float(target - MATCHED_SHARE * (target - retain))


def matched_forgetting(params: Params, run: str, source: TofuSource, trajectory: Sequence[Mapping],
                       level: float | None, reference_ratios: Sequence[float] | None,
                       final: Mapping[str, Any], final_ratios: Sequence[float]) -> dict[str, Any]:
    """A run scored at matched forgetting: the first kept step of its ``trajectory`` (notebook 02's greedy forget
    ROUGE-L along the run) at or below ``level``, evaluated there like the final model (TOFU's metrics, forget
    quality and the KS statistic D against the retain model's truth ratios; no privacy metrics). Methods are compared
    there, not at one shared learning rate, where one method's rate may over- or under-unlearn. Also the final
    step's KS statistic. A run that never reaches the level says so, with its lowest ROUGE-L."""
    out: dict[str, Any] = {"level": level, "share": MATCHED_SHARE,
                           "final": {"step": trajectory[-1]["step"] if trajectory else None,
                                     "ks_statistic": ks_statistic(final_ratios, reference_ratios)
                                     if reference_ratios is not None else None}}
    if level is None or reference_ratios is None or not trajectory:
        out["reached"] = False
        out["reason"] = "no retain model to set the level" if level is None else "no trajectory"
        return out
    hit = next((r for r in trajectory if r["forget_rouge"] <= level), None)
    if hit is None:
        low = min(trajectory, key=lambda r: r["forget_rouge"])
        out.update(reached=False, reason=f"forget ROUGE-L never reached {level:.3f} (lowest {low['forget_rouge']:.3f} "
                                          f"at step {low['step']})")
        return out
    steps = dict(runs.trajectory_steps(params, run))
    if hit["step"] == out["final"]["step"] or hit["step"] not in steps:
        result, ratios = final, final_ratios
    else:
        from .. import models

        loaded = models.load_model(steps[hit["step"]], dtype="float32", template=None)
        results, per_item = evaluate_models({run: loaded}, params, source, reference_ratios=list(reference_ratios))
        result, ratios = results[run], per_item[run]["forget"]["truth_ratio"]
    out.update(reached=True, step=hit["step"], trajectory_rouge=hit["forget_rouge"],
               forget_rouge=result["forget"]["rouge"], forget_quality=result["summary"].get("forget_quality"),
               model_utility=result["summary"].get("model_utility"), ks_statistic=ks_statistic(ratios, reference_ratios))
    return out


def matched_text(matched: Mapping[str, Any]) -> str:
    """One line: where a run was scored at matched forgetting and what it scored, or why it was not."""
    final_d = matched.get("final", {}).get("ks_statistic")
    final = f"; at its last step D = {final_d:.3f}" if final_d is not None else ""
    if not matched.get("reached"):
        return f"matched forgetting: not reached: {matched.get('reason', '')}{final}"
    return (f"matched forgetting (forget ROUGE-L <= {matched['level']:.3f}, halfway from the target's to the retain "
            f"model's): step {matched['step']}, forget ROUGE-L {matched['forget_rouge']:.3f}, forget quality "
            f"{matched['forget_quality']:.2e} (KS D {matched['ks_statistic']:.3f}), model utility "
            f"{matched['model_utility']:.3f}{final}")
