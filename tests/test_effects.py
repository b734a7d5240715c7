"""Registered claims read from one seed's stored results (unlearnkit.claims.extractors), on made-up results whose
effects are known: the setup gate, pooled units, matched forgetting, membership inference, relearning speed and
adaptive temperature."""

import dataclasses
import math

import pytest
from conftest import skip_unless
from unlearnkit import results, runs
from unlearnkit.claims import extractors as effects
from unlearnkit.claims import registry
from unlearnkit.claims.judge import CONSISTENT, INCONCLUSIVE, INCONSISTENT, NOT_TESTABLE


class FakeSeed:
    """What an extractor reads of a seed: notebooks' metrics and per-item values, in memory."""

    def __init__(self, metrics, per_item=None, seed=0):
        self.seed, self._metrics, self._per_item = seed, metrics, per_item or {}

    def metrics(self, notebook):
        if notebook not in self._metrics:
            raise results.MissingResult(f"seed 0 has no {notebook}/metrics.json", notebook, "metrics.json")
        return self._metrics[notebook]

    def per_item(self, notebook):
        if notebook not in self._per_item:
            raise results.MissingResult(f"seed 0 has no {notebook}/per_item.json", notebook, "per_item.json")
        return self._per_item[notebook]

    def unlearning_runs(self):
        prefix = f"{runs.UNLEARNING}_"
        return {k.removeprefix(prefix): v for k, v in self._metrics.items() if k.startswith(prefix)}


def _model(rouge, quality=None, utility=0.8, **summary):
    return {"forget": {"rouge": rouge}, "summary": {"forget_quality": quality, "model_utility": utility, **summary}}


def _finetune(target_quality=1e-40):
    return {"base": _model(0.05), "target": _model(0.98, target_quality, 0.8, mia_mink_auc=0.9, privleak=-99.0),
            "retain90": _model(0.3, 1.0, 0.8, mia_mink_auc=0.5, privleak=1.0),
            "meta": {"forget_quality_reference": "retain90", "parameters": {"method_settings": {}}}}


def _run(name, rouge, quality, utility, matched=None, **summary):
    return {f"{runs.UNLEARNING}_{name}": {name: _model(rouge, quality, utility, **summary), "meta": {"matched": matched}}}


def _matched(utility, d=0.3, quality=1e-5, step=5, rouge=0.64, final_step=20, final_d=0.2):
    return {"reached": True, "step": step, "level": 0.64, "model_utility": utility, "ks_statistic": d,
            "forget_quality": quality, "forget_rouge": rouge, "final": {"step": final_step, "ks_statistic": final_d}}


def claim(claim_id):
    return registry.load()[claim_id]


def test_a_target_out_of_toFUs_regime_makes_every_unlearning_claim_not_testable_and_says_why():
    seed = FakeSeed({runs.FINETUNE: _finetune(target_quality=0.3)})
    setup = effects.effect_on_seed(claim("setup.target_in_regime"), seed)
    assert setup.outcome == INCONSISTENT and "forget quality 0.3" in setup.values["why not"]
    found = effects.effect_on_seed(claim("tofu.baselines_fail"), seed)
    assert found.outcome == NOT_TESTABLE and found.reason.startswith("setup: the target's forget quality")
    assert effects.effect_on_seed(claim("setup.target_in_regime"), FakeSeed({runs.FINETUNE: _finetune()})).outcome == CONSISTENT


def test_tofus_baselines_pool_their_units_and_a_run_that_never_keeps_utility_is_no_effective_unlearning():
    metrics = {runs.FINETUNE: _finetune(),
               **_run("ga", 0.0, 0.6, 0.1),  # collapsed: forget quality high, utility gone
               **_run("gd", 0.4, 1e-20, 0.78),  # utility kept, forget quality far below 0.05
               **_run("kl", 0.3, 0.5, 0.79)}  # utility kept and forget quality a decade above 0.05
    found = effects.effect_on_seed(claim("tofu.baselines_fail"), FakeSeed(metrics))
    units = {u.name: u for u in found.units}
    assert units["ga"].outcome == CONSISTENT and units["ga"].effect is None
    assert units["gd"].effect == pytest.approx(math.log10(1e-20 / 0.05)) and units["gd"].outcome == CONSISTENT
    assert units["kl"].effect == pytest.approx(1.0) and units["kl"].outcome == INCONSISTENT
    assert units["idk"].outcome == NOT_TESTABLE and units["idk"].reason == "idk did not run"
    assert found.effect == pytest.approx((math.log10(1e-20 / 0.05) + 1.0) / 2) and found.outcome == CONSISTENT
    assert found.support == (2, 3)


