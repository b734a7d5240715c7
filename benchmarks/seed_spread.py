"""Does a setting move the findings beyond what a reseed or another machine moves them? (issue #39)

Reads the findings of the default profile's seeds from run stores (each a ``runs/`` folder, as `make seeds` leaves
it) and prints, per deciding quantity, the range over the reference seeds widened by the cross-machine spread, the
candidate's values and whether each lies inside; then the decision in one line. Used for the packing decision
(reference: padded seeds; candidate: the same seeds packed; machine: seed 0 with this machine's own kernels,
UNLEARNKIT_NATIVE_ISA=1) and for the data seed against the training seeds.

    python benchmarks/seed_spread.py --reference runs --candidate runs-packed --machine runs-native --seeds 0 1
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from unlearnkit import config, paths
from unlearnkit.studies import seeds as seed_study
from unlearnkit.studies import verdicts


def values_of(runs_dir: Path, seeds: list[int], profile: str, **overrides) -> pd.DataFrame:
    """The deciding quantities of ``seeds`` of ``profile`` in the run store ``runs_dir``."""
    saved, paths.RUNS = paths.RUNS, runs_dir.resolve()
    try:
        params = config.Params.load(profile, **overrides)
        return seed_study.quantity_values(verdicts.of_seeds(params, seeds))
    finally:
        paths.RUNS = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="runs/ folder of the reference seeds")
    parser.add_argument("--candidate", type=Path, required=True, help="runs/ folder of the candidate setting")
    parser.add_argument("--machine", type=Path, help="runs/ folder of seed 0 on this machine's own kernels")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="the reference seeds")
    parser.add_argument("--candidate-seeds", type=int, nargs="+", help="the candidate's seeds (default: --seeds)")
    parser.add_argument("--candidate-data-seed", type=int, help="the candidate's data_seed (its store's name)")
    parser.add_argument("--profile", default=config.BASE_PROFILE)
    args = parser.parse_args()
    reference = values_of(args.reference, args.seeds, args.profile)
    extra = {} if args.candidate_data_seed is None else {"data_seed": args.candidate_data_seed}
    candidate = values_of(args.candidate, args.candidate_seeds or args.seeds, args.profile, **extra)
    machine = values_of(args.machine, [0], args.profile) if args.machine else None
    table = seed_study.within_spread(reference, candidate, machine)
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    outside = table[~table["inside"]]
    print(f"\n{len(table) - len(outside)} of {len(table)} deciding quantities inside the reference seeds' range "
          f"widened by the cross-machine spread; outside: "
          + (", ".join(f"{k} / {q}" for k, q in zip(outside["key"], outside["quantity"])) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
