"""One module per paper's method, each reading like its paper's method section: criteria, sweeps, tables and
verdicts built on the stations below (``calibration``: Wang et al.; ``formats``: Joshi et al.; ``leakage``:
Scholten et al.). Only notebooks and the runner import a study."""
