"""Every figure legible in the HTML report (issue #36): the text measure of :func:`unlearnkit.plots.smallest_text_px`
on figures of known font sizes, and the smallest text of the recurring figures, drawn from small hand-made inputs,
at least :data:`unlearnkit.plots.MIN_TEXT_PX` as the report shows them."""

from __future__ import annotations

import struct

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from unlearnkit import plots  # noqa: E402
from unlearnkit.metrics.ps import FORGET, HELDOUT  # noqa: E402
from unlearnkit.metrics.sampling import SampledScores  # noqa: E402
from unlearnkit.plots import calibration as calibration_plots  # noqa: E402
from unlearnkit.plots import entropy as entropy_plots  # noqa: E402
from unlearnkit.plots import leakage as leakage_plots  # noqa: E402
from unlearnkit.studies.calibration import Calibration, MethodControls, Tolerances  # noqa: E402


@pytest.fixture(autouse=True)
def workbook_style():
    """The style :func:`unlearnkit.plots.draw` renders in; every figure closed after its test."""
    with plt.rc_context():
        plt.rcdefaults()
        plots.set_style()
        yield
    plt.close("all")


def _png_width(path) -> int:
    with open(path, "rb") as f:
        return struct.unpack(">I", f.read(24)[16:20])[0]


def _page(width_in: float, fontsize: float, text: str = "some text"):
    """A figure ``width_in`` wide whose tight box is the figure itself: one frameless axes over all of it, with one
    text of ``fontsize`` points inside."""
    fig = plt.figure(figsize=(width_in, 3))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, fontsize=fontsize, ha="center", va="center")
    return fig


# --------------------------------------------------------------------------- the measure


def test_the_constants_are_the_reports():
    assert plots.CONTENT_WIDTH_PX == 1000 and plots.MIN_TEXT_PX == 9.0 and plots.SAVE_DPI == 120
    assert plt.rcParams["savefig.dpi"] == plots.SAVE_DPI


def test_text_wider_than_the_column_is_shrunk_with_the_figure(tmp_path):
    fig = _page(12, 10)
    # saved with bbox_inches="tight" and 0.1 in of padding each side: (12 + 0.2) in x 120 dpi = 1464 px, shown 1000 px
    assert _png_width(plots.save_to(fig, tmp_path / "wide.png")) == pytest.approx(1464, abs=1)
    expected = 10 * 120 / 72 * 1000 / 1464  # 11.38 px
    assert plots.smallest_text_px(fig) == pytest.approx(expected, rel=1e-3)
    px, text = plots.smallest_text_px(fig, with_text=True)
    assert text == "some text" and px == pytest.approx(expected, rel=1e-3)
    assert plots.legible(fig)


def test_a_figure_narrower_than_the_column_is_shown_at_its_own_size(tmp_path):
    fig = _page(8, 10)  # (8 + 0.2) x 120 = 984 px < 1000: not shrunk
    assert _png_width(plots.save_to(fig, tmp_path / "narrow.png")) == pytest.approx(984, abs=1)
    assert plots.smallest_text_px(fig) == pytest.approx(10 * 120 / 72, rel=1e-3)  # 16.7 px
    # the same figure in a narrower column, or saved at another resolution
    assert plots.smallest_text_px(fig, shown_width_px=492) == pytest.approx(10 * 120 / 72 / 2, rel=1e-3)
    assert plots.smallest_text_px(fig, dpi=72) == pytest.approx(10.0, rel=1e-3)


def test_tiny_text_fails_the_rule_and_is_named():
    fig = _page(16, 12, "title")
    fig.axes[0].text(0.1, 0.1, "tiny", fontsize=6)
    fig.axes[0].text(0.2, 0.2, "hidden", fontsize=2, visible=False)  # not drawn: not counted
    fig.axes[0].text(0.3, 0.3, "", fontsize=1)  # empty: not counted
    px, text = plots.smallest_text_px(fig, with_text=True)
    assert text == "tiny"
    assert px == pytest.approx(6 * 120 / 72 * 1000 / (16.2 * 120), rel=1e-3)  # 5.1 px
    assert px < plots.MIN_TEXT_PX and not plots.legible(fig)


