"""Run the workbook's notebooks through papermill: ``python -m unlearnkit.runner 01 --profile smoke``.

Each run merges the layered profile (``notebooks/params/<profile>.yaml`` over the profiles it extends), hands
papermill the parameters the notebook declares (its parameters cell lists the keys it reads) and the profile's
name, executes the source notebook with ``notebooks/`` as working directory and writes the executed copy to
``runs/<profile>/seed-<seed>/<stem>.ipynb``; source notebooks are never executed in place. ``--set key=value``
overrides a parameter (``--set seed=3``: another training seed, whose runs live apart). Notebooks that take a
``method`` run once per unlearning run of the profile.

Training seeds: ``seed S`` runs every notebook before the findings notebook for seed S (one command per seed, for
any job scheduler), ``aggregate`` runs the findings notebook, which judges every finding over the seeds present, and
``seeds S1 S2 ...`` does both, the seeds side by side (``jobs``); a notebook already run for that seed with the same
commit and parameters is skipped, so a killed ``seeds`` resumes where it stopped.

Every parameter is merged once and checked once, at the front door, before a kernel starts or a file is written:
a key that default.yaml does not declare (by ``--set``, a profile file or a parameters cell), a value outside what
its key allows (``config.CONSTRAINTS``), a split the data source lacks or a run that no method or
``method_settings`` names is refused in one line, with exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from . import config, paths, provenance, stations
from .parameters_cell import (  # noqa: F401 (the runner's names for them)
    OWN_PARAMETERS_MARKER,
    declared_keys,
    default_yaml_text,
    own_parameters,
    parameters_in_sync,
    parameters_source,
    sync_parameters,
)
from .parameters_cell import cell_keys as _cell_keys
from .parameters_cell import cell_names as _cell_names
from .parameters_cell import parameters_cell as _parameters_cell

#: Notebooks run once per unlearning method of the profile (parameter ``method``).
PER_METHOD_PREFIXES = ("02",)
DEFAULT_TIMEOUT_S = 3600


def _kernel_config(socket_dir: str | os.PathLike):
    """The kernels' setting: IPC transport (Unix sockets, files only this user reads) instead of TCP on localhost,
    so the kernel has nothing unencrypted to warn about. A setting, not a filter: every other warning still shows.

    The sockets go in ``socket_dir``, one folder per kernel: jupyter_client's default is ``kernel-ipc-<n>`` in the
    working directory with n the first number not taken, which two kernels started at the same moment (notebook 02's
    runs side by side, or two runners) can both pick, so each reads the other's messages ("Invalid Signature")."""
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": str(Path(socket_dir) / "kernel")}})


