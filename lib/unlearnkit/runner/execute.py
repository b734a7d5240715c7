"""Papermill execution: one notebook run on a profile and seed into the run store (parameters injected, kernel
sockets of its own, a lock per executed copy, a failed run kept apart, the timing recorded), and a notebook that takes
a ``method`` run once per unlearning run of the profile."""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .. import config, paths, provenance, stations
from ..parameters_cell import cell_names as _cell_names
from ..parameters_cell import declared_keys, own_parameters
from ..parameters_cell import parameters_cell as _parameters_cell
from .lines import Refused, project_relative, run_label
from .record import already_done, record_timing, run_recipe

#: Notebooks run once per unlearning method of the profile (parameter ``method``).
PER_METHOD_PREFIXES = ("02",)
DEFAULT_TIMEOUT_S = 3600
#: Seconds a kernel may take to answer once started (papermill's default 60): on 2 cores under load with the runner
#: niced, importing torch alone took longer and a run failed before its first cell ("Kernel didn't respond").
KERNEL_START_TIMEOUT_S = 600


def _kernel_config(socket_dir: str | os.PathLike):
    """The kernels' setting: IPC transport (Unix sockets, files only this user reads) instead of TCP on localhost,
    so the kernel has nothing unencrypted to warn about. A setting, not a filter: every other warning still shows.

    The sockets go in ``socket_dir``, one folder per kernel: jupyter_client's default is ``kernel-ipc-<n>`` in the
    working directory with n the first number not taken, which two kernels started at the same moment (notebook 02's
    runs side by side, or two runners) can both pick, so each reads the other's messages ("Invalid Signature")."""
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": str(Path(socket_dir) / "kernel")}})


#: What every kernel the runner starts loads first: the extension that drops asyncio's note of the control task it
#: destroys at exit (runner/kernel.py), which otherwise printed a "Logging error" traceback after a clean run.
KERNEL_ARGUMENTS = ["--IPKernelApp.extensions=unlearnkit.runner.kernel"]


@functools.cache
def kernel_manager_class():
    """jupyter_client's kernel manager, but for the SIGINT it sends a kernel just before asking it to shut down: the
    workbook's kernels have run their last cell by then, and a kernel still answering a message logged
    "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel" into the runner's output after a clean run. An
    interrupt asked for while the kernel runs (a cell's timeout) still goes; only the one of the shutdown is left out."""
    from jupyter_client.manager import AsyncKernelManager

    class QuietShutdownKernelManager(AsyncKernelManager):
        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

    return QuietShutdownKernelManager


