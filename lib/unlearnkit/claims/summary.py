"""The registered claims judged over seeds, as the summary stores them (its ``claims``): each claim of the quote
registry joined with its :class:`~unlearnkit.claims.judge.ClaimVerdict` and, as a robustness line, with the former finding it
replaces judged over the same seeds at the former bar. :mod:`unlearnkit.claims.render` renders them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..former import Verdict
from .judge import ClaimVerdict
from .registry import Registry

#: The summary's schema: 0, the former findings alone; 1, the registered claims beside them.
SCHEMA_VERSION = 1
RULE = ("Per registered claim (docs/claims.yaml), each seed's effect on the paper's scale is consistent (beyond the "
        "minimal effect on the paper's side), inconsistent (beyond it on the other side), inconclusive (within it) "
        "or not testable (a precondition unmet; left out of n). Reproduced when the one-sided 95 % Clopper-Pearson "
        "lower bound of consistent/n exceeds 1/2 (at least five testable seeds, all consistent), contradicted when "
        "that of inconsistent/n does, inconclusive otherwise; beside it the effect's mean with a 95 % t-interval "
        "over the testable seeds and the exact sign test, and the lean: against the paper when the t-interval lies wholly "
        "on the other side of no effect or the sign test finds the seeds there with p < 0.05, with it symmetrically, "
        "none otherwise. docs/metrics.md §8.3.")


def _former(claim_replaces: Sequence[str], former: Mapping[str, Verdict]) -> str:
    """The former findings a claim replaces, judged over the same seeds at their former bars: "at the former bar:
    holds on k of n"."""
    parts = []
    for key in claim_replaces:
        v = former.get(key)
        if v is None or not v.n:
            continue
        partly = sum(s.get("outcome") == "partly" for s in v.per_seed)
        parts.append(f"{key.split('/', 1)[-1]}: holds on {v.k} of {v.n}"
                     + (f" (partly {partly}, fails {v.fails})" if partly or v.fails else ""))
    return "; ".join(parts)


def records(reg: Registry, judged: Sequence[ClaimVerdict], former: Sequence[Verdict] = ()) -> list[dict[str, Any]]:
    """One record per judged claim, in the registry's order: the registry's fields, the verdict over seeds with its
    per-seed results, and the former bar's reading over the same seeds."""
    by_key = {v.key: v for v in former}
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
            "analogue": c.analogue,
            "former_bar": _former(c.replaces, by_key)})
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
