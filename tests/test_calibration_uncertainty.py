"""Wang et al.'s controls with their uncertainty (issue #13): the paired bootstrap interval of a criterion's loss and
the pass / uncertain / fail verdict it gives, calibration that never settles on an uncertain setting, every control
of every method read as "works" or not, the runs on other forget splits, and the paper profile's own runs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from unlearnkit import config, pipeline
from unlearnkit.studies import calibration
from unlearnkit.studies.calibration import FAIL, PASS, UNCERTAIN, Tolerances

WANG = Tolerances(retain=0.10, forget_similar=0.50, resamples=2000)


def _with_items(retain_exact, forget_similar, retain_perturb=None):
    """A PS profile whose means are those of its per-item values."""
    retain_perturb = retain_exact if retain_perturb is None else retain_perturb
    sets = {"heldout_retain": {"ps_exact": retain_exact, "ps_perturb": retain_perturb},
            "forget": {"ps_similar": forget_similar}}
    return {split: {**{m: float(np.mean(v)) for m, v in metrics.items()},
                    "items": {m: tuple(float(x) for x in v) for m, v in metrics.items()}}
            for split, metrics in sets.items()}


# --------------------------------------------------------------------------- the interval of a loss


def test_the_interval_is_paired_over_items():
    """Items differ a lot from each other, but every item loses the same 0.05: resampled in pairs the loss is known
    tightly; the point of pairing is that which items were asked does not blur the comparison."""
    rng = np.random.default_rng(1)
    before = rng.uniform(0.3, 1.0, size=200)
    after = before - 0.05
    low, high = calibration.loss_interval(before, after, WANG)
    loss = 0.05 / before.mean()
    assert low <= loss <= high and high - low < 0.01
    assert calibration.loss_interval(before, before, WANG) == (0.0, 0.0)
    # the same loss spread unevenly over items (some lose a lot, most nothing) is far less certain
    uneven = before.copy()
    uneven[:20] = 0.0
    low2, high2 = calibration.loss_interval(before, uneven, WANG)
    assert high2 - low2 > 5 * (high - low)
    with pytest.raises(ValueError, match="same items"):
        calibration.loss_interval(before, after[:10], WANG)


@pytest.mark.parametrize("lost_items, expected", [
    (0, PASS),      # nothing lost anywhere
    (4, PASS),      # 2 % of 200 items lost entirely: the whole interval is below 10 %
    (20, UNCERTAIN),  # 10 % lost: the tolerance sits inside the interval
    (60, FAIL),     # 30 % lost: the whole interval is above 10 %
])
def test_a_setting_passes_only_when_its_whole_interval_does(lost_items, expected):
    before = _with_items(np.ones(200), np.ones(60))
    exact = np.ones(200)
    exact[:lost_items] = 0.0
    after = _with_items(exact, np.ones(60))
    checks = calibration.criteria(before, after, WANG)
    assert checks["heldout_retain_ps_exact"]["status"] == expected
    assert calibration.setting_status(checks) == expected
    c = checks["heldout_retain_ps_exact"]
    assert c["low"] <= c["loss"] <= c["high"]
    # the means alone still give the point verdict the paper uses
    assert c["ok"] is (lost_items / 200 <= 0.1)


def test_without_items_the_means_decide_and_a_missing_criterion_is_not_a_pass():
    before = {"heldout_retain": {"ps_exact": 0.8, "ps_perturb": 0.5}, "forget": {"ps_similar": 0.9}}
    fine = calibration.criteria(before, before, WANG)
    assert {c["status"] for c in fine.values()} == {PASS} and math.isnan(fine["forget_ps_similar"]["low"])
    unknown = {**before, "forget": {"ps_similar": math.nan}}  # RetainFirst did not search it
    assert calibration.setting_status(calibration.criteria(before, unknown, WANG)) == UNCERTAIN
    worse = {**before, "heldout_retain": {"ps_exact": 0.5, "ps_perturb": 0.5}}
    assert calibration.setting_status(calibration.criteria(before, worse, WANG)) == FAIL


def test_calibration_never_settles_on_an_uncertain_setting():
    table = pd.DataFrame({"a": [0.0, 0.3, 0.6], "passes": [True, True, True],
                          "status": [PASS, PASS, UNCERTAIN], "forget_ps_exact": [1.0, 0.6, 0.2],
                          "heldout_retain_ps_exact": [0.9, 0.88, 0.85]})
    assert calibration.best_passing(table, "a")["a"] == 0.3
    assert list(calibration.passing_rows(table)) == [True, True, False]
    assert calibration.best_passing(table.drop(columns="status"), "a")["a"] == 0.6  # the means alone


def test_tolerances_check_their_interval_settings():
    with pytest.raises(ValueError, match="confidence"):
        Tolerances(retain=0.1, forget_similar=0.5, confidence=1.0)
    with pytest.raises(ValueError, match="resample"):
        Tolerances(retain=0.1, forget_similar=0.5, resamples=0)


def test_mean_interval_brackets_the_mean():
    values = np.r_[np.ones(15), np.zeros(5)]
    low, high = calibration.mean_interval(values, WANG)
    assert low < 0.75 < high and 0.5 < low and high <= 1.0
    assert calibration.mean_interval(np.ones(4), WANG) == (1.0, 1.0)


# --------------------------------------------------------------------------- every control of every method


def _cal(control, rows, uncontrolled_forget=0.1):
    table = pd.DataFrame([{control: v, "status": s, "forget_ps_exact": f, "heldout_retain_ps_exact": h}
                          for v, s, f, h in rows])
    best = calibration.best_passing(table, control)
    return calibration.Calibration(control=control, best=None if best is None else float(best[control]),
                                   profile=None, table=table,
                                   uncontrolled={"forget": {"ps_exact": uncontrolled_forget}})


BEFORE = {"heldout_retain": {"ps_exact": 1.0}, "forget": {"ps_exact": 1.0}}


def test_a_control_works_from_a_third_of_the_way():
    mixing = _cal("a", [(0.0, PASS, 1.0, 1.0), (0.5, PASS, 0.7, 0.95), (1.0, FAIL, 0.1, 0.2)])
    stopping = _cal("t", [(0, PASS, 1.0, 1.0), (5, PASS, 0.8, 0.95), (10, UNCERTAIN, 0.3, 0.85), (35, FAIL, 0.1, 0.2)])
    uncontrolled = {"forget": {"ps_exact": 0.1}}
    assert calibration.working_share(mixing, BEFORE, uncontrolled) == pytest.approx(0.3 / 0.9)
    assert calibration.working_share(stopping, BEFORE, uncontrolled) == pytest.approx(0.2 / 0.9)  # t=10 is uncertain
    assert math.isnan(calibration.working_share(mixing, BEFORE, {"forget": {"ps_exact": 1.0}}))
    mc = calibration.MethodControls("idk", "idk", {"t": stopping, "a": mixing}, uncontrolled,
                                    calibration.NOT_CAPPED["idk"])
    summary = calibration.controls_summary({"idk": mc}, BEFORE)
    assert list(summary["control"]) == ["early stopping", "model mixing"]
    assert list(summary["works"]) == [False, True]
    assert list(summary["uncertain"]) == [1, 0] and list(summary["pass"]) == [2, 2]
    # mixing moves held-out PS-exact by at most 0.75 between neighbours, stopping by 0.65: stopping is smoother here
    assert list(summary["largest held-out step"]) == pytest.approx([0.65, 0.75])
    assert calibration.best_control(mc) == "a"  # t=5 leaves forget PS-exact at 0.8, a=0.5 at 0.7
    nothing = calibration.MethodControls("ga", "ga", {"a": _cal("a", [(0.0, PASS, 1.0, 1.0), (1.0, FAIL, 0.1, 0.2)])},
                                         uncontrolled)
    assert calibration.best_control(nothing) is None


def test_stopping_grid_takes_every_nth_kept_step_and_the_last():
    assert calibration.stopping_grid([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 5) == [0, 5, 10, 12]
    assert calibration.stopping_grid([2, 4, 7], 5) == [0, 7]
    with pytest.raises(ValueError, match="n >= 1"):
        calibration.stopping_grid([1, 2], 0)


def test_comparison_profiles_and_the_paper_beside_ours():
    row = {"heldout_retain_ps_exact": 0.9, "heldout_retain_ps_perturb": 0.5, "heldout_retain_ps_similar": 0.95,
           "forget_ps_exact": 0.4, "forget_ps_perturb": 0.3, "forget_ps_similar": 0.8}
    comparison = pd.DataFrame([
        {"run": "before", "calibrated by": "", "control": "", "setting": math.nan, **row},
        {"run": "gd", "calibrated by": "model mixing", "control": "a", "setting": 0.3, **row},
        {"run": "gd", "calibrated by": "best control (early stopping)", "control": "t", "setting": 6.0,
         **{**row, "forget_ps_exact": 0.2}},
        {"run": "ga", "calibrated by": "model mixing", "control": "a", "setting": 0.2, **row},
        {"run": "ga", "calibrated by": "best control (model mixing)", "control": "a", "setting": 0.2, **row}])
    profiles = calibration.comparison_profiles(comparison)
    assert list(profiles) == ["before", "gd (model mixing)", "gd (early stopping)", "ga (model mixing)"]
    assert profiles["gd (early stopping)"]["forget"]["ps_exact"] == 0.2
    paper = calibration.paper_beside_ours(comparison)
    gd = paper[paper["model"] == "gd · model mixing"].iloc[0]
    assert gd["paper (Phi-1.5)"] == 0.413 and gd["this run"] == 0.4
    assert paper.loc[paper["model"] == "before", "this run"].tolist() == [0.9, 0.4, 0.5, 0.3, 0.95, 0.8]


# --------------------------------------------------------------------------- other forget splits and profiles


def test_a_run_on_another_forget_split_is_its_own_named_run():
    params = config.Params.load("default")
    params = pipeline.with_run(params, "gd", method="gd", unlearn_save_every=1, unlearn_lr=3e-4)
    p, name = calibration.split_run(params, "gd", "forget01")
    assert name == "gd_forget01"
    trained = pipeline.run_params(p, name)
    assert trained.forget_split == "forget01" and trained.unlearn_lr == 3e-4  # gd's own schedule carries over
    assert trained.unlearn_save_every == params.unlearn_save_every  # but no weights kept at every step
    settings = pipeline.unlearning_settings(p, name)
    assert settings["method"] == "gd" and "forget_split" not in settings
    assert pipeline.run_params(p, "gd").forget_split == params.forget_split  # the profile's run is untouched
    with pytest.raises(ValueError, match="unknown key"):
        pipeline.run_params(pipeline.with_run(params, "x", method="gd", forget_splt="forget01"), "x")


@pytest.mark.parametrize("profile", config.profile_names())
def test_every_calibration_run_of_every_profile_resolves(profile):
    params = config.Params.load(profile)
    for run in [*params.calibration_methods, *params.interference_runs]:
        pipeline.run_params(params, run)
        assert pipeline.unlearning_settings(params, run)["method"] in pipeline.METHODS


def test_the_paper_profile_trains_wang_et_al_s_own_runs():
    params = config.Params.load("paper")
    assert params.heldout_authors * 20 == 400  # Wang et al.'s 400 held-out retain items
    for run in params.calibration_methods:
        trained = pipeline.run_params(params, run)
        assert (trained.unlearn_lr, trained.unlearn_batch_size, trained.unlearn_grad_accum, trained.unlearn_epochs,
                trained.unlearn_schedule, trained.unlearn_warmup) == (1e-5, 4, 1, 5, "linear", 0.2)
    assert {pipeline.unlearning_settings(params, r)["method"] for r in params.calibration_methods} == {
        "ga", "gd", "kl", "idk", "npo"}


def test_retain_first_stops_at_a_held_out_exact_that_certainly_fails(monkeypatch):
    """Held-out PS-exact first: where it fails over its whole interval, held-out PS-perturb and forget PS-similar are
    not computed (the setting fails anyway); where it is only uncertain, everything but the gated search is."""
    from unlearnkit.metrics import ps

    asked = []
    before = _with_items(np.ones(200), np.ones(60))
    before["forget"].update({"ps_exact": 1.0, "ps_perturb": 1.0})

    def fake_ps_profile(model, tokenizer, template, forget_rows, heldout_rows, batch_size, metrics, search):
        asked.append({split: tuple(m) for split, m in metrics.items()})
        exact = np.ones(200)
        exact[:model] = 0.0  # the "model" is how many held-out items it lost
        items = {"heldout_retain": {"ps_exact": exact, "ps_perturb": np.ones(200)},
                 "forget": {"ps_exact": np.ones(60), "ps_perturb": np.ones(60), "ps_similar": np.ones(60)}}
        return {split: {**{m: float(items[split][m].mean()) for m in wanted},
                        "items": {m: tuple(items[split][m]) for m in wanted}} for split, wanted in metrics.items()}

    monkeypatch.setattr(ps, "ps_profile", fake_ps_profile)
    evaluate = ps.PSEvaluator(None, None, [{}], [{}], metrics=calibration.CALIBRATION_METRICS)
    lazy = calibration.RetainFirst(evaluate, before, WANG)
    failing = lazy(60)  # 30 % lost: fails over its whole interval
    assert asked == [{"heldout_retain": ("ps_exact",)}, {"forget": ("ps_exact", "ps_perturb")}]
    assert math.isnan(failing["heldout_retain"]["ps_perturb"]) and math.isnan(failing["forget"]["ps_similar"])
    assert failing["forget"]["ps_exact"] == 1.0
    assert calibration.setting_status(calibration.criteria(before, failing, WANG)) == FAIL
    asked.clear()
    uncertain = lazy(21)  # 10.5 % lost: uncertain, and fails on its mean, so forget PS-similar is not searched
    assert asked == [{"heldout_retain": ("ps_exact",)}, {"heldout_retain": ("ps_perturb",),
                                                         "forget": ("ps_exact", "ps_perturb")}]
    assert uncertain["heldout_retain"]["ps_perturb"] == 1.0 and math.isnan(uncertain["forget"]["ps_similar"])
    asked.clear()
    lazy(2)  # 1 % lost: everything, forget PS-similar included
    assert asked[-1] == {"forget": ("ps_similar",)}


def test_stopping_by_run_reads_early_stopping_off_each_trace():
    def trace(rows):
        return pd.DataFrame([{"t": t, "status": s, "forget_ps_exact": f, "heldout_retain_ps_exact": 0.9}
                             for t, s, f in rows])

    params = config.Params.load("default")
    tables = {"gd": trace([(0, PASS, 1.0), (5, PASS, 0.9), (10, FAIL, 0.1)]),
              "gd_mild": trace([(0, PASS, 1.0), (5, PASS, 0.8), (10, PASS, 0.6), (15, UNCERTAIN, 0.4), (20, FAIL, 0.3)]),
              "gd_retain_only": trace([(0, PASS, 1.0), (5, FAIL, 1.0)])}
    table = calibration.stopping_by_run(tables, params, BEFORE)
    assert table.loc["gd", "share of the way"] == pytest.approx(0.1 / 0.9) and not table.loc["gd", "works"]
    assert table.loc["gd_mild", "best passing t"] == 10 and table.loc["gd_mild", "works"]  # 0.4 of 0.7: works
    assert table.loc["gd_mild", "lr"] == pytest.approx(3e-4) and table.loc["gd_retain_only", "forget weight"] == 0.0
    assert table.loc["gd_retain_only", "best passing t"] == 0 and not table.loc["gd_retain_only", "works"]
    assert table.loc["gd", "run unlearns"] and table.loc["gd_mild", "run unlearns"]
    tables["gd_lr1e-4"] = trace([(0, PASS, 1.0), (35, PASS, 0.95)])  # barely moves: "works", vacuously
    table = calibration.stopping_by_run(tables, params, BEFORE)
    assert table.loc["gd_lr1e-4", "works"] and not table.loc["gd_lr1e-4", "run unlearns"]
