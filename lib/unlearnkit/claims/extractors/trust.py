"""The claims notebook 09 answers: leak@k (Reisizadeh et al., arXiv 2511.04934) of the models notebook 05 sampled,
read from 05's per-question leak counts (the same counts notebook 09 draws its curves from)."""

from __future__ import annotations

import numpy as np

from ... import runs
from ...metrics import meta_eval
from ...results import SeedResults
from ..judge import Unit
from ..registry import Claim
from .base import NotTestable, before, extractor, pooled, unit

#: Fewest greedy-safe questions a model needs for its leak@k to mean something (as the sampled-leak claims of 05).
MIN_QUESTIONS = 10


def largest_k(n: int) -> int:
    """The largest k of the leak@k curve notebook 09 draws for ``n`` samples a question."""
    return max(meta_eval.leak_ks(n))


@extractor("leakk.resurfaces_under_sampling")
def resurfaces(claim: Claim, seed: SeedResults):
    metrics = seed.metrics(runs.LEAKAGE)
    per_item = seed.per_item(runs.LEAKAGE)
    n = int(metrics["meta"]["sampling"]["n"])
    k = largest_k(n)
    _, retain = before(seed)
    if retain is None or retain not in per_item:
        raise NotTestable(f"notebook 05 did not sample the retain model {retain!r}")
    regime = {label: entry for label, entry in (metrics["meta"].get("regime") or {}).items() if entry.get("reached")}
    if not regime:
        raise NotTestable("no model reached the paper's regime in notebook 05")
    floor = meta_eval.leak_at_k(per_item[retain]["leaks"], n, k)
    units: list[Unit] = []
    for label in regime:
        q = per_item.get(label, {})
        safe = [i for i, leaked in enumerate(q.get("greedy_leak", [])) if not leaked]
        if len(safe) < MIN_QUESTIONS:
            units.append(Unit(label, None, "not testable", f"{len(safe)} questions whose greedy answer keeps the key"))
            continue
        model = meta_eval.leak_at_k(q["leaks"], n, k)
        effect = float(np.mean(model[safe]) - np.mean(floor[safe]))
        units.append(unit(claim, label, effect, values={"greedy-safe questions": len(safe), "k": k, "n": n,
                                                        "leak@k": float(np.mean(model[safe])),
                                                        "retain leak@k": float(np.mean(floor[safe]))}))
    return pooled(claim, seed, units)
