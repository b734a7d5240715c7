"""Each seed's results as committed data (unlearnkit.results): mirrored as the notebooks write them, byte-stable
across reruns, and read back by the judge from the run store or, without one, from the committed mirror."""

import json

import pytest
from unlearnkit import config, paths, provenance, results, runs


@pytest.fixture()
def stores(tmp_path, monkeypatch):
    """A run store and a results mirror in temporary folders (the mirror named by UNLEARNKIT_RESULTS)."""
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setenv("UNLEARNKIT_RESULTS", str(tmp_path / "results"))
    return tmp_path


def test_a_default_seed_is_mirrored_without_what_times_or_places_the_run(stores, monkeypatch):
    params = config.Params.load("default", seed=3)
    runs.write_metrics(params, runs.FINETUNE, {"target": {"forget": {"rouge": 0.9}}},
                       {"sampling_seconds": 1.5, "timing": {"x": 1}, "calibration": {"elapsed_s": 813.6, "n": 4}})
    mirrored = stores / "results" / "default" / "seed-3" / runs.FINETUNE / "metrics.json"
    body = json.loads(mirrored.read_text())
    assert body["target"] == {"forget": {"rouge": 0.9}}
    assert not {"git_revision", "packages", "sampling_seconds", "timing"} & set(body["meta"])
    assert body["meta"]["calibration"] == {"n": 4}  # notebook 03's elapsed_s once changed a fresh clone's results
    assert body["meta"]["parameters"]["seed"] == 3
    record = stores / "results" / "default" / "seed-3" / results.PROVENANCE
    assert "git_revision" in json.loads(record.read_text())
    # the same results again: no byte changes, the provenance stays the one that wrote them
    record.write_text('{"git_revision": "the run that wrote them"}\n')
    runs.write_metrics(params, runs.FINETUNE, {"target": {"forget": {"rouge": 0.9}}},
                       {"sampling_seconds": 9.0, "calibration": {"elapsed_s": 781.8, "n": 4}})
    assert json.loads(record.read_text()) == {"git_revision": "the run that wrote them"}
    runs.write_metrics(params, runs.FINETUNE, {"target": {"forget": {"rouge": 0.5}}})
    assert json.loads(record.read_text())["git_revision"] != "the run that wrote them"
    # #56 item 8: per notebook, the revision, launch time and CPU of the run that last changed its files
    monkeypatch.setenv(provenance.LAUNCH_VARIABLE, "2026-11-28T09:00:00Z")
    runs.write_metrics(params, runs.CONTROLS, {"target": {"v": 1}})
    monkeypatch.setenv(provenance.LAUNCH_VARIABLE, "2026-11-28T10:00:00Z")
    runs.write_metrics(params, runs.CONTROLS, {"target": {"v": 1}})  # same bytes: its entry stays
    runs.write_metrics(params, runs.FINETUNE, {"target": {"forget": {"rouge": 0.4}}})
    notebooks = json.loads(record.read_text())["notebooks"]
    assert notebooks[runs.CONTROLS]["launched"] == "2026-11-28T09:00:00Z"
    assert notebooks[runs.FINETUNE]["launched"] == "2026-11-28T10:00:00Z"
    assert notebooks[runs.FINETUNE]["git_revision"] and notebooks[runs.FINETUNE]["cpu"]["model_name"]
    assert "launched" not in (stores / "results" / "default" / "seed-3" / runs.FINETUNE / "metrics.json").read_text()
    # per-item values only for the notebooks whose claims are per question
    runs.write_per_item(params, runs.LEAKAGE, {"target": {"binary_leak_bound": [0.1, 0.2]}})
    runs.write_per_item(params, runs.FORMATS, {"target": {"rouge": [0.1]}})
    assert (stores / "results" / "default" / "seed-3" / runs.LEAKAGE / "per_item.json").exists()
    assert not (stores / "results" / "default" / "seed-3" / runs.FORMATS / "per_item.json").exists()


def test_only_the_default_profiles_own_draws_in_its_own_store_are_mirrored(stores, monkeypatch):
    for params in (config.Params.load("smoke"), config.Params.load("default", data_seed=1)):
        runs.write_metrics(params, runs.FINETUNE, {"target": {}})
    assert not (stores / "results").exists()
    monkeypatch.delenv("UNLEARNKIT_RESULTS")  # a store elsewhere than the checkout's runs/ mirrors nowhere
    runs.write_metrics(config.Params.load("default"), runs.FINETUNE, {"target": {}})
    assert not (stores / "results").exists()


def test_the_judge_reads_a_seed_from_its_store_else_from_the_committed_mirror(stores):
    params = config.Params.load("default", seed=2)
    runs.write_metrics(params, runs.FINETUNE, {"target": {"v": 1}})
    runs.write_metrics(params, f"{runs.UNLEARNING}_npo", {"npo": {"v": 2}})
    assert results.committed_seeds("default") == [2] and results.seeds("default") == [2]
    import shutil

    shutil.rmtree(runs.store(params))  # a fresh clone: no runs/, the committed results only
    seed = results.SeedResults("default", 2)
    assert seed.metrics(runs.FINETUNE)["target"] == {"v": 1}
    assert list(seed.unlearning_runs()) == ["npo"] and seed.notebooks() == [runs.FINETUNE, f"{runs.UNLEARNING}_npo"]
    runs.notebook_dir(params, runs.FINETUNE)
    (runs.store(params) / runs.FINETUNE / "metrics.json").write_text('{"target": {"v": 7}}')
    assert results.SeedResults("default", 2).metrics(runs.FINETUNE)["target"] == {"v": 7}  # the store first
    with pytest.raises(FileNotFoundError, match="seed 2 of profile 'default' has no 05_probabilistic_bounds"):
        seed.per_item(runs.LEAKAGE)


def test_the_checkouts_own_paths_are_mirrored_relative_and_a_store_can_be_mirrored_again(stores):
    params = config.Params.load("default", seed=4)
    runs.write_metrics(params, runs.FORMATS, {"meta_models": {"base": str(paths.RUNS / "default" / "seed-4" / "models" / "base")}},
                       {"source": str(paths.ROOT / "data" / "synthetic-abc"), "elsewhere": "/opt/tofu"})
    mirrored = stores / "results" / "default" / "seed-4" / runs.FORMATS / "metrics.json"
    body = json.loads(mirrored.read_text())
    assert body["meta_models"]["base"] == "runs/default/seed-4/models/base"
    assert body["meta"]["source"] == "data/synthetic-abc" and body["meta"]["elsewhere"] == "/opt/tofu"
    mirrored.unlink()
    assert results.mirror_store(params) == [mirrored] and json.loads(mirrored.read_text()) == body


def test_the_cpu_model_is_read_from_the_first_processors_block(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n"
                       "model name\t: Intel(R) Xeon(R) Processor\n\nprocessor\t: 1\nmodel name\t: Other\n")
    assert provenance.cpu_model(cpuinfo) == {"family": "6", "model": "207", "model_name": "Intel(R) Xeon(R) Processor"}
    assert provenance.cpu_model(tmp_path / "absent")["model_name"]
