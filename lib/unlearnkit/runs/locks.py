"""Locks and atomic writes of the run store: an advisory file lock that dies with its process, and the whole-file
writes every result goes through."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import paths


@contextmanager
def file_lock(path: Path, shared: bool = False) -> Iterator[None]:
    """Hold an advisory lock on ``path`` (created if need be) for the block: one process at a time inside, the others
    wait (``shared``: any number of shared holders at once, which only an exclusive taker waits for). The lock dies
    with its process, so a killed holder never blocks the next one."""
    import fcntl

    handle = open_lock_file(path)
    try:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)


def open_lock_file(path: Path) -> int:
    """An open descriptor of the lock file ``path`` (created, with its folder, if need be), checked with
    :func:`paths.writable` and opened without following a link: a lock never creates or touches a file elsewhere."""
    path = paths.writable(path, "a lock file")
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)


#: Whole-file writes (paths.atomic_write_bytes / atomic_write_text), here where the notebooks' code looks for them.
atomic_write_bytes, atomic_write_text = paths.atomic_write_bytes, paths.atomic_write_text
