"""What erodes the held-out memory: traces along runs that differ in their forget weight and learning rate, early
stopping per run, and greedy answers along a run (Wang et al.'s Table 1)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ... import models, pipeline, runs
from ...config import Params
from ...generation import greedy_answers
from ...metrics.ps import (
    FORGET,
    HELDOUT,
    PSEvaluator,
    PSProfile,
)
from .criteria import Tolerances, relative_loss
from .methods import WORKING_SHARE, best_row, calibration_from_sweep, working_share
from .sweeps import best_passing, early_stopping_sweep

# --------------------------------------------------------------------------- what erodes the held-out memory


def interference_sweeps(params: Params, run_names: Sequence[str], evaluate: PSEvaluator,
                        original, before: PSProfile, tolerances: Tolerances,
                        known: Mapping[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """:func:`early_stopping_sweep` along each run of ``run_names`` (``interference_runs``: GD, GD with its forget
    weight at 0 so that only the retain term acts, GD at lower learning rates) at the profile's
    ``unlearn_save_every`` steps and epoch ends, each trained first if it is not saved; ``known`` holds sweeps
    already made (GD's of section 1). Forget PS-similar is searched where held-out retain holds, so each trace also
    says where early stopping of its run passes (:func:`stopping_by_run`). The runs are trained side by side, and
    each trace's steps evaluated side by side, in up to ``jobs`` worker processes."""
    tables = dict(known or {})
    pipeline.unlearned_models(params, [run for run in run_names if run not in tables])
    for run in run_names:
        if run not in tables:
            # the held-out memory is what these traces show, in full; forget PS-similar only where a step can pass,
            # so that each trace is also an early-stopping sweep of its run (stopping_by_run)
            tables[run] = early_stopping_sweep(params, run, evaluate, original, before, tolerances, risks=False,
                                               every=params.unlearn_save_every)
    return {run: tables[run] for run in run_names}


def interference_summary(tables: Mapping[str, pd.DataFrame], params: Params) -> pd.DataFrame:
    """Per run, at its last kept step: its forget weight and learning rate, and the share of held-out retain
    PS-exact and PS-perturb lost, and forget PS-exact."""
    rows = {}
    for run, table in tables.items():
        last = table.iloc[-1]
        rows[run] = {"forget weight": pipeline.unlearning_settings(params, run).get("forget_weight", 1.0),
                     "lr": pipeline.run_params(params, run).unlearn_lr, "step": int(last["t"]),
                     "held-out PS-exact lost": float(last[f"{HELDOUT}_ps_exact_loss"]),
                     "held-out PS-perturb lost": float(last[f"{HELDOUT}_ps_perturb_loss"]),
                     "forget PS-exact": float(last[f"{FORGET}_ps_exact"])}
    return pd.DataFrame(rows).T


#: A run *unlearns* when its end has lost at least this share of forget PS-exact: below it, "a control works" is
#: vacuous (every setting of a run that barely moves passes, and is all the way there).
UNLEARNS_SHARE = 0.5


def unlearns(before: PSProfile, end: PSProfile) -> bool:
    """Whether a run's end lost at least :data:`UNLEARNS_SHARE` of forget PS-exact."""
    return bool(relative_loss(before[FORGET]["ps_exact"], end[FORGET]["ps_exact"]) >= UNLEARNS_SHARE)


def stopping_by_run(tables: Mapping[str, pd.DataFrame], params: Params, before: PSProfile) -> pd.DataFrame:
    """Early stopping read off each interference trace: per run, its learning rate, the best passing step (the whole
    interval within every tolerance), forget PS-exact there and at the run's end, the share of the way and whether
    early stopping works for it; a run that barely unlearns "works" by this rule, so ``run unlearns`` says whether
    its end lost at least half of forget PS-exact (:func:`unlearns`)."""
    rows = {}
    for run, table in tables.items():
        table = table.sort_values("t")
        last = table.iloc[-1]
        end = {FORGET: {"ps_exact": float(last[f"{FORGET}_ps_exact"])}}
        stopping = calibration_from_sweep(table, "t")
        best = best_row(stopping)
        share = working_share(stopping, before, end)
        rows[run] = {"forget weight": pipeline.unlearning_settings(params, run).get("forget_weight", 1.0),
                     "lr": pipeline.run_params(params, run).unlearn_lr,
                     "best passing t": None if best is None else int(best["t"]),
                     "forget PS-exact at best": math.nan if best is None else float(best[f"{FORGET}_ps_exact"]),
                     "forget PS-exact at the end": end[FORGET]["ps_exact"], "share of the way": share,
                     "works": bool(share >= WORKING_SHARE),
                     "run unlearns": unlearns(before, end)}
    return pd.DataFrame(rows).T


# --------------------------------------------------------------------------- answers along a run (Table 1)


def answer_steps(early_stopping: pd.DataFrame) -> list[int]:
    """Three steps of an early-stopping sweep to read answers at: the model before (0), the best passing step
    t > 0 (else the first kept step) and the end of the run."""
    best = best_passing(early_stopping[early_stopping["t"] > 0], "t")
    early = int(best["t"]) if best is not None else int(early_stopping["t"].iloc[1])
    return [0, early, int(early_stopping["t"].iloc[-1])]


def answers_at_steps(params: Params, run: str, steps: Sequence[int], sets: Mapping[str, Sequence[Mapping[str, Any]]],
                     original: models.LoadedModel, max_new_tokens: int, batch_size: int) -> pd.DataFrame:
    """Greedy answers to the rows of each named set (column ``set``) at some kept steps of ``run`` (step 0 is
    ``original``, the model before unlearning): coherent early, collapsed late under excessive unlearning
    (Wang et al.'s Table 1)."""
    kept = dict(runs.trajectory_steps(params, run))
    rows = [row for group in sets.values() for row in group]
    questions = [r["question"] for r in rows]
    table = {"set": [name for name, group in sets.items() for _ in group], "question": questions,
             "ground truth": [r["answer"] for r in rows]}
    for step in steps:
        if step == 0:
            loaded = original
        elif step in kept:
            loaded = models.load_model(kept[step], dtype="float32", template=None)
        else:
            raise ValueError(f"step {step} was not kept along {run!r}; kept: {sorted(kept)}")
        table[f"step {step}"] = greedy_answers(loaded.model, loaded.tokenizer, loaded.template, questions,
                                               max_new_tokens, batch_size)
    return pd.DataFrame(table)
