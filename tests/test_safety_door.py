"""The one check before any kernel (#59 items 7 and 8, docs/threat-model.md): a received model folder, profile,
seed folder or checkpoint that is wrong is refused in one line per problem, every problem at once, exit 2, before a
kernel starts or a file is written; a profile reads only the environment variables the workbook documents; run
names that differ only in case are refused, at every command that reads them."""

import json
import struct
from pathlib import Path

import pytest
import torch
from unlearnkit import config, models, paths, runner, training
from unlearnkit.data.synthetic import generate_synthetic_tofu

pytestmark = pytest.mark.usefixtures("tiny_model_threads")


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    monkeypatch.setenv(models.STATED_TEMPLATES_VARIABLE, "{}")
    return tmp_path


@pytest.fixture()
def tofu_folder(store):
    generate_synthetic_tofu(store / "tofu", n_authors=10, questions_per_author=10, seed=0)
    return store / "tofu"


def _weights(folder: Path) -> Path:
    return next(folder.glob("*.safetensors"))


def _lying_header(folder: Path) -> None:
    """The header claims a tensor far past the file's end."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [10**6, 10**6], "data_offsets": [0, 4 * 10**12]}}).encode()
    _weights(folder).write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)


def _symlinked_weights(folder: Path) -> None:
    target = folder.parent / "elsewhere.safetensors"
    _weights(folder).rename(target)
    (folder / "model.safetensors").symlink_to("/dev/zero")


def _bin_and_dummy(folder: Path) -> None:
    """The weights pickled in pytorch_model.bin, beside a model.safetensors that holds none."""
    weights = _weights(folder)
    from safetensors.torch import load_file

    torch.save(load_file(str(weights)), folder / "pytorch_model.bin")
    weights.write_bytes(b"not a safetensors file")


def _bin_and_empty(folder: Path) -> None:
    """A well-formed model.safetensors that holds no tensor of the model, beside pytorch_model.bin."""
    from safetensors.torch import load_file, save_file

    weights = _weights(folder)
    torch.save(load_file(str(weights)), folder / "pytorch_model.bin")
    save_file({"dummy": torch.zeros(1)}, str(weights))


def _malformed_tokenizer(folder: Path) -> None:
    (folder / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": 3')


def _absurd_sizes(folder: Path) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(vocab_size=10**9, intermediate_size=10**9)
    (folder / "config.json").write_text(json.dumps(cfg))


def _absurd_positions(folder: Path) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(max_position_embeddings=10**9, num_hidden_layers=10**6)
    (folder / "config.json").write_text(json.dumps(cfg))


def _tokenizer_auto_map(folder: Path) -> None:
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["auto_map"] = {"AutoTokenizer": ["evil.EvilTokenizer", None]}
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))


def _deep_config(folder: Path) -> None:
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)


def _deep_tokenizer_config(folder: Path) -> None:
    (folder / "tokenizer_config.json").write_text('{"model_max_length": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _deep_header(folder: Path) -> None:
    """A safetensors header that is JSON nested 100,000 deep (its length and the file's agree)."""
    header = b"[" * 100_000 + b"]" * 100_000
    _weights(folder).write_bytes(struct.pack("<Q", len(header)) + header)


BAD_FOLDERS = {
    "lying header": (_lying_header, "model.safetensors: its header", 1),
    "symlinked weights": (_symlinked_weights, "model.safetensors is a symlink", 1),
    ".bin and a dummy .safetensors": (_bin_and_dummy, "model.safetensors: not a safetensors file", 1),
    ".bin and an empty .safetensors": (_bin_and_empty, "vocab_size", 1),
    "malformed tokenizer": (_malformed_tokenizer, "tokenizer.json does not parse", 1),
    "absurd sizes": (_absurd_sizes, "vocab_size 1000000000", 1),
    "absurd positions": (_absurd_positions, "max_position_embeddings 1000000000", 2),
    "tokenizer auto_map": (_tokenizer_auto_map, "tokenizer_config.json names code to run (auto_map)", 1),
    # nested past the JSON parser's stack (a RecursionError's traceback on 59fcf67)
    "config.json nested 100,000 deep": (_deep_config, "config.json does not parse (nested too deeply to read)", 1),
    "tokenizer_config.json nested 100,000 deep": (
        _deep_tokenizer_config, "tokenizer_config.json does not parse (nested too deeply to read)", 1),
    "a safetensors header nested 100,000 deep": (_deep_header, "model.safetensors: not a safetensors file", 1),
}


@pytest.fixture()
def model_folder(tiny_model, tiny_tokenizer, store):
    return models.save_plain_model(tiny_model, tiny_tokenizer, store / "received")


def _main(argv, capsys):
    with pytest.raises(SystemExit) as e:
        raise SystemExit(runner.main(argv))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err.strip()


def _one_line_each(err: str, count: int) -> None:
    assert "Traceback" not in err and len(err.splitlines()) == count, err


@pytest.mark.parametrize("case", BAD_FOLDERS)
def test_a_bad_model_folder_is_refused_at_the_eval_door_in_one_line_before_any_kernel(
        case, model_folder, tofu_folder, monkeypatch, capsys):
    spoil, message, lines = BAD_FOLDERS[case]
    spoil(model_folder)
    started = []
    monkeypatch.setattr(runner.evaluate, "run_notebook", lambda *a, **kw: started.append(kw))
    code, _, err = _main(["eval", "--profile", "smoke", "--model", str(model_folder), "--data", str(tofu_folder),
                          "--template", "phi", "--suite", "tofu"], capsys)
    assert code == 2 and not started, err
    assert message in err and "received" in err
    _one_line_each(err, lines)


@pytest.mark.parametrize("case", BAD_FOLDERS)
def test_a_bad_model_folder_in_a_profile_is_refused_before_any_kernel(case, model_folder, monkeypatch, capsys):
    spoil, message, lines = BAD_FOLDERS[case]
    spoil(model_folder)
    started = []
    monkeypatch.setattr(runner.cli, "run", lambda *a, **kw: started.append(a))
    code, _, err = _main(["01", "--profile", "smoke", "--set", f"model={model_folder}"], capsys)
    assert code == 2 and not started, err
    assert message in err
    _one_line_each(err, lines)


def test_every_problem_of_a_model_folder_is_named_at_once_one_line_each(model_folder, tofu_folder, monkeypatch,
                                                                        capsys):
    import shutil

    reference = model_folder.with_name("reference")
    shutil.copytree(model_folder, reference)
    _lying_header(reference)
    for spoil in (_malformed_tokenizer, _absurd_sizes, _tokenizer_auto_map):
        spoil(model_folder)
    started = []
    monkeypatch.setattr(runner.evaluate, "run_notebook", lambda *a, **kw: started.append(kw))
    code, _, err = _main(["eval", "--profile", "smoke", "--model", str(model_folder), "--data", str(tofu_folder),
                          "--reference", str(reference), "--template", "phi", "--suite", "tofu"], capsys)
    assert code == 2 and not started
    _one_line_each(err, 4)
    for message in ("tokenizer.json does not parse", "vocab_size 1000000000",
                    "tokenizer_config.json names code to run", "model.safetensors: its header"):
        assert message in err
    assert [line.split()[0] for line in err.splitlines()] == ["model"] * 3 + ["reference"]


def test_a_runs_model_and_data_problems_are_named_together(model_folder, tofu_folder, monkeypatch, capsys):
    _tokenizer_auto_map(model_folder)
    (tofu_folder / "forget01.json").write_text("")
    started = []
    monkeypatch.setattr(runner.cli, "run", lambda *a, **kw: started.append(a))
    code, _, err = _main(["01", "--profile", "smoke", "--set", f"model={model_folder}",
                          "--set", f"data_source={tofu_folder}"], capsys)
    assert code == 2 and not started
    _one_line_each(err, 2)
    assert "auto_map" in err.splitlines()[0] and "forget01.json: no rows" in err.splitlines()[1]


def test_a_sound_folder_passes_the_door(model_folder, tofu_folder, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(runner.evaluate, "run_notebook", lambda *a, **kw: started.append(kw))
    code, out, err = _main(["eval", "--profile", "smoke", "--model", str(model_folder), "--data", str(tofu_folder),
                            "--template", "phi", "--suite", "tofu"], capsys)
    assert code == 0 and started, err
    assert models.folder_problems(model_folder) == []


def test_a_profile_nested_100000_deep_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    import shutil

    shutil.copy(paths.PARAMS / "default.yaml", tmp_path / "default.yaml")
    (tmp_path / "deep.yaml").write_text("beta: " + "[" * 100_000 + "]" * 100_000 + "\n")
    monkeypatch.setattr(paths, "PARAMS", tmp_path)
    code, _, err = _main(["params", "--profile", "deep"], capsys)
    assert code == 2 and "deep.yaml" in err and "nested" in err
    _one_line_each(err, 1)


def test_a_seed_folder_that_is_a_symlink_out_of_the_store_is_refused_by_figures_in_one_line(store, capsys):
    elsewhere = store / "elsewhere"
    (elsewhere / "figure-data").mkdir(parents=True)
    (store / "runs" / "smoke").mkdir(parents=True)
    (store / "runs" / "smoke" / "seed-0").symlink_to(elsewhere)
    code, _, err = _main(["figures", "--profile", "smoke"], capsys)
    assert code == 2 and ("outside" in err or "symlink" in err) and "seed-0" in err  # the store door (paths.no_links_below) or figures
    _one_line_each(err, 1)
    assert [p.name for p in elsewhere.iterdir()] == ["figure-data"]


@pytest.mark.parametrize("profile", ["smoke", "default"])
def test_aggregate_with_no_seeds_says_so_in_one_line_before_any_kernel(store, monkeypatch, capsys, profile):
    """The default profile's too: with the store elsewhere, the committed results/ are not its seeds (#59 point 5)."""
    started = []
    monkeypatch.setattr(runner.seeds, "run", lambda *a, **kw: started.append(a))
    code, _, err = _main(["aggregate", "--profile", profile], capsys)
    assert code == 2 and not started
    assert f"no training seed of profile {profile!r}" in err and f"runner seed 0 --profile {profile}" in err
    _one_line_each(err, 1)


def test_an_optimizer_state_the_weights_only_loader_refuses_is_passed_over(killed_run, writing_pickle):
    out = killed_run.out
    checkpoint = training.latest_checkpoint(out)
    writing_pickle.plant(checkpoint / "optimizer.bin")  # what torch.load(weights_only=True) refuses
    killed_run.resume()  # trains from the start instead of aborting
    assert not writing_pickle.ran
    newest = training.latest_checkpoint(out)
    writing_pickle.plant(newest / "optimizer.bin")
    assert training.latest_checkpoint(out) not in (newest, None)  # the one before it, whose states load
    assert not writing_pickle.ran
    assert killed_run.history_steps() == list(range(1, 13))


@pytest.fixture()
def adapter_folder(model_folder):
    """A peft adapter folder beside the received model, naming it as its base."""
    from safetensors.torch import save_file

    adapter = model_folder.with_name("adapter")
    adapter.mkdir()
    save_file({"base_model.model.lm_head.lora_A.weight": torch.zeros(2, 64)}, str(adapter / "adapter_model.safetensors"))
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA",
                                                             "base_model_name_or_path": str(model_folder)}))
    return adapter


