"""The one check before any kernel: every check a command needs runs, each problem it finds is one line, and they
are refused together (exit code 2) before a kernel starts or a file is written. The checks are functions of the
merged parameters (:data:`CHECKS` for a notebook run, :data:`AGGREGATE_CHECKS` for the findings notebook, and a
command's own); a check raises a ValueError in one line, or :class:`unlearnkit.refusals.Problems` for several."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import config, refusals
from .lines import Refused

Check = Callable[[config.Params], object]


def run_store(params: config.Params) -> None:
    """The seed's folder of the run store lies inside the store once its links are resolved."""
    from .. import runs

    runs.store(params)


def model_source(params: config.Params) -> None:
    """The model the notebooks will load: a folder's every problem (:func:`unlearnkit.models.check_source`)."""
    from .. import models

    models.check_source(params.model, "model")


def data_source(params: config.Params) -> None:
    """The data the notebooks will read (:func:`unlearnkit.pipeline.check_sources`, its model check left to
    :func:`model_source`)."""
    from .. import pipeline

    pipeline.check_sources(params.replace(model="tiny"))


def seeds_to_judge(params: config.Params) -> None:
    """The findings notebook has at least one training seed to judge (a run store or committed results)."""
    from .. import results

    if not results.seeds(params.profile):
        raise ValueError(f"no training seed of profile {params.profile!r} to judge (no run store under runs/"
                         f"{params.profile}/ and no committed results): run one first (python -m unlearnkit.runner seed "
                         f"0 --profile {params.profile})")


#: A notebook run's checks, in order.
CHECKS: tuple[Check, ...] = (run_store, model_source, data_source)
#: The findings notebook's checks (it reads the seeds' results, not a model).
AGGREGATE_CHECKS: tuple[Check, ...] = (run_store, seeds_to_judge)


def problems(params: config.Params, checks: Sequence[Check]) -> list[str]:
    """Every problem the ``checks`` find in ``params``, one line each, in order (empty: the command may go on)."""
    found = refusals.Collected()
    for check in checks:
        with found.check():
            check(params)
    return found.lines


def before_kernel(params: config.Params, checks: Sequence[Check] = CHECKS) -> None:
    """Run ``checks`` and refuse (:class:`Refused`, exit code 2) with every problem, one line each."""
    lines = problems(params, checks)
    if lines:
        raise Refused("\n".join(lines))
