"""The verdict helper on hand-made metrics, the README's results section against the committed summary, the
report's offline check, and figures redrawn from what `plots.draw` kept."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from unlearnkit import config, paths, plots, report, runs
from unlearnkit import former as claims
from unlearnkit.studies import alignment, calibration, leakage, verdicts

#: The run store of the hand-made runs (under a temporary runs/): the smoke profile's seed 0.
SMOKE = config.Params.load("smoke")


def test_an_outcome_counts_what_held_among_what_was_tested():
    assert claims.outcome_of(3, 3) == claims.HOLDS
    assert claims.outcome_of(1, 3) == claims.PARTLY_HOLDS
    assert claims.outcome_of(0, 3) == claims.FAILS
    assert claims.outcome_of(0, 0) == claims.NO_TEST
    assert claims.outcome_from_label("not") == claims.FAILS and claims.outcome_from_label("Reproduced") == claims.HOLDS
    with pytest.raises(ValueError):
        claims.outcome_from_label("maybe")
    with pytest.raises(ValueError, match="outcome"):
        claims.Finding("01_tofu_finetune", "p", "c", "r", "sort of")
    q = claims.Quantity("utility", 0.7, 0.75, ">=")
    assert q.holds is False and q.margin == pytest.approx(-0.05) and "needs >= 0.75: no" in q.text()
    assert claims.Quantity("rouge", 0.2, 0.5, "<=").margin == pytest.approx(0.3)
    assert claims.Quantity("count", 3).holds is None and claims.Quantity("x", None, 1.0).holds is None
    finding = claims.Finding("n", "p", "c", "t", claims.PARTLY_HOLDS, "fig", "s", (q,), (("a", True), ("b", False)))
    assert claims.Finding.from_dict(json.loads(json.dumps(finding.as_dict()))) == finding


def _tofu(forget_rouge, quality, utility):
    return {"forget": {"rouge": forget_rouge}, "summary": {"forget_quality": quality, "model_utility": utility}}


@pytest.fixture
def hand_made_runs(monkeypatch, tmp_path):
    """Notebook 01's target and retain model, and three unlearning runs, written through the run store."""
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    runs.write_metrics(SMOKE, runs.FINETUNE, {"target": _tofu(1.0, 1e-40, 0.8), "retain90": _tofu(0.4, 1.0, 0.8)},
                       {"forget_quality_reference": "retain90"})
    cases = {"good": _tofu(0.3, 1e-3, 0.78),  # everything TOFU expects
             "collapsed": _tofu(0.0, 1e-5, 0.1),  # forgets, but utility is gone
             "inert": _tofu(0.95, 1e-40, 0.8)}  # nothing moved
    for run, result in cases.items():
        runs.write_metrics(SMOKE, runs.unlearning_notebook(run), {run: result})
    return tmp_path


def test_unlearning_runs_are_judged_against_the_target_and_the_retain_model(hand_made_runs):
    judged = {f.short: f for nb in ("good", "collapsed", "inert")
              for f in verdicts.of_notebook(SMOKE, runs.unlearning_notebook(nb))}
    assert judged["good"].outcome == claims.HOLDS and judged["good"].seed == SMOKE.seed
    assert judged["collapsed"].outcome == claims.PARTLY_HOLDS and "fails: utility kept" in judged["collapsed"].text
    assert judged["inert"].outcome == claims.FAILS
    # halfway from the target's forget ROUGE (1.0) to the retain model's (0.4): the bar is 0.7
    rouge = {q.name: q for q in judged["good"].quantities}["forget ROUGE-L"]
    assert rouge.threshold == pytest.approx(0.7) and rouge.direction == "<=" and rouge.holds
    utility = {q.name: q for q in judged["collapsed"].quantities}["model utility"]
    assert utility.threshold == pytest.approx(0.72) and utility.margin == pytest.approx(0.1 - 0.72)
    assert dict(judged["collapsed"].parts) == {"forget quality up": True, "forget ROUGE down": True,
                                               "utility kept": False}
    # the wording reads right out of context: a collapse is named first, and a forget quality that rose but that the
    # KS test still rejects says so; a run that kept its utility carries no severity
    assert judged["collapsed"].text.startswith("COLLAPSED, utility at 12% of the target's: ")
    assert "still below 0.05" in judged["collapsed"].text and "still below" in judged["good"].text
    assert not judged["good"].text.startswith(("COLLAPSED", "utility at"))
    assert verdicts.severity(0.8, 0.84) == ""  # 95 %: kept
    assert verdicts.severity(0.75, 0.84) == "utility at 89% of the target's, under the 90% bar: "
    target = verdicts.of_notebook(SMOKE, runs.FINETUNE)
    # without privacy metrics open-unlearning's privleak finding is there, untested
    assert [f.outcome for f in target] == [claims.HOLDS, claims.NO_TEST]
    assert [f.notebook for f in verdicts.of_seed(SMOKE)] == [
        runs.FINETUNE, runs.FINETUNE, *sorted(runs.unlearning_notebook(r) for r in ("good", "collapsed", "inert")),
        runs.UNLEARNING]


