"""Your own model (chapter 6): every suite of the workbook on any model folder or Hub name, in one command
(``python -m unlearnkit.runner eval --model PATH``, which runs ``notebooks/eval_model.ipynb``). A tool built on the
studies, not a study: it runs the same library calls as the numbered notebooks on a model they did not train.

- :mod:`.suites`: the request (model, template, data, retain model, suites), checked in one line before any kernel
  starts (:func:`front_door`), and each suite (TOFU's metrics, leakage under sampling, the formats, the attacks);
- :mod:`.cost`: each suite's seconds estimated from its FLOPs before any work, calibrated on this machine's measured
  rates, and the batch size that fits;
- :mod:`.reference`: the retain model, as weights scored once or as results (ours or open-unlearning's
  ``TOFU_EVAL.json``), checked as data;
- :mod:`.outputs`: what an evaluation writes (metrics.json, its meta, ``--log-samples``) and the tables and readings
  its page shows.
"""

from __future__ import annotations

from . import cost, outputs, reference, suites
from .suites import SUITES, check_request, front_door

__all__ = ["cost", "outputs", "reference", "suites", "SUITES", "check_request", "front_door"]
