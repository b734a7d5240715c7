"""Does the forgetting hold? Every attack of :mod:`unlearnkit.attacks` on every model of notebook 02, with controls
(notebook 08; docs/metrics.md §10).

The models: every unlearning run of notebook 02 (``attack_runs``), the **retain model** (never saw the forget set:
the control of every attack) and the **target** (knows it all), and a **regime-matched** NPO run whose weights move
about ``quant_regime_share`` of an NF4 bin, as a large model's do under unlearning. Each is attacked
(:func:`attack_model`, side by side, cached by the model's identity and the attack settings):

1. **relearning**: one epoch on the forget split, forget scores before and after, a greedy forget ROUGE-L curve;
   both published forms of R against the retain model under the same relearning; steps to the target's halfway mark;
2. **held-out-fact relearning** (RTT): relearn on all folds of the forget facts but one, test the held-out fold, the
   attacker's best learning rate; recovery = held-out accuracy gained over the retain model's gain;
3. **quantisation**: each scheme, forget scores after; both forms of Q; bucket crossing against the target;
4. **input probes**: prefill, paraphrase, in-context shots, each beside the retain model under the same probe.

The registered claims' extractors (:mod:`unlearnkit.claims.extractors.recovery`) read what it stores: numbers and
identifiers only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .. import attacks, config, models, pipeline, runs, stations, workers
from ..config import Params
from ..data.tofu import holdout_split_for

#: Bump when what :func:`attack_model` computes changes (its cache key).
ROBUSTNESS_VERSION = "3"
TARGET, RETAIN, UNLEARNED, REGIME_MATCHED = "target", "retain (control)", "unlearned (02)", "regime-matched"
#: A recovery counts when forget ROUGE-L (or RTT accuracy) rises by more than this over the control's.
RECOVERY_MARGIN = 0.1
#: A run's updates "cross buckets" when at least this share of its quantised weights changed code against the
#: target's (the default profile's runs: 23-37 % under NF4; the regime-matched run about 2 %).
CROSSED = 0.1


# --------------------------------------------------------------------------- which models


def attacked_runs(params: Params) -> list[str]:
    """The unlearning runs attacked: ``attack_runs``, or every run notebook 02 stored."""
    stored = list(runs.unlearning_runs(params))
    missing = [r for r in params.attack_runs or () if r not in stored]
    if missing:  # never a silent drop: "4 models attacked" when five were asked for
        raise ValueError(f"attack_runs names {', '.join(map(repr, missing))}, which notebook 02 has not stored for seed "
                         f"{params.seed} (stored: {', '.join(stored) or 'none'}): run it first "
                         f"(runner 02 --profile {params.profile} --set method=<run>)")
    return list(params.attack_runs or stored)


def regime_matched_run(params: Params, run: str = "npo", share: float | None = None) -> tuple[Params, str, float]:
    """The regime-matched run: ``run`` (NPO) retrained at a learning rate scaled by ``share`` over its median
    |Δw| / NF4 bin at the profile's rate (updates scale with the learning rate), so its median update is about
    ``share`` of a bin, as in large models. Returns the parameters that know it, its name and the learning rate."""
    share = params.quant_regime_share if share is None else share
    target = runs.load_saved(params, "target", dtype="float32")
    unlearned = runs.load_saved(params, runs.unlearned_name(run), dtype="float32")
    ratio = attacks.bucket_crossing(target.model, unlearned.model, "nf4").median_update_over_bin
    lr = float(pipeline.run_params(params, run).unlearn_lr) * share / max(ratio, 1e-12)
    name = f"{run}_lr{lr:.2g}"
    settings = pipeline.own_settings(params, run, without=("unlearn_lr",))
    return pipeline.with_run(params, name, **settings, unlearn_lr=lr), name, lr


def regime_matched(params: Params, run: str = "npo") -> tuple[Params, str | None, float | None]:
    """:func:`regime_matched_run`, trained (cached like every unlearning run); ``(params, None, None)`` when
    ``quant_regime_share`` is null or notebook 02 has no ``run`` to scale."""
    if not params.quant_regime_share or run not in runs.unlearning_runs(params):
        return params, None, None
    params, name, lr = regime_matched_run(params, run)
    pipeline.unlearned_models(params, [name])
    return params, name, lr


def attacked_models(params: Params, regime: str | None = None) -> dict[str, tuple[str, str]]:
    """``{label: (kind, folder)}``: the target, the retain model, every attacked run and the regime-matched run."""
    retain = runs.retain_model(params, None)  # the one notebook 01 used, or none
    out = {"target": (TARGET, str(runs.model_dir(params, "target")))}
    if retain:
        out[retain] = (RETAIN, str(runs.model_dir(params, retain)))
    for run in attacked_runs(params):
        out[run] = (UNLEARNED, str(runs.model_dir(params, runs.unlearned_name(run))))
    if regime:
        out[regime] = (REGIME_MATCHED, str(runs.model_dir(params, runs.unlearned_name(regime))))
    return out


# --------------------------------------------------------------------------- the items


def attack_data(params: Params, source) -> dict[str, list[dict[str, Any]]]:
    """The items every attack uses: ``scored`` (``attack_items`` forget items with paraphrased and perturbed answers),
    ``holdout`` (as many holdout items, for the MinK AUC), ``relearn`` (the whole forget split, the relearning set),
    ``facts`` (the forget split with each question's attribute, for RTT) and the in-context pools."""
    forget = source.load(f"{params.forget_split}_perturbed")
    holdout = holdout_split_for(params.forget_split)
    return {"scored": attacks.attack_rows(forget, params.attack_items),
            "holdout": attacks.attack_rows(source.load(holdout), params.attack_items),
            "relearn": source.load(params.forget_split), "facts": source.load(params.forget_split),
            "retain_pool": source.load("retain_perturbed")[:max(params.probe_shots or [0])],
            "forget_pool": forget}


# --------------------------------------------------------------------------- one model, every attack


def attack_model(params: Params, label: str, folder: str, data: Mapping[str, list],
                 notebook: str = runs.ROBUSTNESS) -> dict[str, Any]:
    """Every attack on one model, cached (in the folder of ``notebook``) by its identity and the attack settings."""
    depends = {"model": runs.model_identity(folder), "items": {k: attacks.rows_hash(v) for k, v in data.items()},
               "settings": {k: params[k] for k in config.parameter_sections()["robustness attacks"]
                            if k != "attack_runs"},
               "scoring": {k: params[k] for k in ("eval_batch_size", "max_new_tokens", "truth_ratio_guard",
                                                  "answer_tokens", "mia_k", "extraction_no_match", "seed",
                                                  "finetune_lr", "finetune_batch_size", "finetune_grad_accum",
                                                  "finetune_warmup", "finetune_weight_decay", "finetune_schedule")}}
    return runs.cached_json(params, notebook, f"attacks-{label}", depends,
                            lambda: _attack(params, folder, data), ROBUSTNESS_VERSION)


def _attack(params: Params, folder: str, data: Mapping[str, list]) -> dict[str, Any]:
    loaded = models.load_model(folder, dtype="float32", template=None)
    model, tokenizer, template = loaded[:3]
    scored, holdout = data["scored"], data["holdout"]
    with stations.step("before any attack"):
        out: dict[str, Any] = {"before": attacks.forget_scores(loaded, scored, holdout, params)}
    with stations.step("relearning"):
        relearned, curve, recipe = attacks.relearn(
            loaded, data["relearn"], params, params.forget_split,
            score=lambda m: attacks.greedy_rouge(m, tokenizer, template, scored, params),
            every=params.relearn_curve_every)
        out["relearn"] = {"after": attacks.forget_scores((relearned, tokenizer, template), scored, holdout, params),
                          "curve": curve, "recipe": recipe}
    del relearned
    facts = data["facts"]
    not_run = attacks.rtt_unavailable(facts)
    if not_run is None:
        folds = attacks.rtt_folds(facts, params.rtt_folds)
        with stations.step("held-out facts (RTT)"):
            out["rtt"] = attacks.held_out_relearning(loaded, facts, folds,
                                                     list(range(min(params.rtt_held_out, len(folds)))),
                                                     params.rtt_lr_grid, params)
    else:  # real TOFU: said, not faked with folds that leak
        out["rtt"], out["rtt_not_run"] = [], not_run
    out["quant"] = {}
    for scheme in params.quant_schemes:
        with stations.step(f"quantised {scheme}"):
            quantised = attacks.fake_quantise(model, scheme)
            out["quant"][scheme] = attacks.forget_scores((quantised, tokenizer, template), scored, holdout, params)
        del quantised
    with stations.step("input probes"):
        out["probes"] = attacks.probe(loaded, scored, data["retain_pool"], data["forget_pool"], params)
    return out


def attack_all(params: Params, named: Mapping[str, tuple[str, str]], data: Mapping[str, list]) -> dict[str, dict]:
    """:func:`attack_model` on every model, side by side in up to ``jobs`` worker processes."""
    labels = list(named)
    found = workers.side_by_side(attack_model, [(params, label, named[label][1], data) for label in labels],
                                 params.jobs, desc="attacks")
    return dict(zip(labels, found))


def crossings(params: Params, named: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    """Bucket crossing of every unlearned model against the target, per scheme: the share of weights whose code
    differs and the median |Δw| / the target's bin width."""
    target = runs.load_saved(params, "target", dtype="float32").model
    rows = []
    for label, (kind, folder) in named.items():
        if kind not in (UNLEARNED, REGIME_MATCHED):
            continue
        model = models.load_model(folder, dtype="float32", template=None).model
        for scheme in params.quant_schemes:
            c = attacks.bucket_crossing(target, model, scheme)
            rows.append({"model": label, "kind": kind, "scheme": scheme, "share crossed": c.share_crossed,
                         "median |Δw| / bin": c.median_update_over_bin})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- tables


def _kind(named: Mapping[str, tuple[str, str]], label: str) -> str:
    return named[label][0]


def relearn_table(found: Mapping[str, dict], named: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    """Relearning, one row per model: each forget score before and after, Δ, both forms of R against the retain
    model's Δ (ROUGE-L), steps to the target's halfway mark (censored: not reached within the curve), the recipe."""
    control = next(label for label in named if _kind(named, label) == RETAIN)
    halfway = 0.5 * found["target"]["before"]["rouge"]
    d_control = found[control]["relearn"]["after"]["rouge"] - found[control]["before"]["rouge"]
    rows = []
    for label, result in found.items():
        before, after = result["before"], result["relearn"]["after"]
        step, reached = attacks.steps_to([tuple(p) for p in result["relearn"]["curve"]], halfway)
        delta = after["rouge"] - before["rouge"]
        recipe = result["relearn"]["recipe"]
        row = {"model": label, "kind": _kind(named, label)}
        for s in attacks.SCORES:
            row[f"{s} before"], row[f"{s} after"] = before[s], after[s]
        row.update({"Δ rouge": delta, "R one-sided": attacks.r_one_sided(delta, d_control),
                    "R symmetric": attacks.r_symmetric(delta, d_control),
                    "steps to halfway": step if reached else math.nan, "reached": reached,
                    "split": recipe["split"], "rows hash": recipe["rows_hash"][:10], "steps": recipe["steps"],
                    "lr": recipe["lr"], "batch": recipe["batch"]})
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


def curves(found: Mapping[str, dict]) -> dict[str, list[tuple[int, float]]]:
    return {label: [tuple(p) for p in result["relearn"]["curve"]] for label, result in found.items()}


def rtt_table(found: Mapping[str, dict], named: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    """Held-out-fact relearning, one row per model: held-out accuracy before and after (mean over the held-out
    folds), the gain, and the recovery over the retain model's gain; the folds and learning rates as recipe."""
    control = next(label for label in named if _kind(named, label) == RETAIN)
    gain = lambda r: float(np.mean([f["after"] - f["before"] for f in r["rtt"]]))  # noqa: E731
    rows = []
    if not found[control]["rtt"]:  # not run on this corpus (rtt_note says why): no row, so no attack is judged
        return pd.DataFrame(columns=["model", "kind", "held-out before", "held-out after", "gain",
                                     "recovery over control", "held-out folds", "best lr",
                                     "train rows"]).set_index("model")
    for label, result in found.items():
        folds = result["rtt"]
        rows.append({"model": label, "kind": _kind(named, label),
                     "held-out before": float(np.mean([f["before"] for f in folds])),
                     "held-out after": float(np.mean([f["after"] for f in folds])), "gain": gain(result),
                     "recovery over control": gain(result) - gain(found[control]),
                     "held-out folds": "; ".join(", ".join(f["attributes"]) for f in folds),
                     "best lr": ", ".join(f"{f['best_lr']:g}" for f in folds),
                     "train rows": ", ".join(str(f["train_rows"]) for f in folds)})
    return pd.DataFrame(rows).set_index("model")


def rtt_note(found: Mapping[str, dict]) -> str | None:
    """Why held-out-fact relearning did not run (:func:`attacks.rtt_unavailable`), or None where it ran."""
    return next((r["rtt_not_run"] for r in found.values() if r.get("rtt_not_run")), None)


def quant_table(found: Mapping[str, dict], named: Mapping[str, tuple[str, str]],
                crossing: pd.DataFrame | None = None) -> pd.DataFrame:
    """Quantisation, one row per model and scheme: forget ROUGE-L and probability before and after, the recovery,
    both forms of Q (on ROUGE-L) and the bucket crossing."""
    rows = []
    for label, result in found.items():
        for scheme, after in result["quant"].items():
            before = result["before"]
            row = {"model": label, "kind": _kind(named, label), "scheme": scheme, "rouge before": before["rouge"],
                   "rouge after": after["rouge"], "Δ rouge": after["rouge"] - before["rouge"],
                   "probability before": before["probability"], "probability after": after["probability"],
                   "Q one-sided": attacks.q_one_sided(before["rouge"], after["rouge"]),
                   "Q symmetric": attacks.q_symmetric(before["rouge"], after["rouge"])}
            if crossing is not None and len(crossing):
                hit = crossing[(crossing["model"] == label) & (crossing["scheme"] == scheme)]
                row.update({"share crossed": float(hit["share crossed"].iloc[0]) if len(hit) else math.nan,
                            "median |Δw| / bin": float(hit["median |Δw| / bin"].iloc[0]) if len(hit) else math.nan})
            rows.append(row)
    return pd.DataFrame(rows)


def probe_table(found: Mapping[str, dict], named: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    """Input probes, one row per model and probe: greedy ROUGE-L and the true answer's probability, each beside the
    retain model's under the same probe."""
    control = next(label for label in named if _kind(named, label) == RETAIN)
    rows = []
    for label, result in found.items():
        for name, got in result["probes"].items():
            ref = found[control]["probes"][name]
            rows.append({"model": label, "kind": _kind(named, label), "probe": name, "rouge": got["rouge"],
                         "rouge over control": got["rouge"] - ref["rouge"], "probability": got["probability"],
                         "probability over control": got["probability"] - ref["probability"],
                         "rouge over plain": got["rouge"] - result["probes"]["plain"]["rouge"]})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- which runs forgot


def forgetting_runs(relearn: pd.DataFrame) -> list[str]:
    """The runs an attack can test: unlearning runs (and the regime-matched one) whose greedy forget ROUGE-L before
    any attack is below half the target's (the halfway mark). A run that never forgot has nothing to bring back."""
    halfway = 0.5 * float(relearn.loc["target", "rouge before"])
    moved = relearn[relearn["kind"].isin([UNLEARNED, REGIME_MATCHED])]
    return [str(run) for run, row in moved.iterrows() if row["rouge before"] < halfway]


def survival(relearn: pd.DataFrame, quant: pd.DataFrame, rtt: pd.DataFrame, probes: pd.DataFrame,
             scheme: str = "nf4") -> pd.DataFrame:
    """Which runs' forgetting survives which attack, for the runs that forgot: True where the attack brings back no
    more than RECOVERY_MARGIN beyond the retain model (relearning: Δ ROUGE-L over the control's; quantisation: Δ
    under ``scheme``; RTT: recovery; probes: the largest ROUGE-L over the control of any probe)."""
    control = relearn[relearn["kind"] == RETAIN].iloc[0]
    rows = {}
    for run in forgetting_runs(relearn):
        row = relearn.loc[run]
        q = quant[(quant["model"] == run) & (quant["scheme"] == scheme)]
        p = probes[(probes["model"] == run) & (probes["probe"] != "plain")]
        rows[run] = {"relearning": bool(row["Δ rouge"] - control["Δ rouge"] <= RECOVERY_MARGIN),
                     f"quantisation ({scheme})": bool(q["Δ rouge"].iloc[0] <= RECOVERY_MARGIN) if len(q) else None,
                     "held-out facts": bool(rtt.loc[run, "recovery over control"] <= RECOVERY_MARGIN)
                     if run in rtt.index else None,
                     "input probes": bool(p["rouge over control"].max() <= RECOVERY_MARGIN) if len(p) else None}
    return pd.DataFrame(rows).T


def metrics_entries(found: Mapping[str, dict]) -> dict[str, dict[str, dict[str, float]]]:
    """metrics.json's ``{model: {split: {metric: value}}}``: each model's forget scores before any attack, after
    relearning and after each quantisation scheme."""
    return {label: {"forget": r["before"], "relearned": r["relearn"]["after"],
                    **{f"quantised {scheme}": scores for scheme, scores in r["quant"].items()}}
            for label, r in found.items()}


def per_item(found: Mapping[str, dict]) -> dict[str, Any]:
    """What per_item.json keeps: every model's attack results as computed (curves, folds, recipes)."""
    return dict(found)


def crossing_records(crossing: pd.DataFrame | None) -> dict[str, dict[str, dict[str, float]]]:
    """The bucket crossing of :func:`crossings` as metrics.json keeps it: ``{model: {scheme: {"share crossed": ...,
    "median |Δw| / bin": ...}}}``, numbers only."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for _, row in (crossing if crossing is not None else pd.DataFrame()).iterrows():
        out.setdefault(str(row["model"]), {})[str(row["scheme"])] = {
            "share crossed": float(row["share crossed"]), "median |Δw| / bin": float(row["median |Δw| / bin"])}
    return out


def run_meta(params: Params, named: Mapping[str, tuple[str, str]], data: Mapping[str, list], regime: str | None,
             regime_lr: float | None, crossing: pd.DataFrame | None = None) -> dict[str, Any]:
    return {"models": {label: {"kind": kind, "folder": runs.model_identity(folder)} for label, (kind, folder)
                       in named.items()},
            "items": {k: {"n": len(v), "hash": attacks.rows_hash(v)} for k, v in data.items()},
            "regime_matched": {"run": regime, "lr": regime_lr, "share": params.quant_regime_share},
            "crossing": crossing_records(crossing)}
