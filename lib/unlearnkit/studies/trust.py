"""Which metric to trust (notebook 09): open-unlearning's meta-evaluation of the workbook's metrics on one seed, and
leak@k from notebook 05's samples (docs/metrics.md §3.6, §10.1).

- **Faithfulness**: every metric computed teacher-forced or greedily is scored on each model of the P/N pool
  (:mod:`unlearnkit.pipeline.pool`), on ``pool_items`` forget items and as many holdout items no pool model trained
  on; :func:`unlearnkit.metrics.meta_eval.faithfulness_auc` of P against N.
- **Robustness**: notebook 08's stored scores of every unlearned model and of the retain model, before and after one
  epoch of relearning and before and after NF4 (4-bit) quantisation; R and Q in both variants
  (:func:`~unlearnkit.metrics.meta_eval.relearning_r`, :func:`~unlearnkit.metrics.meta_eval.quantisation_q`), their
  means over the models the zero-denominator rule keeps, robustness = HM(R, Q), overall = HM(faithfulness,
  robustness). No utility filter: every unlearned run notebook 08 attacked counts.
- **leak@k**: from notebook 05's per-question leak counts (``leaks``), every model it sampled.

What is not measured here, and what it would cost, is :data:`NOT_MEASURED`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import attacks, models, results, runs
from ..config import Params
from ..metrics import meta_eval, tofu
from ..metrics import privacy as privacy_metrics
from ..pipeline import holdout_halves, pool_plan

#: Bump when what a pool model's scores are changes (their cache key holds it).
TRUST_VERSION = "1"
#: Every metric scored on the pool: whether a higher value means more forget knowledge, and what it is.
POOL_METRICS: dict[str, tuple[bool, str]] = {
    "probability": (True, "P(answer | question), length-normalised, teacher-forced"),
    "rouge": (True, "ROUGE-L recall of the greedy answer against the answer"),
    "para_probability": (True, "P(paraphrased answer | question), teacher-forced"),
    "para_rouge": (True, "ROUGE-L recall of the greedy answer against the paraphrased answer"),
    "truth_ratio": (False, "TOFU's truth ratio R = P(perturbed) / P(paraphrased), mean over items (lower: knows)"),
    "truth_ratio_ou": (True, "open-unlearning's form p_c / (p_c + p_w) = 1 / (1 + R), mean over items"),
    "extraction_strength": (True, "extraction strength (open-unlearning), teacher-forced"),
    "exact_memorisation": (True, "exact memorisation (open-unlearning), teacher-forced"),
    "loss_auc": (True, "membership-inference AUC of forget against holdout, by the loss"),
    "zlib_auc": (True, "the same, by zlib-normalised loss"),
    "mink_auc": (True, "the same, by MinK (k = mia_k)"),
    "mink++_auc": (True, "the same, by MinK++"),
}
#: The metrics notebook 08 stores before and after each attack (attacks.SCORES), whose robustness is computed.
ROBUST_METRICS = attacks.SCORES
#: What the meta-evaluation leaves out on this profile, and why.
NOT_MEASURED = {
    "PS-exact": "notebook 03's PS search per model (~ps_max_items greedy searches each): about 16 x its cost per seed",
    "sampled metrics (mean ROUGE-L, ED score, leak rate, M_bin)": "notebook 05's sampling of 16 more models "
                                                                  "(n_samples answers on sample_max_items questions "
                                                                  "each): several minutes a model on 2 cores",
    "format scores": "notebook 04's evaluation of 16 more models",
}
VARIANTS = meta_eval.VARIANTS


# --------------------------------------------------------------------------- faithfulness on the pool


def pool_data(params: Params, source) -> dict[str, list[dict[str, Any]]]:
    """The items every pool model is scored on: ``scored`` (``pool_items`` forget items with paraphrased and
    perturbed answers, spread over the split) and ``holdout`` (as many holdout items, none of them trained on)."""
    forget = source.load(f"{params.forget_split}_perturbed")
    return {"scored": attacks.attack_rows(forget, params.pool_items),
            "holdout": attacks.attack_rows(holdout_halves(params, source)[0], params.pool_items)}


def model_scores(params: Params, loaded, data: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, float]:
    """Every metric of :data:`POOL_METRICS` of one model on ``data`` (:func:`pool_data`)."""
    model, tokenizer, template = loaded[:3]
    rows, holdout = list(data["scored"]), list(data["holdout"])
    split, items = tofu.evaluate_split(model, tokenizer, template, rows, "forget", None, params.eval_batch_size,
                                       max_new_tokens=params.max_new_tokens,
                                       truth_ratio_guard=params.truth_ratio_guard, answer_tokens=params.answer_tokens)
    para_nll = tofu.answer_nll(model, tokenizer, template, [r["question"] for r in rows],
                               [r["paraphrased_answer"] for r in rows], params.eval_batch_size,
                               answer_tokens=params.answer_tokens)
    ratios = np.asarray(items["truth_ratio"], dtype=float)
    settings = {"k": params.mia_k, "batch_size": params.eval_batch_size, "gradnorm": False,
                "gradnorm_reduction": params.gradnorm_reduction, "extraction_no_match": params.extraction_no_match,
                "answer_tokens": params.answer_tokens}
    forget = privacy_metrics.item_scores(model, tokenizer, template, rows, **settings)
    held = privacy_metrics.item_scores(model, tokenizer, template, holdout, **settings)
    out = {"probability": split["probability"], "rouge": split["rouge"],
           "para_probability": float(np.exp(-para_nll).mean()),
           "para_rouge": float(tofu.rouge_l([r["paraphrased_answer"] for r in rows], items["generated"]).mean()),
           "truth_ratio": split["truth_ratio"], "truth_ratio_ou": float((1.0 / (1.0 + ratios)).mean()),
           "extraction_strength": float(np.mean(forget["extraction_strength"])),
           "exact_memorisation": float(np.mean(forget["exact_memorisation"]))}
    for attack in ("loss", "zlib", "mink", "mink++"):
        out[f"{attack}_auc"] = float(privacy_metrics.attack_auc(forget[attack], held[attack]))
    return out


def pool_scores(params: Params, folders: Mapping[str, Path], data) -> dict[str, dict[str, float]]:
    """:func:`model_scores` of every pool model, cached (in notebook 09's folder) by the model's identity, the items
    and the scoring settings."""
    scoring = {k: params[k] for k in ("eval_batch_size", "max_new_tokens", "truth_ratio_guard", "answer_tokens",
                                      "mia_k", "extraction_no_match", "gradnorm_reduction")}
    items = {k: attacks.rows_hash(v) for k, v in data.items()}
    out = {}
    for name, folder in folders.items():
        depends = {"model": runs.model_identity(folder), "items": items, "scoring": scoring}
        out[name] = runs.cached_json(params, runs.METRIC_TRUST, f"scores-{name}", depends,
                                     lambda f=folder: model_scores(params, models.load_model(f, dtype="float32",
                                                                                             template=None), data),
                                     TRUST_VERSION)
    return out


def pool_table(params: Params, scores: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """One row per pool model: its variant, side, rate, epochs and every metric."""
    plan = {m.name: m for m in pool_plan(params)}
    return pd.DataFrame([{"model": name, **plan[name].as_dict(), **values} for name, values in scores.items()]
                        ).set_index("model")


def faithfulness(table: pd.DataFrame) -> pd.Series:
    """The faithfulness AUC of every metric of :data:`POOL_METRICS` on the pool (:func:`pool_table`)."""
    p, n = table[table["side"] == "P"], table[table["side"] == "N"]
    return pd.Series({m: meta_eval.faithfulness_auc(p[m], n[m], higher_means_knowledge=up)
                      for m, (up, _) in POOL_METRICS.items()}, name="faithfulness")


# --------------------------------------------------------------------------- robustness from notebook 08


def quantisation_scheme(stored: Mapping[str, Any]) -> str:
    """The 4-bit scheme of notebook 08's results: nf4 (open-unlearning's), else int4; refused when 08 ran neither."""
    schemes = {k.removeprefix("quantised ") for m in stored.values() if isinstance(m, Mapping) for k in m
               if k.startswith("quantised ")}
    for scheme in ("nf4", "int4"):
        if scheme in schemes:
            return scheme
    raise ValueError(f"notebook 08 quantised with {sorted(schemes)}, no 4-bit scheme (nf4 or int4): add one to "
                     "quant_schemes and rerun 08")


def robustness(params: Params, stored: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """R and Q of every metric of :data:`ROBUST_METRICS` in both variants, from notebook 08's metrics.json (``stored``,
    else this run's): the mean over the unlearned models the zero-denominator rule keeps and the count left out,
    robustness = HM(R, Q). A metric 08's results do not hold for every model (``truth_ratio_ou``, in 08's scores since
    #56/#57's rerun, is absent from results made before it) has no row: :func:`trust_table` leaves it empty."""
    stored = results.of(params).metrics(runs.ROBUSTNESS) if stored is None else stored
    retain = runs.retain_model(params, params.forget_split)
    if retain not in stored:
        raise ValueError(f"notebook 08's results hold no retain model {retain!r}: rerun 08")
    scheme = f"quantised {quantisation_scheme(stored)}"
    unlearned = [k for k, v in stored.items() if k not in ("meta", "target", retain) and isinstance(v, Mapping)]
    rows = []
    for metric in stored_scores(stored, [*unlearned, retain]):
        def col(part, names=unlearned, m=metric):
            return np.array([stored[u][part][m] for u in names], dtype=float)
        row: dict[str, Any] = {"metric": metric, "models": len(unlearned)}
        for variant in VARIANTS:
            r = meta_eval.summarise(meta_eval.relearning_r(col("forget"), col("relearned"), stored[retain]["forget"][metric],
                                                           stored[retain]["relearned"][metric], variant=variant))
            q = meta_eval.summarise(meta_eval.quantisation_q(col("forget"), col(scheme), variant=variant,
                                                             higher_means_knowledge=attacks.RECOVERS_UP[metric]))
            row.update({f"R {variant}": r.mean, f"R left out {variant}": r.left_out, f"Q {variant}": q.mean,
                        f"Q left out {variant}": q.left_out,
                        f"robustness {variant}": meta_eval.harmonic_mean(r.mean, q.mean)})
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")


