"""Controls and calibration (docs/metrics.md §5): the 10 %/50 % pass rule at its boundaries, coarse-to-fine
calibration against a fake evaluate function with a known answer, the capped runs' settings, and the
teacher-forced PS-exact against the generation search of metrics.ps on a tiny model."""

from __future__ import annotations

import numpy as np
import pytest
from unlearnkit import controls, models, pipeline
from unlearnkit.generation import greedy_answers, greedy_continuations
from unlearnkit.metrics import ps

pytestmark = pytest.mark.usefixtures("tiny_model_threads")


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
    assert controls.passes(BEFORE, after) is expected


def test_criteria_report_losses_and_take_other_tolerances():
    after = _profile(retain_exact=0.6, forget_similar=0.3)
    checks = controls.criteria(BEFORE, after)
    assert set(checks) == {"heldout_retain_ps_exact", "heldout_retain_ps_perturb", "forget_ps_similar"}
    assert checks["heldout_retain_ps_exact"]["loss"] == pytest.approx(0.25)
    assert checks["forget_ps_similar"]["loss"] == pytest.approx(2 / 3)
    assert not controls.passes(BEFORE, after)
    assert controls.passes(BEFORE, after, retain_tol=0.25, forget_sim_tol=2 / 3)
    assert not controls.passes(BEFORE, after, retain_tol=0.2499, forget_sim_tol=2 / 3)
    # nothing to lose: a metric at 0 before cannot fail
    assert controls.passes(_profile(retain_perturb=0.0), _profile(retain_perturb=0.0))
    # no paraphrases anywhere: PS-perturb is not a criterion; missing on one side only is an error
    drop = {"heldout_retain": {"ps_exact": 0.8}, "forget": {"ps_similar": 0.9}}
    assert controls.passes(drop, drop) and "heldout_retain_ps_perturb" not in controls.criteria(drop, drop)
    with pytest.raises(KeyError, match="ps_perturb"):
        controls.criteria(BEFORE, drop)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        controls.passes(BEFORE, BEFORE, retain_tol=10)


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

    result = controls.calibrate(controls.mixing_grid(10), evaluate, fine_points=10, before=fake_mixing(0.0),
                                control="a")
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
    lenient = controls.calibrate([0.25, 0.5, 1.0], fake_mixing, 5, before=fake_mixing(0.0), control="a",
                                 retain_tol=1.0, forget_sim_tol=1.0)
    assert lenient.best == 1.0 and lenient.region is None and set(lenient.table["stage"]) == {"coarse"}
    strict = controls.calibrate([0.6, 0.8, 1.0], fake_mixing, 5, before=fake_mixing(0.0), control="a")
    assert not strict.found and strict.best is None and strict.profile is None and len(strict.table) == 3


def test_calibrate_a_discrete_control_and_the_other_direction():
    calls = []

    def profile_of(t):
        calls.append(t)
        return fake_mixing(t / 100)

    steps = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80, 90, 100]
    control = controls.ControlEvaluator("t", profile_of, known={0: fake_mixing(0.0)}, allowed=steps)
    result = controls.calibrate([0, 20, 40, 60, 80, 100], control, fine_points=10, before=fake_mixing(0.0))
    assert result.coarse_best == 40 and result.region == (40, 60)
    assert list(result.table.loc[result.table["stage"] == "fine", "t"]) == [45, 50, 55]  # kept steps only
    assert result.best == 50 and 0 not in calls  # t = 0 was known
    with pytest.raises(ValueError, match="not an available setting"):
        control(33)
    # a control whose smaller values unlearn more (say, a learning-rate divisor)
    reverse = controls.calibrate([1.0, 0.6, 0.4, 0.0], lambda v: fake_mixing(1 - v), 4, before=fake_mixing(0.0),
                                 control="v", stronger="lower")
    assert reverse.coarse_best == 0.6 and reverse.region == (0.6, 0.4)
    fine = reverse.table.loc[reverse.table["stage"] == "fine", "v"]
    assert list(fine) == pytest.approx([0.56, 0.52, 0.48, 0.44])
    assert reverse.best == pytest.approx(0.52)  # a = 0.48 passes, a = 0.52 > 0.5164 does not


def test_mixing_grid_and_sweep_table():
    assert controls.mixing_grid(4) == [0.0, 0.25, 0.5, 0.75, 1.0]
    table = controls.sweep([0.0, 0.5, 1.0], fake_mixing, "a", before=fake_mixing(0.0))
    assert list(table["passes"]) == [True, True, False]
    assert {"a", "heldout_retain_ps_exact", "forget_ps_similar", "heldout_retain_ps_exact_loss"} <= set(table)


def test_capped_runs_are_distinct_gd_runs_with_the_cap(tmp_path):
    params = {"method_settings": {"npo_eo": {"method": "npo"}}, "cap_delta": None, "retain_weight": 1.0}
    run_params, run = controls.capped_run(params, "gd", 2.0)
    assert run == "gd_cap2" and controls.capped_run(params, "gd", 0.5)[1] == "gd_cap0.5"
    settings = pipeline.unlearning_settings(run_params, run)
    assert settings["method"] == "gd" and settings["cap_delta"] == 2.0
    assert params["method_settings"] == {"npo_eo": {"method": "npo"}}  # the profile is not changed
    with pytest.raises(ValueError, match="capping applies"):
        controls.capped_run(params, "npo", 2.0)


