"""The instruction set the workbook computes with: AVX2 on every x86-64 machine that has it, so that machines of one
CPU model give the same bits, and machines of different models as close to the same as their libraries allow.

The same code, packages and seed gave different trained models on two machines of the same kind: PyTorch picks its
vectorised kernels (AVX2 or AVX-512) by the CPU it finds, and so do MKL's matrix products, oneDNN and NumPy's
ufuncs (``np.exp`` and ``np.log1p`` in float64 differ in their last bits between NumPy's AVX2 and AVX-512 paths).
A few last bits, over hundreds of optimizer steps and thousands of samples, move a verdict. So on an x86-64 CPU
with AVX2 and FMA the workbook asks each of them for its AVX2 path (:data:`PIN`), the widest one every such machine
has: PyTorch's ``ATEN_CPU_CAPABILITY``, MKL's conditional numerical reproducibility (``MKL_CBWR``), oneDNN's
``ONEDNN_MAX_CPU_ISA`` and NumPy's ``NPY_DISABLE_CPU_FEATURES`` (its AVX-512 groups).

Each variable is read by its library in the process that computes, once, and NumPy's at import: so the pin is set
where a process that computes is started (the Makefile's exports, the runner before it starts a kernel or a
worker, ``make lab``, ``runner train``) and, for a process started otherwise, when ``unlearnkit`` is imported (in
time for PyTorch, MKL and oneDNN, which read theirs at first use; NumPy is then imported already, so such a process
says so: :func:`active`). A value the user set is never overwritten, and ``UNLEARNKIT_NATIVE_ISA=1`` leaves every
library its own choice (the benchmark that measures what the pin costs runs both).

A machine without AVX2 (an old x86 CPU) or of another architecture (ARM: Apple silicon, Graviton) has no such pin:
it computes with its own kernels, and its bits differ from an AVX2 machine's. Its results are as valid; verdicts are
judged over training seeds (docs/metrics.md) so that no single run's last bits decide one.

What the pin does not reach, measured on an AMD EPYC with AVX-512: PyTorch's capability decides the bits of training
(AVX-512 and AVX2 train different models) but not of decoding here; MKL's branch decides the bits of sampling
(``MKL_CBWR=COMPATIBLE`` draws other samples than ``AVX2``, training aside), and no branch this machine offers (AVX2,
AVX, SSE4_2, COMPATIBLE) draws the samples behind the figures of notebooks 05-07 committed before the pin, whose
training bits it does reproduce: MKL picks its small-matrix kernels by CPU vendor and model beyond what ``MKL_CBWR=AVX2``
fixes. ``MKL_CBWR=COMPATIBLE``, MKL's branch for the same results on every x86 CPU, halves the training loop's
throughput (0.53x, benchmarks/train_throughput.py), so it is not the default; set it to compare samples across CPU
vendors bit for bit. Measured again on an Intel Xeon (family 6, model 207, AVX-512 FP16) in November 2026: with the
pin, the default profile's seed 0 trains other bits than the committed seed made on another machine (notebook 01's
base model already), every verdict unchanged; so each seed's provenance.json names the CPU that made its results,
and bit-for-bit reproduction is promised per CPU model only.
"""

from __future__ import annotations

import os
import platform
from collections.abc import MutableMapping

#: What each library is asked on an x86-64 CPU with AVX2 and FMA.
PIN = {
    "ATEN_CPU_CAPABILITY": "avx2",  # PyTorch's vectorised CPU kernels (default: AVX-512 where the CPU has it)
    "MKL_CBWR": "AVX2",  # MKL's code path for BLAS (matrix products), with reproducible results on it
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (PyTorch's mkldnn: bfloat16 matrix products, some fused kernels)
    "NPY_DISABLE_CPU_FEATURES": "X86_V4,AVX512_ICL,AVX512_SPR",  # NumPy's AVX-512 ufunc loops (exp, log1p, ...)
}
#: Set to 1 to leave every library its own choice of kernels (the pin's benchmark; a user who wants the speed).
NATIVE_VARIABLE = "UNLEARNKIT_NATIVE_ISA"


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def pinnable() -> bool:
    """True on an x86-64 CPU with AVX2 and FMA (read from /proc/cpuinfo: Linux; elsewhere no pin is set)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    return {"avx2", "fma"} <= _cpu_flags()


def native_requested(environ: MutableMapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return environ.get(NATIVE_VARIABLE, "").lower() in ("1", "true", "yes")


def pin_environment(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The variables to set on this machine: :data:`PIN` where it applies, nothing where it does not (another
    architecture, no AVX2) or where ``UNLEARNKIT_NATIVE_ISA=1`` asks for the machine's own kernels."""
    if native_requested(environ) or not pinnable():
        return {}
    return dict(PIN)


def pin(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set the pin in ``environ`` (default ``os.environ``: this process and every process it starts), leaving any
    variable the user set as it is; returns what it set."""
    environ = os.environ if environ is None else environ
    added = {k: v for k, v in pin_environment(environ).items() if k not in environ}
    environ.update(added)
    return added


def active() -> dict[str, str]:
    """What this process computes with, as its libraries report it: PyTorch's CPU capability and NumPy's highest
    x86 feature group in use (empty entries where a library is not imported or reports nothing)."""
    import sys

    out = {"pinned": ", ".join(f"{k}={os.environ[k]}" for k in PIN if k in os.environ) or "no"}
    if "torch" in sys.modules:
        out["torch"] = str(sys.modules["torch"].backends.cpu.get_cpu_capability())
    if "numpy" in sys.modules:
        try:
            from numpy._core._multiarray_umath import __cpu_features__ as features
        except ImportError:  # numpy < 2
            features = {}
        groups = [g for g in ("X86_V4", "X86_V3", "X86_V2") if features.get(g)]
        out["numpy"] = groups[0] if groups else "n/a"
    return out


if __name__ == "__main__":
    # ``python3 lib/unlearnkit/machine.py``: the pin as KEY=VALUE words, for the Makefile (no package needed).
    print(" ".join(f"{k}={v}" for k, v in pin_environment().items()))