def stored_scores(stored: Mapping[str, Any], models: Sequence[str]) -> list[str]:
    """The metrics of :data:`ROBUST_METRICS` that notebook 08's results hold for every one of ``models``."""
    return [m for m in ROBUST_METRICS if all(m in stored[u]["forget"] for u in models)]


def trust_table(faithful: pd.Series, robust: pd.DataFrame) -> pd.DataFrame:
    """Faithfulness, R, Q, robustness and overall = HM(faithfulness, robustness), both variants, one row per metric
    (robustness empty where notebook 08 stores no before and after)."""
    table = pd.DataFrame({"faithfulness": faithful}).join(robust, how="left")
    for variant in VARIANTS:
        table[f"overall {variant}"] = [meta_eval.harmonic_mean(f, r) if np.isfinite(r) else np.nan for f, r in
                                       zip(table["faithfulness"], table[f"robustness {variant}"].astype(float))]
    return table


# --------------------------------------------------------------------------- leak@k from notebook 05


def leak_curves(params: Params) -> tuple[dict[str, meta_eval.LeakCurve], dict[str, Any]]:
    """leak@k of every model notebook 05 sampled, from its per-item leak counts, and its sampling settings."""
    run = results.of(params)
    sampling = dict(run.metrics(runs.LEAKAGE)["meta"]["sampling"])
    per_item = run.per_item(runs.LEAKAGE)
    return meta_eval.leak_at_k_curves(per_item, int(sampling["n"])), sampling


