"""`make lab` opens JupyterLab at notebooks/, rooted at the repository (so the notebooks' links to docs/ resolve), with
the workbook's kernel, and that kernel runs the workbook's own
environment (the one `make setup` installed it from), not whatever Python a user's Jupyter finds first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_kernel_spec_points_at_the_workbook_environment():
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.fail("no 'python3' kernel spec: run `make setup`, which installs it into the workbook's environment")
    assert spec.display_name == "Python 3 (unlearnkit)"
    # the spec found first is the one inside this environment, and it starts this environment's Python
    assert Path(spec.resource_dir).resolve().is_relative_to(Path(sys.prefix).resolve())
    assert Path(spec.argv[0]).resolve() == Path(sys.executable).resolve()
    assert spec.argv[-4:] == ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
    assert json.loads((Path(spec.resource_dir) / "kernel.json").read_text())["argv"][0] == spec.argv[0]


def test_make_lab_opens_jupyterlab_on_the_notebooks():
    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    command = [line for line in dry.splitlines() if "jupyter lab" in line]
    assert command, dry
    assert "-m jupyter lab --ServerApp.root_dir=" in command[-1] and "/bin/python" in command[-1]
    assert f'--ServerApp.root_dir="{ROOT}"' in command[-1] and "--LabApp.default_url=/lab/tree/notebooks" in command[-1]
    extra = subprocess.run(["make", "-n", "lab", "LAB_ARGS=--no-browser --allow-root"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout
    assert "/lab/tree/notebooks --no-browser --allow-root" in extra  # a container running as root needs these
