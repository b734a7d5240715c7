"""The registry of unlearning methods: what it derives (METHODS, METHOD_PARAMETERS, REFERENCE_METHODS, IDK_METHODS,
CAPPABLE_METHODS), what each method declares it sends through the trained and the reference model (held to what its
terms do), every method in the training loop, and the profile's runs of the new methods."""

from __future__ import annotations

import pytest
import torch
from conftest import LOSS_WEIGHTS
from devices import same
from method_checks import N
from unlearnkit import config, pipeline, training
from unlearnkit import unlearning as ul
from unlearnkit.unlearning.registry import Method, Option, declared, register

ALL_PARTS_SETTINGS = [
    {"method": m} for m in ul.METHODS
] + [
    {"method": "npo", "npo_retain_term": False}, {"method": "dpo", "dpo_retain_term": False},
    {"method": "undial", "undial_retain_term": True}, {"method": "undial", "undial_positions": "all_ou"},
    {"method": "ceu", "lambda_f": 1.0, "lambda_r": -0.25}, {"method": "simnpo", "lambda_f": 1.0},
    {"method": "ga", "lambda_r": -0.25}, {"method": "altpo", "lambda_f": 1.0, "lambda_r": -0.25},
]


@pytest.fixture(scope="module")
def examples(make_method_batch):
    """Encoded, not collated: every batch part (forget_idk, forget_alt) for every method."""
    return make_method_batch(with_idk=True, alternates=True, collate=False)


def test_the_constants_are_read_off_the_registry():
    # the methods of the workbook's notebooks, in their order (a method added later comes after them)
    assert ul.METHODS[:13] == ("ga", "gd", "kl", "idk", "dpo", "npo", "rmu", "simnpo", "wga", "satimp", "ceu", "undial",
                               "altpo")
    assert ul.REFERENCE_METHODS[:6] == ("kl", "dpo", "npo", "rmu", "undial", "altpo")
    assert ul.IDK_METHODS[:2] == ("idk", "dpo") and ul.CAPPABLE_METHODS[:3] == ("ga", "gd", "kl")
    # the first seven keep their parameters, in their order
    assert {m: ul.METHOD_PARAMETERS[m] for m in ul.METHODS[:7]} == {
        "ga": ("cap_delta", "cap_on"), "gd": ("retain_weight", "cap_delta", "cap_on"),
        "kl": ("ref_model", "retain_weight", "cap_delta", "cap_on"), "idk": ("retain_weight",),
        "dpo": ("ref_model", "beta", "retain_weight", "dpo_retain_term"),
        "npo": ("ref_model", "beta", "retain_weight", "npo_retain_term"),
        "rmu": ("ref_model", "retain_weight", "rmu_layer", "rmu_steering_coef", "rmu_seed", "rmu_answer_tokens_only")}
    for name, method in ul.REGISTRY.items():
        assert method.name == name and method.summary and set(method.batch_parts) <= set(ul.BATCH_PARTS)
    assert {m for m, spec in ul.REGISTRY.items() if "forget_alt" in spec.batch_parts} == {"altpo"}


def test_a_method_must_declare_itself_consistently():
    def term(step):
        return torch.zeros(())

    with pytest.raises(ValueError, match="ref_model is a parameter iff it needs"):
        register(Method("odd", "x", term, parameters=("ref_model",)))
    with pytest.raises(ValueError, match="retain_weight is a parameter iff"):
        register(Method("odd", "x", term, retain=term))
    with pytest.raises(ValueError, match="batch parts must be among"):
        register(Method("odd", "x", term, batch_parts=("forget_paraphrase",)))
    with pytest.raises(ValueError, match="registered already"):
        register(Method("npo", "x", term))
    with pytest.raises(ValueError, match="redeclares option 'beta'"):
        register(Method("odd", "x", term, parameters=("beta",), options=(Option("beta", 1.0),)))
    assert "odd" not in ul.REGISTRY


def test_options_are_checked_and_unknown_ones_refused():
    with pytest.raises(TypeError, match="unknown parameter.*simnpo_gamma"):
        ul.UnlearningLoss("simnpo", simnpo_gamma=1.0, **LOSS_WEIGHTS)
    with pytest.raises(ValueError, match="wga_beta must be >= 0"):
        ul.UnlearningLoss("wga", wga_beta=-1.0, **LOSS_WEIGHTS)
    with pytest.warns(UserWarning, match="method 'wga' ignores satimp_beta1, undial_beta"):
        ul.UnlearningLoss("wga", satimp_beta1=2.0, undial_beta=3.0, **LOSS_WEIGHTS)
    with pytest.raises(ValueError, match="valid methods: ga, gd, kl, idk, dpo, npo, rmu, simnpo, wga, satimp, ceu, "
                                         "undial, altpo"):
        ul.UnlearningLoss("npo2", **LOSS_WEIGHTS)


