"""Figures of the robustness study (:mod:`unlearnkit.studies.recovery`, notebook 08): each attack per model against
its control, the retain model under the same attack."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["plot_relearning", "plot_rtt", "plot_quantisation", "plot_probes", "plot_survival"]

#: How each kind of model is drawn: the control (retain model) black and thick, the target grey and dashed.
_STYLE = {"retain (control)": dict(color="black", lw=2.6, zorder=5), "target": dict(color="0.55", ls="--", lw=1.8),
          "regime-matched": dict(color="C3", ls=":", lw=2.2)}


def _colors(labels: Sequence[str], kinds: Mapping[str, str]) -> dict:
    """The control, the target and the regime-matched run in their own styles; every other model its own colour,
    as :func:`unlearnkit.plots.run_colors` gives them (tab20 past ten: the default's 14 runs never share one)."""
    from .curves import run_colors

    palette = run_colors([label for label in labels if kinds[label] not in _STYLE])
    return {label: _STYLE[kinds[label]]["color"] if kinds[label] in _STYLE else palette[label] for label in labels}


def plot_relearning(curves: Mapping[str, Sequence[Sequence[float]]], table: pd.DataFrame, halfway: float):
    """Left: greedy forget ROUGE-L along one epoch of relearning on the forget split, per model, the retain model
    (the control: it never saw these authors) black, the target dashed, and half the target's forget ROUGE-L (the
    mark the steps count to). Right: the rise of forget ROUGE-L per model against the control's (line)."""
    kinds = table["kind"].to_dict()
    colors = _colors(list(table.index), kinds)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.4, 1]})
    ax = axes[0]
    for label, points in curves.items():
        steps, values = zip(*points)
        style = {"color": colors[label], "lw": 1.3, **_STYLE.get(kinds[label], {})}
        ax.plot(steps, values, marker="o", ms=3, label=label, **style)
    ax.axhline(halfway, color="C1", lw=1, ls="-.", label="half the target's forget ROUGE-L")
    ax.set(xlabel="relearning step (one epoch on the forget split)", ylabel="greedy forget ROUGE-L", ylim=(-0.02, 1.02),
           title="Relearning curves (control: the retain model)")
    handles, labels = ax.get_legend_handles_labels()
    rows = int(np.ceil(len(labels) / 6))
    ax = axes[1]
    order = list(table.index)
    y = np.arange(len(order))
    ax.barh(y, table["Δ rouge"].to_numpy(float), color=[colors[m] for m in order])
    control = table[table["kind"] == "retain (control)"]
    if len(control):
        ax.axvline(float(control["Δ rouge"].iloc[0]), color="black", lw=1.5, label="the control's rise")
        ax.legend(fontsize=9, loc="lower right")
    ax.set_yticks(y, order, fontsize=10)
    ax.invert_yaxis()
    ax.set(xlabel="Δ forget ROUGE-L after relearning", title="What relearning brings back")
    fig.legend(handles, labels, fontsize=9, ncol=6, loc="lower center", frameon=False)
    fig.tight_layout(rect=(0, 0.06 * rows + 0.02, 1, 1))
    return fig


