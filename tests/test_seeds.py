"""Training seeds in the run store: each seed's runs live apart, a seed never touches another seed's files or the
committed ones, the training seed and the corpus draw are separate keys, a seed's rerun skips what it finished, and
the instruction set is pinned where the workbook starts Python."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import skip_unless
from unlearnkit import config, machine, paths, pipeline, runner, runs
from unlearnkit.claims import summary as claim_summary


def test_each_seed_has_its_own_run_store_and_only_the_profiles_own_seed_draws_the_committed_figures(
        monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    default, other = config.Params.load("default"), config.Params.load("default", seed=3)
    assert runs.store(default) == tmp_path / "default" / "seed-0"
    assert runs.store(other) == tmp_path / "default" / "seed-3"
    assert runs.model_dir(other, "target") == tmp_path / "default" / "seed-3" / "models" / "target"
    assert runs.figures_dir(default) == paths.FIGURES
    assert runs.figures_dir(other) == runs.store(other) / "figures"
    assert runs.figures_dir(config.Params.load("smoke")) == tmp_path / "smoke" / "seed-0" / "figures"
    runs.write_metrics(other, runs.DATA_TOUR, {"corpus": {}})
    (tmp_path / "default" / "seed-x").mkdir()  # not a seed
    assert runs.seeds("default") == [3]
    assert json.loads((runs.store(other) / runs.DATA_TOUR / "metrics.json").read_text())["meta"]["seed"] == 3
    with pytest.raises(FileNotFoundError, match=r"--set seed=3"):
        runs.read_metrics(other, runs.FINETUNE)
    # another corpus draw is not one of the profile's seeds, and never takes seed 0's store or the committed figures
    redrawn = config.Params.load("default", data_seed=1)
    assert runs.store(redrawn) == tmp_path / "default" / "seed-0-data-1" and not runs.is_reference_seed(redrawn)
    assert runs.figures_dir(redrawn) == runs.store(redrawn) / "figures"
    runs.write_metrics(redrawn, runs.DATA_TOUR, {"corpus": {}})
    assert runs.seeds("default") == [3]


def test_on_the_synthetic_profiles_each_training_seed_redraws_the_corpus():
    """``data_seed`` null (default, smoke) means the training seed: each seed draws its own corpus, hashed as the
    resolved draw, so seed 0's corpus keeps the key it had as data_seed 0 (its folder and every model trained on it
    keep their keys). The real-TOFU profiles (tofu-local, paper, paper-dry) name one draw for every seed."""
    params = config.Params.load("default")
    assert params.data_seed is None and params.corpus_draw == 0
    assert pipeline.corpus_params(params) == pipeline.corpus_params(params.replace(data_seed=0))
    assert pipeline.corpus_params(params)["seed"] == 0  # the key it always had
    five = params.replace(seed=5)
    assert five.corpus_draw == 5 and pipeline.corpus_params(five) != pipeline.corpus_params(params)
    assert runs.store(five).name == "seed-5" and runs.store(five.replace(data_seed=5)).name == "seed-5"
    assert runs.store(five.replace(data_seed=0)).name == "seed-5-data-0"
    for profile in ("tofu-local", "paper", "paper-dry"):
        fixed = config.Params.load(profile)
        assert fixed.data_seed == 0 and fixed.replace(seed=3).corpus_draw == 0
    assert config.Params.load("smoke").data_seed is None
    with pytest.raises(ValueError, match="data_seed"):
        config.Params.load("default", data_seed=-1)
    # a training seed other than 0 names itself in the base and fine-tuning keys; seed 0's keys stay as they were
    assert pipeline.seed_key(params) == {} and pipeline.seed_key(params.replace(seed=2)) == {"training_seed": 2}


def test_seeds_on_the_command_line():
    assert runner.seeds._seed_list(["0", "1", "3"]) == [0, 1, 3]
    assert runner.seeds._seed_list(["0-5"]) == [0, 1, 2, 3, 4, 5]
    assert runner.seeds._seed_list(["2", "0-2"]) == [2, 0, 1]
    with pytest.raises(SystemExit):
        runner.seeds._seed_list(["one"])


def test_a_finished_notebook_is_known_by_its_commit_and_parameters(tmp_path):
    out = tmp_path / "00_data_tour.ipynb"
    recipe = {"git_revision": "abc1234", "notebook": "00_data_tour.ipynb", "parameters": "p1"}
    assert not runner.already_done(out, recipe)
    out.write_text(json.dumps({"cells": [], "metadata": {}}))
    runner.record.record_timing(out, {"wall_s": 1.0}, {}, recipe)
    assert runner.already_done(out, recipe)
    assert not runner.already_done(out, {**recipe, "parameters": "p2"})  # other parameters: run again
    assert not runner.already_done(out, {**recipe, "git_revision": "abc1234-dirty"})  # edited code: run again
    out.write_text(json.dumps({"cells": [], "metadata": {"unlearnkit": {"recipe": recipe}}}))
    assert not runner.already_done(out, recipe)  # no timing: it did not finish


def test_the_workbooks_own_outputs_do_not_make_a_revision_dirty(tmp_path):
    """A reference-seed run draws figures/ (and may write the summary and README): that must not stop a killed run
    from resuming, while an edited library file must."""
    import subprocess

    from unlearnkit import provenance

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "figures").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "lib").mkdir()
    for name in ("figures/a.png", "docs/findings.json", "README.md", "lib/code.py"):
        (tmp_path / name).write_text("before")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    clean = provenance.git_revision(tmp_path)
    assert clean and not clean.endswith("-dirty")
    for name in ("figures/a.png", "docs/findings.json", "README.md"):
        (tmp_path / name).write_text("after")
    assert provenance.git_revision(tmp_path) == clean
    (tmp_path / "lib/code.py").write_text("after")
    assert provenance.git_revision(tmp_path) == clean + "-dirty"


def test_a_seed_a_runner_is_running_is_left_out_of_the_verdicts_until_it_finishes(monkeypatch, tmp_path):
    """A seed still running would count only the notebooks it has finished (the front page once read "over seeds 0-4"
    with two of them in notebook 01): the findings notebook leaves it out while any runner holds its mark, and counts
    it again once the runner is gone, however it ended."""
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    for seed in (0, 1):
        runs.write_metrics(config.Params.load("default", seed=seed), runs.DATA_TOUR, {"corpus": {}})
    running = config.Params.load("default", seed=1)
    assert claim_summary.seeds_with_results("default") == [0, 1] and claim_summary.seeds_in_progress("default") == []
    with runs.seed_at_work(running), runs.seed_at_work(running):  # two runners of one seed may both hold it
        assert claim_summary.seeds_in_progress("default") == [1]
        assert claim_summary.seeds_with_results("default") == [0]
    assert claim_summary.seeds_with_results("default") == [0, 1]
    # a runner in another process, killed mid-run: its mark dies with it
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from unlearnkit import config, runs; "
                               "cm = runs.seed_at_work(config.Params.load('default', seed=1)); cm.__enter__(); "
                               "print('held', flush=True); time.sleep(60)"],
                              env={**os.environ, "UNLEARNKIT_RUNS": str(tmp_path)}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert claim_summary.seeds_in_progress("default") == [1]
    finally:
        holder.kill()
        holder.wait()
    assert claim_summary.seeds_in_progress("default") == [] and claim_summary.seeds_with_results("default") == [0, 1]


def test_the_runner_marks_a_seed_while_its_notebooks_run_never_while_the_findings_notebook_judges(monkeypatch,
                                                                                                   tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    params = config.Params.load("default", seed=2)
    notebooks = [paths.NOTEBOOKS / "00_data_tour.ipynb", paths.NOTEBOOKS / f"{runs.FINDINGS}.ipynb"]
    seen = {}
    for module in (runner.cli, runner.seeds):  # where runner run and runner seed find them
        monkeypatch.setattr(module, "plan", lambda target, profile, overrides, skip=(): runner.Plan(
            [n for n in notebooks if n.stem not in skip], params, {}, []))
        monkeypatch.setattr(module, "prepare_stand_ins", lambda params, *checks: None)
        monkeypatch.setattr(module, "run", lambda notebook, *a, **k: seen.setdefault(notebook.stem,
                                                                                     runs.in_progress("default", 2)))
    assert runner.main(["all", "--set", "seed=2"]) == 0
    assert seen == {"00_data_tour": True, runs.FINDINGS: False}
    seen.clear()
    assert runner.run_seed("default", 2, {}) == 0
    assert seen == {"00_data_tour": True}
    assert not runs.in_progress("default", 2)


def _digests(paths_: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths_ if p.is_file()}


@pytest.mark.slow
def test_a_run_of_seed_1_leaves_seed_0_and_every_committed_file_untouched(tmp_path):
    """Notebooks 00 and 10 of the default profile for seed 1 (the runner's ``seed``-style override): seed 0's store
    keeps every byte, and so do the committed figures, docs/findings.json and README.md."""
    runs_dir = tmp_path / "runs"
    sentinel = runs_dir / "default" / "seed-0" / "models" / "target" / "model.safetensors"
    sentinel.parent.mkdir(parents=True)
    sentinel.write_bytes(b"seed 0's target")
    committed = [*sorted(paths.FIGURES.glob("*.png")), paths.SUMMARY, paths.README]
    before = _digests([*committed, sentinel])
    kept = {p: p.read_bytes() for p in committed}  # put back whatever happens: a failure must not dirty the checkout
    env = {**os.environ, "UNLEARNKIT_RUNS": str(runs_dir), "TQDM_DISABLE": "1"}
    try:
        for notebook in ("00", "10"):
            done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", notebook, "--profile", "default", "--set",
                                   "seed=1"], env=env, capture_output=True, text=True, timeout=600, cwd=paths.ROOT)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            assert "[default seed 1]" in done.stdout
        assert _digests([*committed, sentinel]) == before
    finally:
        for path, data in kept.items():
            if not path.exists() or path.read_bytes() != data:
                path.write_bytes(data)
        for path in set(paths.FIGURES.glob("*.png")) - set(kept):
            path.unlink()  # a figure the run drew where it must not
    seed1 = runs_dir / "default" / "seed-1"
    assert (seed1 / "figures" / "00_data_tour_splits.png").exists() and (seed1 / "00_data_tour.ipynb").exists()
    summary = json.loads((runs_dir / "default" / "findings.json").read_text())
    assert summary["seeds"] == [1]  # seed 0 has no results here
    printed = json.loads((seed1 / "10_findings.ipynb").read_text())["cells"][-1]["outputs"]
    assert "kept" in "".join("".join(o.get("text", "")) for o in printed)  # the committed summary was not replaced


# --------------------------------------------------------------------------- the instruction set


def test_the_pin_is_set_where_it_applies_and_never_over_a_users_value(monkeypatch):
    monkeypatch.setattr(machine, "pinnable", lambda: True)
    env = {"MKL_CBWR": "COMPATIBLE"}
    added = machine.pin(env)
    assert env["MKL_CBWR"] == "COMPATIBLE" and "MKL_CBWR" not in added  # the user's value wins
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and added == {k: v for k, v in machine.PIN.items() if k != "MKL_CBWR"}
    assert machine.pin({machine.NATIVE_VARIABLE: "1"}) == {}  # the machine's own kernels, on request
    monkeypatch.setattr(machine, "pinnable", lambda: False)  # an ARM machine or one without AVX2: nothing set
    assert machine.pin({}) == {}


def test_the_makefile_and_a_fresh_process_take_the_libraries_pin():
    """The Makefile's exports come from machine.py itself, and a Python started by the workbook computes on AVX2
    where the machine has it (PyTorch reports it; NumPy's AVX-512 loops are off when it loads after the pin)."""
    skip_unless(machine.pinnable(), "no AVX2 on this machine: nothing is pinned (the README says what such a machine gets)",
                "tests/test_seeds.py::test_the_pin_is_set_where_it_applies_and_never_over_a_users_value")
    printed = subprocess.run([sys.executable, str(paths.ROOT / "lib" / "unlearnkit" / "machine.py")],
                             capture_output=True, text=True, check=True).stdout.split()
    assert dict(word.split("=", 1) for word in printed) == machine.PIN
    env = {k: v for k, v in os.environ.items() if k not in machine.PIN}
    code = "import unlearnkit, torch, json; from unlearnkit import machine; print(json.dumps(machine.active()))"
    active = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                       check=True).stdout)
    assert active["torch"] == "AVX2" and active["numpy"] in ("X86_V3", "X86_V2")
