"""Every registered claim's effect on one seed, from that seed's stored results, and the claims judged over seeds.

The one judge of the findings (docs/metrics.md §8.3). Each claim of the quote registry (``docs/claims.yaml``) has an
**extractor** here, named by the claim's id, that reads one seed's stored results (:class:`unlearnkit.results.
SeedResults`: the run store, else the committed mirror) and returns the claim's effect on the paper's scale, its units
and the reasons a precondition is unmet (:class:`unlearnkit.claims.judge.SeedResult`). Nothing is trained or sampled here,
and no notebook judges: a change to a claim's reading needs no rerun, only ``runner aggregate``.

One module per notebook the claims read: :mod:`.unlearning` (01, 02), :mod:`.calibration` (03), :mod:`.formats`
(04), :mod:`.sampling` (05-07), :mod:`.recovery` (08), :mod:`.trust` (09).
"""

from __future__ import annotations

from collections.abc import Sequence

from ... import results
from ...results import SeedResults
from .. import judge, registry
from ..judge import NOT_TESTABLE, ClaimVerdict
from ..registry import Claim, Registry
from . import calibration, formats, recovery, sampling, trust, unlearning  # each registers its claims
from .base import EXTRACTORS, NotTestable, effect_on_seed


def judged_claims(reg: Registry | None = None) -> list[Claim]:
    """The claims the judge reads: every testable claim with an extractor (findings, setup checks and the workbook's
    own questions); a claim whose status says it cannot be tested here is listed by :func:`untested`."""
    reg = reg or registry.load()
    return [c for c in reg.claims if c.testable and c.id in EXTRACTORS]


def untested(reg: Registry | None = None) -> list[Claim]:
    reg = reg or registry.load()
    return [c for c in reg.claims if not c.testable]


def judge_claims(profile: str, seeds: Sequence[int] | None = None, reg: Registry | None = None) -> list[ClaimVerdict]:
    """Every judged claim over ``seeds`` (default: every seed with a run store or committed results that no runner
    is still running), in the registry's order."""
    seeds = results.seeds(profile) if seeds is None else list(seeds)
    stored = [SeedResults(profile, s) for s in seeds]
    out = []
    for claim in judged_claims(reg):
        per_seed = [effect_on_seed(claim, s) for s in stored]
        out.append(judge.judge(claim.id, per_seed, claim.side, claim.null))
    return out


__all__ = ["EXTRACTORS", "NotTestable", "effect_on_seed", "judge_claims", "judged_claims", "untested",
           "NOT_TESTABLE",
           # the modules imported for their claims' registration, one per notebook the claims read
           "calibration", "formats", "recovery", "sampling", "trust", "unlearning"]
