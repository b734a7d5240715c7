"""The registered claims judged over seeds, as the summary stores them: each claim of the quote registry joined with
its :class:`~unlearnkit.claims.judge.ClaimVerdict` (:func:`records`), and the one summary object notebook 10 builds
once (:func:`build`: runs/<profile>/findings.json, and docs/findings.json on the default profile), which
:mod:`unlearnkit.claims.render` and :mod:`unlearnkit.report.readme` render for notebook 10, the README,
docs/results.md and the report."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, results, runs
from . import judge
from .judge import ClaimVerdict
from .registry import Registry

#: The summary's schema: 0, the former findings alone; 1, the registered claims beside them; 2, the registered
#: claims alone (the former findings retired, #56 item 7: no ``findings``, ``rule``, ``counts`` or ``former_bar``).
SCHEMA_VERSION = 2
RULE = ("Per registered claim (docs/claims.yaml), each seed's effect on the paper's scale is consistent (beyond the "
        "minimal effect on the paper's side), inconsistent (beyond it on the other side), inconclusive (within it) "
        "or not testable (a precondition unmet; left out of n). Reproduced when the one-sided 95 % Clopper-Pearson "
        "lower bound of consistent/n exceeds 1/2 (at least five testable seeds, all consistent), contradicted when "
        "that of inconsistent/n does, inconclusive otherwise; beside it the effect's mean with a 95 % t-interval "
        "over the testable seeds and the exact sign test, and the lean: against the paper when the t-interval lies wholly "
        "on the other side of no effect or the sign test finds the seeds there with p < 0.05, with it symmetrically, "
        "none otherwise. docs/metrics.md §8.3.")


#: The size of a confirmatory set whose power the summary states (#58: six new seeds).
CONFIRMATORY_SEEDS = 6
SETS_RULE = ("Seeds {exploratory} are exploratory: they shaped the registry, which was then frozen (docs/claims.frozen.json). "
             "Every other seed is confirmatory: each claim is judged on each set apart by the same rule, and the "
             "headline verdict is the confirmatory one wherever the claim's registry entry and exploratory effects "
             "are as frozen (else the exploratory one, and the row says why). The power of six confirmatory seeds "
             "is computed from the exploratory seeds' outcome shares, taken as per-seed probabilities (a plug-in "
             "estimate: a claim consistent on every exploratory seed gets probability 1), with a bootstrap interval.")

def records(reg: Registry, judged: Sequence[ClaimVerdict], sets: Mapping[str, Mapping[str, Any]] | None = None
            ) -> list[dict[str, Any]]:
    """One record per judged claim, in the registry's order: the registry's fields and the verdict over seeds with
    its per-seed results, and (``sets``, :func:`two_sets`) the claim on the exploratory and confirmatory seeds."""
    sets = sets or {}
    by_id = {v.claim: v for v in judged}
    out = []
    for c in reg.claims:
        if c.id not in by_id:
            continue
        v = by_id[c.id]
        out.append({
            **v.as_dict(), "id": c.id, "kind": c.kind, "paper": c.paper.cite, "title": c.paper.title,
            "arxiv": c.paper.arxiv, "section": c.section, "quote": c.quote, "claim": c.claim, "notebook": c.notebook,
            "effect": {"quantity": c.quantity, "scale": c.scale, "side": c.side, "no_effect": c.null,
                       "range": list(c.range)},
            "minimal_effect": {"value": c.minimal_effect, "reason": c.minimal_reason}, "unit": c.unit,
            "preconditions": list(c.preconditions), "replaces": list(c.replaces), "amended": list(c.amended),
            "analogue": c.analogue, **({"sets": dict(sets[c.id])} if c.id in sets else {})})
    return out


def untested_records(reg: Registry) -> list[dict[str, Any]]:
    """The registered claims that cannot be tested here, with why and what testing them would cost."""
    return [{"id": c.id, "paper": c.paper.cite, "claim": c.claim, "status": c.status, "quote": c.quote}
            for c in reg.claims if not c.testable]


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Verdicts of the findings (setup checks and the workbook's own questions apart)."""
    findings = [r for r in rows if r["kind"] == "finding"]
    out: dict[str, int] = {}
    for r in findings:
        out[r["verdict"]] = out.get(r["verdict"], 0) + 1
    return out