def _private(result, mink, loss=None, privleak=None, es=0.5):
    """A result with open-unlearning's summary keys: MinK and LOSS AUCs, privleak and extraction strength."""
    loss = mink if loss is None else loss
    result["summary"].update({"mia_mink_auc": mink, "mia_loss_auc": loss, "extraction_strength": es,
                              "exact_memorisation": es, "privleak": 0.0 if privleak is None else privleak})
    return result


def test_every_partly_says_which_part_holds():
    partly = claims.Finding("06", claims.SCHOLTEN, "claim", "M_bin 0.466 -> 0.455", claims.PARTLY_HOLDS,
                            parts=(("raises M_bin where greedy leaks", False), ("lowers M_bin for EO", True)))
    assert partly.reading == ("M_bin 0.466 -> 0.455; holds: lowers M_bin for EO; fails: raises M_bin where greedy "
                              "leaks")
    said = claims.Finding("02", claims.TOFU, "claim", "x; holds: a; fails: b", claims.PARTLY_HOLDS, parts=(("a", True),))
    assert said.reading == said.text
    assert claims.Finding("06", claims.SCHOLTEN, "c", "t", claims.HOLDS, parts=(("a", True),)).reading == "t"


def test_privleak_and_rouge_against_mia_are_judged_from_the_runs(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    retain = _private(_tofu(0.4, 1.0, 0.8), 0.55, privleak=-10.0, es=0.1)
    runs.write_metrics(SMOKE, runs.FINETUNE, {"target": _private(_tofu(1.0, 1e-40, 0.8), 0.99, privleak=-97.8,
                                                                 es=1.0), "retain90": retain},
                       {"forget_quality_reference": "retain90"})
    (_, leak) = verdicts.of_notebook(SMOKE, runs.FINETUNE)
    assert leak.outcome == claims.HOLDS and "privleak -10.0" in leak.text and "+" not in leak.text[:40]
    cases = {"looks_unlearned_but_member": _private(_tofu(0.3, 1e-3, 0.78), 0.80),  # MinK 0.25 above the retain's
             "looks_unlearned_and_clean": _private(_tofu(0.3, 1e-3, 0.78), 0.60, loss=0.50),  # within 0.1 each
             "over_unlearned": _private(_tofu(0.0, 1e-5, 0.1), 0.55, loss=0.20),  # LOSS 0.35 below: told apart
             "inert": _private(_tofu(0.95, 1e-40, 0.8), 0.99)}  # ROUGE not down: not tested
    for run, result in cases.items():
        runs.write_metrics(SMOKE, runs.unlearning_notebook(run), {run: result})
    (across,) = verdicts.across_unlearning_runs(SMOKE)
    assert across.outcome == claims.PARTLY_HOLDS and across.notebook == runs.UNLEARNING
    assert "3 runs look unlearned" in across.text and "inert" not in across.text
    assert "tells 2 of them apart" in across.text
    assert "as members, looks_unlearned_but_member (ROUGE-L 0.30; mink AUC 0.25 above the retain model's)" in across.text
    assert "as over-unlearned (AUC below the retain model's), over_unlearned (ROUGE-L 0.00; loss AUC 0.35 below the retain model's)" \
        in across.text
    assert across.quantities[0].value == pytest.approx(2 / 3)
    assert verdicts.mia_told_apart(cases["looks_unlearned_and_clean"]["summary"], retain["summary"]) == {}
    # the retain model out of its band and a target that leaks little: both checks fail
    runs.write_metrics(SMOKE, runs.FINETUNE, {"target": _private(_tofu(1.0, 1e-40, 0.8), 0.7, privleak=-33.0),
                                              "retain90": _private(_tofu(0.4, 1.0, 0.8), 0.6, privleak=-20.0)},
                       {"forget_quality_reference": "retain90"})
    (_, leak) = verdicts.of_notebook(SMOKE, runs.FINETUNE)
    assert leak.outcome == claims.FAILS


def test_the_studies_findings_are_read_as_data_not_rejudged():
    stored = claims.Finding(runs.CONTROLS, claims.WANG, "claim", "numbers", claims.PARTLY_HOLDS, "f", "s",
                            (claims.Quantity("share", 0.5, 1.0),))
    metrics = {"meta": {"notebook": runs.CONTROLS, verdicts.FINDINGS_KEY: [stored.as_dict()]}}
    (read,) = verdicts.of_notebook(SMOKE, runs.CONTROLS, metrics)
    assert read == stored.with_seed(SMOKE.seed)
    with pytest.raises(KeyError, match="stored no findings"):
        verdicts.of_notebook(SMOKE, runs.CONTROLS, {"meta": {"notebook": runs.CONTROLS}})
    with pytest.raises(KeyError, match="no findings"):
        verdicts.of_notebook(SMOKE, "09_unknown", {})


def test_mixing_by_split_needs_every_method_on_a_split():
    """Wang et al.'s finding is that model mixing calibrates *every* method on each forget split: a split where one
    method of two fails does not count (it did, when any method working passed the split)."""
    table = pd.DataFrame({"split": ["forget01", "forget01", "forget10", "forget10"], "run": ["ga", "gd"] * 2,
                          "share of the way": [0.5, 0.9, 0.9, 0.1], "forget items": [20, 20, 200, 200]})
    verdict = {"finding": "every control works", "verdict": "partly",
               "works": {"ga": {"early stopping": True, "model mixing": False}, "gd": {"model mixing": False}},
               "mixing_smoothest": {"ga": False, "gd": True}}
    controls, splits = calibration.findings(verdict, "forget10", table)
    assert controls.outcome == claims.PARTLY_HOLDS and "ga: early stopping; gd: none" in controls.text
    assert controls.quantities[0].value == pytest.approx(1 / 3)
    assert splits.outcome == claims.PARTLY_HOLDS  # forget01 holds (both), forget10 does not (gd fails)
    assert dict(splits.parts) == {"model mixing works for every method on forget01": True,
                                  "model mixing works for every method on forget10": False}
    table["share of the way"] = [0.9, 0.1, 0.1, 0.9]  # one method works on each split: no split holds
    assert calibration.findings(verdict, "forget10", table)[1].outcome == claims.FAILS


def test_the_alignment_finding_reads_a_model_with_no_greedy_safe_request():
    """A model greedy decoding never answers safely has no share of risky greedy-safe requests (None, as the study
    stores it): the finding says n/a where the paper dry run used to fail formatting it."""
    verdict = {"tested": ["a"], "holding": ["a"], "per_model": {
        "a": {"greedy_safe_share": 1.0, "risky_when_greedy_safe": 0.5},
        "complying": {"greedy_safe_share": 0.0, "risky_when_greedy_safe": None}}}
    (found,) = alignment.findings(verdict)
    assert found.outcome == claims.HOLDS and "complying: greedy safe on 0%, sampled answers comply where greedy is " \
        "safe on n/a" in found.text
    nothing = alignment.findings({"tested": [], "holding": [], "per_model": {}})[0]
    assert nothing.outcome == claims.NO_TEST


def test_the_leakage_finding_counts_only_models_that_reached_the_regime():
    chosen = {label: SimpleNamespace(reached=reached) for label, reached in (("a@3", True), ("b@4", True),
                                                                             ("c@9", False))}
    verdict = SimpleNamespace(revealing=["a@3"], verdict="partly")
    (found,) = leakage.findings(verdict, chosen)
    assert found.outcome == claims.PARTLY_HOLDS and "for 1 of 2 models" in found.text and "(not counted): c@9" in \
        found.text
    assert found.quantities[0].value == 1 and found.quantities[0].threshold == 2
    assert leakage.findings(SimpleNamespace(revealing=[], verdict="not"), {"c@9": chosen["c@9"]})[0].outcome == \
        claims.NO_TEST


# --------------------------------------------------------------------------- the rule across seeds


def test_the_clopper_pearson_bound_is_scipys_exact_interval():
    for k, n in ((0, 6), (1, 1), (5, 6), (6, 6), (3, 10), (10, 10)):
        exact = stats.binomtest(k, n).proportion_ci(confidence_level=0.90, method="exact").low  # two-sided 90 %
        assert claims.clopper_pearson_lower(k, n, claims.RULE_ALPHA) == pytest.approx(exact, abs=1e-12), (k, n)
    assert claims.clopper_pearson_lower(6, 6, 0.05) == pytest.approx(0.05 ** (1 / 6))  # 0.607: above one half
    # the rule needs 5 seeds that all hold: 4 of 4 stays below one half, 5 of 5 clears it, 5 of 6 does not
    level = claims.RULE_ALPHA
    assert claims.clopper_pearson_lower(4, 4, level) < 0.5 < claims.clopper_pearson_lower(5, 5, level)
    assert claims.clopper_pearson_lower(5, 6, claims.RULE_ALPHA) < 0.5
    with pytest.raises(ValueError):
        claims.clopper_pearson_lower(3, 2, claims.RULE_ALPHA)


def test_the_bootstrap_over_seeds_is_scipys_percentile_bootstrap():
    values = np.array([0.3, 0.5, 0.45, 0.61, 0.2, 0.4])
    ours = claims.bootstrap_interval(values, resamples=2000, confidence=0.95, bootstrap_seed=7)
    theirs = stats.bootstrap((values,), np.mean, n_resamples=2000, method="percentile", confidence_level=0.95,
                             rng=np.random.default_rng(7)).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-12)
    assert claims.bootstrap_interval([0.4]) == (0.4, 0.4) and claims.bootstrap_interval([0.2, 0.2]) == (0.2, 0.2)
    assert claims.bootstrap_interval(values) == claims.bootstrap_interval(values)  # seeded: the same every time


