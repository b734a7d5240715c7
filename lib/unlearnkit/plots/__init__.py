"""Figures: one style, one ``draw`` (which saves every figure and keeps what it was drawn from, so ``make
figures`` redraws them all without training or sampling) and the recurring figures (this module), then one
module per study (calibration, formats, leakage). The top floor: only notebooks and the runner import it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from .. import runs
from ..config import Params


def set_style() -> None:
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 120, "figure.autolayout": False,
                         "svg.hashsalt": "unlearnkit", "axes.titleweight": "bold"})


def figure_path(name: str, params: Params) -> Path:
    """Where figure ``name`` of a run goes: ``figures/`` (committed) for the default profile's own seed, the seed's
    run store for any other seed or profile (:func:`unlearnkit.runs.figures_dir`)."""
    folder = runs.figures_dir(params, name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"


def save_fig(fig, name: str, params: Params) -> Path:
    """Write ``fig`` as ``<name>.png`` with deterministic bytes (no timestamp or software metadata).
    Name figures after their notebook: ``01_tofu_finetune_metrics``."""
    return save_to(fig, figure_path(name, params))


def save_to(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG with deterministic bytes."""
    fig.savefig(path, bbox_inches="tight", metadata={"Software": None})
    return path


def render_to(path: Path, plot: Callable[..., Any], *args: Any, **kwargs: Any) -> Path:
    """``plot(*args, **kwargs)`` saved to ``path`` in the workbook's style alone (as :func:`draw` renders), without
    keeping what it was drawn from: a figure made from committed data (the README's overview)."""
    with plt.rc_context():
        plt.rcdefaults()
        set_style()
        fig = plot(*args, **kwargs)
        try:
            return save_to(fig, path)
        finally:
            plt.close(fig)


#: Under runs/<profile>/seed-<s>/: what each figure of the run was drawn from (a JSON recipe per figure, with an .npz
#: of its numeric arrays: :mod:`unlearnkit.plots.recipes`; never a pickle, which would run code when read).
FIGURE_DATA = "figure-data"


def figure_data_path(name: str, params: Params) -> Path:
    return runs.store(params) / FIGURE_DATA / f"{name}.json"


