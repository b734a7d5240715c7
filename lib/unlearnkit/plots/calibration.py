"""Figures of the calibration study (:mod:`unlearnkit.studies.calibration`, Wang et al.): PS against a control
with its pass floors, risks and PS along a run (their Fig. 1), GD under three controls (Fig. 2) and each
method's mixing calibration."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd

from ..metrics.ps import FORGET, HELDOUT, PSProfile
from ..studies.calibration import (
    CONTROL_NAMES,
    FAIL,
    UNCERTAIN,
    Calibration,
    MethodControls,
    Tolerances,
    best_passing,
)

#: How each control is titled and its axis labelled.
CONTROL_LABELS = {"delta": ("objective capping", "cap δ on each forget answer's sequence NLL"), "t": ("early stopping", "step t"),
                  "a": ("model mixing", "mixing coefficient a")}


def criterion_lines(ax, before: PSProfile, tolerances: Tolerances) -> None:
    """The pass floors: held-out retain PS-exact and PS-perturb, forget PS-similar, as dotted lines."""
    kept = 1 - tolerances.retain
    ax.axhline(kept * before[HELDOUT]["ps_exact"], color="C0", ls=":", lw=1,
               label=f"retain PS-exact floor ({kept:.0%} of before)")
    if before[HELDOUT].get("ps_perturb") is not None:
        ax.axhline(kept * before[HELDOUT]["ps_perturb"], color="C9", ls=":", lw=1,
                   label=f"retain PS-perturb floor ({kept:.0%} of before)")
    ax.axhline((1 - tolerances.forget_similar) * before[FORGET]["ps_similar"], color="C2", ls=":", lw=1,
               label=f"forget PS-similar floor ({1 - tolerances.forget_similar:.0%})")


def plot_ps_lines(ax, table: pd.DataFrame, control: str, before: PSProfile | None = None,
                  tolerances: Tolerances | None = None, title: str = "", xlabel: str | None = None,
                  best: float | None = None, log_x: bool = False):
    """PS-exact on held-out retain and forget, PS-perturb on held-out retain and PS-similar on forget against a
    control, with every pass floor (given ``before`` and ``tolerances``) and the best passing setting marked
    (PS-perturb is low on real TOFU and is often the criterion that fails). ``log_x`` puts the control on a log2
    axis ticked at its values (the caps δ)."""
    table = table.sort_values(control)
    styles = ((f"{HELDOUT}_ps_exact", "held-out retain PS-exact", "C0", "o"),
              (f"{HELDOUT}_ps_perturb", "held-out retain PS-perturb", "C9", "d"),
              (f"{FORGET}_ps_exact", "forget PS-exact", "C3", "s"),
              (f"{FORGET}_ps_similar", "forget PS-similar", "C2", "^"))
    for column, label, colour, marker in styles:
        if column in table:
            ax.plot(table[control], table[column], marker=marker, ms=4, color=colour, label=label)
    if before is not None and tolerances is not None:
        criterion_lines(ax, before, tolerances)
    if "status" in table:
        failing, uncertain = table[table["status"] == FAIL], table[table["status"] == UNCERTAIN]
        ax.scatter(uncertain[control], uncertain[f"{HELDOUT}_ps_exact"], marker="o", facecolors="none",
                   edgecolors="k", zorder=3, s=60, label="uncertain (a floor inside its interval)")
    elif "passes" in table:
        failing = table[~table["passes"].astype(bool)]
    if "status" in table or "passes" in table:
        ax.scatter(failing[control], failing[f"{HELDOUT}_ps_exact"], marker="x", color="k", zorder=3, s=25,
                   label="fails the criteria")
    if best is not None:
        ax.axvline(best, color="grey", ls="--", lw=1, label="best passing setting")
        symbol = {"delta": "δ"}.get(control, control)
        title = f"{title}: best {symbol} = {best:.3g}" if title else f"best {symbol} = {best:.3g}"
    ax.set(xlabel=xlabel or control, ylabel="PS", title=title, ylim=(-0.03, 1.05))
    if log_x:
        values = sorted(float(v) for v in table[control])
        ax.set_xscale("log", base=2)
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.minorticks_off()
        ax.set_xlim(values[0] / 1.5, values[-1] * 1.5)  # room around a single value too
    return ax


def shared_legend(fig, ax, ncol: int = 4):
    """One legend below a row of panels, from the handles of ``ax`` (it would hide data inside a panel)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, fontsize=10,
               frameon=False)
    return fig


