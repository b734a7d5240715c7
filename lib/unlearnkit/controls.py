"""Controls of the unlearn station and their calibration (Wang et al., "Unlearning with Control", docs/metrics.md §5).

Three controls, each a scalar that runs from "no unlearning" to "the full run":

- **model mixing** (MM), a in [0, 1]: θ = (1 − a)·θ_original + a·θ_unlearned (:func:`unlearning.mix_models`);
- **early stopping** (ES), t: the weights notebook 02 kept at step t of the run (:func:`pipeline.trajectory_steps`);
- **objective capping** (OC), δ: the run redone with the forget NLL capped at δ per example
  (``cap_delta`` of :class:`unlearning.UnlearningLoss`; GA family only).

Every setting of a control is judged by a *PS profile*: parameterisation strength (:mod:`metrics.ps`) on the
held-out retain set (never trained on during unlearning) and on the forget set. A setting **passes** when
PS-exact and PS-perturb on held-out retain lose at most 10 % of their value before unlearning and PS-similar
on forget loses at most 50 %; among passing settings the best is the one with the lowest PS-exact on forget.
:func:`calibrate` searches a coarse grid, then a fine grid next to the best coarse setting.

Speed. PS-exact is computed by teacher forcing, one forward pass per item, instead of a search of greedy
decodings: greedy decoding from x + y^{<k} reproduces y^{≥k} exactly if and only if the argmax of the
next-token distribution equals y_j at every position j ≥ k, given the true prefix x + y^{<j} (decoding
never leaves the true path while it matches). So the shortest successful k is one past the last position
whose argmax is wrong, the same k that the linear scan of :mod:`metrics.ps` finds (and its binary search,
since exact success is then monotone in k), up to float near-ties between the two kinds of forward pass.
PS-similar still needs generation; its search is confined to k < k_exact, because every exact success is
a similar success. ``teacher_forced=False`` runs :func:`metrics.ps.evaluate_ps` itself (the reference).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import models, pipeline, runs
from .metrics import ps
from .unlearning import mix_models

#: A PS profile: ``{"heldout_retain": {"ps_exact": ...}, "forget": {...}}``, the layout of metrics.json.
Profile = dict[str, dict[str, float]]

HELDOUT, FORGET = "heldout_retain", "forget"
#: What calibration needs: the three pass criteria and the ranking (PS-exact on forget), plus PS-perturb
#: on forget for the comparison table.
CALIBRATION_METRICS: dict[str, tuple[str, ...]] = {HELDOUT: ("ps_exact", "ps_perturb"),
                                                   FORGET: ("ps_exact", "ps_perturb", "ps_similar")}
#: All three PS metrics on both sets: the calibrated comparison (Wang et al.'s Table 3).
TABLE_METRICS: dict[str, tuple[str, ...]] = {HELDOUT: ("ps_exact", "ps_perturb", "ps_similar"),
                                             FORGET: ("ps_exact", "ps_perturb", "ps_similar")}
PS_METRICS = ("ps_exact", "ps_perturb", "ps_similar")

#: The pass criteria of docs/metrics.md §5: (split, metric) -> which tolerance applies.
CRITERIA = (((HELDOUT, "ps_exact"), "retain"), ((HELDOUT, "ps_perturb"), "retain"), ((FORGET, "ps_similar"), "forget"))
#: Slack on the pass boundary, so that "loses exactly 10 %" passes despite 0.9·x rounding above x − 0.1·x.
_BOUNDARY_SLACK = 1e-9


# --------------------------------------------------------------------------- PS profiles


@torch.no_grad()
def exact_prefix_lengths(model, prompts_ids: Sequence[Sequence[int]], answers_ids: Sequence[Sequence[int]],
                         pad_token_id: int, batch_size: int = 32) -> list[int | None]:
    """Per item, the shortest k (0 .. |y|-1) such that greedy decoding from prompt + y^{<k} reproduces
    y^{≥k} exactly, by teacher forcing (see the module docstring); None when no k works or y is empty."""
    if len(prompts_ids) != len(answers_ids):
        raise ValueError(f"{len(prompts_ids)} prompts but {len(answers_ids)} answers")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    result: list[int | None] = [None] * len(prompts_ids)
    order = sorted(range(len(prompts_ids)), key=lambda i: len(prompts_ids[i]) + len(answers_ids[i]))
    order = [i for i in order if len(answers_ids[i]) > 0]
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        rows = [list(prompts_ids[i]) + list(answers_ids[i]) for i in idx]
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, row in enumerate(rows):  # right padding: positions 0.. as in an unpadded pass
            ids[r, :len(row)] = torch.tensor(row)
            mask[r, :len(row)] = 1
        predicted = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.argmax(-1).cpu()
        for r, i in enumerate(idx):
            n_prompt, answer = len(prompts_ids[i]), list(answers_ids[i])
            # the prediction at position p is the token p + 1: answer token j comes from n_prompt - 1 + j
            hits = (predicted[r, n_prompt - 1:n_prompt - 1 + len(answer)] == torch.tensor(answer)).tolist()
            misses = [j for j, ok in enumerate(hits) if not ok]
            k = misses[-1] + 1 if misses else 0
            result[i] = k if k < len(answer) else None  # k = |y| leaves nothing to reproduce: a failure
    model.train(was_training)
    return result


def _split_ps(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], metrics: Iterable[str],
              batch_size: int, search: str, rouge_threshold: float) -> dict[str, float]:
    metrics = set(metrics)
    unknown = metrics - set(PS_METRICS)
    if unknown:
        raise ValueError(f"unknown PS metrics {sorted(unknown)}; use {', '.join(PS_METRICS)}")
    questions = [r["question"] for r in rows]
    answers = [ps.answer_token_ids(tokenizer, r["answer"]) for r in rows]
    lengths = [len(a) for a in answers]
    pad = models.pad_token_id(tokenizer)
    out: dict[str, float] = {}
    k_exact = None
    if metrics & {"ps_exact", "ps_similar"}:
        prompts = [models.encode_prompt(tokenizer, template, q) for q in questions]
        k_exact = exact_prefix_lengths(model, prompts, answers, pad, batch_size)
    if "ps_exact" in metrics:
        out["ps_exact"] = float(ps.ps_from_prefix_lengths(k_exact, lengths).mean())
    if "ps_perturb" in metrics:
        with_paraphrase = [i for i, r in enumerate(rows) if r.get("paraphrased_question")]
        if with_paraphrase:
            prompts = [models.encode_prompt(tokenizer, template, rows[i]["paraphrased_question"]) for i in with_paraphrase]
            ks = exact_prefix_lengths(model, prompts, [answers[i] for i in with_paraphrase], pad, batch_size)
            out["ps_perturb"] = float(ps.ps_from_prefix_lengths(ks, [lengths[i] for i in with_paraphrase]).mean())
            out["n_items_perturb"] = len(with_paraphrase)
    if "ps_similar" in metrics:
        oracle, oracle_lengths = ps.prefix_success_oracle(model, tokenizer, template, questions,
                                                          [r["answer"] for r in rows], "similar", rouge_threshold,
                                                          batch_size)
        assert oracle_lengths == lengths  # the same answer tokens on both paths
        # search only below the exact solution, a known similar success; where none, the whole answer
        bounds = [n if k is None else k for k, n in zip(k_exact, lengths)]
        found = ps.search_shortest_prefix(bounds, oracle, search)
        ks = [f if f is not None else k for f, k in zip(found, k_exact)]
        out["ps_similar"] = float(ps.ps_from_prefix_lengths(ks, lengths).mean())
    out["n_items"] = len(rows)
    return out


def ps_profile(model, tokenizer, template, forget_rows: Sequence[Mapping[str, Any]],
               heldout_rows: Sequence[Mapping[str, Any]], max_items: int | None = None, batch_size: int = 32,
               metrics: Mapping[str, Sequence[str]] = CALIBRATION_METRICS, search: str = "binary",
               rouge_threshold: float = 0.5, teacher_forced: bool = True) -> Profile:
    """PS-exact and PS-perturb on held-out retain, PS-exact / PS-perturb / PS-similar on forget (by default;
    ``metrics`` chooses per split), over the first ``max_items`` rows of each. PS-perturb asks the
    ``paraphrased_question`` of the rows that have one. ``teacher_forced=False`` calls
    :func:`metrics.ps.evaluate_ps` (all three metrics, generation only) and keeps the requested ones."""
    splits = {HELDOUT: list(heldout_rows), FORGET: list(forget_rows)}
    unknown = set(metrics) - set(splits)
    if unknown:
        raise ValueError(f"unknown splits {sorted(unknown)} in a PS profile; use {HELDOUT!r} and {FORGET!r}")
    profile: Profile = {}
    for split, wanted in metrics.items():
        rows = splits[split][:max_items] if max_items else splits[split]
        if not rows:
            raise ValueError(f"no {split} rows to evaluate")
        if teacher_forced:
            profile[split] = _split_ps(model, tokenizer, template, rows, wanted, batch_size, search, rouge_threshold)
        else:
            means, _ = ps.evaluate_ps(model, tokenizer, template, rows, search=search, batch_size=batch_size,
                                      rouge_threshold=rouge_threshold, progress=False)
            profile[split] = {k: v for k, v in means.items() if k in wanted or k.startswith("n_items")}
    return profile


def risks(model, tokenizer, template, forget_rows: Sequence[Mapping[str, Any]],
          heldout_rows: Sequence[Mapping[str, Any]], max_items: int | None = None, batch_size: int = 32) -> Profile:
    """Unlearning risk (mean answer NLL on forget) and retain risk (on held-out retain), Wang et al.'s Fig. 1."""
    from .metrics.tofu import answer_nll

    out: Profile = {}
    for split, rows in ((HELDOUT, heldout_rows), (FORGET, forget_rows)):
        rows = list(rows)[:max_items] if max_items else list(rows)
        nll = answer_nll(model, tokenizer, template, [r["question"] for r in rows], [r["answer"] for r in rows],
                         batch_size)
        out[split] = {"nll": float(nll.mean())}
    return out


