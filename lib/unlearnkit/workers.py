"""Independent work side by side: the process pool (joblib's loky executor), each worker with its share of the
cores (``UNLEARNKIT_CORES``, the one core-share policy: a process given a share uses that many torch threads), the
parent's run store, its station seconds and what it printed handed back. Infrastructure under the stations that use
it (pipeline, studies, runner); the per-model thread count of tiny models is :func:`unlearnkit.models.cpu_threads`."""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from . import paths, stations

#: The cores a process may use, where a runner or a worker pool gave it a share (unset: the machine's).
CORES_VARIABLE = "UNLEARNKIT_CORES"


def machine_cores() -> int:
    """The cores this machine lets the process run on (its CPU affinity, which containers narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cores() -> int:
    """The cores this process may use: its share where ``UNLEARNKIT_CORES`` gives one, else the machine's."""
    share = os.environ.get(CORES_VARIABLE)
    return max(1, int(share)) if share else machine_cores()


def workers_for(jobs: int | None, tasks: int) -> int:
    """How many worker processes run ``tasks`` independent tasks: ``jobs``, never more than the tasks; 1 means in
    this process, one after the other. ``jobs`` None is one per core of this process's share on a CPU machine, and
    one where there is a GPU (the GPU is what the tasks share: one process drives it)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be a positive number of worker processes (or null for one per core), got {jobs!r}")
    if jobs is None:
        jobs = 1 if torch.cuda.is_available() else cores()
    return max(1, min(jobs, tasks))


def threads_per_worker(workers: int) -> int:
    """The intra-op threads of each of ``workers`` processes sharing this process's cores (at least one)."""
    return max(1, cores() // max(1, workers))


def _apply_core_share() -> None:
    """A process given a share of the cores (a notebook of several run side by side, a worker) uses that many torch
    threads: more would only wait for each other."""
    if os.environ.get(CORES_VARIABLE):
        torch.set_num_threads(cores())


_apply_core_share()


def _idle_ignores_interrupt() -> None:
    """A worker's initializer: between tasks it ignores SIGINT, as ipykernel does when it is idle. The workers of a
    notebook's kernel are in the kernel's process group, and jupyter_client sends that group a SIGINT just before it
    asks the kernel to shut down, at the end of every clean run: each idle worker died of it with a "Traceback ...
    KeyboardInterrupt" from loky's idle loop in the terminal of whoever called papermill. A task still runs with
    Python's own handler (:func:`_in_worker`), so Ctrl-C or a cell's timeout interrupts it as before."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _in_worker(function, args: tuple, threads: int, environment: dict[str, str], run_store: dict[str, str]):
    """One task in a worker process: its share of the cores, the parent's run store, its station seconds, and what
    it printed (handed back, so that it shows where the parent prints: in a notebook, under the cell). The task
    runs with SIGINT raising KeyboardInterrupt; the idle worker ignores it again after (:func:`_idle_ignores_interrupt`)."""
    idle = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _task(function, args, threads, environment, run_store)
    finally:
        signal.signal(signal.SIGINT, idle)


def _task(function, args: tuple, threads: int, environment: dict[str, str], run_store: dict[str, str]):
    import contextlib
    import io

    os.environ.update(environment)
    os.environ[CORES_VARIABLE] = str(threads)
    os.environ.pop(stations.STATION_LOG_VARIABLE, None)  # the parent logs the workers' seconds as one span
    torch.set_num_threads(threads)
    for name, value in run_store.items():
        setattr(paths, name, Path(value))
    before, started = stations.station_seconds(), time.perf_counter()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        result = function(*args)
    wall = time.perf_counter() - started
    spent = {k: v - before.get(k, 0.0) for k, v in stations.station_seconds().items() if v - before.get(k, 0.0) > 0}
    spent["other"] = max(0.0, wall - sum(spent.values()))
    return result, spent, out.getvalue(), err.getvalue()


#: Environment a worker takes from its parent at every task (loky's workers outlive one call).
_WORKER_ENVIRONMENT = ("TQDM_DISABLE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TOKENIZERS_PARALLELISM",
                       "UNLEARNKIT_TOFU_DIR", "UNLEARNKIT_HP_QA", "UNLEARNKIT_JBB", "ACCELERATE_USE_CPU")


#: How long an idle worker of :func:`side_by_side` waits for more work before it quits (loky's default is 300 s). A
#: notebook calls side_by_side many times with minutes of its own work between; a worker that quits just as the next
#: tasks arrive makes loky start another and warn "A worker stopped while some jobs were given to the executor",
#: which the work does not suffer from. Workers live for the kernel (release_workers ends them at a runner's batch).
IDLE_WORKER_TIMEOUT_S = 3600.0
#: loky's warning for that case: restarted and harmless, so not shown to a reader (any other warning is).
WORKER_STOPPED = "A worker stopped while some jobs were given to the executor"


def side_by_side(function, tasks: Sequence[tuple], jobs: int | None, desc: str = "workers") -> list:
    """``[function(*args) for args in tasks]``, the tasks run side by side in worker processes (joblib's loky
    executor), each worker with its share of this process's cores; results in the order of ``tasks``.

    ``jobs`` worker processes at most (None: one per core); with ``jobs`` 1, or a single task, the tasks run here,
    one after the other. The tasks must be independent: each reads and writes the run store on its own (a model
    trained in a worker is saved there and loaded by the caller), and ``function`` must be importable (a
    library function, not one defined in a notebook). A worker's exception is raised here."""
    tasks = [tuple(t) for t in tasks]
    workers = workers_for(jobs, len(tasks))
    if workers == 1:
        return [function(*args) for args in tasks]
    from joblib import Parallel, delayed, parallel_config
    from tqdm.auto import tqdm

    threads = threads_per_worker(workers)
    environment = {k: os.environ[k] for k in _WORKER_ENVIRONMENT if k in os.environ}
    run_store = {"RUNS": str(paths.RUNS), "DATA": str(paths.DATA), "ROOT": str(paths.ROOT),
                 "NOTEBOOKS": str(paths.NOTEBOOKS), "PARAMS": str(paths.PARAMS), "FIGURES": str(paths.FIGURES)}
    split: dict[str, float] = {}
    results = []
    with stations.station(stations.WORKERS) as span, warnings.catch_warnings(), \
            parallel_config(backend="loky", idle_worker_timeout=IDLE_WORKER_TIMEOUT_S,
                            initializer=_idle_ignores_interrupt):
        warnings.filterwarnings("ignore", message=WORKER_STOPPED, category=UserWarning)
        bar = tqdm(total=len(tasks), desc=desc, disable=not stations.show_progress())
        parallel = Parallel(n_jobs=workers, return_as="generator")
        for result, spent, printed, warned in parallel(delayed(_in_worker)(function, args, threads, environment,
                                                                          run_store) for args in tasks):
            sys.stdout.write(printed)
            sys.stderr.write(warned)
            results.append(result)
            for key, value in spent.items():
                split[key] = split.get(key, 0.0) + value
            bar.update(1)
        bar.close()
        span["split"] = split  # what the workers spent, by station: the profile shares the span's wall time out
    return results


def release_workers() -> None:
    """Shut the worker processes of :func:`side_by_side` down and wait for them (they are otherwise kept for the next
    call, and idle ones quit after five minutes): a runner does it after a batch of notebooks, so that their CPU time
    is counted there and not in the next notebook's."""
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor  # joblib's loky backend keeps one executor per process, reused
    if executor is not None:
        executor.shutdown(wait=True)
