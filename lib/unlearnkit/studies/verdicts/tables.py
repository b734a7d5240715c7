"""What a reader sees of the findings: a notebook's own findings printed (:func:`show`, every notebook's last cell),
and notebook 10's cross-paper table, the overview's tiles, the front page's story and the figures the findings
point at."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from ...config import Params
from ...former import (
    ATTACKS,
    FACT,
    FAILS,
    HOLDS,
    JOSHI,
    NO_TEST,
    NOT,
    OPEN_UNLEARNING,
    PARTLY,
    PARTLY_HOLDS,
    REPRODUCED,
    SCHOLTEN,
    SEEDS_FOR_A_VERDICT,
    TOFU,
    WANG,
    Finding,
    Verdict,
    names,
)
from .notebook_findings import of_notebook

PAPERS = (TOFU, WANG, JOSHI, SCHOLTEN, OPEN_UNLEARNING, ATTACKS)


# --------------------------------------------------------------------------- a notebook's own findings


def show(params: Params, notebook: str) -> list[Finding]:
    """Print one notebook's findings on this run (its last cell)."""
    found = of_notebook(params, notebook)
    print(text(found))
    return found


def text(found: Sequence[Finding]) -> str:
    blocks = []
    for f in found:
        seed = f"seed {f.seed}" if f.seed is not None else "this run"
        blocks.append(f"{f.paper}\n  paper:    {f.claim}\n  {seed + ':':<9} {f.reading}\n  outcome:  {f.outcome.upper()} "
                      f"(one seed; the verdict over seeds is notebook 10's)")
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------- over training seeds (notebook 10)


def table(verdicts: Sequence[Verdict], own_seed: int | None = None,
          committed: Mapping[str, Verdict] | None = None):
    """The cross-paper table: one row per finding, its verdict over the seeds and what the seeds say; with ``own_seed``,
    that seed's own outcome beside it; with ``committed``, the committed verdict too."""
    import pandas as pd

    rows = []
    for v in verdicts:
        row = {"notebook": v.notebook, "paper": v.paper, "short": v.short, "finding": v.claim,
               "seeds": ", ".join(map(str, v.seeds))}
        if own_seed is not None:
            own = next((r for r in v.per_seed if r["seed"] == own_seed), None)
            row[f"seed {own_seed}"] = own["outcome"] if own else "not run"
            row[f"seed {own_seed}: numbers"] = own["text"] if own else ""
        row["over the seeds"] = v.text
        row["verdict"] = v.verdict
        row["tile"] = tile(v)
        if committed is not None:
            row["committed verdict"] = committed[v.key].verdict if v.key in committed else "none"
        row["figure"] = v.figure
        rows.append(row)
    return pd.DataFrame(rows)


#: What the overview shows of a finding tested on fewer seeds than a verdict needs: what those seeds agree on.
EVERY_SEED_HOLDS, EVERY_SEED_FAILS, SEEDS_DIFFER = "holds on every seed", "fails on every seed", "partly or mixed"


def tile(v: Verdict) -> str:
    """How the overview colours a finding: its verdict where it rests on enough seeds (or is a fact / untested),
    else what its few seeds agree on (holds on every one, fails on every one, or partly or mixed), so that a one-seed
    run's front page shows that seed's outcomes instead of a wall of "partly"."""
    if v.verdict in (FACT, NO_TEST) or v.n >= SEEDS_FOR_A_VERDICT:
        return v.verdict
    if v.k == v.n:
        return EVERY_SEED_HOLDS
    if v.fails == v.n:
        return EVERY_SEED_FAILS
    return SEEDS_DIFFER


def _failing_parts(v: Verdict) -> list[tuple[str, int]]:
    """The parts of a finding that failed, with the number of seeds each failed on, most frequent first."""
    counted: dict[str, int] = {}
    for record in v.per_seed:
        for name, holds in (record.get("parts") or {}).items():
            if not holds:
                counted[name] = counted.get(name, 0) + 1
    return sorted(counted.items(), key=lambda item: -item[1])


def _page(v: Verdict) -> str:
    return f"{v.notebook}.html"