class PSEvaluator:
    """``evaluator(model) -> Profile`` with the tokenizer, template, rows and sizes fixed once: the
    ``evaluate`` that the sweeps and :func:`calibrate` take. With ``with_risks`` the profile also holds
    the NLL of each split (:func:`risks`).

    With ``lazy_before`` (the profile before unlearning), PS-similar on forget is computed only for models
    that keep held-out retain within ``retain_tol`` of it, and is NaN otherwise: such a setting fails the
    criteria whatever its forget PS-similar, and that search (generation) is most of the cost of a profile.
    """

    def __init__(self, tokenizer, template, forget_rows: Sequence[Mapping[str, Any]],
                 heldout_rows: Sequence[Mapping[str, Any]], max_items: int | None = None, batch_size: int = 32,
                 search: str = "binary", with_risks: bool = False, lazy_before: Profile | None = None,
                 retain_tol: float = 0.10):
        self.tokenizer, self.template = tokenizer, template
        self.forget_rows = list(forget_rows)[:max_items] if max_items else list(forget_rows)
        self.heldout_rows = list(heldout_rows)[:max_items] if max_items else list(heldout_rows)
        self.batch_size, self.search, self.with_risks = int(batch_size), search, with_risks
        self.lazy_before, self.retain_tol = lazy_before, retain_tol
        self.calls = 0

    def _ps(self, model, metrics: Mapping[str, Sequence[str]]) -> Profile:
        return ps_profile(model, self.tokenizer, self.template, self.forget_rows, self.heldout_rows,
                          batch_size=self.batch_size, metrics=metrics, search=self.search)

    def __call__(self, model, metrics: Mapping[str, Sequence[str]] = CALIBRATION_METRICS) -> Profile:
        self.calls += 1
        lazy = self.lazy_before is not None and "ps_similar" in metrics.get(FORGET, ())
        if lazy:
            first = {split: tuple(m for m in wanted if (split, m) != (FORGET, "ps_similar"))
                     for split, wanted in metrics.items()}
            profile = self._ps(model, first)
            if retain_holds(self.lazy_before, profile, self.retain_tol):
                profile = merge_profiles(profile, self._ps(model, {FORGET: ("ps_similar",)}))
            else:
                profile[FORGET]["ps_similar"] = math.nan
        else:
            profile = self._ps(model, metrics)
        if self.with_risks:
            profile = merge_profiles(profile, self.risks(model))
        return profile

    def complete(self, model, profile: Profile, metrics: Mapping[str, Sequence[str]] = TABLE_METRICS) -> Profile:
        """``profile`` of ``model`` with the metrics of ``metrics`` it lacks (or holds as NaN) computed."""
        missing = {split: tuple(m for m in wanted if not _present(profile.get(split, {}).get(m)))
                   for split, wanted in metrics.items()}
        missing = {split: wanted for split, wanted in missing.items() if wanted}
        return merge_profiles(profile, self._ps(model, missing)) if missing else profile

    def risks(self, model) -> Profile:
        return risks(model, self.tokenizer, self.template, self.forget_rows, self.heldout_rows,
                     batch_size=self.batch_size)


