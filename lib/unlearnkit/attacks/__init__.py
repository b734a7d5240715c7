"""Attacks on a trained model: does the forgetting hold? (docs/metrics.md §10)

Every verdict elsewhere asks whether an unlearned model *answers* the forget set; these ask whether the knowledge is
still in the weights, the question open-unlearning's meta-evaluation scores metrics by (robustness to relearning, R,
and to quantisation, Q):

- :mod:`.relearn`: relearning on the forget split (R, with a curve), and relearning on some facts of the forget
  authors while testing others (held-out-fact relearning, RTT, Deeb & Roger 2024) with folds from :mod:`.folds`;
- :mod:`.quantise`: NF4, int4 and int8 fake quantisation in pure torch, and the bucket-crossing diagnostic;
- :mod:`.probes`: prefill, paraphrased questions, in-context shots;
- :mod:`.score`: the forget scores each attack is judged by; :mod:`.formulas`: both published forms of R and Q.

The station sits beside the pipeline (it reads saved models and trains copies of them); the study that runs every
attack on every model of notebook 02, with its controls, is :mod:`unlearnkit.studies.recovery`.
"""

from .folds import attribute_groups, holds_fact, rtt_folds, rtt_unavailable
from .formulas import q_one_sided, q_symmetric, r_one_sided, r_symmetric, steps_to
from .probes import prefill, probe, with_shots
from .quantise import (
    NF4_BLOCK,
    QUANT_SCHEMES,
    Crossing,
    bucket_crossing,
    fake_quantise,
    nf4_levels,
    quantise_weight,
    quantised_layers,
    weight_crossing,
)
from .relearn import fact_accuracy, held_out_relearning, relearn, relearn_config, rows_hash
from .score import RECOVERS_UP, SCORES, attack_rows, forget_scores, greedy_rouge

__all__ = [
    "attribute_groups", "holds_fact", "rtt_folds", "rtt_unavailable", "q_one_sided", "q_symmetric",
    "r_one_sided", "r_symmetric", "steps_to", "prefill", "probe", "with_shots", "NF4_BLOCK",
    "QUANT_SCHEMES", "Crossing", "bucket_crossing", "fake_quantise", "nf4_levels", "quantise_weight",
    "quantised_layers", "weight_crossing", "fact_accuracy", "held_out_relearning", "relearn",
    "relearn_config", "rows_hash", "RECOVERS_UP", "SCORES", "attack_rows", "forget_scores",
    "greedy_rouge",
]
