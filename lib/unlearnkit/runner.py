"""Run the workbook's notebooks through papermill: ``python -m unlearnkit.runner 01 --profile smoke``.

Each run merges the layered profile (``notebooks/params/<profile>.yaml`` over the profiles it extends), hands
papermill the parameters the notebook declares (its parameters cell lists the keys it reads) and the profile's
name, executes the source notebook with ``notebooks/`` as working directory and writes the executed copy to
``runs/<profile>/<stem>.ipynb``; source notebooks are never executed in place. ``--set key=value`` overrides a
parameter. Notebooks that take a ``method`` run once per unlearning run of the profile.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from . import config, paths

#: Notebooks run once per unlearning method of the profile (parameter ``method``).
PER_METHOD_PREFIXES = ("02",)
DEFAULT_TIMEOUT_S = 3600


def source_notebooks() -> list[Path]:
    return sorted(p for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def find_notebook(key: str) -> Path:
    matches = [p for p in source_notebooks() if p.stem == key or p.stem.startswith(f"{key}_")]
    if len(matches) != 1:
        known = ", ".join(p.stem for p in source_notebooks())
        raise SystemExit(f"no single notebook matches {key!r}; notebooks: {known}")
    return matches[0]


def profile_params(profile: str, overrides: dict | None = None) -> config.Params:
    """The merged profile with ``overrides``; a bad profile, key or value ends the command with its message."""
    try:
        return config.Params.load(profile, **(overrides or {}))
    except (ValueError, KeyError, TypeError) as exc:
        raise SystemExit(str(exc)) from None


def _parameters_among(overrides: dict | None) -> dict:
    """The overrides that are profile parameters (the others are a notebook's own, such as ``method``)."""
    return {k: v for k, v in (overrides or {}).items() if k in config.PARAMETER_NAMES}


def injected_parameters(notebook: Path, profile: str, extra: dict | None = None) -> dict[str, Any]:
    """What papermill injects: the profile's name, the merged profile's values of the keys the notebook
    declares, and ``extra`` (overrides and the notebook's own parameters)."""
    merged = profile_params(profile, _parameters_among(extra))
    declared = declared_keys(json.loads(notebook.read_text()))
    return {"profile": profile, **{k: merged[k] for k in declared}, **(extra or {})}


def run_notebook(notebook: Path, profile: str, extra: dict | None = None, suffix: str = "",
                 timeout: int = DEFAULT_TIMEOUT_S) -> Path:
    """Execute ``notebook`` on ``profile`` into ``runs/<profile>/<stem><suffix>.ipynb``, then record in the executed
    copy's metadata (``unlearnkit.timing``) how long it took, the CPU seconds its kernel and workers used and the
    seconds of each station (:func:`station_summary`): what ``benchmarks/workbook_profile.py`` tabulates."""
    import papermill

    parameters = injected_parameters(notebook, profile, extra)
    out = paths.RUNS / profile / f"{notebook.stem}{suffix}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars in batch runs: the kernel inherits this
    log = out.with_name(f".{out.stem}.stations.jsonl")
    log.unlink(missing_ok=True)
    os.environ[config.STATION_LOG_VARIABLE] = str(log)  # the kernel inherits this
    started, cpu_before = time.time(), _children_cpu_seconds()
    print(f"[{profile}] {notebook.name}{' ' + json.dumps(extra) if extra else ''} -> {_shown(out)}",
          flush=True)
    try:
        papermill.execute_notebook(str(notebook), str(out), parameters=parameters, cwd=str(paths.NOTEBOOKS),
                                   kernel_name="python3", execution_timeout=timeout, progress_bar=False,
                                   log_output=False)
    finally:
        os.environ.pop(config.STATION_LOG_VARIABLE, None)
    wall = time.time() - started
    timing = {"started": started, "wall_s": wall, "cpu_s": _children_cpu_seconds() - cpu_before,
              "cores": _cores(), "stations": station_summary(_log_lines(log), wall)}
    log.unlink(missing_ok=True)
    _record_timing(out, timing)
    print(f"[{profile}] {notebook.name}{' ' + json.dumps(extra) if extra else ''} done in {wall:.0f} s",
          flush=True)
    return out


def _cores() -> int:
    from . import models

    return models.cores()


def _children_cpu_seconds() -> float:
    """User and system CPU seconds of this process's finished children: a notebook's kernel, with the worker
    processes it waited for."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _log_lines(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def station_summary(lines: list[dict], wall: float) -> dict[str, float]:
    """Wall seconds of a notebook by station, from its kernel's station log (:func:`unlearnkit.config.station`):
    training, generation and scoring as logged; the time the kernel waited on worker processes shared out in
    proportion to the workers' own seconds per station; ``other`` the rest of ``wall``."""
    out = dict.fromkeys((*config.STATIONS, "other"), 0.0)
    for line in lines:
        for key, value in line.items():
            if key in ("pid", "split"):
                continue
            if key == config.WORKERS:
                split = line.get("split") or {"other": 1.0}
                total = sum(split.values()) or 1.0
                for name, seconds in split.items():
                    out[name if name in out else "other"] += value * seconds / total
            else:
                out[key if key in out else "other"] += value
    out["other"] += max(0.0, wall - sum(out.values()))
    return out


def _record_timing(executed: Path, timing: dict) -> None:
    nb = json.loads(executed.read_text())
    nb.setdefault("metadata", {}).setdefault("unlearnkit", {})["timing"] = timing
    config.atomic_write_text(executed, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def _shown(path: Path) -> str:
    """A path relative to the project when it is inside it (runs/ may be elsewhere, e.g. in tests)."""
    try:
        return str(path.relative_to(paths.ROOT))
    except ValueError:
        return str(path)


def run(key: str, profile: str, timeout: int = DEFAULT_TIMEOUT_S, overrides: dict | None = None) -> list[Path]:
    """Run one notebook; one that takes a ``method`` runs once per unlearning run of the profile: those runs side by
    side in up to ``jobs`` processes, except the last, which runs after them, since its notebook compares them all."""
    from . import models

    notebook = find_notebook(key)
    overrides = dict(overrides or {})
    if notebook.stem.startswith(PER_METHOD_PREFIXES) and "method" not in overrides:
        params = profile_params(profile, overrides)
        if not params.methods:
            raise SystemExit(f"profile {profile!r} lists no 'methods' for {notebook.name}")
        *first, last = params.methods
        done = models.side_by_side(run_notebook, [(notebook, profile, {**overrides, "method": m}, f"_{m}", timeout)
                                                  for m in first], params.jobs, desc=notebook.stem)
        models.release_workers()  # their CPU seconds counted now, not in the next notebook's
        return [*done, run_notebook(notebook, profile, {**overrides, "method": last}, f"_{last}", timeout)]
    suffix = f"_{overrides['method']}" if "method" in overrides else ""
    return [run_notebook(notebook, profile, overrides, suffix, timeout)]


def notebook_outputs(path: Path) -> bool:
    nb = json.loads(path.read_text())
    return any(c.get("outputs") or c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code")


def strip(path: Path) -> None:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


#: Lines after this marker in a parameters cell belong to that notebook alone and survive ``sync-params``.
OWN_PARAMETERS_MARKER = "# --- this notebook only"
_PARAMS_HEADER = """# Parameters: the keys this notebook reads, at their `default` profile values (make sync-params writes them
# from notebooks/params/default.yaml). The runner injects the chosen profile's values (make notebook NB=..
# PROFILE=..); every other parameter comes from the profile. A value changed here overrides the profile's."""
_PROFILE_COMMENT = "the profile (notebooks/params/<profile>.yaml) that every parameter not changed here comes from"


def _default_lines() -> dict[str, tuple[Any, str | None]]:
    """default.yaml as {key: (value, comment)}: the source of every parameters cell."""
    out: dict[str, tuple[Any, str | None]] = {}
    for line in (paths.PARAMS / f"{config.BASE_PROFILE}.yaml").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = re.match(r"^([\w-]+):\s*(.*?)(?:\s+#\s*(.*))?$", line)
        if match is None:
            raise ValueError(f"default.yaml: cannot read {line!r}")
        key, value, comment = match.groups()
        if comment and " = " in comment:
            raise ValueError(f"default.yaml: the comment of {key!r} holds ' = ', which papermill cannot parse")
        out[key] = (yaml.safe_load(value) if value else None, comment)
    return out


def _code_cells(nb: dict) -> list[str]:
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "code"
            and "parameters" not in c.get("metadata", {}).get("tags", [])]


def declared_keys(nb: dict) -> list[str]:
    """The profile keys a notebook reads: names its code cells load that are parameters, in default.yaml's order
    (``profile`` first, always)."""
    used: set[str] = set()
    for source in _code_cells(nb):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                used.add(node.id)
    return ["profile"] + [k for k in _default_lines() if k in used and k != "profile"]


def parameters_source(keys: list[str] | None = None, own_lines: list[str] | None = None) -> str:
    """A parameters cell written from ``default.yaml``: one literal per key (every key when ``keys`` is None),
    its YAML comment kept as the Python comment (papermill cannot parse a comment holding " = ")."""
    defaults = _default_lines()
    lines = [_PARAMS_HEADER]
    for key in keys if keys is not None else list(defaults):
        value, comment = defaults[key]
        comment = _PROFILE_COMMENT if key == "profile" else comment
        lines.append(f"{key} = {value!r}" + (f"  # {comment}" if comment else ""))
    if own_lines:
        lines += [OWN_PARAMETERS_MARKER, *own_lines]
    return "\n".join(lines)


def _parameters_cell(nb: dict) -> dict:
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError("a notebook needs exactly one cell tagged 'parameters'")
    return cells[0]


def own_parameter_lines(cell: dict) -> list[str]:
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    lines = source.splitlines()
    return lines[lines.index(OWN_PARAMETERS_MARKER) + 1:] if OWN_PARAMETERS_MARKER in lines else []


def parameters_in_sync(path: Path) -> bool:
    nb = json.loads(path.read_text())
    cell = _parameters_cell(nb)
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    return source == parameters_source(declared_keys(nb), own_parameter_lines(cell))


def sync_parameters(path: Path) -> None:
    nb = json.loads(path.read_text())
    cell = _parameters_cell(nb)
    cell["source"] = parameters_source(declared_keys(nb), own_parameter_lines(cell))
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def redraw_figures(profile: str) -> int:
    """Every figure of ``profile`` drawn again from what its notebooks kept (``plots.draw``): no training, no
    sampling, the plotting code as it is now."""
    from . import plots

    started = time.time()
    try:
        drawn = plots.redraw(profile)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    folder = drawn[0].parent
    print(f"[{profile}] {len(drawn)} figures redrawn in {time.time() - started:.1f} s into {_shown(folder)}")
    return 0


#: The training steps ``runner train`` runs, each the cached pipeline step of the notebooks (01: base and finetune,
#: 02: unlearn), so a model trained here under ``accelerate launch`` is the one the notebooks then find.
TRAIN_STEPS = ("base", "finetune", "unlearn")




def prepare_stand_ins(profile: str, overrides: dict) -> None:
    """Build the stand-in models a profile names (``paper-dry``) before its notebooks look for them."""
    from . import pipeline

    built = pipeline.build_stand_ins(profile_params(profile, _parameters_among(overrides)))
    if built:
        print(f"[{profile}] stand-ins ready in {_shown(next(iter(built.values())).parent)}: {', '.join(built)}",
              flush=True)


def train_step(step: str, profile: str, overrides: dict, split: str = "full", run: str | None = None) -> dict:
    """Train (or find cached) one model of the run store and return what it ended with.

    Meant for ``accelerate launch -m unlearnkit.runner train ...`` on several GPUs (or ``--cpu`` processes): the
    pipeline step shards each batch over the processes and only the main process writes."""
    from . import pipeline, runs

    params = profile_params(profile, overrides)
    if step == "base":
        pipeline.base_model(params, profile)
        name = "base"
    elif step == "finetune":
        name = "target" if split == "full" else split
        pipeline.finetuned_model(params, profile, split, name)
    elif step == "unlearn":
        if not run:
            raise SystemExit("train --step unlearn needs --run (a method or a run of method_settings)")
        if not runs.is_saved(profile, "target"):
            raise SystemExit(f"no target model in {runs.model_dir(profile, 'target')}: train --step finetune first")
        pipeline.unlearned_model(params, profile, run)
        name = runs.unlearned_name(run)
    else:
        raise SystemExit(f"unknown training step {step!r}; steps: {', '.join(TRAIN_STEPS)}")
    logged = pipeline.history(profile, name)
    return {"step": step, "model": _shown(runs.model_dir(profile, name)), "optimizer_steps": len(logged),
            "final_loss": logged[-1]["loss"] if logged else None}


def _override(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SystemExit(f"--set takes key=value (a YAML value), got {text!r}")
    return key.strip(), yaml.safe_load(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unlearnkit.runner", description=__doc__)
    parser.add_argument("target", help="a notebook number (01), 'all', 'params' (print the merged profile), "
                                       "'figures' (redraw the profile's figures from stored results), "
                                       "'train' (one training step, e.g. under accelerate launch), "
                                       "'check-clean', 'strip' or 'sync-params'")
    parser.add_argument("--profile", default=config.BASE_PROFILE)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter (a YAML value), e.g. --set beta=0.05 --set method=npo")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    parser.add_argument("--only", action="append", default=[], metavar="NB",
                        help="with sync-params: only this notebook (repeatable)")
    parser.add_argument("--step", choices=TRAIN_STEPS, help="with train: the model to train")
    parser.add_argument("--split", default="full", help="with train --step finetune: full (the target) or a retain split")
    parser.add_argument("--run", help="with train --step unlearn: a method or a run of the profile's method_settings")
    args = parser.parse_args(argv)
    overrides = dict(_override(o) for o in args.overrides)
    if args.target == "train":
        if not args.step:
            raise SystemExit(f"train needs --step ({', '.join(TRAIN_STEPS)})")
        summary = train_step(args.step, args.profile, overrides, args.split, args.run)
        from .training import processes

        if processes().is_main_process:
            print(json.dumps(summary), flush=True)
        return 0
    if args.target == "params":
        merged = dict(profile_params(args.profile, overrides))
        print(yaml.safe_dump(merged, sort_keys=False), end="")
        return 0
    if args.target == "figures":
        return redraw_figures(args.profile)
    if args.target == "check-clean":
        dirty = [p.name for p in source_notebooks() if notebook_outputs(p)]
        stale = [p.name for p in source_notebooks() if not parameters_in_sync(p)]
        if dirty:
            print("notebooks committed with outputs (run 'make strip-notebooks'):", ", ".join(dirty))
        if stale:
            print("parameters cells out of step with default.yaml (run 'make sync-params'):", ", ".join(stale))
        return 1 if dirty or stale else 0
    if args.target == "strip":
        for p in source_notebooks():
            strip(p)
        return 0
    if args.target == "sync-params":
        for p in [find_notebook(k) for k in args.only] or source_notebooks():
            sync_parameters(p)
        return 0
    from papermill.exceptions import PapermillExecutionError

    keys = [p.stem[:2] for p in source_notebooks()] if args.target == "all" else [args.target]
    prepare_stand_ins(args.profile, overrides)
    try:
        for key in keys:
            run(key, args.profile, args.timeout, overrides)
    except PapermillExecutionError as exc:
        print(f"\nnotebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
              f"see the executed copy under runs/{args.profile}/ for the full traceback", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
