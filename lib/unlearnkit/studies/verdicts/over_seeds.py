"""Judging over training seeds (notebook 10): the seeds with results, every finding of each judged by the one rule
(:func:`unlearnkit.former.judge_all`), and the summary notebook 10 stores (runs/<profile>/findings.json, and
docs/findings.json on the default profile)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ... import config, results, runs
from ...config import Params
from ...former import Finding, Verdict, counts, judge_all
from .notebook_findings import of_seed

# --------------------------------------------------------------------------- over training seeds (notebook 10)


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


# --------------------------------------------------------------------------- the summary (docs/findings.json)

#: The rule in a sentence, stored with the summary (docs/metrics.md says it in full, with the papers' sentences).
RULE = ("Per finding, k of the n seeds on which it was tested hold and f fail; reproduced when the one-sided 95 % "
        "Clopper-Pearson lower bound of k/n exceeds 1/2 (at least five seeds, all holding; of six, all six), not "
        "reproduced when that of f/n does, partly otherwise; each deciding quantity's mean over seeds with a 95 % "
        "percentile bootstrap interval.")


def summary(profile: str, verdicts: Sequence[Verdict], seed_study: Mapping[str, Any] | None = None,
            claims: Sequence[Any] | None = None) -> dict[str, Any]:
    """What notebook 10 stores (runs/<profile>/findings.json, and docs/findings.json on the default profile): the
    schema version, the seeds, the registered claims judged over them (``claims``: their ClaimVerdicts, read with the
    registry by :mod:`unlearnkit.claims.render`), the claims not testable here, and the former findings with the
    former rule, counts, per-seed outcomes and values, k, n and intervals, so that each verdict can be recomputed
    from the file alone; with ``seed_study`` (:func:`unlearnkit.studies.seeds.study`), how the methods rank across
    the seeds."""
    from ...claims import registry
    from ...claims import summary as claim_records

    seeds = sorted({s for v in verdicts for s in v.seeds} | {r.seed for c in claims or () for r in c.per_seed})
    reg = registry.load()
    rows = claim_records.records(reg, claims or (), verdicts)
    out = {"schema_version": claim_records.SCHEMA_VERSION, "profile": profile, "seeds": seeds,
           "claims_rule": claim_records.RULE, "claims_counts": claim_records.counts(rows),
           "claims_leans": claim_records.leans(rows), "claims": rows,
           "untested": claim_records.untested_records(reg),
           "rule": RULE, "counts": counts(verdicts), "findings": [v.as_dict() for v in verdicts]}
    if seed_study is not None:
        out["seed_study"] = dict(seed_study)
    if claims is not None and profile == "default":  # the registry is frozen on the default profile's seeds only
        from ...claims import freeze

        out["freeze"] = freeze.status(claims)
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
