"""Per-run training keys of unlearning runs (unlearnkit.pipeline): ``method_settings[<run>]`` may set the
``unlearn_*`` keys of its run, which reach the run's parameters but never its loss settings; the profile's own
runs keep exactly the settings (and so the cache keys) they had."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from unlearnkit import config, pipeline
from unlearnkit.runs import saved

LOSS_OF_NPO = {"method": "npo", "beta": 0.1, "forget_weight": 1.0, "retain_weight": 1.0, "lambda_f": 0.0,
               "lambda_r": 0.0}


@pytest.fixture(scope="module")
def params():
    return config.Params.load("default")


def test_every_unlearn_key_of_the_profile_is_a_train_key(params):
    unlearn_keys = {k for k in params if k.startswith("unlearn_")}
    assert set(pipeline.UNLEARN_TRAIN_KEYS) == unlearn_keys
    assert not set(pipeline.UNLEARN_TRAIN_KEYS) & set(pipeline.UNLEARN_LOSS_KEYS)


def test_train_keys_of_an_entry_reach_run_params_but_not_the_loss_settings(params):
    p = pipeline.with_run(params, "npo_slow", method="npo", unlearn_lr=1.0e-5, unlearn_save_every=2, beta=0.3)
    trained = pipeline.run_params(p, "npo_slow")
    assert trained.unlearn_lr == 1.0e-5 and trained.unlearn_save_every == 2
    assert trained.unlearn_epochs == params.unlearn_epochs and trained.beta == params.beta  # a loss key stays out
    settings = pipeline.unlearning_settings(p, "npo_slow")
    assert not any(k.startswith("unlearn_") for k in settings)
    assert settings == {**LOSS_OF_NPO, "beta": 0.3}
    # the loss settings are the same whether they are asked of the profile or of the run's own parameters
    assert pipeline.unlearning_settings(trained, "npo_slow") == settings


def test_the_profiles_mild_runs_train_at_their_own_rate(params):
    assert "npo_mild" in params.method_settings  # the runs of notebook 05's regime
    trained = pipeline.run_params(params, "npo_mild")
    assert trained.unlearn_lr == params.method_settings["npo_mild"]["unlearn_lr"] != params.unlearn_lr
    assert trained.unlearn_save_every == params.method_settings["npo_mild"]["unlearn_save_every"]
    assert pipeline.unlearning_settings(params, "npo_mild") == pipeline.unlearning_settings(params, "npo")


def test_a_run_without_overrides_trains_with_the_profiles_keys(params):
    for run in ("dpo", "rmu", "npo_eo"):  # npo, ga, ... keep every step (notebook 03): their entries override
        trained = pipeline.run_params(params, run)
        assert {k: trained[k] for k in pipeline.UNLEARN_TRAIN_KEYS} == {k: params[k] for k in pipeline.UNLEARN_TRAIN_KEYS}
        assert trained == params
    assert pipeline.run_overrides(params, "dpo") == {}
    assert pipeline.run_overrides(params, "npo_eo") == params.method_settings["npo_eo"]
    # the profile's gd keeps every step for early stopping: only that training key differs
    gd = pipeline.run_params(params, "gd")
    assert gd.unlearn_save_every == 1 and gd.replace(unlearn_save_every=params.unlearn_save_every) == params


def test_a_misspelt_key_is_refused_with_its_name(params):
    p = pipeline.with_run(params, "npo_typo", method="npo", unlearn_lrr=1.0e-4)
    for ask in (pipeline.run_params, pipeline.unlearning_settings, pipeline.run_overrides):
        with pytest.raises(ValueError, match="unlearn_lrr") as error:
            ask(p, "npo_typo")
        assert "npo_typo" in str(error.value)
    # a profile key that is no unlearning key (eval_batch_size) is refused as well
    with pytest.raises(ValueError, match="eval_batch_size"):
        pipeline.run_params(pipeline.with_run(params, "odd", method="gd", eval_batch_size=4), "odd")
    # the reference model is never a setting of a profile
    with pytest.raises(ValueError, match="ref_model"):
        pipeline.unlearning_settings(pipeline.with_run(params, "odd", method="npo", ref_model="x"), "odd")


def test_an_unknown_run_is_refused(params):
    with pytest.raises(ValueError, match="unknown unlearning run 'nope'"):
        pipeline.run_params(params, "nope")
    with pytest.raises(ValueError, match="unknown unlearning run 'bad_method'"):
        pipeline.unlearning_settings(pipeline.with_run(params, "bad_method", method="sgd"), "bad_method")


def test_with_run_leaves_the_params_it_was_given_unchanged(params):
    before = copy.deepcopy(params.method_settings)
    settings = {"method": "gd", "unlearn_lr": 2.0e-4}
    added = pipeline.with_run(params, "gd_new", **settings)
    assert params.method_settings == before and "gd_new" not in params.method_settings
    assert added.method_settings == {**before, "gd_new": settings}
    assert {k: v for k, v in added.items() if k != "method_settings"} == {
        k: v for k, v in params.items() if k != "method_settings"}
    settings["unlearn_lr"] = 1.0  # the caller's dict is copied, not kept
    assert added.method_settings["gd_new"]["unlearn_lr"] == 2.0e-4
    # replacing an existing run replaces its entry and nothing else
    again = pipeline.with_run(added, "gd_new", method="gd")
    assert again.method_settings["gd_new"] == {"method": "gd"} and added.method_settings["gd_new"] == {
        "method": "gd", "unlearn_lr": 2.0e-4}
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.method_settings = {}


def test_a_runs_own_settings_are_read_one_way(params):
    """pipeline.own_settings: what derived_run, the entropy sweeps and effects.method_of read (#49)."""
    assert pipeline.own_settings(params, "npo_mild") == params.method_settings["npo_mild"]
    assert pipeline.own_settings(params, "npo_mild", without=("unlearn_lr", "absent")) == {
        "method": "npo", "unlearn_save_every": 1}
    assert pipeline.own_settings(params, "rmu") == {"method": "rmu"}  # a bare method
    stored = {"method_settings": {"x": {"method": "gd", "beta": 0.2}}}  # the parameters a run record stored
    assert pipeline.own_settings(stored, "x", without=("beta",)) == {"method": "gd"}
    assert pipeline.own_settings({"method_settings": None}, "ga") == {"method": "ga"}
    derived = pipeline.derived_run(params, "npo_mild", "npo_mild_x", forget_split="forget05")
    assert derived.method_settings["npo_mild_x"] == {"method": "npo", "unlearn_lr": 3.0e-4, "forget_split": "forget05"}


def test_with_run_keeps_the_parameters_of_a_mapping_completed_from_its_profile():
    p = pipeline.with_run(config.as_params({"profile": "default", "seed": 7}), "ga_x", method="ga", unlearn_epochs=1.0)
    assert isinstance(p, config.Params) and p.seed == 7
    assert pipeline.run_params(p, "ga_x").unlearn_epochs == 1.0


def test_the_profiles_own_runs_keep_their_settings(params):
    """The cache key of an unlearned model hashes these settings: the per-run training keys must not enter them."""
    npo = pipeline.unlearning_settings(params, "npo")
    assert npo == LOSS_OF_NPO
    assert not any(k.startswith("unlearn_") for k in npo)
    assert pipeline.unlearning_settings(params, "npo_eo") == {**LOSS_OF_NPO, "lambda_f": 1.0, "lambda_r": -0.25}
    assert config.params_hash(npo) == config.params_hash(dict(LOSS_OF_NPO))
    # every run of the profile: settings without training keys, only what its method uses
    for run in dict.fromkeys([*params.methods, *params.method_settings]):
        settings = pipeline.unlearning_settings(params, run)
        assert not any(k.startswith("unlearn_") for k in settings), run
        assert "ref_model" not in settings


def test_the_rouge_trajectory_of_a_densely_kept_run_is_decoded_at_the_profiles_steps(monkeypatch, tmp_path):
    """A run keeping every step for early stopping is decoded in notebook 02 only every ``unlearn_save_every`` steps
    of the profile, at each epoch's end and at its last step."""
    params = config.Params.load("default").replace(unlearn_save_every=5)
    kept = [(step, tmp_path / f"step-{step:05d}") for step in range(1, 16)]  # 7 steps per epoch, 15 kept
    decoded = []
    for where in (pipeline.runs, saved):  # the package face, and the module whose runs.sparse_steps reads them
        monkeypatch.setattr(where, "trajectory_steps", lambda profile, run: kept)
        monkeypatch.setattr(where, "saved_recipe", lambda folder: {"epoch": int(folder.name[5:]) / 7})
    monkeypatch.setattr(pipeline.models, "load_model", lambda folder, **how: (int(folder.name[5:]), None, None))

    def answers(model, tokenizer, template, questions, max_new_tokens, batch_size):
        decoded.append(model)
        return ["x"] * len(questions)

    monkeypatch.setattr(pipeline.unlearn, "greedy_answers", answers)
    source = pipeline.corpus(params.replace(synthetic_authors=10))
    along = pipeline.forget_rouge_along(params, "gd", source, splits=("forget",))
    assert [r["step"] for r in along] == [5, 7, 10, 14, 15] == sorted(set(decoded))
