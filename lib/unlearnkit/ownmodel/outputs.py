"""What an evaluation of ``runner eval`` writes (:mod:`unlearnkit.ownmodel.suites` runs it): the tables the notebook
shows, metrics.json's entries and meta, and the per-item samples of ``--log-samples``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import config, paths, runs
from .cost import machine
from .reference import RESULTS_FILE, ou_eval
from .reference import identity as reference_identity
from .suites import MODEL, REFERENCE, Request, eval_folder, named


def attack_table(found: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per model: forget ROUGE-L before any attack and its change under each, beside the retain model's
    change where there is one (what relearning or quantisation teaches any model)."""
    rows = {}
    for label, result in found.items():
        before = result["before"]["rouge"]
        row = {"forget ROUGE-L": before, "Δ relearning": result["relearn"]["after"]["rouge"] - before}
        for scheme, after in result["quant"].items():
            row[f"Δ quantised {scheme}"] = after["rouge"] - before
        folds = result.get("rtt") or []
        row["Δ held-out facts (RTT)"] = float(np.mean([f["after"] - f["before"] for f in folds])) if folds else np.nan
        probes = [v["rouge"] for name, v in result["probes"].items() if name != "plain"]
        row["best input probe ROUGE-L"] = max(probes, default=np.nan)
        rows[label] = row
    table = pd.DataFrame(rows).T
    if REFERENCE in table.index and MODEL in table.index:
        table.loc["model over reference"] = table.loc[MODEL] - table.loc[REFERENCE]
    return table


def format_table(format_scores: Mapping[str, Mapping[str, Mapping[str, float]]]) -> pd.DataFrame:
    """The format scores (metrics.json's ``{model: {set: {format: score}}}``) as notebook 04's table: one row per
    (format, set), one column per model."""
    from ..studies.formats import scores_table

    return scores_table(format_scores)


