"""Project-relative paths. Never depend on the working directory."""

from __future__ import annotations

import os
import re
from pathlib import Path


def _find_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists() and (parent / "lib" / "unlearnkit").is_dir():
            return parent
    # Installed non-editable: fall back to the working directory's project, if any.
    return Path(os.environ.get("UNLEARNKIT_ROOT", Path.cwd())).resolve()


ROOT = Path(os.environ.get("UNLEARNKIT_ROOT", _find_root())).resolve()
NOTEBOOKS = ROOT / "notebooks"
PARAMS = NOTEBOOKS / "params"
DATA = ROOT / "data"
FIGURES = ROOT / "figures"
#: What the workbook itself writes into the checkout besides figures/: the README's results section, the committed
#: summary of the findings over seeds, and the training seed against the rest (benchmarks/seed_spread.py rest).
README = ROOT / "README.md"
SUMMARY = ROOT / "docs" / "findings.json"
#: The full results of the summary, which the README links (make readme writes it with the README's section).
RESULTS_PAGE = ROOT / "docs" / "results.md"
SEED_SPREAD = ROOT / "docs" / "seed_spread.json"
#: Every term the default profile's report prints, which the glossary must define (make report writes it).
PRINTED_TERMS = ROOT / "docs" / "printed-terms.json"
#: The former findings (schema 0: judged over six seeds of one corpus draw) and the table of what replaced them:
#: archives, never rewritten and never read (the former findings are retired, #56 item 7).
FORMER_SUMMARY = ROOT / "docs" / "findings-former.json"
OLD_TO_NEW = ROOT / "docs" / "verdicts-old-to-new.md"
#: The registered claims' summary as it stood before issue #56 (an archive, copied once, never rewritten) and the
#: table of each claim's verdict then and now.
REGISTERED_V1 = ROOT / "docs" / "findings-registered-v1.json"
V1_TO_V2 = ROOT / "docs" / "verdicts-v1-to-v2.md"
#: Each committed seed's quantities, the judge's input (results/<profile>/seed-<s>/): lib/unlearnkit/results.py.
RESULTS = Path(os.environ.get("UNLEARNKIT_RESULTS", ROOT / "results")).resolve()
#: What a notebook's metrics.json (and per_item.json) may hold: the judge checks every result file against it at read.
METRICS_SCHEMA = ROOT / "docs" / "metrics.schema.json"
#: The quote registry: every claim the workbook tests, quoted from its paper (docs/metrics.md §8.3).
CLAIMS = ROOT / "docs" / "claims.yaml"
#: The full texts of the papers the workbook reproduces, beside the checkout where a machine has them
#: (UNLEARNKIT_PAPERS names another folder); only the registry's quote check reads them.
PAPERS = Path(os.environ.get("UNLEARNKIT_PAPERS", ROOT.parent / "shared" / "papers")).resolve()
#: Every file and folder the workbook writes into the checkout: a change there is a result, not a change to the code.
WRITTEN_BY_THE_WORKBOOK = (FIGURES, SUMMARY, SEED_SPREAD, README, RESULTS_PAGE, RESULTS, V1_TO_V2)
RUNS = Path(os.environ.get("UNLEARNKIT_RUNS", ROOT / "runs")).resolve()


def resolve(path: str | os.PathLike) -> Path:
    """A path given by a user or a profile: absolute as is, relative to the project root otherwise. ``~`` is the
    user's home; ``$VAR`` is not expanded (a received profile reads no environment variable through a path: the
    shell expands the command line's own, and a profile names a documented variable with ``env:``)."""
    p = Path(os.path.expanduser(str(path)))
    return p if p.is_absolute() else (ROOT / p).resolve()


#: The environment variables a profile may read with ``env:VAR|fallback`` (docs/threat-model.md): where a machine
#: keeps the TOFU folder, Schwinn et al.'s HP Q&A file and JBB's CSV. Any other would let a received profile print a
#: secret of the user's environment in an error line.
DATA_VARIABLES = ("UNLEARNKIT_TOFU_DIR", "UNLEARNKIT_HP_QA", "UNLEARNKIT_JBB")


def from_environment(spec: str, what: str = "a path") -> str:
    """A data source as a profile names it: ``env:VAR|fallback`` reads the environment variable VAR (one of
    :data:`DATA_VARIABLES`; any other is refused unread) and falls back to what follows the bar (the local-data
    profiles name a folder beside the project there); anything else is returned as it is. ``what`` says in the
    error what the variable should hold."""
    if not spec.startswith("env:"):
        return spec
    var, _, fallback = spec[4:].partition("|")
    if var not in DATA_VARIABLES:
        raise ValueError(f"{spec.split('|')[0]!r} reads environment variable {var[:64]!r}, not one the workbook "
                         f"documents: a profile may read {', '.join(DATA_VARIABLES)}")
    value = os.environ.get(var) or fallback
    if not value:
        raise ValueError(f"set the environment variable {var}: {what}")
    return value


def offline(*variables: str) -> bool:
    """Whether any of the environment ``variables`` (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``) is switched on, as
    the Hugging Face libraries read them (1, true, yes, on)."""
    return any(os.environ.get(v, "0").lower() in ("1", "true", "yes", "on") for v in variables)