def test_tick_labels_legends_and_titles_count():
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([0, 1], [0, 1], label="line")
    ax.set_title("title", fontsize=14)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=12)
    px, text = plots.smallest_text_px(fig, with_text=True)
    assert px == pytest.approx(7 * 120 / 72, rel=1e-3)  # narrower than the column: its own size
    assert text in {t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()}
    assert "title" in {t.get_text() for t in plots.drawn_texts(fig)}


# --------------------------------------------------------------------------- the recurring figures


def _assert_legible(fig):
    px, text = plots.smallest_text_px(fig, with_text=True)
    assert px >= plots.MIN_TEXT_PX, f"{text!r} is {px:.1f} px tall in the report"


def _texts(fig) -> list[str]:
    return [t.get_text() for t in plots.drawn_texts(fig)]


RUNS = ["target", "retain90", "ga", "gd", "npo", "npo_eo", "rmu", "idk", "dpo", "simnpo", "satimp", "wga"]


def test_ou_summary_is_legible_and_marks_a_missing_value():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"kind": ["notebook 01"] * 2 + ["notebook 02"] * (len(RUNS) - 2),
                          "forget_quality": 10.0 ** -rng.uniform(0, 40, len(RUNS)),
                          "model_utility": rng.uniform(0.0, 0.9, len(RUNS)),
                          "privleak": rng.uniform(-100, 80, len(RUNS)),
                          "extraction_strength": rng.uniform(0, 1, len(RUNS))}, index=RUNS)
    table.loc[["idk", "dpo", "simnpo"], ["model_utility", "privleak"]] = [0.8, -100.0]  # a crowd
    for column in plots.MIA_COLUMNS:
        table[column] = rng.uniform(0, 1, len(RUNS))
    table.loc["retain90", "mia_reference_auc"] = np.nan  # the retain model is its own reference
    fig = plots.ou_summary(table, "retain90", {"truth_ratio_guard": "exact [ou]"})
    _assert_legible(fig)
    assert "n/a" in _texts(fig)
    # panel (b): no name printed over a marker
    ax = fig.axes[1]
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_text() in RUNS]
    assert len(labels) == len(RUNS)
    markers = [ax.transData.transform(c.get_offsets()[0]) for c in ax.collections]
    for label in labels:
        box = label.get_window_extent(renderer)
        assert not any(box.x0 < x < box.x1 and box.y0 < y < box.y1 for x, y in markers), label.get_text()


def test_findings_overview_is_legible():
    papers = ["TOFU (Maini et al., 2024)"] * 16 + ["Unlearning with control (Wang et al., 2024)"] * 2 + [
        "A probabilistic perspective (Scholten et al., 2025)"] * 6
    tiles = ["reproduced", "inconclusive", "contradicted", "not testable here", "consistent on every testable seed",
             "inconclusive or mixed"] * 4
    table = pd.DataFrame({"paper": papers, "short": [f"claim number {i}" for i in range(len(papers))],
                          "notebook": ["02_unlearning"] * len(papers), "verdict": tiles, "tile": tiles})
    fig = plots.findings_overview(table, [0, 1, 2])
    _assert_legible(fig)


