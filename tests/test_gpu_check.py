"""benchmarks/gpu_check.sh, the one device check of issue #61, keeps to its budget and to the device tool's limits:
a step the budget cannot hold is named as not run (never started to be killed), the summary says each step's status,
and no more than the eight files the tool brings back are written. Its steps themselves run on a GPU only."""

from __future__ import annotations

import os
import subprocess
import sys

from unlearnkit import paths

SCRIPT = paths.ROOT / "benchmarks" / "gpu_check.sh"


def test_a_spent_budget_runs_no_step_and_says_so(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable, "GPU_CHECK_BUDGET": "0",
           "GPU_CHECK_WHEELS": str(tmp_path / "no-wheels")}
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, cwd=paths.ROOT, env=env,
                          timeout=600)
    assert done.returncode == 1, done.stderr
    summary = (out / "summary.txt").read_text().splitlines()
    assert summary[:3] == ["pytest -m gpu: not run (budget spent)", "gpu_scale: not run (budget spent)",
                           "pytest files: not run (budget spent)"]
    assert summary[3].startswith("total: ") and summary[3].endswith("of a budget of 0 s")
    versions = (out / "versions.txt").read_text()
    assert versions.startswith("no wheels in ") and "\ntorch " in versions and "\ntransformers " in versions
    assert len(list(out.iterdir())) <= 8


def test_without_out_it_refuses_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "set OUT" in done.stderr
