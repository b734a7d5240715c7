"""Wang et al.'s calibration (docs/metrics.md §5): the 10 %/50 % pass rule at its boundaries, coarse-to-fine
calibration against a fake evaluate function with a known answer, the capped runs' settings, the evaluator that
skips forget PS-similar where held-out retain already fails, and the tables and records built from
calibrations."""

from __future__ import annotations

import math

import numbers_only
import numpy as np
import pandas as pd
import pytest
from unlearnkit import config, models, pipeline
from unlearnkit.metrics import ps
from unlearnkit.runs import saved
from unlearnkit.studies import calibration
from unlearnkit.studies.calibration import Tolerances

#: The run store the tests name (nothing is read from it where the run store is stubbed).
SMOKE = config.Params.load("smoke")

#: Wang et al.'s tolerances: 10 % of held-out retain PS-exact and PS-perturb, 50 % of forget PS-similar.
WANG = Tolerances(retain=0.10, forget_similar=0.50)


def _profile(retain_exact=0.8, retain_perturb=0.5, forget_exact=1.0, forget_perturb=0.6, forget_similar=0.9):
    return {"heldout_retain": {"ps_exact": retain_exact, "ps_perturb": retain_perturb},
            "forget": {"ps_exact": forget_exact, "ps_perturb": forget_perturb, "ps_similar": forget_similar}}


BEFORE = _profile()


# --------------------------------------------------------------------------- the pass rule


@pytest.mark.parametrize("changed, value, expected", [
    ("retain_exact", 0.72, True),            # loses exactly 10 % of 0.8
    ("retain_exact", 0.9 * 0.8, True),       # the same, as computed (0.7200000000000001)
    ("retain_exact", 0.7199, False),
    ("retain_perturb", 0.45, True),          # exactly 10 % of 0.5
    ("retain_perturb", 0.4499, False),
    ("forget_similar", 0.45, True),          # exactly 50 % of 0.9
    ("forget_similar", 0.4499, False),
    ("forget_exact", 0.0, True),             # forgetting is the point: no floor on forget PS-exact
    ("forget_perturb", 0.0, True),
    ("retain_exact", 0.95, True),            # gaining is never a loss
])
def test_passes_is_the_10_50_rule_at_its_boundaries(changed, value, expected):
    after = _profile(**{changed: value})
    assert calibration.passes(BEFORE, after, WANG) is expected
    # the retain half alone ignores forget PS-similar
    assert calibration.retain_holds(BEFORE, after, WANG) is (expected or changed == "forget_similar")


def test_criteria_report_losses_and_take_other_tolerances():
    after = _profile(retain_exact=0.6, forget_similar=0.3)
    checks = calibration.criteria(BEFORE, after, WANG)
    assert set(checks) == {"heldout_retain_ps_exact", "heldout_retain_ps_perturb", "forget_ps_similar"}
    assert checks["heldout_retain_ps_exact"]["loss"] == pytest.approx(0.25)
    assert checks["forget_ps_similar"]["loss"] == pytest.approx(2 / 3)
    assert checks["heldout_retain_ps_exact"]["tolerance"] == 0.10 and checks["forget_ps_similar"]["tolerance"] == 0.50
    assert not calibration.passes(BEFORE, after, WANG)
    assert calibration.passes(BEFORE, after, Tolerances(retain=0.25, forget_similar=2 / 3))
    assert not calibration.passes(BEFORE, after, Tolerances(retain=0.2499, forget_similar=2 / 3))
    assert calibration.relative_loss(0.8, 0.6) == pytest.approx(0.25) and calibration.relative_loss(0.0, 0.3) == 0.0
    # nothing to lose: a metric at 0 before cannot fail
    assert calibration.passes(_profile(retain_perturb=0.0), _profile(retain_perturb=0.0), WANG)
    # no paraphrases anywhere: PS-perturb is not a criterion; missing on one side only is an error
    drop = {"heldout_retain": {"ps_exact": 0.8}, "forget": {"ps_similar": 0.9}}
    assert calibration.passes(drop, drop, WANG) and "heldout_retain_ps_perturb" not in calibration.criteria(drop, drop, WANG)
    with pytest.raises(KeyError, match="ps_perturb"):
        calibration.criteria(BEFORE, drop, WANG)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Tolerances(retain=10, forget_similar=0.5)
    with pytest.raises(ValueError, match="forget_similar"):
        Tolerances(retain=0.1, forget_similar=-0.5)