def shown(path: str | os.PathLike) -> str:
    """How a page or a message names a local path: inside the run store as ``runs/...``, inside the generated data as
    ``data/...``, inside the project relative to it; a path elsewhere (a data folder a profile names) as it is. What a
    notebook prints then reads the same on every machine."""
    p = Path(path)
    if not p.is_absolute():
        return str(path)
    for base, name in ((RUNS, "runs"), (DATA, "data"), (ROOT, "")):
        try:
            rel = p.resolve().relative_to(base)
        except ValueError:
            continue
        return str(Path(name) / rel) if name else str(rel)
    return str(p)


#: What a run, method, profile or seed name may be, as it becomes a folder or file name in the store: letters, digits
#: and ``._@-`` (``paper-dry-lora``, ``npo_f3_r0.25_lr0.0003``, ``seed-3-data-1``, ``ga_mild@26``), not starting with a
#: dot, with no ``..`` and no ``/``.
NAME = re.compile(r"[A-Za-z0-9_@-][A-Za-z0-9._@-]{0,127}")


def check_name(kind: str, name: object) -> str:
    """``name`` if it is a name (:data:`NAME`); else a ValueError in one line saying what a name may be."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"{kind} {name!r} is not a name: letters, digits and ._@- only (at most 128), not starting "
                         "with a dot, no '..' and no '/'")
    return name


def inside(path: str | os.PathLike, root: str | os.PathLike, what: str = "a path the workbook writes") -> Path:
    """``path`` with its symlinks resolved, if it lies inside ``root`` (resolved too); else a ValueError in one line.
    What the store writes or removes is checked with it first: a received folder may hold a symlink to anywhere."""
    resolved, base = Path(path).resolve(), Path(root).resolve()
    if resolved != base and base not in resolved.parents:
        raise ValueError(f"{what} {Path(path)} resolves to {resolved}, outside {base}: refused")
    return resolved


def confined(path: str | os.PathLike, root: str | os.PathLike, what: str = "a folder the workbook clears") -> Path:
    """``path`` where the workbook may write or remove it: inside ``root`` (the run store) it must stay inside once
    its symlinks are resolved (:func:`inside`); a folder given elsewhere (a test's, a caller's own) must not itself be
    a symlink. A ValueError in one line otherwise."""
    p = Path(path).absolute()
    base = Path(root).absolute()
    if p == base or base in p.parents:
        return inside(p, root, what)
    if p.is_symlink():
        raise ValueError(f"{what} {p} is a symlink to {p.resolve()}: refused")
    return p


class OutsideTheStore(ValueError):
    """A write refused by :func:`writable`: it would go through a symlink below the run store, or to a link."""


def writable(path: str | os.PathLike, what: str = "a file the workbook writes") -> Path:
    """``path`` made absolute, where the workbook may write, lock, create or replace it: the one check every write,
    lock, figure and folder creation of the run store passes (#59). Below the run store (:data:`RUNS`, resolved: the
    root itself may be a link, users move stores to other disks) no part of the path may be a symlink, the last one
    included, whether it exists or dangles: a received store holds no links, and one would lead a write anywhere.
    Elsewhere (figures/, results/ and docs/ of the checkout, a folder a test or a user names) the path itself must not
    be a symlink. An :class:`OutsideTheStore` error in one line otherwise, naming the link and where it points."""
    p = Path(os.path.abspath(path))
    root = Path(os.path.abspath(RUNS))
    below = root in p.parents
    parts = p.relative_to(root).parts if below else ()
    for step in [root.joinpath(*parts[:i + 1]) for i in range(len(parts))] if below else [p]:
        if step.is_symlink():
            raise OutsideTheStore(f"{what} {_named(p)}: {_named(step)} is a symlink to {os.readlink(step)}"
                                  f"{' below the run store' if below else ''}: refused (a store holds no links; copy "
                                  "what it points to into the store instead)")
    return p


def _named(path: Path) -> str:
    """How a refusal names a path below the run store: ``runs/...`` as spelled, its links not followed."""
    root = Path(os.path.abspath(RUNS))
    return str(Path("runs") / path.relative_to(root)) if root in path.parents or path == root else str(path)


def no_links_below(folder: str | os.PathLike, what: str = "the run store") -> Path:
    """``folder`` (checked with :func:`writable`) if nothing below it is a symlink; else :class:`OutsideTheStore` in
    one line naming the first link. The door of a seed's store (``runs.store``): every write below it, those of the
    libraries a notebook calls (``save_pretrained``, a trainer's checkpoints) included, then stays inside it."""
    top = writable(folder, what)
    for parent, dirs, files in os.walk(top):  # links are listed, never followed
        for name in sorted(dirs + files):
            entry = Path(parent) / name
            if entry.is_symlink():
                raise OutsideTheStore(f"{what} {_named(top)} holds a symlink, {_named(entry)} -> {os.readlink(entry)}: "
                                      "refused (a store holds no links; copy what it points to into the store "
                                      "instead)")
    return top


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` so that ``path`` is either the old file or the whole new one, never a partial one; a write that
    fails (a full disk) removes its temporary file, leaves the old file as it was and names ``path`` in its error.
    The path is checked with :func:`writable` first, and the temporary file is created anew (never through a link)."""
    path = writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.unlink(missing_ok=True)  # a leftover (or a planted link) of that name: removed, never followed
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # on a full disk the write or the sync fails here, before the good file is touched
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None or Path(exc.filename) == tmp:  # the line names the file meant, not its temporary
            raise type(exc)(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
