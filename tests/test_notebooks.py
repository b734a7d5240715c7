"""Papermill smoke runs of the notebooks, in order, on the smoke profile, into a temporary runs/ folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from notebook_checks import check_03, check_04, check_05, check_06, check_07
from unlearnkit import config, paths, runner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "UNLEARNKIT_RUNS": str(runs), "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "all", "--profile", "smoke"],
                          env=env, capture_output=True, text=True, timeout=1200, cwd=paths.ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return runs / "smoke"


def test_00_data_tour(smoke_runs):
    metrics = json.loads((smoke_runs / "00_data_tour" / "metrics.json").read_text())
    assert metrics["corpus"]["full"]["n_items"] == 200 and metrics["meta"]["profile"] == "smoke"
    assert (smoke_runs / "figures" / "00_data_tour_splits.png").stat().st_size > 1000


def test_01_tofu_finetune(smoke_runs):
    metrics = json.loads((smoke_runs / "01_tofu_finetune" / "metrics.json").read_text())
    assert set(metrics) == {"base", "target", "retain90", "meta"}
    for model in ("base", "target", "retain90"):
        assert set(metrics[model]) == {"forget", "retain", "real_authors", "world_facts", "summary"}
        assert 0 <= metrics[model]["summary"]["forget_quality"] <= 1
    assert metrics["retain90"]["summary"]["forget_quality"] == 1.0  # tested against itself
    assert "torch" in metrics["meta"]["packages"] and metrics["meta"]["parameters"]["profile"] == "smoke"
    per_item = json.loads((smoke_runs / "01_tofu_finetune" / "per_item.json").read_text())
    assert len(per_item["target"]["forget"]["truth_ratio"]) == metrics["target"]["forget"]["n_items"]
    for name in ("base", "target", "retain90"):
        assert (smoke_runs / "models" / name / "config.json").exists()


def test_02_unlearning_every_method(smoke_runs):
    methods = config.Params.load("smoke").methods
    for run in methods:
        metrics = json.loads((smoke_runs / f"02_unlearning_{run}" / "metrics.json").read_text())
        assert set(metrics) == {run, "meta"}, run
        assert {"forget_quality", "model_utility"} <= set(metrics[run]["summary"]), run
        trajectory = json.loads((smoke_runs / f"02_unlearning_{run}" / "per_item.json").read_text())["trajectory"]
        assert trajectory and all("forget_rouge" in r for r in trajectory), run
        assert (smoke_runs / "models" / f"unlearned-{run}" / "config.json").exists()
    assert (smoke_runs / "figures" / "02_unlearning_comparison.png").exists()


def test_03_controls_calibration(smoke_runs):
    check_03(smoke_runs)


def test_04_format_eval(smoke_runs):
    check_04(smoke_runs)


def test_05_probabilistic_bounds(smoke_runs):
    check_05(smoke_runs)


def test_06_entropy_optimisation(smoke_runs):
    check_06(smoke_runs)


def test_07_alignment_toxicity(smoke_runs):
    check_07(smoke_runs)


def test_every_notebook_ran(smoke_runs):
    executed = {p.stem for p in smoke_runs.glob("*.ipynb")}
    for source in runner.source_notebooks():
        assert any(name.startswith(source.stem) for name in executed), source.name