# --------------------------------------------------------------------------- calibration


def fake_mixing(a: float) -> dict:
    """Forget PS falls linearly with a; held-out retain PS-exact falls as 0.8 − 0.3a², so a setting
    passes iff a <= sqrt(0.08 / 0.3) ≈ 0.5164 (PS-perturb and forget PS-similar stay within bounds there)."""
    return _profile(retain_exact=0.8 - 0.3 * a ** 2, retain_perturb=0.5 - 0.05 * a, forget_exact=1.0 - a,
                    forget_perturb=0.6 * (1 - a), forget_similar=0.9 - 0.3 * a)


A_LIMIT = (0.08 / 0.3) ** 0.5


def test_calibrate_returns_the_lowest_forget_passing_setting_and_refines_towards_stronger():
    calls = []

    def evaluate(a):
        calls.append(a)
        return fake_mixing(a)

    result = calibration.calibrate(calibration.mixing_grid(10), evaluate, fine_points=10, before=fake_mixing(0.0),
                                   tolerances=WANG, control="a", jobs=1)
    coarse = result.table[result.table["stage"] == "coarse"]
    fine = result.table[result.table["stage"] == "fine"]
    assert list(coarse["a"]) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    assert result.coarse_best == pytest.approx(0.5) and result.region == pytest.approx((0.5, 0.6))
    # ten fine values strictly inside (0.5, 0.6), evenly spaced
    assert list(fine["a"]) == pytest.approx(list(np.linspace(0.5, 0.6, 12)[1:-1]))
    # the best passing fine value is the largest below the pass limit: 0.5 + 0.1/11 (0.5 + 0.2/11 > 0.5164)
    assert result.best == pytest.approx(0.5 + 0.1 / 11) and result.best <= A_LIMIT < 0.5 + 0.2 / 11
    assert result.profile == fake_mixing(result.best)
    assert result.profile["forget"]["ps_exact"] < fake_mixing(0.5)["forget"]["ps_exact"]
    # settings with lower forget PS-exact exist but fail the retain criterion
    assert (~result.table["passes"]).sum() > 0
    assert result.table.loc[~result.table["passes"], "forget_ps_exact"].min() < result.profile["forget"]["ps_exact"]
    assert all(result.table.loc[result.table["a"] <= A_LIMIT, "passes"])
    assert len(calls) == len(set(calls)) == 21  # each setting evaluated once


def test_calibrate_without_a_stronger_neighbour_or_without_any_pass():
    lenient = calibration.calibrate([0.25, 0.5, 1.0], fake_mixing, 5, before=fake_mixing(0.0),
                                    tolerances=Tolerances(retain=1.0, forget_similar=1.0), control="a", jobs=1)
    assert lenient.best == 1.0 and lenient.region is None and set(lenient.table["stage"]) == {"coarse"}
    strict = calibration.calibrate([0.6, 0.8, 1.0], fake_mixing, 5, before=fake_mixing(0.0), tolerances=WANG,
                                   control="a", jobs=1)
    assert not strict.found and strict.best is None and strict.profile is None and len(strict.table) == 3
    assert not calibration.found_unlearning(strict) and calibration.found_unlearning(lenient)


def test_calibrate_a_discrete_control_and_the_other_direction():
    calls = []

    def profile_of(t):
        calls.append(t)
        return fake_mixing(t / 100)

    steps = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80, 90, 100]
    control = calibration.ControlEvaluator("t", profile_of, known={0: fake_mixing(0.0)}, allowed=steps)
    result = calibration.calibrate([0, 20, 40, 60, 80, 100], control, fine_points=10, before=fake_mixing(0.0),
                                   tolerances=WANG, jobs=1)
    assert result.coarse_best == 40 and result.region == (40, 60)
    assert list(result.table.loc[result.table["stage"] == "fine", "t"]) == [45, 50, 55]  # kept steps only
    assert result.best == 50 and 0 not in calls  # t = 0 was known
    with pytest.raises(ValueError, match="not an available setting"):
        control(33)
    # a control whose smaller values unlearn more (say, a learning-rate divisor)
    reverse = calibration.calibrate([1.0, 0.6, 0.4, 0.0], lambda v: fake_mixing(1 - v), 4, before=fake_mixing(0.0),
                                    tolerances=WANG, control="v", stronger="lower", jobs=1)
    assert reverse.coarse_best == 0.6 and reverse.region == (0.6, 0.4)
    fine = reverse.table.loc[reverse.table["stage"] == "fine", "v"]
    assert list(fine) == pytest.approx([0.56, 0.52, 0.48, 0.44])
    assert reverse.best == pytest.approx(0.52)  # a = 0.48 passes, a = 0.52 > 0.5164 does not


