"""The gatekeeper of the committed findings summary (docs/findings.json, which the README's results section is
written from): which profile reads it, and which set of seeds may replace it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import config, paths, runs
from ..claims import summary as claim_summary


def committed_summary(profile: str, path: Path = paths.SUMMARY) -> dict[str, Any] | None:
    """The committed summary (docs/findings.json) when ``profile`` is the one it is written for, else None."""
    if profile != config.BASE_PROFILE:
        return None
    return claim_summary.read_summary(path)


def write_summary(summary: Mapping[str, Any], path: Path = paths.SUMMARY) -> str:
    """Notebook 10 on the default profile writes its summary (:func:`unlearnkit.claims.summary.build`) as the committed
    one beside the committed figures, but only from a set of seeds that includes the committed file's seeds (a
    one-seed run never replaces a six-seed table); other profiles keep theirs under runs/. Returns what it did, in a
    sentence."""
    if summary["profile"] != config.BASE_PROFILE:
        return "not the default profile: no README summary"
    seeds = claim_summary.summary_seeds(summary)
    committed = claim_summary.read_summary(path)
    if not claim_summary.may_replace(committed, seeds):
        kept = ", ".join(map(str, claim_summary.summary_seeds(committed)))
        return (f"{path.relative_to(paths.ROOT) if path.is_relative_to(paths.ROOT) else path} kept: it is judged "
                f"over seeds {kept}, these claims over {', '.join(map(str, seeds)) or 'none'} (run the missing seeds "
                f"to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_text(path, claim_summary.dumps(summary))
    return f"summary for the README: {paths.shown(path)} (seeds {', '.join(map(str, seeds))})"