def test_methods_are_compared_at_matched_forgetting_and_a_run_that_never_got_there_is_not_testable():
    # both runs scored right at the level (0.64): read there
    metrics = {runs.FINETUNE: _finetune(), **_run("npo", 0.3, 1e-5, 0.7, _matched(0.78)),
               **_run("ga", 0.2, 1e-3, 0.2, _matched(0.58))}
    found = effects.effect_on_seed(claim("npo.better_tradeoff_than_ga"), FakeSeed(metrics))
    assert found.effect == pytest.approx(0.2) and found.outcome == CONSISTENT
    metrics.update(_run("ga", 0.9, 1e-40, 0.8, {"reached": False, "reason": "forget ROUGE-L never reached 0.640",
                                                 "level": 0.64, "final": {"step": 20}}))
    found = effects.effect_on_seed(claim("npo.better_tradeoff_than_ga"), FakeSeed(metrics))
    assert found.outcome == NOT_TESTABLE and found.reason.startswith("ga: no scored step at or below the matched")
    metrics.update(_run("simnpo", 0.3, 1e-2, 0.75, _matched(0.75, d=0.27)))
    per_item = {runs.FINETUNE: {"target": {"forget": {"truth_ratio": [0.1, 0.2, 0.3]}},
                                "retain90": {"forget": {"truth_ratio": [0.7, 0.8, 0.9]}}}}  # the target's D: 1
    found = effects.effect_on_seed(claim("simnpo.beats_npo"), FakeSeed(metrics, per_item))  # D 0.30 (npo) - 0.27
    assert found.effect == pytest.approx(0.03) and found.outcome == INCONCLUSIVE
    assert effects.effect_on_seed(claim("simnpo.beats_npo"), FakeSeed(metrics)).outcome == NOT_TESTABLE  # no D at 0


def test_matched_forgetting_interpolates_between_the_scored_steps_that_bracket_the_level():
    """#56 item 4: a run whose first scored step below the level overshoots it is read at the level itself,
    linearly between the last scored step above it and the first at or below (the target at step 0 here)."""
    # target: ROUGE-L 0.98, utility 0.8; level 0.64. npo at step 7: ROUGE-L 0.30, utility 0.70 -> weight 0.5
    # ga at step 7: ROUGE-L 0.47, utility 0.60 -> weight (0.98 - 0.64) / (0.98 - 0.47) = 2/3
    metrics = {runs.FINETUNE: _finetune(), **_run("npo", 0.1, 1e-5, 0.6, _matched(0.70, rouge=0.30, step=7)),
               **_run("ga", 0.0, 1e-3, 0.0, _matched(0.60, rouge=0.47, step=7))}
    found = effects.effect_on_seed(claim("npo.better_tradeoff_than_ga"), FakeSeed(metrics))
    assert found.effect == pytest.approx((0.8 - 0.5 * 0.1) - (0.8 - 2 / 3 * 0.2))
    assert found.values["npo interpolated"] == "steps 0-7, weight 0.50"
    # a matched step scored just above the level (the full evaluation's ROUGE-L, not the trajectory's): its bracket
    # is the matched step and the final one
    metrics.update(_run("ga", 0.24, 1e-3, 0.4, _matched(0.60, rouge=0.74, step=7)))
    found = effects.effect_on_seed(claim("npo.better_tradeoff_than_ga"), FakeSeed(metrics))
    assert found.values["ga interpolated"] == "steps 7-20, weight 0.20"
    assert found.values["ga model utility at matched"] == pytest.approx(0.6 - 0.2 * 0.2)


def _leakage(regime, hp=None, hp_name="npo_mild@30"):
    """Notebook 05's metrics: ``regime`` {label: reached}, and a keyword Q&A summary on ``hp_name``."""
    metrics = {"meta": {"reference": "retain90", "regime": {label: {"run": label.split("@")[0], "reached": reached}
                                                           for label, reached in regime.items()}}}
    if hp is not None:
        metrics[hp_name] = {"hp_qa": hp}
    return metrics


def _leaky(greedy_leak, leak_lower, rouge_bound=None):
    n = len(greedy_leak)
    return {"greedy_leak": greedy_leak, "leak_lower": leak_lower, "greedy_unlearned_rouge": [not g for g in greedy_leak],
            "rouge_leak_bound": rouge_bound or [0.0] * n, "binary_leak_bound": [0.05] * n}


