"""A setting against the training seeds' spread: each registered claim's effect per seed (its deciding quantity), whether a candidate
setting stays inside the range the training seeds (widened by another machine's spread) span, and how far each
variant of the training seed (another corpus draw, another instruction set) moves it against that range
(benchmarks/seed_spread.py writes docs/seed_spread.json from these; notebook 10 and the README show it).
:mod:`unlearnkit.seedstudy` re-exports every name."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

# --------------------------------------------------------------------------- a setting against the seeds' spread


def _tested(effect: Mapping[str, Any]) -> bool:
    return effect["outcome"] != "not testable" and effect.get("effect") is not None


def quantity_values(per_seed: Mapping[int, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """One row per (claim id, its quantity, seed): the effect on the claim's scale (read as it is, never in log10),
    from ``{seed: that seed's effects}``, each ``{"id", "quantity", "outcome", "effect"}`` (benchmarks/seed_spread.py
    reads them with :func:`unlearnkit.claims.extractors.effect_on_seed`); not testable seeds are left out."""
    rows = [{"key": e["id"], "quantity": e["quantity"], "seed": int(seed), "value": float(e["effect"]), "log": False}
            for seed, found in per_seed.items() for e in found if _tested(e)]
    return pd.DataFrame(rows, columns=["key", "quantity", "seed", "value", "log"])


def _scaled(value: float, log: bool) -> float:
    if not log:
        return value
    return math.log10(value) if value > 0 else -300.0


#: Relative slack of :func:`within_spread`'s bounds: a value that equals a bound up to float rounding is inside.
SPREAD_TOLERANCE = 1e-6


def within_spread(reference: pd.DataFrame, candidate: pd.DataFrame, machine: pd.DataFrame | None = None
                  ) -> pd.DataFrame:
    """Per deciding quantity: the range of ``reference``'s seeds (:func:`quantity_values`), widened on each side by
    the cross-machine spread (the largest |difference| between ``machine``'s value and the reference's on the same
    seed; in log10 for p-values), and whether every seed of ``candidate`` lies inside it. What decides whether a
    setting that trains other bits (packing) may become the default: it must not move a deciding quantity beyond
    what another seed or another machine moves it."""
    rows = []
    for (key, name), ref in reference.groupby(["key", "quantity"], sort=False):
        log = bool(ref["log"].iloc[0])
        ref_values = {int(s): _scaled(v, log) for s, v in zip(ref["seed"], ref["value"])}
        slack = 0.0
        if machine is not None and len(machine):
            other = machine[(machine["key"] == key) & (machine["quantity"] == name)]
            gaps = [abs(_scaled(v, log) - ref_values[int(s)]) for s, v in zip(other["seed"], other["value"])
                    if int(s) in ref_values]
            slack = max(gaps, default=0.0)
        low, high = min(ref_values.values()) - slack, max(ref_values.values()) + slack
        cand = candidate[(candidate["key"] == key) & (candidate["quantity"] == name)]
        values = [_scaled(v, log) for v in cand["value"]]
        # equal to a bound up to float rounding counts as inside (privleak's -100 is -99.99999998 give or take 3e-9)
        tol = SPREAD_TOLERANCE * max(1.0, abs(low), abs(high))
        rows.append({"key": key, "quantity": name, "scale": "log10" if log else "value",
                     "reference seeds": len(ref_values), "low": low, "high": high, "machine spread": slack,
                     "candidate": values,
                     "inside": bool(values) and all(low - tol <= v <= high + tol for v in values)})
    return pd.DataFrame(rows)


def against_the_rest(training: pd.DataFrame, variants: Mapping[str, pd.DataFrame], base_seed: int) -> pd.DataFrame:
    """Per deciding quantity (:func:`quantity_values`): its range over the training seeds (greatest minus least, in
    log10 for p-values) and, for each variant of ``base_seed`` (another corpus draw, another instruction set), how far the
    variant's value lies from that seed's, also as a share of the training seeds' range (above 1: the variant moves
    it more than a reseed does)."""
    rows = []
    for (key, name), group in training.groupby(["key", "quantity"], sort=False):
        log = bool(group["log"].iloc[0])
        values = {int(s): _scaled(v, log) for s, v in zip(group["seed"], group["value"])}
        if base_seed not in values:
            continue
        row = {"key": key, "quantity": name, "scale": "log10" if log else "value", "training seeds": len(values),
               "training range": max(values.values()) - min(values.values())}
        for label, variant in variants.items():
            mine = variant[(variant["key"] == key) & (variant["quantity"] == name) & (variant["seed"] == base_seed)]
            shift = abs(_scaled(float(mine["value"].iloc[0]), log) - values[base_seed]) if len(mine) else math.nan
            row[f"{label}: shift"] = shift
            row[f"{label}: shift / range"] = shift / row["training range"] if row["training range"] > 0 else (
                0.0 if shift == 0 else math.inf)
        rows.append(row)
    return pd.DataFrame(rows)


def outcome_changes(base: Sequence[Mapping[str, Any]], variant: Sequence[Mapping[str, Any]]) -> list[str]:
    """The testable claims whose outcome on a variant differs from the base run's (same seed), as "id: a -> b"."""
    theirs = {e["id"]: e["outcome"] for e in variant if _tested(e)}
    return [f"{e['id']}: {e['outcome']} -> {theirs[e['id']]}" for e in base if _tested(e) and e["id"] in theirs
            and theirs[e["id"]] != e["outcome"]]


def variant_spreads(table: pd.DataFrame, changes: Mapping[str, Sequence[str]]) -> dict[str, dict[str, Any]]:
    """Per variant of seed 0, computed once from :func:`against_the_rest` (before any JSON round trip, which turns an
    infinite ratio into null): the median shift over the training seeds' range, the quantities beyond that range,
    how many quantities, and the findings whose outcome it changes. The sentence and the README's table both render
    these numbers."""
    out = {}
    for label, changed in changes.items():
        ratios = table[f"{label}: shift / range"]
        finite = ratios.replace([np.inf], np.nan).dropna()
        out[label] = {"median": float(finite.median()) if len(finite) else math.nan,
                      "beyond": int((ratios > 1).sum()), "quantities": int(len(table)), "changed": len(changed)}
    return out


def rest_sentence(table: pd.DataFrame, changes: Mapping[str, Sequence[str]], seeds: int) -> str:
    """The seed study's sentence on the training seed against the rest, rendered from :func:`variant_spreads`."""
    parts = [f"{label} moves the median deciding quantity by {s['median']:.2f} of the range the {seeds} training "
             f"seeds span ({s['beyond']} of {s['quantities']} quantities beyond that range) and changes {s['changed']} "
             "findings' outcome on seed 0" for label, s in variant_spreads(table, changes).items()]
    return "On seed 0, " + "; ".join(parts) + "."


def spread_table(spread: Mapping[str, Any]) -> pd.DataFrame:
    """docs/seed_spread.json's table for a reader: per deciding quantity, the training seeds' range and each variant's
    shift as a share of it, largest first."""
    table = pd.DataFrame(spread["table"])
    ratios = [c for c in table.columns if c.endswith("shift / range")]
    return table.sort_values(ratios[0], ascending=False) if ratios else table
