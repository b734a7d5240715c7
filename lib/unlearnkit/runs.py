"""The run store: what every notebook wrote under ``runs/<profile>/seed-<seed>/``, and the only module that knows
the notebooks' names.

Layout of one profile's runs of one training seed (``seed``; the runs of another seed live beside them, so one seed
never overwrites another)::

    runs/<profile>/seed-<s>/<notebook>.ipynb           the executed notebooks (the runner writes them)
    runs/<profile>/seed-<s>/<notebook>/metrics.json    results {model: {split: {metric: value}}} and "meta"
    runs/<profile>/seed-<s>/<notebook>/per_item.json   per-item values beside them
    runs/<profile>/seed-<s>/<notebook>/cache/          cached per-model results (:func:`cached_json`)
    runs/<profile>/seed-<s>/models/<name>/             saved models: base, target, retainXX, unlearned-<run>, ...
    runs/<profile>/seed-<s>/figures/                   figures, where they do not go to figures/ (:func:`figures_dir`)
    runs/<profile>/findings.json                       the findings of every seed present, judged across them

Every function takes the run's :class:`~unlearnkit.config.Params`, whose ``profile`` and ``seed`` name the store.
Notebooks talk to each other only through these files, so any one of them can be rerun alone.

**One cache rule.** A cached result is keyed by a hash of everything it depends on: the identity of each
model involved (:func:`model_identity`: the hash of the recipe that made it, recorded when it was saved), the
items, the settings, and a version constant that a scorer bumps when its output changes. Never by file times,
never by hashing source code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import config, models, paths, provenance
from .config import Params

# --------------------------------------------------------------------------- the notebooks

DATA_TOUR = "00_data_tour"
FINETUNE = "01_tofu_finetune"
UNLEARNING = "02_unlearning"  # run once per unlearning run: 02_unlearning_<run>
CONTROLS = "03_controls_calibration"
FORMATS = "04_format_eval"
LEAKAGE = "05_probabilistic_bounds"
ENTROPY = "06_entropy_optimisation"
ALIGNMENT = "07_alignment_toxicity"
ROBUSTNESS = "08_robustness"
FINDINGS = "09_findings"
#: Which notebook makes a saved model, by the model's name: unlearned-* come from notebook 02, the rest from 01.
UNLEARNED_PREFIX = "unlearned-"


#: The sections of default.yaml (:func:`config.parameter_sections`) whose keys each notebook reads, in its own cells
#: or through the library (a study retrains runs, so it reads the unlearning keys too). The keys above the first
#: section (seed, jobs) are read by every notebook that trains or samples.
_UPSTREAM = ("data", "model", "base model", "fine-tuning")
NOTEBOOK_SECTIONS: dict[str, tuple[str, ...]] = {
    DATA_TOUR: ("", "data"),
    FINETUNE: ("", *_UPSTREAM),
    UNLEARNING: ("", *_UPSTREAM, "unlearning"),
    CONTROLS: ("", *_UPSTREAM, "unlearning", "controls and calibration"),
    FORMATS: ("", *_UPSTREAM, "unlearning", "format-transformed evaluation"),
    LEAKAGE: ("", *_UPSTREAM, "unlearning", "probabilistic evaluation"),
    ENTROPY: ("", *_UPSTREAM, "unlearning", "probabilistic evaluation", "entropy optimisation and adaptive temperature"),
    ALIGNMENT: ("", *_UPSTREAM, "unlearning", "probabilistic evaluation", "alignment toxicity under sampling"),
    ROBUSTNESS: ("", *_UPSTREAM, "unlearning", "robustness attacks"),
    FINDINGS: (),
}


def keys_read(notebook: str) -> set[str]:
    """The profile keys notebook ``notebook`` (a stem, ``02_unlearning``) reads; ``profile`` always."""
    sections = config.parameter_sections()
    return {"profile"} | {key for name in NOTEBOOK_SECTIONS[notebook] for key in sections[name]}


def unlearning_notebook(run: str) -> str:
    return f"{UNLEARNING}_{run}"


def notebook_key(notebook: str) -> str:
    """The number a user types for a notebook (``make notebook NB=01``)."""
    return notebook[:2]


def _run_it_first(notebook: str, params: Params) -> str:
    key = notebook_key(notebook)
    seed = "" if is_reference_seed(params) else f" --set seed={params.seed}"
    return (f"run notebook {key} with profile {params.profile!r}{seed} first "
            f"(python -m unlearnkit.runner {key} --profile {params.profile}{seed})")


# --------------------------------------------------------------------------- locks and atomic writes


@contextmanager
def file_lock(path: Path, shared: bool = False) -> Iterator[None]:
    """Hold an advisory lock on ``path`` (created if need be) for the block: one process at a time inside, the others
    wait (``shared``: any number of shared holders at once, which only an exclusive taker waits for). The lock dies
    with its process, so a killed holder never blocks the next one."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: Whole-file writes (paths.atomic_write_bytes / atomic_write_text), here where the notebooks' code looks for them.
