"""One module per paper's method, each reading like its paper's method section: criteria, sweeps and tables,
numbers only, built on the stations below (``calibration``: Wang et al.; ``formats``: Joshi et al.; ``leakage``:
Scholten et al.). Only notebooks and the runner import a study; the papers' claims are judged in
:mod:`unlearnkit.claims` alone."""