def test_mixing_grid_sweep_table_and_best_settings():
    assert calibration.mixing_grid(4) == [0.0, 0.25, 0.5, 0.75, 1.0]
    with pytest.raises(ValueError, match="at least one"):
        calibration.mixing_grid(0)
    table = calibration.sweep([0.0, 0.5, 1.0], fake_mixing, "a", before=fake_mixing(0.0), tolerances=WANG, jobs=1)
    assert list(table["passes"]) == [True, True, False]
    assert {"a", "heldout_retain_ps_exact", "forget_ps_similar", "heldout_retain_ps_exact_loss"} <= set(table)
    assert calibration.best_passing(table, "a")["a"] == 0.5
    failing = calibration.sweep([0.8, 1.0], fake_mixing, "a", before=fake_mixing(0.0), tolerances=WANG, jobs=1)
    best = calibration.best_settings({"a": table, "t": failing})
    assert best["a"]["a"] == 0.5 and best["t"] is None
    shown = calibration.best_setting_table({"a": table, "t": failing})
    assert shown.loc["a", "best setting"] == 0.5 and shown.loc["a", "forget PS-exact at best"] == pytest.approx(0.5)
    assert math.isnan(shown.loc["t", "best setting"]) and math.isnan(shown.loc["t", "forget PS-exact at best"])
    counts = calibration.status_counts({"a": table, "t": failing})
    assert counts.loc["a"].tolist() == [2, 0, 1] and counts.loc["t", "pass"] == 0


def test_capped_runs_are_distinct_gd_runs_with_the_cap():
    params = config.as_params({"method_settings": {"npo_eo": {"method": "npo"}}, "cap_delta": None, "retain_weight": 1.0})
    capped = calibration.capped_run(params, "gd", 2.0)
    assert capped.run == "gd_cap2" and calibration.capped_run(params, "gd", 0.5).run == "gd_cap0.5"
    settings = pipeline.unlearning_settings(capped.params, capped.run)
    assert settings["method"] == "gd" and settings["cap_delta"] == 2.0
    assert capped.params.method_settings["npo_eo"] == {"method": "npo"}  # the other runs are kept
    assert params["method_settings"] == {"npo_eo": {"method": "npo"}}  # the profile is not changed
    with pytest.raises(ValueError, match="capping applies"):
        calibration.capped_run(params, "npo", 2.0)
    with pytest.raises(ValueError, match="positive"):
        calibration.capped_run(params, "gd", 0.0)


def test_a_capped_run_takes_the_runs_settings_but_where_it_keeps_weights():
    """GD keeps its weights at every step for early stopping; its capped reruns need none of them, and keep the
    cache key they had. A named run's schedule and forget split (Wang's schedule on the paper profile) carry over."""
    params = config.as_params({"method_settings": {
        "gd": {"method": "gd", "unlearn_save_every": 1, "retain_weight": 0.5},
        "gd_wang": {"method": "gd", "unlearn_lr": 1e-5, "forget_split": "forget05"}}})
    capped = calibration.capped_run(params, "gd", 2.0)
    entry = capped.params.method_settings[capped.run]
    assert entry == {"method": "gd", "retain_weight": 0.5, "cap_delta": 2.0}
    assert pipeline.run_params(capped.params, capped.run).unlearn_save_every == capped.params.unlearn_save_every
    assert pipeline.run_params(capped.params, "gd").unlearn_save_every == 1
    wang = calibration.capped_run(params, "gd_wang", 3.0)
    assert wang.run == "gd_wang_cap3"
    trained = pipeline.run_params(wang.params, wang.run)
    assert trained.unlearn_lr == 1e-5 and trained.forget_split == "forget05"
    assert pipeline.unlearning_settings(wang.params, wang.run)["cap_delta"] == 3.0