atomic_write_bytes, atomic_write_text = paths.atomic_write_bytes, paths.atomic_write_text


# --------------------------------------------------------------------------- where a seed's runs live

SEED_PREFIX = "seed-"
#: The profile-level file of findings judged across every seed present (notebook 09 writes it).
FINDINGS_ACROSS_SEEDS = "findings.json"


def profile_dir(profile: str) -> Path:
    """``runs/<profile>/``: the runs of every training seed of the profile."""
    return paths.RUNS / profile


#: A run on another corpus draw than its profile's: ``seed-<s>-data-<d>`` (never one of the profile's seeds).
DATA_SEED_INFIX = "-data-"


def store(params: Params) -> Path:
    """``runs/<profile>/seed-<seed>/``: everything the notebooks wrote for this profile and training seed. A run on
    another corpus draw than the profile's (``data_seed``) lives apart, in ``seed-<seed>-data-<data_seed>/``: it is
    not one of the profile's training seeds, and it never overwrites one."""
    name = f"{SEED_PREFIX}{params.seed}"
    if params.corpus_draw != reference_draw(params.profile, params.seed):
        name += f"{DATA_SEED_INFIX}{params.corpus_draw}"
    folder = profile_dir(params.profile) / name
    paths.inside(folder, paths.RUNS, "the run store")  # runs/<profile> may be a symlink a received folder brought
    return folder


def seeds(profile: str) -> list[int]:
    """The training seeds of ``profile`` that have a run store (a folder ``seed-<s>``), in order."""
    found = []
    for folder in profile_dir(profile).glob(f"{SEED_PREFIX}*"):
        suffix = folder.name[len(SEED_PREFIX):]
        if folder.is_dir() and suffix.lstrip("-").isdigit():
            found.append(int(suffix))
    return sorted(found)


#: The file a runner holds a shared lock on while it runs a seed's notebooks (``runs/<profile>/seed-<s>/.running``).
RUNNING_MARK = ".running"


def seed_at_work(params: Params):
    """Mark this seed's store as being run for the block: a shared :func:`file_lock` on its ``.running`` file, which
    several runners of the same seed may hold at once and which dies with its process (a killed run is never left
    marked). :func:`in_progress` reads it."""
    return file_lock(store(params) / RUNNING_MARK, shared=True)


def in_progress(profile: str, seed: int) -> bool:
    """Whether a runner is running notebooks of training seed ``seed`` of ``profile`` now (it holds the seed's
    ``.running`` lock: :func:`seed_at_work`)."""
    import fcntl

    path = profile_dir(profile) / f"{SEED_PREFIX}{seed}" / RUNNING_MARK
    if not path.exists():
        return False
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def reference_seed(profile: str) -> int:
    """The seed the profile itself names (``seed`` of its merged layers): the run whose figures go to ``figures/``."""
    return int(config.load_profile(profile)["seed"])


def reference_data_seed(profile: str) -> int | None:
    """The corpus draw the profile itself names (``data_seed``; None: the training seed's own)."""
    value = config.load_profile(profile).get("data_seed", 0)
    return None if value is None else int(value)


def reference_draw(profile: str, seed: int) -> int:
    """The corpus draw of training seed ``seed`` on ``profile`` as the profile names it: its ``data_seed``, or the
    training seed where that is null."""
    value = reference_data_seed(profile)
    return seed if value is None else value


