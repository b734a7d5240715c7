"""What made a result: the git revision of the workbook and the versions of the packages it ran with, recorded in
every metrics.json and on every page of the report; the run's launch time and the CPU model that computed it, recorded
per notebook in each committed seed's provenance.json (:mod:`unlearnkit.runs.committed`)."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

from . import paths

REPORTED_PACKAGES = (
    "torch", "transformers", "tokenizers", "peft", "accelerate", "datasets",
    "numpy", "scipy", "rouge-score", "papermill", "unlearnkit",
)


def git_revision(root: Path | None = None) -> str | None:
    """The short commit of the checkout, with ``-dirty`` when a tracked file other than the workbook's own outputs
    (:data:`paths.WRITTEN_BY_THE_WORKBOOK`: the reference seed's figures, the committed summary, the README) is
    modified. A change there is a result, not a change to the code: otherwise a reference-seed run that draws a figure
    with other bits (another machine, packing) marks every later notebook "-dirty", and a killed run cannot resume."""
    root = paths.ROOT if root is None else root
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        if out.returncode != 0:
            return None
        outputs = [f":(exclude){path.relative_to(paths.ROOT).as_posix()}" for path in paths.WRITTEN_BY_THE_WORKBOOK]
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *outputs],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in REPORTED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


#: Set by the runner as it launches a notebook (UTC, ISO 8601), inherited by the notebook's kernel: the launch time
#: each committed seed's provenance.json records for the notebooks the run changed.
LAUNCH_VARIABLE = "UNLEARNKIT_LAUNCHED"


def utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def launched() -> str:
    """When the run writing a result was launched: the runner's time (:data:`LAUNCH_VARIABLE`), else (a notebook run
    by hand, a test) the start of this process."""
    if os.environ.get(LAUNCH_VARIABLE):
        return os.environ[LAUNCH_VARIABLE]
    import psutil

    return utc(psutil.Process().create_time())


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """The CPU that computed a result: its model name, family and model number as /proc/cpuinfo gives them (the
    first processor's). Committed bits depend on it (the math library picks its kernels by CPU), so a reader of the
    results can see which CPU made them. Without /proc/cpuinfo: the platform's own name for the processor."""
    wanted = {"model name": "model_name", "cpu family": "family", "model": "model"}
    found: dict[str, str] = {}
    try:
        lines = cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep and found:
            break  # the end of the first processor's block
        if key in wanted and wanted[key] not in found:
            found[wanted[key]] = value.strip()
    return found or {"model_name": platform.processor() or platform.machine()}