def leak_entries(curves: Mapping[str, meta_eval.LeakCurve]) -> dict[str, dict[str, Any]]:
    return {name: {"ks": list(c.ks), "n": c.n, "leak_at_k": [float(v) for v in c.mean]} for name, c in curves.items()}


def metrics_entries(pool: pd.DataFrame, table: pd.DataFrame, curves) -> dict[str, Any]:
    """What notebook 09 writes to metrics.json: the pool's scores, the meta-evaluation table, leak@k per model."""
    return {"pool": {name: row.to_dict() for name, row in pool.iterrows()},
            "meta_evaluation": {metric: row.to_dict() for metric, row in table.iterrows()},
            "leak_at_k": leak_entries(curves)}


def leak_frame(params: Params, curves: Mapping[str, meta_eval.LeakCurve]) -> pd.DataFrame:
    """leak@k per model at every k (the mean over questions), beside notebook 05's M_bin (its binary leakage bound,
    the mean over questions) for the same model."""
    stored = results.of(params).metrics(runs.LEAKAGE)
    rows = {name: {**{f"leak@{k}": v for k, v in zip(c.ks, c.mean)},
                   "M_bin": stored.get(name, {}).get("forget", {}).get("binary_leak_bound_mean", np.nan)}
            for name, c in curves.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def run_meta(params: Params, pool: pd.DataFrame, data, sampling: Mapping[str, Any]) -> dict[str, Any]:
    """What notebook 09 records beside its numbers: the pool's sides, the items scored, the quantisation scheme read
    from notebook 08, each metric's orientation, what is not measured and notebook 05's sampling settings."""
    scheme = quantisation_scheme(results.of(params).metrics(runs.ROBUSTNESS))
    return {"pool_sizes": {side: int((pool["side"] == side).sum()) for side in ("P", "N")},
            "scored_items": {k: len(v) for k, v in data.items()}, "quantisation": scheme,
            "higher_means_knowledge": {m: up for m, (up, _) in POOL_METRICS.items()},
            "not_measured": NOT_MEASURED, "leak_sampling": dict(sampling),
            "zero_denominator": meta_eval.ZERO_DENOMINATOR}


# --------------------------------------------------------------------------- over seeds (notebook 10)

#: The meta-evaluation's quantities over seeds, in the order docs/results.md shows them.
OVER_SEEDS = ("faithfulness", *(f"{q} {v}" for v in VARIANTS for q in ("R", "Q", "robustness", "overall")))
#: What the metrics are ranked by on each seed (1 = the most trustworthy), as the published table ranks them.
RANKED_BY = "overall symmetric"


def seed_tables(profile: str, seeds: Sequence[int]) -> dict[int, pd.DataFrame]:
    """Each seed's meta-evaluation table (notebook 09's ``meta_evaluation``), for the seeds that hold it."""
    out = {}
    for s in seeds:
        try:
            stored = results.SeedResults(profile, int(s)).metrics(runs.METRIC_TRUST)
        except results.MissingResult:
            continue
        table = pd.DataFrame.from_dict(stored["meta_evaluation"], orient="index")
        out[int(s)] = table.apply(pd.to_numeric, errors="coerce")
    return out


#: open-unlearning's metrics in the published re-implementation's table (gnueaj/unlearning-depth-score,
#: docs/data/meta_eval.json) under the workbook's names; its paraphrased ROUGE paraphrases the question, the
#: workbook's the answer, and its truth ratio is open-unlearning's form.
PUBLISHED_NAMES = {"es": "extraction_strength", "em": "exact_memorisation", "prob": "probability",
                   "paraprob": "para_probability", "truth_ratio": "truth_ratio_ou", "rouge": "rouge",
                   "para_rouge": "para_rouge", "mia_loss": "loss_auc", "mia_zlib": "zlib_auc", "mia_min_k": "mink_auc",
                   "mia_min_kpp": "mink++_auc"}


def published(path: Path | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """The published meta-evaluation (docs/published-meta-eval.json, numbers only, with its source): per variant
    (``symmetric``, ``one_directional``), per workbook metric, faithfulness, R, Q, robustness and overall =
    HM(faithfulness, robustness)."""
    import json

    from .. import paths

    raw = json.loads((path or paths.ROOT / "docs" / "published-meta-eval.json").read_text(encoding="utf-8"))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for variant, table in raw["variants"].items():
        out[variant] = {}
        for key, name in PUBLISHED_NAMES.items():
            if key in table["faithfulness"] and key in table["robustness"]:
                f, rob = table["faithfulness"][key], table["robustness"][key]
                out[variant][name] = {"faithfulness": float(f), "R": float(rob["relearning"]),
                                      "Q": float(rob["quantization"]), "robustness": float(rob["agg"]),
                                      "overall": float(meta_eval.harmonic_mean(f, rob["agg"]))}
    return out