def is_reference_seed(params: Params) -> bool:
    """The profile's own run: its training seed on its corpus draw (whose figures the default profile commits)."""
    return (params.seed == reference_seed(params.profile)
            and params.corpus_draw == reference_draw(params.profile, params.seed))


#: The profile whose reference seed draws the committed figures (``figures/``).
FIGURE_PROFILE = config.BASE_PROFILE


def figures_dir(params: Params, figure: str = "") -> Path:
    """Where a run's figure goes: ``figures/`` (committed) for the default profile's own seed, else the seed's store.
    The findings notebook's figures always go to the store: they judge whatever seeds are present, and the committed
    overview is drawn from the committed summary (``make readme``), never from one run."""
    if params.profile == FIGURE_PROFILE and is_reference_seed(params) and not figure.startswith(FINDINGS):
        return paths.FIGURES
    return store(params) / "figures"


# --------------------------------------------------------------------------- results


def notebook_dir(params: Params, notebook: str) -> Path:
    d = store(params) / notebook
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_metrics(params: Params, notebook: str, results: Mapping[str, Any],
                  extra_meta: Mapping[str, Any] | None = None) -> None:
    """Write ``runs/<profile>/seed-<s>/<notebook>/metrics.json`` (nothing returned: a notebook cell that ends with it
    shows no stray path).

    ``results`` is ``{model: {split: {metric: value}}}``; a ``"meta"`` entry is added with the parameters,
    the git revision and the package versions.
    """
    if "meta" in results:
        raise ValueError("'meta' is reserved in metrics.json; rename that model")
    payload = dict(config.jsonable(results))
    payload["meta"] = config.jsonable({
        "notebook": notebook,
        "profile": params.profile,
        "seed": params.seed,
        "parameters": dict(params),
        "git_revision": provenance.git_revision(),
        "packages": provenance.package_versions(),
        **(extra_meta or {}),
    })
    path = notebook_dir(params, notebook) / "metrics.json"
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=False) + "\n")
    if notebook != FINDINGS:
        mirror(params, notebook, "metrics.json", payload)


class StoreDisagrees(ValueError):
    """A result file of the store written with other values of the keys its notebook reads than the run reading it
    has (a profile edited since, a run folder received from elsewhere): refused in one line naming the file."""


#: Keys whose value never changes a result (the worker count), so a result written with another value still agrees.
RESULT_NEUTRAL = frozenset({"jobs"})


def _load_json(path: Path, notebook: str, params: Params) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{paths.shown(path)} is not valid JSON ({exc}): rerun {notebook} "
                         f"(runner {notebook[:2]} --profile {params.profile})") from None


def check_agrees(params: Params, notebook: str, path: Path, payload: Mapping[str, Any]) -> None:
    """Refuse (:class:`StoreDisagrees`, one line naming ``path``) a result written with another value of a key
    ``notebook`` reads (:func:`keys_read`) than ``params`` has. A key either side lacks (one added to the workbook
    since) is passed over, and so are :data:`RESULT_NEUTRAL` keys; of a mapping (``method_settings``, which a study
    extends with its own runs) only the entries both sides name are compared."""
    meta = payload.get("meta") if isinstance(payload, Mapping) else None
    written = meta.get("parameters") if isinstance(meta, Mapping) else None
    if not isinstance(written, Mapping):
        return
    stem = UNLEARNING if notebook.startswith(UNLEARNING) else notebook
    for key in sorted(keys_read(stem) - RESULT_NEUTRAL - {"profile"}) if stem in NOTEBOOK_SECTIONS else ():
        if key not in written or key not in params:
            continue
        before, now = written[key], config.jsonable(params[key])
        if isinstance(before, Mapping) and isinstance(now, Mapping):
            differing = [k for k in sorted(set(before) & set(now)) if before[k] != now[k]]
            if not differing:
                continue
            key, before, now = f"{key}.{differing[0]}", before[differing[0]], now[differing[0]]
        elif before == now:
            continue
        raise StoreDisagrees(
            f"{paths.shown(path)} was written with {key}={_short(before)}, but this run has {_short(now)}: "
            f"rerun notebook {notebook_key(notebook)} (python -m unlearnkit.runner {notebook_key(notebook)} "
            f"--profile {params.profile}{'' if is_reference_seed(params) else f' --set seed={params.seed}'})")


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read_result(params: Params, notebook: str, file: str) -> dict[str, Any]:
    path = store(params) / notebook / file
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: {_run_it_first(notebook, params)}")
    payload = _load_json(path, notebook, params)
    metrics = path if file == "metrics.json" else path.with_name("metrics.json")
    if metrics.exists():
        check_agrees(params, notebook, metrics, payload if metrics == path else _load_json(metrics, notebook, params))
    return payload


