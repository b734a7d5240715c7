"""Results hold numbers only (#56 item 7): what a study writes into its metrics.json is numbers, and text only where
it names something (a model, a run, a format, a question, a setting, a folder), never a sentence that reads the
numbers. :func:`texts` finds every string a results file holds outside the identifiers, and every key the former
findings wrote; a test fails on any (tests/test_numbers_only.py, and on the smoke store in tests/test_notebooks.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: The keys the former judging system wrote into results: a study's reading of its own numbers, in words or as its
#: former finding (retired with it). Any of them anywhere in a results file is a failure.
RETIRED = frozenset({"findings", "finding", "finding_text", "verdict", "verdict_label", "lambda_f_verdict",
                     "controls_verdict", "revealing", "statement", "qa_reason", "paper_finding", "mixing_works_on",
                     "stopping_works_for"})
#: The keys whose text values name something. A string under any other key fails the check.
IDENTIFIERS = frozenset({
    "notebook", "profile", "source", "forget_quality_reference", "method", "undial_positions", "settings",
    "run", "runs", "control", "split", "calibrated by", "best setting",
    "models", "retain_model", "model", "kind", "folder", "hash", "reference", "base", "label", "positions",
    "informative_formats", "too_few_items", "not_transferring", "unread", "format", "scorers", "readout", "set",
    "against", "questions", "name", "measures", "binary",
    "variant", "side", "quantisation"})
#: Maps from a name to a text that names something (a model's folder), and ``matched/reason``: why a run has no
#: matched point, a precondition record the claims' extractors read and repeat as "not testable: <reason>".
NAMED_UNDER = frozenset({"models"})
PRECONDITIONS = frozenset({("matched", "reason")})
#: What a notebook did not measure and what measuring it would cost (notebook 09's ``not_measured``, which #57 item 2
#: asks the results to state): text fixed in the code (``studies.trust.NOT_MEASURED``), never a reading of numbers.
SCOPE = frozenset({"not_measured"})
#: Where text is allowed whatever its key: every parameter of the run, as given.
FREE = frozenset({"parameters", "packages", "git_revision"})


def texts(payload: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Each retired key and each string outside :data:`IDENTIFIERS`, as ("meta/findings", value)."""
    if isinstance(payload, dict):
        for key, value in payload.items():
            key = str(key)
            if key in FREE:
                continue
            if key in RETIRED:
                yield "/".join((*path, key)), value
                continue
            yield from texts(value, (*path, key))
    elif isinstance(payload, list):
        for value in payload:
            yield from texts(value, path)
    elif isinstance(payload, str):
        named = bool(path) and (path[-1] in IDENTIFIERS or (len(path) > 1 and (path[-2] in NAMED_UNDER | SCOPE
                                                                                 or path[-2:] in PRECONDITIONS)))
        if not named:
            yield "/".join(path), payload