def _table1(collapsed: bool = True) -> pd.DataFrame:
    rows = [("ga_mild@26", "ga", "in regime (05)", None), ("rmu@30", "rmu", "in regime (05)", None),
            ("ga", "ga", "final (02)", collapsed), ("npo", "npo", "final (02)", False),
            ("ga_mild_eo1_answer@26", "ga_eo", "EO, in regime", None)]
    table = pd.DataFrame(rows, columns=["model", "method", "kind", "collapsed"]).set_index("model")
    table["greedy ROUGE-L"] = [0.3, 0.6, 0.0, 0.2, 0.3]
    table["ED mean"] = [0.32, 0.55, 0.02, 0.25, 0.3]
    table["ED sd"] = [0.1, 0.12, 0.01, 0.05, 0.0]
    table["ED score"] = table["ED mean"] + 2 * table["ED sd"]
    table["model utility"] = [0.55, 0.6, 0.1, 0.58, 0.5]
    table["paper greedy"] = [0.32, 0.7, 0.32, 0.22, np.nan]
    table["paper ED score"] = [0.41, 0.81, 0.41, 0.34, np.nan]
    return table


def test_table1_is_legible_shows_the_targets_utility_and_marks_collapsed_runs():
    fig = entropy_plots.plot_table1(_table1(), target_utility=0.6)
    _assert_legible(fig)
    texts = _texts(fig)
    assert "ga (collapsed)" in texts and "npo (collapsed)" not in texts
    assert any("1/n" in t for t in texts)  # the sd convention
    utility = fig.axes[1]
    levels = sorted(line.get_ydata()[0] for line in utility.get_lines())
    assert levels == pytest.approx([0.54, 0.6])  # 90 % of the target's utility, and the target's
    assert any(bar.get_hatch() for bar in utility.patches)
    # the recipe of an older run: no target utility, no collapsed column
    old = _table1().drop(columns="collapsed")
    _assert_legible(entropy_plots.plot_table1(old))


def _sweep(control: str, values) -> pd.DataFrame:
    values = np.asarray(values, dtype=float)
    share = (values - values.min()) / (values.max() - values.min())
    return pd.DataFrame({control: values, f"{HELDOUT}_ps_exact": 1 - 0.3 * share,
                         f"{HELDOUT}_ps_perturb": 0.8 - 0.2 * share, f"{FORGET}_ps_exact": 1 - share,
                         f"{FORGET}_ps_similar": 1 - 0.5 * share, "passes": share < 0.4})


def test_controls_per_method_is_legible_with_y_ticks_on_every_row():
    sweeps = {"delta": _sweep("delta", [0.3, 3, 30, 300]), "t": _sweep("t", [0, 5, 10, 20, 35]),
              "a": _sweep("a", np.linspace(0, 1, 6))}
    calibrations = {c: Calibration(control=c, best=None, profile=None, table=t) for c, t in sweeps.items()}
    before = {HELDOUT: {"ps_exact": 1.0, "ps_perturb": 0.8}, FORGET: {"ps_exact": 1.0, "ps_similar": 1.0}}
    capped = MethodControls("ga", "ga", calibrations, before)
    uncapped = MethodControls("idk", "idk", {c: calibrations[c] for c in ("t", "a")}, before, "IDK is not capped")
    fig = calibration_plots.controls_grid_figure({"ga": capped, "idk": uncapped}, before, Tolerances(0.1, 0.5))
    _assert_legible(fig)
    renderer = fig.canvas.get_renderer()
    for row in np.asarray(fig.axes[:6]).reshape(2, 3):
        first = next(ax for ax in row if ax.axison)
        shown = [t for t in first.get_yticklabels() if t.get_visible() and t.get_text()]
        assert shown and all(t.get_window_extent(renderer).width > 0 for t in shown)


def _scores(rng, leak_p: float, greedy_p: float, questions: int = 12, n: int = 16) -> SampledScores:
    return SampledScores(questions=[f"q{i}" for i in range(questions)], keys=["key"] * questions,
                         greedy_answers=[""] * questions,
                         greedy_leak=(rng.random(questions) < greedy_p).astype(np.int8),
                         certainty=np.ones(questions), leak=(rng.random((questions, n)) < leak_p).astype(np.int8),
                         self_bleu=np.ones(questions), examples=[[]] * questions,
                         greedy_rouge=rng.uniform(0, 1, questions), rouge=rng.uniform(0, 1, (questions, n)))


