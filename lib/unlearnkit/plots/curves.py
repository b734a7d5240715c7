"""The recurring figures of runs: one colour per run, curves per epoch or step, bars of metrics per split and the
unlearning trade-off (forget quality against model utility)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt

from .labels import labels_apart


def loss_curves(histories: Mapping[str, Sequence[Mapping[str, float]]], title: str = "Training loss",
                key: str = "loss", ax=None):
    """One line per run of a per-step quantity against the epoch."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for label, history in histories.items():
        if history:
            ax.plot([h["epoch"] for h in history], [h[key] for h in history], label=label, lw=1.5)
    ax.set(xlabel="epoch", ylabel=key.replace("_", " "), title=title, yscale="log")
    ax.legend()
    return ax.figure


def metric_grid(results: Mapping[str, Mapping[str, Mapping[str, float]]], splits: Sequence[str],
                metrics: Sequence[str], title: str = ""):
    """Bars of each metric (columns) on each split (groups) for each model (colours)."""
    import numpy as np

    model_names = list(results)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.8), squeeze=False)
    width = 0.8 / max(1, len(model_names))
    x = np.arange(len(splits))
    for ax, metric in zip(axes[0], metrics):
        for i, model in enumerate(model_names):
            values = [results[model].get(s, {}).get(metric, np.nan) for s in splits]
            ax.bar(x + (i - (len(model_names) - 1) / 2) * width, values, width, label=model)
        ax.set_xticks(x, [s.replace("_", "\n") for s in splits])
        ax.set_ylim(0, 1.05)
        ax.set_title(metric.replace("_", " "))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 6),
               frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def run_colors(names) -> dict[str, tuple]:
    """One colour per run name, the same in every figure of a notebook."""
    import seaborn as sns

    names = sorted(set(names))
    # tab10 repeats its colours past ten runs (notebook 02 has 14 and two models of notebook 01): then tab20
    palette = sns.color_palette("tab10", 10) if len(names) <= 10 else sns.color_palette("tab20", max(20, len(names)))
    return dict(zip(names, palette))


def tradeoff(table, x: str = "model_utility", y: str = "forget_quality", log_y: bool = True,
             title: str = "Forget quality against model utility", ax=None, colors: dict | None = None,
             labels: bool = True):
    """One labelled point per model: the unlearning trade-off (up and right is better). Without ``labels`` the
    points only: a caller that lays out its figure names them afterwards (:func:`tradeoff_labels`)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4.5))
    colors = colors or run_colors(table.index)
    for name, row in table.iterrows():
        marker = "s" if row.get("kind") == "notebook 01" else "o"
        ax.scatter(row[x], row[y], s=60, marker=marker, color=colors.get(name, "black"))
    ax.set(xlabel=x.replace("_", " "), ylabel=y.replace("_", " "), title=title)
    if log_y:
        ax.set_yscale("log")
        if y == "forget_quality":
            ax.set_ylim(top=3)  # a p-value: nothing above 1
    ax.margins(x=0.1)
    if labels:
        ax.figure.tight_layout()
        tradeoff_labels(ax, table, x, y)
    return ax.figure


def tradeoff_labels(ax, table, x: str = "model_utility", y: str = "forget_quality") -> None:
    """The name of each point of :func:`tradeoff`, clear of the markers and of each other (:func:`labels_apart`)."""
    import numpy as np

    labels_apart(ax, [(row[x], row[y], str(name), 60.0) for name, row in table.iterrows()
                       if np.isfinite(row[x]) and np.isfinite(row[y]) and (row[y] > 0 or ax.get_yscale() != "log")])


def step_curves(curves, key: str, title: str, ax=None, xlabel: str = "step", reference: float | None = None,
                reference_label: str = "target", colors: dict | None = None):
    """Lines of ``key`` against ``step`` for several runs (``{run: [record, ...]}``)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = colors or run_colors(curves)
    for run, records in curves.items():
        if records:
            ax.plot([r["step"] for r in records], [r[key] for r in records], marker="o", ms=3, label=run,
                    color=colors.get(run))
    if reference is not None:
        ax.axhline(reference, color="grey", ls="--", lw=1, label=reference_label)
    ax.set(xlabel=xlabel, ylabel=key.replace("_", " "), title=title)
    ax.legend(fontsize="small")
    return ax.figure
