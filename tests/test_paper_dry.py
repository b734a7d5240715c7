"""The paper profile's code path without a GPU: ``paper-dry`` (notebooks/params/paper-dry.yaml) runs the paper's
settings on stand-ins of its models that the workbook builds itself (random Phi, Llama-2, Vicuna, Mistral-Instruct
and HarmBench-judge stand-ins with trained tokenizers).

The stand-in checks are fast; notebook 01 of paper-dry runs in ``make test``; the whole dry run (every notebook,
then 01, 02 and 05 with LoRA: ``make paper-dry``) is marked ``paper_dry`` and left out of ``make test``
(``make test-paper-dry`` runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from unlearnkit import config, models, paths, pipeline
from unlearnkit.metrics.safety import HarmBenchJudge

PROFILE, LORA_PROFILE = "paper-dry", "paper-dry-lora"


@pytest.fixture(scope="module")
def params():
    return config.Params.load(PROFILE)


@pytest.fixture(scope="module")
def stand_ins(params):
    return pipeline.build_stand_ins(params)


def test_the_profile_keeps_the_papers_settings_but_counts_sizes_and_models(params):
    paper = config.Params.load("paper")
    for key in ("template", "world_replay", "format_likelihood", "alignment_template", "method_settings", "methods",
                "regime_runs", "eo_table_runs", "calibration_methods", "unlearn_schedule", "finetune_lr", "beta"):
        assert params[key] == paper[key], key
    assert params.dtype == "float32" and paper.dtype == "bfloat16"
    # every stand-in but paper-llama-dry's Llama 3.2 (tests/test_paper_llama_dry.py)
    assert set(pipeline.stand_ins_named(params)) == set(pipeline.STAND_IN_MODELS) - {"Llama-3.2-1B-Instruct"}


#: open-unlearning's runs of notebook 02 (issue #29): paper.yaml's method_settings replaces default's, so it must
#: declare each of them itself, with open-unlearning's forget weights.
OU_RUNS = ("simnpo", "wga", "satimp", "ceu", "undial", "altpo")


def test_the_paper_profile_declares_open_unlearnings_runs_and_the_dry_run_runs_them(params):
    paper, default = config.Params.load("paper"), config.Params.load("default")
    assert set(OU_RUNS) <= set(params.methods)
    for run in OU_RUNS:
        assert paper.method_settings[run]["method"] == run, run
        settings = pipeline.unlearning_settings(params, run)
        assert settings["forget_weight"] == default.method_settings[run].get("forget_weight", 1.0), run
    assert pipeline.unlearning_settings(params, "undial")["undial_retain_term"] is False  # open-unlearning: alpha 0


def test_stand_ins_have_the_interfaces_of_the_paper_models(stand_ins):
    phi = models.load_model(stand_ins["phi-1_5"], dtype="float32", template=None)
    assert type(phi.model).__name__ == "PhiForCausalLM" and phi.template.name == "phi"  # by its family name
    assert phi.tokenizer.eos_token == "<|endoftext|>" and phi.tokenizer.pad_token == phi.tokenizer.eos_token
    assert not (stand_ins["phi-1_5"] / "unlearnkit.json").exists()  # read as a Hub model is
    hp = models.load_model(stand_ins["Llama2-7b-WhoIsHarryPotter"], dtype="float32", template=None)
    assert hp.template.name == "llama2-chat"
    vicuna = models.load_model(stand_ins["vicuna-7b-v1.5"], template=models.CHAT, dtype="float32")
    assert vicuna.template.name == "vicuna"  # no chat template: Vicuna's own conversation format
    mistral = models.load_model(stand_ins["Mistral-7B-Instruct-v0.3"], template=models.CHAT, dtype="float32")
    assert type(mistral.model).__name__ == "MistralForCausalLM"
    assert mistral.template.prompt("Q?") == "[INST] Q? [/INST]"
    judge = HarmBenchJudge.from_pretrained(str(stand_ins["HarmBench-Llama-2-13b-cls"]), dtype="float32")
    h = judge.score_samples(["do it"], [["sure", "no"]])
    assert h.shape == (1, 2) and ((h > 0) & (h < 1)).all()


def test_stand_ins_are_built_once_per_recipe(params, stand_ins):
    before = {name: (folder / "stand-in.json").stat().st_mtime_ns for name, folder in stand_ins.items()}
    again = pipeline.build_stand_ins(params)
    assert {name: (folder / "stand-in.json").stat().st_mtime_ns for name, folder in again.items()} == before


def test_an_unknown_stand_in_is_refused_with_the_known_ones(params):
    with pytest.raises(ValueError, match="phi-1_5"):
        pipeline.stand_ins_named(params.replace(hp_model="data/stand-ins/gpt-5"))


def _run(target: str, profile: str, runs) -> None:
    env = {**os.environ, "UNLEARNKIT_RUNS": str(runs), "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", target, "--profile", profile], env=env,
                          capture_output=True, text=True, timeout=3600, cwd=paths.ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _store(runs, profile: str):
    """The profile's own seed's run store under ``runs``."""
    return runs / profile / f"seed-{config.Params.load(profile).seed}"


def _metrics(runs, profile: str, notebook: str) -> dict:
    return json.loads((_store(runs, profile) / notebook / "metrics.json").read_text())


@pytest.mark.slow
def test_notebook_01_fine_tunes_the_phi_stand_in_with_the_papers_schedule(tmp_path, params):
    _run("01", PROFILE, tmp_path)
    metrics = _metrics(tmp_path, PROFILE, "01_tofu_finetune")
    assert {"target", "retain90"} <= set(metrics)
    saved = models.load_model(_store(tmp_path, PROFILE) / "models" / "target", dtype="float32", template=None)
    assert type(saved.model).__name__ == "PhiForCausalLM" and saved.template.name == "phi"
    history = json.loads((_store(tmp_path, PROFILE) / "models" / "target" / "history.json").read_text())
    rows = len(pipeline.corpus(params).load("full"))  # world_replay 0: the paper fine-tunes on TOFU alone
    per_epoch = -(-rows // (params.finetune_batch_size * params.finetune_grad_accum))
    assert len(history) == per_epoch * params.finetune_epochs
    assert history[0]["lr"] < params.finetune_lr  # the paper's warm-up


@pytest.mark.paper_dry
def test_make_paper_dry_runs_every_notebook(tmp_path):
    _run("all", PROFILE, tmp_path)
    for notebook in ("01", "02", "05"):
        _run(notebook, LORA_PROFILE, tmp_path)
    ran = {p.stem for p in _store(tmp_path, PROFILE).glob("*.ipynb")}
    measured = "holdout10" in pipeline.data_splits(config.Params.load(PROFILE))  # real TOFU without it: skipped
    assert {"00_data_tour", "01_tofu_finetune", "03_controls_calibration", "04_format_eval",
            "05_probabilistic_bounds", "06_entropy_optimisation", "07_alignment_toxicity", "08_robustness",
            "10_findings"} <= ran
    for method in config.Params.load(PROFILE).methods:
        assert f"02_unlearning_{method}" in ran
        run = _metrics(tmp_path, PROFILE, f"02_unlearning_{method}")[method]
        assert ("privleak" in run["summary"]) if measured else ("holdout10" in run["privacy_skipped"])
    findings = _metrics(tmp_path, PROFILE, "10_findings")
    assert findings
    lora = config.Params.load(LORA_PROFILE)
    for method in lora.methods:
        assert "forget_quality" in _metrics(tmp_path, LORA_PROFILE, f"02_unlearning_{method}")[method]["summary"]
    assert (_store(tmp_path, LORA_PROFILE) / "05_probabilistic_bounds" / "metrics.json").exists()
