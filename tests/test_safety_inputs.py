"""A suite of attacks (#46, docs/threat-model.md): what a received run folder, recipe, checkpoint, model folder,
profile or notebook holds is data, and a bad input is refused in one line before any work. Each crafted input is
refused or rendered inert, and where it could run code a marker file proves nothing ran."""

import json
import os
import re

import nbformat
import pandas as pd
import pytest
import torch
from unlearnkit import config, models, paths, pipeline, report, runner, training
from unlearnkit.claims import render as claims

HOSTILE_HTML = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
HOSTILE_VALUE = "<img src=x onerror=alert('pwned')>"


def _executed(cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    return nb


def _active(page: str) -> list[str]:
    """Markup that would run: an event handler, a javascript: URL, a script carrying the planted payload."""
    found = [t for t in re.findall(r"<[a-zA-Z][^>]*\son\w+\s*=", page)
             if 'class="code-toggle"' not in t]  # the template's own show-code button
    found += re.findall(r"javascript:", page, re.I)
    found += [s for s in re.findall(r"<script[^>]*>(.*?)</script>", page, re.S) if "pwned" in s]
    found += re.findall(r"<iframe|<object|<embed", page, re.I)
    return found


def test_a_report_from_hostile_notebooks_and_parameters_shows_text_and_keeps_the_colours(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke", probe_prefill_text=HOSTILE_VALUE)
    store = tmp_path / "runs" / "smoke" / "seed-0"
    store.mkdir(parents=True)
    table = claims.styled(pd.DataFrame({"claim": [HOSTILE_VALUE], "verdict": ["reproduced"]}))
    findings = nbformat.v4.new_code_cell("table", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": table.to_html(), "text/plain": "table"})])
    nbformat.write(_executed([nbformat.v4.new_markdown_cell("# Findings\n\n" + HOSTILE_HTML), findings]),
                   store / "10_findings.ipynb")
    hostile = nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": HOSTILE_HTML, "application/javascript": "document.title='pwned'",
                              "text/markdown": HOSTILE_HTML, "text/plain": "x"})])
    nbformat.write(_executed([nbformat.v4.new_markdown_cell("# Robustness\n\nThe prefill probe opens with "
                                                            "`probe_prefill_text`."), hostile]),
                   store / "08_robustness.ipynb")

    index = report.build(params, tmp_path / "report")
    pages = {p.name: p.read_text() for p in index.parent.glob("*.html")}
    assert set(pages) >= {"index.html", "08_robustness.html"}
    for name, page in pages.items():
        assert _active(page) == [], name
    # the parameter is shown as the text it is, and the Styler's cell text too
    assert "&lt;img src=x onerror=alert('pwned')&gt;" in pages["08_robustness.html"].replace("&#x27;", "'")
    assert "&lt;img src=x onerror" in pages["index.html"]
    # the findings table keeps its colours
    assert re.search(r"<style>[^<]*#T_\w+_row0_col1 \{background-color: #d9f0d3", pages["index.html"])


def test_a_stylers_style_block_keeps_colour_rules_only():
    css = ("#T_a_row0_col1 {background-color: #d9f0d3; text-align: left}\n"
           "#T_a_row1_col1 {background: url(http://example.com/x.png)}\n"
           "body {color: red}\n"
           "#T_a_row2_col1 {color: expression(alert(1))}")
    cleaned = report.clean_html(f"<style>{css}</style><table id='T_a'></table>")
    assert "#T_a_row0_col1 {background-color: #d9f0d3; text-align: left}" in cleaned
    assert "url(" not in cleaned and "body" not in cleaned and "expression" not in cleaned