def has_metrics(params: Params, notebook: str) -> bool:
    return (store(params) / notebook / "metrics.json").exists()


def read_metrics(params: Params, notebook: str) -> dict[str, Any]:
    """Results written by another notebook; a clear message says which notebook to run first."""
    return _read_result(params, notebook, "metrics.json")


def write_per_item(params: Params, notebook: str, per_item: Mapping[str, Any]) -> None:
    """Per-item values (truth ratios, ROUGE, answers) beside metrics.json, for later notebooks."""
    path = notebook_dir(params, notebook) / "per_item.json"
    atomic_write_text(path, json.dumps(config.jsonable(per_item)))
    mirror(params, notebook, "per_item.json", per_item)


def read_per_item(params: Params, notebook: str) -> dict[str, Any]:
    return _read_result(params, notebook, "per_item.json")


def unlearning_runs(params: Params) -> dict[str, dict[str, Any]]:
    """The metrics.json of every unlearning run of the profile's seed, keyed by run name."""
    found = {}
    for path in sorted(store(params).glob(f"{UNLEARNING}_*/metrics.json")):
        payload = _load_json(path, path.parent.name, params)
        check_agrees(params, path.parent.name, path, payload)
        found[path.parent.name.removeprefix(f"{UNLEARNING}_")] = payload
    return found


#: Evaluations of one's own models (runner eval): ``<store>/eval/<model>-<id>/eval_model.ipynb`` and its results.
EVAL, EVAL_NOTEBOOK = "eval", "eval_model"


def evaluations(params: Params) -> list[Path]:
    """The executed evaluation notebooks of a run's store, by folder name; a folder whose name is not a name (a
    received store's) is left out."""
    return sorted(p for p in store(params).glob(f"{EVAL}/*/{EVAL_NOTEBOOK}.ipynb") if paths.NAME.fullmatch(p.parent.name))


def executed_notebook(params: Params, stem: str) -> Path:
    """Where the runner writes the executed copy of a notebook (``stem`` with its run suffix: 02_unlearning_npo)."""
    return store(params) / f"{stem}.ipynb"


# --------------------------------------------------------------------------- saved models


def model_dir(params: Params, name: str) -> Path:
    return store(params) / "models" / name


def history(params: Params, name: str) -> list[dict]:
    """The per-step training log saved beside a model (empty for a Hub model used as is)."""
    path = model_dir(params, name) / "history.json"
    return json.loads(path.read_text()) if path.exists() else []


def unlearned_name(run: str) -> str:
    return f"{UNLEARNED_PREFIX}{run}"


def trajectory_dir(params: Params, run: str) -> Path:
    """Where the weights kept along an unlearning run live (early stopping)."""
    return model_dir(params, f"{unlearned_name(run)}.trajectory")


def trajectory_steps(params: Params, run: str) -> list[tuple[int, Path]]:
    """The weights kept along an unlearning run: (step, folder), in order."""
    found = [(int(p.name.split("-")[1]), p) for p in trajectory_dir(params, run).glob("step-*")
             if models.is_saved_model(p)]
    return sorted(found)


def sparse_steps(params: Params, run: str, every: int | None) -> list[tuple[int, Path]]:
    """The kept steps of a run at a coarser grid: every ``every``-th step, each epoch's end and the last. A run
    that keeps every step (for early stopping) is read at the profile's ``unlearn_save_every`` where a trace
    needs no more (notebook 02's ROUGE trajectory, notebook 03's interference traces); ``every`` None keeps all."""
    kept = trajectory_steps(params, run)
    if not every or not kept:
        return kept
    return [(step, folder) for step, folder in kept
            if step % every == 0 or float(saved_recipe(folder)["epoch"]).is_integer() or step == kept[-1][0]]


@contextmanager
def exclusive(params: Params, name: str, active: bool = True) -> Iterator[None]:
    """Hold the claim on model ``name`` of the run store for the block: one process at a time (an advisory lock on
    ``runs/<profile>/seed-<s>/models/.<name>.lock``), so that two workers never train the same model; a second one waits, then
    finds the first one's result. The lock dies with its process, so a killed worker never blocks a rerun.
    ``active`` False holds nothing (the other processes of an ``accelerate launch``)."""
    if not active:
        yield
        return
    with file_lock(store(params) / "models" / f".{name}.lock"):
        yield


def is_saved(params: Params, name: str) -> bool:
    return models.is_saved_model(model_dir(params, name))


def _missing(params: Params, names: list[str]) -> FileNotFoundError:
    makers = dict.fromkeys(UNLEARNING if n.startswith(UNLEARNED_PREFIX) else FINETUNE for n in names)
    return FileNotFoundError(f"no saved model {', '.join(map(repr, names))} under {store(params) / 'models'}: "
                             + "; ".join(_run_it_first(m, params) for m in makers))


def load_saved(params: Params, name: str, device: str | None = None, dtype: str | None = None) -> models.LoadedModel:
    """A model saved by an earlier notebook, with a message naming that notebook when it is missing."""
    folder = model_dir(params, name)
    if not models.is_saved_model(folder):
        raise _missing(params, [name])
    return models.load_model(folder, device=device, dtype=dtype)


def locate(params: Params, name: str) -> Path | None:
    """The folder of a saved model by its name or, for an unlearning run's name (``npo``), the run's model."""
    for saved in (name, unlearned_name(name)):
        if is_saved(params, saved):
            return model_dir(params, saved)
    return None


def require_saved(params: Params, names: list[str]) -> dict[str, Path]:
    """``{name: folder}`` of models (or runs) that must all be saved; one message names every missing one and the
    notebooks that make them."""
    found = {name: locate(params, name) for name in dict.fromkeys(names)}
    missing = [name for name, folder in found.items() if folder is None]
    if missing:
        raise _missing(params, missing)
    return {name: folder for name, folder in found.items() if folder is not None}


def saved_recipe(folder: str | Path) -> dict[str, Any]:
    """What was recorded beside a saved model when it was saved (template, params_hash, run, step, ...)."""
    return json.loads((Path(folder) / "unlearnkit.json").read_text())


def model_identity(location: str | Path) -> str:
    """What a model's results depend on, as a short hash: for a saved model the hash of the recipe that made
    it (recorded as ``params_hash`` when it was saved; a kept checkpoint records its run's and its step), for a
    Hub name the name itself. A model mixed in memory is identified by :func:`mixed_identity`."""
    folder = Path(location)
    if models.is_saved_model(folder):
        recipe = saved_recipe(folder)
        if recipe.get("params_hash"):
            return str(recipe["params_hash"])
        # A folder saved by hand: what it says of itself, its configuration and its weights' content (two folders
        # with the same hand-written marker are two models; new weights in the same folder are a new model).
        return config.params_hash({"recipe": recipe, "config": (folder / "config.json").read_text(),
                                   "weights": models.content_digest(folder)})
    if folder.is_dir() and (folder / models.ADAPTER_CONFIG).exists():
        # a peft adapter: its own weights and configuration, and what its base is
        return config.params_hash({"adapter": models.content_digest(folder),
                                   "config": (folder / models.ADAPTER_CONFIG).read_text(),
                                   "base": model_identity(models.adapter_base(folder)), **models.stated(folder)})
    if folder.is_dir() and (folder / "config.json").exists():
        # a foreign folder (no unlearnkit.json): its content, never its name, so overwritten weights are re-scored; a
        # template stated for it (runner eval) is part of what it is
        return config.params_hash({"folder": models.content_digest(folder),
                                   "config": (folder / "config.json").read_text(), **models.stated(folder)})
    return config.params_hash({"hub": str(location), **models.stated(location)})


def mixed_identity(original: str, unlearned: str, a: float) -> str:
    """The identity of (1 - a) * original + a * unlearned (model mixing), from the two identities."""
    return config.params_hash({"mix": [original, unlearned, float(a)]})


def retain_model(params: Params, forget_split: str | None = None) -> str | None:
    """The retain model that notebook 01 used as the forget-quality reference (``retain90`` for forget10); before
    notebook 01 has run, the retain split of ``forget_split`` when given, else None."""
    try:
        reference = read_metrics(params, FINETUNE)["meta"].get("forget_quality_reference")
    except FileNotFoundError:
        reference = None
    if reference:
        return str(reference)
    if forget_split:
        from .data.tofu import retain_split_for

        return retain_split_for(forget_split)
    return None


def saved_models(params: Params, include_base: bool = False, include_retain: bool = True,
                 forget_split: str | None = None) -> dict[str, str]:
    """The models a profile has saved, as {display name: saved model name}, in the order of the figures: base
    (when asked), target, the retain model (the reference: it never saw the forget set), then every unlearning
    run of notebook 02 whose model is saved (display name: the run). The target must exist."""
    found: dict[str, str] = {}
    if include_base and is_saved(params, "base"):
        found["base"] = "base"
    if not is_saved(params, "target"):
        raise _missing(params, ["target"])
    found["target"] = "target"
    reference = retain_model(params, forget_split) if include_retain else None
    if reference and is_saved(params, reference):
        found[reference] = reference
    for run in unlearning_runs(params):
        if is_saved(params, unlearned_name(run)):
            found[run] = unlearned_name(run)
    return found


# --------------------------------------------------------------------------- cached results


def cached_json(params: Params, notebook: str, name: str, depends_on: Mapping[str, Any],
                compute: Callable[[], Any], version: str, use_cache: bool = True) -> Any:
    """``compute()``'s JSON result, cached under ``runs/<profile>/seed-<s>/<notebook>/cache/<name>-<key>.json``.

    ``key`` hashes ``depends_on`` (model identities, items, settings) with ``version`` (bump it when the
    computation's output changes). One entry is kept per ``name``: a new key replaces the old file.
    """
    key = config.params_hash({"depends_on": depends_on, "version": version})
    folder = notebook_dir(params, notebook) / "cache"
    path = folder / f"{name}-{key}.json"
    if use_cache and path.exists():
        return json.loads(path.read_text())
    text = json.dumps(config.jsonable(compute()))
    atomic_write_text(path, text)
    for stale in folder.glob(f"{name}-*.json"):
        if stale != path and stale.name.removeprefix(f"{name}-").count("-") == 0:
            stale.unlink()
    return json.loads(text)  # the same plain values a later cache hit returns


# --------------------------------------------------------------------------- the committed mirror of each seed's results
# results/<profile>/seed-<s>/: what the judge reads of a seed without its models (lib/unlearnkit/results.py reads it).

#: The notebooks whose per-item values a claim may read (truth ratios of 01, PS sweeps of 03, bounds of 05, sampled
#: spreads of 06, attacks of 08); notebook 04's per-format items (megabytes) stay in the run store.
PER_ITEM = (FINETUNE, CONTROLS, LEAKAGE, ENTROPY, ROBUSTNESS)
#: Meta keys that differ between two runs of the same code on the same bits, left out of the mirror.
VOLATILE = ("git_revision", "packages")
PROVENANCE = "provenance.json"


def _own_store() -> bool:
    """Whether the run store is the checkout's own ``runs/`` (or ``UNLEARNKIT_RESULTS`` names a mirror): only then are
    results mirrored into, and read back from, the committed folder. A store elsewhere (the tests' temporary folders)
    never mixes with the committed seeds."""
    return paths.RUNS == (paths.ROOT / "runs").resolve() or "UNLEARNKIT_RESULTS" in os.environ


def publishes(params: Params) -> bool:
    """Whether this run's results are mirrored into the checkout: a seed of the default profile on the corpus draw
    its profile names for it (``seed-<s>``, never ``seed-<s>-data-<d>``), run in the checkout's own ``runs/``. A
    store elsewhere (``UNLEARNKIT_RUNS``: the tests' temporary folders) mirrors nowhere unless ``UNLEARNKIT_RESULTS``
    names where."""
    return (_own_store() and params.profile == FIGURE_PROFILE
            and params.corpus_draw == reference_draw(params.profile, params.seed))


def writes_committed(params: Params) -> bool:
    """Whether a run of ``params`` writes files the checkout commits: the default profile's figures (its own seed),
    its mirrored results (any seed, in the checkout's own store) and, through notebook 09, docs/findings.json and
    the README. A run with ``--set`` values may not (the runner refuses it with a hint)."""
    return params.profile == FIGURE_PROFILE and (_own_store() or is_reference_seed(params))


def results_dir(profile: str, seed: int) -> Path:
    return paths.RESULTS / profile / f"{SEED_PREFIX}{seed}"


def _timed(key: Any) -> bool:
    """A key that names seconds a run took (``sampling_seconds``, ``elapsed_s``) or its timing record: never the
    same twice, so never mirrored (notebook 03's ``elapsed_s`` was, and a fresh clone's ``make all`` changed it)."""
    key = str(key)
    return key.endswith(("seconds", "_s")) or key == "timing"


def _reproducible(value: Any) -> Any:
    """``value`` without what times or places a run: the volatile meta keys, any key naming seconds
    (:func:`_timed`), and the checkout's own absolute paths (a model folder, the corpus), named as
    :func:`paths.shown` names them."""
    if isinstance(value, Mapping):
        return {k: _reproducible(v) for k, v in value.items() if k not in VOLATILE and not _timed(k)}
    if isinstance(value, list):
        return [_reproducible(v) for v in value]
    if isinstance(value, str) and value.startswith(os.sep) and len(value) < 4096:
        return paths.shown(value)
    return value


def mirror(params: Params, notebook: str, file: str, payload: Mapping[str, Any]) -> Path | None:
    """Mirror one result file of a run into ``results/`` where :func:`publishes` says so (else nothing): written only
    when its bytes change, and then the seed's provenance with it."""
    if not publishes(params) or (file == "per_item.json" and notebook not in PER_ITEM) or not notebook[:2].isdigit():
        return None  # results/ holds the numbered notebooks' results (the claims' seeds), never an evaluation's
    meta = dict(payload.get("meta", {})) if isinstance(payload, Mapping) else {}
    body = dict(_reproducible(config.jsonable(payload)))
    text = json.dumps(body, indent=1, sort_keys=False) + "\n"
    folder = results_dir(params.profile, params.seed)
    path = folder / notebook / file
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return path
    atomic_write_text(path, text)
    record = {"git_revision": meta.get("git_revision") or provenance.git_revision(),
              "packages": meta.get("packages") or provenance.package_versions()}
    atomic_write_text(folder / PROVENANCE, json.dumps(config.jsonable(record), indent=1) + "\n")
    return path


def mirror_store(params: Params) -> list[Path]:
    """Mirror every result file of a run's store again (after a change to what the mirror keeps): what
    :func:`mirror` would have written as each notebook wrote it."""
    written = []
    for path in sorted(store(params).glob("0*/metrics.json")) + sorted(store(params).glob("0*/per_item.json")):
        if path.parent.name == FINDINGS:
            continue
        done = mirror(params, path.parent.name, path.name, json.loads(path.read_text(encoding="utf-8")))
        if done is not None:
            written.append(done)
    return written


def committed_seeds(profile: str) -> list[int]:
    """The seeds of ``profile`` whose results are committed (a folder ``results/<profile>/seed-<s>``)."""
    found = []
    if not _own_store():
        return found
    for folder in (paths.RESULTS / profile).glob(f"{SEED_PREFIX}*"):
        suffix = folder.name[len(SEED_PREFIX):]
        if folder.is_dir() and suffix.isdigit():
            found.append(int(suffix))
    return sorted(found)