def test_only_models_that_reached_the_regime_count():
    """#56 item 5: a run searched for the regime that never got there (stored with reached false) counts in no
    claim about the regime; a seed with none is not testable."""
    safe = [0] * 20
    per_item = {"retain90": _leaky(safe, [0.0] * 20),
                "ga_mild@20": _leaky(safe, [0.0] * 20, [0.2] * 5 + [0.0] * 15),  # share 0.25 above 0.1
                "gd_mild@35": _leaky(safe, [0.0] * 20, [0.2] * 20)}  # share 1.0, but never reached the regime
    seed = FakeSeed({runs.FINETUNE: _finetune(), runs.LEAKAGE: _leakage({"ga_mild@20": True, "gd_mild@35": False})},
                    {runs.LEAKAGE: per_item})
    found = effects.effect_on_seed(claim("scholten.greedy_understates"), seed)
    assert [u.name for u in found.units] == ["ga_mild@20"] and found.effect == pytest.approx(0.25)
    seed = FakeSeed({runs.FINETUNE: _finetune(), runs.LEAKAGE: _leakage({"gd_mild@35": False})},
                    {runs.LEAKAGE: per_item})
    found = effects.effect_on_seed(claim("scholten.greedy_understates"), seed)
    assert found.outcome == NOT_TESTABLE and found.reason.startswith("no model reached the paper's regime")


def test_the_entity_leak_is_judged_against_the_retain_models_guessing():
    # 20 greedy-safe questions and 2 that greedy leaks; the retain model guesses question 1's entity (M_bin 0.4)
    greedy = [0] * 20 + [1, 1]
    retain = _leaky(greedy, [0.0] * 22)
    retain["binary_leak_bound"] = [0.05, 0.4] + [0.05] * 20
    model = _leaky(greedy, [0.3, 0.3] + [0.0] * 4 + [0.1] * 4 + [0.0] * 10 + [0.9, 0.9])
    seed = FakeSeed({runs.FINETUNE: _finetune(), runs.LEAKAGE: _leakage({"npo_mild@30": True})},
                    {runs.LEAKAGE: {"retain90": retain, "npo_mild@30": model}})
    found = effects.effect_on_seed(claim("scholten.entity_leak_beyond_guessing"), seed)
    # question 0 and questions 6-9 beyond guessing; question 1 not (the retain model guesses it); 20-21 not greedy-safe
    assert found.effect == pytest.approx(5 / 20) and found.units[0].values["greedy-safe questions"] == 20


def test_fig3a_is_read_on_a_model_in_the_regime_over_its_greedy_safe_questions():
    hp = {"n_questions": 40, "n_samples": 128, "greedy_leak_rate": 0.1, "share_binary_leak_bound_above_0.1": 0.3,
          "greedy_safe_questions": 36, "share_binary_leak_bound_above_0.1_greedy_safe": 0.25}
    fig3a = claim("scholten.fig3a_share_above_10")

    def judged(metrics):
        return effects.effect_on_seed(fig3a, FakeSeed({runs.FINETUNE: _finetune(), runs.LEAKAGE: metrics}))

    found = judged(_leakage({"npo_mild@30": True}, hp))
    assert found.effect == pytest.approx(0.25) and found.values["share over every question"] == 0.3
    assert "never reached" in judged(_leakage({"npo_mild@30": False}, hp)).reason
    assert "not one of notebook 05's regime models" in judged(_leakage({"npo_mild@30": True}, hp, "unlearned-npo")).reason
    stored_before = {k: v for k, v in hp.items() if "greedy_safe" not in k}
    assert "greedy-safe" in judged(_leakage({"npo_mild@30": True}, stored_before)).reason


def test_membership_inference_counts_the_share_of_rouge_unlearned_runs_it_tells_apart():
    metrics = {runs.FINETUNE: _finetune()}
    for name, auc in (("a", 0.8), ("b", 0.55), ("c", 0.7), ("d", 0.1), ("e", 0.95)):
        metrics.update(_run(name, 0.9 if name == "e" else 0.2, 1e-3, 0.8, mia_mink_auc=auc))
    found = effects.effect_on_seed(claim("ou.mia_beyond_rouge"), FakeSeed(metrics))
    assert {u.name for u in found.units} == {"a", "b", "c", "d"}  # e does not look unlearned by ROUGE
    assert found.effect == pytest.approx(0.75) and found.outcome == CONSISTENT  # a, c, d told apart; b not


