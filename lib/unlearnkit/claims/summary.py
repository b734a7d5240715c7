"""The registered claims judged over seeds, as the summary stores them: each claim of the quote registry joined with
its :class:`~unlearnkit.claims.judge.ClaimVerdict` (:func:`records`), and the one summary object notebook 10 builds
once (:func:`build`: runs/<profile>/findings.json, and docs/findings.json on the default profile), which
:mod:`unlearnkit.claims.render` and :mod:`unlearnkit.report.readme` render for notebook 10, the README,
docs/results.md and the report."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, results, runs
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


def records(reg: Registry, judged: Sequence[ClaimVerdict]) -> list[dict[str, Any]]:
    """One record per judged claim, in the registry's order: the registry's fields and the verdict over seeds with
    its per-seed results."""
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
            "analogue": c.analogue})
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


def build(profile: str, claims: Sequence[ClaimVerdict], seed_study: Mapping[str, Any] | None = None,
          reg: Registry | None = None) -> dict[str, Any]:
    """The one summary of a profile's seeds, built once by notebook 10: the schema version, the seeds, the rule, the
    registered claims judged over the seeds (:func:`records`) with their counts and leans, the claims not testable
    here, the seed study (``seed_study``, :func:`unlearnkit.studies.seeds.study`) and, on the default profile, the
    frozen registry's status. Each verdict can be recomputed from the file alone."""
    from . import registry

    reg = registry.load() if reg is None else reg
    rows = records(reg, claims)
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "profile": profile,
                           "seeds": sorted({r.seed for c in claims for r in c.per_seed}),
                           "claims_rule": RULE, "claims_counts": counts(rows), "claims_leans": leans(rows),
                           "claims": rows, "untested": untested_records(reg)}
    if seed_study is not None:
        out["seed_study"] = dict(seed_study)
    if profile == config.BASE_PROFILE:  # the registry is frozen on the default profile's seeds only
        from . import freeze

        out["freeze"] = freeze.status(claims)
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
