"""The weights' digest: each weight file's size, modification time and sha256 beside the weights
(``digest.json``), what a model's weights are as one hash, and whether they are still the ones saved."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import paths

#: Beside a model's weights: each weight file's size, modification time and sha256, written when it is saved.
DIGEST = "digest.json"


def _weight_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def _sha256(path: Path) -> str:
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _record(path: Path, sha256: str | None = None) -> dict[str, Any]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256 or _sha256(path)}


def write_digest(folder: str | os.PathLike) -> dict[str, Any]:
    """Record the digest of ``folder``'s weight files (``digest.json``) and return it."""
    folder = Path(folder)
    digest = {p.name: _record(p) for p in _weight_files(folder)}
    paths.atomic_write_text(folder / DIGEST, json.dumps(digest, indent=1, sort_keys=True))
    return digest


def content_digest(folder: str | os.PathLike) -> str | None:
    """What a model folder's weights are, as one sha256 over its weight files' digests (:func:`weights_intact`
    checks them, hashing in full only what changed since the digest was written); None for a folder without intact
    safetensors weights. A read-only folder is hashed each time instead of keeping its digest."""
    import hashlib

    folder = Path(folder)
    try:
        if not weights_intact(folder):
            return None
        digest = json.loads((folder / DIGEST).read_text())
        parts = {name: record["sha256"] for name, record in sorted(digest.items())}
    except OSError:  # cannot keep a digest there: hash the files now
        files = _weight_files(folder)
        if not files or not all(safetensors_complete(p) for p in files):
            return None
        parts = {p.name: _sha256(p) for p in files}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def safetensors_complete(path: str | os.PathLike) -> bool:
    """Whether a safetensors file is as long as its own header says (8 bytes of header length, the JSON header,
    then the tensors' data up to the largest end offset): a truncated file is not."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            if not 2 <= n <= 100_000_000:
                return False
            header = json.loads(f.read(n))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        return path.stat().st_size == 8 + n + end
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False


def weights_intact(folder: str | os.PathLike) -> bool:
    """Whether ``folder``'s weight files are the ones saved: each file's size and modification time are compared with
    its digest (cheap), and it is hashed in full only when they differ (a copy: the record is then refreshed). A
    folder saved before digests existed gets one computed after a structural check of each file (never a retrain of
    a whole model); a file missing, added or truncated, or one whose size or time changed with its bytes, makes it not
    intact. Integrity against accident, not against a sender: bytes changed with size and time kept pass unhashed, and
    whoever sends a folder can rewrite its digest (docs/threat-model.md)."""
    folder = Path(folder)
    files = _weight_files(folder)
    if not files:
        return False
    try:
        digest = json.loads((folder / DIGEST).read_text())
    except FileNotFoundError:
        if not all(safetensors_complete(p) for p in files):
            return False
        write_digest(folder)
        return True
    except (OSError, ValueError):
        return False
    if not isinstance(digest, dict) or sorted(digest) != [p.name for p in files]:
        return False
    refreshed, changed = dict(digest), False
    for p in files:
        record, st = digest[p.name], p.stat()
        if not isinstance(record, dict):
            return False
        if record.get("size") == st.st_size and record.get("mtime_ns") == st.st_mtime_ns:
            continue
        if record.get("size") != st.st_size or record.get("sha256") != _sha256(p):
            return False
        refreshed[p.name], changed = _record(p, record["sha256"]), True
    if changed:
        paths.atomic_write_text(folder / DIGEST, json.dumps(refreshed, indent=1, sort_keys=True))
    return True
