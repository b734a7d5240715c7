"""The verdict helper on hand-made metrics, the README's results section against the committed summary, the
report's offline check, and figures redrawn from what `plots.draw` kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from unlearnkit import config, paths, plots, report, runs
from unlearnkit.studies import verdicts


def test_judge_counts_what_held_among_what_was_tested():
    assert verdicts.judge(3, 3) == verdicts.REPRODUCED
    assert verdicts.judge(1, 3) == verdicts.PARTLY
    assert verdicts.judge(0, 3) == verdicts.NOT
    assert verdicts.judge(0, 0) == verdicts.NO_TEST
    assert verdicts.label("not") == verdicts.NOT and verdicts.label("Reproduced") == verdicts.REPRODUCED
    with pytest.raises(ValueError):
        verdicts.label("maybe")
    with pytest.raises(ValueError, match="verdict"):
        verdicts.Finding("01_tofu_finetune", "p", "c", "r", "sort of")


def _tofu(forget_rouge, quality, utility):
    return {"forget": {"rouge": forget_rouge}, "summary": {"forget_quality": quality, "model_utility": utility}}


@pytest.fixture
def hand_made_runs(monkeypatch, tmp_path):
    """Notebook 01's target and retain model, and three unlearning runs, written through the run store."""
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    params = {"forget_split": "forget10", "retain_splits": ["retain90"]}
    runs.write_metrics("p", runs.FINETUNE, {"target": _tofu(1.0, 1e-40, 0.8), "retain90": _tofu(0.4, 1.0, 0.8)},
                       params, {"forget_quality_reference": "retain90"})
    cases = {"good": _tofu(0.3, 1e-3, 0.78),  # everything TOFU expects
             "collapsed": _tofu(0.0, 1e-5, 0.1),  # forgets, but utility is gone
             "inert": _tofu(0.95, 1e-40, 0.8)}  # nothing moved
    for run, result in cases.items():
        runs.write_metrics("p", runs.unlearning_notebook(run), {run: result}, params)
    return tmp_path


def test_unlearning_runs_are_judged_against_the_target_and_the_retain_model(hand_made_runs):
    judged = {f.short: f for nb in ("good", "collapsed", "inert")
                for f in verdicts.of_notebook(runs.unlearning_notebook(nb),
                                              runs.read_metrics("p", runs.unlearning_notebook(nb)), "p")}
    assert judged["good"].verdict == verdicts.REPRODUCED
    assert judged["collapsed"].verdict == verdicts.PARTLY and "fails: utility kept" in judged["collapsed"].this_run
    assert judged["inert"].verdict == verdicts.NOT
    # halfway from the target's forget ROUGE (1.0) to the retain model's (0.4)
    assert "halfway to the retain model 0.700" in judged["good"].this_run
    target = verdicts.of_notebook(runs.FINETUNE, runs.read_metrics("p", runs.FINETUNE), "p")
    # without privacy metrics open-unlearning's privleak finding is there, untested
    assert [f.verdict for f in target] == [verdicts.REPRODUCED, verdicts.NO_TEST]
    assert [f.notebook for f in verdicts.of_profile("p")] == [
        runs.FINETUNE, runs.FINETUNE, *sorted(runs.unlearning_notebook(r) for r in ("good", "collapsed", "inert")),
        runs.UNLEARNING]


def _private(result, mink, loss=None, privleak=None, es=0.5):
    """A result with open-unlearning's summary keys: MinK and LOSS AUCs, privleak and extraction strength."""
    loss = mink if loss is None else loss
    result["summary"].update({"mia_mink_auc": mink, "mia_loss_auc": loss, "extraction_strength": es,
                              "exact_memorisation": es, "privleak": 0.0 if privleak is None else privleak})
    return result


