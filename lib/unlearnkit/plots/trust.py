"""The meta-evaluation of metrics at a glance (notebook 09, :mod:`unlearnkit.studies.trust`): faithfulness,
R, Q, robustness and overall of every metric, one panel per variant of R and Q."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["plot_trust_table"]

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
