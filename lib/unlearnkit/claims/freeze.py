"""The frozen registry (#56 item 9, #58): ``runner freeze`` writes ``docs/claims.frozen.json`` once, after the
exploratory seeds' rerun and before any confirmatory seed runs: the revision, a sha256 of every registry entry (the
entry as ``docs/claims.yaml`` holds it, without ``amended``) and every judged claim's effect on each exploratory seed.
No code rewrites it. At aggregate, :func:`check` recomputes both and names every claim whose entry or exploratory
effect moved, so that a confirmatory verdict can be shown to rest on the registry and extractors as frozen.

The file is data: read with ``json``, its own content digest checked, never executed; a missing file means "not
frozen yet", an altered one (the digest over its content does not match) is refused in one line.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .. import paths

#: Where the frozen registry lives (committed, an input no code rewrites).
FROZEN = paths.ROOT / "docs" / "claims.frozen.json"
SCHEMA = 1
#: Two effects are the same when they differ by no more than this (a float written to JSON and read back is exact;
#: this leaves room for a summation order that moved in the last bit).
SAME = 1e-9


class FreezeError(ValueError):
    """The frozen registry cannot be read or was altered: one line, the runner exits 2."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def entry_digests(path: Path | None = None) -> dict[str, str]:
    """sha256 of every registry entry without its ``amended`` list (a change recorded as an amendment still moves
    the digest when it changes the entry: only the record of it is left out), by claim id."""
    data = yaml.safe_load((path or paths.CLAIMS).read_text(encoding="utf-8"))
    out = {}
    for entry in data.get("claims") or []:
        kept = {k: v for k, v in entry.items() if k != "amended"}
        out[str(entry["id"])] = hashlib.sha256(_canonical(kept).encode("utf-8")).hexdigest()
    return out


def _effect(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def effects_of(claims: Sequence[Any]) -> dict[str, dict[str, float | None]]:
    """Each judged claim's effect per seed (``ClaimVerdict.per_seed``), seeds as strings (JSON keys)."""
    return {c.claim: {str(r.seed): _effect(r.effect) for r in c.per_seed} for c in claims}


def content_digest(document: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical({k: v for k, v in document.items() if k != "sha256"}).encode()).hexdigest()


def freeze(claims: Sequence[Any], revision: str, seeds: Sequence[int], path: Path | None = None) -> dict[str, Any]:
    """Write the frozen registry from the claims judged over the exploratory ``seeds``; refuses to overwrite one."""
    path = FROZEN if path is None else path
    if path.exists():
        raise FreezeError(f"{path} exists: the registry is frozen once; remove it by hand (and say why in the "
                          "commit) to freeze again")
    document = {"schema": SCHEMA, "revision": revision, "seeds": sorted(int(s) for s in seeds),
                "entries": entry_digests(), "effects": effects_of(claims)}
    document["sha256"] = content_digest(document)
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return document


def read(path: Path | None = None) -> dict[str, Any] | None:
    """The frozen registry, or None before the freeze; :class:`FreezeError` when it is malformed or altered."""
    path = FROZEN if path is None else path
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FreezeError(f"{path.name} cannot be read: {exc}") from None
    if not isinstance(document, dict) or {"schema", "revision", "seeds", "entries", "effects",
                                          "sha256"} - set(document):
        raise FreezeError(f"{path.name} is not a frozen registry (schema, revision, seeds, entries, effects, sha256)")
    if document["sha256"] != content_digest(document):
        raise FreezeError(f"{path.name} was altered after the freeze: its content digest does not match")
    return document


def check(frozen: Mapping[str, Any], claims: Sequence[Any], digests: Mapping[str, str] | None = None
          ) -> dict[str, str]:
    """Every claim whose registry entry or exploratory effect moved since the freeze, with why (empty: none)."""
    digests = entry_digests() if digests is None else digests
    seeds = {str(s) for s in frozen["seeds"]}
    now = effects_of(claims)
    moved: dict[str, str] = {}
    for cid, digest in digests.items():
        if cid not in frozen["entries"]:
            moved[cid] = "registered after the freeze"
        elif frozen["entries"][cid] != digest:
            moved[cid] = "its registry entry changed after the freeze"
    for cid in frozen["entries"]:
        if cid not in digests:
            moved[cid] = "removed from the registry after the freeze"
    for cid, effects in frozen["effects"].items():
        if cid in moved or cid not in now:
            continue
        for s in sorted(seeds & set(effects), key=int):
            a, b = effects[s], now[cid].get(s)
            if (a is None) != (b is None) or (a is not None and abs(a - b) > SAME):
                moved[cid] = f"its effect on exploratory seed {s} moved from {a} to {b} (an extractor or a result)"
                break
    return dict(sorted(moved.items()))


def status(claims: Sequence[Any], path: Path | None = None) -> dict[str, Any]:
    """What the summary records: not frozen yet, or the freeze's revision and seeds and every claim that moved."""
    frozen = read(path)
    if frozen is None:
        return {"frozen": False}
    return {"frozen": True, "revision": frozen["revision"], "seeds": frozen["seeds"], "moved": check(frozen, claims)}