def test_relearning_is_the_share_of_the_gap_closed_against_the_retain_models_over_the_same_budget():
    per_item = {"target": {"before": {"rouge": 0.9}}, "retain90": {"before": {"rouge": 0.3}, "relearn": {
        "curve": [[0, 0.3], [4, 0.5], [8, 0.6]]}},  # closes 0.3 of its 0.6 gap: 0.5
        "fast": {"before": {"rouge": 0.2}, "relearn": {"curve": [[0, 0.2], [2, 0.7], [8, 0.83]]}},  # 0.9
        "slow": {"before": {"rouge": 0.1}, "relearn": {"curve": [[0, 0.1], [8, 0.2]]}},  # 0.125
        "level": {"before": {"rouge": 0.3}, "relearn": {"curve": [[0, 0.3], [8, 0.6]]}},  # 0.5, as the control
        "kept": {"before": {"rouge": 0.85}, "relearn": {"curve": [[0, 0.85]]}}}
    found = effects.effect_on_seed(claim("hu.relearning_jogs_memory"),
                                   FakeSeed({runs.FINETUNE: _finetune()}, {runs.ROBUSTNESS: per_item}))
    units = {u.name: u for u in found.units}
    assert units["fast"].effect == pytest.approx(0.4) and units["fast"].outcome == CONSISTENT
    assert units["slow"].effect == pytest.approx(-0.375) and units["slow"].outcome == INCONSISTENT
    assert units["level"].outcome == INCONCLUSIVE and units["kept"].outcome == NOT_TESTABLE
    assert found.support == (1, 3) and found.effect == pytest.approx((0.4 - 0.375 + 0) / 3)
    assert found.values["retain model's gap closed"] == pytest.approx(0.5)


def _formats(**runs_):
    scores = {"base": {"forget": {"mcqa": 0.2, "cloze": 0.1, "analogy": 0.3}},
              "target": {"forget": {"mcqa": 0.8, "cloze": 0.6, "analogy": 0.32}}}  # analogy is not informative
    return {**scores, **{r: {"forget": s} for r, s in runs_.items()}}


def test_other_formats_is_the_mean_over_informative_formats_not_the_largest():
    metrics = {runs.FINETUNE: _finetune(), **_run("ga", 0.05 + 0.93 * 0.1, None, 0.8),
               **_run("dpo", 0.9, None, 0.8),  # keeps most of Q&A: not unlearned there, so not testable
               runs.FORMATS: _formats(ga={"mcqa": 0.2 + 0.6 * 0.7, "cloze": 0.1 + 0.5 * 0.1, "analogy": 0.3},
                                      dpo={"mcqa": 0.8, "cloze": 0.6, "analogy": 0.3})}
    found = effects.effect_on_seed(claim("joshi.other_formats"), FakeSeed(metrics))
    units = {u.name: u for u in found.units}
    # R_QA = 0.1; R_mcqa - R_QA = 0.6 and R_cloze - R_QA = 0.0: the mean 0.3, where the largest would read 0.6
    assert units["ga"].effect == pytest.approx(0.3) and units["ga"].outcome == CONSISTENT
    assert units["dpo"].outcome == NOT_TESTABLE
    assert found.values["informative formats"] == "mcqa, cloze"
    assert found.values["mean R_mcqa - R_QA"] == pytest.approx(0.6)


def test_adaptive_temperature_answers_confident_questions_greedily_in_the_ed_score():
    q = {"rouge_mean": [0.4, 0.2], "rouge_sd": [0.1, 0.05], "greedy_rouge": [0.3, 0.2], "certainty": [0.95, 0.5]}
    plain = ((0.4 + 0.2) + (0.2 + 0.1)) / 2
    adaptive = (0.3 + (0.2 + 0.1)) / 2
    metrics = {runs.FINETUNE: {**_finetune(), "meta": {"forget_quality_reference": "retain90", "parameters": {
        "adaptive_threshold": 0.9, "ed_rho": 2.0, "method_settings": {}}}}}
    found = effects.effect_on_seed(claim("scholten.adaptive_temperature"),
                                   FakeSeed(metrics, {runs.ENTROPY: {"npo_eo": q}}))
    assert found.effect == pytest.approx(plain - adaptive) and found.outcome == CONSISTENT


def test_a_notebook_that_has_not_run_makes_its_claims_not_testable_and_every_testable_claim_has_an_extractor():
    found = effects.effect_on_seed(claim("joshi.other_formats"), FakeSeed({runs.FINETUNE: _finetune()}))
    assert found.outcome == NOT_TESTABLE and found.reason.startswith("not run: 04_format_eval")
    reg = registry.load()
    assert [c.id for c in reg.claims if c.testable and c.id not in effects.EXTRACTORS] == []


