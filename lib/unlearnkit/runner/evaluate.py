"""``runner eval``: every suite of the workbook on one model of one's own, its options and its command."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import refusals
from .checks import checked_params, set_overrides
from .execute import failed_copy, run_notebook
from .lines import Refused, project_relative, run_label
from .notebooks import eval_notebook
from .progress import PROGRESS_LOG, forwarded

#: runner eval's options (:func:`unlearnkit.ownmodel.suites.front_door` checks them).
EVAL_OPTIONS = {
    "--model": {"required": True, "help": "a model folder, a run or saved model of the store, or a Hub name"},
    "--data": {"help": "the data it was unlearned on: a folder of TOFU JSON Lines, locuslab/TOFU, or 'profile' "
                       "(default for the workbook's own models)"},
    "--reference": {"help": "the retain model: the same base fine-tuned on the retain split only, as weights (scored "
                            "once, reused by later evaluations against it) or as results: its evaluation folder (ours "
                            "or open-unlearning's) or TOFU_EVAL.json"},
    "--suite": {"default": "all", "help": "comma-separated: tofu, leakage, formats, attacks (default all)"},
    "--template": {"help": "the prompt template of a model saved without the workbook's marker, or chat"},
    "--dtype": {"help": "the dtype to load it in (float32, bfloat16, float16)"},
    "--revision": {"help": "a Hub model's branch, tag or commit (downloaded with --online)"},
    "--allow-long": {"action": "store_true", "help": "run suites estimated at over an hour on a CPU"},
    "--output-path": {"help": "a folder of your own for the evaluation (default: runs/<profile>/seed-<s>/eval/); "
                              "it gets <model>-<id>/ inside it"},
    "--limit": {"help": "at most N items per split and suite, for a quick look (the results say 'not comparable')"},
    "--batch-size": {"help": "the batch of every scoring pass (sets eval_batch_size), or auto: the largest that fits, "
                             "from 64, 0.9 of it on each out-of-memory, as lm-eval's"},
    "--device": {"help": "cpu, cuda or cuda:N (default: the GPU when there is one)"},
    "--log-samples": {"action": "store_true", "help": "write each suite's per-item values as JSON Lines "
                                                      "(samples_<suite>.jsonl)"},
}

#: ``--batch-size auto``: the batch found on the model in the kernel, as lm-evaluation-harness finds it.
AUTO = "auto"

#: What ``--limit N`` caps: the items of each suite's splits (the same keys as the profile's, no new parameter).
LIMITED = ("eval_max_items", "sample_max_items", "format_max_items", "attack_items")


def _whole(value: str | None, flag: str) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise Refused(f"{flag} {value!r}: a whole number of at least 1" + (" or auto" if flag == "--batch-size" else ""))
    return int(value)


def flag_overrides(limit: str | None, batch_size: str | None) -> dict[str, int]:
    """The profile keys ``--limit`` and ``--batch-size`` set (refused in one line when not a count; ``auto`` sets
    nothing here: the kernel finds the batch on the model, :func:`unlearnkit.ownmodel.cost.auto_batch`)."""
    n = _whole(limit, "--limit")
    batch = None if batch_size == AUTO else _whole(batch_size, "--batch-size")
    return {**({k: n for k in LIMITED} if n is not None else {}), **({"eval_batch_size": batch} if batch else {})}


def choose_device(device: str | None) -> None:
    """``--device``: cpu hides the GPUs from the evaluation's processes, cuda:N shows it only GPU N; a GPU named on a
    machine without one is refused in one line."""
    import re

    if device is None:
        return
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        return
    match = re.fullmatch(r"cuda(?::(\d+))?", device)
    if not match:
        raise Refused(f"--device {device!r}: cpu, cuda or cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise Refused(f"--device {device}: this machine has no CUDA GPU (torch.cuda.is_available() is False)")
    if match.group(1) is not None:
        if int(match.group(1)) >= torch.cuda.device_count():
            raise Refused(f"--device {device}: this machine has {torch.cuda.device_count()} GPU(s)")
        os.environ["CUDA_VISIBLE_DEVICES"] = match.group(1)


def cmd_eval(args: argparse.Namespace) -> int:
    """Every suite of the workbook on one model (:mod:`unlearnkit.ownmodel.suites`): the request and its cost checked
    in one line, then notebooks/eval_model.ipynb executed into the evaluation's folder of the store."""
    from papermill.exceptions import PapermillExecutionError

    from ..ownmodel import suites as own_model

    overrides = {**set_overrides(args), **({"dtype": args.dtype} if args.dtype else {}),
                 **flag_overrides(args.limit, args.batch_size)}
    params = checked_params(args.profile, overrides)
    choose_device(args.device)
    try:
        request, lines, estimate = own_model.front_door(params, args.model, args.data, args.reference, args.suite, args.template,
                                              args.revision, args.allow_long, args.output_path)
    except (ValueError, FileNotFoundError, OSError) as exc:  # every problem the door found, one line each
        raise Refused("\n".join(refusals.problem_lines(exc))) from None
    print("\n".join(lines), flush=True)
    out = Path(request.folder) / eval_notebook().name  # chosen once, at the door: the notebook writes there
    own = {"eval_output": request.folder, "eval_model": args.model, "eval_data": args.data, "eval_reference": args.reference,
           "eval_suites": ",".join(request.suites), "eval_template": args.template, "eval_revision": args.revision,
           "eval_limit": _whole(args.limit, "--limit"), "eval_device": args.device, "eval_log_samples": args.log_samples,
           "eval_batch_auto": args.batch_size == AUTO}
    try:
        # the kernel notes each suite's and long step's start and end; printed as they come, with the estimate
        with forwarded(out.with_name(PROGRESS_LOG), run_label(params), request.suites, estimate):
            run_notebook(eval_notebook(), params, own=own, timeout=args.timeout, out=out,
                         changed=[k for k in overrides if k != "seed"])
    except PapermillExecutionError as exc:
        print(f"\nnotebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
              f"see {project_relative(failed_copy(out))} for the full traceback", file=sys.stderr)
        return 1
    print(f"results: {project_relative(out.with_name('metrics.json'))}", flush=True)
    return 0
