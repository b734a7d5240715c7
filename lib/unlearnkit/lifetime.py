"""A run's processes end when the runner does, also after ``kill -9``.

The runner records its process id in ``UNLEARNKIT_RUNNER_PID``; every process that imports the library with that
variable set (the notebook kernels papermill starts, the loky workers a kernel starts, which outlive their parent and
are re-parented to PID 1 when it dies) watches that process from a daemon thread and ends itself within about a
second of its going. No signal handler sees SIGKILL, and ``PR_SET_PDEATHSIG`` follows the parent thread, not the
runner; a watcher of the runner's id covers both. It imports nothing of the library.

A notebook's kernel also ends quietly, whoever started it (the runner, or papermill called directly as
docs/running.md shows): :func:`quiet_kernel_exit`.
"""

from __future__ import annotations

import logging
import os
import threading
import time

#: The runner's process id, which the processes it starts (and theirs) watch.
RUNNER_PID_VARIABLE = "UNLEARNKIT_RUNNER_PID"
#: Seconds between two looks at the runner.
INTERVAL_S = 1.0
_started: set[int] = set()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _watch(pid: int, interval: float) -> None:
    while alive(pid):
        time.sleep(interval)
    os._exit(70)  # the runner is gone: no cleanup that could write into the store half-way


def die_with_runner(interval: float = INTERVAL_S) -> bool:
    """Start (once per process) the daemon thread that ends this process when the runner named by
    ``UNLEARNKIT_RUNNER_PID`` is gone; False where there is none, or this process is the runner."""
    try:
        pid = int(os.environ.get(RUNNER_PID_VARIABLE, ""))
    except ValueError:
        return False
    if pid == os.getpid() or pid in _started:
        return False
    _started.add(pid)
    threading.Thread(target=_watch, args=(pid, interval), daemon=True, name="unlearnkit-runner-watch").start()
    return True


def mark_runner() -> None:
    """Make this process the runner the processes it starts watch."""
    os.environ[RUNNER_PID_VARIABLE] = str(os.getpid())


class DropShutdownTask(logging.Filter):
    """Drops asyncio's one record of ipykernel's control task destroyed at the kernel's exit, and nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        return not (text.startswith("Task was destroyed but it is pending") and "Kernel.dispatch_" in text)


def quiet_kernel_exit() -> None:
    """At a kernel's exit asyncio destroys ipykernel's still-pending control task (``Kernel.dispatch_control``) and
    logs "Task was destroyed but it is pending!" into a stderr ipykernel has already closed: "--- Logging error ---"
    and a traceback in the terminal after a clean run. Importing the library drops that one record (once per
    process; every other record of asyncio, and every warning, still shows), so a kernel that papermill started
    without the runner's extension (runner/kernel.py) ends as quietly as the runner's."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, DropShutdownTask) for f in logger.filters):
        logger.addFilter(DropShutdownTask())
