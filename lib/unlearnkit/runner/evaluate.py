"""``runner eval``: every suite of the workbook on one model of one's own, its options and its command."""

from __future__ import annotations

import argparse
import sys

from .. import refusals
from .checks import _overrides, checked_params
from .execute import failed_copy, run_notebook
from .lines import Refused, _shown
from .notebooks import eval_notebook

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

    from ..studies import own_model

    overrides = {**_overrides(args), **({"dtype": args.dtype} if args.dtype else {})}
    params = checked_params(args.profile, overrides)
    try:
        request, lines = own_model.front_door(params, args.model, args.data, args.reference, args.suite, args.template,
                                              args.revision, args.allow_long)
    except (ValueError, FileNotFoundError, OSError) as exc:  # every problem the door found, one line each
        raise Refused("\n".join(refusals.problem_lines(exc))) from None
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