# --------------------------------------------------------------------------- teacher-forced PS-exact


def test_teacher_forced_exact_matches_the_generation_search(tiny_model, tiny_tokenizer, template,
                                                            small_corpus):
    """Answers built from the model's own greedy continuations, with one token changed at a chosen place:
    the shortest k is at least one past the change (the changed context may derail later tokens too), and
    the linear scan of greedy decodings must find the same k."""
    rows = small_corpus.load("forget10_perturbed")[:6]
    prompts = [models.encode_prompt(tiny_tokenizer, template, r["question"]) for r in rows]
    own = [c[:10] for c in greedy_continuations(tiny_model, tiny_tokenizer, prompts, max_new_tokens=10)]
    assert all(len(c) == 10 for c in own)
    answers = [list(c) for c in own]
    for i in range(5):  # change token 2i of item i (item 5 stays the model's own: k = 0)
        answers[i][2 * i] = (answers[i][2 * i] + 7) % (len(tiny_tokenizer) - 3) + 3

    def reproduces(probes):
        conts = greedy_continuations(tiny_model, tiny_tokenizer, [prompts[i] + answers[i][:k] for i, k in probes],
                                     max_new_tokens=10)
        return [c[:10 - k] == answers[i][k:] for (i, k), c in zip(probes, conts)]

    searched = ps.search_shortest_prefix([len(a) for a in answers], reproduces, "linear")
    forced = controls.exact_prefix_lengths(tiny_model, prompts, answers, tiny_tokenizer.pad_token_id, batch_size=4)
    assert forced == searched
    assert forced[5] == 0 and forced[0] is not None and forced[0] >= 1
    assert all(k is None or k >= 2 * i + 1 for i, k in enumerate(forced[:5]))


def test_ps_profile_agrees_with_evaluate_ps(tiny_model, tiny_tokenizer, template, small_corpus):
    """Answers the model gives itself after a few words of a corpus answer (so PS is between 0 and 1), its
    own answers (PS near 1) and corpus answers it never saw (PS 0): both paths give the same profile."""
    rows = small_corpus.load("forget10_perturbed")[:6]
    questions = [r["question"] for r in rows]
    starts = [" ".join(r["answer"].split()[:3]) for r in rows]
    led = greedy_answers(tiny_model, tiny_tokenizer, template, questions, max_new_tokens=8, prefixes=starts)
    own = greedy_answers(tiny_model, tiny_tokenizer, template, questions, max_new_tokens=8)
    made = [{**r, "answer": f"{p} {c}"} for r, p, c in zip(rows, starts, led)]
    forget = made[:3] + [{**rows[0], "answer": own[0]}] + rows[4:5]
    heldout = made[3:] + [{**rows[1], "answer": own[1]}] + rows[5:6]
    fast = controls.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout, metrics=controls.TABLE_METRICS)
    slow = controls.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout, metrics=controls.TABLE_METRICS,
                               teacher_forced=False)
    assert set(fast) == set(slow) == {"heldout_retain", "forget"}
    for split in fast:
        assert fast[split] == pytest.approx(slow[split]), split
    assert 0 < fast["forget"]["ps_exact"] < 1 and fast["forget"]["n_items"] == 5
    only = controls.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout,
                               metrics={"heldout_retain": ("ps_similar",)})
    assert set(only) == {"heldout_retain"}
    assert only["heldout_retain"]["ps_similar"] == pytest.approx(slow["heldout_retain"]["ps_similar"])


def test_lazy_evaluator_skips_forget_similar_only_when_retain_already_fails(monkeypatch):
    """PS-similar on forget (the costly search) is asked for only when held-out retain passes; the
    missing values are filled in by ``complete``."""
    asked = []

    def fake_ps_profile(model, tokenizer, template, forget_rows, heldout_rows, batch_size, metrics, search):
        asked.append({split: tuple(m) for split, m in metrics.items()})
        full = fake_mixing(model)
        return {split: {m: full[split].get(m, 0.7) for m in wanted} for split, wanted in metrics.items()}

    monkeypatch.setattr(controls, "ps_profile", fake_ps_profile)
    lazy = controls.PSEvaluator(None, None, [{}], [{}], lazy_before=fake_mixing(0.0), retain_tol=0.1)
    kept = lazy(0.3)  # the "model" is a: retain holds at a = 0.3
    assert kept == fake_mixing(0.3) and asked[-1] == {"forget": ("ps_similar",)}
    dropped = lazy(0.9)
    assert np.isnan(dropped["forget"]["ps_similar"]) and all("ps_similar" not in m.get("forget", ()) for m in asked[-1:])
    assert not controls.passes(fake_mixing(0.0), dropped) and not controls.retain_holds(fake_mixing(0.0), dropped)
    completed = lazy.complete(0.9, dropped)
    assert completed["forget"]["ps_similar"] == fake_mixing(0.9)["forget"]["ps_similar"]
    assert completed["heldout_retain"]["ps_similar"] == 0.7  # added from TABLE_METRICS
    table = controls.sweep([0.3, 0.9], lazy, "a", before=fake_mixing(0.0))
    assert controls.records(table)[1]["forget_ps_similar"] is None
