"""Where the time goes: station timers (training, generation, scoring) on every long step, logged per process for
the runner (``benchmarks/workbook_profile.py`` tabulates them), and the progress switch of every long step's bar.
Infrastructure under every station: it imports nothing of the library."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def show_progress(requested: bool = True) -> bool:
    """Progress bars unless turned off, by the caller or by ``TQDM_DISABLE=1`` (batch runs set it)."""
    return requested and os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")


# --------------------------------------------------------------------------- where the time goes

#: The stations whose time ``benchmarks/workbook_profile.py`` reports; everything else in a notebook is "other".
STATIONS = ("training", "generation", "scoring")
#: Work run in worker processes (``workers.side_by_side``): its wall time is shared among the workers' stations.
WORKERS = "workers"
#: Where a process appends its station seconds (one JSON line per outermost span); the runner sets it per notebook.
STATION_LOG_VARIABLE = "UNLEARNKIT_STATION_LOG"

_station_stack = threading.local()
_station_lock = threading.Lock()
_station_seconds: dict[str, float] = {}


def station_seconds() -> dict[str, float]:
    """Seconds this process has spent in each station so far (exclusive: an inner station's time is its own)."""
    with _station_lock:
        return dict(_station_seconds)


def _add(record: dict[str, Any], key: str, seconds: float) -> None:
    record[key] = record.get(key, 0.0) + seconds


@contextmanager
def station(name: str, detail: str | None = None) -> Iterator[dict[str, Any]]:
    """Count the block's wall time to station ``name`` (an inner station's time goes to the inner one).

    With ``UNLEARNKIT_STATION_LOG`` set (the runner sets it for each notebook), the outermost span of a process
    appends one JSON line ``{"station": seconds, ...}`` to that file. The block gets a dict: a :data:`WORKERS` span
    puts the worker processes' own station seconds under ``"split"``, by which the profile shares out its wall
    time. Every span notes its start and end in the progress log (:func:`note_progress`; ``detail``: what it does,
    the timed function's name; ``depth``: how many spans it is inside)."""
    stack = getattr(_station_stack, "spans", None)
    if stack is None:
        stack = _station_stack.spans = []
    line: dict[str, Any] = stack[0]["line"] if stack else {}
    now = time.perf_counter()
    if stack:  # the outer station pauses
        _add(line, stack[-1]["name"], now - stack[-1]["since"])
    stack.append({"name": name, "since": now})
    if not line:
        stack[0]["line"] = line
    note_progress("start", name, detail, depth=len(stack) - 1)
    extra: dict[str, Any] = {}
    try:
        yield extra
    finally:
        end = time.perf_counter()
        began = stack.pop()
        _add(line, name, end - began["since"])
        if stack:  # an inner span: its end in the progress log (the outermost's, below, with its whole line)
            note_progress("end", name, detail, depth=len(stack), seconds=end - began["since"])
        for key, value in extra.get("split", {}).items():
            _add(line.setdefault("split", {}), key, value)
        if stack:
            stack[-1]["since"] = end  # the outer station resumes
        else:
            with _station_lock:
                for key, value in line.items():
                    if key != "split":
                        _add(_station_seconds, key, value)
            _log_station_line(line)
            note_progress("end", name, detail, depth=0, seconds=sum(v for k, v in line.items() if k != "split"))


def _log_station_line(line: Mapping[str, Any]) -> None:
    target = os.environ.get(STATION_LOG_VARIABLE)
    if not target:
        return
    record = json.dumps({"pid": os.getpid(), **line}) + "\n"
    with open(target, "a") as f:  # one short line per write: appends from several processes do not interleave
        f.write(record)


def timed(name: str) -> Callable:
    """Decorator: the function's calls count to station ``name`` (see :func:`station`)."""
    import functools

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with station(name, function.__name__):
                return function(*args, **kwargs)

        return wrapper

    return decorate


# --------------------------------------------------------------------------- progress, as it happens

#: Where a process appends its progress events (:func:`note_progress`): ``runner eval`` sets it for its kernel and
#: prints the events as they come (:mod:`unlearnkit.runner.progress`); unset, nothing is written.
PROGRESS_LOG_VARIABLE = "UNLEARNKIT_PROGRESS_LOG"


def note_progress(event: str, step: str, detail: str | None = None, **extra: Any) -> None:
    """Append ``{"t": unix time, "pid", "event": start|end|failed, "step", "detail", ...}`` to the progress log, if
    one is set: the start and end of every suite and long step (:func:`step`) and of every outermost station span."""
    target = os.environ.get(PROGRESS_LOG_VARIABLE)
    if not target:
        return
    record = {"t": time.time(), "pid": os.getpid(), "event": event, "step": step,
              **({"detail": detail} if detail else {}), **extra}
    with open(target, "a") as f:  # one short line per write: appends from several processes do not interleave
        f.write(json.dumps(record) + "\n")


@contextmanager
def step(name: str, **extra: Any) -> Iterator[None]:
    """A long step of a run (a suite, a model's part of it, one attack), its start and end in the progress log
    (``failed`` if it raised), with ``extra`` (the suite's estimated seconds) on the start line."""
    note_progress("start", name, **extra)
    started = time.perf_counter()
    try:
        yield
    except BaseException:
        note_progress("failed", name, seconds=time.perf_counter() - started)
        raise
    note_progress("end", name, seconds=time.perf_counter() - started)


# --------------------------------------------------------------------------- a notebook's seconds, by station


def children_cpu_seconds() -> float:
    """User and system CPU seconds of this process's finished children: a notebook's kernel, with the worker
    processes it waited for."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def log_lines(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def station_summary(lines: list[dict], wall: float) -> dict[str, float]:
    """Wall seconds of a notebook by station, from its kernel's station log (:func:`station`):
    training, generation and scoring as logged; the time the kernel waited on worker processes shared out in
    proportion to the workers' own seconds per station; ``other`` the rest of ``wall``."""
    out = dict.fromkeys((*STATIONS, "other"), 0.0)
    for line in lines:
        for key, value in line.items():
            if key in ("pid", "split"):
                continue
            if key == WORKERS:
                split = line.get("split") or {"other": 1.0}
                total = sum(split.values()) or 1.0
                for name, seconds in split.items():
                    out[name if name in out else "other"] += value * seconds / total
            else:
                out[key if key in out else "other"] += value
    out["other"] += max(0.0, wall - sum(out.values()))
    return out
