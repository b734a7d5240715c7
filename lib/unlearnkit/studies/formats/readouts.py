"""The readouts the format study speaks of: the two sets, which formats are not knowledge formats
(odd-one-out, comprehension), the paper's scorers and the likelihood readouts, and the items a readout is read on."""

from __future__ import annotations

from ...metrics.formats import LIKELIHOOD_SUFFIX

SETS = ("forget", "retain")
#: TOFU's own Q&A ROUGE-L, shown beside the formats.
QA_ROWS = "qa_rouge (TOFU)"
#: Formats high when a model knows one set and not the other: a separation, not knowledge (package docstring).
SEPARATION_FORMATS = ("odd_one_out", "odd_one_out" + LIKELIHOOD_SUFFIX)
#: Formats that give the facts in the context: a forget/retain gap there is suppression, not knowledge.
COMPREHENSION_FORMATS = ("comprehension_qa", "comprehension_mcqa", "comprehension_mcqa" + LIKELIHOOD_SUFFIX)
#: Which readouts the records rest on: Joshi et al.'s own scorers, or the option-likelihood readouts added here.
PAPER_SCORERS = "paper"
LIKELIHOOD_SCORERS = "likelihood"


def of_scorers(fmt: str, scorers: str | None) -> bool:
    """Whether ``fmt`` is one of ``scorers``' readouts: the paper's own scorers (:data:`PAPER_SCORERS`) or the
    option-likelihood readouts (:data:`LIKELIHOOD_SCORERS`); None: any."""
    if scorers is None:
        return True
    if scorers not in (PAPER_SCORERS, LIKELIHOOD_SCORERS):
        raise ValueError(f"scorers must be {PAPER_SCORERS!r}, {LIKELIHOOD_SCORERS!r} or None, got {scorers!r}")
    return fmt.endswith(LIKELIHOOD_SUFFIX) == (scorers == LIKELIHOOD_SCORERS)


def item_format(fmt: str) -> str:
    """The format whose items a reported score is computed on (``cloze_fill`` and ``<format>_likelihood``
    are other readouts of the same items)."""
    fmt = fmt.removesuffix(LIKELIHOOD_SUFFIX)
    return "cloze" if fmt == "cloze_fill" else fmt