def _row_labels(axes) -> None:
    """In each row of panels sharing y, the y tick labels and the label on the first panel that is drawn (not the
    first column when its panel is switched off: a method that is not capped), none on the others."""
    for row in axes:
        shown = [ax for ax in row if ax.axison]
        for k, ax in enumerate(shown):
            ax.tick_params(labelleft=k == 0)
            ax.set_ylabel("PS" if k == 0 else "")


def plot_trajectory(table: pd.DataFrame, before: PSProfile, tolerances: Tolerances, title: str = ""):
    """Wang et al.'s Fig. 1 analogue: risks (NLL) and PS-exact along an unlearning run (an early-stopping sweep)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 4.2))
    left.plot(table["t"], table[f"{FORGET}_nll"], marker="o", ms=4, color="C3", label="unlearning risk (forget NLL)")
    left.plot(table["t"], table[f"{HELDOUT}_nll"], marker="o", ms=4, color="C0",
              label="retain risk (held-out retain NLL)")
    left.set(xlabel="step t", ylabel="mean answer NLL (log scale)", yscale="log", title="Risks along the run")
    left.legend(fontsize=10)
    right.plot(table["t"], table[f"{HELDOUT}_ps_exact"], marker="o", ms=4, color="C0", label="held-out retain")
    right.plot(table["t"], table[f"{FORGET}_ps_exact"], marker="s", ms=4, color="C3", label="forget")
    right.axhline((1 - tolerances.retain) * before[HELDOUT]["ps_exact"], color="C0", ls=":", lw=1,
                  label=f"{1 - tolerances.retain:.0%} of held-out retain before")
    right.set(xlabel="step t", ylabel="PS-exact", title="Parameterisation strength along the run", ylim=(-0.03, 1.05))
    right.legend(fontsize=10)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def controls_figure(sweeps: Mapping[str, pd.DataFrame], before: PSProfile, tolerances: Tolerances,
                    title: str = "GD under three controls"):
    """Wang et al.'s Fig. 2 analogue: one panel per control's sweep (``sweeps`` keyed by ``delta``, ``t``, ``a``),
    each with its pass floors and best passing setting; the caps δ on a log axis."""
    fig, axes = plt.subplots(1, len(sweeps), figsize=(13 / 3 * len(sweeps), 4.3), sharey=True, squeeze=False)
    fig.suptitle(title, y=1.02)
    for ax, (control, table) in zip(axes[0], sweeps.items()):
        best = best_passing(table, control)
        panel, xlabel = CONTROL_LABELS.get(control, (control, control))
        plot_ps_lines(ax, table, control, before, tolerances, title=panel, xlabel=xlabel, log_x=control == "delta",
                      best=None if best is None else best[control])
    _row_labels(axes)
    fig.tight_layout()
    return shared_legend(fig, axes[0][-1], ncol=3)


def mixing_figure(calibrations: Mapping[str, Calibration], before: PSProfile, tolerances: Tolerances,
                  ncols: int = 3):
    """One panel per method (``ncols`` a row): PS against the mixing coefficient a over its coarse and fine
    settings, with the calibrated a marked."""
    ncols = max(1, min(ncols, len(calibrations)))
    nrows = -(-len(calibrations) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.6 * nrows), sharey=True, squeeze=False)
    for ax, (method, calibration) in zip(axes.flat, calibrations.items()):
        plot_ps_lines(ax, calibration.table, "a", before, tolerances, title=method, best=calibration.best)
    for ax in list(axes.flat)[len(calibrations):]:
        ax.set_axis_off()
    _row_labels(axes)
    fig.tight_layout()
    return shared_legend(fig, axes[0][0], ncol=3)


def interference_figure(tables: Mapping[str, pd.DataFrame], before: PSProfile, tolerances: Tolerances):
    """Held-out retain PS-exact and PS-perturb, and forget PS-exact, along each interference run against its epoch
    (runs at other learning rates share epochs, not steps), with the pass floors."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.0), sharey=True)
    panels = ((f"{HELDOUT}_ps_exact", "held-out retain PS-exact", before[HELDOUT]["ps_exact"]),
              (f"{HELDOUT}_ps_perturb", "held-out retain PS-perturb", before[HELDOUT]["ps_perturb"]),
              (f"{FORGET}_ps_exact", "forget PS-exact", None))
    for i, (run, table) in enumerate(tables.items()):
        for ax, (column, _, _) in zip(axes, panels):
            ax.plot(table["epoch"], table[column], marker="o", ms=3, color=f"C{i}", label=run)
    for ax, (_, title, floor_of) in zip(axes, panels):
        if floor_of is not None:
            ax.axhline((1 - tolerances.retain) * floor_of, color="grey", ls=":", lw=1,
                       label=f"{1 - tolerances.retain:.0%} of before")
        ax.set(xlabel="epoch", title=title, ylim=(-0.03, 1.05))
    axes[0].set_ylabel("PS")
    axes[0].legend(fontsize=10)
    fig.suptitle("What erodes the held-out memory: the retain term alone and the learning rate")
    fig.tight_layout()
    return fig