BAD_ADAPTERS = {
    "not JSON": ('{"base_model_name_or_path": ', "adapter_config.json does not parse (JSONDecodeError)"),
    "a list": ("[]", "names no base_model_name_or_path in adapter_config.json"),
    "a base that is not a string": ('{"base_model_name_or_path": {"a": 1}}',
                                    "names no base_model_name_or_path in adapter_config.json"),
    "nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "adapter_config.json does not parse (nested too deeply"),
    "its own base": (None, "is an adapter too"),
}


@pytest.mark.parametrize("case", BAD_ADAPTERS)
def test_a_malformed_adapter_config_is_refused_at_the_eval_door_in_one_line(case, adapter_folder, tofu_folder,
                                                                           monkeypatch, capsys):
    text, message = BAD_ADAPTERS[case]
    models.check_source(str(adapter_folder))  # a sound adapter passes
    config_file = adapter_folder / "adapter_config.json"
    config_file.write_text(json.dumps({"base_model_name_or_path": str(adapter_folder)}) if text is None else text)
    started = []
    monkeypatch.setattr(runner.evaluate, "run_notebook", lambda *a, **kw: started.append(kw))
    code, _, err = _main(["eval", "--profile", "smoke", "--model", str(adapter_folder), "--data", str(tofu_folder),
                          "--template", "phi", "--suite", "tofu"], capsys)
    assert code == 2 and not started, err
    assert message in err and err.startswith("model ")
    _one_line_each(err, 1)


def test_a_set_value_nested_100000_deep_is_refused_in_one_line(capsys):
    code, out, err = _main(["params", "--profile", "smoke", "--set", "beta=" + "[" * 100_000 + "]" * 100_000], capsys)
    assert code == 2 and not out and "--set beta: its value is nested too deeply to read" in err
    _one_line_each(err, 1)


SECRET = "s3cr3t-v4lue-never-shown"


@pytest.mark.parametrize("value", ["env:UNLEARNKIT_TEST_SECRET", "env:UNLEARNKIT_TEST_SECRET|synthetic"])
def test_a_profile_reads_no_environment_variable_the_workbook_does_not_document(value, monkeypatch, capsys):
    monkeypatch.setenv("UNLEARNKIT_TEST_SECRET", SECRET)
    started = []
    monkeypatch.setattr(runner.cli, "run", lambda *a, **kw: started.append(a))
    code, out, err = _main(["01", "--profile", "smoke", "--set", f"data_source={value}"], capsys)
    assert code == 2 and not started
    assert SECRET not in out + err and "UNLEARNKIT_TEST_SECRET" in err and "UNLEARNKIT_TOFU_DIR" in err
    _one_line_each(err, 1)
    with pytest.raises(ValueError, match="not one the workbook documents"):
        paths.from_environment(value)


def test_a_model_path_in_a_profile_expands_no_variable(monkeypatch, capsys):
    monkeypatch.setenv("UNLEARNKIT_TEST_SECRET", SECRET)
    started = []
    monkeypatch.setattr(runner.cli, "run", lambda *a, **kw: started.append(a))
    code, out, err = _main(["01", "--profile", "smoke", "--set", "model=./$UNLEARNKIT_TEST_SECRET/x"], capsys)
    assert code == 2 and not started
    assert SECRET not in out + err and "$UNLEARNKIT_TEST_SECRET" in err


def test_the_documented_variables_still_work(tmp_path, monkeypatch):
    monkeypatch.setenv("UNLEARNKIT_TOFU_DIR", str(tmp_path))
    assert paths.from_environment("env:UNLEARNKIT_TOFU_DIR|synthetic") == str(tmp_path)
    monkeypatch.delenv("UNLEARNKIT_TOFU_DIR")
    assert paths.from_environment("env:UNLEARNKIT_TOFU_DIR|synthetic") == "synthetic"


SMOKE_RUNS = config.Params.load("smoke").method_settings


@pytest.mark.parametrize("overrides", [
    [f"method_settings={json.dumps({**SMOKE_RUNS, 'GA': {'method': 'ga'}})}", "methods=[GA, ga]"],
    [f"method_settings={json.dumps({**SMOKE_RUNS, 'Npo_mild': {'method': 'npo'}, 'npo_MILD': {'method': 'npo'}})}"],
])
def test_run_names_equal_up_to_case_are_refused(overrides, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(runner.cli, "run", lambda *a, **kw: started.append(a))
    sets = [w for o in overrides for w in ("--set", o)]
    code, _, err = _main(["01", "--profile", "smoke", *sets], capsys)
    assert code == 2 and not started and "differ only in case" in err
    _one_line_each(err, 1)
    code, _, err = _main(["params", "--profile", "smoke", *sets], capsys)
    assert code == 2 and "differ only in case" in err


def test_runner_params_checks_run_names_as_plan_does(capsys):
    code, out, err = _main(["params", "--profile", "smoke", "--set", "methods=[../x]"], capsys)
    assert code == 2 and "is not a name" in err and not out
    _one_line_each(err, 1)
    code, out, _ = _main(["params", "--profile", "smoke"], capsys)
    assert code == 0 and "beta:" in out


def test_a_saved_model_a_parameter_names_is_checked_against_the_store_naming_its_notebook(store, monkeypatch, capsys):
    """Issue #60 point 8: notebook 05 run alone after 01 went to the Hub for hp_model 'unlearned-npo' (notebook 02
    saves it) and failed after 37 s; the door now names the missing model and the notebook that makes it, and lets
    a run that makes it first (02 before 05 in 'all') or a model that is there go on."""
    from unlearnkit.runner import door

    started = []
    monkeypatch.setattr(runner.cli, "run", lambda *a, **kw: started.append(a))
    code, _, err = _main(["05", "--profile", "smoke", "--set", "hp_model=unlearned-npo"], capsys)
    assert code == 2 and not started
    _one_line_each(err, 1)
    assert err.startswith("hp_model: no saved model 'unlearned-npo'") and "run notebook 02" in err
    params = config.Params.load("smoke").replace(hp_model="unlearned-npo")  # smoke's own is 'regime' (#56 item 5)
    assert door.problems(params, [door.saved_models(["02_unlearning", "05_probabilistic_bounds"])]) == []
    assert door.problems(params.replace(hp_model="some-org/some-model"), [door.saved_models(["05_probabilistic_bounds"])]) == []
    assert door.problems(params, [door.saved_models(["01_tofu_finetune"])]) == []  # 01 reads no hp_model