def plot_rtt(table: pd.DataFrame):
    """Held-out-fact relearning: per model, the held-out facts' accuracy before (hollow) and after (filled) relearning
    the other facts, the control (retain model) black; the attacker's best learning rate per held-out fold."""
    order = list(table.index)
    colors = _colors(order, table["kind"].to_dict())
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(order) + 1.6))
    if not order:  # not run on this corpus: the notebook prints why
        ax.text(0.5, 0.5, "held-out-fact relearning not run on this corpus (no fact labels)", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    y = np.arange(len(order))
    for i, m in enumerate(order):
        before, after = float(table.loc[m, "held-out before"]), float(table.loc[m, "held-out after"])
        ax.plot([before, after], [i, i], color=colors[m], lw=2)
        ax.plot(before, i, "o", mfc="white", color=colors[m], ms=7)
        ax.plot(after, i, "o", color=colors[m], ms=7)
    ax.set_yticks(y, order, fontsize=10)
    ax.invert_yaxis()
    ax.set(xlabel="held-out facts answered (greedy answer contains the value)", xlim=(-0.02, 1.02),
           title="Relearning some facts of the forget authors, testing the others (hollow: before, filled: after)")
    ax.title.set_fontsize(11)
    fig.tight_layout()
    return fig


def plot_quantisation(quant: pd.DataFrame, share: float | None = None, crossed: float = 0.1):
    """Left: the change of forget ROUGE-L when each model is quantised, per scheme. Right, NF4: the change against the
    share of weights whose NF4 code unlearning moved (the bucket crossing), the regime-matched run in red; the dotted
    line where the finding starts to count a run as crossing buckets. ``share`` is unused (kept for old recipes)."""
    schemes = list(dict.fromkeys(quant["scheme"]))
    models = list(dict.fromkeys(quant["model"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.38 * len(models) + 2.2), gridspec_kw={"width_ratios": [1.2, 1]})
    ax = axes[0]
    y = np.arange(len(models))
    height = 0.8 / len(schemes)
    for j, scheme in enumerate(schemes):
        part = quant[quant["scheme"] == scheme].set_index("model").reindex(models)
        ax.barh(y + (j - (len(schemes) - 1) / 2) * height, part["Δ rouge"].to_numpy(float), height=height,
                label=scheme, color=f"C{j}")
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(y, models, fontsize=10)
    ax.invert_yaxis()
    ax.set(xlabel="Δ forget ROUGE-L after quantisation", title="Quantisation, per scheme")
    ax.legend(fontsize=9)
    ax = axes[1]
    nf4 = quant[(quant["scheme"] == "nf4")] if "nf4" in schemes else quant[quant["scheme"] == schemes[0]]
    if "share crossed" in nf4:
        moved = nf4.dropna(subset=["share crossed"])
        for _, row in moved.iterrows():
            regime = row["kind"] == "regime-matched"
            ax.plot(row["share crossed"], row["Δ rouge"], "o", color="C3" if regime else "C0", ms=8 if regime else 6)
            ax.annotate(row["model"], (row["share crossed"], row["Δ rouge"]), fontsize=9, xytext=(4, 3),
                        textcoords="offset points")
        ax.axvline(crossed, color="0.4", ls=":", lw=1)
        ax.set_xlim(0, 1)
    ax.axhline(0, color="black", lw=0.8)
    ax.set(xlabel="share of weights whose NF4 code unlearning moved", ylabel="Δ forget ROUGE-L under NF4",
           title="Does quantisation undo it? (red: regime-matched)")
    fig.tight_layout()
    return fig


def plot_probes(probes: pd.DataFrame):
    """Forget ROUGE-L under each input probe minus the retain model's under the same probe, per model (a model that
    keeps its forgetting stays at or below 0)."""
    grid = probes.pivot_table(index="model", columns="probe", values="rouge over control", sort=False)
    grid = grid.reindex(list(dict.fromkeys(probes["model"])))
    fig, ax = plt.subplots(figsize=(10, 0.4 * len(grid) + 1.8))
    limit = max(0.2, float(np.nanmax(np.abs(grid.to_numpy(float)))))
    image = ax.imshow(grid.to_numpy(float), cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    for (i, j), value in np.ndenumerate(grid.to_numpy(float)):
        ax.text(j, i, "n/a" if np.isnan(value) else f"{value:+.2f}", ha="center", va="center", fontsize=9)
    ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=20, ha="right", fontsize=10)
    ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=10)
    ax.set_title("Input probes: forget ROUGE-L over the retain model's under the same probe", fontsize=11)
    fig.colorbar(image, ax=ax, label="ROUGE-L over the control")
    fig.tight_layout()
    return fig


def plot_survival(survival: pd.DataFrame):
    """Which runs' forgetting survives which attack (green: no more comes back than for the retain model)."""
    if survival.empty:  # no run forgot on this seed: say so instead of an empty grid
        fig, ax = plt.subplots(figsize=(8, 1.8))
        ax.text(0.5, 0.5, "no unlearning run forgot on this seed (forget ROUGE-L below half the target's),\n"
                "so no attack has anything to bring back", ha="center", va="center", fontsize=10)
        ax.set_axis_off()
        ax.set_title("Does the forgetting hold? (each attack against the retain model)", fontsize=11)
        fig.tight_layout()
        return fig
    from matplotlib.colors import ListedColormap

    values = survival.map(lambda v: np.nan if v is None else float(bool(v))).to_numpy(float)
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(survival) + 1.6))
    cmap = ListedColormap(["#f4a6a0", "#a6dba0"])  # broken, holds: light enough for the words on them
    cmap.set_bad("#e0e0e0")
    ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.grid(False)
    for (i, j), value in np.ndenumerate(values):
        ax.text(j, i, "n/a" if np.isnan(value) else ("holds" if value else "broken"), ha="center", va="center",
                fontsize=9)
    ax.set_xticks(range(values.shape[1]), survival.columns, rotation=15, ha="right", fontsize=10)
    ax.set_yticks(range(values.shape[0]), survival.index, fontsize=10)
    ax.set_title("Does the forgetting hold? (each attack against the retain model)", fontsize=11)
    fig.tight_layout()
    return fig