def controls_grid_figure(method_controls: Mapping[str, MethodControls], before: PSProfile, tolerances: Tolerances):
    """Wang et al.'s Fig. 2 for every method: one row per run, one column per control (capping, early stopping,
    mixing), each panel with its pass floors and best passing setting; where capping does not apply, the reason."""
    controls = list(CONTROL_NAMES)
    fig, axes = plt.subplots(len(method_controls), len(controls), figsize=(13, 3.2 * len(method_controls)),
                             sharey=True, squeeze=False)
    for row, (run, mc) in zip(axes, method_controls.items()):
        for ax, control in zip(row, controls):
            if control not in mc.controls:
                ax.text(0.5, 0.5, textwrap.fill(mc.not_capped or "not capped", 38), ha="center", va="center",
                        fontsize=10, transform=ax.transAxes)
                ax.set_title(f"{run}: {CONTROL_NAMES[control]}")
                ax.axis("off")
                continue
            calibration = mc.controls[control]
            best = best_passing(calibration.table, control)
            xlabel = CONTROL_LABELS[control][1]
            plot_ps_lines(ax, calibration.table, control, before, tolerances, title=f"{run}: {CONTROL_NAMES[control]}",
                          xlabel=xlabel, log_x=control == "delta", best=None if best is None else best[control])
    _row_labels(axes)
    fig.suptitle("Every method under the three controls (Wang et al.'s Fig. 2 per method)", y=1.0)
    fig.tight_layout()
    return shared_legend(fig, axes[0][-1], ncol=3)


def splits_figure(table: pd.DataFrame, confidence: float = 0.95):
    """Forget PS-exact before unlearning, calibrated by model mixing (with its bootstrap interval over items) and
    uncontrolled, per run, one panel per forget split."""
    splits = list(dict.fromkeys(table["split"]))
    fig, axes = plt.subplots(1, len(splits), figsize=(4.6 * len(splits), 3.8), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        part = table[table["split"] == split].reset_index(drop=True)
        x = range(len(part))
        width = 0.27
        ax.bar([i - width for i in x], part["forget PS-exact before"], width, color="C7", label="before")
        calibrated = part["forget PS-exact calibrated"]
        errors = [(calibrated - part["interval low"]).clip(lower=0), (part["interval high"] - calibrated).clip(lower=0)]
        ax.bar(list(x), calibrated, width, color="C0", yerr=errors, capsize=3, label="calibrated by mixing")
        ax.bar([i + width for i in x], part["forget PS-exact uncontrolled"], width, color="C3", label="uncontrolled")
        ax.set_xticks(list(x), [f"{r}\na={a:.2g}" if a is not None and a == a else f"{r}\nnone"
                                for r, a in zip(part["run"], part["calibrated a"])], fontsize=10)
        ax.set(title=f"{split} ({int(part['forget items'].iloc[0])} forget items)", ylim=(0, 1.05))
    axes[0][0].set_ylabel("forget PS-exact")
    fig.suptitle(f"Model mixing calibrated on each forget split (bars: {confidence:.0%} bootstrap interval over items)")
    fig.tight_layout()
    return shared_legend(fig, axes[0][0], ncol=3)
