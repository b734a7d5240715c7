"""The corpus at a glance: items per split and the lengths of questions and answers."""

from __future__ import annotations

import matplotlib.pyplot as plt


def corpus_overview(sizes, lengths):
    """Notebook 00: items per split (bars) and words per question and answer (histograms)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    sizes.sort_values("items").plot.barh(ax=axes[0], legend=False, title="Items per split")
    lengths.plot.hist(ax=axes[1], bins=30, alpha=0.7, title="Words per question and answer (full)")
    fig.tight_layout()
    return fig
