"""The meta-evaluation of metrics at a glance (notebook 09, :mod:`unlearnkit.studies.trust`): faithfulness,
R, Q, robustness and overall of every metric, one panel per variant of R and Q."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["plot_trust_table", "plot_trust_vs_published"]

#: The columns drawn, per variant (faithfulness is the same in both).
QUANTITIES = ("faithfulness", "R", "Q", "robustness", "overall")


def plot_trust_table(table: pd.DataFrame):
    """A heat map per variant (one-directional, symmetric): one row per metric, sorted by faithfulness, one column per
    quantity, each cell its value (0 red, 1 green; blank where not measured)."""
    variants = [c.removeprefix("overall ") for c in table.columns if c.startswith("overall ")]
    if not variants:
        raise ValueError("the table holds no 'overall <variant>' column (studies.trust.trust_table makes it)")
    order = table.sort_values("faithfulness", ascending=True)
    fig, axes = plt.subplots(1, len(variants), figsize=(5.2 * len(variants) + 1.5, 0.42 * len(order) + 1.6),
                             sharey=True, squeeze=False)
    for ax, variant in zip(axes[0], variants):
        cols = ["faithfulness", *(f"{q} {variant}" for q in QUANTITIES[1:])]
        values = order[cols].astype(float).to_numpy()
        ax.imshow(np.ma.masked_invalid(values), cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        for (i, j), v in np.ndenumerate(values):
            # white on the dark ends of the map (RdYlGn is dark below about 0.15 and above about 0.8)
            ax.text(j, i, "" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8.5,
                    color="white" if not np.isnan(v) and (v > 0.8 or v < 0.15) else "black")
        ax.grid(False)
        ax.set_xticks(range(len(cols)), list(QUANTITIES), rotation=30, ha="right")
        ax.set_yticks(range(len(order)), list(order.index))
        ax.set_title(f"{variant.replace('_', '-')} R and Q", fontsize=10.5)
    fig.suptitle("Which metric to trust: faithfulness on the P/N pool, robustness from notebook 08\n"
                 "(1 best; blank: not measured)", fontsize=11)
    fig.tight_layout()
    return fig


def plot_trust_vs_published(rows, published, seeds: int):
    """The workbook's meta-evaluation over seeds beside the published one (one seed, Llama-3.2-1B): per metric,
    faithfulness and overall in each variant, ours as the mean with its 95 % t-interval over ``seeds`` seeds, theirs
    as a cross where the published table has the metric. ``rows``: :func:`unlearnkit.seedstudy.metric_trust`'s
    ``metrics``; ``published``: :func:`unlearnkit.studies.trust.published`."""
    panels = [("faithfulness", "symmetric", "faithfulness (P/N AUC)"),
              ("overall one_directional", "one_directional", "overall, one-directional R and Q"),
              ("overall symmetric", "symmetric", "overall, symmetric R and Q")]
    names = [r["metric"] for r in rows]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1.6, 0.36 * len(names) + 1.8), sharey=True,
                             squeeze=False)
    y = np.arange(len(names))
    for ax, (quantity, variant, title) in zip(axes[0], panels):
        ours = [r[quantity] for r in rows]
        mean = np.array([np.nan if o["mean"] is None else o["mean"] for o in ours], dtype=float)
        low = np.array([np.nan if o["low"] is None else o["low"] for o in ours], dtype=float)
        high = np.array([np.nan if o["high"] is None else o["high"] for o in ours], dtype=float)
        has = np.isfinite(low) & np.isfinite(high)
        ax.errorbar(mean[has], y[has], xerr=[mean[has] - low[has], high[has] - mean[has]], fmt="o", color="#1f6f8b",
                    capsize=3, label=f"workbook: tiny model, mean over {seeds} seeds, 95 % t-interval")
        ax.plot(mean[~has], y[~has], "o", color="#1f6f8b")
        key = quantity.split(" ")[0]
        theirs = np.array([published[variant].get(n, {}).get(key, np.nan) for n in names], dtype=float)
        ax.plot(theirs, y, "x", color="#c0392b", markersize=8, mew=2,
                label="published: Llama-3.2-1B, one seed (gnueaj/unlearning-depth-score)")
        ax.axvline(0.5 if key == "faithfulness" else 0.0, color="0.6", lw=0.8, ls=":")
        ax.set_xlim(-0.02, 1.02)
        ax.set_title(title, fontsize=10.5)
        ax.set_yticks(y, names)
    axes[0][0].invert_yaxis()
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.suptitle("Which metric to trust: the workbook's meta-evaluation beside the published one\n"
                 "(a different model, corpus and pool: the comparison shows agreement in ranking, not in level)",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig

