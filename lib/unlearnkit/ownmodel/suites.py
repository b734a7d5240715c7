"""Every metric of the workbook on a model of your own (``python -m unlearnkit.runner eval --model PATH``): the
study behind ``notebooks/eval_model.ipynb``.

The request is checked in one line before any kernel starts (:func:`check_request`): the model (a folder of
safetensors weights, sharded or not, a peft adapter folder with its base, or a Hub name in the local cache), its
prompt template (the workbook's marker beside a saved model, else ``--template``, never guessed), the data it was
unlearned on (a TOFU-shaped folder, ``locuslab/TOFU``, or ``profile``: the profile's own corpus, only for the
workbook's own models) and the retain model every "against the control" number needs (a same-base model the user
names; none means those numbers are reported as not computed, never a model trained here from scratch). Then each
suite (:data:`SUITES`) runs through the same library calls as the numbered notebooks, so the workbook's own NPO
model gets the numbers notebooks 02, 04, 05 and 08 stored for it (their caches are shared: a model's results are
keyed by what it is, :func:`unlearnkit.runs.model_identity`).

Results go to ``runs/<profile>/seed-<s>/eval/<slug>-<digest>/`` (:func:`eval_folder`): the executed notebook and a
``metrics.json`` in the notebooks' layout, never into ``results/`` (which holds the claims' seeds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .. import config, models, paths, refusals, runs, stations
from .cost import CPU_LIMIT_S, estimate_seconds, parameter_count
from .reference import MODEL, REFERENCE, check_results, reference_notebook, results_file, tofu_scores
from .reference import identity as reference_identity

#: The suites, in the order they run: TOFU's metrics with open-unlearning's memorisation and privacy metrics,
#: sampled leakage with the high-probability bounds and the ED score, the format-transformed evaluation, and the
#: robustness attacks (relearning, held-out-fact relearning, quantisation, input probes).
SUITES = ("tofu", "leakage", "formats", "attacks")
#: ``--data profile``: the profile's own corpus (only for a model of the workbook, which was trained on it).
PROFILE_DATA = "profile"
#: The environment variable through which a stated template reaches every process that loads the model.
TEMPLATES_VARIABLE = models.STATED_TEMPLATES_VARIABLE
#: What a number that needs the retain model says when there is none.
NO_REFERENCE = "not computed: no matching retain model (pass --reference RETAIN, a model of the same base fine-tuned " \
               "on the retain split only)"


class Request(NamedTuple):
    """One evaluation, checked: where the model is (a folder, or a Hub name), its label, the data, the retain model
    (or None), the suites, the stated template (None: the folder's marker says it) and whether it is a model of
    the workbook's store."""

    model: str
    label: str
    data: str
    reference: str | None
    suites: tuple[str, ...]
    template: str | None
    own: bool
    #: The evaluation's folder, chosen once at the door (:func:`eval_folder`) and handed to the notebook: the path
    #: printed is the path written. None: not chosen yet.
    folder: str | None = None


# --------------------------------------------------------------------------- the front door


def check_request(params: config.Params, model: str, data: str | None, reference: str | None,
                  suites: Sequence[str] | str | None, template: str | None, revision: str | None = None,
                  folder: str | None = None) -> Request:
    """Everything about an evaluation that can be wrong, refused before any work: a ValueError in one line, or
    :class:`unlearnkit.refusals.Problems` naming the model's, the reference's and the data's problems together.

    ``model``: a run or saved model of the profile's store (``npo``, ``unlearned-npo``), a folder or a Hub name.
    ``data``: None takes the profile's corpus for the store's own models; it is required for any other model.
    ``reference``: None takes the retain model notebook 01 trained for the store's own models. ``template``: None
    takes the model's own (saved beside it, or its family's). ``folder``: the evaluation's folder the door chose
    (:func:`eval_folder`), checked again where it is written (:func:`unlearnkit.paths.writable`)."""
    suites = _suites(suites)
    if folder is not None:
        folder = str(paths.writable(folder, "the evaluation's folder"))
    own_folder = runs.locate(params, model) if paths.NAME.fullmatch(model) else None
    location = str(own_folder) if own_folder is not None else model
    if revision is not None:
        if paths.resolve(location).is_dir():
            raise ValueError(f"--revision {revision!r} names a version of a Hub model; {model!r} is a folder")
        state_revision(location, revision)
    found = refusals.Collected()  # the model's and the reference's problems, and the data's, named together
    with found.check():
        models.check_source(location, "model")
    model_read = not found.lines
    own = own_folder is not None or _made_here(location)
    stated = None
    with found.check():
        stated = _template(location, template)
    if data is None and not own:  # named with the model's and the template's problems, not after them
        found.lines.append(f"--data is required for a model the workbook did not make ({model!r}): the data it was "
                           "unlearned on, a folder of TOFU JSON Lines or locuslab/TOFU (or 'profile' for this "
                           "profile's corpus, if it was trained on it)")
    data_read = data is not None or own
    data = PROFILE_DATA if data is None else data
    if data != PROFILE_DATA:
        from ..pipeline import check_sources

        before = len(found.lines)
        with found.check():
            check_sources(params.replace(data_source=data, model="tiny"))
        data_read = len(found.lines) == before
        if data_read:
            with found.check():
                _suite_splits(params, data, suites)
    if "formats" in suites and model_read and data_read:  # the prompts against the model's positions
        with found.check():
            check_positions(params, location, suites, _corpus(params, data))
    if reference is None and own:
        found_retain = runs.retain_model(params, None)  # the one notebook 01 used, or none
        located = runs.locate(params, found_retain) if found_retain else None
        reference = str(located) if located is not None else None
    elif reference is not None and results_file(reference) is not None:  # a retain model's results
        if data_read:
            with found.check():
                check_results(params, reference, _corpus(params, data))
    elif reference is not None:
        located = runs.locate(params, reference) if paths.NAME.fullmatch(reference) else None
        reference = str(located) if located is not None else reference
        with found.check():
            models.check_source(reference, "reference")
        found.raise_any()
        _same_base(location, reference)
        _template(reference, template)
    found.raise_any()
    return Request(location, _label(model), data, reference, suites, stated, own, folder)


def needed_splits(params: config.Params, suite: str) -> tuple[str, ...]:
    """The data splits ``suite`` reads besides the forget split (which every suite reads): the holdout split of as
    many never-trained authors (``holdout10`` for ``forget10``) that TOFU's privacy metrics and the attacks' MinK AUC
    compare the forget split with."""
    from ..data.tofu import holdout_split_for

    return {"tofu": (holdout_split_for(params.forget_split),), "attacks": (holdout_split_for(params.forget_split),)
            }.get(suite, ())


def _suite_splits(params: config.Params, data: str, suites: Sequence[str]) -> None:
    """Every split a requested suite needs that ``data`` lacks, one line each, with the fix (TofuSource's own line:
    which Hub config to save there) and the suites that run without it; a Hub data set has every split."""
    from ..data.tofu import TofuSource

    source = TofuSource(paths.from_environment(data, "a folder of TOFU JSON Lines files"))
    if not source.is_local:
        return
    lines = []
    for split in sorted({s for suite in suites for s in needed_splits(params, suite)}):
        reason = source.missing_split_reason(split)
        if reason:
            needing = [suite for suite in suites if split in needed_splits(params, suite)]
            without = [suite for suite in suites if split not in needed_splits(params, suite)]
            lines.append(f"suite {', '.join(needing)} needs {split}: {reason} (or pass --suite "
                         f"{','.join(without) if without else ','.join(s for s in SUITES if s not in needing)}, "
                         "which runs without it)")
    if lines:
        raise refusals.Problems(lines)


def _suites(suites: Sequence[str] | str | None) -> tuple[str, ...]:
    if suites is None or suites == "all":
        return SUITES
    chosen = [s.strip() for s in (suites.split(",") if isinstance(suites, str) else suites) if s.strip()]
    unknown = [s for s in chosen if s not in SUITES]
    if unknown or not chosen:
        raise ValueError(f"unknown suite {', '.join(unknown) or '(none)'}; suites: {', '.join(SUITES)} (or all)")
    return tuple(s for s in SUITES if s in chosen)


def _made_here(location: str) -> bool:
    """A model the workbook trained: its marker records the recipe that made it (``params_hash``)."""
    try:
        return bool(runs.saved_recipe(paths.resolve(location)).get("params_hash"))
    except (OSError, ValueError, AttributeError):
        return False


def _template(location: str, template: str | None) -> str | None:
    """The template stated for ``location``: ``template`` (checked) or the workbook's marker (then None); a folder
    or Hub name with neither is refused with the choices."""
    if template is not None:
        if template != models.CHAT:
            models.get_template(template)
        return template
    if (paths.resolve(location) / "unlearnkit.json").exists():
        return None
    raise ValueError(f"model {location!r} does not say its prompt format (no unlearnkit.json beside it): pass "
                     f"--template, one of {', '.join([*models.TEMPLATES, models.CHAT])} (chat: the tokenizer's own "
                     "chat template)")


def _config(location: str):
    """The model's configuration (an adapter's: its base's)."""
    from transformers import AutoConfig

    local = paths.resolve(location)
    if local.is_dir() and (local / models.ADAPTER_CONFIG).exists():
        return _config(models.adapter_base(local))
    return AutoConfig.from_pretrained(models.source_of(location))


#: What a retain model must share with the model to be its control: the architecture and its sizes, and the vocabulary.
SAME_BASE_KEYS = ("model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")


def _same_base(model: str, reference: str) -> None:
    a, b = _config(model), _config(reference)  # attribute names are the same across families (GPT-2's n_embd too)
    differing = [k for k in SAME_BASE_KEYS if getattr(a, k, None) != getattr(b, k, None)]
    if differing:
        k = differing[0]
        raise ValueError(f"--reference {reference!r} is not of the model's base: its {k} is {getattr(b, k, None)!r}, "
                         f"the model's {getattr(a, k, None)!r} (a retain model is the same base fine-tuned on the "
                         "retain split only)")


def _label(model: str) -> str:
    """A name for the model (:data:`unlearnkit.paths.NAME`): the folder's or Hub name's last part."""
    tail = Path(model.rstrip("/")).name or "model"
    label = re.sub(r"[^A-Za-z0-9._@-]+", "-", tail).strip(".-") or "model"
    return label[:60]


def identity(params: config.Params, request: Request) -> str:
    """What the evaluation is of: the model's identity (by content for a foreign folder), the stated template, the
    retain model's identity, the data and every parameter (the dtype, a --set value), as a short hash (the folder's
    suffix): two evaluations that could differ never share a folder."""
    return config.params_hash({"model": runs.model_identity(request.model), "template": request.template,
                               "reference": reference_identity(request.reference) if request.reference else None,
                               "data": request.data, "params": config.params_hash(dict(params))}, length=10)


def eval_folder(params: config.Params, request: Request, output_path: str | None = None) -> Path:
    """The evaluation's folder: the one the door chose (``request.folder``), else
    ``<output_path or runs/<profile>/seed-<s>/eval>/<label>-<identity>/``. ``output_path`` (``--output-path``): a
    folder of the user's, resolved, with no link below it (:func:`unlearnkit.paths.no_links_below`)."""
    if request.folder is not None:
        return Path(request.folder)
    root = (paths.no_links_below(Path(output_path).expanduser().resolve(), "--output-path") if output_path
            else runs.store(params) / runs.EVAL)
    return root / f"{request.label}-{identity(params, request)}"


def chosen(params: config.Params, request: Request, output_path: str | None = None) -> Request:
    """``request`` with its folder chosen (:func:`eval_folder`): the identity is computed here, once."""
    return request._replace(folder=str(eval_folder(params, request, output_path)))


def notebook_name(params: config.Params, request: Request) -> str:
    """The store-relative name under which metrics.json is written (``eval/<label>-<identity>``)."""
    return f"{runs.EVAL}/{eval_folder(params, request).name}"


# --------------------------------------------------------------------------- the cost, before any work


def request_estimate(params: config.Params, request: Request, source=None) -> dict[str, float]:
    """:func:`estimate_seconds` of a checked request (its model's parameters, its reference, its forget split), on
    the FLOP rates of :data:`.cost.CPU_FLOPS`: what an evaluation records as ``meta.estimated_seconds``, and what the
    door scales by this machine's measured rates (:func:`unlearnkit.ownmodel.cost.calibration`)."""
    source = corpus(params, request) if source is None else source
    return estimate_seconds(params, parameter_count(request.model), request.suites, REFERENCE in named(request),
                            len(source.load(params.forget_split)))


def front_door(params: config.Params, model: str, data: str | None, reference: str | None, suites: str | None,
               template: str | None, revision: str | None = None, allow_long: bool = False,
               output_path: str | None = None) -> tuple[Request, list[str], dict[str, float]]:
    """``runner eval``'s checks before any kernel: the request (:func:`check_request`), its folder (:func:`chosen`,
    under ``output_path`` if given), then the cost of each suite on a CPU (:func:`request_estimate`, scaled by the
    rates earlier evaluations measured on this machine), refused beyond :data:`CPU_LIMIT_S` unless ``allow_long``; a
    ValueError in one line, else the request, the lines to print and the estimate (seconds per suite; empty on a
    GPU)."""
    import torch

    from .cost import calibration

    request = chosen(params, check_request(params, model, data, reference, suites, template, revision), output_path)
    n_parameters = parameter_count(request.model)
    lines = [f"{request.label}: {n_parameters / 1e6:.1f} M parameters, template {request.template or 'from its marker'}"
             f", reference {paths.shown(request.reference) if request.reference else f'none ({NO_REFERENCE})'}"]
    estimate: dict[str, float] = {}
    if not torch.cuda.is_available():
        factors, measured = calibration(n_parameters)
        estimate = {s: v * factors.get(s, 1.0) for s, v in request_estimate(params, request).items()}
        basis = (f"calibrated on the rates of {measured} earlier evaluation(s) of a model this size here" if measured
                 else "not yet calibrated: no evaluation of a model this size measured on this machine")
        lines.append(f"estimated on this CPU ({basis}): " + ", ".join(f"{s} {_minutes(v)}" for s, v in estimate.items()))
        long = [s for s, v in estimate.items() if v > CPU_LIMIT_S]
        if long and not allow_long:
            raise ValueError(f"{', '.join(long)} would take over {CPU_LIMIT_S / 3600:.0f} h on this CPU: pass "
                             "--allow-long to run anyway, choose other suites with --suite, or run on a GPU")
    return request, lines, estimate


#: Families whose positions are a learned table (GPT-2's ``wpe``, OPT's): a prompt past its last row fails with
#: "index out of range" deep in the model. Rotary families (Llama, Phi, Mistral, GPT-NeoX) run past their stated
#: ``max_position_embeddings``, as lm-eval lets them, so they are not refused.
LEARNED_POSITIONS = ("gpt2", "gpt_neo", "opt", "biogpt")


def positions(location: str) -> int | None:
    """The most tokens the model can take: its table of learned positions (:data:`LEARNED_POSITIONS`); None for a
    family without one."""
    cfg = _config(location)
    if getattr(cfg, "model_type", None) not in LEARNED_POSITIONS:
        return None
    for key in ("n_positions", "max_position_embeddings"):
        if isinstance(getattr(cfg, key, None), int):
            return getattr(cfg, key)
    return None


def _tokenizer(location: str):
    """The model's tokenizer (an adapter folder's own, else its base's), read without the weights."""
    from transformers import AutoTokenizer

    local = paths.resolve(location)
    if local.is_dir() and (local / models.ADAPTER_CONFIG).exists() and not (local / "tokenizer_config.json").exists():
        return _tokenizer(models.adapter_base(local))
    return AutoTokenizer.from_pretrained(models.source_of(location))


def check_positions(params: config.Params, location: str, suites: Sequence[str], source) -> None:
    """The formats suite's prompts (MCQA's are the longest: the question and every option) against the model's
    learned positions (:func:`positions`), before any kernel: a longer prompt would fail deep in its position table.
    Refused in one line with the longest prompt's length and what runs without it."""
    from ..data import formats
    from ..metrics.formats import encode_text

    limit = positions(location)
    if limit is None:
        return
    items = formats.build_all_formats(source, params.forget_split, params.format_options, params.format_seed,
                                      params.format_max_items)
    tokenizer = _tokenizer(location)
    lengths = [(len(encode_text(tokenizer, item["prompt"])), name) for name, sets in items.items()
               for rows in (sets.values() if isinstance(sets, Mapping) else [sets]) for item in rows
               if isinstance(item, Mapping) and isinstance(item.get("prompt"), str)]
    longest, name = max(lengths, default=(0, ""))
    if longest > limit:
        others = ",".join(s for s in suites if s != "formats") or "tofu,leakage,attacks"
        raise ValueError(f"suite formats: the longest {name} prompt is {longest} tokens and the model takes "
                         f"{limit} positions: pass --suite {others}, or a model with more positions")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


# --------------------------------------------------------------------------- the suites


def state_template(request: Request) -> None:
    """Make the stated template the one every load of the model uses, in this process and the workers it starts."""
    for location in (request.model, request.reference):
        if location and request.template and not (paths.resolve(location) / "unlearnkit.json").exists():
            models.state(TEMPLATES_VARIABLE, location, request.template)


def state_revision(name: str, revision: str) -> None:
    """Make ``revision`` the version of Hub model ``name`` every load takes, here and in the workers."""
    models.state(models.STATED_REVISIONS_VARIABLE, name, revision)


def corpus(params: config.Params, request: Request):
    """The data of the evaluation: the profile's corpus, or the folder or Hub data set named."""
    return _corpus(params, request.data)


def _corpus(params: config.Params, data: str):
    from .. import pipeline

    if data == PROFILE_DATA:
        return pipeline.corpus(params)
    return pipeline.corpus(params.replace(data_source=data))


def describe(request: Request) -> str:
    """One line on what is evaluated, with paths as a page shows them (:func:`unlearnkit.paths.shown`)."""
    shown = lambda where: paths.shown(where) if where and Path(where).is_absolute() else where  # noqa: E731
    return (f"model {request.label} ({'the workbook' if request.own else 'foreign'}: {shown(request.model)}), "
            f"template {request.template or 'from its marker'}, data {shown(request.data)}, "
            f"reference {shown(request.reference) or f'none ({NO_REFERENCE})'}"
            f"{' (its results)' if REFERENCE not in named(request) and request.reference else ''}; "
            f"suites {', '.join(request.suites)}")


def named(request: Request) -> dict[str, str]:
    """The models to run: the model, and the reference where it was given as weights (not as results)."""
    weights = request.reference and results_file(request.reference) is None
    return {MODEL: request.model, **({REFERENCE: request.reference} if weights else {})}


def cache_notebook(params: config.Params, request: Request, label: str) -> str:
    """Where a model's scores are cached: the evaluation's own folder, the reference's shared one
    (:func:`unlearnkit.ownmodel.reference.reference_notebook`): a retain model is scored once for every
    evaluation against it."""
    return reference_notebook(request.reference) if label == REFERENCE else notebook_name(params, request)


def tofu_suite(params: config.Params, request: Request, source) -> tuple[dict[str, Any], dict[str, Any]]:
    """TOFU's metrics on the forget split, retain, real authors and world facts, forget quality against the retain
    model, and open-unlearning's memorisation and privacy metrics (privleak against the retain model): the retain
    model's scores computed once for every evaluation against it, or read from the results given
    (:func:`unlearnkit.ownmodel.reference.tofu_scores`)."""
    with stations.step("tofu"):
        return tofu_scores(params, request.model, request.reference, request.data, source, NO_REFERENCE)


#: The leakage suite's cache entries are named ``<label>.leakage``: the formats suite's share the folder (the
#: reference's is shared by every evaluation against it) under ``<label>``, and one entry is kept per name, so under
#: one name each suite evicted the other's and a retain model was sampled and scored again by every evaluation.
LEAKAGE_CACHE = ".leakage"


def leakage_suite(params: config.Params, request: Request, source):
    """Sampled leakage with the high-probability bounds (Scholten et al.) and the ED score, on the forget questions."""
    from ..metrics.sampling import sampling_settings
    from ..metrics.scored import Scored
    from ..studies import leakage

    rows = leakage.forget_rows(source, params)
    settings = sampling_settings(params, "leakage")
    # a Path is a model folder (or Hub name) to the sampler, a str a saved model's name in the store
    scored = Scored({}, {})
    with stations.step("leakage"):
        for label, location in named(request).items():  # each in its cache folder (the reference's is shared)
            with stations.step(f"leakage {label}"):
                one = leakage.score_models(params, {label: Path(location)}, rows, settings,
                                           notebook=cache_notebook(params, request, label), cache_tag=LEAKAGE_CACHE)
            scored.results.update(one.results)
            scored.seconds.update(one.seconds)
    tables, summaries = leakage.summarise_models(scored.results, params.alpha, params.leak_threshold,
                                                 params.adaptive_threshold, REFERENCE if REFERENCE in scored.results
                                                 else None)
    return scored, tables, summaries


def formats_suite(params: config.Params, request: Request, source):
    """The format-transformed evaluation (Joshi et al.): MCQA, cloze, analogy, odd-one-out and comprehension."""
    from ..data import formats
    from ..studies import formats as study

    scores = {}
    with stations.step("formats"):
        items = formats.build_all_formats(source, params.forget_split, params.format_options, params.format_seed,
                                          params.format_max_items)
        for label, location in named(request).items():
            with stations.step(f"formats {label}"):
                scores[label] = study.metrics_payload(study.evaluate_model(label, location, items, params,
                                                                           cache_notebook(params, request, label)).scores)
    return items, scores


def attacks_suite(params: config.Params, request: Request, source) -> dict[str, dict[str, Any]]:
    """The robustness attacks (relearning, held-out facts, quantisation, input probes) on the model and its control."""
    from ..studies import recovery

    found = {}
    with stations.step("attacks"):
        data = recovery.attack_data(params, source)
        for label, location in named(request).items():
            with stations.step(f"attacks {label}"):
                found[label] = recovery.attack_model(params, label, location, data,
                                                     cache_notebook(params, request, label))
    return found