def story(verdicts: Sequence[Verdict]) -> str:
    """The front page's opening, generated from the findings: per paper, how many of its findings hold over the seeds
    and, for each that does not, which of its parts fail and on how many seeds, linking the page that explains it."""
    seeds = sorted({s for v in verdicts for s in v.seeds})
    caution = ("one training seed: read every verdict as that seed's outcome" if len(seeds) == 1 else
               f"{len(seeds)} training seeds ({', '.join(map(str, seeds))})" + (
                   "; fewer than five, so no verdict here is confident (docs/metrics.md §8)"
                   if len(seeds) < SEEDS_FOR_A_VERDICT else ""))
    lines = [f"Judged over {caution}."]
    few = len(seeds) < SEEDS_FOR_A_VERDICT
    for paper in PAPERS:
        mine = [v for v in verdicts if v.paper == paper and v.verdict in (REPRODUCED, PARTLY, NOT)]
        if not mine:
            continue
        by = {verdict: [v for v in mine if v.verdict == verdict] for verdict in (REPRODUCED, PARTLY, NOT)}
        if few:  # no verdict can be confident: say what the seeds agree on, and list what did not hold
            held = [v for v in mine if tile(v) == EVERY_SEED_HOLDS]
            failed = [v for v in mine if tile(v) == EVERY_SEED_FAILS]
            every = "on its seed" if len(seeds) == 1 else "on every seed"
            head = (f"**{paper}**: of {len(mine)} findings, {len(held)} hold {every}"
                    + (f" ({html.escape(names(v.short for v in held))})" if 0 < len(held) <= 8 else "")
                    + f", {len(failed)} fail {every}, {len(mine) - len(held) - len(failed)} hold in part"
                    + ("" if len(seeds) == 1 else " or differ between seeds") + ".")
            shown = [v for v in mine if tile(v) != EVERY_SEED_HOLDS]
        else:
            head = (f"**{paper}**: {len(by[REPRODUCED])} of {len(mine)} findings reproduced"
                    + (f" ({html.escape(names(v.short for v in by[REPRODUCED]))})" if 0 < len(by[REPRODUCED]) <= 6
                       else "")
                    + f", {len(by[PARTLY])} partly, {len(by[NOT])} not reproduced.")
            shown = by[NOT] + by[PARTLY]
        lines.append("\n" + head + "\n")
        for v in shown:
            failing = _failing_parts(v)
            on = lambda n, v=v: f"{n} of {v.n} seed{'s' if v.n > 1 else ''}"  # noqa: E731
            partly = v.n - v.k - v.fails
            if failing:
                why = "; ".join(f"{name} fails on {on(n)}" for name, n in failing[:3])
            elif v.fails:
                why = f"fails on {on(v.fails)}"
            elif partly:
                why = f"holds in part on {on(partly)}"
            else:
                why = f"holds on {on(v.k)}"
            why, short = html.escape(why), html.escape(v.short)  # run and part names are text, never markup
            if few:
                lines.append(f"- [{short}]({_page(v)}): {why}.")
                continue
            if v.verdict == PARTLY and v.n < SEEDS_FOR_A_VERDICT:
                why += f" (tested on too few seeds for a verdict: {SEEDS_FOR_A_VERDICT} needed)"
            lines.append(f"- [{short}]({_page(v)}), *{v.verdict}*: {why}.")
    return "\n".join(lines)


def key_figures(verdicts: Sequence[Verdict]) -> list[str]:
    """The figures the findings point at, once each, in the order of the findings."""
    return list(dict.fromkeys(v.figure for v in verdicts if v.figure))


def notebooks_showing(verdicts: Sequence[Verdict], figure: str) -> list[str]:
    return list(dict.fromkeys(v.notebook for v in verdicts if v.figure == figure))


def _styles() -> dict[str, str]:
    return {REPRODUCED: "background-color: #d9f0d3", PARTLY: "background-color: #fee8b0",
            NOT: "background-color: #f8d0cc", NO_TEST: "color: #777", FACT: "color: #777",
            HOLDS: "background-color: #d9f0d3", PARTLY_HOLDS: "background-color: #fee8b0",
            FAILS: "background-color: #f8d0cc"}


def styled(frame):
    """The findings table with its verdict and outcome columns coloured, text left-aligned and wrapped (for
    notebooks and the HTML report)."""
    style = _styles()
    frame = frame.drop(columns=["tile"], errors="ignore")  # the overview's colour: the verdict and outcomes say it
    coloured = [c for c in frame.columns if c == "verdict" or c == "committed verdict"
                or (c.startswith("seed ") and not c.endswith("numbers"))]
    return (frame.style.hide(axis="index").format(escape="html")
            .map(lambda v: style.get(v, ""), subset=coloured)
            .set_properties(**{"text-align": "left", "white-space": "normal", "vertical-align": "top"}))
