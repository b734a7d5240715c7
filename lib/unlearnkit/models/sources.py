"""Where a model entry comes from: the folder or the Hub name transformers loads, what was stated for it beside its
files (template, revision; :func:`stated`), the base a peft adapter names, and the check that refuses, before any
kernel starts, a model the run could not load (:func:`check_source`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import paths, refusals

#: ``{folder or Hub name: template}`` stated for models without the workbook's marker (``runner eval --template``),
#: as JSON in the environment so that every worker process loading the model takes the same template.
STATED_TEMPLATES_VARIABLE = "UNLEARNKIT_STATED_TEMPLATES"


#: ``{Hub name: revision}`` stated for Hub models (``runner eval --revision``), read like the stated templates.
STATED_REVISIONS_VARIABLE = "UNLEARNKIT_STATED_REVISIONS"


def source_of(name_or_path: str | os.PathLike) -> str:
    """What transformers loads a model entry from: the resolved folder where there is one, else the Hub name."""
    local = paths.resolve(name_or_path)
    return str(local) if local.is_dir() else str(name_or_path)


def _stated(variable: str, name_or_path: str | os.PathLike) -> str | None:
    stated = os.environ.get(variable)
    return json.loads(stated).get(source_of(name_or_path)) if stated else None


def state(variable: str, name_or_path: str | os.PathLike, value: str) -> None:
    """Record ``value`` for a model in ``variable`` (:data:`STATED_TEMPLATES_VARIABLE`,
    :data:`STATED_REVISIONS_VARIABLE`): every later load, here and in the worker processes started after, takes it."""
    stated = json.loads(os.environ.get(variable) or "{}")
    os.environ[variable] = json.dumps({**stated, source_of(name_or_path): value})


def stated_revision(name: str | os.PathLike) -> str | None:
    """The revision (a branch, tag or commit) stated for a Hub model (:data:`STATED_REVISIONS_VARIABLE`), or None."""
    return _stated(STATED_REVISIONS_VARIABLE, name)


def stated_template(name_or_path: str | os.PathLike) -> str | None:
    """The template stated for a model without a marker (:data:`STATED_TEMPLATES_VARIABLE`), or None."""
    return _stated(STATED_TEMPLATES_VARIABLE, name_or_path)


def stated(name_or_path: str | os.PathLike) -> dict[str, str]:
    """What was stated for a model beside its files (``template``, ``revision``): part of what it is."""
    found = {"template": stated_template(name_or_path), "revision": stated_revision(name_or_path)}
    return {k: v for k, v in found.items() if v}


def check_source(spec: str, what: str = "model") -> None:
    """Refuse, in one line per problem and before any kernel starts, a model the run could not load: a folder that
    does not exist, holds no ``config.json`` or holds what :func:`~unlearnkit.models.folder.folder_problems` finds
    (all of it, :class:`~unlearnkit.refusals.Problems`), or a Hub name while offline (``HF_HUB_OFFLINE=1``, the
    runner's default) that is not in the local Hub cache. ``tiny`` (trained from scratch) always passes."""
    if spec == "tiny":
        return
    local = paths.resolve(spec)
    if local.is_dir():
        if (local / ADAPTER_CONFIG).exists():  # a peft adapter: its base must load too
            found = refusals.Collected()
            with found.check():
                _check_folder(local, spec, what, adapter=True)
            base = None
            with found.check(prefix=f"{what} {spec!r}: "):
                named = adapter_base(local)
                if (paths.resolve(named) / ADAPTER_CONFIG).exists():  # itself, or another adapter: never followed
                    raise ValueError(f"the adapter's base {named!r} is an adapter too (its base must be a model)")
                base = named
            if base is not None:
                with found.check():
                    check_source(base, f"the base of {what} {spec!r}")
            found.raise_any()
            return
        if not (local / "config.json").exists():
            raise ValueError(f"{what} {spec!r}: the folder {paths.shown(local)} holds no config.json (not a saved model)")
        if not any(local.glob("*.safetensors")):
            raise ValueError(f"{what} {spec!r}: {paths.shown(local)} holds no *.safetensors weights (the workbook never "
                             "unpickles *.bin; save with model.save_pretrained(folder), the default)")
        _check_folder(local, spec, what)
        return
    if missing_folder(spec, local):
        raise ValueError(f"{what} {spec!r}: the model folder {paths.shown(local)} does not exist (and it is not a Hub "
                         "name)")
    if paths.offline("HF_HUB_OFFLINE"):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(spec, "config.json", revision=stated_revision(spec)), str):
            raise ValueError(f"{what} {spec!r} is a Hub name that is not in the local Hub cache, and the runner is "
                             "offline: pass --online (make ... ONLINE=1) to download it once, or name a local folder")


def _check_folder(local: Path, spec: str, what: str, adapter: bool = False) -> None:
    from .folder import folder_problems

    problems = folder_problems(local, adapter=adapter)
    if problems:
        raise refusals.Problems(f"{what} {spec!r}: {problem}" for problem in problems)


#: What marks a folder as a peft adapter (LoRA and the like): transformers loads its base and applies it.
ADAPTER_CONFIG = "adapter_config.json"


def adapter_base(folder: str | os.PathLike) -> str:
    """The base model an adapter folder names (``base_model_name_or_path``): a folder or a Hub name. A ValueError in
    one line naming the file where it does not parse or names none."""
    try:
        found = json.loads((Path(folder) / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except RecursionError:
        raise ValueError(f"the adapter {paths.shown(folder)}: {ADAPTER_CONFIG} does not parse (nested too deeply to "
                         "read)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"the adapter {paths.shown(folder)}: {ADAPTER_CONFIG} does not parse "
                         f"({type(exc).__name__})") from None
    base = found.get("base_model_name_or_path") if isinstance(found, dict) else None
    if not (isinstance(base, str) and base):
        raise ValueError(f"the adapter {paths.shown(folder)} names no base_model_name_or_path in {ADAPTER_CONFIG}")
    return base


def missing_folder(spec: str, local: Path) -> bool:
    """``spec`` names a local folder (a path, or not a Hub name) that does not exist."""
    return not local.is_dir() and (spec.startswith((".", "/", "~")) or not _is_hub_name(spec))


def _is_hub_name(spec: str) -> bool:
    parts = spec.split("/")
    return 1 <= len(parts) <= 2 and all(parts)
