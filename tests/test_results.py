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
    stored = {**seed.metrics(runs.FINETUNE), "target": {"v": 7}}
    (runs.store(params) / runs.FINETUNE / "metrics.json").write_text(json.dumps(stored))
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


# --------------------------------------------------------------------------- every file checked at read (#59 point 5)


@pytest.fixture()
def crafted(stores):
    """Four committed seeds of the default profile copied into a temporary mirror, three of them spoiled in one file
    each, as a received results folder may be: seed 1's notebook 01 holds a text where the target's forget scores (a
    mapping) belong, seed 2's GA run a NaN, seed 3's NPO run a model utility of 1e308 (the schema bounds it by 1)."""
    import shutil

    for seed in range(4):
        shutil.copytree(paths.ROOT / "results" / "default" / f"seed-{seed}", stores / "results" / "default" / f"seed-{seed}")

    def spoil(seed: int, notebook: str, change) -> None:
        path = stores / "results" / "default" / f"seed-{seed}" / notebook / "metrics.json"
        payload = json.loads(path.read_text())
        change(payload)
        path.write_text(json.dumps(payload))  # json writes float("nan") as the token NaN

    spoil(1, runs.FINETUNE, lambda p: p["target"].__setitem__("forget", "0.98"))
    spoil(2, f"{runs.UNLEARNING}_ga", lambda p: p["ga"]["forget"].__setitem__("rouge", float("nan")))
    spoil(3, f"{runs.UNLEARNING}_npo", lambda p: p["npo"]["summary"].__setitem__("model_utility", 1e308))
    return stores


UNREADABLE = {1: "unreadable 01_tofu_finetune/metrics.json: target/forget: '0.98' is not of type 'object'",
              2: "unreadable 02_unlearning_ga/metrics.json: not valid JSON (NaN is not a JSON number)",
              3: "unreadable 02_unlearning_npo/metrics.json: npo/summary/model_utility: 1e+308 is greater than the "
                 "maximum of 1"}


@pytest.mark.slow
def test_a_spoiled_file_costs_its_own_seeds_claims_on_it_and_the_other_seeds_are_judged(crafted):
    """Before, seed 1's text stopped the judge with "TypeError: string indices must be integers" and the NaN and 1e308
    were judged as numbers; now each file is checked against docs/metrics.schema.json at read."""
    from unlearnkit import seedstudy as seed_study
    from unlearnkit.claims import extractors as effects
    from unlearnkit.claims import summary as claim_summary
    from unlearnkit.claims.judge import NOT_TESTABLE, OUTCOMES

    judged = effects.judge_claims("default", [0, 1, 2, 3])
    clean = {v.claim: v.per_seed[0] for v in effects.judge_claims("default", [0])}
    reasons: dict[int, set[str]] = {1: set(), 2: set(), 3: set()}
    for v in judged:
        by_seed = {r.seed: r for r in v.per_seed}
        assert by_seed[0] == clean[v.claim], v.claim  # seed 0 judged as it is alone
        for seed, r in by_seed.items():
            assert r.outcome in OUTCOMES
            if r.reason.startswith("unreadable"):
                assert r.outcome == NOT_TESTABLE and seed in reasons, (v.claim, seed, r.reason)
                reasons[seed].add(r.reason)
    assert reasons == {seed: {words} for seed, words in UNREADABLE.items()}
    seed_1 = [next(r for r in v.per_seed if r.seed == 1) for v in judged]
    assert any(r.outcome != NOT_TESTABLE for r in seed_1), "a claim that reads no notebook 01 is judged on seed 1"
    # the seed study of notebook 10 reads the same files, and the one summary holds both
    params = config.Params.load("default")
    study = seed_study.study(params, [0, 1, 2, 3])
    assert study["seeds"] == [0, 1, 2, 3] and "ga" not in study["methods"] and "npo" not in study["methods"]
    summary = claim_summary.build("default", judged, study)
    assert summary["claims"] and summary["seeds"] == [0, 1, 2, 3] and summary["seed_study"] == study


@pytest.mark.parametrize("text, words", [
    ('{"target": {"forget": {"rouge": NaN}}}', "not valid JSON (NaN is not a JSON number)"),
    ('{"target": {"forget": {"rouge": -Infinity}}}', "not valid JSON (-Infinity is not a JSON number)"),
    ('{"target": {"forget": {"rouge": 1e400}}}', "target/forget/rouge: inf is greater than the maximum of 1"),
    ('{"target": {"summary": {"truth_ratio": 1e400}}}', "target/summary/truth_ratio: inf is greater than the maximum"),
    ('{"target": {"forget": {"rouge": -0.5}}}', "target/forget/rouge: -0.5 is less than the minimum of 0"),
    ('{"target": {"forget": {"n_items": 2.5}}}', "target/forget/n_items: 2.5 is not of type 'integer', 'null'"),
    ('{"target": "a model"}', "target: 'a model' is not of type 'object'"),
    ('{"target": {"retain": [1, 2]}}', "target/retain: [1, 2] is not of type 'object'"),
    ('[' * 100_000 + ']' * 100_000, "nested past the JSON parser's stack"),
    ('{"target": {"forget": {"rouge": 0.5}}', "not valid JSON (Expecting"),
])
def test_every_result_file_is_checked_against_the_schema_at_read(stores, text, words):
    params = config.Params.load("default", seed=5)
    runs.write_metrics(params, runs.FINETUNE, {"target": {"forget": {"rouge": 0.5, "n_items": 3}}})
    runs.write_per_item(params, runs.FINETUNE, {"target": {"forget": {"rouge": [0.5, None]}}})
    seed = results.SeedResults("default", 5)
    assert seed.metrics(runs.FINETUNE)["target"]["forget"]["rouge"] == 0.5
    assert seed.per_item(runs.FINETUNE)["target"]["forget"]["rouge"] == [0.5, None]
    path = runs.store(params) / runs.FINETUNE / "metrics.json"
    meta = json.loads(path.read_text())["meta"]
    if text.startswith('{"target"') and "Expecting" not in words:
        text = text[:-1] + ', "meta": ' + json.dumps(meta) + "}"  # a whole file but for the one value
    path.write_text(text)
    with pytest.raises(results.CorruptResult) as e:
        results.SeedResults("default", 5).metrics(runs.FINETUNE)
    assert words in e.value.reason and e.value.file == "metrics.json" and e.value.notebook == runs.FINETUNE
    assert str(e.value).startswith(f"{paths.shown(path)} ") and len(str(e.value).splitlines()) == 1
    per_item = runs.store(params) / runs.FINETUNE / "per_item.json"
    per_item.write_text('{"target": {"forget": {"rouge": [0.5, NaN]}}}')
    with pytest.raises(results.CorruptResult, match="per_item.json is not valid JSON"):
        results.SeedResults("default", 5).per_item(runs.FINETUNE)
