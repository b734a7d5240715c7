"""Where the workbook's time goes: seconds per notebook and per station, and the CPU the run used.

    python benchmarks/workbook_profile.py [--profile default] [--seed 0] [--runs runs] [--json out.json]
    make profile PROFILE=default [SEED=1]

Reads the executed notebooks of a profile's training seed (``runs/<profile>/seed-<s>/*.ipynb``). The runner records in each one's metadata
(``unlearnkit.timing``) its wall time, the CPU seconds of its kernel and the worker processes the kernel waited for,
and its seconds by station from the library's station log: **training** (``training.train``), **generation**
(greedy decoding and sampling), **scoring** (TOFU, PS, format and sampled scorers, judges), with the time a kernel
waited on worker processes shared out by what the workers spent, and **other** (loading, saving, plotting, kernel
start). A notebook executed before the runner kept that record (an older checkout) has its cells' durations only:
its stations are then guessed from each cell's source and marked so.

Also per notebook, **start**: the seconds before its first cell's work, kernel start (papermill's time outside the
cells) plus the import cell (its first code cell), so what a kernel that started warm could save at most.

With ``--before <runs folder>`` (``--before-seed``, default the same seed), the same seed's notebooks of another run
store (an older commit, run cold on the same machine) beside these: per notebook, before and after wall seconds and
their ratio, then the whole run's.

Printed: one row per executed notebook (the per-method runs of notebook 02 each on a row, then their span), and the
whole run: the elapsed time from the first notebook's start to the last one's end, and the CPU utilisation, CPU
seconds over elapsed seconds (200 % is both cores busy throughout). The same figures go to ``--json``
(default ``runs/<profile>/seed-<s>/profile.json``).
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime
from pathlib import Path

STATIONS = ("training", "generation", "scoring", "other")
#: For notebooks without a station log: what a cell's source calls, and the station that guesses.
_GUESSES = (("training", re.compile(r"finetuned_model|unlearned_model|base_model|entropy\.train\(|prepare_models|"
                                    r"capping_sweep|calibrate_splits|interference_sweeps|regime_models")),
            ("generation", re.compile(r"sample|score_models|temperature_sweep|diversity")),
            ("scoring", re.compile(r"evaluate|calibrat|control_methods|utility|entropy_along|score|stopping")))


def _cells_timing(nb: dict) -> dict:
    """What papermill recorded: each cell's duration, start and end; stations guessed from the cells' source."""
    stations = dict.fromkeys(STATIONS, 0.0)
    starts, ends = [], []
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("papermill", {})
        seconds = meta.get("duration") or 0.0
        if meta.get("start_time"):
            starts.append(datetime.fromisoformat(meta["start_time"].replace("Z", "+00:00")).timestamp())
        if meta.get("end_time"):
            ends.append(datetime.fromisoformat(meta["end_time"].replace("Z", "+00:00")).timestamp())
        source = "".join(cell.get("source", ""))
        guess = next((name for name, pattern in _GUESSES if cell["cell_type"] == "code" and pattern.search(source)),
                     "other")
        stations[guess] += seconds
    started = min(starts) if starts else 0.0
    wall = (max(ends) - started) if ends else sum(stations.values())
    stations["other"] += max(0.0, wall - sum(stations.values()))
    return {"started": started, "wall_s": wall, "cpu_s": None, "stations": stations, "guessed": True}


def start_seconds(nb: dict) -> float:
    """Kernel start and imports: papermill's duration outside the cells plus the first code cell's."""
    durations = [c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0 for c in nb["cells"]]
    total = nb.get("metadata", {}).get("papermill", {}).get("duration") or sum(durations)
    first = next((d for c, d in zip(nb["cells"], durations) if c["cell_type"] == "code"), 0.0)
    return max(0.0, total - sum(durations)) + first


def notebook_timing(path: Path) -> dict:
    nb = json.loads(path.read_text())
    recorded = nb.get("metadata", {}).get("unlearnkit", {}).get("timing")
    timing = {**recorded, "guessed": False} if recorded else _cells_timing(nb)
    return {**timing, "start_s": start_seconds(nb)}


def profile_table(folder: Path) -> dict:
    rows = []
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        timing = notebook_timing(path)
        rows.append({"notebook": path.stem, **timing})
    if not rows:
        raise SystemExit(f"no executed notebooks in {folder}: run the workbook first (make notebooks PROFILE=...)")
    spans = {}
    for row in rows:
        group = row["notebook"][:2]
        start, end = row["started"], row["started"] + row["wall_s"]
        s = spans.setdefault(group, {"start": start, "end": end, "count": 0})
        s["start"], s["end"], s["count"] = min(s["start"], start), max(s["end"], end), s["count"] + 1
    start = min(r["started"] for r in rows)
    end = max(r["started"] + r["wall_s"] for r in rows)
    cpu = [r["cpu_s"] for r in rows]
    total_cpu = sum(cpu) if all(c is not None for c in cpu) else None
    stations = {s: sum(r["stations"].get(s, 0.0) for r in rows) for s in STATIONS}
    return {"notebooks": rows,
            "groups": {g: {"elapsed_s": s["end"] - s["start"], "runs": s["count"]} for g, s in spans.items()},
            "total": {"elapsed_s": end - start, "notebook_seconds": sum(r["wall_s"] for r in rows),
                      "cpu_s": total_cpu, "cpu_utilisation": None if total_cpu is None else total_cpu / (end - start),
                      "start_s": sum(r["start_s"] for r in rows),
                      "stations": stations, "guessed": any(r["guessed"] for r in rows)}}


def _percent(cpu: float | None, wall: float) -> str:
    return "   -" if cpu is None or wall <= 0 else f"{100 * cpu / wall:4.0f}"


def print_table(table: dict, profile: str) -> None:
    header = f"{'notebook':34} {'wall s':>7} " + " ".join(f"{s:>10}" for s in STATIONS) + "  CPU %  start"
    print(f"profile {profile}: seconds per notebook and station (wall time; the stations share it out)")
    print(header)
    print("-" * len(header))
    shown_groups = set()
    rows = table["notebooks"]
    for i, row in enumerate(rows):
        mark = " *" if row["guessed"] else ""
        print(f"{row['notebook'] + mark:34} {row['wall_s']:7.0f} "
              + " ".join(f"{row['stations'].get(s, 0.0):10.0f}" for s in STATIONS)
              + f"  {_percent(row['cpu_s'], row['wall_s'])}  {row['start_s']:5.1f}")
        group = row["notebook"][:2]
        last_of_group = i + 1 == len(rows) or rows[i + 1]["notebook"][:2] != group
        if table["groups"][group]["runs"] > 1 and last_of_group and group not in shown_groups:
            shown_groups.add(group)
            g = table["groups"][group]
            label = f"  {group} ({g['runs']} runs, first start to last end)"
            print(f"{label:34} {g['elapsed_s']:7.0f}")
    total = table["total"]
    print("-" * len(header))
    print(f"{'all notebooks, elapsed':34} {total['elapsed_s']:7.0f} "
          + " ".join(f"{total['stations'][s]:10.0f}" for s in STATIONS)
          + f"  {_percent(total['cpu_s'], total['elapsed_s'])}  {total['start_s']:5.0f}")
    print(f"(stations summed over notebooks: {sum(total['stations'].values()):.0f} s of notebook time; "
          f"{total['notebook_seconds']:.0f} s of notebook wall time in all)")
    if total["guessed"]:
        print("* no station log in this executed notebook (run before the runner kept one): stations guessed from "
              "each cell's source, CPU unknown")


def _wall_by_notebook(table: dict) -> dict[str, float]:
    """Each notebook's wall seconds, and each group of runs (notebook 02's methods) as its span."""
    walls: dict[str, float] = {}
    for row in table["notebooks"]:
        group = row["notebook"][:2]
        if table["groups"][group]["runs"] > 1:
            walls[f"{group} ({table['groups'][group]['runs']} runs)"] = table["groups"][group]["elapsed_s"]
        else:
            walls[row["notebook"]] = row["wall_s"]
    return walls


def compare_table(before: dict, after: dict) -> list[dict]:
    """Per notebook (notebook 02's runs as their span) and for the whole run: before and after wall seconds and
    after / before."""
    b, a = _wall_by_notebook(before), _wall_by_notebook(after)
    rows = [{"notebook": k, "before_s": b.get(k), "after_s": a.get(k)} for k in dict.fromkeys([*b, *a])]
    rows.append({"notebook": "all notebooks, elapsed", "before_s": before["total"]["elapsed_s"],
                 "after_s": after["total"]["elapsed_s"]})
    for row in rows:
        row["ratio"] = (row["after_s"] / row["before_s"] if row["before_s"] and row["after_s"] is not None
                        else None)
    return rows


def print_compare(rows: list[dict]) -> None:
    print(f"\n{'notebook':34} {'before s':>9} {'after s':>9} {'after/before':>13}")
    for row in rows:
        cell = lambda v, f: f"{v:{f}}" if v is not None else "-"  # noqa: E731
        print(f"{row['notebook']:34} {cell(row['before_s'], '9.0f'):>9} {cell(row['after_s'], '9.0f'):>9} "
              f"{cell(row['ratio'], '13.2f'):>13}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--seed", type=int, default=None, help="the training seed (default: the profile's own)")
    parser.add_argument("--runs", default=None, help="the runs folder (default: the project's runs/)")
    parser.add_argument("--json", default=None,
                        help="where to write the figures (default runs/<profile>/seed-<s>/profile.json)")
    parser.add_argument("--before", default=None, help="a runs folder of the same seed from before, to compare with")
    parser.add_argument("--before-seed", type=int, default=None, help="its seed (default: the same seed)")
    args = parser.parse_args(argv)
    from unlearnkit import config, paths

    runs = Path(args.runs) if args.runs else paths.RUNS
    seed = config.Params.load(args.profile).seed if args.seed is None else args.seed
    folder = runs / args.profile / f"seed-{seed}"
    table = profile_table(folder)
    print_table(table, args.profile)
    if args.before:
        before_seed = seed if args.before_seed is None else args.before_seed
        before = profile_table(Path(args.before) / args.profile / f"seed-{before_seed}")
        table["compare"] = compare_table(before, table)
        print_compare(table["compare"])
    out = Path(args.json) if args.json else folder / "profile.json"
    out.write_text(json.dumps(table, indent=2) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