def leans(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The findings by verdict and lean ("inconclusive, leans against": 4), setup checks and questions apart."""
    out: dict[str, int] = {}
    for r in rows:
        if r["kind"] == "finding":
            key = f"{r['verdict']}, leans {r.get('lean', 'none')}"
            out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- the summary object (notebook 10)


def seeds_with_results(profile: str) -> list[int]:
    """The training seeds of ``profile`` whose run store or committed results hold at least one notebook's results
    and that no runner is running now (:func:`seeds_in_progress`): a seed half run would count the notebooks it has
    finished."""
    return [s for s in results.seeds(profile) if results.SeedResults(profile, s).notebooks()]


def seeds_in_progress(profile: str) -> list[int]:
    """The training seeds of ``profile`` a runner is running now (``runner seed``/``seeds``/``all`` holds their
    ``.running`` lock): left out of the verdicts until they finish."""
    return [s for s in runs.seeds(profile) if runs.in_progress(profile, s)]


def _brief(v: ClaimVerdict) -> dict[str, Any]:
    """A verdict over one set of seeds, without its per-seed results (the record keeps those once, for every seed)."""
    return {"seeds": [r.seed for r in v.per_seed], "verdict": v.verdict, "text": v.text, "n": v.n,
            "consistent": v.consistent, "inconsistent": v.inconsistent, "inconclusive": v.inconclusive,
            "not_testable": list(v.not_testable), "mean": v.mean, "low": v.low, "high": v.high, "sign_k": v.sign_k,
            "sign_n": v.sign_n, "sign_p": v.sign_p, "lean": v.lean, "lean_text": v.lean_text}


def seeds_span(seeds: Sequence[int]) -> str:
    """"0-5" for a run of consecutive seeds, else "0, 2, 5"."""
    seeds = sorted(int(s) for s in seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _subset(v: ClaimVerdict, seeds: Sequence[int], side: str, null: float) -> ClaimVerdict:
    return judge.judge(v.claim, [r for r in v.per_seed if r.seed in set(seeds)], side, null)


def two_sets(reg: Registry, claims: Sequence[ClaimVerdict], exploratory: Sequence[int],
             moved: Mapping[str, str] | None = None, confirmatory_size: int = CONFIRMATORY_SEEDS
             ) -> tuple[list[ClaimVerdict], dict[str, dict[str, Any]]]:
    """Each claim judged twice (#58): on the ``exploratory`` seeds (those frozen) and on the confirmatory ones (every
    other seed), each by the rule. The claim's headline verdict is the confirmatory set's where there is one and its
    registry entry and exploratory effects did not move since the freeze (``moved``); else the exploratory set's,
    and the record says why. Returns the headline verdicts (their per_seed: every seed) and each claim's sets: both
    verdicts without per-seed results, the pooled effect over every seed (for reference only) and the power of
    ``confirmatory_size`` new seeds from the exploratory ones."""
    by_id = {c.id: c for c in reg.claims}
    moved = moved or {}
    out, every = [], {}
    for v in claims:
        c = by_id[v.claim]
        seeds = sorted(r.seed for r in v.per_seed)
        confirmatory = [s for s in seeds if s not in set(exploratory)]
        explored = _subset(v, exploratory, c.side, c.null)
        sets: dict[str, Any] = {"exploratory": _brief(explored), "confirmatory": None, "moved": moved.get(v.claim)}
        headline = explored
        if confirmatory and v.claim not in moved:
            confirmed = _subset(v, confirmatory, c.side, c.null)
            sets["confirmatory"] = _brief(confirmed)
            headline = confirmed
        sets["judged_on"] = "confirmatory" if sets["confirmatory"] else "exploratory"
        if confirmatory:
            mean, low, high = judge.t_interval([r.effect for r in v.per_seed if r.outcome in judge.COUNTED])
            sets["pooled"] = {"seeds": seeds, "mean": judge.finite_or_none(mean), "low": judge.finite_or_none(low),
                              "high": judge.finite_or_none(high)}
        if explored.per_seed:
            power = judge.power(explored.per_seed, confirmatory_size)
            sets["power"] = {**power.as_dict(), "words": power.words()}
        every[v.claim] = sets
        out.append(dataclasses.replace(headline, per_seed=v.per_seed))
    return out, every


def build(profile: str, claims: Sequence[ClaimVerdict], seed_study: Mapping[str, Any] | None = None,
          reg: Registry | None = None) -> dict[str, Any]:
    """The one summary of a profile's seeds, built once by notebook 10: the schema version, the seeds, the rule, the
    registered claims judged over the seeds (:func:`records`) with their counts and leans, the claims not testable
    here, the seed study (``seed_study``, :func:`unlearnkit.seedstudy.study`) and, on the default profile, the
    frozen registry's status and each claim judged on the exploratory (frozen) and confirmatory seeds apart
    (:func:`two_sets`), with the power of a confirmatory set. Each verdict can be recomputed from the file alone."""
    from . import registry

    reg = registry.load() if reg is None else reg
    seeds = sorted({r.seed for c in claims for r in c.per_seed})
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "profile": profile, "seeds": seeds, "claims_rule": RULE}
    sets: dict[str, dict[str, Any]] = {}
    if profile == config.BASE_PROFILE:  # the registry is frozen on the default profile's seeds only
        from . import freeze

        status = freeze.status(claims)
        exploratory = status.get("seeds", seeds)
        claims, sets = two_sets(reg, claims, exploratory, status.get("moved"))
        out["freeze"] = status
        out["sets"] = {"exploratory": [s for s in seeds if s in set(exploratory)],
                       "confirmatory": [s for s in seeds if s not in set(exploratory)],
                       "rule": SETS_RULE.format(exploratory=seeds_span(exploratory))}
    rows = records(reg, claims, sets)
    out.update({"claims_counts": counts(rows), "claims_leans": leans(rows), "claims": rows,
                "untested": untested_records(reg)})
    if "sets" in out and out["sets"]["confirmatory"]:
        explored = [{**r, **{"verdict": r["sets"]["exploratory"]["verdict"], "lean": r["sets"]["exploratory"]["lean"]}}
                    for r in rows]
        out["claims_counts_exploratory"] = counts(explored)
        out["claims_leans_exploratory"] = leans(explored)
    if seed_study is not None:
        out["seed_study"] = dict(seed_study)
    return out


def read_summary(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def summary_seeds(data: Mapping[str, Any] | None) -> list[int]:
    return [int(s) for s in (data or {}).get("seeds", [])]


def may_replace(committed: Mapping[str, Any] | None, seeds: Sequence[int]) -> bool:
    """A summary judged over ``seeds`` may replace the committed one only when its seeds include the committed
    file's (a one-seed run never replaces a six-seed table)."""
    return set(summary_seeds(committed)) <= set(seeds)


def profile_summary_path(profile: str) -> Path:
    return runs.profile_dir(profile) / runs.FINDINGS_ACROSS_SEEDS


def dumps(summary: Mapping[str, Any]) -> str:
    return json.dumps(config.jsonable(summary), indent=1, ensure_ascii=False) + "\n"


def write_profile_summary(summary: Mapping[str, Any]) -> Path:
    """The summary under runs/<profile>/findings.json, every profile's."""
    path = profile_summary_path(summary["profile"])
    path.parent.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_text(path, dumps(summary))
    return path