def injected_parameters(notebook: Path, params: config.Params, own: dict | None = None,
                        changed: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """What papermill injects: the profile's name, the merged profile's values of the keys the notebook declares
    and of the ``changed`` ones, the keys set for this run (``changed``, and another seed than the profile's: they win
    even where equal to default.yaml's, :data:`config.KEYS_SET`) and the notebook's ``own`` parameters (``method``)."""
    from .. import runs

    declared = declared_keys(json.loads(notebook.read_text()))
    keys = [*declared, *(k for k in changed if k not in declared)]
    named = sorted({*changed, *(() if params.seed == runs.reference_seed(params.profile) else ("seed",))} - {"profile"})
    return {"profile": params.profile, **{k: params[k] for k in keys if k != "profile"},
            **({config.KEYS_SET: named} if named else {}), **(own or {})}


def _parameterised(notebook: Path, parameters: dict[str, Any]):
    """The source notebook, in memory, with every injected key that its parameters cell does not assign added to
    that cell (at the profile's value), so papermill knows each one: a key read through the library (notebook 02
    reads ``unlearn_lr`` there) is a parameter of the run, not an unknown one."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    cell = _parameters_cell(nb)
    assigned = {name for names in _cell_names(cell) for name in names}
    extra = [k for k in parameters if k not in assigned]
    if extra:
        cell["source"] = cell["source"] + "".join(f"\n{k} = {parameters[k]!r}  # set for this run" for k in extra)
    return nb


def _cores() -> int:
    from .. import workers

    return workers.cores()


def run_notebook(notebook: Path, params: config.Params, own: dict | None = None, suffix: str = "",
                 timeout: int = DEFAULT_TIMEOUT_S, changed: list[str] | tuple[str, ...] = (),
                 skip_done: bool = False, out: Path | None = None) -> Path:
    """Execute ``notebook`` on the profile and seed of ``params`` into ``runs/<profile>/seed-<s>/<stem><suffix>.ipynb``,
    then record in the executed copy's metadata (``unlearnkit.timing``) how long it took, the CPU seconds its kernel
    and workers used and the seconds of each station (:func:`stations.station_summary`): what
    ``benchmarks/workbook_profile.py`` tabulates. With ``skip_done`` a notebook already run with the same commit
    and parameters (:func:`already_done`) is not run again. ``out``: another place in the store for the executed
    copy (an evaluation's folder)."""
    import papermill

    from .. import runs

    parameters = injected_parameters(notebook, params, own, changed)
    extra = {**{k: params[k] for k in changed}, **(own or {})}
    out = paths.writable(out or runs.executed_notebook(params, f"{notebook.stem}{suffix}"), "an executed notebook")
    out.parent.mkdir(parents=True, exist_ok=True)
    recipe = run_recipe(notebook, parameters)
    label = run_label(params)
    if skip_done and already_done(out, recipe):
        print(f"{label} {notebook.name}{' ' + json.dumps(extra) if extra else ''}: done already (same commit and "
              f"parameters), not run again", flush=True)
        return out
    with output_lock(out):  # one runner at a time writes this notebook; the lock dies with the process
        os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars in batch runs: the kernel inherits this
        log = paths.writable(out.with_name(f".{out.stem}.stations.{os.getpid()}.jsonl"), "a station log")  # per runner
        log.unlink(missing_ok=True)
        os.environ[stations.STATION_LOG_VARIABLE] = str(log)  # the kernel inherits this
        started, cpu_before = time.time(), stations.children_cpu_seconds()
        os.environ[provenance.LAUNCH_VARIABLE] = provenance.utc(started)  # the kernel inherits this: provenance.json
        print(f"{label} {notebook.name}{' ' + json.dumps(extra) if extra else ''} -> {project_relative(out)}",
              flush=True)
        sockets = tempfile.mkdtemp(prefix="unlearnkit-kernel-")
        # papermill writes the executed copy cell by cell: into a hidden name, moved over the last good copy only once the
        # run succeeded, so a failed or interrupted run never replaces it (the failed copy goes to failed/, named).
        running = paths.writable(out.with_name(f".{out.stem}.running.ipynb"), "a running notebook's copy")
        failed = paths.writable(failed_copy(out), "a failed run's copy")
        whole_copies_in(out.parent)
        try:
            papermill.execute_notebook(_parameterised(notebook, parameters), str(running), parameters=parameters,
                                       cwd=str(paths.NOTEBOOKS), kernel_name="python3", execution_timeout=timeout,
                                       start_timeout=KERNEL_START_TIMEOUT_S, progress_bar=False, log_output=False, config=_kernel_config(sockets),
                                       kernel_manager_class=kernel_manager_class(), extra_arguments=KERNEL_ARGUMENTS)
        except BaseException as exc:
            log.unlink(missing_ok=True)  # a failed run leaves its copy in failed/, no station log behind
            if running.exists():  # a whole notebook (whole_copies_in), moved by a rename: the failed copy is whole too
                failed.parent.mkdir(exist_ok=True)
                os.replace(running, failed)
                exc.failed_copy = failed  # what the runner's failure line names
            if hasattr(exc, "add_note"):
                exc.add_note(f"the failed run's copy: {project_relative(failed)}; the last good one, if any, is kept at {project_relative(out)}")
            raise
        finally:
            os.environ.pop(stations.STATION_LOG_VARIABLE, None)
            os.environ.pop(provenance.LAUNCH_VARIABLE, None)
            shutil.rmtree(sockets, ignore_errors=True)
        wall = time.time() - started
        timing = {"started": started, "wall_s": wall, "cpu_s": stations.children_cpu_seconds() - cpu_before,
                  "cores": _cores(), "stations": stations.station_summary(stations.log_lines(log), wall)}
        log.unlink(missing_ok=True)
        record_timing(running, timing, {"git_revision": provenance.git_revision(), "seed": params.seed,
                                         "packages": provenance.package_versions(), "parameters": extra}, recipe)
        os.replace(running, out)
        failed.unlink(missing_ok=True)  # an earlier failure of this notebook is superseded
    print(f"{label} {notebook.name}{' ' + json.dumps(extra) if extra else ''} done in {wall:.0f} s",
          flush=True)
    return out


def output_lock(out: Path):
    """Hold an exclusive lock on the executed notebook ``out`` for its run (the open lock file: close it to release;
    the lock dies with the process): a second runner that would write the same notebook, with the same or other
    parameters, is refused in one line instead of overwriting it."""
    import fcntl

    from ..runs.locks import open_lock_file

    path = out.with_name(f".{out.stem}.lock")
    while True:
        handle = os.fdopen(open_lock_file(path), "r+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise Refused(f"another runner is writing {project_relative(out)} now: wait for it, or run another seed or "
                          "profile") from None
        # A holder removes the file as it releases (HeldLock.close): a lock taken on the file it removed guards
        # nothing, since the next runner creates and locks a new one. Held only while the path is still this file.
        try:
            if os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
                return HeldLock(handle, path)
        except FileNotFoundError:
            pass
        handle.close()


class HeldLock:
    """An executed notebook's lock, held (:func:`output_lock`): released by :meth:`close` or at the end of a ``with``
    block, after a good or a failed run alike, its file removed while still held (no lock file stays behind)."""

    def __init__(self, handle, path: Path) -> None:
        self.handle, self.path = handle, path

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if not self.handle.closed:
            self.path.unlink(missing_ok=True)
            self.handle.close()


@functools.cache
def whole_copies_in(folder: Path) -> None:
    """papermill writes the executed copy in place after each cell (``open(path, "w")``): a full disk cut it short,
    and the failed run's copy kept was cut JSON. Its writes of any notebook under ``folder`` go through
    :func:`paths.atomic_write_text` instead (papermill's own I/O registry, by path prefix): each save is the whole
    notebook or leaves the last whole one, and a failed save names the file."""
    from papermill.iorw import LocalHandler, papermill_io

    class WholeCopies(LocalHandler):
        def write(self, buf: str, path: str) -> None:
            paths.atomic_write_text(Path(path), buf)

    papermill_io.register(f"{folder}{os.sep}", WholeCopies())


def failed_copy(out: Path) -> Path:
    """Where a failed run of the executed notebook ``out`` is kept: ``failed/<name>`` beside it, never taken for a
    page of the report or a result."""
    return out.parent / "failed" / out.name


def run(notebook: Path, params: config.Params, own: dict | None = None, timeout: int = DEFAULT_TIMEOUT_S,
        changed: list[str] | tuple[str, ...] = (), skip_done: bool = False) -> list[Path]:
    """Run one notebook; one that takes a ``method`` runs once per unlearning run of the profile: those runs side by
    side in up to ``jobs`` processes, except the last, which runs after them, since its notebook compares them all.
    ``skip_done``: see :func:`run_notebook`."""
    from .. import workers

    own = dict(own or {})
    if notebook.stem.startswith(PER_METHOD_PREFIXES) and "method" not in own:
        if not params.methods:
            raise Refused(f"profile {params.profile!r} lists no 'methods' for {notebook.name}")
        *first, last = params.methods
        done = workers.side_by_side(run_notebook, [(notebook, params, {**own, "method": m}, f"_{m}", timeout, changed,
                                                   skip_done) for m in first], params.jobs, desc=notebook.stem)
        workers.release_workers()  # their CPU seconds counted now, not in the next notebook's
        return [*done, run_notebook(notebook, params, {**own, "method": last}, f"_{last}", timeout, changed,
                                    skip_done)]
    suffix = f"_{own['method']}" if "method" in own and notebook.stem.startswith(PER_METHOD_PREFIXES) else ""
    takes = own_parameters(notebook)
    own = {k: v for k, v in own.items() if k in takes}
    return [run_notebook(notebook, params, own, suffix, timeout, changed, skip_done)]
