"""benchmarks/gpu_scale.py --small: the GPU benchmark's code path (fine-tuning 4 x 8 and 32 x 1, NPO, scoring, the
sampler with and without confidences against generate()) runs on a CPU and prints every figure and verdict."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from unlearnkit import paths

SCRIPT = paths.ROOT / "benchmarks" / "gpu_scale.py"


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=paths.ROOT)


def test_bad_arguments_are_refused_in_one_line_before_any_work():
    done = _run("--small", "--samples", "0", timeout=600)
    assert done.returncode == 2 and "--samples must be at least 1, got 0" in done.stderr
    assert "device" not in done.stdout  # nothing was built
    done = _run("--small", "--json", "/nonexistent-folder/out.json", timeout=600)
    assert done.returncode == 2 and "--json /nonexistent-folder/out.json: not a file in an existing folder" in done.stderr
    assert "device" not in done.stdout


@pytest.mark.slow
def test_small_runs_on_a_cpu_and_prints_every_figure(tmp_path):
    done = _run("--small", "--json", str(tmp_path / "out.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert re.search(r"^device cpu; torch .*; dtype torch.float32; TF32 matmul \w+; .* M parameters; vLLM \w+$", out,
                     re.M)
    number = r"[0-9.e+-]+"
    for name in ("fine-tune 4 x 8", "fine-tune 32 x 1", "NPO 4 x 8", r"score \(encoded_nll, batch 16\)"):
        assert re.search(rf"^{name} +{number} tokens/s +{number} TFLOP/s +peak {number} GiB", out, re.M), name
    for name in ("generate\\(\\) chunk 8", "sampler chunk 8 with confidences", "sampler chunk 8 without confidences"):
        assert re.search(rf"^{name} +{number} samples/s +peak {number} GiB", out, re.M), name
    verdicts = re.findall(r"^target (.+) = ([0-9.]+)x \(>= ([0-9.]+)x\): (PASS|FAIL)", out, re.M)
    assert [v[0] for v in verdicts] == ["fine-tuning 32 x 1 / 4 x 8", "sampler chunk 8 with confidences / generate()",
                                        "sampler chunk 8 without confidences / generate()"]
    assert all((float(ratio) >= float(target)) == (word == "PASS") for _, ratio, target, word in verdicts)
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["info"]["device"] == "cpu" and written["info"]["split"] == [32, 1]
    assert {"dtype", "tf32_matmul", "tf32_cudnn", "vllm", "chunks", "card_bytes"} <= set(written["info"])
    assert [(v["what"], v["verdict"]) for v in written["verdicts"]] == [(v[0], v[3]) for v in verdicts]
    assert set(written["results"]) >= {"fine-tune 4 x 8", "fine-tune 32 x 1", "NPO 4 x 8", "generate() chunk 8"}
