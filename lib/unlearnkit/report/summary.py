"""The gatekeeper of the committed findings summary (docs/findings.json, which the README's results section is
written from): which profile reads it, and which set of seeds may replace it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, paths, runs
from ..former import Verdict
from ..studies import verdicts


def committed_summary(profile: str, path: Path = paths.SUMMARY) -> dict[str, Any] | None:
    """The committed summary (docs/findings.json) when ``profile`` is the one it is written for, else None."""
    if profile != config.BASE_PROFILE:
        return None
    return verdicts.read_summary(path)


def write_summary(profile: str, judged: Sequence[Verdict], path: Path = paths.SUMMARY,
                  seed_study: Mapping[str, Any] | None = None, claims: Sequence[Any] | None = None) -> str:
    """Notebook 10 on the default profile writes the committed summary beside the committed figures, but only from a
    set of seeds that includes the committed file's seeds (a one-seed run never replaces a six-seed table); other
    profiles keep theirs under runs/. Returns what it did, in a sentence."""
    if profile != config.BASE_PROFILE:
        return "not the default profile: no README summary"
    seeds = sorted({s for v in judged for s in v.seeds})
    committed = verdicts.read_summary(path)
    if not verdicts.may_replace(committed, seeds):
        kept = ", ".join(map(str, verdicts.summary_seeds(committed)))
        return (f"{path.relative_to(paths.ROOT) if path.is_relative_to(paths.ROOT) else path} kept: it is judged "
                f"over seeds {kept}, these findings over {', '.join(map(str, seeds)) or 'none'} (run the missing seeds "
                f"to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_text(path, json.dumps(config.jsonable(verdicts.summary(profile, judged, seed_study, claims)),
                                              indent=1, ensure_ascii=False) + "\n")
    return f"summary for the README: {paths.shown(path)} (seeds {', '.join(map(str, seeds))})"
