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
import os
import sys

import yaml

from .. import config, paths
from .checks import checked_params, plan, prepare_stand_ins, set_overrides
from .door import AGGREGATE_CHECKS, CHECKS, saved_models
from .evaluate import EVAL_OPTIONS, cmd_eval
from .execute import DEFAULT_TIMEOUT_S, run
from .figures import cmd_figures
from .lines import project_relative
from .notebooks import cmd_check_clean, cmd_strip, cmd_sync_params
from .seeds import cmd_aggregate, cmd_freeze, cmd_seed, cmd_seeds
from .train import TRAIN_STEPS, cmd_train

# --------------------------------------------------------------------------- the commands


def _cmd_run(args: argparse.Namespace) -> int:
    from papermill.exceptions import PapermillExecutionError

    from .. import runs

    checked = plan(args.notebook, args.profile, set_overrides(args))
    findings_alone = [nb.stem for nb in checked.notebooks] == [runs.FINDINGS]  # it judges seeds run before
    prepare_stand_ins(checked.params, AGGREGATE_CHECKS if findings_alone
                      else (*CHECKS, saved_models([nb.stem for nb in checked.notebooks])))
    try:
        for notebook in checked.notebooks:
            # the seed is marked as being run while its own notebooks run (the findings notebook of another
            # terminal leaves it out meanwhile), never while the findings notebook itself judges the seeds
            with runs.seed_at_work(checked.params) if notebook.stem != runs.FINDINGS else contextlib.nullcontext():
                run(notebook, checked.params, checked.own, args.timeout, checked.changed)
    except PapermillExecutionError as exc:
        print(f"\nnotebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
              f"see {_failed_copy_of(exc, checked.params)} for the full traceback",
              file=sys.stderr)
        return 1
    return 0


def _failed_copy_of(exc: BaseException, params: config.Params) -> str:
    """Where the failed notebook's copy was kept (``failed/`` beside the executed copy), else the seed's store."""
    from .. import runs

    kept = getattr(exc, "failed_copy", None)
    return project_relative(kept) if kept is not None else f"the executed copy under {project_relative(runs.store(params))}/"


def _cmd_params(args: argparse.Namespace) -> int:
    overrides = set_overrides(args)  # an unknown key, a bad value or run name is refused as plan refuses it
    merged = dict(checked_params(args.profile, overrides))
    print(yaml.safe_dump(merged, sort_keys=False), end="")
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
    p.add_argument("notebook", help="a notebook number (00..10) or 'all'")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=_cmd_run)
    p = sub.add_parser("eval", help="every metric of the workbook on one model (a folder, a run of the store or a "
                                    "Hub name): runs/<profile>/seed-<s>/eval/<model>-<id>/")
    for flag, options in EVAL_OPTIONS.items():
        p.add_argument(flag, **options)
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=cmd_eval)
    p = sub.add_parser("params", help="print the merged profile")
    _profile_options(p)
    p.set_defaults(handler=_cmd_params)
    p = sub.add_parser("seed", help="every notebook before the findings notebook, for one training seed "
                                    "(one command per seed for a job scheduler; resumable)")
    p.add_argument("seed", help="the training seed (a whole number)")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=cmd_seed)
    p = sub.add_parser("aggregate", help="the findings notebook: every finding judged over the seeds present")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=cmd_aggregate)
    p = sub.add_parser("freeze", help="freeze the claims registry: docs/claims.frozen.json (entry digests and the "
                                      "exploratory seeds' effects), once, before confirmatory seeds run")
    p.add_argument("seeds", nargs="*", default=["0-5"], help="the exploratory seeds (default 0-5)")
    p.add_argument("--profile", default=config.BASE_PROFILE, help="the profile (only the default is frozen)")
    p.set_defaults(handler=cmd_freeze)
    p = sub.add_parser("seeds", help="several training seeds side by side (jobs), then the findings over them; "
                                     "resumable")
    p.add_argument("seeds", nargs="+", help="seeds: 0 1 2, or a range 0-5")
    _profile_options(p)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    p.set_defaults(handler=cmd_seeds)
    p = sub.add_parser("figures", help="redraw the figures of the profile (and seed: --set seed=S) from stored results")
    _profile_options(p)
    p.set_defaults(handler=cmd_figures)
    p = sub.add_parser("train", help="one training step of the run store, e.g. under accelerate launch")
    _profile_options(p)
    p.add_argument("--step", choices=TRAIN_STEPS, required=True, help="the model to train")
    p.add_argument("--split", default="full", help="with --step finetune: full (the target) or a retain split")
    p.add_argument("--run", help="with --step unlearn: a method or a run of the profile's method_settings")
    p.set_defaults(handler=cmd_train)
    p = sub.add_parser("check-clean", help="source notebooks without outputs, parameters cells in step")
    p.set_defaults(handler=cmd_check_clean)
    p = sub.add_parser("strip", help="remove outputs from the source notebooks")
    p.set_defaults(handler=cmd_strip)
    p = sub.add_parser("sync-params", help="rewrite parameters cells from default.yaml")
    p.add_argument("--only", action="append", default=[], metavar="NB", help="only this notebook (repeatable)")
    p.set_defaults(handler=cmd_sync_params)
    return parser


#: The sub-commands; anything else first on the command line is a notebook for ``run``.
COMMANDS = ("run", "seed", "aggregate", "freeze", "seeds", "eval", "params", "figures", "train", "check-clean", "strip", "sync-params")


#: The runner goes to no model or dataset hub unless asked: ``--online`` (anywhere on the command line) opts in.
ONLINE_FLAG = "--online"
_OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


def main(argv: list[str] | None = None) -> int:
    from .. import lifetime

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
    except paths.OutsideTheStore as exc:  # a link in a received store: refused where the store is first named
        print(exc, file=sys.stderr, flush=True)
        return 2
    except OSError as exc:  # a full or read-only store, a folder that vanished: one line, nothing half-done
        where = f" {paths.shown(exc.filename)}" if getattr(exc, "filename", None) else ""
        print(f"cannot read or write{where}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 2
