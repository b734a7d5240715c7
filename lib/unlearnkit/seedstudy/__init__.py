"""The seed study: the workbook's own questions over training seeds, not a paper's (docs/metrics.md §8.2), and the
judging machinery's tools beside it. :mod:`.rankings`: how notebook 02's methods rank on each seed and whether the
ranking survives a reseed (Kendall's τ and W, rank shares, the registered method pairs, flips), and notebook 09's
metrics over the same seeds; :mod:`.variants`: a setting or a variant of the training seed (another corpus draw,
another instruction set) against the training seeds' spread of the claims' effects (benchmarks/seed_spread.py).

It reads the run store's metrics.json files only; no model is loaded. Notebook 10, the README and the benchmarks
import it; the claims themselves are judged in :mod:`unlearnkit.claims`."""

from __future__ import annotations

from .rankings import (
    COLLAPSED_SHARE,
    METRIC,
    METRICS,
    PAIR_LEVEL,
    PAIRS,
    REGISTERED_SEEDS,
    TAU_STABLE,
    Metric,
    Pair,
    bootstrap_interval,
    collapsed_methods,
    complete,
    flips,
    kendall,
    kendall_w,
    method_values,
    metric_trust,
    pair_test,
    pair_tests,
    pairs_table,
    rank_shares,
    ranks,
    sentences,
    shares_by_metric,
    spread,
    study,
)
from .variants import (
    SPREAD_TOLERANCE,
    against_the_rest,
    outcome_changes,
    quantity_values,
    rest_sentence,
    spread_table,
    variant_spreads,
    within_spread,
)

__all__ = [
    "bootstrap_interval", "TAU_STABLE", "PAIR_LEVEL", "Metric", "METRICS", "METRIC", "Pair", "PAIRS",
    "method_values", "complete", "ranks", "kendall_w", "kendall", "COLLAPSED_SHARE", "collapsed_methods",
    "rank_shares", "pair_test", "flips", "pair_tests", "spread", "study", "REGISTERED_SEEDS", "sentences",
    "shares_by_metric", "pairs_table", "metric_trust", "quantity_values", "SPREAD_TOLERANCE", "within_spread",
    "against_the_rest", "outcome_changes", "variant_spreads", "rest_sentence", "spread_table",
]
