"""Runs compared at matched forgetting (pipeline.matched_forgetting): the first kept step whose forget ROUGE-L reaches
the level halfway from the target's to the retain model's, or the reason a run never reaches it."""

import pytest
from unlearnkit import config, pipeline
from unlearnkit.metrics.tofu import ks_statistic

BEFORE = {"target": {"forget": {"rouge": 0.9}}, "retain90": {"forget": {"rouge": 0.3}}}
FINAL = {"forget": {"rouge": 0.4}, "summary": {"forget_quality": 0.2, "model_utility": 0.7}}


def test_the_matched_level_lies_halfway_from_the_target_to_the_retain_model():
    assert pipeline.matched_level(BEFORE, "retain90") == pytest.approx(0.6)
    assert pipeline.matched_level(BEFORE, None) is None


def test_a_run_reaching_the_level_only_at_its_last_step_is_scored_there_and_one_that_never_does_says_why():
    params = config.Params.load("smoke")
    ratios, reference = [0.1, 0.2, 0.3, 0.9], [0.5, 0.6, 0.7, 0.8]
    trajectory = [{"step": 1, "forget_rouge": 0.85}, {"step": 2, "forget_rouge": 0.7}, {"step": 3, "forget_rouge": 0.5}]
    m = pipeline.matched_forgetting(params, "no-such-run", None, trajectory, 0.6, reference, FINAL, ratios)
    assert m["reached"] and m["step"] == 3 and m["model_utility"] == 0.7 and m["forget_quality"] == 0.2
    assert m["ks_statistic"] == pytest.approx(ks_statistic(ratios, reference)) == pytest.approx(0.75)
    assert m["final"] == {"step": 3, "ks_statistic": pytest.approx(0.75)}
    never = pipeline.matched_forgetting(params, "no-such-run", None, trajectory[:2], 0.6, reference, FINAL, ratios)
    assert not never["reached"] and never["reason"] == "forget ROUGE-L never reached 0.600 (lowest 0.700 at step 2)"
    assert "not reached: forget ROUGE-L never reached" in pipeline.matched_text(never)
    assert "step 3" in pipeline.matched_text(m)
    none = pipeline.matched_forgetting(params, "x", None, trajectory, None, None, FINAL, ratios)
    assert not none["reached"] and none["final"]["ks_statistic"] is None
