"""The notebooks' names and what each one reads: the stems the runner executes, which notebook makes a saved model,
and the sections of the profile whose keys each notebook reads. The one module of the library that names them."""

from __future__ import annotations

from .. import config

DATA_TOUR = "00_data_tour"
FINETUNE = "01_tofu_finetune"
UNLEARNING = "02_unlearning"  # run once per unlearning run: 02_unlearning_<run>
CONTROLS = "03_controls_calibration"
FORMATS = "04_format_eval"
LEAKAGE = "05_probabilistic_bounds"
ENTROPY = "06_entropy_optimisation"
ALIGNMENT = "07_alignment_toxicity"
ROBUSTNESS = "08_robustness"
METRIC_TRUST = "09_metric_trust"
FINDINGS = "10_findings"
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
    METRIC_TRUST: ("", *_UPSTREAM, "metric trust"),
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
