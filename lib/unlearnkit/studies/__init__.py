"""The paper studies, one per chapter, each reading like its paper's method section and storing numbers and names
only: ``calibration`` (Wang et al., notebook 03), ``formats`` (Joshi et al., notebook 04), ``leakage``, ``entropy``
and ``alignment`` (Scholten et al., notebooks 05-07), ``recovery`` (relearning, quantisation and input probes after
their papers, notebook 08) and ``trust`` (open-unlearning's meta-evaluation of metrics and leak@k, notebook 09).

A study package names its sub-modules by one scheme: ``plan`` (what its notebook trains and evaluates, decided from
the profile), ``measures`` (the quantities on each model or item), ``tables`` (what the notebook shows), ``records``
(what metrics.json and per_item.json keep), where it has such code, and otherwise by the paper's concept
(``criteria``, ``controls``, ``regime``, ``transfer``, ...). Its face lists what it exports in ``__all__``.

The tools built on the studies live beside them, not in them: :mod:`unlearnkit.ownmodel` (every suite on your own
model) and :mod:`unlearnkit.seedstudy` (the workbook's own questions over training seeds). Only notebooks, the runner
and those tools import a study; the papers' claims are judged in :mod:`unlearnkit.claims` alone."""