def test_greedy_vs_samples_shows_the_leak_bounds_the_verdict_judges():
    rng = np.random.default_rng(0)
    results = {"target": _scores(rng, 0.8, 0.9), "retain90": _scores(rng, 0.05, 0.05),
               "ga_mild@26": _scores(rng, 0.3, 0.0), "rmu@35": _scores(rng, 0.2, 0.1)}
    fig = leakage_plots.plot_greedy_vs_samples(results, alpha=0.01, reference="retain90",
                                               chosen={"ga_mild@26": True, "rmu@35": False})
    _assert_legible(fig)
    texts = " ".join(_texts(fig))
    assert "M_bin" in texts and "beyond guessing" in texts and "α/Q = 0.01/12" in texts
    # the recipe of an older run (results alone): the ROUGE-L panels, legible too
    _assert_legible(leakage_plots.plot_greedy_vs_samples(results, alpha=None))


def test_leak_at_k_figure_is_legible_and_names_the_floor():
    from unlearnkit.metrics.meta_eval import leak_at_k_curves

    rng = np.random.default_rng(0)
    per_item = {"target": {"leaks": rng.integers(60, 129, 40)}, "retain90": {"leaks": rng.integers(0, 3, 40)},
                "ga_mild@26": {"leaks": rng.integers(0, 60, 40)}, "rmu@35": {"leaks": rng.integers(0, 20, 40)}}
    fig = leakage_plots.plot_leak_at_k(leak_at_k_curves(per_item, 128), floor="retain90")
    _assert_legible(fig)
    texts = " ".join(_texts(fig))
    assert "retain90 (floor: guessing)" in texts and "n = 128" in texts
    with pytest.raises(ValueError, match="floor model"):
        leakage_plots.plot_leak_at_k(leak_at_k_curves(per_item, 128), floor="retain95")


def test_the_robustness_figures_are_legible():
    from unlearnkit.plots import recovery as recovery_plots

    labels = ["target", "retain90", "ga", "gd", "kl", "idk", "dpo", "npo", "rmu", "simnpo", "wga", "satimp", "ceu",
              "undial", "altpo", "npo_lr3e-06"]
    kinds = ["target", "retain (control)"] + ["unlearned (02)"] * 13 + ["regime-matched"]
    rng = np.random.default_rng(0)
    relearn = pd.DataFrame({"kind": kinds, "Δ rouge": rng.uniform(0, 0.8, 16)}, index=labels)
    curves = {m: [(s, float(min(1, 0.1 * s * rng.uniform(0.5, 1.5)))) for s in range(8)] for m in labels}
    _assert_legible(recovery_plots.plot_relearning(curves, relearn, 0.5))
    rtt = pd.DataFrame({"kind": kinds, "held-out before": rng.uniform(0, 0.3, 16),
                        "held-out after": rng.uniform(0.2, 0.9, 16)}, index=labels)
    _assert_legible(recovery_plots.plot_rtt(rtt))
    quant = pd.DataFrame([{"model": m, "kind": k, "scheme": s, "Δ rouge": float(rng.uniform(-0.1, 0.4)),
                           "share crossed": float(rng.uniform(0.01, 0.9))} for m, k in zip(labels, kinds)
                          for s in ("nf4", "int4", "int8")])
    _assert_legible(recovery_plots.plot_quantisation(quant, 0.01, 0.1))
    probes = pd.DataFrame([{"model": m, "probe": p, "rouge over control": float(rng.uniform(-0.3, 0.3))}
                           for m in labels for p in ("plain", "prefill", "paraphrase", "retain shots ×2",
                                                     "forget shots ×2", "retain shots ×5", "forget shots ×5")])
    _assert_legible(recovery_plots.plot_probes(probes))
    survival = pd.DataFrame({"relearning": [True, False] * 7, "quantisation (nf4)": [True] * 14,
                             "held-out facts": [None, True] * 7, "input probes": [False] * 14}, index=labels[2:])
    _assert_legible(recovery_plots.plot_survival(survival))
