"""Keyword Q&A in the shape of Schwinn et al.'s Harry Potter Q&A: question, affirmative response, keywords.

Two sources give the same rows (``question``, ``affirmative_response``, ``keywords``):

* the published file (``hp_qa_en.csv`` of the SchwinnL/LLM_Embedding_Attack repository on GitHub: it is not
  on the Hugging Face Hub), read from a path;
* ``synthetic``: the same shape built from the profile's forget split, so the embedded default has a keyword
  Q&A its models can actually leak. The affirmative response is the ground-truth answer cut just before its
  key value ("The birthplace of Huong Tran is"), the keywords are that value (and, for a list of book titles,
  each title). Only rows whose answer contains their recorded value qualify (the synthetic corpus records it).

``hp_source`` in a profile selects one: ``synthetic``, a file path, or ``env:VAR|fallback``.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import paths

#: Columns of the published file and the keys they become.
HP_QA_COLUMNS = {"Question": "question", "Affirmative Response": "affirmative_response", "Key Words": "keywords"}
WHERE_TO_GET_IT = ("the HP Q&A of Schwinn et al. 2024 is the file hp_qa_en.csv of the GitHub repository "
                   "SchwinnL/LLM_Embedding_Attack (it is not on the Hugging Face Hub); download it and name it "
                   "with hp_source or the environment variable UNLEARNKIT_HP_QA")
SYNTHETIC = "synthetic"
_QUOTED = re.compile(r"'([^']+)'")


def load_hp_qa(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The published Harry Potter Q&A: rows with ``question``, ``affirmative_response`` and ``keywords``
    (the comma-separated "Key Words" split, stripped, empty ones dropped).

    Parsed with the csv module and ``skipinitialspace=True`` (the file puts a space after each separating
    comma). The question is stripped; the affirmative response is kept verbatim (it is a prefix the model
    continues). Raises FileNotFoundError / ValueError naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"HP Q&A file {path} does not exist: {WHERE_TO_GET_IT}")
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle, skipinitialspace=True)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in HP_QA_COLUMNS if c not in header]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(map(repr, missing))}; "
                             f"expected {', '.join(map(repr, HP_QA_COLUMNS))}, found {header}")
        reader.fieldnames = header
        rows = []
        for line, record in enumerate(reader, start=2):
            if record.get("Question") is None or record.get("Key Words") is None:
                raise ValueError(f"{path}, line {line}: too few fields")
            rows.append({
                "question": record["Question"].strip(),
                "affirmative_response": record["Affirmative Response"] or "",
                "keywords": [k.strip() for k in record["Key Words"].split(",") if k.strip()],
            })
    return rows


def synthetic_hp_qa(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """HP-style keyword Q&A from corpus rows that record their key ``value``: the answer up to the value is the
    affirmative response, the value (and each quoted title in it) the keywords. Rows whose answer does not
    contain the value, or starts with it (nothing to prefill), are left out."""
    out = []
    for row in rows:
        value, answer = row.get("value"), row.get("answer", "")
        if not value or value not in answer:
            continue
        prefix = answer[:answer.index(value)].rstrip()
        if not prefix:
            continue
        titles = _QUOTED.findall(value)
        keywords = titles if titles else [value.strip("'")]
        out.append({"question": row["question"], "affirmative_response": prefix + " ", "keywords": keywords})
    if not out:
        raise ValueError("no row records a key value inside its answer: a synthetic keyword Q&A needs the "
                         "synthetic corpus (real TOFU rows carry no 'value'); set hp_source to a file instead")
    return out


def hp_qa_rows(hp_source: str, forget_rows: Sequence[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The keyword Q&A a profile's ``hp_source`` names: ``synthetic`` (built from ``forget_rows``), a CSV path,
    or ``env:VAR|fallback`` (the variable's path, else the fallback)."""
    resolved = paths.from_environment(hp_source, what=WHERE_TO_GET_IT)  # env:VAR|synthetic may mean synthetic
    if resolved == SYNTHETIC:
        if forget_rows is None:
            raise ValueError("hp_source 'synthetic' builds the Q&A from the forget rows: pass forget_rows")
        return synthetic_hp_qa(forget_rows)
    return load_hp_qa(paths.resolve(resolved))
