"""Distribution-free bounds on a model's output distribution (Scholten et al., "A Probabilistic
Perspective on Unlearning and Alignment"; definitions in docs/metrics.md section 3).

For one prompt we draw n outputs from the model, score each one with a function h into [0, 1]
and obtain i.i.d. scores X_1..X_n with an unknown distribution function F. Every bound below is a
statement about that unknown distribution (leak probability, tail probability, mean, standard
deviation), not about the n samples.

Alpha convention used everywhere in this package: a bound "at level alpha" holds with probability
at least 1 - alpha over the draw of the n samples. alpha must lie in (0, 0.5].

Shapes: every function accepts the scores of one prompt as a 1-D array (n,) and returns a scalar,
or the scores of many prompts as a 2-D array (prompts, n) and returns one value per row. The
curve function `general_leakage_bound` appends the thresholds' shape to that.

The DKW inequality with Massart's constant is what makes the non-binary bounds work:
    one-sided:  P( sup_t F_n(t) - F(t) > eps ) <= exp(-2 n eps^2)
    two-sided:  P( sup_t |F_n(t) - F(t)| > eps ) <= 2 exp(-2 n eps^2)
with F_n(t) = (number of samples <= t) / n. The two-sided band also holds for left limits
F(t-) and F_n(t-), which the sample-point grid uses.

One module per part, every bound re-exported here: :mod:`.dkw` (checks, the empirical CDF, the DKW band; the
checks and the CDF are the other parts' and stay there), :mod:`.leakage` (leak and tail probabilities),
:mod:`.moments` (mean and standard deviation) and :mod:`.ed` (the ED score).
"""

from .dkw import dkw_epsilon, sample_size
from .ed import ed_score, ed_stats
from .leakage import binary_leak_lower_bound, binary_leakage_bound, general_leakage_bound
from .moments import (
    MAX_VARIANCE_ON_UNIT_INTERVAL,
    MODES,
    PAPER_GRID,
    GridSpec,
    Mode,
    expectation_bounds,
    std_bound,
)

__all__ = [
    "dkw_epsilon",
    "sample_size",
    "binary_leakage_bound",
    "binary_leak_lower_bound",
    "general_leakage_bound",
    "expectation_bounds",
    "std_bound",
    "MODES",
    "PAPER_GRID",
    "ed_stats",
    "ed_score",
    # names the studies use
    "GridSpec",
    "Mode",
    "MAX_VARIANCE_ON_UNIT_INTERVAL",
]
