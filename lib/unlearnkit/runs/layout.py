"""Where a seed's runs live: the store of a profile's training seed (and of another corpus draw), the seeds present
and at work, the profile's own seed and draw, and where a run's figures go."""

from __future__ import annotations

import os
from pathlib import Path

from .. import config, paths
from ..config import Params
from .locks import file_lock
from .names import FINDINGS, notebook_key

SEED_PREFIX = "seed-"
#: The profile-level file of findings judged across every seed present (notebook 10 writes it).
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
    return _door(profile_dir(params.profile) / name)


#: The seed stores this process has found free of links (:func:`_door`).
_CHECKED: set[Path] = set()


def _door(folder: Path) -> Path:
    """``folder``, a seed's store, once nothing on the way to it or below it is a symlink
    (:func:`paths.no_links_below`; the store's root itself may be one): checked when this process first names the store,
    before the runner starts a kernel or a notebook writes, so that no write below it (of the workbook or of a
    library it calls) follows a link a received folder brought out of the store. A store not made yet is checked
    when it is next named."""
    if folder not in _CHECKED:
        paths.no_links_below(folder, "the run store")
        if folder.is_dir():
            _CHECKED.add(folder)
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

    path = paths.writable(profile_dir(profile) / f"{SEED_PREFIX}{seed}" / RUNNING_MARK, "a seed's running mark")
    if not path.exists():
        return False
    handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)  # read-only: asking never creates or changes a file
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)
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


def run_it_first(notebook: str, params: Params) -> str:
    key = notebook_key(notebook)
    seed = "" if is_reference_seed(params) else f" --set seed={params.seed}"
    return (f"run notebook {key} with profile {params.profile!r}{seed} first "
            f"(python -m unlearnkit.runner {key} --profile {params.profile}{seed})")
