"""The items: how the real-TOFU heuristics that build the format items (cloze span rules, analogy relations)
cover the corpus."""

from __future__ import annotations

from typing import Any, NamedTuple

from ...data.formats import format_coverage
from ...data.tofu import TofuSource


class CoverageReport(NamedTuple):
    """How the real-TOFU heuristics cover the corpus: ``tables`` (cloze span rules, analogy relations) and a
    ``note`` with the shares."""

    tables: list[Any]
    note: str


def heuristic_coverage(source: TofuSource, forget_split: str, n_options: int, seed: int) -> CoverageReport:
    """:func:`unlearnkit.data.formats.format_coverage` (items built with ``n_options`` and ``seed``) as tables;
    for the synthetic corpus no table, only the reason none is needed."""
    import pandas as pd

    if source.authors() is not None:
        return CoverageReport([], "synthetic corpus: every format is exact by construction (its records say what "
                                  "each answer states)")
    coverage = format_coverage(source, forget_split, n_options, seed)
    tables = [pd.DataFrame(coverage["cloze"]).round(3).rename_axis("cloze span rule"),
              pd.DataFrame(coverage["relations"]).T.rename_axis("analogy relation")]
    return CoverageReport(tables, f"author names found {coverage['author_names']:.1%}; rows giving an analogy "
                                  f"triple {coverage['rows_with_triple']:.0%}; evaluation facts that became analogies "
                                  f"{coverage['analogy_fact_share']}")