def test_the_committed_claims_recompute_from_the_committed_results():
    """docs/findings.json's claims follow from the committed results (results/default/seed-<s>/) by the judge alone,
    so a fresh clone re-judges them without training (runner aggregate does the same through notebook 10)."""
    import json

    from unlearnkit import config, paths

    skip_unless(not any(p.parent.name != runs.FINDINGS for p in runs.profile_dir("default").glob("seed-*/0*/metrics.json")),
                "runs/default/ holds seeds of its own, which the judge reads before the committed results",
                "CI, whose clean clone has no runs/")
    summary = json.loads(paths.SUMMARY.read_text())
    assert summary["schema_version"] >= 1, "the committed summary predates the registered claims"
    by_id = {row["id"]: row for row in summary["claims"]}
    judged = effects.judge_claims("default", summary["seeds"])
    assert {v.claim for v in judged} == set(by_id)
    # the verdict and its numbers are the headline set's (#58: the confirmatory seeds where there are any), the
    # per-seed records every seed's
    sets = summary.get("sets") or {}
    by_set = {name: {h.claim: h for h in effects.judge_claims("default", sets[name])}
              for name in ("exploratory", "confirmatory") if sets.get(name)}
    for v in judged:
        judged_on = (by_id[v.claim].get("sets") or {}).get("judged_on")
        if judged_on:
            v = dataclasses.replace(by_set[judged_on][v.claim], per_seed=v.per_seed)
        fresh = json.loads(json.dumps(config.jsonable(v.as_dict())))
        fresh.pop("claim")
        assert {k: by_id[v.claim][k] for k in fresh} == fresh, v.claim


def test_a_claims_tile_is_its_verdict_from_five_testable_seeds_and_below_that_what_they_agree_on():
    from unlearnkit.claims import render as claim_text

    seeds = lambda *outcomes: [{"outcome": o} for o in outcomes]  # noqa: E731
    assert claim_text.tile({"verdict": "inconclusive", "per_seed": seeds(CONSISTENT, CONSISTENT, NOT_TESTABLE)}) \
        == "consistent on every testable seed"
    assert claim_text.tile({"verdict": "inconclusive", "per_seed": seeds(CONSISTENT, INCONCLUSIVE)}) \
        == "inconclusive or mixed"
    assert claim_text.tile({"verdict": "not testable here", "per_seed": seeds(NOT_TESTABLE)}) == "not testable here"
    assert claim_text.tile({"verdict": "reproduced", "per_seed": seeds(*[CONSISTENT] * 5)}) == "reproduced"
    assert [claim_text.short_name(i) for i in ("undial.claim", "scholten.greedy_understates")] == \
        ["undial", "greedy understates"]


def test_a_notebooks_last_cell_shows_its_claims_on_its_seed_as_the_summary_judged_them():
    """claims.render.seed_frame, each numbered notebook's last cell: the claims whose notebook it is, this seed's
    outcome and effect as docs/findings.json holds them for that seed, the reason where a seed is not testable."""
    import json

    from unlearnkit import paths
    from unlearnkit.claims import render as claim_text

    skip_unless(not any(p.parent.name != runs.FINDINGS for p in runs.profile_dir("default").glob("seed-*/0*/metrics.json")),
                "runs/default/ holds seeds of its own, which the judge reads before the committed results",
                "CI, whose clean clone has no runs/")
    summary = json.loads(paths.SUMMARY.read_text())
    seed = summary["seeds"][0]
    for notebook in (runs.CONTROLS, runs.unlearning_notebook("npo")):
        base = runs.UNLEARNING if notebook.startswith(runs.UNLEARNING) else notebook
        rows = {r["id"]: r for r in summary["claims"] if r["notebook"] == base}
        shown = claim_text.seed_frame("default", seed, notebook)
        assert set(shown["id"]) == set(rows) and rows, notebook
        for _, row in shown.iterrows():
            [stored] = [s for s in rows[row["id"]]["per_seed"] if s["seed"] == seed]
            assert row["outcome"] == stored["outcome"], row["id"]
            assert (row["why"] == f"not testable: {stored['reason']}") == (stored["outcome"] == NOT_TESTABLE)
            assert row["effect"].startswith("n/a" if stored["effect"] is None else f"{stored['effect']:+.3g}")
    assert claim_text.seed_frame("default", seed, runs.DATA_TOUR).empty