def _render(name: str, params: Params, plot: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> Path:
    """``plot(*args, **kwargs)`` saved under ``name`` in the workbook's style alone: matplotlib's defaults plus
    :func:`set_style`, whatever the caller's backend (a notebook's inline backend sets its own) set, so a
    notebook and ``make figures`` write the same bytes."""
    with plt.rc_context():
        plt.rcdefaults()
        set_style()
        fig = plot(*args, **kwargs)
        try:
            return save_fig(fig, name, params)
        finally:
            plt.close(fig)


def draw(name: str, params: Params, plot: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Draw ``plot(*args, **kwargs)`` (a function of the library returning a figure), save it as
    ``<name>.png`` and keep the function and its arguments under ``runs/<profile>/seed-<s>/figure-data/``, so that
    :func:`redraw` makes the figure again from them alone, with the plotting code as it is then. In a notebook the
    saved PNG itself is shown: the report embeds the very bytes of the figure file (:func:`figure_path` gives
    where it is)."""
    if not callable(plot) or "<" in getattr(plot, "__qualname__", "<"):
        raise TypeError(f"draw needs a module-level plotting function of the library, got {plot!r}")
    from . import recipes

    path = _render(name, params, plot, args, kwargs)
    data = figure_data_path(name, params)
    data.parent.mkdir(parents=True, exist_ok=True)
    recipes.write(data, plot, args, dict(kwargs))
    _show(path, name)


def _show(path: Path, name: str) -> None:
    """Show the saved PNG, its output tagged with the figure's name (the report anchors the figure there)."""
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:  # pragma: no cover - IPython comes with the notebooks
        return
    if get_ipython() is not None:
        display(Image(filename=str(path)), metadata={"unlearnkit": {"figure": name}})


def redraw(params: Params) -> list[Path]:
    """Every figure of the run (profile and seed) drawn again from what :func:`draw` kept, without training or
    sampling. Raises FileNotFoundError when the run has kept nothing (its notebooks have not run)."""
    from . import recipes

    folder = runs.store(params) / FIGURE_DATA
    kept = sorted(folder.glob("*.json"))
    for path in sorted(set(folder.glob("*")) - set(kept) - {p.with_suffix(".npz") for p in kept}):
        print(f"{path}: not a figure recipe (JSON), not loaded: a pickle or any other file could run code; rerun "
              "the notebook that draws it", file=sys.stderr)
    if not kept:
        raise FileNotFoundError(f"no figure data of profile {params.profile!r}, seed {params.seed} under {folder}: run "
                                f"its notebooks first (make notebooks PROFILE={params.profile})")
    out = []
    for path in kept:
        try:
            plot, args, kwargs = recipes.read(path)
        except recipes.RecipeError as exc:
            print(f"{path}: {exc}; not drawn", file=sys.stderr)
            continue
        out.append(_render(path.stem, params, plot, args, kwargs))
    return out


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
             title: str = "Forget quality against model utility", ax=None, colors: dict | None = None):
    """One labelled point per model: the unlearning trade-off (up and right is better)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4.5))
    colors = colors or run_colors(table.index)
    for name, row in table.iterrows():
        marker = "s" if row.get("kind") == "notebook 01" else "o"
        ax.scatter(row[x], row[y], s=60, marker=marker, color=colors.get(name, "black"))
        ax.annotate(name, (row[x], row[y]), textcoords="offset points", xytext=(5, 4), fontsize="small")
    ax.set(xlabel=x.replace("_", " "), ylabel=y.replace("_", " "), title=title)
    if log_y:
        ax.set_yscale("log")
        if y == "forget_quality":
            ax.set_ylim(top=3)  # a p-value: nothing above 1
    return ax.figure


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


def corpus_overview(sizes, lengths):
    """Notebook 00: items per split (bars) and words per question and answer (histograms)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    sizes.sort_values("items").plot.barh(ax=axes[0], legend=False, title="Items per split")
    lengths.plot.hist(ax=axes[1], bins=30, alpha=0.7, title="Words per question and answer (full)")
    fig.tight_layout()
    return fig


def unlearning_terms(history: Sequence[Mapping[str, float]], method: str):
    """Notebook 02: the forget term and (where the method has one) the retain term of the loss per step."""
    import pandas as pd

    curves = pd.DataFrame(history).set_index("step")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    curves[["forget_loss"]].plot(ax=axes[0], title=f"{method}: forget term per step", legend=False)
    if "retain_loss" in curves:
        curves[["retain_loss"]].plot(ax=axes[1], title=f"{method}: retain term per step", legend=False)
    else:
        axes[1].set_axis_off()
    fig.tight_layout()
    return fig


def rouge_trajectory(trajectory: Sequence[Mapping[str, float]], method: str, target_forget_rouge: float,
                     final: Mapping[str, float] | None = None, final_items: int | None = None):
    """Notebook 02: greedy ROUGE-L recall on forget and retain along one unlearning run (on the first ``items`` of
    each split); ``final``, the final model's values on all ``final_items`` items (the numbers the findings read),
    drawn as diamonds at the last step so that the figure and the findings show one number per quantity."""
    import pandas as pd

    frame = pd.DataFrame(trajectory).set_index("step")
    items = int(frame["items"].iloc[-1]) if "items" in frame else None
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, split in enumerate(("forget", "retain")):
        ax.plot(frame.index, frame[f"{split}_rouge"], "o-", color=f"C{i}",
                label=f"{split}, along the run" + (f" (first {items} items)" if items else ""))
        if final and f"{split}_rouge" in final:
            ax.plot(frame.index[-1], final[f"{split}_rouge"], "D", color=f"C{i}", ms=8, mfc="white", mew=2,
                    label=f"{split}, final model ({final_items} items): {final[f'{split}_rouge']:.3f}")
    ax.axhline(target_forget_rouge, color="grey", ls="--", lw=1, label="target, forget")
    ax.set(xlabel="step", ylabel="greedy ROUGE-L recall", ylim=(-0.02, 1.02), title=f"{method}: greedy ROUGE-L recall")
    ax.legend(fontsize=9)
    return fig


def unlearning_comparison(comparison, trajectories: Mapping[str, Sequence[Mapping[str, float]]],
                          target_forget_rouge: float):
    """Notebook 02: every run so far, forget quality against model utility and forget ROUGE along each run."""
    colors = run_colors(comparison.index)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    tradeoff(comparison, ax=axes[0], colors=colors)
    step_curves(trajectories, "forget_rouge", "Forget ROUGE-L recall along unlearning", ax=axes[1],
                reference=target_forget_rouge, colors=colors)
    fig.tight_layout()
    return fig


#: The membership-inference AUC columns of the open-unlearning summary, in the order OU lists its attacks.
MIA_COLUMNS = ("mia_loss_auc", "mia_zlib_auc", "mia_mink_auc", "mia_minkpp_auc", "mia_gradnorm_auc",
               "mia_reference_auc")


def _labels_apart(ax, points: Sequence[tuple[float, float, str]], gap: float = 11.0) -> None:
    """Name each point beside it, moving a label up (with a thin line back to its point) where it would overprint
    another label: the runs of a comparison crowd in a few places (utility near the target's, privleak near -100)."""
    fig = ax.figure
    fig.canvas.draw()  # the limits and the transform as they will be drawn
    placed: list[tuple[float, float, float]] = []  # x0, x1, y of every label, in display points
    for x, y, name in sorted(points, key=lambda p: ax.transData.transform((p[0], p[1]))[1]):
        px, py = ax.transData.transform((x, y))
        width = 6.0 * len(name) * fig.dpi / 72.0
        ly = py
        for x0, x1, y0 in sorted(placed, key=lambda r: r[2]):
            if x0 < px + 5 + width and px + 5 < x1 and abs(ly - y0) < gap * fig.dpi / 72.0:
                ly = y0 + gap * fig.dpi / 72.0
        placed.append((px + 5, px + 5 + width, ly))
        offset = (5.0, (ly - py) * 72.0 / fig.dpi + 3.0)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=offset, fontsize="small",
                    arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.5} if ly - py > 1 else None)