def source_notebooks() -> list[Path]:
    return sorted(p for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def all_source_notebooks() -> list[Path]:
    """The numbered notebooks and the evaluation of one's own model (runner eval): what check-clean, strip and
    sync-params keep in order."""
    return [*source_notebooks(), eval_notebook()]


def find_notebook(key: str) -> Path:
    matches = [p for p in source_notebooks() if p.stem == key or p.stem.startswith(f"{key}_")]
    if len(matches) != 1:
        known = ", ".join(p.stem for p in source_notebooks())
        raise Refused(f"no single notebook matches {key!r}; notebooks: {known}")
    return matches[0]


class Refused(SystemExit):
    """A command refused before any work: its one-line reason goes to stderr, the exit code is 2."""

    def __init__(self, message: str):
        print(message, file=sys.stderr, flush=True)
        super().__init__(2)


def checked_params(profile: str, overrides: dict | None = None, runs: list[str] | tuple[str, ...] = ()) -> config.Params:
    """:func:`profile_params`, then the checks that need the data source and the runs (``pipeline.check_params``;
    ``runs``: runs asked for by name), each refused (:class:`Refused`)."""
    from . import pipeline

    params = profile_params(profile, overrides)
    try:
        return pipeline.check_params(params, runs)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def profile_params(profile: str, overrides: dict | None = None) -> config.Params:
    """The merged profile with ``overrides`` (profile keys only), checked: a bad profile, key or value is refused."""
    try:
        return config.Params.load(profile, **(overrides or {}))
    except (ValueError, KeyError, TypeError) as exc:
        raise Refused(str(exc)) from None


def reads(notebook: Path) -> set[str]:
    """Every key a notebook reads: the profile sections it reads (``runs.keys_read``), its parameters cell and its
    own parameters."""
    from . import runs

    return runs.keys_read(notebook.stem) | set(_cell_keys(notebook)) | set(own_parameters(notebook))


class Plan(NamedTuple):
    """What a ``run`` command will do, checked: the notebooks, the merged parameters, the notebooks' own
    parameters (``method``) and the overridden profile keys."""

    notebooks: list[Path]
    params: config.Params
    own: dict[str, Any]
    changed: list[str]


def plan(target: str, profile: str, overrides: dict[str, Any], skip: tuple[str, ...] = ()) -> Plan:
    """The front door of ``run``: find the notebooks (``all`` but those of ``skip``), merge the profile with the
    overrides once, and refuse (:class:`Refused`) anything wrong before a kernel starts or a file is written. A key
    the chosen notebooks do not read is named in one line on stderr (the run goes on)."""
    notebooks = source_notebooks() if target == "all" else [find_notebook(target)]
    notebooks = [nb for nb in notebooks if nb.stem not in skip]
    own_names = {name for nb in notebooks for name in own_parameters(nb)}
    profile_keys = {k: v for k, v in overrides.items() if k in config.PARAMETER_NAMES}
    own = {k: v for k, v in overrides.items() if k not in config.PARAMETER_NAMES}
    unknown = [k for k in own if k not in own_names]
    if unknown:
        raise Refused(config.unknown_message(unknown, known=[*config.PARAMETER_NAMES, *sorted(own_names)]))
    for nb in notebooks:
        try:
            config.check_known(_cell_keys(nb), f" in the parameters cell of {nb.name}")
        except KeyError as exc:
            raise Refused(str(exc)) from None
    if "method" in own and not isinstance(own["method"], str):
        raise Refused(f"method must be a run name, got {own['method']!r}")
    params = checked_params(profile, profile_keys, [own["method"]] if "method" in own else [])
    from . import runs

    changed = sorted(k for k in profile_keys if k != "seed")  # a seed has its own folders (make notebooks SEED=3)
    if changed and runs.writes_committed(params):
        raise Refused(f"--set {', '.join(changed)} would change the committed results of profile {params.profile!r} "
                      f"(figures/, results/{params.profile}/, docs/findings.json): put your values in a profile of "
                      f"your own (notebooks/params/mine.yaml: 'extends: {params.profile}' and the keys) and run "
                      "--profile mine")
    read = [reads(nb) for nb in notebooks]
    for key in overrides:
        if not any(key in keys for keys in read):
            who = f"notebook {notebooks[0].stem[:2]}" if len(notebooks) == 1 else "no notebook"
            print(f"{who} {'does not read' if len(notebooks) == 1 else 'reads'} {key}", file=sys.stderr, flush=True)
    return Plan(notebooks, params, own, sorted(profile_keys))


def injected_parameters(notebook: Path, params: config.Params, own: dict | None = None,
                        changed: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """What papermill injects: the profile's name, the merged profile's values of the keys the notebook declares
    and of the ``changed`` ones, the keys set for this run (``changed``, and another seed than the profile's: they win
    even where equal to default.yaml's, :data:`config.KEYS_SET`) and the notebook's ``own`` parameters (``method``)."""
    from . import runs
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


def _label(params: config.Params) -> str:
    """How the runner's lines name a run: ``[default]`` for the profile's own seed, ``[default seed 3]`` else
    (``[default seed 0 data seed 1]`` on another corpus draw)."""
    from . import runs

    data = "" if params.corpus_draw == runs.reference_draw(params.profile, params.seed) else f" data seed {params.corpus_draw}"
    return f"[{params.profile}{'' if runs.is_reference_seed(params) else f' seed {params.seed}'}{data}]"


def run_recipe(notebook: Path, parameters: dict[str, Any]) -> dict[str, Any]:
    """What an executed notebook was made from: the commit and the injected parameters. A run whose recipe matches
    an executed copy's, on a clean checkout, need not run again (:func:`already_done`)."""
    return {"git_revision": provenance.git_revision(), "notebook": notebook.name,
            "parameters": config.params_hash(config.jsonable(parameters))}


def already_done(out: Path, recipe: dict[str, Any]) -> bool:
    """True when ``out`` is a finished run of ``recipe`` (its timing recorded, which happens after the last cell) on
    a committed revision: a modified working tree (``-dirty``) always runs again."""
    revision = recipe.get("git_revision")
    if not out.exists() or not revision or revision.endswith("-dirty"):
        return False
    try:
        record = json.loads(out.read_text()).get("metadata", {}).get("unlearnkit", {})
    except (OSError, ValueError):
        return False
    return bool(record.get("timing")) and record.get("recipe") == recipe


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

    from . import runs

    parameters = injected_parameters(notebook, params, own, changed)
    extra = {**{k: params[k] for k in changed}, **(own or {})}
    out = out or runs.executed_notebook(params, f"{notebook.stem}{suffix}")
    out.parent.mkdir(parents=True, exist_ok=True)
    recipe = run_recipe(notebook, parameters)
    label = _label(params)
    if skip_done and already_done(out, recipe):
        print(f"{label} {notebook.name}{' ' + json.dumps(extra) if extra else ''}: done already (same commit and "
              f"parameters), not run again", flush=True)
        return out
    with output_lock(out):  # one runner at a time writes this notebook; the lock dies with the process
        os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars in batch runs: the kernel inherits this
        log = out.with_name(f".{out.stem}.stations.{os.getpid()}.jsonl")  # per runner: two never share a log
        log.unlink(missing_ok=True)
        os.environ[stations.STATION_LOG_VARIABLE] = str(log)  # the kernel inherits this
        started, cpu_before = time.time(), stations.children_cpu_seconds()
        print(f"{label} {notebook.name}{' ' + json.dumps(extra) if extra else ''} -> {_shown(out)}",
              flush=True)
        sockets = tempfile.mkdtemp(prefix="unlearnkit-kernel-")
        # papermill writes the executed copy cell by cell: into a hidden name, moved over the last good copy only once the
        # run succeeded, so a failed or interrupted run never replaces it (the failed copy goes to failed/, named).
        running = out.with_name(f".{out.stem}.running.ipynb")
        try:
            papermill.execute_notebook(_parameterised(notebook, parameters), str(running), parameters=parameters,
                                       cwd=str(paths.NOTEBOOKS), kernel_name="python3", execution_timeout=timeout,
                                       progress_bar=False, log_output=False, config=_kernel_config(sockets))
        except BaseException as exc:
            failed = failed_copy(out)
            if running.exists():
                failed.parent.mkdir(exist_ok=True)
                os.replace(running, failed)
            if hasattr(exc, "add_note"):
                exc.add_note(f"the failed run's copy: {_shown(failed)}; the last good one, if any, is kept at {_shown(out)}")
            raise
        finally:
            os.environ.pop(stations.STATION_LOG_VARIABLE, None)
            shutil.rmtree(sockets, ignore_errors=True)
        wall = time.time() - started
        timing = {"started": started, "wall_s": wall, "cpu_s": stations.children_cpu_seconds() - cpu_before,
                  "cores": _cores(), "stations": stations.station_summary(stations.log_lines(log), wall)}
        log.unlink(missing_ok=True)
        _record_timing(running, timing, {"git_revision": provenance.git_revision(), "seed": params.seed,
                                         "packages": provenance.package_versions(), "parameters": extra}, recipe)
        os.replace(running, out)
        failed_copy(out).unlink(missing_ok=True)  # an earlier failure of this notebook is superseded
    print(f"{label} {notebook.name}{' ' + json.dumps(extra) if extra else ''} done in {wall:.0f} s",
          flush=True)
    return out


def output_lock(out: Path):
    """Hold an exclusive lock on the executed notebook ``out`` for its run (the open lock file: close it to release;
    the lock dies with the process): a second runner that would write the same notebook, with the same or other
    parameters, is refused in one line instead of overwriting it."""
    import fcntl

    path = out.with_name(f".{out.stem}.lock")
    handle = open(path, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise Refused(f"another runner is writing {_shown(out)} now: wait for it, or run another seed or profile") \
            from None
    return handle


def failed_copy(out: Path) -> Path:
    """Where a failed run of the executed notebook ``out`` is kept: ``failed/<name>`` beside it, never taken for a
    page of the report or a result."""
    return out.parent / "failed" / out.name


def _cores() -> int:
    from . import workers

    return workers.cores()


def _record_timing(executed: Path, timing: dict, provenance: dict | None = None, recipe: dict | None = None) -> None:
    """Keep in the executed notebook's metadata how long it took and what made it (the report's provenance line,
    and the recipe by which a rerun of the same seed knows it is done: :func:`already_done`)."""
    from . import runs

    nb = json.loads(executed.read_text())
    record = nb.setdefault("metadata", {}).setdefault("unlearnkit", {})
    record["timing"] = timing
    if provenance is not None:
        record["provenance"] = provenance
    if recipe is not None:
        record["recipe"] = recipe
    runs.atomic_write_text(executed, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def _shown(path: Path) -> str:
    """A path relative to the project when it is inside it (runs/ may be elsewhere, e.g. in tests)."""
    try:
        return str(path.relative_to(paths.ROOT))
    except ValueError:
        return str(path)


def run(notebook: Path, params: config.Params, own: dict | None = None, timeout: int = DEFAULT_TIMEOUT_S,
        changed: list[str] | tuple[str, ...] = (), skip_done: bool = False) -> list[Path]:
    """Run one notebook; one that takes a ``method`` runs once per unlearning run of the profile: those runs side by
    side in up to ``jobs`` processes, except the last, which runs after them, since its notebook compares them all.
    ``skip_done``: see :func:`run_notebook`."""
    from . import workers

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


def run_seed(profile: str, seed: int, overrides: dict[str, Any], timeout: int = DEFAULT_TIMEOUT_S,
             log: bool = False) -> int:
    """Every notebook before the findings notebook, for training seed ``seed`` of ``profile`` (with ``overrides``),
    each skipped where it already ran with the same commit and parameters: one seed's work, resumable. ``log``
    copies the runner's lines to ``runs/<profile>/seed-<s>/runner.log`` (seeds run side by side print there as
    they go). Returns 0, or 1 when a notebook failed."""
    import contextlib

    from papermill.exceptions import PapermillExecutionError

    from . import runs

    checked = plan("all", profile, {**overrides, "seed": seed}, skip=(runs.FINDINGS,))
    logfile = runs.store(checked.params) / "runner.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if log:
            handle = stack.enter_context(open(logfile, "a", buffering=1))
            stack.enter_context(contextlib.redirect_stdout(_Tee(sys.stdout, handle)))
        prepare_stand_ins(checked.params)
        stack.enter_context(runs.seed_at_work(checked.params))  # notebook 09 elsewhere leaves this seed out meanwhile
        try:
            for notebook in checked.notebooks:
                run(notebook, checked.params, checked.own, timeout, checked.changed, skip_done=True)
        except PapermillExecutionError as exc:
            print(f"{_label(checked.params)} notebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}; see "
                  f"its executed copy under {_shown(runs.store(checked.params) / 'failed')}/ (the last good one is "
                  "kept)", flush=True)
            return 1
    return 0


class _Tee:
    """A stream that writes to several (the terminal and a seed's log)."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def notebook_outputs(path: Path) -> bool:
    nb = json.loads(path.read_text())
    return any(c.get("outputs") or c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code")


def strip(path: Path) -> None:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def redraw_figures(params: config.Params) -> int:
    """Every figure of the run (profile and seed) drawn again from what its notebooks kept (``plots.draw``): no
    training, no sampling, the plotting code as it is now."""
    from . import plots

    started = time.time()
    try:
        drawn = plots.redraw(params)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    folder = drawn[0].parent
    print(f"{_label(params)} {len(drawn)} figures redrawn in {time.time() - started:.1f} s into {_shown(folder)}")
    return 0


#: The training steps ``runner train`` runs, each the cached pipeline step of the notebooks (01: base and finetune,
#: 02: unlearn), so a model trained here under ``accelerate launch`` is the one the notebooks then find.
TRAIN_STEPS = ("base", "finetune", "unlearn")




def prepare_stand_ins(params: config.Params) -> None:
    """Build the stand-in models a profile names (``paper-dry``) before its notebooks look for them."""
    from . import pipeline

    built = pipeline.build_stand_ins(params)
    if built:
        print(f"[{params.profile}] stand-ins ready in {_shown(next(iter(built.values())).parent)}: {', '.join(built)}",
              flush=True)
    try:  # what the notebooks will load, checked once the stand-ins exist and before any kernel starts
        pipeline.check_sources(params)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def train_step(step: str, profile: str, overrides: dict, split: str = "full", run: str | None = None) -> dict:
    """Train (or find cached) one model of the run store and return what it ended with.

    Meant for ``accelerate launch -m unlearnkit.runner train ...`` on several GPUs (or ``--cpu`` processes): the
    pipeline step shards each batch over the processes and only the main process writes."""
    from . import pipeline, runs

    params = checked_params(profile, overrides, [run] if step == "unlearn" and run else [])
    if step == "base":
        pipeline.base_model(params)
        name = "base"
    elif step == "finetune":
        name = "target" if split == "full" else split
        pipeline.finetuned_model(params, split, name)
    else:
        if not run:
            raise Refused("train --step unlearn needs --run (a method or a run of method_settings)")
        if not runs.is_saved(params, "target"):
            raise Refused(f"no target model in {runs.model_dir(params, 'target')}: train --step finetune first")
        pipeline.unlearned_model(params, run)
        name = runs.unlearned_name(run)
    logged = pipeline.history(params, name)
    return {"step": step, "model": _shown(runs.model_dir(params, name)), "optimizer_steps": len(logged),
            "final_loss": logged[-1]["loss"] if logged else None}


def _override(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise Refused(f"--set takes key=value (a YAML value), got {text!r}")
    if key.strip() == "profile":
        raise Refused("the profile is chosen with --profile NAME, not --set profile=...")
    try:
        return key.strip(), yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise Refused(f"--set {key.strip()}: {value!r} is not a YAML value "
                      f"({getattr(exc, 'problem', None) or type(exc).__name__})") from None


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return dict(_override(o) for o in getattr(args, "overrides", []))


# --------------------------------------------------------------------------- the commands


def _cmd_run(args: argparse.Namespace) -> int:
    from papermill.exceptions import PapermillExecutionError

    from . import runs

    checked = plan(args.notebook, args.profile, _overrides(args))
    prepare_stand_ins(checked.params)
    try:
        for notebook in checked.notebooks:
            # the seed is marked as being run while its own notebooks run (the findings notebook of another
            # terminal leaves it out meanwhile), never while the findings notebook itself judges the seeds
            with runs.seed_at_work(checked.params) if notebook.stem != runs.FINDINGS else contextlib.nullcontext():
                run(notebook, checked.params, checked.own, args.timeout, checked.changed)
    except PapermillExecutionError as exc:
        print(f"\nnotebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
              f"see the executed copy under {_shown(runs.store(checked.params))}/ for the full traceback",
              file=sys.stderr)
        return 1
    return 0


#: The most seeds one command takes (a range such as 0-100000000000 used to exhaust memory).
MAX_SEEDS = 1000


def _seed_list(text: list[str]) -> list[int]:
    """Seeds as the command line gives them: ``0 1 2`` or ``0-5`` (both ends included)."""
    seeds: list[int] = []
    for word in text:
        low, sep, high = word.partition("-") if not word.startswith("-") else (word, "", "")
        try:
            first, last = (int(low), int(high)) if sep else (int(word), int(word))
        except ValueError:
            raise Refused(f"a seed is a whole number or a range like 0-5, got {word!r}") from None
        if not 0 <= first <= last < 2**32 or last - first >= MAX_SEEDS or len(seeds) + last - first >= MAX_SEEDS:
            raise Refused(f"seeds {word!r}: whole numbers from 0 to 2^32 - 1, in order, at most {MAX_SEEDS} of them "
                          "in one command")
        seeds += list(range(first, last + 1))
    if not seeds:
        raise Refused("name at least one seed")
    return list(dict.fromkeys(seeds))


def _cmd_seed(args: argparse.Namespace) -> int:
    overrides = _overrides(args)
    if "seed" in overrides:
        raise Refused("the seed is the command's argument (runner seed 3), not --set seed=...")
    [seed] = _seed_list([args.seed])
    return run_seed(args.profile, seed, overrides, args.timeout)


def aggregate(profile: str, overrides: dict[str, Any], timeout: int = DEFAULT_TIMEOUT_S) -> int:
    """The findings notebook, which judges every claim over the training seeds present under runs/<profile>/ or
    committed under results/<profile>/ (a fresh clone re-judges the committed seeds without training); on the default
    profile, then the README's results section from the summary it wrote (``make readme``)."""
    from papermill.exceptions import PapermillExecutionError

    from . import runs

    checked = plan(runs.FINDINGS[:2], profile, overrides)
    try:
        run(checked.notebooks[0], checked.params, checked.own, timeout, checked.changed)
    except PapermillExecutionError as exc:
        print(f"\nnotebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}", file=sys.stderr)
        return 1
    if profile == config.BASE_PROFILE and not overrides:
        from . import report

        report.write_readme()
        print("README results section written from docs/findings.json")
    return 0


def _cmd_aggregate(args: argparse.Namespace) -> int:
    return aggregate(args.profile, _overrides(args), args.timeout)


def _cmd_seeds(args: argparse.Namespace) -> int:
    """Each seed's notebooks (:func:`run_seed`), the seeds side by side in up to ``jobs`` worker processes (each with
    its share of the cores), then the findings notebook over every seed present."""
    from . import runs, workers

    overrides = _overrides(args)
    if "seed" in overrides:
        raise Refused("the seeds are the command's arguments (runner seeds 0 1 2), not --set seed=...")
    seeds = _seed_list(args.seeds)
    params = checked_params(args.profile, overrides)  # refused here, once, before any seed starts
    for seed in seeds:
        checked_params(args.profile, {**overrides, "seed": seed})
    count = workers.workers_for(params.jobs, len(seeds))
    logs = runs.profile_dir(args.profile) / f"{runs.SEED_PREFIX}<s>" / "runner.log"
    print(f"[{args.profile}] seeds {', '.join(map(str, seeds))}: {count} side by side; each seed's progress in "
          f"{_shown(logs)}", flush=True)
    codes = workers.side_by_side(run_seed, [(args.profile, seed, overrides, args.timeout, count > 1)
                                           for seed in seeds], params.jobs, desc="seeds")
    workers.release_workers()
    failed = [seed for seed, code in zip(seeds, codes) if code]
    if failed:
        print(f"[{args.profile}] seed(s) {', '.join(map(str, failed))} failed (their runner.log says where); the "
              f"findings are judged over the seeds that finished", file=sys.stderr, flush=True)
    code = aggregate(args.profile, overrides, args.timeout)
    return 1 if failed else code


def eval_notebook() -> Path:
    """The evaluation of a model of one's own (runner eval): outside 00-09, so never part of ``runner all``."""
    from . import runs

    return paths.NOTEBOOKS / f"{runs.EVAL_NOTEBOOK}.ipynb"


#: runner eval's options (:func:`unlearnkit.studies.own_model.front_door` checks them).
EVAL_OPTIONS = {
    "--model": {"required": True, "help": "a model folder, a run or saved model of the store, or a Hub name"},
    "--data": {"help": "the data it was unlearned on: a folder of TOFU JSON Lines, locuslab/TOFU, or 'profile' "
                       "(default for the workbook's own models)"},
    "--reference": {"help": "the retain model: the same base fine-tuned on the retain split only"},
    "--suite": {"default": "all", "help": "comma-separated: tofu, leakage, formats, attacks (default all)"},
    "--template": {"help": "the prompt template of a model saved without the workbook's marker, or chat"},
    "--dtype": {"help": "the dtype to load it in (float32, bfloat16, float16)"},
    "--revision": {"help": "a Hub model's branch, tag or commit (downloaded with --online)"},
    "--allow-long": {"action": "store_true", "help": "run suites estimated at over an hour on a CPU"},
}


def _cmd_eval(args: argparse.Namespace) -> int:
    """Every suite of the workbook on one model (:mod:`unlearnkit.studies.own_model`): the request and its cost checked
    in one line, then notebooks/eval_model.ipynb executed into the evaluation's folder of the store."""
    from papermill.exceptions import PapermillExecutionError

    from .studies import own_model

    overrides = {**_overrides(args), **({"dtype": args.dtype} if args.dtype else {})}
    params = checked_params(args.profile, overrides)
    try:
        request, lines = own_model.front_door(params, args.model, args.data, args.reference, args.suite, args.template,
                                              args.revision, args.allow_long)
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    print("\n".join(lines), flush=True)
    out = own_model.eval_folder(params, request) / eval_notebook().name
    own = {"eval_model": args.model, "eval_data": args.data, "eval_reference": args.reference,
           "eval_suites": ",".join(request.suites), "eval_template": args.template, "eval_revision": args.revision}
    try:
        run_notebook(eval_notebook(), params, own=own, timeout=args.timeout, out=out,
                     changed=[k for k in overrides if k != "seed"])
    except PapermillExecutionError as exc:
        print(f"\nnotebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
              f"see {_shown(failed_copy(out))} for the full traceback", file=sys.stderr)
        return 1
    print(f"results: {_shown(out.with_name('metrics.json'))}", flush=True)
    return 0


def _cmd_params(args: argparse.Namespace) -> int:
    overrides = _overrides(args)  # an unknown key is refused when the profile is merged with them
    merged = dict(profile_params(args.profile, overrides))
    print(yaml.safe_dump(merged, sort_keys=False), end="")
    return 0


def _cmd_figures(args: argparse.Namespace) -> int:
    return redraw_figures(profile_params(args.profile, _overrides(args)))


def _cmd_train(args: argparse.Namespace) -> int:
    overrides = _overrides(args)  # an unknown key is refused when the profile is merged with them
    summary = train_step(args.step, args.profile, overrides, args.split, args.run)
    from .training import processes

    if processes().is_main_process:
        print(json.dumps(summary), flush=True)
    return 0


def _cmd_check_clean(args: argparse.Namespace) -> int:
    dirty = [p.name for p in all_source_notebooks() if notebook_outputs(p)]
    stale = [p.name for p in all_source_notebooks() if not parameters_in_sync(p)]
    default = paths.PARAMS / f"{config.BASE_PROFILE}.yaml"
    if default.read_text() != default_yaml_text():
        stale.insert(0, default.name)
    if dirty:
        print("notebooks committed with outputs (run 'make strip-notebooks'):", ", ".join(dirty))
    if stale:
        print("out of step with the parameters' help in config.Params (run 'make sync-params'):", ", ".join(stale))
    return 1 if dirty or stale else 0


def _cmd_strip(args: argparse.Namespace) -> int:
    for p in all_source_notebooks():
        strip(p)
    return 0


def _cmd_sync_params(args: argparse.Namespace) -> int:
    default = paths.PARAMS / f"{config.BASE_PROFILE}.yaml"
    if default.read_text() != default_yaml_text():
        default.write_text(default_yaml_text())
    for p in [find_notebook(k) for k in args.only] or all_source_notebooks():
        sync_parameters(p)
    return 0


def _profile_options(parser: argparse.ArgumentParser, overrides: bool = True) -> None:
    parser.add_argument("--profile", default=config.BASE_PROFILE,
                        help=f"a profile of notebooks/params/ (default: {config.BASE_PROFILE})")
    if overrides:
        parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                            help="override a parameter (a YAML value), e.g. --set beta=0.05 --set method=npo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m unlearnkit.runner", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("run", help="run a notebook (01) or all of them; 'runner 01' is short for 'runner run 01'")
    p.add_argument("notebook", help="a notebook number (00..09) or 'all'")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=_cmd_run)
    p = sub.add_parser("eval", help="every metric of the workbook on one model (a folder, a run of the store or a "
                                    "Hub name): runs/<profile>/seed-<s>/eval/<model>-<id>/")
    for flag, options in EVAL_OPTIONS.items():
        p.add_argument(flag, **options)
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=_cmd_eval)
    p = sub.add_parser("params", help="print the merged profile")
    _profile_options(p)
    p.set_defaults(handler=_cmd_params)
    p = sub.add_parser("seed", help="every notebook before the findings notebook, for one training seed "
                                    "(one command per seed for a job scheduler; resumable)")
    p.add_argument("seed", help="the training seed (a whole number)")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=_cmd_seed)
    p = sub.add_parser("aggregate", help="the findings notebook: every finding judged over the seeds present")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=_cmd_aggregate)
    p = sub.add_parser("seeds", help="several training seeds side by side (jobs), then the findings over them; "
                                     "resumable")
    p.add_argument("seeds", nargs="+", help="seeds: 0 1 2, or a range 0-5")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=_cmd_seeds)
    p = sub.add_parser("figures", help="redraw the figures of the profile (and seed: --set seed=S) from stored results")
    _profile_options(p)
    p.set_defaults(handler=_cmd_figures)
    p = sub.add_parser("train", help="one training step of the run store, e.g. under accelerate launch")
    _profile_options(p)
    p.add_argument("--step", choices=TRAIN_STEPS, required=True, help="the model to train")
    p.add_argument("--split", default="full", help="with --step finetune: full (the target) or a retain split")
    p.add_argument("--run", help="with --step unlearn: a method or a run of the profile's method_settings")
    p.set_defaults(handler=_cmd_train)
    p = sub.add_parser("check-clean", help="source notebooks without outputs, parameters cells in step")
    p.set_defaults(handler=_cmd_check_clean)
    p = sub.add_parser("strip", help="remove outputs from the source notebooks")
    p.set_defaults(handler=_cmd_strip)
    p = sub.add_parser("sync-params", help="rewrite parameters cells from default.yaml")
    p.add_argument("--only", action="append", default=[], metavar="NB", help="only this notebook (repeatable)")
    p.set_defaults(handler=_cmd_sync_params)
    return parser


#: The sub-commands; anything else first on the command line is a notebook for ``run``.
COMMANDS = ("run", "seed", "aggregate", "seeds", "eval", "params", "figures", "train", "check-clean", "strip", "sync-params")


#: The runner goes to no model or dataset hub unless asked: ``--online`` (anywhere on the command line) opts in.
ONLINE_FLAG = "--online"
_OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


def main(argv: list[str] | None = None) -> int:
    from . import lifetime

    lifetime.mark_runner()  # the kernels and workers this run starts end when it does, even after kill -9
    argv = list(sys.argv[1:] if argv is None else argv)
    online = ONLINE_FLAG in argv
    argv = [a for a in argv if a != ONLINE_FLAG]
    for var in _OFFLINE:  # before anything imports huggingface_hub; the kernels and workers inherit it
        os.environ[var] = "0" if online else "1"
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv.insert(0, "run")  # python -m unlearnkit.runner 01 --profile smoke
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except OSError as exc:  # a full or read-only store, a folder that vanished: one line, nothing half-done
        where = f" {paths.shown(exc.filename)}" if getattr(exc, "filename", None) else ""
        print(f"cannot read or write{where}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
