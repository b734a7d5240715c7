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


#: The parameters that may name a model saved by an earlier notebook of the store (``hp_model: unlearned-npo``).
SAVED_MODEL_KEYS = ("hp_model", "format_models", "alignment_models")


def _store_model(params: config.Params, value: object) -> str | None:
    """The notebook that saves ``value`` if it names a model of the store (base, target, a retain model, an unlearned
    model or a run of the profile), else None (a folder, a Hub name)."""
    from .. import paths, runs

    if not isinstance(value, str) or "/" in value or paths.resolve(value).is_dir():
        return None
    run_names = {*(params.methods or []), *(params.method_settings or {})}
    if value.startswith(runs.UNLEARNED_PREFIX) or value in run_names:
        return runs.UNLEARNING
    if value in ("base", "target") or value.startswith("retain"):
        return runs.FINETUNE
    return None


def saved_models(notebooks: Sequence[str]) -> Check:
    """The check that every saved model a parameter of the ``notebooks`` to run names (:data:`SAVED_MODEL_KEYS`) is
    in the store, or is made by one of those notebooks first: one line each, naming the notebook that makes it
    (notebook 05 alone after 01 went to the Hub for ``unlearned-npo``, which notebook 02 saves)."""

    def saved_models_named(params: config.Params) -> None:
        from .. import runs

        lines = []
        for key in SAVED_MODEL_KEYS:
            if not any(key in runs.keys_read(nb) for nb in notebooks if nb in runs.NOTEBOOK_SECTIONS):
                continue
            value = params[key]
            for name in value if isinstance(value, list) else [value]:
                maker = _store_model(params, name)
                if maker is None or maker in notebooks or runs.locate(params, name) is not None:
                    continue
                try:
                    runs.require_saved(params, [name])
                except FileNotFoundError as exc:
                    lines.append(f"{key}: {exc}")
        if lines:
            raise refusals.Problems(lines)

    return saved_models_named


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