def test_privleak_and_rouge_against_mia_are_judged_from_the_runs(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    params = {"forget_split": "forget10", "retain_splits": ["retain90"]}
    retain = _private(_tofu(0.4, 1.0, 0.8), 0.55, privleak=-10.0, es=0.1)
    runs.write_metrics("p", runs.FINETUNE, {"target": _private(_tofu(1.0, 1e-40, 0.8), 0.99, privleak=-97.8, es=1.0),
                                            "retain90": retain}, params, {"forget_quality_reference": "retain90"})
    (_, leak) = verdicts.of_notebook(runs.FINETUNE, runs.read_metrics("p", runs.FINETUNE), "p")
    assert leak.verdict == verdicts.REPRODUCED and "privleak -10.0" in leak.this_run and "+" not in leak.this_run[:40]
    cases = {"looks_unlearned_but_member": _private(_tofu(0.3, 1e-3, 0.78), 0.80),  # MinK 0.25 above the retain's
             "looks_unlearned_and_clean": _private(_tofu(0.3, 1e-3, 0.78), 0.60, loss=0.50),  # within 0.1 each
             "over_unlearned": _private(_tofu(0.0, 1e-5, 0.1), 0.55, loss=0.20),  # LOSS 0.35 below: told apart
             "inert": _private(_tofu(0.95, 1e-40, 0.8), 0.99)}  # ROUGE not down: not tested
    for run, result in cases.items():
        runs.write_metrics("p", runs.unlearning_notebook(run), {run: result}, params)
    (across,) = verdicts.across_unlearning_runs("p")
    assert across.verdict == verdicts.PARTLY and across.notebook == runs.UNLEARNING
    assert "3 runs look unlearned" in across.this_run and "inert" not in across.this_run
    assert "tells 2 of them apart" in across.this_run
    assert "as members, looks_unlearned_but_member (ROUGE-L 0.30, mink AUC +0.25)" in across.this_run
    assert "as over-unlearned (AUC below the retain model's), over_unlearned (ROUGE-L 0.00, loss AUC -0.35)" \
        in across.this_run
    assert verdicts.mia_told_apart(cases["looks_unlearned_and_clean"]["summary"], retain["summary"]) == {}
    # the retain model out of its band and a target that leaks little: both checks fail
    runs.write_metrics("p", runs.FINETUNE, {"target": _private(_tofu(1.0, 1e-40, 0.8), 0.7, privleak=-33.0),
                                            "retain90": _private(_tofu(0.4, 1.0, 0.8), 0.6, privleak=-20.0)},
                       params, {"forget_quality_reference": "retain90"})
    (_, leak) = verdicts.of_notebook(runs.FINETUNE, runs.read_metrics("p", runs.FINETUNE), "p")
    assert leak.verdict == verdicts.NOT


def test_the_studies_own_verdicts_are_read_not_rejudged():
    controls = {"meta": {"parameters": {"forget_split": "forget10"}, "controls_verdict": {
        "finding": "every control works", "verdict": "partly",
        "works": {"ga": {"early stopping": True, "model mixing": False}, "gd": {"model mixing": False}},
        "mixing_smoothest": {"ga": False, "gd": True},
        "mixing_works_on": {"forget01": ["ga", "gd"], "forget05": [], "forget10": []}}}}
    shown = verdicts.of_notebook(runs.CONTROLS, controls, "p")
    assert [f.verdict for f in shown] == [verdicts.PARTLY, verdicts.PARTLY]
    assert "ga: early stopping; gd: none" in shown[0].this_run and "on forget01 for ga, gd" in shown[1].this_run

    formats = {"meta": {"informative_formats": ["cloze"], "findings": [
        {"model": "ga", "qa_forgets": True, "paper_finding": True},
        {"model": "gd", "qa_forgets": True, "paper_finding": False},
        {"model": "dpo", "qa_forgets": False, "paper_finding": False}]}}
    (joshi,) = verdicts.of_notebook(runs.FORMATS, formats, "p")
    assert joshi.verdict == verdicts.PARTLY and "for ga;" in joshi.this_run and "(no test): dpo" in joshi.this_run

    alignment = {"meta": {"finding": {"tested": ["a", "b"], "holding": [], "per_model": {
        "a": {"greedy_safe_share": 1.0, "risky_when_greedy_safe": 0.0},
        "b": {"greedy_safe_share": 1.0, "risky_when_greedy_safe": 0.0}}}}}
    assert verdicts.of_notebook(runs.ALIGNMENT, alignment, "p")[0].verdict == verdicts.NOT
    nothing_safe = {"meta": {"finding": {"tested": [], "holding": [], "per_model": {}}}}
    assert verdicts.of_notebook(runs.ALIGNMENT, nothing_safe, "p")[0].verdict == verdicts.NO_TEST

    entropy = {"meta": {"findings": [{"paper": "Table 1", "this run": "x", "verdict": "not"},
                                     {"paper": "EO", "this run": "y", "verdict": "reproduced"}]}}
    rows = verdicts.of_notebook(runs.ENTROPY, entropy, "p")
    assert [(f.verdict, f.figure) for f in rows] == [(verdicts.NOT, f"{runs.ENTROPY}_table1"),
                                                     (verdicts.REPRODUCED, f"{runs.ENTROPY}_regime_eo")]
    leakage = {"meta": {"verdict_label": "reproduced", "revealing": ["m@3"], "regime": {"m@3": {}, "n@4": {}}}}
    (leak,) = verdicts.of_notebook(runs.LEAKAGE, leakage, "p")
    assert leak.verdict == verdicts.REPRODUCED and "for 1 of 2 models" in leak.this_run
    with pytest.raises(KeyError, match="no findings"):
        verdicts.of_notebook("09_unknown", {}, "p")


def test_readme_results_match_the_committed_summary():
    """README's results section is exactly what `make readme` writes from docs/findings.json."""
    summary = json.loads(report.SUMMARY.read_text())
    assert summary["profile"] == config.BASE_PROFILE and summary["findings"]
    assert report.write_readme(check=True), "README.md's results section is stale: run `make readme`"
    section = report.readme_section(summary)
    assert section in report.README.read_text()
    for row in summary["findings"]:
        assert f"**{row['verdict']}**" in section
        if row["figure"]:
            assert (paths.FIGURES / f"{row['figure']}.png").exists(), f"README links a missing figure {row['figure']}"


def test_readme_section_escapes_table_cells(tmp_path):
    summary = {"profile": "default", "counts": {"partly": 1}, "findings": [verdicts.Finding(
        "01_tofu_finetune", "P", "a | b", "x\ny", verdicts.PARTLY, "").as_dict()]}
    section = report.readme_section(summary)
    assert "| a \\| b | x y | **partly** |  |" in section
    readme = tmp_path / "README.md"
    readme.write_text(f"head\n{report.START}\nold\n{report.END}\ntail\n")
    (tmp_path / "s.json").write_text(json.dumps(summary))
    assert not report.write_readme(tmp_path / "s.json", readme, check=True)
    report.write_readme(tmp_path / "s.json", readme)
    assert readme.read_text() == f"head\n{section}\ntail\n"
    assert report.write_readme(tmp_path / "s.json", readme, check=True)


def test_external_resources_are_loads_not_links():
    page = ('<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="//cdn.example/y.css">'
            '<style>@font-face { src: url("http://fonts.example/z.woff") }</style>'
            '<a href="https://arxiv.org/abs/2401.06121">TOFU</a><img src="data:image/png;base64,AAAA">'
            '<script src="mathjax/MathJax.js?config=TeX"></script>')
    assert report.external_resources(page) == ["https://cdn.example/x.js", "//cdn.example/y.css",
                                               "http://fonts.example/z.woff"]


def _lengths():
    return (pd.DataFrame({"items": [20, 100, 200]}, index=["forget01", "forget05", "forget10"]),
            pd.DataFrame({"question": [5, 7, 9, 7], "answer": [10, 12, 15, 9]}))


def test_a_drawn_figure_is_redrawn_byte_for_byte_in_another_process(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    sizes, lengths = _lengths()
    plots.draw("00_data_tour_splits", "p", plots.corpus_overview, sizes, lengths)
    figure = plots.figure_path("00_data_tour_splits", "p")
    first = figure.read_bytes()
    assert plots.figure_data_path("00_data_tour_splits", "p").exists()
    figure.unlink()
    env = {**os.environ, "UNLEARNKIT_RUNS": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "figures", "--profile", "p"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 figures redrawn" in done.stdout
    assert figure.read_bytes() == first


def test_redraw_follows_the_plotting_code_and_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    with pytest.raises(FileNotFoundError, match="run its notebooks first"):
        plots.redraw("p")
    with pytest.raises(TypeError, match="module-level"):
        plots.draw("x", "p", lambda: None)
    sizes, lengths = _lengths()
    plots.draw("00_data_tour_splits", "p", plots.corpus_overview, sizes, lengths)
    before = plots.figure_path("00_data_tour_splits", "p").read_bytes()
    original = plots.set_style

    def other_style():  # one edit of the style, then one command
        original()
        import matplotlib.pyplot as plt

        plt.rcParams["axes.facecolor"] = "#eeeeff"

    monkeypatch.setattr(plots, "set_style", other_style)
    (path,) = plots.redraw("p")
    assert path.read_bytes() != before


def test_the_report_needs_notebook_08(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    with pytest.raises(FileNotFoundError, match="run them first"):
        report.pages("p")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "00_data_tour.ipynb").write_text("{}")
    with pytest.raises(FileNotFoundError, match="front page"):
        report.pages("p")