# --------------------------------------------------------------------------- one home per parameter (#35)

#: Options whose default in the registry may differ from default.yaml's value, with why. Empty: every option that is
#: a profile key has the default profile's value as its default.
DEFAULTS_APART: dict[str, str] = {}


def test_every_option_that_is_a_profile_key_has_the_profiles_default_and_no_rule_of_its_own():
    defaults = config.load_profile("default")
    shared = [name for name in ul.OPTIONS if name in config.PARAMETER_NAMES]
    assert shared, "no registry option is a profile key"
    for name in shared:
        option = ul.OPTIONS[name]
        if name not in DEFAULTS_APART:
            assert option.default == defaults[name], f"{name}: registry {option.default!r}, default.yaml {defaults[name]!r}"
        # one rule: the profile key's (an option may restate it, never differ from it)
        assert option.rule is config.CONSTRAINTS.get(name, option.constraint), name
        if option.constraint is not None and name in config.CONSTRAINTS:
            assert option.constraint.text == config.CONSTRAINTS[name].text, name
        # read off the key's one declaration (#49): its help, rule, type and the default profile's value
        assert option == declared(name) and option.doc == config.HELP[name], name
    assert ul.OPTIONS["ceu_ignore_first"].convert is int and ul.OPTIONS["cap_delta"].convert is None
    with pytest.raises(ValueError, match="option 'undial_positions': the library takes answer, all, the profile key "
                                         "one of answer, all_ou"):
        declared("undial_positions", ("answer", "all"))
    # the disagreements found before (#35): cap_delta took any finite number, retain_weight anything
    with pytest.raises(ValueError, match="cap_delta must be null or > 0"):
        ul.UnlearningLoss("ga", cap_delta=-1.0, **LOSS_WEIGHTS)
    with pytest.raises(ValueError, match="retain_weight must be >= 0"):
        ul.UnlearningLoss("gd", retain_weight=-0.5, **LOSS_WEIGHTS)


def test_the_unlearning_keys_are_read_off_the_registry_and_method_settings_values_are_checked():
    assert pipeline.UNLEARN_LOSS_KEYS == tuple(k for k in config.PARAMETER_NAMES
                                               if k in ul.OPTIONS or k in ul.COMMON_PARAMETERS)
    assert {"beta", "rmu_layer", "altpo_temperature", "lambda_f"} <= set(pipeline.UNLEARN_LOSS_KEYS)
    smoke = config.Params.load("smoke")
    for settings, message in (({"method": "gd", "beta": -1}, r"\['beta'\] is -1; it must be > 0"),
                              ({"method": "npo", "npo_retain_term": "yes"}, "it must be true or false"),
                              ({"method": "npo", "entropy_positions": "some"}, "one of answer, all, sampled"),
                              ({"method": "gd", "unlearn_lr": 0}, "unlearn_lr'\] is 0; it must be > 0")):
        bad = smoke.replace(method_settings={**smoke.method_settings, "x": settings})
        with pytest.raises(ValueError, match=message):
            pipeline.check_params(bad)
    # the table notebook 02 shows is the registry's: a method registered is a row
    table = ul.method_table()
    assert list(table.index) == list(ul.REGISTRY) and table.loc["altpo", "paper"] == "Mekala et al. 2024"


def test_every_parameter_has_its_one_home_on_its_field():
    from dataclasses import fields

    from unlearnkit import runner

    for f in fields(config.Params):
        assert {"section", "help", "constraint"} <= set(f.metadata), f.name
    assert config.CONSTRAINTS == {f.name: f.metadata["constraint"] for f in fields(config.Params)
                                  if f.metadata["constraint"] is not None}
    assert sum(map(len, config.parameter_sections().values())) == len(config.PARAMETER_NAMES)
    # default.yaml's comments are written from the fields' help (make sync-params), and held to it
    assert (config.paths.PARAMS / "default.yaml").read_text() == runner.default_yaml_text()


