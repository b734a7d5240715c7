"""Distributed training on accelerate, proven on CPU: two processes (gloo) against one process on the same global
batch, through the command-line training step (``python -m unlearnkit.runner train``) a GPU user launches with
``accelerate launch``.

``accelerate launch --cpu --num_processes 2`` starts ONE process in accelerate 1.15 (its simple launcher needs MPI
for several CPU processes); ``ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes 2`` starts two
with torch's launcher and the gloo backend, which is what this test runs (and checks that two processes did work:
the optimizer steps equal the single process's, where two independent processes would take twice as many)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

pytestmark = pytest.mark.slow

PROFILE = "smoke"
#: 200 fine-tuning rows (10 authors x 20, no world replay) and 20 forget rows: both divide by the global batches,
#: so no process pads its last batch with repeated rows (accelerate's even_batches), which one process would not.
DATA = ["--set", "world_replay=0", "--set", "unlearn_epochs=2", "--set", "finetune_batch_size=20"]
#: The same command for one and two processes: the profile's batch x accumulation is the global batch, shared out
#: by the training loop (npo, rmu: 2 + 2 of a batch of 4; ga: a batch of 1 over 4 accumulation steps, 2 each).
RUN_SETTINGS = {"npo": ["--set", "unlearn_batch_size=4"], "rmu": ["--set", "unlearn_batch_size=4"],
                "ga": ["--set", "unlearn_batch_size=1", "--set", "unlearn_grad_accum=4"]}
RUNS_TO_COMPARE = tuple(RUN_SETTINGS)


def _train(runs: Path, step: str, *args: str, processes: int = 1) -> dict:
    env = {**os.environ, "UNLEARNKIT_RUNS": str(runs), "TQDM_DISABLE": "1", "OMP_NUM_THREADS": "1"}
    command = ["-m", "unlearnkit.runner", "train", "--profile", PROFILE, "--step", step, *DATA, *args]
    if processes > 1:
        env["ACCELERATE_USE_CPU"] = "1"
        launcher = [str(Path(sys.executable).with_name("accelerate")), "launch", "--multi_gpu",
                    "--num_processes", str(processes), "--num_machines", "1", "--mixed_precision", "no",
                    "--dynamo_backend", "no", "--main_process_port", "29517"]
        command = launcher + command
    else:
        command = [sys.executable] + command
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(printed) == 1, f"one summary from the main process only, got {done.stdout}"
    return printed[0]


def _model(runs: Path, name: str) -> tuple[list[dict], dict[str, torch.Tensor]]:
    folder = runs / PROFILE / "seed-0" / "models" / name
    return json.loads((folder / "history.json").read_text()), load_file(folder / "model.safetensors")


@pytest.fixture(scope="module")
def one_and_two_processes(tmp_path_factory):
    single, double = tmp_path_factory.mktemp("one-process"), tmp_path_factory.mktemp("two-processes")
    _train(single, "base")  # the same starting point for both: the base model is not what is compared
    shutil.copytree(single / PROFILE, double / PROFILE)
    for runs, n in ((single, 1), (double, 2)):
        _train(runs, "finetune", processes=n)
        for run, settings in RUN_SETTINGS.items():
            _train(runs, "unlearn", "--run", run, *settings, processes=n)
    return single, double


@pytest.mark.parametrize("name", ["target", *(f"unlearned-{r}" for r in RUNS_TO_COMPARE)])
def test_two_processes_train_as_one_on_the_same_global_batch(one_and_two_processes, name):
    single, double = one_and_two_processes
    (history_1, weights_1), (history_2, weights_2) = _model(single, name), _model(double, name)
    assert len(history_2) == len(history_1)  # two processes shared the batches, not each ran the whole run
    assert history_2[-1]["loss"] == pytest.approx(history_1[-1]["loss"], rel=1e-3)
    for step_1, step_2 in zip(history_1, history_2, strict=True):
        assert step_2["loss"] == pytest.approx(step_1["loss"], rel=1e-4, abs=1e-6)
    assert weights_1.keys() == weights_2.keys()
    # Equal up to the order of floating-point sums (gloo's all-reduce adds the shards' gradients in another order)
    worst = max((weights_1[k] - weights_2[k]).abs().max().item() for k in weights_1)
    assert worst < 1e-4


def test_the_global_batch_is_shared_out_by_batch_first_then_by_accumulation():
    from unlearnkit.training import per_process_batches

    assert per_process_batches(4, 8, 1) == (4, 8)
    assert per_process_batches(4, 8, 2) == (2, 8)  # each round of the two processes is the single process's batch
    assert per_process_batches(4, 8, 8) == (4, 1)
    with pytest.raises(ValueError, match="multiple of 3"):
        per_process_batches(4, 8, 3)


def test_the_step_refuses_to_unlearn_without_a_target(tmp_path):
    env = {**os.environ, "UNLEARNKIT_RUNS": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "train", "--profile", PROFILE, "--step",
                           "unlearn", "--run", "npo"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "train --step finetune first" in done.stderr