def leak_curves(tables: Mapping[str, pd.DataFrame], summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """leak@k (:func:`unlearnkit.metrics.meta_eval.leak_at_k_curve`, k = 1, 2, 4, ... n) of each model the leakage
    suite sampled, from each forget question's count of leaking answers (its table's ``leaks``) among the n drawn
    (its summary's ``n_samples``): the chance that at least one of k fresh samples leaks, as notebook 09 gives it."""
    from ..metrics import meta_eval

    return {label: meta_eval.leak_at_k_curve(table["leaks"].to_numpy(), int(summaries[label]["n_samples"]))
            for label, table in tables.items()}


def leak_frame(curves: Mapping[str, Any]) -> pd.DataFrame:
    """The curves as a table: a row per model, a column per k (``leak@k``)."""
    return pd.DataFrame({label: {f"leak@{k}": float(v) for k, v in zip(c.ks, c.mean)} for label, c in curves.items()}).T


def metrics_entries(tofu: Mapping[str, Any] | None = None, leak_summaries: Mapping[str, Any] | None = None,
                    format_scores: Mapping[str, Any] | None = None,
                    attacks: Mapping[str, Mapping[str, Any]] | None = None,
                    leak_at_k: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``{model: {part: values}}`` for metrics.json, in the notebooks' layout: TOFU's splits and summary as
    notebook 02 writes them, ``sampled`` as notebook 05's forget summary, ``leak_at_k`` as notebook 09's entry of a
    model (``ks``, ``n``, ``leak_at_k``: the mean over questions per k; from :func:`leak_curves`), ``formats`` as
    notebook 04's, and the attacks as notebook 08's (``relearned``, ``quantised <scheme>``)."""
    from ..studies.trust import leak_entries

    entries: dict[str, dict[str, Any]] = {}
    for label, result in (tofu or {}).items():
        entries.setdefault(label, {}).update(result)
    for label, summary in (leak_summaries or {}).items():
        entries.setdefault(label, {})["sampled"] = dict(summary)
    for label, entry in leak_entries(leak_at_k or {}).items():
        entries.setdefault(label, {})["leak_at_k"] = entry
    for label, scores in (format_scores or {}).items():
        entries.setdefault(label, {})["formats"] = dict(scores)
    for label, result in (attacks or {}).items():
        entries.setdefault(label, {}).update({"attacked forget": result["before"],
                                              "relearned": result["relearn"]["after"],
                                              **{f"quantised {s}": v for s, v in result["quant"].items()}})
    return entries


def log_samples(params: config.Params, request: Request, suite: str, per_item: Mapping[str, Any]) -> Path:
    """``--log-samples``: ``samples_<suite>.jsonl`` in the evaluation's folder, one JSON object per item and model:
    the model, the split (or format and set), the item's index and every per-item value the suite kept (the question,
    the answers generated, each score), as lm-eval's samples files hold them."""
    import json

    rows = []

    def walk(where: tuple[str, ...], node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        lists = {k: v for k, v in node.items() if isinstance(v, list)}
        lengths = {len(v) for v in lists.values()}
        if lists and len(lengths) == 1:
            for i in range(lengths.pop()):
                rows.append({"model": where[0], "split": "/".join(where[1:]), "index": i,
                             **{k: v[i] for k, v in lists.items()}})
        for key, value in node.items():
            if isinstance(value, Mapping):
                walk((*where, str(key)), value)

    for label, items in per_item.items():
        walk((label,), items)
    path = paths.writable(eval_folder(params, request) / f"samples_{suite}.jsonl", "a samples file")
    path.parent.mkdir(parents=True, exist_ok=True)
    paths.atomic_write_text(path, "".join(json.dumps(config.jsonable(r)) + "\n" for r in rows))
    return path


def run_meta(request: Request, seconds: Mapping[str, Any], limit: int | None = None, device: str | None = None,
             estimated: Mapping[str, float] | None = None, auto_batch: int | None = None) -> dict[str, Any]:
    """What metrics.json records beside the parameters: the request (the model by its identity), each suite's time
    (``seconds`` as :func:`unlearnkit.ownmodel.cost.measured` keeps them: the wall seconds, and the seconds it computed), the FLOP estimate
    of each (``estimated``) and the machine, by which later estimates here are calibrated (:func:`unlearnkit.ownmodel.cost.calibration`),
    the quick-look and hardware flags (``--limit``, ``--device``, the batch ``--batch-size auto`` found:
    ``auto_batch``) and the notes a reader needs (a limited run is not comparable with a whole one)."""
    notes = [f"not comparable: at most {limit} items per split and suite (--limit {limit})"] if limit else []
    if auto_batch:
        notes.append(f"eval_batch_size {auto_batch}: found by --batch-size auto on this machine")
    if request.reference and REFERENCE not in named(request):
        notes.append(f"reference given as results ({RESULTS_FILE}): forget quality and privleak are taken against "
                     "them; the leakage, formats and attacks suites ran on the model alone")
    from .cost import parameter_count

    timing = {"suite_seconds": {k: v for k, v in seconds.items() if k != "computed"},
              "computed_seconds": dict(seconds.get("computed", {})), "estimated_seconds": dict(estimated or {}),
              "model_parameters": parameter_count(request.model) if estimated else None, "machine": machine()}
    return {"limit": limit, "device": device, "batch_size_auto": auto_batch, "notes": notes, **timing, "evaluated": {"model": paths.shown(request.model) if Path(request.model).is_absolute() else request.model,
                          "model_identity": runs.model_identity(request.model), "template": request.template,
                          "data": request.data, "suites": list(request.suites),
                          "reference": (paths.shown(request.reference) if request.reference
                                        and Path(request.reference).is_absolute() else request.reference),
                          "reference_identity": reference_identity(request.reference) if request.reference else None,
                          "reference_given_as": None if not request.reference else "weights" if REFERENCE in named(request)
                          else "results"}}


# --------------------------------------------------------------------------- files a user can tabulate


def tabulable(entries: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``entries`` with every number's place holding a number or None: a text where a number belongs (forget quality
    "not computed: ...") becomes None, and a model's note on metrics it skipped (``privacy_skipped``) leaves the
    table; each says why in the returned notes (``"<model> <where>: <reason>"``)."""
    notes: list[str] = []

    def clean(where: tuple[str, ...], node: Any) -> Any:
        if isinstance(node, Mapping):
            out = {}
            for key, value in node.items():
                if isinstance(value, str) and len(where) == 1:  # a model's own note, not a metric
                    notes.append(f"{where[0]}: {value}")
                    continue
                out[key] = clean((*where, str(key)), value)
            return out
        if isinstance(node, str):
            notes.append(f"{where[0]} {'.'.join(where[1:])}: null, {node}")
            return None
        return node

    return {label: clean((label,), result) for label, result in entries.items()}, notes


def flat_summary(entries: Mapping[str, Any], label: str = MODEL) -> dict[str, float | None]:
    """``{metric: value}`` of one model (as open-unlearning's TOFU_SUMMARY.json): TOFU's summary by its own names
    (``forget_quality``, ``model_utility``, ``privleak``...), every other number as ``<part>.<key>`` (``forget.rouge``,
    ``sampled.ed_score``, ``formats.forget.mcqa``, ``relearned.rouge``); numbers or None only."""
    flat: dict[str, float | None] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(f"{prefix}.{key}" if prefix else str(key), value)
        elif node is None or (isinstance(node, (int, float)) and not isinstance(node, bool)):
            flat[prefix] = None if node is None or not np.isfinite(node) else float(node)

    for part, values in entries.get(label, {}).items():
        walk("" if part == "summary" else part, values)
    return flat


def write_evaluation(params: config.Params, request: Request, entries: Mapping[str, Any], meta: Mapping[str, Any],
                     tofu_items: Mapping[str, Any] | None = None) -> Path:
    """The evaluation's files in its folder (:func:`unlearnkit.ownmodel.suites.eval_folder`): metrics.json (numbers
    or null, the reasons in ``meta.notes``; the data recorded as given), ``summary.json`` (the model's
    :func:`flat_summary`) and, where the tofu suite ran, open-unlearning's ``TOFU_EVAL.json`` and
    ``TOFU_SUMMARY.json`` of the model (:func:`ou_eval`), so that its ``retain_logs_path`` can read ours. Returns
    metrics.json's path."""
    import json

    from .suites import PROFILE_DATA, notebook_name

    folder = eval_folder(params, request)
    table, notes = tabulable(entries)
    recorded = params if request.data == PROFILE_DATA else params.replace(data_source=request.data)
    runs.write_metrics(recorded, notebook_name(params, request), table,
                       {**meta, "notes": [*meta.get("notes", []), *notes]}, folder=folder)
    files = {"summary.json": flat_summary(table)}
    if tofu_items and MODEL in tofu_items:
        ou = ou_eval(table.get(MODEL, {}), tofu_items[MODEL])
        files.update({RESULTS_FILE: ou, "TOFU_SUMMARY.json": {k: v["agg_value"] for k, v in ou.items()}})
    for name, payload in files.items():
        paths.atomic_write_text(paths.writable(folder / name, "an evaluation's file"),
                                json.dumps(config.jsonable(payload), indent=2) + "\n")
    return folder / "metrics.json"


def evaluations_frame(params: config.Params) -> pd.DataFrame:
    """Every evaluation of the store (``runs/<profile>/seed-<s>/eval/*/summary.json``) as one frame: a row per
    evaluation (its folder's name), a column per metric."""
    import json

    found = {p.parent.name: json.loads(p.read_text()) for p in sorted((runs.store(params) / runs.EVAL).glob(
        "*/summary.json")) if paths.NAME.fullmatch(p.parent.name)}
    return pd.DataFrame.from_dict(found, orient="index", dtype=float)


# --------------------------------------------------------------------------- what the numbers say

#: TOFU's bar on forget quality (Maini et al.): the KS test's p-value at or above 0.05 means the model's forget truth
#: ratios cannot be told from the retain model's.
FORGET_QUALITY_BAR = 0.05


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    return float(value) if ok else None


def _beside(entries: Mapping[str, Any], part: str, key: str, fmt: str = ".3f") -> str:
    """``x (reference y, difference d)``, or ``x`` alone without a reference's number."""
    mine = _number(entries.get(MODEL, {}).get(part, {}).get(key))
    theirs = _number(entries.get(REFERENCE, {}).get(part, {}).get(key))
    if mine is None:
        return "not computed"
    if theirs is None:
        return format(mine, fmt)
    return f"{mine:{fmt}} (reference {theirs:{fmt}}, difference {mine - theirs:+{fmt}})"


def _tofu(entries: Mapping[str, Any], params: config.Params) -> str:
    model = entries.get(MODEL, {})
    fq = model.get("summary", {}).get("forget_quality")
    if _number(fq) is None:
        said = f"Forget quality is {fq if isinstance(fq, str) else 'not computed'}."
    else:
        side = "at or above" if fq >= FORGET_QUALITY_BAR else "below"
        said = (f"Forget quality {fq:.3g} is {side} TOFU's bar of {FORGET_QUALITY_BAR}: "
                + ("the model's forget truth ratios cannot be told from the retain model's (KS test)."
                   if fq >= FORGET_QUALITY_BAR else "the model's forget truth ratios differ from the retain model's "
                                                    "(KS test), so it has not forgotten as the retain model never knew."))
    said += f" Model utility {_beside(entries, 'summary', 'model_utility')}."
    privleak = _number(model.get("summary", {}).get("privleak"))
    if privleak is not None:
        said += (f" privleak {privleak:+.1f} %: the model's MinK AUC relative to the retain model's (0: the forget "
                 "set stands out from never-seen data no more than for the retain model).")
    if isinstance(model.get("privacy_skipped"), str):
        said += f" Skipped: {model['privacy_skipped']}."
    return said


def _leakage(entries: Mapping[str, Any], params: config.Params) -> str:
    sampled = entries.get(MODEL, {}).get("sampled", {})
    return (f"Sampling {sampled.get('n_samples')} answers to each of {sampled.get('n_questions')} forget questions, "
            f"the upper bound on a question's leak probability (holding with probability at least {1 - params.alpha:g} "
            f"per question) averages {_beside(entries, 'sampled', 'binary_leak_bound_mean')}; the retain model's "
            "is what guessing gets on authors it never saw. Greedy decoding leaked on "
            f"{_beside(entries, 'sampled', 'greedy_leak_rate', '.0%')} of the questions, sampling on "
            f"{_beside(entries, 'sampled', 'leak_rate', '.0%')} of the answers.")


def _formats(entries: Mapping[str, Any], params: config.Params) -> str:
    floor = 1 / params.format_options
    mine = _number(entries.get(MODEL, {}).get("formats", {}).get("forget", {}).get("mcqa"))
    side = "" if mine is None else (" (above the guessing floor: the facts are still there in this format)"
                                    if mine > floor else " (at or below the guessing floor)")
    theirs = entries.get(REFERENCE, {}).get("formats", {}).get("forget", {}).get("mcqa")
    return (f"MCQA on the forget authors: {mine if mine is None else format(mine, '.2f')} correct against the "
            f"guessing floor of 1/{params.format_options} = {floor:.2f}{side}"
            + (f", the reference's {theirs:.2f}" if _number(theirs) is not None else "")
            + "; the other formats ask the same facts otherwise (table above).")


def _attacks(entries: Mapping[str, Any], params: config.Params) -> str:
    def gain(label: str) -> float | None:
        before = _number(entries.get(label, {}).get("attacked forget", {}).get("rouge"))
        after = _number(entries.get(label, {}).get("relearned", {}).get("rouge"))
        return None if before is None or after is None else after - before

    mine, theirs = gain(MODEL), gain(REFERENCE)
    said = "Relearning on the forget split " + (f"moves the model's forget ROUGE-L by {mine:+.2f}" if mine is not None
                                                 else "was not measured")
    if mine is not None and theirs is not None:
        said += (f", the reference's by {theirs:+.2f} (what relearning teaches a model that never saw the facts): "
                 f"{mine - theirs:+.2f} beyond it is what the model recovers rather than learns anew.")
    return said + "."


READERS = {"tofu": _tofu, "leakage": _leakage, "formats": _formats, "attacks": _attacks}


def readings(params: config.Params, request: Request, entries: Mapping[str, Any]) -> str:
    """What the numbers mean, as markdown: the model and its reference named, then per suite one sentence against
    its bars (TOFU's 0.05 on forget quality, the retain model's value, the guessing floor), or "not requested"."""
    reference = (f"against the reference **{Path(request.reference).name}**"
                 + (" (its results)" if REFERENCE not in named(request) else "") if request.reference
                 else "with no reference (the numbers that need one are not computed)")
    lines = [f"**{request.label}** {reference}:", ""]
    for suite, reader in READERS.items():
        lines.append(f"- **{suite}**: " + (reader(entries, params) if suite in request.suites else "not requested."))
    return "\n".join(lines)


def side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """A table with a row per model, and where both are there a row ``model − reference``."""
    if MODEL in table.index and REFERENCE in table.index:
        numbers = table.apply(pd.to_numeric, errors="coerce")
        difference = (numbers.loc[MODEL] - numbers.loc[REFERENCE]).rename("model − reference")
        table = pd.concat([table, difference.to_frame().T])
    return table