# --------------------------------------------------------------------------- held-out retain first


def test_retain_first_skips_forget_similar_only_when_retain_already_fails(monkeypatch):
    """PS-similar on forget (the costly search) is asked for only when held-out retain passes; the
    missing values are filled in by ``complete``."""
    asked = []

    def fake_ps_profile(model, tokenizer, template, forget_rows, heldout_rows, batch_size, metrics, search):
        asked.append({split: tuple(m) for split, m in metrics.items()})
        full = fake_mixing(model)
        return {split: {m: full[split].get(m, 0.7) for m in wanted} for split, wanted in metrics.items()}

    monkeypatch.setattr(ps, "ps_profile", fake_ps_profile)
    evaluate = ps.PSEvaluator(None, None, [{}], [{}], metrics=calibration.CALIBRATION_METRICS)
    lazy = calibration.RetainFirst(evaluate, fake_mixing(0.0), WANG)
    kept = lazy(0.3)  # the "model" is a: retain holds at a = 0.3
    assert kept == fake_mixing(0.3) and asked[-1] == {"forget": ("ps_similar",)}
    dropped = lazy(0.9)
    assert np.isnan(dropped["forget"]["ps_similar"]) and "ps_similar" not in asked[-1].get("forget", ())
    assert not calibration.passes(fake_mixing(0.0), dropped, WANG)
    assert not calibration.retain_holds(fake_mixing(0.0), dropped, WANG)
    completed = lazy.complete(0.9, dropped)
    assert completed["forget"]["ps_similar"] == fake_mixing(0.9)["forget"]["ps_similar"]
    assert completed["heldout_retain"]["ps_similar"] == 0.7  # added from TABLE_METRICS
    # without forget PS-similar asked there is nothing to skip: one call, as the evaluator itself
    calls = len(asked)
    assert lazy(0.9, {"heldout_retain": ("ps_exact",)}) == {"heldout_retain": {"ps_exact": fake_mixing(0.9)[
        "heldout_retain"]["ps_exact"]}} and len(asked) == calls + 1
    table = calibration.sweep([0.3, 0.9], lazy, "a", before=fake_mixing(0.0), tolerances=WANG, jobs=1)
    assert calibration.records(table)[1]["forget_ps_similar"] is None
    assert calibration.records(table)[0]["forget_ps_similar"] == pytest.approx(fake_mixing(0.3)["forget"]["ps_similar"])


def test_mixing_control_reuses_before_at_zero_and_calibrate_mixing_reports(monkeypatch):
    """a = 0 is the original model: its profile is ``before``, never evaluated; the calibrated a and a = 1 get
    the full profile through the evaluator's ``complete``."""
    mixed = []
    fake_mix = lambda original, unlearned, a: mixed.append(a) or a  # noqa: E731
    for module in (calibration.controls, calibration.search):  # the control mixes, calibration mixes its best a
        monkeypatch.setattr(module, "mix_models", fake_mix)

    class Evaluate:
        def __call__(self, model):
            return fake_mixing(model)

        def complete(self, model, profile):
            return {**profile, "completed": {"a": model}}

    mixing = calibration.mixing_evaluator("original", 1.0, Evaluate(), before=fake_mixing(0.0))
    result = calibration.calibrate_mixing(mixing, fake_mixing(0.0), coarse_points=10, fine_points=10, tolerances=WANG,
                                          jobs=1)
    assert result.best == pytest.approx(0.5 + 0.1 / 11) and result.coarse_best == pytest.approx(0.5)
    # each a evaluated is mixed once (a = 0 never), then the calibrated a once more for its full profile
    evaluated, reported = mixed[:-1], mixed[-1]
    assert 0.0 not in evaluated and len(evaluated) == len(set(evaluated)) == len(result.table) - 1
    assert reported == result.best
    assert result.reported["completed"] == {"a": pytest.approx(result.best)}
    assert result.uncontrolled["completed"] == {"a": 1.0}  # the unlearned model itself
    assert result.uncontrolled["heldout_retain"] == fake_mixing(1.0)["heldout_retain"]


# --------------------------------------------------------------------------- what the notebook reports


