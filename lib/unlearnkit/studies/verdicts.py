"""Every notebook's findings, and their verdicts over training seeds (notebook 09 collects them).

Each notebook ends with :func:`show`, which prints its findings on this run (one training seed): the paper's
claim, the deciding quantities with their thresholds, and this seed's outcome (holds, partly, fails). The studies
judge their own findings when they run (``calibration.findings``, ``formats.findings``, ``leakage.findings``,
``entropy.findings``, ``alignment.findings``) and store them as data in their ``metrics.json``; notebooks 00-02
are judged here against TOFU's and open-unlearning's expectations, from their stored results. Notebook 09 puts the
findings of every seed present together and judges each by the one rule across seeds
(:func:`unlearnkit.claims.judge_over_seeds`): nothing is parsed back from prose, nothing is typed.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, results, runs
from ..claims import (
    ATTACKS,
    FACT,
    FAILS,
    HOLDS,
    JOSHI,
    NO_TEST,
    NOT,
    OPEN_UNLEARNING,
    PARTLY,
    PARTLY_HOLDS,
    REPRODUCED,
    SCHOLTEN,
    SEEDS_FOR_A_VERDICT,
    TOFU,
    VERDICTS,
    WANG,
    Finding,
    Quantity,
    Verdict,
    counts,
    judge_all,
    names,
    outcome_of,
)
from ..config import Params
from .effects import base as effect_base
from .effects.base import mia_gaps

__all__ = ["Finding", "Quantity", "Verdict", "REPRODUCED", "PARTLY", "NOT", "FACT", "NO_TEST", "HOLDS",
           "PARTLY_HOLDS", "FAILS", "VERDICTS"]

PAPERS = (TOFU, WANG, JOSHI, SCHOLTEN, OPEN_UNLEARNING, ATTACKS)

#: TOFU's expectation of an unlearning run (notebook 02), against the target and the retain model of notebook 01:
#: forget quality rises by at least this factor over the target's,
FORGET_QUALITY_RISE = 10.0
#: forget ROUGE-L falls at least halfway from the target's to the retain model's,
ROUGE_FALL_SHARE = 0.5
#: and model utility keeps at least this share of the target's.
UTILITY_KEPT_SHARE = 0.9
#: A run that keeps less than this share of the target's utility has *collapsed*: its "partly" says so first.
COLLAPSED_SHARE = 0.5
#: Notebook 01: the target reproduces its forget answers (ROUGE-L recall at least this) while forget quality, the
#: KS test's p-value against the retain model, rejects at TOFU's level.
TARGET_ROUGE_MIN, FORGET_QUALITY_LEVEL = 0.9, 0.05
#: open-unlearning's privleak (docs/metrics.md §9): the retain model, scored against the ideal AUC 0.5, lies within
#: this of 0, and the target, scored against the retain model's AUC, below this (OU: a full model about -96).
PRIVLEAK_RETAIN_BAND, PRIVLEAK_TARGET_MAX = 15.0, -50.0
#: A membership-inference attack tells a run's forget set from the holdout when its AUC differs from the retain
#: model's AUC for the same attack by more than this (the retain model never saw either set: its AUC is the null).
MIA_MARGIN = effect_base.MIA_MARGIN
#: The key under which a study stores its findings in its metrics.json's meta.
FINDINGS_KEY = "findings"


# --------------------------------------------------------------------------- notebooks 00-02, judged here


def _data_tour(metrics: Mapping[str, Any], params: Params) -> list[Finding]:
    corpus = metrics["corpus"]
    stored = metrics["meta"]["parameters"]
    forget, retains = stored["forget_split"], stored.get("retain_splits") or []
    n = lambda split: corpus.get(split, {}).get("n_items", 0)  # noqa: E731
    parts = [f"{n('full')} Q&A items in full", f"{n(forget)} in {forget}"]
    parts += [f"{n(s)} in {s}" for s in retains]
    parts += [f"{n(s)} in {s}" for s in ("retain_heldout", "real_authors", "world_facts") if s in corpus]
    return [Finding(runs.DATA_TOUR, TOFU, f"the corpus ({stored.get('data_source', '')})", "; ".join(parts), FACT,
                    f"{runs.DATA_TOUR}_splits", "corpus")]


def _finetune(metrics: Mapping[str, Any], params: Params) -> list[Finding]:
    forget = metrics["meta"]["parameters"]["forget_split"]
    retain = runs.retain_model(params, forget)
    target = metrics["target"]
    rouge, quality = target["forget"]["rouge"], target["summary"].get("forget_quality", math.nan)
    retain_rouge = metrics.get(retain, {}).get("forget", {}).get("rouge", math.nan) if retain else math.nan
    quantities = (Quantity("target forget ROUGE-L", rouge, TARGET_ROUGE_MIN, ">="),
                  Quantity("target forget quality", quality, FORGET_QUALITY_LEVEL, "<", "TOFU's level", ".1e"),
                  Quantity("retain model forget ROUGE-L", retain_rouge, rouge, "<", "the target's"),
                  Quantity("target model utility", target["summary"].get("model_utility", math.nan)))
    parts = (("the target reproduces its forget answers", quantities[0].holds),
             ("forget quality tells it from the retain model", quantities[1].holds),
             ("the retain model does not", quantities[2].holds))
    text = "; ".join(q.text() for q in quantities) + f" (retain model: {retain or 'none'})"
    return [Finding(runs.FINETUNE, TOFU, "fine-tuning on the fictitious authors makes the target reproduce them "
                    "and tells it apart from the retain model, which never saw the forget authors", text,
                    outcome_of(sum(bool(h) for _, h in parts), len(parts)), f"{runs.FINETUNE}_metrics",
                    "fine-tuned target", quantities, parts),
            _privleak(metrics, retain)]


def _privleak(metrics: Mapping[str, Any], retain: str | None) -> Finding:
    """open-unlearning's reading of privleak on notebook 01's models: about 0 for the retain model, strongly negative
    for the target (which was trained on the forget authors and not on the holdout)."""
    claim = ("privleak, the MinK membership-inference AUC of forget against holdout authors relative to the retain "
             "model's, is about 0 for a retain model and strongly negative for a model trained on the forget set")
    figure = f"{runs.UNLEARNING}_ou_summary"
    skipped = metrics["target"].get("privacy_skipped")
    target = metrics["target"]["summary"]
    retain_summary = metrics.get(retain, {}).get("summary", {}) if retain else {}
    if skipped or "privleak" not in target or "privleak" not in retain_summary:
        return Finding(runs.FINETUNE, OPEN_UNLEARNING, claim, f"not measured: {skipped or 'no privacy metrics'}",
                       NO_TEST, figure, "privleak")
    leak_t, leak_r = target["privleak"], retain_summary["privleak"]
    quantities = (Quantity("retain model |privleak|", abs(leak_r), PRIVLEAK_RETAIN_BAND, "<=", "against AUC 0.5",
                           ".1f"),
                  Quantity("target privleak", leak_t, PRIVLEAK_TARGET_MAX, "<", "against the retain model's AUC",
                           ".1f"))
    parts = (("retain model near 0", quantities[0].holds), ("target strongly negative", quantities[1].holds))
    text = (f"retain model ({retain}) privleak {leak_r:+.1f} against AUC 0.5 (|privleak| needs <= "
            f"{PRIVLEAK_RETAIN_BAND:.0f}: {'yes' if parts[0][1] else 'no'}; MinK AUC {retain_summary['mia_mink_auc']:.3f}); "
            f"target privleak {leak_t:+.1f} against the retain model's AUC (needs < {PRIVLEAK_TARGET_MAX:.0f}: "
            f"{'yes' if parts[1][1] else 'no'}; MinK AUC {target['mia_mink_auc']:.3f}); target extraction strength "
            f"{target['extraction_strength']:.3f}, retain model {retain_summary['extraction_strength']:.3f}")
    return Finding(runs.FINETUNE, OPEN_UNLEARNING, claim, text, outcome_of(sum(h for _, h in parts), len(parts)),
                   figure, "privleak", quantities, parts)


def _rouge_bar(before: Mapping[str, Any], retain: str | None) -> tuple[float, float, float]:
    """Notebook 01's target and retain-model forget ROUGE-L, and the bar a run must reach to look unlearned by ROUGE:
    halfway from the target's to the retain model's (the retain model's counts as 0 when there is none)."""
    target_rouge = before["target"]["forget"]["rouge"]
    retain_rouge = before.get(retain, {}).get("forget", {}).get("rouge", 0.0) if retain else 0.0
    return target_rouge, retain_rouge, target_rouge - ROUGE_FALL_SHARE * (target_rouge - retain_rouge)


def unlearning_run_finding(run: str, result: Mapping[str, Any], before: Mapping[str, Any],
                           retain: str | None) -> Finding:
    """TOFU's expectation of one unlearning run: forget quality up by FORGET_QUALITY_RISE over the target's,
    forget ROUGE-L at most halfway from the target's to the retain model's, utility at least UTILITY_KEPT_SHARE of
    the target's. A run that does not unlearn (neither of the first two) fails, whatever its utility."""
    notebook = runs.unlearning_notebook(run)
    quality, utility = result["summary"]["forget_quality"], result["summary"]["model_utility"]
    target = before["target"]["summary"]
    target_q, target_u = target["forget_quality"], target["model_utility"]
    target_rouge, retain_rouge, rouge_bar = _rouge_bar(before, retain)
    quantities = (
        Quantity("forget quality", quality, FORGET_QUALITY_RISE * target_q, ">=",
                 f"{FORGET_QUALITY_RISE:g} x the target's {target_q:.1e}", ".1e"),
        Quantity("forget ROUGE-L", result["forget"]["rouge"], rouge_bar, "<=",
                 f"halfway from the target's {target_rouge:.3f} to the retain model's {retain_rouge:.3f}"),
        Quantity("model utility", utility, UTILITY_KEPT_SHARE * target_u, ">=",
                 f"{UTILITY_KEPT_SHARE:.0%} of the target's {target_u:.3f}"))
    parts = (("forget quality up", quantities[0].holds), ("forget ROUGE down", quantities[1].holds),
             ("utility kept", quantities[2].holds))
    unlearns = parts[0][1] or parts[1][1]
    text = severity(utility, target_u) + "; ".join(q.text() for q in quantities)
    if parts[0][1] and quality < FORGET_QUALITY_LEVEL:
        text += (f"; forget quality is up but still below {FORGET_QUALITY_LEVEL}: the KS test still tells the run's "
                 "truth ratios from the retain model's")
    text += f"; holds: {names(p for p, ok in parts if ok)}; fails: {names(p for p, ok in parts if not ok)}"
    if not unlearns:  # keeping utility is no achievement for a run that does not unlearn
        text += "; the run does not unlearn, so its kept utility counts for nothing"
    held = sum(ok for _, ok in parts) if unlearns else 0
    return Finding(notebook, TOFU, f"{run} unlearning raises forget quality, lowers forget ROUGE and keeps model "
                   "utility", text, outcome_of(held, len(parts)), f"{notebook}_trajectory", run, quantities, parts)


def severity(utility: float, target_utility: float) -> str:
    """How badly a run lost utility, said first where it did: collapsed (under COLLAPSED_SHARE of the target's) or
    under the kept bar; nothing when it kept it."""
    if not (math.isfinite(utility) and math.isfinite(target_utility)) or target_utility <= 0:
        return ""
    share = utility / target_utility
    if share < COLLAPSED_SHARE:
        return f"COLLAPSED, utility at {share:.0%} of the target's: "
    if share < UTILITY_KEPT_SHARE:
        return f"utility at {share:.0%} of the target's, under the {UTILITY_KEPT_SHARE:.0%} bar: "
    return ""


def _unlearning(metrics: Mapping[str, Any], params: Params) -> list[Finding]:
    before = results.of(params).metrics(runs.FINETUNE)
    retain = runs.retain_model(params, before["meta"]["parameters"]["forget_split"])
    return [unlearning_run_finding(run, result, before, retain) for run, result in metrics.items() if run != "meta"]


def _stored(metrics: Mapping[str, Any], params: Params) -> list[Finding]:
    """The findings a study stored as data in its metrics.json (notebooks 03-07)."""
    meta = metrics["meta"]
    if FINDINGS_KEY not in meta:
        raise KeyError(f"{meta.get('notebook', 'this notebook')} stored no findings (run it again with this version)")
    return [Finding.from_dict(f) for f in meta[FINDINGS_KEY]]


_BY_NOTEBOOK: dict[str, Callable[[Mapping[str, Any], Params], list[Finding]]] = {
    runs.DATA_TOUR: _data_tour, runs.FINETUNE: _finetune, runs.UNLEARNING: _unlearning, runs.CONTROLS: _stored,
    runs.FORMATS: _stored, runs.LEAKAGE: _stored, runs.ENTROPY: _stored, runs.ALIGNMENT: _stored,
    runs.ROBUSTNESS: _stored}


def of_notebook(params: Params, notebook: str, metrics: Mapping[str, Any] | None = None) -> list[Finding]:
    """The findings of one notebook (``02_unlearning_<run>`` included) on the run of ``params`` (its profile and
    seed), from its metrics.json (or ``metrics`` given), each carrying the seed."""
    base = runs.UNLEARNING if notebook.startswith(runs.UNLEARNING) else notebook
    if base not in _BY_NOTEBOOK:
        raise KeyError(f"no findings are defined for notebook {notebook!r}")
    metrics = results.of(params).metrics(notebook) if metrics is None else metrics
    return [f.with_seed(params.seed) for f in _BY_NOTEBOOK[base](metrics, params)]


def notebooks_with_results(params: Params) -> list[str]:
    """The notebooks of the run that have written metrics (in order; 02 once per unlearning run): in its run store,
    else in the committed results (:mod:`unlearnkit.results`)."""
    return results.of(params).notebooks()


def of_seed(params: Params) -> list[Finding]:
    """Every finding of every notebook that has run for the profile and seed of ``params``, then the findings
    across unlearning runs."""
    found = []
    for notebook in notebooks_with_results(params):
        try:
            found += of_notebook(params, notebook)
        except results.CorruptResult:
            continue  # an unreadable metrics.json costs its own notebook's findings on this seed, not every seed's
    try:
        return found + [f.with_seed(params.seed) for f in across_unlearning_runs(params)]
    except results.CorruptResult:
        return found


def across_unlearning_runs(params: Params) -> list[Finding]:
    """Findings that compare every unlearning run of notebook 02 (after notebook 01): open-unlearning's point that
    membership inference tells apart runs that greedy ROUGE calls unlearned."""
    data = results.of(params)
    unlearned = data.unlearning_runs()
    try:
        before = data.metrics(runs.FINETUNE)
    except FileNotFoundError:
        return []
    if not unlearned:
        return []
    return [_rouge_vs_mia(before, unlearned, params)]


def mia_told_apart(run_summary: Mapping[str, Any], retain_summary: Mapping[str, Any],
                   margin: float = MIA_MARGIN) -> dict[str, float]:
    """The attacks of :func:`mia_gaps` whose AUC differs from the retain model's by more than ``margin``."""
    return {k: gap for k, gap in mia_gaps(run_summary, retain_summary).items() if abs(gap) > margin}


def _rouge_vs_mia(before: Mapping[str, Any], unlearned: Mapping[str, Mapping[str, Any]], params: Params) -> Finding:
    claim = ("runs that look unlearned by greedy ROUGE can still be told apart from the holdout by membership "
             "inference")
    figure, short = f"{runs.UNLEARNING}_ou_summary", "ROUGE vs MIA"
    retain = runs.retain_model(params, before["meta"]["parameters"]["forget_split"])
    retain_summary = before.get(retain, {}).get("summary", {}) if retain else {}
    target_rouge, retain_rouge, rouge_bar = _rouge_bar(before, retain)
    if "mia_mink_auc" not in retain_summary:
        reason = before["target"].get("privacy_skipped") or "no privacy metrics for the retain model"
        return Finding(runs.UNLEARNING, OPEN_UNLEARNING, claim, f"not measured: {reason}", NO_TEST, figure, short)
    if target_rouge <= retain_rouge:
        return Finding(runs.UNLEARNING, OPEN_UNLEARNING, claim, f"the target's forget ROUGE-L ({target_rouge:.3f}) is "
                       f"not above the retain model's ({retain_rouge:.3f}): ROUGE cannot call a run unlearned", NO_TEST,
                       figure, short)
    tested, held = [], []
    parts: dict[bool, list[str]] = {True: [], False: []}  # still members (AUC above the retain model's), or below
    for run, metrics in unlearned.items():
        result = metrics.get(run, {})
        summary = result.get("summary", {})
        if "mia_mink_auc" not in summary or result.get("forget", {}).get("rouge", 1.0) > rouge_bar:
            continue
        tested.append(run)
        apart = mia_told_apart(summary, retain_summary)
        if apart:
            held.append(run)
            strongest = max(apart, key=lambda k: abs(apart[k]))
            gap = apart[strongest]
            parts[gap > 0].append(f"{run} (ROUGE-L {result['forget']['rouge']:.2f}; {strongest} AUC {abs(gap):.2f} "
                                  f"{'above' if gap > 0 else 'below'} the retain model's)")
    share = len(held) / len(tested) if tested else math.nan
    quantities = (Quantity("share of ROUGE-unlearned runs told apart by MIA", share, 1.0, ">=", "every such run"),
                  Quantity("runs that look unlearned by ROUGE", len(tested), fmt=".0f"))
    attacks = [k.removeprefix("mia_").removesuffix("_auc") for k in retain_summary
               if k.startswith("mia_") and k.endswith("_auc")]
    text = (f"{len(tested)} runs look unlearned by forget ROUGE-L (≤ {rouge_bar:.3f}, halfway from the target to the "
            f"retain model): {names(tested)}; membership inference (an attack's AUC more than {MIA_MARGIN} from "
            f"the retain model's; attacks run: {names(attacks)}"
            + ("" if "gradnorm" in attacks else ", GradNorm off as in open-unlearning's TOFU suite")
            + f") still tells {len(held)} of them apart from the holdout: as members, "
            f"{'; '.join(parts[True]) or 'none'}; as over-unlearned (AUC below the retain model's), "
            f"{'; '.join(parts[False]) or 'none'}")
    return Finding(runs.UNLEARNING, OPEN_UNLEARNING, claim, text, outcome_of(len(held), len(tested)), figure, short,
                   quantities, tuple((run, run in held) for run in tested))


# --------------------------------------------------------------------------- a notebook's own findings


def show(params: Params, notebook: str) -> list[Finding]:
    """Print one notebook's findings on this run (its last cell)."""
    found = of_notebook(params, notebook)
    print(text(found))
    return found


def text(found: Sequence[Finding]) -> str:
    blocks = []
    for f in found:
        seed = f"seed {f.seed}" if f.seed is not None else "this run"
        blocks.append(f"{f.paper}\n  paper:    {f.claim}\n  {seed + ':':<9} {f.reading}\n  outcome:  {f.outcome.upper()} "
                      f"(one seed; the verdict over seeds is notebook 09's)")
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------- over training seeds (notebook 09)


def seeds_with_results(profile: str) -> list[int]:
    """The training seeds of ``profile`` whose run store or committed results hold at least one notebook's results
    and that no runner is running now (:func:`seeds_in_progress`): a seed half run would count the notebooks it has
    finished."""
    return [s for s in results.seeds(profile) if results.SeedResults(profile, s).notebooks()]


def seeds_in_progress(profile: str) -> list[int]:
    """The training seeds of ``profile`` a runner is running now (``runner seed``/``seeds``/``all`` holds their
    ``.running`` lock): left out of the verdicts until they finish."""
    return [s for s in runs.seeds(profile) if runs.in_progress(profile, s)]


def of_seeds(params: Params, seeds: Sequence[int] | None = None) -> dict[int, list[Finding]]:
    """``{seed: its findings}`` for ``seeds`` (default: every seed of the profile with results)."""
    chosen = seeds_with_results(params.profile) if seeds is None else list(seeds)
    return {seed: of_seed(params.replace(seed=int(seed))) for seed in chosen}


def across_seeds(params: Params, seeds: Sequence[int] | None = None,
                 committed: Mapping[str, Verdict] | None = None) -> list[Verdict]:
    """Every finding judged over the seeds present (or ``seeds``) by the one rule; ``committed`` (the committed seed
    study's verdicts by key) flags findings whose margin lies inside that study's spread."""
    return judge_all(of_seeds(params, seeds), committed)


def table(verdicts: Sequence[Verdict], seed: int | None = None,
          committed: Mapping[str, Verdict] | None = None):
    """The cross-paper table: one row per finding, its verdict over the seeds and what the seeds say; with ``seed``,
    that seed's own outcome beside it; with ``committed``, the committed verdict too."""
    import pandas as pd

    rows = []
    for v in verdicts:
        row = {"notebook": v.notebook, "paper": v.paper, "short": v.short, "finding": v.claim,
               "seeds": ", ".join(map(str, v.seeds))}
        if seed is not None:
            own = next((r for r in v.per_seed if r["seed"] == seed), None)
            row[f"seed {seed}"] = own["outcome"] if own else "not run"
            row[f"seed {seed}: numbers"] = own["text"] if own else ""
        row["over the seeds"] = v.text
        row["verdict"] = v.verdict
        row["tile"] = tile(v)
        if committed is not None:
            row["committed verdict"] = committed[v.key].verdict if v.key in committed else "none"
        row["figure"] = v.figure
        rows.append(row)
    return pd.DataFrame(rows)


#: What the overview shows of a finding tested on fewer seeds than a verdict needs: what those seeds agree on.
EVERY_SEED_HOLDS, EVERY_SEED_FAILS, SEEDS_DIFFER = "holds on every seed", "fails on every seed", "partly or mixed"


def tile(v: Verdict) -> str:
    """How the overview colours a finding: its verdict where it rests on enough seeds (or is a fact / untested),
    else what its few seeds agree on (holds on every one, fails on every one, or partly or mixed), so that a one-seed
    run's front page shows that seed's outcomes instead of a wall of "partly"."""
    if v.verdict in (FACT, NO_TEST) or v.n >= SEEDS_FOR_A_VERDICT:
        return v.verdict
    if v.k == v.n:
        return EVERY_SEED_HOLDS
    if v.fails == v.n:
        return EVERY_SEED_FAILS
    return SEEDS_DIFFER


def _failing_parts(v: Verdict) -> list[tuple[str, int]]:
    """The parts of a finding that failed, with the number of seeds each failed on, most frequent first."""
    counted: dict[str, int] = {}
    for record in v.per_seed:
        for name, holds in (record.get("parts") or {}).items():
            if not holds:
                counted[name] = counted.get(name, 0) + 1
    return sorted(counted.items(), key=lambda item: -item[1])


def _page(v: Verdict) -> str:
    return f"{v.notebook}.html"


def story(verdicts: Sequence[Verdict]) -> str:
    """The front page's opening, generated from the findings: per paper, how many of its findings hold over the seeds
    and, for each that does not, which of its parts fail and on how many seeds, linking the page that explains it."""
    seeds = sorted({s for v in verdicts for s in v.seeds})
    caution = ("one training seed: read every verdict as that seed's outcome" if len(seeds) == 1 else
               f"{len(seeds)} training seeds ({', '.join(map(str, seeds))})" + (
                   "; fewer than five, so no verdict here is confident (docs/metrics.md §8)"
                   if len(seeds) < SEEDS_FOR_A_VERDICT else ""))
    lines = [f"Judged over {caution}."]
    few = len(seeds) < SEEDS_FOR_A_VERDICT
    for paper in PAPERS:
        mine = [v for v in verdicts if v.paper == paper and v.verdict in (REPRODUCED, PARTLY, NOT)]
        if not mine:
            continue
        by = {verdict: [v for v in mine if v.verdict == verdict] for verdict in (REPRODUCED, PARTLY, NOT)}
        if few:  # no verdict can be confident: say what the seeds agree on, and list what did not hold
            held = [v for v in mine if tile(v) == EVERY_SEED_HOLDS]
            failed = [v for v in mine if tile(v) == EVERY_SEED_FAILS]
            every = "on its seed" if len(seeds) == 1 else "on every seed"
            head = (f"**{paper}**: of {len(mine)} findings, {len(held)} hold {every}"
                    + (f" ({html.escape(names(v.short for v in held))})" if 0 < len(held) <= 8 else "")
                    + f", {len(failed)} fail {every}, {len(mine) - len(held) - len(failed)} hold in part"
                    + ("" if len(seeds) == 1 else " or differ between seeds") + ".")
            shown = [v for v in mine if tile(v) != EVERY_SEED_HOLDS]
        else:
            head = (f"**{paper}**: {len(by[REPRODUCED])} of {len(mine)} findings reproduced"
                    + (f" ({html.escape(names(v.short for v in by[REPRODUCED]))})" if 0 < len(by[REPRODUCED]) <= 6
                       else "")
                    + f", {len(by[PARTLY])} partly, {len(by[NOT])} not reproduced.")
            shown = by[NOT] + by[PARTLY]
        lines.append("\n" + head + "\n")
        for v in shown:
            failing = _failing_parts(v)
            on = lambda n, v=v: f"{n} of {v.n} seed{'s' if v.n > 1 else ''}"  # noqa: E731
            partly = v.n - v.k - v.fails
            if failing:
                why = "; ".join(f"{name} fails on {on(n)}" for name, n in failing[:3])
            elif v.fails:
                why = f"fails on {on(v.fails)}"
            elif partly:
                why = f"holds in part on {on(partly)}"
            else:
                why = f"holds on {on(v.k)}"
            why, short = html.escape(why), html.escape(v.short)  # run and part names are text, never markup
            if few:
                lines.append(f"- [{short}]({_page(v)}): {why}.")
                continue
            if v.verdict == PARTLY and v.n < SEEDS_FOR_A_VERDICT:
                why += f" (tested on too few seeds for a verdict: {SEEDS_FOR_A_VERDICT} needed)"
            lines.append(f"- [{short}]({_page(v)}), *{v.verdict}*: {why}.")
    return "\n".join(lines)


def key_figures(verdicts: Sequence[Verdict]) -> list[str]:
    """The figures the findings point at, once each, in the order of the findings."""
    return list(dict.fromkeys(v.figure for v in verdicts if v.figure))


def notebooks_showing(verdicts: Sequence[Verdict], figure: str) -> list[str]:
    return list(dict.fromkeys(v.notebook for v in verdicts if v.figure == figure))


# --------------------------------------------------------------------------- the summary (docs/findings.json)

#: The rule in a sentence, stored with the summary (docs/metrics.md says it in full, with the papers' sentences).
RULE = ("Per finding, k of the n seeds on which it was tested hold and f fail; reproduced when the one-sided 95 % "
        "Clopper-Pearson lower bound of k/n exceeds 1/2 (at least five seeds, all holding; of six, all six), not "
        "reproduced when that of f/n does, partly otherwise; each deciding quantity's mean over seeds with a 95 % "
        "percentile bootstrap interval.")


def summary(profile: str, verdicts: Sequence[Verdict], seed_study: Mapping[str, Any] | None = None,
            claims: Sequence[Any] | None = None) -> dict[str, Any]:
    """What notebook 09 stores (runs/<profile>/findings.json, and docs/findings.json on the default profile): the
    schema version, the seeds, the registered claims judged over them (``claims``: their ClaimVerdicts, read with the
    registry by :mod:`unlearnkit.report.claims`), the claims not testable here, and the former findings with the
    former rule, counts, per-seed outcomes and values, k, n and intervals, so that each verdict can be recomputed
    from the file alone; with ``seed_study`` (:func:`unlearnkit.studies.seeds.study`), how the methods rank across
    the seeds."""
    from .. import registry
    from .effects import records as claim_records

    seeds = sorted({s for v in verdicts for s in v.seeds} | {r.seed for c in claims or () for r in c.per_seed})
    reg = registry.load()
    rows = claim_records.records(reg, claims or (), verdicts)
    out = {"schema_version": claim_records.SCHEMA_VERSION, "profile": profile, "seeds": seeds,
           "claims_rule": claim_records.RULE, "claims_counts": claim_records.counts(rows), "claims": rows,
           "untested": claim_records.untested_records(reg),
           "rule": RULE, "counts": counts(verdicts), "findings": [v.as_dict() for v in verdicts]}
    if seed_study is not None:
        out["seed_study"] = dict(seed_study)
    return out


def read_summary(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def summary_verdicts(data: Mapping[str, Any] | None) -> dict[str, Verdict]:
    """The verdicts of a stored summary, by key (empty for none)."""
    if not data:
        return {}
    return {row["key"]: Verdict.from_dict(row) for row in data.get("findings", []) if "key" in row}


def summary_seeds(data: Mapping[str, Any] | None) -> list[int]:
    return [int(s) for s in (data or {}).get("seeds", [])]


def may_replace(committed: Mapping[str, Any] | None, seeds: Sequence[int]) -> bool:
    """A summary judged over ``seeds`` may replace the committed one only when its seeds include the committed
    file's (a one-seed run never replaces a six-seed table). The former findings' summary (schema 0, six seeds on one
    corpus draw) was moved to docs/findings-former.json once, by hand, when the registered claims replaced it."""
    return set(summary_seeds(committed)) <= set(seeds)


def profile_summary_path(profile: str) -> Path:
    return runs.profile_dir(profile) / runs.FINDINGS_ACROSS_SEEDS


def write_profile_summary(profile: str, verdicts: Sequence[Verdict],
                          seed_study: Mapping[str, Any] | None = None, claims: Sequence[Any] | None = None) -> Path:
    path = profile_summary_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_text(path, json.dumps(config.jsonable(summary(profile, verdicts, seed_study, claims)), indent=1,
                                              ensure_ascii=False) + "\n")
    return path


def _styles() -> dict[str, str]:
    return {REPRODUCED: "background-color: #d9f0d3", PARTLY: "background-color: #fee8b0",
            NOT: "background-color: #f8d0cc", NO_TEST: "color: #777", FACT: "color: #777",
            HOLDS: "background-color: #d9f0d3", PARTLY_HOLDS: "background-color: #fee8b0",
            FAILS: "background-color: #f8d0cc"}


def styled(frame):
    """The findings table with its verdict and outcome columns coloured, text left-aligned and wrapped (for
    notebooks and the HTML report)."""
    style = _styles()
    frame = frame.drop(columns=["tile"], errors="ignore")  # the overview's colour: the verdict and outcomes say it
    coloured = [c for c in frame.columns if c == "verdict" or c == "committed verdict"
                or (c.startswith("seed ") and not c.endswith("numbers"))]
    return (frame.style.hide(axis="index").format(escape="html")
            .map(lambda v: style.get(v, ""), subset=coloured)
            .set_properties(**{"text-align": "left", "white-space": "normal", "vertical-align": "top"}))