def _seeds(*outcomes, value=0.8):
    return {seed: [claims.Finding("02_unlearning_x", claims.TOFU, "claim", f"seed {seed}", outcome, "fig", "x",
                                  (claims.Quantity("utility", value + 0.01 * seed, 0.75, ">="),))]
            for seed, outcome in enumerate(outcomes)}


def test_six_of_six_reproduce_five_of_six_do_not():
    (six,) = claims.judge_all(_seeds(*[claims.HOLDS] * 6))
    assert (six.verdict, six.k, six.n) == (claims.REPRODUCED, 6, 6) and six.text == "holds on 6 of 6 seeds"
    (five,) = claims.judge_all(_seeds(*[claims.HOLDS] * 5, claims.FAILS))
    assert five.verdict == claims.PARTLY and five.text == "holds on 5 of 6 seeds (fails on 1)"
    assert five.holds_lower == pytest.approx(stats.beta.ppf(0.05, 5, 2))
    (gone,) = claims.judge_all(_seeds(*[claims.FAILS] * 6))
    assert gone.verdict == claims.NOT and gone.fails_lower > 0.5


def test_a_finding_that_holds_on_some_seeds_and_fails_on_others_is_partly_with_its_counts():
    (mixed,) = claims.judge_all(_seeds(claims.HOLDS, claims.FAILS, claims.HOLDS, claims.PARTLY_HOLDS))
    assert mixed.verdict == claims.PARTLY and (mixed.k, mixed.fails, mixed.n) == (2, 1, 4)
    assert mixed.text.startswith("holds on 2 of 4 seeds (partly on 1, fails on 1); four seeds: no verdict is "
                                 "confident below 5")
    assert [r["outcome"] for r in mixed.per_seed] == ["holds", "fails", "holds", "partly"]
    assert mixed.per_seed[1]["values"] == {"utility": pytest.approx(0.81)}
    (spread,) = mixed.spreads
    assert spread.mean == pytest.approx(np.mean([0.8, 0.81, 0.82, 0.83]))
    assert spread.low <= spread.mean <= spread.high and spread.margin_mean == pytest.approx(spread.mean - 0.75)
    # the verdict follows from the stored per-seed outcomes alone
    stored = claims.Verdict.from_dict(json.loads(json.dumps(mixed.as_dict())))
    outcomes = [r["outcome"] for r in stored.per_seed]
    assert claims.verdict_of(outcomes.count("holds"), outcomes.count("fails"), len(outcomes)) == stored.verdict