def ou_summary(table, reference: str | None = None, options: Mapping[str, Any] | None = None):
    """Notebook 02: open-unlearning's TOFU summary of every run (docs/metrics.md §9). (a) privleak against model
    utility: 0 is the retain model's level, strongly negative is under-unlearned, positive over-unlearned; (b)
    extraction strength against forget quality; (c) every membership-inference AUC per model, 0.5 (white) meaning
    forget and holdout authors look alike, above it (red) the forget authors look like training members.
    ``reference`` names the retain model's row; ``options``, the scoring options where the workbook and
    open-unlearning differ, are named under the title, so a reader comparing with a published table knows them."""
    import numpy as np

    colors = run_colors(table.index)
    fig = plt.figure(figsize=(16, 6))
    grid = fig.add_gridspec(1, 3, width_ratios=[1, 1, 1.1])
    axes = [fig.add_subplot(grid[0, i]) for i in range(3)]
    for ax, (x, y) in zip(axes[:2], [("model_utility", "privleak"), ("forget_quality", "extraction_strength")]):
        points = []
        for name, row in table.iterrows():
            if not (np.isfinite(row.get(x, np.nan)) and np.isfinite(row.get(y, np.nan))):
                continue
            marker = "*" if name == reference else "s" if row.get("kind") == "notebook 01" else "o"
            ax.scatter(row[x], row[y], s=200 if name == reference else 60, marker=marker, color=colors[name],
                       zorder=3, edgecolor="black" if name == reference else None)
            points.append((row[x], row[y], str(name)))
        if y == "privleak":
            ax.axhline(0, color="grey", ls="--", lw=1)
            ax.set(xlabel="model utility", ylabel="privleak (%)",
                   title="(a) privleak against utility (0: retain level)")
        else:
            ax.set_xscale("log")
            ax.set(xlabel="forget quality (KS p-value)", ylabel="extraction strength on forget",
                   title="(b) extraction strength against forget quality")
        _labels_apart(ax, points)
    columns = [c for c in MIA_COLUMNS if c in table.columns]
    values = table[columns].astype(float).to_numpy() if columns else np.zeros((len(table), 0))
    image = axes[2].imshow(values, cmap="RdBu_r", vmin=0.0, vmax=1.0, aspect="auto")
    axes[2].set_xticks(range(len(columns)), [c.removeprefix("mia_").removesuffix("_auc") for c in columns],
                       rotation=30, ha="right")
    axes[2].set_yticks(range(len(table)), [f"{n} (retain)" if n == reference else n for n in table.index])
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                dark = abs(values[i, j] - 0.5) > 0.3
                axes[2].text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize="x-small",
                             color="white" if dark else "black")
    axes[2].grid(False)
    axes[2].set_title("(c) membership-inference AUC, forget against holdout")
    fig.colorbar(image, ax=axes[2], fraction=0.04, label="AUC (> 0.5: forget items look like members)")
    if options:
        fig.suptitle("scoring options (docs/metrics.md §9; open-unlearning's in brackets): "
                     + ", ".join(f"{k} {v}" for k, v in options.items()), fontsize="medium", y=1.0)
    fig.tight_layout()
    return fig


