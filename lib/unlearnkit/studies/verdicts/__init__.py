"""Every notebook's findings, and their verdicts over training seeds (notebook 10 collects them).

Each notebook ends with :func:`show`, which prints its findings on this run (one training seed): the paper's
claim, the deciding quantities with their thresholds, and this seed's outcome (holds, partly, fails). The studies
judge their own findings when they run (``calibration.findings``, ``formats.findings``, ``leakage.findings``,
``entropy.findings``, ``alignment.findings``) and store them as data in their ``metrics.json``; notebooks 00-02
are judged here against TOFU's and open-unlearning's expectations, from their stored results. Notebook 10 puts the
findings of every seed present together and judges each by the one rule across seeds
(:func:`unlearnkit.former.judge_over_seeds`): nothing is parsed back from prose, nothing is typed.
"""

from __future__ import annotations

from ...former import (  # noqa: F401 (the names of __all__, and notebook 10's verdicts.counts)
    FACT,
    FAILS,
    HOLDS,
    NO_TEST,
    NOT,
    PARTLY,
    PARTLY_HOLDS,
    REPRODUCED,
    VERDICTS,
    Finding,
    Quantity,
    Verdict,
    counts,
)
from .notebook_findings import (  # noqa: F401
    _BY_NOTEBOOK,
    COLLAPSED_SHARE,
    FINDINGS_KEY,
    FORGET_QUALITY_LEVEL,
    FORGET_QUALITY_RISE,
    MIA_MARGIN,
    PRIVLEAK_RETAIN_BAND,
    PRIVLEAK_TARGET_MAX,
    ROUGE_FALL_SHARE,
    TARGET_ROUGE_MIN,
    UTILITY_KEPT_SHARE,
    across_unlearning_runs,
    mia_told_apart,
    notebooks_with_results,
    of_notebook,
    of_seed,
    severity,
    unlearning_run_finding,
)
from .over_seeds import (  # noqa: F401
    RULE,
    across_seeds,
    may_replace,
    of_seeds,
    profile_summary_path,
    read_summary,
    seeds_in_progress,
    seeds_with_results,
    summary,
    summary_seeds,
    summary_verdicts,
    write_profile_summary,
)
from .tables import (  # noqa: F401
    EVERY_SEED_FAILS,
    EVERY_SEED_HOLDS,
    PAPERS,
    SEEDS_DIFFER,
    key_figures,
    notebooks_showing,
    show,
    story,
    styled,
    table,
    text,
    tile,
)

__all__ = ["Finding", "Quantity", "Verdict", "REPRODUCED", "PARTLY", "NOT", "FACT", "NO_TEST", "HOLDS",
           "PARTLY_HOLDS", "FAILS", "VERDICTS"]