def test_one_seed_says_it_is_one_and_untested_seeds_are_not_counted():
    (one,) = claims.judge_all(_seeds(claims.HOLDS))
    assert one.verdict == claims.PARTLY and one.text.startswith("one seed: holds")
    no_test = claims.Finding("n", "p", "c", "t", claims.NO_TEST, key="k")
    holds = claims.Finding("n", "p", "c", "t", claims.HOLDS, key="k")
    (v,) = claims.judge_all({0: [no_test], 1: [holds]})
    assert v.n == 1 and v.text.startswith("one seed: holds") and v.seeds == [0, 1]
    (none,) = claims.judge_all({0: [no_test]})
    assert none.verdict == claims.NO_TEST


def test_a_margin_inside_the_committed_seeds_spread_is_flagged():
    committed = {v.key: v for v in claims.judge_all(_seeds(*[claims.HOLDS] * 6, value=0.72))}  # 0.72 .. 0.77
    (close,) = claims.judge_all({0: _seeds(claims.HOLDS, value=0.76)[0]}, committed)
    assert close.flags and "inside the committed seeds' spread" in close.flags[0]
    (far,) = claims.judge_all({0: _seeds(claims.HOLDS, value=0.95)[0]}, committed)
    assert far.flags == ()


def test_a_one_seed_summary_never_replaces_a_several_seed_one():
    committed = {"seeds": [0, 1, 2]}
    assert not verdicts.may_replace(committed, [0])
    assert verdicts.may_replace(committed, [0, 1, 2, 3]) and verdicts.may_replace(None, [0])