@pytest.mark.parametrize("settings", ALL_PARTS_SETTINGS, ids=lambda s: "-".join(f"{v}" for v in s.values()))
def test_the_declared_step_parts_are_what_each_loss_sends_through_each_model(settings, tiny_model, examples,
                                                                             tiny_tokenizer):
    batch = ul.collate_pairs(examples, tiny_tokenizer.pad_token_id)
    reference = ul.frozen_reference(tiny_model) if settings["method"] in ul.REFERENCE_METHODS else None
    if settings.get("lambda_f") and settings["method"] == "altpo":
        settings = {**settings, "entropy_positions": "sampled"}
        batch["forget_sampled"] = {k: v.clone() for k, v in batch["forget"].items()}  # stands in for the samples
    seen: dict[str, list[str]] = {"model": [], "reference": []}

    def recorder(name):
        def hook(module, args, kwargs):
            seen[name] += [key for key, sub in batch.items() if sub["input_ids"] is kwargs["input_ids"]]
        return hook

    tiny_model.register_forward_pre_hook(recorder("model"), with_kwargs=True)
    if reference is not None:
        reference.register_forward_pre_hook(recorder("reference"), with_kwargs=True)
    loss, _ = ul.UnlearningLoss(ref_model=reference, **{**LOSS_WEIGHTS, **settings})(tiny_model, batch)
    assert torch.isfinite(loss)
    on_model, on_reference = ul.step_parts(settings)
    assert sorted(seen["model"]) == sorted(on_model)
    assert sorted(seen["reference"]) == sorted(on_reference)


@pytest.mark.parametrize("method", ul.METHODS)
def test_every_method_trains_in_the_training_loop(method, tiny_model, examples, tiny_tokenizer, tmp_path):
    reference = ul.frozen_reference(tiny_model) if method in ul.REFERENCE_METHODS else None
    loss = ul.UnlearningLoss(method, ref_model=reference, **LOSS_WEIGHTS)
    before = [p.detach().clone() for p in tiny_model.parameters()]
    cfg = training.TrainConfig(output_dir=tmp_path, max_steps=1, batch_size=N, lr=1e-3, progress=False)
    result = training.train(tiny_model, examples, cfg, lambda b: ul.collate_pairs(b, tiny_tokenizer.pad_token_id),
                            loss)
    assert result.steps == 1 and "forget_loss" in result.history[-1]
    assert ("retain_loss" in result.history[-1]) == loss.has_retain_term
    assert any(not same(a, p) for a, p in zip(before, tiny_model.parameters()))


def test_the_profiles_runs_of_the_new_methods():
    params = config.Params.load("default")
    assert params.methods[-6:] == ["simnpo", "wga", "satimp", "ceu", "undial", "altpo"]
    settings = {run: pipeline.unlearning_settings(params, run) for run in params.methods[-6:]}
    assert settings["simnpo"] == {"method": "simnpo", "forget_weight": 0.125, "retain_weight": 1.0, "lambda_f": 0.0,
                                  "lambda_r": 0.0, "simnpo_beta": 4.5, "simnpo_delta": 0.0}
    assert settings["satimp"]["forget_weight"] == 0.1 and settings["satimp"]["satimp_beta1"] == 5.0
    assert settings["wga"]["wga_beta"] == 1.0 and "retain_weight" not in settings["ceu"]
    assert settings["undial"]["undial_beta"] == 10.0 and settings["undial"]["undial_positions"] == "answer"
    assert settings["altpo"]["beta"] == params.beta and settings["altpo"]["altpo_n_alternates"] == 5
    for run, s in settings.items():
        assert set(s) - {"method"} <= set(ul.COMMON_PARAMETERS) | set(ul.METHOD_PARAMETERS[s["method"]]), run
        assert pipeline.run_params(params, run).unlearn_lr == params.unlearn_lr  # the shared schedule
        reference = "disable_adapters" if s["method"] in ul.REFERENCE_METHODS else None
        ul.UnlearningLoss(ref_model=reference, **s)  # every setting is a parameter of the loss
    # a run's own options reach its loss; a misspelt one is refused
    undial_all = pipeline.with_run(params, "undial_all", method="undial", undial_positions="all_ou",
                                   undial_retain_term=True)
    assert pipeline.unlearning_settings(undial_all, "undial_all")["undial_retain_term"] is True
    with pytest.raises(ValueError, match="unknown key"):
        pipeline.unlearning_settings(pipeline.with_run(params, "x", method="undial", undial_temperature=1), "x")