def _present(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def merge_profiles(*profiles: Mapping[str, Mapping[str, float]]) -> Profile:
    """One profile with every split's metrics of all ``profiles`` (later ones win on a clash)."""
    out: Profile = {}
    for p in profiles:
        for split, metrics in p.items():
            out.setdefault(split, {}).update(metrics)
    return out


def records(table) -> list[dict[str, Any]]:
    """The rows of a sweep or calibration table as JSON-ready dicts (NaN as None)."""
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in table.to_dict("records")]


def flatten(profile: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """``{"heldout_retain_ps_exact": ..., "forget_ps_similar": ...}``: one table row."""
    return {f"{split}_{metric}": value for split, metrics in profile.items() for metric, value in metrics.items()
            if not metric.startswith("n_items")}


# --------------------------------------------------------------------------- the pass criteria


def relative_loss(before: float, after: float) -> float:
    """The fraction of ``before`` lost: (before − after) / before; 0 when there was nothing to lose."""
    return (before - after) / before if before > 0 else 0.0


def criteria(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
             retain_tol: float = 0.10, forget_sim_tol: float = 0.50) -> dict[str, dict[str, float | bool]]:
    """Each pass criterion of docs/metrics.md §5 with the relative loss and whether it holds:
    ``{"heldout_retain_ps_exact": {"loss": 0.04, "tolerance": 0.1, "ok": True}, ...}``.

    A metric absent from both profiles (PS-perturb on rows without paraphrases) is not a criterion."""
    for name, tol in (("retain_tol", retain_tol), ("forget_sim_tol", forget_sim_tol)):
        if not 0 <= tol <= 1:
            raise ValueError(f"{name} is a fraction of the value before unlearning, in [0, 1]; got {tol}")
    out: dict[str, dict[str, float | bool]] = {}
    for (split, metric), kind in CRITERIA:
        b, a = before.get(split, {}).get(metric), after.get(split, {}).get(metric)
        if b is None and a is None:
            continue
        if b is None or a is None:
            side = "before" if b is None else "after"
            raise KeyError(f"{split} {metric} is missing from the profile {side} unlearning")
        tol = retain_tol if kind == "retain" else forget_sim_tol
        out[f"{split}_{metric}"] = {"loss": relative_loss(b, a), "tolerance": tol,
                                    "ok": a >= (1.0 - tol) * b - _BOUNDARY_SLACK}
    return out


def retain_holds(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
                 retain_tol: float = 0.10) -> bool:
    """The held-out retain half of :func:`passes` alone (PS-exact and PS-perturb within ``retain_tol``)."""
    for (split, metric), kind in CRITERIA:
        if kind == "retain" and metric in before.get(split, {}):
            b, a = before[split][metric], after[split][metric]
            if not a >= (1.0 - retain_tol) * b - _BOUNDARY_SLACK:
                return False
    return True


def passes(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
           retain_tol: float = 0.10, forget_sim_tol: float = 0.50) -> bool:
    """Whether ``after`` keeps PS-exact and PS-perturb on held-out retain within ``retain_tol`` (10 %) of
    their value ``before`` unlearning and PS-similar on forget within ``forget_sim_tol`` (50 %)."""
    return all(c["ok"] for c in criteria(before, after, retain_tol, forget_sim_tol).values())


# --------------------------------------------------------------------------- a control as a function


def _key(value: float) -> float:
    return round(float(value), 10)  # 0.1 * 3 and 0.3 are one setting


class ControlEvaluator:
    """A memoised ``value -> Profile`` for one control: each setting is built and evaluated once, however
    many sweeps and calibrations ask for it. ``known`` seeds settings whose profile is already known (a = 0
    of model mixing and t = 0 of early stopping are the model before unlearning)."""

    def __init__(self, name: str, profile_of: Callable[[float], Profile],
                 known: Mapping[float, Profile] | None = None, allowed: Sequence[float] | None = None):
        self.name = name
        self._profile_of = profile_of
        self.results: dict[float, Profile] = {_key(v): p for v, p in (known or {}).items()}
        self.allowed = None if allowed is None else sorted(float(v) for v in allowed)

    def __call__(self, value: float) -> Profile:
        key = _key(value)
        if self.allowed is not None and key not in {_key(v) for v in self.allowed}:
            raise ValueError(f"{self.name} = {value} is not an available setting; available: {self.allowed}")
        if key not in self.results:
            self.results[key] = self._profile_of(float(value))
        return self.results[key]


def mixing_evaluator(original, unlearned, evaluate: Callable[[Any], Profile],
                     before: Profile | None = None) -> ControlEvaluator:
    """a -> the profile of (1 − a)·θ_original + a·θ_unlearned. a = 0 is the original model bit for bit, so
    ``before`` (its profile) is reused there."""
    return ControlEvaluator("a", lambda a: evaluate(mix_models(original, unlearned, a)),
                            known={0.0: before} if before is not None else None)


def early_stopping_evaluator(profile: str, run: str, evaluate: Callable[[Any], Profile],
                             before: Profile | None = None) -> ControlEvaluator:
    """t -> the profile of the weights kept at step t of notebook 02's run ``run`` (t = 0: ``before``)."""
    kept = dict(runs.trajectory_steps(profile, run))
    if not kept:
        raise FileNotFoundError(f"no weights kept along unlearning run {run!r} of profile {profile!r}: run "
                                f"notebook 02 with unlearn_save_every > 0 (make notebook NB=02 PROFILE={profile})")

    def profile_of(step: float):
        model, _, _ = models.load_model(kept[int(step)])
        return evaluate(model)

    steps = ([0] if before is not None else []) + sorted(kept)
    return ControlEvaluator("t", profile_of, known={0: before} if before is not None else None, allowed=steps)


def capped_run(params: Mapping[str, Any], method: str, delta: float) -> tuple[dict[str, Any], str]:
    """A copy of ``params`` with one more entry in ``method_settings``, ``<method>_cap<δ>`` -> ``{method,
    cap_delta: δ}``, and that run's name: :func:`pipeline.unlearned_model` caches it under its own folder
    (``models/unlearned-gd_cap2``) and key, so each δ is trained once."""
    from .unlearning import CAPPABLE_METHODS

    if method not in CAPPABLE_METHODS:
        raise ValueError(f"objective capping applies to {', '.join(CAPPABLE_METHODS)}, not {method!r}")
    if not (math.isfinite(delta) and delta > 0):
        raise ValueError(f"the cap δ must be a positive number, got {delta}")
    run = f"{method}_cap{float(delta):g}"
    settings = dict(params.get("method_settings") or {})
    settings[run] = {**settings.get(method, {}), "method": method, "cap_delta": float(delta)}
    return {**params, "method_settings": settings}, run


def capping_evaluator(params: Mapping[str, Any], profile: str, evaluate: Callable[[Any], Profile],
                      method: str = "gd") -> ControlEvaluator:
    """δ -> the profile of ``method`` rerun with the forget NLL capped at δ (trained on first use, cached
    on disk after). The profile also records, under ``"training"``, the run's forget NLL at its last step
    (uncapped, as logged), which capping should hold near δ."""

    def profile_of(delta: float) -> Profile:
        run_params, run = capped_run(params, method, delta)
        model, _, _, history, _ = pipeline.unlearned_model(run_params, profile, run)
        logged = [h for h in history if "forget_nll" in h]
        training = {"forget_nll": logged[-1]["forget_nll"]} if logged else {}
        return {**evaluate(model), "training": training}

    return ControlEvaluator("delta", profile_of)


# --------------------------------------------------------------------------- sweeps and calibration


def _row(control: str, value: float, profile: Profile, before: Profile | None, retain_tol: float,
         forget_sim_tol: float, stage: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {control: float(value)}
    if stage is not None:
        row["stage"] = stage
    row.update(flatten(profile))
    if before is not None:
        checks = criteria(before, profile, retain_tol, forget_sim_tol)
        row.update({f"{name}_loss": c["loss"] for name, c in checks.items()})
        row["passes"] = all(c["ok"] for c in checks.values())
    return row


def sweep(values: Iterable[float], evaluate: ControlEvaluator | Callable[[float], Profile], control: str | None = None,
          before: Profile | None = None, retain_tol: float = 0.10, forget_sim_tol: float = 0.50):
    """A DataFrame with one row per setting: the control value, the flattened profile and, given
    ``before``, each criterion's relative loss and ``passes``."""
    import pandas as pd

    control = control or getattr(evaluate, "name", "value")
    rows = [_row(control, v, evaluate(v), before, retain_tol, forget_sim_tol) for v in values]
    return pd.DataFrame(rows)


def mixing_sweep(original, unlearned, a_values: Iterable[float], evaluate: Callable[[Any], Profile],
                 before: Profile | None = None, **tolerances):
    """Profiles of the mixed models (1 − a)·original + a·unlearned over ``a_values`` (see :func:`sweep`)."""
    return sweep(a_values, mixing_evaluator(original, unlearned, evaluate, before), "a", before, **tolerances)


def early_stopping_sweep(profile: str, run: str, evaluate: Callable[[Any], Profile], before: Profile | None = None,
                         **tolerances):
    """Profiles at every step notebook 02 kept along ``run`` (and t = 0, the model before, given ``before``),
    with the epoch of each step."""
    control = early_stopping_evaluator(profile, run, evaluate, before)
    table = sweep(control.allowed, control, "t", before, **tolerances)
    epochs = {0: 0.0, **{step: json.loads((folder / "unlearnkit.json").read_text()).get("epoch")
                         for step, folder in runs.trajectory_steps(profile, run)}}
    table.insert(1, "epoch", [epochs.get(int(t)) for t in table["t"]])
    return table


def capping_sweep(params: Mapping[str, Any], profile: str, deltas: Iterable[float], evaluate: Callable[[Any], Profile],
                  method: str = "gd", before: Profile | None = None, **tolerances):
    """Profiles of ``method`` rerun with each cap δ in ``deltas`` (see :func:`capping_evaluator`)."""
    return sweep(deltas, capping_evaluator(params, profile, evaluate, method), "delta", before, **tolerances)


def mixing_grid(n: int) -> list[float]:
    """The coarse grid of model mixing: a = 0 (the model before, free: its profile is known) and n evenly
    spaced values up to 1 (n = 10: 0.1, 0.2, ..., 1.0)."""
    if n < 1:
        raise ValueError(f"a coarse grid needs at least one value, got {n}")
    return [0.0] + [round(i / n, 10) for i in range(1, n + 1)]


def best_passing(table, control: str):
    """The row of ``table`` (from :func:`sweep`) with the lowest PS-exact on forget among passing settings,
    ties broken by the higher PS-exact on held-out retain; None when nothing passes."""
    passing = table[table["passes"]]
    if passing.empty:
        return None
    ranked = passing.sort_values([f"{FORGET}_ps_exact", f"{HELDOUT}_ps_exact", control],
                                 ascending=[True, False, True], kind="mergesort")
    return ranked.iloc[0]


@dataclass
class Calibration:
    """The result of :func:`calibrate`: ``best`` is the calibrated control value (None when no setting
    passes) with its ``profile``; ``table`` holds every evaluated setting, coarse and fine; ``region`` the
    interval that was refined (None when there was none)."""

    control: str
    best: float | None
    profile: Profile | None
    table: Any = field(repr=False)
    region: tuple[float, float] | None = None
    coarse_best: float | None = None
    #: Set by :func:`calibrate_mixing`: the full PS profile at ``best`` (all metrics on both sets) and the
    #: profile of the uncontrolled run (a = 1).
    reported: Profile | None = None
    uncontrolled: Profile | None = None

    @property
    def found(self) -> bool:
        return self.best is not None


def _fine_values(lo: float, hi: float, n: int, allowed: Sequence[float] | None) -> list[float]:
    """n values strictly inside (lo, hi), evenly spaced; for a discrete control, the available values
    inside it nearest to those."""
    inside = list(np.linspace(lo, hi, n + 2)[1:-1])
    if allowed is None:
        return [float(v) for v in inside]
    low, high = min(lo, hi), max(lo, hi)
    candidates = [v for v in allowed if low < v < high]
    picked = {min(candidates, key=lambda c: (abs(c - v), c)) for v in inside} if candidates else set()
    return sorted(picked, reverse=hi < lo)


def calibrate(control_values_coarse: Sequence[float], evaluate: Callable[[float], Profile], fine_points: int = 10, *,
              before: Profile, control: str | None = None, stronger: str = "higher",
              allowed: Sequence[float] | None = None, retain_tol: float = 0.10,
              forget_sim_tol: float = 0.50) -> Calibration:
    """Coarse-to-fine calibration of one scalar control (docs/metrics.md §5).

    1. Evaluate every coarse value; among those that pass (:func:`passes` against ``before``) take the one
       with the lowest PS-exact on forget.
    2. Evaluate ``fine_points`` values strictly between it and its neighbour on the coarse grid towards
       stronger unlearning (``stronger="higher"``: larger values unlearn more, as a, t and δ do). When the
       best coarse value is the strongest of the grid there is no such region and nothing is refined;
       when no coarse value passes, neither (put a setting known to pass, a = 0, in the coarse grid).
    3. Return the best passing setting of all, with the full table (``stage`` coarse / fine).

    ``evaluate(value) -> Profile`` may be a :class:`ControlEvaluator`; its ``allowed`` values (early
    stopping's kept steps) are used for the fine grid unless ``allowed`` is given.
    """
    import pandas as pd

    if stronger not in ("higher", "lower"):
        raise ValueError(f"stronger must be 'higher' or 'lower', got {stronger!r}")
    if fine_points < 0:
        raise ValueError(f"fine_points must be >= 0, got {fine_points}")
    control = control or getattr(evaluate, "name", "value")
    allowed = allowed if allowed is not None else getattr(evaluate, "allowed", None)
    coarse = sorted({_key(v) for v in control_values_coarse}, reverse=stronger == "lower")  # weak -> strong
    if not coarse:
        raise ValueError("no coarse values to calibrate over")

    profiles: dict[float, Profile] = {}

    def evaluate_rows(values: Iterable[float], stage: str) -> list[dict[str, Any]]:
        rows = []
        for v in values:
            profiles[_key(v)] = evaluate(v)
            rows.append(_row(control, v, profiles[_key(v)], before, retain_tol, forget_sim_tol, stage))
        return rows

    rows = evaluate_rows(coarse, "coarse")
    coarse_best = best_passing(pd.DataFrame(rows), control)
    region = None
    if coarse_best is not None:
        position = coarse.index(_key(coarse_best[control]))
        if position + 1 < len(coarse):
            region = (coarse[position], coarse[position + 1])
            seen = {_key(r[control]) for r in rows}
            fine = [v for v in _fine_values(*region, fine_points, allowed) if _key(v) not in seen]
            rows += evaluate_rows(fine, "fine")
    table = pd.DataFrame(rows)
    best = best_passing(table, control)
    best_value = None if best is None else float(best[control])
    return Calibration(control=control, best=best_value, profile=None if best is None else profiles[_key(best_value)],
                       table=table, region=region,
                       coarse_best=None if coarse_best is None else float(coarse_best[control]))


def calibrate_mixing(original, unlearned, evaluate: PSEvaluator, before: Profile, coarse_points: int = 10,
                     fine_points: int = 10, evaluator: ControlEvaluator | None = None, **tolerances) -> Calibration:
    """Calibrate model mixing of one unlearned model (the paper's recommended control): :func:`calibrate` over
    :func:`mixing_grid`, then the full profile (:data:`TABLE_METRICS`) at the calibrated a and at a = 1, the
    uncontrolled run. ``evaluator`` reuses the settings already evaluated by a sweep of the same pair of models."""
    evaluator = evaluator or mixing_evaluator(original, unlearned, evaluate, before)
    result = calibrate(mixing_grid(coarse_points), evaluator, fine_points, before=before, control="a", **tolerances)
    result.uncontrolled = evaluate.complete(unlearned, evaluator(1.0))
    if result.found:
        result.reported = evaluate.complete(mix_models(original, unlearned, result.best), result.profile)
    return result


def found_unlearning(calibration: Calibration) -> bool:
    """Whether calibration found a passing setting that unlearns at all (a > 0; a = 0 is the model before)."""
    return calibration.found and calibration.best > 0


# --------------------------------------------------------------------------- answers and figures


def answers_at_steps(profile: str, run: str, steps: Sequence[int], rows: Sequence[Mapping[str, Any]],
                     original=None, max_new_tokens: int = 48, batch_size: int = 32):
    """Greedy answers to ``rows`` at some kept steps of ``run`` (step 0 is ``original``, the model
    before unlearning): coherent early, collapsed late under excessive unlearning (Wang et al.'s Table 1)."""
    import pandas as pd

    from .generation import greedy_answers

    kept = dict(runs.trajectory_steps(profile, run))
    questions = [r["question"] for r in rows]
    table = {"question": questions, "ground truth": [r["answer"] for r in rows]}
    for step in steps:
        if step == 0:
            if original is None:
                raise ValueError("step 0 is the model before unlearning: pass it as original")
            model, tokenizer, template = original
        else:
            if step not in kept:
                raise ValueError(f"step {step} was not kept along {run!r}; kept: {sorted(kept)}")
            model, tokenizer, template = models.load_model(kept[step])
        table[f"step {step}"] = greedy_answers(model, tokenizer, template, questions, max_new_tokens, batch_size)
    return pd.DataFrame(table)


def _criterion_lines(ax, before: Profile, retain_tol: float, forget_sim_tol: float) -> None:
    ax.axhline((1 - retain_tol) * before[HELDOUT]["ps_exact"], color="C0", ls=":", lw=1,
               label=f"retain PS-exact floor ({1 - retain_tol:.0%} of before)")
    if before[HELDOUT].get("ps_perturb") is not None:
        ax.axhline((1 - retain_tol) * before[HELDOUT]["ps_perturb"], color="C9", ls=":", lw=1,
                   label=f"retain PS-perturb floor ({1 - retain_tol:.0%} of before)")
    ax.axhline((1 - forget_sim_tol) * before[FORGET]["ps_similar"], color="C2", ls=":", lw=1,
               label=f"forget PS-similar floor ({1 - forget_sim_tol:.0%})")


def plot_ps_lines(ax, table, control: str, before: Profile | None = None, retain_tol: float = 0.10,
                  forget_sim_tol: float = 0.50, title: str = "", xlabel: str | None = None, best: float | None = None,
                  log_x: bool = False):
    """PS-exact on held-out retain and forget, PS-perturb on held-out retain and PS-similar on forget against a
    control, with every pass floor and the best passing setting marked (PS-perturb is low on real TOFU and is
    often the criterion that fails). ``log_x`` puts the control on a log2 axis ticked at its values (the caps δ)."""
    table = table.sort_values(control)
    styles = ((f"{HELDOUT}_ps_exact", "held-out retain PS-exact", "C0", "o"),
              (f"{HELDOUT}_ps_perturb", "held-out retain PS-perturb", "C9", "d"),
              (f"{FORGET}_ps_exact", "forget PS-exact", "C3", "s"),
              (f"{FORGET}_ps_similar", "forget PS-similar", "C2", "^"))
    for column, label, colour, marker in styles:
        if column in table:
            ax.plot(table[control], table[column], marker=marker, ms=4, color=colour, label=label)
    if before is not None:
        _criterion_lines(ax, before, retain_tol, forget_sim_tol)
    if "passes" in table:
        failing = table[~table["passes"].astype(bool)]
        ax.scatter(failing[control], failing[f"{HELDOUT}_ps_exact"], marker="x", color="k", zorder=3, s=25,
                   label="fails the criteria")
    if best is not None:
        ax.axvline(best, color="grey", ls="--", lw=1, label="best passing setting")
        symbol = {"delta": "δ"}.get(control, control)
        title = f"{title}: best {symbol} = {best:.3g}" if title else f"best {symbol} = {best:.3g}"
    ax.set(xlabel=xlabel or control, ylabel="PS", title=title, ylim=(-0.03, 1.05))
    if log_x:
        values = sorted(float(v) for v in table[control])
        ax.set_xscale("log", base=2)
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.minorticks_off()
        ax.set_xlim(values[0] / 1.5, values[-1] * 1.5)  # room around a single value too
    return ax


def shared_legend(fig, ax, ncol: int = 4):
    """One legend below a row of panels, from the handles of ``ax`` (it would hide data inside a panel)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, fontsize="small",
               frameon=False)
    return fig


def plot_trajectory(table, before: Profile, retain_tol: float = 0.10, title: str = ""):
    """Wang et al.'s Fig. 1 analogue: risks (NLL) and PS-exact along an unlearning run."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 4.2))
    left.plot(table["t"], table[f"{FORGET}_nll"], marker="o", ms=4, color="C3", label="unlearning risk (forget NLL)")
    left.plot(table["t"], table[f"{HELDOUT}_nll"], marker="o", ms=4, color="C0",
              label="retain risk (held-out retain NLL)")
    left.set(xlabel="step t", ylabel="mean answer NLL (log scale)", yscale="log", title="Risks along the run")
    left.legend(fontsize="small")
    right.plot(table["t"], table[f"{HELDOUT}_ps_exact"], marker="o", ms=4, color="C0", label="held-out retain")
    right.plot(table["t"], table[f"{FORGET}_ps_exact"], marker="s", ms=4, color="C3", label="forget")
    right.axhline((1 - retain_tol) * before[HELDOUT]["ps_exact"], color="C0", ls=":", lw=1,
                  label=f"{1 - retain_tol:.0%} of held-out retain before")
    right.set(xlabel="step t", ylabel="PS-exact", title="Parameterisation strength along the run", ylim=(-0.03, 1.05))
    right.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