def test_readme_results_match_the_committed_summary():
    """README's results section is exactly what `make readme` writes from docs/findings.json."""
    summary = json.loads(report.SUMMARY.read_text())
    assert summary["profile"] == config.BASE_PROFILE and summary["findings"] and summary["seeds"]
    assert report.write_readme(check=True), "README.md's results section is stale: run `make readme`"
    section = report.readme_section(summary)
    assert section in report.README.read_text()
    page = report.results_page(summary)  # docs/results.md: every table, the former findings' among them
    assert page == paths.RESULTS_PAGE.read_text()
    for row in summary["findings"]:
        assert f"**{row['verdict']}**" in page
        if row["figure"]:
            assert (paths.FIGURES / f"{row['figure']}.png").exists(), f"README links a missing figure {row['figure']}"
        # every verdict follows from the file's own per-seed outcomes by the rule
        outcomes = [r["outcome"] for r in row["per_seed"] if r["outcome"] in claims.TESTED]
        if outcomes:
            assert row["verdict"] == claims.verdict_of(outcomes.count(claims.HOLDS), outcomes.count(claims.FAILS),
                                                       len(outcomes)), row["key"]
            assert (row["k"], row["n"]) == (outcomes.count(claims.HOLDS), len(outcomes))
        assert {r["seed"] for r in row["per_seed"]} <= set(summary["seeds"])


