"""Does a setting move the registered claims' effects beyond what a reseed or another machine moves them? (issue #39)

Reads each registered claim's effect on the default profile's seeds from run stores (each a ``runs/`` folder, as `make seeds` leaves
it). Two questions:

``decide``: per deciding quantity, the range over the reference seeds widened by the cross-machine spread, the
candidate's values and whether each lies inside, then the decision in one line. The packing decision (reference:
padded seeds; candidate: the same seeds packed; machine: seed 0 on this machine's own kernels,
UNLEARNKIT_NATIVE_ISA=1):

    python benchmarks/seed_spread.py decide --reference runs --candidate runs-packed --machine runs-native --seeds 0 1

``rest``: the training seed against the rest: per deciding quantity, the range over the training seeds beside how far
each variant of seed 0 (another corpus draw, another instruction set) moves it, and the findings whose outcome the
variant changes; with ``--write``, the table and its sentence go to a JSON file (docs/seed_spread.json, which notebook
09 and `make readme` show):

    python benchmarks/seed_spread.py rest --training runs --seeds 0 1 2 3 4 5 \
        --variant "data_seed 1=runs:1" --variant "native kernels=runs-native" --write docs/seed_spread.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from unlearnkit import config, paths
from unlearnkit import seedstudy as seed_study
from unlearnkit.claims import extractors
from unlearnkit.results import SeedResults


def effects_of(runs_dir: Path, seeds: list[int], profile: str, **overrides) -> dict[int, list[dict]]:
    """Each judged claim's effect on ``seeds`` of ``profile`` in the run store ``runs_dir``: ``{seed: [{"id",
    "quantity", "outcome", "effect"}, ...]}``."""
    saved, paths.RUNS = paths.RUNS, runs_dir.resolve()
    try:
        out = {}
        for seed in seeds:
            stored = SeedResults(profile, seed, config.Params.load(profile, seed=seed, **overrides))
            out[seed] = [{"id": c.id, "quantity": c.quantity, **_outcome(extractors.effect_on_seed(c, stored))}
                         for c in extractors.judged_claims()]
        return out
    finally:
        paths.RUNS = saved


def _outcome(result) -> dict:
    return {"outcome": result.outcome, "effect": result.effect}


def values_of(runs_dir: Path, seeds: list[int], profile: str, **overrides) -> pd.DataFrame:
    """The claims' effects (their deciding quantities) of ``seeds`` of ``profile`` in the run store ``runs_dir``."""
    return seed_study.quantity_values(effects_of(runs_dir, seeds, profile, **overrides))


def decide(args: argparse.Namespace) -> int:
    reference = values_of(args.reference, args.seeds, args.profile)
    candidate = values_of(args.candidate, args.candidate_seeds or args.seeds, args.profile)
    machine = values_of(args.machine, [0], args.profile) if args.machine else None
    table = seed_study.within_spread(reference, candidate, machine)
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    outside = table[~table["inside"]]
    print(f"\n{len(table) - len(outside)} of {len(table)} deciding quantities inside the reference seeds' range "
          f"widened by the cross-machine spread; outside: "
          + (", ".join(f"{k} / {q}" for k, q in zip(outside["key"], outside["quantity"])) or "none"))
    return 0


def rest(args: argparse.Namespace) -> int:
    import json

    training_found = effects_of(args.training, args.seeds, args.profile)
    training = seed_study.quantity_values(training_found)
    variants, changes = {}, {}
    for spec in args.variant:
        label, _, where = spec.partition("=")
        folder, _, data_seed = where.partition(":")
        extra = {"data_seed": int(data_seed)} if data_seed else {}
        found = effects_of(Path(folder), [0], args.profile, **extra)
        variants[label] = seed_study.quantity_values(found)
        changes[label] = seed_study.outcome_changes(training_found[0], found[0])
    table = seed_study.against_the_rest(training, variants, base_seed=0)  # the variants are of seed 0
    sentence = seed_study.rest_sentence(table, changes, len(args.seeds))
    with pd.option_context("display.max_rows", None, "display.width", 220, "display.max_colwidth", 50):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print("\n" + sentence)
    for label, changed in changes.items():
        print(f"{label}: outcome changes on seed 0: {'; '.join(changed) or 'none'}")
    if args.write:
        payload = {"seeds": args.seeds, "variants": list(variants), "sentence": sentence, "changes": changes,
                   "spreads": seed_study.variant_spreads(table, changes),
                   "table": json.loads(table.to_json(orient="records")),
                   "command": "python benchmarks/seed_spread.py rest " + " ".join(
                       [f"--training {args.training}", "--seeds", *map(str, args.seeds)]
                       + [f'--variant "{v}"' for v in args.variant])}
        args.write.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
        print(f"written: {args.write}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("decide", help="is a candidate setting inside the reference seeds' spread?")
    d.add_argument("--reference", type=Path, required=True, help="runs/ folder of the reference seeds")
    d.add_argument("--candidate", type=Path, required=True, help="runs/ folder of the candidate setting")
    d.add_argument("--machine", type=Path, help="runs/ folder of seed 0 on this machine's own kernels")
    d.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="the reference seeds")
    d.add_argument("--candidate-seeds", type=int, nargs="+", help="the candidate's seeds (default: --seeds)")
    r = sub.add_parser("rest", help="the training seeds' spread beside variants of seed 0")
    r.add_argument("--training", type=Path, required=True, help="runs/ folder of the training seeds")
    r.add_argument("--seeds", type=int, nargs="+", required=True)
    r.add_argument("--variant", action="append", default=[], metavar="LABEL=RUNS[:DATA_SEED]",
                   help="a variant of seed 0: its label, its runs/ folder and, for another corpus, its data_seed")
    r.add_argument("--write", type=Path, help="write the table and sentence as JSON (docs/seed_spread.json)")
    for p in (d, r):
        p.add_argument("--profile", default=config.BASE_PROFILE)
    args = parser.parse_args()
    return decide(args) if args.command == "decide" else rest(args)


if __name__ == "__main__":
    raise SystemExit(main())