def _notebook(path, code):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('profile = "smoke"', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_a_failed_run_keeps_the_last_good_executed_notebook_and_says_where_the_failed_one_is(tmp_path, monkeypatch):
    from papermill.exceptions import PapermillExecutionError
    from unlearnkit import runner, runs

    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke")
    good = runner.run_notebook(_notebook(tmp_path / "00_try.ipynb", "print('good')"), params, timeout=120)
    before = good.read_bytes()
    assert "good" in before.decode() and runs.executed_notebook(params, "00_try") == good
    with pytest.raises(PapermillExecutionError) as e:
        runner.run_notebook(_notebook(tmp_path / "00_try.ipynb", "raise ValueError('boom')"), params, timeout=120)
    assert good.read_bytes() == before  # the last good copy, untouched
    failed = runner.failed_copy(good)
    assert "boom" in failed.read_text() and "failed" in "".join(getattr(e.value, "__notes__", []))
    assert not list(good.parent.glob(".*.running.ipynb"))
    # issue #60 point 8: the failure line names the failed/ copy (not the seed's folder), and neither the lock file
    # nor the station log stays behind
    assert e.value.failed_copy == failed and runner.cli._failed_copy_of(e.value, params).endswith("failed/00_try.ipynb")
    assert not list(good.parent.glob(".*.lock")) and not list(good.parent.glob(".*.stations.*.jsonl"))
    runner.run_notebook(_notebook(tmp_path / "00_try.ipynb", "print('again')"), params, timeout=120)
    assert "again" in good.read_text() and not failed.exists()  # a later success supersedes the failure
    assert not list(good.parent.glob(".*.lock"))


def test_a_write_that_fails_leaves_the_good_file_and_no_temp_file(tmp_path, monkeypatch):
    import os

    from unlearnkit import runs

    path = tmp_path / "metrics.json"
    runs.atomic_write_text(path, '{"good": 1}')

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        runs.atomic_write_text(path, '{"new": 2}')
    assert path.read_text() == '{"good": 1}' and [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_a_truncated_or_altered_weight_file_is_not_a_saved_model_and_an_old_folder_gets_a_digest(
        tiny_model, tiny_tokenizer, template, tmp_path):
    import json
    import os

    from unlearnkit import models

    folder = models.save_model(tiny_model, tiny_tokenizer, tmp_path / "m", template)
    weights = folder / "model.safetensors"
    assert models.is_saved_model(folder) and json.loads((folder / models.DIGEST).read_text())["model.safetensors"]

    data = weights.read_bytes()
    os.utime(weights, ns=(1, 1))  # touched, not changed: hashed once, the record refreshed
    assert models.weights_intact(folder)
    assert json.loads((folder / models.DIGEST).read_text())["model.safetensors"]["mtime_ns"] == 1

    weights.write_bytes(data[:-100])  # truncated
    assert not models.is_saved_model(folder)
    weights.write_bytes(data[:-4] + b"\0\0\0\1")  # same size, altered
    assert not models.weights_intact(folder)

    weights.write_bytes(data)
    (folder / models.DIGEST).unlink()  # saved before digests existed: a digest is computed, no retrain
    assert models.weights_intact(folder) and (folder / models.DIGEST).exists()
    (folder / models.DIGEST).unlink()
    weights.write_bytes(data[:-100])  # ...unless the file is shorter than its own header says
    assert not models.weights_intact(folder) and not models.safetensors_complete(weights)


def test_a_corrupt_result_file_is_named_and_costs_only_its_own_claims(tmp_path, monkeypatch):
    from unlearnkit import results, runs
    from unlearnkit.claims import extractors as effects
    from unlearnkit.claims import registry

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    seed = results.SeedResults("smoke", 0)
    store = runs.store(seed.params)
    (store / runs.FINETUNE).mkdir(parents=True)
    (store / runs.FINETUNE / "metrics.json").write_text('{"target": ')  # truncated
    with pytest.raises(results.CorruptResult, match="01_tofu_finetune/metrics.json is not valid JSON"):
        seed.metrics(runs.FINETUNE)
    found = effects.effect_on_seed(registry.load()["setup.target_in_regime"], seed)
    assert found.outcome == "not testable" and "unreadable" in found.reason


def test_a_result_written_with_other_parameters_is_refused_in_one_line_naming_the_file(tmp_path, monkeypatch):
    from unlearnkit import runs

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    written = config.Params.load("smoke")
    runs.write_metrics(written, runs.FINETUNE, {"target": {"forget": {"rouge": 0.9}}})
    runs.write_metrics(written, runs.unlearning_notebook("ga"), {"ga": {"forget": {"rouge": 0.1}}})
    # Another worker count, and a study's extra entries in method_settings, still agree.
    extended = {**written.method_settings, "ga_study": {"method": "ga", "unlearn_lr": 0.1}}
    assert runs.read_metrics(written.replace(jobs=1, method_settings=extended), runs.FINETUNE)["target"]
    assert set(runs.unlearning_runs(written.replace(jobs=1))) == {"ga"}
    edited = written.replace(finetune_lr=written.finetune_lr * 2)  # the profile edited since notebook 01 ran
    for read in (lambda: runs.read_metrics(edited, runs.FINETUNE), lambda: runs.read_per_item(edited, runs.FINETUNE),
                 lambda: runs.unlearning_runs(edited)):
        runs.write_per_item(written, runs.FINETUNE, {"x": 1})
        with pytest.raises(runs.StoreDisagrees) as e:
            read()
        message = str(e.value)
        assert "metrics.json was written with finetune_lr=" in message and "rerun notebook" in message
        assert len(message.splitlines()) == 1
    changed = {**written.method_settings, "ga": {"method": "ga", "unlearn_lr": 0.5}}
    with pytest.raises(runs.StoreDisagrees, match="02_unlearning_ga/metrics.json was written with method_settings.ga="):
        runs.unlearning_runs(written.replace(method_settings=changed))


def test_a_process_of_a_runner_ends_when_the_runner_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    runner_stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    env = {**os.environ, "UNLEARNKIT_RUNNER_PID": str(runner_stand_in.pid)}
    # a kernel or worker: imports the library, then works for far longer than the test waits
    child = subprocess.Popen([sys.executable, "-c", "import unlearnkit, time; time.sleep(120)"], env=env)
    try:
        time.sleep(3)
        assert child.poll() is None  # alive while the runner is
        runner_stand_in.send_signal(signal.SIGKILL)  # no handler sees it
        runner_stand_in.wait()
        assert child.wait(timeout=30) == 70
    finally:
        for p in (runner_stand_in, child):
            if p.poll() is None:
                p.kill()


def test_two_runners_never_write_one_executed_notebook_at_once(tmp_path, monkeypatch, capsys):
    from unlearnkit import runner

    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke")
    source = _notebook(tmp_path / "00_try.ipynb", "print('good')")
    out = runner.run_notebook(source, params, timeout=120)
    with runner.output_lock(out):  # another runner, mid-run
        with pytest.raises(SystemExit) as e:
            runner.run_notebook(source, params, timeout=120)
    assert e.value.code == 2 and "another runner is writing" in capsys.readouterr().err
    assert not list(out.parent.glob(".*.stations.*.jsonl"))


def test_a_lock_taken_on_a_file_its_holder_removed_is_taken_again_on_the_new_one(tmp_path, monkeypatch, capsys):
    """The holder removes the lock file as it releases: a runner that opened the old file just before locks an
    unlinked file, which guards nothing once a third runner creates a new one. The lock is held on the live file."""
    import fcntl

    from unlearnkit.runner import execute

    out = tmp_path / "00_try.ipynb"
    path = out.with_name(".00_try.lock")
    real, calls = fcntl.flock, []

    def released_meanwhile(handle, how):  # the former holder unlinks the file between this runner's open and flock
        calls.append(how)
        if len(calls) == 1:
            path.unlink()
        return real(handle, how)

    monkeypatch.setattr(fcntl, "flock", released_meanwhile)
    with execute.output_lock(out) as held:
        assert len(calls) == 2 and path.exists()
        assert path.stat().st_ino == os.fstat(held.handle.fileno()).st_ino
        monkeypatch.setattr(fcntl, "flock", real)
        with pytest.raises(SystemExit) as refused:  # and it excludes the next runner
            execute.output_lock(out)
        assert refused.value.code == 2 and "another runner is writing" in capsys.readouterr().err
    assert not path.exists()


@pytest.mark.parametrize("argv, message", [
    (["params", "--profile", "smoke", "--set", "beta=[1, 2"], "is not a YAML value"),
    (["params", "--profile", "smoke", "--set", "profile=paper"], "chosen with --profile"),
    (["params", "--profile", "smoke", "--set", "beta=.inf"], "parameter 'beta'"),
    (["params", "--profile", "smoke", "--set", "n_samples=1000000000000"], "parameter 'n_samples'"),
    (["params", "--profile", "smoke", "--set", "synthetic_authors=100000000"], "parameter 'synthetic_authors'"),
    (["params", "--profile", "smoke", "--set", "synthetic_authors=401"], "it must be in [10, 400]"),
    (["params", "--profile", "smoke", "--set", "seed=-1"], "parameter 'seed'"),
    (["params", "--profile", "../params/smoke"], "is not a name"),
    (["seeds", "0-100000000000", "--profile", "smoke"], "at most 1000"),
])
def test_bad_input_is_refused_in_one_line_before_any_work(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        runner.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_a_profile_that_is_not_yaml_is_refused_in_one_line_naming_the_line(tmp_path, monkeypatch, capsys):
    import shutil

    from unlearnkit import paths

    shutil.copy(paths.PARAMS / "default.yaml", tmp_path / "default.yaml")
    (tmp_path / "broken.yaml").write_text("beta: 0.1\nseed: [1, 2\n")
    monkeypatch.setattr(paths, "PARAMS", tmp_path)
    with pytest.raises(SystemExit):
        runner.main(["params", "--profile", "broken"])
    err = capsys.readouterr().err.strip()
    assert "broken.yaml is not valid YAML at line" in err and "\n" not in err


def test_the_runner_is_offline_unless_asked_and_refuses_an_uncached_hub_model_before_any_kernel(monkeypatch, capsys):
    import os

    from unlearnkit import config

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with pytest.raises(SystemExit):
        runner.main(["params", "--profile", "smoke", "--set", "beta=[1"])
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # the runner set it, whatever the shell had
    with pytest.raises(SystemExit) as e:
        runner.prepare_stand_ins(config.Params.load("smoke", model="nobody-here/no-such-model-xyz"))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "not in the local Hub cache" in err and "--online" in err
    with pytest.raises(SystemExit):
        runner.prepare_stand_ins(config.Params.load("smoke", model="./no/such/folder"))
    assert "does not exist" in capsys.readouterr().err


def test_an_uncached_hub_data_set_is_refused_offline_before_any_kernel_and_a_cached_one_passes(
        tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    params = config.Params.load("smoke", data_source="locuslab/TOFU")
    with pytest.raises(SystemExit) as e:
        runner.prepare_stand_ins(params)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "'locuslab/TOFU' is a Hub data set that is not in the local cache" in err and "--online" in err
    assert len(err.splitlines()) == 1
    (tmp_path / "datasets" / "locuslab___tofu").mkdir(parents=True)  # what datasets' prepared cache is called
    pipeline.check_sources(params)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    (tmp_path / "datasets" / "locuslab___tofu").rmdir()
    pipeline.check_sources(params)  # online: the download is the user's choice


def test_an_empty_split_file_is_refused_before_any_kernel(tmp_path, capsys):
    from unlearnkit import config
    from unlearnkit.data.synthetic import generate_synthetic_tofu

    generate_synthetic_tofu(tmp_path / "tofu", n_authors=10, questions_per_author=10, seed=0)
    (tmp_path / "tofu" / "forget01.json").write_text("")
    with pytest.raises(SystemExit):
        runner.prepare_stand_ins(config.Params.load("smoke", data_source=str(tmp_path / "tofu")))
    assert "forget01.json: no rows" in capsys.readouterr().err


def test_the_synthetic_authors_bound_is_the_generators():
    from unlearnkit.data import synthetic

    assert config.CONSTRAINTS["synthetic_authors"].text == f"in [{synthetic.MIN_AUTHORS}, {synthetic.MAX_AUTHORS}]"
    assert config.CONSTRAINTS["synthetic_questions_per_author"].text == (
        f"in [{synthetic.MIN_QUESTIONS_PER_AUTHOR}, {synthetic.MAX_QUESTIONS_PER_AUTHOR}]")


def test_overrides_never_reach_the_committed_results(capsys):
    with pytest.raises(SystemExit) as e:
        runner.plan("01", "default", {"beta": 0.2})
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "would change the committed results of profile 'default'" in err and "extends: default" in err
    assert "\n" not in err
    assert runner.plan("01", "default", {"seed": 3}).params.seed == 3  # a seed has its own folders
    assert runner.plan("01", "smoke", {"beta": 0.2}).params.beta == 0.2  # another profile's store is its own


@pytest.mark.parametrize("name", ["x/../../elsewhere/analysis", "../params/smoke", "/abs/path", ".hidden", "a..b", "",
                                  "tab\\tname"])
def test_run_and_profile_names_are_names_never_paths(name):
    from unlearnkit import paths

    with pytest.raises(ValueError, match="is not a name") as e:
        paths.check_name("run", name)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="is not a name"):
        config.Params.load("default", method_settings={name: {"method": "ga"}})
    with pytest.raises(ValueError, match="is not a name"):
        config.Params.load(name)


@pytest.mark.parametrize("name", ["paper-dry-lora", "npo_f3_r0.25_lr0.0003", "seed-3-data-1", "ga_mild@26"])
def test_todays_names_are_names(name):
    from unlearnkit import paths

    assert paths.check_name("run", name) == name


def test_a_negative_seed_is_refused_in_one_line():
    with pytest.raises(ValueError, match="parameter 'seed'"):
        config.Params.load("default", seed=-1)


def test_a_folder_of_pickled_weights_is_refused_in_one_line_and_never_unpickled(tiny_model, tiny_tokenizer, tmp_path):
    folder = tmp_path / "received"
    tiny_model.save_pretrained(folder)
    tiny_tokenizer.save_pretrained(folder)
    for f in folder.glob("*.safetensors"):  # as a folder saved by older code would hold it: pytorch_model.bin, a pickle
        f.unlink()
    torch.save(tiny_model.state_dict(), folder / "pytorch_model.bin")
    assert list(folder.glob("*.bin")) and not list(folder.glob("*.safetensors"))
    with pytest.raises(ValueError, match=r"pickled weights \(\*\.bin\) only") as e:
        models.load_model(folder, dtype="float32", template=None)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"holds no \*\.safetensors weights \(the workbook never unpickles"):
        models.check_source(str(folder))  # and before any kernel, at every door that names a model folder


def test_a_checkpoint_with_a_custom_pickle_is_passed_over_and_never_unpickled(killed_run, writing_pickle):
    checkpoint = training.latest_checkpoint(killed_run.out)
    # as accelerate's load_custom_state would load it, with weights_only=False
    writing_pickle.plant(checkpoint / "custom_checkpoint_0.pkl")
    assert training.latest_checkpoint(killed_run.out) is None
    killed_run.resume()  # trains from the start instead
    assert not writing_pickle.ran
    assert killed_run.history_steps() == list(range(1, 13))


def test_a_run_folder_that_is_a_symlink_out_of_the_store_is_never_cleared(tmp_path, monkeypatch):
    from unlearnkit import paths
    from unlearnkit.pipeline import claim_run_folder

    store, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    (elsewhere / "precious").mkdir(parents=True)
    store.mkdir()
    (store / "run.train").symlink_to(elsewhere)  # as a received models/ folder may hold
    monkeypatch.setattr(paths, "RUNS", store)
    with pytest.raises(ValueError, match="outside"):
        claim_run_folder(store / "run.train", "a")
    assert (elsewhere / "precious").is_dir()


def test_saving_a_model_never_removes_a_folder_that_holds_no_model(tiny_model, tiny_tokenizer, template, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds no saved model"):
        models.save_model(tiny_model, tiny_tokenizer, folder, template)
    assert (folder / "keep.txt").read_text() == "mine"
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "notes")
    with pytest.raises(ValueError, match="symlink"):
        models.save_model(tiny_model, tiny_tokenizer, link, template)
    saved = models.save_model(tiny_model, tiny_tokenizer, tmp_path / "model", template)
    assert models.save_model(tiny_model, tiny_tokenizer, saved, template) == saved  # a saved model is replaced


@pytest.mark.parametrize("field, name", [
    ("plot", "unlearnkit.plots:runs.os.system"),  # a dotted path through a module the plots package imports
    ("plot", "unlearnkit.plots.recipes:importlib.import_module"),
    ("plot", "unlearnkit.plots:Path"),  # a name the module imports is not its own
    ("plot", "unlearnkit.plots:_show"),  # private
    ("object", "unlearnkit.plots:runs.os.system"),
    ("object", "unlearnkit.runs:os.system"),
    ("object", "unlearnkit.config:Params.from_yaml"),
    ("object", "unlearnkit.runs:Path"),
])
def test_a_recipe_naming_anything_but_a_registered_plot_or_a_library_dataclass_runs_nothing(tmp_path, field, name):
    from unlearnkit.plots import recipes

    marker = tmp_path / "ran"
    command = [f"touch {marker}"]
    if field == "plot":
        payload = {"version": recipes.RECIPE_VERSION, "plot": name, "args": command, "kwargs": {}}
    else:
        payload = {"version": recipes.RECIPE_VERSION, "plot": "unlearnkit.plots:corpus_overview",
                   "args": [{"__object__": name, "fields": {"command": f"touch {marker}"}}], "kwargs": {}}
    (tmp_path / "r.json").write_text(json.dumps(payload))
    with pytest.raises(recipes.RecipeError, match="not a name of|not a plotting function|not a dataclass"):
        fn, args, kwargs = recipes.read(tmp_path / "r.json")
        fn(*args, **kwargs)
    assert not marker.exists()


def test_an_attack_run_that_is_not_a_run_is_refused_and_one_not_stored_is_never_dropped(tmp_path, monkeypatch):
    from unlearnkit import pipeline
    from unlearnkit.studies import recovery

    with pytest.raises(ValueError, match="parameter 'attack_runs': unknown unlearning run 'nosuch'"):
        pipeline.check_params(config.Params.load("smoke", attack_runs=["npo", "nosuch"]))
    with pytest.raises(ValueError, match="parameter 'attack_runs': unlearning run 'data/my-model' is not a name"):
        pipeline.check_params(config.Params.load("smoke", attack_runs=["npo", "data/my-model"]))
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    with pytest.raises(ValueError, match="attack_runs names 'npo', which notebook 02 has not stored for seed 0"):
        recovery.attacked_runs(config.Params.load("smoke", attack_runs=["npo"]))


def test_a_foreign_folders_identity_is_its_content_so_new_weights_are_rescored(tiny_model, tiny_tokenizer, tmp_path):
    from unlearnkit import runs

    first, second = tmp_path / "mine", tmp_path / "copy"
    models.save_plain_model(tiny_model, tiny_tokenizer, first)  # no unlearnkit.json: a model from elsewhere
    models.save_plain_model(tiny_model, tiny_tokenizer, second)
    assert runs.model_identity(first) == runs.model_identity(second)  # the same weights, wherever they lie
    before = runs.model_identity(first)
    with torch.no_grad():
        tiny_model.lm_head.weight.add_(0.01)
    models.save_plain_model(tiny_model, tiny_tokenizer, first)  # overwritten with new weights
    assert runs.model_identity(first) != before
    assert runs.model_identity("someone/some-model") != runs.model_identity(first)


def test_a_format_model_that_is_not_a_model_of_the_store_is_refused_at_the_front_door():
    from unlearnkit import pipeline

    ok = config.Params.load("smoke", format_models=["base", "target", "retain90", "npo", "unlearned-ga"])
    assert pipeline.check_params(ok).format_models[-1] == "unlearned-ga"
    with pytest.raises(ValueError, match="'format_models': 'data/mine' is not base, target, a retain model"):
        pipeline.check_params(config.Params.load("smoke", format_models=["target", "data/mine"]))
    with pytest.raises(ValueError, match="'format_models': 'nosuch' is not base, target"):
        pipeline.check_params(config.Params.load("smoke", format_models=["nosuch"]))