#: Verdict colours of the findings figure (notebook 08): green, amber, red, greys.
VERDICT_COLORS = {"reproduced": "#1a9850", "partly": "#f0a202", "not reproduced": "#d73027", "no test": "#bdbdbd",
                  "fact": "#8c8c8c"}


def findings_overview(table, seeds: Sequence[int] | None = None):
    """Notebook 08 and the README: one tile per finding, grouped by paper, coloured by its verdict over the training
    seeds (``seeds``, named in the title) and labelled with the notebook it comes from; a reader sees at a glance which
    findings came back at this profile's scale."""
    import textwrap

    papers = list(dict.fromkeys(table["paper"]))
    rows = [table[table["paper"] == paper] for paper in papers]
    width = max(len(r) for r in rows)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.45 * width + 3.2), 0.95 * len(papers) + 1.2))
    for y, part in enumerate(rows):
        for x, (_, row) in enumerate(part.iterrows()):
            color = VERDICT_COLORS.get(row["verdict"], "#ffffff")
            ax.add_patch(plt.Rectangle((x + 0.04, y + 0.06), 0.92, 0.88, color=color))
            name = "\n".join(textwrap.wrap(row.get("short") or "", 12) + [row["notebook"][:2]])
            ax.text(x + 0.5, y + 0.5, name, ha="center", va="center", fontsize="small",
                    color="white" if row["verdict"] in ("reproduced", "not reproduced") else "black")
    ax.set_xlim(0, width)
    ax.set_ylim(len(papers), 0)
    ax.set_yticks([y + 0.5 for y in range(len(papers))], ["\n".join(textwrap.wrap(p, 28)) for p in papers])
    ax.set_xticks([])
    ax.grid(False)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for v, c in VERDICT_COLORS.items() if v in set(table["verdict"])]
    labels = [v for v in VERDICT_COLORS if v in set(table["verdict"])]
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=len(labels), frameon=False)
    over = f" over training seed{'s' if len(seeds or []) != 1 else ''} {', '.join(map(str, seeds))}" if seeds else ""
    ax.set_title(f"Each finding of each paper, by its verdict{over} (tile: the finding, its notebook)")
    fig.tight_layout()
    return fig
