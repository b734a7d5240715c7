"""TOFU, from the Hugging Face Hub (``locuslab/TOFU``) or from a local folder of JSON Lines.

A local folder holds one ``<split>.json`` per Hub config (``full.json``, ``forget10_perturbed.json``,
...), one JSON object per line; the synthetic corpus of :mod:`unlearnkit.data.synthetic` is written
in the same shape, so everything downstream reads both the same way. A folder may lack some configs
(the team's copy of real TOFU has no ``holdoutXX``): :meth:`TofuSource.has_split` tells, and loading
one raises :class:`TofuDataError` naming the config to download.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import paths

HUB_NAME = "locuslab/TOFU"
#: TOFU writes 20 questions per author, contiguously, in every author split.
QUESTIONS_PER_AUTHOR = 20

_QA = ("question", "answer")
_PERTURBED = ("question", "answer", "paraphrased_question", "paraphrased_answer", "perturbed_answer")
_KNOWLEDGE_PERTURBED = ("question", "answer", "perturbed_answer")
_MCQ = ("question", "option1", "option2", "option3", "option4", "answer")
_ALTERNATES = ("question", "answer", "alternate_answers")
#: The fields holding a list of wrong answers (of the split's count where it gives one).
_LIST_FIELDS = ("perturbed_answer", "alternate_answers")

#: The Hub configs of ``locuslab/TOFU`` (all with split ``train``) and the fields each must carry,
#: with the number of wrong answers where there is a list of them.
SPLITS: dict[str, tuple[tuple[str, ...], int | None]] = {
    "full": (_QA, None),
    "forget01": (_QA, None), "forget05": (_QA, None), "forget10": (_QA, None),
    "retain99": (_QA, None), "retain95": (_QA, None), "retain90": (_QA, None),
    "forget01_perturbed": (_PERTURBED, 5), "forget05_perturbed": (_PERTURBED, 5),
    "forget10_perturbed": (_PERTURBED, 5), "retain_perturbed": (_PERTURBED, 5),
    "real_authors_perturbed": (_KNOWLEDGE_PERTURBED, 3), "world_facts_perturbed": (_KNOWLEDGE_PERTURBED, 3),
    "real_authors": (_MCQ, None), "world_facts": (_MCQ, None),
    # Authors no model trains on, as many as forget01/05/10 has (open-unlearning's membership-inference sets).
    "holdout01": (_QA, None), "holdout05": (_QA, None), "holdout10": (_QA, None),
}
#: Splits only the synthetic corpus ships: a held-out retain set that unlearning never trains on, and per forget
#: question 5 wrong but plausible answers in the answer's phrasing, other than its perturbed answers (for AltPO).
LOCAL_ONLY_SPLITS: dict[str, tuple[tuple[str, ...], int | None]] = {
    "retain_heldout": (_PERTURBED, 5),
    "forget01_alternates": (_ALTERNATES, 5), "forget05_alternates": (_ALTERNATES, 5),
    "forget10_alternates": (_ALTERNATES, 5),
}

FORGET_TO_RETAIN = {"forget01": "retain99", "forget05": "retain95", "forget10": "retain90"}
#: The holdout split matched to each forget split: as many authors, none of them trained on.
HOLDOUT_OF = {"forget01": "holdout01", "forget05": "holdout05", "forget10": "holdout10"}
#: The alternate answers of each forget split's questions (synthetic corpus only).
ALTERNATES_OF = {"forget01": "forget01_alternates", "forget05": "forget05_alternates",
                 "forget10": "forget10_alternates"}
#: Splits whose questions are about the fictitious authors of ``full``; an author subset filters them (the
#: alternates too: they start with "forget"). The holdout splits are about other authors and are kept whole.
AUTHOR_SPLIT_PREFIXES = ("full", "forget", "retain")


class TofuDataError(ValueError):
    """Bad TOFU input: a missing folder, an unknown split, a malformed line or a missing field."""


def _validate(row: Any, split: str, where: str) -> dict[str, Any]:
    fields, n_wrong = {**SPLITS, **LOCAL_ONLY_SPLITS}[split]
    if not isinstance(row, dict):
        raise TofuDataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [f for f in fields if f not in row]
    if missing:
        raise TofuDataError(f"{where}: split {split!r} needs field(s) {', '.join(missing)}; found {', '.join(row)}")
    for f in fields:
        if f in _LIST_FIELDS:
            wrong = row[f]
            if not isinstance(wrong, list) or not all(isinstance(w, str) for w in wrong):
                raise TofuDataError(f"{where}: {f!r} must be a list of strings")
            if n_wrong is not None and len(wrong) != n_wrong:
                raise TofuDataError(f"{where}: {f!r} has {len(wrong)} answers, split {split!r} needs {n_wrong}")
        elif not isinstance(row[f], str):
            raise TofuDataError(f"{where}: field {f!r} must be a string, got {type(row[f]).__name__}")
    return row


def read_jsonl(path: Path, split: str) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TofuDataError(f"{path}, line {lineno}: not valid JSON ({exc.msg})") from None
            rows.append(_validate(row, split, f"{path}, line {lineno}"))
    if not rows:
        raise TofuDataError(f"{path}: no rows")
    return rows


class TofuSource:
    """Where TOFU-shaped data comes from: a Hub data-set name or a local folder.

    ``TofuSource("locuslab/TOFU")`` reads the Hub through ``datasets``; ``TofuSource("../shared/data/tofu")``
    or the folder of a synthetic corpus reads JSON Lines. Splits are cached after the first read.
    """

    def __init__(self, source: str | os.PathLike):
        self.spec = str(source)
        folder = paths.resolve(source)
        if folder.is_dir():
            self.folder: Path | None = folder
        elif _looks_like_hub_name(self.spec) and not os.path.exists(os.path.expanduser(self.spec)):
            self.folder = None
        else:
            raise TofuDataError(
                f"TOFU data folder {folder} does not exist. Give a folder of JSON Lines files "
                f"(e.g. ../shared/data/tofu, or a synthetic corpus under data/) or the Hub name {HUB_NAME!r}."
            )
        self._cache: dict[str, list[dict[str, Any]]] = {}
        self.kept_authors: frozenset[int] | None = None
        self._kept_pairs: frozenset[tuple[str, str]] | None = None

    @property
    def is_local(self) -> bool:
        return self.folder is not None

    def available_splits(self) -> list[str]:
        if self.folder is None:
            return list(SPLITS)
        known = {**SPLITS, **LOCAL_ONLY_SPLITS}
        return [s for s in known if (self.folder / f"{s}.json").exists()]

    def has_split(self, split: str) -> bool:
        """Whether :meth:`load` can read ``split`` (a local folder holds its file; the Hub has every config)."""
        return split in self.available_splits()

    def missing_split_reason(self, split: str) -> str | None:
        """None if ``split`` can be loaded, else the one line :meth:`load` raises: for a TOFU config a local
        folder lacks, which Hub config to save there and how."""
        valid = self.available_splits()
        if split in valid:
            return None
        if self.folder is not None and split in SPLITS:
            return (f"{split} is not in {self.folder}: save config {split!r} of {HUB_NAME} (split train) there as "
                    f"{split}.json, one JSON object per line")
        if self.folder is not None and split in LOCAL_ONLY_SPLITS:
            return (f"{split} is not in {self.folder}: only the synthetic corpus (unlearnkit.data.synthetic) "
                    f"writes it")
        return f"unknown split {split!r} for {self.spec}; valid splits: {', '.join(valid)}"

    def load(self, split: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The rows of ``split``; ``limit`` keeps the first rows (TOFU evaluates at most 300). A split the source
        lacks raises :class:`TofuDataError` with :meth:`missing_split_reason`."""
        reason = self.missing_split_reason(split)
        if reason is not None:
            raise TofuDataError(reason)
        if split not in self._cache:
            self._cache[split] = self._read(split)
        rows = self._cache[split]
        if self._kept_pairs is not None and split.startswith(AUTHOR_SPLIT_PREFIXES):
            rows = [r for r in rows if (r["question"], r["answer"]) in self._kept_pairs]
        return list(rows[:limit] if limit is not None else rows)

    def restricted_to_authors(self, max_authors: int, forget_split: str) -> TofuSource:
        """The same data with only ``max_authors`` fictitious authors: every author of ``forget_split``,
        then the first others in ``full``'s order.

        Every author split (full, forget, retain, their perturbed versions and the forget splits' alternate
        answers) is filtered, so training, evaluation and held-out sets all speak of the same authors; world
        knowledge is kept whole. So are the holdout splits, whose authors are not in ``full``: ``forget_split``
        keeps all its authors, so its holdout (:func:`holdout_split_for`) keeps the same number (a holdout of
        another forget split may then be larger than that split's filtered rows). Used to run real TOFU on a CPU
        in reasonable time.
        """
        full = with_author_index(self.load("full"))
        forget_pairs = {(r["question"], r["answer"]) for r in self.load(forget_split)}
        forget_authors = {r["author_index"] for r in full if (r["question"], r["answer"]) in forget_pairs}
        if max_authors < len(forget_authors):
            raise TofuDataError(f"max_authors={max_authors} is fewer than the {len(forget_authors)} authors of "
                                f"{forget_split}; keep at least those")
        others = sorted({r["author_index"] for r in full} - forget_authors)
        kept = forget_authors | set(others[: max_authors - len(forget_authors)])
        subset = copy.copy(self)  # shares the read cache; only the filter differs
        subset.kept_authors = frozenset(kept)
        # Question and answer together: a few questions ("What is the full name of the author?") recur across authors.
        subset._kept_pairs = frozenset((r["question"], r["answer"]) for r in full if r["author_index"] in kept)
        return subset

    def _read(self, split: str) -> list[dict[str, Any]]:
        if self.folder is not None:
            return read_jsonl(self.folder / f"{split}.json", split)
        import datasets  # only the Hub path needs it

        ds = datasets.load_dataset(self.spec, split, split="train")
        return [_validate(dict(row), split, f"{self.spec}/{split}, row {i}") for i, row in enumerate(ds)]

    def authors(self) -> list[dict[str, Any]] | None:
        """Attribute records of the synthetic corpus (``authors.json``); None for real TOFU."""
        if self.folder is None or not (self.folder / "authors.json").exists():
            return None
        with open(self.folder / "authors.json", encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        if self.kept_authors is not None:
            records = [r for r in records if r.get("index") in self.kept_authors]
        return records

    def __repr__(self) -> str:
        subset = f", {len(self.kept_authors)} authors" if self.kept_authors is not None else ""
        spec = paths.shown(self.spec) if Path(self.spec).is_absolute() else self.spec
        return f"TofuSource({spec!r}{subset})"


def check_hub_cached(spec: str) -> None:
    """Refuse, in one line, a Hub data set the run could not read: offline (``HF_DATASETS_OFFLINE`` or
    ``HF_HUB_OFFLINE``, the runner's default) with neither the Hub's download cache
    (``<hub cache>/datasets--org--name``) nor the ``datasets`` library's prepared cache (``<datasets cache>/org___name``)
    holding it. Online, or cached, it passes; the first read still validates every row."""
    if not paths.offline("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        return
    from huggingface_hub import constants

    org, name = spec.split("/")
    datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets")
    candidates = (Path(constants.HF_HUB_CACHE) / f"datasets--{org}--{name}",
                  datasets_cache / f"{org}___{name}".lower())
    if not any(c.is_dir() for c in candidates):
        raise TofuDataError(f"{spec!r} is a Hub data set that is not in the local cache, and the runner is offline: "
                            "pass --online (make ... ONLINE=1) to download it once, or name a local folder of JSON "
                            "Lines files")


def _looks_like_hub_name(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "~"))


def with_author_index(rows: Sequence[dict[str, Any]], offset: int = 0) -> list[dict[str, Any]]:
    """Rows with an ``author_index``: kept if present (synthetic), else from TOFU's 20-per-author layout."""
    out = []
    for i, row in enumerate(rows):
        row = dict(row)
        row.setdefault("author_index", (offset + i) // QUESTIONS_PER_AUTHOR)
        out.append(row)
    return out


def _matched_split(forget_split: str, table: dict[str, str]) -> str:
    try:
        return table[forget_split]
    except KeyError:
        raise TofuDataError(
            f"unknown forget split {forget_split!r}; valid: {', '.join(table)}"
        ) from None


def retain_split_for(forget_split: str) -> str:
    return _matched_split(forget_split, FORGET_TO_RETAIN)


def holdout_split_for(forget_split: str) -> str:
    """The holdout split of as many never-trained authors as ``forget_split`` (``forget10`` -> ``holdout10``)."""
    return _matched_split(forget_split, HOLDOUT_OF)


def alternates_split_for(forget_split: str) -> str:
    """The split of ``forget_split``'s alternate answers (``forget10`` -> ``forget10_alternates``)."""
    return _matched_split(forget_split, ALTERNATES_OF)
