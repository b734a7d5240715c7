"""What made a result: the git revision of the workbook and the versions of the packages it ran with, recorded in
every metrics.json and on every page of the report."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata

from . import paths

REPORTED_PACKAGES = (
    "torch", "transformers", "tokenizers", "peft", "accelerate", "datasets",
    "numpy", "scipy", "rouge-score", "papermill", "unlearnkit",
)


def git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True, timeout=10
        )
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=paths.ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
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