def _calibration(best, uncontrolled_retain_exact, coarse_best=None):
    table = pd.DataFrame([{"a": a, "stage": "coarse", "passes": True, "forget_ps_exact": 1.0 - a,
                           "heldout_retain_ps_exact": 0.8} for a in ([0.0] if best is None else sorted({0.0, best}))])
    return calibration.Calibration(control="a", best=best, profile=None, table=table, coarse_best=coarse_best,
                                   reported=None if best is None else fake_mixing(best),
                                   uncontrolled=_profile(retain_exact=uncontrolled_retain_exact))


def test_summary_table3_and_meta_follow_the_numbers():
    calibrations = {"ga": _calibration(0.0, 0.4), "gd": _calibration(0.25, 0.76, coarse_best=0.2),
                    "npo": _calibration(None, 0.8)}
    assert [calibration.found_unlearning(c) for c in calibrations.values()] == [False, True, False]
    summary = calibration.calibration_summary(calibrations, BEFORE)
    assert summary.loc["ga", "uncontrolled retain PS-exact loss"] == pytest.approx(0.5)
    assert summary.loc["gd", "coarse a"] == 0.2 and summary.loc["gd", "settings evaluated"] == 2  # a = 0 and 0.25

    # Table 3 by mixing: mixing is each method's only control here, so no model is built or evaluated again
    controls = {m: calibration.MethodControls(m, m, {"a": c}, c.uncontrolled) for m, c in calibrations.items()}
    comparison = calibration.calibrated_comparison(SMOKE, controls, evaluate=None, before=BEFORE, original=None)
    assert list(comparison["run"]) == ["before", "ga", "gd", "gd"]  # npo found nothing to report; ga only a = 0
    assert list(calibration.comparison_profiles(comparison)) == ["before", "ga (model mixing)", "gd (model mixing)"]
    gd = comparison.iloc[2]
    assert gd["setting"] == 0.25 and gd["forget_ps_exact"] == pytest.approx(0.75)
    assert comparison.iloc[3]["calibrated by"] == "best control (model mixing)"

    sweeps = {"delta": pd.DataFrame([{"delta": 2.0, "heldout_retain_ps_exact": 0.8, "forget_ps_exact": 0.5,
                                      "passes": True}]),
              "t": pd.DataFrame([{"t": 0.0, "heldout_retain_ps_exact": 0.8, "forget_ps_exact": 1.0, "passes": True}]),
              "a": pd.DataFrame([{"a": 1.0, "heldout_retain_ps_exact": 0.1, "forget_ps_exact": 0.0, "passes": False}])}
    evaluate = ps.PSEvaluator(None, None, [{}] * 5, [{}] * 7, max_items=6)
    meta = calibration.run_meta(calibrations, BEFORE, sweeps, evaluate, elapsed_s=12.345)
    assert meta["calibrated_a"] == {"ga": 0.0, "gd": 0.25, "npo": None}
    assert meta["found_passing"] == {"ga": False, "gd": True, "npo": False}
    assert meta["uncontrolled_heldout_ps_exact_loss"]["gd"] == pytest.approx(0.05)
    assert meta["gd_best_passing"] == {"delta": 2.0, "t": 0.0, "a": None}
    assert meta["ps_items"] == {"heldout_retain": 6, "forget": 5} and meta["elapsed_s"] == 12.3
    assert list(numbers_only.texts({"meta": meta})) == []  # numbers and names only
    tables = calibration.per_item_tables(sweeps, calibrations)
    assert set(tables) == {"gd_early_stopping", "gd_capping", "gd_mixing", "calibration"}
    assert tables["gd_capping"] == [{"delta": 2.0, "heldout_retain_ps_exact": 0.8, "forget_ps_exact": 0.5,
                                     "passes": True}]
    assert set(tables["calibration"]) == {"ga", "gd", "npo"}


def test_answer_steps_take_the_best_passing_step_or_the_first_kept():
    table = pd.DataFrame({"t": [0, 2, 4, 6], "passes": [True, True, True, False],
                          "forget_ps_exact": [1.0, 0.8, 0.6, 0.1], "heldout_retain_ps_exact": [0.8] * 4})
    assert calibration.answer_steps(table) == [0, 4, 6]
    table["passes"] = [True, False, False, False]
    assert calibration.answer_steps(table) == [0, 2, 6]


