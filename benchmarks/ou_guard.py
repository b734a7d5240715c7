"""How much open-unlearning's truth-ratio guard moves forget quality, on a profile's saved models.

    python benchmarks/ou_guard.py [--profile default] [--seed 0] [--runs ga gd kl ceu]

Reads the retain model of notebook 01 and the unlearning runs of notebook 02 from the run store (``UNLEARNKIT_RUNS``
or ``runs/``; nothing is trained), scores each one's paraphrased and perturbed forget answers once, and computes the
per-item truth ratios under both guards of ``truth_ratio_guard`` (docs/metrics.md §9): ``exact`` (the ratio in log
space) and ``ou`` (the right answer's probability plus 1e-10 in the denominator). Forget quality is the KS p-value
of a run's ratios against the retain model's under the same guard.

Printed: per run, the median forget NLL of the paraphrased answer (a collapsed model: 15-40 nats, probability below
1e-10), forget quality under each guard and log10 of their ratio, and the forget truth-ratio score under each; beside them the forget quality notebook 02 stored (under the
profile's guard), which the recomputed value under that guard reproduces.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from unlearnkit import config, pipeline, runs  # noqa: E402
from unlearnkit.metrics import tofu  # noqa: E402


def forget_nlls(loaded, rows, params) -> tuple[np.ndarray, np.ndarray]:
    """(paraphrased answer NLL per item, perturbed answers' NLLs per item) on the forget rows."""
    questions = [r["question"] for r in rows]
    n_wrong = len(rows[0]["perturbed_answer"])
    para = tofu.answer_nll(loaded.model, loaded.tokenizer, loaded.template, questions,
                           [r["paraphrased_answer"] for r in rows], params.eval_batch_size,
                           answer_tokens=params.answer_tokens)
    wrong = tofu.answer_nll(loaded.model, loaded.tokenizer, loaded.template,
                            [q for q in questions for _ in range(n_wrong)],
                            [w for r in rows for w in r["perturbed_answer"]], params.eval_batch_size,
                            answer_tokens=params.answer_tokens).reshape(len(rows), n_wrong)
    return para, wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--runs", nargs="*", default=None, help="unlearning runs (default: every run stored)")
    args = parser.parse_args()
    params = config.Params.load(args.profile, **({} if args.seed is None else {"seed": args.seed}))
    source = pipeline.corpus(params)
    rows = source.load(tofu.tofu_eval_splits(params.forget_split)["forget"][1])
    rows = rows[:params.eval_max_items] if params.eval_max_items else rows  # as notebooks 01 and 02 evaluate
    reference = runs.read_metrics(params, runs.FINETUNE)["meta"]["forget_quality_reference"]
    names = args.runs or list(runs.unlearning_runs(params))
    retain_para, retain_wrong = forget_nlls(runs.load_saved(params, reference, dtype="float32"), rows, params)
    guards = tofu.TRUTH_RATIO_GUARDS
    retain_ratios = {g: tofu.truth_ratio(retain_para, retain_wrong, g) for g in guards}
    print(f"[{params.profile} seed {params.seed}] {len(rows)} forget items; reference {reference}; "
          f"answer_tokens {params.answer_tokens}")
    print(f"{'run':<10} {'median NLL':>10} {'FQ stored':>10} {'FQ exact':>10} {'FQ ou':>10} {'log10 ou/exact':>15} "
          f"{'TR exact':>9} {'TR ou':>9}")
    stored = {run: m.get(run, {}).get("summary", {}).get("forget_quality")
              for run, m in runs.unlearning_runs(params).items()}
    for name in [reference, *names]:
        loaded = runs.load_saved(params, name if name == reference else runs.unlearned_name(name), dtype="float32")
        para, wrong = forget_nlls(loaded, rows, params)
        ratios = {g: tofu.truth_ratio(para, wrong, g) for g in guards}
        quality = {g: tofu.forget_quality(ratios[g], retain_ratios[g]) for g in guards}
        score = {g: tofu.truth_ratio_score(ratios[g], "forget", g) for g in guards}
        moved = math.log10(quality["ou"] / quality["exact"]) if quality["exact"] > 0 else float("inf")
        kept = stored.get(name)
        print(f"{name:<10} {np.median(para):>10.2f} {'' if kept is None else f'{kept:.3g}':>10} {quality['exact']:>10.3g} {quality['ou']:>10.3g} {moved:>15.2f} "
              f"{score['exact']:>9.3f} {score['ou']:>9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