def test_readme_section_escapes_table_cells(tmp_path):
    finding = claims.Finding("01_tofu_finetune", "P", "a | b", "x\ny", claims.HOLDS, "")
    summary = verdicts.summary("default", claims.judge_all({0: [finding]}))
    section = report.readme_section(summary)
    assert "| P | a \\| b | one seed: holds (no verdict is confident below 5 seeds). seed 0: holds. x y | **partly** |  |" \
        in section
    readme = tmp_path / "README.md"
    readme.write_text(f"head\n{report.START}\nold\n{report.END}\ntail\n")
    (tmp_path / "s.json").write_text(json.dumps(summary))
    assert not report.write_readme(tmp_path / "s.json", readme, check=True)
    report.write_readme(tmp_path / "s.json", readme, figures=tmp_path)
    assert readme.read_text() == f"head\n{section}\ntail\n"
    assert (tmp_path / f"{report.OVERVIEW}.png").stat().st_size > 1000  # the overview, drawn from the summary
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
    plots.draw("00_data_tour_splits", SMOKE, plots.corpus_overview, sizes, lengths)
    figure = plots.figure_path("00_data_tour_splits", SMOKE)
    first = figure.read_bytes()
    assert plots.figure_data_path("00_data_tour_splits", SMOKE).exists()
    figure.unlink()
    env = {**os.environ, "UNLEARNKIT_RUNS": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "figures", "--profile", "smoke"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 figures redrawn" in done.stdout
    assert figure.read_bytes() == first


def test_redraw_follows_the_plotting_code_and_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    with pytest.raises(FileNotFoundError, match="run its notebooks first"):
        plots.redraw(SMOKE)
    with pytest.raises(TypeError, match="module-level"):
        plots.draw("x", SMOKE, lambda: None)
    sizes, lengths = _lengths()
    plots.draw("00_data_tour_splits", SMOKE, plots.corpus_overview, sizes, lengths)
    before = plots.figure_path("00_data_tour_splits", SMOKE).read_bytes()
    original = plots.set_style

    def other_style():  # one edit of the style, then one command
        original()
        import matplotlib.pyplot as plt

        plt.rcParams["axes.facecolor"] = "#eeeeff"

    monkeypatch.setattr(plots.drawing, "set_style", other_style)  # where redraw finds the style
    (path,) = plots.redraw(SMOKE)
    assert path.read_bytes() != before


def test_the_report_needs_notebook_08(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    with pytest.raises(FileNotFoundError, match="run them first"):
        report.pages(SMOKE)
    runs.store(SMOKE).mkdir(parents=True)
    (runs.store(SMOKE) / "00_data_tour.ipynb").write_text("{}")
    with pytest.raises(FileNotFoundError, match="front page"):
        report.pages(SMOKE)


# --------------------------------------------------------------------------- figure recipes: data, never code


class _Explodes:
    """Unpickling this writes a file: what a pickle from a colleague's runs folder could do."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (Path.write_text, (Path(self.target), "pwned"))


def test_a_crafted_pickle_in_the_figure_data_is_never_loaded(monkeypatch, tmp_path, capsys):
    import pickle

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    sizes, lengths = _lengths()
    plots.draw("00_data_tour_splits", SMOKE, plots.corpus_overview, sizes, lengths)
    folder = runs.store(SMOKE) / plots.FIGURE_DATA
    assert {p.suffix for p in folder.iterdir()} <= {".json", ".npz"}  # what draw keeps: data
    target = tmp_path / "pwned.txt"
    (folder / "evil.pkl").write_bytes(pickle.dumps({"plot": _Explodes(target), "args": (), "kwargs": {}}))
    (folder / "forged.json").write_text(json.dumps({"version": 1, "plot": "os:system", "args": ["echo x"],
                                                    "kwargs": {}}))
    drawn = plots.redraw(SMOKE)
    assert not target.exists()  # the pickle was never unpickled
    err = capsys.readouterr().err
    assert "evil.pkl: not a figure recipe (JSON), not loaded" in err
    assert "'os:system' is not a name of unlearnkit.plots" in err
    assert [p.name for p in drawn] == ["00_data_tour_splits.png"]


def test_a_recipe_keeps_every_kind_of_argument_and_refuses_the_rest(tmp_path):
    from unlearnkit.plots import recipes
    from unlearnkit.studies import calibration

    frame = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", None], "c": [True, False]},
                         index=pd.MultiIndex.from_tuples([("r", 1), ("r", 2)], names=["run", "step"]))
    args = (frame, frame["a"], np.arange(6).reshape(2, 3), np.array(["u", "v"]), {1: (2, 3), "k": [np.float32(0.5)]},
            calibration.Tolerances(0.1, 0.2), Path("/x/y"), float("inf"))
    recipes.write(tmp_path / "r.json", plots.corpus_overview, args, {"opt": None})
    fn, back, kwargs = recipes.read(tmp_path / "r.json")
    assert fn is plots.corpus_overview and kwargs == {"opt": None}
    pd.testing.assert_frame_equal(back[0], frame)
    pd.testing.assert_series_equal(back[1], frame["a"])
    assert np.array_equal(back[2], args[2]) and list(back[3]) == ["u", "v"]
    assert back[4] == {1: (2, 3), "k": [0.5]} and back[5] == args[5] and back[6] == Path("/x/y") and back[7] == math.inf
    with pytest.raises(recipes.RecipeError, match="cannot be kept as a figure's data"):
        recipes.write(tmp_path / "s.json", plots.corpus_overview, (object(),), {})
    with pytest.raises(recipes.RecipeError, match="is not a name of unlearnkit.plots"):
        recipes.write(tmp_path / "t.json", json.dumps, (), {})


def test_the_reader_checks_catch_what_they_are_for():
    from unlearnkit import report

    def page(*cells):
        return "<html><body>" + "".join(cells) + "</body></html>"

    md = lambda html: f'<div class="jp-Cell jp-MarkdownCell"><div class="jp-RenderedMarkdown">{html}</div></div>'  # noqa: E731
    out = lambda text, mime="text/plain": (f'<div class="jp-Cell jp-CodeCell"><div class="jp-OutputArea-output" '  # noqa: E731
                                           f'data-mime-type="{mime}"><pre>{text}</pre></div></div>')
    code = '<div class="jp-Cell jp-CodeCell"><div class="jp-InputArea">x = 1</div></div>'
    assert report.page_problems(page(md("<h2>A</h2><p>text</p>"), out("fine"))) == []
    assert report.page_problems(page(md("<h2>Before</h2>"), code, md("<h2>After</h2>"), out("1"))) == [
        "an empty section: 'Before'"]
    assert report.page_problems(page(md("<h2>Part</h2><h3>Term</h3><p>what it means</p>"))) == []  # a subsection
    problems = report.page_problems(page(md("<h2>A</h2>"), out("PosixPath('/home/me/runs/x.json')"),
                                         out("/usr/lib/x.py:3: UserWarning: careful", "application/vnd.jupyter.stderr")))
    assert [p.split(":")[0] for p in problems] == ["a local path", "a pathlib repr", "a warning"]
    known = {"verdict", "finding", "m_bin", "seed <s>", "step <t>", "<run> (after)", "<model>, q<i> (sd <s>)",
             "retain shots ×<k>"}
    table = "<table><thead><tr><th>finding</th><th>seed 3</th><th>verdict</th><th>odd</th></tr></thead></table>"
    assert report.glossary_gaps(page(out(table, "text/html"), out("M_bin 0.2, M_zeta 0.1")), known) == ["M_zeta", "odd"]
    # every table of an output, findings table or not, its headers that carry a run, a step, a question or a count
    # named as the glossary names them; a table of the notebook's prose only when it is a findings table
    head = lambda *names: "<table><thead><tr>" + "".join(f"<th>{n}</th>" for n in names) + "</tr></thead></table>"  # noqa: E731
    answers = head("npo_eo (after)", "step 12", "rmu@25, q3 (sd 0.05)", "retain shots ×5", "steps", "0.5")
    assert report.glossary_gaps(page(out(answers, "text/html"), md(head("section", "what")),
                                     md(head("verdict", "why"))), known) == ["steps", "why"]


def test_every_notebook_links_the_glossary_and_every_link_lands_on_a_term():
    import re

    from unlearnkit import report, runner

    headings = re.findall(r"^#{1,6}\s+(.*?)\s*$", report.GLOSSARY.read_text(), re.M)
    anchors = {report.github_slug(h) for h in headings}
    for path in runner.source_notebooks():
        prose = " ".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "markdown")
        links = re.findall(r"\]\(\.\./docs/glossary\.md(?:#([^)]+))?\)", prose)
        assert links, f"{path.name} does not link the glossary"
        assert not [a for a in links if a and a not in anchors], path.name


def test_the_front_page_story_says_what_fails_and_where():
    def verdict(short, paper, verdict, parts_per_seed, notebook="02_unlearning_ga", outcomes=None):
        outcomes = outcomes or ["partly"] * len(parts_per_seed)
        per_seed = tuple({"seed": s, "outcome": o, "parts": parts}
                         for s, (parts, o) in enumerate(zip(parts_per_seed, outcomes)))
        return claims.Verdict(f"{notebook}/{short}", notebook, paper, "claim", "", short, verdict, "", per_seed,
                              len(per_seed), outcomes.count("holds"), outcomes.count("fails"), 0.0, 0.0)

    # six seeds: verdicts by the rule, and for each that is not reproduced, the parts that fail and where
    six = [verdict("ga", claims.TOFU, claims.PARTLY, [{"utility kept": False, "forget ROUGE down": True}] * 6),
           verdict("npo", claims.TOFU, claims.REPRODUCED, [{"utility kept": True}] * 6, "02_unlearning_npo",
                   ["holds"] * 6),
           verdict("EO", claims.SCHOLTEN, claims.NOT, [{"sd -> 0": False}] * 5 + [{"sd -> 0": True}], "06_entropy",
                   ["fails"] * 5 + ["holds"])]
    text = verdicts.story(six)
    assert text.startswith("Judged over 6 training seeds (0, 1, 2, 3, 4, 5).")
    assert "**TOFU (Maini et al., 2024)**: 1 of 2 findings reproduced (npo), 1 partly, 0 not reproduced." in text
    assert "- [ga](02_unlearning_ga.html), *partly*: utility kept fails on 6 of 6 seeds." in text
    assert "- [EO](06_entropy.html), *not reproduced*: sd -&gt; 0 fails on 5 of 6 seeds." in text
    # fewer than five seeds: no verdict, so the story says what the seeds agree on and lists what did not hold
    two = [verdict("ga", claims.TOFU, claims.PARTLY, [{"utility kept": False, "forget ROUGE down": True}] * 2),
           verdict("npo", claims.TOFU, claims.PARTLY, [{"utility kept": True}] * 2, "02_unlearning_npo",
                   ["holds"] * 2),
           verdict("EO", claims.SCHOLTEN, claims.PARTLY, [{"sd -> 0": False}] * 2, "06_entropy", ["fails"] * 2)]
    text = verdicts.story(two)
    assert text.startswith("Judged over 2 training seeds (0, 1); fewer than five")
    assert ("**TOFU (Maini et al., 2024)**: of 2 findings, 1 hold on every seed (npo), 0 fail on every seed, 1 hold in "
            "part or differ between seeds.") in text
    assert "- [ga](02_unlearning_ga.html): utility kept fails on 2 of 2 seeds." in text and "[npo]" not in text
    assert "- [EO](06_entropy.html): sd -&gt; 0 fails on 2 of 2 seeds." in text
    assert [verdicts.tile(v) for v in two] == [verdicts.SEEDS_DIFFER, verdicts.EVERY_SEED_HOLDS,
                                               verdicts.EVERY_SEED_FAILS]
    assert [verdicts.tile(v) for v in six] == [claims.PARTLY, claims.REPRODUCED, claims.NOT]
    one = verdicts.story([verdict("T1", claims.SCHOLTEN, claims.PARTLY, [{}], "06_entropy", ["holds"])])
    assert "of 1 findings, 1 hold on its seed (T1), 0 fail on its seed, 0 hold in part." in one
