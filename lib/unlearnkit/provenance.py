"""What made a result: the git revision of the workbook and the versions of the packages it ran with, recorded in
every metrics.json and on every page of the report."""

from __future__ import annotations

import platform
import subprocess
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