def test_early_stopping_evaluator_walks_the_kept_steps(monkeypatch, tmp_path):
    kept = [(2, tmp_path / "step-00002"), (4, tmp_path / "step-00004")]
    monkeypatch.setattr(calibration.runs, "trajectory_steps", lambda profile, run: kept if run == "gd" else [])
    monkeypatch.setattr(calibration.models, "load_model",
                        lambda folder, **how: models.LoadedModel(int(folder.name.split("-")[1]) / 10, None, None))
    control = calibration.early_stopping_evaluator(SMOKE, "gd", fake_mixing, before=fake_mixing(0.0))
    assert control.allowed == [0, 2, 4] and control(4) == fake_mixing(0.4) and control(0) == fake_mixing(0.0)
    with pytest.raises(ValueError, match="not an available setting"):
        control(3)
    with pytest.raises(FileNotFoundError, match="notebook 02 with unlearn_save_every > 0"):
        calibration.early_stopping_evaluator(SMOKE, "ga", fake_mixing)
    with pytest.raises(ValueError, match="step 3 was not kept"):
        calibration.answers_at_steps(SMOKE, "gd", [3], {"forget": [{"question": "q", "answer": "a"}]},
                                     original=None, max_new_tokens=4, batch_size=2)


def test_an_early_stopping_sweep_searches_forget_similar_only_where_retain_holds(monkeypatch, tmp_path):
    """A trace searches forget PS-similar only where held-out retain holds, and keeps every held-out metric."""
    searched = []

    def fake_ps_profile(model, tokenizer, template, forget_rows, heldout_rows, batch_size, metrics, search):
        if "ps_similar" in metrics.get("forget", ()):
            searched.append(model)
        full = fake_mixing(model)
        return {split: {m: full[split][m] for m in wanted} for split, wanted in metrics.items()}

    kept = [(2, tmp_path / "step-00002"), (4, tmp_path / "step-00004")]  # a = 0.2 passes, a = 0.8 fails
    for where in (calibration.runs, saved):  # the package face, and the module whose runs.sparse_steps reads them
        monkeypatch.setattr(where, "trajectory_steps", lambda profile, run: kept)
        monkeypatch.setattr(where, "saved_recipe", lambda folder: {"epoch": int(folder.name[5:]) / 4})
    monkeypatch.setattr(calibration.models, "load_model",
                        lambda folder, **how: models.LoadedModel(int(folder.name[5:]), None, None))
    # the "model" of step t is t; its profile is fake_mixing(t / 5): step 2 holds held-out retain, step 4 does not
    monkeypatch.setattr(ps, "ps_profile", lambda model, *a, **k: fake_ps_profile(model / 5, *a, **k))
    evaluate = ps.PSEvaluator(None, None, [{}], [{}], metrics=calibration.CALIBRATION_METRICS)
    # one process: a worker (jobs: null is one per core) would load the steps without this test's fakes
    here = SMOKE.replace(jobs=1)
    table = calibration.early_stopping_sweep(here, "gd", evaluate, 0, fake_mixing(0.0), WANG, risks=False)
    assert list(table["t"]) == [0, 2, 4] and list(table["epoch"]) == [0.0, 0.5, 1.0]
    assert [round(a * 5) for a in searched] == [2]
    assert list(table["passes"]) == [True, True, False]
    assert table["heldout_retain_ps_perturb"].notna().all()  # drawn in full, even where the step fails
    # every other kept step: the sparse grid keeps multiples of `every`, epoch ends and the last
    assert list(calibration.early_stopping_sweep(here, "gd", evaluate, 0, fake_mixing(0.0), WANG, risks=False,
                                                 every=4)["t"]) == [0, 4]


def test_the_table3_title_says_which_control_its_bars_are():
    import pandas as pd

    rows = [{"run": "before", "calibrated by": "", "control": ""},
            {"run": "gd", "calibrated by": "model mixing", "control": "a"},
            {"run": "gd", "calibrated by": "best control (model mixing)", "control": "a"},
            {"run": "npo", "calibrated by": "model mixing", "control": "a"},
            {"run": "npo", "calibrated by": "best control (model mixing)", "control": "a"}]
    assert calibration.table3_title(pd.DataFrame(rows)) == "Calibrated by model mixing, which was every method's best control"
    rows[4] = {"run": "npo", "calibrated by": "best control (early stopping)", "control": "t"}
    title = calibration.table3_title(pd.DataFrame(rows))
    assert title.endswith("npo (early stopping)") and "gd" not in title
