"""Profiles, typed parameters and the notebook runner: layered profiles merge, parameters are typed, source
notebooks are clean and declare the keys they read, and bad input is refused with a clear message."""

from __future__ import annotations

import json

import pytest
from unlearnkit import config, paths, runner


def test_source_notebooks_are_clean_and_declare_the_keys_they_read():
    notebooks = runner.source_notebooks()
    assert [p.stem[:2] for p in notebooks][:3] == ["00", "01", "02"]
    for path in notebooks:
        nb = json.loads(path.read_text())
        assert not runner.notebook_outputs(path), path.name
        assert sum("parameters" in c.get("metadata", {}).get("tags", []) for c in nb["cells"]) == 1, path.name
        assert runner.parameters_in_sync(path), f"{path.name}: run 'make sync-params'"
        declared = runner.declared_keys(nb)
        assert declared[0] == "profile" and len(declared) < len(config.PARAMETER_NAMES) // 2, path.name


def test_every_profile_loads_typed_and_holds_only_its_differences():
    default = config.load_profile("default")
    assert list(default) == list(config.PARAMETER_NAMES)
    for profile in config.profile_names():
        params = config.Params.load(profile)
        assert params.profile == profile and dict(params).keys() == default.keys()
        base = config.profile_base(profile)
        if base is None:
            continue
        layer = config.profile_layer(profile)
        merged_base = config.load_profile(base)
        repeated = [k for k, v in layer.items() if k != "extends" and merged_base[k] == v]
        assert not repeated, f"{profile}.yaml repeats what {base} already says: {repeated}"


def test_a_profile_extends_another_and_overrides_win(tmp_path, monkeypatch):
    for f in paths.PARAMS.glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "small-paper.yaml").write_text("extends: paper\nn_samples: 16\n")
    monkeypatch.setattr(paths, "PARAMS", tmp_path)
    params = config.Params.load("small-paper", seed=3)
    assert params.model == "microsoft/phi-1_5" and params.n_samples == 16 and params.seed == 3
    assert params.eval_batch_size == config.Params.load("paper").eval_batch_size
    (tmp_path / "loop.yaml").write_text("extends: loop\n")
    with pytest.raises(ValueError, match="loops"):
        config.load_profile("loop")
    (tmp_path / "typo.yaml").write_text("n_sample: 16\n")
    with pytest.raises(ValueError, match="n_sample.*default.yaml"):
        config.load_profile("typo")


def test_parameters_are_typed_and_unknown_ones_refused():
    with pytest.raises(TypeError, match="'n_samples'.*expected int"):
        config.Params.load("default", n_samples="many")
    with pytest.raises(TypeError, match="'hp_affirmative_prefix'"):
        config.Params.load("default", hp_affirmative_prefix=1)
    with pytest.raises(KeyError, match="n_sample"):
        config.as_params({"n_sample": 3})
    params = config.as_params({"profile": "smoke", "seed": 5})
    assert params.seed == 5 and params.n_samples == config.Params.load("smoke").n_samples
    assert params["seed"] == 5 and params.get("no such key", "fallback") == "fallback"
    with pytest.raises(KeyError, match="no parameter"):
        params["no such key"]
    assert params.replace(seed=6).seed == 6 and params.seed == 5


def test_notebook_params_take_the_profile_and_what_the_cell_changed():
    defaults = config.load_profile("default")
    smoke = config.Params.load("smoke")
    # as the runner injects them: the profile's values of the declared keys
    assert config.notebook_params({"profile": "smoke", "n_samples": smoke.n_samples}) == smoke
    # opened in Jupyter with the profile changed: untouched default values give way to the profile's
    assert config.notebook_params({"profile": "smoke", "n_samples": defaults["n_samples"]}).n_samples == smoke.n_samples
    # an edited value wins
    assert config.notebook_params({"profile": "smoke", "n_samples": 3}).n_samples == 3
    assert config.notebook_params({}).profile == "default"


def test_the_runner_injects_the_declared_keys_of_the_merged_profile():
    notebook = runner.find_notebook("02")
    injected = runner.injected_parameters(notebook, "smoke", {"method": "npo", "beta": 0.05})
    declared = runner.declared_keys(json.loads(notebook.read_text()))
    assert set(injected) == set(declared) | {"method", "beta"}
    assert injected["profile"] == "smoke" and injected["method"] == "npo" and injected["beta"] == 0.05
    assert injected["seed"] == config.Params.load("smoke").seed


def test_unknown_notebook_and_profile_are_refused():
    with pytest.raises(SystemExit, match="no single notebook matches '42'"):
        runner.find_notebook("42")
    with pytest.raises(ValueError, match="unknown profile 'huge'.*default"):
        config.load_profile("huge")
    with pytest.raises(SystemExit, match="unknown profile 'huge'"):
        runner.main(["params", "--profile", "huge"])
    with pytest.raises(SystemExit, match="key=value"):
        runner.main(["params", "--set", "seed"])


def test_the_runner_prints_a_merged_profile(capsys):
    import yaml

    assert runner.main(["params", "--profile", "smoke", "--set", "seed=4"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == dict(config.Params.load("smoke", seed=4))


def test_parameters_source_refuses_a_comment_papermill_cannot_parse(tmp_path, monkeypatch):
    (tmp_path / "default.yaml").write_text("lr: 0.1   # step size (x = 2)\n")
    monkeypatch.setattr(paths, "PARAMS", tmp_path)
    with pytest.raises(ValueError, match="holds ' = '"):
        runner.parameters_source()
